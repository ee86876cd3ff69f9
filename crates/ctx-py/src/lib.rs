//! The `ctx` Python module: the ctx file engine (`fs_read`) over sandboxed workspaces.
//!
//! `ctx.fs_read(path, mode, …)` runs one Amazon-Q-style operation and returns its content
//! (Line: a string; Directory: a list of entries; Search: a list of matches), raising
//! `FileNotFoundError`, `PermissionError` (also for paths the sandbox refuses) or `ValueError`
//! (bad input). `ctx.fs_read_batch(operations)` runs several and returns one dict per
//! operation, failed ones included. Both take `root=` (default: the current directory):
//! no path can leave it. `ctx.Workspace(root)` keeps a root open for many calls. The GIL is
//! released while files are read, so threads read in parallel.

use std::fmt::Write as _;
use std::path::PathBuf;

use ctx_fs::read::{FsReadInput, FsReadOutput, OpResult, ReadOptions, fs_read as run_fs_read};
use ctx_fs::sandbox::Workspace as RustWorkspace;
use ctx_fs::{ErrorKind, SandboxError};
use pyo3::exceptions::{
    PyFileNotFoundError, PyOSError, PyPermissionError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

/// A directory every path is confined to; open once, use for many reads.
#[pyclass(module = "ctx", frozen)]
struct Workspace {
    inner: RustWorkspace,
}

#[pymethods]
impl Workspace {
    #[new]
    fn new(root: PathBuf) -> PyResult<Self> {
        Ok(Self {
            inner: RustWorkspace::open(&root).map_err(|err| sandbox_error(&err))?,
        })
    }

    /// The workspace root (absolute, symlinks resolved).
    #[getter]
    fn root(&self) -> PathBuf {
        self.inner.root().to_owned()
    }

    /// Runs one operation; see `ctx.fs_read`.
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

    /// Runs several operations; see `ctx.fs_read_batch`.
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
            "ctx.Workspace({:?})",
            self.inner.root().display().to_string()
        )
    }
}

impl Workspace {
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
    Workspace::new(root)
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

/// The `ctx` module.
#[pymodule]
fn ctx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Workspace>()?;
    m.add_function(wrap_pyfunction!(fs_read, m)?)?;
    m.add_function(wrap_pyfunction!(fs_read_batch, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
