//! [`S3Objects`]: the CAS on any S3-compatible service, through the `object_store` crate.
//!
//! Keys are content-addressed like the local layout: `PREFIX/objects/sha256/ab/cdef…`.
//! Small objects are written with a conditional create (`PutMode::Create`, `If-None-Match: *`),
//! so concurrent writers of the same object never overwrite one another (the loser's
//! "already exists" is success: the bytes are the same by construction); objects past
//! [`MULTIPART_THRESHOLD`] go up in parts, after a `HEAD` finds them missing, and become
//! visible whole when the upload completes. Every read re-hashes. A local read-through cache
//! (`.ctx/cache/objects/`, same layout as `objects/`) serves repeated reads; a cached object
//! is re-hashed on every read like any other, so a damaged cache entry is dropped and fetched
//! again, never served. The cache only ever answers reads: whether an object exists is always
//! asked of the service, so a host never skips an upload because of a stale cache entry.
//!
//! `object_store` is async; the store's API is not. An `S3Objects` owns a small tokio runtime
//! and hands each request to it, waiting on a channel, so it works from plain threads and from
//! inside another runtime's tasks alike (where `block_on` would panic).

use std::fs;
use std::future::Future;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use ctx_core::ContentHash;
use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path as Key;
use object_store::{ObjectStore as _, PutMode, PutOptions, PutPayload, WriteMultipart};

use crate::objects::{ObjectEntry, Objects, StagedObject, check_hash, stage_in, temp_file};
use crate::{S3Settings, StoreError};

/// Objects at least this large are uploaded in parts (and checked for first with `HEAD`).
pub const MULTIPART_THRESHOLD: u64 = 8 * 1024 * 1024;
/// The size of one part of a multipart upload.
const PART_SIZE: usize = 8 * 1024 * 1024;

/// Objects in an S3 bucket, under a prefix.
pub struct S3Objects {
    s3: Arc<AmazonS3>,
    /// `PREFIX/objects/sha256`.
    root: Key,
    location: String,
    tmp: PathBuf,
    cache: Option<PathBuf>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl S3Objects {
    /// Opens `s3://bucket/prefix` (an `?endpoint=URL` query overrides the settings' endpoint),
    /// staging through `tmp` and caching reads in `cache` (`None`: no cache).
    pub fn open(
        url: &str,
        settings: &S3Settings,
        tmp: PathBuf,
        cache: Option<PathBuf>,
    ) -> Result<Self, StoreError> {
        let bad = |detail: &str| StoreError::BadStoreUrl {
            url: url.to_owned(),
            detail: detail.to_owned(),
        };
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| bad("an object store URL starts with s3://"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket: write s3://BUCKET/PREFIX"));
        }
        let mut endpoint = settings.endpoint.clone();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("endpoint", value)) => endpoint = Some(value.to_owned()),
                _ => return Err(bad("the only query parameter known is `endpoint=URL`")),
            }
        }
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(settings.region.as_deref().unwrap_or("us-east-1"))
            .with_conditional_put(S3ConditionalPut::ETagMatch);
        if let Some(endpoint) = &endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        if let Some(key) = &settings.access_key_id {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &settings.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        if let Some(token) = &settings.session_token {
            builder = builder.with_token(token);
        }
        let s3 = builder.build().map_err(|e| bad(&e.to_string()))?;
        let prefix = prefix.trim_matches('/');
        let root = if prefix.is_empty() {
            Key::from("objects/sha256")
        } else {
            Key::from(format!("{prefix}/objects/sha256"))
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ctx-s3")
            .enable_all()
            .build()
            .map_err(|source| StoreError::Io {
                path: tmp.clone(),
                source,
            })?;
        let location = match &endpoint {
            Some(endpoint) => format!("s3://{bucket}/{prefix} at {endpoint}"),
            None => format!("s3://{bucket}/{prefix}"),
        };
        Ok(Self {
            s3: Arc::new(s3),
            root,
            location,
            tmp,
            cache,
            runtime: Some(runtime),
        })
    }

    fn key(&self, hash: &ContentHash) -> Key {
        let hex = hash.to_hex();
        Key::from(format!("{}/{}/{}", self.root, &hex[..2], &hex[2..]))
    }

    fn cache_path(&self, hash: &ContentHash) -> Option<PathBuf> {
        let hex = hash.to_hex();
        self.cache
            .as_ref()
            .map(|dir| dir.join(&hex[..2]).join(&hex[2..]))
    }

    /// Runs `future` on the owned runtime and waits for it.
    fn run<T: Send + 'static>(&self, future: impl Future<Output = T> + Send + 'static) -> T {
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        self.runtime
            .as_ref()
            .expect("the runtime lives as long as the store")
            .spawn(async move {
                let _ = send.send(future.await);
            });
        receive
            .recv()
            .expect("the S3 runtime finishes every request it is given")
    }

    fn err(&self, e: &object_store::Error) -> StoreError {
        StoreError::Backend {
            location: self.location.clone(),
            detail: e.to_string(),
        }
    }

    /// Whether the service has the object (never the cache: see the module docs).
    fn exists(&self, key: &Key) -> Result<bool, StoreError> {
        let (s3, key) = (self.s3.clone(), key.clone());
        match self.run(async move { s3.head(&key).await }) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.err(&e)),
        }
    }

    /// Writes `bytes` under `key` unless an object is there already.
    fn create(&self, key: &Key, bytes: Vec<u8>) -> Result<(), StoreError> {
        let (s3, key) = (self.s3.clone(), key.clone());
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self.run(async move { s3.put_opts(&key, PutPayload::from(bytes), options).await }) {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(self.err(&e)),
        }
    }

    /// Uploads the file at `path` in parts under `key`.
    fn upload_parts(&self, key: &Key, path: &Path) -> Result<(), StoreError> {
        let mut file = fs::File::open(path).map_err(|source| StoreError::Io {
            path: path.to_owned(),
            source,
        })?;
        let (s3, key) = (self.s3.clone(), key.clone());
        let path = path.to_owned();
        let result = self.run(async move {
            let upload = s3.put_multipart(&key).await.map_err(|e| e.to_string())?;
            let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
            let mut buf = vec![0u8; PART_SIZE];
            loop {
                // Two parts in flight at most: memory stays bounded for any object size.
                writer
                    .wait_for_capacity(2)
                    .await
                    .map_err(|e| e.to_string())?;
                let n = match file.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("{}: {e}", path.display())),
                };
                writer.write(&buf[..n]);
            }
            writer.finish().await.map(drop).map_err(|e| e.to_string())
        });
        result.map_err(|detail| StoreError::Backend {
            location: self.location.clone(),
            detail,
        })
    }

    /// Keeps a verified copy in the read cache (best effort: a cache is never required).
    fn remember(&self, hash: &ContentHash, bytes: &[u8]) {
        let Some(path) = self.cache_path(hash) else {
            return;
        };
        let Some(shard) = path.parent() else { return };
        if fs::create_dir_all(shard).is_err() {
            return;
        }
        if let Ok(mut file) = temp_file(&self.tmp)
            && file.write_all(bytes).is_ok()
        {
            let _ = file.persist(&path);
        }
    }

    fn cached(&self, hash: &ContentHash) -> Option<Vec<u8>> {
        let path = self.cache_path(hash)?;
        let bytes = fs::read(&path).ok()?;
        let checked = check_hash(hash, bytes, &path).ok();
        if checked.is_none() {
            let _ = fs::remove_file(&path);
        }
        checked
    }
}

impl Drop for S3Objects {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime's task.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Objects for S3Objects {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn contains(&self, hash: &ContentHash) -> Result<bool, StoreError> {
        self.exists(&self.key(hash))
    }

    fn put(&self, bytes: &[u8]) -> Result<ContentHash, StoreError> {
        if bytes.len() as u64 >= MULTIPART_THRESHOLD {
            let staged = stage_in(&self.tmp, &mut &bytes[..])?;
            return self.commit(staged);
        }
        let hash = ContentHash::of(bytes);
        self.create(&self.key(&hash), bytes.to_vec())?;
        Ok(hash)
    }

    fn stage(&self, reader: &mut dyn Read) -> Result<StagedObject, StoreError> {
        stage_in(&self.tmp, reader)
    }

    fn commit(&self, staged: StagedObject) -> Result<ContentHash, StoreError> {
        let key = self.key(&staged.hash);
        if staged.len >= MULTIPART_THRESHOLD {
            if !self.exists(&key)? {
                self.upload_parts(&key, staged.path())?;
            }
        } else {
            let bytes = fs::read(staged.path()).map_err(|source| StoreError::Io {
                path: staged.path().to_owned(),
                source,
            })?;
            self.create(&key, bytes)?;
        }
        Ok(staged.hash)
    }

    fn get(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError> {
        if let Some(bytes) = self.cached(hash) {
            return Ok(bytes);
        }
        let key = self.key(hash);
        let (s3, k) = (self.s3.clone(), key.clone());
        let fetched = self.run(async move {
            let result = s3.get(&k).await?;
            result.bytes().await
        });
        let bytes = match fetched {
            Ok(bytes) => bytes.to_vec(),
            Err(object_store::Error::NotFound { .. }) => {
                return Err(StoreError::MissingObject { hash: *hash });
            }
            Err(e) => return Err(self.err(&e)),
        };
        let bytes = check_hash(hash, bytes, Path::new(&format!("s3://{key}")))?;
        self.remember(hash, &bytes);
        Ok(bytes)
    }

    fn list(&self) -> Result<Vec<ObjectEntry>, StoreError> {
        let (s3, root) = (self.s3.clone(), self.root.clone());
        let listed = self
            .run(async move { s3.list(Some(&root)).try_collect::<Vec<_>>().await })
            .map_err(|e| self.err(&e))?;
        let root = self.root.as_ref().to_owned();
        let mut out: Vec<ObjectEntry> = listed
            .into_iter()
            .map(|meta| {
                let key = meta.location.as_ref().to_owned();
                let hex: String = key
                    .strip_prefix(&root)
                    .unwrap_or_default()
                    .chars()
                    .filter(|c| *c != '/')
                    .collect();
                let well_placed = key.len() == root.len() + 66;
                ObjectEntry {
                    hash: ContentHash::from_hex(&hex).ok().filter(|_| well_placed),
                    location: PathBuf::from(format!("s3://{key}")),
                    len: meta.size,
                    modified: Some(SystemTime::from(meta.last_modified)),
                }
            })
            .collect();
        out.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(out)
    }

    fn remove(&self, hash: &ContentHash) -> Result<(), StoreError> {
        if let Some(path) = self.cache_path(hash) {
            let _ = fs::remove_file(path);
        }
        let (s3, key) = (self.s3.clone(), self.key(hash));
        match self.run(async move { s3.delete(&key).await }) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(&e)),
        }
    }

    fn remove_stray(&self, location: &Path) -> Result<(), StoreError> {
        let Some(key) = location
            .to_str()
            .and_then(|l| l.strip_prefix("s3://"))
            .filter(|k| k.starts_with(self.root.as_ref()))
        else {
            return Ok(());
        };
        let (s3, key) = (self.s3.clone(), Key::from(key));
        match self.run(async move { s3.delete(&key).await }) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_from_the_usual_variables() {
        let vars = |name: &str| match name {
            "AWS_ENDPOINT" => Some("http://127.0.0.1:9000".to_owned()),
            "AWS_DEFAULT_REGION" => Some("eu-west-1".to_owned()),
            "AWS_ACCESS_KEY_ID" => Some("id".to_owned()),
            "AWS_SESSION_TOKEN" => Some(String::new()),
            _ => None,
        };
        let settings = S3Settings::from_lookup(vars);
        assert_eq!(settings.endpoint.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(settings.region.as_deref(), Some("eu-west-1"));
        assert_eq!(settings.access_key_id.as_deref(), Some("id"));
        assert_eq!(settings.session_token, None, "empty means unset");
    }

    #[test]
    fn bad_urls_are_refused_with_the_reason() {
        let tmp = tempfile::tempdir().expect("tempdir");
        for (url, needle) in [
            ("gs://bucket", "starts with s3://"),
            ("s3:///prefix", "no bucket"),
            ("s3://bucket/p?region=x", "endpoint=URL"),
        ] {
            let err = S3Objects::open(url, &S3Settings::default(), tmp.path().to_owned(), None)
                .err()
                .expect("refused");
            assert!(err.to_string().contains(needle), "{url}: {err}");
        }
    }

    #[test]
    fn keys_follow_the_local_layout_under_the_prefix() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let objects = S3Objects::open(
            "s3://bucket/team/a?endpoint=http://127.0.0.1:1",
            &S3Settings::default(),
            tmp.path().to_owned(),
            None,
        )
        .expect("open");
        let hash = ContentHash::of(b"x");
        let hex = hash.to_hex();
        assert_eq!(
            objects.key(&hash).as_ref(),
            format!("team/a/objects/sha256/{}/{}", &hex[..2], &hex[2..])
        );
    }
}
