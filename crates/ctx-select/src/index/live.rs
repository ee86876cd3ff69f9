//! An index kept current by a long-lived process (a server with a file watcher): it keeps
//! what it knows of the index between updates, so an update does not read the previous
//! index again, and it can update from the paths a watcher saw change without listing the
//! whole tree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ctx_core::{DocumentId, Progress};

use super::{
    ANALYZER_VERSION, BuildOptions, BuildReport, CacheBuildConfig, LIMITS, Previous, build_held,
    builder_lock, still_current, up_to_date, update,
};
use crate::error::IndexError;
use crate::source::{DocumentSource, SourceEntry};

/// Index `name` in `indexes_dir`, as this process last built or updated it.
pub struct LiveIndex {
    indexes_dir: PathBuf,
    name: String,
    /// `None` until the first update, and after a full build (read again on the next).
    held: Option<Previous>,
}

impl LiveIndex {
    pub fn new(indexes_dir: &Path, name: &str) -> Self {
        Self {
            indexes_dir: indexes_dir.to_owned(),
            name: name.to_owned(),
            held: None,
        }
    }

    /// Forgets what it held: the next update reads the index again (and checks its
    /// documents), as after a change made from outside.
    pub fn forget(&mut self) {
        self.held = None;
    }

    /// Brings the index up to date with a listing of `source` (a walk of the tree), as
    /// [`super::build_index`] does; `opts.name` must be this index's.
    pub fn update(
        &mut self,
        source: &dyn DocumentSource,
        opts: &BuildOptions,
        git_commits: &dyn Fn() -> BTreeMap<String, u32>,
        progress: &dyn Progress,
    ) -> Result<BuildReport, IndexError> {
        debug_assert_eq!(opts.name, self.name);
        let result = build_held(
            &self.indexes_dir,
            source,
            opts,
            git_commits,
            progress,
            LIMITS,
            &mut self.held,
        );
        if result.is_err() {
            self.held = None;
        }
        progress.finish();
        result
    }

    /// Brings the index up to date with what changed at `ids` alone (the files a watcher
    /// saw change): they are looked at again, nothing else is (a new file's directory is, for
    /// its ignore rules). A listing is made instead ([`LiveIndex::update`]) when the source
    /// cannot tell about one (a directory, a new file in a directory the index holds nothing
    /// of), a directory holding indexed files is gone, or the index cannot be updated in
    /// place.
    pub fn update_ids(
        &mut self,
        source: &dyn DocumentSource,
        ids: &[DocumentId],
        opts: &BuildOptions,
        git_commits: &dyn Fn() -> BTreeMap<String, u32>,
        progress: &dyn Progress,
    ) -> Result<BuildReport, IndexError> {
        match self.try_ids(source, ids, opts, git_commits, progress) {
            Ok(Some(report)) => {
                progress.finish();
                Ok(report)
            }
            Ok(None) => self.update(source, opts, git_commits, progress),
            Err(err) => {
                self.held = None;
                Err(err)
            }
        }
    }

    fn try_ids(
        &mut self,
        source: &dyn DocumentSource,
        ids: &[DocumentId],
        opts: &BuildOptions,
        git_commits: &dyn Fn() -> BTreeMap<String, u32>,
        progress: &dyn Progress,
    ) -> Result<Option<BuildReport>, IndexError> {
        let final_dir = self.indexes_dir.join(&self.name);
        if opts.force || !final_dir.exists() {
            return Ok(None);
        }
        let _builder = builder_lock(&self.indexes_dir, &self.name)?;
        update::recover(&final_dir, &self.name)?;
        let prev = match self.held.take() {
            Some(prev) if still_current(&prev, &final_dir) => prev,
            _ => Previous::open(&final_dir, &self.name)?,
        };
        let prev = self.held.insert(prev);
        let config = CacheBuildConfig {
            source: source.config(),
            canonicalize: opts.canonicalize,
            analyzer: ANALYZER_VERSION,
        };
        if !update::updatable(prev, &config) {
            return Ok(None);
        }
        let mut changed: Vec<SourceEntry> = Vec::new();
        let mut gone: Vec<String> = Vec::new();
        for id in ids {
            let Some(now) = source.entry(id) else {
                return Ok(None);
            };
            let before = prev.sources.get(id.as_str());
            match (now, before) {
                (None, Some(_)) => gone.push(id.to_string()),
                // A directory gone (moved away whole, which reports the directory alone):
                // its files are the listing's to find.
                (None, None) if holds_files(prev, id.as_str()) => return Ok(None),
                (None, None) => {}
                // New to the index: the walk lists it if its directory's walk does, in a
                // directory the walk enters (one holding files of the index).
                (Some(entry), None) => {
                    let dir = id.as_str().rsplit_once('/').map_or("", |(dir, _)| dir);
                    let entered = dir.is_empty() || holds_files(prev, dir);
                    match source.lists(id) {
                        Some(true) if entered => changed.push(entry),
                        Some(false) if entered => {}
                        _ => return Ok(None),
                    }
                }
                (Some(entry), Some(row)) => {
                    if entry.fingerprint.is_none() || entry.fingerprint != row.fingerprint {
                        changed.push(entry);
                    }
                }
            }
        }
        changed.sort_by(|a, b| a.id.cmp(&b.id));
        changed.dedup_by(|a, b| a.id == b.id);
        gone.sort_unstable();
        gone.dedup();
        if changed.is_empty() && gone.is_empty() && prev.git_head == opts.git_head {
            return Ok(Some(up_to_date(prev, opts, &final_dir)));
        }
        let changed: Vec<&SourceEntry> = changed.iter().collect();
        update::apply(
            &self.indexes_dir,
            &final_dir,
            source,
            opts,
            &config,
            prev,
            &changed,
            &gone,
            git_commits,
            progress,
        )
    }
}

/// Whether `prev` lists a file under directory `dir`.
fn holds_files(prev: &Previous, dir: &str) -> bool {
    let prefix = format!("{dir}/");
    prev.sources.keys().any(|id| id.starts_with(&prefix))
}
