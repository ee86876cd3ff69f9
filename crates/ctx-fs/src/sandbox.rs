//! The workspace sandbox: every path a request names is resolved inside one root directory.
//!
//! A [`Sandbox`] holds an open file descriptor of its root. A request's path is first checked
//! lexically (NUL bytes, `..` that climbs above the root, absolute paths elsewhere are refused
//! with a clear error), then resolved by the kernel relative to the root descriptor:
//!
//! - on Linux 5.6+ with `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so a
//!   symlink (in any component, including one swapped in while the request runs) that points
//!   outside the root makes the open fail instead of escaping;
//! - elsewhere (older kernels, seccomp filters that hide `openat2`), component by component
//!   with `openat(…, O_NOFOLLOW)`, reading each symlink and resolving its target against a
//!   stack of directory descriptors, so nothing is ever followed by the kernel.
//!
//! Either way a path a request names is opened twice: first as `O_PATH` (which never touches
//! the file's contents, so a FIFO cannot block and a device driver is never called), then,
//! only for regular files and directories, for reading, checking that the second open found
//! the same inode. FIFOs, sockets and device files are refused; so are regular files with more
//! than one hard link (a hard link can share its contents with a file outside the root) unless
//! [`SandboxOptions::allow_hard_links`] is set.
//!
//! A file a walk listed is opened once ([`Sandbox::open_listed`]): the walk's own stat of
//! it (a regular file, with its device and inode) stands for the probe. With `openat2` the
//! file is opened for reading (`O_NONBLOCK | O_NOCTTY`, the same resolve flags) and its
//! descriptor checked as above: the same device and inode as listed, a regular file, the
//! hard-link rule; anything else is refused with the same errors. This is as safe as the
//! probe: the walk never lists a FIFO or a device, so neither design opens one that was there
//! when it was listed; one swapped in after the check is opened by either design (the probe
//! and the open are two system calls with the same window between them), never blocks (a
//! FIFO opened `O_NONBLOCK` for reading returns at once), and is refused by the inode check
//! before a byte is read. The component-by-component resolver keeps its `O_PATH` probe.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::SandboxError;

/// Most symlinks followed while resolving one path (Linux's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// How paths are resolved under the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resolver {
    /// `openat2` with `RESOLVE_BENEATH` where the kernel has it, else [`Resolver::Components`].
    #[default]
    Auto,
    /// Always `openat2` (fails with an I/O error where the kernel lacks it).
    Openat2,
    /// Component by component with `openat(O_NOFOLLOW)`; works on every Unix kernel.
    Components,
}

/// Policy switches of a [`Sandbox`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxOptions {
    /// How paths are resolved.
    pub resolver: Resolver,
    /// Allow regular files with more than one hard link. Default: refused, since a hard link
    /// may share its contents with a file outside the root.
    pub allow_hard_links: bool,
}

/// What a resolved path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

impl EntryKind {
    /// `"file"` or `"dir"`, as in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Dir => "dir",
        }
    }
}

/// A file's identity: the device it is on and its inode, as a listing saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    /// The device (`st_dev`).
    pub dev: u64,
    /// The inode number (`st_ino`).
    pub ino: u64,
}

impl FileId {
    /// The identity in `meta`.
    pub fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// A path resolved inside a workspace and opened for reading.
#[derive(Debug)]
pub struct Resolved {
    /// Sandbox-relative path, `/`-separated, without `.` or `..`; `"."` for the root.
    pub rel: String,
    /// File or directory.
    pub kind: EntryKind,
    /// The open file (or directory), read-only.
    pub file: File,
    /// Its metadata, taken from the open descriptor.
    pub meta: Metadata,
}

/// A directory every request path is confined to.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
    root_fd: OwnedFd,
    root_id: (u64, u64),
    options: SandboxOptions,
}

/// Whether `openat2` works here: 0 unknown, 1 yes, 2 no.
static OPENAT2_STATE: AtomicU8 = AtomicU8::new(0);

impl Sandbox {
    /// Opens `root` (which must be a directory) as a workspace with default options.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, SandboxError> {
        Self::with_options(root, SandboxOptions::default())
    }

    /// Opens `root` as a workspace with the given options.
    pub fn with_options(
        root: impl AsRef<Path>,
        options: SandboxOptions,
    ) -> Result<Self, SandboxError> {
        let given = root.as_ref();
        let root_err = |source: std::io::Error| SandboxError::Root {
            path: given.to_owned(),
            source,
        };
        let root = given.canonicalize().map_err(root_err)?;
        let root_fd = rustix::fs::open(
            &root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| root_err(errno.into()))?;
        let stat = rustix::fs::fstat(&root_fd).map_err(|errno| root_err(errno.into()))?;
        // Field widths differ between targets; both fit in u64.
        #[allow(clippy::useless_conversion)]
        let identity = (u64::from(stat.st_dev), u64::from(stat.st_ino));
        Ok(Self {
            root,
            root_fd,
            root_id: identity,
            options,
        })
    }

    /// The root, canonical (symlinks resolved, absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root directory's (device, inode), to tell whether a path still names it.
    pub fn root_id(&self) -> (u64, u64) {
        self.root_id
    }

    /// The root's open descriptor.
    pub fn root_fd(&self) -> BorrowedFd<'_> {
        self.root_fd.as_fd()
    }

    /// The options this workspace was opened with.
    pub fn options(&self) -> SandboxOptions {
        self.options
    }

    /// Checks `path` lexically and returns it relative to the root, normalized (`"."` for the
    /// root itself). Absolute paths are accepted when they lie under the root.
    pub fn relative_path(&self, path: &str) -> Result<String, SandboxError> {
        normalize(&self.root, path)
    }

    /// Resolves `path` inside the workspace and opens it for reading.
    pub fn resolve(&self, path: &str) -> Result<Resolved, SandboxError> {
        let rel = self.relative_path(path)?;
        self.open_rel(&rel, path)
    }

    /// Opens a regular file a walk listed as `listed`, at `path` (checked lexically like
    /// [`Self::resolve`]'s), with one open instead of a probe and an open (see the module
    /// docs): refused with [`SandboxError::Changed`] when the file there now is another inode,
    /// and like [`Self::resolve`] for links out, hard links and special files.
    pub fn open_listed(
        &self,
        path: &str,
        listed: FileId,
    ) -> Result<(File, Metadata), SandboxError> {
        let rel = self.relative_path(path)?;
        open_listed_beneath(self.root_fd.as_fd(), &rel, path, listed, self.options)
    }

    /// Opens a file a walk listed as a regular file by its directory entry alone (a walk that
    /// took no `stat`), at `path` (checked lexically like [`Self::resolve`]'s): one open, then
    /// the descriptor must be a regular file, and the hard-link rule holds. As safe as
    /// [`Self::open_listed`] for what the module docs weigh: the walk lists no FIFO or device,
    /// one swapped in since is opened without blocking and refused before a byte is read.
    /// What it does not check is that the file is the very inode listed.
    pub fn open_listed_file(&self, path: &str) -> Result<(File, Metadata), SandboxError> {
        let rel = self.relative_path(path)?;
        open_listed_file_beneath(self.root_fd.as_fd(), &rel, path, self.options)
    }

    /// Resolves an already-normalized relative path (`"."` for the root); `shown` is the path
    /// as the request named it, for error messages.
    fn open_rel(&self, rel: &str, shown: &str) -> Result<Resolved, SandboxError> {
        let (file, meta) = open_beneath(self.root_fd.as_fd(), rel, shown, self.options)?;
        let kind = if meta.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        };
        Ok(Resolved {
            rel: rel.to_owned(),
            kind,
            file,
            meta,
        })
    }
}

/// Resolves `rel` beneath the directory `dir` and opens it for reading (see the module docs).
/// `rel` must already be normalized (no `..`, no leading `/`); `"."` names `dir` itself.
pub fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &str,
    shown: &str,
    options: SandboxOptions,
) -> Result<(File, Metadata), SandboxError> {
    let use_openat2 = uses_openat2(dir, options);
    if use_openat2 {
        open_with_openat2(dir, rel, shown, options)
    } else {
        open_by_components(dir, rel, shown, options)
    }
}

/// Refuses anything but regular files and directories, and shared hard links.
fn check_kind(meta: &Metadata, shown: &str, options: SandboxOptions) -> Result<(), SandboxError> {
    let file_type = meta.file_type();
    if file_type.is_dir() {
        return Ok(());
    }
    if file_type.is_file() {
        if meta.nlink() > 1 && !options.allow_hard_links {
            return Err(SandboxError::HardLink {
                path: shown.to_owned(),
                links: meta.nlink(),
            });
        }
        return Ok(());
    }
    Err(SandboxError::SpecialFile {
        path: shown.to_owned(),
        kind: special_kind(file_type),
    })
}

/// What a file that is neither a regular file nor a directory is, as errors name it.
pub(crate) fn special_kind(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device file"
    } else {
        "not a regular file"
    }
}

/// Whether `options` resolve with `openat2` beneath `dir` (under [`Resolver::Auto`], when the
/// kernel has it).
fn uses_openat2(dir: BorrowedFd<'_>, options: SandboxOptions) -> bool {
    match options.resolver {
        Resolver::Openat2 => true,
        Resolver::Components => false,
        Resolver::Auto => openat2_available(dir),
    }
}

fn openat2_available(dir: BorrowedFd<'_>) -> bool {
    match OPENAT2_STATE.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let works = !matches!(
                rustix::fs::openat2(
                    dir,
                    ".",
                    OFlags::PATH | OFlags::CLOEXEC,
                    Mode::empty(),
                    ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
                ),
                Err(Errno::NOSYS | Errno::PERM | Errno::INVAL)
            );
            OPENAT2_STATE.store(if works { 1 } else { 2 }, Ordering::Relaxed);
            works
        }
    }
}

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// Flags of every open for reading: never blocks on a FIFO, never takes a terminal.
const READ_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK).union(OFlags::NOCTTY);

/// `openat2` of `rel` beneath `dir` with the sandbox's resolve flags.
fn openat2_beneath(dir: BorrowedFd<'_>, rel: &str, flags: OFlags) -> Result<OwnedFd, Errno> {
    // The kernel answers EAGAIN when a concurrent rename might have let `..` escape; trying
    // again is the documented remedy.
    for _ in 0..8 {
        match rustix::fs::openat2(dir, rel, flags | OFlags::CLOEXEC, Mode::empty(), RESOLVE) {
            Err(Errno::AGAIN) => {}
            other => return other,
        }
    }
    Err(Errno::AGAIN)
}

fn open_with_openat2(
    dir: BorrowedFd<'_>,
    rel: &str,
    shown: &str,
    options: SandboxOptions,
) -> Result<(File, Metadata), SandboxError> {
    let probe = openat2_beneath(dir, rel, OFlags::PATH).map_err(|errno| map_errno(errno, shown))?;
    let probe_meta = File::from(probe)
        .metadata()
        .map_err(|source| io_error(shown, source))?;
    check_kind(&probe_meta, shown, options)?;
    let fd = openat2_beneath(dir, rel, READ_FLAGS).map_err(|errno| map_errno(errno, shown))?;
    finish_open(fd, FileId::of(&probe_meta), shown, options)
}

/// Checks that the readable descriptor is the inode the probe (or the listing) found, and
/// that it may be read.
fn finish_open(
    fd: OwnedFd,
    expected: FileId,
    shown: &str,
    options: SandboxOptions,
) -> Result<(File, Metadata), SandboxError> {
    let file = File::from(fd);
    let meta = file.metadata().map_err(|source| io_error(shown, source))?;
    if FileId::of(&meta) != expected {
        return Err(SandboxError::Changed {
            path: shown.to_owned(),
        });
    }
    check_kind(&meta, shown, options)?;
    Ok((file, meta))
}

/// Opens the regular file a walk listed as `listed` at `rel` beneath `dir` (see the module
/// docs and [`Sandbox::open_listed`]). `rel` must already be normalized.
pub fn open_listed_beneath(
    dir: BorrowedFd<'_>,
    rel: &str,
    shown: &str,
    listed: FileId,
    options: SandboxOptions,
) -> Result<(File, Metadata), SandboxError> {
    let use_openat2 = uses_openat2(dir, options);
    let (file, meta) = if use_openat2 {
        let fd = openat2_beneath(dir, rel, READ_FLAGS).map_err(|errno| map_errno(errno, shown))?;
        finish_open(fd, listed, shown, options)?
    } else {
        let (file, meta) = open_by_components(dir, rel, shown, options)?;
        if FileId::of(&meta) != listed {
            return Err(SandboxError::Changed {
                path: shown.to_owned(),
            });
        }
        (file, meta)
    };
    // The listing was a regular file, and the inode is the same, so this holds; kept so that
    // a caller's wrong `listed` cannot hand out a directory.
    only_a_file(file, meta, shown)
}

/// Opens the file a walk listed as a regular file (by its type, without a `stat`) at `rel`
/// beneath `dir` (see [`Sandbox::open_listed_file`]). `rel` must already be normalized.
pub fn open_listed_file_beneath(
    dir: BorrowedFd<'_>,
    rel: &str,
    shown: &str,
    options: SandboxOptions,
) -> Result<(File, Metadata), SandboxError> {
    let (file, meta) = if uses_openat2(dir, options) {
        let fd = openat2_beneath(dir, rel, READ_FLAGS).map_err(|errno| map_errno(errno, shown))?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|source| io_error(shown, source))?;
        check_kind(&meta, shown, options)?;
        (file, meta)
    } else {
        open_by_components(dir, rel, shown, options)?
    };
    only_a_file(file, meta, shown)
}

/// `file` if it is a regular file (a directory or a special file is refused).
fn only_a_file(file: File, meta: Metadata, shown: &str) -> Result<(File, Metadata), SandboxError> {
    if !meta.is_file() {
        return Err(SandboxError::SpecialFile {
            path: shown.to_owned(),
            kind: if meta.is_dir() {
                "a directory"
            } else {
                special_kind(meta.file_type())
            },
        });
    }
    Ok((file, meta))
}

/// Resolution without `openat2`: one component at a time, never letting the kernel follow
/// a symlink.
fn open_by_components(
    dir: BorrowedFd<'_>,
    rel: &str,
    shown: &str,
    options: SandboxOptions,
) -> Result<(File, Metadata), SandboxError> {
    // Directories entered so far; empty means "at the root" (`dir`).
    let mut stack: Vec<OwnedFd> = Vec::new();
    let mut pending: Vec<Vec<u8>> = components(rel.as_bytes());
    pending.reverse();
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        if part == b".." {
            if stack.pop().is_none() {
                return Err(SandboxError::SymlinkEscapes {
                    path: shown.to_owned(),
                });
            }
            continue;
        }
        let parent = stack.last().map_or(dir, AsFd::as_fd);
        let name = OsStr::from_bytes(&part);
        let fd = rustix::fs::openat(
            parent,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| map_errno(errno, shown))?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|source| io_error(shown, source))?;
        if meta.file_type().is_symlink() {
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(map_errno(Errno::LOOP, shown));
            }
            let target = rustix::fs::readlinkat(parent, name, Vec::new())
                .map_err(|errno| map_errno(errno, shown))?;
            let target = target.as_bytes();
            if target.first() == Some(&b'/') {
                return Err(SandboxError::SymlinkEscapes {
                    path: shown.to_owned(),
                });
            }
            let mut parts = components(target);
            parts.reverse();
            pending.extend(parts);
            continue;
        }
        if pending.is_empty() {
            check_kind(&meta, shown, options)?;
            let fd = rustix::fs::openat(
                parent,
                name,
                READ_FLAGS | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|errno| match errno {
                // Swapped for a symlink after the probe.
                Errno::LOOP => SandboxError::Changed {
                    path: shown.to_owned(),
                },
                other => map_errno(other, shown),
            })?;
            return finish_open(fd, FileId::of(&meta), shown, options);
        }
        if !meta.is_dir() {
            return Err(map_errno(Errno::NOTDIR, shown));
        }
        stack.push(OwnedFd::from(file));
    }
    // The path ended on the root, on `..` or on a symlink to a directory: open where we are.
    let here = stack.last().map_or(dir, AsFd::as_fd);
    let fd = rustix::fs::openat(
        here,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| map_errno(errno, shown))?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(|source| io_error(shown, source))?;
    Ok((file, meta))
}

/// Splits a path into its non-empty, non-`.` components (keeping `..`).
fn components(path: &[u8]) -> Vec<Vec<u8>> {
    path.split(|&b| b == b'/')
        .filter(|part| !part.is_empty() && *part != b".")
        .map(<[u8]>::to_vec)
        .collect()
}

fn io_error(shown: &str, source: std::io::Error) -> SandboxError {
    SandboxError::Io {
        path: shown.to_owned(),
        source,
    }
}

/// Turns an errno from resolution into the error the user sees.
fn map_errno(errno: Errno, shown: &str) -> SandboxError {
    let path = shown.to_owned();
    match errno {
        Errno::NOENT => SandboxError::NotFound { path },
        Errno::NOTDIR => SandboxError::NotADirectoryOnTheWay { path },
        Errno::XDEV => SandboxError::SymlinkEscapes { path },
        Errno::LOOP => SandboxError::SymlinkLoop { path },
        Errno::NAMETOOLONG => SandboxError::TooLong { path },
        Errno::ACCESS | Errno::PERM => SandboxError::PermissionDenied { path },
        other => SandboxError::Io {
            path,
            source: other.into(),
        },
    }
}

/// Whether `path` is relative and made of plain names only (none empty, `.` or `..`): then
/// it is its own normal form, `/`-separated, as [`normalize`] would give it.
pub(crate) fn is_plain_relative(path: &str) -> bool {
    // One pass over the bytes (a walk asks this of every path it lists, more than once).
    let bytes = path.as_bytes();
    let mut start = 0;
    for end in 0..=bytes.len() {
        if end == bytes.len() || bytes[end] == b'/' {
            if matches!(&bytes[start..end], b"" | b"." | b"..") {
                return false;
            }
            start = end + 1;
        }
    }
    true
}

/// Checks `path` lexically and returns it relative to `root` (see
/// [`Sandbox::relative_path`]).
fn normalize(root: &Path, path: &str) -> Result<String, SandboxError> {
    if path.contains('\0') {
        return Err(SandboxError::Nul {
            path: path.replace('\0', "\\0"),
        });
    }
    if path.is_empty() {
        return Err(SandboxError::Empty);
    }
    // Already normal (as every path a walk lists is): itself.
    if is_plain_relative(path) {
        return Ok(path.to_owned());
    }
    let as_path = Path::new(path);
    let inside = if as_path.is_absolute() {
        match strip_root(root, as_path) {
            Some(rest) => rest,
            None => {
                return Err(SandboxError::AbsoluteOutside {
                    path: path.to_owned(),
                    root: root.to_owned(),
                });
            }
        }
    } else {
        as_path.to_owned()
    };
    let mut parts: Vec<&OsStr> = Vec::new();
    for component in inside.components() {
        match component {
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(SandboxError::DotDotEscapes {
                        path: path.to_owned(),
                    });
                }
            }
            Component::Normal(name) => parts.push(name),
        }
    }
    if parts.is_empty() {
        return Ok(".".to_owned());
    }
    let mut rel = String::with_capacity(path.len());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            rel.push('/');
        }
        // The input was a &str, so every component is valid UTF-8.
        rel.push_str(&part.to_string_lossy());
    }
    Ok(rel)
}

/// `path` with the root stripped, when it lies under the root (checked lexically, with `..`
/// applied, so `/root/../etc` is not under `/root`).
fn strip_root(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut stack: Vec<&OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                stack.pop();
            }
            Component::Normal(name) => stack.push(name),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    let lexical: PathBuf = std::iter::once(OsStr::new("/")).chain(stack).collect();
    lexical.strip_prefix(root).ok().map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_keeps_paths_inside_and_refuses_climbing() {
        let root = Path::new("/ws/root");
        let ok = |p: &str| normalize(root, p).expect(p);
        assert_eq!(ok("a"), "a");
        assert_eq!(ok("a/b.c/.d/..e"), "a/b.c/.d/..e");
        assert_eq!(ok("a/./b"), "a/b");
        assert_eq!(ok("a/b/"), "a/b");
        assert_eq!(ok("./a"), "a");
        for (path, plain) in [
            ("a", true),
            ("a/b", true),
            (".a/..b/c.", true),
            ("", false),
            ("/a", false),
            ("a/", false),
            ("a//b", false),
            ("./a", false),
            ("a/.", false),
            ("a/../b", false),
            ("..", false),
        ] {
            assert_eq!(is_plain_relative(path), plain, "{path:?}");
        }
        assert_eq!(ok("a/b"), "a/b");
        assert_eq!(ok("./a//b/"), "a/b");
        assert_eq!(ok("a/../b"), "b");
        assert_eq!(ok("."), ".");
        assert_eq!(ok("a/.."), ".");
        assert_eq!(ok("/ws/root/a"), "a");
        assert_eq!(ok("/ws/root"), ".");
        assert_eq!(ok("/ws/other/../root/x"), "x");
        assert!(matches!(
            normalize(root, ".."),
            Err(SandboxError::DotDotEscapes { .. })
        ));
        assert!(matches!(
            normalize(root, "a/../../b"),
            Err(SandboxError::DotDotEscapes { .. })
        ));
        assert!(matches!(
            normalize(root, "/ws/root/../x"),
            Err(SandboxError::AbsoluteOutside { .. })
        ));
        assert!(matches!(
            normalize(root, "/ws/rootx/a"),
            Err(SandboxError::AbsoluteOutside { .. })
        ));
        assert!(matches!(
            normalize(root, "a\0b"),
            Err(SandboxError::Nul { .. })
        ));
        assert!(matches!(normalize(root, ""), Err(SandboxError::Empty)));
    }
}
