//! The facade's error type: every library error, plus input checks done here.

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
