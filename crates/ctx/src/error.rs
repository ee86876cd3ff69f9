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
    #[error("{0}")]
    InvalidInput(String),
    #[error("{0}")]
    Corrupt(String),
}
