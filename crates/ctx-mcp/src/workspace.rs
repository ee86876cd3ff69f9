//! The workspace a server answers for: its root directory (the sandbox every path argument is
//! resolved in), its store, and the settings in force.
//!
//! Stores hold a SQLite connection, which one thread uses at a time, so the server keeps a
//! small pool of open [`ctx::Workspace`]s (the facade every use case is a method of) and lends
//! one to each tool call; concurrent calls get their own.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ctx::core::TokenizerKind;

use crate::config::McpConfig;
use crate::error::{McpError, ToolError};

/// Open workspaces kept for reuse; more may be open at once under load, the rest are closed.
const POOL_SIZE: usize = 16;

/// A path argument resolved inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The absolute path (the root joined with `rel`).
    pub abs: PathBuf,
    /// The path relative to the root, `/`-separated; `.` for the root itself.
    pub rel: String,
}

/// The root, store and settings one server answers for, and the facade workspaces it lends.
pub struct WorkspacePool {
    root: PathBuf,
    options: ctx::ServeOptions,
    tokenizer: TokenizerKind,
    max_tokens: u64,
    pool: Mutex<Vec<ctx::Workspace>>,
    /// The workspace index the pool's workspaces keep current (with `keep_index`).
    kept: Option<ctx::KeptIndex>,
    /// The file engine's sandbox (holds the root open), for resolving path arguments.
    sandbox: Result<ctx::fs::Sandbox, String>,
    clock: ctx::Clock,
}

impl WorkspacePool {
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
        let pool = Self {
            sandbox,
            options: ctx::ServeOptions {
                root: root.clone(),
                store_dir: config.store_dir.clone(),
                sources_root: config.sources_root.clone(),
                layers: config.layers.clone(),
            },
            root,
            tokenizer,
            max_tokens,
            pool: Mutex::new(Vec::new()),
            kept: config.keep_index.then(ctx::KeptIndex::new),
            clock: std::sync::Arc::clone(&config.clock),
        };
        let first = pool.open_one()?;
        pool.give_back(first);
        Ok(pool)
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

    /// The file engine's sandbox of the root.
    pub fn sandbox(&self) -> Result<&ctx::fs::Sandbox, ToolError> {
        self.sandbox
            .as_ref()
            .map_err(|e| ToolError::failed(ctx::ErrorKind::Io, e.clone()))
    }

    fn open_one(&self) -> Result<ctx::Workspace, McpError> {
        let workspace = ctx::Workspace::serve(&self.options, std::sync::Arc::clone(&self.clock))?;
        Ok(match &self.kept {
            Some(kept) => workspace.keep_index_in(kept.clone()),
            None => workspace,
        })
    }

    /// The keeper of the workspace index, once a selection started it.
    pub fn index_keeper(&self) -> Option<&ctx::IndexKeeper> {
        self.kept.as_ref().and_then(ctx::KeptIndex::keeper)
    }

    fn take(&self) -> Result<ctx::Workspace, ToolError> {
        let pooled = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match pooled {
            Some(workspace) => Ok(workspace),
            None => self.open_one().map_err(ToolError::from),
        }
    }

    fn give_back(&self, workspace: ctx::Workspace) {
        let mut pool = self.pool.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < POOL_SIZE {
            pool.push(workspace);
        }
    }

    /// Runs `f` with a pooled [`ctx::Workspace`].
    pub fn with<T>(
        &self,
        f: impl FnOnce(&ctx::Workspace) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        self.with_cancel(None, f)
    }

    /// [`WorkspacePool::with`], the workspace's walks stopping once `cancel` is set.
    pub fn with_cancel<T>(
        &self,
        cancel: Option<&ctx::fs::walk::Cancel>,
        f: impl FnOnce(&ctx::Workspace) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let mut workspace = self.take()?;
        workspace.cancel_on(cancel.cloned());
        let result = f(&workspace);
        workspace.cancel_on(None);
        self.give_back(workspace);
        result
    }

    /// Resolves a path argument inside the root through the file engine's sandbox (the one
    /// lexical normaliser, then the kernel resolving beneath the root's descriptor): relative
    /// paths against the root, absolute ones as given. `..` that climbs out, absolute paths
    /// elsewhere, symbolic links that lead out, NUL bytes, hard links and special files are
    /// refused. A path that does not exist passes (the tool reports it as not found).
    ///
    /// Tools then read through the facade's sandbox of the same root, so a link swapped in
    /// after this check is refused when the file is opened.
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use super::WorkspacePool;
    use crate::config::McpConfig;

    /// "Work whose request timed out keeps burning CPU": the workspace a call borrows stops
    /// its walks once the call's flag is set, and the next call gets it back without the
    /// flag.
    #[test]
    fn a_given_up_call_stops_its_walks_and_the_next_call_does_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join("a.txt"), "needle\n").expect("write");
        ctx::init_store(&root.join(".ctx")).expect("store");
        let config = McpConfig::new(
            root.clone(),
            root.join(".ctx"),
            root.clone(),
            ctx::config::ConfigLayers::default(),
        );
        let pool = WorkspacePool::open(&config).expect("pool");
        let query = ctx::code::SearchKind::Text(ctx::code::TextQuery {
            pattern: "needle".to_owned(),
            ..ctx::code::TextQuery::default()
        });
        let search =
            |ws: &ctx::Workspace| Ok(ws.search(std::path::Path::new("."), &query, None)?);
        let given_up = Arc::new(AtomicBool::new(true));
        let stopped = pool.with_cancel(Some(&given_up), search);
        assert!(
            stopped
                .as_ref()
                .is_err_and(|err| err.to_string().contains("caller gave up")),
            "{:?}",
            stopped.map(|r| r.total)
        );
        let found = pool.with(search).expect("the next call runs");
        assert_eq!(found.total, 1);
    }
}
