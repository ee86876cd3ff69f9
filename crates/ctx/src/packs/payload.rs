//! Payload styles: how the preamble, the tree, each included unit and the summary are written,
//! and why their token counts add up.
//!
//! A payload is a head (what this is, how parts are delimited, the tree of included paths),
//! one block per included unit, and a tail (a summary of what was included, left out and
//! redacted). Every piece starts with a non-space character other than `/` and ends with a
//! newline, so the tiktoken pre-tokenizers (o200k_base, cl100k_base) always split between
//! pieces: the payload's token count is exactly the sum of its pieces' counts. That lets each
//! block's count be cached by the hash of its identity, and a warm render tokenizes nothing
//! but the head and tail. `tests` check the sum against a count of the whole payload.
//!
//! Headers name the workspace-relative path, the lines (`(12 lines)` for a whole file,
//! `(lines 10-50)` for a range) and the language; content hashes appear only with
//! [`PayloadOptions::hashes`] (they are always in the render report and the snapshot).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use ctx_sources::UnitKind;
use serde::{Deserialize, Serialize};

/// How the payload is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadStyle {
    /// `## path (N lines)` headers and fenced code blocks.
    #[default]
    Markdown,
    /// `<file path="…" lines="…" language="…">` elements.
    Xml,
    /// `=== path (N lines) ===` separators.
    Plain,
    /// A JSON array: an `about` element, a `tree`, one element per part, a `summary`.
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

/// Options that change how blocks are written; part of the render policy (and so of the
/// render hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PayloadOptions {
    /// Show each part's content hash in its header.
    #[serde(default)]
    pub hashes: bool,
    /// Number every line (`12: …`), counting from the first line of a range.
    #[serde(default)]
    pub line_numbers: bool,
}

/// What a block header shows about a unit.
pub struct BlockHeader<'a> {
    pub kind: UnitKind,
    pub label: &'a str,
    /// The requested range, when the unit is one.
    pub lines: Option<(u64, u64)>,
    pub hash: &'a str,
    pub lang: &'a str,
}

/// Lines in `text` (a last line without a newline counts).
pub fn line_count(text: &str) -> u64 {
    line_count_of(text.as_bytes())
}

fn line_count_of(bytes: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    newlines + u64::from(!bytes.is_empty() && !bytes.ends_with(b"\n"))
}

/// `text` with every line prefixed by its number, right-aligned, from `first`.
pub fn number_lines(text: &str, first: u64) -> String {
    let last = first + line_count(text).saturating_sub(1);
    let width = last.to_string().len();
    let mut out = String::with_capacity(text.len() + (width + 2) * 64);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let _ = write!(out, "{:>width$}: {line}", first + i as u64);
    }
    out
}

/// The line span a header shows: `(first, last)` of a range, or `None` for a whole file.
fn span(header: &BlockHeader<'_>, content: &[u8]) -> (Option<(u64, u64)>, u64) {
    let count = line_count_of(content);
    let range = header
        .lines
        .map(|(start, _)| (start, start + count.saturating_sub(1)));
    (range, count)
}

/// `12 lines`, `lines 10-50`, `empty`.
fn lines_phrase(range: Option<(u64, u64)>, count: u64) -> String {
    match range {
        Some((s, e)) => format!("lines {s}-{e}"),
        None if count == 0 => "empty".to_owned(),
        None if count == 1 => "1 line".to_owned(),
        None => format!("{count} lines"),
    }
}

/// `1-12` (for attributes and JSON); `None` when empty.
fn lines_pair(range: Option<(u64, u64)>, count: u64) -> Option<(u64, u64)> {
    match range {
        Some(r) => Some(r),
        None if count == 0 => None,
        None => Some((1, count)),
    }
}

/// The human title of a part: its path for files, what it is otherwise.
fn title(header: &BlockHeader<'_>) -> String {
    match header.kind {
        UnitKind::File | UnitKind::Log => header.label.to_owned(),
        UnitKind::Diff => format!("git diff: {}", header.label),
        UnitKind::Command => format!("command output: {}", header.label),
        UnitKind::Text => "text".to_owned(),
    }
}

/// One unit's block as a new string (see [`write_block`]).
#[cfg(test)]
pub fn block(
    style: PayloadStyle,
    options: PayloadOptions,
    header: &BlockHeader<'_>,
    content: &str,
) -> String {
    let mut out = String::with_capacity(content.len() + header.label.len() + 128);
    write_block(&mut out, style, options, header, content);
    out
}

/// Appends one unit's block to `out`.
pub fn write_block(
    out: &mut String,
    style: PayloadStyle,
    options: PayloadOptions,
    header: &BlockHeader<'_>,
    content: &str,
) {
    let (range, count) = span(header, content.as_bytes());
    let numbered;
    let content = if options.line_numbers && header.kind == UnitKind::File {
        numbered = number_lines(content, range.map_or(1, |(s, _)| s));
        numbered.as_str()
    } else {
        content
    };
    if let Some((head, tail)) = frame(style, options, header, content.as_bytes(), range, count) {
        out.reserve(head.len() + content.len() + tail.len());
        out.push_str(&head);
        out.push_str(content);
        out.push_str(&tail);
        return;
    }
    json_block(out, options, header, content, range, count);
}

/// The text before and after a block's content when the block holds the content as it is
/// (every style but JSON, without line numbers), so that a writer can send the three parts
/// without copying the content into one string: `head + content + tail` is exactly
/// [`write_block`]'s block. `None` when the content is escaped or numbered. The content is
/// bytes: a text read again and checked against its hash is framed without being decoded.
pub fn verbatim_frame(
    style: PayloadStyle,
    options: PayloadOptions,
    header: &BlockHeader<'_>,
    content: &[u8],
) -> Option<(String, String)> {
    if options.line_numbers && header.kind == UnitKind::File {
        return None;
    }
    let (range, count) = span(header, content);
    frame(style, options, header, content, range, count)
}

/// A block's head and tail around `content` (already numbered when asked); `None` for JSON.
fn frame(
    style: PayloadStyle,
    options: PayloadOptions,
    header: &BlockHeader<'_>,
    content: &[u8],
    range: Option<(u64, u64)>,
    count: u64,
) -> Option<(String, String)> {
    let newline = if content.is_empty() || content.ends_with(b"\n") {
        ""
    } else {
        "\n"
    };
    let hash = if options.hashes { header.hash } else { "" };
    match style {
        PayloadStyle::Markdown => {
            let mut details = Vec::new();
            if header.kind == UnitKind::File {
                details.push(lines_phrase(range, count));
            }
            if !hash.is_empty() {
                details.push(hash.to_owned());
            }
            let details = if details.is_empty() {
                String::new()
            } else {
                format!(" ({})", details.join(", "))
            };
            let fence = "`".repeat(ctx_core::markdown::longest_backtick_run(content).max(2) + 1);
            Some((
                format!("## {}{details}\n{fence}{}\n", title(header), header.lang),
                format!("{newline}{fence}\n\n"),
            ))
        }
        PayloadStyle::Xml => {
            let (element, name_attr) = match header.kind {
                UnitKind::File => ("file", "path"),
                UnitKind::Diff => ("diff", "path"),
                UnitKind::Log => ("git_log", "of"),
                UnitKind::Command => ("command_output", "command"),
                UnitKind::Text => ("text", ""),
            };
            let mut attrs = String::new();
            let value = match header.kind {
                UnitKind::Command => header.label.strip_prefix("$ ").unwrap_or(header.label),
                UnitKind::Log => header.label.strip_prefix("git log of ").unwrap_or(""),
                _ => header.label,
            };
            if !name_attr.is_empty() && !value.is_empty() {
                let _ = write!(attrs, " {name_attr}=\"{}\"", xml_attr(value));
            }
            if header.kind == UnitKind::File
                && let Some((s, e)) = lines_pair(range, count)
            {
                let _ = write!(attrs, " lines=\"{s}-{e}\"");
            }
            if !header.lang.is_empty() && header.kind == UnitKind::File {
                let _ = write!(attrs, " language=\"{}\"", header.lang);
            }
            if !hash.is_empty() {
                let _ = write!(attrs, " hash=\"{hash}\"");
            }
            Some((
                format!("<{element}{attrs}>\n"),
                format!("{newline}</{element}>\n"),
            ))
        }
        PayloadStyle::Plain => {
            let mut details = Vec::new();
            if header.kind == UnitKind::File {
                details.push(lines_phrase(range, count));
                if !header.lang.is_empty() {
                    details.push(header.lang.to_owned());
                }
            }
            if !hash.is_empty() {
                details.push(hash.to_owned());
            }
            let details = if details.is_empty() {
                String::new()
            } else {
                format!(" ({})", details.join(", "))
            };
            Some((
                format!("=== {}{details} ===\n", title(header)),
                format!("{newline}\n"),
            ))
        }
        PayloadStyle::Json => None,
    }
}

/// A block of the JSON style: `,` and one element holding the content escaped.
fn json_block(
    out: &mut String,
    options: PayloadOptions,
    header: &BlockHeader<'_>,
    content: &str,
    range: Option<(u64, u64)>,
    count: u64,
) {
    #[derive(Serialize)]
    struct Element<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        path: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        command: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        lines: Option<[u64; 2]>,
        #[serde(skip_serializing_if = "str::is_empty")]
        language: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        hash: &'a str,
        content: &'a str,
    }
    let hash = if options.hashes { header.hash } else { "" };
    let (kind, path, command) = match header.kind {
        UnitKind::File => ("file", Some(header.label), None),
        UnitKind::Diff => ("diff", Some(header.label), None),
        UnitKind::Log => ("git_log", None, None),
        UnitKind::Command => (
            "command_output",
            None,
            Some(header.label.strip_prefix("$ ").unwrap_or(header.label)),
        ),
        UnitKind::Text => ("text", None, None),
    };
    let file = header.kind == UnitKind::File;
    let element = Element {
        kind,
        path,
        command,
        lines: if file {
            lines_pair(range, count).map(|(s, e)| [s, e])
        } else {
            None
        },
        language: if file { header.lang } else { "" },
        hash,
        content,
    };
    out.push(',');
    serde_json::to_writer(StringWriter(out), &element).expect("strings serialize");
    out.push('\n');
}

/// What the head and the tail of a payload say: the included paths, counts, what was left
/// out and redacted.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    pub options: PayloadOptions,
    /// Included parts in payload order: kind and label.
    pub included: Vec<(UnitKind, String)>,
    /// Tokens of the included blocks.
    pub block_tokens: u64,
    pub tokenizer: String,
    pub budget: u64,
    /// Parts left out: label, reason code, detail.
    pub excluded: Vec<(String, String, String)>,
    /// Redactions: rule → (count, paths).
    pub redactions: BTreeMap<String, (u64, BTreeSet<String>)>,
    /// The budget was spent down the one-shot ladder: the summary also says what was
    /// outlined and what took the most tokens.
    pub ladder: bool,
    /// Files included as outlines: label and whole tokens.
    pub outlined: Vec<(String, u64)>,
    /// Included parts' tokens as written, with their labels.
    pub largest: Vec<(u64, String)>,
}

/// The largest parts a ladder's summary names.
const LARGEST_LISTED: usize = 5;

/// At most this many left-out parts are named in the summary (the report names all).
const SUMMARY_LISTED: usize = 30;

impl Frame {
    fn has(&self, kind: UnitKind) -> bool {
        self.included.iter().any(|(k, _)| *k == kind)
    }

    /// The included files and diffs as an indented tree (directories end with `/`), byte order.
    pub fn tree(&self) -> String {
        let paths: BTreeSet<String> = self
            .included
            .iter()
            .filter_map(|(kind, label)| match kind {
                UnitKind::File => Some(label.clone()),
                UnitKind::Diff => Some(format!("{label} (diff)")),
                _ => None,
            })
            .collect();
        let mut out = String::new();
        let mut open: Vec<&str> = Vec::new();
        for path in &paths {
            let parts: Vec<&str> = path.split('/').collect();
            let (dirs, name) = parts.split_at(parts.len() - 1);
            let common = open.iter().zip(dirs).take_while(|(a, b)| a == b).count();
            open.truncate(common);
            for dir in &dirs[common..] {
                let _ = writeln!(out, "{}{dir}/", "  ".repeat(open.len()));
                open.push(dir);
            }
            let _ = writeln!(out, "{}{}", "  ".repeat(open.len()), name[0]);
        }
        out
    }

    fn intro(&self, style: PayloadStyle) -> String {
        let header = match style {
            PayloadStyle::Markdown => {
                "a `## path (N lines)` header, then its content in a fenced code block"
            }
            PayloadStyle::Xml => {
                "a `file` element around its content, with `path`, `lines` and `language` attributes"
            }
            PayloadStyle::Plain => "a `=== path (N lines) ===` line before its content",
            PayloadStyle::Json => "an element of type `file` with its path, lines and content",
        };
        let mut text = format!("Files packed by ctx. Each file has {header}.");
        if self.options.line_numbers {
            text.push_str(" Lines are numbered (`12: …`).");
        }
        if self.options.hashes {
            text.push_str(" Headers carry the content's sha256.");
        }
        let others: Vec<&str> = [
            (UnitKind::Diff, "git diffs"),
            (UnitKind::Log, "the git log"),
            (UnitKind::Command, "command output"),
            (UnitKind::Text, "text"),
        ]
        .into_iter()
        .filter(|(kind, _)| self.has(*kind))
        .map(|(_, name)| name)
        .collect();
        if !others.is_empty() {
            let _ = write!(
                text,
                " Other parts ({}) are marked as such.",
                others.join(", ")
            );
        }
        text.push_str(" The summary at the end says what was left out and why.");
        text
    }

    /// Everything before the first block: what this is, how parts are delimited, the tree.
    pub fn head(&self, style: PayloadStyle) -> String {
        let intro = self.intro(style);
        let tree = self.tree();
        let mut out = String::new();
        match style {
            PayloadStyle::Markdown => {
                let _ = write!(out, "# Packed files\n\n{intro}\n\n");
                if !tree.is_empty() {
                    let fence = ctx_core::markdown::fence_for(&tree);
                    let _ = write!(out, "# Tree\n\n{fence}\n{tree}{fence}\n\n");
                }
                out.push_str("# Files\n\n");
            }
            PayloadStyle::Xml => {
                let _ = write!(out, "<about>\n{}\n</about>\n", xml_text(&intro));
                if !tree.is_empty() {
                    let _ = write!(out, "<tree>\n{}</tree>\n", xml_text(&tree));
                }
            }
            PayloadStyle::Plain => {
                let _ = write!(out, "{intro}\n\n");
                if !tree.is_empty() {
                    let _ = write!(out, "=== tree ===\n{tree}\n");
                }
            }
            PayloadStyle::Json => {
                out.push_str("[\n");
                let _ = writeln!(out, "{}", tagged("about", &intro));
                if !tree.is_empty() {
                    let _ = writeln!(out, ",{}", tagged("tree", &tree));
                }
            }
        }
        out
    }

    /// Where a one-shot pack's tokens went: the largest parts, and the files outlined.
    fn ladder_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut largest: Vec<&(u64, String)> = self.largest.iter().collect();
        largest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        // Where the tokens went matters when the budget decided something.
        let constrained = !self.outlined.is_empty()
            || self
                .excluded
                .iter()
                .any(|(_, reason, _)| reason == "over_budget");
        if constrained && !largest.is_empty() {
            let named: Vec<String> = largest
                .iter()
                .take(LARGEST_LISTED)
                .map(|(tokens, label)| format!("{label} ({tokens})"))
                .collect();
            lines.push(format!("Largest (tokens): {}.", named.join(", ")));
        }
        if !self.outlined.is_empty() {
            lines.push(format!(
                "Outlined (the first line of each definition, numbered; read the file for the rest): {}.",
                self.outlined.len()
            ));
            for (label, whole) in self.outlined.iter().take(SUMMARY_LISTED) {
                lines.push(format!("- {label} ({whole} tokens whole)"));
            }
            if self.outlined.len() > SUMMARY_LISTED {
                lines.push(format!(
                    "- … and {} more (`--json` lists them all)",
                    self.outlined.len() - SUMMARY_LISTED
                ));
            }
        }
        lines
    }

    fn summary_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut parts: Vec<String> = Vec::new();
        for (kind, one, many) in [
            (UnitKind::File, "file", "files"),
            (UnitKind::Diff, "diff", "diffs"),
            (UnitKind::Log, "git log", "git logs"),
            (UnitKind::Command, "command output", "command outputs"),
            (UnitKind::Text, "text", "texts"),
        ] {
            let n = self.included.iter().filter(|(k, _)| *k == kind).count();
            if n > 0 {
                parts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        }
        if parts.is_empty() {
            parts.push("nothing".to_owned());
        }
        lines.push(format!(
            "Included: {} ({} tokens, {}, budget {}).",
            parts.join(", "),
            self.block_tokens,
            self.tokenizer,
            self.budget
        ));
        if self.ladder {
            lines.extend(self.ladder_lines());
        }
        if self.excluded.is_empty() {
            lines.push("Left out: nothing.".to_owned());
        } else {
            let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, reason, _) in &self.excluded {
                *reasons.entry(reason.as_str()).or_default() += 1;
            }
            let reasons: Vec<String> = reasons
                .into_iter()
                .map(|(reason, n)| format!("{n} {reason}"))
                .collect();
            lines.push(format!(
                "Left out: {} ({}).",
                self.excluded.len(),
                reasons.join(", ")
            ));
            for (label, reason, detail) in self.excluded.iter().take(SUMMARY_LISTED) {
                lines.push(format!("- {label}: {reason} ({detail})"));
            }
            if self.excluded.len() > SUMMARY_LISTED {
                lines.push(format!(
                    "- … and {} more (`--json` gives the render report, which lists them all)",
                    self.excluded.len() - SUMMARY_LISTED
                ));
            }
        }
        if !self.redactions.is_empty() {
            let rules: Vec<String> = self
                .redactions
                .iter()
                .map(|(rule, (count, paths))| {
                    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
                    format!("{rule} x{count} in {}", paths.join(", "))
                })
                .collect();
            lines.push(format!("Redacted: {}.", rules.join("; ")));
        }
        lines
    }

    /// Everything after the last block: the summary.
    pub fn tail(&self, style: PayloadStyle) -> String {
        let lines = self.summary_lines();
        match style {
            PayloadStyle::Markdown => format!("# Summary\n\n{}\n", lines.join("\n")),
            PayloadStyle::Xml => {
                format!("<summary>\n{}\n</summary>\n", xml_text(&lines.join("\n")))
            }
            PayloadStyle::Plain => format!("=== summary ===\n{}\n", lines.join("\n")),
            PayloadStyle::Json => format!(",{}\n]\n", tagged("summary", &lines.join("\n"))),
        }
    }
}

/// `{"type":"KIND","text":"…"}`.
fn tagged(kind: &str, text: &str) -> String {
    format!(
        "{{\"type\":\"{kind}\",\"text\":{}}}",
        serde_json::to_string(text).expect("strings serialize")
    )
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

fn xml_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

fn xml_attr(text: &str) -> String {
    xml_text(text).replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctx_core::TokenizerKind;

    fn header(kind: UnitKind, label: &str) -> BlockHeader<'_> {
        BlockHeader {
            kind,
            label,
            lines: (label == "c d.md").then_some((3, 9)),
            hash: "sha256:00ff",
            lang: "rust",
        }
    }

    #[test]
    fn a_verbatim_frame_around_its_content_is_the_block() {
        let styles = [
            PayloadStyle::Markdown,
            PayloadStyle::Xml,
            PayloadStyle::Plain,
            PayloadStyle::Json,
        ];
        let kinds = [
            UnitKind::File,
            UnitKind::Diff,
            UnitKind::Command,
            UnitKind::Text,
        ];
        for style in styles {
            for kind in kinds {
                for label in ["src/a.rs", "c d.md", "$ ls"] {
                    for (hashes, line_numbers) in [(false, false), (true, false), (false, true)] {
                        for content in ["", "x", "x\n", "```\nfenced\n```\n", "a\n<b>&\n"] {
                            let options = PayloadOptions {
                                hashes,
                                line_numbers,
                            };
                            let header = header(kind, label);
                            let whole = block(style, options, &header, content);
                            match verbatim_frame(style, options, &header, content.as_bytes()) {
                                Some((head, tail)) => {
                                    assert_eq!(format!("{head}{content}{tail}"), whole);
                                }
                                None => assert!(
                                    style == PayloadStyle::Json
                                        || (line_numbers && kind == UnitKind::File)
                                ),
                            }
                        }
                    }
                }
            }
        }
    }

    fn frame(options: PayloadOptions) -> Frame {
        Frame {
            options,
            included: vec![
                (UnitKind::File, "src/a.rs".into()),
                (UnitKind::Diff, "src/b.rs".into()),
                (UnitKind::Command, "$ ls".into()),
            ],
            block_tokens: 12,
            tokenizer: "o200k_base".into(),
            budget: 100,
            excluded: vec![(
                "big.rs".into(),
                "over_budget".into(),
                "needs 9 tokens".into(),
            )],
            redactions: BTreeMap::from([(
                "AWS_ACCESS_KEY_ID".to_owned(),
                (2, BTreeSet::from(["src/a.rs".to_owned()])),
            )]),
            ..Frame::default()
        }
    }

    #[test]
    fn piece_counts_add_up_to_the_payload_count() {
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
        let kinds = [
            UnitKind::File,
            UnitKind::Diff,
            UnitKind::Log,
            UnitKind::Command,
            UnitKind::Text,
        ];
        for tokenizer in [TokenizerKind::O200kBase, TokenizerKind::Cl100kBase] {
            for style in PayloadStyle::ALL {
                for options in [
                    PayloadOptions::default(),
                    PayloadOptions {
                        hashes: true,
                        line_numbers: true,
                    },
                ] {
                    let frame = frame(options);
                    let (head, tail) = (frame.head(style), frame.tail(style));
                    for (i, a) in contents.iter().enumerate() {
                        for (j, b) in contents[i..].iter().enumerate() {
                            let kind = kinds[(i + j) % kinds.len()];
                            let pieces = [
                                head.clone(),
                                block(style, options, &header(UnitKind::File, "src/a.rs"), a),
                                block(style, options, &header(kind, "/abs/b.rs"), b),
                                block(style, options, &header(UnitKind::File, "c d.md"), a),
                                tail.clone(),
                            ];
                            let payload = pieces.concat();
                            let sum: usize = pieces.iter().map(|p| tokenizer.count(p)).sum();
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
    }

    #[test]
    fn json_payload_is_valid_json() {
        let options = PayloadOptions::default();
        let frame = frame(options);
        let payload = [
            frame.head(PayloadStyle::Json),
            block(
                PayloadStyle::Json,
                options,
                &header(UnitKind::File, "a"),
                "x\"y",
            ),
            block(
                PayloadStyle::Json,
                options,
                &header(UnitKind::Command, "$ ls"),
                "",
            ),
            frame.tail(PayloadStyle::Json),
        ]
        .concat();
        let value: serde_json::Value = serde_json::from_str(&payload).expect("valid JSON");
        assert_eq!(value[0]["type"], "about");
        assert_eq!(value[1]["type"], "tree");
        assert_eq!(value[2]["content"], "x\"y");
        assert_eq!(value[2]["lines"], serde_json::json!([1, 1]));
        assert_eq!(value[3]["command"], "ls");
        assert_eq!(value[4]["type"], "summary");
    }

    #[test]
    fn headers_name_path_lines_and_language_and_hashes_only_on_request() {
        let plain = block(
            PayloadStyle::Markdown,
            PayloadOptions::default(),
            &header(UnitKind::File, "src/a.rs"),
            "fn a() {}\nfn b() {}\n",
        );
        assert_eq!(
            plain,
            "## src/a.rs (2 lines)\n```rust\nfn a() {}\nfn b() {}\n```\n\n"
        );
        let hashed = block(
            PayloadStyle::Markdown,
            PayloadOptions {
                hashes: true,
                line_numbers: true,
            },
            &header(UnitKind::File, "c d.md"),
            "x\ny\n",
        );
        assert_eq!(
            hashed,
            "## c d.md (lines 3-4, sha256:00ff)\n```rust\n3: x\n4: y\n```\n\n"
        );
        let xml = block(
            PayloadStyle::Xml,
            PayloadOptions::default(),
            &header(UnitKind::File, "a&b.rs"),
            "x",
        );
        assert_eq!(
            xml,
            "<file path=\"a&amp;b.rs\" lines=\"1-1\" language=\"rust\">\nx\n</file>\n"
        );
        let command = block(
            PayloadStyle::Plain,
            PayloadOptions::default(),
            &header(UnitKind::Command, "$ ls"),
            "a\n",
        );
        assert_eq!(command, "=== command output: $ ls ===\na\n\n");
    }

    #[test]
    fn the_tree_nests_directories_in_byte_order() {
        let frame = Frame {
            included: ["b/x.rs", "a.txt", "a/z/q.rs", "a/y.rs", "c"]
                .iter()
                .map(|p| (UnitKind::File, (*p).to_owned()))
                .collect(),
            ..Frame::default()
        };
        assert_eq!(
            frame.tree(),
            "a.txt\na/\n  y.rs\n  z/\n    q.rs\nb/\n  x.rs\nc\n"
        );
    }

    #[test]
    fn the_summary_names_what_was_left_out_and_redacted() {
        let tail = frame(PayloadOptions::default()).tail(PayloadStyle::Markdown);
        assert!(
            tail.contains("Included: 1 file, 1 diff, 1 command output (12 tokens"),
            "{tail}"
        );
        assert!(
            tail.contains("- big.rs: over_budget (needs 9 tokens)"),
            "{tail}"
        );
        assert!(tail.contains("AWS_ACCESS_KEY_ID x2 in src/a.rs"), "{tail}");
    }

    #[test]
    fn line_numbers_are_right_aligned() {
        assert_eq!(number_lines("a\nb", 9), " 9: a\n10: b");
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
    }

    #[test]
    fn markdown_fences_outgrow_backticks_in_content() {
        let b = block(
            PayloadStyle::Markdown,
            PayloadOptions::default(),
            &header(UnitKind::File, "a.md"),
            "````\ncode\n````\n",
        );
        assert!(b.contains("\n`````rust\n"), "{b}");
    }
}
