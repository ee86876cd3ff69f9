//! The workspace sandbox (path validation), the gitignore-aware walker, the fs_read engine and text search.
//!
//! [`walk`] lists a tree the way git sees it (every ignore rule, hidden files skipped,
//! dependency and build directories skipped by default), in parallel, sorted by relative path.

pub mod error;
pub mod walk;

pub use error::WalkError;
pub use walk::{WalkEntry, WalkOptions, WalkOutcome, walk, walk_with_errors};
