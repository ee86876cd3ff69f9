//! Errors of the code-intelligence crate. Each message names the bad input and what to do.

use std::path::PathBuf;

/// Why a code-intelligence operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error(transparent)]
    Walk(#[from] ctx_fs::WalkError),
    #[error("`{}` does not exist; name an existing file or directory", path.display())]
    NotFound { path: PathBuf },
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is a binary file; name a source file", path.display())]
    Binary { path: PathBuf },
    #[error("`{}` is not in a supported language (rust, python, javascript, typescript, tsx, go, java, c, cpp)", path.display())]
    Unsupported { path: PathBuf },
    #[error("`{}` is a directory; name a file", path.display())]
    IsDirectory { path: PathBuf },
    #[error("invalid regex: {message}")]
    Regex { message: String },
    #[error("`{}` is not inside a git repository; run `git init` or name a directory inside one", path.display())]
    NotARepository { path: PathBuf },
    #[error("unknown revision `{rev}`: {message}; name a commit, branch or tag (see `git log`)")]
    UnknownRevision { rev: String, message: String },
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("summary cache: {0}")]
    Cache(#[source] ctx_core::BoxError),
    /// A path the workspace's sandbox refuses (outside it, through a link out, a FIFO).
    #[error(transparent)]
    Sandbox(#[from] ctx_fs::SandboxError),
}
