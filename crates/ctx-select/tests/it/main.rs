//! The integration tests of `ctx-select`, one module per area, in one binary (one link instead
//! of one per file).

mod index_selection;
