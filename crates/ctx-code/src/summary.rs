//! File summaries (language, lines, symbols, imports), computed in parallel and cached by
//! content hash and extractor version, so an unchanged tree is never parsed twice.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ctx_fs::WalkEntry;
use serde::{Deserialize, Serialize};

use crate::error::CodeError;
use crate::lang::Language;
use crate::skeleton::skeleton_from_tree;
use crate::symbols::{Symbol, extract_from_tree, parse};

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

/// Where summaries are cached (the store's `code_summaries` table, through the facade).
pub trait SummaryCache {
    /// The cached payloads for `keys`, in order (`None` for a miss).
    fn get_many(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, String>;
    /// Stores payloads.
    fn put_many(&self, entries: &[(CacheKey, Vec<u8>)]) -> Result<(), String>;
}

/// What is cached per content: everything in a summary but the path.
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
pub struct SummarizeOptions {
    /// Also produce skeletons (always parses).
    pub skeleton: bool,
    /// Worker threads; 0 uses the available parallelism.
    pub threads: usize,
}

/// Summarizes `entries` (files from [`ctx_fs::walk`]). Files in unsupported languages,
/// binary, unreadable or too large files are skipped with a reason; they never fail the run.
pub fn summarize_files(
    entries: &[WalkEntry],
    opts: SummarizeOptions,
    cache: Option<&dyn SummaryCache>,
) -> Result<Summaries, CodeError> {
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

    // Read and hash in parallel.
    let loaded: Vec<Result<Loaded, Skipped>> =
        par_map(&candidates, opts.threads, |&(entry, lang)| {
            load(entry, lang)
        });
    let mut files: Vec<Loaded> = Vec::with_capacity(loaded.len());
    for item in loaded {
        match item {
            Ok(file) => files.push(file),
            Err(skip) => skipped.push(skip),
        }
    }

    // Look up the cache (one batch, on this thread).
    let keys: Vec<CacheKey> = files.iter().map(|f| f.key.clone()).collect();
    let cached: Vec<Option<CachedSummary>> = match cache {
        Some(cache) if !keys.is_empty() => cache
            .get_many(&keys)
            .map_err(CodeError::Cache)?
            .into_iter()
            .map(|payload| payload.and_then(|p| serde_json::from_slice(&p).ok()))
            .collect(),
        _ => vec![None; files.len()],
    };

    // Parse what the cache did not have (or everything, for skeletons), in parallel.
    let work: Vec<(&Loaded, Option<CachedSummary>)> = files.iter().zip(cached).collect();
    let results: Vec<(FileSummary, Option<Vec<u8>>)> =
        par_map(&work, opts.threads, |(file, hit)| {
            finish(file, hit.clone(), opts.skeleton)
        });

    let mut stats = SummaryStats::default();
    let mut fresh: Vec<(CacheKey, Vec<u8>)> = Vec::new();
    let mut summaries = Vec::with_capacity(results.len());
    for ((summary, payload), (file, hit)) in results.into_iter().zip(&work) {
        if hit.is_some() {
            stats.cached += 1;
        } else {
            stats.parsed += 1;
            if let Some(payload) = payload {
                fresh.push((file.key.clone(), payload));
            }
        }
        summaries.push(summary);
    }
    if let Some(cache) = cache
        && !fresh.is_empty()
    {
        fresh.sort_by(|a, b| a.0.cmp(&b.0));
        fresh.dedup_by(|a, b| a.0 == b.0);
        cache.put_many(&fresh).map_err(CodeError::Cache)?;
    }
    skipped.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok(Summaries {
        files: summaries,
        skipped,
        stats,
    })
}

struct Loaded {
    rel: String,
    lang: Language,
    bytes: Vec<u8>,
    key: CacheKey,
}

fn load(entry: &WalkEntry, lang: Language) -> Result<Loaded, Skipped> {
    let bytes = std::fs::read(&entry.path).map_err(|err| Skipped {
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
        rel: entry.rel.clone(),
        lang,
        bytes,
        key,
    })
}

fn finish(
    file: &Loaded,
    hit: Option<CachedSummary>,
    want_skeleton: bool,
) -> (FileSummary, Option<Vec<u8>>) {
    let tree = if hit.is_none() || want_skeleton {
        parse(file.lang, &file.bytes)
    } else {
        None
    };
    let skeleton = match (&tree, want_skeleton) {
        (Some(tree), true) => Some(skeleton_from_tree(file.lang, &file.bytes, tree)),
        _ => None,
    };
    let (summary, payload) = if let Some(summary) = hit {
        (summary, None)
    } else {
        let extracted = tree
            .as_ref()
            .map(|t| extract_from_tree(file.lang, &file.bytes, t))
            .unwrap_or_default();
        let summary = CachedSummary {
            lines: count_lines(&file.bytes),
            symbols: extracted.symbols,
            imports: extracted.imports,
            has_errors: extracted.has_errors || tree.is_none(),
        };
        let payload = serde_json::to_vec(&summary).ok();
        (summary, payload)
    };
    (
        FileSummary {
            path: file.rel.clone(),
            language: file.lang,
            lines: summary.lines,
            symbols: summary.symbols,
            imports: summary.imports,
            has_errors: summary.has_errors,
            skeleton,
        },
        payload,
    )
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
    opts: SummarizeOptions,
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
    let entry = WalkEntry {
        path: path.to_owned(),
        rel: rel.to_owned(),
        is_dir: false,
        size: meta.len(),
    };
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

/// Maps `f` over `items` on up to `threads` threads (0: available parallelism), keeping order.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    } else {
        threads
    }
    .min(items.len().max(1));
    if threads <= 1 || items.len() < 2 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(item)));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect()
    });
    let mut all: Vec<(usize, R)> = parts.iter_mut().flat_map(std::mem::take).collect();
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Default)]
    struct MemoryCache(RefCell<BTreeMap<CacheKey, Vec<u8>>>);

    impl SummaryCache for MemoryCache {
        fn get_many(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, String> {
            Ok(keys
                .iter()
                .map(|k| self.0.borrow().get(k).cloned())
                .collect())
        }
        fn put_many(&self, entries: &[(CacheKey, Vec<u8>)]) -> Result<(), String> {
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
