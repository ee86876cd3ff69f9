//! The ctx MCP server, on the official Rust SDK (`rmcp`), over stdio and Streamable HTTP.
//!
//! [`CtxServer`] answers for one workspace: the code-intelligence tools (`ctx_status`,
//! `ctx_map`, `ctx_summarize`, `ctx_search`, `ctx_related`, `ctx_diff_context`), the pack
//! tools (`ctx_packs_list`, `_get`, `_preview`, `_render`, `_snapshot`, and with
//! `allow_write` `_create`, `_add`, `_remove`), and packs and snapshots as resources.
//!
//! - Every tool call goes through [`CtxServer::dispatch`], which a [`CallRecorder`] can
//!   observe; unknown tools are JSON-RPC errors, every other failure an `isError` result.
//! - Every answer is capped at `max_tokens` tokens ([`paging`]) with a cursor for the rest.
//! - Every path argument is resolved inside the workspace root ([`workspace`]).
//! - [`record`] records sessions as runs and replays them.
//! - [`run_stdio`] and [`run_http`] serve it; [`streamable_http_service`] lets another axum
//!   app mount it at `/mcp`.
//!
//! Like every library here it never prints (logs go through `tracing`) and never reads the
//! environment: the front end passes settings in [`McpConfig`].

mod config;
mod error;
pub mod jsonrpc;
mod notify;
pub mod paging;
pub mod record;
mod resources;
mod schema;
mod server;
mod text;
mod tools;
mod transport;
pub mod workspace;

pub use config::{CORE_TOOLS, CallRecorder, McpConfig, RecordedCall, ToolSet, system_clock};
pub use error::{McpError, ToolError};
pub use server::{CtxServer, ERROR_META_KEY};
pub use tools::MAX_ARGUMENT_BYTES;
pub use transport::{
    CtxHttpService, HostPolicy, HostRejection, HttpLimits, HttpOptions, MAX_MESSAGE_BYTES,
    block_on, read_body, router, run_http, run_stdio, serve_http, serve_io,
    streamable_http_service,
};

/// Re-exported so front ends and tests use the same SDK version.
pub use rmcp;
