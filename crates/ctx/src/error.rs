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
    #[error("{0}")]
    InvalidInput(String),
    #[error("{0}")]
    Corrupt(String),
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

impl CtxError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Store(err) => store_kind(err),
            Self::Code(err) => {
                use ctx_code::CodeError as C;
                match err {
                    C::NotFound { .. } | C::UnknownRevision { .. } => ErrorKind::NotFound,
                    C::Io { .. } | C::Walk(_) => ErrorKind::Io,
                    C::Git(_) | C::Cache(_) => ErrorKind::Internal,
                    _ => ErrorKind::UserInput,
                }
            }
            Self::Run(err) => {
                use ctx_runs::RunError as R;
                match err {
                    R::Store(store) => store_kind(store),
                    R::NoSuchRun { .. } => ErrorKind::NotFound,
                    R::Malformed { .. } | R::BrokenChain { .. } | R::Object { .. } => {
                        ErrorKind::Damaged
                    }
                    R::Read { .. } => ErrorKind::Io,
                    _ => ErrorKind::UserInput,
                }
            }
            Self::UnknownIndex { .. } => ErrorKind::NotFound,
            Self::Corrupt(_) => ErrorKind::Damaged,
            Self::Source(_)
            | Self::Config(_)
            | Self::Redaction(_)
            | Self::SensitivePattern(_)
            | Self::ForeignIndex { .. }
            | Self::InvalidInput(_) => ErrorKind::UserInput,
        }
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
        S::PackExists { .. } | S::ArtifactExists { .. } | S::LabelTaken { .. } => {
            ErrorKind::Conflict
        }
        S::AmbiguousId { .. } => ErrorKind::UserInput,
        S::CorruptObject { .. }
        | S::EmptyDatabase { .. }
        | S::ForeignDatabase { .. }
        | S::SchemaTooNew { .. }
        | S::BadHashInDatabase { .. } => ErrorKind::Damaged,
        S::Io { .. } | S::ReadOnly { .. } | S::ReadOnlyNeedsMigration { .. } => ErrorKind::Io,
        S::Database { .. } => ErrorKind::Internal,
    }
}
