//! Errors of the file-system crate.

use std::path::PathBuf;

/// Why a walk could not start. Problems with single entries do not stop a walk; they are
/// reported in [`crate::walk::WalkOutcome::errors`].
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// The root does not exist or cannot be read.
    #[error("cannot walk `{}`: {source}; name an existing file or directory", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A glob does not parse.
    #[error("invalid glob `{pattern}`: {source}")]
    Glob {
        pattern: String,
        #[source]
        source: globset::Error,
    },
}
