//! The MCP server handler: server info and instructions, `tools/list`, `tools/call` (through
//! [`CtxServer::dispatch`], the one place every call passes), and the pack and snapshot
//! resources.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::config::{CORE_TOOLS, CallRecorder, McpConfig, RecordedCall, ToolSet};
use crate::error::{McpError, ToolError};
use crate::notify::{self, Reporter};
use crate::resources;
use crate::tools::{self, Call, MAX_ARGUMENT_BYTES, ToolDef};
use crate::workspace::WorkspacePool;

struct Inner {
    workspace: WorkspacePool,
    tools: Vec<Arc<ToolDef>>,
    /// Tools left out, and why (to explain unknown-tool errors).
    withheld: Vec<Withheld>,
    recorder: Option<Arc<dyn CallRecorder>>,
    call_budget: std::time::Duration,
    instructions: String,
    /// The walk and file contents `ctx_search` reuses between calls (stat-validated).
    tree_cache: ctx::code::TreeCache,
}

/// What one client session chose: the log level of `logging/setLevel`.
#[derive(Default)]
struct Session {
    /// `None` until the client sets a level: no log notifications before that.
    #[allow(deprecated)]
    level: std::sync::Mutex<Option<rmcp::model::LoggingLevel>>,
}

/// The ctx MCP server for one workspace. Cloning is cheap: clones share everything (use
/// [`CtxServer::for_session`] for a new client session).
#[derive(Clone)]
pub struct CtxServer {
    inner: Arc<Inner>,
    session: Arc<Session>,
}

impl std::fmt::Debug for CtxServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CtxServer")
            .field("root", &self.inner.workspace.root())
            .finish_non_exhaustive()
    }
}

impl ToolSet {
    /// The `mcp.tools` setting.
    pub fn from_layers(layers: &ctx::config::ConfigLayers) -> Result<Self, McpError> {
        let text = layers.text("mcp.tools").map_err(ctx::CtxError::from)?;
        text.parse()
            .map_err(|e| McpError::Tools(format!("the `mcp.tools` setting: {e}")))
    }

    /// Checks that every tool the set names exists (and, for a write tool, that
    /// `allow_write` is on), so a server that builds its MCP sessions later can refuse a bad
    /// set when it starts.
    pub fn check(&self, allow_write: bool) -> Result<(), McpError> {
        choose(tools::definitions(), self, allow_write).map(|_| ())
    }
}

/// The tools of `set` (write tools only with `allow_write`), and the names of the others.
fn choose(
    all: Vec<Arc<ToolDef>>,
    set: &ToolSet,
    allow_write: bool,
) -> Result<(Vec<Arc<ToolDef>>, Vec<Withheld>), McpError> {
    if let ToolSet::Only(names) = set {
        for name in names {
            match all.iter().find(|d| d.tool.name == name.as_str()) {
                None => {
                    let known: Vec<&str> = all.iter().map(|d| d.tool.name.as_ref()).collect();
                    return Err(McpError::Tools(format!(
                        "there is no tool `{name}`; name tools among {}",
                        known.join(", ")
                    )));
                }
                Some(def) if def.write && !allow_write => {
                    return Err(McpError::Tools(format!(
                        "`{name}` changes packs and needs --allow-write (or leave it out)"
                    )));
                }
                Some(_) => {}
            }
        }
    }
    let mut offered = Vec::new();
    let mut withheld = Vec::new();
    for def in all {
        let name = def.tool.name.to_string();
        let in_set = match set {
            ToolSet::All => true,
            ToolSet::Core => CORE_TOOLS.contains(&name.as_str()) || def.write,
            ToolSet::Only(names) => names.contains(&name),
        };
        if !in_set {
            withheld.push(Withheld::NotInSet(name));
        } else if def.write && !allow_write {
            withheld.push(Withheld::Write(name));
        } else {
            offered.push(def);
        }
    }
    Ok((offered, withheld))
}

/// A tool this server knows but does not offer, and why.
enum Withheld {
    /// Write tools need `allow_write`.
    Write(String),
    /// Outside the chosen tool set.
    NotInSet(String),
}

impl CtxServer {
    /// The keeper of the workspace index, once a selection started it (see
    /// [`McpConfig::keep_index`]).
    pub fn index_keeper(&self) -> Option<&ctx::IndexKeeper> {
        self.inner.workspace.index_keeper()
    }

    /// Opens the workspace (and its store) and prepares the tools.
    pub fn new(config: &McpConfig) -> Result<Self, McpError> {
        let workspace = WorkspacePool::open(config)?;
        let set = match &config.tools {
            Some(set) => set.clone(),
            None => ToolSet::from_layers(&config.layers)?,
        };
        let (tools, withheld) = choose(tools::definitions(), &set, config.allow_write)?;
        let instructions = instructions(&workspace, &tools);
        Ok(Self {
            inner: Arc::new(Inner {
                workspace,
                tools,
                withheld,
                recorder: config.recorder.clone(),
                call_budget: config.call_budget,
                instructions,
                tree_cache: ctx::code::TreeCache::with_settings(config.tree_cache.clone()),
            }),
            session: Arc::new(Session::default()),
        })
    }

    /// The same server for a new client session (its own log level).
    #[must_use]
    pub fn for_session(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            session: Arc::new(Session::default()),
        }
    }

    /// Whether the session's log level lets info lines through.
    #[allow(deprecated)]
    fn logs_info(&self) -> bool {
        self.session
            .level
            .lock()
            .expect("log level")
            .is_some_and(|level| {
                notify::rank(level) <= notify::rank(rmcp::model::LoggingLevel::Info)
            })
    }

    /// The workspace root.
    pub fn root(&self) -> &std::path::Path {
        self.inner.workspace.root()
    }

    /// The tools this server offers, as `tools/list` shows them.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner.tools.iter().map(|d| d.tool.clone()).collect()
    }

    fn find(&self, name: &str) -> Option<Arc<ToolDef>> {
        self.inner
            .tools
            .iter()
            .find(|d| d.tool.name == name)
            .cloned()
    }

    /// Calls a tool. An unknown tool is a JSON-RPC error (-32602); everything else, including
    /// bad arguments and failures, is a result (with `isError` for failures) that the
    /// recorder, if any, sees.
    pub async fn dispatch(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        self.dispatch_with(name, arguments, None).await
    }

    /// [`CtxServer::dispatch`], telling `reporter` how long work advances.
    async fn dispatch_with(
        &self,
        name: &str,
        arguments: JsonObject,
        reporter: Option<Arc<Reporter>>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(def) = self.find(name) else {
            let hint = match self.inner.withheld.iter().find(|w| match w {
                Withheld::Write(n) | Withheld::NotInSet(n) => n == name,
            }) {
                Some(Withheld::Write(_)) => {
                    " (write tools need the server to be started with --allow-write)"
                }
                Some(Withheld::NotInSet(_)) => {
                    " (it is not in this server's tool set: start it with `--tools all` or name it in the `mcp.tools` setting)"
                }
                None => "",
            };
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{name}`{hint}; tools/list names the tools this server offers"
                ),
                None,
            ));
        };
        let started = Instant::now();
        let size = serde_json::to_string(&arguments).map_or(usize::MAX, |s| s.len());
        let result = if size > MAX_ARGUMENT_BYTES {
            error_result(&ToolError::invalid(
                name,
                format!(
                    "the arguments are {size} bytes, over the {MAX_ARGUMENT_BYTES}-byte limit; send shorter arguments"
                ),
            ))
        } else {
            let server = self.clone();
            let args = arguments.clone();
            let tool_name = name.to_owned();
            let progress = reporter.clone();
            let budget = self.inner.call_budget;
            // Set when the call is answered with a timeout: long work (an index build, a
            // render) stops at its next chunk rather than running on for nobody.
            let given_up = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&given_up);
            let task = tokio::task::spawn_blocking(move || {
                let inner = progress
                    .as_deref()
                    .map_or(&ctx::core::NoProgress as &dyn ctx::core::Progress, |r| r);
                let cancellable = ctx::core::Cancellable { inner, flag: &flag };
                let call = Call {
                    workspace: &server.inner.workspace,
                    tool: &tool_name,
                    arguments: &args,
                    tree_cache: &server.inner.tree_cache,
                    progress: &cancellable,
                    cancel: &flag,
                };
                (def.run)(&call)
            });
            // Past its budget the call is answered and its work told to stop; what it still
            // returns is dropped.
            let outcome = if let Ok(joined) = tokio::time::timeout(budget, task).await {
                joined
            } else {
                given_up.store(true, Ordering::Relaxed);
                Ok(Err(ToolError::failed(
                    ctx::ErrorKind::UserInput,
                    format!(
                        "`{name}` took longer than {} s and was stopped waiting for; narrow the request (a `path`, a smaller `max_tokens` or `budget`, a more specific `pattern`)",
                        budget.as_secs_f64()
                    ),
                )))
            };
            match outcome {
                Ok(Ok(page)) => {
                    let blocks = page
                        .blocks()
                        .into_iter()
                        .map(|b| ContentBlock::text(b.to_owned()))
                        .collect();
                    let mut result = CallToolResult::success(blocks);
                    result.structured_content = Some(page.structured);
                    result
                }
                Ok(Err(err)) => error_result(&err),
                Err(join) => {
                    tracing::error!(tool = name, "tool call failed: {join}");
                    error_result(&ToolError::failed(
                        ctx::ErrorKind::Internal,
                        format!(
                            "`{name}` failed unexpectedly ({join}); this is a bug in ctx, please report it"
                        ),
                    ))
                }
            }
        };
        if let Some(reporter) = &reporter
            && started.elapsed() >= LONG_CALL
        {
            reporter.log(format!(
                "{name} took {:.1} s",
                started.elapsed().as_secs_f64()
            ));
        }
        tracing::debug!(
            tool = name,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            error = result.is_error.unwrap_or(false),
            "tool call"
        );
        if let Some(recorder) = &self.inner.recorder {
            recorder.record(&RecordedCall {
                tool: name,
                arguments: &arguments,
                result: &result,
                elapsed: started.elapsed(),
            });
        }
        Ok(result)
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&WorkspacePool) -> Result<T, ErrorData> + Send + 'static,
    ) -> Result<T, ErrorData> {
        let server = self.clone();
        tokio::task::spawn_blocking(move || f(&server.inner.workspace))
            .await
            .map_err(|e| ErrorData::internal_error(format!("ctx failed unexpectedly: {e}"), None))?
    }
}

/// Calls at least this long are logged (to a client that set a log level).
const LONG_CALL: std::time::Duration = std::time::Duration::from_secs(1);

/// A failed call: the message for the agent as text, and its kind (`user_input`,
/// `not_found`, `conflict`, `damaged`, `io`, `internal`) for programs in `_meta` under
/// [`ERROR_META_KEY`]. No `structuredContent`: it would have to match the tool's output
/// schema, and clients that validate it (the TypeScript SDK does, even on errors) would
/// replace ctx's message with their own complaint about the shape.
fn error_result(err: &ToolError) -> CallToolResult {
    let message = err.to_string();
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
    let mut meta = JsonObject::new();
    meta.insert(
        ERROR_META_KEY.to_owned(),
        serde_json::json!({"kind": err.kind().as_str(), "message": message}),
    );
    result.meta = Some(rmcp::model::MetaObject(meta));
    result
}

/// Where a failed call's kind and message are, in the result's `_meta`.
pub const ERROR_META_KEY: &str = "ctx/error";

/// What the server tells the agent at the start of a session: one line per kind of tool it
/// offers, then how answers, paths and errors work.
fn instructions(workspace: &WorkspacePool, offered: &[Arc<ToolDef>]) -> String {
    let has = |name: &str| offered.iter().any(|d| d.tool.name == name);
    let mut text = format!(
        "ctx gives you context for the workspace at {}.\n",
        workspace.root().display()
    );
    let lines: [(&[&str], &str); 6] = [
        (
            &["ctx_select"],
            "For a question or task, ctx_select returns the most relevant files as Markdown within a token budget.",
        ),
        (
            &["ctx_search", "ctx_map", "ctx_summarize", "ctx_status"],
            "Find code with ctx_search (text, regex, symbol or caller); orient with ctx_map, ctx_summarize and ctx_status.",
        ),
        (
            &["ctx_related", "ctx_diff_context"],
            "Follow dependencies with ctx_related; review changes with ctx_diff_context.",
        ),
        (
            &["fs_read"],
            "Read files, directories and matches with fs_read.",
        ),
        (
            &["ctx_packs_render", "ctx_packs_list"],
            "Packs are curated, token-budgeted bundles of sources; ctx_packs_render returns one's payload and records a snapshot that reproduces it.",
        ),
        (
            &["ctx_packs_create"],
            "Write tools are on: ctx_packs_create, ctx_packs_add and ctx_packs_remove change packs.",
        ),
    ];
    for (tools, line) in lines {
        if tools.iter().any(|t| has(t)) {
            text.push_str(line);
            text.push('\n');
        }
    }
    let _ = write!(
        text,
        "Answers are text for you (with typed JSON in structuredContent) of at most max_tokens tokens (default {}); when one ends with a cursor, call the same tool with the same arguments and that cursor (next_cursor) for the rest. Paths are relative to the workspace root, as every tool takes them. A failed call says which argument to change.",
        workspace.max_tokens()
    );
    text
}

impl ServerHandler for CtxServer {
    #[allow(deprecated)] // logging: deprecated by SEP-2577, still part of 2025-11-25
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_resources()
                .enable_tools()
                .build(),
        )
        .with_server_info(
            Implementation::new("ctx", env!("CARGO_PKG_VERSION")).with_title("ctx context layer"),
        )
        .with_instructions(self.inner.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.find(name).map(|d| d.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = context.meta.get_progress_token();
        let (reporter, notes) = Reporter::new(token.is_some(), self.logs_info());
        let reporter = Arc::new(reporter);
        let forwarder = reporter
            .is_active()
            .then(|| tokio::spawn(notify::forward(context.peer.clone(), token, notes)));
        let work = self.dispatch_with(
            &request.name,
            request.arguments.unwrap_or_default(),
            Some(Arc::clone(&reporter)),
        );
        // A cancelled request gets no answer (rmcp drops it) and is not recorded: stop
        // waiting for it at once.
        let result = tokio::select! {
            result = work => result,
            () = context.ct.cancelled() => Err(ErrorData::internal_error("the request was cancelled", None)),
        };
        // Every note goes out before the answer.
        drop(reporter);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        result.map(CallToolResponse::from)
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.session.level.lock().expect("log level") = Some(request.level);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources: Vec<Resource> = self.blocking(resources::list).await?;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates: Vec<ResourceTemplate> = resources::templates();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let contents: ResourceContents = self.blocking(move |ws| resources::read(ws, &uri)).await?;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
