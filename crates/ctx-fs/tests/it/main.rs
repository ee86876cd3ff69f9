//! The integration tests of `ctx-fs`, one module per area, in one binary (one link instead
//! of one per file).

mod fs_read;
mod large_file;
mod sandbox;
