//! Error types: connectors, index builds and loads, selection.

use std::path::PathBuf;

use ctx_core::DocumentId;

/// Why a [`DocumentSource`](crate::source::DocumentSource) could not deliver documents.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    #[error("source `{source_name}` refused the credentials: {message}; check its access settings")]
    AuthenticationFailed {
        source_name: String,
        message: String,
    },
    #[error("cannot fetch `{id}`: {message}")]
    FetchFailed { id: String, message: String },
    #[error("`{id}` is not a text document: {reason}")]
    InvalidContent { id: String, reason: String },
    #[error(
        "fetched {fetched} documents but {failed} failed (first: {first}); fix the source or use the skip-and-warn policy"
    )]
    PartialFetch {
        fetched: usize,
        failed: usize,
        first: String,
    },
    #[error("cannot list `{root}`: {message}; name an existing, readable directory")]
    ListFailed { root: String, message: String },
}

/// Why an index could not be built, loaded or read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The caller gave up on the build (a request answered with a timeout); nothing was kept.
    #[error(
        "the index build was stopped: its request was given up (timed out); ask again, or narrow the request"
    )]
    Cancelled,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot serialize {what}: {source}")]
    Serialization {
        what: String,
        source: serde_json::Error,
    },
    #[error("index directory `{0}` already exists; pass --force to rebuild it")]
    OutputExists(PathBuf),
    #[error(
        "documents `{first}` and `{second}` both map to documents/{file}.json; rename one of them"
    )]
    FilenameCollision {
        first: DocumentId,
        second: DocumentId,
        file: String,
    },
    #[error("document id `{0}` appears twice in the source; document ids must be unique")]
    DuplicateDocumentId(DocumentId),
    #[error("no index `{name}` at {path}; build it with `ctx index build --name {name}`")]
    NotFound { name: String, path: PathBuf },
    #[error(
        "index `{name}` is damaged ({problem}); rebuild it with `ctx index build --force{name_flag}`"
    )]
    Corrupt {
        name: String,
        name_flag: String,
        problem: String,
    },
    #[error(
        "index `{name}` was written by a newer ctx (format {found}; this ctx reads up to {known}); upgrade ctx, or rebuild it with `ctx index build --force{name_flag}`"
    )]
    NewerFormat {
        name: String,
        name_flag: String,
        found: u32,
        known: u32,
    },
    #[error(
        "index name `{0}` is invalid; use letters, digits, `.`, `_` and `-`, starting with a letter or digit"
    )]
    InvalidName(String),
    #[error("search database {path}: {source}")]
    Database {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Connector(#[from] ConnectorError),
    #[error(transparent)]
    Document(#[from] ctx_core::DocumentError),
}

impl IndexError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(name: &str, problem: impl Into<String>) -> Self {
        Self::Corrupt {
            name: name.to_owned(),
            name_flag: name_flag(name),
            problem: problem.into(),
        }
    }
}

/// ` --name NAME` unless the name is the default one.
pub(crate) fn name_flag(name: &str) -> String {
    if name == crate::index::DEFAULT_INDEX_NAME {
        String::new()
    } else {
        format!(" --name {name}")
    }
}

/// Why a selection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    #[error("the query is empty; ask a question, e.g. `ctx select \"how are indexes built\"`")]
    EmptyQuery,
    #[error(
        "the query `{0}` has only stop words; name what you are looking for (a file, a symbol, a topic)"
    )]
    OnlyStopWords(String),
    #[error("invalid budget: {0}")]
    InvalidBudget(String),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("token counting failed: {0}")]
    TokenCount(#[source] ctx_core::BoxError),
}
