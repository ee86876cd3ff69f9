//! Tree-sitter languages, symbols, skeletons, imports, related files, map, and git status and history.
//!
//! Everything here works on bytes and paths handed in by the caller: no printing, no
//! environment, no clock (the current time comes in as a parameter).

pub mod diff_context;
pub mod error;
pub mod git;
pub mod lang;
pub mod map;
pub mod related;
pub mod search;
pub mod shallow;
pub mod skeleton;
pub mod summary;
pub mod symbols;
pub mod time;
pub mod tree_cache;

pub use error::CodeError;
/// The git library, re-exported so callers name the same `Repository` type.
pub use git2;
pub use lang::Language;
pub use summary::{
    CacheKey, FileStamp, FileSummary, Skipped, Summaries, SummarizeOptions, SummaryCache,
    SummaryStats, summarize_file, summarize_files, summarize_files_each,
};
pub use symbols::{Call, Extracted, Symbol, SymbolKind};
