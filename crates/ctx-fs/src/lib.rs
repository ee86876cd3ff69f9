//! The workspace sandbox (path validation), the gitignore-aware walker, the fs_read engine and text search.
//!
//! [`walk`] lists a tree the way git sees it (every ignore rule, hidden files skipped,
//! dependency and build directories skipped by default), in parallel, sorted by relative path.
//!
//! [`sandbox`] confines every path a request names to a [`Sandbox`] root (race-free
//! `openat2(RESOLVE_BENEATH)` resolution on Linux, component-by-component `O_NOFOLLOW`
//! elsewhere); [`read`] is the `fs_read` engine (Line, Directory, Search, batches) on top of
//! it, compatible with the Amazon Q Developer CLI tool of that name.

pub mod error;
pub mod input;
pub mod read;
pub mod reader;
pub mod sandbox;
/// Calendar formatting of Unix times (the one copy lives in `ctx-core`).
pub use ctx_core::time;
pub mod walk;

pub use error::{ErrorKind, SandboxError, WalkError};
pub use read::{FsReadError, FsReadInput, FsReadOutput, Operation, ReadOptions, fs_read};
pub use reader::WalkReader;
pub use sandbox::{FileId, Sandbox, SandboxOptions};
pub use walk::{
    WalkEntry, WalkOptions, WalkOutcome, walk, walk_each, walk_until, walk_with_errors,
};
