//! The integration tests of `ctx-code`, one module per area, in one binary (one link instead
//! of one per file).

mod shallow_equals_full;
