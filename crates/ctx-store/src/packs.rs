//! Pack, artifact and snapshot rows (schema version 2).

use ctx_core::{ContentHash, TokenizerKind};
use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use crate::metadata::{to_i64, to_u64};
use crate::{SqliteMetadata, StoreError};

/// A pack row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackRecord {
    pub name: String,
    pub budget_tokens: u64,
    pub tokenizer: TokenizerKind,
    pub created_at: i64,
    pub artifact_count: u64,
    /// The directory the pack's sources are relative to, when it is not the store's own
    /// (packs in the global store keep the directory they were made for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// An artifact row: one source in one pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArtifactRecord {
    pub pack: String,
    pub artifact_id: String,
    pub seq: u64,
    pub priority: i64,
    pub uri: String,
    /// The parsed source, as JSON (owned by `ctx-sources`).
    pub source_json: String,
    pub added_at: i64,
}

/// What to insert for a new pack.
#[derive(Debug, Clone, Copy)]
pub struct NewPack<'a> {
    pub name: &'a str,
    pub budget_tokens: u64,
    pub tokenizer: TokenizerKind,
    pub created_at: i64,
}

/// What to insert for a new artifact.
#[derive(Debug, Clone)]
pub struct NewArtifact<'a> {
    pub artifact_id: &'a str,
    pub priority: i64,
    pub uri: &'a str,
    pub source_json: &'a str,
    pub added_at: i64,
}

/// A snapshot row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotRecord {
    pub snapshot_id: ContentHash,
    pub label: Option<String>,
    pub packs: Vec<String>,
    /// The effective render policy, as canonical JSON.
    pub policy_json: String,
    pub render_hash: ContentHash,
    pub payload_object: ContentHash,
    pub tokens: u64,
    pub created_at: i64,
    /// The workspace root it was made in (a store shared by workspaces shows each its own);
    /// `None` for snapshots made before roots were kept, which every workspace sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// One unit of a snapshot: included or excluded, with its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotItemRecord {
    pub position: u64,
    pub item_key: String,
    pub content_hash: Option<ContentHash>,
    pub tokens: u64,
    pub included: bool,
    pub reason: Option<String>,
}

fn hash_column(row: &Row<'_>, index: usize) -> rusqlite::Result<ContentHash> {
    let text: String = row.get(index)?;
    text.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn optional_hash_column(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<ContentHash>> {
    let text: Option<String> = row.get(index)?;
    text.map(|t| {
        t.parse().map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(
                index,
                rusqlite::types::Type::Text,
                Box::new(e),
            )
        })
    })
    .transpose()
}

fn pack_from_row(row: &Row<'_>) -> rusqlite::Result<PackRecord> {
    let tokenizer: String = row.get(2)?;
    Ok(PackRecord {
        name: row.get(0)?,
        budget_tokens: to_u64(row.get(1)?),
        tokenizer: tokenizer.parse().map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, Box::new(e))
        })?,
        created_at: row.get(3)?,
        artifact_count: to_u64(row.get(4)?),
        root: row.get(5)?,
    })
}

fn artifact_from_row(row: &Row<'_>) -> rusqlite::Result<ArtifactRecord> {
    Ok(ArtifactRecord {
        pack: row.get(0)?,
        artifact_id: row.get(1)?,
        seq: to_u64(row.get(2)?),
        priority: row.get(3)?,
        uri: row.get(4)?,
        source_json: row.get(5)?,
        added_at: row.get(6)?,
    })
}

fn snapshot_from_row(row: &Row<'_>) -> rusqlite::Result<SnapshotRecord> {
    let packs_json: String = row.get(2)?;
    Ok(SnapshotRecord {
        snapshot_id: hash_column(row, 0)?,
        label: row.get(1)?,
        packs: serde_json::from_str(&packs_json).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, Box::new(e))
        })?,
        policy_json: row.get(3)?,
        render_hash: hash_column(row, 4)?,
        payload_object: hash_column(row, 5)?,
        tokens: to_u64(row.get(6)?),
        created_at: row.get(7)?,
        root: row.get(8)?,
    })
}

const PACK_COLUMNS: &str = "p.name, p.budget_tokens, p.tokenizer, p.created_at,
    (SELECT COUNT(*) FROM artifacts a WHERE a.pack = p.name), p.root";
const ARTIFACT_COLUMNS: &str = "pack, artifact_id, seq, priority, uri, source_json, added_at";
const SNAPSHOT_COLUMNS: &str = "snapshot_id, label, packs_json, policy_json, render_hash, payload_object, tokens, created_at, root";

impl SqliteMetadata {
    /// Creates a pack; a pack of that name must not exist.
    pub fn create_pack(&self, new: &NewPack<'_>) -> Result<PackRecord, StoreError> {
        if self.get_pack(new.name)?.is_some() {
            return Err(StoreError::PackExists {
                name: new.name.to_owned(),
            });
        }
        self.connection()
            .execute(
                "INSERT INTO packs (name, budget_tokens, tokenizer, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![
                    new.name,
                    to_i64(new.budget_tokens),
                    new.tokenizer.name(),
                    new.created_at
                ],
            )
            .map_err(|e| self.err(e))?;
        self.require_pack(new.name)
    }

    /// Records the directory a pack's sources are relative to (see [`PackRecord::root`]).
    pub fn set_pack_root(&self, name: &str, root: &str) -> Result<(), StoreError> {
        self.require_pack(name)?;
        self.connection()
            .execute(
                "UPDATE packs SET root = ?2 WHERE name = ?1",
                params![name, root],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The pack called `name`.
    pub fn get_pack(&self, name: &str) -> Result<Option<PackRecord>, StoreError> {
        self.connection()
            .query_row(
                &format!("SELECT {PACK_COLUMNS} FROM packs p WHERE p.name = ?1"),
                params![name],
                pack_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The pack called `name`, or an error that lists the packs there are.
    pub fn require_pack(&self, name: &str) -> Result<PackRecord, StoreError> {
        if let Some(pack) = self.get_pack(name)? {
            return Ok(pack);
        }
        let known: Vec<String> = self.list_packs()?.into_iter().map(|p| p.name).collect();
        Err(StoreError::NoSuchPack {
            name: name.to_owned(),
            known,
        })
    }

    /// Every pack, by name in byte order.
    pub fn list_packs(&self) -> Result<Vec<PackRecord>, StoreError> {
        self.connection()
            .prepare(&format!(
                "SELECT {PACK_COLUMNS} FROM packs p ORDER BY p.name"
            ))
            .and_then(|mut stmt| stmt.query_map([], pack_from_row)?.collect())
            .map_err(|e| self.err(e))
    }

    /// Changes a pack's budget and tokenizer.
    pub fn update_pack_policy(
        &self,
        name: &str,
        budget_tokens: u64,
        tokenizer: TokenizerKind,
    ) -> Result<(), StoreError> {
        self.require_pack(name)?;
        self.connection()
            .execute(
                "UPDATE packs SET budget_tokens = ?2, tokenizer = ?3 WHERE name = ?1",
                params![name, to_i64(budget_tokens), tokenizer.name()],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Deletes a pack and its artifacts.
    pub fn delete_pack(&self, name: &str) -> Result<(), StoreError> {
        self.require_pack(name)?;
        self.connection()
            .execute("DELETE FROM packs WHERE name = ?1", params![name])
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Appends an artifact to a pack (its `seq` is the pack's next).
    pub fn add_artifact(
        &self,
        pack: &str,
        new: &NewArtifact<'_>,
    ) -> Result<ArtifactRecord, StoreError> {
        self.require_pack(pack)?;
        let run = || -> rusqlite::Result<Option<ArtifactRecord>> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            let exists: Option<i64> = tx
                .query_row(
                    "SELECT 1 FROM artifacts WHERE pack = ?1 AND artifact_id = ?2",
                    params![pack, new.artifact_id],
                    |r| r.get(0),
                )
                .optional()?;
            if exists.is_some() {
                return Ok(None);
            }
            let seq: i64 = tx.query_row(
                "SELECT next_seq FROM packs WHERE name = ?1",
                params![pack],
                |r| r.get(0),
            )?;
            tx.execute(
                "UPDATE packs SET next_seq = next_seq + 1 WHERE name = ?1",
                params![pack],
            )?;
            tx.execute(
                "INSERT INTO artifacts (pack, artifact_id, seq, priority, uri, source_json, added_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    pack,
                    new.artifact_id,
                    seq,
                    new.priority,
                    new.uri,
                    new.source_json,
                    new.added_at
                ],
            )?;
            let record = tx.query_row(
                &format!(
                    "SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE pack = ?1 AND artifact_id = ?2"
                ),
                params![pack, new.artifact_id],
                artifact_from_row,
            )?;
            tx.commit()?;
            Ok(Some(record))
        };
        run()
            .map_err(|e| self.err(e))?
            .ok_or_else(|| StoreError::ArtifactExists {
                pack: pack.to_owned(),
                artifact_id: new.artifact_id.to_owned(),
            })
    }

    /// A pack's artifacts in render order: priority descending, then the order they were added.
    pub fn artifacts(&self, pack: &str) -> Result<Vec<ArtifactRecord>, StoreError> {
        self.connection()
            .prepare(&format!(
                "SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE pack = ?1 ORDER BY priority DESC, seq ASC"
            ))
            .and_then(|mut stmt| stmt.query_map(params![pack], artifact_from_row)?.collect())
            .map_err(|e| self.err(e))
    }

    /// Deletes artifact `artifact_id` of `pack`.
    pub fn delete_artifact(&self, pack: &str, artifact_id: &str) -> Result<(), StoreError> {
        self.connection()
            .execute(
                "DELETE FROM artifacts WHERE pack = ?1 AND artifact_id = ?2",
                params![pack, artifact_id],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Writes a snapshot and its items; one stored already (same id) is kept, and gets the
    /// new label if one is given.
    pub fn write_snapshot(
        &self,
        snapshot: &SnapshotRecord,
        items: &[SnapshotItemRecord],
    ) -> Result<SnapshotRecord, StoreError> {
        let run = || -> rusqlite::Result<()> {
            let conn = self.connection();
            let tx = conn.unchecked_transaction()?;
            let id = snapshot.snapshot_id.to_string();
            let existing: Option<i64> = tx
                .query_row(
                    "SELECT 1 FROM snapshots WHERE snapshot_id = ?1",
                    params![id],
                    |r| r.get(0),
                )
                .optional()?;
            if existing.is_some() {
                if snapshot.label.is_some() {
                    tx.execute(
                        "UPDATE snapshots SET label = ?2 WHERE snapshot_id = ?1",
                        params![id, snapshot.label],
                    )?;
                }
            } else {
                tx.execute(
                    &format!("INSERT INTO snapshots ({SNAPSHOT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
                    params![
                        id,
                        snapshot.label,
                        serde_json::to_string(&snapshot.packs).expect("strings serialize"),
                        snapshot.policy_json,
                        snapshot.render_hash.to_string(),
                        snapshot.payload_object.to_string(),
                        to_i64(snapshot.tokens),
                        snapshot.created_at,
                        snapshot.root
                    ],
                )?;
                let mut stmt = tx.prepare(
                    "INSERT INTO snapshot_items (snapshot_id, position, item_key, content_hash, tokens, included, reason)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?;
                for item in items {
                    stmt.execute(params![
                        id,
                        to_i64(item.position),
                        item.item_key,
                        item.content_hash.map(|h| h.to_string()),
                        to_i64(item.tokens),
                        item.included,
                        item.reason
                    ])?;
                }
            }
            tx.commit()
        };
        run().map_err(|e| self.err(e))?;
        self.snapshot_by_id(&snapshot.snapshot_id)?
            .ok_or_else(|| StoreError::NoSuchSnapshot {
                id: snapshot.snapshot_id.to_string(),
            })
    }

    fn snapshot_by_id(&self, id: &ContentHash) -> Result<Option<SnapshotRecord>, StoreError> {
        self.connection()
            .query_row(
                &format!("SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE snapshot_id = ?1"),
                params![id.to_string()],
                snapshot_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The snapshot labelled `label`.
    pub fn snapshot_by_label(&self, label: &str) -> Result<Option<SnapshotRecord>, StoreError> {
        self.connection()
            .query_row(
                &format!("SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE label = ?1"),
                params![label],
                snapshot_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// The snapshots whose id starts with `sha256:` + `hex`, by id.
    pub fn snapshots_with_id_prefix(&self, hex: &str) -> Result<Vec<SnapshotRecord>, StoreError> {
        self.connection()
            .prepare(&format!(
                "SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE snapshot_id LIKE ?1 ORDER BY snapshot_id"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![format!("sha256:{hex}%")], snapshot_from_row)?.collect()
            })
            .map_err(|e| self.err(e))
    }

    /// Every snapshot, newest first (ties by id).
    pub fn list_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError> {
        self.connection()
            .prepare(&format!(
                "SELECT {SNAPSHOT_COLUMNS} FROM snapshots ORDER BY created_at DESC, snapshot_id"
            ))
            .and_then(|mut stmt| stmt.query_map([], snapshot_from_row)?.collect())
            .map_err(|e| self.err(e))
    }

    /// A snapshot's items in payload order.
    pub fn snapshot_items(&self, id: &ContentHash) -> Result<Vec<SnapshotItemRecord>, StoreError> {
        self.connection()
            .prepare(
                "SELECT position, item_key, content_hash, tokens, included, reason
                 FROM snapshot_items WHERE snapshot_id = ?1 ORDER BY position",
            )
            .and_then(|mut stmt| {
                stmt.query_map(params![id.to_string()], |row| {
                    Ok(SnapshotItemRecord {
                        position: to_u64(row.get(0)?),
                        item_key: row.get(1)?,
                        content_hash: optional_hash_column(row, 2)?,
                        tokens: to_u64(row.get(3)?),
                        included: row.get(4)?,
                        reason: row.get(5)?,
                    })
                })?
                .collect()
            })
            .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metadata as _;

    fn db() -> (tempfile::TempDir, SqliteMetadata) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = SqliteMetadata::open(&dir.path().join("state.db")).expect("open");
        (dir, db)
    }

    fn artifact(id: &str, priority: i64) -> NewArtifact<'_> {
        NewArtifact {
            artifact_id: id,
            priority,
            uri: "text:x",
            source_json: "{}",
            added_at: 0,
        }
    }

    #[test]
    fn packs_and_artifacts_keep_render_order() {
        let (_dir, db) = db();
        let created = db
            .create_pack(&NewPack {
                name: "p",
                budget_tokens: 100,
                tokenizer: TokenizerKind::O200kBase,
                created_at: 1,
            })
            .expect("create");
        assert_eq!(created.root, None);
        db.set_pack_root("p", "/home/u/proj").expect("root");
        assert_eq!(
            db.require_pack("p").expect("pack").root.as_deref(),
            Some("/home/u/proj")
        );
        assert!(matches!(
            db.create_pack(&NewPack {
                name: "p",
                budget_tokens: 1,
                tokenizer: TokenizerKind::Approx,
                created_at: 2
            }),
            Err(StoreError::PackExists { .. })
        ));
        db.add_artifact("p", &artifact("aaa111", 0)).expect("add");
        db.add_artifact("p", &artifact("bbb222", 5)).expect("add");
        db.add_artifact("p", &artifact("ccc333", 0)).expect("add");
        assert!(matches!(
            db.add_artifact("p", &artifact("aaa111", 0)),
            Err(StoreError::ArtifactExists { .. })
        ));
        let order: Vec<_> = db
            .artifacts("p")
            .expect("list")
            .into_iter()
            .map(|a| a.artifact_id)
            .collect();
        assert_eq!(
            order,
            ["bbb222", "aaa111", "ccc333"],
            "priority desc, then added order"
        );
        assert_eq!(db.require_pack("p").expect("pack").artifact_count, 3);

        assert_eq!(
            db.remove_artifact("p", "bb").expect("prefix").artifact_id,
            "bbb222"
        );
        db.add_artifact("p", &artifact("aaa999", 0)).expect("add");
        let err = db
            .remove_artifact("p", "aaa")
            .expect_err("ambiguous")
            .to_string();
        assert!(err.contains("aaa111") && err.contains("aaa999"), "{err}");
        assert!(matches!(
            db.remove_artifact("p", "zzz"),
            Err(StoreError::NoSuchArtifact { .. })
        ));
        let err = db.require_pack("q").expect_err("missing").to_string();
        assert!(err.contains("packs: p"), "{err}");
        db.delete_pack("p").expect("delete");
        assert!(db.list_packs().expect("list").is_empty());
    }

    #[test]
    fn snapshots_are_found_by_label_or_prefix() {
        let (_dir, db) = db();
        let record = |id: &[u8], label: Option<&str>| SnapshotRecord {
            snapshot_id: ContentHash::of(id),
            label: label.map(str::to_owned),
            packs: vec!["p".into()],
            policy_json: "{}".into(),
            render_hash: ContentHash::of(b"r"),
            payload_object: ContentHash::of(b"payload"),
            tokens: 3,
            created_at: 1,
            root: None,
        };
        let item = SnapshotItemRecord {
            position: 0,
            item_key: "a:x".into(),
            content_hash: Some(ContentHash::of(b"x")),
            tokens: 3,
            included: true,
            reason: None,
        };
        let first = db
            .insert_snapshot(&record(b"one", None), std::slice::from_ref(&item))
            .expect("insert");
        let labelled = db
            .insert_snapshot(&record(b"one", Some("v1")), &[item])
            .expect("relabel");
        assert_eq!(labelled.snapshot_id, first.snapshot_id);
        assert_eq!(labelled.label.as_deref(), Some("v1"));
        assert_eq!(
            db.find_snapshot("v1").expect("label").snapshot_id,
            first.snapshot_id
        );
        let hex = first.snapshot_id.to_hex();
        assert_eq!(
            db.find_snapshot(&hex[..8]).expect("prefix").snapshot_id,
            first.snapshot_id
        );
        assert_eq!(
            db.find_snapshot(&first.snapshot_id.to_string())
                .expect("full")
                .snapshot_id,
            first.snapshot_id
        );
        assert!(matches!(
            db.insert_snapshot(&record(b"two", Some("v1")), &[]),
            Err(StoreError::LabelTaken { .. })
        ));
        assert!(matches!(
            db.find_snapshot("nope"),
            Err(StoreError::NoSuchSnapshot { .. })
        ));
        assert_eq!(
            db.snapshot_items(&first.snapshot_id).expect("items").len(),
            1
        );
    }
}
