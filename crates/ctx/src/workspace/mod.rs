//! [`Workspace`]: one object per front end that opens the store once, holds the settings and
//! the injected services (the clock, what the environment said), and offers every use case as
//! a typed method.
//!
//! The CLI, the MCP server and the Python module hold one; the use cases live in the
//! submodules by area (`pack`, `select`, `code`, `runs`). Nothing here reads the environment
//! or the clock: [`Environment`] and [`Clock`] come from the front end.

mod code;
mod hook;
mod pack;
mod runs;
mod select;

pub use runs::{RunExport, RunInput};

use std::cell::{Cell, OnceCell};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctx_fs::Sandbox;
use ctx_fs::walk::Cancel;
use ctx_store::{DiscoverRequest, Store, StoreKind, StoreLocation, discover};

use crate::config::{ConfigFile, ConfigLayers};
use crate::error::CtxError;
use crate::packs::{self, PackContext, PackSettings};

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

/// How a server opens the [`Workspace`] it answers for: the root every path argument is
/// resolved in, the store it was given and the settings the front end read.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The workspace root (canonical): the sandbox, the index's tree, relative paths' base.
    pub root: PathBuf,
    /// The store directory (it must exist). A store that is not `root/.ctx` is shared with
    /// other workspaces and shows this one only its own packs, snapshots, runs and indexes.
    pub store_dir: PathBuf,
    /// The directory pack sources are relative to.
    pub sources_root: PathBuf,
    pub layers: ConfigLayers,
}

/// An open workspace: where it is, its store (opened on first use), settings and clock.
///
/// The one way in for every front end: each use case is a method, and every path a method
/// takes is resolved through the workspace's one sandbox.
pub struct Workspace {
    /// Relative paths are taken from here.
    cwd: PathBuf,
    /// The directory no path may leave.
    sandbox_root: PathBuf,
    /// Pack sources are relative to this directory.
    sources_root: PathBuf,
    /// The tree the workspace index covers, and that index's name.
    index_root: PathBuf,
    default_index: String,
    /// Where the store is: `None` when there is none (no project store, no home).
    location: Option<StoreLocation>,
    /// The root the store is seen from when it is shared; `None` shows it whole.
    scope: Option<PathBuf>,
    store: OnceCell<Store>,
    created_store: Cell<bool>,
    sandbox: OnceCell<Result<Sandbox, String>>,
    /// The pack settings (redaction rules and sensitive-path globs compiled), made once.
    settings: OnceCell<PackSettings>,
    layers: ConfigLayers,
    clock: Clock,
    /// Set by a caller that gives up (a server's timed-out call): walks and summaries stop.
    cancel: Option<Cancel>,
    /// Where a server keeps its workspace index current ([`KeptIndex`]); `None`: every
    /// selection walks the tree to bring it up to date.
    kept: Option<KeptIndex>,
}

/// A server's workspace index, kept current by a file watcher from its first selection on,
/// and shared by the [`Workspace`]s that answer its calls
/// ([`Workspace::keep_index_in`]). Dropping the last clone stops the watcher.
#[derive(Clone, Default)]
pub struct KeptIndex(Arc<std::sync::OnceLock<crate::IndexKeeper>>);

impl KeptIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// The keeper, once a selection started it.
    pub fn keeper(&self) -> Option<&crate::IndexKeeper> {
        self.0.get()
    }
}

impl Workspace {
    /// Opens the workspace `options` describe, as the CLI and the Python module see it: the
    /// store is found from `cwd` like git finds its directory, and opened (the global store
    /// created) on first use.
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
        let mut location = match discover(&request) {
            Ok(location) => Some(location),
            Err(ctx_store::StoreError::NoStoreFound { .. }) => None,
            Err(err) => return Err(err.into()),
        };
        let global =
            |l: &Option<StoreLocation>| l.as_ref().is_none_or(|l| l.kind == StoreKind::Global);
        if options.init && global(&location) {
            let dir = cwd.join(ctx_store::STORE_DIR_NAME);
            Store::init(&dir)?;
            location = Some(discover(&DiscoverRequest {
                explicit: Some(dir),
                ..request
            })?);
        }
        let load = |path: Option<PathBuf>| -> Result<Option<ConfigFile>, CtxError> {
            Ok(path
                .filter(|p| p.is_file())
                .map(|p| ConfigFile::load(&p))
                .transpose()?)
        };
        let project = location
            .as_ref()
            .filter(|l| l.kind != StoreKind::Global)
            .map(|l| l.dir.join(ctx_store::CONFIG_FILE));
        let layers = ConfigLayers {
            global: load(options.env.global_config.clone())?,
            project: load(project)?,
            env: options.env.vars.clone(),
            flags: BTreeMap::new(),
        };
        let work_tree = || {
            cwd.ancestors()
                .find(|dir| dir.join(".git").exists())
                .unwrap_or(&cwd)
                .to_owned()
        };
        let (sources_root, sandbox_root, scope) = match &location {
            Some(l) => {
                let sources = packs::sources_root(l, &cwd);
                match &l.kind {
                    StoreKind::Project { root } => (sources, root.clone(), None),
                    StoreKind::Explicit => (sources.clone(), sources, None),
                    StoreKind::Global => (sources, work_tree(), Some(work_tree())),
                }
            }
            None => (cwd.clone(), work_tree(), None),
        };
        let (index_root, default_index) = match &location {
            Some(l) => crate::select::workspace(l, &cwd),
            None => crate::select::workspace(
                &StoreLocation {
                    dir: PathBuf::new(),
                    kind: StoreKind::Global,
                },
                &cwd,
            ),
        };
        Ok(Self {
            cwd,
            sandbox_root,
            sources_root,
            index_root,
            default_index,
            location,
            scope,
            store: OnceCell::new(),
            created_store: Cell::new(false),
            sandbox: OnceCell::new(),
            settings: OnceCell::new(),
            layers,
            clock,
            cancel: None,
            kept: None,
        })
    }

    /// Opens the workspace a server answers for (`ctx mcp`, `ctx serve`): the root is the
    /// sandbox, the index's tree and the base of relative paths. The store is opened now, so
    /// a broken store fails at start, not on the first call.
    pub fn serve(options: &ServeOptions, clock: Clock) -> Result<Self, CtxError> {
        let root = options.root.clone();
        let own = root.join(ctx_store::STORE_DIR_NAME);
        let own = own.canonicalize().unwrap_or(own);
        let dir = options
            .store_dir
            .canonicalize()
            .unwrap_or_else(|_| options.store_dir.clone());
        let shared = dir != own;
        let default_index = if shared {
            crate::select::workspace_index_name(&root)
        } else {
            ctx_select::DEFAULT_INDEX_NAME.to_owned()
        };
        let workspace = Self {
            cwd: root.clone(),
            sandbox_root: root.clone(),
            sources_root: options.sources_root.clone(),
            index_root: root.clone(),
            default_index,
            location: Some(StoreLocation {
                dir: options.store_dir.clone(),
                kind: StoreKind::Explicit,
            }),
            scope: shared.then(|| root.clone()),
            store: OnceCell::new(),
            created_store: Cell::new(false),
            sandbox: OnceCell::new(),
            settings: OnceCell::new(),
            layers: options.layers.clone(),
            clock,
            cancel: None,
            kept: None,
        };
        workspace.store()?;
        Ok(workspace)
    }

    /// Sets a config key for this workspace's calls, as a command-line flag does (the
    /// highest layer).
    #[must_use]
    pub fn with_flag(mut self, key: &str, value: impl Into<String>) -> Self {
        self.layers.flags.insert(key.to_owned(), value.into());
        self.settings = OnceCell::new();
        self
    }

    /// The pack settings in force, compiled on first use (every verb that redacts or
    /// renders shares them, so a server's calls do not compile the rules again).
    pub(crate) fn settings(&self) -> Result<&PackSettings, CtxError> {
        if let Some(settings) = self.settings.get() {
            return Ok(settings);
        }
        let settings = PackSettings::from_layers(&self.layers)?;
        Ok(self.settings.get_or_init(|| settings))
    }

    /// Keeps the workspace index current in `kept` (a server's, shared by the workspaces
    /// that answer its calls): the first selection starts a file watcher, and selections read
    /// the index it keeps instead of walking the tree each time.
    #[must_use]
    pub fn keep_index_in(mut self, kept: KeptIndex) -> Self {
        self.kept = Some(kept);
        self
    }

    /// The keeper of the workspace index, started on first use; `None` without a
    /// [`KeptIndex`] or when the store cannot be written.
    pub(crate) fn index_keeper(
        &self,
        cx: &crate::select::SelectContext<'_>,
    ) -> Result<Option<&crate::IndexKeeper>, CtxError> {
        let Some(kept) = &self.kept else {
            return Ok(None);
        };
        if cx.store.db().is_read_only() {
            return Ok(None);
        }
        if let Some(keeper) = kept.0.get() {
            return Ok(Some(keeper));
        }
        let setup = crate::select::keeper_setup(cx, Arc::clone(&self.clock))?;
        Ok(Some(
            kept.0.get_or_init(|| crate::IndexKeeper::start(setup)),
        ))
    }

    /// Stops this workspace's walks and summaries once `flag` is set (a server sets it when
    /// it answers a call with a timeout); `None` lets them run to their end.
    pub fn cancel_on(&mut self, flag: Option<Cancel>) {
        self.cancel = flag;
    }

    /// The directory relative paths are taken from (canonical).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The root pack sources are relative to: the project root for a project store, the
    /// store's parent for a store named explicitly, `/` for the global store.
    pub fn root(&self) -> PathBuf {
        self.sources_root.clone()
    }

    /// The directory no path may leave: the project root, else the git work tree around the
    /// working directory, else the working directory (a server's root).
    pub fn sandbox_root(&self) -> &Path {
        &self.sandbox_root
    }

    /// The sandbox every file is read through (opened once).
    pub fn sandbox(&self) -> Result<&Sandbox, CtxError> {
        self.sandbox
            .get_or_init(|| Sandbox::open(&self.sandbox_root).map_err(|err| err.to_string()))
            .as_ref()
            .map_err(|err| {
                CtxError::InvalidInput(format!(
                    "workspace `{}`: {err}",
                    self.sandbox_root.display()
                ))
            })
    }

    /// The store, opened on first use; the global store is created then if it does not
    /// exist ([`Workspace::created_store`] says so). A shared store shows this workspace's
    /// packs, snapshots, runs and indexes only.
    pub fn store(&self) -> Result<&Store, CtxError> {
        if let Some(store) = self.store.get() {
            return Ok(store);
        }
        let location = self.location.as_ref().ok_or_else(|| {
            CtxError::from(ctx_store::StoreError::NoStoreFound {
                cwd: self.cwd.clone(),
            })
        })?;
        let store = if location.kind == StoreKind::Global
            && !location.dir.join(ctx_store::DATABASE_FILE).exists()
        {
            let (store, _) = Store::init(&location.dir)?;
            self.created_store.set(true);
            store
        } else {
            Store::open(&location.dir)?
        };
        let store = match &self.scope {
            Some(root) => store.scoped(root),
            None => store,
        };
        Ok(self.store.get_or_init(|| store))
    }

    /// The store if it exists already (the global store is not created); `None` also when
    /// it cannot be opened, which only costs caching.
    pub(crate) fn existing_store(&self) -> Option<&Store> {
        let location = self.location.as_ref()?;
        if self.store.get().is_none() && !location.dir.join(ctx_store::DATABASE_FILE).exists() {
            return None;
        }
        self.store().ok()
    }

    /// A handle of its own to the workspace's store (a connection of its own, the store seen
    /// as [`Workspace::store`] sees it), for work that outlives a call: a recording.
    pub fn store_handle(&self) -> Result<Store, CtxError> {
        let own = self.store()?;
        let store = Store::open(own.dir())?;
        Ok(match own.scope() {
            Some(scope) => store.scoped(Path::new(scope)),
            None => store,
        })
    }

    /// Whether opening the store created the global store (front ends say so once).
    pub fn created_store(&self) -> bool {
        self.created_store.get()
    }

    /// Where the store is and what kind it is (`None`: no store can be found).
    pub fn location(&self) -> Option<&StoreLocation> {
        self.location.as_ref()
    }

    /// The merged settings.
    pub fn config(&self) -> &ConfigLayers {
        &self.layers
    }

    /// The front end's clock, read now.
    pub fn now(&self) -> i64 {
        (self.clock)()
    }

    /// The front end's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    fn packs(&self) -> Result<PackContext<'_>, CtxError> {
        Ok(PackContext {
            store: self.store()?,
            root: self.sources_root.clone(),
            settings: self.settings()?,
            clock: &*self.clock,
        })
    }
}
