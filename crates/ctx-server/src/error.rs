//! Errors of the HTTP tool server.

use std::path::PathBuf;

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The workspaces directory cannot be read.
    #[error("cannot use `{}` as the workspaces directory: {source}; name an existing directory whose subdirectories are the workspaces", path.display())]
    WorkspacesDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The listener failed.
    #[error("HTTP server failed: {0}")]
    Io(#[from] std::io::Error),
}
