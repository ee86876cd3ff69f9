//! Finding the store for a working directory.

use std::path::{Path, PathBuf};

use crate::{STORE_DIR_NAME, StoreError};

/// What the caller knows about where the store might be. The library reads no environment:
/// the CLI fills this from `--store`, `CTX_HOME` and `HOME`.
#[derive(Debug, Clone, Default)]
pub struct DiscoverRequest {
    /// The working directory (after `-C`).
    pub cwd: PathBuf,
    /// `--store DIR`: use exactly this store directory.
    pub explicit: Option<PathBuf>,
    /// `$CTX_HOME`: the global store directory.
    pub ctx_home: Option<PathBuf>,
    /// `$HOME`: the global store defaults to `$HOME/.ctx`.
    pub home: Option<PathBuf>,
}

/// Which kind of store was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// Named with `--store`.
    Explicit,
    /// A `.ctx` directory in the working directory or one of its ancestors; `root` holds it.
    Project { root: PathBuf },
    /// The per-user store (`$CTX_HOME`, else `~/.ctx`).
    Global,
}

/// A store directory and how it was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoreLocation {
    /// The store directory itself (the one holding `state.db`).
    pub dir: PathBuf,
    pub kind: StoreKind,
}

impl StoreLocation {
    /// The project root for a project store: the directory holding `.ctx`.
    pub fn project_root(&self) -> Option<&Path> {
        match &self.kind {
            StoreKind::Project { root } => Some(root),
            _ => None,
        }
    }
}

/// Finds the store, by precedence: `--store`, then the nearest `.ctx` directory at or above
/// the working directory (as git finds `.git`), then `$CTX_HOME`, then `$HOME/.ctx`.
///
/// The global store may not exist yet; callers create it on first use.
pub fn discover(request: &DiscoverRequest) -> Result<StoreLocation, StoreError> {
    if let Some(dir) = &request.explicit {
        return Ok(StoreLocation {
            dir: absolute(&request.cwd, dir),
            kind: StoreKind::Explicit,
        });
    }
    let global = request
        .ctx_home
        .as_ref()
        .map(|dir| absolute(&request.cwd, dir))
        .or_else(|| request.home.as_ref().map(|home| home.join(STORE_DIR_NAME)));
    for ancestor in request.cwd.ancestors() {
        let candidate = ancestor.join(STORE_DIR_NAME);
        if candidate.is_dir() && Some(&candidate) != global.as_ref() {
            return Ok(StoreLocation {
                dir: candidate,
                kind: StoreKind::Project {
                    root: ancestor.to_owned(),
                },
            });
        }
    }
    global
        .map(|dir| StoreLocation {
            dir,
            kind: StoreKind::Global,
        })
        .ok_or_else(|| StoreError::NoStoreFound {
            cwd: request.cwd.clone(),
        })
}

fn absolute(cwd: &Path, dir: &Path) -> PathBuf {
    if dir.is_absolute() {
        dir.to_owned()
    } else {
        cwd.join(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct Tree {
        _tmp: tempfile::TempDir,
        base: PathBuf,
    }

    fn tree() -> Tree {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().canonicalize().expect("canonical");
        for dir in [
            "home/.ctx",
            "proj/.ctx",
            "proj/sub/deeper",
            "other",
            "ctxhome",
        ] {
            fs::create_dir_all(base.join(dir)).expect("mkdir");
        }
        Tree { _tmp: tmp, base }
    }

    #[test]
    fn precedence_explicit_then_walk_up_then_ctx_home_then_home() {
        let t = tree();
        let b = &t.base;
        let mut req = DiscoverRequest {
            cwd: b.join("proj/sub/deeper"),
            explicit: Some(PathBuf::from("../../../other")),
            ctx_home: Some(b.join("ctxhome")),
            home: Some(b.join("home")),
        };
        let found = discover(&req).expect("explicit");
        assert_eq!(found.kind, StoreKind::Explicit);
        assert_eq!(found.dir, b.join("proj/sub/deeper/../../../other"));

        req.explicit = None;
        let found = discover(&req).expect("walk up");
        assert_eq!(found.dir, b.join("proj/.ctx"));
        assert_eq!(found.project_root(), Some(b.join("proj").as_path()));

        req.cwd = b.join("other");
        let found = discover(&req).expect("ctx home");
        assert_eq!(
            (found.dir, found.kind),
            (b.join("ctxhome"), StoreKind::Global)
        );

        req.ctx_home = None;
        let found = discover(&req).expect("home");
        assert_eq!(
            (found.dir, found.kind),
            (b.join("home/.ctx"), StoreKind::Global)
        );

        req.home = None;
        assert!(matches!(
            discover(&req),
            Err(StoreError::NoStoreFound { .. })
        ));
    }

    #[test]
    fn the_global_store_is_not_mistaken_for_a_project_store() {
        let t = tree();
        let req = DiscoverRequest {
            cwd: t.base.join("home/work"),
            home: Some(t.base.join("home")),
            ..DiscoverRequest::default()
        };
        let found = discover(&req).expect("global");
        assert_eq!(found.kind, StoreKind::Global);
        assert_eq!(found.dir, t.base.join("home/.ctx"));
    }
}
