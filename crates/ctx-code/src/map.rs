//! `map`: an annotated tree of a project (files, lines, language, top-level symbols), trimmed
//! to a token budget when one is given.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

use crate::summary::FileSummary;

/// Top-level symbols as shown (`fn main`, `struct Args`), held as one string with the
/// symbols NUL-separated (source text holds no NUL: such files are binary): a map of a large tree lists about a million of them (the cargo registry's sources:
/// 1.2 million), and one allocation per file instead of one per symbol is most of the map's
/// memory. Serializes as an array of strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolList {
    text: String,
    len: usize,
}

impl SymbolList {
    /// Adds a symbol (a NUL in it, which source text never holds, would be shown as a
    /// space).
    pub fn push(&mut self, symbol: &str) {
        if self.len > 0 {
            self.text.push(SEPARATOR);
        }
        if symbol.contains(SEPARATOR) {
            self.text.push_str(&symbol.replace(SEPARATOR, " "));
        } else {
            self.text.push_str(symbol);
        }
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The symbols in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.text.split(SEPARATOR).take(self.len)
    }

    /// Keeps the first `n` symbols.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        let end = if n == 0 {
            0
        } else {
            self.text
                .match_indices(SEPARATOR)
                .nth(n - 1)
                .map_or(self.text.len(), |(at, _)| at)
        };
        self.text.truncate(end);
        self.text.shrink_to_fit();
        self.len = n;
    }

    /// The symbols joined by `separator`.
    pub fn join(&self, separator: &str) -> String {
        self.text.replace(SEPARATOR, separator)
    }
}

/// Between two symbols of a [`SymbolList`].
const SEPARATOR: char = '\0';

impl<S: AsRef<str>> FromIterator<S> for SymbolList {
    fn from_iter<I: IntoIterator<Item = S>>(symbols: I) -> Self {
        let mut list = Self::default();
        for symbol in symbols {
            list.push(symbol.as_ref());
        }
        list.text.shrink_to_fit();
        list
    }
}

impl Serialize for SymbolList {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len))?;
        for symbol in self.iter() {
            seq.serialize_element(symbol)?;
        }
        seq.end()
    }
}

/// One line of the map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MapEntry {
    /// Path relative to the map root, `/`-separated (directories without a trailing `/`).
    pub path: String,
    /// `dir` or `file`.
    pub kind: &'static str,
    /// 1 for the root's children.
    pub depth: usize,
    /// Files below a directory (all depths), for directories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<usize>,
    /// Lines of a file, or of every file below a directory.
    pub lines: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Top-level symbols of a source file: `fn main`, `struct Args`.
    #[serde(skip_serializing_if = "SymbolList::is_empty")]
    pub symbols: SymbolList,
    /// Top-level symbols left out to fit the budget.
    #[serde(skip_serializing_if = "is_zero")]
    pub more_symbols: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The map of a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeMap {
    pub root: String,
    pub total_files: usize,
    pub total_lines: usize,
    /// The token budget asked for (tokens estimated as ceil(bytes / 4) of the text form).
    pub budget: Option<usize>,
    /// Whether entries or symbols were left out (for `--depth` or the budget).
    pub truncated: bool,
    pub entries: Vec<MapEntry>,
    /// Files left out of the map because they could not be read (a hard link the sandbox
    /// refuses, no permission), with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<crate::search::SkippedFile>,
}

/// A file for the map: what the map shows of its summary if it is source, else its line count.
#[derive(Debug, Clone)]
pub struct MapFile {
    pub rel: String,
    pub lines: usize,
    pub summary: Option<MapSummary>,
}

/// The part of a file's summary a map shows: language, lines and top-level symbols. A map of a
/// large tree keeps one per file, so it holds no signatures, docs or nested symbols.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSummary {
    pub language: crate::lang::Language,
    pub lines: usize,
    /// Top-level symbols as shown: `fn main`, `struct Args`.
    pub top: SymbolList,
}

impl MapSummary {
    /// What the map shows of `summary`.
    pub fn of(summary: &FileSummary) -> Self {
        Self {
            language: summary.language,
            lines: summary.lines,
            top: {
                let mut top = SymbolList::default();
                let mut shown = String::new();
                for symbol in summary.symbols.iter().filter(|s| s.parent.is_none()) {
                    shown.clear();
                    shown.push_str(symbol.kind.tag());
                    shown.push(' ');
                    shown.push_str(&symbol.name);
                    top.push(&shown);
                }
                top.text.shrink_to_fit();
                top
            },
        }
    }
}

/// Builds the map of `files` (sorted by path). `depth` limits how deep entries are listed
/// (deeper files count in their directory); `budget` trims symbols, then depth, then entries.
pub fn build_map(
    root: &str,
    files: Vec<MapFile>,
    depth: Option<usize>,
    budget: Option<usize>,
) -> CodeMap {
    let full_depth = files
        .iter()
        .map(|f| f.rel.split('/').count())
        .max()
        .unwrap_or(1);
    let mut max_depth = depth.unwrap_or(full_depth).max(1);
    let mut symbol_cap = usize::MAX;
    let caps = [usize::MAX, 8, 4, 2, 1, 0];
    let mut cap_index = 0;
    loop {
        let Some(budget) = budget else {
            // One assembly: the files move into the map, so it is not held twice.
            let mut map = assemble(root, files, max_depth, symbol_cap);
            map.truncated |= max_depth < full_depth;
            return map;
        };
        let mut map = assemble(root, files.clone(), max_depth, symbol_cap);
        map.truncated |= max_depth < full_depth;
        map.budget = Some(budget);
        if estimate_tokens(&render(&map)) <= budget {
            return map;
        }
        if cap_index + 1 < caps.len() {
            cap_index += 1;
            symbol_cap = caps[cap_index];
            continue;
        }
        if max_depth > 1 {
            max_depth -= 1;
            continue;
        }
        // Still too big at depth 1 without symbols: keep the entries that fit.
        map.truncated = true;
        while map.entries.len() > 1 && estimate_tokens(&render(&map)) > budget {
            map.entries.pop();
        }
        return map;
    }
}

/// Tokens as ceil(bytes / 4), the `approx` tokenizer.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

fn assemble(root: &str, files: Vec<MapFile>, max_depth: usize, symbol_cap: usize) -> CodeMap {
    let total_files = files.len();
    let total_lines = files.iter().map(|f| f.lines).sum();
    // Directory totals over every file below them.
    let mut dirs: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for file in &files {
        let mut dir = file.rel.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            let slot = dirs.entry(parent.to_owned()).or_default();
            slot.0 += 1;
            slot.1 += file.lines;
            dir = parent;
        }
    }
    let mut entries: Vec<MapEntry> = Vec::new();
    for (dir, (count, lines)) in &dirs {
        let depth = dir.split('/').count();
        if depth <= max_depth {
            entries.push(MapEntry {
                path: dir.clone(),
                kind: "dir",
                depth,
                files: Some(*count),
                lines: *lines,
                language: None,
                symbols: SymbolList::default(),
                more_symbols: 0,
            });
        }
    }
    let mut truncated = false;
    for file in files {
        let depth = file.rel.split('/').count();
        if depth > max_depth {
            continue;
        }
        let language = file.summary.as_ref().map(|s| s.language.name().to_owned());
        let mut top = file.summary.map(|s| s.top).unwrap_or_default();
        let shown = top.len().min(symbol_cap);
        truncated |= shown < top.len();
        let more_symbols = top.len() - shown;
        top.truncate(shown);
        entries.push(MapEntry {
            path: file.rel,
            kind: "file",
            depth,
            files: None,
            lines: file.lines,
            language,
            symbols: top,
            more_symbols,
        });
    }
    // Tree order: a directory right before its contents.
    entries.sort_by(|a, b| tree_key(&a.path).cmp(tree_key(&b.path)));
    CodeMap {
        root: root.to_owned(),
        total_files,
        total_lines,
        budget: None,
        truncated,
        entries,
        skipped: Vec::new(),
    }
}

/// Sorts `a/b` after `a` and before `a-b` by comparing path segments (without allocating).
fn tree_key(path: &str) -> impl Iterator<Item = &[u8]> {
    path.split('/').map(str::as_bytes)
}

impl CodeMap {
    /// The text form of the map, as `ctx map` prints it ([`render`]).
    pub fn text(&self) -> String {
        render(self)
    }
}

/// The text form of a map (what the budget is measured on).
pub fn render(map: &CodeMap) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({} files, {} lines)",
        map.root, map.total_files, map.total_lines
    );
    for entry in &map.entries {
        let indent = "  ".repeat(entry.depth);
        let name = entry.path.rsplit('/').next().unwrap_or(&entry.path);
        if entry.kind == "dir" {
            let _ = writeln!(
                out,
                "{indent}{name}/ ({} files, {} lines)",
                entry.files.unwrap_or(0),
                entry.lines
            );
            continue;
        }
        let mut line = format!("{indent}{name}");
        match &entry.language {
            Some(lang) => {
                let _ = write!(line, " ({lang}, {} lines)", entry.lines);
            }
            None => {
                let _ = write!(line, " ({} lines)", entry.lines);
            }
        }
        if !entry.symbols.is_empty() {
            line.push_str(": ");
            line.push_str(&entry.symbols.join(", "));
        }
        if entry.more_symbols > 0 {
            let _ = write!(line, " (+{} more)", entry.more_symbols);
        }
        out.push_str(&line);
        out.push('\n');
    }
    if map.truncated {
        out.push_str("(trimmed: use a larger --budget or --depth to see more)\n");
    }
    if !map.skipped.is_empty() {
        let listed: Vec<String> = map
            .skipped
            .iter()
            .map(|s| format!("{} ({})", s.path, s.reason))
            .collect();
        let _ = writeln!(out, "(not mapped, unreadable: {})", listed.join("; "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::Language;

    #[test]
    fn symbol_lists_hold_serialize_and_truncate_like_a_vec() {
        let symbols = ["fn main", "struct Args", "", "enum E"];
        let mut list: SymbolList = symbols.iter().collect();
        assert_eq!(list.len(), 4);
        assert_eq!(list.iter().collect::<Vec<_>>(), symbols);
        assert_eq!(
            serde_json::to_string(&list).expect("json"),
            serde_json::to_string(&symbols).expect("json")
        );
        assert_eq!(list.join(", "), "fn main, struct Args, , enum E");
        list.truncate(2);
        assert_eq!(list.iter().collect::<Vec<_>>(), ["fn main", "struct Args"]);
        list.truncate(5);
        assert_eq!(list.len(), 2);
        list.truncate(0);
        assert!(list.is_empty());
        assert_eq!(list.iter().count(), 0);
        assert_eq!(serde_json::to_string(&list).expect("json"), "[]");
        // A symbol may span lines (`impl (\n A,\n B,\n)`); a NUL cannot split one in two.
        let odd: SymbolList = ["impl (\n    A,\n)", "fn a\0b"].iter().collect();
        assert_eq!(
            odd.iter().collect::<Vec<_>>(),
            ["impl (\n    A,\n)", "fn a b"]
        );
    }

    fn file(rel: &str, lines: usize, symbols: &[&str]) -> MapFile {
        MapFile {
            rel: rel.to_owned(),
            lines,
            summary: Some(MapSummary::of(&FileSummary {
                path: rel.to_owned(),
                language: Language::Rust,
                lines,
                symbols: symbols
                    .iter()
                    .enumerate()
                    .map(|(i, n)| crate::symbols::Symbol {
                        name: (*n).to_owned(),
                        kind: crate::symbols::SymbolKind::Function,
                        line: i + 1,
                        end_line: i + 1,
                        signature: format!("fn {n}()"),
                        doc_comment: None,
                        parent: None,
                        visibility: None,
                    })
                    .collect(),
                imports: Vec::new(),
                has_errors: false,
                skeleton: None,
            })),
        }
    }

    #[test]
    fn tree_order_depth_and_budget() {
        let files = vec![
            file("a-b.rs", 3, &["x"]),
            file("a/deep/z.rs", 10, &["z"]),
            file("a/m.rs", 5, &["one", "two", "three"]),
        ];
        let map = build_map(".", files.clone(), None, None);
        let paths: Vec<&str> = map.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["a", "a/deep", "a/deep/z.rs", "a/m.rs", "a-b.rs"]);
        assert_eq!(map.entries[0].files, Some(2));
        assert_eq!(map.entries[0].lines, 15);
        assert!(!map.truncated);
        let shallow = build_map(".", files.clone(), Some(1), None);
        assert_eq!(shallow.entries.len(), 2);
        assert!(shallow.truncated);
        let full = estimate_tokens(&render(&map));
        let tight = build_map(".", files.clone(), None, Some(full - 3));
        assert!(tight.truncated);
        assert!(estimate_tokens(&render(&tight)) <= full - 3);
    }
}
