//! `ctx index`: build, verify, inspect and list the document indexes selection reads.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Document indexes: the caches `ctx select` ranks.
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    Build(BuildArgs),
    Verify(NameArgs),
    Inspect(NameArgs),
    /// List the store's indexes.
    List,
    Watch(WatchArgs),
}

/// Build or update an index of the workspace (or of PATHs in it).
///
/// Writes .ctx/indexes/NAME/: manifest.json, index.json, documents/<12 hex>.json and
/// search.db, atomically. Rebuilds are incremental: files whose size and modification time
/// are unchanged are reused without being read; with nothing changed nothing is written;
/// with few files changed the index is updated in place.
///
/// Examples:
///   ctx index build
///   ctx index build src docs --name code
///   ctx index build --force
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct BuildArgs {
    /// Files or directories to index (default: the whole workspace).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The index name (default: `default`, or a per-project name in the global store).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Read everything again, replacing the index even if it is damaged.
    #[arg(long)]
    pub force: bool,
}

/// Keep the workspace index current while files change, until interrupted.
///
/// Watches the workspace (inotify on Linux) and updates the index in place a moment after
/// files change, printing each update (one JSON object per line with --json). `ctx mcp`
/// and `ctx serve` keep their workspace's index current the same way on their own; run this
/// for the prompt hook and `ctx select` in a shell. Where the platform cannot watch, the
/// index is brought up to date every 2 seconds with a walk of the tree.
///
/// Examples:
///   ctx index watch
///   ctx index watch --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct WatchArgs {}

/// Check an index (`verify`) or describe it (`inspect`).
#[derive(Debug, Args)]
pub struct NameArgs {
    /// The index name (default: the workspace's index).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

pub fn run(cmd: &IndexCommand, ctx: &Context, out: &Output) -> Result<Status> {
    let ws = ctx.workspace()?;
    Context::store(&ws, out)?;
    match cmd {
        IndexCommand::Watch(_) => watch(&ws, out),
        IndexCommand::Build(args) => {
            let report = ws.index_build(
                args.name.as_deref(),
                &args.paths,
                args.force,
                &out.progress(),
            )?;
            if out.is_json() {
                out.json(&report)?;
                return Ok(Status::Success);
            }
            if !report.skipped.is_empty() {
                out.note(&format!(
                    "{} file(s) left out (binary, too large or not UTF-8); `--json` lists them",
                    report.skipped.len()
                ));
            }
            let state = if report.up_to_date {
                "up to date".to_owned()
            } else {
                format!(
                    "{} read, {} reused, {} removed",
                    report.read, report.reused, report.removed
                )
            };
            out.line(&format!(
                "{} {}: {} documents ({state})",
                out.paint(Style::Bold, "index"),
                report.name,
                report.documents
            ))?;
            Ok(Status::Success)
        }
        IndexCommand::Verify(args) => {
            let name = args.name.as_deref().unwrap_or(ws.default_index());
            let report = ws.index_verify(Some(name))?;
            if out.is_json() {
                out.json(&report)?;
            } else {
                let mut text = String::new();
                for check in &report.checks {
                    let mark = if check.ok {
                        out.paint(Style::Green, "ok    ")
                    } else {
                        out.paint(Style::Red, "FAILED")
                    };
                    let _ = writeln!(text, "{mark} {}", check.check);
                    for problem in &check.problems {
                        let _ = writeln!(text, "       {problem}");
                    }
                }
                if report.valid {
                    let _ = writeln!(text, "index {name} is valid");
                } else {
                    let flag = if name == ctx::select::DEFAULT_INDEX_NAME {
                        String::new()
                    } else {
                        format!(" --name {name}")
                    };
                    let _ = writeln!(
                        text,
                        "index {name} is damaged; rebuild it with `ctx index build --force{flag}`"
                    );
                }
                out.raw(text.as_bytes())?;
            }
            Ok(if report.valid {
                Status::Success
            } else {
                Status::Found
            })
        }
        IndexCommand::Inspect(args) => {
            let info = ws.index_inspect(args.name.as_deref())?;
            if out.is_json() {
                out.json(&info)?;
            } else {
                let mut text = String::new();
                let _ = writeln!(text, "{} {}", out.paint(Style::Bold, "index"), info.name);
                let _ = writeln!(text, "  path           {}", info.path);
                if let Some(root) = &info.root {
                    let _ = writeln!(text, "  root           {root}");
                }
                let _ = writeln!(text, "  format         {}", info.format_version);
                let _ = writeln!(text, "  cache version  {}", info.cache_version);
                let _ = writeln!(text, "  created        {}", info.created_at);
                let _ = writeln!(
                    text,
                    "  documents      {} ({} left out)",
                    info.documents, info.skipped
                );
                let _ = writeln!(text, "  content        {} bytes", info.content_bytes);
                let _ = writeln!(text, "  on disk        {} bytes", info.disk_bytes);
                let _ = writeln!(text, "  graph edges    {}", info.graph_edges);
                let _ = writeln!(
                    text,
                    "  valid          {}",
                    if info.valid { "yes" } else { "NO" }
                );
                for problem in &info.problems {
                    let _ = writeln!(text, "    {problem}");
                }
                out.raw(text.as_bytes())?;
            }
            Ok(if info.valid {
                Status::Success
            } else {
                Status::Found
            })
        }
        IndexCommand::List => {
            let list = ws.index_list()?;
            if out.is_json() {
                out.json(&list)?;
                return Ok(Status::Success);
            }
            if list.is_empty() {
                out.note("no indexes yet; `ctx index build` or `ctx select QUESTION` makes one");
            }
            for item in &list {
                match &item.problem {
                    Some(problem) => out.line(&format!(
                        "{}  {}",
                        item.name,
                        out.paint(Style::Red, problem)
                    ))?,
                    None => out.line(&format!(
                        "{}  {} documents  {}{}",
                        item.name,
                        item.documents,
                        item.created_at,
                        item.root
                            .as_deref()
                            .map(|r| format!("  {r}"))
                            .unwrap_or_default()
                    ))?,
                }
            }
            Ok(Status::Success)
        }
    }
}

/// Prints one update of `ctx index watch`.
fn print_update(out: &Output, report: &ctx::select::BuildReport) -> Result<()> {
    if out.is_json() {
        return out.line(&serde_json::to_string(report)?);
    }
    let state = if report.up_to_date {
        "up to date".to_owned()
    } else {
        format!("{} read, {} removed", report.read, report.removed)
    };
    out.line(&format!(
        "{} {}: {} documents ({state})",
        out.paint(Style::Bold, "index"),
        report.name,
        report.documents
    ))
}

fn watch(ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let (send, receive) = std::sync::mpsc::channel();
    let (keeper, first) = ws.watch_index(send)?;
    // An update that changed the index comes through the channel too.
    if first.up_to_date {
        print_update(out, &first)?;
    }
    if !keeper.is_watching() {
        if first.documents > ctx::MAX_KEPT_DOCUMENTS {
            out.note(&format!(
                "more than {} documents: not watched; updating every 2 seconds",
                ctx::MAX_KEPT_DOCUMENTS
            ));
        } else {
            out.note("cannot watch this tree for changes; updating every 2 seconds");
        }
        loop {
            std::thread::sleep(std::time::Duration::from_secs(2));
            let report = keeper.update()?;
            if !report.up_to_date {
                print_update(out, &report)?;
            }
        }
    }
    out.note("watching for changes; Ctrl-C stops");
    for report in receive {
        print_update(out, &report)?;
    }
    Ok(Status::Success)
}
