//! The `.ctx` store: where ctx keeps everything it must remember.
//!
//! ```text
//! .ctx/
//!   config.toml               project settings (read by the `ctx` facade; this crate reads
//!                             only its `[store]` table: which backends the store uses)
//!   state.db                  SQLite: WAL, foreign keys, STRICT tables, versioned migrations
//!   objects/sha256/ab/cdef…   content-addressed blobs: tmp + fsync + rename; hash checked on read
//!   indexes/<name>/           document caches (seed 003)
//!   tmp/                      staging for atomic writes; stale files removed by gc
//!   cache/objects/            read cache of a shared (S3) object store, checked by hash
//! ```
//!
//! [`discover`] finds the store for a working directory (like git finds `.git`), [`Store`]
//! opens it. Storage sits behind two traits: [`Objects`] reads and writes blobs (embedded
//! default: [`LocalObjects`], the `objects/` directory) and [`Metadata`] holds every typed
//! repository: packs, snapshots, refs, runs, the token, summary and render caches, file stamps
//! (embedded default: [`SqliteMetadata`], `state.db`). This crate owns the whole schema: no
//! other crate runs SQL. With the `shared` feature, `PostgresMetadata` and `S3Objects` let
//! many hosts share one store ([`Backends`] names them by URL). [`Store::verify`] /
//! [`Store::gc`] check and clean any backend, [`Store::copy_into`] moves a store between
//! backends. The crate never reads the environment: callers pass `CTX_HOME`, `HOME` and the
//! S3 settings in.

mod backends;
mod copy;
mod db;
mod discover;
mod error;
mod maintenance;
mod metadata;
mod objects;
mod packs;
#[cfg(feature = "shared")]
mod postgres;
mod render_cache;
mod runs;
#[cfg(feature = "shared")]
mod s3;
mod scoped;
mod summary_cache;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use backends::{Backends, S3Settings, configured_backends, is_store_dir, set_process_backends};
pub use copy::CopyReport;
pub use db::{MIGRATIONS, Migration, OBJECT_REFERENCES, RefEntry, SqliteMetadata};
pub use discover::{DiscoverRequest, StoreKind, StoreLocation, discover};
pub use error::StoreError;
pub use maintenance::{GcOptions, GcReport, Problem, VerifyReport};
pub use metadata::{Metadata, ObjectReference};
pub use objects::{LocalObjects, ObjectEntry, Objects, StagedObject};
pub use packs::{
    ArtifactRecord, NewArtifact, NewPack, PackRecord, SnapshotItemRecord, SnapshotRecord,
};
#[cfg(feature = "shared")]
pub use postgres::{PG_MIGRATIONS, PostgresMetadata};
pub use render_cache::{RENDER_PAYLOADS_KEPT, RenderFileRow, RenderPayloadRow};
pub use runs::RunRow;
#[cfg(feature = "shared")]
pub use s3::{MULTIPART_THRESHOLD, S3Objects};
pub use scoped::ScopedMetadata;
pub use summary_cache::{FileStampRow, StampedKey, SummaryKey};

/// Name of the store directory inside a project.
pub const STORE_DIR_NAME: &str = ".ctx";
/// Name of the SQLite database inside a store.
pub const DATABASE_FILE: &str = "state.db";
/// Name of the project config file inside a store.
pub const CONFIG_FILE: &str = "config.toml";

/// An open store: its objects and its metadata, each behind its trait.
///
/// `dir` is always a local `.ctx` directory (config, `tmp/` staging, index caches), even when
/// the objects and the metadata are shared elsewhere. Cloning is cheap and shares the backends.
#[derive(Clone)]
pub struct Store {
    dir: PathBuf,
    objects: Arc<dyn Objects>,
    db: Arc<dyn Metadata>,
    /// The same database as `db` when it is the embedded SQLite one.
    sqlite: Option<Arc<SqliteMetadata>>,
    /// The workspace root this handle acts for, when the store is shared ([`Store::scoped`]).
    scope: Option<String>,
}

impl Store {
    /// Creates the store layout in `dir` (which may already exist) and opens it, with the
    /// backends its `config.toml` names (see [`configured_backends`]).
    ///
    /// Returns the store and whether anything had to be created.
    pub fn init(dir: &Path) -> Result<(Self, bool), StoreError> {
        let backends = configured_backends(dir)?;
        if backends.is_embedded() {
            return Self::init_embedded(dir);
        }
        let existed = dir.join(CONFIG_FILE).is_file() || dir.join("tmp").is_dir();
        create_dir_all(dir)?;
        write_gitignore(dir)?;
        Ok((Self::open_backends(dir, &backends, true, true)?, !existed))
    }

    fn init_embedded(dir: &Path) -> Result<(Self, bool), StoreError> {
        create_dir_all(dir)?;
        // Two processes may make the same store at once (two hooks on a new machine): the
        // database is made under a lock, and an open that finds it still empty waits for it.
        let _lock = init_lock(dir, true)?;
        let existed = dir.join(DATABASE_FILE).is_file();
        for sub in ["objects/sha256", "tmp", "indexes"] {
            create_dir_all(&dir.join(sub))?;
        }
        write_gitignore(dir)?;
        Ok((Self::open_unchecked(dir)?, !existed))
    }

    /// Opens an existing store, with the backends its `config.toml` names (see
    /// [`configured_backends`]), applying any pending migrations.
    ///
    /// An empty `state.db` is refused: SQLite would take it for a new database, and the
    /// store would then look empty (every object unreferenced, so `gc` would remove them).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let backends = configured_backends(dir)?;
        if !backends.is_embedded() {
            return Self::open_backends(dir, &backends, false, true);
        }
        Self::open_embedded(dir)
    }

    fn open_embedded(dir: &Path) -> Result<Self, StoreError> {
        let db_path = dir.join(DATABASE_FILE);
        let mut meta = fs::metadata(&db_path);
        if meta.as_ref().is_ok_and(|m| m.is_file() && m.len() == 0) {
            // Maybe being made by `init` in another process: once its lock is free, look again.
            drop(init_lock(dir, false)?);
            meta = fs::metadata(&db_path);
        }
        match meta {
            Ok(meta) if meta.is_file() && meta.len() == 0 => {
                return Err(StoreError::EmptyDatabase { path: db_path });
            }
            Ok(meta) if meta.is_file() => {}
            _ => {
                return Err(StoreError::NotAStore {
                    dir: dir.to_owned(),
                });
            }
        }
        Self::open_unchecked(dir)
    }

    fn open_unchecked(dir: &Path) -> Result<Self, StoreError> {
        let objects = LocalObjects::new(dir.join("objects/sha256"), dir.join("tmp"));
        let sqlite = Arc::new(SqliteMetadata::open(&dir.join(DATABASE_FILE))?);
        Ok(Self {
            dir: dir.to_owned(),
            objects: Arc::new(objects),
            db: sqlite.clone(),
            sqlite: Some(sqlite),
            scope: None,
        })
    }

    /// A store over backends opened elsewhere; `dir` is the local `.ctx` directory that keeps
    /// the config, `tmp/` and the index caches (created if missing).
    pub fn from_parts(
        dir: &Path,
        metadata: Arc<dyn Metadata>,
        objects: Arc<dyn Objects>,
    ) -> Result<Self, StoreError> {
        for sub in ["tmp", "indexes"] {
            create_dir_all(&dir.join(sub))?;
        }
        let objects: Arc<dyn Objects> = if metadata.gc_marks_in_database() {
            Arc::new(backends::UnmarkingObjects {
                inner: objects,
                metadata: metadata.clone(),
            })
        } else {
            objects
        };
        Ok(Self {
            dir: dir.to_owned(),
            objects,
            db: metadata,
            sqlite: None,
            scope: None,
        })
    }

    /// The store directory (the `.ctx` directory itself).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The blob store.
    pub fn objects(&self) -> &dyn Objects {
        &*self.objects
    }

    /// The blob store, shared (to hand to another store or thread).
    pub fn objects_arc(&self) -> Arc<dyn Objects> {
        self.objects.clone()
    }

    /// The metadata: every repository the store keeps.
    pub fn db(&self) -> &dyn Metadata {
        &*self.db
    }

    /// The metadata, shared (to hand to another store or thread).
    pub fn db_arc(&self) -> Arc<dyn Metadata> {
        self.db.clone()
    }

    /// The embedded SQLite database, when the metadata is kept there (tests and local-only
    /// tooling; everything else goes through [`Store::db`]).
    pub fn sqlite(&self) -> Option<&SqliteMetadata> {
        self.sqlite.as_deref()
    }

    /// This store as the workspace rooted at `root` sees it ([`ScopedMetadata`]): its packs,
    /// snapshots and runs only, and what it makes stamped with `root`. For a store that
    /// several workspaces share (the global store, `ctx serve`'s); a project's own store
    /// needs no scope. A root that is not UTF-8 leaves the store as it is.
    #[must_use]
    pub fn scoped(self, root: &Path) -> Self {
        let Some(root) = root.to_str() else {
            return self;
        };
        Self {
            db: Arc::new(ScopedMetadata::new(self.db, root.to_owned())),
            scope: Some(root.to_owned()),
            ..self
        }
    }

    /// The workspace root this handle acts for ([`Store::scoped`]), if any.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether something made in `root` belongs to this handle's workspace: always without a
    /// scope; otherwise when `root` is unknown (made before roots were kept) or one of the
    /// two directories lies in the other ([`scoped::belongs`]).
    pub fn sees(&self, root: Option<&str>) -> bool {
        match (&self.scope, root) {
            (Some(scope), Some(root)) => scoped::belongs(root, scope),
            _ => true,
        }
    }
}

pub(crate) fn create_dir_all(dir: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(dir).map_err(|source| StoreError::Io {
        path: dir.to_owned(),
        source,
    })
}

/// The lock `init` holds while it makes a store's database (exclusive), and an open waits on
/// (shared) when it finds the database empty. `None` where it cannot be made (a read-only
/// store: nothing can be initialised there either).
fn init_lock(dir: &Path, exclusive: bool) -> Result<Option<fs::File>, StoreError> {
    let path = dir.join(INIT_LOCK_FILE);
    let file = match fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(_) if !exclusive => return Ok(None),
        Err(source) => return Err(StoreError::Io { path, source }),
    };
    let locked = if exclusive {
        file.lock()
    } else {
        file.lock_shared()
    };
    locked.map_err(|source| StoreError::Io { path, source })?;
    Ok(Some(file))
}

/// The file [`init_lock`] locks, in the store directory.
const INIT_LOCK_FILE: &str = "init.lock";

fn write_gitignore(dir: &Path) -> Result<(), StoreError> {
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        // Keep the store out of version control, except the shareable project settings.
        write_file(
            &ignore,
            b"# Written by ctx init: the store is local state.\n*\n!config.toml\n!.gitignore\n",
        )?;
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    fs::write(path, bytes).map_err(|source| StoreError::Io {
        path: path.to_owned(),
        source,
    })
}
