//! The gitignore-aware, parallel, deterministic file walker.
//!
//! Built on the `ignore` crate (ripgrep's walker), so ignore rules behave exactly as git's:
//! nested `.gitignore` files, `.ignore`, `.git/info/exclude`, the global excludes file
//! (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`), and `!negations`. The rules apply
//! whether or not the directory is a git repository. On top of them:
//!
//! - hidden files and directories are skipped unless [`WalkOptions::hidden`] is set;
//! - [default ignores](DEFAULT_IGNORED_DIRS) skip dependency, build and cache directories and
//!   minified bundles even without a `.gitignore` (turn off with
//!   [`WalkOptions::default_ignores`]); they apply only to what git does not track: when the
//!   root is inside a git work tree, a tracked file under such a directory (`build/gen.rs`)
//!   is walked, and the untracked rest of that directory is still skipped;
//! - [`WalkOptions::globs`] restricts the files returned to those matching a glob relative to
//!   the root.
//!
//! The walk runs on several threads; the result is sorted by the byte order of the
//! `/`-separated relative path, so the same tree always gives the same list.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};

use crate::error::WalkError;
use crate::sandbox::FileId;

/// Directory names skipped by default, wherever they appear, even without a `.gitignore`.
///
/// `vendor` is skipped only when it holds dependencies (see [`is_dependency_vendor_dir`]).
pub const DEFAULT_IGNORED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".ctx",
    "node_modules",
    "target",
    "dist",
    "build",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".tox",
    ".next",
    ".gradle",
];

/// File-name suffixes of generated bundles skipped by default.
pub const DEFAULT_IGNORED_SUFFIXES: &[&str] = &[
    ".min.js",
    ".min.mjs",
    ".min.cjs",
    ".min.css",
    ".bundle.js",
    ".js.map",
    ".css.map",
];

/// What to walk and what to skip.
// Independent switches, each mirroring a walker setting; not a state machine.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// Include hidden files and directories (names starting with `.`). Default: false.
    pub hidden: bool,
    /// Descend at most this many levels below the root (the root's children are depth 1).
    pub max_depth: Option<usize>,
    /// Follow symbolic links. Default: false (links are skipped, like ripgrep does).
    pub follow_links: bool,
    /// Apply the gitignore family of rules. Default: true.
    pub git_ignore: bool,
    /// Skip [`DEFAULT_IGNORED_DIRS`], dependency `vendor` dirs and minified bundles. Default: true.
    pub default_ignores: bool,
    /// Return only files whose relative path matches one of these globs (all files when
    /// empty). A glob without `/` matches the file name (`*.rs`); one with `/` matches the
    /// whole relative path (`src/**/*.rs`), `*` not crossing `/`.
    pub globs: Vec<String>,
    /// Skip files and directories matching one of these globs (same syntax as `globs`).
    pub excludes: Vec<String>,
    /// Also return directories (never the root itself). Default: false.
    pub include_dirs: bool,
    /// Worker threads; 0 picks from the number of CPUs; 1 walks on the calling thread.
    pub threads: usize,
    /// Read each file's metadata (size, modification time, inode). Default: true; a search
    /// that only reads the files turns it off and saves a `stat` per file. Directories
    /// returned by `include_dirs` are always stamped.
    pub metadata: bool,
    /// Set by a caller that gave up (a server whose request timed out): the walk stops at
    /// the next entry with [`WalkError::Cancelled`]. Default: none.
    pub cancel: Option<Cancel>,
}

/// A flag a caller sets to stop work it no longer waits for.
pub type Cancel = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// Whether `cancel` is set.
pub fn is_cancelled(cancel: Option<&Cancel>) -> bool {
    cancel.is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed))
}

impl Default for WalkOptions {
    fn default() -> Self {
        Self {
            hidden: false,
            max_depth: None,
            follow_links: false,
            git_ignore: true,
            default_ignores: true,
            globs: Vec::new(),
            excludes: Vec::new(),
            include_dirs: false,
            threads: 0,
            metadata: true,
            cancel: None,
        }
    }
}

/// One file (or directory, with [`WalkOptions::include_dirs`]) found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// The path as reached from the root passed to [`walk`] (absolute when the root is).
    pub path: PathBuf,
    /// The path relative to the root, `/`-separated, without `./`. For a root that is a file,
    /// its file name.
    pub rel: String,
    /// Whether this is a directory.
    pub is_dir: bool,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Last modification time in nanoseconds since the Unix epoch (0 when unknown).
    pub mtime_ns: i64,
    /// The inode number (0 when unknown or not on Unix).
    pub inode: u64,
    /// The device the file is on (0 when unknown or not on Unix); with the inode, what
    /// [`crate::WalkReader::open_entry`] checks the file it opens against.
    pub dev: u64,
}

impl WalkEntry {
    /// An entry for `path` from its metadata.
    pub fn from_metadata(path: PathBuf, rel: String, meta: &std::fs::Metadata) -> Self {
        let (mtime_ns, inode) = stamp(meta);
        Self {
            path,
            rel,
            is_dir: meta.is_dir(),
            size: if meta.is_dir() { 0 } else { meta.len() },
            mtime_ns,
            inode,
            dev: device(meta),
        }
    }

    /// The file's identity as the walk saw it (device and inode); `None` when the walk read
    /// no metadata ([`WalkOptions::metadata`] off) or the platform gives no inode.
    pub fn file_id(&self) -> Option<FileId> {
        (self.inode != 0).then_some(FileId {
            dev: self.dev,
            ino: self.inode,
        })
    }
}

/// The device a file is on (0 where the platform does not say).
pub fn device(meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    let dev = std::os::unix::fs::MetadataExt::dev(meta);
    #[cfg(not(unix))]
    let dev = 0;
    dev
}

/// A file's modification time (ns since the epoch) and inode, as far as the platform tells.
pub fn stamp(meta: &std::fs::Metadata) -> (i64, u64) {
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok())
        .unwrap_or(0);
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0;
    (mtime_ns, inode)
}

/// A walk's entries plus the errors met on the way (unreadable directories, broken links).
#[derive(Debug, Default)]
pub struct WalkOutcome {
    /// Entries sorted by the byte order of [`WalkEntry::rel`].
    pub entries: Vec<WalkEntry>,
    /// One line per problem; the walk went on past each of them.
    pub errors: Vec<String>,
}

/// Walks `root` and returns its files sorted by relative path; errors on single entries are
/// skipped (use [`walk_with_errors`] to see them).
pub fn walk(root: &Path, opts: &WalkOptions) -> Result<Vec<WalkEntry>, WalkError> {
    walk_with_errors(root, opts).map(|outcome| outcome.entries)
}

/// Walks `root` like [`walk`], also returning the errors met on single entries.
pub fn walk_with_errors(root: &Path, opts: &WalkOptions) -> Result<WalkOutcome, WalkError> {
    let (found, errors) = walk_each(root, opts, |_| Some(()))?;
    Ok(WalkOutcome {
        entries: found.into_iter().map(|(entry, ())| entry).collect(),
        errors,
    })
}

/// What [`walk_each`] returns: the kept entries with their values (sorted by
/// [`WalkEntry::rel`]), and the errors met on single entries.
pub type Visited<T> = (Vec<(WalkEntry, T)>, Vec<String>);

/// Walks `root` and calls `visit` on each entry as the walk finds it, on the walker's threads,
/// so work on a file (reading, searching) overlaps the walk instead of waiting for it. Entries
/// for which `visit` returns `None` are dropped. The result is sorted by the byte order of
/// [`WalkEntry::rel`], with the errors met on single entries (sorted).
///
/// # Errors
///
/// A missing or unreadable root, or an invalid glob.
pub fn walk_each<T: Send>(
    root: &Path,
    opts: &WalkOptions,
    visit: impl Fn(&WalkEntry) -> Option<T> + Sync,
) -> Result<Visited<T>, WalkError> {
    walk_until(root, opts, |entry| ControlFlow::Continue(visit(entry)))
}

/// [`walk_each`] that stops as soon as `visit` breaks (a bound reached): the walk ends
/// without reading further directories, and returns what it kept until then.
///
/// # Errors
///
/// A missing or unreadable root, or an invalid glob.
pub fn walk_until<T: Send>(
    root: &Path,
    opts: &WalkOptions,
    visit: impl Fn(&WalkEntry) -> ControlFlow<(), Option<T>> + Sync,
) -> Result<Visited<T>, WalkError> {
    let meta = std::fs::metadata(root).map_err(|source| WalkError::Root {
        path: root.to_owned(),
        source,
    })?;
    let includes = PathGlobs::new(&opts.globs)?;
    let excludes = PathGlobs::new(&opts.excludes)?;
    if meta.is_file() {
        let rel = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let entry = WalkEntry::from_metadata(root.to_owned(), rel, &meta);
        let found = match visit(&entry) {
            ControlFlow::Continue(Some(t)) => vec![(entry, t)],
            _ => Vec::new(),
        };
        return Ok((found, Vec::new()));
    }

    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!opts.hidden)
        .parents(opts.git_ignore)
        .ignore(opts.git_ignore)
        .git_ignore(opts.git_ignore)
        .git_global(opts.git_ignore)
        .git_exclude(opts.git_ignore)
        .require_git(false)
        .follow_links(opts.follow_links)
        .max_depth(opts.max_depth)
        .threads(opts.threads);
    let root_owned = root.to_owned();
    let default_ignores = opts.default_ignores;
    let dir_excludes = excludes.clone();
    // Read from git's index when the walk first meets a default-ignored directory, so a walk
    // that meets none (a server's listing of `src/`) never opens the repository.
    let tracked: OnceLock<TrackedIgnored> = OnceLock::new();
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
        }
        let name = entry.file_name().to_string_lossy();
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if default_ignores {
            if is_default_ignored(&name, is_dir, entry.path()) {
                if !is_dir {
                    return false;
                }
                // A directory is walked when git tracks something in it.
                let tracked = tracked.get_or_init(|| TrackedIgnored::read(&root_owned));
                if tracked.is_empty()
                    || !relative(&root_owned, entry.path()).is_some_and(|rel| tracked.has_dir(&rel))
                {
                    return false;
                }
            } else if let Some(tracked) = tracked.get()
                && !tracked.is_empty()
                && let Some(rel) = relative(&root_owned, entry.path())
                && !tracked.keeps(&rel, is_dir)
            {
                return false;
            }
        }
        if !dir_excludes.is_empty()
            && let Some(rel) = relative(&root_owned, entry.path())
            && dir_excludes.matches(&rel, &name)
        {
            return false;
        }
        true
    });

    let mut found: Vec<(WalkEntry, T)> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let cancelled = || is_cancelled(opts.cancel.as_ref());
    if opts.threads == 1 {
        // One thread asked for: walk on this one, without spawning any (cheaper for the
        // small listings a server answers many of).
        for result in builder.build() {
            if cancelled() {
                break;
            }
            match result {
                Ok(entry) => {
                    if let Some(item) = accept(root, &entry, opts, &includes) {
                        match visit(&item) {
                            ControlFlow::Continue(Some(value)) => found.push((item, value)),
                            ControlFlow::Continue(None) => {}
                            ControlFlow::Break(()) => break,
                        }
                    }
                }
                Err(err) => errors.push(err.to_string()),
            }
        }
    } else {
        // Each walker thread keeps its own list; the lists are merged once at the end.
        let parts: Mutex<Vec<Visited<T>>> = Mutex::new(Vec::new());
        builder.build_parallel().run(|| {
            let includes = &includes;
            let visit = &visit;
            let mut local = Local {
                parts: &parts,
                found: Vec::new(),
                errors: Vec::new(),
            };
            Box::new(move |result| {
                if cancelled() {
                    return WalkState::Quit;
                }
                match result {
                    Ok(entry) => {
                        if let Some(item) = accept(root, &entry, opts, includes) {
                            match visit(&item) {
                                ControlFlow::Continue(Some(value)) => {
                                    local.found.push((item, value));
                                }
                                ControlFlow::Continue(None) => {}
                                ControlFlow::Break(()) => return WalkState::Quit,
                            }
                        }
                    }
                    Err(err) => local.errors.push(err.to_string()),
                }
                WalkState::Continue
            })
        });
        for (part, part_errors) in parts.into_inner().expect("walk result lock") {
            found.extend(part);
            errors.extend(part_errors);
        }
    }
    if cancelled() {
        return Err(WalkError::Cancelled);
    }
    found.sort_unstable_by(|a, b| a.0.rel.as_bytes().cmp(b.0.rel.as_bytes()));
    errors.sort();
    Ok((found, errors))
}

/// A walker thread's results, handed over when the thread's visitor is dropped.
struct Local<'a, T> {
    parts: &'a Mutex<Vec<Visited<T>>>,
    found: Vec<(WalkEntry, T)>,
    errors: Vec<String>,
}

impl<T> Drop for Local<'_, T> {
    fn drop(&mut self) {
        let found = std::mem::take(&mut self.found);
        let errors = std::mem::take(&mut self.errors);
        if let Ok(mut parts) = self.parts.lock() {
            parts.push((found, errors));
        }
    }
}

/// Turns a raw walk entry into a [`WalkEntry`] if it should be returned.
fn accept(
    root: &Path,
    entry: &DirEntry,
    opts: &WalkOptions,
    includes: &PathGlobs,
) -> Option<WalkEntry> {
    if entry.depth() == 0 {
        return None;
    }
    let file_type = entry.file_type()?;
    let is_dir = file_type.is_dir();
    if !is_dir && !file_type.is_file() {
        // Symlinks when not following them, sockets, fifos, devices.
        return None;
    }
    if is_dir && !opts.include_dirs {
        return None;
    }
    let rel = relative(root, entry.path())?;
    if !is_dir && !includes.is_empty() {
        let name = entry.file_name().to_string_lossy();
        if !includes.matches(&rel, &name) {
            return None;
        }
    }
    // A directory is stamped as it is found, before the walk lists it, so a change made
    // while it is listed shows in its modification time.
    let meta = if opts.metadata || is_dir {
        entry.metadata().ok()
    } else {
        None
    };
    let (mtime_ns, inode) = meta.as_ref().map_or((0, 0), stamp);
    Some(WalkEntry {
        path: entry.path().to_owned(),
        rel,
        is_dir,
        size: if is_dir {
            0
        } else {
            meta.as_ref().map_or(0, std::fs::Metadata::len)
        },
        mtime_ns,
        inode,
        dev: meta.as_ref().map_or(0, device),
    })
}

/// `path` relative to `root` when it is `root`, a `/` and plain names (UTF-8, none empty, `.`
/// or `..`), as a walk's paths are: its own bytes, found without walking components (a path
/// per file makes the component-wise way a measurable part of a search). `None` otherwise.
pub(crate) fn plain_rest<'p>(root: &Path, path: &'p Path) -> Option<&'p str> {
    let rest = path
        .as_os_str()
        .as_encoded_bytes()
        .strip_prefix(root.as_os_str().as_encoded_bytes())?
        .strip_prefix(b"/")?;
    let rest = std::str::from_utf8(rest).ok()?;
    crate::sandbox::is_plain_relative(rest).then_some(rest)
}

/// `path` relative to `root`, `/`-separated.
fn relative(root: &Path, path: &Path) -> Option<String> {
    if let Some(rest) = plain_rest(root, path) {
        return Some(rest.to_owned());
    }
    let rel = path.strip_prefix(root).ok()?;
    let mut out = String::new();
    for (i, part) in rel.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(&part.as_os_str().to_string_lossy());
    }
    if out.is_empty() { None } else { Some(out) }
}

/// The tracked files (and their directories) that the default ignores would hide: git's index
/// entries under the walk root with a default-ignored directory on their path. Empty when the
/// root is not in a git work tree or git tracks nothing there, which leaves the walk as cheap
/// as without a repository.
#[derive(Debug, Default)]
struct TrackedIgnored {
    /// Tracked files, relative to the walk root.
    files: HashSet<String>,
    /// Every directory on the way to one of them.
    dirs: HashSet<String>,
    /// The default-ignored directories among `dirs`: below them, only tracked paths are seen.
    ignored: HashSet<String>,
}

impl TrackedIgnored {
    /// Reads git's index for the repository holding `root`; a missing or unreadable repository
    /// or index tracks nothing (the default ignores then apply as they always did).
    fn read(root: &Path) -> Self {
        let mut tracked = Self::default();
        let Ok(repo) = git2::Repository::discover(root) else {
            return tracked;
        };
        let (Some(workdir), Ok(root)) = (repo.workdir(), std::fs::canonicalize(root)) else {
            return tracked;
        };
        let Ok(workdir) = std::fs::canonicalize(workdir) else {
            return tracked;
        };
        let Some(prefix) = relative(&workdir, &root)
            .map(|p| format!("{p}/"))
            .or_else(|| (workdir == root).then(String::new))
        else {
            return tracked;
        };
        let Ok(index) = repo.index() else {
            return tracked;
        };
        for entry in index.iter() {
            let Ok(path) = std::str::from_utf8(&entry.path) else {
                continue;
            };
            let Some(rel) = path.strip_prefix(prefix.as_str()) else {
                continue;
            };
            let Some((dir, _)) = rel.rsplit_once('/') else {
                continue;
            };
            if !dir
                .split('/')
                .any(|part| DEFAULT_IGNORED_DIRS.contains(&part) || part == "vendor")
            {
                continue;
            }
            let mut end = 0;
            while let Some(slash) = rel[end..].find('/') {
                end += slash;
                let ancestor = &rel[..end];
                if !tracked.dirs.contains(ancestor) {
                    let name = ancestor.rsplit('/').next().unwrap_or(ancestor);
                    if is_default_ignored(name, true, &root.join(ancestor)) {
                        tracked.ignored.insert(ancestor.to_owned());
                    }
                    tracked.dirs.insert(ancestor.to_owned());
                }
                end += 1;
            }
            tracked.files.insert(rel.to_owned());
        }
        if tracked.ignored.is_empty() {
            // Only `vendor` directories of the project's own code: nothing to make an
            // exception for.
            return Self::default();
        }
        tracked
    }

    fn is_empty(&self) -> bool {
        self.ignored.is_empty()
    }

    /// Whether git tracks a file below the directory at `rel`.
    fn has_dir(&self, rel: &str) -> bool {
        self.dirs.contains(rel)
    }

    /// Whether an entry the default ignores do not name themselves is seen: yes unless it
    /// lies inside a default-ignored directory (kept for its tracked files) untracked.
    fn keeps(&self, rel: &str, is_dir: bool) -> bool {
        if (is_dir && self.dirs.contains(rel)) || (!is_dir && self.files.contains(rel)) {
            return true;
        }
        let mut end = 0;
        while let Some(slash) = rel[end..].find('/') {
            end += slash;
            if self.ignored.contains(&rel[..end]) {
                return false;
            }
            end += 1;
        }
        true
    }
}

/// Whether a directory or file of this name is skipped by the default ignores.
pub fn is_default_ignored(name: &str, is_dir: bool, path: &Path) -> bool {
    if is_dir {
        if DEFAULT_IGNORED_DIRS.contains(&name) {
            return true;
        }
        name == "vendor" && is_dependency_vendor_dir(path)
    } else {
        DEFAULT_IGNORED_SUFFIXES
            .iter()
            .any(|suffix| name.ends_with(suffix))
    }
}

/// Whether a `vendor` directory holds third-party dependencies rather than the project's own
/// code: Go (`vendor/modules.txt`, or a `go.mod` beside it), Composer (`vendor/autoload.php`,
/// or `composer.json` beside it), Bundler (`vendor/bundle`, or a `Gemfile` beside it), or
/// `cargo vendor` (crates with a `.cargo-checksum.json`).
pub fn is_dependency_vendor_dir(dir: &Path) -> bool {
    if ["modules.txt", "autoload.php", "bundle"]
        .iter()
        .any(|marker| dir.join(marker).exists())
    {
        return true;
    }
    if let Some(parent) = dir.parent()
        && ["go.mod", "composer.json", "Gemfile"]
            .iter()
            .any(|marker| parent.join(marker).exists())
    {
        return true;
    }
    std::fs::read_dir(dir).is_ok_and(|children| {
        children
            .flatten()
            .take(8)
            .any(|child| child.path().join(".cargo-checksum.json").exists())
    })
}

/// Globs split into those matched against the file name and those matched against the path.
#[derive(Debug, Clone)]
struct PathGlobs {
    by_name: GlobSet,
    by_path: GlobSet,
    empty: bool,
}

impl PathGlobs {
    fn new(patterns: &[String]) -> Result<Self, WalkError> {
        let mut by_name = GlobSetBuilder::new();
        let mut by_path = GlobSetBuilder::new();
        for pattern in patterns {
            let invalid = |source| WalkError::Glob {
                pattern: pattern.clone(),
                source,
            };
            let trimmed = pattern.trim_start_matches("./").trim_start_matches('/');
            if trimmed.contains('/') {
                let glob = GlobBuilder::new(trimmed)
                    .literal_separator(true)
                    .build()
                    .map_err(invalid)?;
                by_path.add(glob);
            } else {
                by_name.add(Glob::new(trimmed).map_err(invalid)?);
            }
        }
        let build = |builder: GlobSetBuilder| {
            builder.build().map_err(|source| WalkError::Glob {
                pattern: patterns.join(" "),
                source,
            })
        };
        Ok(Self {
            by_name: build(by_name)?,
            by_path: build(by_path)?,
            empty: patterns.is_empty(),
        })
    }

    fn is_empty(&self) -> bool {
        self.empty
    }

    fn matches(&self, rel: &str, name: &str) -> bool {
        self.by_name.is_match(name) || self.by_path.is_match(rel)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (rel, body) in files {
            let path = dir.path().join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, body).expect("write");
        }
        dir
    }

    fn rels(root: &Path, opts: &WalkOptions) -> Vec<String> {
        walk(root, opts)
            .expect("walk")
            .into_iter()
            .map(|e| e.rel)
            .collect()
    }

    /// The byte-wise fast path gives what the component-wise way gives, for every shape of
    /// root and path.
    #[test]
    fn relative_paths_are_the_same_by_bytes_or_by_components() {
        fn by_components(root: &Path, path: &Path) -> Option<String> {
            let rel = path.strip_prefix(root).ok()?;
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            (!parts.is_empty()).then(|| parts.join("/"))
        }
        let cases = [
            ("/ws", "/ws/a/b.rs"),
            ("/ws", "/ws"),
            ("/ws", "/wsx/a"),
            ("/ws", "/ws//a"),
            ("/ws", "/ws/./a"),
            ("/ws", "/ws/a/../b"),
            ("/ws/", "/ws/a"),
            ("/", "/a/b"),
            (".", "./a/b"),
            (".", "a/b"),
            ("src", "src/.hidden/..dots"),
            ("src", "src/a/"),
        ];
        for (root, path) in cases {
            let (root, path) = (Path::new(root), Path::new(path));
            assert_eq!(
                relative(root, path),
                by_components(root, path),
                "{root:?} {path:?}"
            );
        }
    }

    #[test]
    fn nested_gitignore_and_negation_apply_without_a_repository() {
        let dir = tree(&[
            (".gitignore", "*.log\n!keep.log\n"),
            ("a.log", ""),
            ("keep.log", ""),
            ("src/main.rs", ""),
            ("src/.gitignore", "gen/\n"),
            ("src/gen/out.rs", ""),
            ("src/sub/.gitignore", "!*.log\n"),
            ("src/sub/deep.log", ""),
        ]);
        assert_eq!(
            rels(dir.path(), &WalkOptions::default()),
            ["keep.log", "src/main.rs", "src/sub/deep.log"]
        );
    }

    #[test]
    fn dot_ignore_and_git_info_exclude_apply() {
        let dir = tree(&[
            (".ignore", "secret.txt\n"),
            (".git/info/exclude", "local/\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
            ("secret.txt", ""),
            ("local/x.rs", ""),
            ("lib.rs", ""),
        ]);
        assert_eq!(rels(dir.path(), &WalkOptions::default()), ["lib.rs"]);
    }

    #[test]
    fn hidden_files_are_skipped_unless_asked_for() {
        let dir = tree(&[(".env.example", ""), (".config/a.toml", ""), ("b.txt", "")]);
        assert_eq!(rels(dir.path(), &WalkOptions::default()), ["b.txt"]);
        let opts = WalkOptions {
            hidden: true,
            ..WalkOptions::default()
        };
        assert_eq!(
            rels(dir.path(), &opts),
            [".config/a.toml", ".env.example", "b.txt"]
        );
    }

    #[test]
    fn default_ignores_apply_without_a_gitignore() {
        let dir = tree(&[
            ("node_modules/x/index.js", ""),
            ("target/debug/a", ""),
            ("dist/app.js", ""),
            ("build/out.o", ""),
            (".venv/lib/site.py", ""),
            ("venv/lib/site.py", ""),
            ("pkg/__pycache__/m.pyc", ""),
            ("web/app.min.js", ""),
            ("web/app.js", ""),
            ("go.mod", "module x\n"),
            ("vendor/github.com/a/b.go", ""),
            ("php/vendor/own.php", ""),
            ("main.go", ""),
        ]);
        assert_eq!(
            rels(dir.path(), &WalkOptions::default()),
            ["go.mod", "main.go", "php/vendor/own.php", "web/app.js"]
        );
        let hidden = WalkOptions {
            hidden: true,
            ..WalkOptions::default()
        };
        assert!(
            !rels(dir.path(), &hidden)
                .iter()
                .any(|r| r.starts_with(".venv"))
        );
        let all = WalkOptions {
            default_ignores: false,
            ..WalkOptions::default()
        };
        assert_eq!(rels(dir.path(), &all).len(), 12, "all but the hidden .venv");
    }

    #[test]
    fn default_ignores_spare_what_git_tracks() {
        let dir = tree(&[
            ("src/lib.rs", ""),
            ("pkg/build/run_bindgen.rs", ""),
            ("pkg/build/generated.rs", ""),
            ("pkg/build/out/x.rs", ""),
            ("pkg/build/app.min.js", ""),
            ("build/artifact.o", ""),
            ("target/debug/a", ""),
        ]);
        let untracked_only = rels(dir.path(), &WalkOptions::default());
        assert_eq!(untracked_only, ["src/lib.rs"], "no repository: all skipped");
        let repo = git2::Repository::init(dir.path()).expect("git init");
        let mut index = repo.index().expect("index");
        for rel in [
            "src/lib.rs",
            "pkg/build/run_bindgen.rs",
            "pkg/build/app.min.js",
        ] {
            index.add_path(Path::new(rel)).expect("git add");
        }
        index.write().expect("write index");
        // The tracked file is seen; its untracked neighbours, the minified bundle (a file
        // rule, not a directory one) and the untracked build dirs are not.
        assert_eq!(
            rels(dir.path(), &WalkOptions::default()),
            ["pkg/build/run_bindgen.rs", "src/lib.rs"]
        );
        for threads in [1, 2] {
            let opts = WalkOptions {
                threads,
                ..WalkOptions::default()
            };
            assert_eq!(
                rels(&dir.path().join("pkg"), &opts),
                ["build/run_bindgen.rs"]
            );
        }
        let all = WalkOptions {
            default_ignores: false,
            ..WalkOptions::default()
        };
        assert_eq!(rels(dir.path(), &all).len(), 7);
    }

    #[test]
    fn git_directory_is_skipped_even_with_hidden_files() {
        let dir = tree(&[(".git/config", ""), (".ctx/state.db", ""), ("a", "")]);
        let opts = WalkOptions {
            hidden: true,
            ..WalkOptions::default()
        };
        assert_eq!(rels(dir.path(), &opts), ["a"]);
    }

    #[test]
    fn output_is_sorted_by_byte_order_of_the_relative_path() {
        let dir = tree(&[
            ("b/z.rs", ""),
            ("a-b.rs", ""),
            ("a/b.rs", ""),
            ("B.rs", ""),
            ("a.rs", ""),
            ("_.rs", ""),
        ]);
        let got = rels(dir.path(), &WalkOptions::default());
        assert_eq!(got, ["B.rs", "_.rs", "a-b.rs", "a.rs", "a/b.rs", "b/z.rs"]);
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got, sorted);
        for _ in 0..5 {
            assert_eq!(rels(dir.path(), &WalkOptions::default()), got);
        }
    }

    #[test]
    fn globs_restrict_by_name_or_by_path() {
        let dir = tree(&[
            ("src/a.rs", ""),
            ("src/deep/b.rs", ""),
            ("src/c.py", ""),
            ("d.rs", ""),
        ]);
        let by_name = WalkOptions {
            globs: vec!["*.rs".into()],
            ..WalkOptions::default()
        };
        assert_eq!(
            rels(dir.path(), &by_name),
            ["d.rs", "src/a.rs", "src/deep/b.rs"]
        );
        let by_path = WalkOptions {
            globs: vec!["src/*.rs".into()],
            ..WalkOptions::default()
        };
        assert_eq!(rels(dir.path(), &by_path), ["src/a.rs"]);
        let excluded = WalkOptions {
            excludes: vec!["deep".into(), "*.py".into()],
            ..WalkOptions::default()
        };
        assert_eq!(rels(dir.path(), &excluded), ["d.rs", "src/a.rs"]);
    }

    #[test]
    fn depth_dirs_and_sizes_are_reported() {
        let dir = tree(&[("a/b/c.txt", "hello"), ("top.txt", "hi")]);
        let opts = WalkOptions {
            include_dirs: true,
            max_depth: Some(2),
            ..WalkOptions::default()
        };
        let entries = walk(dir.path(), &opts).expect("walk");
        let got: Vec<(&str, bool, u64)> = entries
            .iter()
            .map(|e| (e.rel.as_str(), e.is_dir, e.size))
            .collect();
        assert_eq!(
            got,
            [("a", true, 0), ("a/b", true, 0), ("top.txt", false, 2)]
        );
        assert!(entries[2].path.is_absolute());
    }

    #[test]
    fn walk_each_visits_every_file_and_sorts_the_kept_ones() {
        let dir = tree(&[
            ("b/two.rs", "2"),
            ("a.rs", "1"),
            ("c/d/three.rs", "333"),
            (".gitignore", "skip.rs\n"),
            ("skip.rs", ""),
        ]);
        for threads in [1, 2] {
            let opts = WalkOptions {
                threads,
                ..WalkOptions::default()
            };
            let (found, errors) = walk_each(dir.path(), &opts, |entry| {
                (entry.size > 1).then(|| fs::read_to_string(&entry.path).expect("read"))
            })
            .expect("walk");
            assert!(errors.is_empty());
            let got: Vec<(&str, &str)> = found
                .iter()
                .map(|(e, text)| (e.rel.as_str(), text.as_str()))
                .collect();
            assert_eq!(got, [("c/d/three.rs", "333")], "threads {threads}");
            let (all, _) = walk_each(dir.path(), &opts, |_| Some(())).expect("walk");
            let rels: Vec<&str> = all.iter().map(|(e, ())| e.rel.as_str()).collect();
            assert_eq!(rels, ["a.rs", "b/two.rs", "c/d/three.rs"]);
            assert!(
                all.iter().all(|(e, ())| e.mtime_ns > 0),
                "files are stamped"
            );
            #[cfg(unix)]
            assert!(all.iter().all(|(e, ())| e.inode > 0));
        }
    }

    #[test]
    fn a_file_root_yields_itself_and_a_missing_root_is_an_error() {
        let dir = tree(&[("one.rs", "fn x() {}")]);
        let file = dir.path().join("one.rs");
        let entries = walk(&file, &WalkOptions::default()).expect("walk");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].rel, "one.rs");
        assert_eq!(entries[0].size, 9);
        let missing = walk(&dir.path().join("nope"), &WalkOptions::default());
        assert!(matches!(missing, Err(WalkError::Root { .. })));
        let bad_glob = WalkOptions {
            globs: vec!["a[".into()],
            ..WalkOptions::default()
        };
        assert!(matches!(
            walk(dir.path(), &bad_glob),
            Err(WalkError::Glob { .. })
        ));
    }
}
