//! The workspace a server answers for: its root directory (the sandbox every path argument is
//! resolved in), its store, and the settings in force.
//!
//! Stores hold a SQLite connection, which one thread uses at a time, so the workspace keeps a
//! small pool of open stores (each with its compiled pack settings) and lends one to each tool
//! call; concurrent calls get their own.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ctx::config::ConfigLayers;
use ctx::core::TokenizerKind;
use ctx::packs::{PackContext, PackSettings};
use ctx::store::Store;

use crate::config::McpConfig;
use crate::error::{McpError, ToolError};

/// Open stores kept for reuse; more may be open at once under load, the rest are closed.
const POOL_SIZE: usize = 16;

/// A path argument resolved inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The absolute path (the root joined with `rel`).
    pub abs: PathBuf,
    /// The path relative to the root, `/`-separated; `.` for the root itself.
    pub rel: String,
}

/// One pooled store with the settings compiled for it.
struct Worker {
    store: Store,
    settings: PackSettings,
}

/// The root, store and settings one server answers for.
pub struct Workspace {
    root: PathBuf,
    store_dir: PathBuf,
    sources_root: PathBuf,
    layers: ConfigLayers,
    tokenizer: TokenizerKind,
    max_tokens: u64,
    pool: Mutex<Vec<Worker>>,
    /// The file engine's sandbox (holds the root open), for `fs_read`.
    sandbox: Result<ctx::fs::Sandbox, String>,
    /// The server's clock (renders remember only file stamps old enough to trust).
    clock: ctx::Clock,
}

impl Workspace {
    /// Checks the root, opens the store once (so a broken store fails at start, not on the
    /// first call) and resolves the settings.
    pub fn open(config: &McpConfig) -> Result<Self, McpError> {
        let root =
            config
                .workspace_root
                .canonicalize()
                .map_err(|source| McpError::WorkspaceRoot {
                    path: config.workspace_root.clone(),
                    source,
                })?;
        if !root.is_dir() {
            return Err(McpError::WorkspaceRoot {
                path: config.workspace_root.clone(),
                source: std::io::Error::other("not a directory"),
            });
        }
        let tokenizer = config.layers.tokenizer().map_err(ctx::CtxError::from)?;
        let max_tokens = config
            .layers
            .count("mcp.max_tokens")
            .map_err(ctx::CtxError::from)?;
        let sandbox = ctx::fs::Sandbox::open(&root).map_err(|e| e.to_string());
        let workspace = Self {
            sandbox,
            root,
            store_dir: config.store_dir.clone(),
            sources_root: config.sources_root.clone(),
            layers: config.layers.clone(),
            tokenizer,
            max_tokens,
            pool: Mutex::new(Vec::new()),
            clock: std::sync::Arc::clone(&config.clock),
        };
        let worker = workspace.new_worker()?;
        workspace.give_back(worker);
        Ok(workspace)
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The tokenizer answers are measured with.
    pub fn tokenizer(&self) -> TokenizerKind {
        self.tokenizer
    }

    /// The default token cap of an answer (`mcp.max_tokens`).
    pub fn max_tokens(&self) -> u64 {
        self.max_tokens
    }

    /// A path relative to the sources root (pack artifacts) as the workspace-root-relative
    /// path the other tools take; unchanged when the two roots are the same or the file lies
    /// outside the workspace.
    pub fn from_sources(&self, path: &str) -> String {
        let sources = self
            .sources_root
            .canonicalize()
            .unwrap_or_else(|_| self.sources_root.clone());
        if sources == self.root {
            return path.to_owned();
        }
        match sources.join(path).strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            _ => path.to_owned(),
        }
    }

    /// The file engine's sandbox of the root.
    pub fn sandbox(&self) -> Result<&ctx::fs::Sandbox, ToolError> {
        self.sandbox
            .as_ref()
            .map_err(|e| ToolError::failed(ctx::ErrorKind::Io, e.clone()))
    }

    /// The store, as this workspace sees it: a store that is not the workspace's own
    /// (`ROOT/.ctx`), such as the global store or `ctx serve`'s fallback, is shared with other
    /// workspaces, and shows this one only its own packs, snapshots, runs and indexes.
    pub fn open_store(&self) -> Result<Store, McpError> {
        let store = Store::open(&self.store_dir)?;
        let own = self.root.join(ctx::store::STORE_DIR_NAME);
        let own = own.canonicalize().unwrap_or(own);
        let dir = self
            .store_dir
            .canonicalize()
            .unwrap_or_else(|_| self.store_dir.clone());
        Ok(if dir == own {
            store
        } else {
            store.scoped(&self.root)
        })
    }

    fn new_worker(&self) -> Result<Worker, McpError> {
        Ok(Worker {
            store: self.open_store()?,
            settings: PackSettings::from_layers(&self.layers)?,
        })
    }

    fn take(&self) -> Result<Worker, ToolError> {
        let pooled = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match pooled {
            Some(worker) => Ok(worker),
            None => self.new_worker().map_err(ToolError::from),
        }
    }

    fn give_back(&self, worker: Worker) {
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < POOL_SIZE {
            pool.push(worker);
        }
    }

    /// Runs `f` with a pack context on a pooled store.
    pub fn with_packs<T>(
        &self,
        f: impl FnOnce(&PackContext<'_>) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let Worker { store, settings } = self.take()?;
        let pcx = PackContext {
            store: &store,
            root: self.sources_root.clone(),
            settings,
            clock: &*self.clock,
        };
        let result = f(&pcx);
        let settings = pcx.settings;
        self.give_back(Worker { store, settings });
        result
    }

    /// Runs `f` with a pooled store.
    pub fn with_store<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let worker = self.take()?;
        let result = f(&worker.store);
        self.give_back(worker);
        result
    }

    /// Resolves a path argument inside the root through the file engine's sandbox (the one
    /// lexical normaliser, then the kernel resolving beneath the root's descriptor): relative
    /// paths against the root, absolute ones as given. `..` that climbs out, absolute paths
    /// elsewhere, symbolic links that lead out, NUL bytes, hard links and special files are
    /// refused. A path that does not exist passes (the tool reports it as not found).
    ///
    /// Tools then read through the same sandbox (`ctx::code` with `sandbox: Some(..)`), so a
    /// link swapped in after this check is refused when the file is opened.
    pub fn resolve(&self, path: &str) -> Result<Resolved, ToolError> {
        let outside = || ToolError::OutsideWorkspace {
            path: path.to_owned(),
            root: self.root.clone(),
        };
        let sandbox = self.sandbox()?;
        let rel = sandbox
            .relative_path(path)
            .map_err(|err| match err.kind() {
                ctx::fs::ErrorKind::InvalidInput => {
                    ToolError::failed(ctx::ErrorKind::UserInput, err.to_string())
                }
                _ => outside(),
            })?;
        match sandbox.resolve(&rel) {
            Ok(_) => {}
            Err(err) => match err.kind() {
                ctx::fs::ErrorKind::NotFound => {}
                ctx::fs::ErrorKind::InvalidInput | ctx::fs::ErrorKind::Io => {
                    return Err(ToolError::failed(err.kind().into(), err.to_string()));
                }
                ctx::fs::ErrorKind::PermissionDenied => {
                    return Err(match err {
                        ctx::fs::SandboxError::SpecialFile { .. }
                        | ctx::fs::SandboxError::HardLink { .. } => {
                            ToolError::failed(ctx::ErrorKind::UserInput, err.to_string())
                        }
                        _ => outside(),
                    });
                }
            },
        }
        let abs = if rel == "." {
            self.root.clone()
        } else {
            self.root.join(&rel)
        };
        Ok(Resolved { abs, rel })
    }
}
