//! Importing agent logs as runs: ctx's own export, Claude Code, OpenHands, SWE-agent and
//! mini-swe-agent.
//!
//! Each adapter parses a log into [`ParsedRun`]s (pure, no store; a file of evaluation rows
//! gives one per row). Records of a type the adapter knows but does not import (Claude Code's
//! `progress` lines, OpenHands' state updates, …) are skipped silently, by name; a record of
//! a shape the adapter does not know is reported once per kind, with a count, as an
//! [`ImportWarning`]. Every adapter counts what the file holds (tool calls, their outputs,
//! messages) and what it kept, in an [`ImportReport`]; anything the format defines that an
//! import drops is a [`Loss`], and an import with a loss stores nothing unless
//! [`ImportOptions::lossy`] accepts it. A line of a JSONL log that is not a JSON object fails
//! the import unless [`ImportOptions::skip_bad_lines`], and a run without a single step is
//! never stored.
//!
//! [`import_path`] and [`import_bytes`] then store the parsed runs through a [`RunBuilder`]:
//! nested runs (sub-agents) first, then the branches a session forked into (each a run whose
//! parent is the main run), then the main run, which `latest` names. ctx's own export holds
//! the objects themselves and is imported object for object, so its run id is preserved.

mod claude_code;
mod jsonl;
mod mini_swe_agent;
mod openhands;
mod openhands_v1;
mod swe_agent;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ctx_store::Store;
use serde::Serialize;
use serde_json::Value;

use crate::RunError;
use crate::model::{ChildRun, Environment, ModelInfo, RunId, TokenUsage};
use crate::store::{RunBuilder, StepDraft};

/// The names `--from` accepts, `auto` first.
pub const FORMAT_NAMES: &[&str] = &[
    "auto",
    "ctx",
    "claude-code",
    "openhands",
    "swe-agent",
    "mini-swe-agent",
];

/// A log format runs can be imported from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunFormat {
    /// ctx's own JSON export (`ctx run export --format ctx`).
    Ctx,
    /// Claude Code session transcripts (`~/.claude/projects/*/<session>.jsonl`, with the
    /// sub-agents in `<session>/subagents/`).
    ClaudeCode,
    /// OpenHands: V0 event arrays, V1 SDK event streams and conversation directories, and the
    /// resolver and evaluation `output.jsonl` rows.
    #[serde(rename = "openhands")]
    OpenHands,
    /// SWE-agent `.traj` files (classic, function calling, history only).
    SweAgent,
    /// mini-swe-agent `.traj.json` files.
    MiniSweAgent,
}

impl RunFormat {
    /// The format's `--from` name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ctx => "ctx",
            Self::ClaudeCode => "claude-code",
            Self::OpenHands => "openhands",
            Self::SweAgent => "swe-agent",
            Self::MiniSweAgent => "mini-swe-agent",
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
            "mini-swe-agent" => Some(RunFormat::MiniSweAgent),
            other => {
                return Err(RunError::UnknownFormat {
                    name: other.to_owned(),
                });
            }
        }))
    }
}

/// How to import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The format; detected from the content when `None`.
    pub from: Option<RunFormat>,
    /// Store what was kept even when the import dropped something the format defines.
    pub lossy: bool,
    /// Skip lines of a JSONL log that are not JSON objects (each is reported) instead of
    /// refusing the file.
    pub skip_bad_lines: bool,
    /// Import only this row (1-based) of a file of evaluation rows (`output.jsonl`).
    pub row: Option<usize>,
}

impl ImportOptions {
    /// Options for `from`, everything else by default.
    pub fn from_format(from: Option<RunFormat>) -> Self {
        Self {
            from,
            ..Self::default()
        }
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

/// Counts of what a log holds, or of what an import kept of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Tool calls.
    pub calls: u64,
    /// Tool outputs (results, observations).
    pub outputs: u64,
    /// Messages: the user's prompts and the model's text.
    pub messages: u64,
}

impl Tally {
    fn add(&mut self, other: Self) {
        self.calls += other.calls;
        self.outputs += other.outputs;
        self.messages += other.messages;
    }

    fn get(&self, what: LossKind) -> u64 {
        match what {
            LossKind::Calls => self.calls,
            LossKind::Outputs => self.outputs,
            LossKind::Messages => self.messages,
        }
    }

    pub(crate) fn bump(&mut self, what: LossKind) {
        match what {
            LossKind::Calls => self.calls += 1,
            LossKind::Outputs => self.outputs += 1,
            LossKind::Messages => self.messages += 1,
        }
    }
}

/// What a loss is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    Calls,
    Outputs,
    Messages,
}

impl LossKind {
    fn noun(self) -> &'static str {
        match self {
            Self::Calls => "tool calls",
            Self::Outputs => "tool outputs",
            Self::Messages => "messages",
        }
    }
}

/// Something the format defines that an import dropped, how much, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loss {
    pub what: LossKind,
    pub count: u64,
    pub reason: String,
}

/// What a log held against what its import kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// What the log holds.
    pub held: Tally,
    /// What the import kept (in the run, its nested runs and its branches).
    pub kept: Tally,
    /// What was dropped, by reason.
    pub losses: Vec<Loss>,
    /// Lines that were not JSON objects, skipped under `--skip-bad-lines`.
    pub skipped_lines: u64,
}

impl ImportReport {
    /// Records that `count` items of `what` were dropped for `reason`.
    pub(crate) fn lose(&mut self, what: LossKind, count: u64, reason: &str) {
        if count == 0 {
            return;
        }
        if let Some(loss) = self
            .losses
            .iter_mut()
            .find(|l| l.what == what && l.reason == reason)
        {
            loss.count += count;
        } else {
            self.losses.push(Loss {
                what,
                count,
                reason: reason.to_owned(),
            });
        }
    }

    /// Adds another report (of a nested run, or of another row) to this one.
    pub(crate) fn merge(&mut self, other: &Self) {
        self.held.add(other.held);
        self.kept.add(other.kept);
        for loss in &other.losses {
            self.lose(loss.what, loss.count, &loss.reason);
        }
        self.skipped_lines += other.skipped_lines;
    }

    /// Accounts for every difference between held and kept: a difference no adapter explained
    /// is recorded as a loss of its own, so nothing goes missing unreported.
    fn settle(&mut self) {
        for what in [LossKind::Calls, LossKind::Outputs, LossKind::Messages] {
            let explained: u64 = self
                .losses
                .iter()
                .filter(|l| l.what == what)
                .map(|l| l.count)
                .sum();
            let missing = self
                .held
                .get(what)
                .saturating_sub(self.kept.get(what))
                .saturating_sub(explained);
            self.lose(
                what,
                missing,
                "not imported for a reason the adapter did not name; please report it",
            );
        }
        self.losses.sort_by(|a, b| {
            (a.what, std::cmp::Reverse(a.count), &a.reason).cmp(&(
                b.what,
                std::cmp::Reverse(b.count),
                &b.reason,
            ))
        });
    }

    /// `kept 23 of 23 tool calls, 22 of 23 tool outputs, 9 of 9 messages`.
    pub fn kept_line(&self) -> String {
        format!(
            "kept {} of {} tool calls, {} of {} tool outputs, {} of {} messages",
            self.kept.calls,
            self.held.calls,
            self.kept.outputs,
            self.held.outputs,
            self.kept.messages,
            self.held.messages
        )
    }

    /// One line naming every loss, or `None` when nothing was dropped.
    pub fn loss_line(&self) -> Option<String> {
        if self.losses.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .losses
            .iter()
            .map(|l| {
                format!(
                    "{} of {} {} dropped ({})",
                    l.count,
                    self.held.get(l.what),
                    l.what.noun(),
                    l.reason
                )
            })
            .collect();
        Some(parts.join("; "))
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
    /// Runs nested in this one (sub-agents, compaction agents), stored before it.
    pub children: Vec<ParsedChild>,
    /// Branches the session forked into (a conversation the user went back from): each a
    /// whole run, its first steps the same as this run's, stored with this run as parent.
    pub forks: Vec<ParsedRun>,
    /// The row of the file this run came from (1-based), for files of evaluation rows.
    pub row: Option<u64>,
    /// Records skipped, in file order.
    pub warnings: Vec<ImportWarning>,
    /// What the log held against what was kept (of this run, its children and forks).
    pub report: ImportReport,
}

/// A nested run and where it hangs in its parent.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedChild {
    /// [`ChildRun::SUBAGENT`] or [`ChildRun::COMPACTION`].
    pub kind: &'static str,
    /// The parent's step that started it.
    pub step: Option<usize>,
    pub call_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    pub run: ParsedRun,
}

/// What an import stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportOutcome {
    /// The main run (of the first row, for a file of rows).
    pub run: RunId,
    pub format: RunFormat,
    /// Its steps.
    pub steps: u64,
    pub warnings: Vec<ImportWarning>,
    /// What the log held against what was kept.
    pub report: ImportReport,
    /// Every run stored, one per row (with its nested runs and forks).
    pub runs: Vec<StoredRun>,
}

/// A run an import stored, with the runs nested in it and the branches forked from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredRun {
    pub run: RunId,
    pub steps: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<StoredChild>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forks: Vec<StoredRun>,
}

/// A nested run an import stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredChild {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(flatten)]
    pub stored: StoredRun,
}

impl StoredRun {
    /// This run and every run under it.
    pub fn count(&self) -> usize {
        1 + self
            .children
            .iter()
            .map(|c| c.stored.count())
            .sum::<usize>()
            + self.forks.iter().map(Self::count).sum::<usize>()
    }
}

/// Imports the file at `path` as `from`, or the detected format (see [`import_path`]).
pub fn import_file(
    store: &Store,
    path: &Path,
    from: Option<RunFormat>,
) -> Result<ImportOutcome, RunError> {
    import_path(store, path, &ImportOptions::from_format(from))
}

/// Imports the log at `path`: a file, a Claude Code session directory (`<session>/`, next to
/// `<session>.jsonl`, holding `subagents/`) or an OpenHands conversation directory (holding
/// `events/`). A Claude Code session file brings the sub-agent transcripts next to it along.
pub fn import_path(
    store: &Store,
    path: &Path,
    options: &ImportOptions,
) -> Result<ImportOutcome, RunError> {
    let source = LogSource::read(path, options.from)?;
    import_source(store, &source, options)
}

/// Imports `bytes` (read from `path`, used in messages) as `from`, or the detected format.
pub fn import_bytes(
    store: &Store,
    path: &Path,
    bytes: &[u8],
    from: Option<RunFormat>,
) -> Result<ImportOutcome, RunError> {
    import_bytes_with(store, path, bytes, &ImportOptions::from_format(from))
}

/// [`import_bytes`] with every option.
pub fn import_bytes_with(
    store: &Store,
    path: &Path,
    bytes: &[u8],
    options: &ImportOptions,
) -> Result<ImportOutcome, RunError> {
    let source = LogSource {
        path: path.to_owned(),
        bytes: bytes.to_vec(),
        sidecars: Vec::new(),
        kind: SourceKind::File,
    };
    import_source(store, &source, options)
}

/// A log as read from disk: its main bytes and the files that belong with it.
#[derive(Debug, Clone)]
pub(crate) struct LogSource {
    /// The path named in messages.
    pub path: PathBuf,
    /// The main file's bytes (empty for an OpenHands conversation directory).
    pub bytes: Vec<u8>,
    /// Files that come with it: Claude Code sub-agent transcripts, OpenHands event files;
    /// sorted by path.
    pub sidecars: Vec<(PathBuf, Vec<u8>)>,
    pub kind: SourceKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceKind {
    File,
    /// An OpenHands V1 conversation directory: the sidecars are its event files, `bytes` its
    /// `base_state.json` (or empty).
    OpenHandsConversation,
}

impl LogSource {
    fn read(path: &Path, from: Option<RunFormat>) -> Result<Self, RunError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|source| RunError::Read {
                path: p.to_owned(),
                source,
            })
        };
        if path.is_dir() {
            if path.join("events").is_dir() || path.join("base_state.json").is_file() {
                let state = path.join("base_state.json");
                let bytes = if state.is_file() {
                    read(&state)?
                } else {
                    Vec::new()
                };
                let mut sidecars = Vec::new();
                for file in list_files(&path.join("events"), "json")? {
                    let bytes = read(&file)?;
                    sidecars.push((file, bytes));
                }
                return Ok(Self {
                    path: path.to_owned(),
                    bytes,
                    sidecars,
                    kind: SourceKind::OpenHandsConversation,
                });
            }
            let session = path.with_extension("jsonl");
            if path.join("subagents").is_dir() && session.is_file() {
                return Self::read(&session, from);
            }
            return Err(RunError::NotALog {
                path: path.to_owned(),
            });
        }
        let bytes = read(path)?;
        let mut sidecars = Vec::new();
        if matches!(from, None | Some(RunFormat::ClaudeCode))
            && path.extension().is_some_and(|e| e == "jsonl")
        {
            for file in claude_code::sidecar_files(path, &bytes)? {
                let bytes = read(&file)?;
                sidecars.push((file, bytes));
            }
        }
        Ok(Self {
            path: path.to_owned(),
            bytes,
            sidecars,
            kind: SourceKind::File,
        })
    }
}

/// The files in `dir` ending in `.ext`, sorted by path; none when `dir` is not there.
pub(crate) fn list_files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, RunError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RunError::Read {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| RunError::Read {
            path: dir.to_owned(),
            source,
        })?;
        let path = entry.path();
        if path.is_file() && path.extension().is_some_and(|e| e == ext) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn import_source(
    store: &Store,
    source: &LogSource,
    options: &ImportOptions,
) -> Result<ImportOutcome, RunError> {
    let path = source.path.as_path();
    let format = match (options.from, source.kind) {
        (_, SourceKind::OpenHandsConversation) => RunFormat::OpenHands,
        (Some(format), SourceKind::File) => format,
        (None, SourceKind::File) => detect(&source.bytes).ok_or_else(|| {
            if source.bytes.iter().all(u8::is_ascii_whitespace) {
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
        let (run, steps) = crate::export::import_ctx(store, path, &source.bytes)?;
        return Ok(ImportOutcome {
            run,
            format,
            steps: steps as u64,
            warnings: Vec::new(),
            report: ImportReport::default(),
            runs: vec![StoredRun {
                run,
                steps: steps as u64,
                row: None,
                children: Vec::new(),
                forks: Vec::new(),
            }],
        });
    }
    let runs = parse_source(format, source, options)?;
    let mut report = ImportReport::default();
    let mut warnings = Vec::new();
    for run in &runs {
        report.merge(&run.report);
        warnings.extend(run.warnings.iter().cloned());
    }
    if !options.lossy
        && let Some(line) = report.loss_line()
    {
        return Err(RunError::Lossy {
            path: path.to_owned(),
            losses: line,
        });
    }
    // The last run stored is `latest`: store the rows last to first, so that it is the first
    // row's run, the one the outcome names.
    let mut stored = Vec::with_capacity(runs.len());
    for run in runs.iter().rev() {
        stored.push(store_parsed_tree(store, format.name(), run)?);
    }
    stored.reverse();
    let first = stored.first().expect("parse_source gives at least one run");
    Ok(ImportOutcome {
        run: first.run,
        format,
        steps: first.steps,
        warnings,
        report,
        runs: stored,
    })
}

/// Parses `bytes` as `format` (not [`RunFormat::Ctx`], which is imported object by object)
/// with default options, and returns the first run.
pub fn parse(format: RunFormat, path: &Path, bytes: &[u8]) -> Result<ParsedRun, RunError> {
    parse_with(
        format,
        path,
        bytes,
        &ImportOptions::from_format(Some(format)),
    )
    .map(|mut runs| runs.remove(0))
}

/// Parses `bytes` as `format`: one run, or one per row of a file of evaluation rows.
pub fn parse_with(
    format: RunFormat,
    path: &Path,
    bytes: &[u8],
    options: &ImportOptions,
) -> Result<Vec<ParsedRun>, RunError> {
    let source = LogSource {
        path: path.to_owned(),
        bytes: bytes.to_vec(),
        sidecars: Vec::new(),
        kind: SourceKind::File,
    };
    parse_source(format, &source, options)
}

fn parse_source(
    format: RunFormat,
    source: &LogSource,
    options: &ImportOptions,
) -> Result<Vec<ParsedRun>, RunError> {
    let path = source.path.as_path();
    let mut runs = match format {
        RunFormat::ClaudeCode => vec![claude_code::parse(source, options)?],
        RunFormat::OpenHands => openhands::parse(source, options)?,
        RunFormat::SweAgent => vec![swe_agent::parse(path, utf8(format, path, &source.bytes)?)?],
        RunFormat::MiniSweAgent => vec![mini_swe_agent::parse(
            path,
            utf8(format, path, &source.bytes)?,
        )?],
        RunFormat::Ctx => {
            return Err(RunError::BadFile {
                path: path.to_owned(),
                format: "ctx",
                detail: "ctx exports are imported with import_bytes".to_owned(),
            });
        }
    };
    for run in &mut runs {
        if run.steps.is_empty() && run.prompts.is_empty() && run.report.held == Tally::default() {
            return Err(RunError::NoRecords {
                path: path.to_owned(),
                format: format.name(),
                warnings: std::mem::take(&mut run.warnings),
            });
        }
        if run.steps.is_empty() {
            return Err(RunError::NoSteps {
                path: path.to_owned(),
                format: format.name(),
                row: run.row,
            });
        }
        drop_empty_children(run);
        run.report.settle();
    }
    Ok(runs)
}

/// Nested runs without a step are not stored (their parent keeps the call that started them).
fn drop_empty_children(run: &mut ParsedRun) {
    run.children.retain(|c| !c.run.steps.is_empty());
    for child in &mut run.children {
        drop_empty_children(&mut child.run);
    }
    for fork in &mut run.forks {
        drop_empty_children(fork);
    }
}

fn utf8<'a>(format: RunFormat, path: &Path, bytes: &'a [u8]) -> Result<&'a str, RunError> {
    std::str::from_utf8(bytes).map_err(|e| RunError::BadFile {
        path: path.to_owned(),
        format: format.name(),
        detail: format!("it is not UTF-8 ({e})"),
    })
}

/// Stores a parsed run (not its children or forks); returns its id.
pub fn store_parsed(store: &Store, source: &str, parsed: &ParsedRun) -> Result<RunId, RunError> {
    let builder = build(store, source, parsed, None, Vec::new())?;
    builder.finish(store)
}

/// Stores a parsed run with its nested runs (first) and its forks (then), and the run itself
/// last, so that `latest` names it.
pub fn store_parsed_tree(
    store: &Store,
    source: &str,
    parsed: &ParsedRun,
) -> Result<StoredRun, RunError> {
    store_tree(store, source, parsed, None)
}

fn store_tree(
    store: &Store,
    source: &str,
    parsed: &ParsedRun,
    parent: Option<RunId>,
) -> Result<StoredRun, RunError> {
    let mut stored_children = Vec::with_capacity(parsed.children.len());
    let mut links = Vec::with_capacity(parsed.children.len());
    let ParsedRun {
        children, forks, ..
    } = parsed;
    for child in children {
        let stored = store_tree(store, source, &child.run, None)?;
        links.push(ChildRun {
            run: stored.run,
            kind: child.kind.to_owned(),
            step: child.step.map(|s| s as u64),
            call_id: child.call_id.clone(),
            agent_id: child.agent_id.clone(),
            agent_name: child.agent_name.clone(),
        });
        stored_children.push(StoredChild {
            kind: child.kind.to_owned(),
            step: child.step.map(|s| s as u64),
            stored,
        });
    }
    let builder = build(store, source, parsed, parent, links)?;
    let id = builder.manifest().id();
    let mut stored_forks = Vec::with_capacity(forks.len());
    for fork in forks {
        stored_forks.push(store_tree(store, source, fork, Some(id))?);
    }
    let steps = builder.step_count() as u64;
    let stored = builder.finish(store)?;
    debug_assert_eq!(stored, id);
    Ok(StoredRun {
        run: stored,
        steps,
        row: parsed.row,
        children: stored_children,
        forks: stored_forks,
    })
}

fn build(
    store: &Store,
    source: &str,
    parsed: &ParsedRun,
    parent: Option<RunId>,
    children: Vec<ChildRun>,
) -> Result<RunBuilder, RunError> {
    let mut builder = RunBuilder::buffered(source);
    builder
        .set_created(parsed.created.clone())
        .set_conversation_id(parsed.conversation_id.clone())
        .set_model(parsed.model.clone())
        .set_environment(parsed.environment.clone())
        .set_parent(parent);
    for child in children {
        builder.add_child(child);
    }
    if let Some(system) = &parsed.system_prompt {
        builder.set_system_prompt(store, system)?;
    }
    for (role, text) in &parsed.prompts {
        builder.add_prompt(store, role, text)?;
    }
    for (name, bytes) in &parsed.inputs {
        builder.add_input(store, name, bytes)?;
    }
    for step in &parsed.steps {
        builder.push_step(store, step.clone())?;
    }
    for (name, bytes) in &parsed.outputs {
        builder.add_output(store, name, bytes)?;
    }
    Ok(builder)
}

/// Guesses the format of `bytes` from its shape; `None` when nothing matches.
pub fn detect(bytes: &[u8]) -> Option<RunFormat> {
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return match &value {
            Value::Object(map) => detect_object(map),
            Value::Array(items) => {
                if items.iter().any(looks_like_openhands_event) {
                    Some(RunFormat::OpenHands)
                } else if mini_swe_agent::looks_like_messages(items) {
                    Some(RunFormat::MiniSweAgent)
                } else {
                    None
                }
            }
            _ => None,
        };
    }
    // Line-oriented: the first lines that parse decide (Claude Code files may open with
    // `file-history-snapshot` lines, which carry no ids).
    let objects: Vec<serde_json::Map<String, Value>> = bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter_map(|value| match value {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .take(DETECT_LINES)
        .collect();
    if objects.iter().any(looks_like_claude_line) {
        return Some(RunFormat::ClaudeCode);
    }
    if objects
        .iter()
        .any(|o| openhands_v1::looks_like_event(o) || openhands::looks_like_row(o))
    {
        return Some(RunFormat::OpenHands);
    }
    None
}

fn detect_object(map: &serde_json::Map<String, Value>) -> Option<RunFormat> {
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with(crate::export::CTX_EXPORT_PREFIX))
    {
        return Some(RunFormat::Ctx);
    }
    if mini_swe_agent::looks_like_trajectory(map) {
        return Some(RunFormat::MiniSweAgent);
    }
    if map.get("trajectory").is_some_and(Value::is_array) || swe_agent::looks_like_history_only(map)
    {
        return Some(RunFormat::SweAgent);
    }
    if looks_like_claude_line(map) {
        return Some(RunFormat::ClaudeCode);
    }
    if map
        .get("events")
        .and_then(Value::as_array)
        .is_some_and(|items| items.iter().any(looks_like_openhands_event))
        || openhands::looks_like_row(map)
        || openhands_v1::looks_like_event(map)
    {
        return Some(RunFormat::OpenHands);
    }
    None
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

/// The bytes of a tool result's content, nothing dropped: a string as it is; a list of text
/// blocks joined by newlines; anything else (images, documents, other blocks) as its canonical
/// JSON.
pub(crate) fn output_of(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Null => Vec::new(),
        Value::Array(blocks)
            if blocks.iter().all(|b| {
                b.as_str().is_some()
                    || (b.get("type").and_then(Value::as_str) == Some("text")
                        && b.get("text").is_some_and(Value::is_string))
            }) =>
        {
            text_of(value).unwrap_or_default().into_bytes()
        }
        other => ctx_core::canonical::to_vec(other).expect("JSON values serialize"),
    }
}

/// A JSON value as a non-negative integer that canonical JSON can hold.
pub(crate) fn count_of(value: Option<&Value>) -> Option<u64> {
    value
        .and_then(Value::as_u64)
        .filter(|n| *n <= crate::store::MAX_JSON_INT)
}

/// Token usage from an Anthropic (`input_tokens`, `cache_read_input_tokens`, …) or OpenAI
/// (`prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`) usage object.
/// Input tokens include cached ones, as the GenAI conventions ask.
pub(crate) fn usage_of(value: &Value) -> Option<TokenUsage> {
    let obj = value.as_object()?;
    if let Some(output) = count_of(obj.get("output_tokens")) {
        let input = count_of(obj.get("input_tokens")).unwrap_or(0);
        let read = count_of(obj.get("cache_read_input_tokens"));
        let created = count_of(obj.get("cache_creation_input_tokens"));
        return Some(TokenUsage {
            input_tokens: input + read.unwrap_or(0) + created.unwrap_or(0),
            output_tokens: output,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: created,
        });
    }
    let output = count_of(obj.get("completion_tokens"))?;
    let input = count_of(obj.get("prompt_tokens")).unwrap_or(0);
    let cached = obj
        .get("prompt_tokens_details")
        .and_then(|d| count_of(d.get("cached_tokens")));
    Some(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: None,
    })
}

/// The most frequent model among `models` (ties go to the one seen first).
pub(crate) fn main_model<'a>(models: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (order, model) in models.into_iter().enumerate() {
        let entry = counts.entry(model).or_insert((0, order));
        entry.0 += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| (a.1.0, std::cmp::Reverse(a.1.1)).cmp(&(b.1.0, std::cmp::Reverse(b.1.1))))
        .map(|(model, _)| model.to_owned())
}

/// Milliseconds from RFC 3339 timestamp `start` to `end`, when both parse and `end` is not
/// before `start`.
pub(crate) fn millis_between(start: &str, end: &str) -> Option<u64> {
    let a = crate::export::parse_rfc3339_nanos(start)?;
    let b = crate::export::parse_rfc3339_nanos(end)?;
    b.checked_sub(a).map(|ns| ns / 1_000_000)
}

/// An RFC 3339 timestamp (UTC, milliseconds) for Unix seconds, as mini-swe-agent records them.
pub(crate) fn rfc3339_of_unix_seconds(seconds: f64) -> Option<String> {
    if !seconds.is_finite() || !(0.0..=1.0e11).contains(&seconds) {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "finite, non-negative and below 1e14 milliseconds"
    )]
    let millis = (seconds * 1000.0).round() as u64;
    let days = millis / 86_400_000;
    let rest = millis % 86_400_000;
    let (year, month, day) = ctx_core::time::civil_from_days(i64::try_from(days).ok()?);
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    ))
}

/// A short description of a `serde_json` parse error for a warning.
pub(crate) fn json_problem(err: &serde_json::Error) -> String {
    if err.is_eof() {
        format!("truncated JSON ({err})")
    } else {
        format!("not valid JSON ({err})")
    }
}

/// Counts records of kinds an adapter does not know, to report each kind once.
#[derive(Debug, Default)]
pub(crate) struct UnknownKinds(BTreeMap<String, (usize, u64)>);

impl UnknownKinds {
    /// Notes one record of `kind` at `line` (or item index).
    pub(crate) fn note(&mut self, kind: String, at: usize) {
        self.0.entry(kind).or_insert((at, 0)).1 += 1;
    }

    /// One warning per kind: where it first occurs and how many there are.
    pub(crate) fn warnings(self, what: &str, by_line: bool) -> Vec<ImportWarning> {
        self.0
            .into_iter()
            .map(|(kind, (at, count))| {
                let message = format!("{count} {what} of unknown kind {kind} skipped");
                if by_line {
                    ImportWarning::at_line(at, message)
                } else {
                    ImportWarning::at_item(format!("[{at}]"), message)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_become_rfc3339() {
        assert_eq!(
            rfc3339_of_unix_seconds(0.0).as_deref(),
            Some("1970-01-01T00:00:00.000Z")
        );
        assert_eq!(
            rfc3339_of_unix_seconds(1_763_509_960.5).as_deref(),
            Some("2025-11-18T23:52:40.500Z")
        );
        assert_eq!(
            rfc3339_of_unix_seconds(951_782_400.0).as_deref(),
            Some("2000-02-29T00:00:00.000Z")
        );
        assert_eq!(rfc3339_of_unix_seconds(-1.0), None);
        assert_eq!(rfc3339_of_unix_seconds(f64::NAN), None);
        let back = crate::export::parse_rfc3339_nanos("2025-11-18T23:52:40.500Z");
        assert_eq!(back, Some(1_763_509_960_500_000_000));
    }

    #[test]
    fn usage_counts_cached_input_and_both_vendors_shapes() {
        let anthropic = serde_json::json!({"input_tokens": 3, "output_tokens": 7,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20});
        assert_eq!(
            usage_of(&anthropic),
            Some(TokenUsage {
                input_tokens: 123,
                output_tokens: 7,
                cache_read_input_tokens: Some(100),
                cache_creation_input_tokens: Some(20),
            })
        );
        let openai = serde_json::json!({"prompt_tokens": 50, "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 40}});
        assert_eq!(
            usage_of(&openai),
            Some(TokenUsage {
                input_tokens: 50,
                output_tokens: 5,
                cache_read_input_tokens: Some(40),
                cache_creation_input_tokens: None,
            })
        );
        assert_eq!(usage_of(&serde_json::json!({"total": 3})), None);
    }

    #[test]
    fn a_loss_nobody_explained_is_still_reported() {
        let mut report = ImportReport::default();
        report.held.calls = 3;
        report.kept.calls = 1;
        report.lose(LossKind::Calls, 1, "its id is empty");
        report.settle();
        assert_eq!(report.losses.len(), 2);
        let line = report.loss_line().expect("lost");
        assert!(
            line.contains("1 of 3 tool calls dropped (its id is empty)"),
            "{line}"
        );
        assert!(line.contains("did not name"), "{line}");
    }
}
