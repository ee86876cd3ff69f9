//! The code-summary cache (`code_summaries`): opaque summary payloads keyed by content hash
//! and extractor version, written and read by `ctx-code` through the facade.

use rusqlite::{OptionalExtension, params};

use crate::StoreError;
use crate::db::{SqliteMetadata, read_transaction};

/// The key of one cached summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryKey<'a> {
    /// The content hash of the summarized bytes (any stable `algo:hex` form).
    pub content_hash: &'a str,
    /// What produced the summary (language, grammar and extractor version).
    pub extractor: &'a str,
}

/// A file as last seen: where, how large, when modified, which inode (`code_file_stamps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStampRow<'a> {
    pub path: &'a str,
    pub size: u64,
    pub mtime_ns: i64,
    pub inode: u64,
}

/// The summary key remembered for a stamp, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StampedKey {
    pub content_hash: String,
    pub extractor: String,
}

/// An inode as a database's signed 64-bit integer (same bits; SQLite and PostgreSQL alike).
pub(crate) fn inode_column(inode: u64) -> i64 {
    i64::from_ne_bytes(inode.to_ne_bytes())
}

impl SqliteMetadata {
    /// For each stamp, the summary key remembered for exactly that stamp (`None` when the
    /// path is unknown or its size, modification time or inode changed).
    pub fn stamped_summary_keys(
        &self,
        stamps: &[FileStampRow<'_>],
    ) -> Result<Vec<Option<StampedKey>>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Option<StampedKey>>> {
            let conn = self.connection();
            // One read transaction for the batch: outside one, every lookup takes and drops
            // SQLite's file lock on its own (two `fcntl`s and a journal check per file).
            let tx = read_transaction(&conn)?;
            let mut stmt = tx.prepare_cached(
                "SELECT size, mtime_ns, inode, content_hash, extractor FROM code_file_stamps WHERE path = ?1",
            )?;
            let keys = stamps
                .iter()
                .map(|stamp| {
                    let row = stmt
                        .query_row([stamp.path], |row| {
                            Ok((
                                row.get::<_, i64>(0)?,
                                row.get::<_, i64>(1)?,
                                row.get::<_, i64>(2)?,
                                row.get::<_, String>(3)?,
                                row.get::<_, String>(4)?,
                            ))
                        })
                        .optional()?;
                    Ok(
                        row.and_then(|(size, mtime_ns, inode, content_hash, extractor)| {
                            (u64::try_from(size).ok() == Some(stamp.size)
                                && mtime_ns == stamp.mtime_ns
                                && inode == inode_column(stamp.inode))
                            .then_some(StampedKey {
                                content_hash,
                                extractor,
                            })
                        }),
                    )
                })
                .collect();
            drop(stmt);
            tx.finish()?;
            keys
        };
        run().map_err(|e| self.err(e))
    }

    /// Remembers the summary key of each file as seen at its stamp (replacing what was
    /// remembered for the path), in one transaction; nothing on a read-only store.
    pub fn remember_file_stamps(
        &self,
        entries: &[(FileStampRow<'_>, SummaryKey<'_>)],
    ) -> Result<(), StoreError> {
        if self.is_read_only() {
            return Ok(());
        }
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR REPLACE INTO code_file_stamps (path, size, mtime_ns, inode, content_hash, extractor) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for (stamp, key) in entries {
                    let Ok(size) = i64::try_from(stamp.size) else {
                        continue;
                    };
                    stmt.execute(params![
                        stamp.path,
                        size,
                        stamp.mtime_ns,
                        inode_column(stamp.inode),
                        key.content_hash,
                        key.extractor
                    ])?;
                }
            }
            tx.commit()
        };
        run().map_err(|e| self.err(e))
    }

    /// The cached summaries for `keys`, in order; `None` for a miss.
    pub fn cached_summaries(
        &self,
        keys: &[SummaryKey<'_>],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Option<Vec<u8>>>> {
            let conn = self.connection();
            // One read transaction for the batch (see `stamped_summary_keys`).
            let tx = read_transaction(&conn)?;
            let mut stmt = tx.prepare_cached(
                "SELECT summary FROM code_summaries WHERE content_hash = ?1 AND extractor = ?2",
            )?;
            let summaries = keys
                .iter()
                .map(|key| {
                    stmt.query_row(params![key.content_hash, key.extractor], |row| row.get(0))
                        .optional()
                })
                .collect();
            drop(stmt);
            tx.finish()?;
            summaries
        };
        run().map_err(|e| self.err(e))
    }

    /// Stores summaries (replacing any with the same key), in one transaction.
    pub fn cache_summaries(&self, entries: &[(SummaryKey<'_>, &[u8])]) -> Result<(), StoreError> {
        if self.is_read_only() {
            return Ok(());
        }
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR REPLACE INTO code_summaries (content_hash, extractor, summary) VALUES (?1, ?2, ?3)",
                )?;
                for (key, summary) in entries {
                    stmt.execute(params![key.content_hash, key.extractor, summary])?;
                }
            }
            tx.commit()
        };
        run().map_err(|e| self.err(e))
    }

    /// Deletes every cached summary (they are derived data); returns how many were removed.
    pub fn clear_summaries(&self) -> Result<usize, StoreError> {
        self.connection()
            .execute("DELETE FROM code_summaries", [])
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batched lookups read in deferred transactions: another connection holding the
    /// write lock does not stop them (an immediate transaction would wait for it, then fail).
    #[test]
    fn batched_lookups_do_not_take_the_write_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state.db");
        let db = SqliteMetadata::open(&path).expect("open");
        let key = SummaryKey {
            content_hash: "blake3:aa",
            extractor: "rust:x",
        };
        db.cache_summaries(&[(key, b"{}".as_slice())]).expect("put");
        let writer = rusqlite::Connection::open(&path).expect("second connection");
        writer
            .execute_batch("BEGIN IMMEDIATE")
            .expect("hold the write lock");
        let stamp = FileStampRow {
            path: "/a.rs",
            size: 1,
            mtime_ns: 1,
            inode: 1,
        };
        assert_eq!(db.stamped_summary_keys(&[stamp]).expect("stamps"), [None]);
        assert_eq!(
            db.cached_summaries(&[key]).expect("summaries"),
            [Some(b"{}".to_vec())]
        );
        assert_eq!(db.render_files(&["/a.rs"]).expect("render rows"), [None]);
        let hash = ctx_core::ContentHash::of(b"x");
        assert_eq!(
            db.lookup_token_counts(&[hash], ctx_core::TokenizerKind::Cl100kBase)
                .expect("token counts"),
            [None]
        );
        writer.execute_batch("ROLLBACK").expect("release");
    }

    #[test]
    fn summaries_round_trip_by_hash_and_extractor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = SqliteMetadata::open(&dir.path().join("state.db")).expect("open");
        let a = SummaryKey {
            content_hash: "blake3:aa",
            extractor: "rust:abi15:x1",
        };
        let b = SummaryKey {
            content_hash: "blake3:aa",
            extractor: "rust:abi15:x2",
        };
        assert_eq!(db.cached_summaries(&[a, b]).expect("get"), [None, None]);
        db.cache_summaries(&[(a, b"{\"x\":1}".as_slice())])
            .expect("put");
        assert_eq!(
            db.cached_summaries(&[a, b]).expect("get"),
            [Some(b"{\"x\":1}".to_vec()), None]
        );
        db.cache_summaries(&[(a, b"{}".as_slice())])
            .expect("replace");
        assert_eq!(
            db.cached_summaries(&[a]).expect("get"),
            [Some(b"{}".to_vec())]
        );
        assert_eq!(db.clear_summaries().expect("clear"), 1);
    }
}
