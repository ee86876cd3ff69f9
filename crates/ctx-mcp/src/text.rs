//! The text a model reads: each tool's answer (a page of it) in a compact human form, while
//! `structuredContent` keeps the typed JSON for programs.
//!
//! Search results are `line: text` lines under their file's path, selections and renders are
//! the Markdown payload itself, summaries are signature lines, maps are one line per entry;
//! every other answer is a compact `key: value` outline of its JSON. Paths are always the
//! workspace-root-relative paths of the structured answer, so the model can pass them on.

use std::fmt::Write as _;

use serde_json::{Map, Value};

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn items<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A scalar as text (strings bare), anything else as compact JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Keys every paged answer has; the page's text says how to continue instead.
const PAGING_KEYS: [&str; 2] = ["next_cursor", "page"];

/// Items of a list of plain values an outline shows.
const OUTLINE_LIST: usize = 12;

/// Any answer as an outline: `key: value` lines, lists as `- ` items (objects on one line as
/// `k: v; k: v`), nested objects indented; a list of more than [`OUTLINE_LIST`] plain values
/// shows its start and its length.
pub fn outline(value: &Value) -> String {
    let mut out = String::new();
    if let Value::Object(map) = value {
        outline_object(map, 0, &mut out);
    } else {
        out.push_str(&scalar(value));
        out.push('\n');
    }
    out
}

fn outline_object(map: &Map<String, Value>, indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent);
    for (key, value) in map {
        if indent == 0 && PAGING_KEYS.contains(&key.as_str()) {
            continue;
        }
        match value {
            Value::Null => {}
            Value::Array(list) if list.is_empty() => {
                let _ = writeln!(out, "{pad}{key}: none");
            }
            Value::Array(list) if list.iter().all(|v| !v.is_object() && !v.is_array()) => {
                let joined: Vec<String> = list.iter().take(OUTLINE_LIST).map(scalar).collect();
                let more = list.len().saturating_sub(OUTLINE_LIST);
                if more == 0 {
                    let _ = writeln!(out, "{pad}{key}: {}", joined.join(", "));
                } else {
                    // A long list of names (an index's redaction rules) is in the structured
                    // answer; the text gives its start and its length.
                    let _ = writeln!(
                        out,
                        "{pad}{key}: {}, … ({} in all; the rest in structuredContent)",
                        joined.join(", "),
                        list.len()
                    );
                }
            }
            Value::Array(list) => {
                let _ = writeln!(out, "{pad}{key}:");
                for item in list {
                    let _ = writeln!(out, "{pad}- {}", inline(item));
                }
            }
            Value::Object(inner) if inner.is_empty() => {}
            Value::Object(inner) => {
                let _ = writeln!(out, "{pad}{key}:");
                outline_object(inner, indent + 1, out);
            }
            Value::String(s) if s.contains('\n') => {
                let _ = writeln!(out, "{pad}{key}:\n{s}");
                if !s.ends_with('\n') {
                    out.push('\n');
                }
            }
            other => {
                let _ = writeln!(out, "{pad}{key}: {}", scalar(other));
            }
        }
    }
}

/// An item on one line: an object as `k: v; k: v` (nested values as compact JSON).
fn inline(value: &Value) -> String {
    match value {
        Value::Object(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
            .map(|(k, v)| format!("{k}: {}", scalar(v)))
            .collect::<Vec<_>>()
            .join("; "),
        other => scalar(other),
    }
}

/// `ctx_search`: a count line, then `line: text` under each file's path (context lines as
/// `line- text`, symbols with their kind, callers with the calling function).
pub fn search(answer: &Value) -> String {
    let mut out = String::new();
    let results = items(answer, "results");
    let total = number(answer, "total");
    let mode = text(answer, "mode");
    let _ = write!(
        out,
        "{total} {} for `{}` ({mode})",
        if total == 1 { "result" } else { "results" },
        text(answer, "query")
    );
    if answer["truncated"] == true {
        let _ = write!(
            out,
            ", first {} kept by max_results",
            number(&answer["page"], "total")
        );
    }
    out.push('\n');
    let mut current: Option<&str> = None;
    let mut last_line = 0;
    for hit in results {
        let path = text(hit, "path");
        if current != Some(path) {
            let _ = writeln!(out, "{path}");
            current = Some(path);
            last_line = 0;
        }
        let line = number(hit, "line");
        let context = items(hit, "context");
        if context.is_empty() {
            write_hit(&mut out, hit, line);
            last_line = line;
            continue;
        }
        let first = context.first().map_or(line, |c| number(c, "line"));
        if last_line > 0 && first > last_line + 1 {
            out.push_str("--\n");
        }
        let mut shown = false;
        for c in context {
            let at = number(c, "line");
            if at <= last_line {
                continue;
            }
            if at == line {
                write_hit(&mut out, hit, line);
                shown = true;
            } else {
                let _ = writeln!(out, "{at}- {}", text(c, "text"));
            }
            last_line = at;
        }
        if !shown && line > last_line {
            write_hit(&mut out, hit, line);
            last_line = line;
        }
    }
    let skipped = items(answer, "skipped");
    if !skipped.is_empty() {
        let listed: Vec<&str> = skipped.iter().filter_map(Value::as_str).collect();
        let _ = writeln!(out, "not searched (unreadable): {}", listed.join("; "));
    }
    out
}

fn write_hit(out: &mut String, hit: &Value, line: u64) {
    let _ = write!(out, "{line}: {}", text(hit, "text"));
    if let Some(scope) = hit.get("scope").and_then(Value::as_str) {
        let _ = write!(out, "  (in {scope})");
    }
    out.push('\n');
}

/// `ctx_summarize`: per file a `path (language, N lines)` line, its imports on one line,
/// then one line per symbol: `start-end signature`, methods indented under their type, and
/// the first line of the doc comment after `//`.
pub fn summarize(answer: &Value) -> String {
    let mut out = String::new();
    for file in items(answer, "files") {
        let _ = write!(
            out,
            "{} ({}, {} lines",
            text(file, "path"),
            text(file, "language"),
            number(file, "lines")
        );
        if file["has_errors"] == true {
            out.push_str(", syntax errors");
        }
        out.push_str(")\n");
        let imports: Vec<&str> = items(file, "imports")
            .iter()
            .filter_map(Value::as_str)
            .map(|i| i.trim_end_matches(';'))
            .collect();
        if !imports.is_empty() {
            let _ = writeln!(out, "imports: {}", imports.join("; "));
        }
        for symbol in items(file, "symbols") {
            let pad = if symbol.get("parent").is_some_and(|p| !p.is_null()) {
                "  "
            } else {
                ""
            };
            let _ = write!(
                out,
                "{pad}{}-{} {}",
                number(symbol, "line"),
                number(symbol, "end_line"),
                text(symbol, "signature")
            );
            if let Some(doc) = symbol.get("doc_comment").and_then(Value::as_str)
                && let Some(first) = doc.lines().map(str::trim).find(|l| !l.is_empty())
            {
                let _ = write!(out, "  // {first}");
            }
            out.push('\n');
        }
        if let Some(skeleton) = file.get("skeleton").and_then(Value::as_str) {
            let fence = ctx::core::markdown::fence_for(skeleton);
            let _ = writeln!(out, "{fence}");
            out.push_str(skeleton);
            if !skeleton.ends_with('\n') {
                out.push('\n');
            }
            let _ = writeln!(out, "{fence}");
        }
    }
    for skipped in items(answer, "skipped") {
        let _ = writeln!(
            out,
            "skipped {}: {}",
            text(skipped, "path"),
            text(skipped, "reason")
        );
    }
    if out.is_empty() {
        let _ = writeln!(out, "{}: no source files", text(answer, "path"));
    }
    out
}

/// `ctx_select`: the Markdown payload itself (or why nothing was selected).
pub fn select(answer: &Value) -> String {
    let payload = text(answer, "payload");
    if number(&answer["selection"], "documents_selected") == 0 {
        let selection = &answer["selection"];
        return format!(
            "No file matched `{}` ({} documents in the index); try other words, file names or identifiers.\n",
            text(selection, "query"),
            number(&answer["index"], "documents")
        );
    }
    payload.to_owned()
}

/// `ctx_packs_render` and `ctx_packs_preview` with a payload: the payload itself.
pub fn payload(answer: &Value) -> String {
    match answer.get("payload").and_then(Value::as_str) {
        Some(payload) if !payload.is_empty() => payload.to_owned(),
        _ => outline(answer),
    }
}

/// `ctx_map`: a totals line, then one line per entry: `path/ (N files, M lines)` or
/// `path (M lines): symbols`.
pub fn map(answer: &Value) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{}: {} files, {} lines",
        text(answer, "root"),
        number(answer, "total_files"),
        number(answer, "total_lines")
    );
    if answer["truncated"] == true {
        out.push_str(" (trimmed to fit depth or budget)");
    }
    out.push('\n');
    let skipped = items(answer, "skipped");
    if !skipped.is_empty() {
        let listed: Vec<&str> = skipped.iter().filter_map(Value::as_str).collect();
        let _ = writeln!(out, "not mapped (unreadable): {}", listed.join("; "));
    }
    for entry in items(answer, "entries") {
        let path = text(entry, "path");
        if text(entry, "kind") == "dir" {
            let _ = writeln!(
                out,
                "{path}/ ({} files, {} lines)",
                number(entry, "files"),
                number(entry, "lines")
            );
            continue;
        }
        let _ = write!(out, "{path} ({} lines)", number(entry, "lines"));
        let symbols: Vec<&str> = items(entry, "symbols")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if !symbols.is_empty() {
            let _ = write!(out, ": {}", symbols.join(", "));
        }
        let more = number(entry, "more_symbols");
        if more > 0 {
            let _ = write!(out, " (+{more})");
        }
        out.push('\n');
    }
    out
}

/// `fs_read`: each operation under a `mode path` line: a file's lines as they are, a
/// directory's entries one per line, search matches as `line: context`; failures as
/// `error: message`, and how to continue a cut result.
pub fn fs_read(answer: &Value) -> String {
    let mut out = String::new();
    for op in items(answer, "results") {
        let _ = writeln!(out, "== {} {}", text(op, "mode"), text(op, "path"));
        if let Some(error) = op.get("error") {
            let _ = writeln!(out, "error: {}", text(error, "message"));
            continue;
        }
        let result = &op["result"];
        if let Some(content) = result.get("content").and_then(Value::as_str) {
            if let (Some(start), Some(end)) = (
                result.get("start_line").and_then(Value::as_u64),
                result.get("end_line").and_then(Value::as_u64),
            ) {
                let _ = writeln!(
                    out,
                    "lines {start}-{end} of {}",
                    number(result, "total_lines")
                );
            }
            out.push_str(content);
            if !content.is_empty() && !content.ends_with('\n') {
                out.push('\n');
            }
        } else if let Some(entries) = result.get("entries").and_then(Value::as_array) {
            for entry in entries {
                let dir = if text(entry, "kind") == "dir" {
                    "/"
                } else {
                    ""
                };
                let _ = writeln!(out, "{}{dir}", text(entry, "path"));
            }
        } else if let Some(matches) = result.get("matches").and_then(Value::as_array) {
            for m in matches {
                let _ = writeln!(
                    out,
                    "{}:{}: {}",
                    text(m, "path"),
                    number(m, "line_number"),
                    text(m, "context").trim_end()
                );
            }
        } else {
            out.push_str(&outline(result));
        }
        if let Some(next) = result.get("next_start_line").and_then(Value::as_i64) {
            let _ = writeln!(out, "[cut: continue with start_line {next}]");
        } else if let Some(next) = result.get("next_offset").and_then(Value::as_u64) {
            let _ = writeln!(out, "[cut: continue with offset {next}]");
        } else if result["truncated"] == true {
            out.push_str("[cut short]\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn search_groups_lines_under_their_file() {
        let answer = json!({
            "query": "helper", "mode": "literal", "total": 3, "truncated": false,
            "results": [
                { "path": "src/a.rs", "line": 3, "column": 5, "text": "use helper;", "context": [] },
                { "path": "src/a.rs", "line": 9, "column": 1, "text": "helper();", "context": [] },
                { "path": "src/b.rs", "line": 1, "column": 1, "text": "fn helper() {}", "context": [] }
            ]
        });
        assert_eq!(
            search(&answer),
            "3 results for `helper` (literal)\nsrc/a.rs\n3: use helper;\n9: helper();\nsrc/b.rs\n1: fn helper() {}\n"
        );
    }

    #[test]
    fn search_context_lines_are_marked_and_runs_separated() {
        let answer = json!({
            "query": "x", "mode": "literal", "total": 2, "truncated": false,
            "results": [
                { "path": "a.rs", "line": 2, "column": 1, "text": "x", "context": [
                    { "line": 1, "text": "a" }, { "line": 2, "text": "x" }, { "line": 3, "text": "b" } ] },
                { "path": "a.rs", "line": 9, "column": 1, "text": "x", "context": [
                    { "line": 8, "text": "c" }, { "line": 9, "text": "x" } ] }
            ]
        });
        assert_eq!(
            search(&answer),
            "2 results for `x` (literal)\na.rs\n1- a\n2: x\n3- b\n--\n8- c\n9: x\n"
        );
    }

    #[test]
    fn maps_are_one_line_per_entry_with_root_relative_paths() {
        let answer = json!({ "root": "src", "total_files": 2, "total_lines": 30, "truncated": false,
            "entries": [
                { "path": "src/a", "kind": "dir", "depth": 1, "files": 1, "lines": 10 },
                { "path": "src/a/x.rs", "kind": "file", "depth": 2, "lines": 10, "symbols": ["fn x"] },
                { "path": "src/b.rs", "kind": "file", "depth": 1, "lines": 20, "symbols": ["fn b", "struct B"], "more_symbols": 3 }
            ] });
        assert_eq!(
            map(&answer),
            "src: 2 files, 30 lines\nsrc/a/ (1 files, 10 lines)\nsrc/a/x.rs (10 lines): fn x\nsrc/b.rs (20 lines): fn b, struct B (+3)\n"
        );
    }

    #[test]
    fn summaries_are_signature_lines() {
        let answer = json!({ "path": "src", "files": [{
            "path": "src/lib.rs", "language": "rust", "lines": 20, "has_errors": false,
            "imports": ["use std::fmt;"],
            "symbols": [
                { "name": "P", "kind": "struct", "line": 1, "end_line": 3, "signature": "pub struct P", "doc_comment": "A parser.\nMore." },
                { "name": "new", "kind": "method", "line": 5, "end_line": 7, "signature": "pub fn new() -> Self", "parent": "P" }
            ]
        }], "skipped": [] });
        assert_eq!(
            summarize(&answer),
            "src/lib.rs (rust, 20 lines)\nimports: use std::fmt\n1-3 pub struct P  // A parser.\n  5-7 pub fn new() -> Self\n"
        );
    }

    #[test]
    fn outlines_skip_paging_keys_and_empty_values() {
        let answer = json!({
            "name": "docs", "budget": 10, "note": null, "tags": [], "next_cursor": null,
            "page": { "start": 0 },
            "artifacts": [{ "id": "a1", "uri": "file:README.md", "excluded": [] }],
            "policy": { "tokenizer": "o200k_base" }
        });
        assert_eq!(
            outline(&answer),
            "artifacts:\n- id: a1; uri: file:README.md\nbudget: 10\nname: docs\npolicy:\n  tokenizer: o200k_base\ntags: none\n"
        );
    }
}
