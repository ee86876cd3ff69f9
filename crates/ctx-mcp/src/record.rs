//! Recording MCP sessions as runs, and replaying them: the glue between the server's calls
//! and [`ctx::recording`] / [`ctx::runs::replay`], shared by `ctx mcp --record`,
//! `ctx serve --record` and `ctx run replay`.
//!
//! A recorded step's output and a replayed step's output are made by the same function,
//! [`recorded_output`], so replay compares like with like. While recording or replaying, tools
//! see a fixed clock (the session's start), so answers that mention times reproduce.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use ctx::Clock;
use ctx::recording::{RecordedStep, Recording, RecordingOptions};
use ctx::runs::replay::{Execution, StepExecutor};
use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::config::{CallRecorder, McpConfig, RecordedCall, ToolSet};
use crate::error::McpError;
use crate::server::CtxServer;

/// A tool result as the bytes a run records: the structured answer as pretty JSON (plus a
/// newline) and, after it, the text blocks joined by newlines (what the model read, which
/// alone carries a payload); an error's text alone; and whether it is an error.
pub fn recorded_output(result: &CallToolResult) -> (Vec<u8>, bool) {
    let is_error = result.is_error.unwrap_or(false);
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    let mut text = texts.join("\n");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if !is_error && let Some(value) = &result.structured_content {
        let mut bytes = serde_json::to_vec_pretty(value).expect("JSON values serialize");
        bytes.push(b'\n');
        bytes.extend_from_slice(text.as_bytes());
        return (bytes, false);
    }
    (text.into_bytes(), is_error)
}

/// Sends every answered call to a [`Recording`].
struct Recorder(Arc<Recording>);

impl CallRecorder for Recorder {
    fn record(&self, call: &RecordedCall<'_>) {
        let (output, is_error) = recorded_output(call.result);
        self.0.record(RecordedStep {
            tool: call.tool,
            arguments: call.arguments,
            output,
            is_error,
            elapsed: call.elapsed,
        });
    }
}

/// A clock that always answers `unix_seconds`.
pub fn fixed_clock(unix_seconds: i64) -> Clock {
    Arc::new(move || unix_seconds)
}

/// The tools whose calls replay can reproduce: the read-only ones, by their own annotations
/// (tools that record snapshots or change packs are not replayed).
pub fn deterministic_tools(config: &McpConfig) -> Result<Vec<String>, McpError> {
    let probe = CtxServer::new(
        &config
            .clone()
            .with_allow_write(true)
            .with_tools(ToolSet::All),
    )?;
    Ok(probe
        .tools()
        .into_iter()
        .filter(|t| {
            t.annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false)
        })
        .map(|t| t.name.to_string())
        .collect())
}

/// What [`start_recording`] needs besides the server's configuration.
pub struct RecordRequest {
    /// The run's name.
    pub name: String,
    /// When the session starts (Unix seconds): the clock tools see while recording.
    pub started: i64,
    /// The clock for each step's timestamp (the real one).
    pub step_clock: Clock,
    /// The front end's name (`ctx-mcp`, `ctx-serve`).
    pub runtime: String,
    /// This process's id.
    pub pid: u32,
}

/// Starts recording the calls of servers built from `config` into `store`: sets the fixed
/// session clock and the recorder on `config`, and returns the recording to finish when the
/// session ends.
pub fn start_recording(
    config: &mut McpConfig,
    store: ctx::store::Store,
    request: RecordRequest,
) -> Result<Arc<Recording>, McpError> {
    let deterministic = deterministic_tools(config)?;
    let rules = config
        .layers
        .redaction_rules()
        .map_err(ctx::CtxError::from)?;
    let redactor = ctx::core::redact::Redactor::with_custom(&rules).map_err(ctx::CtxError::from)?;
    let recording = Arc::new(Recording::start(
        store,
        RecordingOptions {
            name: request.name,
            workspace_root: config.workspace_root.clone(),
            started: request.started,
            deterministic,
            redactor,
            clock: request.step_clock,
            runtime: request.runtime,
            pid: request.pid,
        },
    )?);
    config.clock = fixed_clock(request.started);
    config.recorder = Some(Arc::new(Recorder(Arc::clone(&recording))));
    Ok(recording)
}

/// The configuration replay uses: every tool (a run may hold calls of any tool, whatever set
/// the recording server offered), and the clock fixed at the run's start.
pub fn replay_config(mut config: McpConfig, started: i64) -> McpConfig {
    config.tools = Some(ToolSet::All);
    config.clock = fixed_clock(started);
    // A replay is one pass over recorded calls: nothing to keep current.
    config.keep_index = false;
    config
}

/// Runs replayed steps with ctx's MCP tools (and `cmd` sources when allowed).
pub struct ReplayExecutor {
    runtime: tokio::runtime::Runtime,
    server: CtxServer,
    /// The tools the server offers, by name.
    tools: BTreeSet<String>,
    allow_commands: bool,
    root: PathBuf,
    settings: ctx::packs::PackSettings,
}

impl ReplayExecutor {
    /// An executor for the workspace `config` names.
    pub fn new(config: &McpConfig, allow_commands: bool) -> Result<Self, McpError> {
        let settings = ctx::packs::PackSettings::from_layers(&config.layers)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| McpError::Session(format!("cannot start the async runtime: {e}")))?;
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

impl StepExecutor for ReplayExecutor {
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
