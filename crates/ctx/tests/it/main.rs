//! The integration tests of `ctx`, one module per area, in one binary (one link instead
//! of one per file).

mod layering;
mod progress;
mod render_cache;
mod render_props;
mod tracked_build_dirs;
mod workspace;
