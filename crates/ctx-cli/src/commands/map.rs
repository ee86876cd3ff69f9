//! `ctx map`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::context::Context;
use crate::output::{Output, Status};

/// Show an annotated tree: files, lines, language and top-level symbols per file.
///
/// Ignore rules apply as in git (and dependency and build directories are skipped). With
/// --budget the map is trimmed to about that many tokens (ceil(bytes/4)): symbols first, then
/// deeper levels. Symbols come from the summary cache when the files did not change.
///
/// Examples:
///   ctx map
///   ctx map src --depth 2
///   ctx --json map --budget 2000
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct MapArgs {
    /// Directory to map (default: the current directory).
    #[arg(value_name = "PATH", default_value = ".")]
    pub path: PathBuf,
    /// List entries at most N levels deep (deeper files count in their directory).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub depth: Option<u16>,
    /// Trim the map to about N tokens.
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
}

pub fn run(args: &MapArgs, ctx: &Context, out: &Output) -> Result<Status> {
    // Every path resolves inside the workspace, as `ctx read` does.
    let ws = ctx.workspace()?;
    let mapped = ws.map(&args.path, args.depth.map(usize::from), args.budget);
    Context::said_created(&ws, out);
    let map = mapped?;
    if out.is_json() {
        out.json(&map)?;
    } else {
        out.raw(map.text.as_bytes())?;
    }
    Ok(Status::Success)
}
