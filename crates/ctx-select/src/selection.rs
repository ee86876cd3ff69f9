//! Selection: query → score → order → budget (seed 003's pipeline), byte-identical for
//! identical inputs.
//!
//! [`ContextSelector`] is the seed's in-memory pipeline over [`Document`]s with a [`Scorer`]
//! ([`TermFrequencyScorer`]); [`OpenIndex`] runs the same pipeline over a built index,
//! scoring from `search.db` alone (postings of the query's terms, document lengths, the
//! graph) so no content is tokenized at query time, then loading (and checking) only the
//! documents it considers for the budget.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use ctx_core::{ContentHash, Document, DocumentId};
use serde::{Deserialize, Serialize};

use crate::analyze::{FIELDS, Field};
use crate::error::{IndexError, SelectionError};
use crate::index::{DOCUMENTS_DIR, DocRow, SEARCH_DB_FILE, SearchDb, cache_version, read_manifest};
use crate::text::{query_terms, terms};
use crate::view::{FileRegions, Focus, ViewKind};

/// A query: the text as given and its search terms (stop words removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    pub raw: String,
    pub terms: Vec<String>,
}

impl Query {
    /// Normalizes `raw`: terms split on case, `_` and punctuation, lower cased, stemmed,
    /// stop words dropped, duplicates removed (first-seen order).
    pub fn new(raw: &str) -> Self {
        Self {
            raw: raw.to_owned(),
            terms: query_terms(raw),
        }
    }

    /// [`Query::new`], refusing an empty query or one of stop words only.
    pub fn parse(raw: &str) -> Result<Self, SelectionError> {
        if raw.trim().is_empty() {
            return Err(SelectionError::EmptyQuery);
        }
        let query = Self::new(raw);
        if query.terms.is_empty() {
            return Err(SelectionError::OnlyStopWords(raw.trim().to_owned()));
        }
        Ok(query)
    }
}

/// One signal's part in a score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// `bm25_content`, `bm25_path`, `bm25_symbols`, `bm25_strings`, `bm25_comments`,
    /// `definition`, `qualified_definition`, `module_path`, `message`, `path_mentioned`,
    /// `filename_mentioned`, `git_activity`, `file_type`, `graph`, `context_file` (a
    /// negative share: a test, docs, vendored… file ranked as context), `term_frequency`.
    pub name: String,
    pub contribution: f64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// Why a document scored what it did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelectionWhy {
    pub query_terms: Vec<String>,
    /// Occurrences of each query term in the content (terms that occur only).
    pub term_matches: BTreeMap<String, u64>,
    /// Terms in the content.
    pub total_words: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<Signal>,
}

/// A scored document before the budget (seed 003's `ScoreDetails`).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreDetails {
    pub score: f64,
    pub why: SelectionWhy,
}

/// A document in the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectedDocument {
    pub id: DocumentId,
    pub version: ContentHash,
    pub score: f64,
    /// Tokens of `content` as included (the skeleton's when degraded).
    pub tokens: u64,
    pub content: String,
    pub why: SelectionWhy,
    /// Less than the whole file is shown (`view` says what), to fit more relevant code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub degraded: bool,
    /// What `content` shows: `whole`, `regions` (the parts the query matches, with the
    /// signatures around them), `outline` (signatures and head) or `skeleton`.
    #[serde(default)]
    pub view: ViewKind,
    /// The lines shown (1-based, inclusive), when less than the whole file; every other run
    /// of lines is one `… lines A-B not shown` marker in `content`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<[u32; 2]>,
    /// Tokens of the whole file, when less is shown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub file_tokens: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl SelectedDocument {
    /// ` (regions)`, ` (outline)`, ` (skeleton)` or nothing, for a listing's header.
    pub fn label(&self) -> String {
        match self.view {
            ViewKind::Whole if !self.degraded => String::new(),
            ViewKind::Whole => " (skeleton)".to_owned(),
            kind => format!(" ({} of {} tokens)", kind.name(), self.file_tokens),
        }
    }
}

/// A candidate left out of a selection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub id: DocumentId,
    pub score: f64,
    /// Tokens of the whole file.
    pub tokens: u64,
}

/// What the selection was asked and what it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectionMetadata {
    pub query: String,
    pub budget: u64,
    pub tokens_used: u64,
    pub documents_considered: usize,
    pub documents_selected: usize,
    pub scorer: String,
    pub tokenizer: String,
    /// Documents included as skeletons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<DocumentId>,
    /// Candidates left out because they did not fit.
    #[serde(default)]
    pub over_budget: usize,
    /// The best of them (at most 20), by rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_version: Option<ContentHash>,
}

/// The result (seed 003's `context.resolve` output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectionResult {
    pub documents: Vec<SelectedDocument>,
    pub selection: SelectionMetadata,
}

/// Candidates listed in `left_out`, at most.
pub const MAX_LEFT_OUT: usize = 20;

impl SelectionResult {
    /// Leaves out the documents after the first `keep` (a front end that shows fewer), so
    /// they are counted and listed as left out like any that did not fit.
    pub fn keep_first(&mut self, keep: usize) {
        if self.documents.len() <= keep {
            return;
        }
        let dropped: Vec<SelectedDocument> = self.documents.drain(keep..).collect();
        let meta = &mut self.selection;
        let mut listed: Vec<LeftOut> = dropped
            .iter()
            .map(|d| LeftOut {
                id: d.id.clone(),
                score: d.score,
                tokens: if d.file_tokens > 0 {
                    d.file_tokens
                } else {
                    d.tokens
                },
            })
            .collect();
        for d in &dropped {
            meta.tokens_used = meta.tokens_used.saturating_sub(d.tokens);
            meta.degraded.retain(|id| *id != d.id);
        }
        meta.over_budget += dropped.len();
        meta.documents_selected = self.documents.len();
        listed.append(&mut meta.left_out);
        listed.truncate(MAX_LEFT_OUT);
        meta.left_out = listed;
    }
}

/// Scores one document for a query; pure.
pub trait Scorer {
    fn name(&self) -> &'static str;
    fn score(&self, query: &Query, document: &Document) -> ScoreDetails;
}

/// Seed 003's naive scorer: query-term occurrences / words in the document.
#[derive(Debug, Clone, Copy, Default)]
pub struct TermFrequencyScorer;

impl Scorer for TermFrequencyScorer {
    fn name(&self) -> &'static str {
        "tf"
    }

    fn score(&self, query: &Query, document: &Document) -> ScoreDetails {
        let mut total: u64 = 0;
        let mut matches: BTreeMap<String, u64> = BTreeMap::new();
        terms(document.content(), |t| {
            total += 1;
            if query.terms.iter().any(|q| q == t) {
                *matches.entry(t.to_owned()).or_insert(0) += 1;
            }
        });
        let hits: u64 = matches.values().sum();
        let score = if total == 0 {
            0.0
        } else {
            hits as f64 / total as f64
        };
        ScoreDetails {
            score: round(score),
            why: SelectionWhy {
                query_terms: query.terms.clone(),
                term_matches: matches,
                total_words: total,
                signals: vec![Signal {
                    name: "term_frequency".to_owned(),
                    contribution: round(score),
                    detail: format!("{hits} of {total} words"),
                }],
            },
        }
    }
}

/// Counts tokens; `hash` is the content hash of `text` (for caches).
pub trait TokenCounter {
    fn name(&self) -> String;
    fn count(&self, text: &str, hash: &ContentHash) -> Result<u64, ctx_core::BoxError>;
}

/// Seed 003's `ceil(len / 4)` estimate.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproxTokenCounter;

impl TokenCounter for ApproxTokenCounter {
    fn name(&self) -> String {
        "approx".to_owned()
    }

    fn count(&self, text: &str, _hash: &ContentHash) -> Result<u64, ctx_core::BoxError> {
        Ok((text.len() as u64).div_ceil(4))
    }
}

/// Scores rounded to 6 decimals, so output and tie-breaks do not depend on float noise.
pub fn round(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Orders by score descending, then id ascending.
fn order<T>(items: &mut [T], key: impl Fn(&T) -> (f64, &str)) {
    items.sort_by(|a, b| {
        let (sa, ia) = key(a);
        let (sb, ib) = key(b);
        sb.total_cmp(&sa).then_with(|| ia.cmp(ib))
    });
}

/// Seed 003's pipeline over documents in memory.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContextSelector;

impl ContextSelector {
    /// Scores every document, orders them (score desc, id asc) and fills `budget` greedily
    /// in that order; a document that does not fit is left out (never truncated) and later,
    /// smaller ones may still fit. Documents scoring 0 may be selected.
    pub fn select(
        documents: &[Document],
        query: &Query,
        scorer: &dyn Scorer,
        counter: &dyn TokenCounter,
        budget: u64,
    ) -> Result<SelectionResult, SelectionError> {
        let mut ranked_docs: Vec<(&Document, ScoreDetails)> = documents
            .iter()
            .map(|d| (d, scorer.score(query, d)))
            .collect();
        order(&mut ranked_docs, |(d, s)| (s.score, d.id().as_str()));
        debug_assert!(ranked_docs.windows(2).all(|w| {
            w[0].1
                .score
                .total_cmp(&w[1].1.score)
                .then_with(|| w[1].0.id().cmp(w[0].0.id()))
                != std::cmp::Ordering::Less
        }));
        let mut out = Vec::new();
        let mut used = 0u64;
        let mut over = 0;
        for (doc, details) in &ranked_docs {
            if used >= budget {
                over += 1;
                continue;
            }
            let tokens = counter
                .count(doc.content(), &doc.version())
                .map_err(SelectionError::TokenCount)?;
            if used + tokens > budget {
                over += 1;
                continue;
            }
            used += tokens;
            out.push(SelectedDocument {
                id: doc.id().clone(),
                version: doc.version(),
                score: details.score,
                tokens,
                content: doc.content().to_owned(),
                why: details.why.clone(),
                degraded: false,
                view: ViewKind::Whole,
                lines: Vec::new(),
                file_tokens: 0,
            });
        }
        Ok(SelectionResult {
            selection: SelectionMetadata {
                query: query.raw.clone(),
                budget,
                tokens_used: used,
                documents_considered: documents.len(),
                documents_selected: out.len(),
                scorer: scorer.name().to_owned(),
                tokenizer: counter.name(),
                degraded: Vec::new(),
                over_budget: over,
                left_out: Vec::new(),
                index: None,
                cache_version: None,
            },
            documents: out,
        })
    }
}

/// Which scorer ranks an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScorerKind {
    /// Seed 003's term frequency (reads every document: slow on large indexes).
    Tf,
    /// BM25 over content, path segments and symbol names.
    Bm25,
    /// BM25 plus path, git and file-type signals and graph ranking.
    #[default]
    Default,
}

impl ScorerKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Tf => "tf",
            Self::Bm25 => "bm25",
            Self::Default => "default",
        }
    }
}

/// Tunable weights of the default scorer, learned on the dev sets
/// (`scripts/tune-selection.sh`); [`Weights::bm25`] is BM25 alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// BM25F weight per field ([`Field`] order; the last, whole defined names, is scored by
    /// `definition` instead).
    pub fields: [f64; FIELDS],
    pub k1: f64,
    pub b: f64,
    /// Points of the best text score (BM25F); other documents in proportion.
    pub text: f64,
    /// Extra weight of a term of the query's first line.
    pub title: f64,
    /// Extra weight of a term of a quoted message or a flag.
    pub literal: f64,
    /// Points for defining an identifier the query names, times its rarity among definitions
    /// (1 for a name defined once).
    pub definition: f64,
    /// Share of `definition` for an identifier seen only on a code line of the query.
    pub code_line: f64,
    /// Points for defining a `Parent.name` the query names.
    pub qualified: f64,
    /// Points for being the module a dotted name spells (`pkg.mod.func` → `pkg/mod.py`).
    pub module_path: f64,
    /// Points for holding a quoted message of the query verbatim.
    pub message: f64,
    pub path_mentioned: f64,
    pub filename_mentioned: f64,
    pub per_commit: f64,
    pub max_git: f64,
    pub file_type: f64,
    /// Points for the best graph rank; others in proportion.
    pub graph: f64,
    /// Factor on the score of a test, example, docs, vendored or generated file the query is
    /// not about.
    pub context: f64,
    /// Relevance floor: a document scoring less than this share of the best is left out.
    pub floor: f64,
    /// Nothing is selected when the best score is below this (only context files, or only
    /// faint matches, answer the query).
    pub min_score: f64,
}

impl Default for Weights {
    /// Learned by coordinate search on the Django localization dev set
    /// (`examples/localize_eval.rs --tune`; README, "Selection").
    fn default() -> Self {
        Self {
            fields: [1.0, 6.0, 2.0, 1.0, 0.6, 0.0],
            k1: 1.2,
            b: 0.75,
            text: 10.0,
            title: 3.5,
            literal: 0.0,
            definition: 0.0,
            code_line: 0.0,
            qualified: 0.0,
            module_path: 4.0,
            message: 0.0,
            path_mentioned: 8.0,
            filename_mentioned: 2.0,
            per_commit: 0.5,
            max_git: 2.5,
            file_type: 2.0,
            graph: 3.5,
            context: 0.1,
            floor: 0.1,
            min_score: 2.0,
        }
    }
}

impl Weights {
    /// BM25 over content, path and symbol words, nothing else (the baseline).
    pub fn bm25() -> Self {
        Self {
            fields: [1.0, 1.5, 1.5, 0.0, 0.0, 0.0],
            ..Self::default()
        }
    }

    /// Sets one weight by name (`text`, `fields.2`, …), for tuning scripts.
    pub fn set(&mut self, name: &str, value: f64) -> bool {
        if let Some(i) = name.strip_prefix("fields.") {
            return match i.parse::<usize>().ok().and_then(|i| self.fields.get_mut(i)) {
                Some(slot) => {
                    *slot = value;
                    true
                }
                None => false,
            };
        }
        let slot = match name {
            "k1" => &mut self.k1,
            "b" => &mut self.b,
            "text" => &mut self.text,
            "title" => &mut self.title,
            "literal" => &mut self.literal,
            "definition" => &mut self.definition,
            "code_line" => &mut self.code_line,
            "qualified" => &mut self.qualified,
            "module_path" => &mut self.module_path,
            "message" => &mut self.message,
            "path_mentioned" => &mut self.path_mentioned,
            "filename_mentioned" => &mut self.filename_mentioned,
            "per_commit" => &mut self.per_commit,
            "max_git" => &mut self.max_git,
            "file_type" => &mut self.file_type,
            "graph" => &mut self.graph,
            "context" => &mut self.context,
            "floor" => &mut self.floor,
            "min_score" => &mut self.min_score,
            _ => return false,
        };
        *slot = value;
        true
    }
}

/// A ranked candidate of an index.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub num: u32,
    pub id: String,
    pub score: f64,
    pub why: SelectionWhy,
}

/// How [`OpenIndex::select`] fills the budget.
#[derive(Debug, Clone, Copy)]
pub struct SelectOptions {
    pub scorer: ScorerKind,
    pub budget: u64,
    /// Allow skeletons in place of whole files.
    pub degrade: bool,
    /// Consider at most this many ranked candidates for the budget.
    pub max_candidates: usize,
    /// Show at most this many documents (the budget is shared among them only).
    pub max_documents: usize,
    pub weights: Weights,
}

impl Default for SelectOptions {
    fn default() -> Self {
        Self {
            scorer: ScorerKind::Default,
            budget: 8000,
            degrade: true,
            max_candidates: 200,
            max_documents: usize::MAX,
            weights: Weights::default(),
        }
    }
}

/// A query ranked over an index ([`OpenIndex::ranking`]).
#[derive(Debug, Clone)]
pub struct Ranking {
    query: Query,
    ranked: Vec<Ranked>,
    focus: Focus,
}

/// A built index opened for selection (holding a shared lock, so no rebuild swaps it away
/// while it is read).
pub struct OpenIndex {
    name: String,
    dir: PathBuf,
    /// The manifest's cache version (its documents are the rows, checked equal on opening).
    cache_version: ContentHash,
    db: SearchDb,
    rows: Vec<DocRow>,
    lock: Option<File>,
}

/// What scoring one candidate reads: the per-document signals of the whole ranking.
struct RowScorer<'a> {
    bm25_only: bool,
    w: &'a Weights,
    query: &'a Query,
    parts: &'a [[f64; FIELDS]],
    /// Scales the text score so the best document gets `w.text`.
    scale: f64,
    definition: &'a [f64],
    defined: &'a [Vec<String>],
    qualified: &'a [f64],
    module: &'a [f64],
    /// 2: the full path is in the query, 1: the file name.
    mention: &'a [u8],
    /// How many files share each mentioned name.
    same_name: &'a BTreeMap<(u8, &'a str), u32>,
    types: &'a [&'static str],
    type_share: f64,
    graph_points: &'a [f64],
    roles: &'a [crate::role::Role],
    /// The project is not mostly prose: context files (tests, docs) rank below answers.
    demote: bool,
    wanted: &'a [crate::role::Role],
}

impl RowScorer<'_> {
    /// A mention's share of its points: a name many files share (`models.py`) says little.
    fn mention_share(&self, i: usize, id: &str) -> f64 {
        let key = (self.mention[i], id.rsplit('/').next().unwrap_or(id));
        1.0 / f64::from(self.same_name.get(&key).copied().unwrap_or(1).max(1))
    }

    /// Candidate `row`'s score, and with `detailed` its reasons (the score is the same
    /// either way: the reasons are only written down).
    fn rank(&self, row: &DocRow, term_matches: BTreeMap<String, u64>, detailed: bool) -> Ranked {
        let i = row.num as usize;
        let mut signals = Vec::new();
        let mut score = 0.0;
        // A definition is shown even at no points, as a reason.
        let mut push = |name: &str, points: f64, detail: &dyn Fn() -> String| {
            if points != 0.0 || name == "definition" {
                score += points;
                if detailed {
                    signals.push(Signal {
                        name: name.to_owned(),
                        contribution: round(points),
                        detail: detail(),
                    });
                }
            }
        };
        // The text score, scaled so the best document gets `self.w.text`, shown per field.
        let scale = self.scale;
        for (f, field) in Field::ALL.iter().enumerate() {
            push(field.signal(), self.parts[i][f] * scale, &String::new);
        }
        if !self.bm25_only {
            if !self.defined[i].is_empty() {
                push(
                    "definition",
                    self.w.definition * self.definition[i],
                    &|| format!("defines {}", self.defined[i].join(", ")),
                );
            }
            push("qualified_definition", self.qualified[i], &|| {
                "defines a `Parent.name` the query names".to_owned()
            });
            if self.module[i] > 0.0 {
                push("module_path", self.w.module_path * self.module[i], &|| {
                    "a dotted name in the query spells its module path".to_owned()
                });
            }
            match self.mention[i] {
                2 => push(
                    "path_mentioned",
                    self.w.path_mentioned * self.mention_share(i, &row.id),
                    &|| format!("`{}` is in the query", row.id),
                ),
                1 => push(
                    "filename_mentioned",
                    self.w.filename_mentioned * self.mention_share(i, &row.id),
                    &|| {
                        format!(
                            "`{}` is in the query",
                            row.id.rsplit('/').next().unwrap_or(&row.id)
                        )
                    },
                ),
                _ => {}
            }
            // Every dependency change touches manifests and lockfiles: their history
            // says nothing about a task.
            if !crate::role::is_manifest_or_lockfile(&row.id) {
                push(
                    "git_activity",
                    (self.w.per_commit * f64::from(row.commits)).min(self.w.max_git),
                    &|| format!("changed in {} recent commit(s)", row.commits),
                );
            }
            if crate::signals::has_named_type(self.types, &row.id) {
                push("file_type", self.w.file_type * self.type_share, &|| {
                    "a file type the query names".to_owned()
                });
            }
            push("graph", self.graph_points[i], &|| {
                "near the files the query points at (imports, references)".to_owned()
            });
        }
        if !self.bm25_only {
            let role = self.roles[i];
            let named = self.mention[i] == 2 && self.mention_share(i, &row.id) >= 1.0;
            if self.demote && role.is_context() && !self.wanted.contains(&role) && !named {
                let points = score * (self.w.context - 1.0);
                score += points;
                if detailed {
                    signals.push(Signal {
                        name: "context_file".to_owned(),
                        contribution: round(points),
                        detail: format!(
                            "{} file: ranked as context, not as the answer (the query is not about {} files)",
                            role.name(),
                            role.name()
                        ),
                    });
                }
            }
        }
        Ranked {
            num: row.num,
            id: row.id.clone(),
            score: round(score),
            why: if detailed {
                SelectionWhy {
                    query_terms: self.query.terms.clone(),
                    term_matches,
                    total_words: u64::from(row.lengths[0]),
                    signals,
                }
            } else {
                SelectionWhy::default()
            },
        }
    }
}

/// Candidates a ranking gives reasons for, best first (at least; a selection gives them to
/// every candidate it may show, `max_candidates`); the rest carry their score alone (on a
/// tree of a million files a query can have half a million candidates, and their reasons
/// took most of a selection's memory).
pub const DETAILED_CANDIDATES: usize = 1_000;

/// The text score of each document, and what it is made of (see `Index::text_scores`).
struct TextScores {
    text: Vec<f64>,
    /// Per document and field, the text score's share (for the reasons).
    parts: Vec<[f64; FIELDS]>,
    /// Matched terms that are not filler words (a document needs one to be a candidate).
    evidence: Vec<bool>,
    /// The query terms documents' contents hold: (document, term's position in the query,
    /// count), in document order.
    matches: Vec<(u32, u32, u64)>,
}

/// Definitions of what the query names, per document (see `Index::definitions`).
struct Definitions {
    definition: Vec<f64>,
    defined: Vec<Vec<String>>,
    qualified: Vec<f64>,
}

impl Definitions {
    fn none(n: usize) -> Self {
        Self {
            definition: vec![0.0; n],
            defined: vec![Vec::new(); n],
            qualified: vec![0.0; n],
        }
    }
}

impl OpenIndex {
    /// Opens index `name` in `indexes_dir`, refusing a damaged one. The checks are cheap
    /// (manifest, cache version, search database, the set of document files); each document
    /// read later is checked against its version.
    pub fn open(indexes_dir: &Path, name: &str) -> Result<Self, IndexError> {
        crate::index::validate_index_name(name)?;
        let dir = indexes_dir.join(name);
        if !dir.is_dir() {
            return Err(IndexError::NotFound {
                name: name.to_owned(),
                path: dir,
            });
        }
        let lock = crate::index::lock(indexes_dir, name, false)?;
        let manifest = read_manifest(&dir, name)?;
        if cache_version(&manifest.config, &manifest.documents) != manifest.cache_version {
            return Err(IndexError::corrupt(
                name,
                "manifest.json: cache_version does not match its documents",
            ));
        }
        let db = SearchDb::open(&dir.join(SEARCH_DB_FILE), name)?;
        if db.cache_version() != manifest.cache_version {
            return Err(IndexError::corrupt(
                name,
                "search.db does not belong to manifest.json",
            ));
        }
        let rows = db.doc_rows(false)?;
        let same = rows.len() == manifest.documents.len()
            && rows.iter().zip(&manifest.documents).all(|(r, e)| {
                r.id == e.id.as_str()
                    && r.version == e.version
                    && e.file.strip_suffix(".json") == Some(r.file.as_str())
            });
        if !same {
            return Err(IndexError::corrupt(
                name,
                "search.db does not list the manifest's documents",
            ));
        }
        crate::index::check_listing(&dir, name, &manifest)?;
        Ok(Self {
            name: name.to_owned(),
            dir,
            cache_version: manifest.cache_version,
            db,
            rows,
            lock,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lets go of the shared lock taken when it was opened. A process that keeps the index
    /// open between selections takes [`crate::index::lock`] (shared) around each one instead,
    /// and opens it again when [`OpenIndex::is_current`] says another build changed it.
    pub fn unlock(&mut self) {
        self.lock = None;
    }

    /// Whether the index on disk is still the one opened (no build or update since).
    pub fn is_current(&self) -> bool {
        crate::index::stored_cache_version(&self.dir.join(SEARCH_DB_FILE))
            == Some(self.cache_version)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Reads document `num`, checking its id and version against the manifest's (the rows
    /// were checked equal to it on opening).
    pub fn load(&self, num: u32) -> Result<Document, IndexError> {
        let row = self
            .rows
            .get(num as usize)
            .ok_or_else(|| IndexError::corrupt(&self.name, format!("no document number {num}")))?;
        let file = format!("{}.json", row.file);
        let id =
            DocumentId::new(&row.id).map_err(|e| IndexError::corrupt(&self.name, e.to_string()))?;
        let path = self.dir.join(DOCUMENTS_DIR).join(&file);
        if let Some(problem) =
            crate::index::verify::check_document_file(&path, &id, row.version, &file)
        {
            return Err(IndexError::corrupt(&self.name, problem));
        }
        crate::index::read_document(&path, &self.name)
    }

    /// Ranks the index's documents for `query` (candidates only: documents with a positive
    /// relevance signal above the floor; with [`ScorerKind::Tf`], every document as the seed
    /// specifies).
    pub fn rank(
        &self,
        query: &Query,
        kind: ScorerKind,
        w: &Weights,
    ) -> Result<Vec<Ranked>, IndexError> {
        Ok(self.rank_focused(query, kind, w, DETAILED_CANDIDATES)?.0)
    }

    /// [`Self::rank`], and the query's focus for region views, read from the same postings
    /// and query features the ranking reads; the best `detailed` candidates have reasons.
    fn rank_focused(
        &self,
        query: &Query,
        kind: ScorerKind,
        w: &Weights,
        detailed: usize,
    ) -> Result<(Vec<Ranked>, Focus), IndexError> {
        let parsed = crate::query::features(&query.raw);
        let mut focus = Focus {
            weights: Vec::new(),
            idents: parsed.idents.iter().map(|i| i.term.clone()).collect(),
            messages: crate::query::message_fragments(&parsed.messages),
        };
        if kind == ScorerKind::Tf {
            let out = self.rank_tf(query, &mut focus)?;
            return Ok((out, focus));
        }
        let bm25_only = kind == ScorerKind::Bm25;
        let w = if bm25_only { Weights::bm25() } else { *w };
        let no_features = crate::query::Features::default();
        let features = if bm25_only { &no_features } else { &parsed };
        let n = self.rows.len();
        let TextScores {
            text,
            parts,
            evidence,
            matches,
        } = self.text_scores(query, features, &w, &mut focus)?;

        // Definitions of the identifiers the query names, `Parent.name` pairs.
        let Definitions {
            definition,
            defined,
            qualified,
        } = if bm25_only {
            Definitions::none(n)
        } else {
            self.definitions(features, &w)?
        };

        // Seed 001 signals that need no postings; modules that dotted names spell.
        let raw_lower = query.raw.to_lowercase();
        let types = crate::signals::file_types_named(&query.terms, &raw_lower);
        let (mention, module, roles) = if bm25_only {
            (vec![0; n], vec![0.0; n], Vec::new())
        } else {
            self.path_signals(query, features, &w)
        };
        // A name many files share (`models.py`, `migrations/0001_initial.py`) says little:
        // its points are split among them.
        let mut same_name: BTreeMap<(u8, &str), u32> = BTreeMap::new();
        for row in &self.rows {
            let m = mention[row.num as usize];
            if m > 0 {
                *same_name
                    .entry((m, row.id.rsplit('/').next().unwrap_or(&row.id)))
                    .or_insert(0) += 1;
            }
        }
        // A file type most of the project is of says nothing.
        let type_share = if types.is_empty() {
            0.0
        } else {
            let of_type = self
                .rows
                .iter()
                .filter(|r| crate::signals::has_named_type(&types, &r.id))
                .count();
            1.0 - of_type as f64 / n.max(1) as f64
        };
        let mentioned_roles: Vec<crate::role::Role> = roles
            .iter()
            .zip(&mention)
            .filter(|(_, m)| **m > 0)
            .map(|(r, _)| *r)
            .collect();
        // Roles the query is about: asked for in its title (an issue's body talks about
        // tests and docs in passing), or files of that role named in it.
        let title_lower = raw_lower
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let wanted = crate::role::roles_wanted(title_lower, &mentioned_roles);
        // In a project that is mostly prose (a documentation site, a book), its prose is not
        // "context".
        let prose = roles
            .iter()
            .filter(|r| {
                matches!(
                    r,
                    crate::role::Role::Docs
                        | crate::role::Role::Changelog
                        | crate::role::Role::Translation
                )
            })
            .count();
        let demote = prose * 5 < roles.len() * 4;

        let max_text = text.iter().copied().fold(0.0, f64::max);
        let candidate: Vec<bool> = (0..n)
            .map(|i| {
                evidence[i]
                    || (definition[i] > 0.0 && w.definition > 0.0)
                    || qualified[i] > 0.0
                    || mention[i] > 0
                    || module[i] > 0.0
            })
            .collect();

        // Graph: personalized on mentioned files, defining files of named identifiers, and
        // the best text matches.
        let graph_points = if !bm25_only && w.graph > 0.0 {
            self.graph_points(
                &w,
                &text,
                &candidate,
                &mention,
                &module,
                &qualified,
                &definition,
            )?
        } else {
            vec![0.0; n]
        };

        let scorer = RowScorer {
            bm25_only,
            w: &w,
            query,
            parts: &parts,
            scale: if bm25_only || max_text <= 0.0 {
                1.0
            } else {
                w.text / max_text
            },
            definition: &definition,
            defined: &defined,
            qualified: &qualified,
            module: &module,
            mention: &mention,
            same_name: &same_name,
            types: &types,
            type_share,
            graph_points: &graph_points,
            roles: &roles,
            demote,
            wanted: &wanted,
        };
        let mut out: Vec<Ranked> = self
            .rows
            .iter()
            .filter(|row| candidate[row.num as usize])
            .map(|row| scorer.rank(row, BTreeMap::new(), false))
            .collect();
        order(&mut out, |r| (r.score, r.id.as_str()));
        self.give_reasons(&scorer, &mut out, &matches, detailed);
        if !bm25_only && w.message > 0.0 {
            self.match_messages(features, &mut out, w)?;
        }
        // The relevance floor: nothing far below the best is worth a reader's tokens.
        if !bm25_only && let Some(top) = out.first().map(|r| r.score) {
            let floor = if top < w.min_score {
                f64::INFINITY
            } else {
                w.floor * top
            };
            out.retain(|r| r.score > 0.0 && r.score >= floor);
        }
        Ok((out, focus))
    }

    /// Scores the best `detailed` candidates of `out` (ordered) again, with their reasons and
    /// the query terms their contents hold (`matches`, in document order).
    fn give_reasons(
        &self,
        scorer: &RowScorer<'_>,
        out: &mut [Ranked],
        matches: &[(u32, u32, u64)],
        detailed: usize,
    ) {
        for cand in out.iter_mut().take(detailed) {
            let from = matches.partition_point(|m| m.0 < cand.num);
            let term_matches: BTreeMap<String, u64> = matches[from..]
                .iter()
                .take_while(|m| m.0 == cand.num)
                .map(|&(_, t, n)| (scorer.query.terms[t as usize].clone(), n))
                .collect();
            let row = &self.rows[cand.num as usize];
            debug_assert_eq!(row.num, cand.num, "rows are in number order");
            *cand = scorer.rank(row, term_matches, true);
        }
    }

    /// Every document scored by term frequency alone (the simplest scorer); adds each query
    /// term to `focus`.
    fn rank_tf(&self, query: &Query, focus: &mut Focus) -> Result<Vec<Ranked>, IndexError> {
        let mut out = Vec::with_capacity(self.rows.len());
        for row in &self.rows {
            let doc = self.load(row.num)?;
            let details = TermFrequencyScorer.score(query, &doc);
            out.push(Ranked {
                num: row.num,
                id: row.id.clone(),
                score: details.score,
                why: details.why,
            });
        }
        order(&mut out, |r| (r.score, r.id.as_str()));
        for term in &query.terms {
            let df = self.db.postings(Field::Content, term)?.len();
            self.push_focus_term(focus, term, df);
        }
        Ok(out)
    }

    /// Signals of paths: per document, whether the query names its path (2) or file name (1),
    /// the share of a module path a dotted name in it spells, and each document's role.
    fn path_signals(
        &self,
        query: &Query,
        features: &crate::query::Features,
        w: &Weights,
    ) -> (Vec<u8>, Vec<f64>, Vec<crate::role::Role>) {
        let n = self.rows.len();
        let mut mention: Vec<u8> = vec![0; n]; // 2: full path, 1: file name
        let mut module: Vec<f64> = vec![0.0; n];
        let mut roles: Vec<crate::role::Role> = Vec::with_capacity(n);
        for row in &self.rows {
            let name = row.id.rsplit('/').next().unwrap_or(&row.id);
            if query.raw.contains(name) {
                mention[row.num as usize] = crate::signals::mention(&query.raw, &row.id);
            }
            roles.push(crate::role::role(&row.id));
        }
        // Code lines of a query mostly import what the reporter used, not what broke.
        for (paths, share) in [
            (&features.module_paths, 1.0),
            (&features.code_module_paths, w.code_line),
        ] {
            for (num, hit) in crate::signals::module_files(paths, &self.rows) {
                if let Some(m) = module.get_mut(num as usize)
                    && hit
                {
                    *m = m.max(share);
                }
            }
        }
        (mention, module, roles)
    }

    /// The query's text score per document: BM25F over the text fields (each term weighted
    /// up when it is in the title or quoted literally), with each field's share, the terms
    /// each document matched, and whether it matched one that is not a filler word. Adds each
    /// term to `focus`.
    fn text_scores(
        &self,
        query: &Query,
        features: &crate::query::Features,
        w: &Weights,
        focus: &mut Focus,
    ) -> Result<TextScores, IndexError> {
        let n = self.rows.len();
        let avg = self.db.average_lengths();
        let mut text: Vec<f64> = vec![0.0; n];
        // Per document and field, the text score's share (for the reasons).
        let mut parts: Vec<[f64; FIELDS]> = vec![[0.0; FIELDS]; n];
        // Matched terms that are not filler words (a document needs one to be a candidate).
        let mut evidence: Vec<bool> = vec![false; n];
        let mut matches: Vec<(u32, u32, u64)> = Vec::new();
        let text_fields = [
            Field::Content,
            Field::Path,
            Field::Symbols,
            Field::Strings,
            Field::Comments,
        ];
        for (t, term) in (0u32..).zip(&query.terms) {
            let filler = crate::text::is_filler_word(term);
            let mut qw = 1.0;
            if features.multiline && features.title_terms.contains(term) {
                qw += w.title;
            }
            if features.literal_terms.contains(term) {
                qw += w.literal;
            }
            // Per document: the field-weighted, length-normalized term frequency (BM25F).
            let mut per_doc: BTreeMap<u32, [f64; FIELDS]> = BTreeMap::new();
            for field in text_fields {
                let f = field.index();
                if w.fields[f] == 0.0 {
                    if field == Field::Content {
                        let df = self.db.postings(field, term)?.len();
                        self.push_focus_term(focus, term, df);
                    }
                    continue;
                }
                let postings = self.db.postings(field, term)?;
                if field == Field::Content {
                    self.push_focus_term(focus, term, postings.len());
                }
                let avg_len = if avg[f] > 0.0 { avg[f] } else { 1.0 };
                for (num, tf_raw) in postings {
                    let Some(row) = self.rows.get(num as usize) else {
                        continue;
                    };
                    let len = f64::from(row.lengths[f]);
                    let tf = f64::from(tf_raw);
                    let norm = tf / (1.0 - w.b + w.b * len / avg_len);
                    per_doc.entry(num).or_insert([0.0; FIELDS])[f] += w.fields[f] * norm;
                    if field == Field::Content {
                        matches.push((num, t, u64::from(tf_raw)));
                    }
                }
            }
            if per_doc.is_empty() {
                continue;
            }
            let df = per_doc.len() as f64;
            let idf = (1.0 + (n as f64 - df + 0.5) / (df + 0.5)).ln();
            for (num, fields) in per_doc {
                let i = num as usize;
                let pseudo: f64 = fields.iter().sum();
                if pseudo <= 0.0 {
                    continue;
                }
                let points = qw * idf * pseudo * (w.k1 + 1.0) / (w.k1 + pseudo);
                text[i] += points;
                for (f, share) in fields.iter().enumerate() {
                    parts[i][f] += points * share / pseudo;
                }
                if !filler {
                    evidence[i] = true;
                }
            }
        }
        matches.sort_unstable();
        Ok(TextScores {
            text,
            parts,
            evidence,
            matches,
        })
    }

    /// Per document: the definitions of identifiers the query names (weighted by rarity, and
    /// less when the name only appears on a code line), their names, and the points of
    /// `Parent.name` pairs it defines.
    fn definitions(
        &self,
        features: &crate::query::Features,
        w: &Weights,
    ) -> Result<Definitions, IndexError> {
        let n = self.rows.len();
        let mut definition: Vec<f64> = vec![0.0; n];
        let mut defined: Vec<Vec<String>> = vec![Vec::new(); n];
        let mut qualified: Vec<f64> = vec![0.0; n];
        let max_idf = (1.0 + (n as f64 - 0.5) / 1.5).ln().max(1e-9);
        for ident in &features.idents {
            let postings = self.db.postings(Field::Defs, &ident.term)?;
            if postings.is_empty() {
                continue;
            }
            let df = postings.len() as f64;
            let idf = (1.0 + (n as f64 - df + 0.5) / (df + 0.5)).ln();
            let rarity = (idf / max_idf).powi(2);
            let share = match ident.source {
                crate::query::IdentSource::Prose => 1.0,
                crate::query::IdentSource::CodeLine => w.code_line,
            };
            for (num, _) in postings {
                let i = num as usize;
                if i < n {
                    definition[i] += share * rarity;
                    defined[i].push(ident.text.clone());
                }
            }
        }
        for pair in &features.qualified {
            for (num, _) in self.db.postings(Field::Defs, pair)? {
                if let Some(q) = qualified.get_mut(num as usize) {
                    *q += w.qualified;
                }
            }
        }
        Ok(Definitions {
            definition,
            defined,
            qualified,
        })
    }

    /// Personalized PageRank over imports and references, seeded on the files the query
    /// points at: mentioned, module paths, definitions and the best text matches. Points
    /// scaled so the best gets `w.graph`; under 0.05 they count for nothing.
    #[allow(clippy::too_many_arguments)]
    fn graph_points(
        &self,
        w: &Weights,
        text: &[f64],
        candidate: &[bool],
        mention: &[u8],
        module: &[f64],
        qualified: &[f64],
        definition: &[f64],
    ) -> Result<Vec<f64>, IndexError> {
        let n = self.rows.len();
        let mut graph_points = vec![0.0; n];
        let mut seeds: Vec<(u32, f64)> = Vec::new();
        for num in 0..n {
            if mention[num] > 0 || module[num] > 0.0 || qualified[num] > 0.0 {
                seeds.push((u32::try_from(num).unwrap_or(u32::MAX), 1.0));
            } else if definition[num] > 0.0 && w.definition > 0.0 {
                seeds.push((
                    u32::try_from(num).unwrap_or(u32::MAX),
                    (w.definition * definition[num]).min(1.0),
                ));
            }
        }
        let mut best: Vec<(f64, u32)> = text
            .iter()
            .enumerate()
            .filter(|(i, s)| **s > 0.0 && candidate[*i])
            .map(|(i, s)| (*s, u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        if let Some(&(top, _)) = best.first() {
            for &(s, num) in best.iter().take(5) {
                seeds.push((num, 0.5 * s / top));
            }
        }
        if !seeds.is_empty() {
            let graph = self.db.graph()?;
            if graph.edges.len() == n {
                let rank = graph.personalized_pagerank(&seeds);
                let max = rank.iter().copied().fold(0.0, f64::max);
                if max > 0.0 {
                    for (i, r) in rank.iter().enumerate() {
                        let points = w.graph * r / max;
                        if points >= 0.05 {
                            graph_points[i] = points;
                        }
                    }
                }
            }
        }
        Ok(graph_points)
    }

    /// Adds `w.message` to the best candidates that hold a quoted message of the query
    /// verbatim (a run of three or more of its words without quotes or numbers, which a
    /// formatted message fills in), then orders again.
    fn match_messages(
        &self,
        features: &crate::query::Features,
        out: &mut [Ranked],
        w: Weights,
    ) -> Result<(), IndexError> {
        const CHECKED: usize = 30;
        let fragments = crate::query::message_fragments(&features.messages);
        if fragments.is_empty() {
            return Ok(());
        }
        for cand in out.iter_mut().take(CHECKED) {
            let doc = self.load(cand.num)?;
            let content = doc.content();
            let Some(found) = fragments.iter().find(|f| content.contains(f.as_str())) else {
                continue;
            };
            let demoted = cand.why.signals.iter().any(|s| s.name == "context_file");
            let factor = if demoted { w.context } else { 1.0 };
            let points = w.message * factor;
            cand.score = round(cand.score + points);
            cand.why.signals.push(Signal {
                name: "message".to_owned(),
                contribution: round(points),
                detail: format!("holds \"{found}\" from the query"),
            });
        }
        order(out, |r| (r.score, r.id.as_str()));
        Ok(())
    }

    /// Adds `term` to a focus, weighted by its rarity in this index (`df` documents hold it
    /// in their content; filler words count a quarter).
    fn push_focus_term(&self, focus: &mut Focus, term: &str, df: usize) {
        if df == 0 {
            return;
        }
        let (n, df) = (self.rows.len() as f64, df as f64);
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let idf = if crate::text::is_filler_word(term) {
            idf * 0.25
        } else {
            idf
        };
        focus.weights.push((term.to_owned(), idf));
    }

    /// Ranks, then fills the budget with exact token counts from `counter`, down a ladder
    /// so the best candidates are represented before lesser ones are added:
    ///
    /// 1. In rank order, each candidate gets a share of the budget (the first the most): a
    ///    file that fits its share is shown whole; a larger one as a view of the regions the
    ///    query matches, with their enclosing signatures ([`crate::view`]); the first
    ///    candidate always gets at least its best lines when anything fits.
    /// 2. What is left goes back to the candidates in rank order, widening their views (more
    ///    regions, then signatures, up to the whole file).
    ///
    /// Everything left out is counted in `over_budget` and the best of it listed in
    /// `left_out`. Without `degrade`, files are whole or left out.
    pub fn select(
        &self,
        query: &Query,
        opts: &SelectOptions,
        counter: &dyn TokenCounter,
    ) -> Result<SelectionResult, SelectionError> {
        let ranking = self.ranking(query, opts)?;
        self.select_ranked(&ranking, opts, counter)
    }

    /// The ranking [`OpenIndex::select`] fills its budget from (with `opts`' scorer and
    /// weights), to fill several budgets from one ranking ([`OpenIndex::select_ranked`]).
    pub fn ranking(&self, query: &Query, opts: &SelectOptions) -> Result<Ranking, IndexError> {
        // Every candidate selection may show has its reasons.
        let detailed = opts.max_candidates.max(DETAILED_CANDIDATES);
        let (ranked, focus) = self.rank_focused(query, opts.scorer, &opts.weights, detailed)?;
        Ok(Ranking {
            query: query.clone(),
            ranked,
            focus,
        })
    }

    /// [`OpenIndex::select`] from a ranking already made (of this index, with the same
    /// scorer and weights as `opts`).
    pub fn select_ranked(
        &self,
        ranking: &Ranking,
        opts: &SelectOptions,
        counter: &dyn TokenCounter,
    ) -> Result<SelectionResult, SelectionError> {
        let (query, ranked, focus) = (&ranking.query, &ranking.ranked, &ranking.focus);
        let budget = opts.budget;
        let mut picks: Vec<Pick> = Vec::new();
        let mut left_out: Vec<LeftOut> = Vec::new();
        let mut over = 0;
        let mut used = 0u64;
        for (i, cand) in ranked.iter().enumerate() {
            if i >= opts.max_candidates || used >= budget || picks.len() >= opts.max_documents {
                over += ranked.len() - i;
                for rest in ranked[i..]
                    .iter()
                    .take(MAX_LEFT_OUT.saturating_sub(left_out.len()))
                {
                    let (id, tokens) = self.whole_tokens(rest.num, counter)?;
                    left_out.push(LeftOut {
                        id,
                        score: rest.score,
                        tokens,
                    });
                }
                break;
            }
            let doc = self.load(cand.num)?;
            let tokens = counter
                .count(doc.content(), &doc.version())
                .map_err(SelectionError::TokenCount)?;
            if tokens == 0 {
                // An empty file tells a reader nothing.
                continue;
            }
            let remaining = budget - used;
            let share = share(budget, picks.len()).min(remaining);
            let mut regions = None;
            let shown = if tokens <= share || (!opts.degrade && tokens <= remaining) {
                Some(Shown::whole(&doc, tokens))
            } else if opts.degrade && (picks.is_empty() || share >= MIN_SHARE) {
                let floor = if picks.is_empty() { remaining } else { share };
                let cut = FileRegions::new(doc.id().as_str(), doc.content(), tokens, focus);
                let shown = view_of(&cut, &doc, tokens, share.max(floor.min(MIN_SHARE)), counter)?;
                regions = Some(cut);
                shown
            } else {
                None
            };
            if let Some(shown) = shown {
                used += shown.tokens;
                picks.push(Pick {
                    cand,
                    doc,
                    tokens,
                    shown,
                    regions,
                });
            } else {
                over += 1;
                if left_out.len() < MAX_LEFT_OUT {
                    left_out.push(LeftOut {
                        id: doc.id().clone(),
                        score: cand.score,
                        tokens,
                    });
                }
            }
        }
        // Widen the views with what is left, best candidates first.
        if opts.degrade {
            for pick in &mut picks {
                if pick.shown.view == ViewKind::Whole || used >= budget {
                    continue;
                }
                let allowance = pick.shown.tokens + (budget - used);
                let wider = if pick.tokens <= allowance {
                    Some(Shown::whole(&pick.doc, pick.tokens))
                } else if let Some(regions) = &pick.regions {
                    view_of(regions, &pick.doc, pick.tokens, allowance, counter)?
                } else {
                    None
                };
                if let Some(wider) = wider
                    && wider.tokens > pick.shown.tokens
                    && wider.tokens <= allowance
                {
                    used = used - pick.shown.tokens + wider.tokens;
                    pick.shown = wider;
                }
            }
        }
        let documents: Vec<SelectedDocument> = picks
            .into_iter()
            .map(|p| {
                let whole = p.shown.view == ViewKind::Whole;
                SelectedDocument {
                    id: p.doc.id().clone(),
                    version: p.doc.version(),
                    score: p.cand.score,
                    tokens: p.shown.tokens,
                    content: p.shown.content,
                    why: p.cand.why.clone(),
                    degraded: !whole,
                    view: p.shown.view,
                    lines: p.shown.lines,
                    file_tokens: if whole { 0 } else { p.tokens },
                }
            })
            .collect();
        let degraded_ids = documents
            .iter()
            .filter(|d| d.degraded)
            .map(|d| d.id.clone())
            .collect();
        Ok(SelectionResult {
            selection: SelectionMetadata {
                query: query.raw.clone(),
                budget,
                tokens_used: used,
                documents_considered: ranked.len(),
                documents_selected: documents.len(),
                scorer: opts.scorer.name().to_owned(),
                tokenizer: counter.name(),
                degraded: degraded_ids,
                over_budget: over,
                left_out,
                index: Some(self.name.clone()),
                cache_version: Some(self.cache_version),
            },
            documents,
        })
    }

    fn whole_tokens(
        &self,
        num: u32,
        counter: &dyn TokenCounter,
    ) -> Result<(DocumentId, u64), SelectionError> {
        let doc = self.load(num)?;
        let tokens = counter
            .count(doc.content(), &doc.version())
            .map_err(SelectionError::TokenCount)?;
        Ok((doc.id().clone(), tokens))
    }
}

/// `doc`'s view within `allowance` exact tokens, or `None` when nothing fits (a view is built
/// on estimated line costs, counted exactly, and built again smaller while over).
fn view_of(
    regions: &FileRegions,
    doc: &Document,
    tokens: u64,
    allowance: u64,
    counter: &dyn TokenCounter,
) -> Result<Option<Shown>, SelectionError> {
    if allowance == 0 {
        return Ok(None);
    }
    let mut target = allowance as f64;
    for _ in 0..4 {
        let Some(view) = regions.view(doc.content(), target) else {
            return Ok(None);
        };
        if view.kind == ViewKind::Whole {
            return Ok((tokens <= allowance).then(|| Shown::whole(doc, tokens)));
        }
        let hash = ContentHash::of(view.content.as_bytes());
        let exact = counter
            .count(&view.content, &hash)
            .map_err(SelectionError::TokenCount)?;
        if exact <= allowance {
            return Ok(Some(Shown {
                view: view.kind,
                content: view.content,
                lines: view.lines,
                tokens: exact,
            }));
        }
        target *= allowance as f64 / exact as f64 * 0.95;
    }
    Ok(None)
}

/// The smallest share worth giving a candidate (its best lines and their signatures).
const MIN_SHARE: u64 = 200;

/// The share of `budget` the candidate after `shown` others gets in the first pass.
fn share(budget: u64, shown: usize) -> u64 {
    let percent = match shown {
        0 => 45,
        1 => 20,
        _ => 10,
    };
    (budget.saturating_mul(percent) / 100).max(MIN_SHARE)
}

/// What is shown of one candidate.
struct Shown {
    view: ViewKind,
    content: String,
    lines: Vec<[u32; 2]>,
    tokens: u64,
}

impl Shown {
    fn whole(doc: &Document, tokens: u64) -> Self {
        Self {
            view: ViewKind::Whole,
            content: doc.content().to_owned(),
            lines: Vec::new(),
            tokens,
        }
    }
}

struct Pick<'r> {
    cand: &'r Ranked,
    doc: Document,
    tokens: u64,
    shown: Shown,
    regions: Option<FileRegions>,
}
