//! The seed 003 document index, relevance scorers (BM25, path, git, graph), inject and
//! agent hooks.
//!
//! - [`source`]: [`DocumentSource`] connectors ([`FilesystemSource`], [`MemorySource`]) that
//!   list cheaply and fetch one document at a time, [`ingest_from_source`] with an
//!   [`ErrorPolicy`], and optional [`canonicalize`] transforms.
//! - [`index`]: the cache on disk (`manifest.json`, `index.json`, `documents/<12 hex>.json`
//!   exactly as seed 003 describes, plus the `search.db` sidecar), built atomically and
//!   incrementally by [`build_index`], checked by [`verify_index`], described by
//!   [`inspect_index`].
//! - [`selection`]: query → score → order → budget. [`ContextSelector`] is the seed's
//!   in-memory pipeline with [`TermFrequencyScorer`]; [`OpenIndex`] ranks a built index with
//!   BM25 (content, path segments, symbol names) plus seed 001's signals and a personalized
//!   PageRank over the import/reference [`graph`], and fills the budget with exact counts
//!   down a ladder: small files whole, large ones as the regions the query matches
//!   ([`view`]), the best files first, what did not fit listed.
//! - [`inject`]: the `ctx inject` text (Claude Code's hook protocol is the facade's,
//!   `ctx::hooks`).
//!
//! Like every library here it never prints, never reads the environment or the clock: the
//! build time comes in as a parameter.

pub mod analyze;
pub mod canonicalize;
pub mod error;
pub mod git;
pub mod graph;

pub mod index;
pub mod inject;
pub mod lexical;
pub mod query;
pub mod role;
pub mod selection;
pub mod signals;
pub mod source;
pub mod text;
pub mod view;

pub use canonicalize::{CanonicalizeOptions, canonicalize};
pub use error::{ConnectorError, IndexError, SelectionError};
pub use index::{
    BuildOptions, BuildReport, CacheBuildConfig, CacheIndex, CacheManifest, DEFAULT_INDEX_NAME,
    IndexCheck, IndexInspection, LiveIndex, ManifestEntry, VerifyReport, build_index,
    build_index_with_progress, inspect_index, verify_index,
};
pub use selection::{
    ApproxTokenCounter, ContextSelector, LeftOut, MAX_LEFT_OUT, OpenIndex, Query, Ranked, Ranking,
    ScoreDetails, Scorer, ScorerKind, SelectOptions, SelectedDocument, SelectionMetadata,
    SelectionResult, SelectionWhy, Signal, TermFrequencyScorer, TokenCounter, Weights,
};
pub use source::{
    DocumentSource, ErrorPolicy, FilesystemSource, Ingested, MemorySource, RawDocument,
    SourceEntry, ingest_from_source, ingest_raw,
};
