//! The pre-tokenization split of `cl100k_base` and `o200k_base`, decided byte by byte where
//! the bytes that decide a piece are ASCII.
//!
//! Source code is nearly all ASCII, and on ASCII the encodings' split patterns reduce to a few
//! byte classes (letters, upper and lower case, digits, whitespace, newlines, the rest). This
//! module follows each pattern's alternatives in their order, as the regex does
//! (leftmost-first), and answers the end of the piece that starts at a position; when a byte
//! it must look at is not ASCII (a letter, digit, mark or space it cannot classify alone), it
//! answers `None` and the caller asks the regex for that one piece. The regex stays the
//! reference: `tests` compare both splits on generated and real text, piece by piece.
//!
//! The patterns (from `bpe-openai` 0.3.2, tiktoken's with `\s+(?!\S)` emulated by a second
//! pattern `\s+\s` whose last character is dropped, then `\s+`):
//! - `cl100k_base`: `(?i:'s|'t|'re|'ve|'m|'ll|'d)`, `[^\r\n\p{L}\p{N}]?\p{L}+`,
//!   `\p{N}{1,3}`, ` ?[^\s\p{L}\p{N}]+[\r\n]*`, `\s*[\r\n]+`, `\s+$`;
//! - `o200k_base`: `[^\r\n\p{L}\p{N}]?\p{Lu…}*\p{Ll…}+(?i:'s|…)?`,
//!   `[^\r\n\p{L}\p{N}]?\p{Lu…}+\p{Ll…}*(?i:'s|…)?`, `\p{N}{1,3}`,
//!   ` ?[^\s\p{L}\p{N}]+[\r\n/]*`, `\s*[\r\n]+`, `\s+$`.

/// Which encoding's split a position is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rules {
    Cl100k,
    O200k,
}

/// A byte's class, as the split patterns see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    Digit,
    /// `\r` or `\n`.
    Newline,
    /// Other `\s` in ASCII: space, tab, vertical tab, form feed.
    Space,
    /// Any other ASCII byte (punctuation, symbols, control characters).
    Other,
    /// Not ASCII: only the regex can tell.
    Unknown,
    /// Past the end of the text.
    End,
}

impl Class {
    fn letter(self) -> bool {
        matches!(self, Self::Upper | Self::Lower)
    }

    fn space(self) -> bool {
        matches!(self, Self::Newline | Self::Space)
    }
}

fn class(s: &[u8], at: usize) -> Class {
    match s.get(at) {
        None => Class::End,
        Some(b'A'..=b'Z') => Class::Upper,
        Some(b'a'..=b'z') => Class::Lower,
        Some(b'0'..=b'9') => Class::Digit,
        Some(b'\r' | b'\n') => Class::Newline,
        Some(b' ' | b'\t' | 0x0b | 0x0c) => Class::Space,
        Some(&b) if b < 0x80 => Class::Other,
        Some(_) => Class::Unknown,
    }
}

/// The end of the piece that starts at `at` (an ASCII byte of `s`), or `None` when a byte
/// that decides it is not ASCII.
pub(super) fn piece_end(rules: Rules, s: &[u8], at: usize) -> Option<usize> {
    let c0 = class(s, at);
    match rules {
        Rules::Cl100k => {
            if s[at] == b'\'' {
                match contraction(s, at)? {
                    0 => {}
                    len => return Some(at + len),
                }
            }
            // `[^\r\n\p{L}\p{N}]?\p{L}+`
            let word = word_start(s, at, c0).ok()?;
            if let Some(from) = word {
                return known(s, run(s, from, Class::letter));
            }
        }
        Rules::O200k => {
            let word = word_start(s, at, c0).ok()?;
            if let Some(from) = word {
                // `\p{Lu}*\p{Ll}+`, else `\p{Lu}+\p{Ll}*`: the upper-case run, then the
                // lower-case run after it if there is one.
                let upper = run(s, from, |c| c == Class::Upper);
                let end = match class(s, upper) {
                    Class::Lower => known(s, run(s, upper, |c| c == Class::Lower))?,
                    Class::Unknown => return None,
                    _ => upper,
                };
                if s.get(end) == Some(&b'\'') {
                    return Some(end + contraction(s, end)?);
                }
                return Some(end);
            }
        }
    }
    // `\p{N}{1,3}`
    if c0 == Class::Digit {
        let mut end = at + 1;
        while end < at + 3 {
            match class(s, end) {
                Class::Digit => end += 1,
                Class::Unknown => return None,
                _ => break,
            }
        }
        return Some(end);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*` (`[\r\n/]*` in o200k_base)
    let symbols = if c0 == Class::Other {
        Some(at)
    } else if s[at] == b' ' {
        match class(s, at + 1) {
            Class::Other => Some(at + 1),
            Class::Unknown => return None,
            _ => None,
        }
    } else {
        None
    };
    if let Some(from) = symbols {
        let mut end = known(s, run(s, from, |c| c == Class::Other))?;
        while let Some(&b) = s.get(end) {
            if b == b'\r' || b == b'\n' || (b == b'/' && rules == Rules::O200k) {
                end += 1;
            } else {
                break;
            }
        }
        return Some(end);
    }
    // What is left starts with whitespace: the run of it decides.
    debug_assert!(c0.space(), "every ASCII class is handled above");
    let end = known(s, run(s, at, Class::space))?;
    // `\s*[\r\n]+`: up to the run's last newline.
    if let Some(last) = memchr::memrchr2(b'\r', b'\n', &s[at..end]) {
        return Some(at + last + 1);
    }
    // `\s+$`
    if end == s.len() {
        return Some(end);
    }
    // `\s+\s` less its last character, else `\s+` (one character).
    Some(if end - at >= 2 { end - 1 } else { at + 1 })
}

/// Where the letters of a word starting at `at` begin: at `at` itself, or past a first byte
/// of `[^\r\n\p{L}\p{N}]` that a letter follows; `Ok(None)` when no word starts there,
/// [`NotAscii`] when the byte after such a first byte is not ASCII.
fn word_start(s: &[u8], at: usize, c0: Class) -> Result<Option<usize>, NotAscii> {
    if c0.letter() {
        return Ok(Some(at));
    }
    if !matches!(c0, Class::Space | Class::Other) {
        return Ok(None);
    }
    match class(s, at + 1) {
        c if c.letter() => Ok(Some(at + 1)),
        Class::Unknown => Err(NotAscii),
        _ => Ok(None),
    }
}

/// A byte that decides a piece is not ASCII: the regex decides.
struct NotAscii;

/// The end of the run of bytes from `from` whose class passes `is`.
fn run(s: &[u8], from: usize, is: impl Fn(Class) -> bool) -> usize {
    let mut end = from;
    while is(class(s, end)) {
        end += 1;
    }
    end
}

/// `end`, unless the byte there is not ASCII (it might have continued the run).
fn known(s: &[u8], end: usize) -> Option<usize> {
    (class(s, end) != Class::Unknown).then_some(end)
}

/// The length of the contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, any case) at
/// `at` (an apostrophe), `0` when there is none, `None` when a non-ASCII byte might make one
/// (case-insensitive `s` also matches `ſ`).
fn contraction(s: &[u8], at: usize) -> Option<usize> {
    let byte = |i: usize| s.get(at + i).map(u8::to_ascii_lowercase);
    if s.get(at + 1).is_some_and(|b| !b.is_ascii()) {
        return None;
    }
    Some(match byte(1) {
        Some(b's' | b't' | b'm' | b'd') => 2,
        Some(b'r' | b'v') => match s.get(at + 2) {
            Some(b) if !b.is_ascii() => return None,
            _ if byte(2) == Some(b'e') => 3,
            _ => 0,
        },
        Some(b'l') => match s.get(at + 2) {
            Some(b) if !b.is_ascii() => return None,
            _ if byte(2) == Some(b'l') => 3,
            _ => 0,
        },
        _ => 0,
    })
}
