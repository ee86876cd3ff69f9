//! What a server is started with: the workspace, the store, the settings layers, whether write
//! tools are offered, and an optional recorder that sees every tool call.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ctx::config::ConfigLayers;
use rmcp::model::{CallToolResult, JsonObject};

/// How to start a server for one workspace.
#[derive(Clone)]
pub struct McpConfig {
    /// The directory tools may read: every path argument is resolved inside it.
    pub workspace_root: PathBuf,
    /// The store (the `.ctx` directory); it must exist.
    pub store_dir: PathBuf,
    /// The directory pack sources are relative to (see `ctx::packs::sources_root`).
    pub sources_root: PathBuf,
    /// Settings: config files, environment and flags, as the front end read them.
    pub layers: ConfigLayers,
    /// Offer `ctx_packs_create`, `ctx_packs_add` and `ctx_packs_remove`.
    pub allow_write: bool,
    /// Sees every tool call and its result (for run records).
    pub recorder: Option<Arc<dyn CallRecorder>>,
    /// The clock for records that carry a time (snapshots, packs): Unix seconds.
    pub clock: fn() -> i64,
}

/// The system clock in Unix seconds.
pub fn system_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl McpConfig {
    /// A read-only configuration without a recorder.
    pub fn new(
        workspace_root: PathBuf,
        store_dir: PathBuf,
        sources_root: PathBuf,
        layers: ConfigLayers,
    ) -> Self {
        Self {
            workspace_root,
            store_dir,
            sources_root,
            layers,
            allow_write: false,
            recorder: None,
            clock: system_clock,
        }
    }

    /// Offers the write tools too.
    #[must_use]
    pub fn with_allow_write(mut self, allow_write: bool) -> Self {
        self.allow_write = allow_write;
        self
    }

    /// Sends every tool call to `recorder`.
    #[must_use]
    pub fn with_recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }
}

/// One finished tool call, as a recorder sees it.
#[derive(Debug)]
pub struct RecordedCall<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The arguments as the client sent them.
    pub arguments: &'a JsonObject,
    /// What the client got back (an `isError` result for a failed call).
    pub result: &'a CallToolResult,
    /// How long the call took.
    pub elapsed: Duration,
}

/// Receives every tool call a server answers (unknown tools, which are protocol errors,
/// excepted). Implementations must be cheap or hand the work to another thread: the call's
/// answer waits for `record` to return.
pub trait CallRecorder: Send + Sync {
    /// Records one call.
    fn record(&self, call: &RecordedCall<'_>);
}
