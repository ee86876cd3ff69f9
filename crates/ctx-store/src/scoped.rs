//! A store as one workspace sees it when several share it (the global store, a team's store,
//! `ctx serve`'s fallback): [`ScopedMetadata`] shows the packs, snapshots and runs made in
//! that workspace and stamps what it makes with the workspace's root, so no tool, resource or
//! listing of one workspace reads another's.
//!
//! A row belongs to a workspace when its `root` is the workspace's root, a directory inside
//! it, or a directory the workspace lies in. Rows without a root (made before roots were kept, or in a project's own store, which
//! no other workspace opens) are seen by every workspace. Names stay unique in the store: a
//! workspace cannot create a pack whose name another workspace's pack has.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ctx_core::{ContentHash, TokenizerKind};

use crate::metadata::{Metadata, ObjectReference};
use crate::packs::{
    ArtifactRecord, NewArtifact, NewPack, PackRecord, SnapshotItemRecord, SnapshotRecord,
};
use crate::render_cache::{RenderFileRow, RenderPayloadRow};
use crate::runs::RunRow;
use crate::summary_cache::{FileStampRow, StampedKey, SummaryKey};
use crate::{RefEntry, StoreError};

/// The namespace of run refs (`latest`, tags), as `ctx-runs` names it.
const RUN_REFS: &str = "runs";
/// The ref that names the newest run.
const LATEST: &str = "latest";

/// Whether something made in directory `made_in` belongs to the workspace at `workspace`:
/// one lies inside the other (a pack made for a repository is seen from any of its
/// subdirectories, and a workspace sees what was made in its subdirectories); unrelated
/// trees (`~/alpha` and `~/beta`) do not see each other.
pub fn belongs(made_in: &str, workspace: &str) -> bool {
    let (made_in, workspace) = (Path::new(made_in), Path::new(workspace));
    made_in.starts_with(workspace) || workspace.starts_with(made_in)
}

/// `inner` as the workspace rooted at `root` sees it.
pub struct ScopedMetadata {
    inner: Arc<dyn Metadata>,
    root: String,
}

impl ScopedMetadata {
    pub(crate) fn new(inner: Arc<dyn Metadata>, root: String) -> Self {
        Self { inner, root }
    }

    /// The workspace root this view belongs to.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Whether a row made in `root` belongs to this workspace (see [`belongs`]).
    pub fn sees(&self, root: Option<&str>) -> bool {
        root.is_none_or(|root| belongs(root, &self.root))
    }

    fn visible_pack(&self, name: &str) -> Result<(), StoreError> {
        if self.get_pack(name)?.is_some() {
            return Ok(());
        }
        Err(StoreError::NoSuchPack {
            name: name.to_owned(),
            known: self.list_packs()?.into_iter().map(|p| p.name).collect(),
        })
    }

    fn visible_runs(&self) -> Result<BTreeSet<String>, StoreError> {
        Ok(self
            .list_run_rows()?
            .into_iter()
            .map(|row| row.run_id)
            .collect())
    }
}

impl Metadata for ScopedMetadata {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    fn schema_version(&self) -> Result<i64, StoreError> {
        self.inner.schema_version()
    }

    fn cached_token_count(
        &self,
        hash: &ContentHash,
        tokenizer: TokenizerKind,
    ) -> Result<Option<u64>, StoreError> {
        self.inner.cached_token_count(hash, tokenizer)
    }

    fn remembers_token_counts(&self) -> Result<bool, StoreError> {
        self.inner.remembers_token_counts()
    }

    fn lookup_token_counts(
        &self,
        hashes: &[ContentHash],
        tokenizer: TokenizerKind,
    ) -> Result<Vec<Option<u64>>, StoreError> {
        self.inner.lookup_token_counts(hashes, tokenizer)
    }

    fn cache_token_counts(
        &self,
        tokenizer: TokenizerKind,
        counts: &[(ContentHash, u64)],
    ) -> Result<(), StoreError> {
        self.inner.cache_token_counts(tokenizer, counts)
    }

    fn set_ref(&self, namespace: &str, name: &str, object: &ContentHash) -> Result<(), StoreError> {
        self.inner.set_ref(namespace, name, object)
    }

    /// A run ref that names another workspace's run is not there; `latest` is this
    /// workspace's newest run.
    fn get_ref(&self, namespace: &str, name: &str) -> Result<Option<ContentHash>, StoreError> {
        let found = self.inner.get_ref(namespace, name)?;
        if namespace != RUN_REFS {
            return Ok(found);
        }
        let visible = self.visible_runs()?;
        match found {
            Some(hash) if visible.contains(&hash.to_string()) => Ok(Some(hash)),
            _ if name == LATEST => Ok(self
                .list_run_rows()?
                .into_iter()
                .next()
                .and_then(|row| row.run_id.parse().ok())),
            _ => Ok(None),
        }
    }

    fn delete_ref(&self, namespace: &str, name: &str) -> Result<bool, StoreError> {
        if namespace == RUN_REFS && self.get_ref(namespace, name)?.is_none() {
            return Ok(false);
        }
        self.inner.delete_ref(namespace, name)
    }

    fn list_refs(&self, namespace: &str) -> Result<Vec<RefEntry>, StoreError> {
        let refs = self.inner.list_refs(namespace)?;
        if namespace != RUN_REFS {
            return Ok(refs);
        }
        let visible = self.visible_runs()?;
        Ok(refs
            .into_iter()
            .filter(|entry| visible.contains(&entry.object.to_string()))
            .collect())
    }

    fn create_pack(&self, new: &NewPack<'_>) -> Result<PackRecord, StoreError> {
        let mut pack = self.inner.create_pack(new)?;
        self.inner.set_pack_root(new.name, &self.root)?;
        pack.root = Some(self.root.clone());
        Ok(pack)
    }

    fn set_pack_root(&self, name: &str, root: &str) -> Result<(), StoreError> {
        self.visible_pack(name)?;
        self.inner.set_pack_root(name, root)
    }

    fn get_pack(&self, name: &str) -> Result<Option<PackRecord>, StoreError> {
        Ok(self
            .inner
            .get_pack(name)?
            .filter(|pack| self.sees(pack.root.as_deref())))
    }

    fn list_packs(&self) -> Result<Vec<PackRecord>, StoreError> {
        Ok(self
            .inner
            .list_packs()?
            .into_iter()
            .filter(|pack| self.sees(pack.root.as_deref()))
            .collect())
    }

    fn update_pack_policy(
        &self,
        name: &str,
        budget_tokens: u64,
        tokenizer: TokenizerKind,
    ) -> Result<(), StoreError> {
        self.visible_pack(name)?;
        self.inner
            .update_pack_policy(name, budget_tokens, tokenizer)
    }

    fn delete_pack(&self, name: &str) -> Result<(), StoreError> {
        self.visible_pack(name)?;
        self.inner.delete_pack(name)
    }

    fn add_artifact(
        &self,
        pack: &str,
        new: &NewArtifact<'_>,
    ) -> Result<ArtifactRecord, StoreError> {
        self.visible_pack(pack)?;
        self.inner.add_artifact(pack, new)
    }

    fn artifacts(&self, pack: &str) -> Result<Vec<ArtifactRecord>, StoreError> {
        self.visible_pack(pack)?;
        self.inner.artifacts(pack)
    }

    fn delete_artifact(&self, pack: &str, artifact_id: &str) -> Result<(), StoreError> {
        self.visible_pack(pack)?;
        self.inner.delete_artifact(pack, artifact_id)
    }

    fn insert_snapshot(
        &self,
        snapshot: &SnapshotRecord,
        items: &[SnapshotItemRecord],
    ) -> Result<SnapshotRecord, StoreError> {
        let mut snapshot = snapshot.clone();
        snapshot.root.get_or_insert_with(|| self.root.clone());
        match self.inner.insert_snapshot(&snapshot, items) {
            // Labels are unique in the whole store: one another workspace took is refused
            // without naming that workspace's snapshot.
            Err(StoreError::LabelTaken { label, .. })
                if !self
                    .inner
                    .snapshot_by_label(&label)?
                    .is_some_and(|other| self.sees(other.root.as_deref())) =>
            {
                Err(StoreError::LabelTakenElsewhere { label })
            }
            other => other,
        }
    }

    fn write_snapshot(
        &self,
        snapshot: &SnapshotRecord,
        items: &[SnapshotItemRecord],
    ) -> Result<SnapshotRecord, StoreError> {
        let mut snapshot = snapshot.clone();
        snapshot.root.get_or_insert_with(|| self.root.clone());
        self.inner.write_snapshot(&snapshot, items)
    }

    fn snapshot_by_label(&self, label: &str) -> Result<Option<SnapshotRecord>, StoreError> {
        Ok(self
            .inner
            .snapshot_by_label(label)?
            .filter(|snapshot| self.sees(snapshot.root.as_deref())))
    }

    fn snapshots_with_id_prefix(&self, hex: &str) -> Result<Vec<SnapshotRecord>, StoreError> {
        Ok(self
            .inner
            .snapshots_with_id_prefix(hex)?
            .into_iter()
            .filter(|snapshot| self.sees(snapshot.root.as_deref()))
            .collect())
    }

    fn list_snapshots(&self) -> Result<Vec<SnapshotRecord>, StoreError> {
        Ok(self
            .inner
            .list_snapshots()?
            .into_iter()
            .filter(|snapshot| self.sees(snapshot.root.as_deref()))
            .collect())
    }

    fn snapshot_items(&self, id: &ContentHash) -> Result<Vec<SnapshotItemRecord>, StoreError> {
        self.inner.snapshot_items(id)
    }

    fn run_ids_with_prefix(&self, hex_prefix: &str) -> Result<Vec<String>, StoreError> {
        let visible = self.visible_runs()?;
        Ok(self
            .inner
            .run_ids_with_prefix(hex_prefix)?
            .into_iter()
            .filter(|id| visible.contains(id))
            .collect())
    }

    fn list_run_rows(&self) -> Result<Vec<RunRow>, StoreError> {
        Ok(self
            .inner
            .list_run_rows()?
            .into_iter()
            .filter(|row| self.sees(row.root.as_deref()))
            .collect())
    }

    fn record_run(
        &self,
        row: &RunRow,
        objects: &BTreeSet<ContentHash>,
        latest_ref: (&str, &str),
    ) -> Result<(), StoreError> {
        let mut row = row.clone();
        row.root.get_or_insert_with(|| self.root.clone());
        self.inner.record_run(&row, objects, latest_ref)
    }

    fn stamped_summary_keys(
        &self,
        stamps: &[FileStampRow<'_>],
    ) -> Result<Vec<Option<StampedKey>>, StoreError> {
        self.inner.stamped_summary_keys(stamps)
    }

    fn remember_file_stamps(
        &self,
        entries: &[(FileStampRow<'_>, SummaryKey<'_>)],
    ) -> Result<(), StoreError> {
        self.inner.remember_file_stamps(entries)
    }

    fn cached_summaries(
        &self,
        keys: &[SummaryKey<'_>],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.inner.cached_summaries(keys)
    }

    fn cache_summaries(&self, entries: &[(SummaryKey<'_>, &[u8])]) -> Result<(), StoreError> {
        self.inner.cache_summaries(entries)
    }

    fn clear_summaries(&self) -> Result<usize, StoreError> {
        self.inner.clear_summaries()
    }

    fn render_files(&self, paths: &[&str]) -> Result<Vec<Option<RenderFileRow>>, StoreError> {
        self.inner.render_files(paths)
    }

    fn remember_render_files(&self, rows: &[RenderFileRow]) -> Result<(), StoreError> {
        self.inner.remember_render_files(rows)
    }

    fn forget_render_files(&self, paths: &[&str]) -> Result<(), StoreError> {
        self.inner.forget_render_files(paths)
    }

    fn render_payload(&self, layout: &str) -> Result<Option<RenderPayloadRow>, StoreError> {
        self.inner.render_payload(layout)
    }

    fn remember_render_payload(&self, row: &RenderPayloadRow) -> Result<(), StoreError> {
        self.inner.remember_render_payload(row)
    }

    fn forget_render_payload(&self, layout: &str) -> Result<(), StoreError> {
        self.inner.forget_render_payload(layout)
    }

    fn restore_artifact(&self, record: &ArtifactRecord) -> Result<(), StoreError> {
        self.visible_pack(&record.pack)?;
        self.inner.restore_artifact(record)
    }

    fn ref_namespaces(&self) -> Result<Vec<String>, StoreError> {
        self.inner.ref_namespaces()
    }

    fn run_objects(&self, run_id: &str) -> Result<BTreeSet<ContentHash>, StoreError> {
        self.inner.run_objects(run_id)
    }

    fn object_references(&self) -> Result<Vec<ObjectReference>, StoreError> {
        self.inner.object_references()
    }

    fn integrity_problems(&self) -> Result<Vec<String>, StoreError> {
        self.inner.integrity_problems()
    }

    fn gc_marks_in_database(&self) -> bool {
        self.inner.gc_marks_in_database()
    }

    fn gc_unmark(&self, objects: &[ContentHash]) -> Result<(), StoreError> {
        self.inner.gc_unmark(objects)
    }

    fn gc_mark(
        &self,
        unreferenced: &[ContentHash],
        grace: Duration,
    ) -> Result<Vec<ContentHash>, StoreError> {
        self.inner.gc_mark(unreferenced, grace)
    }

    fn gc_sweep_one(
        &self,
        object: &ContentHash,
        grace: Duration,
        remove: &mut (dyn FnMut() -> Result<(), StoreError> + Send),
    ) -> Result<bool, StoreError> {
        self.inner.gc_sweep_one(object, grace, remove)
    }
}

#[cfg(test)]
mod tests {
    use ctx_core::ContentHash;

    use super::belongs;
    use crate::{SnapshotRecord, Store, StoreError};

    fn snapshot(id: ContentHash, label: Option<&str>) -> SnapshotRecord {
        SnapshotRecord {
            snapshot_id: id,
            label: label.map(str::to_owned),
            packs: vec!["p".into()],
            policy_json: "{}".into(),
            render_hash: ContentHash::of(b"r"),
            payload_object: ContentHash::of(b"payload"),
            tokens: 3,
            created_at: 1,
            root: None,
        }
    }

    /// Two ids whose hex starts alike for `n` digits.
    fn ids_sharing_a_prefix(n: usize) -> (ContentHash, ContentHash) {
        let mut seen = std::collections::HashMap::new();
        for i in 0u32.. {
            let id = ContentHash::of(&i.to_le_bytes());
            if let Some(other) = seen.insert(id.to_hex()[..n].to_owned(), id) {
                return (other, id);
            }
        }
        unreachable!("a birthday pair exists")
    }

    #[test]
    fn a_workspace_finds_its_snapshots_and_learns_nothing_of_another_s() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = Store::init(&dir.path().join(".ctx")).expect("store");
        let alpha = store.clone().scoped(std::path::Path::new("/w/alpha"));
        let beta = store.scoped(std::path::Path::new("/w/beta"));
        let (a, b) = ids_sharing_a_prefix(4);
        alpha
            .db()
            .insert_snapshot(&snapshot(a, None), &[])
            .expect("alpha's");
        beta.db()
            .insert_snapshot(&snapshot(b, Some("release")), &[])
            .expect("beta's");
        let prefix = &a.to_hex()[..4];
        // The shared prefix names one snapshot in each workspace: no ambiguity, and no id of
        // the other workspace in any answer.
        assert_eq!(
            alpha.db().find_snapshot(prefix).expect("alpha").snapshot_id,
            a
        );
        assert_eq!(
            beta.db().find_snapshot(prefix).expect("beta").snapshot_id,
            b
        );
        // Another workspace's label is not there.
        assert!(matches!(
            alpha.db().find_snapshot("release"),
            Err(StoreError::NoSuchSnapshot { .. })
        ));
        assert_eq!(
            beta.db()
                .find_snapshot("release")
                .expect("label")
                .snapshot_id,
            b
        );
    }

    #[test]
    fn a_workspace_sees_what_was_made_in_it_above_it_or_below_it_and_nothing_beside_it() {
        assert!(belongs("/home/u/alpha", "/home/u/alpha"));
        assert!(belongs("/home/u/alpha/sub", "/home/u/alpha"));
        assert!(belongs("/home/u/alpha", "/home/u/alpha/sub"));
        assert!(!belongs("/home/u/beta", "/home/u/alpha"));
        // Components, not string prefixes.
        assert!(!belongs("/home/u/alpha2", "/home/u/alpha"));
        assert!(!belongs("/home/u/alpha", "/home/u/alpha2"));
    }
}
