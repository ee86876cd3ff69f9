//! The [`Metadata`] trait: every repository the store keeps, typed, behind one interface.
//!
//! `ctx-store` owns the schema. The embedded default is [`crate::SqliteMetadata`] (`state.db`);
//! other backends implement the same trait with the same behaviour, which the store's shared
//! test suite (`tests/metadata_contract.rs`) checks for every backend.

use std::collections::BTreeSet;
use std::time::Duration;

use ctx_core::{ContentHash, TokenizerKind};

use crate::packs::{
    ArtifactRecord, NewArtifact, NewPack, PackRecord, SnapshotItemRecord, SnapshotRecord,
};
use crate::render_cache::{RenderFileRow, RenderPayloadRow};
use crate::runs::RunRow;
use crate::summary_cache::{FileStampRow, StampedKey, SummaryKey};
use crate::{RefEntry, StoreError};

/// One value found in an object-reference column (see [`crate::OBJECT_REFERENCES`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectReference {
    pub table: &'static str,
    pub column: &'static str,
    /// The raw value (a `sha256:…` hash unless the database is damaged).
    pub value: String,
}

/// The store's metadata: packs, snapshots, refs, runs, the token and summary caches, and file
/// stamps.
///
/// Implementations are shared between threads (`Send + Sync`) and keep each method atomic:
/// where a method writes more than one row it does so in one transaction. Errors are the
/// store's own ([`StoreError`]), with the same variants for the same mistakes whatever the
/// backend (a missing pack is [`StoreError::NoSuchPack`] everywhere).
pub trait Metadata: Send + Sync {
    /// Where the metadata lives, for messages (a file path, or a URL without its password).
    fn location(&self) -> String;

    /// Whether the metadata was opened read-only (writes fail, caches are not updated).
    fn is_read_only(&self) -> bool;

    /// The schema version recorded in the database.
    fn schema_version(&self) -> Result<i64, StoreError>;

    // --- token-count cache -----------------------------------------------------------------

    /// The cached token count of the content with `hash` under `tokenizer`.
    fn cached_token_count(
        &self,
        hash: &ContentHash,
        tokenizer: TokenizerKind,
    ) -> Result<Option<u64>, StoreError>;

    /// Whether the token cache holds any count at all (a fresh store's does not): a caller
    /// about to count many texts then knows no lookup would answer.
    fn remembers_token_counts(&self) -> Result<bool, StoreError>;

    /// The cached token counts of the contents with `hashes` (at least one) under
    /// `tokenizer`, in order (`None` where unknown), read in one go (one transaction, or one
    /// query).
    fn lookup_token_counts(
        &self,
        hashes: &[ContentHash],
        tokenizer: TokenizerKind,
    ) -> Result<Vec<Option<u64>>, StoreError>;

    /// [`Metadata::lookup_token_counts`]; no hashes read nothing.
    fn cached_token_counts(
        &self,
        hashes: &[ContentHash],
        tokenizer: TokenizerKind,
    ) -> Result<Vec<Option<u64>>, StoreError> {
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        self.lookup_token_counts(hashes, tokenizer)
    }

    /// Records token counts, all in one transaction (nothing on a read-only store).
    fn cache_token_counts(
        &self,
        tokenizer: TokenizerKind,
        counts: &[(ContentHash, u64)],
    ) -> Result<(), StoreError>;

    // --- refs -------------------------------------------------------------------------------

    /// Points `namespace/name` at `object`, replacing any previous target.
    fn set_ref(&self, namespace: &str, name: &str, object: &ContentHash) -> Result<(), StoreError>;

    /// The object `namespace/name` points at.
    fn get_ref(&self, namespace: &str, name: &str) -> Result<Option<ContentHash>, StoreError>;

    /// Removes a ref; returns whether it existed.
    fn delete_ref(&self, namespace: &str, name: &str) -> Result<bool, StoreError>;

    /// Refs in a namespace, by name in byte order.
    fn list_refs(&self, namespace: &str) -> Result<Vec<RefEntry>, StoreError>;

    // --- packs and snapshots ----------------------------------------------------------------

    /// Creates a pack; a pack of that name must not exist.
    fn create_pack(&self, new: &NewPack<'_>) -> Result<PackRecord, StoreError>;

    /// Records the directory a pack's sources are relative to (see [`PackRecord::root`]).
    fn set_pack_root(&self, name: &str, root: &str) -> Result<(), StoreError>;

    /// The pack called `name`.
    fn get_pack(&self, name: &str) -> Result<Option<PackRecord>, StoreError>;

    /// The pack called `name`, or an error that lists the packs there are.
    fn require_pack(&self, name: &str) -> Result<PackRecord, StoreError> {
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
    fn list_packs(&self) -> Result<Vec<PackRecord>, StoreError>;

    /// Changes a pack's budget and tokenizer.
    fn update_pack_policy(
        &self,
        name: &str,
        budget_tokens: u64,
        tokenizer: TokenizerKind,
    ) -> Result<(), StoreError>;

    /// Deletes a pack and its artifacts.
    fn delete_pack(&self, name: &str) -> Result<(), StoreError>;

    /// Appends an artifact to a pack (its `seq` is the pack's next).
    fn add_artifact(&self, pack: &str, new: &NewArtifact<'_>)
    -> Result<ArtifactRecord, StoreError>;

    /// A pack's artifacts in render order: priority descending, then the order they were added.
    fn artifacts(&self, pack: &str) -> Result<Vec<ArtifactRecord>, StoreError>;

    /// Deletes artifact `artifact_id` (the whole id) of `pack`.
    fn delete_artifact(&self, pack: &str, artifact_id: &str) -> Result<(), StoreError>;

    /// Removes the artifact whose id is `id_or_prefix` (a unique prefix is enough); the rule
    /// every backend shares.
    fn remove_artifact(
        &self,
        pack: &str,
        id_or_prefix: &str,
    ) -> Result<ArtifactRecord, StoreError> {
        self.require_pack(pack)?;
        let mut matches: Vec<ArtifactRecord> = self
            .artifacts(pack)?
            .into_iter()
            .filter(|a| !id_or_prefix.is_empty() && a.artifact_id.starts_with(id_or_prefix))
            .collect();
        match matches.len() {
            1 => {
                let one = matches.remove(0);
                self.delete_artifact(pack, &one.artifact_id)?;
                Ok(one)
            }
            0 => Err(StoreError::NoSuchArtifact {
                pack: pack.to_owned(),
                artifact_id: id_or_prefix.to_owned(),
            }),
            _ => Err(StoreError::AmbiguousId {
                what: "artifact",
                prefix: id_or_prefix.to_owned(),
                candidates: matches.into_iter().map(|a| a.artifact_id).collect(),
            }),
        }
    }

    /// Writes a snapshot and its items in one transaction; a snapshot stored already (same
    /// id) is kept, and gets the new label if one is given. Returns the stored row.
    fn write_snapshot(
        &self,
        snapshot: &SnapshotRecord,
        items: &[SnapshotItemRecord],
    ) -> Result<SnapshotRecord, StoreError>;

    /// Records a snapshot and its items ([`Metadata::write_snapshot`]); a label another
    /// snapshot has is refused.
    fn insert_snapshot(
        &self,
        snapshot: &SnapshotRecord,
        items: &[SnapshotItemRecord],
    ) -> Result<SnapshotRecord, StoreError> {
        if let Some(label) = &snapshot.label
            && let Some(other) = self.snapshot_by_label(label)?
            && other.snapshot_id != snapshot.snapshot_id
        {
            return Err(StoreError::LabelTaken {
                label: label.clone(),
                snapshot: other.snapshot_id,
            });
        }
        self.write_snapshot(snapshot, items)
    }

    /// The snapshot labelled `label`.
    fn snapshot_by_label(&self, label: &str) -> Result<Option<SnapshotRecord>, StoreError>;

    /// The snapshots whose id starts with `sha256:` + `hex` (lower-case hex digits), by id.
    fn snapshots_with_id_prefix(&self, hex: &str) -> Result<Vec<SnapshotRecord>, StoreError>;

    /// Finds a snapshot by label, full id or unique id prefix (at least 4 hex digits, with or
    /// without `sha256:`, in any case). The rule every backend shares: a label wins, then a
    /// prefix that names one snapshot; several are [`StoreError::AmbiguousId`].
    fn find_snapshot(&self, reference: &str) -> Result<SnapshotRecord, StoreError> {
        if let Some(snapshot) = self.snapshot_by_label(reference)? {
            return Ok(snapshot);
        }
        let hex = reference
            .strip_prefix("sha256:")
            .unwrap_or(reference)
            .to_ascii_lowercase();
        if hex.len() >= 4 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            let mut found = self.snapshots_with_id_prefix(&hex)?;
            match found.len() {
                1 => return Ok(found.remove(0)),
                0 => {}
                _ => {
                    return Err(StoreError::AmbiguousId {
                        what: "snapshot",
                        prefix: reference.to_owned(),
                        candidates: found.iter().map(|s| s.snapshot_id.to_string()).collect(),
                    });
                }
            }
        }
        Err(StoreError::NoSuchSnapshot {
            id: reference.to_owned(),
        })
    }

    /// Every snapshot, newest first (ties by id).
    fn list_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError>;

    /// A snapshot's items in payload order.
    fn snapshot_items(&self, id: &ContentHash) -> Result<Vec<SnapshotItemRecord>, StoreError>;

    // --- runs -------------------------------------------------------------------------------

    /// Ids of the runs whose id starts with `sha256:` + `hex_prefix`, sorted.
    fn run_ids_with_prefix(&self, hex_prefix: &str) -> Result<Vec<String>, StoreError>;

    /// Every listed run, most recently stored first.
    fn list_run_rows(&self) -> Result<Vec<RunRow>, StoreError>;

    /// Lists run `row` (made the newest when it was listed already), records the objects it
    /// keeps alive, and points ref `latest_ref` (namespace, name) at it: one transaction.
    fn record_run(
        &self,
        row: &RunRow,
        objects: &BTreeSet<ContentHash>,
        latest_ref: (&str, &str),
    ) -> Result<(), StoreError>;

    // --- code-summary cache and file stamps -------------------------------------------------

    /// For each stamp, the summary key remembered for exactly that stamp (`None` when the
    /// path is unknown or its size, modification time or inode changed).
    fn stamped_summary_keys(
        &self,
        stamps: &[FileStampRow<'_>],
    ) -> Result<Vec<Option<StampedKey>>, StoreError>;

    /// Remembers the summary key of each file as seen at its stamp, in one transaction.
    fn remember_file_stamps(
        &self,
        entries: &[(FileStampRow<'_>, SummaryKey<'_>)],
    ) -> Result<(), StoreError>;

    /// The cached summaries for `keys`, in order; `None` for a miss.
    fn cached_summaries(&self, keys: &[SummaryKey<'_>])
    -> Result<Vec<Option<Vec<u8>>>, StoreError>;

    /// Stores summaries (replacing any with the same key), in one transaction.
    fn cache_summaries(&self, entries: &[(SummaryKey<'_>, &[u8])]) -> Result<(), StoreError>;

    /// Deletes every cached summary (they are derived data); returns how many were removed.
    fn clear_summaries(&self) -> Result<usize, StoreError>;

    // --- render cache -----------------------------------------------------------------------

    /// The render-cache row remembered for each path (`None` when unknown).
    fn render_files(&self, paths: &[&str]) -> Result<Vec<Option<RenderFileRow>>, StoreError>;

    /// Remembers render-cache rows (replacing those of the same paths), in one transaction.
    fn remember_render_files(&self, rows: &[RenderFileRow]) -> Result<(), StoreError>;

    /// Forgets the render-cache rows of `paths`.
    fn forget_render_files(&self, paths: &[&str]) -> Result<(), StoreError>;

    /// The payload remembered for a layout, if any.
    fn render_payload(&self, layout: &str) -> Result<Option<RenderPayloadRow>, StoreError>;

    /// Remembers a payload's hash and length by its layout (replacing any row for it); only
    /// the newest [`crate::RENDER_PAYLOADS_KEPT`] rows are kept.
    fn remember_render_payload(&self, row: &RenderPayloadRow) -> Result<(), StoreError>;

    /// Forgets the payload remembered for `layout`.
    fn forget_render_payload(&self, layout: &str) -> Result<(), StoreError>;

    // --- copying a store --------------------------------------------------------------------

    /// Inserts an artifact as recorded elsewhere (its `seq` kept; the pack's next `seq` moved
    /// past it), for `store copy`. The pack must exist; an existing artifact is an error.
    fn restore_artifact(&self, record: &ArtifactRecord) -> Result<(), StoreError>;

    /// Every ref namespace in use, in byte order.
    fn ref_namespaces(&self) -> Result<Vec<String>, StoreError>;

    /// The objects run `run_id` keeps alive (as given to [`Metadata::record_run`]).
    fn run_objects(&self, run_id: &str) -> Result<BTreeSet<ContentHash>, StoreError>;

    // --- maintenance ------------------------------------------------------------------------

    /// Every distinct value in the object-reference columns, with where it came from.
    fn object_references(&self) -> Result<Vec<ObjectReference>, StoreError>;

    /// The database's own consistency findings (empty when healthy).
    fn integrity_problems(&self) -> Result<Vec<String>, StoreError>;

    // --- gc marks (shared backends) ---------------------------------------------------------
    //
    // A store shared by many hosts cannot judge an object's age by a file's modification
    // time: the objects may have no such time a writer refreshes, and hosts' clocks differ.
    // Such a backend keeps gc's grace period in the database instead: gc marks unreferenced
    // objects (stamped by the database's clock) and deletes only objects marked at least the
    // grace period ago and still unreferenced, each under its mark's row lock; a writer about
    // to store an object first unmarks it (waiting for a gc deciding on it), so an object it
    // stores is either kept or, if just deleted, written anew. The embedded SQLite store
    // answers `false` and gc uses modification times, as a local directory has them.

    /// Whether gc's grace period is kept in the database (the methods below), rather than in
    /// object modification times.
    fn gc_marks_in_database(&self) -> bool {
        false
    }

    /// Drops the gc marks of objects a writer is about to store.
    fn gc_unmark(&self, objects: &[ContentHash]) -> Result<(), StoreError> {
        let _ = objects;
        Ok(())
    }

    /// Marks `unreferenced` (keeping earlier marks), drops every other mark, and returns
    /// those of `unreferenced` marked at least `grace` ago by the database's clock.
    fn gc_mark(
        &self,
        unreferenced: &[ContentHash],
        grace: Duration,
    ) -> Result<Vec<ContentHash>, StoreError> {
        let _ = (unreferenced, grace);
        Ok(Vec::new())
    }

    /// Deletes `object` through `remove` if it is marked at least `grace` ago and still
    /// unreferenced, holding its mark while `remove` runs; returns whether it was removed.
    fn gc_sweep_one(
        &self,
        object: &ContentHash,
        grace: Duration,
        remove: &mut (dyn FnMut() -> Result<(), StoreError> + Send),
    ) -> Result<bool, StoreError> {
        let _ = (object, grace, remove);
        Ok(false)
    }
}

// --- rules every backend shares -----------------------------------------------------------

/// A count as the signed integer the databases store (saturating).
pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A stored count back as unsigned (a negative one, which no writer stores, as 0).
pub(crate) fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A hash read from `table.column`, or the error that names where a bad one was found.
pub(crate) fn parse_hash(
    table: &'static str,
    column: &'static str,
    value: String,
) -> Result<ContentHash, StoreError> {
    value.parse().map_err(|_| StoreError::BadHashInDatabase {
        table,
        column,
        value,
    })
}
