//! `ctx status`.

use std::fmt::Write as _;

use anyhow::Result;
use clap::Args;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Show the project at a glance: name and type, branch, changes, recent commits, hot dirs.
///
/// Outside a git repository it still names the project and says that git facts are missing.
///
/// Examples:
///   ctx status
///   ctx --json status
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct StatusArgs {}

pub fn run(_args: &StatusArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let status = ctx.workspace()?.status()?;
    if out.is_json() {
        out.json(&status)?;
        return Ok(Status::Success);
    }
    let mut text = String::new();
    let kind = status.project_type.as_deref().unwrap_or("unknown type");
    let _ = writeln!(
        text,
        "{} {} ({kind})",
        out.paint(Style::Bold, "project:"),
        status.project_name
    );
    match &status.branch {
        Some(branch) => {
            let state = if status.is_dirty {
                format!(
                    "{} staged, {} modified, {} untracked",
                    status.staged_count, status.modified_count, status.untracked_count
                )
            } else {
                "clean".to_owned()
            };
            let _ = writeln!(
                text,
                "{} {branch} ({state})",
                out.paint(Style::Bold, "branch:")
            );
            let _ = writeln!(
                text,
                "{} +{} -{} against HEAD",
                out.paint(Style::Bold, "diff:"),
                status.diff_stats[0],
                status.diff_stats[1]
            );
        }
        None => {
            if let Some(note) = &status.note {
                let _ = writeln!(text, "{}", out.paint(Style::Dim, note));
            }
        }
    }
    if !status.recent_commits.is_empty() {
        let _ = writeln!(text, "{}", out.paint(Style::Bold, "recent commits:"));
        for commit in &status.recent_commits {
            let _ = writeln!(
                text,
                "  {} {:>9}  {} ({})",
                out.paint(Style::Dim, &commit.sha),
                commit.time_ago,
                commit.message,
                commit.author
            );
        }
    }
    if !status.hot_directories.is_empty() {
        let _ = writeln!(text, "{}", out.paint(Style::Bold, "hot directories:"));
        for dir in &status.hot_directories {
            let _ = writeln!(text, "  {}  {} commits", dir.path, dir.commit_count);
        }
    }
    out.raw(text.as_bytes())?;
    Ok(Status::Success)
}
