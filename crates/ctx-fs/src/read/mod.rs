//! `fs_read`: the Amazon Q Developer CLI file tool (Line, Directory, Search, batches) over a
//! sandboxed [`Sandbox`].
//!
//! Input is `{"operations": [op, …]}` (a single op object is accepted too), each op with a
//! `mode` and a `path` plus, per mode:
//!
//! | mode | fields (defaults) |
//! | --- | --- |
//! | `Line` | `start_line` (1), `end_line` (-1): 1-based, inclusive, negative counts from the end |
//! | `Directory` | `depth` (0 = the directory's children only), `offset` (0) |
//! | `Search` | `pattern` (required), `context_lines` (2), `regex` (false: a literal), `case_sensitive` (false), `offset` (0) |
//!
//! Operations run independently (in parallel when there are several); one that fails gives an
//! error entry and the others still run. The whole response is capped
//! ([`ReadOptions::max_response_bytes`], 400 KiB by default): results are filled in order and
//! the one that reaches the cap is cut, with `truncated: true` and where to continue
//! (`next_start_line` for Line, `next_offset` for Directory and Search). [`FsReadOutput`]
//! serializes to the structured JSON form; [`FsReadOutput::to_text`] gives the Amazon-Q-style
//! text form. [`input_schema`] is the JSON schema of the input, for tool listings.

mod directory;
mod line;
mod search;

use serde::Serialize;
use serde_json::{Map, Value};

pub use directory::{DirEntry, DirectoryResult};
pub use line::LineResult;
pub use search::{MAX_LINE, SearchMatch, SearchResult};

use crate::error::{ErrorKind, SandboxError};
use crate::sandbox::{EntryKind, Resolved, Sandbox};

/// The default response cap: 400 KiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 400 * 1024;

/// Files larger than this are read in Line mode by offset instead of whole: 8 MiB.
pub const DEFAULT_LARGE_FILE_THRESHOLD: u64 = 8 * 1024 * 1024;

/// Most operations in one request.
pub const MAX_OPERATIONS: usize = 256;

/// Limits and switches of an `fs_read` call.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Cap on the bytes of content in one response (all operations together).
    pub max_response_bytes: usize,
    /// Line mode reads files up to this size whole (and so knows their line count); larger
    /// files are read by offset from where the range starts.
    pub large_file_threshold: u64,
    /// Run the operations of a batch in parallel.
    pub parallel: bool,
    /// Threads of the directory walk in Directory and Search modes: 0 picks from the number
    /// of CPUs, 1 walks on the calling thread (best for a server answering many small
    /// requests at once).
    pub walk_threads: usize,
    /// Set by a caller that gave up (a server's timed-out request): directory listings and
    /// searches stop at their next entry or batch of files.
    pub cancel: Option<crate::walk::Cancel>,
}

impl ReadOptions {
    /// The options of the walks an operation makes.
    fn walk(&self) -> crate::walk::WalkOptions {
        crate::walk::WalkOptions {
            threads: self.walk_threads,
            cancel: self.cancel.clone(),
            ..crate::walk::WalkOptions::default()
        }
    }
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            large_file_threshold: DEFAULT_LARGE_FILE_THRESHOLD,
            parallel: true,
            walk_threads: 0,
            cancel: None,
        }
    }
}

/// Why one operation failed.
#[derive(Debug, thiserror::Error)]
pub enum FsReadError {
    /// The path was refused or could not be opened.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The request is malformed (unknown mode, missing pattern, negative depth, …).
    #[error("{0}")]
    InvalidInput(String),
    /// `start_line` lies past the last line.
    #[error("start_line {start} is past the end of `{path}`: it has {total} line{}", if *total == 1 { "" } else { "s" })]
    StartPastEnd {
        path: String,
        start: i64,
        total: u64,
    },
    /// The range's start comes after its end.
    #[error("start_line {start} is after end_line {end} in `{path}`{}", total.map(|t| format!(" (it has {t} line{})", if t == 1 { "" } else { "s" })).unwrap_or_default())]
    InvalidRange {
        path: String,
        start: i64,
        end: i64,
        total: Option<u64>,
    },
    /// Line mode on bytes that are not UTF-8.
    #[error(
        "`{path}` is not UTF-8 text ({bytes} bytes; first invalid byte at offset {offset}); Line mode returns text, so read it with another tool"
    )]
    NotUtf8 {
        path: String,
        bytes: u64,
        offset: u64,
    },
    /// Search named a binary file.
    #[error(
        "`{path}` is a binary file ({bytes} bytes; it has a NUL byte near the start); Search reads text"
    )]
    Binary { path: String, bytes: u64 },
    /// Line mode named a directory.
    #[error("`{path}` is a directory; list it with mode Directory or search it with mode Search")]
    IsADirectory { path: String },
    /// Directory mode named a file.
    #[error("`{path}` is a file, not a directory; read it with mode Line")]
    NotADirectory { path: String },
    /// Reading failed.
    #[error("`{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl FsReadError {
    /// The broad class of this error (not found, refused, bad request, I/O).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Sandbox(err) => err.kind(),
            Self::InvalidInput(_)
            | Self::StartPastEnd { .. }
            | Self::InvalidRange { .. }
            | Self::NotUtf8 { .. }
            | Self::Binary { .. }
            | Self::IsADirectory { .. }
            | Self::NotADirectory { .. } => ErrorKind::InvalidInput,
            Self::Io { .. } => ErrorKind::Io,
        }
    }
}

/// One operation, validated.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "mode")]
pub enum Operation {
    /// Lines `start_line..=end_line` of a file.
    Line {
        path: String,
        start_line: i64,
        end_line: i64,
    },
    /// A directory's entries to `depth` levels below its children.
    Directory {
        path: String,
        depth: u32,
        offset: usize,
    },
    /// Matches of `pattern` in a file or under a directory.
    Search {
        path: String,
        pattern: String,
        context_lines: u32,
        regex: bool,
        case_sensitive: bool,
        offset: usize,
    },
}

const FIELDS: &[&str] = &[
    "mode",
    "path",
    "start_line",
    "end_line",
    "depth",
    "pattern",
    "context_lines",
    "regex",
    "case_sensitive",
    "offset",
];

impl Operation {
    /// A Line operation with the default range (the whole file).
    pub fn line(path: impl Into<String>) -> Self {
        Self::Line {
            path: path.into(),
            start_line: 1,
            end_line: -1,
        }
    }

    /// A Directory operation listing the directory's children.
    pub fn directory(path: impl Into<String>, depth: u32) -> Self {
        Self::Directory {
            path: path.into(),
            depth,
            offset: 0,
        }
    }

    /// A case-insensitive literal Search with two lines of context.
    pub fn search(path: impl Into<String>, pattern: impl Into<String>) -> Self {
        Self::Search {
            path: path.into(),
            pattern: pattern.into(),
            context_lines: 2,
            regex: false,
            case_sensitive: false,
            offset: 0,
        }
    }

    /// The path the operation names.
    pub fn path(&self) -> &str {
        match self {
            Self::Line { path, .. } | Self::Directory { path, .. } | Self::Search { path, .. } => {
                path
            }
        }
    }

    /// `"Line"`, `"Directory"` or `"Search"`.
    pub fn mode(&self) -> &'static str {
        match self {
            Self::Line { .. } => "Line",
            Self::Directory { .. } => "Directory",
            Self::Search { .. } => "Search",
        }
    }

    /// Checks the values a Rust caller may have set directly (the JSON parser checks the
    /// same).
    pub fn validate(&self) -> Result<(), FsReadError> {
        match self {
            Self::Line {
                start_line,
                end_line,
                ..
            } => {
                if *start_line == 0 || *end_line == 0 {
                    return Err(FsReadError::InvalidInput(
                        "line numbers start at 1 (use -1 for the last line); 0 is not a line"
                            .to_owned(),
                    ));
                }
            }
            Self::Search { pattern, .. } => {
                if pattern.is_empty() {
                    return Err(FsReadError::InvalidInput(
                        "Search needs a non-empty `pattern`".to_owned(),
                    ));
                }
            }
            Self::Directory { .. } => {}
        }
        Ok(())
    }

    /// Parses one operation object (see the module docs for the fields).
    pub fn from_json(value: &Value) -> Result<Self, FsReadError> {
        let invalid = |msg: String| FsReadError::InvalidInput(msg);
        let Value::Object(obj) = value else {
            return Err(invalid(format!(
                "an operation must be an object with `mode` and `path`, not {}",
                json_type(value)
            )));
        };
        if let Some(unknown) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unknown field `{unknown}` in an operation; known fields: {}",
                FIELDS.join(", ")
            )));
        }
        let mode = match obj.get("mode") {
            Some(Value::String(mode)) => mode.as_str(),
            None | Some(Value::Null) => {
                return Err(invalid(
                    "missing `mode`; use \"Line\", \"Directory\" or \"Search\"".to_owned(),
                ));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "`mode` must be a string (\"Line\", \"Directory\" or \"Search\"), not {}",
                    json_type(other)
                )));
            }
        };
        let path = match obj.get("path") {
            Some(Value::String(path)) => path.clone(),
            None | Some(Value::Null) => {
                return Err(invalid(
                    "missing `path`; name a file or directory".to_owned(),
                ));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "`path` must be a string, not {}",
                    json_type(other)
                )));
            }
        };
        let op = match mode.to_ascii_lowercase().as_str() {
            "line" => Self::Line {
                path,
                start_line: int_field(obj, "start_line", 1)?,
                end_line: int_field(obj, "end_line", -1)?,
            },
            "directory" => Self::Directory {
                path,
                depth: count_field(obj, "depth", 0, "0 lists the directory's children")?,
                offset: count_field(obj, "offset", 0, "0 starts at the first entry")?,
            },
            "search" => {
                let pattern = match obj.get("pattern") {
                    Some(Value::String(p)) if !p.is_empty() => p.clone(),
                    Some(Value::String(_)) => {
                        return Err(invalid(
                            "`pattern` is empty; name the text to search for".to_owned(),
                        ));
                    }
                    None | Some(Value::Null) => {
                        return Err(invalid(
                            "Search needs a `pattern` (a literal, or a regex with \"regex\": true)"
                                .to_owned(),
                        ));
                    }
                    Some(other) => {
                        return Err(invalid(format!(
                            "`pattern` must be a string, not {}",
                            json_type(other)
                        )));
                    }
                };
                Self::Search {
                    path,
                    pattern,
                    context_lines: count_field(
                        obj,
                        "context_lines",
                        2,
                        "0 shows the matching line only",
                    )?,
                    regex: bool_field(obj, "regex")?,
                    case_sensitive: bool_field(obj, "case_sensitive")?,
                    offset: count_field(obj, "offset", 0, "0 starts at the first match")?,
                }
            }
            _ => {
                return Err(invalid(format!(
                    "unknown mode `{mode}`; use \"Line\", \"Directory\" or \"Search\""
                )));
            }
        };
        op.validate()?;
        Ok(op)
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn int_field(obj: &Map<String, Value>, name: &str, default: i64) -> Result<i64, FsReadError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => n.as_i64().ok_or_else(|| {
            FsReadError::InvalidInput(format!("`{name}` must be a whole number, not {n}"))
        }),
        Some(other) => Err(FsReadError::InvalidInput(format!(
            "`{name}` must be a whole number, not {}",
            json_type(other)
        ))),
    }
}

fn count_field<T: TryFrom<i64> + TryFrom<u8>>(
    obj: &Map<String, Value>,
    name: &str,
    default: u8,
    hint: &str,
) -> Result<T, FsReadError> {
    let value = int_field(obj, name, i64::from(default))?;
    if value < 0 {
        return Err(FsReadError::InvalidInput(format!(
            "`{name}` must be 0 or more, not {value} ({hint})"
        )));
    }
    T::try_from(value)
        .map_err(|_| FsReadError::InvalidInput(format!("`{name}` {value} is too large")))
}

fn bool_field(obj: &Map<String, Value>, name: &str) -> Result<bool, FsReadError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(FsReadError::InvalidInput(format!(
            "`{name}` must be true or false, not {}",
            json_type(other)
        ))),
    }
}

/// One entry of a parsed request: the operation, or why it could not be parsed (with what
/// could be read of its mode and path, for the error entry).
#[derive(Debug)]
pub struct ParsedOperation {
    /// The mode as given (empty when missing).
    pub mode: String,
    /// The path as given (empty when missing).
    pub path: String,
    /// The operation, or the reason it is invalid.
    pub operation: Result<Operation, FsReadError>,
}

impl From<Operation> for ParsedOperation {
    fn from(op: Operation) -> Self {
        Self {
            mode: op.mode().to_owned(),
            path: op.path().to_owned(),
            operation: op.validate().map(|()| op),
        }
    }
}

/// A parsed `fs_read` request: operations in order, each valid or not.
#[derive(Debug, Default)]
pub struct FsReadInput {
    /// The operations, in request order.
    pub operations: Vec<ParsedOperation>,
}

impl FsReadInput {
    /// A request from operations built in code.
    pub fn new(operations: impl IntoIterator<Item = Operation>) -> Self {
        Self {
            operations: operations.into_iter().map(ParsedOperation::from).collect(),
        }
    }

    /// Parses `{"operations": [...]}`, a bare array of operations, or one operation object.
    /// Fails only when the request as a whole is malformed; a bad operation becomes an error
    /// entry in the output.
    pub fn from_json(value: &Value) -> Result<Self, FsReadError> {
        let ops: &[Value] = match value {
            Value::Array(items) => items,
            Value::Object(obj) if obj.contains_key("operations") => {
                if let Some(unknown) = obj.keys().find(|k| *k != "operations" && *k != "summary") {
                    return Err(FsReadError::InvalidInput(format!(
                        "unknown field `{unknown}` next to `operations`; known: operations, summary"
                    )));
                }
                match &obj["operations"] {
                    Value::Array(items) => items,
                    other => {
                        return Err(FsReadError::InvalidInput(format!(
                            "`operations` must be an array of operations, not {}",
                            json_type(other)
                        )));
                    }
                }
            }
            Value::Object(_) => std::slice::from_ref(value),
            other => {
                return Err(FsReadError::InvalidInput(format!(
                    "fs_read takes {{\"operations\": [...]}}, not {}",
                    json_type(other)
                )));
            }
        };
        if ops.is_empty() {
            return Err(FsReadError::InvalidInput(
                "`operations` is empty; give at least one operation".to_owned(),
            ));
        }
        if ops.len() > MAX_OPERATIONS {
            return Err(FsReadError::InvalidInput(format!(
                "{} operations in one request; the most is {MAX_OPERATIONS}",
                ops.len()
            )));
        }
        let operations = ops
            .iter()
            .map(|op| {
                let field = |name: &str| {
                    op.get(name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                ParsedOperation {
                    mode: field("mode"),
                    path: field("path"),
                    operation: Operation::from_json(op),
                }
            })
            .collect();
        Ok(Self { operations })
    }
}

/// The result of one successful operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum OpResult {
    /// Line mode.
    Line(LineResult),
    /// Directory mode.
    Directory(DirectoryResult),
    /// Search mode.
    Search(SearchResult),
}

impl OpResult {
    /// Bytes this result counts against the response cap.
    pub fn size(&self) -> usize {
        match self {
            Self::Line(r) => r.size(),
            Self::Directory(r) => r.size(),
            Self::Search(r) => r.size(),
        }
    }

    /// Cuts the result to `budget` bytes, recording where to continue. With
    /// `allow_partial`, at least some content is kept even if it exceeds the budget.
    pub fn truncate_to(&mut self, budget: usize, allow_partial: bool) {
        match self {
            Self::Line(r) => r.truncate_to(budget, allow_partial),
            Self::Directory(r) => r.truncate_to(budget, allow_partial),
            Self::Search(r) => r.truncate_to(budget, allow_partial),
        }
    }

    /// Whether the result was cut by the response cap.
    pub fn truncated(&self) -> bool {
        match self {
            Self::Line(r) => r.truncated,
            Self::Directory(r) => r.truncated,
            Self::Search(r) => r.truncated,
        }
    }
}

/// An operation's error, as reported in the output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpError {
    /// `"not_found"`, `"permission_denied"`, `"invalid_input"` or `"io"`.
    pub kind: &'static str,
    /// What was wrong and what to do.
    pub message: String,
}

impl From<&FsReadError> for OpError {
    fn from(err: &FsReadError) -> Self {
        Self {
            kind: err.kind().as_str(),
            message: err.to_string(),
        }
    }
}

/// One entry of the output, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpOutcome {
    /// The operation's mode as requested.
    pub mode: String,
    /// The operation's path as requested.
    pub path: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// The result, when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<OpResult>,
    /// The error, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<OpError>,
}

/// The output of an `fs_read` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsReadOutput {
    /// One entry per operation, in request order.
    pub results: Vec<OpOutcome>,
    /// How many operations failed.
    pub failed: usize,
    /// Whether the response cap cut any result short.
    pub truncated: bool,
    /// The cap that applied.
    pub max_response_bytes: usize,
}

/// Runs every operation of `input` in `workspace` and assembles the capped output.
pub fn fs_read(workspace: &Sandbox, input: &FsReadInput, options: &ReadOptions) -> FsReadOutput {
    let run = |parsed: &ParsedOperation| -> Result<OpResult, FsReadError> {
        match &parsed.operation {
            Ok(op) => run_operation(workspace, op, options),
            Err(err) => Err(FsReadError::InvalidInput(err.to_string())),
        }
    };
    let results: Vec<Result<OpResult, FsReadError>> =
        if options.parallel && input.operations.len() > 1 {
            use rayon::prelude::*;
            input.operations.par_iter().map(run).collect()
        } else {
            input.operations.iter().map(run).collect()
        };
    let items = input
        .operations
        .iter()
        .zip(results)
        .map(|(parsed, result)| {
            (
                parsed.mode.clone(),
                parsed.path.clone(),
                result.map_err(|e| OpError::from(&e)),
            )
        })
        .collect();
    assemble(items, options.max_response_bytes)
}

/// Resolves the operation's path in the workspace and runs it.
pub fn run_operation(
    workspace: &Sandbox,
    op: &Operation,
    options: &ReadOptions,
) -> Result<OpResult, FsReadError> {
    op.validate()?;
    let resolved = workspace.resolve(op.path())?;
    run_resolved(workspace, &resolved, op, options)
}

/// Runs the operation on a path already resolved (by [`Sandbox::resolve`] of
/// `op.path()`); lets a caller look at the file's metadata first (for caching). Content in
/// the result is redacted with the built-in rules (every front end of the file engine, the CLI,
/// MCP, the HTTP server and Python, answers through here), each replacement reported.
pub fn run_resolved(
    workspace: &Sandbox,
    resolved: &Resolved,
    op: &Operation,
    options: &ReadOptions,
) -> Result<OpResult, FsReadError> {
    let mut result = run_unredacted(workspace, resolved, op, options)?;
    if let OpResult::Line(line) = &mut result
        && redact_lines_in_context(resolved, line, options)
    {
        return Ok(result);
    }
    redact_result(&mut result);
    Ok(result)
}

/// Lines of the file around a Line window that its redaction looks at: a secret that starts
/// or ends this far outside the window (a PEM key block of up to a few hundred lines) is found
/// whole, and hidden in the window.
const REDACTION_MARGIN_LINES: u64 = 256;

/// Bytes of those lines read at most, each side.
const REDACTION_MARGIN_BYTES: usize = 64 << 10;

/// Redacts a Line result from the secrets found over the window and the lines around it
/// ([`REDACTION_MARGIN_LINES`] each side), so a window that cuts a secret (a key's body
/// without its `BEGIN` line) shows none of it. `false` when the window's place in the file is
/// not known (counted from the end of a large file): the window alone is redacted then.
fn redact_lines_in_context(
    resolved: &Resolved,
    line: &mut LineResult,
    options: &ReadOptions,
) -> bool {
    let (Some(first), Some(last)) = (line.start_line, line.end_line) else {
        return false;
    };
    if line.lines_returned == 0 {
        return true;
    }
    let around = |start: u64, end: u64| -> String {
        if start > end {
            return String::new();
        }
        line::read_lines(
            &resolved.file,
            resolved.meta.len(),
            &resolved.rel,
            line::LineRange {
                start: i64::try_from(start).unwrap_or(i64::MAX),
                end: i64::try_from(end).unwrap_or(i64::MAX),
            },
            REDACTION_MARGIN_BYTES,
            options.large_file_threshold,
        )
        .map(|r| r.content)
        .unwrap_or_default()
    };
    let before = around(
        first.saturating_sub(REDACTION_MARGIN_LINES).max(1),
        first - 1,
    );
    let after = around(last + 1, last.saturating_add(REDACTION_MARGIN_LINES));
    let mut whole = String::with_capacity(before.len() + line.content.len() + after.len() + 2);
    if !before.is_empty() {
        whole.push_str(&before);
        whole.push('\n');
    }
    let start = whole.len();
    whole.push_str(&line.content);
    let end = whole.len();
    if !after.is_empty() {
        whole.push('\n');
        whole.push_str(&after);
    }
    if let Some((redacted, found)) = ctx_core::fragments::redact_window_of(&whole, start..end) {
        line.content = redacted;
        line.redactions = found;
    }
    true
}

/// Replaces secrets in a result's content: the built-in rules, then the body lines of key
/// blocks the window cut (`ctx_core::fragments`).
fn redact_result(result: &mut OpResult) {
    let redact = |text: &mut String, findings: &mut Vec<ctx_core::redact::RedactionFinding>| {
        if let Some((redacted, found)) = ctx_core::fragments::redact_window(text) {
            *text = redacted;
            *findings = found;
        }
    };
    match result {
        OpResult::Line(line) => redact(&mut line.content, &mut line.redactions),
        OpResult::Search(search) => {
            for m in &mut search.matches {
                redact(&mut m.context, &mut m.redactions);
            }
        }
        OpResult::Directory(_) => {}
    }
}

fn run_unredacted(
    workspace: &Sandbox,
    resolved: &Resolved,
    op: &Operation,
    options: &ReadOptions,
) -> Result<OpResult, FsReadError> {
    let cap = options.max_response_bytes;
    match op {
        Operation::Line {
            start_line,
            end_line,
            ..
        } => {
            if resolved.kind == EntryKind::Dir {
                return Err(FsReadError::IsADirectory {
                    path: resolved.rel.clone(),
                });
            }
            line::read_lines(
                &resolved.file,
                resolved.meta.len(),
                &resolved.rel,
                line::LineRange {
                    start: *start_line,
                    end: *end_line,
                },
                cap,
                options.large_file_threshold,
            )
            .map(OpResult::Line)
        }
        Operation::Directory { depth, offset, .. } => {
            if resolved.kind != EntryKind::Dir {
                return Err(FsReadError::NotADirectory {
                    path: resolved.rel.clone(),
                });
            }
            let mut result = directory::list(
                workspace,
                &resolved.file,
                &resolved.rel,
                *depth,
                *offset,
                &options.walk(),
            )?;
            result.truncate_to(cap, true);
            Ok(OpResult::Directory(result))
        }
        Operation::Search {
            pattern,
            context_lines,
            regex,
            case_sensitive,
            offset,
            ..
        } => {
            let spec = search::SearchSpec {
                pattern,
                regex: *regex,
                case_sensitive: *case_sensitive,
                context_lines: *context_lines,
                offset: *offset,
            };
            let mut result = search::search(
                workspace,
                &resolved.file,
                resolved.kind == EntryKind::Dir,
                &resolved.rel,
                &spec,
                cap,
                &options.walk(),
            )?;
            result.truncate_to(cap, true);
            Ok(OpResult::Search(result))
        }
    }
}

/// Assembles results (mode, path, outcome) in order under the response cap `max_bytes`:
/// the result that reaches the cap is cut and later ones are emptied, each saying where to
/// continue.
pub fn assemble(
    items: Vec<(String, String, Result<OpResult, OpError>)>,
    max_bytes: usize,
) -> FsReadOutput {
    let mut remaining = max_bytes;
    let mut failed = 0;
    let mut truncated = false;
    let mut results = Vec::with_capacity(items.len());
    for (mode, path, outcome) in items {
        match outcome {
            Ok(mut result) => {
                let nothing_yet = remaining == max_bytes;
                if result.size() > remaining {
                    result.truncate_to(remaining, nothing_yet);
                }
                remaining = remaining.saturating_sub(result.size());
                truncated |= result.truncated();
                results.push(OpOutcome {
                    mode,
                    path,
                    ok: true,
                    result: Some(result),
                    error: None,
                });
            }
            Err(error) => {
                failed += 1;
                results.push(OpOutcome {
                    mode,
                    path,
                    ok: false,
                    result: None,
                    error: Some(error),
                });
            }
        }
    }
    FsReadOutput {
        results,
        failed,
        truncated,
        max_response_bytes: max_bytes,
    }
}

impl FsReadOutput {
    /// The Amazon-Q-style text form: Line content as is, Directory entries as `ls -l`-like
    /// lines, Search matches as `path:line` plus the context block; with several operations,
    /// each under a `=== [n] Mode path ===` header; truncation and errors on their own lines.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let several = self.results.len() > 1;
        for (i, outcome) in self.results.iter().enumerate() {
            if several {
                if i > 0 {
                    out.push('\n');
                }
                let _ = writeln!(out, "=== [{}] {} {} ===", i + 1, outcome.mode, outcome.path);
            }
            match (&outcome.result, &outcome.error) {
                (Some(result), _) => text_of(result, self.max_response_bytes, &mut out),
                (None, Some(error)) => {
                    out.push_str("error: ");
                    out.push_str(&error.message);
                    out.push('\n');
                }
                (None, None) => {}
            }
        }
        out
    }
}

fn text_of(result: &OpResult, cap: usize, out: &mut String) {
    use std::fmt::Write as _;
    match result {
        OpResult::Line(r) => {
            out.push_str(&r.content);
            if !r.content.is_empty() || r.lines_returned > 0 {
                out.push('\n');
            }
            if let Some(next) = r.next_start_line {
                let _ = writeln!(
                    out,
                    "[truncated at the {cap}-byte response cap; continue with start_line={next}]"
                );
            }
        }
        OpResult::Directory(r) => {
            for entry in &r.entries {
                let (flag, slash) = if entry.kind == "dir" {
                    ('d', "/")
                } else {
                    ('-', "")
                };
                let _ = writeln!(
                    out,
                    "{flag} {:>10} {} {}{slash}",
                    entry.size,
                    crate::time::utc_minutes(entry.mtime),
                    entry.path
                );
            }
            if let Some(next) = r.next_offset {
                let _ = writeln!(
                    out,
                    "[truncated at the {cap}-byte response cap: {} of {} entries shown; continue with offset={next}]",
                    r.entries.len(),
                    r.total_entries
                );
            }
        }
        OpResult::Search(r) => {
            if r.total_matches == 0 {
                let _ = writeln!(out, "no matches for `{}` in {}", r.pattern, r.path);
            }
            for m in &r.matches {
                let _ = writeln!(out, "{}:{}", m.path, m.line_number);
                out.push_str(&m.context);
            }
            if let Some(next) = r.next_offset {
                let _ = writeln!(
                    out,
                    "[truncated at the {cap}-byte response cap: {} of {} matches shown; continue with offset={next}]",
                    r.matches.len(),
                    r.total_matches
                );
            }
        }
    }
}

/// The JSON schema of the `fs_read` input, with a description of every field.
pub fn input_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "operations": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_OPERATIONS,
                "description": "Operations to run; each runs independently and a failing one does not stop the others.",
                "items": {
                    "type": "object",
                    "properties": {
                        "mode": {
                            "type": "string",
                            "enum": ["Line", "Directory", "Search"],
                            "description": "Line: read lines of a file. Directory: list a directory. Search: find a pattern in a file or under a directory."
                        },
                        "path": {
                            "type": "string",
                            "description": "File or directory, relative to the workspace root (absolute paths must lie inside it)."
                        },
                        "start_line": {
                            "type": "integer",
                            "default": 1,
                            "description": "Line mode: first line, 1-based; negative counts from the end (-1 is the last line)."
                        },
                        "end_line": {
                            "type": "integer",
                            "default": -1,
                            "description": "Line mode: last line, inclusive; negative counts from the end."
                        },
                        "depth": {
                            "type": "integer",
                            "minimum": 0,
                            "default": 0,
                            "description": "Directory mode: levels below the directory's children to list (0 lists the children only)."
                        },
                        "pattern": {
                            "type": "string",
                            "description": "Search mode: text to find (case-insensitive literal unless regex / case_sensitive say otherwise)."
                        },
                        "context_lines": {
                            "type": "integer",
                            "minimum": 0,
                            "default": 2,
                            "description": "Search mode: lines shown before and after each match."
                        },
                        "regex": {
                            "type": "boolean",
                            "default": false,
                            "description": "Search mode: treat pattern as a regular expression (Rust regex syntax)."
                        },
                        "case_sensitive": {
                            "type": "boolean",
                            "default": false,
                            "description": "Search mode: match case exactly."
                        },
                        "offset": {
                            "type": "integer",
                            "minimum": 0,
                            "default": 0,
                            "description": "Directory and Search modes: skip this many entries or matches (to continue a truncated result)."
                        }
                    },
                    "required": ["mode", "path"],
                    "additionalProperties": false
                }
            },
            "summary": {
                "type": "string",
                "description": "Optional note on why these reads are made (ignored)."
            }
        },
        "required": ["operations"]
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bad_input_is_reported_per_operation() {
        let input = FsReadInput::from_json(&json!({"operations": [
            {"mode": "Bogus", "path": "a"},
            {"mode": "Search", "path": "a"},
            {"mode": "Directory", "path": "a", "depth": -1},
            {"mode": "Line", "path": "a", "start_line": 0},
            {"mode": "Line", "path": "a", "start": 3},
            {"mode": "Line", "path": "a", "start_line": "3"},
            {"mode": "Line", "path": "a"},
        ]}))
        .expect("parses");
        let messages: Vec<String> = input
            .operations
            .iter()
            .map(|op| match &op.operation {
                Ok(_) => "ok".to_owned(),
                Err(err) => err.to_string(),
            })
            .collect();
        assert!(
            messages[0].contains("unknown mode `Bogus`"),
            "{}",
            messages[0]
        );
        assert!(messages[1].contains("needs a `pattern`"), "{}", messages[1]);
        assert!(
            messages[2].contains("`depth` must be 0 or more, not -1"),
            "{}",
            messages[2]
        );
        assert!(messages[3].contains("0 is not a line"), "{}", messages[3]);
        assert!(
            messages[4].contains("unknown field `start`"),
            "{}",
            messages[4]
        );
        assert!(
            messages[5].contains("must be a whole number"),
            "{}",
            messages[5]
        );
        assert_eq!(messages[6], "ok");
    }

    #[test]
    fn malformed_requests_fail_as_a_whole() {
        for bad in [
            json!(3),
            json!({"operations": []}),
            json!({"operations": {}}),
            json!({"operations": [], "x": 1}),
        ] {
            assert!(FsReadInput::from_json(&bad).is_err(), "{bad}");
        }
        let single =
            FsReadInput::from_json(&json!({"mode": "Line", "path": "x"})).expect("single op");
        assert_eq!(single.operations.len(), 1);
    }
}
