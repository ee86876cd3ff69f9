//! The workspaces a server answers for: the subdirectories of one directory, picked up when
//! they are added and dropped when they go.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use ctx::fs::sandbox::{Sandbox, SandboxOptions};

use crate::error::ServerError;

/// The workspaces under one directory, opened on first use and kept open.
#[derive(Debug)]
pub struct Registry {
    dir: PathBuf,
    options: SandboxOptions,
    open: RwLock<HashMap<String, Arc<Sandbox>>>,
}

impl Registry {
    /// A registry of the subdirectories of `dir`.
    pub fn new(dir: &Path, options: SandboxOptions) -> Result<Self, ServerError> {
        let err = |source| ServerError::WorkspacesDir {
            path: dir.to_owned(),
            source,
        };
        let dir = dir.canonicalize().map_err(err)?;
        std::fs::read_dir(&dir).map_err(err)?;
        Ok(Self {
            dir,
            options,
            open: RwLock::new(HashMap::new()),
        })
    }

    /// The directory holding the workspaces.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ids of the workspaces there now (subdirectory names, hidden ones excepted), sorted.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|entry| {
                        let name = entry.file_name().into_string().ok()?;
                        (is_valid_id(&name) && entry.path().is_dir()).then_some(name)
                    })
                    .collect()
            })
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// The workspace named `id`, if it is a subdirectory now. A workspace replaced by another
    /// directory of the same name is re-opened; one removed is forgotten.
    pub fn get(&self, id: &str) -> Option<Arc<Sandbox>> {
        if !is_valid_id(id) {
            return None;
        }
        let path = self.dir.join(id);
        let Ok(meta) = std::fs::metadata(&path) else {
            self.forget(id);
            return None;
        };
        if !meta.is_dir() {
            self.forget(id);
            return None;
        }
        let identity = (meta.dev(), meta.ino());
        if let Some(ws) = self
            .open
            .read()
            .expect("workspace registry lock")
            .get(id)
            .filter(|ws| ws.root_id() == identity)
        {
            return Some(Arc::clone(ws));
        }
        let ws = Arc::new(Sandbox::with_options(&path, self.options).ok()?);
        self.open
            .write()
            .expect("workspace registry lock")
            .insert(id.to_owned(), Arc::clone(&ws));
        Some(ws)
    }

    fn forget(&self, id: &str) {
        if self
            .open
            .read()
            .expect("workspace registry lock")
            .contains_key(id)
        {
            self.open
                .write()
                .expect("workspace registry lock")
                .remove(id);
        }
    }
}

/// A workspace id is one plain path component: not empty, not hidden, no `/` or NUL.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && !id.starts_with('.') && !id.contains(['/', '\0', '\\']) && id.len() <= 255
}
