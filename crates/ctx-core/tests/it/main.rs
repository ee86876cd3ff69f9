//! The integration tests of `ctx-core`, one module per area, in one binary (one link instead
//! of one per file).

mod redaction;
mod token_vectors;
