//! Recording a session of tool calls as a run (`ctx mcp --record`, `ctx serve --record`, and
//! any other front end that answers tool calls).
//!
//! A [`Recording`] writes each call as a step of one run as it happens, and keeps a journal
//! (`.ctx/recordings/NAME.PID.jsonl`: a JSON header line, then one step hash per line, each
//! appended and synced before the caller answers its client). [`Recording::finish`] writes
//! the run, tags it NAME (and `latest`) and removes the journal; a journal whose process died
//! is finished by [`recover_recordings`], so a crash loses no acknowledged step.
//!
//! Files a successful read-like call named (`fs_read` line reads, `ctx_summarize`'s path) are
//! recorded once as the run's inputs, read through the workspace sandbox and redacted, as an
//! agent saw them. Nothing here reads the clock or the environment: the step clock and the
//! runtime's name come from the front end.

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use ctx_core::ContentHash;
use ctx_core::redact::Redactor;
use ctx_fs::time::rfc3339;
use ctx_runs::{RunBuilder, RunId, Step, StepDraft, StepStatus};
use ctx_store::Store;
use serde_json::Value;

use crate::error::CtxError;
use crate::workspace::Clock;

/// Files larger than this are not recorded as inputs.
const MAX_INPUT_BYTES: u64 = 8 * 1024 * 1024;

/// The directory unfinished recordings keep their journals in.
fn journal_dir(store: &Store) -> PathBuf {
    store.dir().join("recordings")
}

#[derive(serde::Serialize, serde::Deserialize)]
struct JournalHeader {
    name: String,
    created: String,
    pid: u32,
    /// The recording front end (`ctx-mcp`, `ctx-serve`); older journals have none.
    #[serde(default)]
    runtime: Option<String>,
}

/// What a recording is started with.
pub struct RecordingOptions {
    /// The run's name (a tag: see [`check_record_name`]).
    pub name: String,
    /// The workspace root: inputs are read inside it, through the sandbox.
    pub workspace_root: PathBuf,
    /// When the session started (Unix seconds): the run's creation time.
    pub started: i64,
    /// The tools whose calls are deterministic (replayable): read-only tools.
    pub deterministic: Vec<String>,
    /// Redaction rules: inputs are stored as an agent saw them, redacted.
    pub redactor: Redactor,
    /// The clock for each step's timestamp.
    pub clock: Clock,
    /// The front end's name, recorded in the run's environment (`ctx-mcp`, `ctx-serve`).
    pub runtime: String,
    /// This process's id, written in the journal so a live recording is not recovered.
    pub pid: u32,
}

/// One answered tool call, as a recording stores it.
#[derive(Debug)]
pub struct RecordedStep<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// Its arguments as the client sent them.
    pub arguments: &'a serde_json::Map<String, Value>,
    /// The answer's bytes (what replay compares).
    pub output: Vec<u8>,
    /// Whether the answer was an error.
    pub is_error: bool,
    /// How long the call took.
    pub elapsed: Duration,
}

struct State {
    store: Store,
    builder: RunBuilder,
    sandbox: Option<ctx_fs::Sandbox>,
    inputs: BTreeSet<String>,
    journal: fs::File,
    journal_path: PathBuf,
    /// The first error met while recording, reported by `finish`.
    error: Option<String>,
}

/// A run being recorded, one step per tool call. Shared between the threads answering calls.
pub struct Recording {
    name: String,
    deterministic: Vec<String>,
    redactor: Redactor,
    clock: Clock,
    state: Mutex<Option<State>>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The run's environment: the platform, the front end and ctx's version.
fn environment(runtime: &str) -> ctx_runs::Environment {
    ctx_runs::Environment {
        os: Some(std::env::consts::OS.to_owned()),
        runtime: Some(runtime.to_owned()),
        tool_versions: [("ctx".to_owned(), env!("CARGO_PKG_VERSION").to_owned())].into(),
    }
}

/// Refuses names `ctx run` could not use as a tag (and hidden-looking names).
pub fn check_record_name(name: &str) -> Result<(), CtxError> {
    if ctx_runs::check_tag(name).is_ok() && !name.starts_with('.') {
        Ok(())
    } else {
        Err(CtxError::InvalidInput(format!(
            "`{name}` is not a usable run name: use letters, digits, `.`, `_`, `-` (not only hex digits, not `latest`, not starting with `sha256` or `.`)"
        )))
    }
}

fn io_error(path: &Path, source: std::io::Error) -> CtxError {
    CtxError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Recording {
    /// Starts recording into `store`: writes the journal header (synced) and returns the
    /// recording. Nothing is written to the store until the first step.
    pub fn start(store: Store, options: RecordingOptions) -> Result<Self, CtxError> {
        check_record_name(&options.name)?;
        let dir = journal_dir(&store);
        fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        let created = rfc3339(options.started);
        let journal_path = dir.join(format!("{}.{}.jsonl", options.name, options.pid));
        let mut journal = fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&journal_path)
            .map_err(|e| io_error(&journal_path, e))?;
        let header = JournalHeader {
            name: options.name.clone(),
            created: created.clone(),
            pid: options.pid,
            runtime: Some(options.runtime.clone()),
        };
        let line = serde_json::to_string(&header).expect("headers serialize");
        writeln!(journal, "{line}")
            .and_then(|()| journal.sync_all())
            .map_err(|e| io_error(&journal_path, e))?;
        let mut builder = RunBuilder::new("mcp");
        builder
            .set_created(Some(created))
            .set_environment(environment(&options.runtime));
        Ok(Self {
            name: options.name,
            deterministic: options.deterministic,
            redactor: options.redactor,
            clock: options.clock,
            state: Mutex::new(Some(State {
                store,
                builder,
                sandbox: ctx_fs::Sandbox::open(&options.workspace_root).ok(),
                inputs: BTreeSet::new(),
                journal,
                journal_path,
                error: None,
            })),
        })
    }

    /// The run's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Records one call as the next step. A failure to save is remembered and reported by
    /// [`finish`](Self::finish); later calls are then not recorded.
    pub fn record(&self, call: RecordedStep<'_>) {
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
        if let Err(err) = self.push(state, call) {
            state.error = Some(err.to_string());
        }
    }

    fn push(&self, state: &mut State, call: RecordedStep<'_>) -> Result<(), CtxError> {
        let mut draft = StepDraft::tool_call(call.tool, Value::Object(call.arguments.clone()));
        draft.output = Some(call.output);
        draft.status = if call.is_error {
            StepStatus::Error
        } else {
            StepStatus::Ok
        };
        draft.deterministic = self.deterministic.iter().any(|t| t == call.tool);
        draft.duration_ms = Some(u64::try_from(call.elapsed.as_millis()).unwrap_or(u64::MAX));
        draft.timestamp = Some(rfc3339((self.clock)()));
        let hash = state.builder.push_step(&state.store, draft)?;
        writeln!(state.journal, "{hash}")
            .and_then(|()| state.journal.sync_data())
            .map_err(|e| io_error(&state.journal_path, e))?;
        if !call.is_error {
            self.record_inputs(state, call.tool, call.arguments)?;
        }
        Ok(())
    }

    /// Adds the files a successful `fs_read` (line reads) or `ctx_summarize` read to the run's
    /// inputs, each once, as they are now (through the sandbox; large and binary files are
    /// left out), redacted.
    fn record_inputs(
        &self,
        state: &mut State,
        tool: &str,
        arguments: &serde_json::Map<String, Value>,
    ) -> Result<(), CtxError> {
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
        let Some(sandbox) = &state.sandbox else {
            return Ok(());
        };
        for path in paths {
            let Ok(mut resolved) = sandbox.resolve(&path) else {
                continue;
            };
            if !resolved.meta.is_file()
                || resolved.meta.len() > MAX_INPUT_BYTES
                || state.inputs.contains(&resolved.rel)
            {
                continue;
            }
            let mut bytes = Vec::new();
            if std::io::Read::read_to_end(&mut resolved.file, &mut bytes).is_err() {
                continue;
            }
            let Ok(text) = std::str::from_utf8(&bytes) else {
                continue;
            };
            let redacted = self.redactor.redact(text);
            state
                .builder
                .add_input(&state.store, &resolved.rel, redacted.text.as_bytes())?;
            state.inputs.insert(resolved.rel);
        }
        Ok(())
    }

    /// Finishes the run: writes it, tags it with the recording's name and `latest`, removes
    /// the journal. `None` when no call was recorded. A second call returns `None`.
    pub fn finish(&self) -> Result<Option<(RunId, usize)>, CtxError> {
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(state) = state else {
            return Ok(None);
        };
        if let Some(error) = &state.error {
            return Err(CtxError::InvalidInput(format!(
                "recording `{}` failed: {error}; the steps saved so far are in {} and are finished by the next recording in this store",
                self.name,
                state.journal_path.display()
            )));
        }
        let steps = state.builder.step_count();
        drop(state.journal);
        if steps == 0 {
            let _ = fs::remove_file(&state.journal_path);
            return Ok(None);
        }
        let run = state.builder.finish(&state.store)?;
        ctx_runs::tag_run(&state.store, &self.name, &run)?;
        let _ = fs::remove_file(&state.journal_path);
        Ok(Some((run, steps)))
    }
}

/// A recording finished after its process died.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub name: String,
    pub run: RunId,
    pub steps: usize,
}

/// Finishes the recordings in `store` whose process is gone (`alive` says whether a journal's
/// process id still runs), from their journals.
pub fn recover_recordings(
    store: &Store,
    alive: &dyn Fn(u32) -> bool,
) -> Result<Vec<Recovered>, CtxError> {
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
        if let Some(recovered) = recover_one(store, &path, alive)? {
            out.push(recovered);
        }
    }
    Ok(out)
}

/// Whether process `pid` runs on this machine (Linux: `/proc/PID` exists; elsewhere every
/// process is taken as alive, so journals are never finished under a live recorder).
pub fn process_alive(pid: u32) -> bool {
    !cfg!(target_os = "linux") || Path::new("/proc").join(pid.to_string()).exists()
}

fn recover_one(
    store: &Store,
    path: &Path,
    alive: &dyn Fn(u32) -> bool,
) -> Result<Option<Recovered>, CtxError> {
    let file = fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut lines = std::io::BufReader::new(file).lines();
    let Some(Ok(first)) = lines.next() else {
        fs::remove_file(path).ok();
        return Ok(None);
    };
    let header: JournalHeader = serde_json::from_str(&first).map_err(|_| {
        CtxError::Corrupt(format!(
            "{} is not a recording journal; move it out of the way",
            path.display()
        ))
    })?;
    if alive(header.pid) {
        return Ok(None);
    }
    let mut builder = RunBuilder::new("mcp");
    builder
        .set_created(Some(header.created.clone()))
        .set_environment(environment(header.runtime.as_deref().unwrap_or("ctx-mcp")));
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
            usage: step.usage,
        };
        builder.push_step(store, draft)?;
    }
    let steps = builder.step_count();
    if steps == 0 {
        fs::remove_file(path).ok();
        return Ok(None);
    }
    let run = builder.finish(store)?;
    ctx_runs::tag_run(store, &header.name, &run)?;
    fs::remove_file(path).ok();
    Ok(Some(Recovered {
        name: header.name,
        run,
        steps,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
            let err = check_record_name(bad).expect_err(bad);
            assert_eq!(err.kind(), crate::ErrorKind::UserInput);
        }
    }

    fn options(root: &Path, name: &str, pid: u32) -> RecordingOptions {
        RecordingOptions {
            name: name.to_owned(),
            workspace_root: root.to_owned(),
            started: 1_700_000_000,
            deterministic: vec!["fs_read".to_owned()],
            redactor: Redactor::with_custom(&[]).expect("default rules"),
            clock: Arc::new(|| 1_700_000_042),
            runtime: "test".to_owned(),
            pid,
        }
    }

    fn call<'a>(tool: &'a str, arguments: &'a serde_json::Map<String, Value>) -> RecordedStep<'a> {
        RecordedStep {
            tool,
            arguments,
            output: b"answer\n".to_vec(),
            is_error: false,
            elapsed: Duration::from_millis(3),
        }
    }

    #[test]
    fn a_recording_is_a_tagged_run_with_redacted_inputs_and_its_journal_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        fs::create_dir_all(&root).expect("mkdir");
        let secret = "ghp_R8xY2kLmN4pQ7sT1vW3zA5cE9gJ0hB6dF2iK";
        fs::write(root.join("a.txt"), format!("token = \"{secret}\"\n")).expect("write");
        let (store, _) = Store::init(&root.join(".ctx")).expect("init");
        let recording = Recording::start(store, options(&root, "r1", 7)).expect("start");
        let args: serde_json::Map<String, Value> = serde_json::from_value(serde_json::json!({
            "operations": [{"mode": "Line", "path": "a.txt"}]
        }))
        .expect("args");
        recording.record(call("fs_read", &args));
        recording.record(call("ctx_packs_create", &serde_json::Map::new()));
        let (run, steps) = recording.finish().expect("finish").expect("a run");
        assert_eq!(steps, 2);
        assert!(recording.finish().expect("again").is_none());

        let store = Store::open(&root.join(".ctx")).expect("open");
        let loaded = ctx_runs::load_run(&store, "r1").expect("tagged");
        assert_eq!(loaded.id, run);
        assert_eq!(loaded.steps.len(), 2);
        assert!(loaded.steps[0].deterministic);
        assert!(!loaded.steps[1].deterministic);
        assert_eq!(
            loaded.steps[0].timestamp.as_deref(),
            Some(rfc3339(1_700_000_042).as_str())
        );
        assert_eq!(loaded.manifest.inputs.len(), 1);
        let input = store
            .objects()
            .get(&loaded.manifest.inputs[0].content_ref)
            .expect("input");
        let input = String::from_utf8(input).expect("text");
        assert!(!input.contains(secret), "{input}");
        let journals: Vec<_> = fs::read_dir(root.join(".ctx/recordings"))
            .expect("dir")
            .collect();
        assert!(journals.is_empty(), "the journal is removed");
    }

    #[test]
    fn a_journal_whose_process_died_is_finished_and_a_live_one_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        fs::create_dir_all(&root).expect("mkdir");
        let (store, _) = Store::init(&root.join(".ctx")).expect("init");
        let recording = Recording::start(store, options(&root, "crashed", 4242)).expect("start");
        let args = serde_json::Map::new();
        recording.record(call("fs_read", &args));
        recording.record(call("fs_read", &args));
        // The process "dies": the recording is dropped without finishing.
        drop(recording);

        let store = Store::open(&root.join(".ctx")).expect("open");
        assert!(
            recover_recordings(&store, &|pid| pid == 4242)
                .expect("recover")
                .is_empty(),
            "a live recorder's journal is left alone"
        );
        let recovered = recover_recordings(&store, &|_| false).expect("recover");
        assert_eq!(recovered.len(), 1);
        assert_eq!(recovered[0].name, "crashed");
        assert_eq!(recovered[0].steps, 2);
        let loaded = ctx_runs::load_run(&store, "crashed").expect("tagged");
        assert_eq!(loaded.id, recovered[0].run);
        assert!(
            recover_recordings(&store, &|_| false)
                .expect("again")
                .is_empty(),
            "the journal is gone once finished"
        );
    }
}
