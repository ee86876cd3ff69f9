//! Document sources (seed 003 connectors): a [`DocumentSource`] lists what it has cheaply
//! ([`SourceEntry`]: an id and a fingerprint) and fetches one [`RawDocument`] at a time, so an
//! index rebuild re-reads only what changed. [`FilesystemSource`] walks a workspace the way
//! git sees it; [`MemorySource`] holds documents given in code. [`ingest_from_source`] turns a
//! source into [`Document`]s under an [`ErrorPolicy`].

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctx_core::redact::Redactor;
use ctx_core::{ContentHash, Document, DocumentId, Metadata};
use rayon::prelude::*;

use crate::canonicalize::{CanonicalizeOptions, canonicalize};
use crate::error::ConnectorError;

/// One document a source can deliver, as listed (not yet read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceEntry {
    pub id: DocumentId,
    /// A cheap token that changes whenever the content may have changed (for files: size and
    /// modification time in nanoseconds). `None`: unknown, always fetch again.
    pub fingerprint: Option<String>,
}

/// A document as a source delivers it, before validation and canonicalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDocument {
    pub id: DocumentId,
    /// Where it came from (`file:src/lib.rs`, a URL, a connector name).
    pub source: String,
    pub bytes: Vec<u8>,
    pub metadata: Metadata,
}

/// A connector that can list and fetch documents.
pub trait DocumentSource: Sync {
    /// The source's name in messages and in the index config (`filesystem`, `memory`, …).
    fn name(&self) -> &str;

    /// Everything the source holds, sorted by id; cheap (no content is read).
    fn list(&self) -> Result<Vec<SourceEntry>, ConnectorError>;

    /// Reads one listed document.
    fn fetch(&self, entry: &SourceEntry) -> Result<RawDocument, ConnectorError>;

    /// Lists and fetches everything: one result per entry, in id order.
    fn fetch_documents(&self) -> Result<Vec<Result<RawDocument, ConnectorError>>, ConnectorError> {
        let entries = self.list()?;
        Ok(entries.par_iter().map(|e| self.fetch(e)).collect())
    }

    /// A description of the source's settings, part of the index config (and so of its
    /// cache version).
    fn config(&self) -> serde_json::Value {
        serde_json::json!({ "kind": self.name() })
    }

    /// Entry `id` as [`DocumentSource::list`] gives it now (`Some(None)`: it is gone), for a
    /// document the source listed before; `None` when the source cannot tell without a
    /// listing.
    fn entry(&self, id: &DocumentId) -> Option<Option<SourceEntry>> {
        let _ = id;
        None
    }

    /// Whether [`DocumentSource::list`] would list `id` (a document new to the caller), told
    /// from its directory alone; `None` when the source cannot tell without a listing.
    fn lists(&self, id: &DocumentId) -> Option<bool> {
        let _ = id;
        None
    }
}

/// A file's fingerprint as listings give it: its size and modification time (ns).
fn file_fingerprint(meta: &std::fs::Metadata) -> String {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{}:{mtime}", meta.len())
}

/// What to do when one document cannot be fetched or is not text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorPolicy {
    /// Leave it out and report a warning; the others are ingested.
    #[default]
    SkipAndWarn,
    /// Fail the whole ingestion.
    Abort,
}

/// Documents ingested from a source, and what was left out.
#[derive(Debug, Default)]
pub struct Ingested {
    pub documents: Vec<Document>,
    /// One line per skipped document, naming it and the reason.
    pub warnings: Vec<String>,
}

/// Validates and canonicalizes one raw document into a [`Document`].
pub fn ingest_raw(raw: RawDocument, opts: CanonicalizeOptions) -> Result<Document, ConnectorError> {
    let bytes = if opts.any() {
        match String::from_utf8(raw.bytes) {
            Ok(text) => canonicalize(&text, opts).into_bytes(),
            Err(err) => err.into_bytes(),
        }
    } else {
        raw.bytes
    };
    Document::ingest(raw.id.clone(), raw.source, bytes, raw.metadata).map_err(|err| {
        ConnectorError::InvalidContent {
            id: raw.id.to_string(),
            reason: err.to_string(),
        }
    })
}

/// Fetches every document of `source` and ingests it (UTF-8 check, canonicalization).
pub fn ingest_from_source(
    source: &dyn DocumentSource,
    opts: CanonicalizeOptions,
    policy: ErrorPolicy,
) -> Result<Ingested, ConnectorError> {
    let results = source.fetch_documents()?;
    let mut out = Ingested::default();
    let mut failed: Vec<String> = Vec::new();
    for result in results {
        match result.and_then(|raw| ingest_raw(raw, opts)) {
            Ok(doc) => out.documents.push(doc),
            Err(err) => failed.push(err.to_string()),
        }
    }
    if policy == ErrorPolicy::Abort && !failed.is_empty() {
        return Err(ConnectorError::PartialFetch {
            fetched: out.documents.len(),
            failed: failed.len(),
            first: failed.swap_remove(0),
        });
    }
    out.warnings = failed;
    out.documents.sort_by(|a, b| a.id().cmp(b.id()));
    Ok(out)
}

/// Documents held in memory (tests, generated content, other front ends).
#[derive(Debug, Clone, Default)]
pub struct MemorySource {
    documents: Vec<RawDocument>,
}

impl MemorySource {
    /// A source over `documents` (any order; listed sorted by id, duplicates kept so the index
    /// can refuse them).
    pub fn new(mut documents: Vec<RawDocument>) -> Self {
        documents.sort_by(|a, b| a.id.cmp(&b.id));
        Self { documents }
    }

    /// A text document with `file:` source and no metadata.
    pub fn text(id: &str, content: &str) -> Result<RawDocument, ctx_core::DocumentIdError> {
        Ok(RawDocument {
            id: DocumentId::new(id)?,
            source: format!("memory:{id}"),
            bytes: content.as_bytes().to_vec(),
            metadata: Metadata::new(),
        })
    }
}

impl DocumentSource for MemorySource {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn list(&self) -> Result<Vec<SourceEntry>, ConnectorError> {
        Ok(self
            .documents
            .iter()
            .map(|d| SourceEntry {
                id: d.id.clone(),
                fingerprint: Some(ContentHash::of(&d.bytes).to_hex()),
            })
            .collect())
    }

    fn entry(&self, id: &DocumentId) -> Option<Option<SourceEntry>> {
        let at = self.documents.binary_search_by(|d| d.id.cmp(id));
        Some(at.ok().map(|i| SourceEntry {
            id: id.clone(),
            fingerprint: Some(ContentHash::of(&self.documents[i].bytes).to_hex()),
        }))
    }

    fn fetch(&self, entry: &SourceEntry) -> Result<RawDocument, ConnectorError> {
        // With duplicate ids, the fingerprint tells the copies apart.
        self.documents
            .iter()
            .find(|d| {
                d.id == entry.id
                    && entry
                        .fingerprint
                        .as_ref()
                        .is_none_or(|f| *f == ContentHash::of(&d.bytes).to_hex())
            })
            .cloned()
            .ok_or_else(|| ConnectorError::FetchFailed {
                id: entry.id.to_string(),
                message: "no such document".to_owned(),
            })
    }
}

/// The files of a workspace, walked like git sees them (ignore rules, hidden files and
/// dependency directories skipped; see `ctx_fs::walk`).
///
/// Files are read through the ctx-fs sandbox of the root (a symlink leading out, a hard link,
/// a FIFO or a device is skipped with the reason), and their text is redacted before it becomes
/// a document: the index on disk, its search database and every answer built from it hold
/// `[REDACTED:rule]` where the file held a secret.
#[derive(Debug, Clone)]
pub struct FilesystemSource {
    root: PathBuf,
    paths: Vec<String>,
    max_file_bytes: u64,
    sandbox: Arc<Result<ctx_fs::Sandbox, String>>,
    /// The project's rules; `None` for the built-in ones.
    redactor: Option<Arc<Redactor>>,
}

impl FilesystemSource {
    /// Files under `paths` (ids relative to `root`; empty means the whole root). Files larger
    /// than `max_file_bytes` are listed but not fetched (skipped with a reason).
    pub fn new(root: &Path, paths: Vec<String>, max_file_bytes: u64) -> Self {
        let mut paths = if paths.is_empty() {
            vec![String::new()]
        } else {
            paths
        };
        paths.sort();
        paths.dedup();
        Self {
            root: root.to_owned(),
            paths,
            max_file_bytes,
            sandbox: Arc::new(ctx_fs::Sandbox::open(root).map_err(|e| e.to_string())),
            redactor: None,
        }
    }

    /// Redacts with `redactor` (the built-in rules plus the project's custom ones) instead of
    /// the built-in rules alone.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = Some(Arc::new(redactor));
        self
    }

    fn redactor(&self) -> &Redactor {
        self.redactor
            .as_deref()
            .unwrap_or_else(|| Redactor::builtin())
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The walked paths, relative to the root (`""` for the root itself).
    pub fn paths(&self) -> &[String] {
        &self.paths
    }
}

impl DocumentSource for FilesystemSource {
    fn name(&self) -> &'static str {
        "filesystem"
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "filesystem",
            "paths": self.paths,
            "max_file_bytes": self.max_file_bytes,
            // Documents hold redacted text: other rules make other documents.
            "redaction": self.redactor().rule_ids(),
        })
    }

    fn list(&self) -> Result<Vec<SourceEntry>, ConnectorError> {
        let mut found: Vec<(String, PathBuf)> = Vec::new();
        for prefix in &self.paths {
            let dir = if prefix.is_empty() {
                self.root.clone()
            } else {
                self.root.join(prefix)
            };
            let entries = ctx_fs::walk(&dir, &ctx_fs::WalkOptions::default()).map_err(|err| {
                ConnectorError::ListFailed {
                    root: dir.display().to_string(),
                    message: err.to_string(),
                }
            })?;
            let is_file = dir.is_file();
            for entry in entries {
                let rel = if prefix.is_empty() {
                    entry.rel
                } else if is_file {
                    prefix.clone()
                } else {
                    format!("{prefix}/{}", entry.rel)
                };
                found.push((rel, entry.path));
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found.dedup_by(|a, b| a.0 == b.0);
        let listed: Vec<Option<SourceEntry>> = found
            .par_iter()
            .map(|(rel, path)| {
                let id = DocumentId::new(rel).ok()?;
                let fingerprint = std::fs::metadata(path).ok().map(|m| file_fingerprint(&m));
                Some(SourceEntry { id, fingerprint })
            })
            .collect();
        Ok(listed.into_iter().flatten().collect())
    }

    /// A file in a directory the walk enters is listed as a walk of that directory alone
    /// lists it (the ignore files of its parents apply, as in the whole walk). A directory
    /// under a hidden or default-ignored one is not judged (the whole walk skips those, or
    /// enters them for what git tracks).
    fn lists(&self, id: &DocumentId) -> Option<bool> {
        let (dir, name) = id.as_str().rsplit_once('/').unwrap_or(("", id.as_str()));
        let covered = self.paths.iter().any(|p| {
            p.is_empty()
                || dir == p
                || dir
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        let odd = dir.split('/').any(|part| {
            part.starts_with('.') || ctx_fs::walk::DEFAULT_IGNORED_DIRS.contains(&part)
        });
        if !covered || odd {
            return None;
        }
        let opts = ctx_fs::WalkOptions {
            max_depth: Some(1),
            threads: 1,
            metadata: false,
            ..ctx_fs::WalkOptions::default()
        };
        let listed = ctx_fs::walk(&self.root.join(dir), &opts).ok()?;
        Some(listed.iter().any(|entry| entry.rel == name))
    }

    /// A file the walk listed before is listed again while it is there: its directory's
    /// ignore rules are the caller's to watch (a changed `.gitignore` needs a listing).
    fn entry(&self, id: &DocumentId) -> Option<Option<SourceEntry>> {
        let covered = self.paths.iter().any(|p| {
            p.is_empty()
                || id.as_str() == p
                || id
                    .as_str()
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        if !covered {
            return None;
        }
        let path = self.root.join(id.as_str());
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(None),
            // A directory now: what it holds takes a listing.
            Err(_) => None,
            Ok(meta) if meta.is_dir() => None,
            Ok(_) => Some(Some(SourceEntry {
                id: id.clone(),
                fingerprint: std::fs::metadata(&path).ok().map(|m| file_fingerprint(&m)),
            })),
        }
    }

    fn fetch(&self, entry: &SourceEntry) -> Result<RawDocument, ConnectorError> {
        let id = entry.id.to_string();
        let failed = |message: String| ConnectorError::FetchFailed {
            id: id.clone(),
            message,
        };
        let sandbox = self
            .sandbox
            .as_ref()
            .as_ref()
            .map_err(|e| failed(e.clone()))?;
        let resolved = sandbox
            .resolve(entry.id.as_str())
            .map_err(|e| failed(e.to_string()))?;
        if resolved.kind != ctx_fs::sandbox::EntryKind::File {
            return Err(failed("not a regular file".to_owned()));
        }
        let size = resolved.meta.len();
        if size > self.max_file_bytes {
            return Err(ConnectorError::InvalidContent {
                id,
                reason: format!(
                    "{size} bytes is over max_file_bytes ({}); raise it with `ctx config set max_file_bytes N`",
                    self.max_file_bytes
                ),
            });
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        resolved
            .file
            .take(self.max_file_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| failed(e.to_string()))?;
        if memchr_nul(&bytes) {
            return Err(ConnectorError::InvalidContent {
                id,
                reason: "binary file".to_owned(),
            });
        }
        // Text that is not UTF-8 is refused later by `Document::ingest`; redaction applies to
        // the text that can become a document.
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let redacted = self.redactor().redact(text);
            if redacted.is_redacted() {
                bytes = redacted.text.into_owned().into_bytes();
            }
        }
        let mut metadata = Metadata::new();
        if let Some(lang) = ctx_code::Language::from_path(Path::new(entry.id.as_str())) {
            metadata.insert("lang", lang.name());
        }
        Ok(RawDocument {
            id: entry.id.clone(),
            source: format!("file:{id}"),
            bytes,
            metadata,
        })
    }
}

fn memchr_nul(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingestion_skips_or_aborts_on_bad_documents() {
        let mut bad = MemorySource::text("bad.bin", "").expect("id");
        bad.bytes = vec![b'a', 0xff];
        let source = MemorySource::new(vec![
            MemorySource::text("b.txt", "b").expect("id"),
            bad,
            MemorySource::text("a.txt", "a").expect("id"),
        ]);
        let ok = ingest_from_source(
            &source,
            CanonicalizeOptions::default(),
            ErrorPolicy::SkipAndWarn,
        )
        .expect("skip");
        let ids: Vec<_> = ok.documents.iter().map(|d| d.id().to_string()).collect();
        assert_eq!(ids, ["a.txt", "b.txt"]);
        assert_eq!(ok.warnings.len(), 1);
        assert!(ok.warnings[0].contains("bad.bin"), "{:?}", ok.warnings);
        let err = ingest_from_source(&source, CanonicalizeOptions::default(), ErrorPolicy::Abort)
            .expect_err("abort");
        assert!(
            matches!(
                err,
                ConnectorError::PartialFetch {
                    fetched: 2,
                    failed: 1,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn canonicalization_changes_the_version_only_when_on() {
        let raw = MemorySource::text("a.txt", "x \r\n").expect("id");
        let plain = ingest_raw(raw.clone(), CanonicalizeOptions::default()).expect("ok");
        assert_eq!(plain.content(), "x \r\n");
        let canon = ingest_raw(
            raw,
            CanonicalizeOptions {
                line_endings: true,
                trailing_whitespace: true,
                ..CanonicalizeOptions::default()
            },
        )
        .expect("ok");
        assert_eq!(canon.content(), "x\n");
        assert_ne!(plain.version(), canon.version());
    }

    #[test]
    fn filesystem_source_lists_sorted_with_fingerprints_and_skips_binaries() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/b.rs"), "fn b() {}\n").expect("write");
        std::fs::write(dir.path().join("a.md"), "# a\n").expect("write");
        std::fs::write(dir.path().join("blob.bin"), [0u8, 1, 2]).expect("write");
        let source = FilesystemSource::new(dir.path(), Vec::new(), 1 << 20);
        let entries = source.list().expect("list");
        let ids: Vec<_> = entries.iter().map(|e| e.id.to_string()).collect();
        assert_eq!(ids, ["a.md", "blob.bin", "src/b.rs"]);
        assert!(entries.iter().all(|e| e.fingerprint.is_some()));
        let rs = source.fetch(&entries[2]).expect("fetch");
        assert_eq!(rs.source, "file:src/b.rs");
        assert_eq!(rs.metadata.get("lang"), Some(&"rust".into()));
        assert!(matches!(
            source.fetch(&entries[1]),
            Err(ConnectorError::InvalidContent { .. })
        ));
        let only_src = FilesystemSource::new(dir.path(), vec!["src".to_owned()], 1 << 20);
        let ids: Vec<_> = only_src
            .list()
            .expect("list")
            .into_iter()
            .map(|e| e.id.to_string())
            .collect();
        assert_eq!(ids, ["src/b.rs"]);
    }
}
