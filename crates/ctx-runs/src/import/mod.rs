//! Importing agent logs as runs: ctx's own export, Claude Code, OpenHands, SWE-agent.
//!
//! Each adapter parses a file into a [`ParsedRun`] (pure, no store), reporting every record
//! it cannot use as an [`ImportWarning`] with its line (JSONL) or item index (JSON arrays)
//! and skipping it; a file with no usable record at all is an error. [`import_bytes`] then
//! stores the parsed run through a [`RunBuilder`]. ctx's own export holds the objects
//! themselves and is imported object for object, so its run id is preserved.

mod claude_code;
mod openhands;
mod swe_agent;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use ctx_store::Store;
use serde::Serialize;
use serde_json::Value;

use crate::RunError;
use crate::model::{Environment, ModelInfo, RunId};
use crate::store::{RunBuilder, StepDraft};

/// The names `--from` accepts, `auto` first.
pub const FORMAT_NAMES: &[&str] = &["auto", "ctx", "claude-code", "openhands", "swe-agent"];

/// A log format runs can be imported from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunFormat {
    /// ctx's own JSON export (`ctx run export --format ctx`).
    Ctx,
    /// Claude Code session transcripts (`~/.claude/projects/*/<session>.jsonl`).
    ClaudeCode,
    /// OpenHands event arrays.
    #[serde(rename = "openhands")]
    OpenHands,
    /// SWE-agent `.traj` files.
    SweAgent,
}

impl RunFormat {
    /// The format's `--from` name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ctx => "ctx",
            Self::ClaudeCode => "claude-code",
            Self::OpenHands => "openhands",
            Self::SweAgent => "swe-agent",
        }
    }
}

impl fmt::Display for RunFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--from` value: a format, or `auto` (`None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatChoice(pub Option<RunFormat>);

impl FromStr for FormatChoice {
    type Err = RunError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(match s {
            "auto" => None,
            "ctx" => Some(RunFormat::Ctx),
            "claude-code" => Some(RunFormat::ClaudeCode),
            "openhands" => Some(RunFormat::OpenHands),
            "swe-agent" => Some(RunFormat::SweAgent),
            other => {
                return Err(RunError::UnknownFormat {
                    name: other.to_owned(),
                });
            }
        }))
    }
}

/// A record an adapter skipped, and where it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportWarning {
    /// 1-based line, for line-oriented files (JSONL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// 0-based item index, for JSON arrays (`events[3]`, `trajectory[2]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    pub message: String,
}

impl ImportWarning {
    pub(crate) fn at_line(line: usize, message: impl Into<String>) -> Self {
        Self {
            line: Some(line as u64),
            item: None,
            message: message.into(),
        }
    }

    pub(crate) fn at_item(item: String, message: impl Into<String>) -> Self {
        Self {
            line: None,
            item: Some(item),
            message: message.into(),
        }
    }
}

impl fmt::Display for ImportWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.line, &self.item) {
            (Some(line), _) => write!(f, "line {line}: {}", self.message),
            (None, Some(item)) => write!(f, "{item}: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

/// A log parsed into run form, contents inline; nothing stored yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedRun {
    pub conversation_id: Option<String>,
    pub created: Option<String>,
    pub model: Option<ModelInfo>,
    pub system_prompt: Option<String>,
    /// (role, text).
    pub prompts: Vec<(String, String)>,
    /// (name, bytes).
    pub inputs: Vec<(String, Vec<u8>)>,
    pub steps: Vec<StepDraft>,
    /// (name, bytes).
    pub outputs: Vec<(String, Vec<u8>)>,
    pub environment: Environment,
    /// Records skipped, in file order.
    pub warnings: Vec<ImportWarning>,
}

/// What an import stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportOutcome {
    pub run: RunId,
    pub format: RunFormat,
    pub steps: u64,
    pub warnings: Vec<ImportWarning>,
}

/// Imports the file at `path` (see [`import_bytes`]).
pub fn import_file(
    store: &Store,
    path: &Path,
    from: Option<RunFormat>,
) -> Result<ImportOutcome, RunError> {
    let bytes = std::fs::read(path).map_err(|source| RunError::Read {
        path: path.to_owned(),
        source,
    })?;
    import_bytes(store, path, &bytes, from)
}

/// Imports `bytes` (read from `path`, used in messages) as `from`, or the detected format.
pub fn import_bytes(
    store: &Store,
    path: &Path,
    bytes: &[u8],
    from: Option<RunFormat>,
) -> Result<ImportOutcome, RunError> {
    let format = match from {
        Some(format) => format,
        None => detect(bytes).ok_or_else(|| {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                RunError::NoRecords {
                    path: path.to_owned(),
                    format: "run",
                    warnings: Vec::new(),
                }
            } else {
                RunError::NotDetected {
                    path: path.to_owned(),
                }
            }
        })?,
    };
    if format == RunFormat::Ctx {
        let (run, steps) = crate::export::import_ctx(store, path, bytes)?;
        return Ok(ImportOutcome {
            run,
            format,
            steps: steps as u64,
            warnings: Vec::new(),
        });
    }
    let parsed = parse(format, path, bytes)?;
    let warnings = parsed.warnings.clone();
    let steps = parsed.steps.len() as u64;
    let run = store_parsed(store, format.name(), parsed)?;
    Ok(ImportOutcome {
        run,
        format,
        steps,
        warnings,
    })
}

/// Parses `bytes` as `format` (not [`RunFormat::Ctx`], which is imported object by object).
pub fn parse(format: RunFormat, path: &Path, bytes: &[u8]) -> Result<ParsedRun, RunError> {
    let text = std::str::from_utf8(bytes).map_err(|e| RunError::BadFile {
        path: path.to_owned(),
        format: format.name(),
        detail: format!("it is not UTF-8 ({e})"),
    })?;
    match format {
        RunFormat::ClaudeCode => claude_code::parse(path, text),
        RunFormat::OpenHands => openhands::parse(path, text),
        RunFormat::SweAgent => swe_agent::parse(path, text),
        RunFormat::Ctx => Err(RunError::BadFile {
            path: path.to_owned(),
            format: "ctx",
            detail: "ctx exports are imported with import_bytes".to_owned(),
        }),
    }
}

/// Stores a parsed run; returns its id.
pub fn store_parsed(store: &Store, source: &str, parsed: ParsedRun) -> Result<RunId, RunError> {
    let mut builder = RunBuilder::buffered(source);
    builder
        .set_created(parsed.created)
        .set_conversation_id(parsed.conversation_id)
        .set_model(parsed.model)
        .set_environment(parsed.environment);
    if let Some(system) = &parsed.system_prompt {
        builder.set_system_prompt(store, system)?;
    }
    for (role, text) in &parsed.prompts {
        builder.add_prompt(store, role, text)?;
    }
    for (name, bytes) in &parsed.inputs {
        builder.add_input(store, name, bytes)?;
    }
    for step in parsed.steps {
        builder.push_step(store, step)?;
    }
    for (name, bytes) in &parsed.outputs {
        builder.add_output(store, name, bytes)?;
    }
    builder.finish(store)
}

/// Guesses the format of `bytes` from its shape; `None` when nothing matches.
pub fn detect(bytes: &[u8]) -> Option<RunFormat> {
    let text = std::str::from_utf8(bytes).ok()?;
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        match &value {
            Value::Object(map) => {
                if map
                    .get("format")
                    .and_then(Value::as_str)
                    .is_some_and(|f| f.starts_with(crate::export::CTX_EXPORT_PREFIX))
                {
                    return Some(RunFormat::Ctx);
                }
                if map.get("trajectory").is_some_and(Value::is_array) {
                    return Some(RunFormat::SweAgent);
                }
                if looks_like_claude_line(map) {
                    return Some(RunFormat::ClaudeCode);
                }
                if map
                    .get("events")
                    .and_then(Value::as_array)
                    .is_some_and(|items| items.iter().any(looks_like_openhands_event))
                {
                    return Some(RunFormat::OpenHands);
                }
                return None;
            }
            Value::Array(items) => {
                return items
                    .iter()
                    .any(looks_like_openhands_event)
                    .then_some(RunFormat::OpenHands);
            }
            _ => return None,
        }
    }
    // Line-oriented: Claude Code when any of the first lines that parse looks like one of its
    // records (files may open with `file-history-snapshot` lines, which carry no ids).
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .take(DETECT_LINES)
        .any(|value| value.as_object().is_some_and(looks_like_claude_line))
        .then_some(RunFormat::ClaudeCode)
}

/// How many parsed lines of a JSONL file [`detect`] looks at.
const DETECT_LINES: usize = 20;

fn looks_like_openhands_event(item: &Value) -> bool {
    item.as_object()
        .is_some_and(|o| o.contains_key("action") || o.contains_key("observation"))
}

fn looks_like_claude_line(map: &serde_json::Map<String, Value>) -> bool {
    map.contains_key("sessionId")
        || (map.contains_key("type") && (map.contains_key("uuid") || map.contains_key("leafUuid")))
}

/// Tools whose output depends only on their arguments and the workspace (replay compares
/// them), by the names the agents use.
pub(crate) fn is_deterministic_tool(name: &str) -> bool {
    matches!(
        name,
        // Claude Code
        "Read" | "Glob" | "Grep" | "LS" | "NotebookRead"
        // SWE-agent
        | "open" | "goto" | "find_file" | "search_file" | "search_dir" | "ls" | "cat"
        // ctx's own MCP tools
        | "ctx_fs_read" | "ctx_search" | "ctx_summarize" | "ctx_related" | "ctx_map"
    )
}

/// Text of a JSON value that may be a string or an array of `{type: text, text}` blocks.
pub(crate) fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => o.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        }
        _ => None,
    }
}

/// A short description of a `serde_json` parse error for a warning.
pub(crate) fn json_problem(err: &serde_json::Error) -> String {
    if err.is_eof() {
        format!("truncated JSON ({err})")
    } else {
        format!("not valid JSON ({err})")
    }
}
