//! Errors: [`McpError`] for starting and running a server, [`ToolError`] for one tool call.
//!
//! A [`ToolError`] never becomes a JSON-RPC error: it is returned to the agent as a tool result
//! with `isError: true` and a message that says what was wrong and what to do instead.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why a server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("workspace root `{}`: {source}; name an existing directory", path.display())]
    WorkspaceRoot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Ctx(#[from] ctx::CtxError),
    #[error(transparent)]
    Store(#[from] ctx::store::StoreError),
    #[error("cannot listen on {addr}: {source}; pick a free port or another address")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the HTTP server failed: {0}")]
    Http(#[source] std::io::Error),
    #[error("the MCP session failed: {0}")]
    Session(String),
    /// The tool set names a tool that does not exist or cannot be offered.
    #[error("tool set: {0}")]
    Tools(String),
}

/// Why one tool call failed, phrased for the agent that made it.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// An argument is missing, malformed or out of range.
    #[error("invalid arguments for `{tool}`: {message}")]
    InvalidArguments { tool: String, message: String },
    /// A path names something outside the workspace.
    #[error(
        "`{path}` is outside the workspace root {}; name a path inside it (relative paths are resolved against the root)",
        root.display()
    )]
    OutsideWorkspace { path: String, root: PathBuf },
    /// The answer does not fit the token cap even one item at a time.
    #[error("{0}")]
    TooLarge(String),
    /// A `cursor` that this call did not hand out.
    #[error("{0}")]
    BadCursor(String),
    /// The operation itself failed (unknown pack, bad regex, not a git repository, …).
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// An invalid-arguments error for `tool`.
    pub fn invalid(tool: &str, message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            tool: tool.to_owned(),
            message: message.into(),
        }
    }
}

impl From<ctx::CtxError> for ToolError {
    fn from(err: ctx::CtxError) -> Self {
        Self::Failed(err.to_string())
    }
}

impl From<ctx::store::StoreError> for ToolError {
    fn from(err: ctx::store::StoreError) -> Self {
        Self::Failed(err.to_string())
    }
}

impl From<ctx::code::CodeError> for ToolError {
    fn from(err: ctx::code::CodeError) -> Self {
        Self::Failed(err.to_string())
    }
}
