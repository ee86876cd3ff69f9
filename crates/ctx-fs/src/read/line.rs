//! Line mode: a 1-based, inclusive line range, negative numbers counting from the end.
//!
//! Lines are what `\n` separates; a final `\n` ends the last line rather than starting an
//! empty one, so `"a\nb\n"` and `"a\nb"` both have two lines and an empty file has none. A
//! `\r` before `\n` is dropped (CRLF files read like LF files). The lines returned are joined
//! with `\n`, without a final newline, as the Amazon Q `fs_read` tool does.
//!
//! Rules: `start_line` and `end_line` may not be 0; `-1` is the last line; a negative number
//! reaching before the first line means line 1; an `end_line` past the end means the last
//! line; a `start_line` past the end is an error that states the line count; a start after
//! the end is an error.
//!
//! Only the bytes needed are read: a start counted from the end is found by scanning
//! backwards from the end of the file in fixed-size chunks (`pread`), a start counted from
//! the beginning by scanning forward, and the returned content is capped, so reading the last
//! lines of a 1 GB file touches a few kilobytes and memory stays flat. Files up to
//! [`ReadOptions::large_file_threshold`](super::ReadOptions) are read whole instead, which also
//! gives their line count.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use serde::Serialize;

use super::FsReadError;

/// Bytes read per step when scanning.
const CHUNK: usize = 64 * 1024;

/// The lines a Line operation returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineResult {
    /// The lines, joined with `\n` (no final newline, `\r` before `\n` dropped).
    pub content: String,
    /// Number of the first line returned; `None` when it was counted from the end of a large
    /// file whose length in lines was not read.
    pub start_line: Option<u64>,
    /// Number of the last line returned (same caveat).
    pub end_line: Option<u64>,
    /// Lines in the file, when known (always for files up to the large-file threshold).
    pub total_lines: Option<u64>,
    /// How many lines `content` holds.
    pub lines_returned: u64,
    /// Size of the file in bytes.
    pub file_bytes: u64,
    /// Whether the response cap cut the range short.
    pub truncated: bool,
    /// When truncated: the `start_line` to ask for next (negative when counting from the end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_start_line: Option<i64>,
    /// The first line as a request would name it (absolute, or negative from the end).
    #[serde(skip)]
    pub(crate) start_ref: i64,
    /// Secrets replaced in `content` (`[REDACTED:RULE]`): rule and line within `content`,
    /// never the secret.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<ctx_core::redact::RedactionFinding>,
}

impl LineResult {
    /// Bytes this result counts against the response cap.
    pub(crate) fn size(&self) -> usize {
        self.content.len()
    }

    /// Cuts the content to at most `budget` bytes at a line boundary, setting the
    /// continuation. With `allow_partial`, a first line longer than `budget` is cut inside.
    pub(crate) fn truncate_to(&mut self, budget: usize, allow_partial: bool) {
        if self.content.len() <= budget {
            return;
        }
        let bytes = self.content.as_bytes();
        match memchr::memrchr(b'\n', &bytes[..=budget]) {
            Some(pos) => {
                let kept = memchr::memchr_iter(b'\n', &bytes[..pos]).count() as u64 + 1;
                self.content.truncate(pos);
                self.mark_truncated(kept);
            }
            None if allow_partial && budget > 0 => {
                let at = floor_char_boundary(&self.content, budget);
                self.content.truncate(at);
                self.mark_truncated(1);
            }
            None => {
                self.content.clear();
                self.mark_truncated(0);
            }
        }
    }

    /// Marks the result cut after `kept` lines and sets where to continue.
    fn mark_truncated(&mut self, kept: u64) {
        self.lines_returned = kept;
        self.end_line = match (self.start_line, kept) {
            (_, 0) | (None, _) => None,
            (Some(start), n) => Some(start + n - 1),
        };
        self.truncated = true;
        let kept = i64::try_from(kept).unwrap_or(i64::MAX);
        self.next_start_line = Some(if self.start_ref < 0 {
            // Counting from the end: -k, then -(k - kept); lines remain, so never 0.
            (self.start_ref + kept).min(-1)
        } else {
            self.start_ref + kept
        });
    }
}

/// The largest char boundary at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Where the bytes come from: a file read by offset, or bytes already in memory.
trait Source {
    fn len(&self) -> u64;
    /// Up to `len` bytes at `offset` (fewer only at the end of the source).
    fn chunk<'a>(&'a self, offset: u64, len: usize, buf: &'a mut Vec<u8>) -> io::Result<&'a [u8]>;
}

impl Source for [u8] {
    fn len(&self) -> u64 {
        self.len() as u64
    }

    fn chunk<'a>(&'a self, offset: u64, len: usize, _buf: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let end = start.saturating_add(len).min(self.len());
        Ok(&self[start..end])
    }
}

struct FileSource<'f> {
    file: &'f File,
    len: u64,
}

impl Source for FileSource<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn chunk<'a>(&'a self, offset: u64, len: usize, buf: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
        buf.clear();
        buf.resize(len, 0);
        let mut filled = 0;
        while filled < len {
            match self
                .file
                .read_at(&mut buf[filled..], offset + filled as u64)
            {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        buf.truncate(filled);
        Ok(&buf[..])
    }
}

/// The first `len` bytes of `file`, read by offset so the descriptor's position does not
/// matter (fewer if the file shrank).
pub(crate) fn read_all_at(file: &File, len: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let whole = FileSource { file, len };
    whole.chunk(0, usize::try_from(len).unwrap_or(usize::MAX), &mut bytes)?;
    Ok(bytes)
}

/// Advances from `offset` (a line start) past up to `lines` newlines, reading no further than
/// `limit`. Returns the offset reached and the newlines passed.
fn forward<S: Source + ?Sized>(
    src: &S,
    mut offset: u64,
    lines: u64,
    limit: u64,
    buf: &mut Vec<u8>,
) -> io::Result<(u64, u64)> {
    let end = limit.min(src.len());
    let mut passed = 0;
    if lines == 0 {
        return Ok((offset, 0));
    }
    while offset < end {
        let want = usize::try_from(end - offset).unwrap_or(CHUNK).min(CHUNK);
        let chunk = src.chunk(offset, want, buf)?;
        if chunk.is_empty() {
            break;
        }
        for pos in memchr::memchr_iter(b'\n', chunk) {
            passed += 1;
            if passed == lines {
                return Ok((offset + pos as u64 + 1, passed));
            }
        }
        offset += chunk.len() as u64;
    }
    Ok((end, passed))
}

/// Where the `k`-th last line (k >= 1) starts, or, when the source has fewer than `k` lines,
/// `Err(line count)`.
fn backward<S: Source + ?Sized>(
    src: &S,
    k: u64,
    buf: &mut Vec<u8>,
) -> io::Result<Result<u64, u64>> {
    let size = src.len();
    if size == 0 {
        return Ok(Err(0));
    }
    let ends_with_newline = src.chunk(size - 1, 1, buf)?.first() == Some(&b'\n');
    let mut end = if ends_with_newline { size - 1 } else { size };
    let mut found = 0;
    while end > 0 {
        let start = end.saturating_sub(CHUNK as u64);
        let len = usize::try_from(end - start).unwrap_or(CHUNK);
        let chunk = src.chunk(start, len, buf)?;
        for pos in memchr::memrchr_iter(b'\n', chunk) {
            found += 1;
            if found == k {
                return Ok(Ok(start + pos as u64 + 1));
            }
        }
        end = start;
    }
    // `found` newlines separate `found + 1` lines; the first starts at 0.
    if found + 1 == k {
        Ok(Ok(0))
    } else {
        Ok(Err(found + 1))
    }
}

/// Lines in the whole source.
fn count_lines<S: Source + ?Sized>(src: &S, buf: &mut Vec<u8>) -> io::Result<u64> {
    let size = src.len();
    if size == 0 {
        return Ok(0);
    }
    let (_, newlines) = forward(src, 0, u64::MAX, size, buf)?;
    let ends_with_newline = src.chunk(size - 1, 1, buf)?.first() == Some(&b'\n');
    Ok(newlines + u64::from(!ends_with_newline))
}

/// What a Line operation asks for, validated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineRange {
    pub start: i64,
    pub end: i64,
}

/// Reads `range` from `file` (of `size` bytes), returning at most `cap` bytes of content.
pub(crate) fn read_lines(
    file: &File,
    size: u64,
    path: &str,
    range: LineRange,
    cap: usize,
    large_file_threshold: u64,
) -> Result<LineResult, FsReadError> {
    let io_err = |source| FsReadError::Io {
        path: path.to_owned(),
        source,
    };
    if size <= large_file_threshold {
        let bytes = read_all_at(file, size).map_err(io_err)?;
        let mut buf = Vec::new();
        let total = count_lines(&bytes[..], &mut buf).map_err(io_err)?;
        let mut result = select(&bytes[..], path, range, cap, Some(total))?;
        result.total_lines = Some(total);
        Ok(result)
    } else {
        let src = FileSource { file, len: size };
        select(&src, path, range, cap, None)
    }
}

/// Where a range's first line starts.
enum Start {
    /// Its offset, its line number when known, and the start as the caller may refer to it.
    At(u64, Option<u64>, i64),
    /// The file has no lines (and the range asked for the first).
    Empty,
}

/// Finds where line `start` begins (counted from the end when negative); sets `total` when
/// finding it counted every line.
fn locate_start<S: Source + ?Sized>(
    src: &S,
    path: &str,
    start: i64,
    total: &mut Option<u64>,
    buf: &mut Vec<u8>,
) -> Result<Start, FsReadError> {
    let io_err = |source| FsReadError::Io {
        path: path.to_owned(),
        source,
    };
    let size = src.len();
    if start > 0 {
        let wanted = start.unsigned_abs();
        let (off, passed) = forward(src, 0, wanted - 1, size, buf).map_err(io_err)?;
        if passed < wanted - 1 || off >= size {
            let lines = if passed < wanted - 1 {
                let ends_with_newline = size > 0
                    && src.chunk(size - 1, 1, buf).map_err(io_err)?.first() == Some(&b'\n');
                passed + u64::from(size > 0 && !ends_with_newline)
            } else {
                passed
            };
            if lines == 0 && start == 1 {
                return Ok(Start::Empty);
            }
            return Err(FsReadError::StartPastEnd {
                path: path.to_owned(),
                start,
                total: lines,
            });
        }
        return Ok(Start::At(off, Some(wanted), start));
    }
    let k = start.unsigned_abs();
    match backward(src, k, buf).map_err(io_err)? {
        Ok(off) => {
            let line = if off == 0 {
                Some(1)
            } else {
                total.map(|t| t + 1 - k)
            };
            Ok(Start::At(off, line, start))
        }
        // Fewer lines than asked for: start at line 1.
        Err(lines) => {
            *total = Some(lines);
            if lines == 0 {
                return Ok(Start::Empty);
            }
            Ok(Start::At(0, Some(1), 1))
        }
    }
}

/// `bytes` (read from `start_off`) as text; a multi-byte character cut by the cap
/// (`truncated`) is dropped, not an encoding error.
fn decode<'a>(
    bytes: &'a [u8],
    truncated: bool,
    path: &str,
    size: u64,
    start_off: u64,
) -> Result<&'a str, FsReadError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(err) if truncated && err.error_len().is_none() => {
            Ok(std::str::from_utf8(&bytes[..err.valid_up_to()]).expect("valid prefix"))
        }
        Err(err) => Err(FsReadError::NotUtf8 {
            path: path.to_owned(),
            bytes: size,
            offset: start_off + err.valid_up_to() as u64,
        }),
    }
}

/// The range selection shared by both sources; `known_total` is the line count when the
/// caller already has it (it only improves error messages and line numbers).
fn select<S: Source + ?Sized>(
    src: &S,
    path: &str,
    range: LineRange,
    cap: usize,
    known_total: Option<u64>,
) -> Result<LineResult, FsReadError> {
    let io_err = |source| FsReadError::Io {
        path: path.to_owned(),
        source,
    };
    let size = src.len();
    let mut buf = Vec::with_capacity(CHUNK);
    let mut total = known_total;
    let empty = |total: u64| LineResult {
        redactions: Vec::new(),
        content: String::new(),
        start_line: None,
        end_line: None,
        total_lines: Some(total),
        lines_returned: 0,
        file_bytes: size,
        truncated: false,
        next_start_line: None,
        start_ref: 1,
    };

    // Where the first line starts, and its number when known.
    let LineRange { start, end } = range;
    let (start_off, mut start_line, start_ref) =
        match locate_start(src, path, start, &mut total, &mut buf)? {
            Start::At(off, line, reference) => (off, line, reference),
            Start::Empty => return Ok(empty(0)),
        };

    // Where the range ends (exclusive: just after the end line's newline), reading no
    // further than the cap allows.
    let scan_limit = start_off.saturating_add(cap as u64 + 1);
    let end_off = if end > 0 {
        let end_abs = end.unsigned_abs();
        let first = if let Some(line) = start_line {
            line
        } else {
            // Counted from the end with an absolute end: the line count is needed.
            let lines = count_lines(src, &mut buf).map_err(io_err)?;
            total = Some(lines);
            let line = lines + 1 - start.unsigned_abs();
            start_line = Some(line);
            line
        };
        if end_abs < first {
            return Err(FsReadError::InvalidRange {
                path: path.to_owned(),
                start,
                end,
                total,
            });
        }
        forward(src, start_off, end_abs - first + 1, scan_limit, &mut buf)
            .map_err(io_err)?
            .0
    } else if end == -1 {
        size
    } else {
        let j = end.unsigned_abs();
        match backward(src, j - 1, &mut buf).map_err(io_err)? {
            Ok(off) if off > 0 => off,
            // The end reaches before line 1: it means line 1.
            _ => forward(src, 0, 1, size, &mut buf).map_err(io_err)?.0,
        }
    };
    if end_off <= start_off {
        return Err(FsReadError::InvalidRange {
            path: path.to_owned(),
            start,
            end,
            total,
        });
    }

    let want = end_off - start_off;
    let truncated = want > cap as u64;
    let read_len = usize::try_from(want)
        .unwrap_or(usize::MAX)
        .min(cap.saturating_add(1));
    let bytes = src
        .chunk(start_off, read_len, &mut buf)
        .map_err(io_err)?
        .to_vec();
    let text = decode(&bytes, truncated, path, size, start_off)?;
    let mut content = String::with_capacity(text.len());
    let mut lines = 0u64;
    for line in text.lines() {
        if lines > 0 {
            content.push('\n');
        }
        content.push_str(line);
        lines += 1;
    }
    let mut result = LineResult {
        redactions: Vec::new(),
        content,
        start_line,
        end_line: start_line.map(|s| s + lines.saturating_sub(1)),
        total_lines: total,
        lines_returned: lines,
        file_bytes: size,
        truncated: false,
        next_start_line: None,
        start_ref: start_line
            .and_then(|s| i64::try_from(s).ok())
            .unwrap_or(start_ref),
    };
    if truncated {
        // Reading stopped at the cap. A last line without its newline is partial: drop it,
        // unless it is the only one (a line longer than the cap), which is cut inside.
        if bytes.last() == Some(&b'\n') {
            result.mark_truncated(lines);
        } else if lines > 1 {
            let cut = result.content.rfind('\n').expect("several lines");
            result.content.truncate(cut);
            result.mark_truncated(lines - 1);
        } else {
            let at = floor_char_boundary(&result.content, cap);
            result.content.truncate(at);
            result.mark_truncated(1);
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// One row of the Line-semantics table: file bytes, range, expected lines or error.
    struct Case {
        name: &'static str,
        file: &'static str,
        start: i64,
        end: i64,
        want: Result<&'static [&'static str], &'static str>,
        total: u64,
    }

    const CASES: &[Case] = &[
        Case {
            name: "empty file, defaults",
            file: "",
            start: 1,
            end: -1,
            want: Ok(&[]),
            total: 0,
        },
        Case {
            name: "empty file, last line",
            file: "",
            start: -1,
            end: -1,
            want: Ok(&[]),
            total: 0,
        },
        Case {
            name: "empty file, start 2",
            file: "",
            start: 2,
            end: -1,
            want: Err("has 0 lines"),
            total: 0,
        },
        Case {
            name: "one line",
            file: "only\n",
            start: 1,
            end: -1,
            want: Ok(&["only"]),
            total: 1,
        },
        Case {
            name: "one line, no newline",
            file: "only",
            start: 1,
            end: 1,
            want: Ok(&["only"]),
            total: 1,
        },
        Case {
            name: "one line, -1",
            file: "only",
            start: -1,
            end: -1,
            want: Ok(&["only"]),
            total: 1,
        },
        Case {
            name: "single newline is one empty line",
            file: "\n",
            start: 1,
            end: -1,
            want: Ok(&[""]),
            total: 1,
        },
        Case {
            name: "no trailing newline",
            file: "a\nb\nc",
            start: 2,
            end: 3,
            want: Ok(&["b", "c"]),
            total: 3,
        },
        Case {
            name: "trailing newline adds no line",
            file: "a\nb\nc\n",
            start: -1,
            end: -1,
            want: Ok(&["c"]),
            total: 3,
        },
        Case {
            name: "blank lines are lines",
            file: "a\n\n\nb\n",
            start: 2,
            end: 3,
            want: Ok(&["", ""]),
            total: 4,
        },
        Case {
            name: "CRLF",
            file: "a\r\nb\r\nc\r\n",
            start: 1,
            end: -1,
            want: Ok(&["a", "b", "c"]),
            total: 3,
        },
        Case {
            name: "CRLF last line",
            file: "a\r\nb\r\n",
            start: -1,
            end: -1,
            want: Ok(&["b"]),
            total: 2,
        },
        Case {
            name: "lone CR kept",
            file: "a\rb\n",
            start: 1,
            end: 1,
            want: Ok(&["a\rb"]),
            total: 1,
        },
        Case {
            name: "last two",
            file: "1\n2\n3\n4\n5\n",
            start: -2,
            end: -1,
            want: Ok(&["4", "5"]),
            total: 5,
        },
        Case {
            name: "-N past the start clamps to line 1",
            file: "1\n2\n3\n",
            start: -10,
            end: -1,
            want: Ok(&["1", "2", "3"]),
            total: 3,
        },
        Case {
            name: "-N past the start, absolute end",
            file: "1\n2\n3\n",
            start: -10,
            end: 2,
            want: Ok(&["1", "2"]),
            total: 3,
        },
        Case {
            name: "negative start, absolute end",
            file: "1\n2\n3\n4\n5\n",
            start: -3,
            end: 4,
            want: Ok(&["3", "4"]),
            total: 5,
        },
        Case {
            name: "negative end",
            file: "1\n2\n3\n4\n5\n",
            start: 2,
            end: -2,
            want: Ok(&["2", "3", "4"]),
            total: 5,
        },
        Case {
            name: "negative end past the start clamps to line 1",
            file: "1\n2\n3\n",
            start: 1,
            end: -10,
            want: Ok(&["1"]),
            total: 3,
        },
        Case {
            name: "end past the end clamps",
            file: "1\n2\n3\n",
            start: 2,
            end: 99,
            want: Ok(&["2", "3"]),
            total: 3,
        },
        Case {
            name: "start equals end",
            file: "1\n2\n3\n",
            start: 2,
            end: 2,
            want: Ok(&["2"]),
            total: 3,
        },
        Case {
            name: "start past the end",
            file: "1\n2\n3\n",
            start: 4,
            end: -1,
            want: Err("has 3 lines"),
            total: 3,
        },
        Case {
            name: "start far past the end",
            file: "1\n2\n3",
            start: 50,
            end: 60,
            want: Err("has 3 lines"),
            total: 3,
        },
        Case {
            name: "start > end",
            file: "1\n2\n3\n4\n",
            start: 3,
            end: 2,
            want: Err("after end_line"),
            total: 4,
        },
        Case {
            name: "negative start > negative end",
            file: "1\n2\n3\n4\n",
            start: -1,
            end: -3,
            want: Err("after end_line"),
            total: 4,
        },
        Case {
            name: "absolute start > negative end",
            file: "1\n2\n3\n4\n",
            start: 4,
            end: -2,
            want: Err("after end_line"),
            total: 4,
        },
        Case {
            name: "unicode",
            file: "é\n日本\n",
            start: 2,
            end: 2,
            want: Ok(&["日本"]),
            total: 2,
        },
    ];

    fn run(file: &[u8], range: LineRange, threshold: u64) -> Result<LineResult, FsReadError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, file).expect("write");
        let handle = File::open(&path).expect("open");
        read_lines(
            &handle,
            file.len() as u64,
            "f",
            range,
            400 * 1024,
            threshold,
        )
    }

    #[test]
    fn line_semantics_table_in_memory_and_streamed() {
        // Threshold u64::MAX reads files whole; 0 streams every file through pread.
        for threshold in [u64::MAX, 0] {
            for case in CASES {
                let range = LineRange {
                    start: case.start,
                    end: case.end,
                };
                let got = run(case.file.as_bytes(), range, threshold);
                let label = format!("{} (threshold {threshold})", case.name);
                match (&case.want, got) {
                    (Ok(lines), Ok(result)) => {
                        assert_eq!(result.content, lines.join("\n"), "{label}");
                        assert_eq!(result.lines_returned, lines.len() as u64, "{label}");
                        assert!(!result.truncated, "{label}");
                        if threshold == u64::MAX {
                            assert_eq!(result.total_lines, Some(case.total), "{label}");
                        }
                    }
                    (Err(needle), Err(err)) => {
                        let message = err.to_string();
                        assert!(message.contains(needle), "{label}: {message}");
                    }
                    (want, got) => panic!("{label}: wanted {want:?}, got {got:?}"),
                }
            }
        }
    }

    #[test]
    fn line_numbers_are_reported_for_small_files() {
        let got = run(
            b"1\n2\n3\n4\n5\n",
            LineRange { start: -2, end: -1 },
            u64::MAX,
        )
        .expect("read");
        assert_eq!(
            (got.start_line, got.end_line, got.total_lines),
            (Some(4), Some(5), Some(5))
        );
    }

    #[test]
    fn the_cap_cuts_at_a_line_boundary_and_says_where_to_continue() {
        let file = (1..=100).fold(String::new(), |mut acc, i| {
            let _ = writeln!(acc, "line {i:03}");
            acc
        });
        for threshold in [u64::MAX, 0] {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("f");
            std::fs::write(&path, &file).expect("write");
            let handle = File::open(&path).expect("open");
            let got = read_lines(
                &handle,
                file.len() as u64,
                "f",
                LineRange { start: 1, end: -1 },
                50,
                threshold,
            )
            .expect("read");
            assert!(got.truncated);
            assert_eq!(
                got.content,
                "line 001\nline 002\nline 003\nline 004\nline 005"
            );
            assert_eq!(got.next_start_line, Some(6));
            let got = read_lines(
                &handle,
                file.len() as u64,
                "f",
                LineRange {
                    start: -10,
                    end: -1,
                },
                30,
                threshold,
            )
            .expect("read");
            assert_eq!(got.content, "line 091\nline 092\nline 093");
            let next = if threshold == 0 { -7 } else { 94 };
            assert_eq!(got.next_start_line, Some(next), "threshold {threshold}");
        }
    }

    #[test]
    fn a_line_longer_than_the_cap_is_cut_inside_and_the_next_line_follows() {
        let file = format!("{}\nshort\n", "x".repeat(100));
        let got = run(file.as_bytes(), LineRange { start: 1, end: -1 }, u64::MAX);
        assert!(got.is_ok());
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, &file).expect("write");
        let handle = File::open(&path).expect("open");
        let got = read_lines(
            &handle,
            file.len() as u64,
            "f",
            LineRange { start: 1, end: -1 },
            10,
            0,
        )
        .expect("read");
        assert_eq!(got.content, "x".repeat(10));
        assert_eq!(got.next_start_line, Some(2));
    }

    #[test]
    fn invalid_utf8_is_an_error_with_the_byte_count() {
        let err = run(b"ok\n\xff\xfe\n", LineRange { start: 1, end: -1 }, u64::MAX)
            .expect_err("not utf8");
        let message = err.to_string();
        assert!(
            message.contains("not UTF-8") && message.contains("6 bytes"),
            "{message}"
        );
    }
}
