//! `store copy`: every object and every metadata row of one store into another, whatever
//! their backends (a local store into a shared one and back).

use serde::Serialize;

use crate::{NewPack, Store, StoreError};

/// What `store copy` copied.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CopyReport {
    pub objects_copied: u64,
    pub objects_present: u64,
    pub bytes_copied: u64,
    pub packs: u64,
    pub artifacts: u64,
    pub snapshots: u64,
    pub runs: u64,
    pub refs: u64,
}

impl Store {
    /// Copies this store's objects and metadata into `target`, which must hold no packs,
    /// snapshots or runs of the same names. Objects go first (each hash-checked on the way),
    /// so every reference the metadata makes resolves as soon as it is written; runs keep
    /// their listing order, artifacts their `seq`. The caches (token counts, summaries, file
    /// stamps) are derived data and are not copied: they refill on use.
    pub fn copy_into(&self, target: &Self) -> Result<CopyReport, StoreError> {
        let mut report = CopyReport::default();
        for entry in self.objects().list()? {
            let Some(hash) = entry.hash else { continue };
            if target.objects().contains(&hash)? {
                report.objects_present += 1;
                continue;
            }
            let bytes = self.objects().get(&hash)?;
            target.objects().put(&bytes)?;
            report.objects_copied += 1;
            report.bytes_copied += bytes.len() as u64;
        }
        let (from, to) = (self.db(), target.db());
        for pack in from.list_packs()? {
            to.create_pack(&NewPack {
                name: &pack.name,
                budget_tokens: pack.budget_tokens,
                tokenizer: pack.tokenizer,
                created_at: pack.created_at,
            })?;
            if let Some(root) = &pack.root {
                to.set_pack_root(&pack.name, root)?;
            }
            let mut artifacts = from.artifacts(&pack.name)?;
            artifacts.sort_by_key(|a| a.seq);
            for artifact in &artifacts {
                to.restore_artifact(artifact)?;
                report.artifacts += 1;
            }
            report.packs += 1;
        }
        let mut snapshots = from.list_snapshots()?;
        snapshots.reverse();
        for snapshot in snapshots {
            let items = from.snapshot_items(&snapshot.snapshot_id)?;
            to.insert_snapshot(&snapshot, &items)?;
            report.snapshots += 1;
        }
        // Oldest first, so that the target lists them in the same order.
        let mut runs = from.list_run_rows()?;
        runs.reverse();
        for run in &runs {
            let objects = from.run_objects(&run.run_id)?;
            to.record_run(run, &objects, ("ctx-copy", "last-run"))?;
            report.runs += 1;
        }
        to.delete_ref("ctx-copy", "last-run")?;
        for namespace in from.ref_namespaces()? {
            for entry in from.list_refs(&namespace)? {
                to.set_ref(&entry.namespace, &entry.name, &entry.object)?;
                report.refs += 1;
            }
        }
        Ok(report)
    }
}
