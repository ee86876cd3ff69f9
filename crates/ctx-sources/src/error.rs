//! Errors in source URIs and at `pack add` time.

use std::path::{Path, PathBuf};

use crate::source::SCHEMES;

/// Why a source cannot be added.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("`{uri}` has no scheme; write it as file:{uri} (schemes: {SCHEMES})")]
    NoScheme { uri: String },
    #[error("unknown source scheme `{scheme}:` in `{uri}`; use one of: {SCHEMES}")]
    UnknownScheme { uri: String, scheme: String },
    #[error("malformed source `{uri}`: {reason}")]
    Malformed { uri: String, reason: String },
    #[error("`{uri}`: {} does not exist; check the path", path.display())]
    NotFound { uri: String, path: PathBuf },
    #[error("`{uri}`: {} is a symlink loop; point it at a real file", path.display())]
    SymlinkLoop { uri: String, path: PathBuf },
    #[error("`{uri}`: cannot read {}: {message}", path.display())]
    Unreadable {
        uri: String,
        path: PathBuf,
        message: String,
    },
    #[error("`{uri}`: `{path}` is a directory; use md_dir:{path} or glob:{path}/** for its files")]
    IsADirectory { uri: String, path: String },
    #[error("`{uri}` is outside the workspace root {}: {reason}", root.display())]
    OutsideRoot {
        uri: String,
        root: PathBuf,
        reason: String,
    },
    #[error(
        "`{uri}` is a sensitive file (matches `{pattern}`); pass --allow-sensitive to add it anyway"
    )]
    Sensitive { uri: String, pattern: String },
    #[error("`{uri}`: {message}")]
    Git { uri: String, message: String },
}

impl SourceError {
    pub(crate) fn from_io(uri: &str, path: &Path, err: &std::io::Error) -> Self {
        let (uri, path) = (uri.to_owned(), path.to_owned());
        match err.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound { uri, path },
            // ELOOP: too many levels of symbolic links.
            _ if err.raw_os_error() == Some(40) => Self::SymlinkLoop { uri, path },
            _ => Self::Unreadable {
                uri,
                path,
                message: err.to_string(),
            },
        }
    }
}
