//! Tree-sitter languages, symbols, skeletons, imports, related files, map, and git status and history.
//!
//! The crate boundary exists so the dependency rule in ARCHITECTURE.md holds from the start;
//! its contents arrive with the issue that builds this part.
