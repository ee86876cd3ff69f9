//! Choosing backends: the embedded default, or shared ones named by URL.
//!
//! `[store] metadata = "postgres://…"` and `objects = "s3://bucket/prefix"` (or `--store-url`)
//! name shared backends; the local `.ctx` directory still keeps the config, `tmp/` staging,
//! the index caches and the read cache. Without them a store is `state.db` and `objects/`.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use ctx_core::ContentHash;

use crate::objects::{ObjectEntry, Objects, StagedObject};
use crate::{LocalObjects, Metadata, SqliteMetadata, Store, StoreError};

/// Where a store's metadata and objects live.
#[derive(Debug, Clone, Default)]
pub struct Backends {
    /// `postgres://user:password@host:port/db[?schema=NAME]`; `None`: `state.db`.
    pub metadata: Option<String>,
    /// `s3://bucket/prefix[?endpoint=URL]` or a local directory (`file:///path` or a path);
    /// `None`: the store's own `objects/`.
    pub objects: Option<String>,
    /// How to reach S3 (credentials, region, endpoint), filled by the caller.
    pub s3: S3Settings,
}

impl Backends {
    /// Whether both are the embedded default.
    pub fn is_embedded(&self) -> bool {
        self.metadata.is_none() && self.objects.is_none()
    }

    /// Takes a `--store-url`: a `postgres://` URL names the metadata, any other the objects.
    pub fn set_url(&mut self, url: &str) {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            self.metadata = Some(url.to_owned());
        } else {
            self.objects = Some(url.to_owned());
        }
    }
}

/// Backends every store this process opens uses, over what the store's own `config.toml`
/// says (a front end's `--store-url`, and the S3 settings it read from its environment).
static PROCESS_BACKENDS: RwLock<Option<Backends>> = RwLock::new(None);

/// Backends already opened by this process, by URL: one connection pool per database, one
/// S3 client per bucket and local directory, however often stores are opened.
type OpenedMetadata = Mutex<HashMap<String, Arc<dyn Metadata>>>;
type OpenedObjects = Mutex<HashMap<(String, PathBuf), Arc<dyn Objects>>>;
static OPENED_METADATA: std::sync::LazyLock<OpenedMetadata> =
    std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));
static OPENED_OBJECTS: std::sync::LazyLock<OpenedObjects> =
    std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));

/// Sets the backends (and S3 settings) every store opened from now on uses, whatever its
/// `config.toml` says: `metadata`/`objects` that are `Some` win; `s3` always applies. A front
/// end calls this once at start-up with its flags and environment (this crate reads none).
pub fn set_process_backends(backends: Backends) {
    *PROCESS_BACKENDS
        .write()
        .unwrap_or_else(PoisonError::into_inner) = Some(backends);
}

/// The backends of the store in `dir`: its `config.toml`'s `[store]` table (`metadata`,
/// `objects`), overridden by [`set_process_backends`].
pub fn configured_backends(dir: &Path) -> Result<Backends, StoreError> {
    let mut backends = read_store_table(&dir.join(crate::CONFIG_FILE))?;
    if let Some(process) = PROCESS_BACKENDS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        if process.metadata.is_some() {
            backends.metadata.clone_from(&process.metadata);
        }
        if process.objects.is_some() {
            backends.objects.clone_from(&process.objects);
        }
        backends.s3 = process.s3.clone();
    }
    Ok(backends)
}

/// Whether `dir` holds a store: its `state.db`, or a `config.toml` naming shared backends.
pub fn is_store_dir(dir: &Path) -> bool {
    dir.join(crate::DATABASE_FILE).is_file()
        || read_store_table(&dir.join(crate::CONFIG_FILE)).is_ok_and(|b| !b.is_embedded())
}

/// `[store] metadata = "…"` and `objects = "…"` from a config file (empty strings: default).
fn read_store_table(path: &Path) -> Result<Backends, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Backends::default()),
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e| StoreError::BadStoreUrl {
        url: path.display().to_string(),
        detail: format!("invalid TOML: {e}"),
    })?;
    let get = |key: &str| {
        doc.get("store")
            .and_then(|t| t.get(key))
            .and_then(toml_edit::Item::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    Ok(Backends {
        metadata: get("metadata"),
        objects: get("objects"),
        s3: S3Settings::default(),
    })
}

impl Store {
    /// Opens the store whose local directory is `dir` with the given backends (for embedded
    /// ones exactly [`Store::open`]); creates the local directory's layout when `create`.
    /// Every call connects anew (a new pool, a new S3 client), as another host would.
    pub fn open_with(dir: &Path, backends: &Backends, create: bool) -> Result<Self, StoreError> {
        Self::open_backends(dir, backends, create, false)
    }

    /// [`Store::open_with`], reusing this process's pool and client for a backend opened
    /// before when `reuse`.
    pub(crate) fn open_backends(
        dir: &Path,
        backends: &Backends,
        create: bool,
        reuse: bool,
    ) -> Result<Self, StoreError> {
        if backends.is_embedded() {
            return if create {
                Self::init_embedded(dir).map(|(store, _)| store)
            } else {
                Self::open_embedded(dir)
            };
        }
        if create {
            crate::create_dir_all(dir)?;
        }
        if !dir.is_dir() {
            return Err(StoreError::NotAStore {
                dir: dir.to_owned(),
            });
        }
        for sub in ["tmp", "indexes"] {
            crate::create_dir_all(&dir.join(sub))?;
        }
        let metadata: Arc<dyn Metadata> = match backends.metadata.as_deref() {
            None => Arc::new(SqliteMetadata::open(&dir.join(crate::DATABASE_FILE))?),
            Some(url) => {
                let mut opened = OPENED_METADATA
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if let Some(metadata) = opened.get(url).filter(|_| reuse) {
                    metadata.clone()
                } else {
                    let metadata = open_metadata_url(url)?;
                    if reuse {
                        opened.insert(url.to_owned(), metadata.clone());
                    }
                    metadata
                }
            }
        };
        let objects: Arc<dyn Objects> = match backends.objects.as_deref() {
            None => {
                crate::create_dir_all(&dir.join("objects/sha256"))?;
                Arc::new(LocalObjects::new(
                    dir.join("objects/sha256"),
                    dir.join("tmp"),
                ))
            }
            Some(url) => {
                let key = (url.to_owned(), dir.to_owned());
                let mut opened = OPENED_OBJECTS
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if let Some(objects) = opened.get(&key).filter(|_| reuse) {
                    objects.clone()
                } else {
                    let objects = open_objects_url(url, &backends.s3, dir)?;
                    if reuse {
                        opened.insert(key, objects.clone());
                    }
                    objects
                }
            }
        };
        Self::from_parts(dir, metadata, objects)
    }
}

#[cfg(feature = "shared")]
fn open_metadata_url(url: &str) -> Result<Arc<dyn Metadata>, StoreError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(crate::PostgresMetadata::open(url)?));
    }
    Err(StoreError::BadStoreUrl {
        url: crate::postgres::redact_url(url),
        detail: "metadata URLs start with postgres://".to_owned(),
    })
}

#[cfg(not(feature = "shared"))]
fn open_metadata_url(url: &str) -> Result<Arc<dyn Metadata>, StoreError> {
    Err(StoreError::BackendNotCompiled {
        url: url.split('@').next_back().unwrap_or(url).to_owned(),
    })
}

fn open_objects_url(
    url: &str,
    settings: &S3Settings,
    dir: &Path,
) -> Result<Arc<dyn Objects>, StoreError> {
    if url.starts_with("s3://") {
        return open_s3(url, settings, dir);
    }
    let path = PathBuf::from(url.strip_prefix("file://").unwrap_or(url));
    if url.contains("://") && !url.starts_with("file://") || !path.is_absolute() {
        return Err(StoreError::BadStoreUrl {
            url: url.to_owned(),
            detail: "objects go to s3://BUCKET/PREFIX or an absolute directory (file:///DIR)"
                .to_owned(),
        });
    }
    let root = path.join("sha256");
    crate::create_dir_all(&root)?;
    Ok(Arc::new(LocalObjects::new(root, dir.join("tmp"))))
}

#[cfg(feature = "shared")]
fn open_s3(url: &str, settings: &S3Settings, dir: &Path) -> Result<Arc<dyn Objects>, StoreError> {
    let cache = dir.join("cache/objects");
    crate::create_dir_all(&cache)?;
    Ok(Arc::new(crate::S3Objects::open(
        url,
        settings,
        dir.join("tmp"),
        Some(cache),
    )?))
}

#[cfg(not(feature = "shared"))]
fn open_s3(url: &str, _: &S3Settings, _: &Path) -> Result<Arc<dyn Objects>, StoreError> {
    Err(StoreError::BackendNotCompiled {
        url: url.to_owned(),
    })
}

/// How to reach an S3-compatible service; the caller fills it (from `AWS_*` variables, say):
/// this crate reads no environment.
#[derive(Debug, Clone, Default)]
pub struct S3Settings {
    /// `http(s)://host:port` of a service other than AWS (MinIO, moto, s3s, R2, …).
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
}

impl S3Settings {
    /// Settings from the usual variables, looked up with `get`: `AWS_ENDPOINT_URL` (or
    /// `AWS_ENDPOINT`), `AWS_REGION` (or `AWS_DEFAULT_REGION`), `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let first = |names: &[&str]| names.iter().find_map(|n| get(n).filter(|v| !v.is_empty()));
        Self {
            endpoint: first(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]),
            region: first(&["AWS_REGION", "AWS_DEFAULT_REGION"]),
            access_key_id: first(&["AWS_ACCESS_KEY_ID"]),
            secret_access_key: first(&["AWS_SECRET_ACCESS_KEY"]),
            session_token: first(&["AWS_SESSION_TOKEN"]),
        }
    }
}

/// Objects whose writers first drop the object's gc mark (see [`Metadata::gc_unmark`]), for
/// metadata that keeps gc's grace period in the database.
pub(crate) struct UnmarkingObjects {
    pub(crate) inner: Arc<dyn Objects>,
    pub(crate) metadata: Arc<dyn Metadata>,
}

impl Objects for UnmarkingObjects {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn contains(&self, hash: &ContentHash) -> Result<bool, StoreError> {
        self.inner.contains(hash)
    }

    fn put(&self, bytes: &[u8]) -> Result<ContentHash, StoreError> {
        self.metadata.gc_unmark(&[ContentHash::of(bytes)])?;
        self.inner.put(bytes)
    }

    fn stage(&self, reader: &mut dyn Read) -> Result<StagedObject, StoreError> {
        self.inner.stage(reader)
    }

    fn commit(&self, staged: StagedObject) -> Result<ContentHash, StoreError> {
        self.metadata.gc_unmark(&[staged.hash()])?;
        self.inner.commit(staged)
    }

    fn get(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError> {
        self.inner.get(hash)
    }

    fn list(&self) -> Result<Vec<ObjectEntry>, StoreError> {
        self.inner.list()
    }

    fn remove(&self, hash: &ContentHash) -> Result<(), StoreError> {
        self.inner.remove(hash)
    }

    fn remove_stray(&self, location: &Path) -> Result<(), StoreError> {
        self.inner.remove_stray(location)
    }

    fn local_root(&self) -> Option<&Path> {
        self.inner.local_root()
    }
}
