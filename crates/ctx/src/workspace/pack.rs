//! The pack and token use cases of [`Workspace`].

use std::path::{Path, PathBuf};

use ctx_core::{Progress, TokenizerKind};
use ctx_sources::AddOptions;
use ctx_store::{ArtifactRecord, PackRecord, SnapshotRecord, Store, StoreKind};

use super::Workspace;
use crate::answers::PreviewAnswer;
use crate::error::CtxError;
use crate::packs::{
    self, AddReport, OneShotRequest, PackView, PayloadOptions, Render, RenderReport, RenderRequest,
};

impl Workspace {
    /// Creates an empty pack (budget and tokenizer from the settings when not given).
    pub fn pack_create(
        &self,
        name: &str,
        budget: Option<u64>,
        tokenizer: Option<TokenizerKind>,
    ) -> Result<PackRecord, CtxError> {
        let cx = self.packs()?;
        match (&self.location, &self.scope) {
            // No project: the pack keeps the directory it is made for (its repository's top,
            // or the working directory) as the root of its sources.
            (Some(location), Some(root)) if location.kind == StoreKind::Global => {
                packs::create_pack_at(&cx, name, budget, tokenizer, root, self.now())
            }
            _ => packs::create_pack(&cx, name, budget, tokenizer, self.now()),
        }
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

    /// [`Workspace::pack_render`] with payload options, its phases told to `progress`.
    pub fn pack_render_with(
        &self,
        request: &RenderRequest,
        options: PayloadOptions,
        progress: &dyn Progress,
    ) -> Result<Render, CtxError> {
        packs::render_with(&self.packs()?, request, options, progress)
    }

    /// What rendering `request` would include, exclude and redact, with the payload when
    /// `show_payload`; paths are named from the workspace root.
    pub fn pack_preview(
        &self,
        request: &RenderRequest,
        options: PayloadOptions,
        show_payload: bool,
        progress: &dyn Progress,
    ) -> Result<PreviewAnswer, CtxError> {
        let rendered = self.pack_render_with(request, options, progress)?;
        let payload = show_payload.then_some(rendered.payload);
        Ok(PreviewAnswer::new(rendered.report, payload, &|p| {
            self.from_sources(p)
        }))
    }

    /// A path relative to the sources root (pack artifacts) as the workspace-root-relative
    /// path the other answers give; unchanged when the two roots are one or the file lies
    /// outside the workspace.
    pub fn from_sources(&self, path: &str) -> String {
        let sources = &self.sources_root;
        let sources = sources.canonicalize().unwrap_or_else(|_| sources.clone());
        if sources == self.sandbox_root {
            return path.to_owned();
        }
        match sources.join(path).strip_prefix(&self.sandbox_root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            _ => path.to_owned(),
        }
    }

    /// Renders into the file at `path` (taken from [`Workspace::cwd`]) as the payload is
    /// made, so memory stays bounded however large the tree.
    pub fn pack_render_to_file(
        &self,
        request: &RenderRequest,
        options: PayloadOptions,
        progress: &dyn Progress,
        path: &Path,
    ) -> Result<RenderReport, CtxError> {
        packs::render_to_file(
            &self.packs()?,
            request,
            options,
            progress,
            &self.cwd.join(path),
        )
    }

    /// Renders files and directories now, without a pack (`ctx pack PATH…`). Paths are taken
    /// from [`Workspace::cwd`]; the token cache is used when a store exists (none is created).
    /// Returns the directory the payload's paths are relative to, and the render.
    pub fn pack_paths(
        &self,
        request: &OneShotRequest,
        progress: &dyn Progress,
    ) -> Result<(PathBuf, Render), CtxError> {
        let project_root = self.location.as_ref().and_then(|l| l.project_root());
        let root = packs::oneshot_root(&self.cwd, &request.paths, project_root)?;
        let store = self.existing_store();
        let rendered = packs::pack_paths(
            &root,
            &self.cwd,
            self.settings()?,
            store.map(|s| s.db() as &dyn ctx_store::Metadata),
            request,
            progress,
        )?;
        Ok((root, rendered))
    }

    /// [`Workspace::pack_snapshot`] with payload options, its phases told to `progress`.
    pub fn pack_snapshot_with(
        &self,
        request: &RenderRequest,
        options: PayloadOptions,
        label: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<(SnapshotRecord, Render), CtxError> {
        packs::snapshot_with(
            &self.packs()?,
            request,
            options,
            label,
            self.now(),
            progress,
        )
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
    /// the store's cache when a store exists (none is created for it).
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
            self.existing_store().map(Store::db),
            tokenizer,
            texts,
        )?)
    }
}
