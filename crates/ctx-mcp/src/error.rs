//! Errors: [`McpError`] for starting and running a server, [`ToolError`] for one tool call.
//!
//! A [`ToolError`] never becomes a JSON-RPC error: it is returned to the agent as a tool result
//! with `isError: true` and a message that says what was wrong and what to do instead.

use std::net::SocketAddr;
use std::path::PathBuf;

use ctx::ErrorKind;

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
    /// The operation itself failed (unknown pack, bad regex, not a git repository, …), with
    /// the facade's kind of failure.
    #[error("{message}")]
    Failed { kind: ErrorKind, message: String },
}

impl ToolError {
    /// A failed operation of `kind`.
    pub fn failed(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::Failed {
            kind,
            message: message.into(),
        }
    }

    /// What kind of failure this is: argument, path, size and cursor errors are the
    /// request's; a failed operation keeps the kind the facade gave it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidArguments { .. }
            | Self::OutsideWorkspace { .. }
            | Self::TooLarge(_)
            | Self::BadCursor(_) => ErrorKind::UserInput,
            Self::Failed { kind, .. } => *kind,
        }
    }

    /// The same failure with its message rewritten (the kind kept).
    #[must_use]
    pub fn reworded(self, reword: impl FnOnce(&str) -> String) -> Self {
        match self {
            Self::Failed { kind, message } => Self::Failed {
                kind,
                message: reword(&message),
            },
            other => other,
        }
    }

    /// An invalid-arguments error for `tool`.
    pub fn invalid(tool: &str, message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            tool: tool.to_owned(),
            message: message.into(),
        }
    }
}

/// The kind ctx gives `err` (internal when it knows none).
fn kind(err: &(dyn std::error::Error + 'static)) -> ErrorKind {
    ctx::kind_of(err).unwrap_or(ErrorKind::Internal)
}

impl From<ctx::CtxError> for ToolError {
    fn from(err: ctx::CtxError) -> Self {
        Self::failed(err.kind(), err.to_string())
    }
}

impl From<ctx::store::StoreError> for ToolError {
    fn from(err: ctx::store::StoreError) -> Self {
        Self::failed(kind(&err), err.to_string())
    }
}

impl From<ctx::code::CodeError> for ToolError {
    fn from(err: ctx::code::CodeError) -> Self {
        Self::failed(kind(&err), err.to_string())
    }
}

impl From<ctx::runs::RunError> for ToolError {
    fn from(err: ctx::runs::RunError) -> Self {
        Self::failed(kind(&err), err.to_string())
    }
}

impl From<McpError> for ToolError {
    fn from(err: McpError) -> Self {
        Self::failed(kind(&err), err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_error_has_the_kind_front_ends_map() {
        let store = ctx::store::StoreError::PackExists {
            name: "docs".to_owned(),
        };
        assert_eq!(ToolError::from(store).kind(), ErrorKind::Conflict);
        assert_eq!(
            ToolError::invalid("fs_read", "no path").kind(),
            ErrorKind::UserInput
        );
        let bug = ToolError::failed(ErrorKind::Internal, "panicked");
        assert_eq!(bug.kind(), ErrorKind::Internal);
        let reworded = bug.reworded(|m| format!("{m}!"));
        assert_eq!(reworded.kind(), ErrorKind::Internal);
        assert_eq!(reworded.to_string(), "panicked!");
    }
}
