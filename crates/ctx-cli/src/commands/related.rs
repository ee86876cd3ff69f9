//! `ctx related`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ctx::answers::RelatedItem;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Find the files related to FILE: imports, importers, co-changes and tests.
///
/// What it imports, what imports it, what changes with it in git history, and its tests.
/// Imports are resolved to files of the repository: Rust `mod`/`use crate::`/workspace
/// crates, Python absolute and relative imports, JS/TS relative imports and index files, Go
/// package directories, Java class imports, C/C++ includes. Co-change counts the commits
/// among the last --history that touched both files. Paths are relative to the repository
/// root (or the current directory outside a repository).
///
/// Examples:
///   ctx related src/main.rs
///   ctx --json related app/models.py --history 1000
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RelatedArgs {
    /// The file to find relations of.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// How many recent commits to read for co-change.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub history: usize,
    /// At most N co-changed files.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub limit: usize,
}

pub fn run(args: &RelatedArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let full = ctx.cwd.join(&args.file);
    if !full.exists() {
        anyhow::bail!(
            "`{}` does not exist; name an existing file",
            args.file.display()
        );
    }
    if full.is_dir() {
        anyhow::bail!("`{}` is a directory; name a file", args.file.display());
    }
    // Every path resolves inside the workspace, as `ctx read` does.
    let ws = ctx.workspace()?;
    let report = ws.related(&args.file, args.history, args.limit);
    Context::said_created(&ws, out);
    let report = report?;
    if let Some(note) = &report.note {
        out.note(note);
    }
    let related = &report;
    if out.is_json() {
        out.json(related)?;
        return Ok(Status::Success);
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} {}",
        out.paint(Style::Bold, "related to"),
        related.file
    );
    let section = |text: &mut String, title: &str, items: &[RelatedItem]| {
        let _ = writeln!(text, "{}", out.paint(Style::Bold, title));
        if items.is_empty() {
            let _ = writeln!(text, "  {}", out.paint(Style::Dim, "(none)"));
        }
        for item in items {
            let _ = writeln!(
                text,
                "  {}  {}",
                item.path,
                out.paint(Style::Dim, &format!("({})", item.reason))
            );
        }
    };
    section(&mut text, "imports:", &related.imports);
    section(&mut text, "imported by:", &related.imported_by);
    section(&mut text, "co-changed:", &related.co_changed);
    section(&mut text, "tests:", &related.test_files);
    out.raw(text.as_bytes())?;
    Ok(Status::Success)
}
