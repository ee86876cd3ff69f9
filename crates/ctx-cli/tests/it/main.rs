//! The integration tests of `ctx-cli`, one module per area, in one binary (one link instead
//! of one per file).

mod common;

mod bounded_search;
mod cli;
mod code_commands;
mod code_golden;
mod mcp_protocol_edges;
mod one_answer;
mod pack_oneshot;
mod packs;
mod read;
mod release_store;
mod runs;
mod runs_import;
mod runs_provenance;
mod runs_replay;
mod select_cli;
mod store_checks;
mod store_urls;
mod undo;
mod usage_errors;
mod workspace_scope;
