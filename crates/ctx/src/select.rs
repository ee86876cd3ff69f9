//! Index and selection as user-level operations: build, verify, inspect and list indexes
//! in the store, select context for a question (building the index on demand, incrementally
//! afterwards), `inject`, and the Claude Code hook and its installation.
//!
//! Everything returns serializable structs, so the CLI prints them and the MCP server
//! (`ctx_select`, `ctx_index_inspect`) wraps them thinly.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use crate::hooks::{HookEvent, HookInput};
use ctx_core::{ContentHash, TokenizerKind};
use ctx_select::git::{ACTIVITY_WINDOW, RepoAt};
use ctx_select::inject::ProjectFacts;
use ctx_store::{Metadata, Store, StoreKind, StoreLocation};
use serde::Serialize;

pub use crate::hooks::{DEFAULT_MAX_CHARS, parse_hook_input};
pub use ctx_select::{
    BuildReport, DEFAULT_INDEX_NAME, IndexCheck, IndexError, IndexInspection, Query, ScorerKind,
    SelectOptions, SelectedDocument, SelectionError, SelectionMetadata, SelectionResult,
    SelectionWhy, Signal, VerifyReport, Weights,
};

use crate::error::CtxError;

impl From<SelectionError> for CtxError {
    fn from(err: SelectionError) -> Self {
        match err {
            SelectionError::Index(index) => Self::Index(index),
            other => Self::Selection(other),
        }
    }
}

/// Where selection runs and with what settings.
pub struct SelectContext<'a> {
    pub store: &'a Store,
    /// Document ids are relative to this directory.
    pub root: PathBuf,
    /// The index used when none is named.
    pub default_index: String,
    pub tokenizer: TokenizerKind,
    pub max_file_bytes: u64,
    /// Redacts every document before it is indexed (the built-in rules plus the project's),
    /// so the index on disk and every selection hold no secret.
    pub redactor: ctx_core::redact::Redactor,
    /// Unix seconds (the manifest's `created_at`, "2h ago" in `[RECENT: …]`).
    pub now: i64,
    /// Told how index builds advance (`NoProgress` for servers and tests).
    pub progress: &'a dyn ctx_core::Progress,
    /// Keeps the workspace index current while a server runs (`None`: each selection
    /// brings it up to date with a walk of the tree).
    pub keeper: Option<&'a crate::IndexKeeper>,
}

/// The workspace an index covers and its default name: the project root and `default` for a
/// project (or explicit) store; for the global store, the git working tree around `cwd` (else
/// `cwd`) and a name made from its directory name and a hash of its path, so projects sharing
/// the global store keep separate indexes.
pub fn workspace(location: &StoreLocation, cwd: &Path) -> (PathBuf, String) {
    match &location.kind {
        StoreKind::Global => {
            let root = RepoAt::discover(cwd).map_or_else(|| cwd.to_owned(), |r| r.workdir());
            let root = root.canonicalize().unwrap_or(root);
            let name = workspace_index_name(&root);
            (root, name)
        }
        _ => (
            crate::packs::sources_root(location, cwd),
            DEFAULT_INDEX_NAME.to_owned(),
        ),
    }
}

/// The index name for a workspace at `root` in a store shared by several workspaces: its
/// directory name (made safe for index names) and the first 8 hex digits of the hash of its
/// path, so two workspaces never share an index by accident.
pub fn workspace_index_name(root: &Path) -> String {
    let base: String = root
        .file_name()
        .map_or_else(|| "root".to_owned(), |n| n.to_string_lossy().into_owned())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let base = base.trim_start_matches(['-', '_']);
    let base = if base.is_empty() { "root" } else { base };
    let hash = ContentHash::of(root.to_string_lossy().as_bytes()).to_hex();
    format!("{base}-{}", &hash[..8])
}

/// The selected files as text, the way `ctx select` prints them and `ctx_select` pages them:
/// `## path` (with what is shown when less than the whole file), then the content in a fence
/// named after the extension and longer than any backtick run inside it; last, the files
/// left out, with their sizes.
pub fn render_documents(result: &SelectionResult) -> String {
    let mut out = String::new();
    for doc in &result.documents {
        let id = doc.id.as_str();
        let ext = id.rsplit_once('.').map_or("", |(_, e)| e);
        let fence = ctx_select::inject::fence_for(&doc.content);
        let _ = writeln!(out, "## {id}{}", doc.label());
        let _ = writeln!(out, "{fence}{ext}");
        out.push_str(&doc.content);
        if !doc.content.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{fence}\n");
    }
    let meta = &result.selection;
    if !meta.left_out.is_empty() {
        let listed: Vec<String> = meta
            .left_out
            .iter()
            .map(|l| format!("{} ({} tokens)", l.id, l.tokens))
            .collect();
        let more = meta.over_budget.saturating_sub(listed.len());
        let _ = write!(out, "Not shown (over budget): {}", listed.join(", "));
        if more > 0 {
            let _ = write!(out, ", and {more} more");
        }
        out.push_str(".\n");
    }
    out
}

/// The store's index directory.
pub fn indexes_dir(store: &Store) -> PathBuf {
    store.dir().join("indexes")
}

/// The store's token-count cache as a [`ctx_select::TokenCounter`]: exact counts, computed
/// once per content hash.
pub struct CachedTokenCounter<'a> {
    pub db: Option<&'a dyn Metadata>,
    pub tokenizer: TokenizerKind,
}

impl ctx_select::TokenCounter for CachedTokenCounter<'_> {
    fn name(&self) -> String {
        self.tokenizer.name().to_owned()
    }

    fn count(&self, text: &str, hash: &ContentHash) -> Result<u64, ctx_core::BoxError> {
        if let Some(db) = self.db
            && self.tokenizer.is_exact()
        {
            if let Some(n) = db.cached_token_count(hash, self.tokenizer)? {
                return Ok(n);
            }
            let n = self.tokenizer.count(text) as u64;
            db.cache_token_counts(self.tokenizer, &[(*hash, n)])?;
            return Ok(n);
        }
        Ok(self.tokenizer.count(text) as u64)
    }
}

fn relative_id(root: &Path, cwd: &Path, path: &Path) -> Result<String, CtxError> {
    let full = cwd.join(path);
    let full = full.canonicalize().map_err(|e| {
        CtxError::InvalidInput(format!(
            "`{}`: {e}; name an existing file or directory",
            path.display()
        ))
    })?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let rel = full.strip_prefix(&root).map_err(|_| {
        CtxError::InvalidInput(format!(
            "`{}` is outside the workspace {}; name a path inside it",
            path.display(),
            root.display()
        ))
    })?;
    Ok(rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/"))
}

/// Builds (incrementally unless `force`) index `name` over `paths` (relative to `cwd`; the
/// whole workspace when empty).
pub fn build(
    cx: &SelectContext<'_>,
    name: Option<&str>,
    cwd: &Path,
    paths: &[PathBuf],
    force: bool,
) -> Result<BuildReport, CtxError> {
    let ids = paths
        .iter()
        .map(|p| relative_id(&cx.root, cwd, p))
        .collect::<Result<Vec<_>, _>>()?;
    let name = name.unwrap_or(&cx.default_index);
    build_with(cx, name, ids, force)
}

fn build_with(
    cx: &SelectContext<'_>,
    name: &str,
    ids: Vec<String>,
    force: bool,
) -> Result<BuildReport, CtxError> {
    let source = ctx_select::FilesystemSource::new(&cx.root, ids, cx.max_file_bytes)
        .with_redactor(cx.redactor.clone());
    let repo = RepoAt::discover(&cx.root);
    let opts = ctx_select::BuildOptions {
        name: name.to_owned(),
        force,
        canonicalize: ctx_select::CanonicalizeOptions::default(),
        policy: ctx_select::ErrorPolicy::SkipAndWarn,
        created_at: ctx_code::time::rfc3339(cx.now),
        root: Some(cx.root.clone()),
        git_head: repo.as_ref().and_then(RepoAt::head),
    };
    let commits = || -> BTreeMap<String, u32> {
        repo.as_ref()
            .map(|r| r.activity(ACTIVITY_WINDOW))
            .unwrap_or_default()
    };
    Ok(ctx_select::build_index_with_progress(
        &indexes_dir(cx.store),
        &source,
        &opts,
        &commits,
        cx.progress,
    )?)
}

/// Brings index `name` up to date: built over the workspace if missing, else rebuilt
/// incrementally with its own paths (a no-op when nothing changed).
pub fn ensure_index(cx: &SelectContext<'_>, name: &str) -> Result<BuildReport, CtxError> {
    ctx_select::index::validate_index_name(name)?;
    let dir = indexes_dir(cx.store).join(name);
    if cx.store.db().is_read_only() {
        // Nothing can be written: the index is used as it was last built.
        if !dir.is_dir() {
            return Err(ctx_store::StoreError::ReadOnly {
                path: cx.store.dir().to_owned(),
            }
            .into());
        }
        return built_index(cx, name);
    }
    build_with(cx, name, built_paths(&dir, name)?, false)
}

/// The paths index `name` at `dir` was built over (none: the whole workspace, also when
/// it is not built yet).
fn built_paths(dir: &Path, name: &str) -> Result<Vec<String>, CtxError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    Ok(ctx_select::index::built_config(dir, name)?
        .source
        .get("paths")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

/// Index `name` as it was last built, not brought up to date (nothing is walked).
pub fn built_index(cx: &SelectContext<'_>, name: &str) -> Result<BuildReport, CtxError> {
    ctx_select::index::validate_index_name(name)?;
    let dir = indexes_dir(cx.store).join(name);
    let manifest = ctx_select::index::read_manifest(&dir, name)?;
    Ok(BuildReport {
        name: name.to_owned(),
        path: dir,
        cache_version: manifest.cache_version,
        documents: manifest.documents.len(),
        read: 0,
        reused: manifest.documents.len(),
        removed: 0,
        up_to_date: true,
        skipped: Vec::new(),
    })
}

/// Whether a selection brings its index up to date first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexUpdate {
    /// Update it (a walk of the workspace) before selecting: `select`, `inject`, MCP.
    Now,
    /// Select from the index as last built; the caller updates it elsewhere (the hook's
    /// background worker), so a prompt never waits for a walk of a large tree.
    Elsewhere,
}

/// A selection and the index update that preceded it.
#[derive(Debug, Clone, Serialize)]
pub struct SelectOutcome {
    pub build: BuildReport,
    pub result: SelectionResult,
}

impl SelectOutcome {
    /// The selected files as text ([`render_documents`]).
    pub fn text(&self) -> String {
        render_documents(&self.result)
    }
}

/// Selects context for `query` from index `name` (the default index when `None`), building
/// or updating it first.
pub fn select(
    cx: &SelectContext<'_>,
    name: Option<&str>,
    query: &Query,
    opts: &SelectOptions,
) -> Result<SelectOutcome, CtxError> {
    select_with(cx, name, query, opts, IndexUpdate::Now)
}

/// [`select`], updating the index first or not ([`IndexUpdate`]).
pub fn select_with(
    cx: &SelectContext<'_>,
    name: Option<&str>,
    query: &Query,
    opts: &SelectOptions,
    update: IndexUpdate,
) -> Result<SelectOutcome, CtxError> {
    let name = resolve_index(cx, name)?;
    let counter = CachedTokenCounter {
        db: Some(cx.store.db()),
        tokenizer: cx.tokenizer,
    };
    if update == IndexUpdate::Now
        && let Some(keeper) = kept(cx, &name)
    {
        return keeper.with_index(cx.progress, |index, build| {
            Ok(SelectOutcome {
                build: build.clone(),
                result: index.select(query, opts, &counter)?,
            })
        });
    }
    let build = match update {
        IndexUpdate::Now => ensure_index(cx, &name)?,
        IndexUpdate::Elsewhere => built_index(cx, &name)?,
    };
    let index = ctx_select::OpenIndex::open(&indexes_dir(cx.store), &name)?;
    let result = index.select(query, opts, &counter)?;
    Ok(SelectOutcome { build, result })
}

/// The keeper of index `name`, when one keeps it and the store can be written.
fn kept<'a>(cx: &SelectContext<'a>, name: &str) -> Option<&'a crate::IndexKeeper> {
    cx.keeper
        .filter(|k| k.name() == name && !cx.store.db().is_read_only())
}

/// A selection for an agent's answer: the documents and their rendered payload
/// ([`render_documents`]), which holds at most `budget` tokens with its `## path` lines and
/// fences (the selection's own budget counts the files' text only). While the payload is
/// over, it selects again from the same index with the budget less the excess (a few times),
/// then drops documents from the end; the outcome reports `budget` as asked.
pub fn select_payload(
    cx: &SelectContext<'_>,
    name: Option<&str>,
    parsed: &Query,
    budget: u64,
) -> Result<(SelectOutcome, String), CtxError> {
    let name = resolve_index(cx, name)?;
    if let Some(keeper) = kept(cx, &name) {
        return keeper.with_index(cx.progress, |index, build| {
            payload(cx, index, build.clone(), parsed, budget)
        });
    }
    let build = ensure_index(cx, &name)?;
    let index = ctx_select::OpenIndex::open(&indexes_dir(cx.store), &name)?;
    payload(cx, &index, build, parsed, budget)
}

fn payload(
    cx: &SelectContext<'_>,
    index: &ctx_select::OpenIndex,
    build: BuildReport,
    parsed: &Query,
    budget: u64,
) -> Result<(SelectOutcome, String), CtxError> {
    let counter = CachedTokenCounter {
        db: Some(cx.store.db()),
        tokenizer: cx.tokenizer,
    };
    let mut inner = budget;
    // Ranked once; each try fills a smaller budget from the same ranking.
    let ranking = index.ranking(parsed, &prompt_options(inner))?;
    let mut result = index.select_ranked(&ranking, &prompt_options(inner), &counter)?;
    let mut payload = render_documents(&result);
    for _ in 0..4 {
        let tokens = cx.tokenizer.count(&payload) as u64;
        if tokens <= budget || inner == 0 {
            break;
        }
        inner = inner.saturating_sub(tokens - budget);
        result = index.select_ranked(&ranking, &prompt_options(inner), &counter)?;
        payload = render_documents(&result);
    }
    while cx.tokenizer.count(&payload) as u64 > budget && !result.documents.is_empty() {
        result.keep_first(result.documents.len() - 1);
        payload = render_documents(&result);
    }
    result.selection.budget = budget;
    Ok((SelectOutcome { build, result }, payload))
}

/// What a keeper of index `name` needs: the source its builds list (the paths it was built
/// over, as [`ensure_index`] reads them), and where it lives.
pub(crate) fn keeper_setup(
    cx: &SelectContext<'_>,
    clock: crate::Clock,
) -> Result<crate::keeper::KeeperSetup, CtxError> {
    let name = cx.default_index.clone();
    let ids = built_paths(&indexes_dir(cx.store).join(&name), &name)?;
    Ok(crate::keeper::KeeperSetup {
        root: cx.root.canonicalize().unwrap_or_else(|_| cx.root.clone()),
        indexes_dir: indexes_dir(cx.store),
        name,
        source: ctx_select::FilesystemSource::new(&cx.root, ids, cx.max_file_bytes)
            .with_redactor(cx.redactor.clone()),
        clock,
        on_update: None,
        max_documents: crate::keeper::MAX_KEPT_DOCUMENTS,
    })
}

/// The index a selection reads: the workspace index when none is named (built on demand);
/// a named one must exist and have been built over this workspace, so a mistyped name is
/// refused instead of building a new index under it.
pub fn resolve_index(cx: &SelectContext<'_>, name: Option<&str>) -> Result<String, CtxError> {
    let Some(name) = name else {
        return Ok(cx.default_index.clone());
    };
    if name == cx.default_index {
        return Ok(name.to_owned());
    }
    let indexes = list(cx.store)?;
    let Some(found) = indexes.iter().find(|i| i.name == name) else {
        return Err(CtxError::UnknownIndex {
            name: name.to_owned(),
            known: indexes.into_iter().map(|i| i.name).collect(),
            default: cx.default_index.clone(),
        });
    };
    if let Some(built) = &found.root {
        let built_path = Path::new(built);
        let root = cx.root.canonicalize().unwrap_or_else(|_| cx.root.clone());
        if built_path.canonicalize().ok().as_deref() != Some(root.as_path()) {
            return Err(CtxError::ForeignIndex {
                name: name.to_owned(),
                built: built.clone(),
                root: root.display().to_string(),
                default: cx.default_index.clone(),
            });
        }
    }
    Ok(name.to_owned())
}

/// Runs every check on index `name`.
pub fn verify(store: &Store, name: &str) -> Result<VerifyReport, CtxError> {
    ctx_select::index::validate_index_name(name)?;
    Ok(ctx_select::verify_index(
        &indexes_dir(store).join(name),
        name,
    )?)
}

/// Counts, size, version and validity of index `name`.
pub fn inspect(store: &Store, name: &str) -> Result<IndexInspection, CtxError> {
    ctx_select::index::validate_index_name(name)?;
    Ok(ctx_select::inspect_index(
        &indexes_dir(store).join(name),
        name,
    )?)
}

/// One index in the store.
#[derive(Debug, Clone, Serialize)]
pub struct IndexSummary {
    pub name: String,
    pub documents: usize,
    pub created_at: String,
    pub cache_version: Option<ContentHash>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Why it cannot be read, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The store's indexes, by name.
pub fn list(store: &Store) -> Result<Vec<IndexSummary>, CtxError> {
    let dir = indexes_dir(store);
    let mut out = Vec::new();
    let Ok(listing) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    let mut names: Vec<String> = listing
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    for name in names {
        let path = dir.join(&name);
        match ctx_select::index::read_manifest(&path, &name) {
            Ok(m) => {
                let root = ctx_select::index::SearchDb::open(
                    &path.join(ctx_select::index::SEARCH_DB_FILE),
                    &name,
                )
                .ok()
                .and_then(|db| db.root().map(str::to_owned));
                if !store.sees(root.as_deref()) {
                    // Another workspace's index in a shared store.
                    continue;
                }
                out.push(IndexSummary {
                    name,
                    documents: m.documents.len(),
                    created_at: m.created_at,
                    cache_version: Some(m.cache_version),
                    root,
                    problem: None,
                });
            }
            Err(e) => out.push(IndexSummary {
                name,
                documents: 0,
                created_at: String::new(),
                cache_version: None,
                root: None,
                problem: Some(e.to_string()),
            }),
        }
    }
    Ok(out)
}

/// Project facts for `[CTX: …]` and `[RECENT: …]`.
pub fn project_facts(root: &Path, now: i64) -> ProjectFacts {
    let repo = RepoAt::discover(root);
    let project = root
        .file_name()
        .map_or_else(|| "/".to_owned(), |n| n.to_string_lossy().into_owned());
    ProjectFacts {
        project,
        language: ctx_code::lang::detect_project_type(root).map(str::to_owned),
        branch: repo.as_ref().map(RepoAt::branch),
        recent: repo
            .as_ref()
            .map(|r| {
                r.recent_files(3)
                    .into_iter()
                    .map(|(path, t)| (path, ctx_code::time::ago(now - t)))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// What `inject` produced.
#[derive(Debug, Clone, Serialize)]
pub struct Injection {
    /// The context lines and snippets (without the prompt).
    pub context: String,
    /// Context, separator and prompt: what goes to the model.
    pub text: String,
    /// The selection behind the `[RELEVANT: …]` lines and snippets (`None` when the prompt
    /// has no code subject).
    pub selection: Option<SelectionResult>,
}

/// Builds the injected context for `prompt` within `budget` tokens (lines first, snippets
/// in the rest); none when the prompt has no code subject or nothing relevant enough.
pub fn inject(
    cx: &SelectContext<'_>,
    name: Option<&str>,
    prompt: &str,
    budget: u64,
) -> Result<Injection, CtxError> {
    let context = prompt_context(cx, name, prompt, budget)?;
    let text = context.block();
    let injected = ctx_select::inject::inject(&text, prompt);
    Ok(Injection {
        context: text,
        text: injected,
        selection: context.result,
    })
}

/// The context for a prompt: its lines (`[CTX]`, `[RECENT]`, `[RELEVANT]`, `[KEYWORDS]`) and
/// the selected documents shown as snippets. Empty when the prompt is small talk or an
/// instruction without a code subject, or when no file is relevant enough ([`relevant`]).
#[derive(Debug, Clone, Default)]
pub struct PromptContext {
    pub lines: Vec<String>,
    /// The selection (`None` when the prompt has no code subject); its documents are the
    /// snippets.
    pub result: Option<SelectionResult>,
}

impl PromptContext {
    /// Whether there is anything to inject.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The lines, then the snippets, as one block.
    pub fn block(&self) -> String {
        match &self.result {
            Some(result) if !self.lines.is_empty() => ctx_select::inject::context_block(
                &self.lines,
                &ctx_select::inject::snippets(result),
            ),
            _ => ctx_select::inject::context_block(&self.lines, ""),
        }
    }
}

/// Signals that tie a file to the prompt by name: it is named, it defines an identifier the
/// prompt names, a dotted name spells its module, it holds a quoted message.
const NAMING_SIGNALS: &[&str] = &[
    "definition",
    "filename_mentioned",
    "message",
    "module_path",
    "path_mentioned",
    "qualified_definition",
];

/// Whether the selection is relevant enough to put in front of the prompt: one of its best
/// [`GATE_DEPTH`] documents has a naming signal ([`NAMING_SIGNALS`]), or holds at least
/// `min(2, n)` of the prompt's `n` subject terms ([`ctx_select::text::subject_terms`]) in its
/// text or path. A single common word shared with some file is not a reason to speak.
/// Calibrated on `tests/hook-prompts` (README, "Hooks").
pub fn relevant(subject: &[String], result: &SelectionResult) -> bool {
    let need = subject.len().min(2);
    result.documents.iter().take(GATE_DEPTH).any(|doc| {
        if doc
            .why
            .signals
            .iter()
            .any(|s| NAMING_SIGNALS.contains(&s.name.as_str()))
        {
            return true;
        }
        let mut path_terms = Vec::new();
        ctx_select::text::terms(doc.id.as_str(), |t| path_terms.push(t.to_owned()));
        let matched = subject
            .iter()
            .filter(|t| doc.why.term_matches.contains_key(*t) || path_terms.contains(t))
            .count();
        matched >= need
    })
}

/// How many of the best documents [`relevant`] looks at.
const GATE_DEPTH: usize = 3;

/// The context for `prompt` within `budget` tokens (lines first, snippets in the rest).
pub fn prompt_context(
    cx: &SelectContext<'_>,
    name: Option<&str>,
    prompt: &str,
    budget: u64,
) -> Result<PromptContext, CtxError> {
    prompt_context_with(cx, name, prompt, budget, IndexUpdate::Now)
}

/// [`prompt_context`], updating the index first or not ([`IndexUpdate`]).
pub fn prompt_context_with(
    cx: &SelectContext<'_>,
    name: Option<&str>,
    prompt: &str,
    budget: u64,
    update: IndexUpdate,
) -> Result<PromptContext, CtxError> {
    let subject = ctx_select::text::subject_terms(prompt);
    if subject.is_empty() || budget == 0 {
        return Ok(PromptContext::default());
    }
    // The one selection: the same call, options and ranking as `ctx select --budget N` and
    // `ctx_select`; the lines and snippets are its first documents.
    let opts = SelectOptions {
        max_documents: MAX_INJECTED_FILES,
        ..prompt_options(budget)
    };
    let outcome = select_with(cx, name, &Query::parse(prompt)?, &opts, update)?;
    let mut result = outcome.result;
    if !relevant(&subject, &result) {
        result.documents.clear();
        return Ok(PromptContext {
            lines: Vec::new(),
            result: Some(result),
        });
    }
    result.keep_first(MAX_INJECTED_FILES);
    let facts = project_facts(&cx.root, cx.now);
    let keywords: Vec<String> = ctx_select::text::keywords(prompt)
        .into_iter()
        .take(10)
        .collect();
    let mut lines = ctx_select::inject::header_lines(&facts, &keywords);
    let counter = CachedTokenCounter {
        db: Some(cx.store.db()),
        tokenizer: cx.tokenizer,
    };
    let count = |text: &str| -> Result<u64, CtxError> {
        ctx_select::TokenCounter::count(&counter, text, &ContentHash::of(text.as_bytes()))
            .map_err(|err| CtxError::Selection(SelectionError::TokenCount(err)))
    };
    let mut relevant = ctx_select::inject::relevant_lines(&result);
    let at = lines
        .len()
        .saturating_sub(usize::from(!keywords.is_empty()));
    relevant.extend(ctx_select::inject::left_out_line(&result));
    for (i, line) in relevant.into_iter().enumerate() {
        lines.insert(at + i, line);
    }
    let mut snippets = ctx_select::inject::snippets(&result);
    // The lines take room too: leave snippets out from the end until everything fits.
    while count(&ctx_select::inject::context_block(&lines, &snippets))? > budget
        && !result.documents.is_empty()
    {
        result.keep_first(result.documents.len() - 1);
        snippets = ctx_select::inject::snippets(&result);
    }
    Ok(PromptContext {
        lines,
        result: Some(result),
    })
}

/// Files named and shown in front of a prompt, at most.
pub const MAX_INJECTED_FILES: usize = 5;

/// The selection options every front end uses for a prompt and a budget (`ctx select`,
/// `ctx inject`, the Claude Code hook, MCP `ctx_select`), so they rank alike.
pub fn prompt_options(budget: u64) -> SelectOptions {
    SelectOptions {
        budget,
        ..SelectOptions::default()
    }
}

/// How the Claude Code hook answers: the token budget of a prompt's context and the most
/// characters of its whole output.
#[derive(Debug, Clone, Copy)]
pub struct HookLimits {
    pub budget: u64,
    pub max_chars: usize,
}

/// The hook's answer to Claude Code's input `input` (already parsed): the JSON to print, at
/// most `limits.max_chars` characters in all ([`crate::hooks::fit_output`]), from the
/// workspace index brought up to date first or not (`update`).
pub fn hook_answer(
    cx: &SelectContext<'_>,
    input: &HookInput,
    limits: HookLimits,
    update: IndexUpdate,
) -> Result<serde_json::Value, CtxError> {
    let context = match &input.event {
        HookEvent::UserPromptSubmit { prompt } => {
            prompt_context_with(cx, None, prompt, limits.budget, update)?
        }
        HookEvent::SessionStart { .. } => PromptContext {
            lines: session_lines(cx),
            result: None,
        },
    };
    let documents = context
        .result
        .as_ref()
        .map_or(&[][..], |r| r.documents.as_slice());
    Ok(crate::hooks::fit_output(
        &input.event,
        &context.lines,
        documents,
        limits.max_chars,
    ))
}

/// The hook's answer without the index (a session start, which needs none; a prompt while
/// the index is cold or being built, which gets nothing): the project lines of a session
/// start, nothing for a prompt.
pub fn hook_answer_without_index(
    cx: &SelectContext<'_>,
    input: &HookInput,
    limits: HookLimits,
) -> serde_json::Value {
    let lines = match &input.event {
        HookEvent::UserPromptSubmit { .. } => Vec::new(),
        HookEvent::SessionStart { .. } => session_lines(cx),
    };
    crate::hooks::fit_output(&input.event, &lines, &[], limits.max_chars)
}

fn session_lines(cx: &SelectContext<'_>) -> Vec<String> {
    let facts = project_facts(&cx.root, cx.now);
    let mut lines = ctx_select::inject::header_lines(&facts, &[]);
    if let Some(repo) = RepoAt::discover(&cx.root) {
        for (id, subject, t) in repo.recent_commits(5) {
            // A commit message can hold a secret (a token pasted into it): redacted as
            // every file is.
            let subject = cx.redactor.redact(&subject).text;
            lines.push(format!(
                "[COMMIT: {id} {subject} ({})]",
                ctx_code::time::ago(cx.now - t)
            ));
        }
    }
    lines.push(
        "[TOOLS: `ctx select \"<question>\" --budget 8000` gives the files relevant to a question with reasons; `ctx search`, `ctx related FILE`, `ctx summarize PATH --skeleton`]"
            .to_owned(),
    );
    lines
}

/// Whether an index can answer at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexReadiness {
    /// Built (a build may be updating it: readers wait only for its swap).
    Ready,
    /// Never built, and no build of it is running.
    Missing,
    /// Never built, and a build is running (in the background or another process).
    Building,
}

/// Whether index `name` of `store` can answer ([`IndexReadiness`]). Takes no lock.
pub fn index_readiness(store: &Store, name: &str) -> Result<IndexReadiness, CtxError> {
    ctx_select::index::validate_index_name(name)?;
    let dir = indexes_dir(store);
    if dir
        .join(name)
        .join(ctx_select::index::MANIFEST_FILE)
        .is_file()
    {
        return Ok(IndexReadiness::Ready);
    }
    if background_build_running(store, name) || ctx_select::index::is_building(&dir, name) {
        return Ok(IndexReadiness::Building);
    }
    Ok(IndexReadiness::Missing)
}

/// The lock a background build of index `name` holds while it runs.
fn background_lock_path(store: &Store, name: &str) -> PathBuf {
    indexes_dir(store).join(format!(".{name}.background.lock"))
}

/// Whether a background build of index `name` is running.
fn background_build_running(store: &Store, name: &str) -> bool {
    let Ok(file) = std::fs::File::open(background_lock_path(store, name)) else {
        return false;
    };
    file.try_lock().is_err()
}

/// Claims the background build of index `name`: the lock, held until the returned file is
/// dropped (or the process ends), or `None` when another process holds it, so two prompts
/// arriving together never build twice.
pub fn claim_background_build(
    store: &Store,
    name: &str,
) -> Result<Option<std::fs::File>, CtxError> {
    ctx_select::index::validate_index_name(name)?;
    let path = background_lock_path(store, name);
    let io = |source: std::io::Error| {
        CtxError::from(IndexError::Io {
            path: path.clone(),
            source,
        })
    };
    std::fs::create_dir_all(indexes_dir(store)).map_err(io)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    Ok(file.try_lock().is_ok().then_some(file))
}

/// Files and bytes of a tree, counted up to a bound ([`bounded_tree_size`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeSize {
    pub files: u64,
    pub bytes: u64,
    /// The bound was passed (and the counting stopped there).
    pub over: bool,
}

/// Files (and their bytes) a build of the workspace at `root` would walk, counted until more
/// than `max_files` files or `max_bytes` bytes are seen, where the walk stops.
pub fn bounded_tree_size(
    root: &Path,
    max_files: u64,
    max_bytes: u64,
) -> Result<TreeSize, CtxError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let files = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    ctx_fs::walk_until(root, &ctx_fs::WalkOptions::default(), |entry| {
        let f = files.fetch_add(1, Ordering::Relaxed) + 1;
        let b = bytes.fetch_add(entry.size, Ordering::Relaxed) + entry.size;
        if f > max_files || b > max_bytes {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(None::<()>)
        }
    })
    .map_err(|e| CtxError::InvalidInput(format!("{}: {e}", root.display())))?;
    let (files, bytes) = (files.into_inner(), bytes.into_inner());
    Ok(TreeSize {
        files,
        bytes,
        over: files > max_files || bytes > max_bytes,
    })
}

/// What `hook install` changed.
#[derive(Debug, Clone, Serialize)]
pub struct HookInstall {
    pub settings_path: PathBuf,
    pub settings_changed: bool,
    pub mcp_path: PathBuf,
    pub mcp_changed: bool,
}

/// Where Claude Code hooks go: the team-shared `.claude/settings.json`, or with `local`
/// the personal `.claude/settings.local.json`.
fn claude_settings_path(root: &Path, local: bool) -> PathBuf {
    root.join(".claude").join(if local {
        "settings.local.json"
    } else {
        "settings.json"
    })
}

fn read_optional(path: &Path) -> Result<Option<String>, CtxError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CtxError::InvalidInput(format!("{}: {e}", path.display()))),
    }
}

/// The command lines Claude Code is told to run, as the front end spells them.
#[derive(Debug, Clone)]
pub struct HookCommands {
    /// What each hook runs (the CLI: `ctx hook claude-code`).
    pub hook: String,
    /// The MCP server's program (the CLI: `ctx`) ...
    pub mcp_program: String,
    /// ... and its arguments (the CLI: `mcp`).
    pub mcp_args: Vec<String>,
}

/// Merges ctx's hooks into `<root>/.claude/settings.json` (with `local`,
/// `settings.local.json`) and, unless `local`, its MCP server into `<root>/.mcp.json`,
/// keeping every existing entry; running it twice changes nothing.
pub fn install_claude_code(
    root: &Path,
    commands: &HookCommands,
    local: bool,
) -> Result<HookInstall, CtxError> {
    let settings_path = claude_settings_path(root, local);
    let mcp_path = root.join(".mcp.json");
    let (settings, settings_changed) = crate::hooks::merge_claude_settings(
        read_optional(&settings_path)?.as_deref(),
        &commands.hook,
    )
    .map_err(|e| CtxError::InvalidInput(e.to_string()))?;
    if settings_changed {
        write_atomic(&settings_path, settings.as_bytes())?;
    }
    let mut mcp_changed = false;
    if !local {
        let args: Vec<&str> = commands.mcp_args.iter().map(String::as_str).collect();
        let (mcp, changed) = crate::hooks::merge_mcp_config(
            read_optional(&mcp_path)?.as_deref(),
            &commands.mcp_program,
            &args,
        )
        .map_err(|e| CtxError::InvalidInput(e.to_string()))?;
        if changed {
            write_atomic(&mcp_path, mcp.as_bytes())?;
        }
        mcp_changed = changed;
    }
    Ok(HookInstall {
        settings_path,
        settings_changed,
        mcp_path,
        mcp_changed,
    })
}

/// Undoes [`install_claude_code`]: removes the hooks that run `commands.hook` from both
/// settings files and the `ctx` MCP server from `.mcp.json` (if it runs
/// `commands.mcp_program`), keeping every other entry. Files that did not hold them are not
/// written.
pub fn uninstall_claude_code(
    root: &Path,
    commands: &HookCommands,
) -> Result<Vec<(PathBuf, bool)>, CtxError> {
    let hook_command = &commands.hook;
    let mut report = Vec::new();
    for local in [false, true] {
        let path = claude_settings_path(root, local);
        let Some(text) = read_optional(&path)? else {
            continue;
        };
        let (settings, changed) = crate::hooks::remove_claude_settings(&text, hook_command)
            .map_err(|e| CtxError::InvalidInput(e.to_string()))?;
        if changed {
            write_atomic(&path, settings.as_bytes())?;
        }
        report.push((path, changed));
    }
    let mcp_path = root.join(".mcp.json");
    if let Some(text) = read_optional(&mcp_path)? {
        let (mcp, changed) = crate::hooks::remove_mcp_config(&text, &commands.mcp_program)
            .map_err(|e| CtxError::InvalidInput(e.to_string()))?;
        if changed {
            write_atomic(&mcp_path, mcp.as_bytes())?;
        }
        report.push((mcp_path, changed));
    }
    Ok(report)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CtxError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let fail = |e: std::io::Error| CtxError::InvalidInput(format!("{}: {e}", path.display()));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
