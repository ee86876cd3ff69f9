//! The crate's error type.

use std::path::PathBuf;

use ctx_core::ContentHash;
use ctx_store::StoreError;

use crate::import::ImportWarning;

/// Everything that can go wrong with run records, each with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no run `{id}`; `ctx run log` lists the runs in this store")]
    NoSuchRun { id: String },
    #[error("run id `{prefix}` is ambiguous; it could be any of: {}; give more digits", candidates.join(", "))]
    AmbiguousRun {
        prefix: String,
        candidates: Vec<String>,
    },
    #[error(
        "`{input}` is not a run id: give a ref name (`latest`, a tag) or at least {min} hex digits of a run id"
    )]
    BadRunId { input: String, min: usize },
    #[error("run {run}: {what} {object} is not a valid {kind}: {detail}; run `ctx store verify`")]
    Malformed {
        run: String,
        what: String,
        object: ContentHash,
        kind: &'static str,
        detail: String,
    },
    #[error("run {run}: step {index} ({object}) is damaged: {detail}; run `ctx store verify`")]
    BrokenChain {
        run: ContentHash,
        index: usize,
        object: ContentHash,
        detail: String,
    },
    #[error("run {run}: {what} {object}: {source}")]
    Object {
        run: String,
        what: String,
        object: ContentHash,
        source: Box<StoreError>,
    },
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("unknown run format `{name}`; use one of: {}", crate::import::FORMAT_NAMES.join(", "))]
    UnknownFormat { name: String },
    #[error(
        "`{}` does not look like any known run format ({}); pass --from FORMAT",
        path.display(),
        crate::import::FORMAT_NAMES[1..].join(", ")
    )]
    NotDetected { path: PathBuf },
    #[error("`{}` holds no valid {format} record{}; nothing imported", path.display(), first_warning(warnings))]
    NoRecords {
        path: PathBuf,
        format: &'static str,
        warnings: Vec<ImportWarning>,
    },
    #[error(
        "`{}` line {line} is not a valid {format} record: {detail}; nothing imported (pass --skip-bad-lines to import the other lines)",
        path.display()
    )]
    BadLine {
        path: PathBuf,
        format: &'static str,
        line: usize,
        detail: String,
    },
    #[error(
        "`{}`{} holds no step (no tool call and no model message){}; nothing imported",
        path.display(),
        row.map(|r| format!(" row {r}")).unwrap_or_default(),
        match *format { "run" => String::new(), f => format!(" as a {f} log") }
    )]
    NoSteps {
        path: PathBuf,
        format: &'static str,
        row: Option<u64>,
    },
    #[error(
        "`{}`: {losses}; nothing imported (pass --lossy to import what was kept)",
        path.display()
    )]
    Lossy { path: PathBuf, losses: String },
    #[error(
        "`{}` is a directory but not a Claude Code session directory (`<session>/subagents/` next to `<session>.jsonl`) or an OpenHands conversation (`events/`, `base_state.json`); name the log file",
        path.display()
    )]
    NotALog { path: PathBuf },
    #[error(
        "`{}` has {rows} rows; --row {row} must be between 1 and {rows}",
        path.display()
    )]
    BadRow {
        path: PathBuf,
        row: usize,
        rows: usize,
    },
    #[error("`{}` is not a valid {format} file: {detail}", path.display())]
    BadFile {
        path: PathBuf,
        format: &'static str,
        detail: String,
    },
    #[error(
        "`{tag}` is not a usable tag: use letters, digits, `.`, `_`, `-` (not `latest`, not only hex digits, not starting with `sha256`)"
    )]
    BadTag { tag: String },
    #[error("run {run} has {steps} steps; --at {at} must be at most {steps}")]
    BadForkPoint {
        run: ContentHash,
        steps: usize,
        at: usize,
    },
}

fn first_warning(warnings: &[ImportWarning]) -> String {
    match warnings.first() {
        Some(w) if warnings.len() == 1 => format!(" ({w})"),
        Some(w) => format!(" ({w}; and {} more)", warnings.len() - 1),
        None => " (the file is empty)".to_owned(),
    }
}
