//! The answers every front end gives: one type per answer, serialized as the CLI's `--json`,
//! as MCP's `structuredContent` (with its paging fields beside it) and as the Python module's
//! dicts. `JsonSchema` gives MCP its output schemas.
//!
//! Paths in answers are relative to the workspace's sandbox root (the project, or the
//! directory a server serves); what lies outside it is left out.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// A related file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RelatedItem {
    /// Path relative to the workspace root.
    pub path: String,
    /// Why it is related.
    pub reason: String,
}

/// The files related to one file: imports both ways, files changed with it, its tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RelatedAnswer {
    /// The file asked about, relative to the workspace root.
    pub file: String,
    /// Why some relations are missing (outside a git repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Files it imports.
    pub imports: Vec<RelatedItem>,
    /// Files that import it.
    pub imported_by: Vec<RelatedItem>,
    /// Files changed in the same commits, most often first.
    pub co_changed: Vec<RelatedItem>,
    /// Its tests.
    pub test_files: Vec<RelatedItem>,
}

/// Repository-relative paths as the workspace shows them: `prefix` is the workspace root
/// relative to the repository's top (empty when they are one).
#[derive(Debug, Clone)]
pub(crate) struct InWorkspace {
    prefix: String,
}

impl InWorkspace {
    /// The rule for a workspace rooted at `root`: the nearest directory at or above it that
    /// holds `.git` is the repository's top.
    pub(crate) fn at(root: &std::path::Path) -> Self {
        let prefix = root
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .and_then(|top| root.strip_prefix(top).ok())
            .map(|rel| {
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        Self { prefix }
    }

    /// A repository-relative path made relative to the workspace (`.` for the workspace
    /// itself), or `None` if it is outside.
    pub(crate) fn path(&self, path: &str) -> Option<String> {
        if self.prefix.is_empty() {
            Some(path.to_owned())
        } else if path == self.prefix {
            Some(".".to_owned())
        } else {
            path.strip_prefix(&self.prefix)
                .and_then(|rest| rest.strip_prefix('/'))
                .map(str::to_owned)
        }
    }

    /// The related files of `report` that lie in the workspace.
    pub(crate) fn related(&self, report: crate::code::RelatedReport) -> RelatedAnswer {
        let keep = |files: Vec<crate::code::RelatedFile>| -> Vec<RelatedItem> {
            files
                .into_iter()
                .filter_map(|f| {
                    self.path(&f.path).map(|path| RelatedItem {
                        path,
                        reason: f.reason,
                    })
                })
                .collect()
        };
        let r = report.related;
        RelatedAnswer {
            file: self.path(&r.source).unwrap_or(r.source),
            note: report.note,
            imports: keep(r.imports),
            imported_by: keep(r.imported_by),
            co_changed: keep(r.co_changed),
            test_files: keep(r.test_files),
        }
    }
}

/// One entry of the map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MapItem {
    /// Path relative to the workspace root, `/`-separated.
    pub path: String,
    /// `dir` or `file`.
    pub kind: String,
    /// 1 for the mapped directory's children.
    pub depth: u64,
    /// Files below a directory (all depths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    /// Lines of a file, or of every file below a directory.
    pub lines: u64,
    /// A source file's language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Top-level symbols of a source file: `fn main`, `struct Args`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<String>,
    /// Top-level symbols left out to fit the budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_symbols: Option<u64>,
}

/// A tree with each file's top-level symbols (`ctx map`, `ctx_map`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MapAnswer {
    /// The mapped directory, as named.
    pub root: String,
    /// Files in the tree.
    pub total_files: u64,
    /// Lines in the tree.
    pub total_lines: u64,
    /// Whether entries or symbols were left out for `depth` or `budget`.
    pub truncated: bool,
    /// Entries in tree order.
    pub entries: Vec<MapItem>,
    /// Files not mapped: `path: why` (refused or unreadable).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The map as text (what `ctx map` prints and the budget is measured on).
    #[serde(skip)]
    #[schemars(skip)]
    pub text: String,
}

impl MapAnswer {
    /// `map` with its entries named from the workspace root: `under` is the mapped directory
    /// relative to it (`.` for the root itself).
    pub(crate) fn new(map: &crate::code::CodeMap, under: &str) -> Self {
        let entries = map
            .entries
            .iter()
            .map(|e| MapItem {
                path: if under == "." {
                    e.path.clone()
                } else {
                    format!("{under}/{}", e.path)
                },
                kind: e.kind.to_owned(),
                depth: e.depth as u64,
                files: e.files.map(|n| n as u64),
                lines: e.lines as u64,
                language: e.language.clone(),
                symbols: e.symbols.iter().map(str::to_owned).collect(),
                more_symbols: (e.more_symbols > 0).then_some(e.more_symbols as u64),
            })
            .collect();
        Self {
            root: map.root.clone(),
            total_files: map.total_files as u64,
            total_lines: map.total_lines as u64,
            truncated: map.truncated,
            entries,
            skipped: map
                .skipped
                .iter()
                .map(|s| format!("{}: {}", s.path, s.reason))
                .collect(),
            text: map.text(),
        }
    }
}

/// A line shown around a match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Line {
    /// 1-based line number.
    pub line: u64,
    /// The line's text.
    pub text: String,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SearchHit {
    /// Path relative to the workspace root.
    pub path: String,
    /// 1-based line.
    pub line: u64,
    /// 1-based byte column of the match.
    pub column: u64,
    /// The matching line, or `[kind] signature` for symbols.
    pub text: String,
    /// Lines around the match, when context was asked for.
    pub context: Vec<Line>,
    /// For symbols: the symbol's kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// For symbols: the enclosing scope; for callers: the calling function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// For symbols: no definition has the exact name, and this one's name contains it.
    #[serde(skip)]
    #[schemars(skip)]
    pub approximate: bool,
}

/// Text, symbol or caller search results (`ctx search`, `ctx_search`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SearchAnswer {
    /// The pattern searched for.
    pub query: String,
    /// literal, regex, symbol or caller.
    pub mode: String,
    /// Results found in all (before max_results).
    pub total: u64,
    /// Whether results were left out: by max_results, or past the bytes of matches a search
    /// keeps (narrow the pattern or path to see them).
    pub truncated: bool,
    /// Results sorted by path, then line.
    pub results: Vec<SearchHit>,
    /// Files not searched: `path: why` (refused or unreadable); the last says how many more.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

impl SearchAnswer {
    /// The answer to `kind` from what the search found.
    pub(crate) fn new(kind: &crate::code::SearchKind, found: crate::code::SearchResults) -> Self {
        use crate::code::SearchKind;
        let (query, mode) = match kind {
            SearchKind::Text(q) => (&q.pattern, if q.regex { "regex" } else { "literal" }),
            SearchKind::Symbol { name, .. } => (name, "symbol"),
            SearchKind::Caller { name, .. } => (name, "caller"),
        };
        let truncated = found.truncated();
        let mut skipped: Vec<String> = found
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.path, s.reason))
            .collect();
        let unlisted = found.skipped_total.saturating_sub(skipped.len() as u64);
        if unlisted > 0 {
            skipped.push(format!("… and {unlisted} more"));
        }
        Self {
            query: query.clone(),
            mode: mode.to_owned(),
            total: found.total,
            truncated,
            results: found
                .matches
                .into_iter()
                .map(|m| SearchHit {
                    path: m.path,
                    line: m.line,
                    column: m.column,
                    text: m.text,
                    context: m
                        .context
                        .into_iter()
                        .map(|c| Line {
                            line: c.line,
                            text: c.text,
                        })
                        .collect(),
                    kind: m.kind,
                    scope: m.scope,
                    approximate: m.approximate,
                })
                .collect(),
            skipped,
        }
    }
}

/// A symbol of a summarized file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SymbolItem {
    /// The defined name.
    pub name: String,
    /// function, method, class, struct, …
    pub kind: String,
    /// First line, 1-based.
    pub line: u64,
    /// Last line, 1-based.
    pub end_line: u64,
    /// The definition's header on one line.
    pub signature: String,
    /// Its doc comment or docstring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc_comment: Option<String>,
    /// The enclosing scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Its visibility, where the language has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
}

/// One summarized file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FileItem {
    /// Path relative to the workspace root.
    pub path: String,
    /// Its language.
    pub language: String,
    /// Lines in the file.
    pub lines: u64,
    /// Its symbols, in source order.
    pub symbols: Vec<SymbolItem>,
    /// Import statements as written.
    pub imports: Vec<String>,
    /// Whether the file has syntax errors (its symbols may be partial).
    pub has_errors: bool,
    /// The code with bodies elided, when asked for (in MCP, the answer's text carries it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub skeleton: Option<String>,
}

impl From<crate::code::FileSummary> for FileItem {
    fn from(f: crate::code::FileSummary) -> Self {
        Self {
            path: f.path,
            language: serde_json::to_value(f.language)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            lines: f.lines as u64,
            symbols: f
                .symbols
                .into_iter()
                .map(|s| SymbolItem {
                    name: s.name,
                    kind: s.kind.name().to_owned(),
                    line: s.line as u64,
                    end_line: s.end_line as u64,
                    signature: s.signature,
                    doc_comment: s.doc_comment,
                    parent: s.parent,
                    visibility: s.visibility,
                })
                .collect(),
            imports: f.imports,
            has_errors: f.has_errors,
            skeleton: f.skeleton,
        }
    }
}

/// A file left out of a summary, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SkippedItem {
    /// Path relative to the workspace root.
    pub path: String,
    /// Why it was left out (not a supported language, binary, unreadable).
    pub reason: String,
}

impl From<crate::code::Skipped> for SkippedItem {
    fn from(s: crate::code::Skipped) -> Self {
        Self {
            path: s.path,
            reason: s.reason,
        }
    }
}

/// The symbols and imports of a file, or of every source file under a directory
/// (`ctx summarize`, `ctx_summarize`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SummarizeAnswer {
    /// The file or directory summarized, relative to the workspace root.
    pub path: String,
    /// The summarized files.
    pub files: Vec<FileItem>,
    /// Files left out, and why.
    pub skipped: Vec<SkippedItem>,
}

impl SummarizeAnswer {
    /// The answer for one file.
    pub fn of_file(file: crate::code::FileSummary) -> Self {
        Self {
            path: file.path.clone(),
            files: vec![FileItem::from(file)],
            skipped: Vec::new(),
        }
    }

    /// The answer for `path` (relative to the workspace root) from `report`.
    pub(crate) fn new(path: String, report: crate::code::SummarizeReport) -> Self {
        let (files, skipped) = match report {
            crate::code::SummarizeReport::File(file) => (vec![FileItem::from(file)], Vec::new()),
            crate::code::SummarizeReport::Directory { files, skipped, .. } => (
                files.into_iter().map(FileItem::from).collect(),
                skipped.into_iter().map(SkippedItem::from).collect(),
            ),
        };
        Self {
            path,
            files,
            skipped,
        }
    }
}

/// One signal's part in a document's score.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SignalOut {
    /// bm25_content, bm25_path, bm25_symbols, bm25_strings, bm25_comments, definition, qualified_definition, module_path, message, path_mentioned, filename_mentioned, git_activity, file_type, graph, context_file (negative: a test, docs, vendored or generated file ranked as context) or term_frequency.
    pub name: String,
    /// What it added to the score.
    pub contribution: f64,
    /// What it found (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Why a document was selected.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct WhyOut {
    /// The query's search terms.
    pub query_terms: Vec<String>,
    /// Occurrences of each query term in the document (terms that occur only).
    pub term_matches: std::collections::BTreeMap<String, u64>,
    /// Terms in the document.
    pub total_words: u64,
    /// The signals behind the score, largest first.
    pub signals: Vec<SignalOut>,
}

/// A selected document.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SelectedOut {
    /// The file's path relative to the workspace root.
    pub id: String,
    /// The content hash of the file as indexed.
    pub version: String,
    /// Its relevance score.
    pub score: f64,
    /// Tokens of its text as included.
    pub tokens: u64,
    /// Less than the whole file is included (`view` says what), to fit more relevant code.
    pub degraded: bool,
    /// What is included: `whole`, `regions` (the parts the query matches, with the
    /// signatures around them), `outline` (signatures and head) or `skeleton`.
    pub view: String,
    /// The lines included (1-based, inclusive) when less than the whole file; read the rest
    /// with `fs_read` and these line numbers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<[u32; 2]>,
    /// Tokens of the whole file, when less is included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_tokens: Option<u64>,
    /// Why it was selected.
    pub why: WhyOut,
    /// Its text as included (`ctx select --json`); MCP carries the texts in its answer's text
    /// instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub content: Option<String>,
}

/// What the selection was asked and what it did.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SelectionOut {
    /// The query as given.
    pub query: String,
    /// The token budget.
    pub budget: u64,
    /// Tokens of the selected content.
    pub tokens_used: u64,
    /// Documents that matched the query at all.
    pub documents_considered: u64,
    /// Documents selected.
    pub documents_selected: u64,
    /// The ranking used.
    pub scorer: String,
    /// The tokenizer that counted the tokens.
    pub tokenizer: String,
    /// Documents included in part.
    pub degraded: Vec<String>,
    /// Candidates left out because they did not fit the budget.
    pub over_budget: u64,
    /// The best of them (at most 20), by rank, with their whole size.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOutOut>,
}

/// A candidate left out of a selection.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LeftOutOut {
    /// The file's path relative to the workspace root.
    pub id: String,
    /// Its relevance score.
    pub score: f64,
    /// Tokens of the whole file.
    pub tokens: u64,
}

/// The index the selection read, after bringing it up to date.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct IndexState {
    /// The index's name.
    pub name: String,
    /// Its cache version (a hash of its build configuration and documents).
    pub cache_version: String,
    /// Documents in it.
    pub documents: u64,
    /// Documents read for this call's update (0 when nothing had changed).
    pub read: u64,
    /// Documents reused unread.
    pub reused: u64,
    /// Documents of the previous build that are gone.
    pub removed: u64,
    /// Whether nothing had changed since the last build.
    pub up_to_date: bool,
    /// Files left out of the index (not text, too large, unreadable).
    pub skipped: u64,
}

/// The files most relevant to a question within a budget, with why each was chosen
/// (`ctx select`, `ctx_select`, Python's `select`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SelectAnswer {
    /// What the selection was asked and what it did.
    pub selection: SelectionOut,
    /// The index it read.
    pub index: IndexState,
    /// The selected documents in ranked order, with why each was chosen.
    pub documents: Vec<SelectedOut>,
    /// The selected files' text in the same order, each under a `## path` line in a fenced
    /// block (MCP's answer text; the CLI gives each document's `content` instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub payload: Option<String>,
}

/// What a [`SelectAnswer`] carries besides the ranking.
#[derive(Debug, Clone, Copy, Default)]
pub struct SelectShow {
    /// Each signal's detail.
    pub explain: bool,
    /// Each document's text.
    pub content: bool,
}

impl SelectAnswer {
    /// The answer from a selection and its index update; `payload` is the rendered text, when
    /// the caller made one.
    pub fn new(
        outcome: crate::select::SelectOutcome,
        payload: Option<String>,
        show: SelectShow,
    ) -> Self {
        let crate::select::SelectOutcome { build, result } = outcome;
        let meta = result.selection;
        let documents = result
            .documents
            .into_iter()
            .map(|doc| SelectedOut {
                id: doc.id.as_str().to_owned(),
                version: doc.version.to_string(),
                score: doc.score,
                tokens: doc.tokens,
                degraded: doc.degraded,
                view: doc.view.name().to_owned(),
                lines: doc.lines,
                file_tokens: (doc.file_tokens > 0).then_some(doc.file_tokens),
                why: WhyOut {
                    query_terms: doc.why.query_terms,
                    term_matches: doc.why.term_matches,
                    total_words: doc.why.total_words,
                    signals: doc
                        .why
                        .signals
                        .into_iter()
                        .map(|s| SignalOut {
                            name: s.name,
                            contribution: s.contribution,
                            detail: (show.explain && !s.detail.is_empty()).then_some(s.detail),
                        })
                        .collect(),
                },
                content: show.content.then_some(doc.content),
            })
            .collect();
        Self {
            selection: SelectionOut {
                query: meta.query,
                budget: meta.budget,
                tokens_used: meta.tokens_used,
                documents_considered: meta.documents_considered as u64,
                documents_selected: meta.documents_selected as u64,
                scorer: meta.scorer,
                tokenizer: meta.tokenizer,
                degraded: meta
                    .degraded
                    .iter()
                    .map(|d| d.as_str().to_owned())
                    .collect(),
                over_budget: meta.over_budget as u64,
                left_out: meta
                    .left_out
                    .into_iter()
                    .map(|l| LeftOutOut {
                        id: l.id.as_str().to_owned(),
                        score: l.score,
                        tokens: l.tokens,
                    })
                    .collect(),
            },
            index: IndexState {
                name: build.name,
                cache_version: build.cache_version.to_string(),
                documents: build.documents as u64,
                read: build.read as u64,
                reused: build.reused as u64,
                removed: build.removed as u64,
                up_to_date: build.up_to_date,
                skipped: build.skipped.len() as u64,
            },
            documents,
            payload,
        }
    }
}

/// A part included in the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Included {
    /// The pack it came from.
    pub pack: String,
    /// The source it came from.
    pub artifact_id: String,
    /// The file (or label) of the part.
    pub path: String,
    /// First and last line, for line ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u64; 2]>,
    /// Hash of the part's content.
    pub content_hash: String,
    /// Tokens of the part's block.
    pub tokens: u64,
    /// Notes such as redactions.
    pub notes: Vec<String>,
}

impl From<crate::packs::IncludedItem> for Included {
    fn from(i: crate::packs::IncludedItem) -> Self {
        Self {
            pack: i.pack,
            artifact_id: i.artifact_id,
            path: i.path,
            lines: i.lines,
            content_hash: i.content_hash.to_string(),
            tokens: i.tokens,
            notes: i.notes,
        }
    }
}

/// A part left out of the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Excluded {
    /// The pack it came from.
    pub pack: String,
    /// The source it came from.
    pub artifact_id: String,
    /// The file (or label) of the part.
    pub path: String,
    /// over_budget, duplicate, binary, too_large, not_utf8, sensitive, missing, …
    pub reason: String,
    /// Details of the reason.
    pub detail: String,
    /// Tokens it would have taken, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl From<crate::packs::ExcludedItem> for Excluded {
    fn from(e: crate::packs::ExcludedItem) -> Self {
        Self {
            pack: e.pack,
            artifact_id: e.artifact_id,
            path: e.path,
            reason: e.reason,
            detail: e.detail,
            tokens: e.tokens,
        }
    }
}

/// Secrets replaced on one line (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Redaction {
    /// The source the line belongs to.
    pub artifact_id: String,
    /// The file.
    pub path: String,
    /// The line, 1-based.
    pub line: u32,
    /// The rule that matched.
    pub rule: String,
    /// How many times it matched on the line.
    pub count: u64,
}

impl From<crate::packs::RedactionSummary> for Redaction {
    fn from(r: crate::packs::RedactionSummary) -> Self {
        Self {
            artifact_id: r.artifact_id,
            path: r.path,
            line: r.line,
            rule: r.rule,
            count: r.count,
        }
    }
}

/// What a render would include, exclude and redact (`ctx pack preview`, `ctx_packs_preview`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PreviewAnswer {
    /// The packs rendered, in order.
    pub packs: Vec<String>,
    /// The token budget applied.
    pub budget_tokens: u64,
    /// Tokens of the payload.
    pub tokens_used: u64,
    /// Tokenizer used for counts.
    pub tokenizer: String,
    /// Payload style.
    pub style: String,
    /// Hash of the packs, policy and included content.
    pub render_hash: String,
    /// Hash of the payload bytes.
    pub payload_hash: String,
    /// Size of the whole payload in bytes.
    pub payload_bytes: u64,
    /// Number of parts included (in the whole answer, not only an MCP page).
    pub included_count: u64,
    /// Number of parts left out (in the whole answer).
    pub excluded_count: u64,
    /// Parts included, in payload order.
    pub included: Vec<Included>,
    /// Parts left out, and why.
    pub excluded: Vec<Excluded>,
    /// Secrets replaced, by rule and line.
    pub redactions: Vec<Redaction>,
    /// The payload, when asked for (in MCP, the end of the answer's text).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub payload: Option<String>,
}

impl PreviewAnswer {
    /// The answer from a render's report (and its payload when asked for); `rebase` names a
    /// pack-source path from the workspace root.
    pub(crate) fn new(
        report: crate::packs::RenderReport,
        payload: Option<String>,
        rebase: &dyn Fn(&str) -> String,
    ) -> Self {
        let mut answer = Self {
            packs: report.packs,
            budget_tokens: report.budget_tokens,
            tokens_used: report.tokens_used,
            tokenizer: report.tokenizer.name().to_owned(),
            style: report.style.name().to_owned(),
            render_hash: report.render_hash.to_string(),
            payload_hash: report.payload_hash.to_string(),
            payload_bytes: report.payload_bytes,
            included_count: report.included.len() as u64,
            excluded_count: report.excluded.len() as u64,
            included: report.included.into_iter().map(Included::from).collect(),
            excluded: report.excluded.into_iter().map(Excluded::from).collect(),
            redactions: report.redactions.into_iter().map(Redaction::from).collect(),
            payload,
        };
        answer
            .included
            .iter_mut()
            .for_each(|i| i.path = rebase(&i.path));
        answer
            .excluded
            .iter_mut()
            .for_each(|e| e.path = rebase(&e.path));
        answer
            .redactions
            .iter_mut()
            .for_each(|r| r.path = rebase(&r.path));
        answer
    }
}

/// A payload and where it came from (`ctx pack render`, `ctx_packs_render`): a snapshot
/// recorded or named, or a render recorded nowhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RenderAnswer {
    /// The snapshot holding this payload, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// The snapshot's label, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The packs rendered, in order.
    pub packs: Vec<String>,
    /// Hash of the packs, policy and included content.
    pub render_hash: String,
    /// Hash of the payload bytes.
    pub payload_hash: String,
    /// Tokens of the payload.
    pub tokens_used: u64,
    /// Size of the payload in bytes.
    pub payload_bytes: u64,
    /// The snapshot's resource URI, when there is a snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Where the payload was written (`-o`), instead of carried here.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub output: Option<String>,
    /// The payload (in MCP, the answer's text).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub payload: Option<String>,
}

impl RenderAnswer {
    /// A snapshot's payload.
    pub fn of_snapshot(snapshot: &ctx_store::SnapshotRecord, payload: String) -> Self {
        Self {
            snapshot_id: Some(snapshot.snapshot_id.to_string()),
            label: snapshot.label.clone(),
            packs: snapshot.packs.clone(),
            render_hash: snapshot.render_hash.to_string(),
            payload_hash: snapshot.payload_object.to_string(),
            tokens_used: snapshot.tokens,
            payload_bytes: payload.len() as u64,
            uri: Some(format!("ctx://snapshot/{}", snapshot.snapshot_id)),
            output: None,
            payload: Some(payload),
        }
    }

    /// A render recorded nowhere; its payload, or where it was written instead.
    pub fn of_report(
        report: &crate::packs::RenderReport,
        payload: Option<String>,
        output: Option<String>,
    ) -> Self {
        Self {
            snapshot_id: None,
            label: None,
            packs: report.packs.clone(),
            render_hash: report.render_hash.to_string(),
            payload_hash: report.payload_hash.to_string(),
            tokens_used: report.tokens_used,
            payload_bytes: report.payload_bytes,
            uri: None,
            output,
            payload,
        }
    }
}

/// A recent commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Commit {
    /// Abbreviated id.
    pub sha: String,
    /// First line of the message.
    pub message: String,
    /// Author name.
    pub author: String,
    /// Commit time, RFC 3339 UTC.
    pub time: String,
    /// How long ago, e.g. `2h ago`.
    pub time_ago: String,
}

impl From<crate::code::CommitInfo> for Commit {
    fn from(c: crate::code::CommitInfo) -> Self {
        Self {
            sha: c.sha,
            message: c.message,
            author: c.author,
            time: c.time,
            time_ago: c.time_ago,
        }
    }
}

/// A directory many recent commits touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HotDir {
    /// The directory, relative to the workspace root.
    pub path: String,
    /// Recent commits that touched it.
    pub commit_count: u64,
}

/// The project at a glance (`ctx status`, `ctx_status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StatusAnswer {
    /// The project's name (from its manifest, else the directory name).
    pub project_name: String,
    /// rust, python, node, go, java, … when detected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_type: Option<String>,
    /// Whether the workspace is in a git repository.
    pub is_git_repo: bool,
    /// The current branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Whether anything is staged, modified or untracked.
    pub is_dirty: bool,
    /// Staged files.
    pub staged_count: u64,
    /// Modified, unstaged files.
    pub modified_count: u64,
    /// Untracked files.
    pub untracked_count: u64,
    /// Lines added and removed against HEAD.
    pub diff_stats: [u64; 2],
    /// Why some facts are missing (outside a git repository).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Recent commits, newest first.
    pub recent_commits: Vec<Commit>,
    /// Directories most touched by recent commits, in the workspace.
    pub hot_directories: Vec<HotDir>,
}

impl InWorkspace {
    /// The status answer, its directories named from the workspace root.
    pub(crate) fn status(&self, s: crate::code::ProjectStatus) -> StatusAnswer {
        StatusAnswer {
            project_name: s.project_name,
            project_type: s.project_type,
            is_git_repo: s.is_git_repo,
            branch: s.branch,
            is_dirty: s.is_dirty,
            staged_count: s.staged_count as u64,
            modified_count: s.modified_count as u64,
            untracked_count: s.untracked_count as u64,
            diff_stats: [s.diff_stats[0] as u64, s.diff_stats[1] as u64],
            note: s.note,
            recent_commits: s.recent_commits.into_iter().map(Commit::from).collect(),
            hot_directories: s
                .hot_directories
                .into_iter()
                .filter_map(|h| {
                    Some(HotDir {
                        path: self.path(&h.path)?,
                        commit_count: h.commit_count as u64,
                    })
                })
                .collect(),
        }
    }
}

/// The definition a hunk sits in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Scope {
    /// Its name.
    pub name: String,
    /// Its kind (function, class, …).
    pub kind: String,
    /// First line in the new file.
    pub start_line: u64,
    /// Last line in the new file.
    pub end_line: u64,
}

/// One widened hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HunkItem {
    /// First line in the old file.
    pub old_start: u64,
    /// Lines in the old file.
    pub old_lines: u64,
    /// First line in the new file.
    pub new_start: u64,
    /// Lines in the new file.
    pub new_lines: u64,
    /// The innermost function or class containing the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// Unified-diff lines, each starting with ` `, `+` or `-`.
    pub lines: Vec<String>,
}

impl From<crate::code::Hunk> for HunkItem {
    fn from(h: crate::code::Hunk) -> Self {
        Self {
            old_start: h.old_start as u64,
            old_lines: h.old_lines as u64,
            new_start: h.new_start as u64,
            new_lines: h.new_lines as u64,
            scope: h.scope.map(|s| Scope {
                name: s.name,
                kind: s.kind,
                start_line: s.start_line as u64,
                end_line: s.end_line as u64,
            }),
            lines: h.lines,
        }
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FileDiffItem {
    /// Path relative to the workspace root.
    pub path: String,
    /// The old path, for renames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// added, deleted, modified, renamed or typechange.
    pub status: String,
    /// Whether the file is binary (no hunks).
    pub binary: bool,
    /// Lines added.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// The widened hunks.
    pub hunks: Vec<HunkItem>,
}

/// What changed between two revisions, hunk by hunk with the definitions around each
/// (`ctx diff-context`, `ctx_diff_context`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DiffAnswer {
    /// The base revision.
    pub base: String,
    /// The head revision, or `working tree`.
    pub head: String,
    /// Lines added in the files listed.
    pub insertions: u64,
    /// Lines removed in the files listed.
    pub deletions: u64,
    /// Changed files in path order.
    pub files: Vec<FileDiffItem>,
}

impl InWorkspace {
    /// The diff's files in the workspace (and under `under`, workspace-relative, when
    /// given), named from the workspace root.
    pub(crate) fn diff(&self, diff: crate::code::DiffContext, under: Option<&str>) -> DiffAnswer {
        let files: Vec<FileDiffItem> = diff
            .files
            .into_iter()
            .filter_map(|f| {
                let path = self.path(&f.path)?;
                if let Some(under) = under
                    && under != "."
                    && path != under
                    && !path.starts_with(&format!("{under}/"))
                {
                    return None;
                }
                Some(FileDiffItem {
                    old_path: f.old_path.and_then(|p| self.path(&p)),
                    path,
                    status: f.status,
                    binary: f.binary,
                    insertions: f.insertions as u64,
                    deletions: f.deletions as u64,
                    hunks: f.hunks.into_iter().map(HunkItem::from).collect(),
                })
            })
            .collect();
        DiffAnswer {
            base: diff.base,
            head: diff.head,
            insertions: files.iter().map(|f| f.insertions).sum(),
            deletions: files.iter().map(|f| f.deletions).sum(),
            files,
        }
    }
}

/// A prompt of a run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PromptItem {
    /// user, system, ….
    pub role: String,
    /// The hash of its text.
    pub content_ref: String,
    /// The text (with include_content), cut at max_output_bytes: in the answer's text only.
    #[schemars(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A named input or output of a run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ContentItem {
    /// Its name (usually a path).
    pub name: String,
    /// The hash of its content.
    pub content_ref: String,
    /// Its size in bytes.
    pub size: u64,
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StepItem {
    /// Position in the run, from 0.
    pub index: u64,
    /// The step object's hash.
    pub hash: String,
    /// execute_tool (a tool call) or chat (a model turn).
    pub operation: String,
    /// The tool's name, for tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The agent's id for the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The model, for model turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The call's arguments.
    pub arguments: Value,
    /// The hash of the output (tool result or model message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_ref: Option<String>,
    /// The output text (with include_content), cut at max_output_bytes: in the answer's text
    /// only.
    #[schemars(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Whether `output` was cut.
    pub output_truncated: bool,
    /// The reasoning stated before the step (with include_content): in the answer's text
    /// only.
    #[schemars(skip)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Whether re-running the step must give the same output.
    pub deterministic: bool,
    /// ok or error.
    pub status: String,
    /// When it started (RFC 3339), as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// How long it took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// The run's header: everything but the steps.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunHeader {
    /// The run id.
    pub id: String,
    /// Refs naming the run (`latest`, tags).
    pub refs: Vec<String>,
    /// Where it came from.
    pub source: String,
    /// The run it was forked from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The agent's session id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// When it started (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// The model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model's request parameters.
    pub model_parameters: Value,
    /// The hash of the system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The prompts, in order.
    pub prompts: Vec<PromptItem>,
    /// Inputs given to the run.
    pub inputs: Vec<ContentItem>,
    /// Outputs the run produced.
    pub outputs: Vec<ContentItem>,
    /// Number of steps in the whole run.
    pub step_count: u64,
    /// What recorded it (runtime, tools, platform), as the manifest says.
    pub environment: Value,
    /// The runs nested in this one (sub-agents, compactions): each link as recorded, the
    /// nested run's id under `run`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Value>,
}

/// A stored run: its header and its steps (`ctx run show`, `ctx_runs_show`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunShowAnswer {
    /// The run without its steps.
    pub run: RunHeader,
    /// Steps in order.
    pub steps: Vec<StepItem>,
}

/// `bytes` as text, cut after `max` bytes (at a character boundary); whether it was cut.
fn cut(bytes: &[u8], max: usize) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= max {
        return (text.into_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

impl RunShowAnswer {
    /// The answer for `run`; with `content`, the texts (cut after that many bytes) of the
    /// prompts and of the steps in `window`, read through `blob`.
    pub(crate) fn new(
        run: &ctx_runs::Run,
        refs: Vec<String>,
        content: Option<usize>,
        window: &std::ops::Range<usize>,
        blob: &dyn Fn(&ctx_core::ContentHash) -> Result<Vec<u8>, crate::CtxError>,
    ) -> Result<Self, crate::CtxError> {
        let text =
            |hash: &ctx_core::ContentHash| -> Result<Option<(String, bool)>, crate::CtxError> {
                content.map(|max| Ok(cut(&blob(hash)?, max))).transpose()
            };
        let m = &run.manifest;
        let mut prompts = Vec::with_capacity(m.prompts.len());
        for p in &m.prompts {
            prompts.push(PromptItem {
                role: p.role.clone(),
                content_ref: p.content_ref.to_string(),
                text: text(&p.content_ref)?.map(|(t, _)| t),
            });
        }
        let items = |refs: &[ctx_runs::ContentRef]| -> Vec<ContentItem> {
            refs.iter()
                .map(|c| ContentItem {
                    name: c.name.clone(),
                    content_ref: c.content_ref.to_string(),
                    size: c.size,
                })
                .collect()
        };
        let mut steps = Vec::with_capacity(run.steps.len());
        for (i, (step, hash)) in run.steps.iter().zip(&m.steps).enumerate() {
            // Steps outside the window keep their hashes only.
            let shown = window.contains(&i);
            let output = match &step.output_ref {
                Some(h) if shown => text(h)?,
                _ => None,
            };
            let reasoning = match &step.reasoning_ref {
                Some(h) if shown => text(h)?.map(|(t, _)| t),
                _ => None,
            };
            steps.push(StepItem {
                index: step.index,
                hash: hash.to_string(),
                operation: step.kind.operation_name().to_owned(),
                tool: step.tool.clone(),
                call_id: step.call_id.clone(),
                model: step.model.clone(),
                arguments: step.parameters.clone(),
                output_ref: step.output_ref.map(|h| h.to_string()),
                output_truncated: output.as_ref().is_some_and(|(_, cut)| *cut),
                output: output.map(|(t, _)| t),
                reasoning,
                deterministic: step.deterministic,
                status: match step.status {
                    ctx_runs::StepStatus::Ok => "ok",
                    ctx_runs::StepStatus::Error => "error",
                }
                .to_owned(),
                timestamp: step.timestamp.clone(),
                duration_ms: step.duration_ms,
            });
        }
        Ok(Self {
            run: RunHeader {
                id: run.id.to_string(),
                refs,
                source: m.source.clone(),
                parent: m.parent.map(|p| p.to_string()),
                conversation_id: m.conversation_id.clone(),
                created: m.created.clone(),
                model: m.model.as_ref().map(|x| x.identifier.clone()),
                model_parameters: m.model.as_ref().map_or_else(
                    || Value::Object(serde_json::Map::new()),
                    |x| serde_json::to_value(&x.parameters).expect("parameters serialize"),
                ),
                system_prompt: m.system_prompt.map(|h| h.to_string()),
                prompts,
                inputs: items(&m.inputs),
                outputs: items(&m.outputs),
                step_count: run.steps.len() as u64,
                environment: serde_json::to_value(&m.environment).expect("environments serialize"),
                children: m
                    .children
                    .iter()
                    .map(|c| serde_json::to_value(c).expect("links serialize"))
                    .collect(),
            },
            steps,
        })
    }
}
