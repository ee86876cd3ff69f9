//! Packs (seed 000): named, prioritized collections of sources, rendered into one
//! deterministic, redacted, token-budgeted payload, and snapshots that reproduce it.

mod ladder;
mod oneshot;
mod payload;
mod render;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ctx_core::TokenizerKind;
use ctx_core::redact::Redactor;
use ctx_sources::sensitive::SensitivePaths;
use ctx_sources::{AddOptions, Source, SourceSpec, parse_source};
use ctx_store::{ArtifactRecord, NewArtifact, PackRecord, Store, StoreKind, StoreLocation};
use serde::Serialize;

pub use oneshot::{OneShotRequest, TokenTreeRow, oneshot_root, pack_paths};
pub use payload::{PayloadOptions, PayloadStyle};
pub use render::{
    ExcludedItem, IncludedItem, PayloadPiece, RedactionSummary, Render, RenderPolicy, RenderReport,
    RenderRequest, SnapshotDrift, SnapshotVerify, render, render_snapshot, render_to,
    render_to_file, render_with, render_with_progress, snapshot, snapshot_with,
    snapshot_with_progress, verify_snapshot,
};

use crate::config::ConfigLayers;
use crate::error::CtxError;

/// Everything a pack operation needs: the store, the workspace root, and settings.
pub struct PackContext<'a> {
    pub store: &'a Store,
    /// Paths in sources are stored relative to this directory.
    pub root: PathBuf,
    pub settings: &'a PackSettings,
    /// Unix seconds now (the front end's clock): the render cache remembers a file's stamp
    /// only once it is old enough to trust.
    pub clock: &'a (dyn Fn() -> i64 + Sync),
}

/// Settings that shape pack operations (from config, flags and defaults).
pub struct PackSettings {
    pub default_budget: u64,
    pub default_tokenizer: TokenizerKind,
    pub max_file_bytes: u64,
    pub command_timeout: Duration,
    pub redactor: Redactor,
    pub sensitive: SensitivePaths,
}

impl PackSettings {
    /// The settings in force for `layers` (flags, environment, project and global files),
    /// so every front end (CLI, MCP, HTTP) renders with the same policy.
    pub fn from_layers(layers: &ConfigLayers) -> Result<Self, CtxError> {
        Ok(Self {
            default_budget: layers.count("budget")?,
            default_tokenizer: layers.tokenizer()?,
            max_file_bytes: layers.count("max_file_bytes")?,
            command_timeout: Duration::from_secs(layers.count("cmd_timeout_secs")?),
            redactor: Redactor::with_custom(&layers.redaction_rules()?)?,
            sensitive: SensitivePaths::with_extra(&layers.sensitive_extra()?)
                .map_err(|e| CtxError::InvalidInput(format!("sensitive.extra: {e}")))?,
        })
    }
}

/// The directory pack sources are stored relative to: the project root for a project store,
/// the directory holding an explicit store, and the file-system root for the global store
/// (whose packs made since format 2 carry their own root: see [`create_pack_at`]).
pub fn sources_root(location: &StoreLocation, cwd: &Path) -> PathBuf {
    match &location.kind {
        StoreKind::Project { root } => root.clone(),
        StoreKind::Explicit => location
            .dir
            .canonicalize()
            .ok()
            .and_then(|d| d.parent().map(PathBuf::from))
            .unwrap_or_else(|| cwd.to_owned()),
        StoreKind::Global => PathBuf::from("/"),
    }
}

/// Pack names: letters, digits, `.`, `_` and `-`, starting with a letter or digit.
pub fn validate_pack_name(name: &str) -> Result<(), CtxError> {
    let valid = !name.is_empty()
        && name.len() <= 100
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(CtxError::InvalidInput(format!(
            "invalid pack name `{name}`; use letters, digits, `.`, `_` and `-` (starting with a letter or digit)"
        )))
    }
}

/// Creates a pack whose sources are relative to the context's root.
pub fn create_pack(
    ctx: &PackContext<'_>,
    name: &str,
    budget: Option<u64>,
    tokenizer: Option<TokenizerKind>,
    now: i64,
) -> Result<PackRecord, CtxError> {
    validate_pack_name(name)?;
    let budget = budget.unwrap_or(ctx.settings.default_budget);
    let tokenizer = tokenizer.unwrap_or(ctx.settings.default_tokenizer);
    Ok(ctx.store.db().create_pack(&ctx_store::NewPack {
        name,
        budget_tokens: budget,
        tokenizer,
        created_at: now,
    })?)
}

/// Creates a pack whose sources are relative to `root` (an absolute directory), whatever
/// the context's root: a pack in the global store keeps the directory it was made for, so
/// its sources and payload headers never start at `/`.
pub fn create_pack_at(
    ctx: &PackContext<'_>,
    name: &str,
    budget: Option<u64>,
    tokenizer: Option<TokenizerKind>,
    root: &Path,
    now: i64,
) -> Result<PackRecord, CtxError> {
    let root = root.to_str().ok_or_else(|| {
        CtxError::InvalidInput(format!(
            "`{}` is not valid UTF-8; make the pack in a directory with a UTF-8 path",
            root.display()
        ))
    })?;
    create_pack(ctx, name, budget, tokenizer, now)?;
    ctx.store.db().set_pack_root(name, root)?;
    Ok(ctx.store.db().require_pack(name)?)
}

/// The directory `pack`'s sources are relative to.
fn pack_root(ctx: &PackContext<'_>, pack: &PackRecord) -> PathBuf {
    pack.root
        .as_ref()
        .map_or_else(|| ctx.root.clone(), PathBuf::from)
}

/// A pack with its artifacts, as `pack show` presents it.
#[derive(Debug, Clone, Serialize)]
pub struct PackView {
    #[serde(flatten)]
    pub pack: PackRecord,
    pub artifacts: Vec<ArtifactView>,
}

/// One artifact in a [`PackView`].
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactView {
    pub artifact_id: String,
    pub kind: &'static str,
    pub uri: String,
    pub priority: i64,
    pub seq: u64,
    pub collection: bool,
    pub allow_sensitive: bool,
}

fn spec_of(record: &ArtifactRecord) -> Result<SourceSpec, CtxError> {
    serde_json::from_str(&record.source_json).map_err(|e| {
        CtxError::Corrupt(format!(
            "artifact {} of pack `{}` has an unreadable source ({e}); remove it with `ctx pack remove {} {}`",
            record.artifact_id, record.pack, record.pack, record.artifact_id
        ))
    })
}

fn kind_name(source: &Source) -> &'static str {
    match source {
        Source::File { lines: None, .. } => "file",
        Source::File { lines: Some(_), .. } => "file_range",
        Source::Markdown { .. } => "md",
        Source::MarkdownDir { .. } => "md_dir",
        Source::Glob { .. } => "glob",
        Source::GitDiff { .. } => "git_diff",
        Source::GitLog { .. } => "git_log",
        Source::Tree { .. } => "dir",
        Source::Command { .. } => "cmd",
        Source::Text { .. } => "text",
    }
}

/// Every pack, by name.
pub fn list_packs(store: &Store) -> Result<Vec<PackRecord>, CtxError> {
    Ok(store.db().list_packs()?)
}

/// Deletes a pack and its artifacts (its snapshots are kept).
pub fn delete_pack(store: &Store, name: &str) -> Result<(), CtxError> {
    Ok(store.db().delete_pack(name)?)
}

/// Removes an artifact from a pack (a unique prefix of its id is enough); returns it.
pub fn remove_artifact(
    store: &Store,
    pack: &str,
    artifact: &str,
) -> Result<ArtifactRecord, CtxError> {
    Ok(store.db().remove_artifact(pack, artifact)?)
}

/// Every snapshot, newest first.
pub fn list_snapshots(store: &Store) -> Result<Vec<ctx_store::SnapshotRecord>, CtxError> {
    Ok(store.db().list_snapshots()?)
}

/// The snapshot a reference names: its id, a unique prefix, or its label.
pub fn find_snapshot(
    store: &Store,
    reference: &str,
) -> Result<ctx_store::SnapshotRecord, CtxError> {
    Ok(store.db().find_snapshot(reference)?)
}

/// A pack and its artifacts in render order.
pub fn show_pack(ctx: &PackContext<'_>, name: &str) -> Result<PackView, CtxError> {
    let pack = ctx.store.db().require_pack(name)?;
    let artifacts = ctx
        .store
        .db()
        .artifacts(name)?
        .iter()
        .map(|record| {
            let spec = spec_of(record)?;
            Ok(ArtifactView {
                artifact_id: record.artifact_id.clone(),
                kind: kind_name(&spec.source),
                uri: record.uri.clone(),
                priority: record.priority,
                seq: record.seq,
                collection: spec.source.is_collection(),
                allow_sensitive: spec.allow_sensitive,
            })
        })
        .collect::<Result<_, CtxError>>()?;
    Ok(PackView { pack, artifacts })
}

/// What `pack add` did.
#[derive(Debug, Clone, Serialize)]
pub struct AddReport {
    pub pack: String,
    pub artifact: ArtifactView,
    /// For collections: how many files they match now (they expand again at render time).
    pub matches: Option<usize>,
    pub warnings: Vec<String>,
}

/// Adds a source to a pack.
pub fn add_source(
    ctx: &PackContext<'_>,
    pack: &str,
    uri: &str,
    cwd: &Path,
    options: &AddOptions,
    priority: i64,
    now: i64,
) -> Result<AddReport, CtxError> {
    let root = pack_root(ctx, &ctx.store.db().require_pack(pack)?);
    let spec = parse_source(uri, cwd, &root, options)?;
    if !spec.allow_sensitive
        && let Source::File { path, .. } | Source::Markdown { path } = &spec.source
        && let Some(pattern) = ctx.settings.sensitive.matches(path)
    {
        return Err(ctx_sources::SourceError::Sensitive {
            uri: uri.to_owned(),
            pattern: pattern.to_owned(),
        }
        .into());
    }
    if let Source::GitDiff { dir, base, head } = &spec.source {
        ctx_sources::git::check(uri, &root.join(dir), base.as_deref(), head.as_deref())?;
    }
    let mut warnings = Vec::new();
    let matches = ctx_sources::count_matches(
        &spec,
        &render::expand_options(&root, ctx.settings, &ctx_core::NoProgress),
    );
    if let Some((included, sensitive)) = matches {
        if included == 0 {
            warnings.push(format!(
                "`{uri}` matches no files right now; it will expand again at render time"
            ));
        }
        if sensitive > 0 {
            warnings.push(format!(
                "`{uri}` matches {sensitive} sensitive file(s) that will be skipped; add --allow-sensitive to include them"
            ));
        }
    }
    let matches = matches.map(|(included, _)| included);
    let artifact_id = spec.artifact_id();
    let source_json = serde_json::to_string(&spec).expect("specs serialize");
    let record = ctx.store.db().add_artifact(
        pack,
        &NewArtifact {
            artifact_id: &artifact_id,
            priority,
            uri: &spec.uri(),
            source_json: &source_json,
            added_at: now,
        },
    )?;
    Ok(AddReport {
        pack: pack.to_owned(),
        artifact: ArtifactView {
            artifact_id: record.artifact_id,
            kind: kind_name(&spec.source),
            uri: record.uri,
            priority: record.priority,
            seq: record.seq,
            collection: spec.source.is_collection(),
            allow_sensitive: spec.allow_sensitive,
        },
        matches,
        warnings,
    })
}
