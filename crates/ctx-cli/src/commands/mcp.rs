//! `ctx mcp`: serve ctx to AI agents over the Model Context Protocol, optionally recording
//! every tool call as a run (`--record NAME`).

use std::fs;
use std::io::{BufRead as _, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context as _, Result};
use clap::Args;
use ctx::core::ContentHash;
use ctx::fs::time::rfc3339;
use ctx::runs::{RunBuilder, RunId, Step, StepDraft, StepStatus};
use ctx::store::Store;
use ctx_mcp::{CallRecorder, CtxServer, HttpOptions, McpConfig, RecordedCall};
use serde_json::Value;

use crate::commands::run_replay::{recorded_output, session_clock, set_session_clock};
use crate::context::Context;
use crate::output::{Output, Status};

/// Serve ctx to AI agents over MCP: stdio by default, Streamable HTTP with --http.
///
/// The workspace is the directory ctx was started in (or -C DIR); no tool reads outside it.
/// Tools are read-only unless --allow-write. stdout carries only the protocol; logs go to
/// stderr (-v for more). Answers are capped at the `mcp.max_tokens` setting (8000) and paged.
///
/// With --record NAME every tool call is recorded as a step of a run (arguments, output,
/// duration, and whether it is deterministic: read-only tools are, tools that write to the
/// store are not). Steps are saved as they happen; the run is finished and named NAME (and
/// `latest`) when the session ends (stdin closes, Ctrl-C or SIGTERM). While recording, tools
/// see the session's start as the current time, so `ctx run replay NAME` can reproduce
/// answers that mention times. A recording cut short by a crash is finished by the next
/// `ctx mcp --record`.
///
/// Examples:
///   ctx mcp                                  # stdio, for `claude mcp add ctx -- ctx mcp`
///   ctx mcp --http 127.0.0.1:17373           # Streamable HTTP at http://127.0.0.1:17373/mcp
///   ctx -C ~/src/project mcp --allow-write
///   ctx mcp --tools all                      # every tool, not only the core set
///   ctx mcp --record review-1                # then: ctx run replay review-1
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct McpArgs {
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (loopback unless you name
    /// another address; Host and Origin are checked).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Offer the write tools ctx_packs_create, ctx_packs_add and ctx_packs_remove.
    #[arg(long)]
    pub allow_write: bool,
    /// Record every tool call as a run named NAME (see `ctx run show NAME`, `ctx run replay`).
    #[arg(long, value_name = "NAME")]
    pub record: Option<String>,
    /// The tools offered: core (select, search, summarize, map, read, render), all, or tool
    /// names separated by commas (default: the `mcp.tools` setting, core).
    #[arg(long, value_name = "SET", value_parser = super::serve::parse_tool_set)]
    pub tools: Option<ctx_mcp::ToolSet>,
}

pub fn run(args: &McpArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let addr: Option<SocketAddr> = args
        .http
        .as_deref()
        .map(|text| {
            text.parse().with_context(|| {
                format!("--http `{text}` is not an address; write it as 127.0.0.1:17373")
            })
        })
        .transpose()?;
    let (store, location) = ctx.open_store(out)?;
    let mut config = McpConfig::new(
        ctx.cwd.clone(),
        location.dir.clone(),
        ctx.workspace_root(&location),
        ctx.config_layers()?,
    )
    .with_allow_write(args.allow_write);
    config.tools.clone_from(&args.tools);
    let Some(name) = &args.record else {
        drop(store);
        match addr {
            Some(addr) => ctx_mcp::run_http(&config, addr, |bound| {
                out.note(&format!("serving MCP at http://{bound}/mcp (Ctrl-C stops)"));
            })?,
            None => ctx_mcp::run_stdio(&config)?,
        }
        return Ok(Status::Success);
    };

    check_record_name(name)?;
    for recovered in recover_recordings(&store)? {
        out.note(&format!(
            "finished the interrupted recording `{}` ({} steps) as run {}",
            recovered.name, recovered.steps, recovered.run
        ));
    }
    let started = super::select::now();
    set_session_clock(started);
    config.clock = session_clock;
    // Decide determinism from the tools' own annotations: read-only tools answer from the
    // workspace (and the fixed session clock) alone; tools that record snapshots or change
    // packs are not replayed.
    let probe = CtxServer::new(
        &config
            .clone()
            .with_allow_write(true)
            .with_tools(ctx_mcp::ToolSet::All),
    )?;
    let deterministic: Vec<String> = probe
        .tools()
        .into_iter()
        .filter(|t| {
            t.annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false)
        })
        .map(|t| t.name.to_string())
        .collect();
    drop(probe);
    let recorder = Arc::new(RunRecorder::start(
        store,
        &config.workspace_root,
        name,
        started,
        deterministic,
        ctx::core::redact::Redactor::with_custom(&ctx.config_layers()?.redaction_rules()?)?,
    )?);
    config = config.with_recorder(recorder.clone());

    let served = serve_until_shutdown(&config, addr, out);
    let finished = recorder.finish();
    served?;
    match finished? {
        Some((run, steps)) => out.note(&format!(
            "recorded run {run} ({steps} steps) as `{name}`; replay it with `ctx run replay {name}`"
        )),
        None => out.note("no tool calls were made; nothing recorded"),
    }
    Ok(Status::Success)
}

/// Serves until stdin closes (stdio), or Ctrl-C / SIGTERM (both transports).
fn serve_until_shutdown(config: &McpConfig, addr: Option<SocketAddr>, out: &Output) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        let server = CtxServer::new(config)?;
        if let Some(addr) = addr {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let bound = listener.local_addr()?;
            let options = HttpOptions::for_address(bound);
            let stop = options.cancellation.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                stop.cancel();
            });
            out.note(&format!(
                "serving MCP at http://{bound}/mcp, recording (Ctrl-C stops)"
            ));
            ctx_mcp::serve_http(server, listener, options).await?;
        } else {
            let (read, write) = ctx_mcp::rmcp::transport::io::stdio_pipes();
            tokio::select! {
                outcome = ctx_mcp::serve_io(server, read, write) => outcome?,
                () = shutdown_signal() => {}
            }
        }
        anyhow::Ok(())
    });
    // Do not wait for a blocked stdin read: the client is gone.
    runtime.shutdown_background();
    result
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Refuses names `ctx run` could not use as a tag (and hidden-looking names).
fn check_record_name(name: &str) -> Result<()> {
    if ctx::runs::check_tag(name).is_ok() && !name.starts_with('.') {
        Ok(())
    } else {
        anyhow::bail!(
            "--record `{name}` is not a usable run name: use letters, digits, `.`, `_`, `-` (not only hex digits, not `latest`, not starting with `sha256` or `.`)"
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Recording

/// Where unfinished recordings keep their journal: one JSON header line, then one step hash
/// per line, each appended and synced before the client gets its answer.
fn journal_dir(store: &Store) -> PathBuf {
    store.dir().join("recordings")
}

#[derive(serde::Serialize, serde::Deserialize)]
struct JournalHeader {
    name: String,
    created: String,
    pid: u32,
}

struct RecordState {
    store: Store,
    builder: RunBuilder,
    /// The workspace, to read the files the session read as the run's inputs.
    sandbox: Option<ctx::fs::Workspace>,
    /// Inputs already recorded, by workspace-relative path.
    inputs: std::collections::BTreeSet<String>,
    /// The workspace's redaction rules: inputs are stored redacted.
    redactor: ctx::core::redact::Redactor,
    journal: fs::File,
    journal_path: PathBuf,
    deterministic: Vec<String>,
    /// The first error met while recording (reported when the session ends).
    error: Option<String>,
}

/// Records every tool call as a step of one run.
struct RunRecorder {
    name: String,
    state: Mutex<Option<RecordState>>,
}

impl RunRecorder {
    fn start(
        store: Store,
        workspace: &Path,
        name: &str,
        started: i64,
        deterministic: Vec<String>,
        redactor: ctx::core::redact::Redactor,
    ) -> Result<Self> {
        let dir = journal_dir(&store);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let created = rfc3339(started);
        let pid = std::process::id();
        let journal_path = dir.join(format!("{name}.{pid}.jsonl"));
        let mut journal = fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&journal_path)
            .with_context(|| format!("cannot create {}", journal_path.display()))?;
        let header = JournalHeader {
            name: name.to_owned(),
            created: created.clone(),
            pid,
        };
        writeln!(journal, "{}", serde_json::to_string(&header)?)?;
        journal.sync_all()?;
        let mut builder = RunBuilder::new("mcp");
        builder
            .set_created(Some(created))
            .set_environment(environment());
        Ok(Self {
            name: name.to_owned(),
            state: Mutex::new(Some(RecordState {
                store,
                builder,
                sandbox: ctx::fs::Workspace::open(workspace).ok(),
                inputs: std::collections::BTreeSet::new(),
                redactor,
                journal,
                journal_path,
                deterministic,
                error: None,
            })),
        })
    }

    /// Finishes the run: names it, removes the journal. `None` when no call was recorded.
    fn finish(&self) -> Result<Option<(RunId, usize)>> {
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(state) = state else {
            return Ok(None);
        };
        if let Some(error) = &state.error {
            anyhow::bail!(
                "recording `{}` failed: {error}; the steps saved so far are in {}",
                self.name,
                state.journal_path.display()
            );
        }
        let steps = state.builder.step_count();
        drop(state.journal);
        if steps == 0 {
            let _ = fs::remove_file(&state.journal_path);
            return Ok(None);
        }
        let run = state.builder.finish(&state.store)?;
        ctx::runs::tag_run(&state.store, &self.name, &run)?;
        let _ = fs::remove_file(&state.journal_path);
        Ok(Some((run, steps)))
    }
}

fn environment() -> ctx::runs::Environment {
    ctx::runs::Environment {
        os: Some(std::env::consts::OS.to_owned()),
        runtime: Some("ctx-mcp".to_owned()),
        tool_versions: [("ctx".to_owned(), env!("CARGO_PKG_VERSION").to_owned())].into(),
    }
}

impl RecordState {
    fn push(&mut self, call: &RecordedCall<'_>) -> Result<()> {
        let (bytes, is_error) = recorded_output(call.result);
        let mut draft = StepDraft::tool_call(call.tool, Value::Object(call.arguments.clone()));
        draft.output = Some(bytes);
        draft.status = if is_error {
            StepStatus::Error
        } else {
            StepStatus::Ok
        };
        draft.deterministic = self.deterministic.iter().any(|t| t == call.tool);
        draft.duration_ms = Some(u64::try_from(call.elapsed.as_millis()).unwrap_or(u64::MAX));
        draft.timestamp = Some(rfc3339(super::select::now()));
        let hash = self.builder.push_step(&self.store, draft)?;
        writeln!(self.journal, "{hash}")?;
        self.journal.sync_data()?;
        if !is_error {
            self.record_inputs(call.tool, call.arguments)?;
        }
        Ok(())
    }

    /// Adds the files a successful `fs_read` (Line operations) or `ctx_summarize` read to the
    /// run's inputs, each once, as they are now (read through the workspace sandbox; files
    /// over 8 MiB are left out).
    fn record_inputs(
        &mut self,
        tool: &str,
        arguments: &ctx_mcp::rmcp::model::JsonObject,
    ) -> Result<()> {
        const MAX_INPUT_BYTES: u64 = 8 * 1024 * 1024;
        let path_of = |op: &Value| -> Option<String> {
            (op.get("mode").and_then(Value::as_str) == Some("Line"))
                .then(|| op.get("path").and_then(Value::as_str).map(str::to_owned))
                .flatten()
        };
        let paths: Vec<String> = match tool {
            "fs_read" => match arguments.get("operations").and_then(Value::as_array) {
                Some(operations) => operations.iter().filter_map(path_of).collect(),
                None => path_of(&Value::Object(arguments.clone()))
                    .into_iter()
                    .collect(),
            },
            "ctx_summarize" => arguments
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .into_iter()
                .collect(),
            _ => Vec::new(),
        };
        let Some(sandbox) = &self.sandbox else {
            return Ok(());
        };
        for path in paths {
            let Ok(mut resolved) = sandbox.resolve(&path) else {
                continue;
            };
            if !resolved.meta.is_file()
                || resolved.meta.len() > MAX_INPUT_BYTES
                || self.inputs.contains(&resolved.rel)
            {
                continue;
            }
            let mut bytes = Vec::new();
            if std::io::Read::read_to_end(&mut resolved.file, &mut bytes).is_err() {
                continue;
            }
            // Stored for replay as an agent saw it: redacted (binary files are not kept, as
            // no tool returns their bytes).
            let Ok(text) = std::str::from_utf8(&bytes) else {
                continue;
            };
            let redacted = self.redactor.redact(text);
            self.builder
                .add_input(&self.store, &resolved.rel, redacted.text.as_bytes())?;
            self.inputs.insert(resolved.rel);
        }
        Ok(())
    }
}

impl CallRecorder for RunRecorder {
    fn record(&self, call: &RecordedCall<'_>) {
        let mut guard = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(state) = guard.as_mut() else {
            return;
        };
        if state.error.is_some() {
            return;
        }
        if let Err(err) = state.push(call) {
            tracing::error!("recording `{}`: cannot save a step: {err:#}", self.name);
            state.error = Some(format!("{err:#}"));
        }
    }
}

/// A recording finished after its process died.
struct Recovered {
    name: String,
    run: RunId,
    steps: usize,
}

/// Finishes the recordings whose process is gone, from their journals.
fn recover_recordings(store: &Store) -> Result<Vec<Recovered>> {
    let dir = journal_dir(store);
    let Ok(entries) = fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        if let Some(recovered) = recover_one(store, &path)? {
            out.push(recovered);
        }
    }
    Ok(out)
}

fn process_alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists()
}

fn recover_one(store: &Store, path: &Path) -> Result<Option<Recovered>> {
    let file = fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = std::io::BufReader::new(file).lines();
    let Some(Ok(first)) = lines.next() else {
        fs::remove_file(path).ok();
        return Ok(None);
    };
    let header: JournalHeader = serde_json::from_str(&first).with_context(|| {
        format!(
            "{} is not a recording journal; move it out of the way",
            path.display()
        )
    })?;
    if cfg!(target_os = "linux") && process_alive(header.pid) {
        return Ok(None);
    }
    let mut builder = RunBuilder::new("mcp");
    builder
        .set_created(Some(header.created.clone()))
        .set_environment(environment());
    for line in lines {
        // A line cut by the crash, or a step whose objects did not make it, ends the run.
        let Ok(line) = line else { break };
        let Ok(hash) = line.trim().parse::<ContentHash>() else {
            break;
        };
        let Ok(bytes) = store.objects().get(&hash) else {
            break;
        };
        let Ok(step) = serde_json::from_slice::<Step>(&bytes) else {
            break;
        };
        let read = |h: Option<ContentHash>| h.map(|h| store.objects().get(&h)).transpose();
        let (Ok(output), Ok(reasoning)) = (read(step.output_ref), read(step.reasoning_ref)) else {
            break;
        };
        let draft = StepDraft {
            kind: step.kind,
            tool: step.tool,
            call_id: step.call_id,
            model: step.model,
            parameters: step.parameters,
            output,
            reasoning: reasoning.map(|b| String::from_utf8_lossy(&b).into_owned()),
            deterministic: step.deterministic,
            status: step.status,
            timestamp: step.timestamp,
            duration_ms: step.duration_ms,
        };
        builder.push_step(store, draft)?;
    }
    let steps = builder.step_count();
    if steps == 0 {
        fs::remove_file(path).ok();
        return Ok(None);
    }
    let run = builder.finish(store)?;
    ctx::runs::tag_run(store, &header.name, &run)?;
    fs::remove_file(path).ok();
    Ok(Some(Recovered {
        name: header.name,
        run,
        steps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_names_must_be_usable_tags() {
        assert!(check_record_name("review-1").is_ok());
        for bad in [
            "",
            "a/b",
            "cafe",
            "sha256x",
            ".hidden",
            "with space",
            "latest",
        ] {
            assert!(check_record_name(bad).is_err(), "{bad}");
        }
    }
}
