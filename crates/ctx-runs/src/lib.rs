//! Run records: agent runs captured as content-addressed packs (seed 004).
//!
//! A run is a manifest ([`RunManifest`]: model and parameters, system prompt, prompts,
//! inputs, steps, outputs, environment, parent) whose contents are blobs in the store's
//! object store. Each step is its own object ([`Step`]) naming the previous step's hash, so
//! editing any step changes every later step and the run id, which is the hash of the
//! manifest's canonical JSON (and the manifest object's name). Tool and model call fields use
//! the OpenTelemetry GenAI names (`gen_ai.tool.name`, `gen_ai.request.model`, …).
//!
//! - [`store`]: [`RunBuilder`] (record step by step, then `finish`), [`load_run`] (git-like
//!   prefix ids, every object re-hashed), [`list_runs`], refs (`latest`, tags), [`fork_run`].
//! - [`import`]: adapters for ctx's own export, Claude Code, OpenHands, SWE-agent and
//!   mini-swe-agent logs, with an account of what each import kept.
//! - [`diff`]: typed drift between two runs.
//! - [`export`]: ctx JSON (lossless), OTLP-JSON spans, in-toto Statement.

pub mod diff;
mod error;
pub mod export;
pub mod import;
pub mod model;
pub mod provenance;
pub mod replay;
pub mod store;

pub use diff::{Drift, DriftKind, RunDiff, diff_runs};
pub use error::RunError;
pub use export::{
    CtxExport, RunTree, export_ctx, export_in_toto, export_otel, export_otel_tree,
    in_toto_statements,
};
pub use import::{
    FORMAT_NAMES, FormatChoice, ImportOptions, ImportOutcome, ImportReport, ImportWarning, Loss,
    LossKind, ParsedRun, RunFormat, StoredChild, StoredRun, Tally, import_bytes, import_bytes_with,
    import_file, import_path,
};
pub use model::{
    ChildRun, ContentRef, Environment, ModelInfo, PromptRef, RUN_FORMAT_VERSION, RunId,
    RunManifest, Step, StepKind, StepStatus, TokenUsage,
};
pub use store::{
    LATEST, MAX_JSON_INT, MIN_PREFIX_LEN, REF_NAMESPACE, Run, RunBuilder, RunSummary, StepDraft,
    check_tag, fork_run, list_runs, load_run, load_run_by_id, load_run_tree, read_blob,
    refs_by_run, resolve_run, tag_run,
};
