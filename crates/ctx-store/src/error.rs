//! The store's error type.

use std::path::PathBuf;

use ctx_core::ContentHash;

/// Everything that can go wrong in the store, each with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{}` is not a ctx store (no state.db); run `ctx init` there or pass another --store", dir.display())]
    NotAStore { dir: PathBuf },
    #[error(
        "`{}` is empty, not a ctx database; if the store is new run `ctx init` again, else restore `.ctx` from a backup and run `ctx store verify`",
        path.display()
    )]
    EmptyDatabase { path: PathBuf },
    #[error(
        "`{}` is not a ctx database ({detail}); point --store at a ctx store, or move the file away and run `ctx init`",
        path.display()
    )]
    ForeignDatabase { path: PathBuf, detail: String },
    #[error(
        "the store at `{}` is read-only: reading works, this command writes; run it where the store is writable",
        path.display()
    )]
    ReadOnly { path: PathBuf },
    #[error(
        "state.db at `{}` has schema version {found} and needs upgrading to {known}, but it is read-only; run any ctx command once where it is writable",
        path.display()
    )]
    ReadOnlyNeedsMigration {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("no store found: no .ctx above `{}`, and neither CTX_HOME nor HOME is set; run `ctx init` or pass --store DIR", cwd.display())]
    NoStoreFound { cwd: PathBuf },
    #[error("object {hash} is corrupt: its bytes hash to {actual} ({}); run `ctx store verify`", path.display())]
    CorruptObject {
        hash: ContentHash,
        actual: ContentHash,
        path: PathBuf,
    },
    #[error("object {hash} is missing from the store; run `ctx store verify`")]
    MissingObject { hash: ContentHash },
    #[error("state.db at `{}`: {source}", path.display())]
    Database {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "state.db at `{}` has schema version {found}, newer than this ctx understands ({known}); upgrade ctx",
        path.display()
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("state.db holds `{value}` in {table}.{column}, which is not a content hash")]
    BadHashInDatabase {
        table: &'static str,
        column: &'static str,
        value: String,
    },
    #[error(
        "a pack named `{name}` already exists; pick another name or `ctx pack delete {name}` first"
    )]
    PackExists { name: String },
    #[error(
        "no pack named `{name}`{}; create it with `ctx pack create {name}`",
        known_list(known)
    )]
    NoSuchPack { name: String, known: Vec<String> },
    #[error("pack `{pack}` already has this source (artifact {artifact_id}); nothing added")]
    ArtifactExists { pack: String, artifact_id: String },
    #[error(
        "pack `{pack}` has no artifact `{artifact_id}`; `ctx pack show {pack}` lists its artifacts"
    )]
    NoSuchArtifact { pack: String, artifact_id: String },
    #[error("{what} id `{prefix}` is ambiguous; it could be any of: {}", candidates.join(", "))]
    AmbiguousId {
        what: &'static str,
        prefix: String,
        candidates: Vec<String>,
    },
    #[error("no snapshot `{id}`; `ctx pack snapshots` lists them")]
    NoSuchSnapshot { id: String },
    #[error("label `{label}` already names snapshot {snapshot}; pick another label")]
    LabelTaken {
        label: String,
        snapshot: ContentHash,
    },
    /// In a store several workspaces share, the label names another workspace's snapshot
    /// (which this workspace may not learn of).
    #[error("label `{label}` is taken in this shared store; pick another label")]
    LabelTakenElsewhere { label: String },
    #[error("{location}: {detail}")]
    Backend {
        /// The backend, without credentials (`postgres://host:port/db`, `s3://bucket/prefix`).
        location: String,
        detail: String,
    },
    #[error("store URL `{url}`: {detail}")]
    BadStoreUrl { url: String, detail: String },
    #[error(
        "store URL `{url}` needs the shared backends, which this build of ctx was compiled without (cargo feature `shared` of ctx-store)"
    )]
    BackendNotCompiled { url: String },
}

impl StoreError {
    /// SQLite found the database damaged (a malformed page, not a database at all).
    pub fn is_corruption(&self) -> bool {
        matches!(self, Self::Database { source, .. } if matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
        ))
    }

    /// SQLite could not read or write the file (permissions, a full disk, a read-only file).
    pub fn is_io_failure(&self) -> bool {
        matches!(self, Self::Database { source, .. } if matches!(
            source.sqlite_error_code(),
            Some(
                rusqlite::ErrorCode::ReadOnly
                    | rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::PermissionDenied
                    | rusqlite::ErrorCode::CannotOpen
            )
        ))
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        " (there are no packs yet)".to_owned()
    } else {
        format!(" (packs: {})", known.join(", "))
    }
}
