//! Payload styles: how each included unit is written, and why block token counts add up.
//!
//! Every style writes a preamble, one block per included unit, and an epilogue. Blocks start
//! with a non-space character other than `/` and end with a newline, and the preamble and
//! epilogue do too, so the tiktoken pre-tokenizers (o200k_base, cl100k_base) always split at
//! block boundaries: the payload's token count is exactly the sum of its parts. That lets each
//! block's count be cached by the hash of its bytes, and a warm render tokenizes nothing.
//! `tests` check the sum against a count of the whole payload.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// How the payload is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadStyle {
    /// `## path` headers and fenced code blocks.
    #[default]
    Markdown,
    /// `<document path="…" hash="…">` elements.
    Xml,
    /// `=== path ===` separators.
    Plain,
    /// A JSON array of `{path, lines, hash, content}` objects.
    Json,
}

impl PayloadStyle {
    /// Every style, for help texts.
    pub const ALL: [Self; 4] = [Self::Markdown, Self::Xml, Self::Plain, Self::Json];

    /// The style's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Markdown => "markdown",
            Self::Xml => "xml",
            Self::Plain => "plain",
            Self::Json => "json",
        }
    }

    /// Text before the first block.
    pub const fn preamble(self) -> &'static str {
        match self {
            Self::Json => "[\n",
            _ => "",
        }
    }

    /// Text after the last block.
    pub const fn epilogue(self) -> &'static str {
        match self {
            Self::Json => "]\n",
            _ => "",
        }
    }
}

impl std::str::FromStr for PayloadStyle {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|style| style.name() == s)
            .ok_or_else(|| format!("unknown style `{s}`; use markdown, xml, plain or json"))
    }
}

/// What a block header shows about a unit.
pub struct BlockHeader<'a> {
    pub label: &'a str,
    pub lines: Option<(u64, u64)>,
    pub hash: &'a str,
    pub lang: &'a str,
}

/// One unit's block as a new string (see [`write_block`]).
#[cfg(test)]
pub fn block(style: PayloadStyle, header: &BlockHeader<'_>, content: &str, first: bool) -> String {
    let mut out = String::with_capacity(content.len() + header.label.len() + 128);
    write_block(&mut out, style, header, content, first);
    out
}

/// Appends one unit's block to `out`. `first` matters only for JSON (commas go before later
/// elements).
pub fn write_block(
    out: &mut String,
    style: PayloadStyle,
    header: &BlockHeader<'_>,
    content: &str,
    first: bool,
) {
    let newline = if content.is_empty() || content.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let range = header
        .lines
        .map(|(s, e)| format!(" (lines {s}-{e})"))
        .unwrap_or_default();
    match style {
        PayloadStyle::Markdown => {
            let fence = "`".repeat(longest_backtick_run(content).max(2) + 1);
            let _ = write!(
                out,
                "## {}{range}\n{}\n\n{fence}{}\n{content}{newline}{fence}\n\n",
                header.label, header.hash, header.lang
            );
        }
        PayloadStyle::Xml => {
            let lines = header
                .lines
                .map(|(s, e)| format!(" lines=\"{s}-{e}\""))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<document path=\"{}\"{lines} hash=\"{}\">\n{content}{newline}</document>\n\n",
                xml_attr(header.label),
                header.hash
            );
        }
        PayloadStyle::Plain => {
            let _ = write!(
                out,
                "=== {}{range} {} ===\n{content}{newline}\n",
                header.label, header.hash
            );
        }
        PayloadStyle::Json => {
            #[derive(Serialize)]
            struct Element<'a> {
                path: &'a str,
                lines: Option<[u64; 2]>,
                hash: &'a str,
                content: &'a str,
            }
            let element = Element {
                path: header.label,
                lines: header.lines.map(|(s, e)| [s, e]),
                hash: header.hash,
                content,
            };
            if !first {
                out.push(',');
            }
            serde_json::to_writer(StringWriter(out), &element).expect("strings serialize");
            out.push('\n');
        }
    }
}

/// Lets serde_json write straight into a `String` (it only ever writes valid UTF-8).
struct StringWriter<'a>(&'a mut String);

impl std::io::Write for StringWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = std::str::from_utf8(buf)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        self.0.push_str(text);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn longest_backtick_run(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut longest, mut at) = (0, 0);
    while let Some(offset) = memchr::memchr(b'`', &bytes[at..]) {
        let start = at + offset;
        let run = bytes[start..].iter().take_while(|&&b| b == b'`').count();
        longest = longest.max(run);
        at = start + run;
    }
    longest
}

fn xml_attr(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctx_core::TokenizerKind;

    fn header(label: &str) -> BlockHeader<'_> {
        BlockHeader {
            label,
            lines: Some((3, 9)),
            hash: "sha256:00ff",
            lang: "rust",
        }
    }

    #[test]
    fn block_counts_add_up_to_the_payload_count() {
        let contents = [
            "",
            "x",
            "\n",
            "\n\n\n",
            "   ",
            "  leading spaces\n",
            "no newline at end",
            "trailing spaces   ",
            "ends with slash /",
            "/starts with slash\n",
            "```\ncode\n```",
            "<|endoftext|>",
            "\t\tTabs\n\n",
            "emoji 🎉\n",
            "日本語",
            "'s contraction",
            "CRLF\r\n",
            "lone CR\r",
            "  \n  \n",
            "}\n",
            "]",
            "{\"k\": 1}\n",
            "#heading\n",
            "// comment\n",
            "x\n/",
            "a\u{a0}b",
            "\u{3000}",
            "naïve\u{301}",
        ];
        for tokenizer in [TokenizerKind::O200kBase, TokenizerKind::Cl100kBase] {
            for style in PayloadStyle::ALL {
                for (i, a) in contents.iter().enumerate() {
                    for b in &contents[i..] {
                        let blocks = [
                            block(style, &header("src/a.rs"), a, true),
                            block(style, &header("/abs/b.rs"), b, false),
                            block(style, &header("c d.md"), a, false),
                        ];
                        let payload = format!(
                            "{}{}{}",
                            style.preamble(),
                            blocks.concat(),
                            style.epilogue()
                        );
                        let sum: usize = tokenizer.count(style.preamble())
                            + blocks.iter().map(|b| tokenizer.count(b)).sum::<usize>()
                            + tokenizer.count(style.epilogue());
                        assert_eq!(
                            sum,
                            tokenizer.count(&payload),
                            "{tokenizer} {style:?} {a:?} {b:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn json_payload_is_valid_json() {
        let blocks = [
            block(PayloadStyle::Json, &header("a"), "x\"y", true),
            block(PayloadStyle::Json, &header("b"), "", false),
        ];
        let payload = format!("[\n{}]\n", blocks.concat());
        let value: serde_json::Value = serde_json::from_str(&payload).expect("valid JSON");
        assert_eq!(value[0]["content"], "x\"y");
        assert_eq!(value[1]["path"], "b");
    }

    #[test]
    fn backtick_runs_are_measured() {
        assert_eq!(longest_backtick_run(""), 0);
        assert_eq!(longest_backtick_run("a `b` ``c`` d"), 2);
        assert_eq!(longest_backtick_run("````"), 4);
        assert_eq!(longest_backtick_run("x```y`"), 3);
    }

    #[test]
    fn markdown_fences_outgrow_backticks_in_content() {
        let b = block(
            PayloadStyle::Markdown,
            &header("a.md"),
            "````\ncode\n````\n",
            true,
        );
        assert!(b.contains("\n`````rust\n"), "{b}");
    }
}
