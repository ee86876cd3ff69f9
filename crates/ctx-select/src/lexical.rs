//! A small, language-family lexer that separates a source file's string literals and its
//! comments (docstrings count as comments) from the rest, so selection can weigh a quoted
//! error message against string literals and prose against comments.
//!
//! It is deliberately approximate: one scanner per family of comment and string syntax
//! (`#`-comment languages, C-like languages), chosen by file extension. A file of another
//! kind yields nothing, and its terms stay in the content field only.

/// The comment and string syntax of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `#` comments, `'`/`"` strings, `'''`/`"""` docstrings (Python).
    Python,
    /// `#` comments, `'`/`"` strings (shell, Ruby, YAML, TOML, Perl, R).
    Hash,
    /// `//` and `/* */` comments, `"` strings; `'` strings unless Rust; backtick strings
    /// in JS/TS and Go.
    CLike { single_quote: bool, backtick: bool },
}

fn family(id: &str) -> Option<Family> {
    let ext = id.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match ext.as_str() {
        "py" | "pyi" | "pyx" => Family::Python,
        "sh" | "bash" | "zsh" | "rb" | "yml" | "yaml" | "toml" | "pl" | "pm" | "r" | "cfg"
        | "ini" => Family::Hash,
        "rs" => Family::CLike {
            single_quote: false,
            backtick: false,
        },
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" | "go" => Family::CLike {
            single_quote: true,
            backtick: true,
        },
        "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "java" | "kt" | "kts" | "cs"
        | "swift" | "scala" | "php" | "dart" => Family::CLike {
            single_quote: true,
            backtick: false,
        },
        _ => return None,
    })
}

/// The string literals and the comments of `content`, each piece on its own line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lexed {
    pub strings: String,
    pub comments: String,
}

/// Splits out the string literals and comments of file `id`'s `content`.
pub fn lex(id: &str, content: &str) -> Lexed {
    let mut out = Lexed::default();
    let Some(family) = family(id) else {
        return out;
    };
    let bytes = content.as_bytes();
    let mut i = 0;
    let n = bytes.len();
    let push = |dest: &mut String, from: usize, to: usize| {
        if let Some(text) = content.get(from..to.min(n)) {
            dest.push_str(text);
            dest.push('\n');
        }
    };
    while i < n {
        let c = bytes[i];
        match family {
            Family::Python | Family::Hash if c == b'#' => {
                let end = find_byte(bytes, i, b'\n');
                push(&mut out.comments, i + 1, end);
                i = end;
            }
            Family::Python if (c == b'"' || c == b'\'') && bytes[i..].starts_with(&[c, c, c]) => {
                let close = [c, c, c];
                let start = i + 3;
                let end = find_seq(bytes, start, &close);
                push(&mut out.comments, start, end);
                i = (end + 3).min(n);
            }
            Family::Python | Family::Hash if c == b'"' || c == b'\'' => {
                let end = string_end(bytes, i + 1, c, true);
                push(&mut out.strings, i + 1, end);
                i = (end + 1).min(n);
            }
            Family::CLike { .. } if c == b'/' && bytes.get(i + 1) == Some(&b'/') => {
                let end = find_byte(bytes, i, b'\n');
                push(&mut out.comments, i + 2, end);
                i = end;
            }
            Family::CLike { .. } if c == b'/' && bytes.get(i + 1) == Some(&b'*') => {
                let end = find_seq(bytes, i + 2, b"*/");
                push(&mut out.comments, i + 2, end);
                i = (end + 2).min(n);
            }
            Family::CLike { single_quote, .. } if c == b'"' || (c == b'\'' && single_quote) => {
                let end = string_end(bytes, i + 1, c, true);
                push(&mut out.strings, i + 1, end);
                i = (end + 1).min(n);
            }
            Family::CLike { backtick: true, .. } if c == b'`' => {
                let end = string_end(bytes, i + 1, b'`', false);
                push(&mut out.strings, i + 1, end);
                i = (end + 1).min(n);
            }
            _ => i += 1,
        }
    }
    out
}

fn find_byte(bytes: &[u8], from: usize, b: u8) -> usize {
    bytes[from..]
        .iter()
        .position(|&x| x == b)
        .map_or(bytes.len(), |p| from + p)
}

fn find_seq(bytes: &[u8], from: usize, seq: &[u8]) -> usize {
    if from >= bytes.len() {
        return bytes.len();
    }
    bytes[from..]
        .windows(seq.len())
        .position(|w| w == seq)
        .map_or(bytes.len(), |p| from + p)
}

/// The position of the quote closing a string opened before `from`; a line end closes a
/// one-line string that was never closed (so one stray quote cannot swallow a file).
fn string_end(bytes: &[u8], from: usize, quote: u8, one_line: bool) -> usize {
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' if one_line => return i,
            x if x == quote => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_strings_comments_and_docstrings() {
        let src = "def f():\n    \"\"\"Return the thing.\"\"\"\n    raise ValueError(\"bad value: %s\" % x)  # never\n";
        let lexed = lex("a.py", src);
        assert_eq!(lexed.strings, "bad value: %s\n");
        assert!(lexed.comments.contains("Return the thing."));
        assert!(lexed.comments.contains("never"));
    }

    #[test]
    fn c_like_and_unknown_files() {
        let lexed = lex(
            "a.rs",
            "// doc\nfn f<'a>() { let s = \"a \\\" b\"; } /* c */",
        );
        assert_eq!(lexed.strings, "a \\\" b\n");
        assert_eq!(lexed.comments, " doc\n c \n");
        assert_eq!(lex("README.md", "\"quoted\"\n"), Lexed::default());
        let js = lex("a.js", "const t = `x ${y}`; const s = 'one';");
        assert_eq!(js.strings, "x ${y}\none\n");
    }
}
