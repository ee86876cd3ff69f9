//! Source URIs (file, range, md, md_dir, glob, git, cmd, text) turned into documents, and the sensitive-path denylist.
//!
//! The crate boundary exists so the dependency rule in ARCHITECTURE.md holds from the start;
//! its contents arrive with the issue that builds this part.
