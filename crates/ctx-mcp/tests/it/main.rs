//! The integration tests of `ctx-mcp`, one module per area, in one binary (one link instead
//! of one per file).

mod common;

mod attacks;
mod http;
mod http_edges;
mod lean;
mod paths;
mod protocol;
mod runs;
mod security;
mod select;
mod tools;
