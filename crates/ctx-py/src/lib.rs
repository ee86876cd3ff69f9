//! The `ctxlayer` Python module: the ctx file engine (`fs_read`) over sandboxed workspaces, and
//! the rest of ctx (packs, tokens, selection, code intelligence, runs) through the facade's
//! `ctx::Workspace`, opened on first use.
//!
//! `ctxlayer.fs_read(path, mode, …)` runs one Amazon-Q-style operation and returns its content
//! (Line: a string; Directory: a list of entries; Search: a list of matches), raising
//! `FileNotFoundError`, `PermissionError` (also for paths the sandbox refuses) or `ValueError`
//! (bad input). `ctxlayer.fs_read_batch(operations)` runs several and returns one dict per
//! operation, failed ones included. Both take `root=` (default: the current directory):
//! no path can leave it. `ctxlayer.Workspace(root)` keeps a root open for many calls. The GIL is
//! released while files are read, so threads read in parallel.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ctx_facade::ErrorKind as FacadeKind;

use ctx_facade::fs::read::{
    FsReadInput, FsReadOutput, OpResult, ReadOptions, fs_read as run_fs_read,
};
use ctx_facade::fs::sandbox::Sandbox as RustWorkspace;
use ctx_facade::fs::{ErrorKind, SandboxError};
use pyo3::exceptions::{
    PyFileNotFoundError, PyOSError, PyPermissionError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

pyo3::create_exception!(
    ctxlayer,
    CtxError,
    pyo3::exceptions::PyException,
    "A ctx operation failed; `kind` says how."
);
pyo3::create_exception!(
    ctxlayer,
    InvalidInputError,
    CtxError,
    "The request is wrong: fix the input."
);
pyo3::create_exception!(
    ctxlayer,
    NotFoundError,
    CtxError,
    "What the request names does not exist."
);
pyo3::create_exception!(
    ctxlayer,
    ConflictError,
    CtxError,
    "It exists already, or is in the way."
);
pyo3::create_exception!(
    ctxlayer,
    DamagedError,
    CtxError,
    "The store or an index is damaged: verify, repair or rebuild it."
);
pyo3::create_exception!(
    ctxlayer,
    StoreIOError,
    CtxError,
    "The file system failed (permissions, a full disk, a read-only store)."
);
pyo3::create_exception!(
    ctxlayer,
    InternalError,
    CtxError,
    "A bug in ctx; please report it."
);

/// A directory every path is confined to, and (opened on first use) its ctx store: packs,
/// tokens, selection, code intelligence and runs.
#[pyclass(module = "ctxlayer", frozen)]
struct Workspace {
    inner: RustWorkspace,
    /// Where the facade opens: the root asked for, a store to use, whether to create one.
    open: ctx_facade::OpenOptions,
    facade: Mutex<Option<ctx_facade::Workspace>>,
}

#[pymethods]
impl Workspace {
    /// `root`: the directory (str or pathlib.Path; default: the current directory). `store`:
    /// a store directory to use instead of finding one above `root`. `init`: create
    /// `root/.ctx` when no project store is found (else the global store is used).
    #[new]
    #[pyo3(signature = (root=None, *, store=None, init=false))]
    fn new(root: Option<PathBuf>, store: Option<PathBuf>, init: bool) -> PyResult<Self> {
        let root = match root {
            Some(root) => root,
            None => std::env::current_dir().map_err(|e| {
                PyOSError::new_err(format!("cannot read the current directory: {e}"))
            })?,
        };
        let inner = RustWorkspace::open(&root).map_err(|err| sandbox_error(&err))?;
        let open = ctx_facade::OpenOptions {
            cwd: inner.root().to_owned(),
            store,
            init,
            env: environment(),
        };
        Ok(Self {
            inner,
            open,
            facade: Mutex::new(None),
        })
    }

    // ------------------------------------------------------------------------- packs

    /// Creates an empty pack; returns its record.
    #[pyo3(signature = (name, *, budget=None, tokenizer=None))]
    fn pack_create(
        &self,
        py: Python<'_>,
        name: String,
        budget: Option<u64>,
        tokenizer: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let tokenizer = parse_tokenizer(tokenizer)?;
        self.call(py, move |ws| ws.pack_create(&name, budget, tokenizer))
    }

    /// Adds a source (`file:PATH`, `glob:PATTERN`, `md:PATH`, `md_dir:DIR`, `git:diff`,
    /// `cmd:COMMAND`, `text:STRING`) to a pack; paths are relative to the workspace root.
    #[pyo3(signature = (name, source, *, priority=0, recursive=false, exclude=Vec::new(), max_files=None, allow_sensitive=false))]
    fn pack_add(
        &self,
        py: Python<'_>,
        name: String,
        source: String,
        priority: i64,
        recursive: bool,
        exclude: Vec<String>,
        max_files: Option<u64>,
        allow_sensitive: bool,
    ) -> PyResult<Py<PyAny>> {
        let options = ctx_facade::sources::AddOptions {
            recursive,
            max_files,
            exclude,
            allow_sensitive,
        };
        self.call(py, move |ws| {
            ws.pack_add(&name, &source, &options, priority)
        })
    }

    /// Every pack.
    fn pack_list(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.call(py, ctx_facade::Workspace::pack_list)
    }

    /// A pack's settings and artifacts in render order.
    fn pack_show(&self, py: Python<'_>, name: String) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.pack_show(&name))
    }

    /// Deletes a pack and its artifacts (snapshots are kept).
    fn pack_delete(&self, py: Python<'_>, name: String) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.pack_delete(&name))
    }

    /// Removes an artifact from a pack (a unique prefix of its id is enough).
    fn pack_remove(&self, py: Python<'_>, name: String, artifact: String) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.pack_remove(&name, &artifact))
    }

    /// Renders without recording: the report (included, excluded, redactions, tokens) and,
    /// under "payload", the payload.
    #[pyo3(signature = (packs, *, budget=None, style="markdown".to_owned()))]
    fn pack_preview(
        &self,
        py: Python<'_>,
        packs: PackNames,
        budget: Option<u64>,
        style: String,
    ) -> PyResult<Py<PyAny>> {
        let request = render_request(packs, budget, &style)?;
        self.call(py, move |ws| {
            let rendered = ws.pack_render(&request)?;
            let mut value = serde_json::to_value(&rendered.report)
                .map_err(|e| ctx_facade::CtxError::Corrupt(e.to_string()))?;
            value["payload"] = Value::from(rendered.payload);
            Ok(value)
        })
    }

    /// The payload of the packs, as the CLI's `ctx pack render` prints it.
    #[pyo3(signature = (packs, *, budget=None, style="markdown".to_owned()))]
    fn pack_render(
        &self,
        py: Python<'_>,
        packs: PackNames,
        budget: Option<u64>,
        style: String,
    ) -> PyResult<Py<PyAny>> {
        let request = render_request(packs, budget, &style)?;
        self.call(py, move |ws| Ok(ws.pack_render(&request)?.payload))
    }

    /// Renders and records a snapshot (optionally labelled); returns {"snapshot", "report"}.
    #[pyo3(signature = (packs, *, label=None, budget=None, style="markdown".to_owned()))]
    fn pack_snapshot(
        &self,
        py: Python<'_>,
        packs: PackNames,
        label: Option<String>,
        budget: Option<u64>,
        style: String,
    ) -> PyResult<Py<PyAny>> {
        let request = render_request(packs, budget, &style)?;
        self.call(py, move |ws| {
            let (snapshot, rendered) = ws.pack_snapshot(&request, label.as_deref())?;
            Ok(serde_json::json!({ "snapshot": snapshot, "report": rendered.report }))
        })
    }

    /// A snapshot's stored payload, byte for byte (by id, unique prefix or label).
    fn pack_snapshot_payload(&self, py: Python<'_>, snapshot: String) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| {
            let (_, bytes) = ws.pack_snapshot_payload(&snapshot)?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        })
    }

    /// Re-renders a snapshot: {"identical": bool, "drift": [...]}.
    fn pack_verify(&self, py: Python<'_>, snapshot: String) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.pack_verify(&snapshot))
    }

    // ------------------------------------------------------------------------ tokens

    /// Exact token counts: an int for a str, a list for a list of str.
    #[pyo3(signature = (text, *, tokenizer=None))]
    fn tokens(
        &self,
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        tokenizer: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let tokenizer = parse_tokenizer(tokenizer)?;
        let (texts, one): (Vec<String>, bool) = if let Ok(s) = text.extract::<String>() {
            (vec![s], true)
        } else {
            (
                text.extract::<Vec<String>>()
                    .map_err(|_| PyTypeError::new_err("tokens() takes a str or a list of str"))?,
                false,
            )
        };
        self.call(py, move |ws| {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let counts = ws.count_tokens(&refs, tokenizer)?;
            Ok(if one {
                Value::from(counts[0])
            } else {
                Value::from(counts)
            })
        })
    }

    // ------------------------------------------------------------------------ select

    /// The files most relevant to `query` within `budget` tokens, with why each was chosen:
    /// {"build": ..., "result": {"documents": [...], ...}}. Builds the index on first use.
    #[pyo3(signature = (query, *, budget=8000, index=None))]
    fn select(
        &self,
        py: Python<'_>,
        query: String,
        budget: u64,
        index: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.select(&query, budget, index.as_deref()))
    }

    // -------------------------------------------------------------------------- code

    /// Symbols, imports and line counts of a file or a tree (relative to the root).
    #[pyo3(signature = (path=PathBuf::from("."), *, depth=None, skeleton=false))]
    fn summarize(
        &self,
        py: Python<'_>,
        path: PathBuf,
        depth: Option<usize>,
        skeleton: bool,
    ) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.summarize(&path, depth, skeleton))
    }

    /// Search under `path`: `mode` "text" (literal unless `regex`), "symbol" or "caller";
    /// the first `max_results` matches in (path, line) order.
    #[pyo3(signature = (pattern, path=PathBuf::from("."), *, mode="text".to_owned(), regex=false, ignore_case=false, context=0, max_results=None))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        pattern: String,
        path: PathBuf,
        mode: String,
        regex: bool,
        ignore_case: bool,
        context: usize,
        max_results: Option<usize>,
    ) -> PyResult<Py<PyAny>> {
        let kind = match mode.as_str() {
            "text" => ctx_facade::code::SearchKind::Text(ctx_facade::code::TextQuery {
                pattern,
                regex,
                ignore_case,
                context,
                ..Default::default()
            }),
            "symbol" => ctx_facade::code::SearchKind::Symbol {
                name: pattern,
                context,
            },
            "caller" => ctx_facade::code::SearchKind::Caller {
                name: pattern,
                context,
            },
            other => {
                return Err(InvalidInputError::new_err(format!(
                    "mode `{other}`: use \"text\", \"symbol\" or \"caller\""
                )));
            }
        };
        self.call(py, move |ws| {
            ws.search(&path, &kind, max_results)
                .map(|found| found.results)
        })
    }

    /// Files related to `path`: imports both ways, tests, and files changed with it.
    #[pyo3(signature = (path, *, history=500, limit=10))]
    fn related(
        &self,
        py: Python<'_>,
        path: PathBuf,
        history: usize,
        limit: usize,
    ) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.related(&path, history, limit))
    }

    // -------------------------------------------------------------------------- runs

    /// Imports an agent transcript as a run (`format`: "claude-code", "openhands",
    /// "swe-agent", "ctx"; detected when left out).
    #[pyo3(signature = (path, *, format=None))]
    fn run_import(
        &self,
        py: Python<'_>,
        path: PathBuf,
        format: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let format = match format {
            Some(name) => {
                name.parse::<ctx_facade::runs::FormatChoice>()
                    .map_err(|e| InvalidInputError::new_err(format!("format: {e}")))?
                    .0
            }
            None => None,
        };
        self.call(py, move |ws| ws.run_import(&path, format))
    }

    /// Stored runs, newest first.
    fn run_list(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.call(py, ctx_facade::Workspace::run_list)
    }

    /// A run by id, unique id prefix or tag ("latest" is the last stored): the answer
    /// `ctx run show --json` prints (header and steps, texts by hash).
    fn run_show(&self, py: Python<'_>, run: String) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| {
            let (found, refs) = ws.run_show_with_refs(&run)?;
            ws.run_show_answer(&found, refs, None, &(0..found.steps.len()))
        })
    }

    /// What changed from run `a` to run `b`.
    fn run_diff(&self, py: Python<'_>, a: String, b: String) -> PyResult<Py<PyAny>> {
        self.call(py, move |ws| ws.run_diff(&a, &b))
    }

    /// Starts recording tool calls as a run named `name` in this workspace's store: call
    /// `Recording.record` for each call your agent makes, then `Recording.finish()`.
    /// `deterministic`: the tools whose calls `ctx run replay` may re-run (read-only ones).
    #[pyo3(signature = (name, *, deterministic=None))]
    fn start_recording(
        &self,
        py: Python<'_>,
        name: String,
        deterministic: Option<Vec<String>>,
    ) -> PyResult<Recording> {
        let recording = self.with_facade(py, |ws| {
            ws.start_recording(
                &name,
                deterministic.unwrap_or_default(),
                "ctx-python",
                std::process::id(),
            )
        });
        match recording {
            Ok(recording) => Ok(Recording {
                inner: Arc::new(recording),
            }),
            Err(err) => Err(facade_error(&err)),
        }
    }

    /// The workspace root (absolute, symlinks resolved).
    #[getter]
    fn root(&self) -> PathBuf {
        self.inner.root().to_owned()
    }

    /// Runs one operation; see `ctxlayer.fs_read`.
    #[pyo3(signature = (path=None, mode=None, start_line=None, end_line=None, depth=0, pattern=None, context_lines=2, operations=None, *, regex=false, case_sensitive=false, max_bytes=None))]
    fn fs_read(
        &self,
        py: Python<'_>,
        path: Option<String>,
        mode: Option<String>,
        start_line: Option<i64>,
        end_line: Option<i64>,
        depth: i64,
        pattern: Option<String>,
        context_lines: i64,
        operations: Option<Bound<'_, PyAny>>,
        regex: bool,
        case_sensitive: bool,
        max_bytes: Option<usize>,
    ) -> PyResult<Py<PyAny>> {
        if let Some(operations) = operations {
            return self.fs_read_batch(py, &operations, max_bytes);
        }
        let (Some(path), Some(mode)) = (path, mode) else {
            return Err(PyValueError::new_err(
                "fs_read needs `path` and `mode` (\"Line\", \"Directory\" or \"Search\"), or `operations`",
            ));
        };
        let mut op = Map::new();
        op.insert("path".into(), Value::from(path));
        op.insert("mode".into(), Value::from(mode.clone()));
        match mode.to_ascii_lowercase().as_str() {
            "line" => {
                op.insert(
                    "start_line".into(),
                    start_line.map_or(Value::Null, Value::from),
                );
                op.insert("end_line".into(), end_line.map_or(Value::Null, Value::from));
            }
            "directory" => {
                op.insert("depth".into(), Value::from(depth));
            }
            "search" => {
                op.insert("pattern".into(), pattern.map_or(Value::Null, Value::from));
                op.insert("context_lines".into(), Value::from(context_lines));
                op.insert("regex".into(), Value::from(regex));
                op.insert("case_sensitive".into(), Value::from(case_sensitive));
            }
            _ => {}
        }
        let input = FsReadInput::from_json(&Value::Object(op))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let output = self.run(py, &input, max_bytes);
        let outcome = output
            .results
            .into_iter()
            .next()
            .ok_or_else(|| PyValueError::new_err("no operation ran"))?;
        if let Some(error) = outcome.error {
            return Err(kind_error(error.kind, error.message));
        }
        let result = outcome
            .result
            .ok_or_else(|| PyValueError::new_err("no result"))?;
        single_result(py, &result, output.max_response_bytes)
    }

    /// Runs several operations; see `ctxlayer.fs_read_batch`.
    #[pyo3(signature = (operations, *, max_bytes=None))]
    fn fs_read_batch(
        &self,
        py: Python<'_>,
        operations: &Bound<'_, PyAny>,
        max_bytes: Option<usize>,
    ) -> PyResult<Py<PyAny>> {
        let request = to_json(operations)?;
        let request = match request {
            Value::Array(_) => request,
            Value::Object(ref obj) if obj.contains_key("operations") => request,
            _ => {
                return Err(PyTypeError::new_err(
                    "operations must be a list of dicts like {\"mode\": \"Line\", \"path\": \"a.txt\"}",
                ));
            }
        };
        let input =
            FsReadInput::from_json(&request).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let output = self.run(py, &input, max_bytes);
        let value = serde_json::to_value(&output.results)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        to_python(py, &value)
    }

    fn __repr__(&self) -> String {
        format!(
            "ctxlayer.Workspace({:?})",
            self.inner.root().display().to_string()
        )
    }
}

/// A `tokenizer=` argument ("o200k_base", "cl100k_base", "approx"), when given.
fn parse_tokenizer(name: Option<String>) -> PyResult<Option<ctx_facade::core::TokenizerKind>> {
    name.map(|t| t.parse::<ctx_facade::core::TokenizerKind>())
        .transpose()
        .map_err(|e| InvalidInputError::new_err(format!("tokenizer: {e}")))
}

/// Pack names: one name or a list of names.
#[derive(FromPyObject)]
enum PackNames {
    One(String),
    Many(Vec<String>),
}

fn render_request(
    packs: PackNames,
    budget: Option<u64>,
    style: &str,
) -> PyResult<ctx_facade::packs::RenderRequest> {
    let packs = match packs {
        PackNames::One(name) => vec![name],
        PackNames::Many(names) => names,
    };
    if packs.is_empty() {
        return Err(InvalidInputError::new_err("packs: name at least one pack"));
    }
    Ok(ctx_facade::packs::RenderRequest {
        packs,
        budget,
        tokenizer: None,
        style: style
            .parse()
            .map_err(|e| InvalidInputError::new_err(format!("style: {e}")))?,
    })
}

/// A run being recorded (from `Workspace.start_recording`): one step per tool call, saved
/// as it is recorded, the run written and tagged by `finish()`.
#[pyclass(module = "ctxlayer", frozen)]
struct Recording {
    inner: Arc<ctx_facade::recording::Recording>,
}

#[pymethods]
impl Recording {
    /// Records one tool call: its name, its arguments (a dict), what it answered (str or
    /// bytes), whether that was an error, and how long it took.
    #[pyo3(signature = (tool, arguments, output, *, is_error=false, elapsed_ms=0))]
    fn record(
        &self,
        py: Python<'_>,
        tool: String,
        arguments: &Bound<'_, PyAny>,
        output: &Bound<'_, PyAny>,
        is_error: bool,
        elapsed_ms: u64,
    ) -> PyResult<()> {
        let Value::Object(arguments) = to_json(arguments)? else {
            return Err(InvalidInputError::new_err(
                "arguments: pass a dict of the call's arguments",
            ));
        };
        let output: Vec<u8> = if let Ok(text) = output.extract::<String>() {
            text.into_bytes()
        } else if let Ok(bytes) = output.extract::<Vec<u8>>() {
            bytes
        } else {
            return Err(InvalidInputError::new_err("output: pass str or bytes"));
        };
        py.detach(|| {
            self.inner.record(ctx_facade::recording::RecordedStep {
                tool: &tool,
                arguments: &arguments,
                output,
                is_error,
                elapsed: std::time::Duration::from_millis(elapsed_ms),
            });
        });
        Ok(())
    }

    /// Writes the run, tags it with the recording's name (and `latest`); returns
    /// `{"run": id, "steps": n}`, or None when nothing was recorded.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match py.detach(|| self.inner.finish()) {
            Ok(Some((run, steps))) => to_python(
                py,
                &serde_json::json!({"run": run.to_string(), "steps": steps}),
            ),
            Ok(None) => Ok(py.None()),
            Err(err) => Err(facade_error(&err)),
        }
    }

    fn __repr__(&self) -> String {
        format!("ctxlayer.Recording({:?})", self.inner.name())
    }
}

/// What the environment says, read here (the front end), never in the library.
fn environment() -> ctx_facade::Environment {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let global_config = var("XDG_CONFIG_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".config")))
        .map(|dir| dir.join("ctx").join("config.toml"));
    ctx_facade::Environment {
        ctx_home: var("CTX_HOME"),
        home: var("HOME"),
        global_config,
        vars: std::env::vars()
            .filter(|(k, _)| k.starts_with("CTX_"))
            .collect(),
    }
}

fn clock() -> ctx_facade::Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    })
}

/// A facade error as the exception class of its kind.
fn facade_error(err: &ctx_facade::CtxError) -> PyErr {
    let message = err.to_string();
    match err.kind() {
        FacadeKind::UserInput => InvalidInputError::new_err(message),
        FacadeKind::NotFound => NotFoundError::new_err(message),
        FacadeKind::Conflict => ConflictError::new_err(message),
        FacadeKind::Damaged => DamagedError::new_err(message),
        FacadeKind::Io => StoreIOError::new_err(message),
        FacadeKind::Internal => InternalError::new_err(message),
    }
}

impl Workspace {
    /// Runs `f` on the facade (opened on first use) with the GIL released.
    fn with_facade<T, F>(&self, py: Python<'_>, f: F) -> Result<T, ctx_facade::CtxError>
    where
        T: Send,
        F: FnOnce(&ctx_facade::Workspace) -> Result<T, ctx_facade::CtxError> + Send,
    {
        py.detach(|| {
            let mut guard = self
                .facade
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if guard.is_none() {
                *guard = Some(ctx_facade::Workspace::open(&self.open, clock())?);
            }
            f(guard.as_ref().expect("opened above"))
        })
    }

    /// Runs `f` on the facade (opened on first use) with the GIL released, and returns its
    /// result as Python values.
    fn call<T, F>(&self, py: Python<'_>, f: F) -> PyResult<Py<PyAny>>
    where
        T: serde::Serialize,
        F: FnOnce(&ctx_facade::Workspace) -> Result<T, ctx_facade::CtxError> + Send,
    {
        let value = self.with_facade(py, |ws| {
            let result = f(ws)?;
            serde_json::to_value(&result).map_err(|e| ctx_facade::CtxError::Corrupt(e.to_string()))
        });
        match value {
            Ok(value) => to_python(py, &value),
            Err(err) => Err(facade_error(&err)),
        }
    }

    /// Runs `input` with the GIL released.
    fn run(&self, py: Python<'_>, input: &FsReadInput, max_bytes: Option<usize>) -> FsReadOutput {
        let mut options = ReadOptions::default();
        if let Some(max) = max_bytes {
            options.max_response_bytes = max;
        }
        py.detach(|| run_fs_read(&self.inner, input, &options))
    }
}

/// What one operation returns in Python: the text for Line (with a truncation note when cut),
/// the entries for Directory, the matches for Search.
fn single_result(py: Python<'_>, result: &OpResult, cap: usize) -> PyResult<Py<PyAny>> {
    match result {
        OpResult::Line(line) => {
            let mut text = line.content.clone();
            if let Some(next) = line.next_start_line {
                let _ = write!(
                    text,
                    "\n[truncated at the {cap}-byte response cap; continue with start_line={next}]"
                );
            }
            Ok(PyString::new(py, &text).into_any().unbind())
        }
        OpResult::Directory(dir) => {
            let value = serde_json::to_value(&dir.entries)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            to_python(py, &value)
        }
        OpResult::Search(search) => {
            let value = serde_json::to_value(&search.matches)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            to_python(py, &value)
        }
    }
}

fn workspace_for(root: Option<PathBuf>) -> PyResult<Workspace> {
    let root = match root {
        Some(root) => root,
        None => std::env::current_dir()
            .map_err(|e| PyOSError::new_err(format!("cannot read the current directory: {e}")))?,
    };
    Workspace::new(Some(root), None, false)
}

/// Read lines of a file, list a directory or search text, inside `root` (default: the
/// current directory). Raises FileNotFoundError, PermissionError or ValueError.
#[pyfunction]
#[pyo3(signature = (path=None, mode=None, start_line=None, end_line=None, depth=0, pattern=None, context_lines=2, operations=None, *, root=None, regex=false, case_sensitive=false, max_bytes=None))]
fn fs_read(
    py: Python<'_>,
    path: Option<String>,
    mode: Option<String>,
    start_line: Option<i64>,
    end_line: Option<i64>,
    depth: i64,
    pattern: Option<String>,
    context_lines: i64,
    operations: Option<Bound<'_, PyAny>>,
    root: Option<PathBuf>,
    regex: bool,
    case_sensitive: bool,
    max_bytes: Option<usize>,
) -> PyResult<Py<PyAny>> {
    workspace_for(root)?.fs_read(
        py,
        path,
        mode,
        start_line,
        end_line,
        depth,
        pattern,
        context_lines,
        operations,
        regex,
        case_sensitive,
        max_bytes,
    )
}

/// Run several operations independently (in parallel); returns one dict per operation:
/// {"mode", "path", "ok", "result"} or {"mode", "path", "ok": False, "error": {"kind", "message"}}.
#[pyfunction]
#[pyo3(signature = (operations, *, root=None, max_bytes=None))]
fn fs_read_batch(
    py: Python<'_>,
    operations: &Bound<'_, PyAny>,
    root: Option<PathBuf>,
    max_bytes: Option<usize>,
) -> PyResult<Py<PyAny>> {
    workspace_for(root)?.fs_read_batch(py, operations, max_bytes)
}

fn kind_error(kind: &str, message: String) -> PyErr {
    match kind {
        "not_found" => PyFileNotFoundError::new_err(message),
        "permission_denied" => PyPermissionError::new_err(message),
        "invalid_input" => PyValueError::new_err(message),
        _ => PyOSError::new_err(message),
    }
}

fn sandbox_error(err: &SandboxError) -> PyErr {
    let kind = match err.kind() {
        ErrorKind::NotFound => "not_found",
        ErrorKind::PermissionDenied => "permission_denied",
        ErrorKind::InvalidInput => "invalid_input",
        ErrorKind::Io => "io",
    };
    kind_error(kind, err.to_string())
}

/// Python values (dict, list, tuple, str, int, float, bool, None) as JSON.
fn to_json(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if value.cast::<PyInt>().is_ok() {
        let n: i64 = value
            .extract()
            .map_err(|_| PyValueError::new_err(format!("integer {value} is too large")))?;
        return Ok(Value::from(n));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Ok(serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let key: String = key.extract().map_err(|_| {
                PyTypeError::new_err(format!("dict keys must be strings, not {key}"))
            })?;
            map.insert(key, to_json(&item)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = value.cast::<PyList>() {
        return list
            .iter()
            .map(|item| to_json(&item))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple
            .iter()
            .map(|item| to_json(&item))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    Err(PyTypeError::new_err(format!(
        "cannot pass a {} to fs_read; use dicts, lists, strings, numbers, booleans and None",
        value.get_type().name()?
    )))
}

/// JSON as Python values.
fn to_python(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any().unbind(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any().unbind(),
            _ => n
                .as_f64()
                .unwrap_or(f64::NAN)
                .into_pyobject(py)?
                .into_any()
                .unbind(),
        },
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// The `ctxlayer` module (PyPI's `ctx` was a hijacked package, removed in 2022).
#[pymodule]
fn ctxlayer(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The module's own tree-sitter (linked into it) allocates from mimalloc, as the `ctx`
    // binary's does; set before anything in the module parses.
    ctx_facade::host::use_mimalloc_for_tree_sitter();
    m.add_class::<Workspace>()?;
    m.add_class::<Recording>()?;
    let py = m.py();
    m.add("CtxError", py.get_type::<CtxError>())?;
    m.add("InvalidInputError", py.get_type::<InvalidInputError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("DamagedError", py.get_type::<DamagedError>())?;
    m.add("StoreIOError", py.get_type::<StoreIOError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_function(wrap_pyfunction!(fs_read, m)?)?;
    m.add_function(wrap_pyfunction!(fs_read_batch, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
