//! [`Workspace`]: one object per front end that opens the store once, holds the settings and
//! the injected services (the clock, what the environment said), and offers every use case as
//! a typed method.
//!
//! The Python module is built on it; the CLI and the MCP server still call the module
//! functions it wraps (`packs`, `code`, `select`, `tokens`) and move onto it one verb at a
//! time. Nothing here reads the environment or the clock: [`Environment`] and [`Clock`] come
//! from the front end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctx_core::TokenizerKind;
use ctx_core::redact::Redactor;
use ctx_fs::read::{FsReadInput, FsReadOutput, ReadOptions};
use ctx_runs::{ImportOutcome, Run, RunDiff, RunFormat, RunSummary};
use ctx_sources::AddOptions;
use ctx_store::{
    ArtifactRecord, DiscoverRequest, PackRecord, SnapshotRecord, Store, StoreKind, StoreLocation,
    discover,
};

use crate::code::{CodeContext, RelatedReport, SearchKind, SearchResults, SummarizeReport};
use crate::config::{ConfigFile, ConfigLayers};
use crate::error::CtxError;
use crate::packs::{self, AddReport, PackContext, PackSettings, PackView, Render, RenderRequest};
use crate::select::{SelectContext, SelectOutcome};

/// The time now, in seconds since the Unix epoch: the front end's clock, passed in.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// What the front end read from its environment (libraries read none of it).
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `CTX_HOME`: where the global store lives instead of `~/.ctx`.
    pub ctx_home: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// The global config file (`$XDG_CONFIG_HOME/ctx/config.toml` or `~/.config/...`).
    pub global_config: Option<PathBuf>,
    /// `CTX_*` variables that set config keys.
    pub vars: BTreeMap<String, String>,
}

/// How to open a [`Workspace`].
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// The directory the workspace is asked from; the store is found from here (like git).
    pub cwd: PathBuf,
    /// A store directory to use instead of discovering one.
    pub store: Option<PathBuf>,
    /// Create `cwd/.ctx` when no store is found (else the global store is used, created on
    /// first use, as the CLI does).
    pub init: bool,
    pub env: Environment,
}

/// What `ctx init` did: the store directory, whether it was created, its schema version.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InitReport {
    pub store: String,
    pub created: bool,
    pub schema_version: i64,
}

/// Creates the store layout in `dir` (which may exist already) and says what it found.
pub fn init_store(dir: &Path) -> Result<InitReport, CtxError> {
    let (store, created) = Store::init(dir)?;
    Ok(InitReport {
        store: dir.display().to_string(),
        created,
        schema_version: store.db().schema_version()?,
    })
}

/// Where a store keeps its metadata and objects, and its schema version.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreInfo {
    pub metadata: String,
    pub objects: String,
    pub schema_version: i64,
}

/// Where `store` keeps its metadata and objects (a path or a URL without credentials), and
/// its schema version (migrations are applied when a store is opened).
pub fn store_info(store: &Store) -> Result<StoreInfo, CtxError> {
    Ok(StoreInfo {
        metadata: store.db().location(),
        objects: store.objects().location(),
        schema_version: store.db().schema_version()?,
    })
}

/// An open workspace: its store, settings and clock.
pub struct Workspace {
    cwd: PathBuf,
    location: StoreLocation,
    store: Store,
    layers: ConfigLayers,
    clock: Clock,
}

impl Workspace {
    /// Opens the workspace `options` describe.
    pub fn open(options: &OpenOptions, clock: Clock) -> Result<Self, CtxError> {
        let cwd = options.cwd.canonicalize().map_err(|err| {
            CtxError::InvalidInput(format!(
                "`{}`: {err}; name an existing directory",
                options.cwd.display()
            ))
        })?;
        if !cwd.is_dir() {
            return Err(CtxError::InvalidInput(format!(
                "`{}` is not a directory; name a directory",
                options.cwd.display()
            )));
        }
        let request = DiscoverRequest {
            cwd: cwd.clone(),
            explicit: options.store.clone(),
            ctx_home: options.env.ctx_home.clone(),
            home: options.env.home.clone(),
        };
        let found = discover(&request);
        let (store, location) = match found {
            Ok(location) if location.kind != StoreKind::Global || !options.init => {
                let store = if location.kind == StoreKind::Global
                    && !location.dir.join(ctx_store::DATABASE_FILE).exists()
                {
                    Store::init(&location.dir)?.0
                } else {
                    Store::open(&location.dir)?
                };
                // The global store is shared by every project: this workspace sees its own
                // packs, snapshots and runs (a store named explicitly is seen whole).
                let store = if location.kind == StoreKind::Global {
                    store.scoped(&packs::oneshot_root(&cwd, &[], None)?)
                } else {
                    store
                };
                (store, location)
            }
            _ if options.init => {
                let dir = cwd.join(ctx_store::STORE_DIR_NAME);
                let (store, _) = Store::init(&dir)?;
                let location = discover(&DiscoverRequest {
                    explicit: Some(dir),
                    ..request
                })?;
                (store, location)
            }
            Err(err) => return Err(err.into()),
            Ok(_) => unreachable!("the first arm takes every found store without init"),
        };
        let load = |path: Option<PathBuf>| -> Result<Option<ConfigFile>, CtxError> {
            Ok(path
                .filter(|p| p.is_file())
                .map(|p| ConfigFile::load(&p))
                .transpose()?)
        };
        let project = match location.kind {
            StoreKind::Global => None,
            _ => Some(location.dir.join(ctx_store::CONFIG_FILE)),
        };
        let layers = ConfigLayers {
            global: load(options.env.global_config.clone())?,
            project: load(project)?,
            env: options.env.vars.clone(),
            flags: BTreeMap::new(),
        };
        Ok(Self {
            cwd,
            location,
            store,
            layers,
            clock,
        })
    }

    /// The directory the workspace was asked from (canonical).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The root sources and indexes are relative to: the project root for a project store,
    /// the asked directory for the global store.
    pub fn root(&self) -> PathBuf {
        packs::sources_root(&self.location, &self.cwd)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Where the store is and what kind it is.
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// The merged settings.
    pub fn config(&self) -> &ConfigLayers {
        &self.layers
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }

    fn packs(&self) -> Result<PackContext<'_>, CtxError> {
        Ok(PackContext {
            store: &self.store,
            root: self.root(),
            settings: PackSettings::from_layers(&self.layers)?,
            clock: &*self.clock,
        })
    }

    // ---------------------------------------------------------------------------- packs

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
        packs::list_packs(&self.store)
    }

    /// A pack's settings and artifacts in render order.
    pub fn pack_show(&self, name: &str) -> Result<PackView, CtxError> {
        packs::show_pack(&self.packs()?, name)
    }

    /// Deletes a pack and its artifacts (snapshots are kept).
    pub fn pack_delete(&self, name: &str) -> Result<(), CtxError> {
        packs::delete_pack(&self.store, name)
    }

    /// Removes an artifact (a unique prefix of its id is enough).
    pub fn pack_remove(&self, name: &str, artifact: &str) -> Result<ArtifactRecord, CtxError> {
        packs::remove_artifact(&self.store, name, artifact)
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

    /// Every snapshot, newest first.
    pub fn pack_snapshots(&self) -> Result<Vec<SnapshotRecord>, CtxError> {
        packs::list_snapshots(&self.store)
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
            Some(self.store.db()),
            tokenizer,
            texts,
        )?)
    }

    // --------------------------------------------------------------------------- select

    /// The files most relevant to `query` within `budget` tokens, with why each was chosen;
    /// builds or updates the workspace index first (the same ranking as `ctx select`).
    pub fn select(
        &self,
        query: &str,
        budget: u64,
        index: Option<&str>,
    ) -> Result<SelectOutcome, CtxError> {
        let (root, default_index) = crate::select::workspace(&self.location, &self.cwd);
        let cx = SelectContext {
            store: &self.store,
            root,
            default_index,
            tokenizer: self.layers.tokenizer()?,
            max_file_bytes: self.layers.count("max_file_bytes")?,
            redactor: Redactor::with_custom(&self.layers.redaction_rules()?)?,
            now: self.now(),
            progress: Box::new(ctx_core::NoProgress),
        };
        crate::select::select(&cx, index, query, &crate::select::prompt_options(budget))
    }

    // ----------------------------------------------------------------------------- code

    fn code(&self) -> CodeContext<'_> {
        CodeContext {
            cwd: self.cwd.clone(),
            store: Some(&self.store),
            sandbox: None,
            clock: &*self.clock,
        }
    }

    /// Symbols, imports and line counts of a file or a tree (skeletons on request).
    pub fn summarize(
        &self,
        path: &Path,
        depth: Option<usize>,
        skeleton: bool,
    ) -> Result<SummarizeReport, CtxError> {
        let report = crate::code::summarize(&self.code(), path, depth, skeleton)?;
        Ok(report)
    }

    /// Text, symbol or caller search under `path`: the first `max_results` matches (a text
    /// search also stops keeping at its [`crate::code::SearchLimit`]) and the count of all.
    pub fn search(
        &self,
        path: &Path,
        kind: &SearchKind,
        max_results: Option<usize>,
    ) -> Result<SearchResults, CtxError> {
        Ok(crate::code::search(&self.code(), path, kind, max_results)?)
    }

    /// The files related to `file`: imports both ways, tests, and files changed with it.
    pub fn related(
        &self,
        file: &Path,
        history: usize,
        limit: usize,
    ) -> Result<RelatedReport, CtxError> {
        Ok(crate::code::related(&self.code(), file, history, limit)?)
    }

    // ----------------------------------------------------------------------------- runs

    /// Imports an agent transcript (format detected unless named) as a run.
    pub fn run_import(
        &self,
        path: &Path,
        format: Option<RunFormat>,
    ) -> Result<ImportOutcome, CtxError> {
        Ok(ctx_runs::import_file(
            &self.store,
            &self.cwd.join(path),
            format,
        )?)
    }

    /// Stored runs, newest first.
    pub fn run_list(&self) -> Result<Vec<RunSummary>, CtxError> {
        Ok(ctx_runs::list_runs(&self.store)?)
    }

    /// A run by id, unique id prefix or tag, every object re-hashed.
    pub fn run_show(&self, id: &str) -> Result<Run, CtxError> {
        Ok(ctx_runs::load_run(&self.store, id)?)
    }

    /// What changed from run `a` to run `b`, step by step.
    pub fn run_diff(&self, a: &str, b: &str) -> Result<RunDiff, CtxError> {
        let a = ctx_runs::load_run(&self.store, a)?;
        let b = ctx_runs::load_run(&self.store, b)?;
        Ok(ctx_runs::diff_runs(&a, &b))
    }

    /// Starts recording tool calls as a run named `name` in this workspace's store (see
    /// [`crate::recording`]): the caller records each call it answers and finishes the run.
    /// `deterministic` names the tools whose calls replay can reproduce; `runtime` names the
    /// caller in the run's environment; `pid` is the recording process (its journal is not
    /// recovered while it runs). Recordings a dead process left are finished first.
    pub fn start_recording(
        &self,
        name: &str,
        deterministic: Vec<String>,
        runtime: &str,
        pid: u32,
    ) -> Result<crate::recording::Recording, CtxError> {
        crate::recording::check_record_name(name)?;
        let alive = |p: u32| p == pid || crate::recording::process_alive(p);
        crate::recording::recover_recordings(&self.store, &alive)?;
        let redactor = Redactor::with_custom(&self.layers.redaction_rules()?)?;
        let store = Store::open(&self.location.dir)?;
        let store = match self.store.scope() {
            Some(scope) => store.scoped(Path::new(scope)),
            None => store,
        };
        crate::recording::Recording::start(
            store,
            crate::recording::RecordingOptions {
                name: name.to_owned(),
                workspace_root: self.cwd.clone(),
                started: self.now(),
                deterministic,
                redactor,
                clock: Arc::clone(&self.clock),
                runtime: runtime.to_owned(),
                pid,
            },
        )
    }

    // ----------------------------------------------------------------------------- read

    /// `fs_read` inside the workspace root, through the sandbox.
    pub fn read(
        &self,
        input: &FsReadInput,
        options: &ReadOptions,
    ) -> Result<FsReadOutput, CtxError> {
        let sandbox = ctx_fs::Sandbox::open(self.root()).map_err(|err| {
            CtxError::InvalidInput(format!("workspace `{}`: {err}", self.root().display()))
        })?;
        Ok(ctx_fs::read::fs_read(&sandbox, input, options))
    }
}
