//! `ctx hook`: agent hooks. `ctx hook claude-code` answers Claude Code's hook protocol;
//! `ctx hook install claude-code` wires it (and the MCP server) into the project.

use std::io::Read as _;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Agent hooks.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    ClaudeCode(ClaudeCodeArgs),
    Install(InstallArgs),
}

/// Answer a Claude Code hook: reads its JSON on stdin (UserPromptSubmit or SessionStart)
/// and prints {"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}} with at most
/// 10,000 characters of context. Never blocks the prompt: on any problem it prints nothing,
/// notes the problem on stderr and exits 0.
#[derive(Debug, Args)]
pub struct ClaudeCodeArgs {
    /// Token budget for a prompt's context.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub budget: u64,
}

/// Install ctx's hooks into .claude/settings.json and its MCP server into .mcp.json (in the
/// project root), keeping every existing entry; running it again changes nothing.
///
/// Examples:
///   ctx hook install claude-code
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InstallArgs {
    /// The agent.
    #[arg(value_enum)]
    pub agent: Agent,
    /// The command the hooks and the MCP server run.
    #[arg(long, value_name = "CMD", default_value = "ctx")]
    pub command: String,
}

/// Agents with hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    ClaudeCode,
}

pub fn run(cmd: &HookCommand, ctx: &Context, out: &Output) -> Result<Status> {
    match cmd {
        HookCommand::ClaudeCode(args) => {
            match answer(args, ctx, out) {
                Ok(json) => out.line(&json)?,
                Err(err) => out.warn(&format!(
                    "ctx hook: {err:#} (the prompt goes on without context)"
                )),
            }
            Ok(Status::Success)
        }
        HookCommand::Install(args) => {
            let root = match ctx.locate_store()?.kind {
                ctx::store::StoreKind::Project { root } => root,
                _ => ctx::select::workspace(&ctx.locate_store()?, &ctx.cwd).0,
            };
            let report = ctx::select::install_claude_code(&root, &args.command)?;
            if out.is_json() {
                out.json(&report)?;
                return Ok(Status::Success);
            }
            for (path, changed) in [
                (&report.settings_path, report.settings_changed),
                (&report.mcp_path, report.mcp_changed),
            ] {
                let state = if changed {
                    out.paint(Style::Green, "updated")
                } else {
                    out.paint(Style::Dim, "already set up")
                };
                out.line(&format!("{state} {}", path.display()))?;
            }
            Ok(Status::Success)
        }
    }
}

fn answer(args: &ClaudeCodeArgs, ctx: &Context, out: &Output) -> Result<String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    let input = ctx::select::parse_hook_input(&text)?;
    let (store, location) = ctx.open_store(out)?;
    let cx = super::select::select_context(ctx, &store, &location, out)?;
    let value = ctx::select::hook_answer(&cx, &input, args.budget)?;
    Ok(serde_json::to_string(&value)?)
}
