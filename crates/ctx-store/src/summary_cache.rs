//! The code-summary cache (`code_summaries`): opaque summary payloads keyed by content hash
//! and extractor version, written and read by `ctx-code` through the facade.

use rusqlite::{OptionalExtension, params};

use crate::StoreError;
use crate::db::Database;

/// The key of one cached summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryKey<'a> {
    /// The content hash of the summarized bytes (any stable `algo:hex` form).
    pub content_hash: &'a str,
    /// What produced the summary (language, grammar and extractor version).
    pub extractor: &'a str,
}

impl Database {
    /// The cached summaries for `keys`, in order; `None` for a miss.
    pub fn cached_summaries(
        &self,
        keys: &[SummaryKey<'_>],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Option<Vec<u8>>>> {
            let mut stmt = self.connection().prepare_cached(
                "SELECT summary FROM code_summaries WHERE content_hash = ?1 AND extractor = ?2",
            )?;
            keys.iter()
                .map(|key| {
                    stmt.query_row(params![key.content_hash, key.extractor], |row| row.get(0))
                        .optional()
                })
                .collect()
        };
        run().map_err(|e| self.err(e))
    }

    /// Stores summaries (replacing any with the same key), in one transaction.
    pub fn cache_summaries(&self, entries: &[(SummaryKey<'_>, &[u8])]) -> Result<(), StoreError> {
        if self.is_read_only() {
            return Ok(());
        }
        let run = || -> rusqlite::Result<()> {
            let tx = self.connection().unchecked_transaction()?;
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

    #[test]
    fn summaries_round_trip_by_hash_and_extractor() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(&dir.path().join("state.db")).expect("open");
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
