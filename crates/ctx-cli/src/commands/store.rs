//! `ctx store verify`, `gc`, `migrate` and `copy`.

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
    /// Bring the store's schema up to date and say where its backends are.
    ///
    /// Every command migrates the store it opens; this one only does that, and reports.
    ///
    /// Example: ctx --store-url postgres://ctx@db/ctx store migrate
    Migrate(MigrateArgs),
    /// Copy every object and record of this store into another one.
    ///
    /// The target is a local store directory, or shared backends: a postgres:// URL for the
    /// metadata and an s3:// URL for the objects (repeat --to for both). Caches (token counts,
    /// summaries) are not copied; they refill.
    ///
    /// Examples:
    ///   ctx store copy --to postgres://ctx@db/ctx --to s3://bucket/team
    ///   ctx --store-url postgres://ctx@db/ctx --store-url s3://bucket/team store copy --to ./.ctx-local
    #[command(verbatim_doc_comment)]
    Copy(CopyArgs),
}

#[derive(Debug, Args)]
pub struct MigrateArgs {}

#[derive(Debug, Args)]
pub struct CopyArgs {
    /// Where to copy to: a directory (a local store), or postgres:// and s3:// URLs.
    #[arg(long, required = true, value_name = "URL|DIR")]
    pub to: Vec<String>,
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
    let ws = ctx.open(out)?;
    let store = ws.store()?;
    let location = anyhow::Context::context(ws.location(), "a store was opened")?;
    match command {
        StoreCommand::Migrate(MigrateArgs {}) => {
            let info = ctx::store_info(store)?;
            if out.is_json() {
                out.json(&serde_json::json!({
                    "store": location.dir.display().to_string(),
                    "metadata": info.metadata,
                    "objects": info.objects,
                    "schema_version": info.schema_version,
                }))?;
            } else {
                out.line(&format!(
                    "schema version {}: metadata {}, objects {}",
                    info.schema_version, info.metadata, info.objects
                ))?;
            }
            Ok(Status::Success)
        }
        StoreCommand::Copy(args) => {
            let is_url = |t: &String| t.contains("://");
            let target = if args.to.iter().any(is_url) {
                let mut backends = ctx::store::Backends {
                    s3: ctx::store::S3Settings::from_lookup(|name| std::env::var(name).ok()),
                    ..ctx::store::Backends::default()
                };
                for url in &args.to {
                    backends.set_url(url);
                }
                ctx::store::Store::open_with(&location.dir, &backends, false)?
            } else if let [dir] = args.to.as_slice() {
                let embedded = ctx::store::Backends::default();
                ctx::store::Store::open_with(std::path::Path::new(dir), &embedded, true)?
            } else {
                anyhow::bail!("--to takes one directory, or postgres:// and s3:// URLs");
            };
            let report = store.copy_into(&target)?;
            let (from, to) = (ctx::store_info(store)?, ctx::store_info(&target)?);
            if out.is_json() {
                out.json(&serde_json::json!({
                    "from": {"metadata": from.metadata, "objects": from.objects},
                    "to": {"metadata": to.metadata, "objects": to.objects},
                    "report": report,
                }))?;
            } else {
                out.line(&format!(
                    "copied {} objects ({} bytes; {} were there), {} packs, {} artifacts, {} snapshots, {} runs, {} refs to {} + {}",
                    report.objects_copied,
                    report.bytes_copied,
                    report.objects_present,
                    report.packs,
                    report.artifacts,
                    report.snapshots,
                    report.runs,
                    report.refs,
                    to.metadata,
                    to.objects
                ))?;
            }
            Ok(Status::Success)
        }
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
