//! `ctx diff-context`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Show a diff whose hunks are widened to their enclosing function or class.
///
/// By default: the working tree (staged and unstaged changes) against HEAD. With --base and
/// --head: any two revisions (commits, branches, tags, `HEAD~3`). Each hunk names the
/// definition it sits in. Definitions longer than 400 lines are named but not included whole.
/// Exits 1 when there is no difference.
///
/// Examples:
///   ctx diff-context
///   ctx diff-context --base main
///   ctx diff-context src/parser
///   ctx --json diff-context --base HEAD~3 --head HEAD
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DiffContextArgs {
    /// Only the files under this path (default: every file in the workspace).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// The revision to compare against (default: HEAD).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The revision to compare (default: the working tree and index).
    #[arg(long, value_name = "REV")]
    pub head: Option<String>,
}

pub fn run(args: &DiffContextArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let diff = ctx.workspace()?.diff_context(
        args.base.as_deref(),
        args.head.as_deref(),
        args.path.as_deref(),
    )?;
    if out.is_json() {
        out.json(&diff)?;
    } else {
        let mut text = String::new();
        for file in &diff.files {
            let old = file.old_path.as_deref().unwrap_or(&file.path);
            let _ = writeln!(
                text,
                "{}",
                out.paint(
                    Style::Bold,
                    &format!("diff {} ({})", file.path, file.status)
                )
            );
            if file.binary {
                let _ = writeln!(text, "Binary file {} differs", file.path);
                continue;
            }
            let from = if file.status == "added" {
                "/dev/null".to_owned()
            } else {
                format!("a/{old}")
            };
            let to = if file.status == "deleted" {
                "/dev/null".to_owned()
            } else {
                format!("b/{}", file.path)
            };
            let _ = writeln!(text, "--- {from}\n+++ {to}");
            for hunk in &file.hunks {
                let scope = hunk
                    .scope
                    .as_ref()
                    .map(|s| format!(" {} {}", s.kind, s.name))
                    .unwrap_or_default();
                let header = format!(
                    "@@ -{},{} +{},{} @@{scope}",
                    hunk.old_start, hunk.old_lines, hunk.new_start, hunk.new_lines
                );
                let _ = writeln!(text, "{}", out.paint(Style::Dim, &header));
                for line in &hunk.lines {
                    let painted = match line.as_bytes().first() {
                        Some(b'+') => out.paint(Style::Green, line),
                        Some(b'-') => out.paint(Style::Red, line),
                        _ => line.clone(),
                    };
                    let _ = writeln!(text, "{painted}");
                }
            }
        }
        out.raw(text.as_bytes())?;
    }
    Ok(if diff.files.is_empty() {
        Status::Found
    } else {
        Status::Success
    })
}
