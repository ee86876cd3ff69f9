//! Render-time expansion: a stored source becomes units of text, collections sorted by byte
//! order; files that cannot be included become skipped units with a reason.

use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctx_core::Progress;
use ctx_fs::reader::read_up_to;
use ctx_fs::sandbox::EntryKind;
use ctx_fs::{FileId, Sandbox, SandboxError, WalkOptions, walk};
use rayon::prelude::*;
use serde::Serialize;

use crate::sensitive::SensitivePaths;
use crate::source::{LineRange, Source, SourceSpec};

/// What expansion needs to know.
#[derive(Clone, Copy)]
pub struct ExpandOptions<'a> {
    /// The workspace root every path is relative to.
    pub root: &'a Path,
    /// Files larger than this are skipped without being read.
    pub max_file_bytes: u64,
    /// Paths refused unless the spec allows sensitive files.
    pub sensitive: &'a SensitivePaths,
    /// How long a `cmd:` source may run.
    pub command_timeout: Duration,
    /// Told about collections: `walk` while listing, then `read` file by file.
    pub progress: &'a dyn Progress,
}

/// Why a unit is left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Skip {
    /// The file no longer exists.
    Missing,
    /// The file holds NUL bytes: not text.
    Binary,
    /// The file is over the size limit (it was not read).
    TooLarge { bytes: u64, limit: u64 },
    /// The file is not valid UTF-8.
    NotUtf8 { offset: usize },
    /// A sensitive path met while expanding a collection.
    Sensitive { pattern: String },
    /// The file or directory could not be read.
    Unreadable { error: String },
    /// The line range starts past the end of the file.
    RangePastEnd { lines: u64 },
    /// A git diff could not be computed.
    Git { error: String },
}

impl Skip {
    /// A short, stable name for reports (`binary`, `too_large`, …).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Binary => "binary",
            Self::TooLarge { .. } => "too_large",
            Self::NotUtf8 { .. } => "not_utf8",
            Self::Sensitive { .. } => "sensitive",
            Self::Unreadable { .. } => "unreadable",
            Self::RangePastEnd { .. } => "range_past_end",
            Self::Git { .. } => "git_error",
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => f.write_str("file not found"),
            Self::Binary => f.write_str("binary file"),
            Self::TooLarge { bytes, limit } => {
                write!(f, "{bytes} bytes, over max_file_bytes ({limit})")
            }
            Self::NotUtf8 { offset } => write!(f, "not valid UTF-8 (byte {offset})"),
            Self::Sensitive { pattern } => write!(f, "sensitive path (matches `{pattern}`)"),
            Self::Unreadable { error } => write!(f, "unreadable: {error}"),
            Self::RangePastEnd { lines } => {
                write!(f, "line range starts past the end ({lines} lines)")
            }
            Self::Git { error } => write!(f, "git: {error}"),
        }
    }
}

/// What a unit is, so a payload header can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKind {
    /// A file or a line range of one (the label is its path).
    File,
    /// The diff of one file (the label is its path).
    Diff,
    /// The git log (the label names the repository directory).
    Log,
    /// A command's output (the label is `$ command`).
    Command,
    /// A text given inline.
    Text,
}

/// One piece of a render: a file, a line range, a diff of one file, a command's output, a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Identity across renders (used by `pack verify`): the path, with range or scheme.
    pub key: String,
    /// What the unit is.
    pub kind: UnitKind,
    /// What the payload header shows (usually the path).
    pub label: String,
    pub lines: Option<LineRange>,
    /// A language tag for Markdown fences ("" when unknown).
    pub lang: &'static str,
    /// The text, or why it is left out.
    pub body: Result<String, Skip>,
    /// Marks worth reporting (non-zero exit, timeout, truncation).
    pub notes: Vec<String>,
}

/// The workspace sandbox every file of a render is read through (opened once per source), or
/// why the root cannot be opened.
fn open_sandbox(options: &ExpandOptions<'_>) -> Result<Arc<Sandbox>, Skip> {
    Sandbox::open(options.root)
        .map(Arc::new)
        .map_err(|err| Skip::Unreadable {
            error: err.to_string(),
        })
}

/// A unit whose file may not be read yet. [`plan`] lists a source's units without reading
/// their files, so a caller can read, use and drop them a chunk at a time (a render of a
/// large tree then holds one chunk, not the tree) and read a file again later.
pub struct PlannedUnit {
    /// The unit. For a file still to read its `body` is `Ok("")` until [`Self::load`].
    pub unit: Unit,
    file: Option<PlannedFile>,
}

/// A file to read through the sandbox: where, which lines, the size limit, and its stamp
/// when the walk that listed it saw one.
struct PlannedFile {
    sandbox: Arc<Sandbox>,
    id: String,
    lines: Option<LineRange>,
    max_bytes: u64,
    listed: Option<FileStamp>,
    /// The device and inode the walk listed: the file is opened once and must still be that
    /// inode ([`Sandbox::open_listed`]).
    listed_id: Option<FileId>,
}

/// What identifies a file's state without reading it: when its size, modification time and
/// inode are all unchanged, its content is taken as unchanged (as git's index does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub inode: u64,
}

impl FileStamp {
    /// The stamp in `meta`; `None` when the platform gives no modification time.
    pub fn of(meta: &std::fs::Metadata) -> Option<Self> {
        let (mtime_ns, inode) = walk::stamp(meta);
        (mtime_ns != 0).then_some(Self {
            size: meta.len(),
            mtime_ns,
            inode,
        })
    }
}

impl PlannedUnit {
    fn ready(unit: Unit) -> Self {
        Self { unit, file: None }
    }

    /// Whether the unit's text comes from a file that [`Self::read`] can read (again):
    /// commands, git diffs and logs, texts and skipped units hold their text (or reason) from
    /// planning on.
    pub fn is_file(&self) -> bool {
        self.file.is_some()
    }

    /// Reads the file's text (or why it is left out) now, as [`expand`] would; `None` for a
    /// unit that is not a file to read.
    pub fn read(&self) -> Option<Result<String, Skip>> {
        let file = self.file.as_ref()?;
        Some(
            read_file_text(&file.sandbox, &file.id, file.max_bytes, file.listed_id).and_then(
                |(text, _)| match file.lines {
                    Some(range) => slice_lines(&text, range),
                    None => Ok(text),
                },
            ),
        )
    }

    /// The absolute path of a whole file (`None` for a line range or a unit that is not a
    /// file).
    pub fn file_path(&self) -> Option<PathBuf> {
        let file = self.file.as_ref().filter(|f| f.lines.is_none())?;
        Some(file.sandbox.root().join(&file.id))
    }

    /// A whole file's stamp as the walk that listed it saw it (`None` for a file named
    /// directly, a line range, or a unit that is not a file).
    pub fn listed_stamp(&self) -> Option<FileStamp> {
        self.file.as_ref().filter(|f| f.lines.is_none())?.listed
    }

    /// A whole file's bytes, read to the size its open descriptor reports, neither checked
    /// for text nor decoded: for a file whose bytes are then checked against the hash of the
    /// text read before (`None` for a line range, or a unit that is not a file).
    pub fn read_raw(&self) -> Option<Result<Vec<u8>, Skip>> {
        let file = self.file.as_ref().filter(|f| f.lines.is_none())?;
        Some(read_file_bytes(
            &file.sandbox,
            &file.id,
            file.max_bytes,
            file.listed_id,
        ))
    }

    /// [`Self::read`] of a whole file, with its stamp as read (from the open descriptor, so
    /// the stamp belongs to exactly these bytes unless the file is written while read). A file
    /// its bytes leave out ([`Skip::Binary`], [`Skip::NotUtf8`]) has its stamp too: the
    /// verdict holds while the stamp does.
    pub fn read_stamped(&self) -> Option<(Result<String, Skip>, Option<FileStamp>)> {
        let file = self.file.as_ref()?;
        if file.lines.is_some() {
            return self.read().map(|text| (text, None));
        }
        Some(read_file_text_stamped(
            &file.sandbox,
            &file.id,
            file.max_bytes,
            file.listed_id,
        ))
    }

    /// Reads the file into `unit.body` (other units hold their text already).
    pub fn load(&mut self) {
        if let Some(body) = self.read() {
            self.unit.body = body;
        }
    }
}

/// Expands a stored source into its units. Every file is read through the ctx-fs sandbox of
/// the workspace root at render time, as `fs_read` reads: a source that is (or has become) a
/// symlink leading out of the workspace, a hard link, a FIFO or a device is skipped with the
/// reason, never followed.
pub fn expand(spec: &SourceSpec, options: &ExpandOptions<'_>) -> Vec<Unit> {
    let planned = plan(spec, options);
    let collection = spec.source.is_collection();
    if collection {
        options.progress.phase("read", Some(planned.len() as u64));
    }
    planned
        .into_par_iter()
        .map(|mut planned| {
            planned.load();
            if collection {
                options.progress.advance(1);
            }
            planned.unit
        })
        .collect()
}

/// A source's units as [`expand`] gives them, in the same order, but with files not read yet
/// ([`PlannedUnit::load`] reads one). Commands run, and git diffs and logs are computed, here.
pub fn plan(spec: &SourceSpec, options: &ExpandOptions<'_>) -> Vec<PlannedUnit> {
    let file = |path: &str, lines: Option<LineRange>| {
        // `pack add` refuses sensitive files unless allowed; a path that became sensitive
        // since (new `sensitive.extra` patterns), or one named to a one-shot pack, is skipped.
        if !spec.allow_sensitive
            && let Some(pattern) = options.sensitive.matches(path)
        {
            let skip = Skip::Sensitive {
                pattern: pattern.to_owned(),
            };
            return PlannedUnit::ready(skipped(path, skip));
        }
        match open_sandbox(options) {
            Ok(sandbox) => planned_file(&sandbox, path, lines, options),
            Err(skip) => PlannedUnit::ready(skipped(path, skip)),
        }
    };
    let ready = |units: Vec<Unit>| units.into_iter().map(PlannedUnit::ready).collect();
    match &spec.source {
        Source::File { path, lines } => vec![file(path, *lines)],
        Source::Markdown { path } => vec![file(path, None)],
        Source::MarkdownDir {
            path,
            recursive,
            max_files,
            exclude,
        } => collection(
            path,
            &markdown_walk(*recursive, exclude),
            *max_files,
            spec.allow_sensitive,
            options,
        ),
        Source::Glob {
            base,
            pattern,
            max_files,
            exclude,
        } => collection(
            base,
            &glob_walk(pattern, exclude),
            *max_files,
            spec.allow_sensitive,
            options,
        ),
        Source::GitDiff { dir, base, head } => ready(crate::git::diff_units(
            &join(options.root, dir),
            base.as_deref(),
            head.as_deref(),
            spec.allow_sensitive,
            options,
        )),
        Source::Tree {
            path,
            include,
            exclude,
        } => collection(
            path,
            &tree_walk(include, exclude),
            None,
            spec.allow_sensitive,
            options,
        ),
        Source::GitLog { dir, count } => ready(vec![crate::git::log_unit(
            &join(options.root, dir),
            dir,
            *count,
        )]),
        Source::Command { dir, command } => ready(vec![command_unit(
            command,
            &join(options.root, dir),
            options,
        )]),
        Source::Text { text } => ready(vec![Unit {
            key: format!(
                "text:{}",
                ctx_core::ContentHash::of(text.as_bytes())
                    .to_hex()
                    .get(..12)
                    .unwrap_or_default()
            ),
            kind: UnitKind::Text,
            label: "text".to_owned(),
            lines: None,
            lang: "",
            body: Ok(text.clone()),
            notes: Vec::new(),
        }]),
    }
}

fn join(root: &Path, id: &str) -> PathBuf {
    if id.is_empty() {
        root.to_owned()
    } else {
        root.join(id)
    }
}

/// The files a collection matches, in byte order, without reading them (a [`Listed`] holds
/// the unit of one already skipped: sensitive, or the walk failed).
fn plan_collection(
    dir: &str,
    walk_options: &WalkOptions,
    max_files: Option<u64>,
    allow_sensitive: bool,
    options: &ExpandOptions<'_>,
    sandbox: &Sandbox,
) -> Vec<Listed> {
    // The collection's directory must itself lie inside the workspace: a directory that is
    // (or became) a symlink leading out is not walked, so no name from outside is listed.
    if !dir.is_empty() {
        match sandbox.resolve(dir) {
            Ok(resolved) if resolved.kind == EntryKind::Dir => {}
            Ok(_) => {
                let skip = Skip::Unreadable {
                    error: "not a directory".to_owned(),
                };
                return vec![Listed::skipped(dir, skip)];
            }
            Err(err) => return vec![Listed::skipped(dir, sandbox_skip(err))],
        }
    }
    let base = join(options.root, dir);
    let entries = match walk(&base, walk_options) {
        Ok(entries) => entries,
        Err(err) => {
            let skip = if base.exists() {
                Skip::Unreadable {
                    error: err.to_string(),
                }
            } else {
                Skip::Missing
            };
            return vec![Listed::skipped(dir, skip)];
        }
    };
    let mut ids: Vec<(String, Option<FileStamp>, Option<FileId>)> = entries
        .into_iter()
        .filter(|e| !e.is_dir)
        .map(|e| {
            let stamp = (e.mtime_ns != 0).then_some(FileStamp {
                size: e.size,
                mtime_ns: e.mtime_ns,
                inode: e.inode,
            });
            let file_id = e.file_id();
            let id = if dir.is_empty() {
                e.rel
            } else {
                format!("{dir}/{}", e.rel)
            };
            (id, stamp, file_id)
        })
        .collect();
    ids.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Matching every path against the sensitive patterns is the walk's largest cost after
    // the walk itself (a regex set per path): spread over the threads.
    let sensitive: Vec<Option<&str>> = ids
        .par_iter()
        .map(|(id, _, _)| options.sensitive.matches(id))
        .collect();
    let mut planned = Vec::with_capacity(ids.len());
    let mut kept = 0usize;
    let max = max_files.map_or(usize::MAX, |m| usize::try_from(m).unwrap_or(usize::MAX));
    for ((id, stamp, file_id), sensitive) in ids.into_iter().zip(sensitive) {
        match sensitive {
            Some(pattern) if !allow_sensitive => {
                let unit = skipped(
                    &id,
                    Skip::Sensitive {
                        pattern: pattern.to_owned(),
                    },
                );
                planned.push(Listed {
                    id,
                    skipped: Some(unit),
                    stamp: None,
                    file_id: None,
                });
            }
            _ if kept >= max => {}
            _ => {
                kept += 1;
                planned.push(Listed {
                    id,
                    skipped: None,
                    stamp,
                    file_id,
                });
            }
        }
    }
    planned
}

/// A file a collection lists: its id, the unit when it is already skipped, its stamp and
/// identity as listed.
struct Listed {
    id: String,
    skipped: Option<Unit>,
    stamp: Option<FileStamp>,
    file_id: Option<FileId>,
}

impl Listed {
    fn skipped(id: &str, skip: Skip) -> Self {
        Self {
            id: id.to_owned(),
            skipped: Some(skipped(id, skip)),
            stamp: None,
            file_id: None,
        }
    }
}

fn collection(
    dir: &str,
    walk_options: &WalkOptions,
    max_files: Option<u64>,
    allow_sensitive: bool,
    options: &ExpandOptions<'_>,
) -> Vec<PlannedUnit> {
    let sandbox = match open_sandbox(options) {
        Ok(sandbox) => sandbox,
        Err(skip) => return vec![PlannedUnit::ready(skipped(dir, skip))],
    };
    options.progress.phase("walk", None);
    let planned = plan_collection(
        dir,
        walk_options,
        max_files,
        allow_sensitive,
        options,
        &sandbox,
    );
    planned
        .into_iter()
        .map(|listed| {
            if let Some(unit) = listed.skipped {
                return PlannedUnit::ready(unit);
            }
            let mut unit = planned_file(&sandbox, &listed.id, None, options);
            if let Some(file) = &mut unit.file {
                file.listed = listed.stamp;
                file.listed_id = listed.file_id;
            }
            unit
        })
        .collect()
}

/// How many files a collection source matches right now, and how many of those it skips as
/// sensitive, without reading any file; `None` for sources that are not collections.
pub fn count_matches(spec: &SourceSpec, options: &ExpandOptions<'_>) -> Option<(usize, usize)> {
    let Ok(sandbox) = open_sandbox(options) else {
        return Some((0, 0));
    };
    let planned = match &spec.source {
        Source::MarkdownDir {
            path,
            recursive,
            max_files,
            exclude,
        } => plan_collection(
            path,
            &markdown_walk(*recursive, exclude),
            *max_files,
            spec.allow_sensitive,
            options,
            &sandbox,
        ),
        Source::Glob {
            base,
            pattern,
            max_files,
            exclude,
        } => plan_collection(
            base,
            &glob_walk(pattern, exclude),
            *max_files,
            spec.allow_sensitive,
            options,
            &sandbox,
        ),
        Source::Tree {
            path,
            include,
            exclude,
        } => plan_collection(
            path,
            &tree_walk(include, exclude),
            None,
            spec.allow_sensitive,
            options,
            &sandbox,
        ),
        Source::GitDiff { .. } => {
            let units = expand(spec, options);
            let sensitive = units
                .iter()
                .filter(|u| matches!(u.body, Err(Skip::Sensitive { .. })))
                .count();
            return Some((units.iter().filter(|u| u.body.is_ok()).count(), sensitive));
        }
        _ => return None,
    };
    let sensitive = planned
        .iter()
        .filter(|l| {
            l.skipped
                .as_ref()
                .is_some_and(|u| matches!(u.body, Err(Skip::Sensitive { .. })))
        })
        .count();
    Some((
        planned.iter().filter(|l| l.skipped.is_none()).count(),
        sensitive,
    ))
}

fn markdown_walk(recursive: bool, exclude: &[String]) -> WalkOptions {
    WalkOptions {
        max_depth: if recursive { None } else { Some(1) },
        globs: vec!["*.md".into(), "*.markdown".into(), "*.mdx".into()],
        excludes: exclude.to_vec(),
        ..WalkOptions::default()
    }
}

fn tree_walk(include: &[String], exclude: &[String]) -> WalkOptions {
    WalkOptions {
        hidden: include
            .iter()
            .any(|p| p.starts_with('.') || p.contains("/.")),
        globs: include.to_vec(),
        excludes: exclude.to_vec(),
        ..WalkOptions::default()
    }
}

fn glob_walk(pattern: &str, exclude: &[String]) -> WalkOptions {
    WalkOptions {
        hidden: pattern.starts_with('.') || pattern.contains("/."),
        globs: vec![pattern.to_owned()],
        excludes: exclude.to_vec(),
        ..WalkOptions::default()
    }
}

fn skipped(key: &str, skip: Skip) -> Unit {
    Unit {
        key: key.to_owned(),
        kind: UnitKind::File,
        label: key.to_owned(),
        lines: None,
        lang: language_of(key),
        body: Err(skip),
        notes: Vec::new(),
    }
}

fn planned_file(
    sandbox: &Arc<Sandbox>,
    id: &str,
    lines: Option<LineRange>,
    options: &ExpandOptions<'_>,
) -> PlannedUnit {
    let key = match lines {
        Some(range) => format!("{id}#{range}"),
        None => id.to_owned(),
    };
    PlannedUnit {
        unit: Unit {
            key,
            kind: UnitKind::File,
            label: id.to_owned(),
            lines,
            lang: language_of(id),
            body: Ok(String::new()),
            notes: Vec::new(),
        },
        file: Some(PlannedFile {
            sandbox: Arc::clone(sandbox),
            id: id.to_owned(),
            lines,
            max_bytes: options.max_file_bytes,
            listed: None,
            listed_id: None,
        }),
    }
}

/// Why the sandbox refused a path, as a skip.
fn sandbox_skip(err: SandboxError) -> Skip {
    match err {
        SandboxError::NotFound { .. } => Skip::Missing,
        other => Skip::Unreadable {
            error: other.to_string(),
        },
    }
}

/// Reads the file at workspace-relative `rel` through the sandbox, as text: size checked
/// before reading, NUL bytes mean binary, UTF-8 required.
pub fn read_text(sandbox: &Sandbox, rel: &str, max_bytes: u64) -> Result<String, Skip> {
    read_file_text(sandbox, rel, max_bytes, None).map(|(text, _)| text)
}

/// How much of a file's head is searched for a NUL byte, which marks it binary (as git).
const BINARY_PROBE: usize = 8192;

/// The first read of a file: files up to this size are read in one `read` (and one that
/// finds the end); a larger one is read in two, so a large binary file is known by its head
/// without the rest being read.
const FIRST_READ: usize = 64 * 1024;

/// `rel` opened for reading, a regular file within `max_bytes` (as its descriptor reports). A
/// file a walk listed (`listed`) is opened once and must still be the inode listed.
fn open_sized(
    sandbox: &Sandbox,
    rel: &str,
    max_bytes: u64,
    listed: Option<FileId>,
) -> Result<(std::fs::File, std::fs::Metadata), Skip> {
    let (file, meta) = if let Some(listed) = listed {
        sandbox.open_listed(rel, listed).map_err(sandbox_skip)?
    } else {
        let resolved = sandbox.resolve(rel).map_err(sandbox_skip)?;
        if resolved.kind != EntryKind::File {
            return Err(Skip::Unreadable {
                error: "not a regular file".into(),
            });
        }
        (resolved.file, resolved.meta)
    };
    if meta.len() > max_bytes {
        return Err(Skip::TooLarge {
            bytes: meta.len(),
            limit: max_bytes,
        });
    }
    Ok((file, meta))
}

/// `rel`'s bytes, to the size its open descriptor reports (see [`PlannedUnit::read_raw`]).
fn read_file_bytes(
    sandbox: &Sandbox,
    rel: &str,
    max_bytes: u64,
    listed: Option<FileId>,
) -> Result<Vec<u8>, Skip> {
    let (mut file, meta) = open_sized(sandbox, rel, max_bytes, listed)?;
    let size = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    read_up_to(&mut file, &mut bytes, size).map_err(|e| Skip::Unreadable {
        error: e.to_string(),
    })?;
    Ok(bytes)
}

/// [`read_text`], with the stamp of the file read.
fn read_file_text(
    sandbox: &Sandbox,
    rel: &str,
    max_bytes: u64,
    listed: Option<FileId>,
) -> Result<(String, Option<FileStamp>), Skip> {
    let (text, stamp) = read_file_text_stamped(sandbox, rel, max_bytes, listed);
    text.map(|text| (text, stamp))
}

/// [`read_file_text`], with the stamp also of a file its bytes leave out (binary, or not
/// UTF-8): `None` for other skips, or when the file grew while it was read.
fn read_file_text_stamped(
    sandbox: &Sandbox,
    rel: &str,
    max_bytes: u64,
    listed: Option<FileId>,
) -> (Result<String, Skip>, Option<FileStamp>) {
    let (file, meta) = match open_sized(sandbox, rel, max_bytes, listed) {
        Ok(opened) => opened,
        Err(skip) => return (Err(skip), None),
    };
    let unreadable = |e: std::io::Error| {
        Err(Skip::Unreadable {
            error: e.to_string(),
        })
    };
    // The size is at most `max_bytes`, which a caller keeps far below memory sizes.
    let size = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let mut bytes = Vec::new();
    let mut file = file.take(max_bytes + 1);
    // The head first: a binary file is known by it, and the rest of it is never read.
    if let Err(e) = read_up_to(&mut file, &mut bytes, size.min(FIRST_READ)) {
        return (unreadable(e), None);
    }
    if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) {
        // The head read is the one the descriptor's size promised (or the whole file).
        let whole_head = bytes.len() == size.min(FIRST_READ);
        return (
            Err(Skip::Binary),
            FileStamp::of(&meta).filter(|_| whole_head),
        );
    }
    let rest = size.saturating_sub(bytes.len());
    if rest > 0
        && let Err(e) = read_up_to(&mut file, &mut bytes, rest)
    {
        return (unreadable(e), None);
    }
    // Then the end (more, when the file grew since its `fstat`).
    if let Err(e) = file.read_to_end(&mut bytes) {
        return (unreadable(e), None);
    }
    if bytes.len() as u64 > max_bytes {
        let skip = Skip::TooLarge {
            bytes: bytes.len() as u64,
            limit: max_bytes,
        };
        return (Err(skip), None);
    }
    // The stamp only vouches for these bytes if the file was not growing while read.
    let stamp = FileStamp::of(&meta).filter(|s| s.size == bytes.len() as u64);
    let text = String::from_utf8(bytes).map_err(|e| Skip::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    });
    (text, stamp)
}

/// Lines `range.start..=range.end` (1-based) with their line endings; the end is clamped.
/// The lines are cut from the file's secrets found over all of it
/// (`ctx_core::fragments::redact_window_of`), so a range inside a key (its `BEGIN` line
/// above the range) shows none of it.
fn slice_lines(text: &str, range: LineRange) -> Result<String, Skip> {
    let mut window: Option<(usize, usize)> = None;
    let mut offset = 0usize;
    let mut count = 0u64;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index as u64 + 1;
        count = number;
        if number > range.end {
            break;
        }
        if number >= range.start {
            let start = window.map_or(offset, |(start, _)| start);
            window = Some((start, offset + line.len()));
        }
        offset += line.len();
    }
    if range.start > count {
        return Err(Skip::RangePastEnd { lines: count });
    }
    let (start, end) = window.unwrap_or((0, 0));
    Ok(
        match ctx_core::fragments::redact_window_of(text, start..end) {
            Some((redacted, _)) => redacted,
            None => text[start..end].to_owned(),
        },
    )
}

fn command_unit(command: &str, dir: &Path, options: &ExpandOptions<'_>) -> Unit {
    let mut notes = Vec::new();
    let body = match run_command(
        command,
        dir,
        options.command_timeout,
        options.max_file_bytes,
    ) {
        Ok(run) => {
            let mut text = format!("$ {command}\n");
            text.push_str(&run.stdout);
            if !run.stdout.is_empty() && !run.stdout.ends_with('\n') {
                text.push('\n');
            }
            if !run.stderr.is_empty() {
                text.push_str("[stderr]\n");
                text.push_str(&run.stderr);
                if !run.stderr.ends_with('\n') {
                    text.push('\n');
                }
            }
            if run.truncated {
                notes.push(format!(
                    "output truncated at {} bytes",
                    options.max_file_bytes
                ));
                text.push_str("[output truncated]\n");
            }
            match run.exit_code {
                _ if run.timed_out => {
                    let secs = options.command_timeout.as_secs_f64();
                    notes.push(format!("timed out after {secs}s and was killed"));
                    let _ = writeln!(text, "[timed out after {secs}s; killed]");
                }
                Some(0) => text.push_str("[exit code: 0]\n"),
                Some(code) => {
                    notes.push(format!("exited with code {code}"));
                    let _ = writeln!(text, "[exit code: {code}]");
                }
                None => {
                    notes.push("killed by a signal".to_owned());
                    text.push_str("[killed by a signal]\n");
                }
            }
            Ok(text)
        }
        Err(error) => Err(Skip::Unreadable { error }),
    };
    Unit {
        key: format!("cmd:{command}"),
        kind: UnitKind::Command,
        label: format!("$ {command}"),
        lines: None,
        lang: "console",
        body,
        notes,
    }
}

struct CommandRun {
    stdout: String,
    stderr: String,
    exit_code: Option<i32>,
    timed_out: bool,
    truncated: bool,
}

fn run_command(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    limit: u64,
) -> Result<CommandRun, String> {
    let mut builder = Command::new("sh");
    builder.arg("-c").arg(command).current_dir(cwd);
    // Its own process group, so a timeout kills the whole pipeline, not just the shell.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut builder, 0);
    let mut child = builder
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `sh -c {command}`: {e}"))?;
    let capture = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(limit + 1).read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = capture(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = capture(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= timeout => {
                timed_out = true;
                kill_tree(&mut child);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for `{command}`: {e}")),
        }
    };
    let (mut stdout, mut stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let limit_usize = usize::try_from(limit).unwrap_or(usize::MAX);
    let truncated = stdout.len() > limit_usize || stderr.len() > limit_usize;
    stdout.truncate(limit_usize);
    stderr.truncate(limit_usize);
    Ok(CommandRun {
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        truncated,
    })
}

fn kill_tree(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
}

/// A Markdown fence language for a path, from its extension.
pub fn language_of(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "jsx",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "go" => "go",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        "rb" => "ruby",
        "sh" | "bash" => "bash",
        "md" | "markdown" | "mdx" => "markdown",
        "json" => "json",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "html" | "htm" => "html",
        "css" => "css",
        "sql" => "sql",
        "kt" | "kts" => "kotlin",
        "swift" => "swift",
        "cs" => "csharp",
        "php" => "php",
        "xml" => "xml",
        "diff" | "patch" => "diff",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_slices_are_inclusive_and_clamped() {
        let text = "a\nb\nc\nd";
        assert_eq!(
            slice_lines(text, LineRange { start: 2, end: 3 }),
            Ok("b\nc\n".into())
        );
        assert_eq!(
            slice_lines(text, LineRange { start: 3, end: 99 }),
            Ok("c\nd".into())
        );
        assert_eq!(
            slice_lines(text, LineRange { start: 5, end: 9 }),
            Err(Skip::RangePastEnd { lines: 4 })
        );
    }

    #[test]
    fn files_are_classified_before_or_while_reading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("ok.txt"), "hello\n").expect("w");
        std::fs::write(p("bin"), b"a\0b").expect("w");
        std::fs::write(p("latin1"), b"caf\xe9").expect("w");
        std::fs::write(p("big"), vec![b'x'; 100]).expect("w");
        let ws = Sandbox::open(dir.path()).expect("ws");
        assert_eq!(read_text(&ws, "ok.txt", 50), Ok("hello\n".into()));
        assert_eq!(read_text(&ws, "bin", 50), Err(Skip::Binary));
        assert_eq!(
            read_text(&ws, "latin1", 50),
            Err(Skip::NotUtf8 { offset: 3 })
        );
        assert_eq!(
            read_text(&ws, "big", 50),
            Err(Skip::TooLarge {
                bytes: 100,
                limit: 50
            })
        );
        assert_eq!(read_text(&ws, "gone", 50), Err(Skip::Missing));
    }

    #[test]
    fn reads_never_leave_the_workspace() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("ws");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("docs")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("passwd"), "root:x:0:0\n").expect("w");
        std::fs::write(outside.join("notes.md"), "# outside\n").expect("w");
        std::os::unix::fs::symlink(outside.join("passwd"), root.join("pw")).expect("link");
        std::os::unix::fs::symlink(&outside, root.join("away")).expect("link");
        std::fs::hard_link(outside.join("passwd"), root.join("docs/hard.md")).expect("link");
        std::fs::write(root.join("docs/ok.md"), "# ok\n").expect("w");
        let ws = Sandbox::open(&root).expect("ws");
        for rel in ["pw", "away/passwd", "docs/hard.md"] {
            let skip = read_text(&ws, rel, 1000).expect_err(rel);
            assert_eq!(skip.code(), "unreadable", "{rel}: {skip}");
        }
        let sensitive = SensitivePaths::builtin();
        let options = ExpandOptions {
            progress: &ctx_core::NoProgress,
            root: &root,
            max_file_bytes: 1000,
            sensitive,
            command_timeout: Duration::from_secs(1),
        };
        let spec = |source| SourceSpec {
            source,
            allow_sensitive: false,
        };
        let units = expand(
            &spec(Source::MarkdownDir {
                path: "away".into(),
                recursive: true,
                max_files: None,
                exclude: Vec::new(),
            }),
            &options,
        );
        assert_eq!(
            units.len(),
            1,
            "an outside directory is not listed: {units:?}"
        );
        assert!(units[0].body.is_err());
        let units = expand(
            &spec(Source::MarkdownDir {
                path: "docs".into(),
                recursive: true,
                max_files: None,
                exclude: Vec::new(),
            }),
            &options,
        );
        let bodies: Vec<(&str, bool)> = units
            .iter()
            .map(|u| (u.key.as_str(), u.body.is_ok()))
            .collect();
        assert_eq!(bodies, [("docs/hard.md", false), ("docs/ok.md", true)]);
        let units = expand(
            &spec(Source::File {
                path: "pw".into(),
                lines: None,
            }),
            &options,
        );
        assert!(units[0].body.is_err(), "{:?}", units[0].body);
    }

    #[test]
    fn a_listed_file_replaced_before_it_is_read_is_not_read() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("ws");
        std::fs::create_dir_all(root.join("docs")).expect("mkdir");
        std::fs::write(root.join("docs/a.md"), "# listed\n").expect("w");
        std::fs::write(root.join("docs/b.md"), "# kept\n").expect("w");
        let options = ExpandOptions {
            progress: &ctx_core::NoProgress,
            root: &root,
            max_file_bytes: 1000,
            sensitive: SensitivePaths::builtin(),
            command_timeout: Duration::from_secs(1),
        };
        let spec = SourceSpec {
            source: Source::MarkdownDir {
                path: "docs".into(),
                recursive: true,
                max_files: None,
                exclude: Vec::new(),
            },
            allow_sensitive: false,
        };
        let planned = plan(&spec, &options);
        assert_eq!(planned.len(), 2);
        // Another inode at the listed path (an editor's save by rename).
        std::fs::write(root.join("docs/new"), "# swapped in\n").expect("w");
        std::fs::rename(root.join("docs/new"), root.join("docs/a.md")).expect("mv");
        let read: Vec<Result<String, Skip>> = planned
            .iter()
            .map(|p| p.read_stamped().expect("a file").0)
            .collect();
        let skip = read[0].clone().expect_err("replaced since listed");
        assert_eq!(skip.code(), "unreadable", "{skip}");
        assert!(skip.to_string().contains("changed"), "{skip}");
        assert_eq!(read[1], Ok("# kept\n".to_owned()));
        assert!(planned[0].read().expect("a file").is_err());
    }
}
