//! Pure domain types shared by every part of ctx.
//!
//! This crate holds what must mean the same thing everywhere: [`ContentHash`] (public
//! `sha256:<hex>` identifiers), [`DocumentId`] (workspace-relative paths), [`Document`] (content
//! plus a version that is the hash of its bytes), [`Metadata`], RFC 8785 canonical JSON for
//! hashing manifests ([`canonical`]) and the [`Tokenizer`]s that count exactly as tiktoken does.
//!
//! It is pure: no file system, no environment, no clock. Anything that varies comes in through
//! parameters, so every function here is deterministic.

pub mod canonical;
mod document;
pub mod fragments;
mod hash;
mod id;
pub mod markdown;
mod metadata;
pub mod pattern;
pub mod progress;
pub mod redact;
pub mod time;
pub mod tokenizer;

pub use document::{Document, DocumentError};
pub use hash::{ContentHash, ContentHashError, ContentHasher, HashText};
pub use id::{DocumentId, DocumentIdError};
pub use metadata::{MergePrecedence, Metadata, MetadataValue};
pub use progress::{Cancellable, NoProgress, Progress};

/// An error passed through a seam whose implementations live above it (a cache the facade
/// backs with the store): boxed, so the kind of what failed is still found on the chain.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
pub use tokenizer::{Tokenizer, TokenizerKind, UnknownTokenizer};
