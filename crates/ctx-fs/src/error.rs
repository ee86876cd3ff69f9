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
    /// The caller gave up ([`crate::walk::WalkOptions::cancel`]); nothing was kept.
    #[error("the walk was stopped: its caller gave up waiting")]
    Cancelled,
}

/// Why a path was refused or could not be opened inside a workspace (see [`crate::sandbox`]).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The workspace root itself cannot be opened.
    #[error("cannot open workspace `{}`: {source}; name an existing directory", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path holds a NUL byte (shown as `\0`).
    #[error("path `{path}` contains a NUL byte; name a path without one")]
    Nul { path: String },
    /// The path is empty.
    #[error("empty path; name a file or directory (`.` is the workspace root)")]
    Empty,
    /// An absolute path outside the root.
    #[error("`{path}` is outside the workspace `{}`; name a path inside it (relative paths are taken from the root)", root.display())]
    AbsoluteOutside { path: String, root: PathBuf },
    /// `..` climbs above the root.
    #[error("`{path}` leaves the workspace through `..`; name a path inside it")]
    DotDotEscapes { path: String },
    /// A symlink on the way (or at the end) points outside the root, or is absolute.
    #[error("`{path}` goes through a symlink that leaves the workspace; refused")]
    SymlinkEscapes { path: String },
    /// Too many symlinks, or a symlink where none may be.
    #[error("`{path}` has a symlink loop or too many symlinks; refused")]
    SymlinkLoop { path: String },
    /// Nothing at the path.
    #[error("`{path}` does not exist in the workspace; name an existing file or directory")]
    NotFound { path: String },
    /// A component before the last is a file.
    #[error("`{path}`: a component on the way is not a directory")]
    NotADirectoryOnTheWay { path: String },
    /// The path (or a component) is longer than the system allows.
    #[error("`{}`: the path is too long", shorten(path))]
    TooLong { path: String },
    /// The operating system refused access.
    #[error("`{path}`: permission denied")]
    PermissionDenied { path: String },
    /// A FIFO, socket or device file.
    #[error("`{path}` is {kind}; only regular files and directories can be read")]
    SpecialFile { path: String, kind: &'static str },
    /// A regular file with several hard links.
    #[error(
        "`{path}` has {links} hard links and may share its contents with a file outside the workspace; refused"
    )]
    HardLink { path: String, links: u64 },
    /// The path was replaced while it was being opened.
    #[error(
        "`{path}` changed while it was being opened (was it swapped for a symlink?); try again"
    )]
    Changed { path: String },
    /// Another I/O error.
    #[error("`{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The broad class of a [`SandboxError`], for mapping to exceptions and status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Nothing at the path.
    NotFound,
    /// Refused by the sandbox or by the operating system.
    PermissionDenied,
    /// The request itself is wrong.
    InvalidInput,
    /// An I/O failure.
    Io,
}

impl ErrorKind {
    /// `"not_found"`, `"permission_denied"`, `"invalid_input"` or `"io"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::PermissionDenied => "permission_denied",
            Self::InvalidInput => "invalid_input",
            Self::Io => "io",
        }
    }
}

impl SandboxError {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::NotFound { .. } | Self::NotADirectoryOnTheWay { .. } | Self::Root { .. } => {
                ErrorKind::NotFound
            }
            Self::Nul { .. } | Self::Empty | Self::TooLong { .. } => ErrorKind::InvalidInput,
            Self::AbsoluteOutside { .. }
            | Self::DotDotEscapes { .. }
            | Self::SymlinkEscapes { .. }
            | Self::SymlinkLoop { .. }
            | Self::PermissionDenied { .. }
            | Self::SpecialFile { .. }
            | Self::HardLink { .. }
            | Self::Changed { .. } => ErrorKind::PermissionDenied,
            Self::Io { .. } => ErrorKind::Io,
        }
    }
}

/// A long path cut to its first and last characters for messages.
fn shorten(path: &str) -> String {
    if path.chars().count() <= 80 {
        return path.to_owned();
    }
    let head: String = path.chars().take(40).collect();
    let tail: String = path
        .chars()
        .rev()
        .take(30)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{head}…{tail}")
}
