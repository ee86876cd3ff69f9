//! Files a user names as input on a command line (a batch of operations, a file to count, a
//! key): the user's own files, wherever they are, so not confined to a workspace; but read
//! by one policy, here, rather than by each front end: regular files only (a FIFO or a
//! device would block or never end), opened without blocking, then checked on the open
//! descriptor.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::SandboxError;

/// Reads the regular file at `path` (relative paths against `cwd`); `shown` names it in
/// errors as the user wrote it.
pub fn read_named_file(cwd: &Path, path: &Path) -> Result<Vec<u8>, SandboxError> {
    let shown = path.display().to_string();
    let full = cwd.join(path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(&full)
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => SandboxError::NotFound {
                path: shown.clone(),
            },
            std::io::ErrorKind::PermissionDenied => SandboxError::PermissionDenied {
                path: shown.clone(),
            },
            _ => SandboxError::Io {
                path: shown.clone(),
                source,
            },
        })?;
    let io = |source| SandboxError::Io {
        path: shown.clone(),
        source,
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            crate::sandbox::special_kind(meta.file_type())
        };
        return Err(SandboxError::SpecialFile { path: shown, kind });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    (&file).read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_files_are_read_and_special_files_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "hello\n").expect("write");
        assert_eq!(
            read_named_file(dir.path(), Path::new("a.txt")).expect("read"),
            b"hello\n"
        );
        let missing = read_named_file(dir.path(), Path::new("nope")).expect_err("missing");
        assert_eq!(missing.kind(), crate::ErrorKind::NotFound);
        let dir_err = read_named_file(dir.path(), Path::new(".")).expect_err("a directory");
        assert!(dir_err.to_string().contains("a directory"), "{dir_err}");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        // A FIFO with no writer would block a plain open and read forever.
        let err = read_named_file(dir.path(), Path::new("fifo")).expect_err("a FIFO");
        assert!(err.to_string().contains("a FIFO"), "{err}");
    }
}
