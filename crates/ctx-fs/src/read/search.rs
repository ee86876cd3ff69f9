//! Search mode: a case-insensitive literal by default (or a regex), in one file or in every
//! file under a directory, each match returned with its line number and a context block.
//!
//! The context block is the Amazon Q form: each line as `"{number}: {text}\n"`, prefixed with
//! `"→ "` on the matching line and two spaces on the others. Files are read line by line with
//! a bounded buffer (lines longer than [`MAX_LINE`] are searched in their first [`MAX_LINE`]
//! bytes), so memory stays flat whatever the file size. Directory searches use the shared
//! walker (ignore rules, hidden files skipped), open every file through the sandbox, skip
//! binary files (a NUL byte in the first 8 KiB), and run in parallel in batches of files
//! taken in path order, so the result is the same on every run.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::os::fd::AsFd;

use rayon::prelude::*;
use regex_automata::meta::Regex;
use serde::Serialize;

use super::FsReadError;
use crate::sandbox::{Sandbox, open_beneath};
use crate::walk::{WalkOptions, walk_with_errors};

/// Longest line searched in full; longer lines are searched in their first this many bytes.
pub const MAX_LINE: usize = 1024 * 1024;

/// Files up to this size are read whole and checked for a match at once before lines are
/// split; larger ones are streamed.
const WHOLE_FILE: u64 = 8 * 1024 * 1024;

/// Bytes checked for a NUL to decide a file is binary.
const BINARY_PROBE: usize = 8 * 1024;

/// Files searched in parallel per batch in a directory search.
const BATCH: usize = 64;

/// One match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchMatch {
    /// The file, relative to the workspace root.
    pub path: String,
    /// 1-based line number of the matching line.
    pub line_number: u64,
    /// The matching line with `context_lines` lines around it (see the module docs).
    pub context: String,
    /// Secrets replaced in `context`: rule and line within `context`, never the secret.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<ctx_core::redact::RedactionFinding>,
}

/// What a Search operation returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchResult {
    /// The file or directory searched, relative to the workspace root.
    pub path: String,
    /// The pattern searched for.
    pub pattern: String,
    /// Matches in path order, then line order.
    pub matches: Vec<SearchMatch>,
    /// Matching lines in total (before any offset or truncation).
    pub total_matches: u64,
    /// Files searched.
    pub files_searched: u64,
    /// Files skipped as binary or not openable inside the workspace.
    pub files_skipped: u64,
    /// Whether the response cap cut the matches short.
    pub truncated: bool,
    /// When truncated: the `offset` to ask for next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    #[serde(skip)]
    pub(crate) offset: usize,
}

/// Bytes a match counts against the response cap (its text form).
pub(crate) fn match_size(m: &SearchMatch) -> usize {
    m.path.len() + m.context.len() + 24
}

impl SearchResult {
    /// Bytes this result counts against the response cap.
    pub(crate) fn size(&self) -> usize {
        self.matches.iter().map(match_size).sum()
    }

    /// Keeps the matches that fit in `budget` bytes (at least one with `allow_partial`).
    pub(crate) fn truncate_to(&mut self, budget: usize, allow_partial: bool) {
        let mut used = 0;
        let mut keep = 0;
        for m in &self.matches {
            let size = match_size(m);
            if used + size > budget && !(allow_partial && keep == 0) {
                break;
            }
            used += size;
            keep += 1;
        }
        if keep < self.matches.len() {
            self.matches.truncate(keep);
            self.truncated = true;
            self.next_offset = Some(self.offset + keep);
        }
    }
}

/// A validated Search request.
#[derive(Debug, Clone)]
pub(crate) struct SearchSpec<'a> {
    pub pattern: &'a str,
    pub regex: bool,
    pub case_sensitive: bool,
    pub context_lines: u32,
    pub offset: usize,
}

/// Builds the matcher: the pattern escaped unless it is a regex, case-insensitive unless
/// asked otherwise. A regex is checked against `ctx_core::pattern`'s limits first, and the
/// engine keeps only the implicit whole-match slots (the search never reads groups, and the
/// PikeVM would otherwise hold a slot per group for every NFA state: `()` × 60,000 asked for
/// 115 GB), so compiled size and search memory stay bounded.
pub(crate) fn matcher(spec: &SearchSpec<'_>) -> Result<Regex, FsReadError> {
    let source = if spec.regex {
        ctx_core::pattern::check(spec.pattern).map_err(|err| invalid_regex(spec, &err))?;
        spec.pattern.to_owned()
    } else {
        regex::escape(spec.pattern)
    };
    Regex::builder()
        .configure(
            Regex::config()
                .which_captures(regex_automata::nfa::thompson::WhichCaptures::Implicit)
                .nfa_size_limit(Some(ctx_core::pattern::NFA_SIZE_LIMIT))
                .hybrid_cache_capacity(ctx_core::pattern::DFA_SIZE_LIMIT),
        )
        .syntax(
            regex_automata::util::syntax::Config::new()
                .case_insensitive(!spec.case_sensitive)
                .nest_limit(ctx_core::pattern::MAX_NESTING),
        )
        .build(&source)
        .map_err(|err| {
            if err.size_limit().is_some() {
                invalid_regex(spec, &ctx_core::pattern::PatternError::TooBig)
            } else {
                let message = err.to_string();
                FsReadError::InvalidInput(format!(
                    "invalid regex `{}`: {}",
                    shown_pattern(spec.pattern),
                    message.split_whitespace().collect::<Vec<_>>().join(" ")
                ))
            }
        })
}

fn invalid_regex(spec: &SearchSpec<'_>, err: &ctx_core::pattern::PatternError) -> FsReadError {
    FsReadError::InvalidInput(format!(
        "invalid regex `{}`: {err}",
        shown_pattern(spec.pattern)
    ))
}

/// The pattern as error messages show it: whole when short, else its first 40 characters.
fn shown_pattern(pattern: &str) -> String {
    if pattern.chars().count() <= 60 {
        pattern.to_owned()
    } else {
        let head: String = pattern.chars().take(40).collect();
        format!("{head}…")
    }
}

/// Gathers matches across files: skips the first `offset`, keeps them while they fit in the
/// budget, counts all.
struct Collector {
    skip: usize,
    budget: usize,
    used: usize,
    full: bool,
    matches: Vec<SearchMatch>,
    total: u64,
}

impl Collector {
    fn new(offset: usize, budget: usize) -> Self {
        Self {
            skip: offset,
            budget,
            used: 0,
            full: false,
            matches: Vec::new(),
            total: 0,
        }
    }

    /// Whether the next match would be kept (so its context is worth building).
    fn storing(&self) -> bool {
        !self.full
    }

    fn push(&mut self, m: Option<SearchMatch>) {
        self.total += 1;
        let Some(m) = m else { return };
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        if self.full {
            return;
        }
        let size = match_size(&m);
        if self.used + size > self.budget && !self.matches.is_empty() {
            self.full = true;
            return;
        }
        self.used += size;
        self.matches.push(m);
    }
}

/// The outcome of searching one file.
struct FileMatches {
    /// The first matches (with context), in line order.
    kept: Vec<SearchMatch>,
    /// All matches in the file.
    total: u64,
    binary: bool,
}

/// Searches the file or directory open as `target` (workspace-relative `rel`).
pub(crate) fn search(
    workspace: &Sandbox,
    target: &File,
    is_dir: bool,
    rel: &str,
    spec: &SearchSpec<'_>,
    cap: usize,
    walk: &WalkOptions,
) -> Result<SearchResult, FsReadError> {
    let re = matcher(spec)?;
    let mut collector = Collector::new(spec.offset, cap);
    let mut files_searched = 0;
    let mut files_skipped = 0;
    if is_dir {
        let walk_root = super::directory::real_path(workspace, target).unwrap_or_else(|| {
            if rel == "." {
                workspace.root().to_owned()
            } else {
                workspace.root().join(rel)
            }
        });
        let outcome = walk_with_errors(&walk_root, walk).map_err(|err| FsReadError::Io {
            path: rel.to_owned(),
            source: io::Error::other(err.to_string()),
        })?;
        let files: Vec<String> = outcome.entries.into_iter().map(|e| e.rel).collect();
        for batch in files.chunks(BATCH) {
            if crate::walk::is_cancelled(walk.cancel.as_ref()) {
                return Err(FsReadError::Io {
                    path: rel.to_owned(),
                    source: io::Error::other(crate::WalkError::Cancelled.to_string()),
                });
            }
            // Once the budget is full, later files are only counted.
            let limit = if collector.storing() {
                collector.skip.saturating_add(cap / 16 + 1)
            } else {
                0
            };
            let results: Vec<Option<FileMatches>> = batch
                .par_iter()
                .map(|file_rel| {
                    let (file, meta) =
                        open_beneath(target.as_fd(), file_rel, file_rel, workspace.options())
                            .ok()?;
                    if !meta.is_file() {
                        return None;
                    }
                    let shown = if rel == "." {
                        file_rel.clone()
                    } else {
                        format!("{rel}/{file_rel}")
                    };
                    search_file(&file, meta.len(), &shown, &re, spec.context_lines, limit).ok()
                })
                .collect();
            for result in results {
                match result {
                    Some(found) if !found.binary => {
                        files_searched += 1;
                        let kept = found.kept.len() as u64;
                        for m in found.kept {
                            collector.push(Some(m));
                        }
                        for _ in kept..found.total {
                            collector.push(None);
                        }
                    }
                    _ => files_skipped += 1,
                }
            }
        }
    } else {
        let size = target.metadata().map_or(0, |m| m.len());
        let limit = spec.offset.saturating_add(cap / 16 + 1);
        let found =
            search_file(target, size, rel, &re, spec.context_lines, limit).map_err(|source| {
                FsReadError::Io {
                    path: rel.to_owned(),
                    source,
                }
            })?;
        if found.binary {
            return Err(FsReadError::Binary {
                path: rel.to_owned(),
                bytes: size,
            });
        }
        files_searched = 1;
        let kept = found.kept.len() as u64;
        for m in found.kept {
            collector.push(Some(m));
        }
        for _ in kept..found.total {
            collector.push(None);
        }
    }
    let stored = collector.matches.len();
    let truncated = collector.total > (spec.offset + stored) as u64;
    Ok(SearchResult {
        path: rel.to_owned(),
        pattern: spec.pattern.to_owned(),
        matches: collector.matches,
        total_matches: collector.total,
        files_searched,
        files_skipped,
        truncated,
        next_offset: truncated.then_some(spec.offset + stored),
        offset: spec.offset,
    })
}

/// Searches one file, keeping the context of at most `limit` matches (all are counted).
fn search_file(
    file: &File,
    size: u64,
    shown: &str,
    re: &Regex,
    context_lines: u32,
    limit: usize,
) -> io::Result<FileMatches> {
    let context = usize::try_from(context_lines).unwrap_or(usize::MAX);
    if size <= WHOLE_FILE {
        let bytes = super::line::read_all_at(file, size)?;
        let probe = &bytes[..bytes.len().min(BINARY_PROBE)];
        if memchr::memchr(0, probe).is_some() {
            return Ok(FileMatches {
                kept: Vec::new(),
                total: 0,
                binary: true,
            });
        }
        if !re.is_match(&bytes) {
            return Ok(FileMatches {
                kept: Vec::new(),
                total: 0,
                binary: false,
            });
        }
        // The file's secrets, found over all of it: the search runs on its text with each
        // secret replaced line by line, so a context window that cuts a key shows none of
        // it, and a pattern that matches only inside a secret finds nothing (match counts are
        // no oracle for a secret's characters).
        let text = String::from_utf8_lossy(&bytes);
        if let Some((redacted, _)) = ctx_core::fragments::redact_window_of(&text, 0..text.len()) {
            return scan_lines(redacted.as_bytes(), shown, re, context, limit);
        }
        return scan_lines(&bytes[..], shown, re, context, limit);
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let probe = reader.fill_buf()?;
    if memchr::memchr(0, &probe[..probe.len().min(BINARY_PROBE)]).is_some() {
        return Ok(FileMatches {
            kept: Vec::new(),
            total: 0,
            binary: true,
        });
    }
    scan_lines(reader, shown, re, context, limit)
}

/// Reads the next line into `line` (without its `\n` or `\r\n`), keeping at most
/// [`MAX_LINE`] bytes of it. Returns false at the end of input.
fn next_line<R: BufRead>(reader: &mut R, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    let mut any = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if buf.is_empty() {
            break;
        }
        any = true;
        let (part, used, done) = match memchr::memchr(b'\n', buf) {
            Some(pos) => (&buf[..pos], pos + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = MAX_LINE.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        reader.consume(used);
        if done {
            break;
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(any)
}

/// A match waiting for its after-context.
struct Pending {
    line_number: u64,
    context: String,
    remaining: usize,
}

fn context_line(out: &mut String, number: u64, text: &[u8], is_match: bool) {
    let prefix = if is_match { "→ " } else { "  " };
    let _ = writeln!(out, "{prefix}{number}: {}", String::from_utf8_lossy(text));
}

fn scan_lines<R: BufRead>(
    mut reader: R,
    shown: &str,
    re: &Regex,
    context: usize,
    limit: usize,
) -> io::Result<FileMatches> {
    let mut before: VecDeque<(u64, Vec<u8>)> = VecDeque::with_capacity(context);
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut kept = Vec::new();
    let mut total = 0u64;
    let mut line = Vec::new();
    let mut number = 0u64;
    while next_line(&mut reader, &mut line)? {
        number += 1;
        for waiting in &mut pending {
            context_line(&mut waiting.context, number, &line, false);
            waiting.remaining -= 1;
        }
        while pending.front().is_some_and(|p| p.remaining == 0) {
            let done = pending.pop_front().expect("front exists");
            kept.push(SearchMatch {
                redactions: Vec::new(),
                path: shown.to_owned(),
                line_number: done.line_number,
                context: done.context,
            });
        }
        if re.is_match(&line) {
            total += 1;
            if kept.len() + pending.len() < limit {
                let mut block = String::new();
                for (n, text) in &before {
                    context_line(&mut block, *n, text, false);
                }
                context_line(&mut block, number, &line, true);
                // Later matches also appear as context of earlier pending ones (as in Amazon Q).
                pending.push_back(Pending {
                    line_number: number,
                    context: block,
                    remaining: context,
                });
                while pending.front().is_some_and(|p| p.remaining == 0) {
                    let done = pending.pop_front().expect("front exists");
                    kept.push(SearchMatch {
                        redactions: Vec::new(),
                        path: shown.to_owned(),
                        line_number: done.line_number,
                        context: done.context,
                    });
                }
            }
        }
        if context > 0 && (kept.len() + pending.len() < limit) {
            if before.len() == context {
                let (_, mut reuse) = before.pop_front().expect("full ring");
                reuse.clear();
                reuse.extend_from_slice(&line);
                before.push_back((number, reuse));
            } else {
                before.push_back((number, line.clone()));
            }
        }
    }
    for done in pending {
        kept.push(SearchMatch {
            redactions: Vec::new(),
            path: shown.to_owned(),
            line_number: done.line_number,
            context: done.context,
        });
    }
    Ok(FileMatches {
        kept,
        total,
        binary: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str, pattern: &str, context: usize) -> FileMatches {
        let spec = SearchSpec {
            pattern,
            regex: false,
            case_sensitive: false,
            context_lines: 0,
            offset: 0,
        };
        let re = matcher(&spec).expect("matcher");
        scan_lines(text.as_bytes(), "f", &re, context, usize::MAX).expect("scan")
    }

    #[test]
    fn literal_case_insensitive_matches_with_amazon_q_context_blocks() {
        let found = scan("one\nTwo\nthree\nfour two\nfive\n", "two", 1);
        assert_eq!(found.total, 2);
        assert_eq!(found.kept[0].line_number, 2);
        assert_eq!(found.kept[0].context, "  1: one\n→ 2: Two\n  3: three\n");
        assert_eq!(
            found.kept[1].context,
            "  3: three\n→ 4: four two\n  5: five\n"
        );
    }

    #[test]
    fn regex_metacharacters_are_literal_by_default() {
        let found = scan("a.b\naxb\n", "a.b", 0);
        assert_eq!(found.total, 1);
        assert_eq!(found.kept[0].context, "→ 1: a.b\n");
    }

    #[test]
    fn context_at_the_edges_and_crlf() {
        let found = scan("hit\r\nx\r\nhit", "HIT", 2);
        assert_eq!(found.kept[0].context, "→ 1: hit\n  2: x\n  3: hit\n");
        assert_eq!(found.kept[1].context, "  1: hit\n  2: x\n→ 3: hit\n");
    }

    #[test]
    fn the_limit_keeps_the_first_matches_and_counts_all() {
        let text = "m\n".repeat(10);
        let spec = SearchSpec {
            pattern: "m",
            regex: false,
            case_sensitive: false,
            context_lines: 0,
            offset: 0,
        };
        let re = matcher(&spec).expect("matcher");
        let found = scan_lines(text.as_bytes(), "f", &re, 0, 3).expect("scan");
        assert_eq!((found.kept.len(), found.total), (3, 10));
    }

    #[test]
    fn a_bad_regex_is_invalid_input() {
        let spec = SearchSpec {
            pattern: "(",
            regex: true,
            case_sensitive: false,
            context_lines: 0,
            offset: 0,
        };
        let err = matcher(&spec).expect_err("bad regex");
        assert!(err.to_string().contains("invalid regex"));
    }
}
