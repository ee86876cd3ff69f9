//! The facade's error type: every library error, plus input checks done here, each with a
//! [`kind`](CtxError::kind) front ends map to exit codes, HTTP statuses and exception classes.

use serde::Serialize;

/// Errors from facade operations, each with a message that names the input and the fix.
#[derive(Debug, thiserror::Error)]
pub enum CtxError {
    #[error(transparent)]
    Store(#[from] ctx_store::StoreError),
    #[error(transparent)]
    Source(#[from] ctx_sources::SourceError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Redaction(#[from] ctx_core::redact::RedactionError),
    #[error(transparent)]
    SensitivePattern(#[from] ctx_sources::sensitive::SensitivePatternError),
    #[error(transparent)]
    Code(#[from] ctx_code::CodeError),
    #[error(transparent)]
    Run(#[from] ctx_runs::RunError),
    #[error(transparent)]
    Provenance(#[from] ctx_runs::provenance::ProvenanceError),
    #[error(transparent)]
    Index(#[from] ctx_select::IndexError),
    #[error(transparent)]
    Selection(ctx_select::SelectionError),
    #[error(
        "no index `{name}` in this store (indexes: {}); leave the index name out to use the workspace index `{default}`, built on demand, or build this one with `ctx index build --name {name}`",
        if known.is_empty() { "none yet".to_owned() } else { known.join(", ") }
    )]
    UnknownIndex {
        name: String,
        known: Vec<String>,
        default: String,
    },
    #[error(
        "index `{name}` was built over {built}, not this workspace ({root}); leave the index name out to use the workspace index `{default}`"
    )]
    ForeignIndex {
        name: String,
        built: String,
        root: String,
        default: String,
    },
    #[error("cannot write `{}`: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    InvalidInput(String),
    #[error("{0}")]
    Corrupt(String),
    #[error("cannot write the payload: {source}; check the output's directory and free space")]
    WritePayload {
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` changed while the pack was rendered; render again")]
    ChangedDuringRender { path: String },
    /// The caller gave up on the render (a request answered with a timeout).
    #[error(
        "the render was stopped: its request was given up (timed out); ask again, or narrow the request"
    )]
    Cancelled,
}

/// What kind of failure an error is, for front ends to map (exit code, HTTP status, MCP
/// `isError` detail, Python exception class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The request itself is wrong: fix the input.
    UserInput,
    /// What the request names does not exist.
    NotFound,
    /// It exists already, or is in the way.
    Conflict,
    /// The store or an index is damaged: verify, repair or rebuild it.
    Damaged,
    /// The file system failed (permissions, a full disk, a read-only store).
    Io,
    /// A bug in ctx.
    Internal,
}

impl ErrorKind {
    /// The kind's name, as front ends print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserInput => "user_input",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::Damaged => "damaged",
            Self::Io => "io",
            Self::Internal => "internal",
        }
    }
}

/// A file-engine error's kind: a path the sandbox refuses is the request's fault, so
/// `PermissionDenied` is user input.
impl From<ctx_fs::ErrorKind> for ErrorKind {
    fn from(kind: ctx_fs::ErrorKind) -> Self {
        match kind {
            ctx_fs::ErrorKind::NotFound => Self::NotFound,
            ctx_fs::ErrorKind::PermissionDenied | ctx_fs::ErrorKind::InvalidInput => {
                Self::UserInput
            }
            ctx_fs::ErrorKind::Io => Self::Io,
        }
    }
}

impl ErrorKind {
    /// The kind of a file-engine error as the batch answers name it on the wire (`ctx::fs` reports kinds as words: `not_found`,
    /// `permission_denied`, `invalid_input`, `timeout`, `io`, `internal`; typed kinds convert
    /// with `From`). A path the sandbox refuses is the request's fault, so
    /// `permission_denied` is user input; so is an operation past its time budget (narrow it).
    pub fn of_fs(kind: &str) -> Self {
        match kind {
            "not_found" => Self::NotFound,
            "permission_denied" | "invalid_input" | "timeout" => Self::UserInput,
            "io" => Self::Io,
            _ => Self::Internal,
        }
    }
}

impl CtxError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Store(err) => store_kind(err),
            Self::Code(err) => code_kind(err),
            Self::Run(err) => run_kind(err),
            Self::Provenance(err) => provenance_kind(err),
            Self::Index(err) => index_kind(err),
            Self::Selection(err) => selection_kind(err),
            Self::UnknownIndex { .. } => ErrorKind::NotFound,
            Self::Corrupt(_) => ErrorKind::Damaged,
            Self::Io { source, .. } | Self::WritePayload { source } => io_kind(source),
            Self::ChangedDuringRender { .. } => ErrorKind::Conflict,
            Self::Source(_)
            | Self::Config(_)
            | Self::Redaction(_)
            | Self::SensitivePattern(_)
            | Self::ForeignIndex { .. }
            | Self::InvalidInput(_)
            | Self::Cancelled => ErrorKind::UserInput,
        }
    }
}

/// The kind of the first error in `err`'s chain that ctx knows (the facade's own, or a store,
/// code-intelligence or run-record error met directly); `None` when there is none.
pub fn kind_of(err: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    let mut next = Some(err);
    while let Some(cause) = next {
        if let Some(e) = cause.downcast_ref::<CtxError>() {
            return Some(e.kind());
        }
        if let Some(e) = cause.downcast_ref::<ctx_store::StoreError>() {
            return Some(store_kind(e));
        }
        if let Some(e) = cause.downcast_ref::<ctx_code::CodeError>() {
            return Some(code_kind(e));
        }
        if let Some(e) = cause.downcast_ref::<ctx_runs::RunError>() {
            return Some(run_kind(e));
        }
        if let Some(e) = cause.downcast_ref::<ctx_select::IndexError>() {
            return Some(index_kind(e));
        }
        if let Some(e) = cause.downcast_ref::<ctx_select::SelectionError>() {
            return Some(selection_kind(e));
        }
        if cause.downcast_ref::<crate::config::ConfigError>().is_some()
            || cause.downcast_ref::<ctx_sources::SourceError>().is_some()
        {
            return Some(ErrorKind::UserInput);
        }
        next = cause.source();
    }
    None
}

/// A provenance failure's kind: the store's when the store failed, a bug when randomness
/// did, else the input's (a file, a key, a sidecar the user named).
fn provenance_kind(err: &ctx_runs::provenance::ProvenanceError) -> ErrorKind {
    use ctx_runs::provenance::ProvenanceError as P;
    match err {
        P::Store(err) => store_kind(err),
        P::Random(_) => ErrorKind::Internal,
        _ => ErrorKind::UserInput,
    }
}

/// An I/O error's kind: about what the user named (a path that is not there, a file where a
/// directory was needed), or a failure of the file system.
fn io_kind(err: &std::io::Error) -> ErrorKind {
    match err.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        std::io::ErrorKind::NotADirectory
        | std::io::ErrorKind::IsADirectory
        | std::io::ErrorKind::InvalidInput
        | std::io::ErrorKind::InvalidData => ErrorKind::UserInput,
        _ => ErrorKind::Io,
    }
}

fn code_kind(err: &ctx_code::CodeError) -> ErrorKind {
    use ctx_code::CodeError as C;
    match err {
        C::NotFound { .. } | C::UnknownRevision { .. } => ErrorKind::NotFound,
        C::Io { source, .. } => io_kind(source),
        C::Walk(ctx_fs::WalkError::Cancelled) => ErrorKind::UserInput,
        C::Walk(_) => ErrorKind::Io,
        C::Git(_) => ErrorKind::Internal,
        // The cache's own failure (the store's, behind the facade) keeps its kind.
        C::Cache(cause) => kind_of(cause.as_ref()).unwrap_or(ErrorKind::Internal),
        C::Sandbox(e) => e.kind().into(),
        _ => ErrorKind::UserInput,
    }
}

fn index_kind(err: &ctx_select::IndexError) -> ErrorKind {
    use ctx_select::IndexError as I;
    match err {
        I::NotFound { .. } => ErrorKind::NotFound,
        I::OutputExists(_) | I::FilenameCollision { .. } | I::DuplicateDocumentId(_) => {
            ErrorKind::Conflict
        }
        // A search database SQLite cannot read is a damaged index: rebuild it.
        I::Corrupt { .. } | I::NewerFormat { .. } | I::Database { .. } => ErrorKind::Damaged,
        I::Io { source, .. } => io_kind(source),
        I::Serialization { .. } => ErrorKind::Internal,
        I::InvalidName(_) | I::Connector(_) | I::Document(_) | I::Cancelled => ErrorKind::UserInput,
    }
}

fn selection_kind(err: &ctx_select::SelectionError) -> ErrorKind {
    use ctx_select::SelectionError as S;
    match err {
        S::Index(index) => index_kind(index),
        S::TokenCount(cause) => kind_of(cause.as_ref()).unwrap_or(ErrorKind::Internal),
        _ => ErrorKind::UserInput,
    }
}

fn run_kind(err: &ctx_runs::RunError) -> ErrorKind {
    use ctx_runs::RunError as R;
    match err {
        R::Store(store) => store_kind(store),
        R::NoSuchRun { .. } => ErrorKind::NotFound,
        R::Malformed { .. } | R::BrokenChain { .. } | R::Object { .. } => ErrorKind::Damaged,
        R::Read { source, .. } => io_kind(source),
        _ => ErrorKind::UserInput,
    }
}

fn store_kind(err: &ctx_store::StoreError) -> ErrorKind {
    use ctx_store::StoreError as S;
    match err {
        S::NotAStore { .. }
        | S::NoStoreFound { .. }
        | S::NoSuchPack { .. }
        | S::NoSuchArtifact { .. }
        | S::NoSuchSnapshot { .. }
        | S::MissingObject { .. } => ErrorKind::NotFound,
        S::PackExists { .. }
        | S::ArtifactExists { .. }
        | S::LabelTaken { .. }
        | S::LabelTakenElsewhere { .. } => ErrorKind::Conflict,
        S::AmbiguousId { .. } | S::BadStoreUrl { .. } | S::BackendNotCompiled { .. } => {
            ErrorKind::UserInput
        }
        S::CorruptObject { .. }
        | S::EmptyDatabase { .. }
        | S::ForeignDatabase { .. }
        | S::SchemaTooNew { .. }
        | S::BadHashInDatabase { .. } => ErrorKind::Damaged,
        S::Io { source, .. } => io_kind(source),
        S::ReadOnly { .. } | S::ReadOnlyNeedsMigration { .. } | S::Backend { .. } => ErrorKind::Io,
        S::Database { .. } if err.is_corruption() => ErrorKind::Damaged,
        S::Database { .. } if err.is_io_failure() => ErrorKind::Io,
        S::Database { .. } => ErrorKind::Internal,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_engine_kinds_convert_as_their_wire_names_do() {
        use ctx_fs::ErrorKind as Fs;
        for kind in [Fs::NotFound, Fs::PermissionDenied, Fs::InvalidInput, Fs::Io] {
            assert_eq!(
                ErrorKind::from(kind),
                ErrorKind::of_fs(kind.as_str()),
                "{kind:?}"
            );
        }
    }

    use super::*;

    #[test]
    fn index_and_selection_errors_keep_their_kind() {
        let not_found = CtxError::from(ctx_select::IndexError::NotFound {
            name: "x".to_owned(),
            path: "/i/x".into(),
        });
        assert_eq!(not_found.kind(), ErrorKind::NotFound);
        let damaged = ctx_select::IndexError::Corrupt {
            name: "x".to_owned(),
            name_flag: String::new(),
            problem: "truncated".to_owned(),
        };
        assert_eq!(CtxError::from(damaged).kind(), ErrorKind::Damaged);
        let exists = ctx_select::IndexError::OutputExists("/i/x".into());
        assert_eq!(CtxError::from(exists).kind(), ErrorKind::Conflict);
        // Wrapped in a selection error, the index's kind still shows.
        let wrapped = CtxError::from(ctx_select::SelectionError::Index(
            ctx_select::IndexError::InvalidName("../x".to_owned()),
        ));
        assert!(matches!(wrapped, CtxError::Index(_)));
        assert_eq!(wrapped.kind(), ErrorKind::UserInput);
        let empty = CtxError::from(ctx_select::SelectionError::EmptyQuery);
        assert_eq!(empty.kind(), ErrorKind::UserInput);
        assert_eq!(
            kind_of(&ctx_select::SelectionError::TokenCount("x".into())),
            Some(ErrorKind::Internal)
        );
    }
}
