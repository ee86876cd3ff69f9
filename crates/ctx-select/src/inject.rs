//! Context injection (seed 001's `inject`): a few structured lines about the project and the
//! prompt, the selected snippets, a separator, then the prompt itself.
//!
//! ```text
//! [CTX: project=ctx lang=rust branch=main]
//! [RECENT: src/main.rs modified 2h ago]
//! [RELEVANT: src/analysis/symbols.rs (filename mentioned)]
//! [KEYWORDS: parser, tree-sitter, symbols]
//! ```

use std::fmt::Write as _;

use serde::Serialize;

use crate::selection::{SelectionResult, SelectionWhy};

/// The line between the injected context and the prompt.
pub const SEPARATOR: &str = "---";

/// Facts about the project for the `[CTX: …]` and `[RECENT: …]` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProjectFacts {
    pub project: String,
    /// `rust`, `python`, … (from the project manifest).
    pub language: Option<String>,
    pub branch: Option<String>,
    /// Recently changed files, newest first: (path, "2h ago").
    pub recent: Vec<(String, String)>,
}

/// The `[CTX]`, `[RECENT]` and `[KEYWORDS]` lines (no `[RELEVANT]`: those come from the
/// selection).
pub fn header_lines(facts: &ProjectFacts, keywords: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut ctx = format!("[CTX: project={}", facts.project);
    if let Some(lang) = &facts.language {
        let _ = write!(ctx, " lang={lang}");
    }
    if let Some(branch) = &facts.branch {
        let _ = write!(ctx, " branch={branch}");
    }
    ctx.push(']');
    out.push(ctx);
    for (path, ago) in &facts.recent {
        out.push(format!("[RECENT: {path} modified {ago}]"));
    }
    if !keywords.is_empty() {
        out.push(format!("[KEYWORDS: {}]", keywords.join(", ")));
    }
    out
}

/// A short reason for a `[RELEVANT: …]` line, from the strongest signals.
pub fn relevance_reason(why: &SelectionWhy) -> String {
    let mut reasons: Vec<String> = Vec::new();
    let mut signals: Vec<_> = why.signals.iter().collect();
    signals.sort_by(|a, b| {
        b.contribution
            .total_cmp(&a.contribution)
            .then(a.name.cmp(&b.name))
    });
    for signal in signals.iter().take(3) {
        let text = match signal.name.as_str() {
            "path_mentioned" => "path mentioned".to_owned(),
            "filename_mentioned" => "filename mentioned".to_owned(),
            "definition" | "qualified_definition" => signal.detail.clone(),
            "module_path" => "module named".to_owned(),
            "message" => "holds the quoted message".to_owned(),
            "bm25_strings" => "string literals match".to_owned(),
            "bm25_comments" => "comments match".to_owned(),
            "git_activity" => "recently changed".to_owned(),
            "file_type" => "file type".to_owned(),
            "graph" => "imports/references".to_owned(),
            "bm25_symbols" => "defines matching symbols".to_owned(),
            "bm25_path" => "path matches".to_owned(),
            _ => {
                let mut terms: Vec<_> = why.term_matches.iter().collect();
                terms.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                let shown: Vec<String> = terms
                    .iter()
                    .take(3)
                    .map(|(t, n)| format!("{t}×{n}"))
                    .collect();
                if shown.is_empty() {
                    "text matches".to_owned()
                } else {
                    format!("mentions {}", shown.join(" "))
                }
            }
        };
        if !reasons.contains(&text) {
            reasons.push(text);
        }
    }
    reasons.retain(|r| !r.is_empty());
    if let Some(context) = why.signals.iter().find(|s| s.name == "context_file") {
        let role = context.detail.split(' ').next().unwrap_or("context");
        reasons.push(format!("{role} file, as context"));
    }
    reasons.join(", ")
}

/// `[RELEVANT: path (reason)]` per selected document (skeletons marked).
pub fn relevant_lines(result: &SelectionResult) -> Vec<String> {
    result
        .documents
        .iter()
        .map(|d| {
            let mut reason = relevance_reason(&d.why);
            if d.degraded {
                reason.push_str(", ");
                reason.push_str(d.view.name());
            }
            format!("[RELEVANT: {} ({reason})]", d.id)
        })
        .collect()
}

/// `[NOT SHOWN: a.py, b.py, and 3 more (over budget)]` when relevant files were left out
/// (at most five named).
pub fn left_out_line(result: &SelectionResult) -> Option<String> {
    let meta = &result.selection;
    if meta.left_out.is_empty() {
        return None;
    }
    let named: Vec<&str> = meta
        .left_out
        .iter()
        .take(5)
        .map(|l| l.id.as_str())
        .collect();
    let more = meta.over_budget.saturating_sub(named.len());
    let mut line = format!("[NOT SHOWN: {}", named.join(", "));
    if more > 0 {
        let _ = write!(line, ", and {more} more");
    }
    line.push_str(" (over budget)]");
    Some(line)
}

/// The selected documents as fenced snippets.
pub fn snippets(result: &SelectionResult) -> String {
    let mut out = String::new();
    for doc in &result.documents {
        let lang = doc.id.as_str().rsplit_once('.').map_or("", |(_, ext)| ext);
        let fence = fence_for(&doc.content);
        let label = doc.label();
        let _ = writeln!(out, "{}{label}:", doc.id);
        let _ = writeln!(out, "{fence}{lang}");
        out.push_str(&doc.content);
        if !doc.content.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{fence}");
    }
    out
}

pub use ctx_core::markdown::fence_for;

/// The context block: lines, then snippets.
pub fn context_block(lines: &[String], snippets: &str) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    if !snippets.is_empty() {
        out.push('\n');
        out.push_str(snippets);
    }
    out
}

/// The whole injection: context, separator, prompt; the prompt alone when there is no
/// context (nothing relevant was found).
pub fn inject(context: &str, prompt: &str) -> String {
    let mut out = String::with_capacity(context.len() + prompt.len() + 8);
    if context.is_empty() {
        out.push_str(prompt);
        if !prompt.ends_with('\n') {
            out.push('\n');
        }
        return out;
    }
    out.push_str(context);
    if !context.is_empty() && !context.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(SEPARATOR);
    out.push_str("\n\n");
    out.push_str(prompt);
    if !prompt.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_injection_layout() {
        let facts = ProjectFacts {
            project: "ctx".to_owned(),
            language: Some("rust".to_owned()),
            branch: Some("main".to_owned()),
            recent: vec![("src/main.rs".to_owned(), "2h ago".to_owned())],
        };
        let lines = header_lines(&facts, &["parser".to_owned(), "symbols".to_owned()]);
        assert_eq!(
            lines,
            [
                "[CTX: project=ctx lang=rust branch=main]",
                "[RECENT: src/main.rs modified 2h ago]",
                "[KEYWORDS: parser, symbols]"
            ]
        );
        let text = inject(&context_block(&lines, ""), "fix the parser");
        assert!(
            text.ends_with("[KEYWORDS: parser, symbols]\n---\n\nfix the parser\n"),
            "{text}"
        );
        assert_eq!(fence_for("a ``` b"), "````");
    }
}
