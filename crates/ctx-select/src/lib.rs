//! The seed 003 document index, relevance scorers (BM25, path, git, graph) and inject.
//!
//! The crate boundary exists so the dependency rule in ARCHITECTURE.md holds from the start;
//! its contents arrive with the issue that builds this part.
