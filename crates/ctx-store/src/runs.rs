//! The run records' rows: the `runs` listing and `run_objects` (what each run keeps alive).
//!
//! The records themselves (manifests, steps, blobs) are objects in the CAS, written and read
//! by `ctx-runs`; this module owns only the SQL that lists them.

use std::collections::BTreeSet;

use ctx_core::ContentHash;
use rusqlite::params;

use crate::{SqliteMetadata, StoreError};

/// One row of the `runs` listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    /// The manifest's hash, `sha256:…`.
    pub run_id: String,
    pub parent: Option<String>,
    pub source: String,
    pub step_count: i64,
    pub model: Option<String>,
    pub started: Option<String>,
    /// The workspace root the run was stored from (recorded there, or imported there); a
    /// store shared by workspaces shows each its own. `None` for runs stored before roots
    /// were kept, which every workspace sees.
    pub root: Option<String>,
}

impl SqliteMetadata {
    /// Ids of the runs whose id starts with `sha256:` + `hex_prefix`, sorted.
    pub fn run_ids_with_prefix(&self, hex_prefix: &str) -> Result<Vec<String>, StoreError> {
        let escaped: String = hex_prefix.chars().filter(char::is_ascii_hexdigit).collect();
        let pattern = format!("sha256:{escaped}%");
        self.connection()
            .prepare_cached("SELECT run_id FROM runs WHERE run_id LIKE ?1 ORDER BY run_id")
            .and_then(|mut stmt| stmt.query_map([&pattern], |row| row.get(0))?.collect())
            .map_err(|e| self.err(e))
    }

    /// Every listed run, most recently stored first.
    pub fn list_run_rows(&self) -> Result<Vec<RunRow>, StoreError> {
        self.connection()
            .prepare_cached(
                "SELECT run_id, parent, source, step_count, model, started, root FROM runs ORDER BY rowid DESC",
            )
            .and_then(|mut stmt| {
                stmt.query_map([], |row| {
                    Ok(RunRow {
                        run_id: row.get(0)?,
                        parent: row.get(1)?,
                        source: row.get(2)?,
                        step_count: row.get(3)?,
                        model: row.get(4)?,
                        started: row.get(5)?,
                        root: row.get(6)?,
                    })
                })?
                .collect()
            })
            .map_err(|e| self.err(e))
    }

    /// Lists run `row` (made the newest when it was listed already), records the objects it
    /// keeps alive, and points ref `latest_ref` (namespace, name) at it: one transaction.
    pub fn record_run(
        &self,
        row: &RunRow,
        objects: &BTreeSet<ContentHash>,
        latest_ref: (&str, &str),
    ) -> Result<(), StoreError> {
        let write = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            tx.execute(
                "INSERT OR IGNORE INTO runs (run_id, parent, source, step_count, model, started, root)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    row.run_id,
                    row.parent,
                    row.source,
                    row.step_count,
                    row.model,
                    row.started,
                    row.root,
                ],
            )?;
            // A run stored again becomes the newest in the listing, as `latest` says.
            tx.execute(
                "UPDATE runs SET rowid = (SELECT MAX(rowid) + 1 FROM runs)
                 WHERE run_id = ?1 AND rowid <> (SELECT MAX(rowid) FROM runs)",
                params![row.run_id],
            )?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR IGNORE INTO run_objects (run_id, object) VALUES (?1, ?2)",
                )?;
                stmt.execute(params![row.run_id, row.run_id])?;
                for object in objects {
                    stmt.execute(params![row.run_id, object.to_string()])?;
                }
            }
            tx.execute(
                "INSERT INTO refs (namespace, name, object) VALUES (?1, ?2, ?3)
                 ON CONFLICT (namespace, name) DO UPDATE SET object = excluded.object",
                params![latest_ref.0, latest_ref.1, row.run_id],
            )?;
            tx.commit()
        };
        write().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &ContentHash, source: &str) -> RunRow {
        RunRow {
            run_id: id.to_string(),
            parent: None,
            source: source.to_owned(),
            step_count: 2,
            model: Some("m".to_owned()),
            started: None,
            root: None,
        }
    }

    #[test]
    fn runs_are_listed_newest_first_found_by_prefix_and_keep_their_objects() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = SqliteMetadata::open(&dir.path().join("state.db")).expect("open");
        let a = ContentHash::of(b"run a");
        let b = ContentHash::of(b"run b");
        let blob = ContentHash::of(b"blob");
        db.record_run(&row(&a, "mcp"), &BTreeSet::from([blob]), ("runs", "latest"))
            .expect("a");
        db.record_run(
            &row(&b, "claude-code"),
            &BTreeSet::new(),
            ("runs", "latest"),
        )
        .expect("b");
        let ids = |rows: Vec<RunRow>| rows.into_iter().map(|r| r.run_id).collect::<Vec<_>>();
        assert_eq!(
            ids(db.list_run_rows().expect("list")),
            [b.to_string(), a.to_string()]
        );
        // Stored again: newest again, listed once.
        db.record_run(&row(&a, "mcp"), &BTreeSet::new(), ("runs", "latest"))
            .expect("a again");
        assert_eq!(
            ids(db.list_run_rows().expect("list")),
            [a.to_string(), b.to_string()]
        );
        assert_eq!(db.get_ref("runs", "latest").expect("ref"), Some(a));
        let hex = a.to_hex();
        assert_eq!(
            db.run_ids_with_prefix(&hex[..8]).expect("prefix"),
            [a.to_string()]
        );
        // Only hex digits reach the LIKE pattern: `_` and `%` are dropped, not wildcards.
        assert_eq!(
            db.run_ids_with_prefix(&format!("{}_%", &hex[..8]))
                .expect("prefix"),
            [a.to_string()]
        );
        let kept: Vec<String> = db
            .object_references()
            .expect("refs")
            .into_iter()
            .map(|r| r.value)
            .collect();
        assert!(kept.contains(&blob.to_string()));
    }
}
