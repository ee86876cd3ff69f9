//! `ctx store verify` and `ctx store gc`.

use std::time::{Duration, SystemTime};

use anyhow::Result;
use clap::{Args, Subcommand};
use ctx::store::GcOptions;

use crate::context::Context;
use crate::output::{Output, Status, Style};

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Re-hash every object and check every database reference resolves.
    ///
    /// Exits 0 when the store is intact, 1 with a list of problems when it is damaged.
    ///
    /// Example: ctx store verify
    Verify(VerifyArgs),
    /// Remove objects nothing references, and stale temporary files.
    ///
    /// Objects younger than the grace period are kept, since a concurrent writer may be about
    /// to reference them.
    ///
    /// Examples:
    ///   ctx store gc --dry-run
    ///   ctx store gc --grace 0
    #[command(verbatim_doc_comment)]
    Gc(GcArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Keep unreferenced objects younger than this many seconds.
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub grace: u64,
    /// Report what would be removed without removing anything.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(command: &StoreCommand, ctx: &Context, out: &Output) -> Result<Status> {
    let (store, location) = ctx.open_store(out)?;
    match command {
        StoreCommand::Verify(VerifyArgs {}) => {
            let report = store.verify()?;
            if out.is_json() {
                out.json(&serde_json::json!({
                    "store": location.dir.display().to_string(),
                    "ok": report.is_clean(),
                    "report": report,
                }))?;
            } else {
                for problem in &report.problems {
                    out.line(&format!("{} {problem}", out.paint(Style::Red, "damaged:")))?;
                }
                let summary = format!(
                    "{} objects ({} bytes) and {} references checked in {}",
                    report.objects_checked,
                    report.bytes_checked,
                    report.references_checked,
                    location.dir.display()
                );
                if report.is_clean() {
                    out.line(&format!("{} {summary}", out.paint(Style::Green, "ok:")))?;
                } else {
                    out.line(&format!(
                        "{} {} problem(s); {summary}",
                        out.paint(Style::Red, "damaged:"),
                        report.problems.len()
                    ))?;
                }
            }
            Ok(if report.is_clean() {
                Status::Success
            } else {
                Status::Found
            })
        }
        StoreCommand::Gc(args) => {
            let report = store.gc(GcOptions {
                now: SystemTime::now(),
                grace: Duration::from_secs(args.grace),
                dry_run: args.dry_run,
            })?;
            if out.is_json() {
                out.json(&report)?;
            } else {
                let verb = if args.dry_run {
                    "would remove"
                } else {
                    "removed"
                };
                out.line(&format!(
                    "{verb} {} objects ({} bytes freed) and {} temporary files; kept {} referenced, {} recent",
                    report.objects_removed,
                    report.bytes_freed,
                    report.temp_files_removed,
                    report.objects_kept,
                    report.objects_in_grace
                ))?;
            }
            Ok(Status::Success)
        }
    }
}
