//! Search: text (literal or regex, on ripgrep's `grep-searcher`), symbol definitions, and
//! call sites (tree-sitter call nodes, not text).
//!
//! Results are sorted by path (byte order) then line, so the same tree and query always give
//! the same list.

use std::cell::RefCell;
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
pub fn search_text(
    entries: &[WalkEntry],
    query: &TextQuery,
) -> Result<Vec<SearchMatch>, CodeError> {
    let matcher = build_matcher(query)?;
    let files: Vec<&WalkEntry> = entries.iter().filter(|e| !e.is_dir).collect();
    let per_file = par_map(&files, query.threads, |entry| {
        search_one(&matcher, query.context, entry, None, || entry.rel.clone())
    });
    Ok(per_file.into_iter().flatten().collect())
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
) -> Result<Vec<SearchMatch>, CodeError> {
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
    let (found, _errors) = ctx_fs::walk::walk_each(root, &walk, |entry| {
        let found = search_one(&matcher, query.context, entry, reader, || {
            if file_root {
                prefix.to_owned()
            } else if prefix.is_empty() {
                entry.rel.clone()
            } else {
                format!("{prefix}/{}", entry.rel)
            }
        });
        (!found.is_empty()).then_some(found)
    })?;
    Ok(found.into_iter().flat_map(|(_, matches)| matches).collect())
}

/// Searches `bytes` (a file's contents) like [`search_tree`] searches the file; `name` gives
/// the path shown in results (only called when something matches).
pub fn search_bytes(
    matcher: &RegexMatcher,
    context: usize,
    bytes: &[u8],
    name: impl FnOnce() -> String,
) -> Vec<SearchMatch> {
    with_searcher(context, |searcher| {
        let mut sink = collect(matcher, name);
        // As a reader, not a slice: binary detection then looks at every buffer, exactly as
        // when the file is searched from disk.
        let _ = searcher.search_reader(matcher, bytes, &mut sink);
        sink.out
    })
}

fn collect<F>(matcher: &RegexMatcher, name: F) -> Collect<'_, F> {
    Collect {
        matcher,
        name: Some(name),
        path: String::new(),
        out: Vec::new(),
        pending_before: Vec::new(),
    }
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
                .build();
            *slot = Some((context, searcher));
        }
        let (_, searcher) = slot.as_mut().expect("searcher just set");
        f(searcher)
    })
}

/// Searches the file a walk listed as `entry` with this thread's searcher; `name` gives the
/// path shown in results (only called when something matches).
fn search_one(
    matcher: &RegexMatcher,
    context: usize,
    entry: &WalkEntry,
    reader: Option<&ctx_fs::WalkReader<'_>>,
    name: impl FnOnce() -> String,
) -> Vec<SearchMatch> {
    let found = with_searcher(context, |searcher| {
        let mut sink = collect(matcher, name);
        // An unreadable (or refused) file is skipped, like ripgrep does after reporting it.
        let _ = match reader {
            Some(reader) => match reader.open_entry(entry) {
                Ok((file, _)) => searcher.search_file(matcher, &file, &mut sink),
                Err(_) => return Vec::new(),
            },
            None => searcher.search_path(matcher, &entry.path, &mut sink),
        };
        sink.out
    });
    if found.is_empty() {
        return found;
    }
    // The file's secrets, found over all of it: a match inside one is dropped (the search
    // cannot tell that a secret matches), and every line shown is redacted from them, so a
    // context window that cuts a key still hides it.
    let bytes = match reader {
        Some(reader) => reader
            .open_entry(entry)
            .ok()
            .and_then(|(file, meta)| read_bounded(&file, meta.len())),
        None => std::fs::File::open(&entry.path)
            .ok()
            .and_then(|file| read_bounded(&file, file.metadata().ok()?.len())),
    };
    match bytes {
        Some(bytes) => hide_secrets(matcher, &String::from_utf8_lossy(&bytes), found),
        // Too large or gone: the lines are redacted one window at a time (ctx::code).
        None => found,
    }
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
    Some(bytes)
}

/// Redacts the matches of one file from the secrets of its whole `text`: each line shown has
/// the parts a secret covers replaced (`[REDACTED:RULE]`), and a match whose line no longer
/// matches once redacted is dropped, so match counts say nothing about a secret.
fn hide_secrets(matcher: &RegexMatcher, text: &str, found: Vec<SearchMatch>) -> Vec<SearchMatch> {
    use grep_matcher::Matcher as _;
    let spans = ctx_core::redact::Redactor::builtin().secret_spans(text);
    if spans.is_empty() {
        return found;
    }
    // Byte offset of each line's start (1-based line n starts at starts[n - 1]).
    let mut starts = vec![0usize];
    starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|at| at + 1));
    let line_text = |n: u64| -> Option<String> {
        let i = usize::try_from(n).ok()?.checked_sub(1)?;
        let start = *starts.get(i)?;
        let end = starts.get(i + 1).map_or(text.len(), |next| next - 1);
        let end = if text.as_bytes().get(end.wrapping_sub(1)) == Some(&b'\r') && end > start {
            end - 1
        } else {
            end
        };
        let mut out = String::new();
        let mut copied = start;
        for (range, rule) in &spans {
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
    };
    let touched = |n: u64| -> bool {
        let Some(i) = usize::try_from(n).ok().and_then(|n| n.checked_sub(1)) else {
            return false;
        };
        let (Some(&start), end) = (
            starts.get(i),
            starts.get(i + 1).copied().unwrap_or(text.len()),
        ) else {
            return false;
        };
        spans.iter().any(|(r, _)| r.start < end && r.end > start)
    };
    found
        .into_iter()
        .filter_map(|mut m| {
            if touched(m.line) {
                let redacted = line_text(m.line)?;
                if !matches!(matcher.is_match(redacted.as_bytes()), Ok(true)) {
                    return None;
                }
                m.text = redacted;
            }
            for c in &mut m.context {
                if touched(c.line)
                    && let Some(redacted) = line_text(c.line)
                {
                    c.text = redacted;
                }
            }
            Some(m)
        })
        .collect()
}

struct Collect<'a, F> {
    matcher: &'a RegexMatcher,
    /// Makes the shown path, on the first match.
    name: Option<F>,
    path: String,
    out: Vec<SearchMatch>,
    pending_before: Vec<ContextLine>,
}

fn line_text(bytes: &[u8]) -> String {
    let mut end = bytes.len();
    while end > 0 && (bytes[end - 1] == b'\n' || bytes[end - 1] == b'\r') {
        end -= 1;
    }
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl<F: FnOnce() -> String> Collect<'_, F> {
    fn path(&mut self) -> String {
        if let Some(name) = self.name.take() {
            self.path = name();
        }
        self.path.clone()
    }
}

impl<F: FnOnce() -> String> Sink for Collect<'_, F> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let bytes = found.bytes();
        let column = self
            .matcher
            .find(bytes)
            .ok()
            .flatten()
            .map_or(1, |m| m.start() as u64 + 1);
        let path = self.path();
        self.out.push(SearchMatch {
            path,
            line: found.line_number().unwrap_or(0),
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
                if let Some(last) = self.out.last_mut() {
                    last.context.push(line);
                }
            }
            _ => self.pending_before.push(line),
        }
        Ok(true)
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
        let found = search_text(&entries, &literal).expect("search");
        assert_eq!(found.len(), 1, "literal `.` does not match `x`");
        let regex = TextQuery {
            pattern: "a.b".into(),
            regex: true,
            ..TextQuery::default()
        };
        assert_eq!(search_text(&entries, &regex).expect("search").len(), 2);
        let ctx = TextQuery {
            pattern: "foo(".into(),
            context: 1,
            ..TextQuery::default()
        };
        let found = search_text(&entries, &ctx).expect("search");
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
}
