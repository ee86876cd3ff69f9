//! A long-lived, stat-validated, in-memory cache of a tree's walk and of its files' contents,
//! for servers that answer many searches over the same tree.
//!
//! - The **walk** of a root is reused while every directory it visited (and the root's
//!   ancestors) keeps its modification time and inode, and every ignore file that applied
//!   (`.gitignore`, `.ignore` in those directories, `.git/info/exclude`, the global excludes
//!   file) keeps its stamp or stays absent. Adding, removing or renaming an entry changes its
//!   directory's modification time; editing an ignore file changes that file's stamp.
//! - A file's **contents** are reused while its (size, modification time, inode) are unchanged.
//!
//! Stamps newer than [`TRUST_AFTER`] when they were taken are never trusted (a change within
//! the file system's clock resolution could keep the same modification time), so a tree that
//! is being edited is re-read until it settles. Results are always those of a fresh walk and
//! fresh reads.
//!
//! The clock and the places of git's global excludes come from the caller
//! ([`TreeCacheSettings`]): this crate reads neither the environment nor the time itself.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use ctx_fs::{WalkEntry, WalkOptions};

use crate::error::CodeError;
use crate::search::{Kept, SearchResults, TextQuery, build_matcher, search_bytes};
use crate::summary::par_map;

/// How old a modification time must be, when it is recorded, to be trusted later.
pub const TRUST_AFTER: Duration = Duration::from_secs(2);

/// Files larger than this are read from disk on each search, never kept.
const MAX_CACHED_FILE: u64 = 4 * 1024 * 1024;

/// A file's contents as [`TreeCache::contents`] has them.
pub enum Contents {
    /// The whole file (from memory when unchanged since it was kept).
    Bytes(Arc<[u8]>),
    /// Over [`MAX_CACHED_FILE`]: not read here; search it as it streams from disk.
    TooLarge,
    /// Gone, refused by the sandbox, or unreadable: why.
    Unreadable(String),
}

/// Contents kept at most, in bytes; past it the contents cache starts again empty.
const MAX_CACHED_BYTES: u64 = 512 * 1024 * 1024;

/// What a path looked like: `None` when it did not exist.
type Stamp = Option<(u64, i64, u64)>;

/// A path's (size, modification time, inode); directories count as size 0.
fn stamp_of(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    let (mtime_ns, inode) = ctx_fs::walk::stamp(&meta);
    Some((if meta.is_dir() { 0 } else { meta.len() }, mtime_ns, inode))
}

struct CachedWalk {
    entries: Arc<Vec<WalkEntry>>,
    /// Every path whose stamp decides whether the walk still holds.
    watched: Vec<(PathBuf, Stamp)>,
}

struct CachedFile {
    stamp: (u64, i64, u64),
    bytes: Arc<[u8]>,
}

/// Counters, for tests and benchmarks.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TreeCacheStats {
    /// Walks answered from the cache.
    pub walk_hits: u64,
    /// Walks done on disk.
    pub walks: u64,
    /// File contents answered from the cache.
    pub content_hits: u64,
    /// Files read from disk.
    pub reads: u64,
}

/// What a tree cache takes from the process it runs in.
#[derive(Debug, Clone)]
pub struct TreeCacheSettings {
    /// Files outside the tree whose stamps also decide whether a walk still holds: git's
    /// global excludes file (`$XDG_CONFIG_HOME/git/ignore`, else `~/.config/git/ignore`) and
    /// `~/.gitconfig` (its `core.excludesFile` can name another). Absent files are watched
    /// too: one that appears invalidates the walk.
    pub global_ignore_files: Vec<PathBuf>,
    /// The clock: stamps newer than [`TRUST_AFTER`] at the time they are taken are not trusted.
    pub clock: fn() -> SystemTime,
}

impl TreeCacheSettings {
    /// Settings with the given clock and no global ignore files (tests, trees outside git).
    pub fn with_clock(clock: fn() -> SystemTime) -> Self {
        Self {
            global_ignore_files: Vec::new(),
            clock,
        }
    }
}

/// The cache (cheap to share: wrap it in an `Arc`; every method takes `&self`).
pub struct TreeCache {
    settings: TreeCacheSettings,
    walks: Mutex<HashMap<PathBuf, Arc<CachedWalk>>>,
    files: RwLock<(HashMap<PathBuf, CachedFile>, u64)>,
    walk_hits: AtomicU64,
    walks_done: AtomicU64,
    content_hits: AtomicU64,
    reads: AtomicU64,
}

impl std::fmt::Debug for TreeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeCache")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl TreeCache {
    pub fn new(settings: TreeCacheSettings) -> Self {
        Self {
            settings,
            walks: Mutex::default(),
            files: RwLock::default(),
            walk_hits: AtomicU64::default(),
            walks_done: AtomicU64::default(),
            content_hits: AtomicU64::default(),
            reads: AtomicU64::default(),
        }
    }

    /// How much of the work came from the cache so far.
    pub fn stats(&self) -> TreeCacheStats {
        TreeCacheStats {
            walk_hits: self.walk_hits.load(Ordering::Relaxed),
            walks: self.walks_done.load(Ordering::Relaxed),
            content_hits: self.content_hits.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
        }
    }

    /// The files under `root` (a directory) with the default walk options, from the cache when
    /// nothing that decides the walk changed. Paths are relative to `root`.
    ///
    /// # Errors
    ///
    /// A missing or unreadable root.
    pub fn walk(&self, root: &Path) -> Result<Arc<Vec<WalkEntry>>, CodeError> {
        let cached = self.lock_walks().get(root).cloned();
        if let Some(cached) = cached
            && cached
                .watched
                .iter()
                .all(|(path, stamp)| stamp_of(path) == *stamp)
        {
            self.walk_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Arc::clone(&cached.entries));
        }
        self.walks_done.fetch_add(1, Ordering::Relaxed);
        let started = (self.settings.clock)();
        // Stamps taken before the walk: a change during the walk makes them differ later.
        let mut watched = ancestors_watch(root, &self.settings.global_ignore_files);
        // No stat per file here (`contents` stats each file when it reads it); directories
        // are still stamped as the walk finds them.
        let opts = WalkOptions {
            include_dirs: true,
            metadata: false,
            ..WalkOptions::default()
        };
        let (found, _errors) = ctx_fs::walk::walk_each(root, &opts, |_| Some(()))?;
        let mut entries = Vec::with_capacity(found.len());
        for (entry, ()) in found {
            if entry.is_dir {
                let stamp = Some((0, entry.mtime_ns, entry.inode)).filter(|s| s.1 != 0);
                watch_dir(
                    &mut watched,
                    &entry.path,
                    stamp.or_else(|| stamp_of(&entry.path)),
                );
            } else {
                entries.push(entry);
            }
        }
        let entries = Arc::new(entries);
        let trusted = watched.iter().all(|(_, stamp)| trusted(*stamp, started));
        let mut walks = self.lock_walks();
        if trusted {
            walks.insert(
                root.to_owned(),
                Arc::new(CachedWalk {
                    entries: Arc::clone(&entries),
                    watched,
                }),
            );
        } else {
            walks.remove(root);
        }
        Ok(entries)
    }

    /// The contents of a walked file, from the cache when its stamp is unchanged; a file over
    /// [`MAX_CACHED_FILE`] is not read ([`Contents::TooLarge`]).
    pub fn contents(&self, path: &Path, reader: Option<&ctx_fs::WalkReader<'_>>) -> Contents {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(err) => return Contents::Unreadable(err.to_string()),
        };
        if meta.len() > MAX_CACHED_FILE {
            return Contents::TooLarge;
        }
        let (mtime_ns, inode) = ctx_fs::walk::stamp(&meta);
        let stamp = (meta.len(), mtime_ns, inode);
        if let Some(file) = self.read_files().0.get(path)
            && file.stamp == stamp
        {
            self.content_hits.fetch_add(1, Ordering::Relaxed);
            return Contents::Bytes(Arc::clone(&file.bytes));
        }
        let started = (self.settings.clock)();
        let bytes = match crate::summary::read_path(reader, path) {
            Ok(bytes) => bytes,
            Err(err) => return Contents::Unreadable(err.to_string()),
        };
        let bytes: Arc<[u8]> = bytes.into();
        self.reads.fetch_add(1, Ordering::Relaxed);
        // Kept only when the bytes read are the stamp's (same length) and the stamp is old
        // enough to be trusted.
        if bytes.len() as u64 == stamp.0 && trusted(Some(stamp), started) {
            let mut files = self.write_files();
            if files.1 + stamp.0 > MAX_CACHED_BYTES {
                files.0.clear();
                files.1 = 0;
            }
            files.1 += stamp.0;
            if let Some(old) = files.0.insert(
                path.to_owned(),
                CachedFile {
                    stamp,
                    bytes: Arc::clone(&bytes),
                },
            ) {
                files.1 -= old.stamp.0;
            }
        }
        Contents::Bytes(bytes)
    }

    fn lock_walks(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<CachedWalk>>> {
        self.walks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read_files(&self) -> std::sync::RwLockReadGuard<'_, (HashMap<PathBuf, CachedFile>, u64)> {
        self.files
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_files(&self) -> std::sync::RwLockWriteGuard<'_, (HashMap<PathBuf, CachedFile>, u64)> {
        self.files
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether a stamp's modification time was at least [`TRUST_AFTER`] old at `taken`.
fn trusted(stamp: Stamp, taken: SystemTime) -> bool {
    let Some((_, mtime_ns, _)) = stamp else {
        return true;
    };
    let Ok(taken) = taken.duration_since(SystemTime::UNIX_EPOCH) else {
        return false;
    };
    let limit = taken.saturating_sub(TRUST_AFTER);
    i128::from(mtime_ns) < i128::try_from(limit.as_nanos()).unwrap_or(i128::MAX)
}

/// Watches a directory and the ignore files in it (a new one changes the directory's stamp).
fn watch_dir(watched: &mut Vec<(PathBuf, Stamp)>, dir: &Path, stamp: Stamp) {
    watched.push((dir.to_owned(), stamp));
    for name in [".gitignore", ".ignore"] {
        let path = dir.join(name);
        let stamp = stamp_of(&path);
        if stamp.is_some() {
            watched.push((path, stamp));
        }
    }
}

/// The root, the ignore files of its ancestors (they apply too), the repository's
/// `.git/info/exclude`, and the global excludes files.
fn ancestors_watch(root: &Path, global_ignore_files: &[PathBuf]) -> Vec<(PathBuf, Stamp)> {
    let mut watched = Vec::new();
    watch_dir(&mut watched, root, stamp_of(root));
    for dir in root.ancestors() {
        if dir != root {
            // Not the ancestors' own stamps (a busy parent such as /tmp changes all the time):
            // only their ignore files, present or absent.
            for name in [".gitignore", ".ignore"] {
                let path = dir.join(name);
                let stamp = stamp_of(&path);
                watched.push((path, stamp));
            }
        }
        let git = dir.join(".git");
        if git.exists() {
            let exclude = git.join("info").join("exclude");
            let stamp = stamp_of(&exclude);
            watched.push((exclude, stamp));
        }
    }
    for path in global_ignore_files {
        watched.push((path.clone(), stamp_of(path)));
    }
    watched
}

/// Searches the text under `root` (a directory) through `cache`: the same results as
/// [`crate::search::search_tree`]. Paths are `prefix/rel`.
///
/// # Errors
///
/// An invalid regex or a missing root.
pub fn search_cached(
    cache: &TreeCache,
    root: &Path,
    prefix: &str,
    query: &TextQuery,
    reader: Option<&ctx_fs::WalkReader<'_>>,
) -> Result<SearchResults, CodeError> {
    let matcher = build_matcher(query)?;
    let entries = cache.walk(root)?;
    let kept = Kept::new(query.limit);
    par_map(&entries, query.threads, |entry| {
        let name = || {
            if prefix.is_empty() {
                entry.rel.clone()
            } else {
                format!("{prefix}/{}", entry.rel)
            }
        };
        match cache.contents(&entry.path, reader) {
            Contents::Bytes(bytes) => search_bytes(&matcher, query.context, &bytes, &kept, name),
            // Too large to keep: searched from disk as it streams by, not read whole.
            Contents::TooLarge => {
                crate::search::search_one(&matcher, query.context, entry, reader, &kept, name);
            }
            Contents::Unreadable(reason) => kept.skip(name(), reason),
        }
    });
    Ok(kept.finish())
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::time::{Duration, SystemTime};

    use super::*;

    fn write(root: &Path, rel: &str, body: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, body).expect("write");
    }

    /// Sets every file and directory under `root` (and `root`) to a modification time
    /// `age_secs` in the past, so the cache may trust the stamps.
    fn settle(root: &Path, age_secs: u64) {
        let when = SystemTime::now() - Duration::from_secs(age_secs);
        let mut stack = vec![root.to_owned()];
        while let Some(dir) = stack.pop() {
            for child in fs::read_dir(&dir).expect("read_dir") {
                let path = child.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    fs::File::options()
                        .write(true)
                        .open(&path)
                        .expect("open")
                        .set_modified(when)
                        .expect("set mtime");
                }
            }
            fs::File::open(&dir)
                .expect("open dir")
                .set_modified(when)
                .expect("set dir mtime");
        }
    }

    fn query(pattern: &str) -> TextQuery {
        TextQuery {
            pattern: pattern.into(),
            ..TextQuery::default()
        }
    }

    fn found(cache: &TreeCache, root: &Path) -> Vec<String> {
        let cached = search_cached(cache, root, "", &query("needle"), None).expect("cached search");
        let fresh =
            crate::search::search_tree(root, &WalkOptions::default(), "", &query("needle"), None)
                .expect("fresh search");
        assert_eq!(cached, fresh, "the cache answers exactly as a fresh search");
        cached
            .matches
            .iter()
            .map(|m| format!("{}:{}", m.path, m.text))
            .collect()
    }

    #[test]
    fn an_unchanged_tree_is_answered_from_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        write(&root, "a.rs", "needle one\n");
        write(&root, "src/b.rs", "no\nneedle two\n");
        settle(&root, 100);
        let cache = TreeCache::new(TreeCacheSettings::with_clock(SystemTime::now));
        let first = found(&cache, &root);
        assert_eq!(first, ["a.rs:needle one", "src/b.rs:needle two"]);
        let before = cache.stats();
        assert_eq!(found(&cache, &root), first);
        let after = cache.stats();
        assert_eq!(after.walk_hits, before.walk_hits + 1, "walk reused");
        assert_eq!(after.walks, before.walks);
        assert_eq!(after.reads, before.reads, "no file read again");
        assert!(after.content_hits >= before.content_hits + 2);
    }

    #[test]
    fn changed_added_and_deleted_files_and_a_changed_gitignore_are_seen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        write(&root, ".gitignore", "*.log\n");
        write(&root, "a.rs", "needle one\n");
        write(&root, "src/b.rs", "needle two\n");
        write(&root, "src/c.txt", "needle three\n");
        write(&root, "skip.log", "needle ignored\n");
        settle(&root, 100);
        let cache = TreeCache::new(TreeCacheSettings::with_clock(SystemTime::now));
        assert_eq!(
            found(&cache, &root),
            [
                "a.rs:needle one",
                "src/b.rs:needle two",
                "src/c.txt:needle three"
            ]
        );
        found(&cache, &root);
        let warm = cache.stats();
        assert_eq!(warm.walk_hits, 1);

        // A changed file (same size, settled again at another time): its contents are reread.
        write(&root, "a.rs", "needle ONE\n");
        settle(&root, 90);
        assert_eq!(
            found(&cache, &root),
            [
                "a.rs:needle ONE",
                "src/b.rs:needle two",
                "src/c.txt:needle three"
            ]
        );

        // An added file in a subdirectory.
        write(&root, "src/deep/d.rs", "needle four\n");
        settle(&root, 80);
        assert_eq!(
            found(&cache, &root),
            [
                "a.rs:needle ONE",
                "src/b.rs:needle two",
                "src/c.txt:needle three",
                "src/deep/d.rs:needle four"
            ]
        );

        // A deleted file.
        fs::remove_file(root.join("src/b.rs")).expect("remove");
        settle(&root, 70);
        assert_eq!(
            found(&cache, &root),
            [
                "a.rs:needle ONE",
                "src/c.txt:needle three",
                "src/deep/d.rs:needle four"
            ]
        );

        // A changed .gitignore (same size): ignore *.txt instead of *.log.
        write(&root, ".gitignore", "*.txt\n");
        settle(&root, 60);
        assert_eq!(
            found(&cache, &root),
            [
                "a.rs:needle ONE",
                "skip.log:needle ignored",
                "src/deep/d.rs:needle four"
            ]
        );

        // A new .gitignore in a subdirectory.
        write(&root, "src/deep/.gitignore", "d.rs\n");
        settle(&root, 50);
        assert_eq!(
            found(&cache, &root),
            ["a.rs:needle ONE", "skip.log:needle ignored"]
        );
        let end = cache.stats();
        assert!(
            end.walks >= warm.walks + 4,
            "each change re-walked: {end:?}"
        );
    }

    #[test]
    fn fresh_stamps_are_not_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        write(&root, "a.rs", "needle\n");
        let cache = TreeCache::new(TreeCacheSettings::with_clock(SystemTime::now));
        found(&cache, &root);
        found(&cache, &root);
        let stats = cache.stats();
        assert_eq!(
            stats.walk_hits, 0,
            "a tree modified just now is walked again"
        );
        assert_eq!(stats.content_hits, 0, "and its files read again");
    }

    /// A clock a day ahead: every stamp just taken is already old enough to trust.
    fn tomorrow() -> SystemTime {
        SystemTime::now() + Duration::from_secs(86_400)
    }

    #[test]
    fn the_clock_comes_from_the_settings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        write(&root, "a.rs", "needle\n");
        let cache = TreeCache::new(TreeCacheSettings::with_clock(tomorrow));
        found(&cache, &root);
        found(&cache, &root);
        let stats = cache.stats();
        assert_eq!(
            stats.walk_hits, 1,
            "by the caller's clock the stamps are settled"
        );
        assert_eq!(stats.content_hits, 1);
    }

    #[test]
    fn a_global_ignore_file_from_the_settings_is_watched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("tree");
        fs::create_dir(&root).expect("mkdir");
        let root = root.canonicalize().expect("canonical");
        let global = dir.path().join("config/git/ignore");
        write(&root, "a.rs", "needle\n");
        let cache = TreeCache::new(TreeCacheSettings {
            global_ignore_files: vec![global.clone()],
            clock: tomorrow,
        });
        found(&cache, &root);
        found(&cache, &root);
        assert_eq!(cache.stats().walk_hits, 1);
        // The file appears (it was watched while absent): the walk is done again.
        fs::create_dir_all(global.parent().expect("parent")).expect("mkdir");
        fs::write(&global, "*.log\n").expect("write");
        let cached = search_cached(&cache, &root, "", &query("needle"), None).expect("search");
        assert_eq!(cached.matches.len(), 1);
        let stats = cache.stats();
        assert_eq!((stats.walk_hits, stats.walks), (1, 2), "{stats:?}");
    }
}
