//! Sources: what a pack is made of, from URI to text.
//!
//! [`parse_source`] turns a URI given to `pack add` (`file:`, `file:PATH#L10-L50`, `md:`,
//! `md_dir:`, `glob:`, `git:diff`, `cmd:`, `text:`) into a [`SourceSpec`] whose paths are
//! relative to the workspace root, so a pack renders the same on any machine. At render time
//! [`expand`] turns a spec into [`Unit`]s: collections are expanded in byte order through the
//! gitignore-aware walker, and files that cannot be included (binary, too large, not UTF-8,
//! sensitive, gone) become skipped units that carry the reason; [`plan`] lists the same units
//! without reading their files, for callers that read them a chunk at a time. [`sensitive`] is
//! the denylist of paths (`.env`, keys, credentials) that are refused or skipped unless
//! allowed.

mod error;
mod expand;
pub mod git;
pub mod sensitive;
mod source;

pub use error::SourceError;
pub use expand::{
    ExpandOptions, FileStamp, PlannedUnit, Skip, Unit, UnitKind, count_matches, expand,
    language_of, plan, read_text,
};
pub use source::{AddOptions, LineRange, SCHEMES, Source, SourceSpec, parse_source};
