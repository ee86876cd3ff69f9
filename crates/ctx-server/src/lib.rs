//! The HTTP tool server: `fs_read` for many workspaces over HTTP (seed 002 §3, in axum).
//!
//! - `POST /tool` with `{workspace, tool, params}` answers `{success, result, error,
//!   latency_ms}`; `tool` is `fs_read` and `params` its input (`{"operations": [...]}` or one
//!   operation). An unknown workspace is a 404 naming the known ones.
//! - `GET /health` answers `{status, workspaces, workspace_ids, …}`.
//! - Workspaces are the subdirectories of one directory ([`Registry`]), picked up when they
//!   are added; every path is resolved inside its workspace by the `ctx-fs` sandbox.
//! - At most `max_concurrent` requests run at once; past that a request gets 503 with
//!   `Retry-After` at once, never a wait.
//! - Identical operations in flight at the same time run once, and file reads are served
//!   from a small LRU keyed by the file's identity, size and times ([`ToolEngine`]).
//! - Every request is logged through `tracing` (target `ctx_server::access`); [`serve`]
//!   stops gracefully when its shutdown future completes (the CLI wires SIGTERM and Ctrl-C).
//! - Every route refuses a foreign `Host` or `Origin` (403, the DNS rebinding defence of the
//!   MCP transport, [`HostPolicy`]: loopback names and the bound address by default) and a
//!   `POST` body that is not `Content-Type: application/json` (415).
//! - Extra routes (the MCP Streamable HTTP service at `/mcp/{workspace}` and `/mcp`) can be mounted
//!   behind the same limit with [`Mcp`].

mod error;
mod guard;
mod http;
mod mcp;
mod registry;
mod tool;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

pub use error::ServerError;
pub use http::{
    AppState, RETRY_AFTER_SECS, TOOLS, ToolBodyError, ToolCall, decode_tool_body, router, status_of,
};
pub use mcp::{Mcp, McpFactory};
pub use registry::{Registry, is_valid_id};
pub use tool::{StatsSnapshot, ToolEngine};

use ctx::fs::read::ReadOptions;
use ctx::fs::sandbox::SandboxOptions;
pub use ctx_mcp::{HostPolicy, HttpLimits};

/// Default for `--max-concurrent`.
pub const DEFAULT_MAX_CONCURRENT: usize = 200;

/// Default number of results the LRU keeps.
pub const DEFAULT_CACHE_ENTRIES: usize = 1024;

/// How long in-flight requests may take to finish after shutdown begins.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What a server is started with.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The directory whose subdirectories are the workspaces.
    pub workspaces_dir: PathBuf,
    /// Requests running at once before 503s.
    pub max_concurrent: usize,
    /// `fs_read` limits.
    pub read_options: ReadOptions,
    /// Sandbox policy for every workspace.
    pub sandbox: SandboxOptions,
    /// LRU slots for file-read results (0 turns the cache off).
    pub cache_entries: usize,
    /// The `Host` and `Origin` headers every route accepts; `None` (the default) accepts the
    /// loopback names and the address the listener is bound to, as the MCP transport does.
    pub host_policy: Option<HostPolicy>,
    /// The body size and time every `POST` is held to before it takes one of the
    /// `max_concurrent` places (so slow senders hold none), and the MCP sessions' limits.
    pub http_limits: HttpLimits,
}

impl ServerConfig {
    /// Defaults for serving the workspaces under `workspaces_dir`.
    pub fn new(workspaces_dir: impl Into<PathBuf>) -> Self {
        Self {
            workspaces_dir: workspaces_dir.into(),
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            // Many small requests at once: walk on the request's own thread.
            read_options: ReadOptions {
                walk_threads: 1,
                ..ReadOptions::default()
            },
            sandbox: SandboxOptions::default(),
            cache_entries: DEFAULT_CACHE_ENTRIES,
            host_policy: None,
            http_limits: HttpLimits::default(),
        }
    }

    /// The shared state for this configuration (checks the workspaces directory).
    pub fn state(&self) -> Result<AppState, ServerError> {
        let registry = Registry::new(&self.workspaces_dir, self.sandbox)?;
        let engine = ToolEngine::new(self.read_options.clone(), self.cache_entries);
        Ok(AppState::new(registry, engine, self.max_concurrent.max(1))
            .with_http_limits(self.http_limits))
    }
}

/// Serves `config` on `listener` until `shutdown` completes, then lets requests in flight
/// finish (for at most [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: &ServerConfig,
    mcp: Option<Mcp>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let state = config.state()?;
    let policy = match &config.host_policy {
        Some(policy) => policy.clone(),
        None => HostPolicy::for_address(listener.local_addr()?),
    };
    let extra = mcp.map(|mcp| mcp.router(state.registry_handle()));
    let app = router(state, extra, policy);
    let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
    let graceful = async move {
        shutdown.await;
        tracing::info!("shutting down: finishing requests in flight");
        let _ = stopping_tx.send(true);
    };
    let server = axum::serve(
        axum::serve::ListenerExt::tap_io(listener, |tcp| {
            // Small JSON answers on kept-alive connections: do not wait for Nagle.
            if let Err(err) = tcp.set_nodelay(true) {
                tracing::debug!("TCP_NODELAY: {err}");
            }
        }),
        app,
    )
    .with_graceful_shutdown(graceful);
    let mut stopping = stopping_rx;
    tokio::select! {
        result = server => result.map_err(ServerError::Io),
        () = async {
            let _ = stopping.wait_for(|stop| *stop).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!("requests still running after {:?}; stopping anyway", SHUTDOWN_GRACE);
            Ok(())
        }
    }
}
