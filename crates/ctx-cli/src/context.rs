//! What a command needs from its surroundings: directories, environment, the store.
//!
//! This is the one place the CLI reads the process environment; everything below it gets
//! values passed in.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use ctx::config::{ConfigFile, ConfigLayers};
use ctx::store::{DiscoverRequest, STORE_DIR_NAME, Store, StoreKind, StoreLocation, discover};

use crate::args::GlobalArgs;

pub struct Context {
    pub cwd: PathBuf,
    explicit_store: Option<PathBuf>,
    ctx_home: Option<PathBuf>,
    home: Option<PathBuf>,
    config_home: Option<PathBuf>,
    ctx_config_home: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
}

impl Context {
    pub fn new(global: &GlobalArgs) -> Result<Self> {
        let mut cwd = std::env::current_dir().context("cannot read the current directory")?;
        if let Some(dir) = &global.chdir {
            let target = cwd.join(dir);
            cwd = target.canonicalize().map_err(|err| {
                anyhow::anyhow!("-C `{}`: {err}; name an existing directory", dir.display())
            })?;
            if !cwd.is_dir() {
                anyhow::bail!(
                    "-C `{}` is not a directory; name a directory",
                    dir.display()
                );
            }
        }
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let env = std::env::vars()
            .filter(|(k, _)| k.starts_with("CTX_"))
            .collect();
        Ok(Self {
            cwd,
            explicit_store: global.store.clone(),
            ctx_home: var("CTX_HOME"),
            home: var("HOME"),
            config_home: var("XDG_CONFIG_HOME"),
            ctx_config_home: var("CTX_CONFIG_HOME"),
            env,
        })
    }

    /// The same surroundings as if ctx had been started in `cwd` (the Claude Code hook answers
    /// for the session's directory, not its own).
    pub fn with_cwd(&self, cwd: PathBuf) -> Self {
        Self {
            cwd,
            explicit_store: self.explicit_store.clone(),
            ctx_home: self.ctx_home.clone(),
            home: self.home.clone(),
            config_home: self.config_home.clone(),
            ctx_config_home: self.ctx_config_home.clone(),
            env: self.env.clone(),
        }
    }

    /// The workspace this invocation acts in: the facade every command calls. Its store is
    /// opened on first use; [`Context::store`] says when that created the global store.
    pub fn workspace(&self) -> Result<ctx::Workspace> {
        let options = ctx::OpenOptions {
            cwd: self.cwd.clone(),
            store: self.explicit_store.clone(),
            init: false,
            env: ctx::Environment {
                ctx_home: self.ctx_home.clone(),
                home: self.home.clone(),
                global_config: self.global_config_path(),
                vars: self.env.clone(),
            },
        };
        Ok(ctx::Workspace::open(
            &options,
            std::sync::Arc::new(crate::commands::select::now),
        )?)
    }

    /// `HOME`, as read at start-up.
    pub fn home(&self) -> Option<&std::path::Path> {
        self.home.as_deref()
    }

    /// The store named with `--store` (or `CTX_STORE`), if any.
    pub fn explicit_store(&self) -> Option<&std::path::Path> {
        self.explicit_store.as_deref()
    }

    /// The workspace with its store opened now (see [`Context::store`]).
    pub fn open(&self, out: &crate::output::Output) -> Result<ctx::Workspace> {
        let ws = self.workspace()?;
        Self::store(&ws, out)?;
        Ok(ws)
    }

    /// `ws`'s store, opened now; the first use of the global store creates it, which is said
    /// once on stderr.
    pub fn store<'a>(ws: &'a ctx::Workspace, out: &crate::output::Output) -> Result<&'a Store> {
        let store = ws.store()?;
        Self::said_created(ws, out);
        Ok(store)
    }

    /// Says on stderr that the global store was created, if `ws` just created it.
    pub fn said_created(ws: &ctx::Workspace, out: &crate::output::Output) {
        if let Some(location) = ws.location().filter(|_| ws.created_store()) {
            out.note(&format!(
                "created the global store at {} (run `ctx init` in a project for a project store)",
                location.dir.display()
            ));
        }
    }

    /// Where the store is (it may not exist yet if it is the global one).
    pub fn locate_store(&self) -> Result<StoreLocation> {
        Ok(discover(&DiscoverRequest {
            cwd: self.cwd.clone(),
            explicit: self.explicit_store.clone(),
            ctx_home: self.ctx_home.clone(),
            home: self.home.clone(),
        })?)
    }

    /// The global config file path: `$CTX_CONFIG_HOME/config.toml`, else
    /// `$CTX_HOME/config.toml` (so a separate ctx home keeps its settings too), else
    /// `$XDG_CONFIG_HOME/ctx/config.toml`, else `~/.config/ctx/config.toml`.
    pub fn global_config_path(&self) -> Option<PathBuf> {
        if let Some(dir) = self.ctx_config_home.as_ref().or(self.ctx_home.as_ref()) {
            return Some(dir.join("config.toml"));
        }
        self.config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")))
            .map(|dir| dir.join("ctx").join("config.toml"))
    }

    /// The project config file path, if a project (or explicit) store is found.
    pub fn project_config_path(&self) -> Option<PathBuf> {
        let location = self.locate_store().ok()?;
        match location.kind {
            StoreKind::Global => None,
            _ => Some(location.dir.join(ctx::store::CONFIG_FILE)),
        }
    }

    /// All config layers but flags (commands add their own flags).
    pub fn config_layers(&self) -> Result<ConfigLayers> {
        let load = |path: Option<PathBuf>| -> Result<Option<ConfigFile>> {
            path.map(|p| ConfigFile::load(&p))
                .transpose()
                .map_err(Into::into)
        };
        Ok(ConfigLayers {
            global: load(self.global_config_path())?,
            project: load(self.project_config_path())?,
            env: self.env.clone(),
            flags: BTreeMap::new(),
        })
    }

    /// Where `ctx init` puts the project store.
    /// Git's global excludes files (for servers' tree caches), from `XDG_CONFIG_HOME` and
    /// `HOME` as read at start-up.
    pub fn global_git_ignore_files(&self) -> Vec<PathBuf> {
        ctx::host::global_git_ignore_files(self.config_home.clone(), self.home.clone())
    }

    pub fn init_dir(&self) -> PathBuf {
        self.cwd.join(STORE_DIR_NAME)
    }
}
