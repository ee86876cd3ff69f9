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
    /// The tools offered; `None` reads the `mcp.tools` setting (default `core`).
    pub tools: Option<ToolSet>,
    /// Sees every tool call and its result (for run records).
    pub recorder: Option<Arc<dyn CallRecorder>>,
    /// The clock for records that carry a time (snapshots, packs): Unix seconds.
    pub clock: ctx::Clock,
    /// How long one tool call may run before it is answered with a timeout error.
    pub call_budget: Duration,
    /// The tree cache's clock and git's global excludes files (the front end finds them from
    /// `XDG_CONFIG_HOME` and `HOME`: [`ctx::host::global_git_ignore_files`]).
    pub tree_cache: ctx::code::TreeCacheSettings,
    /// Keep the workspace index current with a file watcher from the first selection on
    /// (`ctx mcp`, `ctx serve`); off, every selection walks the tree (a replay).
    pub keep_index: bool,
}

/// The default [`McpConfig::call_budget`]: long enough for a first index build of a large
/// tree, short enough that an agent is never left waiting without an answer.
pub const CALL_BUDGET: Duration = Duration::from_secs(300);

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
            tools: None,
            recorder: None,
            clock: Arc::new(system_clock),
            call_budget: CALL_BUDGET,
            tree_cache: ctx::code::TreeCacheSettings {
                global_ignore_files: Vec::new(),
                clock: std::time::SystemTime::now,
            },
            keep_index: true,
        }
    }

    /// Keeps the workspace index current with a file watcher (the default), or not.
    #[must_use]
    pub fn with_keep_index(mut self, keep: bool) -> Self {
        self.keep_index = keep;
        self
    }

    /// Sets how long one tool call may run before it is answered with a timeout.
    #[must_use]
    pub fn with_call_budget(mut self, budget: Duration) -> Self {
        self.call_budget = budget;
        self
    }

    /// Offers the write tools too.
    #[must_use]
    pub fn with_allow_write(mut self, allow_write: bool) -> Self {
        self.allow_write = allow_write;
        self
    }

    /// Offers `tools` (instead of the `mcp.tools` setting).
    #[must_use]
    pub fn with_tools(mut self, tools: ToolSet) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Sends every tool call to `recorder`.
    #[must_use]
    pub fn with_recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }
}

/// The tools a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSet {
    /// What an agent needs every session: [`CORE_TOOLS`] (and the write tools with
    /// `allow_write`).
    Core,
    /// Every tool (the write tools only with `allow_write`).
    All,
    /// These tools only, by name.
    Only(Vec<String>),
}

/// The `core` tool set: select, search, summarize, map, read and render.
pub const CORE_TOOLS: &[&str] = &[
    "ctx_select",
    "ctx_search",
    "ctx_summarize",
    "ctx_map",
    "fs_read",
    "ctx_packs_render",
];

impl std::str::FromStr for ToolSet {
    type Err = String;

    /// `core`, `all`, or tool names separated by commas.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "core" => Ok(Self::Core),
            "all" => Ok(Self::All),
            "" => Err("name a tool set: core, all, or tool names separated by commas".to_owned()),
            list => Ok(Self::Only(
                list.split(',')
                    .map(|name| name.trim().to_owned())
                    .filter(|name| !name.is_empty())
                    .collect(),
            )),
        }
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
