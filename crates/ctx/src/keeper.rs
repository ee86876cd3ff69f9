//! Keeps the workspace index current while a server runs.
//!
//! A file watcher (the `notify` crate: inotify, FSEvents, ReadDirectoryChanges) records the
//! files that change under the workspace root; a worker applies them to the index in place
//! a moment later ([`DEBOUNCE`]), and a selection applies whatever is still pending before it
//! reads, so it never meets an index that misses a change the watcher saw. Between changes,
//! a selection reads the index it kept open (no walk of the tree, no reading of the
//! manifest), after checking that no other process rebuilt it meanwhile.
//!
//! A selection does not race the watcher: before it looks at what is pending, it writes a
//! fence file into the watched store directory and waits until the watcher reports it.
//! Events come in order, so every change made before the selection was asked for is then
//! pending. (A store outside the workspace, such as the global one, has no watched place for
//! a fence: there a change made a moment before may be seen by the next selection.)
//!
//! Where watching is not possible (no inotify instance or watch left, a file system without
//! events) or the watcher reports it lost events, the next update lists the tree (a walk),
//! as a selection without a keeper does every time.
//!
//! Only the directories the walk enters are watched (one watch each, added as new ones
//! appear), not `target/`, `node_modules/` or what `.gitignore` leaves out, so a large
//! dependency tree costs no watches; besides them, the index directory (for fences) and
//! `.git` with `.git/refs/heads` (a commit moves the git activity counted). What the
//! watcher reports is filtered as the walk filters the tree: hidden paths and the
//! default-ignored directories are not looked at; a changed `.gitignore` or `.ignore` makes
//! the next update list the tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use ctx_core::{DocumentId, NoProgress, Progress};
use ctx_select::git::{ACTIVITY_WINDOW, RepoAt};
use ctx_select::{BuildOptions, BuildReport, FilesystemSource, LiveIndex, OpenIndex};

use crate::error::CtxError;

/// The most documents an index may have for a keeper to hold it between selections (the
/// manifest, the rows and what updates need: the keeper bench's process, holding 40,000, is
/// at 112 MB). A larger index is neither watched nor held: each selection walks the tree and
/// opens it, as without a keeper, so a server over a huge tree does not keep gigabytes.
pub const MAX_KEPT_DOCUMENTS: usize = 100_000;

/// How long the worker waits after a change for more (an editor's save, a `git checkout`,
/// a formatter rewriting many files come as bursts).
pub const DEBOUNCE: Duration = Duration::from_millis(50);

/// Told of each update that changed the index.
pub(crate) type OnUpdate = Box<dyn Fn(&BuildReport) + Send + Sync>;

/// What a keeper needs to build its index.
pub(crate) struct KeeperSetup {
    /// The tree the index covers (canonical).
    pub root: PathBuf,
    pub indexes_dir: PathBuf,
    pub name: String,
    pub source: FilesystemSource,
    /// Unix seconds, for the manifest's `created_at`.
    pub clock: crate::Clock,
    /// Told of each update that changed the index (`ctx index watch` prints them).
    pub on_update: Option<OnUpdate>,
    /// The most documents an index is held with ([`MAX_KEPT_DOCUMENTS`]).
    pub max_documents: usize,
}

/// The workspace index, kept current by a file watcher (see the module's documentation).
/// Dropping it stops the watcher and the worker.
pub struct IndexKeeper {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    setup: KeeperSetup,
    kept: Mutex<Kept>,
    pending: Mutex<Pending>,
    wake: Condvar,
    stop: AtomicBool,
    /// False when no watcher runs: every update lists the tree.
    watching: AtomicBool,
    /// The watcher, and the directories it watches.
    watcher: Mutex<Option<notify::RecommendedWatcher>>,
    watched: Mutex<BTreeSet<PathBuf>>,
    /// Updates applied (by the worker or a selection), for status and tests.
    updates: AtomicU64,
    /// Where fences are written (the index directory, when the watcher sees it).
    fences: Option<PathBuf>,
    /// The last fence written, and the last the watcher reported.
    fence_sent: AtomicU64,
    fence_seen: Mutex<u64>,
    fence_wake: Condvar,
    /// Updates that listed the tree (the first, and those after lost events or a fence the
    /// watcher did not report in time), for tests.
    listings: AtomicU64,
    tuning: Tuning,
}

/// Timings tests change; [`Tuning::default`] elsewhere.
#[derive(Debug, Clone, Copy)]
struct Tuning {
    /// How long a selection waits for the watcher to report its fence.
    fence_wait: Duration,
    /// A pause before the watcher records each event (none but in tests: a slow watcher).
    event_delay: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            fence_wait: FENCE_WAIT,
            event_delay: Duration::ZERO,
        }
    }
}

/// How long a selection waits for the watcher to report its fence before it lists the tree
/// instead.
const FENCE_WAIT: Duration = Duration::from_secs(1);

struct Kept {
    live: LiveIndex,
    /// The index opened for selections, without its lock (taken around each selection).
    open: Option<OpenIndex>,
    /// Whether the index was brought up to date with a listing since the keeper started.
    listed: bool,
    last: Option<BuildReport>,
    /// The index's files as this keeper last left or opened them ([`Stamp`]): a change it
    /// did not make (a document file removed, the manifest rewritten from outside) makes it
    /// read and check the index again.
    stamp: Option<Stamp>,
}

/// When an index's files last changed: `documents/` (files added, removed or renamed in
/// it) and `manifest.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    documents: std::time::SystemTime,
    manifest: std::time::SystemTime,
    manifest_bytes: u64,
}

/// What the watcher saw since the last update.
#[derive(Default)]
struct Pending {
    ids: BTreeSet<String>,
    /// List the tree: events were lost, or ignore rules changed.
    rescan: bool,
    /// The git commit may have moved (git activity is counted again).
    head: bool,
}

/// What one watched path means for the index.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// A path the walk may list (a document id).
    Id(String),
    /// Ignore rules changed: the next update lists the tree.
    Rescan,
    /// `.git/HEAD` or a ref changed: the commit may have moved.
    Head,
    /// Hidden, default-ignored or outside the root: nothing to do.
    Skip,
}

/// The fence number in `path` when it is one of `fences`' fence files.
fn fence_number(fences: &Path, name: &str, path: &Path) -> Option<u64> {
    if path.parent() != Some(fences) {
        return None;
    }
    let file = path.file_name()?.to_str()?;
    file.strip_prefix(&format!(".{name}.fence-"))?.parse().ok()
}

fn classify(root: &Path, path: &Path) -> Seen {
    let Ok(rel) = path.strip_prefix(root) else {
        return Seen::Skip;
    };
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    if parts.is_empty() || parts.len() != rel.components().count() {
        return Seen::Skip;
    }
    if parts[0] == ".git"
        && (parts[1..] == ["HEAD"]
            || parts.get(1) == Some(&"refs")
            || parts[1..] == ["packed-refs"])
    {
        return Seen::Head;
    }
    let (dirs, name) = parts.split_at(parts.len() - 1);
    if dirs
        .iter()
        .any(|d| d.starts_with('.') || ctx_fs::walk::DEFAULT_IGNORED_DIRS.contains(d))
    {
        return Seen::Skip;
    }
    match name[0] {
        ".gitignore" | ".ignore" => Seen::Rescan,
        n if n.starts_with('.') || ctx_fs::walk::DEFAULT_IGNORED_DIRS.contains(&n) => Seen::Skip,
        _ => Seen::Id(parts.join("/")),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl IndexKeeper {
    /// Starts watching `setup.root`. Nothing is built until the first update or selection.
    pub(crate) fn start(setup: KeeperSetup) -> Self {
        Self::start_tuned(setup, Tuning::default())
    }

    fn start_tuned(setup: KeeperSetup, tuning: Tuning) -> Self {
        let live = LiveIndex::new(&setup.indexes_dir, &setup.name);
        // The first selection builds an index there anyway.
        let _ = std::fs::create_dir_all(&setup.indexes_dir);
        let fences = setup
            .indexes_dir
            .canonicalize()
            .ok()
            .filter(|dir| dir.starts_with(&setup.root));
        let shared = Arc::new(Shared {
            setup,
            kept: Mutex::new(Kept {
                live,
                open: None,
                listed: false,
                last: None,
                stamp: None,
            }),
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            watching: AtomicBool::new(false),
            watcher: Mutex::new(None),
            watched: Mutex::new(BTreeSet::new()),
            updates: AtomicU64::new(0),
            fences,
            fence_sent: AtomicU64::new(0),
            fence_seen: Mutex::new(0),
            fence_wake: Condvar::new(),
            listings: AtomicU64::new(0),
            tuning,
        });
        let watcher = watch(&shared);
        shared.watching.store(watcher.is_some(), Ordering::SeqCst);
        *lock(&shared.watcher) = watcher;
        if shared.watching.load(Ordering::SeqCst) {
            shared.watch_fixed();
            shared.watch_under(&shared.setup.root);
        }
        let worker = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("ctx-index-keeper".to_owned())
                .spawn(move || shared.work())
                .ok()
        };
        Self {
            shared,
            worker: Mutex::new(worker),
        }
    }

    /// Whether a file watcher runs (else every update lists the tree).
    pub fn is_watching(&self) -> bool {
        self.shared.watching.load(Ordering::SeqCst)
    }

    /// How many directories are watched.
    pub fn watched_directories(&self) -> usize {
        lock(&self.shared.watched).len()
    }

    /// How many updates changed the index since the keeper started.
    pub fn updates(&self) -> u64 {
        self.shared.updates.load(Ordering::SeqCst)
    }

    /// The index name kept.
    pub fn name(&self) -> &str {
        &self.shared.setup.name
    }

    /// Brings the index up to date with everything the watcher saw (or with a listing of
    /// the tree when nothing watches it), then runs `read` on it under its shared lock.
    /// `progress` is told how an update advances, and stops it when it is cancelled.
    pub(crate) fn with_index<T>(
        &self,
        progress: &dyn Progress,
        read: impl FnOnce(&OpenIndex, &BuildReport) -> Result<T, CtxError>,
    ) -> Result<T, CtxError> {
        let mut kept = lock(&self.shared.kept);
        self.shared.fence();
        let report = self.shared.bring_up_to_date(&mut kept, progress)?;
        let setup = &self.shared.setup;
        if report.documents > setup.max_documents {
            // Let go of by the update: opened for this selection alone.
            let index = OpenIndex::open(&setup.indexes_dir, &setup.name)?;
            return read(&index, &report);
        }
        let guard = ctx_select::index::lock(&setup.indexes_dir, &setup.name, false)?;
        if kept.open.as_ref().is_none_or(|open| !open.is_current()) {
            kept.open = None;
            // Opening checks the manifest and that `documents/` holds its files.
            let stamp = self.shared.stamp();
            let mut open = OpenIndex::open(&setup.indexes_dir, &setup.name)?;
            open.unlock();
            kept.open = Some(open);
            kept.stamp = stamp;
        }
        let open = kept.open.as_ref().expect("opened above");
        let result = read(open, &report);
        drop(guard);
        result
    }

    /// Brings the index up to date now and returns what the update did.
    pub fn update(&self) -> Result<BuildReport, CtxError> {
        let mut kept = lock(&self.shared.kept);
        self.shared.bring_up_to_date(&mut kept, &NoProgress)
    }
}

impl Drop for IndexKeeper {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        drop(lock(&self.shared.watcher).take());
        self.shared.wake.notify_all();
        if let Some(worker) = lock(&self.worker).take() {
            let _ = worker.join();
        }
    }
}

/// A watcher of the root, recording what it sees in `shared.pending`; `None` when the
/// platform or its limits do not allow one.
fn watch(shared: &Arc<Shared>) -> Option<notify::RecommendedWatcher> {
    let weak = Arc::downgrade(shared);
    let handler = move |event: notify::Result<notify::Event>| {
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let mut pending = lock(&shared.pending);
        match event {
            Ok(event) => {
                if matches!(event.kind, notify::EventKind::Access(_)) {
                    return;
                }
                if !shared.tuning.event_delay.is_zero() {
                    drop(pending);
                    std::thread::sleep(shared.tuning.event_delay);
                    pending = lock(&shared.pending);
                }
                if let Some(fences) = &shared.fences
                    && let Some(n) = event
                        .paths
                        .iter()
                        .find_map(|p| fence_number(fences, &shared.setup.name, p))
                {
                    let mut seen = lock(&shared.fence_seen);
                    *seen = (*seen).max(n);
                    shared.fence_wake.notify_all();
                    return;
                }
                if event.need_rescan() {
                    pending.rescan = true;
                }
                if matches!(
                    event.kind,
                    notify::EventKind::Remove(_)
                        | notify::EventKind::Modify(notify::event::ModifyKind::Name(_))
                ) {
                    // A directory removed or renamed lost its watch: watched again if it
                    // comes back.
                    let mut watched = lock(&shared.watched);
                    for path in &event.paths {
                        watched.remove(path);
                    }
                }
                for path in &event.paths {
                    match classify(&shared.setup.root, path) {
                        Seen::Id(id) => {
                            pending.ids.insert(id);
                        }
                        Seen::Rescan => pending.rescan = true,
                        Seen::Head => pending.head = true,
                        Seen::Skip => {}
                    }
                }
            }
            Err(err) => {
                tracing::warn!("the index watcher lost events: {err}");
                pending.rescan = true;
            }
        }
        if !pending.ids.is_empty() || pending.rescan || pending.head {
            shared.wake.notify_all();
        }
    };
    match notify::recommended_watcher(handler) {
        Ok(watcher) => Some(watcher),
        Err(err) => {
            tracing::warn!(
                "cannot watch the workspace for changes: {err}; selections walk the tree"
            );
            None
        }
    }
}

impl Shared {
    /// Stops watching and holding an index too large to keep (`max_documents`).
    fn let_go(&self, kept: &mut Kept) {
        if self.watching.swap(false, Ordering::SeqCst) {
            tracing::info!(
                "index `{}` has more than {} documents: not kept; each selection walks the tree",
                self.setup.name,
                self.setup.max_documents
            );
        }
        drop(lock(&self.watcher).take());
        lock(&self.watched).clear();
        kept.live.forget();
        kept.open = None;
        kept.stamp = None;
    }

    /// Watches `dir` (alone, not what is under it); false when the watcher cannot (its
    /// limits): then nothing watches, and every update lists the tree.
    fn watch_dir(&self, dir: &Path) -> bool {
        use notify::Watcher as _;
        // Not held while the watcher registers (its thread may be in the handler, which
        // forgets directories that went away).
        if !lock(&self.watched).insert(dir.to_owned()) {
            return true;
        }
        let result = match lock(&self.watcher).as_mut() {
            Some(watcher) => watcher.watch(dir, notify::RecursiveMode::NonRecursive),
            None => return false,
        };
        let Err(err) = result else {
            return true;
        };
        lock(&self.watched).remove(dir);
        if !dir.exists() {
            // Gone meanwhile: its parent's watch reported that.
            return true;
        }
        tracing::warn!(
            "cannot watch {}: {err}; selections walk the tree",
            dir.display()
        );
        self.watching.store(false, Ordering::SeqCst);
        false
    }

    /// The directories watched whatever the walk says: the index directory (fences), and
    /// git's `HEAD` and branch refs.
    fn watch_fixed(&self) {
        let git = self.setup.root.join(".git");
        let fixed = self
            .fences
            .iter()
            .cloned()
            .chain([git.clone(), git.join("refs").join("heads")]);
        for dir in fixed {
            if dir.is_dir() {
                self.watch_dir(&dir);
            }
        }
    }

    /// Watches `dir` and every directory under it the walk enters.
    fn watch_under(&self, dir: &Path) {
        if !self.watching.load(Ordering::SeqCst) || !self.watch_dir(dir) {
            return;
        }
        let opts = ctx_fs::WalkOptions {
            include_dirs: true,
            metadata: false,
            ..ctx_fs::WalkOptions::default()
        };
        let Ok(entries) = ctx_fs::walk(dir, &opts) else {
            return;
        };
        for entry in entries.iter().filter(|e| e.is_dir) {
            if !self.watch_dir(&entry.path) {
                return;
            }
        }
    }

    /// Waits until the watcher has reported every change made before now (see the module's
    /// documentation); when it cannot tell, the next update lists the tree.
    fn fence(&self) {
        if !self.watching.load(Ordering::SeqCst) {
            return;
        }
        let Some(fences) = &self.fences else {
            return;
        };
        let n = self.fence_sent.fetch_add(1, Ordering::SeqCst) + 1;
        let path = fences.join(format!(".{}.fence-{n}", self.setup.name));
        if std::fs::write(&path, b"").is_err() {
            lock(&self.pending).rescan = true;
            return;
        }
        let seen = lock(&self.fence_seen);
        let (seen, _) = self
            .fence_wake
            .wait_timeout_while(seen, self.tuning.fence_wait, |seen| *seen < n)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *seen < n {
            lock(&self.pending).rescan = true;
        }
        drop(seen);
        let _ = std::fs::remove_file(&path);
    }

    /// The worker: after a change (and [`DEBOUNCE`] more), applies what is pending.
    fn work(&self) {
        loop {
            {
                let pending = lock(&self.pending);
                let _wait = self
                    .wake
                    .wait_while(pending, |p| {
                        p.ids.is_empty()
                            && !p.rescan
                            && !p.head
                            && !self.stop.load(Ordering::SeqCst)
                    })
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(DEBOUNCE);
            let mut kept = lock(&self.kept);
            // Nothing is kept until a selection asked for the index: the watcher's changes
            // wait for it (the first one lists the tree anyway).
            if kept.last.is_none() {
                drop(kept);
                let mut pending = lock(&self.pending);
                pending.ids.clear();
                pending.rescan = false;
                pending.head = false;
                continue;
            }
            if let Err(err) = self.bring_up_to_date(&mut kept, &NoProgress) {
                tracing::warn!("updating index `{}`: {err}", self.setup.name);
            }
        }
    }

    /// When the index's `documents/` and manifest last changed.
    fn stamp(&self) -> Option<Stamp> {
        let dir = self.setup.indexes_dir.join(&self.setup.name);
        let documents = std::fs::metadata(dir.join("documents")).ok()?;
        let manifest = std::fs::metadata(dir.join("manifest.json")).ok()?;
        Some(Stamp {
            documents: documents.modified().ok()?,
            manifest: manifest.modified().ok()?,
            manifest_bytes: manifest.len(),
        })
    }

    /// Applies what is pending: the ids the watcher saw, or a listing of the tree (the first
    /// time, after lost events or changed ignore rules, and always when nothing watches).
    fn bring_up_to_date(
        &self,
        kept: &mut Kept,
        progress: &dyn Progress,
    ) -> Result<BuildReport, CtxError> {
        if kept.stamp.is_some() && self.stamp() != kept.stamp {
            // Changed from outside: read and check it again before anything reads or updates it.
            kept.live.forget();
            kept.open = None;
            kept.stamp = None;
        }
        let (ids, rescan, head) = {
            let mut pending = lock(&self.pending);
            (
                std::mem::take(&mut pending.ids),
                std::mem::take(&mut pending.rescan),
                std::mem::take(&mut pending.head),
            )
        };
        if ids.is_empty()
            && !rescan
            && !head
            && kept.listed
            && self.watching.load(Ordering::SeqCst)
            && let Some(last) = &kept.last
        {
            let mut same = last.clone();
            same.read = 0;
            same.removed = 0;
            same.reused = same.documents;
            same.up_to_date = true;
            return Ok(same);
        }
        // Directories that appeared are watched before they are listed, so nothing made in
        // them meanwhile goes unseen.
        if rescan {
            self.watch_under(&self.setup.root);
        } else {
            for id in &ids {
                let path = self.setup.root.join(id);
                if path.is_dir() {
                    self.watch_under(&path);
                }
            }
        }
        let repo = RepoAt::discover(&self.setup.root);
        let opts = BuildOptions {
            name: self.setup.name.clone(),
            force: false,
            canonicalize: ctx_select::CanonicalizeOptions::default(),
            policy: ctx_select::ErrorPolicy::SkipAndWarn,
            created_at: ctx_code::time::rfc3339((self.setup.clock)()),
            root: Some(self.setup.root.clone()),
            git_head: repo.as_ref().and_then(RepoAt::head),
        };
        let commits = || -> BTreeMap<String, u32> {
            repo.as_ref()
                .map(|r| r.activity(ACTIVITY_WINDOW))
                .unwrap_or_default()
        };
        let result = if rescan || !kept.listed || !self.watching.load(Ordering::SeqCst) {
            self.listings.fetch_add(1, Ordering::SeqCst);
            kept.live
                .update(&self.setup.source, &opts, &commits, progress)
                .inspect(|_| kept.listed = true)
        } else {
            let ids: Vec<DocumentId> = ids
                .iter()
                .filter_map(|id| DocumentId::new(id).ok())
                .collect();
            kept.live
                .update_ids(&self.setup.source, &ids, &opts, &commits, progress)
        };
        let report = match result {
            Ok(report) => report,
            Err(err) => {
                // Whatever was pending is looked at again by a listing next time.
                lock(&self.pending).rescan = true;
                return Err(err.into());
            }
        };
        if !report.up_to_date {
            kept.stamp = self.stamp();
            self.updates.fetch_add(1, Ordering::SeqCst);
            if let Some(tell) = &self.setup.on_update {
                tell(&report);
            }
        }
        kept.last = Some(report.clone());
        if report.documents > self.setup.max_documents {
            self.let_go(kept);
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of two Python files (and the directory that holds it).
    fn two_files() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        for name in ["a.py", "b.py"] {
            std::fs::write(root.join(name), "def parse(x):\n    return x\n").expect("write");
        }
        (tmp, root)
    }

    /// What a keeper of `root` needs, with its indexes in `indexes_dir`.
    fn setup(root: &Path, indexes_dir: PathBuf, max_documents: usize) -> KeeperSetup {
        KeeperSetup {
            root: root.to_owned(),
            indexes_dir,
            name: "default".to_owned(),
            source: FilesystemSource::new(root, Vec::new(), 1 << 20),
            clock: Arc::new(|| 0),
            on_update: None,
            max_documents,
        }
    }

    #[test]
    fn an_index_too_large_to_keep_is_neither_watched_nor_held() {
        let (_tmp, root) = two_files();
        let keeper = IndexKeeper::start(setup(&root, root.join(".ctx/indexes"), 1));
        assert!(keeper.is_watching());
        let query = ctx_select::Query::parse("parse").expect("query");
        let found = keeper
            .with_index(&NoProgress, |index, report| {
                assert_eq!(report.documents, 2);
                Ok(index
                    .select(
                        &query,
                        &ctx_select::SelectOptions::default(),
                        &ctx_select::ApproxTokenCounter,
                    )?
                    .documents
                    .len())
            })
            .expect("select");
        assert_eq!(found, 2);
        assert!(!keeper.is_watching(), "two documents are more than one");
        assert_eq!(keeper.watched_directories(), 0);
        assert!(lock(&keeper.shared.kept).open.is_none(), "nothing held");
        // It still answers, walking the tree each time.
        std::fs::write(root.join("c.py"), "def parse_more(x):\n    return x\n").expect("write");
        let documents = keeper
            .with_index(&NoProgress, |_, report| Ok(report.documents))
            .expect("select");
        assert_eq!(documents, 3);
    }

    /// A keeper of `root`, with its indexes in `indexes_dir`, whose watcher pauses
    /// `event_delay` before it records each event.
    fn slow_keeper(root: &Path, indexes_dir: PathBuf, event_delay: Duration) -> IndexKeeper {
        IndexKeeper::start_tuned(
            setup(root, indexes_dir, MAX_KEPT_DOCUMENTS),
            Tuning {
                fence_wait: Duration::from_secs(30),
                event_delay,
            },
        )
    }

    fn documents(keeper: &IndexKeeper) -> usize {
        keeper
            .with_index(&NoProgress, |_, report| Ok(report.documents))
            .expect("select")
    }

    #[test]
    fn a_selection_waits_for_the_watcher_to_report_what_changed_before_it() {
        let delay = Duration::from_millis(400);
        // The index inside the workspace: a selection fences, so a file written just before
        // it is in the index it reads, however slow the watcher, and without a listing.
        let (_tmp, root) = two_files();
        let keeper = slow_keeper(&root, root.join(".ctx/indexes"), delay);
        assert!(keeper.is_watching());
        assert_eq!(documents(&keeper), 2);
        assert_eq!(keeper.shared.listings.load(Ordering::SeqCst), 1);
        std::fs::write(root.join("c.py"), "def zebra(x):\n    return x\n").expect("write");
        assert_eq!(
            documents(&keeper),
            3,
            "the file written before the selection"
        );
        assert_eq!(
            keeper.shared.listings.load(Ordering::SeqCst),
            1,
            "the watcher told of it: no listing"
        );

        // The same with the index outside the workspace, where nothing can be fenced: the
        // selection reads before the slow watcher tells of the file, so it misses it (what
        // the fence above prevents), and sees it once the watcher has told.
        let ((_tmp, root), store) = (two_files(), tempfile::tempdir().expect("tempdir"));
        let keeper = slow_keeper(&root, store.path().join("indexes"), delay);
        assert!(keeper.shared.fences.is_none());
        assert_eq!(documents(&keeper), 2);
        std::fs::write(root.join("c.py"), "def zebra(x):\n    return x\n").expect("write");
        assert_eq!(
            documents(&keeper),
            2,
            "read before the watcher told of c.py"
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while documents(&keeper) != 3 {
            assert!(std::time::Instant::now() < deadline, "c.py never indexed");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn the_watcher_looks_at_what_the_walk_lists() {
        let root = Path::new("/w");
        let seen = |p: &str| classify(root, &root.join(p));
        assert_eq!(seen("src/lib.rs"), Seen::Id("src/lib.rs".to_owned()));
        assert_eq!(seen("README.md"), Seen::Id("README.md".to_owned()));
        assert_eq!(seen(".gitignore"), Seen::Rescan);
        assert_eq!(seen(".git/HEAD"), Seen::Head);
        assert_eq!(seen(".git/refs/heads/main"), Seen::Head);
        assert_eq!(seen(".git/packed-refs"), Seen::Head);
        assert_eq!(seen("src/.ignore"), Seen::Rescan);
        for skipped in [
            ".git/index",
            ".ctx/indexes/default/search.db",
            "target/debug/ctx",
            "web/node_modules/x/index.js",
            ".env",
            "src/.hidden/a.rs",
            "target",
        ] {
            assert_eq!(seen(skipped), Seen::Skip, "{skipped}");
        }
        assert_eq!(classify(root, Path::new("/elsewhere/a.rs")), Seen::Skip);
        assert_eq!(classify(root, root), Seen::Skip);
    }
}
