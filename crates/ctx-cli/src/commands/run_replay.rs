//! `ctx run replay`: re-execute a run's deterministic steps with ctx's own tools and compare
//! output hashes (seed 004 §5).
//!
//! MCP tool steps are re-executed through the MCP server's own dispatch
//! ([`ctx_mcp::CtxServer::dispatch`]) and their results turned into bytes by
//! [`recorded_output`], the same function `ctx mcp --record` uses, so a replayed output is made
//! by exactly the code that made the recorded one. `cmd` steps run through the `cmd:` pack
//! source, and only with --allow-commands.

use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::{Context as _, Result};
use clap::Args;
use ctx::runs::replay::{self, Execution, Fidelity, ReplayReport, ReplayStep, StepExecutor};
use ctx_mcp::rmcp::model::CallToolResult;
use ctx_mcp::{CtxServer, McpConfig};
use serde_json::Value;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Re-execute a run's deterministic steps and compare their outputs with the recorded ones.
///
/// Each deterministic tool step is run again with ctx's own tools (the MCP tools: fs_read,
/// ctx_search, ctx_summarize, ctx_map, ctx_related, ctx_status, …; `cmd` only with
/// --allow-commands) in the current workspace, and its output hash compared with the
/// recorded one. Model turns, non-deterministic steps and tools ctx cannot run (an imported
/// Claude Code `Edit`) are skipped. Fidelity is `exact` (every replayed step matched),
/// `degraded` (some output differs) or `failed` (a step errors now, e.g. a file the run read was
/// deleted); the first diverging step is shown with a unified diff of its output. Exit 0 when
/// exact, 1 otherwise. Run it in the workspace the run was recorded in (or use -C DIR).
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

/// The clock tools see while a recording or a replay runs: fixed, so that tools that read it
/// (`ctx_status`'s "2h ago", `ctx_select`'s recency) answer the same when replayed.
static SESSION_CLOCK: AtomicI64 = AtomicI64::new(0);

/// Fixes the clock [`session_clock`] returns.
pub fn set_session_clock(unix_seconds: i64) {
    SESSION_CLOCK.store(unix_seconds, Ordering::SeqCst);
}

/// The clock given to the MCP server in record and replay mode.
pub fn session_clock() -> i64 {
    SESSION_CLOCK.load(Ordering::SeqCst)
}

/// A tool result as the bytes a run records: the structured answer as pretty JSON (plus a
/// newline), else the text blocks joined by newlines; and whether it is an error.
pub fn recorded_output(result: &CallToolResult) -> (Vec<u8>, bool) {
    let is_error = result.is_error.unwrap_or(false);
    if !is_error && let Some(value) = &result.structured_content {
        let mut bytes = serde_json::to_vec_pretty(value).expect("JSON values serialize");
        bytes.push(b'\n');
        return (bytes, false);
    }
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    let mut text = texts.join("\n");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    (text.into_bytes(), is_error)
}

/// Runs replayed steps with ctx's MCP tools (and `cmd` sources when allowed).
pub struct CtxExecutor {
    runtime: tokio::runtime::Runtime,
    server: CtxServer,
    /// The tools the server offers, by name.
    tools: std::collections::BTreeSet<String>,
    allow_commands: bool,
    root: std::path::PathBuf,
    settings: ctx::packs::PackSettings,
}

impl CtxExecutor {
    /// An executor for the workspace `config` names.
    pub fn new(
        config: &McpConfig,
        settings: ctx::packs::PackSettings,
        allow_commands: bool,
    ) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let server = CtxServer::new(config)?;
        let tools = server
            .tools()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        Ok(Self {
            runtime,
            server,
            tools,
            allow_commands,
            root: config.workspace_root.clone(),
            settings,
        })
    }

    fn command(&self, parameters: &Value) -> Execution {
        if !self.allow_commands {
            return Execution::Skip(
                "a command: replay runs commands only with --allow-commands".to_owned(),
            );
        }
        let Some(command) = parameters.get("command").and_then(Value::as_str) else {
            return Execution::Skip("a `cmd` step without a `command` string".to_owned());
        };
        let dir = parameters
            .get("dir")
            .and_then(Value::as_str)
            .unwrap_or(".")
            .to_owned();
        let spec = ctx::sources::SourceSpec {
            source: ctx::sources::Source::Command {
                dir,
                command: command.to_owned(),
            },
            allow_sensitive: false,
        };
        let options = ctx::sources::ExpandOptions {
            progress: &ctx::core::NoProgress,
            root: &self.root,
            max_file_bytes: self.settings.max_file_bytes,
            sensitive: &self.settings.sensitive,
            command_timeout: self.settings.command_timeout,
        };
        let units = ctx::sources::expand(&spec, &options);
        let mut output = Vec::new();
        for unit in units {
            match unit.body {
                Ok(text) => output.extend_from_slice(text.as_bytes()),
                Err(skip) => return Execution::Error(format!("{skip}\n").into_bytes()),
            }
        }
        Execution::Output(output)
    }
}

impl StepExecutor for CtxExecutor {
    fn execute(&self, tool: &str, parameters: &Value) -> Execution {
        if tool == "cmd" {
            return self.command(parameters);
        }
        if !self.tools.contains(tool) {
            return Execution::Skip(format!("ctx has no tool `{tool}` to re-run"));
        }
        let arguments = match parameters {
            Value::Object(map) => map.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Execution::Error(
                    format!("the recorded arguments are not a JSON object: {other}\n").into_bytes(),
                );
            }
        };
        match self.runtime.block_on(self.server.dispatch(tool, arguments)) {
            Ok(result) => match recorded_output(&result) {
                (bytes, false) => Execution::Output(bytes),
                (bytes, true) => Execution::Error(bytes),
            },
            Err(err) => Execution::Skip(format!("ctx cannot run `{tool}`: {}", err.message)),
        }
    }
}

/// The MCP configuration replay and recording use for the current workspace.
pub fn workspace_config(ctx: &Context, out: &Output) -> Result<(McpConfig, ctx::store::Store)> {
    let (store, location) = ctx.open_store(out)?;
    let mut config = McpConfig::new(
        ctx.cwd.clone(),
        location.dir.clone(),
        ctx.workspace_root(&location),
        ctx.config_layers()?,
    )
    // A run may hold calls of any tool, whatever set the recording server offered.
    .with_tools(ctx_mcp::ToolSet::All);
    config.clock = session_clock;
    Ok((config, store))
}

pub fn replay(args: &ReplayArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let (config, store) = workspace_config(ctx, out)?;
    let run = ctx::runs::load_run(&store, &args.id)?;
    // Tools see the clock the recording saw: the run's start.
    let started = run
        .started()
        .and_then(ctx::runs::export::parse_rfc3339_nanos)
        .map_or_else(ctx_mcp::system_clock, |nanos| {
            i64::try_from(nanos / 1_000_000_000).unwrap_or(i64::MAX)
        });
    set_session_clock(started);
    let settings = ctx::packs::PackSettings::from_layers(&config.layers)?;
    let executor = CtxExecutor::new(&config, settings, args.allow_commands)?;
    let steps: Vec<ReplayStep> = run.steps.iter().map(ReplayStep::from).collect();
    let report = replay::replay(run.id, &steps, &executor, store.objects());
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
        Fidelity::Degraded => Style::Yellow,
        Fidelity::Failed => Style::Red,
    };
    out.line(&format!(
        "run {}: {}",
        report.run,
        out.paint(style, report.fidelity.word())
    ))?;
    out.line(&format!(
        "  {} steps: {} exact, {} diverged, {} failed, {} skipped",
        report.steps, report.exact, report.diverged, report.failed, report.skipped
    ))?;
    if args.steps {
        for step in &report.results {
            let reason = step
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            out.line(&format!(
                "  step {:>4}  {:<9} {}{reason}",
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
