//! The workspace sandbox (path validation), the gitignore-aware walker, the fs_read engine and text search.
//!
//! The crate boundary exists so the dependency rule in ARCHITECTURE.md holds from the start;
//! its contents arrive with the issue that builds this part.
