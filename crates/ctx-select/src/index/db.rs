//! `search.db`: the SQLite sidecar of an index. It holds what selection needs without reading
//! documents (per-field postings, document lengths, the import/reference graph, recent git
//! activity) and what incremental rebuilds need (source fingerprints, each document's terms,
//! symbols and imports; the lists of documents defining each term and the import edges, from
//! which an update in place recomputes the graph edges it changes). It lives inside the index
//! directory, so the directory swap replaces it together with the manifest.
//!
//! A fresh build numbers documents in id order. An update in place keeps the numbers of the
//! documents it does not remove and numbers new ones after the last, so numbers may have gaps
//! and stop following ids; readers never see that: [`SearchDb`] hands out positions in id
//! order (rows, postings and graph alike), which are a fresh build's numbers of the same
//! documents.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use ctx_core::ContentHash;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::{CacheBuildConfig, FORMAT_VERSION, SourceRow};
use crate::analyze::{Analysis, FIELDS, Field, decode_fields, get_varint, put_varint};
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
    /// Position in id order (0-based); postings and the graph, as [`SearchDb`] gives them,
    /// refer to documents by it.
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
    /// Terms, symbols and imports, when asked for (boxed: a row without them, as selection
    /// holds one per document, stays small).
    pub analysis: Option<Box<Analysis>>,
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
    /// Its import edges alone, encoded the same way.
    pub imports: &'a [u8],
}

pub(crate) fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> IndexError + '_ {
    move |source| IndexError::Database {
        path: path.to_owned(),
        source,
    }
}

/// `meta`'s `len_totals`: the number of documents, then their term occurrences per field,
/// separated by spaces (an update in place adjusts them instead of summing every row).
fn totals_text(docs: u32, totals: &[u64; FIELDS]) -> String {
    let mut out = docs.to_string();
    for total in totals {
        out.push(' ');
        out.push_str(&total.to_string());
    }
    out
}

/// Inverse of [`totals_text`].
fn parse_totals(text: &str) -> Option<(u32, [u64; FIELDS])> {
    let mut parts = text.split(' ');
    let docs = parts.next()?.parse().ok()?;
    let mut totals = [0u64; FIELDS];
    for total in &mut totals {
        *total = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then_some((docs, totals))
}

/// Writes a `sources` row (`verb`: `INSERT`, or `INSERT OR REPLACE` to change one).
fn put_source(
    conn: &Connection,
    verb: &str,
    id: &str,
    fingerprint: Option<&str>,
    skipped: Option<&str>,
) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(&format!(
        "{verb} INTO sources (id, fingerprint, skipped) VALUES (?1, ?2, ?3)"
    ))?
    .execute(params![id, fingerprint, skipped])
    .map(drop)
}

/// Writes document row `num` (`verb`: `INSERT`, or `INSERT OR REPLACE` to change one).
fn insert_doc(
    conn: &Connection,
    num: u32,
    doc: &NewDoc<'_>,
    verb: &str,
) -> Result<(), rusqlite::Error> {
    let a = doc.analysis;
    let length = |field: Field| doc.lengths[field.index()];
    conn.prepare_cached(&format!(
        "{verb} INTO docs (num, id, version, file, lang, bytes, commits, len_content, len_path,
         len_symbols, len_strings, len_comments, len_defs, terms, symbols, imports)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
    ))?
    .execute(params![
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
    .map(drop)
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
        let num = self.docs;
        insert_doc(&self.conn, num, doc, "INSERT").map_err(db_err(&self.path))?;
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
        put_source(&self.conn, "INSERT", id, fingerprint, skipped).map_err(db_err(&self.path))
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
            insert
                .execute(params!["len_totals", totals_text(self.docs, &self.totals)])
                .map_err(&err)?;
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
            insert
                .execute(params!["import_graph", meta.imports])
                .map_err(&err)?;
        }
        self.conn.execute_batch("COMMIT").map_err(&err)?;
        Ok(())
    }
}

/// A document's row as an update reads it.
pub(crate) struct StoredDoc {
    pub num: u32,
    pub commits: u32,
    /// Term occurrences per field ([`Field`] order).
    pub lengths: [u32; FIELDS],
    /// Its term lists, packed.
    pub terms: Vec<u8>,
    pub symbols: Vec<String>,
    pub imports: Vec<String>,
    pub lang: Option<String>,
}

/// A search database changed in place ([`super::update`]), in one transaction that
/// [`Editor::commit`] commits; dropped without it, nothing changes.
///
/// Synchronous writes are off: the index is a cache of the tree, a process that dies leaves
/// the transaction undone (SQLite's journal), and only a machine that loses power can lose a
/// committed update, which `index verify` and a forced build mend.
pub(crate) struct Editor {
    conn: Connection,
    path: PathBuf,
    name: String,
}

impl Editor {
    pub(crate) fn open(path: &Path, name: &str) -> Result<Self, IndexError> {
        let err = db_err(path);
        let conn = Connection::open(path).map_err(&err)?;
        conn.execute_batch("PRAGMA synchronous = OFF; BEGIN IMMEDIATE")
            .map_err(&err)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
            name: name.to_owned(),
        })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> IndexError + '_ {
        db_err(&self.path)
    }

    fn damaged(&self, what: &str) -> IndexError {
        IndexError::corrupt(&self.name, format!("{}: {what}", super::SEARCH_DB_FILE))
    }

    /// The number after the last document's.
    pub(crate) fn next_num(&self) -> Result<u32, IndexError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(num) + 1, 0) FROM docs", [], |r| {
                r.get(0)
            })
            .map_err(self.err())
    }

    pub(crate) fn doc(&self, id: &str) -> Result<Option<StoredDoc>, IndexError> {
        self.conn
            .prepare_cached(
                "SELECT num, commits, terms, symbols, imports, lang, len_content, len_path,
                 len_symbols, len_strings, len_comments, len_defs FROM docs WHERE id = ?1",
            )
            .and_then(|mut stmt| {
                stmt.query_row([id], |r| {
                    Ok(StoredDoc {
                        num: r.get(0)?,
                        commits: r.get(1)?,
                        terms: r.get(2)?,
                        symbols: split_lines(&r.get::<_, String>(3)?),
                        imports: split_lines(&r.get::<_, String>(4)?),
                        lang: r.get(5)?,
                        lengths: [
                            r.get(6)?,
                            r.get(7)?,
                            r.get(8)?,
                            r.get(9)?,
                            r.get(10)?,
                            r.get(11)?,
                        ],
                    })
                })
                .optional()
            })
            .map_err(self.err())
    }

    /// Posting list `list` of `term`, by stored number.
    pub(crate) fn list(&self, list: usize, term: &str) -> Result<Vec<(u32, u32)>, IndexError> {
        let blob = stored_list(&self.conn, list, term).map_err(self.err())?;
        match blob {
            None => Ok(Vec::new()),
            Some(blob) => decode_list(&blob)
                .ok_or_else(|| self.damaged(&format!("damaged postings of `{term}`"))),
        }
    }

    /// Replaces posting list `list` of `term` (removes it when empty).
    pub(crate) fn write_list(
        &self,
        list: usize,
        term: &str,
        docs: &[(u32, u32)],
    ) -> Result<(), IndexError> {
        let list = i64::try_from(list).unwrap_or(i64::MAX);
        let result = if docs.is_empty() {
            self.conn
                .prepare_cached("DELETE FROM postings WHERE field = ?1 AND term = ?2")
                .and_then(|mut stmt| stmt.execute(params![list, term]))
        } else {
            self.conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO postings (field, term, docs) VALUES (?1, ?2, ?3)",
                )
                .and_then(|mut stmt| stmt.execute(params![list, term, encode_list(docs)]))
        };
        result.map(drop).map_err(self.err())
    }

    /// Writes document `num`'s row, new or changed.
    pub(crate) fn put_doc(&self, num: u32, doc: &NewDoc<'_>) -> Result<(), IndexError> {
        insert_doc(&self.conn, num, doc, "INSERT OR REPLACE").map_err(self.err())
    }

    pub(crate) fn delete_doc(&self, num: u32) -> Result<(), IndexError> {
        self.conn
            .execute("DELETE FROM docs WHERE num = ?1", [num])
            .map(drop)
            .map_err(self.err())
    }

    /// Records a listed entry's fingerprint and why it was left out, if it was.
    pub(crate) fn put_source(
        &self,
        id: &str,
        fingerprint: Option<&str>,
        skipped: Option<&str>,
    ) -> Result<(), IndexError> {
        put_source(&self.conn, "INSERT OR REPLACE", id, fingerprint, skipped).map_err(self.err())
    }

    pub(crate) fn delete_source(&self, id: &str) -> Result<(), IndexError> {
        self.conn
            .execute("DELETE FROM sources WHERE id = ?1", [id])
            .map(drop)
            .map_err(self.err())
    }

    /// A `meta` value as bytes.
    pub(crate) fn meta(&self, key: &str) -> Result<Vec<u8>, IndexError> {
        let value: Option<Vec<u8>> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
                Ok(match r.get_ref(0)? {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        t.to_vec()
                    }
                    _ => Vec::new(),
                })
            })
            .optional()
            .map_err(self.err())?;
        value.ok_or_else(|| self.damaged(&format!("no {key}")))
    }

    /// Sets a `meta` value (`None` removes it).
    pub(crate) fn set_meta(
        &self,
        key: &str,
        value: Option<&dyn rusqlite::ToSql>,
    ) -> Result<(), IndexError> {
        let result = match value {
            Some(value) => self.conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                params![key, value],
            ),
            None => self.conn.execute("DELETE FROM meta WHERE key = ?1", [key]),
        };
        result.map(drop).map_err(self.err())
    }

    /// Every document's (number, id), in id order.
    pub(crate) fn ids(&self) -> Result<Vec<(u32, String)>, IndexError> {
        self.conn
            .prepare("SELECT num, id FROM docs ORDER BY id")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(self.err())
    }

    /// (number, language, imports) of the documents with a language that import something.
    pub(crate) fn importers(&self) -> Result<Vec<(u32, String, Vec<String>)>, IndexError> {
        self.conn
            .prepare(
                "SELECT num, lang, imports FROM docs WHERE lang IS NOT NULL AND imports != ''
                 ORDER BY num",
            )
            .and_then(|mut stmt| {
                stmt.query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, split_lines(&r.get::<_, String>(2)?)))
                })?
                .collect()
            })
            .map_err(self.err())
    }

    /// Sets every document's recent-activity count: `commits[id]`, 0 for those not in it.
    pub(crate) fn set_commits(&self, commits: &BTreeMap<String, u32>) -> Result<(), IndexError> {
        let counted: Vec<(String, u32)> = self
            .conn
            .prepare("SELECT id, commits FROM docs WHERE commits != 0")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(self.err())?;
        let update = |id: &str, n: u32| {
            self.conn
                .prepare_cached("UPDATE docs SET commits = ?2 WHERE id = ?1 AND commits != ?2")
                .and_then(|mut stmt| stmt.execute(params![id, n]))
                .map(drop)
                .map_err(self.err())
        };
        for (id, _) in counted.iter().filter(|(id, _)| !commits.contains_key(id)) {
            update(id, 0)?;
        }
        for (id, n) in commits {
            update(id, *n)?;
        }
        Ok(())
    }

    /// The number of documents and their term occurrences per field, as last written.
    pub(crate) fn totals(&self) -> Result<(u32, [u64; FIELDS]), IndexError> {
        let text = self.meta("len_totals")?;
        std::str::from_utf8(&text)
            .ok()
            .and_then(parse_totals)
            .ok_or_else(|| self.damaged("damaged len_totals"))
    }

    /// Writes the totals and the averages they make.
    pub(crate) fn set_totals(&self, docs: u32, totals: &[u64; FIELDS]) -> Result<(), IndexError> {
        self.set_meta("len_totals", Some(&totals_text(docs, totals)))?;
        let n = f64::from(docs.max(1));
        for field in Field::ALL {
            let average = format!("{}", totals[field.index()] as f64 / n);
            self.set_meta(&format!("avg_len_{}", field.index()), Some(&average))?;
        }
        Ok(())
    }

    pub(crate) fn commit(self) -> Result<(), IndexError> {
        self.conn
            .execute_batch("COMMIT")
            .map_err(db_err(&self.path))
    }
}

/// One `meta` row of the search database at `path`, read without the rest of the table
/// (whose graph is megabytes); `None` when it cannot be read.
fn stored_meta(path: &Path, key: &str) -> Option<String> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?
    .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
    .ok()
}

/// The cache version the search database at `path` holds now, to tell whether an index
/// changed.
pub(crate) fn stored_cache_version(path: &Path) -> Option<ContentHash> {
    stored_meta(path, "cache_version")?.parse().ok()
}

/// The build configuration the search database at `path` records.
pub(crate) fn stored_config(path: &Path) -> Option<CacheBuildConfig> {
    serde_json::from_str(&stored_meta(path, "config")?).ok()
}

/// An open search database (read-only).
pub struct SearchDb {
    conn: Connection,
    path: PathBuf,
    name: String,
    meta: HashMap<String, Vec<u8>>,
    /// Stored document number → position in id order, when they differ (after updates in
    /// place); `u32::MAX` where no document has the number. Read on first use.
    positions: std::sync::OnceLock<Option<Vec<u32>>>,
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
            positions: std::sync::OnceLock::new(),
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

    /// Stored numbers in id order (the id index holds them, so nothing else is read); `None`
    /// when they are 0, 1, 2, … as a fresh build writes them.
    fn read_positions(&self) -> Result<Option<Vec<u32>>, IndexError> {
        let nums: Vec<u32> = self
            .conn
            .prepare("SELECT num FROM docs ORDER BY id")
            .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
            .map_err(|e| self.corrupt(&e.to_string()))?;
        if nums.iter().enumerate().all(|(i, &n)| n as usize == i) {
            return Ok(None);
        }
        let slots = nums.iter().max().map_or(0, |&m| m as usize + 1);
        let mut positions = vec![u32::MAX; slots];
        for (pos, &num) in nums.iter().enumerate() {
            positions[num as usize] = u32::try_from(pos).unwrap_or(u32::MAX);
        }
        Ok(Some(positions))
    }

    /// Stored number → position, `None` when they are the same.
    fn positions(&self) -> Result<Option<&[u32]>, IndexError> {
        if let Some(known) = self.positions.get() {
            return Ok(known.as_deref());
        }
        let read = self.read_positions()?;
        Ok(self.positions.get_or_init(|| read).as_deref())
    }

    /// The position of stored number `num`.
    fn position(&self, num: u32) -> Result<Option<u32>, IndexError> {
        Ok(match self.positions()? {
            None => Some(num),
            Some(map) => map.get(num as usize).copied().filter(|&p| p != u32::MAX),
        })
    }

    fn corrupt(&self, what: &str) -> IndexError {
        IndexError::corrupt(&self.name, format!("{}: {what}", super::SEARCH_DB_FILE))
    }

    fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Whether the `meta` table has `key`.
    pub(crate) fn has_meta(&self, key: &str) -> bool {
        self.meta.contains_key(key)
    }

    /// The cache version the database was written for.
    pub fn cache_version(&self) -> ContentHash {
        self.meta_str("cache_version")
            .and_then(|v| v.parse().ok())
            .expect("checked on open")
    }

    /// The build configuration recorded.
    pub(crate) fn config(&self) -> Option<CacheBuildConfig> {
        serde_json::from_str(self.meta_str("config")?).ok()
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

    /// The import/reference graph, by position.
    pub fn graph(&self) -> Result<Graph, IndexError> {
        let bytes = self
            .meta
            .get("graph")
            .ok_or_else(|| self.corrupt("no graph"))?;
        let graph = Graph::decode(bytes).ok_or_else(|| self.corrupt("damaged graph"))?;
        let Some(map) = self.positions()? else {
            return Ok(graph);
        };
        let count = map.iter().filter(|&&p| p != u32::MAX).count();
        let mut edges = vec![Vec::new(); count];
        for (num, list) in graph.edges.into_iter().enumerate() {
            let Some(from) = map.get(num).copied().filter(|&p| p != u32::MAX) else {
                if list.is_empty() {
                    continue;
                }
                return Err(self.corrupt("graph edges of a removed document"));
            };
            let mut moved = Vec::with_capacity(list.len());
            for (to, w) in list {
                let to = self
                    .position(to)?
                    .ok_or_else(|| self.corrupt("graph edge to a removed document"))?;
                moved.push((to, w));
            }
            moved.sort_unstable();
            edges[from as usize] = moved;
        }
        Ok(Graph { edges })
    }

    /// Whether the entries this index was built from are `entries` (sorted by id), each with
    /// the same fingerprint, compared a row at a time (nothing of the index is held); with
    /// the reasons the skipped ones were left out, as a build reports them (sorted).
    pub(crate) fn same_sources(
        &self,
        entries: &[crate::source::SourceEntry],
    ) -> Result<Option<Vec<String>>, IndexError> {
        let damaged = |e: rusqlite::Error| self.corrupt(&e.to_string());
        let mut stmt = self
            .conn
            .prepare("SELECT id, fingerprint, skipped FROM sources ORDER BY id")
            .map_err(damaged)?;
        let mut rows = stmt.query([]).map_err(damaged)?;
        let mut skipped = Vec::new();
        let mut expected = entries.iter();
        while let Some(row) = rows.next().map_err(damaged)? {
            let id: String = row.get(0).map_err(damaged)?;
            let fingerprint: Option<String> = row.get(1).map_err(damaged)?;
            let Some(entry) = expected.next() else {
                return Ok(None);
            };
            if entry.id.as_str() != id
                || entry.fingerprint.is_none()
                || entry.fingerprint != fingerprint
            {
                return Ok(None);
            }
            let reason: Option<String> = row.get(2).map_err(damaged)?;
            if let Some(reason) = reason {
                skipped.push(super::skip_line(&id, &reason));
            }
        }
        if expected.next().is_some() {
            return Ok(None);
        }
        skipped.sort();
        Ok(Some(skipped))
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

    /// How many documents the index holds.
    pub fn documents(&self) -> Result<usize, IndexError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM docs", [], |r| r.get::<_, i64>(0))
            .map(|n| usize::try_from(n).unwrap_or(0))
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
        let mut out = Vec::with_capacity(self.documents()?);
        for row in rows {
            let (num, id, version, file, lang, bytes, commits, lengths, raw) =
                row.map_err(|e| self.corrupt(&e.to_string()))?;
            let version: ContentHash = version
                .parse()
                .map_err(|_| self.corrupt(&format!("bad version of `{id}`")))?;
            let analysis = match raw {
                Some((terms, symbols, imports, lang)) => Some(Box::new(Analysis {
                    fields: decode_fields(&terms)
                        .ok_or_else(|| self.corrupt(&format!("damaged terms of `{id}`")))?,
                    symbols: split_lines(&symbols),
                    imports: split_lines(&imports),
                    language: lang.as_deref().and_then(ctx_code::Language::from_name),
                })),
                None => None,
            };
            let num = self
                .position(num)?
                .ok_or_else(|| self.corrupt(&format!("no position for `{id}`")))?;
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
        if self.positions()?.is_some() {
            out.sort_unstable_by_key(|r| r.num);
        }
        Ok(out)
    }

    /// The terms, symbols and imports of document `id`, which a rebuild reuses.
    pub(crate) fn analysis(&self, id: &str) -> Result<Analysis, IndexError> {
        let (terms, symbols, imports, lang) = self
            .conn
            .prepare_cached("SELECT terms, symbols, imports, lang FROM docs WHERE id = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([id], |row| {
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

    /// The postings of `term` in `field`: (document position, term frequency), by position.
    pub fn postings(&self, field: Field, term: &str) -> Result<Vec<(u32, u32)>, IndexError> {
        let mut out = self.stored_postings(field.index(), term)?;
        if self.positions()?.is_some() {
            for entry in &mut out {
                entry.0 = self.position(entry.0)?.ok_or_else(|| {
                    self.corrupt(&format!("postings of `{term}` name no document"))
                })?;
            }
            out.sort_unstable();
        }
        Ok(out)
    }

    /// The list `list` of `term` as stored (by stored number).
    fn stored_postings(&self, list: usize, term: &str) -> Result<Vec<(u32, u32)>, IndexError> {
        let blob = stored_list(&self.conn, list, term).map_err(|e| self.corrupt(&e.to_string()))?;
        let Some(blob) = blob else {
            return Ok(Vec::new());
        };
        decode_list(&blob).ok_or_else(|| self.corrupt(&format!("damaged postings for `{term}`")))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The bytes of posting list `list` of `term`, if it has one.
fn stored_list(
    conn: &Connection,
    list: usize,
    term: &str,
) -> Result<Option<Vec<u8>>, rusqlite::Error> {
    conn.prepare_cached("SELECT docs FROM postings WHERE field = ?1 AND term = ?2")?
        .query_row(
            params![i64::try_from(list).unwrap_or(i64::MAX), term],
            |r| r.get(0),
        )
        .optional()
}

/// A stored posting list: (document number, term frequency) pairs as delta and frequency
/// varints. `None` if damaged.
pub(crate) fn decode_list(blob: &[u8]) -> Option<Vec<(u32, u32)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut num = 0u64;
    while pos < blob.len() {
        num += get_varint(blob, &mut pos)?;
        let tf = get_varint(blob, &mut pos)?;
        out.push((
            u32::try_from(num).ok()?,
            u32::try_from(tf).unwrap_or(u32::MAX),
        ));
    }
    Some(out)
}

/// Inverse of [`decode_list`] (pairs in number order).
pub(crate) fn encode_list(list: &[(u32, u32)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(list.len() * 2);
    let mut previous = 0u32;
    for &(num, tf) in list {
        put_varint(&mut out, u64::from(num - previous));
        put_varint(&mut out, u64::from(tf));
        previous = num;
    }
    out
}

pub(crate) fn split_lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        Vec::new()
    } else {
        text.split('\n').map(str::to_owned).collect()
    }
}

/// Every row of every table of the search database at `path`, in key order, each value with
/// its type: what two builds of the same input must agree on (tests compare these, not the
/// file's bytes, whose page layout is SQLite's business). Documents are named by position in
/// id order, not by stored number, in the rows, the postings and the graph, so an index
/// updated in place dumps as a fresh build of the same tree does.
#[cfg(test)]
pub(crate) fn dump_rows(path: &Path) -> Vec<u8> {
    use rusqlite::types::ValueRef;
    let conn = Connection::open(path).expect("open search.db");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("tables");
    assert_eq!(tables, ["docs", "meta", "postings", "sources"]);
    let nums: Vec<u32> = conn
        .prepare("SELECT num FROM docs ORDER BY id")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("nums");
    let mut position: HashMap<u32, u32> = HashMap::new();
    for (pos, num) in nums.iter().enumerate() {
        position.insert(*num, u32::try_from(pos).expect("few documents"));
    }
    let moved_list = |blob: &[u8]| -> Vec<u8> {
        let mut list: Vec<(u32, u32)> = decode_list(blob)
            .expect("postings")
            .into_iter()
            .map(|(n, tf)| (position[&n], tf))
            .collect();
        list.sort_unstable();
        encode_list(&list)
    };
    let moved_graph = |blob: &[u8]| -> Vec<u8> {
        let graph = Graph::decode(blob).expect("graph");
        let mut edges = vec![Vec::new(); nums.len()];
        for (num, list) in graph.edges.into_iter().enumerate() {
            let num = u32::try_from(num).expect("few documents");
            let Some(&from) = position.get(&num) else {
                assert!(list.is_empty(), "edges of a removed document");
                continue;
            };
            let mut list: Vec<(u32, u32)> =
                list.into_iter().map(|(to, w)| (position[&to], w)).collect();
            list.sort_unstable();
            edges[from as usize] = list;
        }
        Graph { edges }.encode()
    };
    let mut out = Vec::new();
    for (table, columns, key) in [
        (
            "docs",
            "id, version, file, lang, bytes, commits, len_content, len_path, len_symbols, len_strings, len_comments, len_defs, terms, symbols, imports",
            "id",
        ),
        ("meta", "key, value", "key"),
        ("postings", "field, term, docs", "field, term"),
        ("sources", "id, fingerprint, skipped", "id"),
    ] {
        out.extend_from_slice(table.as_bytes());
        let mut stmt = conn
            .prepare(&format!("SELECT {columns} FROM {table} ORDER BY {key}"))
            .expect("select");
        let count = stmt.column_count();
        let mut rows = stmt.query([]).expect("query");
        while let Some(row) = rows.next().expect("row") {
            let first: Option<String> = row.get::<_, String>(0).ok();
            for i in 0..count {
                let value = row.get_ref(i).expect("value");
                let moved = match (table, first.as_deref(), i, value) {
                    ("postings", _, 2, ValueRef::Blob(b)) => Some(moved_list(b)),
                    ("meta", Some("graph" | "import_graph"), 1, ValueRef::Blob(b)) => {
                        Some(moved_graph(b))
                    }
                    _ => None,
                };
                match (moved, value) {
                    (Some(b), _) => {
                        out.push(4);
                        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
                        out.extend_from_slice(&b);
                    }
                    (None, ValueRef::Null) => out.push(0),
                    (None, ValueRef::Integer(n)) => {
                        out.push(1);
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                    (None, ValueRef::Real(x)) => {
                        out.push(2);
                        out.extend_from_slice(&x.to_le_bytes());
                    }
                    (None, ValueRef::Text(t)) => {
                        out.push(3);
                        out.extend_from_slice(&(t.len() as u64).to_le_bytes());
                        out.extend_from_slice(t);
                    }
                    (None, ValueRef::Blob(b)) => {
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
