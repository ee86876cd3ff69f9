//! The facade every ctx front end calls: the CLI, the MCP server, the HTTP server and the
//! Python module all go through this crate, so they behave the same.
//!
//! It joins the library crates into user-level operations: [`config`] merges settings from
//! flags, environment, project and global files; [`tokens`] counts with the token cache. Like
//! every library here it never prints, never exits and never reads the environment itself:
//! front ends pass what they read in.

pub mod answers;
pub mod code;
pub mod config;
mod error;
pub mod hooks;
pub mod host;
mod keeper;
pub mod packs;
pub mod recording;
pub mod runs;
pub mod select;
pub mod tokens;
pub mod workspace;

pub use error::{CtxError, ErrorKind, kind_of};
pub use keeper::{DEBOUNCE, IndexKeeper, MAX_KEPT_DOCUMENTS};
pub use workspace::{
    Clock, Environment, KeptIndex, OpenOptions, RunExport, RunInput, ServeOptions, StoreInfo,
    Workspace, init_store, store_info,
};

pub use ctx_core as core;
pub use ctx_fs as fs;
pub use ctx_sources as sources;
pub use ctx_store as store;
