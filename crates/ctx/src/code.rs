//! Code intelligence as user-level operations: `status`, `map`, `summarize`, `search`,
//! `related` and `diff-context`, with the store's summary cache wired in.
//!
//! Paths in results are relative to the directory the operation is asked from (`cwd`), except
//! `related` and `diff-context`, whose paths are relative to the repository root (as git
//! prints them) or to `cwd` outside a repository.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

pub use ctx_code::diff_context::{DiffContext, FileDiff, Hunk, HunkScope};
pub use ctx_code::git::{CommitInfo, HotDirectory};
pub use ctx_code::map::{CodeMap, MapEntry};
use ctx_code::map::{MapFile, MapSummary};
use ctx_code::related::ProjectLayout;
pub use ctx_code::related::{Related, RelatedFile};
pub use ctx_code::search::{
    ContextLine, DEFAULT_MAX_BYTES, SearchLimit, SearchMatch, SearchResults, SkippedFile, TextQuery,
};
pub use ctx_code::tree_cache::{TreeCacheSettings, TreeCacheStats};
use ctx_code::{CacheKey, FileStamp, SummaryCache};
pub use ctx_code::{
    CodeError, FileSummary, Language, Skipped, SummarizeOptions, SummaryStats, Symbol, SymbolKind,
};
use ctx_fs::walk::Cancel;
use ctx_fs::{WalkEntry, WalkOptions};
use ctx_store::{FileStampRow, Metadata, Store, SummaryKey};
use serde::Serialize;

/// The store's `code_summaries` table as a [`SummaryCache`].
pub struct StoreSummaryCache<'a> {
    db: &'a dyn Metadata,
    clock: &'a (dyn Fn() -> i64 + Send + Sync),
}

impl<'a> StoreSummaryCache<'a> {
    /// The cache of `store`; `clock` (Unix seconds) decides which file stamps are old enough
    /// to trust.
    pub fn new(store: &'a Store, clock: &'a (dyn Fn() -> i64 + Send + Sync)) -> Self {
        Self {
            db: store.db(),
            clock,
        }
    }
}

impl SummaryCache for StoreSummaryCache<'_> {
    fn get_many(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, ctx_core::BoxError> {
        let keys: Vec<SummaryKey<'_>> = keys
            .iter()
            .map(|k| SummaryKey {
                content_hash: &k.content_hash,
                extractor: &k.extractor,
            })
            .collect();
        self.db
            .cached_summaries(&keys)
            .map_err(ctx_core::BoxError::from)
    }

    fn put_many(&self, entries: &[(CacheKey, Vec<u8>)]) -> Result<(), ctx_core::BoxError> {
        let entries: Vec<(SummaryKey<'_>, &[u8])> = entries
            .iter()
            .map(|(k, v)| {
                (
                    SummaryKey {
                        content_hash: &k.content_hash,
                        extractor: &k.extractor,
                    },
                    v.as_slice(),
                )
            })
            .collect();
        self.db
            .cache_summaries(&entries)
            .map_err(ctx_core::BoxError::from)
    }

    fn stamped_keys(
        &self,
        stamps: &[FileStamp<'_>],
    ) -> Result<Vec<Option<CacheKey>>, ctx_core::BoxError> {
        // Paths that are not UTF-8 are never remembered, so they are asked as "" (unknown).
        let rows: Vec<FileStampRow<'_>> = stamps.iter().map(stamp_row).collect();
        let found = self
            .db
            .stamped_summary_keys(&rows)
            .map_err(ctx_core::BoxError::from)?;
        Ok(stamps
            .iter()
            .zip(found)
            .map(|(stamp, key)| {
                key.filter(|_| stamp.path.to_str().is_some())
                    .map(|k| CacheKey {
                        content_hash: k.content_hash,
                        extractor: k.extractor,
                    })
            })
            .collect())
    }

    fn remember_stamps(
        &self,
        entries: &[(FileStamp<'_>, CacheKey)],
    ) -> Result<(), ctx_core::BoxError> {
        // A file modified within the last seconds may be rewritten again without its
        // modification time moving (coarse clocks), so only older stamps are trusted.
        let now_ns = (self.clock)().saturating_mul(1_000_000_000);
        let rows: Vec<(FileStampRow<'_>, SummaryKey<'_>)> = entries
            .iter()
            .filter(|(stamp, _)| {
                stamp.path.to_str().is_some() && stamp.mtime_ns < now_ns - STAMP_TRUST_NS
            })
            .map(|(stamp, key)| {
                (
                    stamp_row(stamp),
                    SummaryKey {
                        content_hash: &key.content_hash,
                        extractor: &key.extractor,
                    },
                )
            })
            .collect();
        self.db
            .remember_file_stamps(&rows)
            .map_err(ctx_core::BoxError::from)
    }
}

fn stamp_row<'a>(stamp: &FileStamp<'a>) -> FileStampRow<'a> {
    FileStampRow {
        path: stamp.path.to_str().unwrap_or(""),
        size: stamp.size,
        mtime_ns: stamp.mtime_ns,
        inode: stamp.inode,
    }
}

/// How old a modification time must be before a file's stamp is trusted: the tree cache's
/// window, so every cache (summaries, renders, the tree cache) trusts the same stamps.
#[allow(clippy::cast_possible_truncation)] // 2 s in nanoseconds fits an i64.
pub(crate) const STAMP_TRUST_NS: i64 = ctx_code::tree_cache::TRUST_AFTER.as_nanos() as i64;

/// Where an operation runs and what it may use.
pub struct CodeContext<'a> {
    /// The directory paths are resolved against and shown relative to.
    pub cwd: PathBuf,
    /// The store whose summary cache to use, if any.
    pub store: Option<&'a Store>,
    /// The sandbox every file is read through: a server's workspace. `None` confines each
    /// operation to the tree it names (the CLI: the user names the tree, and nothing read
    /// under it may lead out of it through a symlink or a hard link).
    pub sandbox: Option<&'a ctx_fs::Sandbox>,
    /// The time now in Unix seconds (the front end's clock): a file modified in the last
    /// seconds may change again without its stamp moving, so its stamp is not yet trusted.
    pub clock: &'a (dyn Fn() -> i64 + Send + Sync),
    /// Set when the caller gives up (a server's timed-out call): walks stop at their next
    /// entry and summaries at their next file, with [`ctx_fs::WalkError::Cancelled`].
    pub cancel: Option<Cancel>,
}

/// The walk options of every walk a code operation makes: `cancel` stops it.
fn walk_options(cancel: Option<&Cancel>) -> WalkOptions {
    WalkOptions {
        cancel: cancel.cloned(),
        ..WalkOptions::default()
    }
}

/// The error a code operation stops with once its caller gave up.
fn check_cancel(cancel: Option<&Cancel>) -> Result<(), CodeError> {
    if ctx_fs::walk::is_cancelled(cancel) {
        return Err(CodeError::Walk(ctx_fs::WalkError::Cancelled));
    }
    Ok(())
}

/// The sandbox of one operation: the caller's, or one opened at the target.
struct Confined<'a> {
    own: Option<ctx_fs::Sandbox>,
    given: Option<&'a ctx_fs::Sandbox>,
    /// The path to walk (canonical when the sandbox was opened here).
    walk_root: PathBuf,
}

impl Confined<'_> {
    fn workspace(&self) -> &ctx_fs::Sandbox {
        match (&self.own, self.given) {
            (Some(own), _) => own,
            (None, Some(given)) => given,
            (None, None) => unreachable!("a confined operation has a sandbox"),
        }
    }

    fn reader(&self) -> Result<ctx_fs::WalkReader<'_>, CodeError> {
        ctx_fs::WalkReader::new(self.workspace(), &self.walk_root).map_err(|err| CodeError::Io {
            path: self.walk_root.clone(),
            source: std::io::Error::other(err),
        })
    }
}

impl<'a> CodeContext<'a> {
    /// The sandbox for an operation on `full` (a resolved, existing path).
    fn confine(&self, full: &Path, shown: &Path) -> Result<Confined<'a>, CodeError> {
        if let Some(given) = self.sandbox {
            // The path must resolve inside the workspace: not above it (`..`, an absolute
            // path elsewhere), not through a link out, not a FIFO or a device.
            let absolute = lexically_normal(full);
            let root = given.root();
            let Ok(inside) = absolute.strip_prefix(root) else {
                return Err(ctx_fs::SandboxError::AbsoluteOutside {
                    path: shown.display().to_string(),
                    root: root.to_owned(),
                }
                .into());
            };
            let inside = inside.to_string_lossy();
            let resolved = given.resolve(if inside.is_empty() { "." } else { &inside })?;
            let walk_root = if resolved.rel == "." {
                given.root().to_owned()
            } else {
                given.root().join(&resolved.rel)
            };
            return Ok(Confined {
                own: None,
                given: Some(given),
                walk_root,
            });
        }
        let io = |source: std::io::Error| CodeError::Io {
            path: shown.to_owned(),
            source,
        };
        let walk_root = full.canonicalize().map_err(io)?;
        let dir = if walk_root.is_dir() {
            walk_root.as_path()
        } else {
            walk_root.parent().unwrap_or(&walk_root)
        };
        let own = ctx_fs::Sandbox::open(dir).map_err(|err| io(std::io::Error::other(err)))?;
        Ok(Confined {
            own: Some(own),
            given: None,
            walk_root,
        })
    }
}

impl CodeContext<'_> {
    fn cache(&self) -> Option<StoreSummaryCache<'_>> {
        self.store
            .map(|store| StoreSummaryCache::new(store, self.clock))
    }

    /// Resolves a user path; a missing path is an error naming it.
    fn resolve(&self, path: &Path) -> Result<(PathBuf, String), CodeError> {
        let full = self.cwd.join(path);
        if !full.exists() {
            return Err(CodeError::NotFound {
                path: path.to_owned(),
            });
        }
        Ok((full, display_prefix(path)))
    }
}

/// `path` with `.` and `..` taken out by their names alone (no symlink followed: the sandbox
/// checks links as it opens the path).
fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A user path as a `/`-separated prefix: `src/` → `src`, `.` → ``, `./a/../b` → `b`.
fn display_prefix(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                if parts.last().is_some_and(|p| p != "..") {
                    parts.pop();
                } else {
                    parts.push("..".to_owned());
                }
            }
            Component::RootDir => parts.push(String::new()),
            Component::CurDir | Component::Prefix(_) => {}
        }
    }
    parts.join("/")
}

fn prefixed(prefix: &str, rel: &str) -> String {
    if prefix.is_empty() {
        rel.to_owned()
    } else {
        format!("{prefix}/{rel}")
    }
}

fn walk_under(
    full: &Path,
    prefix: &str,
    max_depth: Option<usize>,
    cancel: Option<&Cancel>,
) -> Result<Vec<WalkEntry>, CodeError> {
    let opts = WalkOptions {
        max_depth,
        ..walk_options(cancel)
    };
    let mut entries = ctx_fs::walk(full, &opts)?;
    if full.is_dir() {
        for entry in &mut entries {
            entry.rel = prefixed(prefix, &entry.rel);
        }
    } else {
        for entry in &mut entries {
            prefix.clone_into(&mut entry.rel);
        }
    }
    Ok(entries)
}

/// Replaces secrets in a text with the built-in rules (file content leaving through code
/// intelligence: matched lines, signatures, doc comments, skeletons).
fn redact_text(text: &mut String) {
    if let Some((redacted, _)) = ctx_core::fragments::redact_window(text) {
        *text = redacted;
    }
}

/// Redacts what a summary quotes from the file. Signatures and doc comments come redacted
/// from `ctx-code` (when extracted, before they are cached; the cache key names the rules),
/// so only a skeleton, made fresh from the file, is redacted here.
fn redact_summary(summary: &mut FileSummary) {
    if let Some(skeleton) = summary.skeleton.as_mut() {
        redact_text(skeleton);
    }
}

fn redact_matches(mut matches: Vec<SearchMatch>) -> Vec<SearchMatch> {
    for m in &mut matches {
        redact_text(&mut m.text);
        // Context lines are redacted as one block, so a secret spanning lines (a PEM body)
        // is found whole.
        let mut lines: Vec<String> = m.context.iter().map(|l| l.text.clone()).collect();
        redact_lines(&mut lines);
        for (line, text) in m.context.iter_mut().zip(lines) {
            line.text = text;
        }
    }
    matches
}

/// Redacts consecutive lines as one text and puts the result back line for line. Where a
/// replacement joined several lines into one, the first takes the redacted text and the others
/// become `[REDACTED]`, so line numbers stay right.
fn redact_lines(lines: &mut [String]) {
    let Some((text, _)) = ctx_core::fragments::redact_window(&lines.join("\n")) else {
        return;
    };
    let new: Vec<&str> = text.split('\n').collect();
    if new.len() == lines.len() {
        for (line, text) in lines.iter_mut().zip(new) {
            text.clone_into(line);
        }
        return;
    }
    let prefix = lines.iter().zip(&new).take_while(|(a, b)| a == *b).count();
    let suffix = lines[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == *b)
        .count();
    let middle = &new[prefix..new.len() - suffix];
    let end = lines.len() - suffix;
    let slots = &mut lines[prefix..end];
    let last = slots.len().saturating_sub(1);
    for (i, slot) in slots.iter_mut().enumerate() {
        *slot = match middle.get(i) {
            Some(text) if i < last => (*text).to_owned(),
            _ if i == last && middle.len() > i => middle[i..].join(" "),
            _ => "[REDACTED]".to_owned(),
        };
    }
}

/// The result of `summarize`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum SummarizeReport {
    /// A single file.
    File(FileSummary),
    /// Every source file under a directory.
    Directory {
        path: String,
        files: Vec<FileSummary>,
        skipped: Vec<Skipped>,
        #[serde(skip)]
        stats: SummaryStats,
    },
}

/// Summarizes a file, or every file under a directory (down to `depth` levels).
pub fn summarize(
    cx: &CodeContext<'_>,
    path: &Path,
    depth: Option<usize>,
    skeleton: bool,
) -> Result<SummarizeReport, CodeError> {
    match plan_summary(cx, path, depth, skeleton)? {
        SummaryPlan::File(summary) => Ok(SummarizeReport::File(summary)),
        SummaryPlan::Directory(directory) => {
            let mut files = Vec::new();
            let (skipped, stats) = directory.run(&mut |file| {
                files.push(file);
                Ok(())
            })?;
            Ok(SummarizeReport::Directory {
                path: directory.path,
                files,
                skipped,
                stats,
            })
        }
    }
}

/// What [`plan_summary`] found: a file's summary, or a walked directory whose files are
/// summarized as [`DirectorySummary::run`] hands them on.
pub enum SummaryPlan<'a> {
    File(FileSummary),
    Directory(DirectorySummary<'a>),
}

/// A walked directory, ready to be summarized file by file (in path order), so a caller can
/// write each summary out as it comes instead of holding the tree's.
pub struct DirectorySummary<'a> {
    /// The directory as shown (`.` for the working directory itself).
    pub path: String,
    confined: Confined<'a>,
    entries: Vec<WalkEntry>,
    store: Option<&'a Store>,
    clock: &'a (dyn Fn() -> i64 + Send + Sync),
    skeleton: bool,
    cancel: Option<Cancel>,
}

impl DirectorySummary<'_> {
    /// Summarizes the directory's files, handing each (redacted) to `on_file` in path order;
    /// returns the skipped files and the counts. An error from `on_file` stops the run.
    pub fn run(
        &self,
        on_file: &mut dyn FnMut(FileSummary) -> Result<(), CodeError>,
    ) -> Result<(Vec<Skipped>, SummaryStats), CodeError> {
        let reader = self.confined.reader()?;
        let cache = self
            .store
            .map(|store| StoreSummaryCache::new(store, self.clock));
        let cache_ref = cache.as_ref().map(|c| c as &dyn SummaryCache);
        let opts = SummarizeOptions {
            skeleton: self.skeleton,
            threads: 0,
            reader: Some(&reader),
        };
        ctx_code::summarize_files_each(&self.entries, opts, cache_ref, &mut |mut file| {
            check_cancel(self.cancel.as_ref())?;
            redact_summary(&mut file);
            on_file(file)
        })
    }
}

/// Summarizes a file at once, or walks a directory for [`DirectorySummary::run`].
/// Checks a path to summarize before any store is touched: it exists, resolves inside the
/// workspace (with a sandbox), and a single file is in a supported language.
pub fn check_summary_target(cx: &CodeContext<'_>, path: &Path) -> Result<(), CodeError> {
    let (full, _) = cx.resolve(path)?;
    let confined = cx.confine(&full, path)?;
    let target = &confined.walk_root;
    if !target.is_dir() && Language::from_path(target).is_none() {
        return Err(CodeError::Unsupported {
            path: path.to_owned(),
        });
    }
    Ok(())
}

pub fn plan_summary<'a>(
    cx: &CodeContext<'a>,
    path: &Path,
    depth: Option<usize>,
    skeleton: bool,
) -> Result<SummaryPlan<'a>, CodeError> {
    let (full, prefix) = cx.resolve(path)?;
    let confined = cx.confine(&full, path)?;
    let full = confined.walk_root.clone();
    if !full.is_dir() {
        let reader = confined.reader()?;
        let cache = cx.cache();
        let cache_ref = cache.as_ref().map(|c| c as &dyn SummaryCache);
        let opts = SummarizeOptions {
            skeleton,
            threads: 0,
            reader: Some(&reader),
        };
        let rel = if prefix.is_empty() {
            path.display().to_string()
        } else {
            prefix
        };
        let mut summary = ctx_code::summarize_file(&full, &rel, opts, cache_ref)?;
        redact_summary(&mut summary);
        return Ok(SummaryPlan::File(summary));
    }
    let entries = walk_under(&full, &prefix, depth, cx.cancel.as_ref())?;
    Ok(SummaryPlan::Directory(DirectorySummary {
        path: if prefix.is_empty() {
            ".".to_owned()
        } else {
            prefix
        },
        confined,
        entries,
        store: cx.store,
        clock: cx.clock,
        skeleton,
        cancel: cx.cancel.clone(),
    }))
}

/// Builds the annotated map of a directory.
pub fn map(
    cx: &CodeContext<'_>,
    path: &Path,
    depth: Option<usize>,
    budget: Option<usize>,
) -> Result<(CodeMap, SummaryStats), CodeError> {
    let (full, prefix) = cx.resolve(path)?;
    if !full.is_dir() {
        return Err(CodeError::Io {
            path: path.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                "not a directory; name a directory to map",
            ),
        });
    }
    let confined = cx.confine(&full, path)?;
    let reader = confined.reader()?;
    let entries = ctx_fs::walk(&confined.walk_root, &walk_options(cx.cancel.as_ref()))?;
    let opts = SummarizeOptions {
        reader: Some(&reader),
        ..SummarizeOptions::default()
    };
    let cache = cx.cache();
    let cache_ref = cache.as_ref().map(|c| c as &dyn SummaryCache);
    // Only files shown individually need symbols; deeper files only count lines.
    let shown: std::borrow::Cow<'_, [WalkEntry]> = match depth {
        None => std::borrow::Cow::Borrowed(&entries),
        Some(d) => entries
            .iter()
            .filter(|e| e.rel.split('/').count() <= d)
            .cloned()
            .collect(),
    };
    // Summaries stream in; the map keeps only what it shows of each (top-level symbols'
    // kinds and names), so memory grows with the map, not with the tree's summaries.
    let mut by_path: std::collections::BTreeMap<String, MapSummary> =
        std::collections::BTreeMap::new();
    let (_, stats) = ctx_code::summarize_files_each(&shown, opts, cache_ref, &mut |mut file| {
        check_cancel(cx.cancel.as_ref())?;
        redact_summary(&mut file);
        by_path.insert(file.path.clone(), MapSummary::of(&file));
        Ok(())
    })?;
    let line_counts = ctx_code::summary::par_map(&entries, 0, |entry| {
        if by_path.contains_key(&entry.rel) || entry.is_dir {
            return Ok(0);
        }
        ctx_code::summary::read_walked(Some(&reader), entry)
            .map(|b| {
                if ctx_code::summary::is_binary(&b) {
                    0
                } else {
                    ctx_code::summary::count_lines(&b)
                }
            })
            .map_err(|err| err.to_string())
    });
    // A file the sandbox refused (a hard link, a symlink swapped in after the walk) is left
    // out of the map, not listed with zero lines, and named in `skipped`.
    let mut skipped = Vec::new();
    let files: Vec<MapFile> = entries
        .iter()
        .zip(line_counts)
        .filter_map(|(entry, lines)| {
            let summary = by_path.remove(&entry.rel);
            match lines {
                Err(reason) if summary.is_none() && !entry.is_dir => {
                    skipped.push(SkippedFile {
                        path: entry.rel.clone(),
                        reason,
                    });
                    None
                }
                lines => Some((entry, lines.unwrap_or(0), summary)),
            }
        })
        .map(|(entry, lines, summary)| MapFile {
            rel: entry.rel.clone(),
            lines: summary.as_ref().map_or(lines, |s| s.lines),
            summary,
        })
        .collect();
    let root = if prefix.is_empty() {
        ".".to_owned()
    } else {
        prefix
    };
    let mut map = ctx_code::map::build_map(&root, files, depth, budget);
    skipped.sort();
    map.skipped = skipped;
    Ok((map, stats))
}

/// What `search` looks for.
#[derive(Debug, Clone)]
pub enum SearchKind {
    Text(TextQuery),
    Symbol { name: String, context: usize },
    Caller { name: String, context: usize },
}

/// Searches under `path` (a directory or a file). A text search keeps what its
/// [`TextQuery::limit`] allows while it runs (memory bounded whatever the files' size) and
/// counts every match; symbol and caller searches keep their first `max_results`.
pub fn search(
    cx: &CodeContext<'_>,
    path: &Path,
    kind: &SearchKind,
    max_results: Option<usize>,
) -> Result<SearchResults, CodeError> {
    let (full, prefix) = cx.resolve(path)?;
    let confined = cx.confine(&full, path)?;
    let reader = confined.reader()?;
    let full = confined.walk_root.clone();
    if let SearchKind::Text(query) = kind {
        // Search while walking (as ripgrep does); the regex is built, and a bad one refused,
        // before anything is walked.
        return ctx_code::search::search_tree(
            &full,
            &walk_options(cx.cancel.as_ref()),
            &prefix,
            &limited(query, max_results),
            Some(&reader),
        )
        .map(redact_results);
    }
    let entries = walk_under(&full, &prefix, None, cx.cancel.as_ref())?;
    check_cancel(cx.cancel.as_ref())?;
    let found = match kind {
        SearchKind::Text(_) => unreachable!("text searches return above"),
        SearchKind::Symbol { name, context } => {
            let cache = cx.cache();
            let cache_ref = cache.as_ref().map(|c| c as &dyn SummaryCache);
            ctx_code::search::search_symbols(&entries, name, *context, cache_ref, Some(&reader))?
        }
        SearchKind::Caller { name, context } => {
            ctx_code::search::search_callers(&entries, name, *context, 0, Some(&reader))?
        }
    };
    let total = found.len() as u64;
    let mut matches = redact_matches(found);
    if let Some(max) = max_results {
        matches.truncate(max);
    }
    Ok(SearchResults {
        matches,
        total,
        skipped: Vec::new(),
        skipped_total: 0,
    })
}

/// `query` with `max_results` as its limit's (the smaller, when both are set).
fn limited(query: &TextQuery, max_results: Option<usize>) -> TextQuery {
    let mut query = query.clone();
    query.limit.max_results = match (query.limit.max_results, max_results) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    query
}

fn redact_results(mut found: SearchResults) -> SearchResults {
    found.matches = redact_matches(found.matches);
    found
}

/// A server's long-lived, stat-validated cache of a tree's walk and of its files' contents
/// ([`ctx_code::tree_cache::TreeCache`]), with the clock and git's global excludes files the
/// front end passes in ([`TreeCacheSettings`]; see [`crate::host::global_git_ignore_files`]).
pub struct TreeCache(ctx_code::tree_cache::TreeCache);

impl TreeCache {
    /// A cache with the given clock and global ignore files.
    pub fn with_settings(settings: TreeCacheSettings) -> Self {
        Self(ctx_code::tree_cache::TreeCache::new(settings))
    }
}

impl std::fmt::Debug for TreeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::ops::Deref for TreeCache {
    type Target = ctx_code::tree_cache::TreeCache;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// [`search`], with text searches under a directory answered through `cache` (a server's
/// long-lived, stat-validated cache of the walk and of file contents): the same results.
pub fn search_cached(
    cx: &CodeContext<'_>,
    cache: &TreeCache,
    path: &Path,
    kind: &SearchKind,
    max_results: Option<usize>,
) -> Result<SearchResults, CodeError> {
    if let SearchKind::Text(query) = kind {
        let (full, prefix) = cx.resolve(path)?;
        if full.is_dir() {
            let confined = cx.confine(&full, path)?;
            let reader = confined.reader()?;
            return ctx_code::tree_cache::search_cached(
                &cache.0,
                &confined.walk_root,
                &prefix,
                &limited(query, max_results),
                Some(&reader),
            )
            .map(redact_results);
        }
    }
    search(cx, path, kind, max_results)
}

/// The project root for repository-wide operations: the git work tree, else `cwd`.
fn project_root(cwd: &Path) -> (PathBuf, Option<ctx_code::git2::Repository>) {
    match ctx_code::git::open_repository(cwd) {
        Ok(repo) => {
            let root = ctx_code::git::workdir(&repo);
            let root = root.canonicalize().unwrap_or(root);
            (root, Some(repo))
        }
        Err(_) => (cwd.to_owned(), None),
    }
}

/// `related` plus whether git history was available.
#[derive(Debug, Clone, Serialize)]
pub struct RelatedReport {
    #[serde(flatten)]
    pub related: Related,
    /// Set when co-change could not be computed (not a git repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Files related to `file`: imports, importers, co-changed files (over the last `history`
/// commits, top `limit`), tests.
pub fn related(
    cx: &CodeContext<'_>,
    file: &Path,
    history: usize,
    limit: usize,
) -> Result<RelatedReport, CodeError> {
    let (full, _) = cx.resolve(file)?;
    if full.is_dir() {
        return Err(CodeError::IsDirectory {
            path: file.to_owned(),
        });
    }
    let full = full.canonicalize().map_err(|source| CodeError::Io {
        path: file.to_owned(),
        source,
    })?;
    let cwd = cx.cwd.canonicalize().unwrap_or_else(|_| cx.cwd.clone());
    let (top, repo) = project_root(&cwd);
    // A sandbox below the repository's top is all that may be read: imports are resolved
    // inside it, and its paths are reported from the top (`shown` is its place there).
    let (root, shown) = match cx.sandbox.map(ctx_fs::Sandbox::root) {
        Some(sandbox) if sandbox != top && sandbox.starts_with(&top) => (
            sandbox.to_owned(),
            sandbox
                .strip_prefix(&top)
                .map(display_prefix)
                .unwrap_or_default(),
        ),
        _ => (top, String::new()),
    };
    let from_top = |path: &str| {
        if shown.is_empty() {
            path.to_owned()
        } else {
            format!("{shown}/{path}")
        }
    };
    let rel = full
        .strip_prefix(&root)
        .map(display_prefix)
        .map_err(|_| CodeError::NotFound {
            path: file.to_owned(),
        })?;
    let confined = cx.confine(&root, &root)?;
    let reader = confined.reader()?;
    let root = confined.walk_root.clone();
    let opts = SummarizeOptions {
        reader: Some(&reader),
        ..SummarizeOptions::default()
    };
    let entries = ctx_fs::walk(&root, &walk_options(cx.cancel.as_ref()))?;
    let cache = cx.cache();
    let cache_ref = cache.as_ref().map(|c| c as &dyn SummaryCache);
    let files: BTreeSet<String> = entries.iter().map(|e| e.rel.clone()).collect();
    // Manifests (go.mod, Cargo.toml) are read through the sandbox, like every listed file.
    let layout = ProjectLayout::new(files, |p| {
        String::from_utf8(reader.read(&root.join(p)).ok()?).ok()
    });
    // Each summary is looked at as it is made and let go: only what it tells of the file
    // is kept (the whole tree's summaries were 480 MB of the registry's sources).
    let mut finder = ctx_code::related::RelatedFinder::new(&rel, &layout);
    ctx_code::summarize_files_each(&entries, opts, cache_ref, &mut |summary| {
        finder.add(&summary);
        Ok(())
    })?;
    if !finder.has_source() {
        // The file may be ignored or hidden; it still gets its own imports resolved.
        if let Ok(summary) = ctx_code::summarize_file(&full, &rel, opts, cache_ref) {
            finder.add(&summary);
        }
    }
    let mut related = finder.finish();
    for list in [
        &mut related.imports,
        &mut related.imported_by,
        &mut related.test_files,
    ] {
        for file in list.iter_mut() {
            file.path = from_top(&file.path);
        }
    }
    related.source = from_top(&related.source);
    let note = match &repo {
        Some(repo) => {
            let co = ctx_code::git::co_changed(repo, &from_top(&rel), history)?;
            related.co_changed = co
                .into_iter()
                .take(limit)
                .map(|(path, count)| RelatedFile {
                    path,
                    reason: format!(
                        "{count} commit{} together",
                        if count == 1 { "" } else { "s" }
                    ),
                })
                .collect();
            None
        }
        None => Some("not a git repository: co-changed files need git history".to_owned()),
    };
    Ok(RelatedReport { related, note })
}

/// `status`: the project and, when it is a git repository, its state.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectStatus {
    pub project_name: String,
    pub project_type: Option<String>,
    pub is_git_repo: bool,
    pub branch: Option<String>,
    pub is_dirty: bool,
    pub staged_count: usize,
    pub modified_count: usize,
    pub untracked_count: usize,
    pub recent_commits: Vec<CommitInfo>,
    pub hot_directories: Vec<HotDirectory>,
    pub diff_stats: [usize; 2],
    /// Why some facts are missing (outside a git repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Reads the project's status. `now` is Unix seconds (for relative commit times).
pub fn status(cwd: &Path, now: i64) -> Result<ProjectStatus, CodeError> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
    let (root, repo) = project_root(&cwd);
    let project_type = ctx_code::lang::detect_project_type(&root).map(str::to_owned);
    let project_name = project_name(&root);
    let mut out = ProjectStatus {
        project_name,
        project_type,
        is_git_repo: repo.is_some(),
        branch: None,
        is_dirty: false,
        staged_count: 0,
        modified_count: 0,
        untracked_count: 0,
        recent_commits: Vec::new(),
        hot_directories: Vec::new(),
        diff_stats: [0, 0],
        note: None,
    };
    match repo {
        Some(repo) => {
            let st = ctx_code::git::status(&repo, now, 5, 100)?;
            out.branch = Some(st.branch);
            out.is_dirty = st.is_dirty;
            out.staged_count = st.staged_count;
            out.modified_count = st.modified_count;
            out.untracked_count = st.untracked_count;
            // A commit message can hold a secret (a token pasted into it): redacted as files
            // are, for every front end (`ctx status`, MCP `ctx_status`).
            out.recent_commits = st
                .recent_commits
                .into_iter()
                .map(|mut commit| {
                    if let Some((text, _)) = ctx_core::fragments::redact_window(&commit.message) {
                        commit.message = text;
                    }
                    commit
                })
                .collect();
            out.hot_directories = st.hot_directories;
            out.diff_stats = st.diff_stats;
        }
        None => {
            out.note = Some(
                "not a git repository: branch, changes and history are unavailable".to_owned(),
            );
        }
    }
    Ok(out)
}

/// The project's name from its manifest (`Cargo.toml`, `package.json`, `pyproject.toml`,
/// `go.mod`), else the directory name.
fn project_name(root: &Path) -> String {
    let read = |name: &str| std::fs::read_to_string(root.join(name)).ok();
    let toml_name = |text: &str, table: &str| {
        let mut inside = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                inside = line == table;
            } else if inside
                && let Some(rest) = line.strip_prefix("name")
                && let Some(value) = rest.trim_start().strip_prefix('=')
            {
                return Some(value.trim().trim_matches(['"', '\'']).to_owned());
            }
        }
        None
    };
    let from_manifest = read("Cargo.toml")
        .and_then(|t| toml_name(&t, "[package]"))
        .or_else(|| {
            read("package.json")
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v.get("name")?.as_str().map(str::to_owned))
        })
        .or_else(|| read("pyproject.toml").and_then(|t| toml_name(&t, "[project]")))
        .or_else(|| {
            read("go.mod").and_then(|t| {
                t.lines()
                    .find_map(|l| l.trim().strip_prefix("module "))
                    .map(|m| m.trim().rsplit('/').next().unwrap_or(m).to_owned())
            })
        });
    from_manifest.unwrap_or_else(|| {
        root.file_name()
            .map_or_else(|| "/".to_owned(), |n| n.to_string_lossy().into_owned())
    })
}

/// The widened diff of `head` (default: the working tree with the index) against `base`
/// (default `HEAD`).
///
/// With `sandbox` (a server's workspace), working-tree files are read through it and a file
/// whose diff libgit2 read from elsewhere (a symlink swapped in during the read) is left out.
pub fn diff_context(
    cwd: &Path,
    base: Option<&str>,
    head: Option<&str>,
    sandbox: Option<&ctx_fs::Sandbox>,
) -> Result<DiffContext, CodeError> {
    let repo = ctx_code::git::open_repository(cwd)?;
    let workdir = ctx_code::git::workdir(&repo);
    // Repository paths are read through the sandbox (which may start below the repository
    // top: files above it are refused, as everything outside it is).
    let walk = sandbox
        .map(|sandbox| ctx_fs::WalkReader::new(sandbox, sandbox.root()))
        .transpose()
        .map_err(|err| CodeError::Io {
            path: workdir.clone(),
            source: std::io::Error::other(err),
        })?;
    let read = |path: &str| walk.as_ref()?.read(&workdir.join(path)).ok();
    let reader: Option<ctx_code::diff_context::WorkdirReader<'_>> = walk
        .is_some()
        .then_some(&read as ctx_code::diff_context::WorkdirReader<'_>);
    let mut diff = ctx_code::diff_context::diff_context(&repo, base, head, reader)?;
    for file in &mut diff.files {
        for hunk in &mut file.hunks {
            // Redacted as a whole (a PEM block spans lines), line count kept.
            redact_lines(&mut hunk.lines);
        }
    }
    Ok(diff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_lines_keep_their_count_and_no_key_line() {
        let body = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbtPkZc4dd7LH6Hy";
        let mut lines: Vec<String> = [
            "+KEY = \"\"\"-----BEGIN RSA PRIVATE KEY-----",
            &format!("+{body}"),
            &format!("+{body}"),
            "+-----END RSA PRIVATE KEY-----\"\"\"",
            " def after():",
        ]
        .iter()
        .map(|l| (*l).to_owned())
        .collect();
        redact_lines(&mut lines);
        assert_eq!(lines.len(), 5);
        assert!(lines.iter().all(|l| !l.contains(body)), "{lines:?}");
        assert_eq!(lines[4], " def after():");
    }

    #[test]
    fn display_prefixes() {
        assert_eq!(display_prefix(Path::new("src/")), "src");
        assert_eq!(display_prefix(Path::new(".")), "");
        assert_eq!(display_prefix(Path::new("./a/../b")), "b");
        assert_eq!(display_prefix(Path::new("../x")), "../x");
    }
}
