//! The render cache (`render_files`): what a render learned about a file at a stamp, so a
//! warm render plans without reading, redacting or counting unchanged files.

use rusqlite::{OptionalExtension, params};

use crate::StoreError;
use crate::db::{SqliteMetadata, read_transaction};
use crate::summary_cache::inode_column;

/// A file as a render last read it: its stamp (path, size, modification time, inode), the
/// hash of its bytes, and, under one redaction rule set and block layout, the redacted text's
/// hash, the findings, the block's token-cache key and its token count. Or, for a file its
/// bytes kept out (`skip` not empty), only the stamp and why.
///
/// Rows are derived data: a row only lets a render skip work, never changes what it writes.
/// A render still reads every file it includes and checks its bytes hash to `raw_hash`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderFileRow {
    /// The absolute path.
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub inode: u64,
    /// The hash of the file's bytes as read.
    pub raw_hash: String,
    /// Which redaction rules applied (a digest of their definitions).
    pub rules: String,
    /// The hash of the redacted text.
    pub content_hash: String,
    /// The redaction findings, one `line rule` per line (empty when nothing was redacted).
    pub findings: String,
    /// The token-cache key of the file's block (it covers the header and the layout).
    pub block_key: String,
    pub tokenizer: String,
    pub tokens: u64,
    /// Why the file was left out, when its bytes decided it (the render's own encoding, such
    /// as `binary`); empty for a file whose text was read. Only the stamp matters then.
    pub skip: String,
}

/// A payload's hash and length by its layout: a hash of everything its bytes are a function
/// of (its head, its blocks' token-cache keys in order, its tail). A render whose blocks are
/// all made from texts that hash to what their keys say writes the bytes of a layout it has
/// written before, and takes their hash from here instead of hashing them again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderPayloadRow {
    pub layout: String,
    /// The payload's hash (`sha256:…`).
    pub payload_hash: String,
    /// The payload's length in bytes.
    pub bytes: u64,
}

/// How many payload rows a store keeps: the newest, by when they were last remembered.
pub const RENDER_PAYLOADS_KEPT: usize = 256;

/// Rows a render-cache scan reads past without answering a path before it looks the next
/// path up afresh.
const SCAN_ROWS: usize = 8;

/// A `render_files` row, as selected by [`SqliteMetadata::render_files`].
fn render_file_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RenderFileRow> {
    Ok(RenderFileRow {
        path: row.get(0)?,
        size: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(u64::MAX),
        mtime_ns: row.get(2)?,
        inode: u64::from_ne_bytes(row.get::<_, i64>(3)?.to_ne_bytes()),
        raw_hash: row.get(4)?,
        rules: row.get(5)?,
        content_hash: row.get(6)?,
        findings: row.get(7)?,
        block_key: row.get(8)?,
        tokenizer: row.get(9)?,
        tokens: u64::try_from(row.get::<_, i64>(10)?).unwrap_or(0),
        skip: row.get(11)?,
    })
}

impl SqliteMetadata {
    /// The row remembered for each path (`None` when unknown), read in one transaction (one
    /// shared lock and one look at the WAL for all of them, not one each).
    ///
    /// The paths are looked up in byte order (the table's), by scanning the table from each
    /// path not yet answered: a render asks for a directory's files together, and their rows
    /// lie side by side, so one scan answers a run of them for a fraction of a lookup each. A
    /// scan stops after [`SCAN_ROWS`] rows that answer nothing, so unrelated rows between two
    /// paths cost a bounded amount.
    pub fn render_files(&self, paths: &[&str]) -> Result<Vec<Option<RenderFileRow>>, StoreError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut order: Vec<usize> = (0..paths.len()).collect();
        order.sort_by(|&a, &b| paths[a].as_bytes().cmp(paths[b].as_bytes()));
        let run = || -> rusqlite::Result<Vec<Option<RenderFileRow>>> {
            let conn = self.connection();
            let tx = read_transaction(&conn)?;
            let mut stmt = tx.prepare_cached(
                "SELECT path, size, mtime_ns, inode, raw_hash, rules, content_hash, findings,
                        block_key, tokenizer, tokens, skip
                 FROM render_files WHERE path >= ?1 ORDER BY path",
            )?;
            let mut found: Vec<Option<RenderFileRow>> = vec![None; paths.len()];
            // The next path (in byte order) still to answer.
            let mut next = 0;
            while next < order.len() {
                let mut rows = stmt.query([paths[order[next]]])?;
                let mut misses = 0;
                while next < order.len() {
                    let Some(row) = rows.next()? else {
                        // Past the table's end: the paths left are unknown.
                        next = order.len();
                        break;
                    };
                    let path = row.get_ref(0)?.as_str()?;
                    // Paths before this row's are unknown.
                    while next < order.len() && paths[order[next]] < path {
                        next += 1;
                    }
                    if next == order.len() {
                        break;
                    }
                    if paths[order[next]] != path {
                        misses += 1;
                        if misses > SCAN_ROWS {
                            break;
                        }
                        continue;
                    }
                    misses = 0;
                    let decoded = render_file_row(row)?;
                    // The same path asked for twice gets the row twice.
                    while next < order.len() && paths[order[next]] == path {
                        found[order[next]] = Some(decoded.clone());
                        next += 1;
                    }
                }
            }
            drop(stmt);
            tx.finish()?;
            Ok(found)
        };
        run().map_err(|e| self.err(e))
    }

    /// Remembers rows (replacing what was remembered for their paths), in one transaction;
    /// nothing on a read-only store.
    pub fn remember_render_files(&self, rows: &[RenderFileRow]) -> Result<(), StoreError> {
        if self.is_read_only() || rows.is_empty() {
            return Ok(());
        }
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR REPLACE INTO render_files (path, size, mtime_ns, inode, raw_hash,
                        rules, content_hash, findings, block_key, tokenizer, tokens, skip)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )?;
                for row in rows {
                    let (Ok(size), Ok(tokens)) =
                        (i64::try_from(row.size), i64::try_from(row.tokens))
                    else {
                        continue;
                    };
                    stmt.execute(params![
                        row.path,
                        size,
                        row.mtime_ns,
                        inode_column(row.inode),
                        row.raw_hash,
                        row.rules,
                        row.content_hash,
                        row.findings,
                        row.block_key,
                        row.tokenizer,
                        tokens,
                        row.skip
                    ])?;
                }
            }
            tx.commit()
        };
        run().map_err(|e| self.err(e))
    }

    /// Forgets what was remembered for `paths` (a file that changed without its stamp
    /// moving); nothing on a read-only store.
    pub fn forget_render_files(&self, paths: &[&str]) -> Result<(), StoreError> {
        if self.is_read_only() || paths.is_empty() {
            return Ok(());
        }
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            {
                let mut stmt = tx.prepare_cached("DELETE FROM render_files WHERE path = ?1")?;
                for path in paths {
                    stmt.execute([path])?;
                }
            }
            tx.commit()
        };
        run().map_err(|e| self.err(e))
    }

    /// The payload remembered for `layout`, if any.
    pub fn render_payload(&self, layout: &str) -> Result<Option<RenderPayloadRow>, StoreError> {
        self.connection()
            .prepare_cached("SELECT payload_hash, bytes FROM render_payloads WHERE layout = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([layout], |row| {
                    Ok(RenderPayloadRow {
                        layout: layout.to_owned(),
                        payload_hash: row.get(0)?,
                        bytes: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(u64::MAX),
                    })
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Remembers a payload by its layout (replacing any row for it), keeping only the newest
    /// [`RENDER_PAYLOADS_KEPT`] rows; nothing on a read-only store.
    pub fn remember_render_payload(&self, row: &RenderPayloadRow) -> Result<(), StoreError> {
        let Ok(bytes) = i64::try_from(row.bytes) else {
            return Ok(());
        };
        if self.is_read_only() {
            return Ok(());
        }
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            tx.execute(
                "INSERT OR REPLACE INTO render_payloads (layout, payload_hash, bytes, seq)
                 SELECT ?1, ?2, ?3, COALESCE(MAX(seq), 0) + 1 FROM render_payloads",
                params![row.layout, row.payload_hash, bytes],
            )?;
            tx.execute(
                "DELETE FROM render_payloads
                 WHERE seq <= (SELECT MAX(seq) FROM render_payloads) - ?1",
                [i64::try_from(RENDER_PAYLOADS_KEPT).unwrap_or(i64::MAX)],
            )?;
            tx.commit()
        };
        run().map_err(|e| self.err(e))
    }

    /// Forgets the payload remembered for `layout`; nothing on a read-only store.
    pub fn forget_render_payload(&self, layout: &str) -> Result<(), StoreError> {
        if self.is_read_only() {
            return Ok(());
        }
        let conn = self.connection();
        conn.execute("DELETE FROM render_payloads WHERE layout = ?1", [layout])
            .map(drop)
            .map_err(|e| self.err(e))
    }
}
