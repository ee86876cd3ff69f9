//! Directory mode: entries (path, kind, size, mtime) breadth-first to a depth, honouring
//! ignore rules.
//!
//! The listing comes from the shared [walker](crate::walk) (every gitignore rule, default
//! ignores for dependency and build directories; hidden files are shown, `.git` is not).
//! Because the walker works by path, every entry it returns is then checked again through
//! the descriptor of the directory being listed (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`, or component by component without following symlinks): an entry
//! reached through a directory swapped for a symlink while the walk ran is dropped, so a
//! listing never shows anything outside the workspace. Sizes and times come from that check.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use serde::Serialize;

use super::FsReadError;
use crate::sandbox::{Resolver, Sandbox};
use crate::walk::{WalkOptions, walk_with_errors};

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    /// Path relative to the workspace root, `/`-separated.
    pub path: String,
    /// `"file"` or `"dir"`.
    pub kind: &'static str,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Last modification, seconds since the Unix epoch (UTC).
    pub mtime: i64,
}

/// What a Directory operation returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirectoryResult {
    /// The directory listed, relative to the workspace root (`.` for the root).
    pub path: String,
    /// Entries breadth-first: all of depth 0 (the directory's children), then depth 1, …;
    /// each level sorted by the byte order of the path.
    pub entries: Vec<DirEntry>,
    /// Entries in the whole listing (before any offset or truncation).
    pub total_entries: usize,
    /// Whether the response cap cut the listing short.
    pub truncated: bool,
    /// When truncated: the `offset` to ask for next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// Index of the first entry returned within the whole listing.
    #[serde(skip)]
    pub(crate) offset: usize,
}

/// Bytes an entry counts against the response cap (its text line).
pub(crate) fn entry_size(entry: &DirEntry) -> usize {
    entry.path.len() + 40
}

impl DirectoryResult {
    /// Bytes this result counts against the response cap.
    pub(crate) fn size(&self) -> usize {
        self.entries.iter().map(entry_size).sum()
    }

    /// Keeps the entries that fit in `budget` bytes (at least one with `allow_partial`).
    pub(crate) fn truncate_to(&mut self, budget: usize, allow_partial: bool) {
        let mut used = 0;
        let mut keep = 0;
        for entry in &self.entries {
            let size = entry_size(entry);
            if used + size > budget && !(allow_partial && keep == 0) {
                break;
            }
            used += size;
            keep += 1;
        }
        if keep < self.entries.len() {
            self.entries.truncate(keep);
            self.truncated = true;
            self.next_offset = Some(self.offset + keep);
        }
    }
}

/// Lists the directory open as `dir` (workspace-relative `rel`) to `depth` levels below its
/// children, skipping the first `offset` entries.
pub(crate) fn list(
    workspace: &Sandbox,
    dir: &File,
    rel: &str,
    depth: u32,
    offset: usize,
    walk: &WalkOptions,
) -> Result<DirectoryResult, FsReadError> {
    let walk_root = real_path(workspace, dir).unwrap_or_else(|| {
        if rel == "." {
            workspace.root().to_owned()
        } else {
            workspace.root().join(rel)
        }
    });
    let options = WalkOptions {
        hidden: true,
        max_depth: Some(
            usize::try_from(depth)
                .unwrap_or(usize::MAX)
                .saturating_add(1),
        ),
        include_dirs: true,
        ..walk.clone()
    };
    let outcome = walk_with_errors(&walk_root, &options).map_err(|err| FsReadError::Io {
        path: rel.to_owned(),
        source: std::io::Error::other(err.to_string()),
    })?;
    let resolver = workspace.options().resolver;
    let allow_hard_links = workspace.options().allow_hard_links;
    let mut entries: Vec<(usize, DirEntry)> = outcome
        .entries
        .iter()
        .filter_map(|found| {
            let meta = stat_beneath(dir.as_fd(), &found.rel, resolver)?;
            let is_dir = meta.is_dir();
            if !(is_dir || meta.is_file()) || is_dir != found.is_dir {
                return None;
            }
            // A hard-linked file may be an outside file's inode: reads refuse it, so the
            // listing does not show it (nor its size) either.
            if !is_dir && meta.nlink() > 1 && !allow_hard_links {
                return None;
            }
            let path = if rel == "." {
                found.rel.clone()
            } else {
                format!("{rel}/{}", found.rel)
            };
            let level = found.rel.matches('/').count();
            Some((
                level,
                DirEntry {
                    path,
                    kind: if is_dir { "dir" } else { "file" },
                    size: if is_dir { 0 } else { meta.len() },
                    mtime: meta.mtime(),
                },
            ))
        })
        .collect();
    entries.sort_by(|(la, a), (lb, b)| {
        la.cmp(lb)
            .then_with(|| a.path.as_bytes().cmp(b.path.as_bytes()))
    });
    let total_entries = entries.len();
    Ok(DirectoryResult {
        path: rel.to_owned(),
        entries: entries.into_iter().skip(offset).map(|(_, e)| e).collect(),
        total_entries,
        truncated: false,
        next_offset: None,
        offset,
    })
}

/// The path of the open directory `dir` as the kernel knows it (symlinks on the way
/// resolved), when `/proc` tells and it lies inside the workspace.
pub(crate) fn real_path(workspace: &Sandbox, dir: &File) -> Option<std::path::PathBuf> {
    let path = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).ok()?;
    path.starts_with(workspace.root()).then_some(path)
}

/// Metadata of `rel` under `dir` without following any symlink on the way or at the end;
/// `None` when it is not there (any more) or cannot be reached that way.
fn stat_beneath(dir: BorrowedFd<'_>, rel: &str, resolver: Resolver) -> Option<std::fs::Metadata> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let via_openat2 = resolver != Resolver::Components;
    if via_openat2 {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
            Ok(fd) => return File::from(fd).metadata().ok(),
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM)
                if resolver == Resolver::Auto => {}
            Err(_) => return None,
        }
    }
    let mut current: Option<File> = None;
    let mut parts = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .peekable();
    while let Some(part) = parts.next() {
        if part == ".." {
            return None;
        }
        let parent = current.as_ref().map_or(dir, AsFd::as_fd);
        let next = rustix::fs::openat(parent, part, flags, Mode::empty()).ok()?;
        let file = File::from(next);
        let meta = file.metadata().ok()?;
        if meta.file_type().is_symlink() {
            return None;
        }
        if parts.peek().is_none() {
            return Some(meta);
        }
        if !meta.is_dir() {
            return None;
        }
        current = Some(file);
    }
    None
}
