//! `ctx run replay`: re-execute a run's deterministic steps with ctx's own tools and compare
//! output hashes (seed 004 §5).
//!
//! MCP tool steps are re-executed through the MCP server's own dispatch
//! ([`ctx_mcp::record::ReplayExecutor`]) and their results turned into bytes by
//! [`ctx_mcp::record::recorded_output`], the same function recording uses, so a replayed output
//! is made by exactly the code that made the recorded one. `cmd` steps run through the `cmd:` pack
//! source, and only with --allow-commands.

use anyhow::Result;
use clap::Args;
use ctx::runs::replay::{Fidelity, ReplayReport};
use ctx_mcp::McpConfig;
use ctx_mcp::record::ReplayExecutor;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Re-execute a run's deterministic steps and compare their outputs with the recorded ones.
///
/// Each deterministic tool step is run again with ctx's own tools (the MCP tools: fs_read,
/// ctx_search, ctx_summarize, ctx_map, ctx_related, ctx_status, …; `cmd` only with
/// --allow-commands) in the current workspace, and its output hash compared with the
/// recorded one. Model turns and non-deterministic steps are skipped. A deterministic step
/// ctx cannot re-run (a tool of another agent, such as an imported Claude Code `Read`, or a
/// command without --allow-commands) is `not replayable`. Fidelity is `exact` (every step
/// that should replay did, with its recorded output), `not replayable` (some could not be
/// re-run, or none was: nothing was checked), `degraded` (some output differs) or `failed` (a
/// step errors now, e.g. a file the run read was deleted); the first diverging step is shown
/// with a unified diff of its output. Exit 0 when exact, 1 otherwise. Run it in the
/// workspace the run was recorded in (or use -C DIR).
///
/// Examples:
///   ctx run replay latest
///   ctx run replay review-session --json
///   ctx run replay 3fa9c1 --allow-commands
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReplayArgs {
    /// The run: an id, a prefix of one (4+ hex digits), or a ref (`latest`, a tag).
    pub id: String,
    /// Also re-run `cmd` steps (shell commands) in the workspace.
    #[arg(long)]
    pub allow_commands: bool,
    /// List every step's result, not only the summary and the first divergence.
    #[arg(long)]
    pub steps: bool,
}

pub fn replay(args: &ReplayArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let ws = ctx.open(out)?;
    let store = ws.store()?;
    let run = ws.run_show(&args.id)?;
    // Tools see the clock the recording saw: the run's start.
    let started = run.started_secs().unwrap_or_else(super::select::now);
    let mut config = McpConfig::new(
        ctx.cwd.clone(),
        store.dir().to_owned(),
        ws.root(),
        ws.config().clone(),
    );
    config.tree_cache.global_ignore_files = ctx.global_git_ignore_files();
    let config = ctx_mcp::record::replay_config(config, started);
    let executor = ReplayExecutor::new(&config, args.allow_commands)?;
    let report = ws.run_replay(&run, &executor)?;
    print_report(&report, args, out)?;
    Ok(if report.fidelity == Fidelity::Exact {
        Status::Success
    } else {
        Status::Found
    })
}

fn print_report(report: &ReplayReport, args: &ReplayArgs, out: &Output) -> Result<()> {
    if out.is_json() {
        if args.steps {
            return out.json(report);
        }
        let mut value = serde_json::to_value(report)?;
        if let Some(map) = value.as_object_mut() {
            map.remove("results");
        }
        return out.json(&value);
    }
    let style = match report.fidelity {
        Fidelity::Exact => Style::Green,
        Fidelity::NotReplayable | Fidelity::Degraded => Style::Yellow,
        Fidelity::Failed => Style::Red,
    };
    out.line(&format!(
        "run {}: {}",
        report.run,
        out.paint(style, report.fidelity.word())
    ))?;
    out.line(&format!(
        "  {} steps: {} exact, {} diverged, {} failed, {} not replayable, {} skipped",
        report.steps,
        report.exact,
        report.diverged,
        report.failed,
        report.not_replayable,
        report.skipped
    ))?;
    if args.steps {
        for step in &report.results {
            let reason = step
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            out.line(&format!(
                "  step {:>4}  {:<14} {}{reason}",
                step.index,
                step.outcome.word(),
                step.tool
            ))?;
        }
    }
    if let Some(first) = &report.first_divergence {
        out.line(&format!(
            "first divergence: step {} ({}) {}",
            first.index,
            first.tool,
            first.outcome.word()
        ))?;
        if let Some(error) = &first.error {
            out.line(&format!("  error: {error}"))?;
        }
        if !first.diff.is_empty() {
            out.raw(first.diff.as_bytes())?;
        }
    }
    Ok(())
}
