//! Search: text (literal or regex, on ripgrep's `grep-searcher`), symbol definitions, and
//! call sites (tree-sitter call nodes, not text).
//!
//! Results are sorted by path (byte order) then line, so the same tree and query always give
//! the same list.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::path::Path;

use ctx_fs::{WalkEntry, WalkOptions};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Serialize;

use crate::error::CodeError;
use crate::lang::Language;
use crate::summary::{SummarizeOptions, SummaryCache, par_map, read_walked, summarize_files};
use crate::symbols::{calls, parse};

/// A line shown around a match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextLine {
    pub line: u64,
    pub text: String,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchMatch {
    /// Path relative to the search root, `/`-separated.
    pub path: String,
    /// 1-based line.
    pub line: u64,
    /// 1-based byte column of the (first) match in the line.
    pub column: u64,
    /// The matching line (text search and callers) or `[kind] signature` (symbols).
    pub text: String,
    /// Lines before and after, when context was asked for.
    pub context: Vec<ContextLine>,
    /// For symbols: the symbol's kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// For symbols: the enclosing scope; for callers: the calling function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// For symbols: no definition has the exact name, and this one's name contains it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
}

/// A text query.
#[derive(Debug, Clone, Default)]
pub struct TextQuery {
    pub pattern: String,
    /// Treat the pattern as a regular expression (Rust `regex` syntax, as ripgrep).
    pub regex: bool,
    pub ignore_case: bool,
    /// Lines of context before and after each match.
    pub context: usize,
    pub threads: usize,
    /// What the search keeps (every match is counted): [`SearchLimit::default`] keeps up to
    /// [`DEFAULT_MAX_BYTES`] of matches, whatever the size of the tree or its files.
    pub limit: SearchLimit,
}

/// How much of a text search's answer is kept in memory while it runs. Matches are kept in
/// (path, line) order: the answer is always the first matches in that order, the same
/// whatever order the threads find them in, and every match is counted in
/// [`SearchResults::total`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimit {
    /// Keep at most this many matches.
    pub max_results: Option<usize>,
    /// Keep matches (their text, context and path) up to this many bytes.
    pub max_bytes: usize,
}

/// The bytes of matches a text search keeps unless told otherwise: far more than any page of
/// an answer shows, and small enough that a search for `INFO` over a gigabyte of logs stays
/// within tens of megabytes.
pub const DEFAULT_MAX_BYTES: usize = 16 << 20;

/// A shown line (a match or its context) is cut after this many bytes, as ripgrep's
/// `--max-columns` does: one line of a minified file or a log can be megabytes long.
pub const MAX_LINE_BYTES: usize = 4096;

impl Default for SearchLimit {
    fn default() -> Self {
        Self {
            max_results: None,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// The answer of a text search: the first matches in (path, line) order that fit its
/// [`SearchLimit`], and how many there were in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchResults {
    pub matches: Vec<SearchMatch>,
    /// Every match found, kept or not.
    pub total: u64,
    /// Files that could not be searched (refused by the sandbox, unreadable), in path order,
    /// at most [`MAX_SKIPPED_LISTED`]; `skipped_total` counts them all.
    pub skipped: Vec<SkippedFile>,
    pub skipped_total: u64,
}

/// A file a search could not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// Skipped files a search lists at most (it counts them all).
pub const MAX_SKIPPED_LISTED: usize = 100;

impl SearchResults {
    /// Whether the limit left matches out.
    pub fn truncated(&self) -> bool {
        self.total > self.matches.len() as u64
    }
}

/// Builds the matcher for a query; an invalid regex is an error pointing at the problem.
pub fn build_matcher(query: &TextQuery) -> Result<RegexMatcher, CodeError> {
    if query.regex {
        check_regex(&query.pattern)?;
        ctx_core::pattern::check(&query.pattern).map_err(|err| CodeError::Regex {
            message: err.to_string(),
        })?;
    }
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(query.ignore_case)
        .nest_limit(ctx_core::pattern::MAX_NESTING)
        .size_limit(ctx_core::pattern::NFA_SIZE_LIMIT)
        .dfa_size_limit(ctx_core::pattern::DFA_SIZE_LIMIT);
    let built = if query.regex {
        builder.build(&query.pattern)
    } else {
        builder.build(&regex_syntax::escape(&query.pattern))
    };
    built.map_err(|err| CodeError::Regex {
        message: crate::symbols::collapse_whitespace(&err.to_string()),
    })
}

/// Checks a regex with `regex-syntax`, so the error can name the column and the problem.
fn check_regex(pattern: &str) -> Result<(), CodeError> {
    match regex_syntax::ast::parse::Parser::new().parse(pattern) {
        Ok(_) => Ok(()),
        Err(err) => {
            let column = err.span().start.column;
            let snippet: String = pattern
                .chars()
                .skip(column.saturating_sub(1))
                .take(12)
                .collect();
            Err(CodeError::Regex {
                message: format!(
                    "{} at column {column} of `{pattern}` (near `{snippet}`); use --regex only for regular expressions, or drop it to search the literal text",
                    err.kind()
                ),
            })
        }
    }
}

/// Searches the text of `entries` for `query`. Binary files are skipped (as ripgrep does).
pub fn search_text(entries: &[WalkEntry], query: &TextQuery) -> Result<SearchResults, CodeError> {
    let matcher = build_matcher(query)?;
    let kept = Kept::new(query.limit);
    let files: Vec<&WalkEntry> = entries.iter().filter(|e| !e.is_dir).collect();
    par_map(&files, query.threads, |entry| {
        search_one(&matcher, query.context, entry, None, &kept, || {
            entry.rel.clone()
        });
    });
    Ok(kept.finish())
}

/// Walks `root` and searches each file as the walk finds it (the walk and the search overlap
/// on the walker's threads, as in ripgrep). Paths in the results are `prefix/rel` (`rel` alone
/// for an empty prefix; `prefix` itself when `root` is a file).
pub fn search_tree(
    root: &Path,
    walk: &WalkOptions,
    prefix: &str,
    query: &TextQuery,
    reader: Option<&ctx_fs::WalkReader<'_>>,
) -> Result<SearchResults, CodeError> {
    let matcher = build_matcher(query)?;
    let file_root = root.is_file();
    let walk = WalkOptions {
        threads: if query.threads == 0 {
            walk.threads
        } else {
            query.threads
        },
        // Each file is opened once, by the type the walk's directory entry gave (through the
        // sandbox: `WalkReader::open_entry`); no `stat` needed.
        metadata: false,
        ..walk.clone()
    };
    let kept = Kept::new(query.limit);
    ctx_fs::walk::walk_each(root, &walk, |entry| {
        search_one(&matcher, query.context, entry, reader, &kept, || {
            if file_root {
                prefix.to_owned()
            } else if prefix.is_empty() {
                entry.rel.clone()
            } else {
                format!("{prefix}/{}", entry.rel)
            }
        });
        None::<()>
    })?;
    Ok(kept.finish())
}

/// Searches `bytes` (a file's contents) like [`search_tree`] searches the file, adding what
/// it finds to `kept`; `name` gives the path shown in results (only called when something
/// matches).
pub(crate) fn search_bytes(
    matcher: &RegexMatcher,
    context: usize,
    bytes: &[u8],
    kept: &Kept,
    name: impl FnOnce() -> String,
) {
    with_searcher(context, |searcher| {
        // Secrets are found over the whole file when it is small enough, as from disk.
        let whole = || (bytes.len() as u64 <= WHOLE_FILE_REDACTION_BYTES).then(|| bytes.to_vec());
        let mut sink = FileSink::new(matcher, kept, name, whole);
        // As a reader, not a slice: binary detection then looks at every buffer, exactly as
        // when the file is searched from disk.
        let _ = searcher.search_reader(matcher, bytes, &mut sink);
        sink.flush();
    });
}

/// Runs `f` with this thread's searcher for `context` lines of context.
fn with_searcher<R>(context: usize, f: impl FnOnce(&mut Searcher) -> R) -> R {
    thread_local! {
        static SEARCHER: RefCell<Option<(usize, Searcher)>> = const { RefCell::new(None) };
    }
    SEARCHER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(ctx, _)| *ctx != context) {
            let searcher = SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::quit(0))
                .before_context(context)
                .after_context(context)
                // A line longer than this (a gigabyte of log without a newline) ends the
                // file's search instead of growing the buffer to hold it.
                .heap_limit(Some(SEARCH_HEAP_LIMIT))
                .build();
            *slot = Some((context, searcher));
        }
        let (_, searcher) = slot.as_mut().expect("searcher just set");
        f(searcher)
    })
}

/// The most a searcher's buffer may grow to hold one line.
const SEARCH_HEAP_LIMIT: usize = 64 << 20;

/// Searches the file a walk listed as `entry` with this thread's searcher, adding what it
/// finds to `kept`; `name` gives the path shown in results (only called when something
/// matches). The file streams by: its memory does not grow with its size.
pub(crate) fn search_one(
    matcher: &RegexMatcher,
    context: usize,
    entry: &WalkEntry,
    reader: Option<&ctx_fs::WalkReader<'_>>,
    kept: &Kept,
    name: impl FnOnce() -> String,
) {
    // The file's secrets are found over all of it, read again once something matched.
    let whole = || match reader {
        Some(reader) => reader
            .open_entry(entry)
            .ok()
            .and_then(|(file, meta)| read_bounded(&file, meta.len())),
        None => std::fs::File::open(&entry.path)
            .ok()
            .and_then(|file| read_bounded(&file, file.metadata().ok()?.len())),
    };
    // An unreadable (or refused) file is skipped and reported, as ripgrep does.
    let file = match reader {
        Some(reader) => match reader.open_entry(entry) {
            Ok((file, _)) => file,
            Err(err) => {
                kept.skip(name(), err.to_string());
                return;
            }
        },
        None => match std::fs::File::open(&entry.path) {
            Ok(file) => file,
            Err(err) => {
                kept.skip(name(), err.to_string());
                return;
            }
        },
    };
    with_searcher(context, |searcher| {
        let mut sink = FileSink::new(matcher, kept, name, whole);
        let _ = searcher.search_file(matcher, &file, &mut sink);
        sink.flush();
    });
}

/// Files up to this size are redacted whole before their matches are shown.
const WHOLE_FILE_REDACTION_BYTES: u64 = 16 << 20;

fn read_bounded(file: &std::fs::File, len: u64) -> Option<Vec<u8>> {
    use std::io::Read as _;
    if len > WHOLE_FILE_REDACTION_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).ok()?);
    file.take(WHOLE_FILE_REDACTION_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > WHOLE_FILE_REDACTION_BYTES {
        return None;
    }
    Some(bytes)
}

/// The secrets of one file, found over its whole text, and where its lines start.
struct FileSecrets {
    text: String,
    /// Byte offset of each line's start (1-based line n starts at `starts[n - 1]`).
    starts: Vec<usize>,
    spans: Vec<(std::ops::Range<usize>, String)>,
}

impl FileSecrets {
    /// The secrets of `bytes`, or `None` when it holds none.
    fn of(bytes: Vec<u8>) -> Option<Self> {
        // Valid UTF-8 (nearly every file) is taken as it is, without a copy.
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned());
        let spans: Vec<(std::ops::Range<usize>, String)> = ctx_core::redact::Redactor::builtin()
            .secret_spans(&text)
            .into_iter()
            .map(|(range, rule)| (range, rule.to_owned()))
            .collect();
        if spans.is_empty() {
            return None;
        }
        let mut starts = vec![0usize];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|at| at + 1));
        Some(Self {
            text,
            starts,
            spans,
        })
    }

    /// The byte range of 1-based line `n`, without its line end.
    fn line(&self, n: u64) -> Option<(usize, usize)> {
        let i = usize::try_from(n).ok()?.checked_sub(1)?;
        let start = *self.starts.get(i)?;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.text.len(), |next| next - 1);
        let end = if end > start && self.text.as_bytes().get(end - 1) == Some(&b'\r') {
            end - 1
        } else {
            end
        };
        Some((start, end))
    }

    /// Whether a secret covers part of line `n`.
    fn touches(&self, n: u64) -> bool {
        let Some(i) = usize::try_from(n).ok().and_then(|n| n.checked_sub(1)) else {
            return false;
        };
        let Some(&start) = self.starts.get(i) else {
            return false;
        };
        let end = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        self.spans
            .iter()
            .any(|(r, _)| r.start < end && r.end > start)
    }

    /// Line `n` with the parts secrets cover replaced by `[REDACTED:RULE]`.
    fn redacted_line(&self, n: u64) -> Option<String> {
        let (start, end) = self.line(n)?;
        let text = &self.text;
        let mut out = String::new();
        let mut copied = start;
        for (range, rule) in &self.spans {
            if range.end <= start || range.start >= end {
                continue;
            }
            let (from, to) = (range.start.max(start), range.end.min(end));
            if from < copied {
                continue;
            }
            out.push_str(text.get(copied..from)?);
            out.push_str("[REDACTED:");
            out.push_str(rule);
            out.push(']');
            copied = to;
        }
        out.push_str(text.get(copied..end)?);
        Some(out)
    }
}

/// Matches found in one file since the last flush.
const FLUSH_EVERY: usize = 256;

/// The sink of one file's search: it keeps the matches [`Kept`] may still keep (with their
/// context), only counts the others, and hands them over every [`FLUSH_EVERY`] matches, so
/// its memory does not grow with the file. Before they are handed over, each match is shown
/// from the file's redacted text (secrets found over the whole file, so a window that cuts a
/// key hides it too), and a match whose line no longer matches once redacted is dropped, so
/// neither results nor counts say anything about a secret.
struct FileSink<'a, F, W> {
    matcher: &'a RegexMatcher,
    kept: &'a Kept,
    /// Makes the shown path, on the first match.
    name: Option<F>,
    path: String,
    /// Reads the whole file (when small enough), on the first match.
    whole: Option<W>,
    secrets: Option<FileSecrets>,
    /// Whether the file was too large to redact whole: lines are redacted one by one.
    line_by_line: bool,
    /// Matches kept since the last flush.
    found: Vec<SearchMatch>,
    /// Line numbers of matches only counted since the last flush.
    counted: Vec<u64>,
    /// Lines from here on are only counted (the kept matches end before them).
    ceiling: Option<u64>,
    /// Whether the last match was only counted (its context lines are not kept).
    last_counted: bool,
    pending_before: Vec<ContextLine>,
}

impl<'a, F: FnOnce() -> String, W: FnOnce() -> Option<Vec<u8>>> FileSink<'a, F, W> {
    fn new(matcher: &'a RegexMatcher, kept: &'a Kept, name: F, whole: W) -> Self {
        Self {
            matcher,
            kept,
            name: Some(name),
            path: String::new(),
            whole: Some(whole),
            secrets: None,
            line_by_line: false,
            found: Vec::new(),
            counted: Vec::new(),
            ceiling: None,
            last_counted: false,
            pending_before: Vec::new(),
        }
    }

    /// Called on the first match: names the file and finds its secrets.
    fn start(&mut self) {
        let Some(name) = self.name.take() else {
            return;
        };
        self.path = name();
        self.ceiling = self.kept.ceiling_for(&self.path);
        match self.whole.take().and_then(|whole| whole()) {
            Some(bytes) => self.secrets = FileSecrets::of(bytes),
            None => self.line_by_line = true,
        }
    }

    /// Whether `line`, redacted, still matches (a match that does not was inside a secret).
    fn survives(&self, m: &mut SearchMatch) -> bool {
        if let Some(secrets) = &self.secrets {
            if secrets.touches(m.line) {
                let Some(redacted) = secrets.redacted_line(m.line) else {
                    return false;
                };
                if !matches!(self.matcher.is_match(redacted.as_bytes()), Ok(true)) {
                    return false;
                }
                m.text = redacted;
            }
            for c in &mut m.context {
                if secrets.touches(c.line)
                    && let Some(redacted) = secrets.redacted_line(c.line)
                {
                    c.text = redacted;
                }
            }
        } else if self.line_by_line {
            let redacted = ctx_core::redact::Redactor::builtin().redact(&m.text);
            if redacted.is_redacted() {
                if !matches!(self.matcher.is_match(redacted.text.as_bytes()), Ok(true)) {
                    return false;
                }
                m.text = redacted.text.into_owned();
            }
        }
        true
    }

    /// Hands the matches found since the last flush to [`Kept`].
    fn flush(&mut self) {
        if self.found.is_empty() && self.counted.is_empty() {
            return;
        }
        let mut found = std::mem::take(&mut self.found);
        found.retain_mut(|m| self.survives(m));
        for m in &mut found {
            cut_line(&mut m.text);
            for c in &mut m.context {
                cut_line(&mut c.text);
            }
        }
        let counted = std::mem::take(&mut self.counted);
        let counted = match &self.secrets {
            Some(secrets) => counted
                .into_iter()
                .filter(|&n| {
                    !secrets.touches(n)
                        || secrets.redacted_line(n).is_some_and(|line| {
                            matches!(self.matcher.is_match(line.as_bytes()), Ok(true))
                        })
                })
                .count(),
            None => counted.len(),
        };
        self.ceiling = self.kept.add(&self.path, found, counted as u64);
    }
}

/// Cuts `text` after [`MAX_LINE_BYTES`] (at a character boundary), saying how much was cut.
fn cut_line(text: &mut String) {
    if text.len() <= MAX_LINE_BYTES {
        return;
    }
    let mut end = MAX_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let more = text.len() - end;
    text.truncate(end);
    let _ = write!(text, " … [{more} more bytes]");
}

fn line_text(bytes: &[u8]) -> String {
    let mut end = bytes.len();
    while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
        end -= 1;
    }
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl<F: FnOnce() -> String, W: FnOnce() -> Option<Vec<u8>>> Sink for FileSink<'_, F, W> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.start();
        let line = found.line_number().unwrap_or(0);
        if self.found.len() + self.counted.len() >= FLUSH_EVERY {
            self.flush();
        }
        if self.ceiling.is_some_and(|ceiling| line >= ceiling) {
            self.counted.push(line);
            self.pending_before.clear();
            self.last_counted = true;
            return Ok(true);
        }
        self.last_counted = false;
        let bytes = found.bytes();
        let column = self
            .matcher
            .find(bytes)
            .ok()
            .flatten()
            .map_or(1, |m| m.start() as u64 + 1);
        self.found.push(SearchMatch {
            path: self.path.clone(),
            line,
            column,
            text: line_text(bytes),
            context: std::mem::take(&mut self.pending_before),
            kind: None,
            scope: None,
            approximate: false,
        });
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let line = ContextLine {
            line: context.line_number().unwrap_or(0),
            text: line_text(context.bytes()),
        };
        match context.kind() {
            grep_searcher::SinkContextKind::After => {
                if !self.last_counted
                    && let Some(last) = self.found.last_mut()
                {
                    last.context.push(line);
                }
            }
            _ => self.pending_before.push(line),
        }
        Ok(true)
    }
}

/// The matches a text search keeps while it runs, bounded by its [`SearchLimit`]: when one
/// more would go over, the last in (path, line) order is let go, and from then on nothing at
/// or after it is kept. What remains is exactly the longest run of first matches that fits,
/// whatever order the files were searched in.
pub(crate) struct Kept {
    limit: SearchLimit,
    state: std::sync::Mutex<KeptState>,
}

#[derive(Default)]
struct KeptState {
    skipped: std::collections::BinaryHeap<SkippedFile>,
    skipped_total: u64,
    heap: std::collections::BinaryHeap<ByPlace>,
    bytes: usize,
    total: u64,
    /// The first (path, line) let go: nothing at or after it is kept.
    ceiling: Option<(String, u64)>,
}

/// A match ordered by its place: path (byte order), then line.
struct ByPlace(SearchMatch);

impl ByPlace {
    fn key(&self) -> (&str, u64) {
        (&self.0.path, self.0.line)
    }
}

impl PartialEq for ByPlace {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for ByPlace {}
impl PartialOrd for ByPlace {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByPlace {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// What a kept match costs in memory, roughly: its strings and a fixed part for the rest.
fn cost(m: &SearchMatch) -> usize {
    const FIXED: usize = 96;
    FIXED
        + m.path.len()
        + m.text.len()
        + m.context
            .iter()
            .map(|c| c.text.len() + FIXED / 2)
            .sum::<usize>()
}

impl Kept {
    pub(crate) fn new(limit: SearchLimit) -> Self {
        Self {
            limit,
            state: std::sync::Mutex::new(KeptState::default()),
        }
    }

    /// The first line of `path` that can no longer be kept, if any (0: none of it).
    fn ceiling_for(&self, path: &str) -> Option<u64> {
        let state = self.state.lock().expect("search results lock");
        Self::ceiling_in(&state, path)
    }

    fn ceiling_in(state: &KeptState, path: &str) -> Option<u64> {
        match &state.ceiling {
            Some((at, line)) => match at.as_str().cmp(path) {
                std::cmp::Ordering::Less => Some(0),
                std::cmp::Ordering::Equal => Some(*line),
                std::cmp::Ordering::Greater => None,
            },
            None => None,
        }
    }

    /// Adds `found` (matches of `path`) and `counted` more matches seen there but not kept;
    /// returns the new [`Kept::ceiling_for`] `path`.
    fn add(&self, path: &str, found: Vec<SearchMatch>, counted: u64) -> Option<u64> {
        let mut state = self.state.lock().expect("search results lock");
        let state = &mut *state;
        state.total += found.len() as u64 + counted;
        let max_results = self.limit.max_results.unwrap_or(usize::MAX);
        for m in found {
            if state
                .ceiling
                .as_ref()
                .is_some_and(|(p, l)| (m.path.as_str(), m.line) >= (p.as_str(), *l))
            {
                continue;
            }
            state.bytes += cost(&m);
            state.heap.push(ByPlace(m));
            while state.heap.len() > max_results || state.bytes > self.limit.max_bytes {
                let Some(ByPlace(last)) = state.heap.pop() else {
                    break;
                };
                state.bytes -= cost(&last);
                state.ceiling = Some((last.path, last.line));
            }
        }
        Self::ceiling_in(state, path)
    }

    /// Notes a file that could not be searched (the first [`MAX_SKIPPED_LISTED`] by path are
    /// listed).
    pub(crate) fn skip(&self, path: String, reason: String) {
        let mut state = self.state.lock().expect("search results lock");
        state.skipped_total += 1;
        state.skipped.push(SkippedFile { path, reason });
        if state.skipped.len() > MAX_SKIPPED_LISTED {
            state.skipped.pop();
        }
    }

    pub(crate) fn finish(self) -> SearchResults {
        let state = self.state.into_inner().expect("search results lock");
        SearchResults {
            skipped: state.skipped.into_sorted_vec(),
            skipped_total: state.skipped_total,
            matches: state
                .heap
                .into_sorted_vec()
                .into_iter()
                .map(|ByPlace(m)| m)
                .collect(),
            total: state.total,
        }
    }
}

/// Finds definitions named `name` (exact; `Parent::name` or `Parent.name` also checks the
/// scope). When nothing has that exact name, falls back to names containing it, ignoring case.
pub fn search_symbols(
    entries: &[WalkEntry],
    name: &str,
    context: usize,
    cache: Option<&dyn SummaryCache>,
    reader: Option<&ctx_fs::WalkReader<'_>>,
) -> Result<Vec<SearchMatch>, CodeError> {
    let (scope, base) = split_qualified(name);
    let opts = SummarizeOptions {
        reader,
        ..SummarizeOptions::default()
    };
    let summaries = summarize_files(entries, opts, cache)?;
    let mut exact = Vec::new();
    let mut loose = Vec::new();
    let needle = base.to_lowercase();
    for (index, file) in summaries.files.iter().enumerate() {
        for symbol in &file.symbols {
            let scope_ok = scope.is_none_or(|s| {
                symbol.parent.as_deref().is_some_and(|p| {
                    p == s || p.ends_with(&format!("::{s}")) || p.ends_with(&format!(".{s}"))
                })
            });
            if !scope_ok {
                continue;
            }
            if symbol.name == base {
                exact.push((index, symbol));
            } else if symbol.name.to_lowercase().contains(&needle) {
                loose.push((index, symbol));
            }
        }
    }
    let approximate = exact.is_empty();
    let chosen = if approximate { loose } else { exact };
    let by_path: std::collections::BTreeMap<&str, &WalkEntry> =
        entries.iter().map(|e| (e.rel.as_str(), e)).collect();
    let mut results = Vec::with_capacity(chosen.len());
    for (index, symbol) in chosen {
        let file = &summaries.files[index];
        let context_lines = if context > 0 {
            by_path
                .get(file.path.as_str())
                .and_then(|e| read_walked(reader, e).ok())
                .map(|bytes| around(&bytes, symbol.line, context))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        results.push(SearchMatch {
            path: file.path.clone(),
            line: symbol.line as u64,
            column: 1,
            text: format!("[{}] {}", symbol.kind.tag(), symbol.signature),
            context: context_lines,
            kind: Some(symbol.kind.name().to_owned()),
            scope: symbol.parent.clone(),
            approximate,
        });
    }
    results.sort_by(|a, b| (a.path.as_bytes(), a.line).cmp(&(b.path.as_bytes(), b.line)));
    Ok(results)
}

fn split_qualified(name: &str) -> (Option<&str>, &str) {
    if let Some((scope, base)) = name.rsplit_once("::") {
        return (Some(scope), base);
    }
    if let Some((scope, base)) = name.rsplit_once('.') {
        return (Some(scope), base);
    }
    (None, name)
}

/// Finds call sites of `name` (the last segment of a qualified name is matched against the
/// called name: `bar` matches `bar()`, `x.bar()`, `Foo::bar()`, `new bar()`).
pub fn search_callers(
    entries: &[WalkEntry],
    name: &str,
    context: usize,
    threads: usize,
    reader: Option<&ctx_fs::WalkReader<'_>>,
) -> Result<Vec<SearchMatch>, CodeError> {
    let (_, base) = split_qualified(name);
    let finder = memchr::memmem::Finder::new(base.as_bytes());
    let files: Vec<(&WalkEntry, Language)> = entries
        .iter()
        .filter(|e| !e.is_dir)
        .filter_map(|e| Language::from_path(Path::new(&e.rel)).map(|l| (e, l)))
        .collect();
    let per_file = par_map(&files, threads, |&(entry, lang)| {
        let Ok(bytes) = read_walked(reader, entry) else {
            return Vec::new();
        };
        if finder.find(&bytes).is_none() || crate::summary::is_binary(&bytes) {
            return Vec::new();
        }
        let lang = Language::detect(Path::new(&entry.rel), &bytes).unwrap_or(lang);
        let Some(tree) = parse(lang, &bytes) else {
            return Vec::new();
        };
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        calls(lang, &bytes, &tree)
            .into_iter()
            .filter(|call| call.name == base)
            .map(|call| SearchMatch {
                path: entry.rel.clone(),
                line: call.line as u64,
                column: call.column as u64,
                text: lines
                    .get(call.line - 1)
                    .map(|l| line_text(l).trim().to_owned())
                    .unwrap_or_default(),
                context: if context > 0 {
                    around(&bytes, call.line, context)
                } else {
                    Vec::new()
                },
                kind: None,
                scope: call.caller,
                approximate: false,
            })
            .collect::<Vec<_>>()
    });
    let mut results: Vec<SearchMatch> = per_file.into_iter().flatten().collect();
    results.sort_by(|a, b| {
        (a.path.as_bytes(), a.line, a.column).cmp(&(b.path.as_bytes(), b.line, b.column))
    });
    Ok(results)
}

/// Up to `n` lines before and after `line` (1-based), the line itself excluded.
fn around(bytes: &[u8], line: usize, n: usize) -> Vec<ContextLine> {
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let first = line.saturating_sub(n).max(1);
    let last = (line + n).min(lines.len());
    (first..=last)
        .filter(|&l| l != line)
        .filter_map(|l| {
            lines.get(l - 1).map(|text| ContextLine {
                line: l as u64,
                text: line_text(text),
            })
        })
        .filter(|c| !(c.text.is_empty() && usize::try_from(c.line).is_ok_and(|l| l == lines.len())))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Vec<WalkEntry>) {
        let dir = tempfile::tempdir().expect("tempdir");
        for (rel, body) in files {
            let path = dir.path().join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, body).expect("write");
        }
        let entries = ctx_fs::walk(dir.path(), &WalkOptions::default()).expect("walk");
        (dir, entries)
    }

    #[test]
    fn files_the_sandbox_refuses_are_reported_not_dropped() {
        let (dir, _) = tree(&[("a.rs", "fn needle() {}\n"), ("c.rs", "needle();\n")]);
        fs::hard_link(dir.path().join("a.rs"), dir.path().join("b.rs")).expect("link");
        let sandbox = ctx_fs::Sandbox::open(dir.path()).expect("sandbox");
        let reader = ctx_fs::WalkReader::new(&sandbox, sandbox.root()).expect("reader");
        let query = TextQuery {
            pattern: "needle".into(),
            ..TextQuery::default()
        };
        let found = search_tree(
            sandbox.root(),
            &WalkOptions::default(),
            "",
            &query,
            Some(&reader),
        )
        .expect("search");
        assert_eq!(found.total, 1, "{found:?}");
        assert_eq!(found.skipped_total, 2);
        let paths: Vec<&str> = found.skipped.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["a.rs", "b.rs"]);
        assert!(found.skipped[0].reason.contains("hard links"), "{found:?}");
        // Through the tree cache, the same.
        let cache = crate::tree_cache::TreeCache::new(
            crate::tree_cache::TreeCacheSettings::with_clock(std::time::SystemTime::now),
        );
        let cached =
            crate::tree_cache::search_cached(&cache, sandbox.root(), "", &query, Some(&reader))
                .expect("cached search");
        assert_eq!(cached.skipped, found.skipped);
    }

    #[test]
    fn literal_and_regex_text_search_with_context() {
        let (_dir, entries) = tree(&[
            ("b.rs", "one\nfoo(1)\nthree\n"),
            ("a.txt", "a.b\naxb\n"),
            ("bin.dat", "foo\0binary"),
        ]);
        let literal = TextQuery {
            pattern: "a.b".into(),
            ..TextQuery::default()
        };
        let found = search_text(&entries, &literal).expect("search").matches;
        assert_eq!(found.len(), 1, "literal `.` does not match `x`");
        let regex = TextQuery {
            pattern: "a.b".into(),
            regex: true,
            ..TextQuery::default()
        };
        assert_eq!(
            search_text(&entries, &regex).expect("search").matches.len(),
            2
        );
        let ctx = TextQuery {
            pattern: "foo(".into(),
            context: 1,
            ..TextQuery::default()
        };
        let found = search_text(&entries, &ctx).expect("search").matches;
        assert_eq!(found.len(), 1, "binary file skipped");
        assert_eq!((found[0].line, found[0].column), (2, 1));
        let context: Vec<u64> = found[0].context.iter().map(|c| c.line).collect();
        assert_eq!(context, [1, 3]);
    }

    #[test]
    fn invalid_regex_names_the_problem_and_column() {
        let query = TextQuery {
            pattern: "fn (a".into(),
            regex: true,
            ..TextQuery::default()
        };
        let err = build_matcher(&query).expect_err("invalid").to_string();
        assert!(err.contains("unclosed group"), "{err}");
        assert!(err.contains("column 4"), "{err}");
    }

    #[test]
    fn symbols_and_callers() {
        let (_dir, entries) = tree(&[
            (
                "src/lib.rs",
                "pub fn parse_file() {}\nfn run() { parse_file(); }\n",
            ),
            (
                "app.py",
                "from x import parse_file\ndef go():\n    parse_file()\n    # parse_file() in a comment\n",
            ),
        ]);
        let defs = search_symbols(&entries, "parse_file", 0, None, None).expect("symbols");
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].text, "[fn] pub fn parse_file()");
        let loose = search_symbols(&entries, "PARSE", 0, None, None).expect("symbols");
        assert_eq!(loose.len(), 1, "falls back to a case-insensitive substring");
        let callers = search_callers(&entries, "parse_file", 0, 1, None).expect("callers");
        let got: Vec<(&str, u64, Option<&str>)> = callers
            .iter()
            .map(|m| (m.path.as_str(), m.line, m.scope.as_deref()))
            .collect();
        assert_eq!(
            got,
            [("app.py", 3, Some("go")), ("src/lib.rs", 2, Some("run"))]
        );
    }

    /// Forty files of fifty matching lines each, in a tree searched by several threads.
    fn many_matches() -> (tempfile::TempDir, Vec<WalkEntry>) {
        let bodies: Vec<(String, String)> = (0..40)
            .map(|f| {
                let mut body = String::new();
                for l in 0..50 {
                    let _ = writeln!(body, "hit {f} {l}");
                }
                (format!("d{}/f{f:02}.txt", f % 3), body)
            })
            .collect();
        let files: Vec<(&str, &str)> = bodies
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_str()))
            .collect();
        tree(&files)
    }

    fn places(found: &SearchResults) -> Vec<(String, u64)> {
        found
            .matches
            .iter()
            .map(|m| (m.path.clone(), m.line))
            .collect()
    }

    #[test]
    fn a_limited_search_keeps_the_first_matches_in_order_and_counts_all() {
        let (dir, entries) = many_matches();
        let everything = search_text(
            &entries,
            &TextQuery {
                pattern: "hit".into(),
                threads: 4,
                ..TextQuery::default()
            },
        )
        .expect("search");
        assert_eq!(everything.total, 2000);
        assert_eq!(everything.matches.len(), 2000);
        let all = places(&everything);
        for limit in [
            SearchLimit {
                max_results: Some(137),
                ..SearchLimit::default()
            },
            SearchLimit {
                max_results: None,
                max_bytes: 10_000,
            },
        ] {
            let query = TextQuery {
                pattern: "hit".into(),
                threads: 4,
                limit,
                ..TextQuery::default()
            };
            let first = search_text(&entries, &query).expect("search");
            assert_eq!(first.total, 2000, "every match is counted");
            assert!(first.truncated());
            let kept = places(&first);
            assert!(!kept.is_empty());
            assert_eq!(kept, all[..kept.len()], "the first matches, in order");
            if let Some(max) = limit.max_results {
                assert_eq!(kept.len(), max);
            } else {
                let bytes: usize = first.matches.iter().map(cost).sum();
                let next = cost(&everything.matches[kept.len()]);
                assert!(bytes <= 10_000 && bytes + next > 10_000, "{bytes} + {next}");
            }
            // The same answer whatever order the threads found them in.
            for threads in [1, 2] {
                let again = search_tree(
                    dir.path(),
                    &WalkOptions::default(),
                    "",
                    &TextQuery {
                        threads,
                        ..query.clone()
                    },
                    None,
                )
                .expect("search");
                assert_eq!(places(&again), kept);
                assert_eq!(again.total, 2000);
            }
        }
    }

    #[test]
    fn a_long_line_is_cut_and_says_how_much() {
        let long = format!("needle {}\n", "x".repeat(10_000));
        let (_dir, entries) = tree(&[("min.js", &long)]);
        let found = search_text(
            &entries,
            &TextQuery {
                pattern: "needle".into(),
                ..TextQuery::default()
            },
        )
        .expect("search");
        let text = &found.matches[0].text;
        assert!(text.len() < MAX_LINE_BYTES + 40, "{}", text.len());
        assert!(
            text.ends_with(&format!(" … [{} more bytes]", 10_007 - MAX_LINE_BYTES)),
            "{text}"
        );
    }

    #[test]
    fn matches_inside_a_secret_are_neither_shown_nor_counted() {
        // A key whose characters a pattern can probe one by one: neither the results nor the
        // count may tell whether the guess was right, even for matches only counted.
        let key = "sk_live_51HbQpLKt8ZxV2mN7rT4yW9cF3gJ6sD1aE5uI0oP8kR2hBq";
        let mut body = String::new();
        for n in 0..600 {
            let _ = writeln!(body, "let token_{n} = \"{key}\";");
        }
        let (_dir, entries) = tree(&[("a.rs", &body)]);
        for max_results in [None, Some(3)] {
            let query = TextQuery {
                pattern: "sk_live_51Hb".into(),
                limit: SearchLimit {
                    max_results,
                    ..SearchLimit::default()
                },
                ..TextQuery::default()
            };
            let found = search_text(&entries, &query).expect("search");
            assert_eq!(found.total, 0, "{max_results:?}");
            assert!(found.matches.is_empty());
            let query = TextQuery {
                pattern: "token_".into(),
                context: 1,
                ..query
            };
            let found = search_text(&entries, &query).expect("search");
            assert_eq!(found.total, 600);
            for m in &found.matches {
                assert!(!m.text.contains(key), "{}", m.text);
                assert!(m.context.iter().all(|c| !c.text.contains(key)));
            }
        }
    }
}
