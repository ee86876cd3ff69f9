//! The integration tests of `ctx-runs`, one module per area, in one binary (one link instead
//! of one per file).

mod corpus;
mod issue33;
mod review_fixes;
mod runs;
