//! File summaries (language, lines, symbols, imports), computed in parallel and cached by
//! content hash and extractor version, so an unchanged tree is never parsed twice.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ctx_fs::WalkEntry;
use serde::{Deserialize, Serialize};

use crate::error::CodeError;
use crate::lang::Language;
use crate::skeleton::skeleton_from_tree;
use crate::symbols::{Symbol, extract_from_tree, parse, parse_for_symbols};

/// Files larger than this are skipped (generated code, data dumps).
pub const MAX_SOURCE_BYTES: u64 = 8 * 1024 * 1024;

/// The key of a cached summary: what was parsed and by which extractor.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CacheKey {
    /// `blake3:<hex>` of the file's bytes.
    pub content_hash: String,
    /// [`Language::extractor_key`]: language, grammar ABI and extractor version.
    pub extractor: String,
}

/// What identifies a file's state without reading it: when path, size, modification time and
/// inode are all unchanged, the content (and so its hash) is taken as unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp<'a> {
    /// The absolute path.
    pub path: &'a Path,
    pub size: u64,
    pub mtime_ns: i64,
    pub inode: u64,
}

impl<'a> FileStamp<'a> {
    /// The stamp of a walked file; `None` when the path is relative or the time unknown.
    pub fn of(entry: &'a WalkEntry) -> Option<Self> {
        (entry.path.is_absolute() && entry.mtime_ns != 0 && !entry.is_dir).then_some(Self {
            path: &entry.path,
            size: entry.size,
            mtime_ns: entry.mtime_ns,
            inode: entry.inode,
        })
    }
}

/// Where summaries are cached (the store's `code_summaries` table, through the facade).
///
/// The summary itself is always keyed by content hash; the stamp methods only let a run skip
/// reading and hashing a file whose stamp is unchanged since its hash was remembered.
pub trait SummaryCache {
    /// The cached payloads for `keys`, in order (`None` for a miss).
    fn get_many(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, ctx_core::BoxError>;
    /// Stores payloads.
    fn put_many(&self, entries: &[(CacheKey, Vec<u8>)]) -> Result<(), ctx_core::BoxError>;
    /// For each stamp, the key remembered for exactly that stamp (`None` when unknown or when
    /// any part of the stamp changed).
    fn stamped_keys(
        &self,
        stamps: &[FileStamp<'_>],
    ) -> Result<Vec<Option<CacheKey>>, ctx_core::BoxError> {
        Ok(vec![None; stamps.len()])
    }
    /// Remembers the key of each file as read at its stamp. An implementation must skip
    /// stamps too recent to trust (a file rewritten within the clock's resolution keeps its
    /// modification time).
    fn remember_stamps(
        &self,
        entries: &[(FileStamp<'_>, CacheKey)],
    ) -> Result<(), ctx_core::BoxError> {
        let _ = entries;
        Ok(())
    }
}

/// What is cached per content: everything in a summary but the path. Stored as postcard
/// (compact binary, about half the size of JSON and several times faster to decode; a warm
/// run reads every payload). A payload that does not decode is treated as a miss.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CachedSummary {
    lines: usize,
    symbols: Vec<Symbol>,
    imports: Vec<String>,
    has_errors: bool,
}

/// The summary of one source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileSummary {
    /// The path relative to the walk root, `/`-separated.
    pub path: String,
    pub language: Language,
    pub lines: usize,
    pub symbols: Vec<Symbol>,
    /// Import statements as written.
    pub imports: Vec<String>,
    /// Whether the file has syntax errors (its symbols may be partial).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub has_errors: bool,
    /// The code with bodies elided, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skeleton: Option<String>,
}

/// A file left out of a summary run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// How much work a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SummaryStats {
    /// Summaries taken from the cache.
    pub cached: usize,
    /// Files parsed.
    pub parsed: usize,
}

/// The result of summarizing a set of files.
#[derive(Debug, Default)]
pub struct Summaries {
    /// Summaries in the order of the input entries.
    pub files: Vec<FileSummary>,
    pub skipped: Vec<Skipped>,
    pub stats: SummaryStats,
}

/// How to summarize.
#[derive(Debug, Clone, Copy, Default)]
pub struct SummarizeOptions<'a> {
    /// Also produce skeletons (always parses).
    pub skeleton: bool,
    /// Worker threads; 0 uses the available parallelism.
    pub threads: usize,
    /// Opens the files through the workspace sandbox. Every caller that serves a user or an
    /// agent sets it (the `ctx` facade always does); `None` reads by path, for tools and
    /// tests over trees of their own.
    pub reader: Option<&'a ctx_fs::WalkReader<'a>>,
}

/// Reads a walked file by its path: through the sandbox when a reader is given (a probe and
/// an open), else directly. [`read_walked`] opens once when the walk entry is at hand.
pub fn read_path(reader: Option<&ctx_fs::WalkReader<'_>>, path: &Path) -> std::io::Result<Vec<u8>> {
    match reader {
        Some(reader) => reader.read(path),
        None => std::fs::read(path),
    }
}

/// Reads a file a walk listed: through the sandbox when a reader is given (opened once and
/// checked against the walk's own stat of it, see [`ctx_fs::WalkReader::read_entry`]), else
/// by path.
pub fn read_walked(
    reader: Option<&ctx_fs::WalkReader<'_>>,
    entry: &WalkEntry,
) -> std::io::Result<Vec<u8>> {
    match reader {
        Some(reader) => reader.read_entry(entry),
        None => std::fs::read(&entry.path),
    }
}

/// Summarizes `entries` (files from [`ctx_fs::walk`]). Files in unsupported languages,
/// binary, unreadable or too large files are skipped with a reason; they never fail the run.
pub fn summarize_files(
    entries: &[WalkEntry],
    opts: SummarizeOptions<'_>,
    cache: Option<&dyn SummaryCache>,
) -> Result<Summaries, CodeError> {
    let mut files = Vec::new();
    let (skipped, stats) = summarize_files_each(entries, opts, cache, &mut |file| {
        files.push(file);
        Ok(())
    })?;
    Ok(Summaries {
        files,
        skipped,
        stats,
    })
}

/// Files are read, parsed and handed on in chunks of about this many bytes (or
/// [`CHUNK_FILES`] files), so a run holds one chunk's contents and summaries, not the tree's.
const CHUNK_BYTES: u64 = 8 << 20;
/// Most files in one chunk.
const CHUNK_FILES: usize = 1024;

/// [`summarize_files`], handing each summary to `on_file` in the order of `entries` as soon as
/// its chunk is done instead of collecting them: memory is bounded by a chunk of files, not by
/// the tree. Returns the skipped files (sorted by path) and the counts. An error from
/// `on_file` stops the run and is returned.
pub fn summarize_files_each(
    entries: &[WalkEntry],
    opts: SummarizeOptions<'_>,
    cache: Option<&dyn SummaryCache>,
    on_file: &mut dyn FnMut(FileSummary) -> Result<(), CodeError>,
) -> Result<(Vec<Skipped>, SummaryStats), CodeError> {
    summarize_in_chunks(entries, opts, cache, (CHUNK_BYTES, CHUNK_FILES), on_file)
}

/// [`summarize_files_each`] with chunks of at most `limits` (bytes, files).
fn summarize_in_chunks(
    entries: &[WalkEntry],
    opts: SummarizeOptions<'_>,
    cache: Option<&dyn SummaryCache>,
    (chunk_bytes, chunk_files): (u64, usize),
    on_file: &mut dyn FnMut(FileSummary) -> Result<(), CodeError>,
) -> Result<(Vec<Skipped>, SummaryStats), CodeError> {
    let mut skipped = Vec::new();
    let mut candidates: Vec<(&WalkEntry, Language)> = Vec::new();
    for entry in entries.iter().filter(|e| !e.is_dir) {
        match Language::from_path(Path::new(&entry.rel)) {
            Some(lang) if entry.size <= MAX_SOURCE_BYTES => candidates.push((entry, lang)),
            Some(_) => skipped.push(Skipped {
                path: entry.rel.clone(),
                reason: format!("larger than {MAX_SOURCE_BYTES} bytes"),
            }),
            None => skipped.push(Skipped {
                path: entry.rel.clone(),
                reason: "unsupported language".to_owned(),
            }),
        }
    }

    // This thread stores fresh summaries in batches while the workers parse, so the cache
    // write is not left for the end.
    let mut fresh: Vec<(CacheKey, Vec<u8>)> = Vec::new();
    let mut fresh_bytes = 0usize;
    let mut stats = SummaryStats::default();
    let mut rest = candidates.as_slice();
    while !rest.is_empty() {
        let mut bytes = 0u64;
        let mut len = 0;
        while len < rest.len() && len < chunk_files && (len == 0 || bytes < chunk_bytes) {
            bytes += rest[len].0.size;
            len += 1;
        }
        let (chunk, later) = rest.split_at(len);
        rest = later;
        summarize_chunk(
            chunk,
            opts,
            cache,
            &mut Chunked {
                fresh: &mut fresh,
                fresh_bytes: &mut fresh_bytes,
                stats: &mut stats,
                skipped: &mut skipped,
            },
            on_file,
        )?;
    }
    store_fresh(cache, &mut fresh)?;
    skipped.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok((skipped, stats))
}

/// What a run carries from one chunk to the next.
struct Chunked<'a> {
    /// Fresh payloads not stored yet.
    fresh: &'a mut Vec<(CacheKey, Vec<u8>)>,
    fresh_bytes: &'a mut usize,
    stats: &'a mut SummaryStats,
    skipped: &'a mut Vec<Skipped>,
}

/// Stores fresh payloads (one row for files with the same bytes) and empties the batch.
fn store_fresh(
    cache: Option<&dyn SummaryCache>,
    batch: &mut Vec<(CacheKey, Vec<u8>)>,
) -> Result<(), CodeError> {
    batch.sort_by(|a, b| a.0.cmp(&b.0));
    batch.dedup_by(|a, b| a.0 == b.0);
    let result = match cache {
        Some(cache) if !batch.is_empty() => cache.put_many(batch).map_err(CodeError::Cache),
        _ => Ok(()),
    };
    batch.clear();
    result
}

/// Summarizes one chunk of candidates and hands its summaries on, in order.
fn summarize_chunk(
    candidates: &[(&WalkEntry, Language)],
    opts: SummarizeOptions<'_>,
    cache: Option<&dyn SummaryCache>,
    carried: &mut Chunked<'_>,
    on_file: &mut dyn FnMut(FileSummary) -> Result<(), CodeError>,
) -> Result<(), CodeError> {
    // Files whose stamp is unchanged since their hash was remembered are not read (unless a
    // skeleton needs their text).
    let stamps: Vec<Option<FileStamp<'_>>> =
        candidates.iter().map(|(e, _)| FileStamp::of(e)).collect();
    let mut known: Vec<Option<CacheKey>> = vec![None; candidates.len()];
    if let Some(cache) = cache
        && !opts.skeleton
    {
        let (index, asked): (Vec<usize>, Vec<FileStamp<'_>>) = stamps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (i, s)))
            .unzip();
        if !asked.is_empty() {
            for (i, key) in index
                .into_iter()
                .zip(cache.stamped_keys(&asked).map_err(CodeError::Cache)?)
            {
                // A key remembered by another extractor version names a summary this one
                // would not make: read the file again.
                known[i] = key.filter(|k| k.extractor == candidates[i].1.extractor_key());
            }
        }
    }

    // Read and hash the others in parallel.
    let work: Vec<(&WalkEntry, Language, Option<CacheKey>)> = candidates
        .iter()
        .zip(known)
        .map(|(&(entry, lang), key)| (entry, lang, key))
        .collect();
    let loaded: Vec<Result<Loaded, Skipped>> =
        par_map(&work, opts.threads, |(entry, lang, key)| match key {
            Some(key) => Ok(Loaded {
                entry,
                lang: key
                    .extractor
                    .split(':')
                    .next()
                    .and_then(Language::from_name)
                    .unwrap_or(*lang),
                bytes: None,
                key: key.clone(),
            }),
            None => load(entry, *lang, opts.reader),
        });
    drop(work);
    let mut files: Vec<Loaded> = Vec::with_capacity(loaded.len());
    for item in loaded {
        match item {
            Ok(file) => files.push(file),
            Err(skip) => carried.skipped.push(skip),
        }
    }

    // Look up the cache (one batch, on this thread).
    let keys: Vec<CacheKey> = files.iter().map(|f| f.key.clone()).collect();
    let cached: Vec<Option<Vec<u8>>> = match cache {
        Some(cache) if !keys.is_empty() => cache.get_many(&keys).map_err(CodeError::Cache)?,
        _ => vec![None; files.len()],
    };
    drop(keys);

    // Decode hits and parse what the cache did not have (or everything, for skeletons), in
    // parallel.
    // Largest files first, so that no core is left parsing one big file at the end.
    let mut work: Vec<(usize, &Loaded, Option<Vec<u8>>)> = files
        .iter()
        .zip(cached)
        .enumerate()
        .map(|(i, (file, hit))| (i, file, hit))
        .collect();
    let cost = |(_, file, hit): &(usize, &Loaded, Option<Vec<u8>>)| {
        if hit.is_some() {
            0
        } else {
            file.bytes.as_ref().map_or(0, Vec::len)
        }
    };
    work.sort_by_key(|item| std::cmp::Reverse(cost(item)));
    let mut write_error: Option<CodeError> = None;
    let mut done: Vec<(usize, Finished)> = par_map_streaming(
        &work,
        opts.threads,
        |(i, file, hit)| (*i, finish(file, hit.as_deref(), opts)),
        |(_, finished)| {
            if let Finished::Summary { payload, key, .. } = finished
                && let Some(payload) = payload.take()
            {
                *carried.fresh_bytes += payload.len();
                carried.fresh.push((key.clone(), payload));
                if *carried.fresh_bytes >= WRITE_BATCH_BYTES {
                    if let Err(err) = store_fresh(cache, carried.fresh)
                        && write_error.is_none()
                    {
                        write_error = Some(err);
                    }
                    *carried.fresh_bytes = 0;
                }
            }
        },
    );
    drop(work);
    if let Some(err) = write_error {
        return Err(err);
    }
    // Back in input order.
    done.sort_unstable_by_key(|(i, _)| *i);

    let mut read: Vec<(FileStamp<'_>, CacheKey)> = Vec::new();
    for ((_, done), file) in done.into_iter().zip(&files) {
        match done {
            Finished::Summary {
                summary,
                parsed,
                key,
                was_read,
                ..
            } => {
                if parsed {
                    carried.stats.parsed += 1;
                } else {
                    carried.stats.cached += 1;
                }
                if was_read && let Some(stamp) = FileStamp::of(file.entry) {
                    read.push((stamp, key));
                }
                on_file(summary)?;
            }
            Finished::Skipped(skip) => carried.skipped.push(skip),
        }
    }
    if let Some(cache) = cache
        && !read.is_empty()
    {
        // Stamps point at summaries: those of this chunk are stored first.
        store_fresh(Some(cache), carried.fresh)?;
        *carried.fresh_bytes = 0;
        cache.remember_stamps(&read).map_err(CodeError::Cache)?;
    }
    Ok(())
}

struct Loaded<'a> {
    entry: &'a WalkEntry,
    lang: Language,
    /// The file's bytes; `None` when its stamp proved the key and they were not read.
    bytes: Option<Vec<u8>>,
    key: CacheKey,
}

fn load<'e>(
    entry: &'e WalkEntry,
    lang: Language,
    reader: Option<&ctx_fs::WalkReader<'_>>,
) -> Result<Loaded<'e>, Skipped> {
    let bytes = read_walked(reader, entry).map_err(|err| Skipped {
        path: entry.rel.clone(),
        reason: format!("cannot read: {err}"),
    })?;
    if is_binary(&bytes) {
        return Err(Skipped {
            path: entry.rel.clone(),
            reason: "binary file".to_owned(),
        });
    }
    let lang = Language::detect(Path::new(&entry.rel), &bytes).unwrap_or(lang);
    let key = CacheKey {
        content_hash: format!("blake3:{}", blake3::hash(&bytes).to_hex()),
        extractor: lang.extractor_key(),
    };
    Ok(Loaded {
        entry,
        lang,
        bytes: Some(bytes),
        key,
    })
}

enum Finished {
    Summary {
        summary: FileSummary,
        /// The payload to cache, for a freshly parsed file.
        payload: Option<Vec<u8>>,
        /// Whether the file was parsed (not found in the cache).
        parsed: bool,
        key: CacheKey,
        /// Whether the file was read (so its stamp can be remembered).
        was_read: bool,
    },
    /// The file changed into something not summarized (binary, unreadable) since its stamp.
    Skipped(Skipped),
}

fn redact_in_place(text: &mut String) {
    if let Some((redacted, _)) = ctx_core::fragments::redact_window(text) {
        *text = redacted;
    }
}

fn finish(file: &Loaded<'_>, hit: Option<&[u8]>, opts: SummarizeOptions<'_>) -> Finished {
    let want_skeleton = opts.skeleton;
    let decoded: Option<CachedSummary> = hit.and_then(|p| postcard::from_bytes(p).ok());
    // A stamp hit whose summary is gone (or unreadable) reads the file after all.
    let reloaded;
    let file = if decoded.is_none() && file.bytes.is_none() {
        match load(file.entry, file.lang, opts.reader) {
            Ok(loaded) => {
                reloaded = loaded;
                &reloaded
            }
            Err(skip) => return Finished::Skipped(skip),
        }
    } else {
        file
    };
    let bytes = file.bytes.as_deref().unwrap_or_default();
    let tree = if want_skeleton {
        parse(file.lang, bytes)
    } else if decoded.is_none() {
        parse_for_symbols(file.lang, bytes)
    } else {
        None
    };
    let skeleton = match (&tree, want_skeleton) {
        (Some(tree), true) => Some(skeleton_from_tree(file.lang, bytes, tree)),
        _ => None,
    };
    let parsed = decoded.is_none();
    let (summary, payload) = if let Some(summary) = decoded {
        (summary, None)
    } else {
        let mut extracted = tree
            .as_ref()
            .map(|t| extract_from_tree(file.lang, bytes, t))
            .unwrap_or_default();
        // Signatures and doc comments quote the source (a constant's value, a default
        // argument): redacted here, so neither the cache nor any answer holds a secret.
        for symbol in &mut extracted.symbols {
            redact_in_place(&mut symbol.signature);
            if let Some(doc) = &mut symbol.doc_comment {
                redact_in_place(doc);
            }
        }
        let summary = CachedSummary {
            lines: count_lines(bytes),
            symbols: extracted.symbols,
            imports: extracted.imports,
            has_errors: extracted.has_errors || tree.is_none(),
        };
        let payload = postcard::to_stdvec(&summary).ok();
        (summary, payload)
    };
    Finished::Summary {
        summary: FileSummary {
            path: file.entry.rel.clone(),
            language: file.lang,
            lines: summary.lines,
            symbols: summary.symbols,
            imports: summary.imports,
            has_errors: summary.has_errors,
            skeleton,
        },
        payload,
        parsed,
        key: file.key.clone(),
        was_read: file.bytes.is_some(),
    }
}

/// Whether the bytes look binary (a NUL byte in the first 8 KiB, as git and ripgrep decide).
pub fn is_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some()
}

/// Lines in a text: newlines, plus one for a last line without a newline.
pub fn count_lines(bytes: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    if bytes.last().is_some_and(|&b| b != b'\n') {
        newlines + 1
    } else {
        newlines
    }
}

/// Summarizes a single file, with errors for what a directory run would skip.
pub fn summarize_file(
    path: &Path,
    rel: &str,
    opts: SummarizeOptions<'_>,
    cache: Option<&dyn SummaryCache>,
) -> Result<FileSummary, CodeError> {
    let meta = std::fs::metadata(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            CodeError::NotFound {
                path: PathBuf::from(rel),
            }
        } else {
            CodeError::Io {
                path: PathBuf::from(rel),
                source,
            }
        }
    })?;
    if meta.is_dir() {
        return Err(CodeError::IsDirectory {
            path: PathBuf::from(rel),
        });
    }
    if Language::from_path(path).is_none() {
        return Err(CodeError::Unsupported {
            path: PathBuf::from(rel),
        });
    }
    let entry = WalkEntry::from_metadata(path.to_owned(), rel.to_owned(), &meta);
    let mut run = summarize_files(std::slice::from_ref(&entry), opts, cache)?;
    if let Some(file) = run.files.pop() {
        return Ok(file);
    }
    let reason = run.skipped.pop().map(|s| s.reason).unwrap_or_default();
    if reason == "binary file" {
        return Err(CodeError::Binary {
            path: PathBuf::from(rel),
        });
    }
    Err(CodeError::Io {
        path: PathBuf::from(rel),
        source: std::io::Error::other(reason),
    })
}

/// Fresh summaries are stored in batches of about this many bytes.
const WRITE_BATCH_BYTES: usize = 8 << 20;

/// Maps `f` over `items` on up to `threads` threads (0: available parallelism), the calling
/// thread one of them, handing each result to `sink` on the calling thread as soon as it is
/// done (in no particular order); returns the results in item order.
///
/// The calling thread takes items too and hands over what the others finished between its
/// own items, so it waits on them only at the end: a receiver blocked on every result made
/// a wake-up (a `futex` call and a context switch) per file.
pub fn par_map_streaming<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
    mut sink: impl FnMut(&mut R),
) -> Vec<R> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    } else {
        threads
    }
    .min(items.len().max(1));
    if threads <= 1 || items.len() < 2 {
        return items
            .iter()
            .map(|item| {
                let mut result = f(item);
                sink(&mut result);
                result
            })
            .collect();
    }
    let next = AtomicUsize::new(0);
    let (sender, receiver) = std::sync::mpsc::channel::<(usize, R)>();
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    let mut take = |(i, mut result): (usize, R)| {
        sink(&mut result);
        slots[i] = Some(result);
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            let sender = sender.clone();
            let (next, f) = (&next, &f);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    if sender.send((i, f(item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            take((i, f(item)));
            receiver.try_iter().for_each(&mut take);
        }
        receiver.into_iter().for_each(&mut take);
    });
    slots
        .into_iter()
        .map(|slot| slot.expect("a worker thread panicked"))
        .collect()
}

/// Maps `f` over `items` on up to `threads` threads (0: available parallelism), keeping order.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    par_map_streaming(items, threads, f, |_| {})
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Default)]
    struct MemoryCache(RefCell<BTreeMap<CacheKey, Vec<u8>>>);

    /// A cache that also remembers stamps (as the store does, minus the age check).
    #[derive(Default)]
    struct StampingCache {
        summaries: MemoryCache,
        stamps: RefCell<BTreeMap<PathBuf, (u64, i64, u64, CacheKey)>>,
    }

    impl SummaryCache for StampingCache {
        fn get_many(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, ctx_core::BoxError> {
            self.summaries.get_many(keys)
        }
        fn put_many(&self, entries: &[(CacheKey, Vec<u8>)]) -> Result<(), ctx_core::BoxError> {
            self.summaries.put_many(entries)
        }
        fn stamped_keys(
            &self,
            stamps: &[FileStamp<'_>],
        ) -> Result<Vec<Option<CacheKey>>, ctx_core::BoxError> {
            let known = self.stamps.borrow();
            Ok(stamps
                .iter()
                .map(|s| {
                    known.get(s.path).and_then(|(size, mtime, inode, key)| {
                        (*size == s.size && *mtime == s.mtime_ns && *inode == s.inode)
                            .then(|| key.clone())
                    })
                })
                .collect())
        }
        fn remember_stamps(
            &self,
            entries: &[(FileStamp<'_>, CacheKey)],
        ) -> Result<(), ctx_core::BoxError> {
            let mut known = self.stamps.borrow_mut();
            for (s, key) in entries {
                known.insert(
                    s.path.to_owned(),
                    (s.size, s.mtime_ns, s.inode, key.clone()),
                );
            }
            Ok(())
        }
    }

    #[test]
    fn an_unchanged_stamp_skips_reading_and_a_changed_one_rereads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.rs");
        std::fs::write(&path, "fn one() {}\n").expect("write");
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        let set_time = |t| {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .expect("open")
                .set_modified(t)
                .expect("mtime");
        };
        set_time(when);
        let walk = || ctx_fs::walk(dir.path(), &ctx_fs::WalkOptions::default()).expect("walk");
        let cache = StampingCache::default();
        let first =
            summarize_files(&walk(), SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(first.stats.parsed, 1);
        assert_eq!(cache.stamps.borrow().len(), 1, "the stamp is remembered");
        // Same size, same modification time, same inode: the stamp says unchanged, so the file
        // is not read (the old summary comes back). This is what the stamp trusts.
        std::fs::write(&path, "fn two() {}\n").expect("write");
        set_time(when);
        let second =
            summarize_files(&walk(), SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(second.stats.cached, 1);
        assert_eq!(second.files[0].symbols[0].name, "one", "not reread");
        // Another modification time: read, hashed and parsed again.
        set_time(when + std::time::Duration::from_secs(1));
        let third =
            summarize_files(&walk(), SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(third.stats.parsed, 1);
        assert_eq!(third.files[0].symbols[0].name, "two");
        // A stamp whose summary was dropped reads the file after all.
        cache.summaries.0.borrow_mut().clear();
        let fourth =
            summarize_files(&walk(), SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(fourth.stats.parsed, 1);
        assert_eq!(fourth.files[0].symbols[0].name, "two");
    }

    impl SummaryCache for MemoryCache {
        fn get_many(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, ctx_core::BoxError> {
            Ok(keys
                .iter()
                .map(|k| self.0.borrow().get(k).cloned())
                .collect())
        }
        fn put_many(&self, entries: &[(CacheKey, Vec<u8>)]) -> Result<(), ctx_core::BoxError> {
            self.0.borrow_mut().extend(entries.iter().cloned());
            Ok(())
        }
    }

    #[test]
    fn a_second_run_parses_nothing_and_gives_the_same_summaries() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").expect("write");
        std::fs::write(dir.path().join("b.py"), "def b():\n    pass\n").expect("write");
        std::fs::write(dir.path().join("c.txt"), "text").expect("write");
        std::fs::write(dir.path().join("d.rs"), b"\0\x01binary").expect("write");
        let entries = ctx_fs::walk(dir.path(), &ctx_fs::WalkOptions::default()).expect("walk");
        let cache = MemoryCache::default();
        let first =
            summarize_files(&entries, SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(
            first.stats,
            SummaryStats {
                cached: 0,
                parsed: 2
            }
        );
        assert_eq!(
            first.skipped,
            [
                Skipped {
                    path: "c.txt".into(),
                    reason: "unsupported language".into()
                },
                Skipped {
                    path: "d.rs".into(),
                    reason: "binary file".into()
                },
            ]
        );
        let second =
            summarize_files(&entries, SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(
            second.stats,
            SummaryStats {
                cached: 2,
                parsed: 0
            }
        );
        assert_eq!(first.files, second.files);
        assert_eq!(second.files[0].symbols[0].name, "a");
        // A change in content is a miss again.
        std::fs::write(dir.path().join("a.rs"), "fn changed() {}\n").expect("write");
        let entries = ctx_fs::walk(dir.path(), &ctx_fs::WalkOptions::default()).expect("walk");
        let third =
            summarize_files(&entries, SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(
            third.stats,
            SummaryStats {
                cached: 1,
                parsed: 1
            }
        );
        assert_eq!(third.files[0].symbols[0].name, "changed");
    }

    #[test]
    fn an_undecodable_payload_is_a_miss() {
        // A payload in another format (an older ctx wrote JSON) is parsed again and replaced.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").expect("write");
        let entries = ctx_fs::walk(dir.path(), &ctx_fs::WalkOptions::default()).expect("walk");
        let cache = MemoryCache::default();
        summarize_files(&entries, SummarizeOptions::default(), Some(&cache)).expect("run");
        for payload in cache.0.borrow_mut().values_mut() {
            *payload = br#"{"lines":1,"symbols":[],"imports":[],"has_errors":false}"#.to_vec();
        }
        let again =
            summarize_files(&entries, SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(again.stats.parsed, 1);
        assert_eq!(again.files[0].symbols[0].name, "a");
        let third =
            summarize_files(&entries, SummarizeOptions::default(), Some(&cache)).expect("run");
        assert_eq!(third.stats.cached, 1);
    }

    #[test]
    fn chunks_give_the_same_summaries_in_the_same_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..9 {
            let body = format!("fn f{i}() {{}}\n{}", "// pad\n".repeat(i * 50));
            std::fs::write(dir.path().join(format!("m{i}.rs")), body).expect("write");
        }
        std::fs::write(dir.path().join("notes.txt"), "text").expect("write");
        std::fs::write(dir.path().join("z.rs"), b"\0binary").expect("write");
        let entries = ctx_fs::walk(dir.path(), &ctx_fs::WalkOptions::default()).expect("walk");
        let whole =
            summarize_files(&entries, SummarizeOptions::default(), None).expect("one chunk");
        for limits in [(1, 100), (u64::MAX, 2), (600, 3)] {
            let cache = StampingCache::default();
            for round in 0..2 {
                let mut files = Vec::new();
                let (skipped, stats) = summarize_in_chunks(
                    &entries,
                    SummarizeOptions::default(),
                    Some(&cache),
                    limits,
                    &mut |file| {
                        files.push(file);
                        Ok(())
                    },
                )
                .expect("chunks");
                assert_eq!(files, whole.files, "{limits:?} round {round}");
                assert_eq!(skipped, whole.skipped);
                assert_eq!(stats.parsed + stats.cached, 9);
                assert_eq!(stats.cached, if round == 0 { 0 } else { 9 });
            }
        }
        // An error from the receiver stops the run.
        let mut seen = 0;
        let stopped = summarize_in_chunks(
            &entries,
            SummarizeOptions::default(),
            None,
            (u64::MAX, 2),
            &mut |_| {
                seen += 1;
                Err(CodeError::Cache("stop".into()))
            },
        );
        assert!(stopped.is_err());
        assert_eq!(seen, 1);
    }

    #[test]
    fn par_map_keeps_order() {
        let items: Vec<usize> = (0..1000).collect();
        assert_eq!(
            par_map(&items, 4, |x| x * 2),
            items.iter().map(|x| x * 2).collect::<Vec<_>>()
        );
    }

    #[test]
    fn line_counts() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\nb"), 2);
    }
}
