//! The content-addressed object store.
//!
//! An object lives at `objects/sha256/<first 2 hex>/<remaining 62 hex>`. Writes go to a
//! temporary file in the store's `tmp/`, are fsynced, made read-only and renamed into place,
//! and the shard directory is fsynced: a crash leaves either the whole object or none of it
//! (a stray temporary file at worst, which `gc` removes). Two writers of the same object both
//! rename complete, identical files, so concurrent writes are safe. Every read re-hashes.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use ctx_core::{ContentHash, ContentHasher};
use tempfile::NamedTempFile;

use crate::StoreError;

/// Blobs addressed by the SHA-256 of their bytes.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    root: PathBuf,
    tmp: PathBuf,
}

/// An object written to a temporary file but not yet visible in the store.
///
/// Dropping it without [`StagedObject::commit`] deletes the temporary file; a process killed
/// before committing leaves only a temporary file, never a partial object.
pub struct StagedObject {
    file: NamedTempFile,
    hash: ContentHash,
    len: u64,
}

impl ObjectStore {
    /// An object store rooted at `root` (`…/objects/sha256`) staging through `tmp`.
    pub fn new(root: PathBuf, tmp: PathBuf) -> Self {
        Self { root, tmp }
    }

    /// The directory holding the shard directories.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the object with `hash` lives (whether or not it exists).
    pub fn path_of(&self, hash: &ContentHash) -> PathBuf {
        let hex = hash.to_hex();
        self.root.join(&hex[..2]).join(&hex[2..])
    }

    /// Whether the object exists (not whether it is intact: see [`ObjectStore::get`]).
    pub fn contains(&self, hash: &ContentHash) -> bool {
        self.path_of(hash).is_file()
    }

    /// Stores `bytes`, returning their hash. Storing an existing object is cheap and safe.
    pub fn put(&self, bytes: &[u8]) -> Result<ContentHash, StoreError> {
        let hash = ContentHash::of(bytes);
        if self.existing_intact_len(&hash) == Some(bytes.len() as u64) {
            return Ok(hash);
        }
        let mut file = self.temp_file()?;
        let tmp_path = file.path().to_owned();
        file.write_all(bytes).map_err(|source| StoreError::Io {
            path: tmp_path,
            source,
        })?;
        StagedObject {
            file,
            hash,
            len: bytes.len() as u64,
        }
        .commit(self)
    }

    /// Streams `reader` into the store, hashing as it goes; returns the hash and length.
    pub fn put_reader(&self, reader: impl Read) -> Result<(ContentHash, u64), StoreError> {
        let staged = self.stage(reader)?;
        let (hash, len) = (staged.hash, staged.len);
        if self.existing_intact_len(&hash) == Some(len) {
            return Ok((hash, len));
        }
        staged.commit(self)?;
        Ok((hash, len))
    }

    /// Writes `reader` to a synced temporary file without publishing it.
    pub fn stage(&self, mut reader: impl Read) -> Result<StagedObject, StoreError> {
        let mut file = self.temp_file()?;
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

    /// Reads an object, checking that its bytes still hash to its name.
    pub fn get(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(hash);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::MissingObject { hash: *hash });
            }
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        let actual = ContentHash::of(&bytes);
        if actual != *hash {
            return Err(StoreError::CorruptObject {
                hash: *hash,
                actual,
                path,
            });
        }
        Ok(bytes)
    }

    /// Every object file in the store, as (name, path); names that are not hashes give `None`.
    pub fn list(&self) -> Result<Vec<(Option<ContentHash>, PathBuf)>, StoreError> {
        let mut out = Vec::new();
        for shard in read_dir_sorted(&self.root)? {
            if !shard.is_dir() {
                out.push((None, shard));
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
                out.push((hash, path));
            }
        }
        Ok(out)
    }

    /// The length of an existing object file, refreshing its mtime so that a concurrent `gc`
    /// keeps an object that was just written again; `None` if it does not exist.
    fn existing_intact_len(&self, hash: &ContentHash) -> Option<u64> {
        let path = self.path_of(hash);
        let file = File::open(&path).ok()?;
        let len = file.metadata().ok()?.len();
        // The mtime is store housekeeping (gc's grace period), never hashed content.
        let _ = file.set_modified(std::time::SystemTime::now());
        Some(len)
    }

    fn temp_file(&self) -> Result<NamedTempFile, StoreError> {
        tempfile::Builder::new()
            .prefix("obj-")
            .tempfile_in(&self.tmp)
            .map_err(|source| StoreError::Io {
                path: self.tmp.clone(),
                source,
            })
    }
}

impl StagedObject {
    /// The hash of the staged bytes.
    pub fn hash(&self) -> ContentHash {
        self.hash
    }

    /// Publishes the object: fsync, read-only, rename into its shard, fsync the shard.
    pub fn commit(self, store: &ObjectStore) -> Result<ContentHash, StoreError> {
        let Self { file, hash, .. } = self;
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
        let dest = store.path_of(&hash);
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

    fn store() -> (tempfile::TempDir, ObjectStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("objects")).expect("mkdir");
        fs::create_dir_all(dir.path().join("tmp")).expect("mkdir");
        let objects = ObjectStore::new(dir.path().join("objects"), dir.path().join("tmp"));
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
        let (streamed, len) = objects.put_reader(&b"hello world"[..]).expect("stream");
        assert_eq!((streamed, len), (hash, 11));
        assert_eq!(tmp_entries(dir.path()), 0, "no temporary files left behind");
        assert_eq!(objects.list().expect("list"), vec![(Some(hash), path)]);
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
        let staged = objects.stage(&b"half-written"[..]).expect("stage");
        let hash = staged.hash();
        // A crash between the temporary write and the rename: the staged file is never committed.
        std::mem::forget(staged);
        assert!(
            !objects.contains(&hash),
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
        drop(objects.stage(&b"dropped"[..]).expect("stage"));
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
