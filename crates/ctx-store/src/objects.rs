//! The content-addressed object store: the [`Objects`] trait and its embedded default,
//! [`LocalObjects`], a directory.
//!
//! An object lives at `objects/sha256/<first 2 hex>/<remaining 62 hex>`. Writes go to a
//! temporary file in the store's `tmp/`, are fsynced, made read-only and renamed into place,
//! and the shard directory is fsynced: a crash leaves either the whole object or none of it
//! (a stray temporary file at worst, which `gc` removes). Two writers of the same object both
//! rename complete, identical files, so concurrent writes are safe. Every read re-hashes.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ctx_core::{ContentHash, ContentHasher};
use tempfile::NamedTempFile;

use crate::StoreError;

/// Blobs addressed by the SHA-256 of their bytes, wherever they are kept.
///
/// Every implementation checks the hash on read ([`Objects::get`] never returns bytes that do
/// not hash to the name asked for), publishes atomically (an object is visible whole or not at
/// all), and lets any number of writers store the same object at once without clobbering.
/// Staging always goes through a local temporary file (in the store's `tmp/`), so a caller
/// can hash a stream before deciding to publish it.
pub trait Objects: Send + Sync {
    /// Where the objects are, for messages (a directory, or `s3://bucket/prefix`).
    fn location(&self) -> String;

    /// Whether the object exists (not whether it is intact: see [`Objects::get`]).
    fn contains(&self, hash: &ContentHash) -> Result<bool, StoreError>;

    /// Stores `bytes`, returning their hash. Storing an existing object is cheap and safe.
    fn put(&self, bytes: &[u8]) -> Result<ContentHash, StoreError>;

    /// Streams `reader` into the store, hashing as it goes; returns the hash and length.
    fn put_reader(&self, reader: &mut dyn Read) -> Result<(ContentHash, u64), StoreError> {
        let staged = self.stage(reader)?;
        let (hash, len) = (staged.hash(), staged.len());
        self.commit(staged)?;
        Ok((hash, len))
    }

    /// Writes `reader` to a local temporary file without publishing it.
    fn stage(&self, reader: &mut dyn Read) -> Result<StagedObject, StoreError>;

    /// Publishes a staged object (a no-op beyond dropping the temporary file when it exists).
    fn commit(&self, staged: StagedObject) -> Result<ContentHash, StoreError>;

    /// Reads an object, checking that its bytes still hash to its name.
    fn get(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError>;

    /// Every object, sorted by location; names that are not hashes have `hash: None`.
    fn list(&self) -> Result<Vec<ObjectEntry>, StoreError>;

    /// Deletes an object (gc only); deleting a missing object is not an error.
    fn remove(&self, hash: &ContentHash) -> Result<(), StoreError>;

    /// Deletes an entry [`Objects::list`] returned without a hash (a stray file or key).
    fn remove_stray(&self, location: &Path) -> Result<(), StoreError>;

    /// The local directory the objects live in, for a local store; `None` for a remote one.
    /// Only local-only tooling (tests, benchmarks) may use paths inside it.
    fn local_root(&self) -> Option<&Path> {
        None
    }
}

/// One entry of an object listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry {
    /// The object's hash; `None` for an entry whose name is not a hash (a stray file).
    pub hash: Option<ContentHash>,
    /// The file path (local) or the key URL (`s3://…`), for messages.
    pub location: PathBuf,
    /// Its length in bytes.
    pub len: u64,
    /// When it was last written (or, locally, re-stored), by the clock of whatever keeps it.
    pub modified: Option<SystemTime>,
}

/// A local-directory object store: the embedded default.
#[derive(Debug, Clone)]
pub struct LocalObjects {
    root: PathBuf,
    tmp: PathBuf,
}

/// An object written to a local temporary file but not yet visible in the store.
///
/// Dropping it without [`StagedObject::commit`] deletes the temporary file; a process killed
/// before committing leaves only a temporary file, never a partial object.
pub struct StagedObject {
    pub(crate) file: NamedTempFile,
    pub(crate) hash: ContentHash,
    pub(crate) len: u64,
}

impl LocalObjects {
    /// An object store rooted at `root` (`…/objects/sha256`) staging through `tmp`.
    pub fn new(root: PathBuf, tmp: PathBuf) -> Self {
        Self { root, tmp }
    }

    /// The directory holding the shard directories.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the object with `hash` lives (whether or not it exists). Local stores only.
    pub fn path_of(&self, hash: &ContentHash) -> PathBuf {
        let hex = hash.to_hex();
        self.root.join(&hex[..2]).join(&hex[2..])
    }

    /// The length of an existing object file, refreshing its mtime so that a concurrent `gc`
    /// keeps an object that was just written again; `None` if it does not exist.
    fn existing_intact_len(&self, hash: &ContentHash) -> Option<u64> {
        let path = self.path_of(hash);
        let file = File::open(&path).ok()?;
        let len = file.metadata().ok()?.len();
        // The mtime is store housekeeping (gc's grace period), never hashed content.
        let _ = file.set_modified(SystemTime::now());
        Some(len)
    }

    /// Publishes a staged file: fsync, read-only, rename into its shard, fsync the shard.
    fn publish(&self, staged: StagedObject) -> Result<ContentHash, StoreError> {
        let StagedObject { file, hash, .. } = staged;
        let tmp_path = file.path().to_owned();
        let io_err = |path: &Path| {
            let path = path.to_owned();
            move |source| StoreError::Io { path, source }
        };
        file.as_file().sync_all().map_err(io_err(&tmp_path))?;
        let mut perms = file
            .as_file()
            .metadata()
            .map_err(io_err(&tmp_path))?
            .permissions();
        perms.set_readonly(true);
        fs::set_permissions(&tmp_path, perms).map_err(io_err(&tmp_path))?;
        let dest = self.path_of(&hash);
        let shard = dest.parent().expect("object paths have a shard directory");
        fs::create_dir_all(shard).map_err(io_err(shard))?;
        file.persist(&dest).map_err(|err| StoreError::Io {
            path: dest.clone(),
            source: err.error,
        })?;
        sync_dir(shard).map_err(io_err(shard))?;
        Ok(hash)
    }
}

impl Objects for LocalObjects {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn contains(&self, hash: &ContentHash) -> Result<bool, StoreError> {
        Ok(self.path_of(hash).is_file())
    }

    fn put(&self, bytes: &[u8]) -> Result<ContentHash, StoreError> {
        let hash = ContentHash::of(bytes);
        if self.existing_intact_len(&hash) == Some(bytes.len() as u64) {
            return Ok(hash);
        }
        let mut file = temp_file(&self.tmp)?;
        let tmp_path = file.path().to_owned();
        file.write_all(bytes).map_err(|source| StoreError::Io {
            path: tmp_path,
            source,
        })?;
        self.publish(StagedObject {
            file,
            hash,
            len: bytes.len() as u64,
        })
    }

    fn stage(&self, reader: &mut dyn Read) -> Result<StagedObject, StoreError> {
        stage_in(&self.tmp, reader)
    }

    fn commit(&self, staged: StagedObject) -> Result<ContentHash, StoreError> {
        if self.existing_intact_len(&staged.hash) == Some(staged.len) {
            return Ok(staged.hash);
        }
        self.publish(staged)
    }

    fn get(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(hash);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::MissingObject { hash: *hash });
            }
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        check_hash(hash, bytes, &path)
    }

    fn list(&self) -> Result<Vec<ObjectEntry>, StoreError> {
        let mut out = Vec::new();
        let entry = |hash: Option<ContentHash>, path: PathBuf| {
            let meta = fs::symlink_metadata(&path).ok();
            ObjectEntry {
                hash,
                len: meta.as_ref().map_or(0, fs::Metadata::len),
                modified: meta.and_then(|m| m.modified().ok()),
                location: path,
            }
        };
        for shard in read_dir_sorted(&self.root)? {
            if !shard.is_dir() {
                out.push(entry(None, shard));
                continue;
            }
            let prefix = shard
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            for path in read_dir_sorted(&shard)? {
                let rest = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                let hash = ContentHash::from_hex(&format!("{prefix}{rest}")).ok();
                out.push(entry(hash, path));
            }
        }
        Ok(out)
    }

    fn remove(&self, hash: &ContentHash) -> Result<(), StoreError> {
        let path = self.path_of(hash);
        match fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => {
                Err(StoreError::Io { path, source: err })
            }
            _ => Ok(()),
        }
    }

    fn remove_stray(&self, location: &Path) -> Result<(), StoreError> {
        if !location.starts_with(&self.root) {
            return Ok(());
        }
        let meta = fs::symlink_metadata(location);
        let removed = match meta {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(location),
            Ok(_) => fs::remove_file(location),
            Err(_) => return Ok(()),
        };
        removed.map_err(|source| StoreError::Io {
            path: location.to_owned(),
            source,
        })
    }

    fn local_root(&self) -> Option<&Path> {
        Some(&self.root)
    }
}

/// Checks that `bytes` hash to `hash`: the bytes, or [`StoreError::CorruptObject`].
pub(crate) fn check_hash(
    hash: &ContentHash,
    bytes: Vec<u8>,
    location: &Path,
) -> Result<Vec<u8>, StoreError> {
    let actual = ContentHash::of(&bytes);
    if actual != *hash {
        return Err(StoreError::CorruptObject {
            hash: *hash,
            actual,
            path: location.to_owned(),
        });
    }
    Ok(bytes)
}

pub(crate) fn temp_file(tmp: &Path) -> Result<NamedTempFile, StoreError> {
    let make = || tempfile::Builder::new().prefix("obj-").tempfile_in(tmp);
    let file = match make() {
        // A store copied without its empty directories (an archive, a git checkout) has no
        // `tmp/`: make it on first write rather than failing every write.
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(tmp).and_then(|()| make())
        }
        other => other,
    };
    file.map_err(|source| StoreError::Io {
        path: tmp.to_owned(),
        source,
    })
}

/// Streams `reader` into a temporary file in `tmp`, hashing as it goes.
pub(crate) fn stage_in(tmp: &Path, reader: &mut dyn Read) -> Result<StagedObject, StoreError> {
    let mut file = temp_file(tmp)?;
    let tmp_path = file.path().to_owned();
    let io_err = |source| StoreError::Io {
        path: tmp_path.clone(),
        source,
    };
    let mut hasher = ContentHasher::new();
    let mut len = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(io_err(err)),
        };
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n]).map_err(io_err)?;
        len += n as u64;
    }
    Ok(StagedObject {
        file,
        hash: hasher.finish(),
        len,
    })
}

impl StagedObject {
    /// The hash of the staged bytes.
    pub fn hash(&self) -> ContentHash {
        self.hash
    }

    /// The number of staged bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was staged.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The staged temporary file (to upload it, or to read it back).
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Publishes the object in `store` (see [`Objects::commit`]).
    pub fn commit(self, store: &dyn Objects) -> Result<ContentHash, StoreError> {
        store.commit(self)
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

pub(crate) fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(StoreError::Io {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| StoreError::Io {
            path: dir.to_owned(),
            source,
        })?;
        paths.push(entry.path());
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, LocalObjects) {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("objects")).expect("mkdir");
        fs::create_dir_all(dir.path().join("tmp")).expect("mkdir");
        let objects = LocalObjects::new(dir.path().join("objects"), dir.path().join("tmp"));
        (dir, objects)
    }

    fn tmp_entries(dir: &Path) -> usize {
        fs::read_dir(dir.join("tmp")).expect("tmp exists").count()
    }

    #[test]
    fn round_trip_and_layout() {
        let (dir, objects) = store();
        let hash = objects.put(b"hello world").expect("put");
        let hex = hash.to_hex();
        let path = dir.path().join("objects").join(&hex[..2]).join(&hex[2..]);
        assert!(path.is_file());
        assert_eq!(objects.get(&hash).expect("get"), b"hello world");
        assert_eq!(
            objects.put(b"hello world").expect("again"),
            hash,
            "idempotent"
        );
        let (streamed, len) = objects
            .put_reader(&mut &b"hello world"[..])
            .expect("stream");
        assert_eq!((streamed, len), (hash, 11));
        assert_eq!(tmp_entries(dir.path()), 0, "no temporary files left behind");
        let listed = objects.list().expect("list");
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].hash, &listed[0].location), (Some(hash), &path));
        assert_eq!(listed[0].len, 11);
    }

    #[test]
    fn corruption_is_detected_on_read() {
        let (_dir, objects) = store();
        let hash = objects.put(b"precious").expect("put");
        let path = objects.path_of(&hash);
        let mut perms = fs::metadata(&path).expect("meta").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        fs::set_permissions(&path, perms).expect("chmod");
        fs::write(&path, b"precioys").expect("tamper");
        assert!(matches!(
            objects.get(&hash),
            Err(StoreError::CorruptObject { .. })
        ));
        fs::remove_file(&path).expect("rm");
        assert!(matches!(
            objects.get(&hash),
            Err(StoreError::MissingObject { .. })
        ));
    }

    #[test]
    fn an_interrupted_write_leaves_no_partial_object() {
        let (dir, objects) = store();
        let staged = objects.stage(&mut &b"half-written"[..]).expect("stage");
        let hash = staged.hash();
        // A crash between the temporary write and the rename: the staged file is never committed.
        std::mem::forget(staged);
        assert!(
            !objects.contains(&hash).expect("contains"),
            "an uncommitted object must not be visible"
        );
        assert!(matches!(
            objects.get(&hash),
            Err(StoreError::MissingObject { .. })
        ));
        assert!(objects.list().expect("list").is_empty());
        assert_eq!(
            tmp_entries(dir.path()),
            1,
            "only the temporary file remains, for gc"
        );
        // A dropped (not crashed) stage cleans up after itself.
        drop(objects.stage(&mut &b"dropped"[..]).expect("stage"));
        assert_eq!(tmp_entries(dir.path()), 1);
    }

    #[test]
    fn concurrent_writers_of_one_object_agree() {
        let (_dir, objects) = store();
        let payload = vec![7u8; 256 * 1024];
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..10 {
                        objects.put(&payload).expect("concurrent put");
                    }
                });
            }
        });
        let hash = ContentHash::of(&payload);
        assert_eq!(objects.get(&hash).expect("intact"), payload);
    }
}
