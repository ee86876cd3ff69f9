//! The integration tests of `ctx-server`, one module per area, in one binary (one link instead
//! of one per file).

mod support;

mod mcp;
mod rebinding;
mod server;
