//! Optional canonicalization of document text before ingestion (seed 003): line endings,
//! trailing whitespace, trailing blank lines and Unicode NFC. All off by default, so a
//! document's version is the hash of its bytes exactly as read.

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

/// Which transforms to apply. They always run in the same order: NFC, line endings,
/// trailing whitespace, trailing blank lines.
// Independent switches, one per transform; not a state machine.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanonicalizeOptions {
    /// Unicode normalization form C.
    pub unicode_nfc: bool,
    /// `\r\n` and lone `\r` become `\n`.
    pub line_endings: bool,
    /// Spaces and tabs at the end of each line are removed.
    pub trailing_whitespace: bool,
    /// Blank lines at the end are removed (a final newline is kept if there was one).
    pub trailing_blank_lines: bool,
}

impl CanonicalizeOptions {
    /// Whether any transform is on.
    pub fn any(self) -> bool {
        self.unicode_nfc
            || self.line_endings
            || self.trailing_whitespace
            || self.trailing_blank_lines
    }
}

/// Applies the transforms `opts` turns on, in their fixed order.
pub fn canonicalize(text: &str, opts: CanonicalizeOptions) -> String {
    let mut out: String = if opts.unicode_nfc {
        text.nfc().collect()
    } else {
        text.to_owned()
    };
    if opts.line_endings {
        out = out.replace("\r\n", "\n").replace('\r', "\n");
    }
    if opts.trailing_whitespace {
        let mut trimmed = String::with_capacity(out.len());
        for (i, line) in out.split('\n').enumerate() {
            if i > 0 {
                trimmed.push('\n');
            }
            let (body, cr) = match line.strip_suffix('\r') {
                Some(body) => (body, "\r"),
                None => (line, ""),
            };
            trimmed.push_str(body.trim_end_matches([' ', '\t']));
            trimmed.push_str(cr);
        }
        out = trimmed;
    }
    if opts.trailing_blank_lines {
        let had_newline = out.ends_with('\n');
        let kept = out.trim_end_matches(['\n', '\r', ' ', '\t']).len();
        out.truncate(kept);
        if had_newline && !out.is_empty() {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_keeps_bytes() {
        let text = "a \r\nb\t\n\n\n";
        assert_eq!(canonicalize(text, CanonicalizeOptions::default()), text);
    }

    #[test]
    fn each_transform() {
        let all = CanonicalizeOptions {
            unicode_nfc: true,
            line_endings: true,
            trailing_whitespace: true,
            trailing_blank_lines: true,
        };
        assert_eq!(canonicalize("e\u{301} \r\nb\t\r\n\n\n", all), "\u{e9}\nb\n");
        let endings = CanonicalizeOptions {
            line_endings: true,
            ..CanonicalizeOptions::default()
        };
        assert_eq!(canonicalize("a\r\nb\rc", endings), "a\nb\nc");
        let ws = CanonicalizeOptions {
            trailing_whitespace: true,
            ..CanonicalizeOptions::default()
        };
        assert_eq!(canonicalize("a  \r\nb\t", ws), "a\r\nb");
        let blank = CanonicalizeOptions {
            trailing_blank_lines: true,
            ..CanonicalizeOptions::default()
        };
        assert_eq!(canonicalize("a\n\n\n", blank), "a\n");
        assert_eq!(canonicalize("a", blank), "a");
        assert_eq!(canonicalize("\n\n", blank), "");
    }
}
