//! Verification (seed 003's five checks, plus the search database) and inspection.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use ctx_core::{ContentHash, DocumentId};
use serde::Serialize;

use super::{
    CacheIndex, CacheManifest, DOCUMENTS_DIR, INDEX_FILE, MANIFEST_FILE, SEARCH_DB_FILE, SearchDb,
    cache_version, document_file_stem, read_manifest,
};
use crate::error::IndexError;

/// One verification check and what it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexCheck {
    pub check: String,
    pub ok: bool,
    /// One line per problem, naming the file.
    pub problems: Vec<String>,
}

/// The result of [`verify_index`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub name: String,
    pub valid: bool,
    pub checks: Vec<IndexCheck>,
}

/// Runs every check on index `name` in `dir`:
/// 1. the manifest exists and is valid JSON (of a format this ctx reads);
/// 2. the cache version matches the one recomputed from config and documents;
/// 3. every document file exists;
/// 4. every document file matches its name (its id hashes to the file name, its content to
///    its version, and that version is the manifest's);
/// 5. no orphan files in `documents/`;
/// 6. `index.json` and `search.db` agree with the manifest.
///
/// A missing index is an error; damage is reported, not raised.
pub fn verify_index(dir: &Path, name: &str) -> Result<VerifyReport, IndexError> {
    if !dir.is_dir() {
        return Err(IndexError::NotFound {
            name: name.to_owned(),
            path: dir.to_owned(),
        });
    }
    let mut checks = Vec::new();
    let mut check = |title: &str, problems: Vec<String>| {
        checks.push(IndexCheck {
            check: title.to_owned(),
            ok: problems.is_empty(),
            problems,
        });
    };
    let manifest = match read_manifest(dir, name) {
        Ok(m) => {
            check("manifest exists and is valid JSON", Vec::new());
            m
        }
        Err(err @ IndexError::NewerFormat { .. }) => return Err(err),
        Err(err) => {
            check(
                "manifest exists and is valid JSON",
                vec![problem_text(&err)],
            );
            let valid = false;
            return Ok(VerifyReport {
                name: name.to_owned(),
                valid,
                checks,
            });
        }
    };

    let recomputed = cache_version(&manifest.config, &manifest.documents);
    check(
        "cache version matches its recomputed hash",
        if recomputed == manifest.cache_version {
            Vec::new()
        } else {
            vec![format!(
                "{MANIFEST_FILE}: cache_version is {} but config and documents hash to {recomputed}",
                manifest.cache_version
            )]
        },
    );

    let docs_dir = dir.join(DOCUMENTS_DIR);
    let mut missing = Vec::new();
    let mut mismatched = Vec::new();
    for entry in &manifest.documents {
        let path = docs_dir.join(&entry.file);
        if !path.is_file() {
            missing.push(format!(
                "{DOCUMENTS_DIR}/{} (document `{}`) is missing",
                entry.file, entry.id
            ));
            continue;
        }
        if let Some(problem) = check_document_file(&path, &entry.id, entry.version, &entry.file) {
            mismatched.push(problem);
        }
    }
    check("every document file exists", missing);
    check(
        "every document file matches its name and version",
        mismatched,
    );

    let expected: BTreeSet<&str> = manifest.documents.iter().map(|e| e.file.as_str()).collect();
    let mut orphans = Vec::new();
    if let Ok(listing) = fs::read_dir(&docs_dir) {
        for item in listing.flatten() {
            let file = item.file_name().to_string_lossy().into_owned();
            if !expected.contains(file.as_str()) {
                orphans.push(format!("{DOCUMENTS_DIR}/{file} is not in the manifest"));
            }
        }
    } else {
        orphans.push(format!("{DOCUMENTS_DIR}/ is missing"));
    }
    orphans.sort();
    check("no orphan files in documents/", orphans);

    check(
        "index.json and search.db agree with the manifest",
        sidecar_problems(dir, name, &manifest),
    );
    let valid = checks.iter().all(|c| c.ok);
    Ok(VerifyReport {
        name: name.to_owned(),
        valid,
        checks,
    })
}

fn problem_text(err: &IndexError) -> String {
    match err {
        IndexError::Corrupt { problem, .. } => problem.clone(),
        other => other.to_string(),
    }
}

/// Checks one document file; `None` when it is sound.
pub(crate) fn check_document_file(
    path: &Path,
    id: &DocumentId,
    version: ContentHash,
    file: &str,
) -> Option<String> {
    let shown = format!("{DOCUMENTS_DIR}/{file}");
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) => return Some(format!("{shown}: {e}")),
    };
    let doc: ctx_core::Document = match serde_json::from_slice(&bytes) {
        Ok(d) => d,
        Err(e) => return Some(format!("{shown}: {e}")),
    };
    if doc.id() != id {
        return Some(format!(
            "{shown} holds `{}`, the manifest says `{id}`",
            doc.id()
        ));
    }
    let stem = document_file_stem(id);
    if file != format!("{stem}.json") {
        return Some(format!("{shown}: `{id}` hashes to {stem}.json"));
    }
    if doc.version() != version {
        return Some(format!(
            "{shown} (`{id}`) has version {} but the manifest says {version}",
            doc.version()
        ));
    }
    None
}

fn sidecar_problems(dir: &Path, name: &str, manifest: &CacheManifest) -> Vec<String> {
    let mut problems = Vec::new();
    let expected: BTreeMap<DocumentId, String> = manifest
        .documents
        .iter()
        .map(|e| (e.id.clone(), e.file.clone()))
        .collect();
    match fs::read(dir.join(INDEX_FILE)) {
        Ok(bytes) => match serde_json::from_slice::<CacheIndex>(&bytes) {
            Ok(index) if index.0 == expected => {}
            Ok(_) => problems.push(format!(
                "{INDEX_FILE} does not list the manifest's documents"
            )),
            Err(e) => problems.push(format!("{INDEX_FILE} is not valid: {e}")),
        },
        Err(e) => problems.push(format!("{INDEX_FILE}: {e}")),
    }
    match SearchDb::open(&dir.join(SEARCH_DB_FILE), name) {
        Ok(db) => {
            if db.cache_version() != manifest.cache_version {
                problems.push(format!(
                    "{SEARCH_DB_FILE} was written for another cache version"
                ));
            }
            match db.doc_rows(false) {
                Ok(rows) => {
                    let same = rows.len() == manifest.documents.len()
                        && rows.iter().zip(&manifest.documents).all(|(r, e)| {
                            r.id == e.id.as_str()
                                && r.version == e.version
                                && format!("{}.json", r.file) == e.file
                        });
                    if !same {
                        problems.push(format!(
                            "{SEARCH_DB_FILE} does not list the manifest's documents"
                        ));
                    }
                }
                Err(e) => problems.push(problem_text(&e)),
            }
        }
        Err(e) => problems.push(problem_text(&e)),
    }
    problems
}

/// What `index inspect` shows (seed 003's `inspect_cache`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IndexInspection {
    pub name: String,
    pub path: String,
    pub format_version: u32,
    pub cache_version: ContentHash,
    pub created_at: String,
    pub documents: usize,
    /// Bytes of document content.
    pub content_bytes: u64,
    /// Bytes on disk (every file of the index directory).
    pub disk_bytes: u64,
    /// Entries listed but left out (binary, too large, not UTF-8).
    pub skipped: usize,
    /// Edges of the import/reference graph (each direction counted).
    pub graph_edges: usize,
    /// The workspace root it was built from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    pub config: serde_json::Value,
    /// Whether every verification check passes.
    pub valid: bool,
    /// The failing checks' problems, when not valid.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// Counts, sizes, version and validity of index `name` in `dir`.
pub fn inspect_index(dir: &Path, name: &str) -> Result<IndexInspection, IndexError> {
    let report = verify_index(dir, name)?;
    let problems: Vec<String> = report
        .checks
        .iter()
        .flat_map(|c| c.problems.clone())
        .collect();
    let manifest = read_manifest(dir, name).ok();
    let db = SearchDb::open(&dir.join(SEARCH_DB_FILE), name).ok();
    let rows = db
        .as_ref()
        .and_then(|d| d.doc_rows(false).ok())
        .unwrap_or_default();
    let skipped = db
        .as_ref()
        .and_then(|d| d.sources().ok())
        .map_or(0, |s| s.values().filter(|r| r.skipped.is_some()).count());
    Ok(IndexInspection {
        name: name.to_owned(),
        path: dir.display().to_string(),
        format_version: manifest.as_ref().map_or(0, |m| m.format_version),
        cache_version: manifest
            .as_ref()
            .map_or_else(|| ContentHash::of(b""), |m| m.cache_version),
        created_at: manifest
            .as_ref()
            .map(|m| m.created_at.clone())
            .unwrap_or_default(),
        documents: manifest.as_ref().map_or(0, |m| m.documents.len()),
        content_bytes: rows.iter().map(|r| r.bytes).sum(),
        disk_bytes: dir_size(dir),
        skipped,
        graph_edges: db
            .as_ref()
            .and_then(|d| d.graph().ok())
            .map_or(0, |g| g.edge_count()),
        root: db.as_ref().and_then(|d| d.root().map(str::to_owned)),
        config: manifest
            .as_ref()
            .and_then(|m| serde_json::to_value(&m.config).ok())
            .unwrap_or(serde_json::Value::Null),
        valid: report.valid,
        problems,
    })
}

fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(listing) = fs::read_dir(&d) else {
            continue;
        };
        for item in listing.flatten() {
            match item.metadata() {
                Ok(m) if m.is_dir() => stack.push(item.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}
