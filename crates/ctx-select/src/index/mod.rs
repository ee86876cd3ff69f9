//! The seed 003 document cache ("index"): a directory holding
//!
//! ```text
//! indexes/<name>/
//!   manifest.json          format version, cache version, created_at, config, documents (sorted)
//!   index.json             { document id: file name } (sorted, flat)
//!   documents/<12 hex>.json  one serialized Document each; the name is SHA-256(id)[..12]
//!   search.db              SQLite sidecar: fingerprints, per-field postings, import graph
//! ```
//!
//! A build writes a temporary directory and swaps it in atomically, so readers see the old
//! index or the new one, never a mix. Rebuilds are incremental: with nothing changed the
//! build returns at once without writing; with few entries changed (at most a quarter of the
//! documents, and 2,000) the index is updated in place ([`update`]: only those entries are
//! read, and only the rows, posting lists and graph edges they move are rewritten); with more,
//! a new directory is written in which entries whose fingerprint is unchanged are reused
//! (their document files hard-linked, their analysis copied) without being read.

mod db;
mod live;
mod postings;
#[cfg(test)]
mod tests;
mod update;
pub(crate) mod verify;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use ctx_core::{ContentHash, Document, DocumentId, NoProgress, Progress};
use serde::{Deserialize, Serialize};

pub(crate) use db::stored_cache_version;
use db::stored_config;
pub use db::{DocRow, SearchDb};
pub use live::LiveIndex;
pub use verify::{IndexCheck, IndexInspection, VerifyReport, inspect_index, verify_index};

use crate::analyze::{
    ANALYZER_VERSION, Analysis, FIELDS, Field, analyze, encode_fields, put_varint, visit_terms,
};
use crate::canonicalize::CanonicalizeOptions;
use crate::error::IndexError;
use crate::graph::{GraphBuilder, definer_term};
use crate::source::{DocumentSource, ErrorPolicy, ingest_raw};

/// The index layout version this ctx writes and reads.
/// 3: `search.db` keeps the lists of documents defining each term and the import edges
/// apart, which updates in place need.
pub const FORMAT_VERSION: u32 = 3;
/// The index `ctx select` and `ctx index build` use when none is named.
pub const DEFAULT_INDEX_NAME: &str = "default";
/// File names inside an index directory.
pub const MANIFEST_FILE: &str = "manifest.json";
pub const INDEX_FILE: &str = "index.json";
pub const DOCUMENTS_DIR: &str = "documents";
pub const SEARCH_DB_FILE: &str = "search.db";

/// Everything that shapes an index besides its documents; part of the cache version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheBuildConfig {
    /// The source's own settings (kind, paths, limits).
    pub source: serde_json::Value,
    pub canonicalize: CanonicalizeOptions,
    /// [`ANALYZER_VERSION`]: a new analyzer re-analyzes everything.
    pub analyzer: u32,
}

/// One document in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub id: DocumentId,
    pub version: ContentHash,
    /// The document's file in `documents/`.
    pub file: String,
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheManifest {
    pub format_version: u32,
    /// SHA-256 over the config and the sorted `id:version` pairs; `created_at` is excluded,
    /// so the same inputs always give the same cache version.
    pub cache_version: ContentHash,
    /// When the build ran (RFC 3339, informational only).
    pub created_at: String,
    pub config: CacheBuildConfig,
    /// Sorted by id.
    pub documents: Vec<ManifestEntry>,
}

/// `index.json`: document id → file name, as a flat sorted map.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CacheIndex(pub BTreeMap<DocumentId, String>);

/// The cache version: SHA-256 of the canonical JSON of `config`, then for each document in
/// id order a newline and `id:version`.
pub fn cache_version(config: &CacheBuildConfig, documents: &[ManifestEntry]) -> ContentHash {
    let mut hasher = ctx_core::ContentHasher::new();
    hasher.update(&ctx_core::canonical::to_vec(config).expect("config is plain JSON"));
    for entry in documents {
        hasher.update(b"\n");
        hasher.update(entry.id.as_str().as_bytes());
        hasher.update(b":");
        hasher.update(entry.version.to_string().as_bytes());
    }
    hasher.finish()
}

/// A document's file name stem: the first 12 hex digits of the SHA-256 of its id. (Of the
/// id, not the content: identical files, such as empty `__init__.py`, are common.)
pub fn document_file_stem(id: &DocumentId) -> String {
    let mut hex = ContentHash::of(id.as_str().as_bytes()).to_hex();
    hex.truncate(12);
    hex
}

/// Index names: letters, digits, `.`, `_`, `-`, starting with a letter or digit.
pub fn validate_index_name(name: &str) -> Result<(), IndexError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(IndexError::InvalidName(name.to_owned()))
    }
}

/// What bounds a build's memory. A build reads, analyzes and writes its documents a chunk at
/// a time (analyzed in parallel, then written in id order into `search.db` and the posting
/// lists), and spills posting lists to sorted run files once they hold `postings_bytes`, so
/// neither documents nor term lists accumulate. What grows with the tree is small per
/// document: its manifest entry, its graph edges, and the texts of `Cargo.toml`/`go.mod`.
///
/// Peak memory is more than what is live at any moment: the C allocator keeps each thread's
/// high-water mark, so a window's term lists (allocated by the workers) count once per
/// worker, and the posting lists plus the graph count for the main thread.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Documents handed to the workers ahead of the writer: enough that a large document
    /// keeps no worker waiting, few enough that the outcomes held (a window of large
    /// generated files: bindings, tables) stay small.
    window: usize,
    /// Estimated bytes of in-memory posting lists before they are spilled to a run. The cargo
    /// registry's sources (41,000 documents, 888 MB) spill 22 runs at this size, and build
    /// in under 200 MB.
    postings_bytes: usize,
}

const LIMITS: Limits = Limits {
    window: 128,
    postings_bytes: 32 << 20,
};

/// How to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub name: String,
    /// Ignore the existing index (even a damaged one) and read everything again.
    pub force: bool,
    pub canonicalize: CanonicalizeOptions,
    pub policy: ErrorPolicy,
    /// Written to the manifest's `created_at` (RFC 3339); the library reads no clock.
    pub created_at: String,
    /// The workspace root, recorded in `search.db` for `index list` (not in hashed content).
    pub root: Option<PathBuf>,
    /// The git commit checked out (`None` outside a repository); when it moves, recent
    /// activity is counted again.
    pub git_head: Option<String>,
}

/// What a build did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildReport {
    pub name: String,
    pub path: PathBuf,
    pub cache_version: ContentHash,
    pub documents: usize,
    /// Documents read and analyzed in this build.
    pub read: usize,
    /// Documents reused unread from the previous build.
    pub reused: usize,
    /// Documents of the previous build that are gone.
    pub removed: usize,
    /// True when nothing had changed and nothing was written.
    pub up_to_date: bool,
    /// Entries left out (not text, too large, unreadable), one line each.
    pub skipped: Vec<String>,
}

/// One document of a build in progress.
struct Built {
    entry: ManifestEntry,
    fingerprint: Option<String>,
    bytes: u64,
    analysis: Packed,
    /// Kept only for files the project layout reads (`Cargo.toml`, `go.mod`).
    layout_text: Option<String>,
    reused: bool,
}

/// An analysis with its term lists packed as the search database stores them (a few bytes a
/// term instead of a string each), held from analysis until its chunk is written.
struct Packed {
    /// Symbols, imports and language; no term lists.
    rest: Analysis,
    /// The term lists ([`encode_fields`]).
    terms: Vec<u8>,
    /// Term occurrences per field.
    lengths: [u32; FIELDS],
    /// The distinct [`definer_term`]s of its symbols, sorted.
    definers: Vec<String>,
}

impl Packed {
    fn new(mut analysis: Analysis) -> Self {
        let lengths = Field::ALL.map(|field| analysis.length(field));
        let terms = encode_fields(&analysis.fields);
        analysis.fields = Default::default();
        let definers = definers_of(&analysis.symbols);
        Self {
            rest: analysis,
            terms,
            lengths,
            definers,
        }
    }
}

/// The distinct [`definer_term`]s of `symbols`, sorted.
fn definers_of(symbols: &[String]) -> Vec<String> {
    let mut definers: Vec<String> = symbols
        .iter()
        .filter_map(|name| definer_term(name))
        .collect();
    definers.sort_unstable();
    definers.dedup();
    definers
}

/// What a build does with one listed entry.
enum Plan<'e> {
    Reuse(Box<DocRow>, Option<String>),
    ReuseSkip(String),
    Fetch(&'e crate::source::SourceEntry),
}

/// A finished entry of a build.
enum Outcome {
    Doc(Box<Built>),
    Skipped(String),
}

/// Builds (or incrementally updates) index `opts.name` in `indexes_dir` from `source`.
///
/// `git_commits` (document id → recent commits that changed it) is asked only when something
/// changed, since walking history costs more than a no-op rebuild may take.
pub fn build_index(
    indexes_dir: &Path,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    git_commits: &dyn Fn() -> BTreeMap<String, u32>,
) -> Result<BuildReport, IndexError> {
    build_index_with_progress(indexes_dir, source, opts, git_commits, &NoProgress)
}

/// [`build_index`], reporting the documents read and reused to `progress`.
pub fn build_index_with_progress(
    indexes_dir: &Path,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    git_commits: &dyn Fn() -> BTreeMap<String, u32>,
    progress: &dyn Progress,
) -> Result<BuildReport, IndexError> {
    let report = build_index_inner(indexes_dir, source, opts, git_commits, progress, LIMITS);
    progress.finish();
    report
}

fn build_index_inner(
    indexes_dir: &Path,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    git_commits: &dyn Fn() -> BTreeMap<String, u32>,
    progress: &dyn Progress,
    limits: Limits,
) -> Result<BuildReport, IndexError> {
    build_held(
        indexes_dir,
        source,
        opts,
        git_commits,
        progress,
        limits,
        &mut None,
    )
}

/// Whether `prev` is what index `name` in `dir` holds now (no other process updated or
/// rebuilt it since).
fn still_current(prev: &Previous, dir: &Path) -> bool {
    stored_cache_version(&dir.join(SEARCH_DB_FILE)) == Some(prev.manifest.cache_version)
}

/// The report of a build that found nothing to do.
fn up_to_date(prev: &Previous, opts: &BuildOptions, final_dir: &Path) -> BuildReport {
    nothing_to_do(
        opts,
        final_dir,
        prev.manifest.cache_version,
        prev.manifest.documents.len(),
        prev.skipped(),
    )
}

/// The report of a build that read, removed and wrote nothing.
fn nothing_to_do(
    opts: &BuildOptions,
    final_dir: &Path,
    cache_version: ContentHash,
    documents: usize,
    skipped: Vec<String>,
) -> BuildReport {
    BuildReport {
        name: opts.name.clone(),
        path: final_dir.to_owned(),
        cache_version,
        documents,
        read: 0,
        reused: documents,
        removed: 0,
        up_to_date: true,
        skipped,
    }
}

/// How a build reports an entry it left out: its reason, led by its id unless the reason
/// names it.
fn skip_line(id: &str, reason: &str) -> String {
    if reason.contains(id) {
        reason.to_owned()
    } else {
        format!("{id}: {reason}")
    }
}

/// The report of a build that finds nothing changed since index `opts.name` at `final_dir`
/// was built, decided without reading the index into memory (on a tree of a million files
/// its manifest, rows and sources take hundreds of megabytes): the sources are compared
/// with `entries` row by row, and the manifest is read through, entry by entry, for its
/// format, cache version and number of documents. `None` when anything changed or is not
/// as expected: the full path then decides, and names what is damaged.
fn unchanged(
    final_dir: &Path,
    opts: &BuildOptions,
    config: &CacheBuildConfig,
    entries: &[crate::source::SourceEntry],
) -> Option<BuildReport> {
    let db = SearchDb::open(&final_dir.join(SEARCH_DB_FILE), &opts.name).ok()?;
    if db.git_head() != opts.git_head.as_deref() || db.config().as_ref() != Some(config) {
        return None;
    }
    let skipped = db.same_sources(entries).ok()??;
    let documents = db.documents().ok()?;
    let file = File::open(final_dir.join(MANIFEST_FILE)).ok()?;
    let summary: ManifestSummary =
        serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, file)).ok()?;
    if summary.format_version != FORMAT_VERSION
        || summary.cache_version != db.cache_version()
        || summary.documents != documents
    {
        return None;
    }
    Some(nothing_to_do(
        opts,
        final_dir,
        summary.cache_version,
        documents,
        skipped,
    ))
}

/// A manifest's format, cache version and configuration, with its documents read one at a
/// time and counted, not kept.
#[derive(Deserialize)]
struct ManifestSummary {
    format_version: u32,
    cache_version: ContentHash,
    #[serde(rename = "created_at")]
    _created_at: String,
    #[serde(rename = "config")]
    _config: CacheBuildConfig,
    #[serde(deserialize_with = "count_entries")]
    documents: usize,
}

/// Counts a manifest's `documents`, reading each as a [`ManifestEntry`].
fn count_entries<'de, D: serde::Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    struct Count;
    impl<'de> serde::de::Visitor<'de> for Count {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of documents")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while seq.next_element::<ManifestEntry>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
    d.deserialize_seq(Count)
}

/// [`build_index`], starting from `held` (the index as this process last built or updated
/// it) when it is still current, and leaving there what the index holds afterwards when it
/// was updated in place.
fn build_held(
    indexes_dir: &Path,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    git_commits: &dyn Fn() -> BTreeMap<String, u32>,
    progress: &dyn Progress,
    limits: Limits,
    held: &mut Option<Previous>,
) -> Result<BuildReport, IndexError> {
    validate_index_name(&opts.name)?;
    fs::create_dir_all(indexes_dir).map_err(|e| IndexError::io(indexes_dir, e))?;
    // One build at a time (the builder lock, held throughout); readers wait only while the
    // new index is swapped in (the index lock, exclusive for the swap alone), so a prompt
    // can select from the index a long update is rebuilding.
    let _builder = builder_lock(indexes_dir, &opts.name)?;
    remove_stale(indexes_dir, &opts.name)?;
    let final_dir = indexes_dir.join(&opts.name);
    let config = CacheBuildConfig {
        source: source.config(),
        canonicalize: opts.canonicalize,
        analyzer: ANALYZER_VERSION,
    };

    if !opts.force {
        update::recover(&final_dir, &opts.name)?;
    }
    let held_now = held
        .take()
        .filter(|prev| !opts.force && still_current(prev, &final_dir));
    let mut entries = source.list()?;
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(pair) = entries.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(IndexError::DuplicateDocumentId(pair[0].id.clone()));
    }
    if held_now.is_none()
        && !opts.force
        && let Some(report) = unchanged(&final_dir, opts, &config, &entries)
    {
        return Ok(report);
    }
    let mut previous = match held_now {
        Some(prev) => Some(prev),
        None if final_dir.exists() && !opts.force => Some(Previous::open(&final_dir, &opts.name)?),
        None => None,
    };
    if let Some(prev) = previous.take_if(|prev| {
        prev.config == config
            && prev.git_head == opts.git_head
            && prev.sources.len() == entries.len()
            && entries.iter().all(|e| {
                e.fingerprint.is_some()
                    && prev
                        .sources
                        .get(e.id.as_str())
                        .is_some_and(|s| s.fingerprint == e.fingerprint)
            })
    }) {
        let report = up_to_date(&prev, opts, &final_dir);
        *held = Some(prev);
        return Ok(report);
    }

    if let Some(prev) = &mut previous
        && let Some(report) = update::in_place(
            indexes_dir,
            &final_dir,
            source,
            opts,
            &config,
            prev,
            &entries,
            git_commits,
            progress,
        )?
    {
        *held = previous;
        return Ok(report);
    }

    let tmp = indexes_dir.join(format!(
        ".{}.tmp-{}-{}",
        opts.name,
        std::process::id(),
        ContentHash::of(opts.created_at.as_bytes())
            .to_hex()
            .get(..8)
            .unwrap_or("0")
    ));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(|e| IndexError::io(&tmp, e))?;
    }
    if progress.cancelled() {
        return Err(IndexError::Cancelled);
    }
    let docs_dir = tmp.join(DOCUMENTS_DIR);
    fs::create_dir_all(&docs_dir).map_err(|e| IndexError::io(&docs_dir, e))?;
    let commits = git_commits();
    let result = write_build(
        &tmp,
        &final_dir,
        source,
        opts,
        &config,
        previous.as_ref(),
        &entries,
        &commits,
        progress,
        limits,
    );
    let report = match result {
        Ok(report) => report,
        Err(err) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(err);
        }
    };
    let _swap = lock(indexes_dir, &opts.name, true)?;
    swap_in(&tmp, &final_dir, indexes_dir, &opts.name)?;
    Ok(report)
}

/// What to do with each entry: reuse the previous build's analysis (or its reason to skip)
/// when the entry's fingerprint is unchanged, else fetch and analyze it.
fn plan_entries<'a>(
    entries: &'a [crate::source::SourceEntry],
    previous: Option<&Previous>,
) -> Result<Vec<Plan<'a>>, IndexError> {
    let mut reused_rows: HashMap<String, DocRow> = match previous {
        Some(prev) => prev
            .db
            .doc_rows(false)?
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect(),
        None => HashMap::new(),
    };

    let mut plans: Vec<Plan<'a>> = Vec::with_capacity(entries.len());
    for entry in entries {
        let old = previous.and_then(|p| p.sources.get(entry.id.as_str()));
        let same =
            entry.fingerprint.is_some() && old.is_some_and(|s| s.fingerprint == entry.fingerprint);
        match (same, old) {
            (true, Some(src)) => {
                if let Some(reason) = &src.skipped {
                    plans.push(Plan::ReuseSkip(reason.clone()));
                } else if let Some(row) = reused_rows.remove(entry.id.as_str()) {
                    plans.push(Plan::Reuse(Box::new(row), entry.fingerprint.clone()));
                } else {
                    plans.push(Plan::Fetch(entry));
                }
            }
            _ => plans.push(Plan::Fetch(entry)),
        }
    }

    Ok(plans)
}

/// Refuses two documents whose file names (12 hex digits of their ids) are the same.
fn check_file_names(manifest_entries: &[ManifestEntry]) -> Result<(), IndexError> {
    let mut by_file: BTreeMap<&str, &DocumentId> = BTreeMap::new();
    for entry in manifest_entries {
        if let Some(first) = by_file.insert(&entry.file, &entry.id) {
            return Err(IndexError::FilenameCollision {
                first: first.clone(),
                second: entry.id.clone(),
                file: entry.file.trim_end_matches(".json").to_owned(),
            });
        }
    }
    Ok(())
}

/// Adds an analyzed document to the database, the postings and the imports.
fn add_document(
    db: &mut db::Writer,
    postings: &mut postings::Postings,
    imports: &mut Imports,
    doc: &Built,
    commits: &BTreeMap<String, u32>,
) -> Result<(), IndexError> {
    let num = db.add_doc(&db::NewDoc {
        id: doc.entry.id.as_str(),
        version: doc.entry.version,
        file: doc.entry.file.trim_end_matches(".json"),
        fingerprint: doc.fingerprint.as_deref(),
        bytes: doc.bytes,
        commits: commits.get(doc.entry.id.as_str()).copied().unwrap_or(0),
        analysis: &doc.analysis.rest,
        terms: &doc.analysis.terms,
        lengths: doc.analysis.lengths,
    })?;
    visit_terms(&doc.analysis.terms, FIELDS, |field, term, tf| {
        postings.add(num, field, term, tf);
    })
    .expect("terms packed by this build");
    for term in &doc.analysis.definers {
        postings.add(num, postings::DEFINERS, term, 1);
    }
    postings.end_document()?;
    imports.add(num, &doc.analysis.rest)?;
    Ok(())
}

/// Reads, analyzes and writes everything into `tmp`.
// One linear build procedure; splitting it would only pass the same state around.
#[allow(clippy::too_many_arguments)]
fn write_build(
    tmp: &Path,
    final_dir: &Path,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    config: &CacheBuildConfig,
    previous: Option<&Previous>,
    entries: &[crate::source::SourceEntry],
    commits: &BTreeMap<String, u32>,
    progress: &dyn Progress,
    limits: Limits,
) -> Result<BuildReport, IndexError> {
    let docs_dir = tmp.join(DOCUMENTS_DIR);
    let previous = previous.filter(|p| p.config == *config);
    let plans = plan_entries(entries, previous)?;
    let old_docs = final_dir.join(DOCUMENTS_DIR);
    progress.phase("indexing", Some(plans.len() as u64));
    let mut db = db::Writer::create(&tmp.join(SEARCH_DB_FILE))?;
    let mut postings = postings::Postings::new(tmp.join(".postings"), limits.postings_bytes);
    let mut imports = Imports::create(tmp.join(".imports"))?;
    let mut manifest_entries: Vec<ManifestEntry> = Vec::new();
    let mut layout_texts: HashMap<String, String> = HashMap::new();
    let mut skipped_lines: Vec<String> = Vec::new();
    let mut reused = 0;
    let mut read = 0;
    let mut entries_left = entries.iter();
    let stages = Stages {
        source,
        opts,
        previous,
        old_docs: &old_docs,
        docs_dir: &docs_dir,
        progress,
        window: limits.window,
    };
    stages.run(plans, |result| {
        let entry = entries_left.next().expect("one entry per plan");
        match result? {
            Outcome::Doc(doc) => {
                let doc = *doc;
                if doc.reused {
                    reused += 1;
                } else {
                    read += 1;
                }
                add_document(&mut db, &mut postings, &mut imports, &doc, commits)?;
                if let Some(text) = doc.layout_text {
                    layout_texts.insert(doc.entry.id.to_string(), text);
                }
                manifest_entries.push(doc.entry);
            }
            Outcome::Skipped(reason) => {
                if opts.policy == ErrorPolicy::Abort {
                    return Err(IndexError::Connector(
                        crate::error::ConnectorError::PartialFetch {
                            fetched: manifest_entries.len(),
                            failed: 1,
                            first: reason,
                        },
                    ));
                }
                skipped_lines.push(skip_line(entry.id.as_str(), &reason));
                db.add_source(
                    entry.id.as_str(),
                    entry.fingerprint.as_deref(),
                    Some(&reason),
                )?;
            }
        }
        Ok(())
    })?;

    check_file_names(&manifest_entries)?;

    let version = cache_version(config, &manifest_entries);
    let mut graph = GraphBuilder::new(manifest_entries.len());
    let ids: Vec<(u32, &str)> = manifest_entries
        .iter()
        .enumerate()
        .map(|(i, e)| (u32::try_from(i).unwrap_or(u32::MAX), e.id.as_str()))
        .collect();
    let imports = imports.finish()?;
    graph.add_imports(
        &ids,
        |path| layout_texts.get(path).cloned(),
        |visit| imports.read(visit),
    )?;
    imports.remove()?;
    let import_graph = graph.encoded();
    drop(ids);
    drop(layout_texts);
    let mut definers: Vec<u32> = Vec::new();
    postings.finish(|term, lists| {
        for (field, list) in lists.iter().enumerate() {
            if !list.is_empty() {
                db.add_postings(field, term, list)?;
            }
        }
        let users = lists[Field::Content.index()];
        if !users.is_empty() && !lists[postings::DEFINERS].is_empty() {
            definers.clear();
            definers.extend(postings::documents(lists[postings::DEFINERS]));
            graph.add_references(postings::documents(users), &definers);
        }
        Ok(())
    })?;
    let graph = graph.encode();
    db.finish(&db::Meta {
        cache_version: version,
        config,
        git_head: opts.git_head.as_deref(),
        root: opts.root.as_deref(),
        graph: &graph,
        imports: &import_graph,
    })?;
    drop(graph);

    let documents = manifest_entries.len();
    let manifest = CacheManifest {
        format_version: FORMAT_VERSION,
        cache_version: version,
        created_at: opts.created_at.clone(),
        config: config.clone(),
        documents: manifest_entries,
    };
    write_json(&tmp.join(MANIFEST_FILE), &manifest, "manifest.json")?;
    let index = CacheIndex(
        manifest
            .documents
            .into_iter()
            .map(|e| (e.id, e.file))
            .collect(),
    );
    write_json(&tmp.join(INDEX_FILE), &index, "index.json")?;
    let removed = previous.map_or(0, |p| p.removed_from(entries));
    Ok(BuildReport {
        name: opts.name.clone(),
        path: final_dir.to_owned(),
        cache_version: version,
        documents,
        read,
        reused,
        removed,
        up_to_date: false,
        skipped: skipped_lines,
    })
}

/// The reading and analyzing side of a build.
struct Stages<'s> {
    source: &'s dyn DocumentSource,
    opts: &'s BuildOptions,
    previous: Option<&'s Previous>,
    old_docs: &'s Path,
    docs_dir: &'s Path,
    progress: &'s dyn Progress,
    window: usize,
}

impl Stages<'_> {
    /// Reads and analyzes `plans` on worker threads while `write` stores, on this thread,
    /// each outcome in plan order as soon as it and every one before it are done. Workers take
    /// the next plan when they finish one, so a large document holds up no other worker; at
    /// most `window` plans are handed out ahead of the writer, which bounds the outcomes held.
    fn run<'e>(
        &self,
        plans: Vec<Plan<'e>>,
        mut write: impl FnMut(Result<Outcome, IndexError>) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        use std::sync::Mutex;
        use std::sync::mpsc::{channel, sync_channel};
        let total = plans.len();
        let window = self.window.max(1);
        let mut plans = plans.into_iter();
        let workers = rayon::current_num_threads().clamp(1, window);
        let (to_workers, queue) = sync_channel::<(usize, Plan<'e>)>(window);
        let queue = Mutex::new(queue);
        std::thread::scope(|scope| {
            // Dropped when this closure returns, before the scope joins the workers: they
            // see the queue closed and stop.
            let to_workers = to_workers;
            let (to_writer, results) = channel::<(usize, Result<Outcome, IndexError>)>();
            // The workers' side sees no database.
            let (source, opts, old_docs, docs_dir, progress) = (
                self.source,
                self.opts,
                self.old_docs,
                self.docs_dir,
                self.progress,
            );
            for _ in 0..workers {
                let (queue, to_writer) = (&queue, to_writer.clone());
                scope.spawn(move || {
                    loop {
                        // The lock is held only to take a plan, not while processing it.
                        let next = queue.lock().map(|q| q.recv());
                        let Ok(Ok((seq, plan))) = next else { return };
                        let outcome = process(plan, source, opts, old_docs, docs_dir);
                        progress.advance(1);
                        if to_writer.send((seq, outcome)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(to_writer);
            let mut done: BTreeMap<usize, Result<Outcome, IndexError>> = BTreeMap::new();
            let (mut sent, mut written) = (0, 0);
            while written < total {
                if self.progress.cancelled() {
                    return Err(IndexError::Cancelled);
                }
                while sent < total && sent - written < window {
                    let Some(mut plan) = plans.next() else { break };
                    // The previous database's connection stays on this thread: reused
                    // analyses are read here, rather than by the workers.
                    if let Plan::Reuse(row, _) = &mut plan
                        && let Some(prev) = self.previous
                    {
                        row.analysis = Some(Box::new(prev.db.analysis(&row.id)?));
                    }
                    if to_workers.send((sent, plan)).is_err() {
                        break;
                    }
                    sent += 1;
                }
                let Ok((seq, outcome)) = results.recv() else {
                    break;
                };
                done.insert(seq, outcome);
                while let Some(outcome) = done.remove(&written) {
                    written += 1;
                    write(outcome)?;
                }
            }
            Ok(())
        })
    }
}

/// Reads (or reuses) and analyzes one entry, writing its document file.
fn process(
    plan: Plan<'_>,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    old_docs: &Path,
    docs_dir: &Path,
) -> Result<Outcome, IndexError> {
    match plan {
        Plan::Reuse(row, fingerprint) => {
            let name = format!("{}.json", row.file);
            let id = DocumentId::new(&row.id)
                .map_err(|e| IndexError::corrupt(&opts.name, e.to_string()))?;
            // A reused document is checked before it is carried over (its content must
            // hash to the version the index recorded), so a damaged index is refused
            // before anything is written, not copied into a new one.
            let old = old_docs.join(&name);
            let doc = read_document(&old, &opts.name)?;
            if doc.id() != &id || doc.version() != row.version {
                return Err(IndexError::corrupt(
                    &opts.name,
                    format!(
                        "{} holds `{}` at {}, but the index records `{id}` at {}",
                        shown(&old),
                        doc.id(),
                        doc.version(),
                        row.version
                    ),
                ));
            }
            link_or_copy(&old, &docs_dir.join(&name))?;
            let layout_text = is_layout_file(&row.id).then(|| doc.content().to_owned());
            Ok(Outcome::Doc(Box::new(Built {
                entry: ManifestEntry {
                    id,
                    version: row.version,
                    file: name,
                },
                fingerprint,
                bytes: row.bytes,
                analysis: Packed::new(row.analysis.map(|a| *a).unwrap_or_default()),
                layout_text,
                reused: true,
            })))
        }
        Plan::ReuseSkip(reason) => Ok(Outcome::Skipped(reason)),
        Plan::Fetch(entry) => {
            let (built, json) = match read_fresh(source, opts, entry)? {
                Ok(read) => read,
                Err(reason) => return Ok(Outcome::Skipped(reason)),
            };
            let path = docs_dir.join(&built.entry.file);
            // Two ids with the same 12-hex name are refused after the documents are read,
            // naming both ids.
            if !path.exists() {
                fs::write(&path, json).map_err(|e| IndexError::io(&path, e))?;
            }
            Ok(Outcome::Doc(Box::new(built)))
        }
    }
}

/// Reads, canonicalizes and analyzes `entry`: the document and its file's bytes, or why it
/// is left out (not text, too large, unreadable).
fn read_fresh(
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    entry: &crate::source::SourceEntry,
) -> Result<Result<(Built, Vec<u8>), String>, IndexError> {
    let doc = match source
        .fetch(entry)
        .and_then(|raw| ingest_raw(raw, opts.canonicalize))
    {
        Ok(doc) => doc,
        Err(err) => return Ok(Err(err.to_string())),
    };
    let name = format!("{}.json", document_file_stem(doc.id()));
    let json = serde_json::to_vec_pretty(&doc).map_err(|source| IndexError::Serialization {
        what: format!("document `{}`", doc.id()),
        source,
    })?;
    Ok(Ok((
        built_from(&doc, name, entry.fingerprint.clone()),
        json,
    )))
}

/// The import statements of the documents that have a language and import something, kept
/// in a file of the build directory rather than in memory until every document is known
/// (imports resolve against the whole tree). Exact copies: the `docs` table joins imports
/// with newlines, which an import as written may contain.
struct Imports {
    path: PathBuf,
    out: std::io::BufWriter<File>,
}

impl Imports {
    fn create(path: PathBuf) -> Result<Self, IndexError> {
        let file = File::create(&path).map_err(|e| IndexError::io(&path, e))?;
        Ok(Self {
            out: std::io::BufWriter::with_capacity(64 * 1024, file),
            path,
        })
    }

    fn add(&mut self, num: u32, analysis: &Analysis) -> Result<(), IndexError> {
        use std::io::Write as _;
        let Some(language) = analysis.language else {
            return Ok(());
        };
        if analysis.imports.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        put_varint(&mut bytes, u64::from(num));
        put_bytes(&mut bytes, language.name().as_bytes());
        put_varint(&mut bytes, analysis.imports.len() as u64);
        for import in &analysis.imports {
            put_bytes(&mut bytes, import.as_bytes());
        }
        self.out
            .write_all(&bytes)
            .map_err(|e| IndexError::io(&self.path, e))
    }

    /// Done writing: the file, ready to read back.
    fn finish(self) -> Result<ImportsFile, IndexError> {
        self.out
            .into_inner()
            .map_err(|e| IndexError::io(&self.path, e.into_error()))?;
        Ok(ImportsFile { path: self.path })
    }
}

struct ImportsFile {
    path: PathBuf,
}

impl ImportsFile {
    /// Hands each record to `visit` (document number, language, imports), in the order they
    /// were added.
    fn read(
        &self,
        visit: &mut dyn FnMut(u32, ctx_code::Language, &[String]),
    ) -> Result<(), IndexError> {
        let io = |e: std::io::Error| IndexError::io(&self.path, e);
        let invalid = || io(std::io::ErrorKind::InvalidData.into());
        let file = File::open(&self.path).map_err(io)?;
        let mut input = std::io::BufReader::with_capacity(64 * 1024, file);
        let mut name = Vec::new();
        let mut imports: Vec<String> = Vec::new();
        let mut first = [0u8];
        while std::io::Read::read(&mut input, &mut first).map_err(io)? == 1 {
            let num = u32::try_from(read_varint_from(first[0], &mut input).map_err(io)?)
                .map_err(|_| invalid())?;
            read_bytes(&mut input, &mut name).map_err(io)?;
            let language = std::str::from_utf8(&name)
                .ok()
                .and_then(ctx_code::Language::from_name)
                .ok_or_else(invalid)?;
            imports.clear();
            for _ in 0..read_varint(&mut input).map_err(io)? {
                let mut import = Vec::new();
                read_bytes(&mut input, &mut import).map_err(io)?;
                imports.push(String::from_utf8(import).map_err(|_| invalid())?);
            }
            visit(num, language, &imports);
        }
        Ok(())
    }

    fn remove(self) -> Result<(), IndexError> {
        fs::remove_file(&self.path).map_err(|e| IndexError::io(&self.path, e))
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Reads a length-prefixed byte string into `out`.
fn read_bytes(input: &mut impl std::io::Read, out: &mut Vec<u8>) -> std::io::Result<()> {
    let len = read_varint(input)?;
    out.clear();
    out.resize(usize::try_from(len).map_err(std::io::Error::other)?, 0);
    input.read_exact(out)
}

fn read_varint(input: &mut impl std::io::Read) -> std::io::Result<u64> {
    let mut first = [0u8];
    input.read_exact(&mut first)?;
    read_varint_from(first[0], input)
}

/// A LEB128 varint whose first byte is `first`.
fn read_varint_from(first: u8, input: &mut impl std::io::Read) -> std::io::Result<u64> {
    let mut value = u64::from(first & 0x7f);
    let mut byte = first;
    let mut shift = 7;
    while byte & 0x80 != 0 {
        if shift > 63 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let mut next = [0u8];
        input.read_exact(&mut next)?;
        byte = next[0];
        value |= u64::from(byte & 0x7f) << shift;
        shift += 7;
    }
    Ok(value)
}

fn built_from(doc: &Document, file: String, fingerprint: Option<String>) -> Built {
    let id = doc.id().as_str();
    Built {
        entry: ManifestEntry {
            id: doc.id().clone(),
            version: doc.version(),
            file,
        },
        fingerprint,
        bytes: doc.content().len() as u64,
        analysis: Packed::new(analyze(id, doc.content())),
        layout_text: is_layout_file(id).then(|| doc.content().to_owned()),
        reused: false,
    }
}

/// Files whose text the import resolver needs (crate names, Go module paths).
fn is_layout_file(id: &str) -> bool {
    let name = id.rsplit('/').next().unwrap_or(id);
    name == "Cargo.toml" || name == "go.mod"
}

/// Writes `value` as pretty JSON and a newline, straight to the file (a manifest of a large
/// tree is megabytes; it is not assembled in memory first).
fn write_json<T: Serialize>(path: &Path, value: &T, what: &str) -> Result<(), IndexError> {
    use std::io::Write as _;
    let file = File::create(path).map_err(|e| IndexError::io(path, e))?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, value).map_err(|source| {
        if source.is_io() {
            IndexError::io(path, source.into())
        } else {
            IndexError::Serialization {
                what: what.to_owned(),
                source,
            }
        }
    })?;
    out.write_all(b"\n")
        .and_then(|()| out.flush())
        .map_err(|e| IndexError::io(path, e))
}

fn link_or_copy(from: &Path, to: &Path) -> Result<(), IndexError> {
    if fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    fs::copy(from, to)
        .map(drop)
        .map_err(|e| IndexError::io(from, e))
}

/// The cheap integrity check of an index at `dir`: `documents/` holds exactly the files its
/// manifest names (their content is checked as they are read).
pub(crate) fn check_listing(
    dir: &Path,
    name: &str,
    manifest: &CacheManifest,
) -> Result<(), IndexError> {
    let docs_dir = dir.join(DOCUMENTS_DIR);
    let mut files: Vec<String> = fs::read_dir(&docs_dir)
        .map_err(|_| IndexError::corrupt(name, "documents/ is missing"))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort_unstable();
    let mut expected: Vec<&str> = manifest.documents.iter().map(|e| e.file.as_str()).collect();
    expected.sort_unstable();
    if files == expected {
        return Ok(());
    }
    let missing = expected
        .iter()
        .find(|f| files.binary_search_by(|x| x.as_str().cmp(f)).is_err());
    let problem = if let Some(f) = missing {
        format!("documents/{f} is missing")
    } else {
        let extra = files
            .iter()
            .find(|f| expected.binary_search(&f.as_str()).is_err())
            .cloned()
            .unwrap_or_default();
        format!("documents/{extra} is not in the manifest")
    };
    Err(IndexError::corrupt(name, problem))
}

/// Reads and checks one document file (its content must hash to its version).
pub(crate) fn read_document(path: &Path, name: &str) -> Result<Document, IndexError> {
    let bytes = fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            IndexError::corrupt(name, format!("{} is missing", shown(path)))
        } else {
            IndexError::io(path, e)
        }
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|e| IndexError::corrupt(name, format!("{}: {e}", shown(path))))
}

/// `documents/abc.json` for messages.
pub(crate) fn shown(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match path.parent().and_then(Path::file_name) {
        Some(dir) if dir == DOCUMENTS_DIR => format!("{DOCUMENTS_DIR}/{file}"),
        _ => file,
    }
}

/// Takes the lock a build holds from start to end (one build of an index at a time; readers
/// do not take it); released on drop.
pub fn builder_lock(indexes_dir: &Path, name: &str) -> Result<Option<File>, IndexError> {
    lock_file(indexes_dir, &format!(".{name}.build.lock"), true)
}

/// Whether a build of index `name` is running (its builder lock is taken).
pub fn is_building(indexes_dir: &Path, name: &str) -> bool {
    File::open(indexes_dir.join(format!(".{name}.build.lock")))
        .is_ok_and(|file| file.try_lock().is_err())
}

/// Takes the index's lock file (exclusive while a build swaps the new index in, shared for
/// readers); released on drop.
///
/// A reader of a store it cannot write (a read-only mount or directory) takes the lock
/// through a read-only handle, or goes without when the lock file cannot be made: nothing
/// can build there either.
pub fn lock(indexes_dir: &Path, name: &str, exclusive: bool) -> Result<Option<File>, IndexError> {
    lock_file(indexes_dir, &format!(".{name}.lock"), exclusive)
}

fn lock_file(
    indexes_dir: &Path,
    file_name: &str,
    exclusive: bool,
) -> Result<Option<File>, IndexError> {
    let path = indexes_dir.join(file_name);
    let created = fs::create_dir_all(indexes_dir).and_then(|()| {
        fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
    });
    let file = match created {
        Ok(file) => file,
        Err(e) if !exclusive && cannot_write(&e) => match File::open(&path) {
            Ok(file) => file,
            Err(_) => return Ok(None),
        },
        Err(e) => return Err(IndexError::io(&path, e)),
    };
    let locked = if exclusive {
        file.lock()
    } else {
        file.lock_shared()
    };
    locked.map_err(|e| IndexError::io(&path, e))?;
    Ok(Some(file))
}

fn cannot_write(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    )
}

/// Removes temporary and retired directories left by crashed builds (we hold the builder
/// lock, so no build of this index is running).
fn remove_stale(indexes_dir: &Path, name: &str) -> Result<(), IndexError> {
    let prefixes = [format!(".{name}.tmp-"), format!(".{name}.old-")];
    let listing = fs::read_dir(indexes_dir).map_err(|e| IndexError::io(indexes_dir, e))?;
    for item in listing.flatten() {
        let file_name = item.file_name();
        let file_name = file_name.to_string_lossy();
        if prefixes.iter().any(|p| file_name.starts_with(p.as_str())) {
            let path = item.path();
            fs::remove_dir_all(&path).map_err(|e| IndexError::io(&path, e))?;
        }
    }
    Ok(())
}

/// Puts `tmp` in place of `final_dir`: an atomic exchange where the platform has one (Linux
/// `renameat2(RENAME_EXCHANGE)`), else rename the old one away first.
fn swap_in(tmp: &Path, final_dir: &Path, indexes_dir: &Path, name: &str) -> Result<(), IndexError> {
    if !final_dir.exists() {
        return fs::rename(tmp, final_dir).map_err(|e| IndexError::io(final_dir, e));
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        if renameat_with(CWD, tmp, CWD, final_dir, RenameFlags::EXCHANGE).is_ok() {
            // `tmp` now holds the old index.
            return fs::remove_dir_all(tmp).map_err(|e| IndexError::io(tmp, e));
        }
    }
    let old = indexes_dir.join(format!(".{name}.old-{}", std::process::id()));
    fs::rename(final_dir, &old).map_err(|e| IndexError::io(final_dir, e))?;
    fs::rename(tmp, final_dir).map_err(|e| IndexError::io(final_dir, e))?;
    fs::remove_dir_all(&old).map_err(|e| IndexError::io(&old, e))
}

/// The configuration index `name` at `dir` was built with, from one row of its search
/// database (the manifest of a large tree is hundreds of megabytes), or from the manifest
/// when the database cannot say.
pub fn built_config(dir: &Path, name: &str) -> Result<CacheBuildConfig, IndexError> {
    match stored_config(&dir.join(SEARCH_DB_FILE)) {
        Some(config) => Ok(config),
        None => Ok(read_manifest(dir, name)?.config),
    }
}

/// A manifest's format version alone (the rest of the file is skipped, not built).
#[derive(Deserialize)]
struct ManifestFormat {
    format_version: Option<serde_json::Value>,
}

/// Reads `manifest.json`, refusing a newer format and naming what is wrong.
pub fn read_manifest(dir: &Path, name: &str) -> Result<CacheManifest, IndexError> {
    let path = dir.join(MANIFEST_FILE);
    let bytes = fs::read(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            if dir.exists() {
                IndexError::corrupt(name, format!("{MANIFEST_FILE} is missing"))
            } else {
                IndexError::NotFound {
                    name: name.to_owned(),
                    path: dir.to_owned(),
                }
            }
        } else {
            IndexError::io(&path, e)
        }
    })?;
    // The format first (a newer one may not parse as this one), read without building the
    // rest: a manifest of a million documents is 170 MB, and as a `serde_json::Value` tree
    // it took 700 MB more.
    let format: ManifestFormat = serde_json::from_slice(&bytes).map_err(|e| {
        IndexError::corrupt(name, format!("{MANIFEST_FILE} is not valid JSON: {e}"))
    })?;
    let found = format
        .format_version
        .as_ref()
        .and_then(serde_json::Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            IndexError::corrupt(name, format!("{MANIFEST_FILE} has no format_version"))
        })?;
    if found > FORMAT_VERSION {
        return Err(IndexError::NewerFormat {
            name: name.to_owned(),
            name_flag: crate::error::name_flag(name),
            found,
            known: FORMAT_VERSION,
        });
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| IndexError::corrupt(name, format!("{MANIFEST_FILE}: {e}")))
}

/// A fingerprint row of the previous build.
#[derive(Debug, Clone)]
pub(crate) struct SourceRow {
    pub fingerprint: Option<String>,
    pub skipped: Option<String>,
}

/// The previous build, as far as an incremental rebuild needs it.
struct Previous {
    manifest: CacheManifest,
    config: CacheBuildConfig,
    git_head: Option<String>,
    sources: HashMap<String, SourceRow>,
    db: SearchDb,
    /// Whether `documents/` was found to hold exactly the manifest's files since this was
    /// read (an update in place checks it once, then keeps it so).
    listing_checked: bool,
}

impl Previous {
    fn open(dir: &Path, name: &str) -> Result<Self, IndexError> {
        let manifest = read_manifest(dir, name)?;
        let db = SearchDb::open(&dir.join(SEARCH_DB_FILE), name)?;
        if db.cache_version() != manifest.cache_version {
            return Err(IndexError::corrupt(
                name,
                format!(
                    "{SEARCH_DB_FILE} does not belong to {MANIFEST_FILE} (different cache versions)"
                ),
            ));
        }
        let sources = db.sources()?;
        Ok(Self {
            config: manifest.config.clone(),
            git_head: db.git_head().map(str::to_owned),
            manifest,
            sources,
            db,
            listing_checked: false,
        })
    }

    /// How many of its documents `entries` no longer lists.
    fn removed_from(&self, entries: &[crate::source::SourceEntry]) -> usize {
        let now: BTreeSet<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        self.manifest
            .documents
            .iter()
            .filter(|d| !now.contains(d.id.as_str()))
            .count()
    }

    fn skipped(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .sources
            .iter()
            .filter_map(|(id, s)| s.skipped.as_ref().map(|r| skip_line(id, r)))
            .collect();
        out.sort();
        out
    }
}
