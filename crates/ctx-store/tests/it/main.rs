//! The integration tests of `ctx-store`, one module per area, in one binary (one link instead
//! of one per file).

mod backends;
mod release_store;
mod store;
