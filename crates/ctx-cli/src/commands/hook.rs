//! `ctx hook`: agent hooks. `ctx hook claude-code` answers Claude Code's hook protocol;
//! `ctx hook install claude-code` wires it (and the MCP server) into the project;
//! `ctx hook uninstall claude-code` takes it out again.

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
    Uninstall(UninstallArgs),
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
/// project root), keeping every existing entry; running it again changes nothing. With
/// --local the hooks go to your own .claude/settings.local.json and .mcp.json is left alone.
///
/// Examples:
///   ctx hook install claude-code
///   ctx hook install claude-code --local
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InstallArgs {
    /// The agent.
    #[arg(value_enum)]
    pub agent: Agent,
    /// The command the hooks and the MCP server run.
    #[arg(long, value_name = "CMD", default_value = "ctx")]
    pub command: String,
    /// Write .claude/settings.local.json (yours, not shared with the team) instead.
    #[arg(long)]
    pub local: bool,
}

/// Remove ctx's hooks from .claude/settings.json and .claude/settings.local.json and its MCP
/// server from .mcp.json, keeping every other entry.
///
/// Examples:
///   ctx hook uninstall claude-code
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct UninstallArgs {
    /// The agent.
    #[arg(value_enum)]
    pub agent: Agent,
    /// The command the hooks and the MCP server were installed with.
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
        HookCommand::Uninstall(args) => {
            let report =
                ctx::select::uninstall_claude_code(&hook_root(ctx)?, &commands(&args.command))?;
            if out.is_json() {
                let files: Vec<_> = report
                    .iter()
                    .map(|(path, changed)| serde_json::json!({ "path": path, "changed": changed }))
                    .collect();
                out.json(&serde_json::json!({ "files": files }))?;
                return Ok(Status::Success);
            }
            if report.iter().all(|(_, changed)| !changed) {
                out.line("ctx's Claude Code hooks are not installed here; nothing changed")?;
            }
            for (path, _) in report.iter().filter(|(_, changed)| *changed) {
                out.line(&format!(
                    "{} {}",
                    out.paint(Style::Green, "removed ctx from"),
                    path.display()
                ))?;
            }
            Ok(Status::Success)
        }
        HookCommand::Install(args) => {
            let root = hook_root(ctx)?;
            let report =
                ctx::select::install_claude_code(&root, &commands(&args.command), args.local)?;
            if out.is_json() {
                out.json(&report)?;
                return Ok(Status::Success);
            }
            let mut files = vec![(&report.settings_path, report.settings_changed)];
            if !args.local {
                files.push((&report.mcp_path, report.mcp_changed));
            }
            for (path, changed) in files {
                let state = if changed {
                    out.paint(Style::Green, "updated")
                } else {
                    out.paint(Style::Dim, "already set up")
                };
                out.line(&format!("{state} {}", path.display()))?;
            }
            if args.local {
                out.note("with --local, .mcp.json is left alone; add the MCP server for yourself with `claude mcp add ctx -- ctx mcp`");
            }
            Ok(Status::Success)
        }
    }
}

/// The project root hooks are installed in.
fn hook_root(ctx: &Context) -> Result<std::path::PathBuf> {
    Ok(match ctx.locate_store()?.kind {
        ctx::store::StoreKind::Project { root } => root,
        _ => ctx::select::workspace(&ctx.locate_store()?, &ctx.cwd).0,
    })
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

/// The command lines Claude Code runs for ctx installed as `program`: the hooks run
/// `PROGRAM hook claude-code`, the MCP server `PROGRAM mcp`.
fn commands(program: &str) -> ctx::select::HookCommands {
    ctx::select::HookCommands {
        hook: format!("{program} hook claude-code"),
        mcp_program: program.to_owned(),
        mcp_args: vec!["mcp".to_owned()],
    }
}
