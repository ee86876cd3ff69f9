//! `search.db`: the SQLite sidecar of an index. It holds what selection needs without reading
//! documents (per-field postings, document lengths, the import/reference graph, recent git
//! activity) and what incremental rebuilds need (source fingerprints, each document's terms,
//! symbols and imports). It lives inside the index directory, so the directory swap replaces
//! it together with the manifest.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ctx_core::ContentHash;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::{CacheBuildConfig, FORMAT_VERSION, SourceRow};
use crate::analyze::{Analysis, FIELDS, Field, decode_fields, get_varint};
use crate::error::IndexError;
use crate::graph::Graph;

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value ANY NOT NULL) STRICT, WITHOUT ROWID;
CREATE TABLE docs (
    num         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    version     TEXT NOT NULL,
    file        TEXT NOT NULL,
    lang        TEXT,
    bytes       INTEGER NOT NULL,
    commits     INTEGER NOT NULL,
    len_content INTEGER NOT NULL,
    len_path    INTEGER NOT NULL,
    len_symbols INTEGER NOT NULL,
    len_strings INTEGER NOT NULL,
    len_comments INTEGER NOT NULL,
    len_defs    INTEGER NOT NULL,
    terms       BLOB NOT NULL,
    symbols     TEXT NOT NULL,
    imports     TEXT NOT NULL
) STRICT;
CREATE TABLE postings (
    field INTEGER NOT NULL,
    term  TEXT NOT NULL,
    docs  BLOB NOT NULL,
    PRIMARY KEY (field, term)
) STRICT, WITHOUT ROWID;
CREATE TABLE sources (
    id          TEXT PRIMARY KEY NOT NULL,
    fingerprint TEXT,
    skipped     TEXT
) STRICT, WITHOUT ROWID;
";

/// One document as the search database holds it.
#[derive(Debug, Clone)]
pub struct DocRow {
    /// Position in id order (0-based); postings and the graph refer to documents by it.
    pub num: u32,
    pub id: String,
    pub version: ContentHash,
    /// The document file's name without `.json`.
    pub file: String,
    pub lang: Option<String>,
    pub bytes: u64,
    /// Recent commits that changed it.
    pub commits: u32,
    /// Term occurrences per field ([`Field`] order).
    pub lengths: [u32; FIELDS],
    /// Terms, symbols and imports, when asked for.
    pub analysis: Option<Analysis>,
}

/// A document to write.
pub(crate) struct NewDoc<'a> {
    pub id: &'a str,
    pub version: ContentHash,
    pub file: &'a str,
    pub fingerprint: Option<&'a str>,
    pub bytes: u64,
    pub commits: u32,
    /// Symbols, imports and language (its term lists are in `terms`).
    pub analysis: &'a Analysis,
    /// The term lists, packed by [`crate::analyze::encode_fields`].
    pub terms: &'a [u8],
    /// Term occurrences per field ([`Field`] order).
    pub lengths: [u32; FIELDS],
}

/// What the `meta` table records besides format and averages.
pub(crate) struct Meta<'a> {
    pub cache_version: ContentHash,
    pub config: &'a CacheBuildConfig,
    pub git_head: Option<&'a str>,
    pub root: Option<&'a Path>,
    /// The import/reference graph, encoded ([`Graph::encode`]).
    pub graph: &'a [u8],
}

fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> IndexError + '_ {
    move |source| IndexError::Database {
        path: path.to_owned(),
        source,
    }
}

/// A search database being written, one document at a time, in a single transaction that
/// [`Writer::finish`] commits. SQLite keeps its page cache bounded (its default, about
/// 2 MB) and writes what does not fit to the file, so the writer holds no more than that
/// however large the tree.
pub(crate) struct Writer {
    conn: Connection,
    path: PathBuf,
    docs: u32,
    /// Term occurrences per field over all documents (for the averages).
    totals: [u64; FIELDS],
}

impl Writer {
    /// Creates a fresh search database at `path`.
    pub(crate) fn create(path: &Path) -> Result<Self, IndexError> {
        let err = db_err(path);
        let conn = Connection::open(path).map_err(&err)?;
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 8192;",
        )
        .map_err(&err)?;
        conn.execute_batch(SCHEMA).map_err(&err)?;
        conn.execute_batch("BEGIN").map_err(&err)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
            docs: 0,
            totals: [0; FIELDS],
        })
    }

    /// Adds the next document (in id order) and its source row; returns its number.
    pub(crate) fn add_doc(&mut self, doc: &NewDoc<'_>) -> Result<u32, IndexError> {
        let err = db_err(&self.path);
        let num = self.docs;
        let a = doc.analysis;
        let length = |field: Field| doc.lengths[field.index()];
        self.conn
            .prepare_cached(
                "INSERT INTO docs (num, id, version, file, lang, bytes, commits, len_content, len_path,
                 len_symbols, len_strings, len_comments, len_defs, terms, symbols, imports)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    i64::from(num),
                    doc.id,
                    doc.version.to_string(),
                    doc.file,
                    a.language.map(ctx_code::Language::name),
                    i64::try_from(doc.bytes).unwrap_or(i64::MAX),
                    doc.commits,
                    length(Field::Content),
                    length(Field::Path),
                    length(Field::Symbols),
                    length(Field::Strings),
                    length(Field::Comments),
                    length(Field::Defs),
                    doc.terms,
                    a.symbols.join("\n"),
                    a.imports.join("\n"),
                ])
            })
            .map_err(&err)?;
        self.add_source(doc.id, doc.fingerprint, None)?;
        for field in Field::ALL {
            self.totals[field.index()] += u64::from(doc.lengths[field.index()]);
        }
        self.docs += 1;
        Ok(num)
    }

    /// Records a listed entry: its fingerprint, and why it was left out if it was.
    pub(crate) fn add_source(
        &self,
        id: &str,
        fingerprint: Option<&str>,
        skipped: Option<&str>,
    ) -> Result<(), IndexError> {
        self.conn
            .prepare_cached("INSERT INTO sources (id, fingerprint, skipped) VALUES (?1, ?2, ?3)")
            .and_then(|mut stmt| stmt.execute(params![id, fingerprint, skipped]))
            .map(drop)
            .map_err(db_err(&self.path))
    }

    /// Adds one term's posting list (terms come in (field, term) order).
    pub(crate) fn add_postings(
        &self,
        field: usize,
        term: &str,
        list: &[u8],
    ) -> Result<(), IndexError> {
        self.conn
            .prepare_cached("INSERT INTO postings (field, term, docs) VALUES (?1, ?2, ?3)")
            .and_then(|mut stmt| {
                stmt.execute(params![
                    i64::try_from(field).unwrap_or(i64::MAX),
                    term,
                    list
                ])
            })
            .map(drop)
            .map_err(db_err(&self.path))
    }

    /// Writes the `meta` table and commits.
    pub(crate) fn finish(self, meta: &Meta<'_>) -> Result<(), IndexError> {
        let err = db_err(&self.path);
        {
            let mut insert = self
                .conn
                .prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")
                .map_err(&err)?;
            let config = ctx_core::canonical::to_string(meta.config).expect("config is plain JSON");
            insert
                .execute(params!["format_version", FORMAT_VERSION.to_string()])
                .map_err(&err)?;
            insert
                .execute(params!["cache_version", meta.cache_version.to_string()])
                .map_err(&err)?;
            insert.execute(params!["config", config]).map_err(&err)?;
            if let Some(head) = meta.git_head {
                insert.execute(params!["git_head", head]).map_err(&err)?;
            }
            if let Some(root) = meta.root {
                insert
                    .execute(params!["root", root.to_string_lossy()])
                    .map_err(&err)?;
            }
            let n = f64::from(self.docs.max(1));
            for field in Field::ALL {
                insert
                    .execute(params![
                        format!("avg_len_{}", field.index()),
                        format!("{}", self.totals[field.index()] as f64 / n)
                    ])
                    .map_err(&err)?;
            }
            insert.execute(params!["graph", meta.graph]).map_err(&err)?;
        }
        self.conn.execute_batch("COMMIT").map_err(&err)?;
        Ok(())
    }
}

/// An open search database (read-only).
pub struct SearchDb {
    conn: Connection,
    path: PathBuf,
    name: String,
    meta: HashMap<String, Vec<u8>>,
}

impl SearchDb {
    /// Opens the search database of index `name`, checking its format.
    pub fn open(path: &Path, name: &str) -> Result<Self, IndexError> {
        if !path.is_file() {
            return Err(IndexError::corrupt(
                name,
                format!("{} is missing", super::SEARCH_DB_FILE),
            ));
        }
        let err = db_err(path);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(&err)?;
        let damaged = |e: rusqlite::Error| {
            IndexError::corrupt(name, format!("{}: {e}", super::SEARCH_DB_FILE))
        };
        let meta: HashMap<String, Vec<u8>> =
            conn.prepare("SELECT key, value FROM meta")
                .and_then(|mut stmt| {
                    stmt.query_map([], |row| {
                        let key: String = row.get(0)?;
                        let value = match row.get_ref(1)? {
                            rusqlite::types::ValueRef::Text(t)
                            | rusqlite::types::ValueRef::Blob(t) => t.to_vec(),
                            other => other
                                .as_str()
                                .map(|s| s.as_bytes().to_vec())
                                .unwrap_or_default(),
                        };
                        Ok((key, value))
                    })?
                    .collect()
                })
                .map_err(damaged)?;
        let db = Self {
            conn,
            path: path.to_owned(),
            name: name.to_owned(),
            meta,
        };
        let format: u32 = db
            .meta_str("format_version")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| db.corrupt("no format_version"))?;
        if format > FORMAT_VERSION {
            return Err(IndexError::NewerFormat {
                name: name.to_owned(),
                name_flag: crate::error::name_flag(name),
                found: format,
                known: FORMAT_VERSION,
            });
        }
        if db
            .meta_str("cache_version")
            .and_then(|v| v.parse::<ContentHash>().ok())
            .is_none()
        {
            return Err(db.corrupt("no cache_version"));
        }
        Ok(db)
    }

    fn corrupt(&self, what: &str) -> IndexError {
        IndexError::corrupt(&self.name, format!("{}: {what}", super::SEARCH_DB_FILE))
    }

    fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The cache version the database was written for.
    pub fn cache_version(&self) -> ContentHash {
        self.meta_str("cache_version")
            .and_then(|v| v.parse().ok())
            .expect("checked on open")
    }

    /// The git commit recent activity was counted at.
    pub fn git_head(&self) -> Option<&str> {
        self.meta_str("git_head")
    }

    /// The workspace root the index was built from.
    pub fn root(&self) -> Option<&str> {
        self.meta_str("root")
    }

    /// Average term occurrences per document, per field.
    pub fn average_lengths(&self) -> [f64; FIELDS] {
        let mut out = [0.0; FIELDS];
        for field in Field::ALL {
            out[field.index()] = self
                .meta_str(&format!("avg_len_{}", field.index()))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
        }
        out
    }

    /// The import/reference graph.
    pub fn graph(&self) -> Result<Graph, IndexError> {
        let bytes = self
            .meta
            .get("graph")
            .ok_or_else(|| self.corrupt("no graph"))?;
        Graph::decode(bytes).ok_or_else(|| self.corrupt("damaged graph"))
    }

    /// Fingerprints and skip reasons of every listed entry.
    pub(crate) fn sources(&self) -> Result<HashMap<String, SourceRow>, IndexError> {
        self.conn
            .prepare("SELECT id, fingerprint, skipped FROM sources")
            .and_then(|mut stmt| {
                stmt.query_map([], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        SourceRow {
                            fingerprint: row.get(1)?,
                            skipped: row.get(2)?,
                        },
                    ))
                })?
                .collect()
            })
            .map_err(|e| self.corrupt(&e.to_string()))
    }

    /// Every document in id order; with `analysis`, their terms, symbols and imports too.
    pub fn doc_rows(&self, analysis: bool) -> Result<Vec<DocRow>, IndexError> {
        let sql = if analysis {
            "SELECT num, id, version, file, lang, bytes, commits, len_content, len_path, len_symbols, len_strings, len_comments, len_defs, terms, symbols, imports FROM docs ORDER BY num"
        } else {
            "SELECT num, id, version, file, lang, bytes, commits, len_content, len_path, len_symbols, len_strings, len_comments, len_defs FROM docs ORDER BY num"
        };
        let mut stmt = self
            .conn
            .prepare(sql)
            .map_err(|e| self.corrupt(&e.to_string()))?;
        let rows = stmt
            .query_map([], |row| {
                let version: String = row.get(2)?;
                let analysis = if analysis {
                    let terms: Vec<u8> = row.get(13)?;
                    let symbols: String = row.get(14)?;
                    let imports: String = row.get(15)?;
                    let lang: Option<String> = row.get(4)?;
                    Some((terms, symbols, imports, lang))
                } else {
                    None
                };
                Ok((
                    row.get::<_, u32>(0)?,
                    row.get::<_, String>(1)?,
                    version,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, i64>(5)?,
                    row.get::<_, u32>(6)?,
                    [
                        row.get::<_, u32>(7)?,
                        row.get::<_, u32>(8)?,
                        row.get::<_, u32>(9)?,
                        row.get::<_, u32>(10)?,
                        row.get::<_, u32>(11)?,
                        row.get::<_, u32>(12)?,
                    ],
                    analysis,
                ))
            })
            .map_err(|e| self.corrupt(&e.to_string()))?;
        let mut out = Vec::new();
        for row in rows {
            let (num, id, version, file, lang, bytes, commits, lengths, raw) =
                row.map_err(|e| self.corrupt(&e.to_string()))?;
            let version: ContentHash = version
                .parse()
                .map_err(|_| self.corrupt(&format!("bad version of `{id}`")))?;
            let analysis = match raw {
                Some((terms, symbols, imports, lang)) => Some(Analysis {
                    fields: decode_fields(&terms)
                        .ok_or_else(|| self.corrupt(&format!("damaged terms of `{id}`")))?,
                    symbols: split_lines(&symbols),
                    imports: split_lines(&imports),
                    language: lang.as_deref().and_then(ctx_code::Language::from_name),
                }),
                None => None,
            };
            out.push(DocRow {
                num,
                id,
                version,
                file,
                lang,
                bytes: u64::try_from(bytes).unwrap_or(0),
                commits,
                lengths,
                analysis,
            });
        }
        Ok(out)
    }

    /// The terms, symbols and imports of document `num` (`id`), which a rebuild reuses.
    pub(crate) fn analysis(&self, num: u32, id: &str) -> Result<Analysis, IndexError> {
        let (terms, symbols, imports, lang) = self
            .conn
            .prepare_cached("SELECT terms, symbols, imports, lang FROM docs WHERE num = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([num], |row| {
                    Ok((
                        row.get::<_, Vec<u8>>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<String>>(3)?,
                    ))
                })
            })
            .map_err(|e| self.corrupt(&e.to_string()))?;
        Ok(Analysis {
            fields: decode_fields(&terms)
                .ok_or_else(|| self.corrupt(&format!("damaged terms of `{id}`")))?,
            symbols: split_lines(&symbols),
            imports: split_lines(&imports),
            language: lang.as_deref().and_then(ctx_code::Language::from_name),
        })
    }

    /// The postings of `term` in `field`: (document number, term frequency), by number.
    pub fn postings(&self, field: Field, term: &str) -> Result<Vec<(u32, u32)>, IndexError> {
        let blob: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT docs FROM postings WHERE field = ?1 AND term = ?2")
            .and_then(|mut stmt| {
                stmt.query_row(params![field as i64, term], |row| row.get(0))
                    .optional()
            })
            .map_err(|e| self.corrupt(&e.to_string()))?;
        let Some(blob) = blob else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut pos = 0;
        let mut num = 0u64;
        while pos < blob.len() {
            let (Some(delta), Some(tf)) =
                (get_varint(&blob, &mut pos), get_varint(&blob, &mut pos))
            else {
                return Err(self.corrupt(&format!("damaged postings for `{term}`")));
            };
            num += delta;
            out.push((
                u32::try_from(num).map_err(|_| self.corrupt("document number overflow"))?,
                u32::try_from(tf).unwrap_or(u32::MAX),
            ));
        }
        Ok(out)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn split_lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        Vec::new()
    } else {
        text.split('\n').map(str::to_owned).collect()
    }
}

/// Every row of every table of the search database at `path`, in key order, each value with
/// its type: what two builds of the same input must agree on (tests compare these, not the
/// file's bytes, whose page layout is SQLite's business).
#[cfg(test)]
pub(crate) fn dump_rows(path: &Path) -> Vec<u8> {
    use rusqlite::types::ValueRef;
    let mut out = Vec::new();
    let conn = Connection::open(path).expect("open search.db");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("tables");
    assert_eq!(tables, ["docs", "meta", "postings", "sources"]);
    for (table, key) in [
        ("docs", "num"),
        ("meta", "key"),
        ("postings", "field, term"),
        ("sources", "id"),
    ] {
        out.extend_from_slice(table.as_bytes());
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {key}"))
            .expect("select");
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).expect("query");
        while let Some(row) = rows.next().expect("row") {
            for i in 0..columns {
                match row.get_ref(i).expect("value") {
                    ValueRef::Null => out.push(0),
                    ValueRef::Integer(n) => {
                        out.push(1);
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                    ValueRef::Real(x) => {
                        out.push(2);
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                    ValueRef::Text(t) => {
                        out.push(3);
                        out.extend_from_slice(&(t.len() as u64).to_le_bytes());
                        out.extend_from_slice(t);
                    }
                    ValueRef::Blob(b) => {
                        out.push(4);
                        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
                        out.extend_from_slice(b);
                    }
                }
            }
        }
    }
    out
}
