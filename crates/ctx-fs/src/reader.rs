//! Reading the files a walk found, through the sandbox.
//!
//! The walker lists a tree by path; between the listing and the read, a directory on the way
//! may be swapped for a symlink that leads out, or a file may be a hard link to an inode
//! outside. A [`WalkReader`] opens every listed file relative to the workspace root's
//! descriptor with the sandbox's rules ([`crate::sandbox::open_beneath`]), so what is read is
//! always inside the workspace whatever happened to the tree after it was listed.
//!
//! A listed entry with its walk metadata opens in one system call
//! ([`WalkReader::open_entry`], [`Sandbox::open_listed`]): the walk's stat stands for the
//! sandbox's `O_PATH` probe, and the opened file must be the inode the walk listed.

use std::borrow::Cow;
use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::SandboxError;
use crate::sandbox::{EntryKind, Sandbox};
use crate::walk::WalkEntry;

/// Opens files under one walk root (a directory or file inside a workspace) through the
/// workspace's sandbox.
#[derive(Debug)]
pub struct WalkReader<'a> {
    workspace: &'a Sandbox,
    /// The walk root as the walker was given it (entries' paths start with it).
    walk_root: PathBuf,
    /// The walk root relative to the workspace root (`.` for the root itself).
    base: String,
}

impl<'a> WalkReader<'a> {
    /// A reader for a walk of `walk_root`, which names a path inside `workspace` (absolute, or
    /// relative to the workspace root). Refused when it leaves the workspace lexically; symlinks
    /// are checked at every open.
    pub fn new(workspace: &'a Sandbox, walk_root: &Path) -> Result<Self, SandboxError> {
        let shown = walk_root.to_string_lossy();
        let base = workspace.relative_path(&shown)?;
        Ok(Self {
            workspace,
            walk_root: walk_root.to_owned(),
            base,
        })
    }

    /// The workspace files are read from.
    pub fn workspace(&self) -> &Sandbox {
        self.workspace
    }

    /// The path of `path` (a walk entry's path) relative to the workspace root.
    fn relative(&self, path: &Path) -> Result<String, SandboxError> {
        // A walk's own paths by their bytes; anything else component by component.
        let inner = match crate::walk::plain_rest(&self.walk_root, path) {
            Some(inner) => Cow::Borrowed(inner),
            None => path
                .strip_prefix(&self.walk_root)
                .map_err(|_| SandboxError::AbsoluteOutside {
                    path: path.to_string_lossy().into_owned(),
                    root: self.walk_root.clone(),
                })?
                .to_string_lossy(),
        };
        Ok(match (self.base.as_str(), inner.as_ref()) {
            (base, "") => base.to_owned(),
            (".", inner) => inner.to_owned(),
            (base, inner) => format!("{base}/{inner}"),
        })
    }

    /// Opens a regular file the walk listed (symlinks that leave the workspace, hard links,
    /// FIFOs and devices are refused, as by `fs_read`).
    pub fn open(&self, path: &Path) -> Result<(File, Metadata), SandboxError> {
        let rel = self.relative(path)?;
        let resolved = self.workspace.resolve(&rel)?;
        if resolved.kind != EntryKind::File {
            return Err(SandboxError::SpecialFile {
                path: rel,
                kind: "a directory",
            });
        }
        Ok((resolved.file, resolved.meta))
    }

    /// Opens a file the walk listed, with one open: checked against the walk's own stat of it
    /// ([`Sandbox::open_listed`]: a file replaced since the listing, another inode, is
    /// refused with [`SandboxError::Changed`]), or, for an entry listed without metadata, by
    /// the type its directory entry gave ([`Sandbox::open_listed_file`]).
    pub fn open_entry(&self, entry: &WalkEntry) -> Result<(File, Metadata), SandboxError> {
        if entry.is_dir {
            return self.open(&entry.path);
        }
        let rel = self.relative(&entry.path)?;
        match entry.file_id() {
            Some(listed) => self.workspace.open_listed(&rel, listed),
            None => self.workspace.open_listed_file(&rel),
        }
    }

    /// Reads a listed file whole.
    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let (mut file, meta) = self.open(path).map_err(std::io::Error::other)?;
        read_sized(&mut file, meta.len())
    }

    /// Reads a listed entry whole, opened by [`Self::open_entry`].
    pub fn read_entry(&self, entry: &WalkEntry) -> std::io::Result<Vec<u8>> {
        let (mut file, meta) = self.open_entry(entry).map_err(std::io::Error::other)?;
        read_sized(&mut file, meta.len())
    }
}

/// Reads `reader` to its end, expecting `len` bytes (a file's size from its `fstat`): one
/// read for all of them, then one that finds the end (more when the file grew).
pub fn read_sized(reader: &mut impl Read, len: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    read_up_to(reader, &mut bytes, usize::try_from(len).unwrap_or(0))?;
    // `Read::read_to_end` on a `File` would `fstat` and `lseek` first; through `Take` it
    // does not, and at full capacity it looks for the end with a small read on the stack.
    reader.take(u64::MAX).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Appends up to `want` bytes from `reader` to `bytes`, fewer only at its end, reading
/// straight into the grown buffer (a regular file gives them in one `read`). Returns how
/// many were appended.
pub fn read_up_to(
    reader: &mut impl Read,
    bytes: &mut Vec<u8>,
    want: usize,
) -> std::io::Result<usize> {
    let start = bytes.len();
    bytes.resize(start + want, 0);
    let mut filled = start;
    let end = start + want;
    while filled < end {
        match reader.read(&mut bytes[filled..end]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => {
                bytes.truncate(start);
                return Err(err);
            }
        }
    }
    bytes.truncate(filled);
    Ok(filled - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inside_and_refuses_links_out() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("ws");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(root.join("src/a.rs"), "fn a() {}\n").expect("write");
        std::fs::write(outside.join("secret"), "top secret\n").expect("write");
        std::os::unix::fs::symlink(&outside, root.join("link")).expect("symlink");
        std::fs::hard_link(outside.join("secret"), root.join("src/hard")).expect("link");
        let ws = Sandbox::open(&root).expect("ws");
        let canonical = ws.root().to_owned();

        let reader = WalkReader::new(&ws, &canonical.join("src")).expect("reader");
        assert_eq!(
            reader.read(&canonical.join("src/a.rs")).expect("read"),
            b"fn a() {}\n"
        );
        let err = reader
            .read(&canonical.join("src/hard"))
            .expect_err("hard link");
        assert!(err.to_string().contains("hard links"), "{err}");

        let whole = WalkReader::new(&ws, &canonical).expect("reader");
        let err = whole
            .read(&canonical.join("link/secret"))
            .expect_err("symlink out");
        assert!(err.to_string().contains("leaves the workspace"), "{err}");
        // A path the walk could not have listed under its root is refused too.
        assert!(reader.read(&outside.join("secret")).is_err());
        // A walk root outside the workspace is refused up front.
        assert!(WalkReader::new(&ws, &outside).is_err());
    }
}
