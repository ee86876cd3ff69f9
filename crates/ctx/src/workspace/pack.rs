//! The pack and token use cases of [`Workspace`].

use ctx_core::TokenizerKind;
use ctx_sources::AddOptions;
use ctx_store::{ArtifactRecord, PackRecord, SnapshotRecord};

use super::Workspace;
use crate::error::CtxError;
use crate::packs::{self, AddReport, PackView, Render, RenderRequest};

impl Workspace {
    /// Creates an empty pack (budget and tokenizer from the settings when not given).
    pub fn pack_create(
        &self,
        name: &str,
        budget: Option<u64>,
        tokenizer: Option<TokenizerKind>,
    ) -> Result<PackRecord, CtxError> {
        packs::create_pack(&self.packs()?, name, budget, tokenizer, self.now())
    }

    /// Adds a source (`file:`, `glob:`, `md:`, `git:diff`, `cmd:`, `text:` …) to a pack; paths
    /// are taken relative to [`Workspace::cwd`].
    pub fn pack_add(
        &self,
        name: &str,
        source: &str,
        options: &AddOptions,
        priority: i64,
    ) -> Result<AddReport, CtxError> {
        packs::add_source(
            &self.packs()?,
            name,
            source,
            &self.cwd,
            options,
            priority,
            self.now(),
        )
    }

    /// Every pack, by name.
    pub fn pack_list(&self) -> Result<Vec<PackRecord>, CtxError> {
        packs::list_packs(self.store()?)
    }

    /// A pack's settings and artifacts in render order.
    pub fn pack_show(&self, name: &str) -> Result<PackView, CtxError> {
        packs::show_pack(&self.packs()?, name)
    }

    /// Deletes a pack and its artifacts (snapshots are kept).
    pub fn pack_delete(&self, name: &str) -> Result<(), CtxError> {
        packs::delete_pack(self.store()?, name)
    }

    /// Removes an artifact (a unique prefix of its id is enough).
    pub fn pack_remove(&self, name: &str, artifact: &str) -> Result<ArtifactRecord, CtxError> {
        packs::remove_artifact(self.store()?, name, artifact)
    }

    /// Renders packs without recording anything: the payload and the report (what is
    /// included, excluded, redacted, and the tokens used).
    pub fn pack_render(&self, request: &RenderRequest) -> Result<Render, CtxError> {
        packs::render(&self.packs()?, request)
    }

    /// Renders and records a snapshot (optionally labelled) that can be verified later.
    pub fn pack_snapshot(
        &self,
        request: &RenderRequest,
        label: Option<&str>,
    ) -> Result<(SnapshotRecord, Render), CtxError> {
        packs::snapshot(&self.packs()?, request, label, self.now())
    }

    /// A snapshot's stored payload, byte for byte.
    pub fn pack_snapshot_payload(
        &self,
        reference: &str,
    ) -> Result<(SnapshotRecord, Vec<u8>), CtxError> {
        packs::render_snapshot(&self.packs()?, reference)
    }

    /// The snapshot `reference` names: its id, a unique prefix of it, or its label.
    pub fn pack_snapshot_record(&self, reference: &str) -> Result<SnapshotRecord, CtxError> {
        packs::find_snapshot(self.store()?, reference)
    }

    /// Every snapshot, newest first.
    pub fn pack_snapshots(&self) -> Result<Vec<SnapshotRecord>, CtxError> {
        packs::list_snapshots(self.store()?)
    }

    /// Re-renders a snapshot and reports what changed, artifact by artifact.
    pub fn pack_verify(&self, reference: &str) -> Result<packs::SnapshotVerify, CtxError> {
        packs::verify_snapshot(&self.packs()?, reference)
    }

    // --------------------------------------------------------------------------- tokens

    /// Exact token counts of `texts` (the settings' tokenizer unless one is named), through
    /// the store's cache.
    pub fn count_tokens(
        &self,
        texts: &[&str],
        tokenizer: Option<TokenizerKind>,
    ) -> Result<Vec<u64>, CtxError> {
        let tokenizer = match tokenizer {
            Some(t) => t,
            None => self.layers.tokenizer()?,
        };
        Ok(crate::tokens::count_cached(
            Some(self.store()?.db()),
            tokenizer,
            texts,
        )?)
    }
}
