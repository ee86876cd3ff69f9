//! `ctx pack …`: create, fill, preview, render and snapshot packs.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use ctx::packs::{self, PayloadStyle, RenderReport, RenderRequest, SnapshotDrift};
use ctx::sources::AddOptions;
use serde_json::json;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Packs: named, prioritized collections of sources rendered into one deterministic,
/// redacted, token-budgeted payload.
///
/// Examples:
///   ctx pack create api --budget 32000
///   ctx pack add api file:README.md
///   ctx pack add api 'glob:src/**/*.rs' --exclude '**/tests/**'
///   ctx pack add api 'file:src/main.rs#L1-L50' --priority 10
///   ctx pack preview api --tokens
///   ctx pack snapshot api --name v1
///   ctx pack verify v1
#[derive(Debug, Subcommand)]
#[command(verbatim_doc_comment)]
pub enum PackCommand {
    /// Create an empty pack.
    Create(CreateArgs),
    /// List packs.
    List,
    /// Show a pack's settings and artifacts in render order.
    Show(NameArg),
    /// Delete a pack and its artifacts (snapshots are kept).
    Delete(NameArg),
    /// Add a source: file:PATH, file:PATH#L10-L50, md:PATH, md_dir:DIR, glob:PATTERN,
    /// git:diff [--base=REV --head=REV], cmd:COMMAND, text:STRING.
    Add(AddArgs),
    /// Remove an artifact (a unique prefix of its id is enough).
    Remove(RemoveArgs),
    /// Render without recording: what is included, excluded and redacted, and the tokens used.
    Preview(PreviewArgs),
    /// Print the payload (or a snapshot's stored payload, byte for byte).
    Render(RenderArgs),
    /// Render and record a snapshot that can be re-rendered and verified later.
    Snapshot(SnapshotArgs),
    /// List snapshots, newest first.
    Snapshots,
    /// Re-render a snapshot and report what changed, artifact by artifact (exit 1 if drifted).
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct NameArg {
    /// The pack's name.
    pub name: String,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The pack's name (letters, digits, `.`, `_`, `-`).
    pub name: String,
    /// Token budget (default: the `budget` setting).
    #[arg(long, value_name = "N")]
    pub budget: Option<u64>,
    /// Tokenizer: o200k_base, cl100k_base or approx (default: the `tokenizer` setting).
    #[arg(long, value_name = "T")]
    pub tokenizer: Option<String>,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The pack.
    pub name: String,
    /// The source URI.
    pub source: String,
    /// Higher priorities render first (and survive tight budgets).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub priority: i64,
    /// md_dir: include subdirectories.
    #[arg(long)]
    pub recursive: bool,
    /// Collections: at most N files (the first N in byte order).
    #[arg(long, value_name = "N")]
    pub max_files: Option<u64>,
    /// Collections: leave out files matching GLOB (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Include sensitive files (.env, keys, credentials) instead of refusing or skipping them.
    #[arg(long)]
    pub allow_sensitive: bool,
    /// Accepted for compatibility: cmd: output is always captured.
    #[arg(long, hide = true)]
    pub capture: bool,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The pack.
    pub name: String,
    /// The artifact's id (or a unique prefix), as `pack show` lists it.
    pub artifact_id: String,
}

#[derive(Debug, Args)]
pub struct PreviewArgs {
    /// The pack.
    pub name: String,
    /// Render these packs after it (repeatable).
    #[arg(long = "with-pack", value_name = "NAME")]
    pub with_packs: Vec<String>,
    /// Override the budget.
    #[arg(long, value_name = "N")]
    pub budget: Option<u64>,
    /// Show each artifact's token count.
    #[arg(long)]
    pub tokens: bool,
    /// Print the payload on stdout (the report goes to stderr).
    #[arg(long)]
    pub show_payload: bool,
    /// Payload style.
    #[arg(long, default_value = "markdown", value_parser = parse_style)]
    pub style: PayloadStyle,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Packs, in order.
    #[arg(required_unless_present = "snapshot")]
    pub names: Vec<String>,
    /// Print this snapshot's stored payload instead (id, unique prefix or label).
    #[arg(long, value_name = "ID", conflicts_with_all = ["budget", "style"])]
    pub snapshot: Option<String>,
    /// Write the payload to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Override the budget.
    #[arg(long, value_name = "N")]
    pub budget: Option<u64>,
    /// Payload style.
    #[arg(long, value_parser = parse_style)]
    pub style: Option<PayloadStyle>,
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Packs, in order.
    #[arg(required = true)]
    pub names: Vec<String>,
    /// A label to find the snapshot by (e.g. v1.0).
    #[arg(long, value_name = "LABEL")]
    pub name: Option<String>,
    /// Override the budget.
    #[arg(long, value_name = "N")]
    pub budget: Option<u64>,
    /// Payload style.
    #[arg(long, default_value = "markdown", value_parser = parse_style)]
    pub style: PayloadStyle,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The snapshot: id, unique prefix, or label.
    pub snapshot: String,
}

fn parse_style(s: &str) -> Result<PayloadStyle, String> {
    s.parse()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

pub fn run(command: PackCommand, ctx: &Context, out: &Output) -> Result<Status> {
    let (store, _location) = ctx.open_store(out)?;
    let pcx = ctx.pack_context(&store)?;
    match command {
        PackCommand::Create(args) => {
            let tokenizer = args.tokenizer.as_deref().map(str::parse).transpose()?;
            let pack = packs::create_pack(&pcx, &args.name, args.budget, tokenizer, now())?;
            if out.is_json() {
                out.json(&pack)?;
            } else {
                out.line(&format!(
                    "Created pack `{}` (budget {} tokens, {})",
                    pack.name, pack.budget_tokens, pack.tokenizer
                ))?;
            }
        }
        PackCommand::List => {
            let list = store.db().list_packs()?;
            if out.is_json() {
                out.json(&list)?;
            } else if list.is_empty() {
                out.line("No packs yet; create one with `ctx pack create NAME`.")?;
            } else {
                for pack in list {
                    out.line(&format!(
                        "{}  {} artifact(s), budget {}, {}",
                        out.paint(Style::Bold, &pack.name),
                        pack.artifact_count,
                        pack.budget_tokens,
                        pack.tokenizer
                    ))?;
                }
            }
        }
        PackCommand::Show(NameArg { name }) => {
            let view = packs::show_pack(&pcx, &name)?;
            if out.is_json() {
                out.json(&view)?;
            } else {
                out.line(&format!(
                    "{}  budget {} tokens, {}, {} artifact(s)",
                    out.paint(Style::Bold, &view.pack.name),
                    view.pack.budget_tokens,
                    view.pack.tokenizer,
                    view.artifacts.len()
                ))?;
                for a in &view.artifacts {
                    let priority = if a.priority == 0 {
                        String::new()
                    } else {
                        format!("  priority {}", a.priority)
                    };
                    let sensitive = if a.allow_sensitive {
                        "  (sensitive allowed)"
                    } else {
                        ""
                    };
                    out.line(&format!(
                        "  {}  {}{priority}{sensitive}",
                        out.paint(Style::Dim, &a.artifact_id),
                        a.uri
                    ))?;
                }
            }
        }
        PackCommand::Delete(NameArg { name }) => {
            store.db().delete_pack(&name)?;
            if out.is_json() {
                out.json(&json!({ "deleted": name }))?;
            } else {
                out.line(&format!("Deleted pack `{name}`"))?;
            }
        }
        PackCommand::Add(args) => {
            let options = AddOptions {
                recursive: args.recursive,
                max_files: args.max_files,
                exclude: args.exclude.clone(),
                allow_sensitive: args.allow_sensitive,
            };
            let report = packs::add_source(
                &pcx,
                &args.name,
                &args.source,
                &ctx.cwd,
                &options,
                args.priority,
                now(),
            )?;
            for warning in &report.warnings {
                out.warn(warning);
            }
            if out.is_json() {
                out.json(&report)?;
            } else {
                let matches = report
                    .matches
                    .map(|n| format!(" ({n} file(s) match now)"))
                    .unwrap_or_default();
                out.line(&format!(
                    "Added {} {} to `{}`{matches}",
                    out.paint(Style::Dim, &report.artifact.artifact_id),
                    report.artifact.uri,
                    report.pack
                ))?;
            }
        }
        PackCommand::Remove(args) => {
            let removed = store.db().remove_artifact(&args.name, &args.artifact_id)?;
            if out.is_json() {
                out.json(&removed)?;
            } else {
                out.line(&format!(
                    "Removed {} {} from `{}`",
                    removed.artifact_id, removed.uri, args.name
                ))?;
            }
        }
        PackCommand::Preview(args) => {
            let mut names = vec![args.name.clone()];
            names.extend(args.with_packs.iter().cloned());
            let request = RenderRequest {
                packs: names,
                budget: args.budget,
                tokenizer: None,
                style: args.style,
            };
            let rendered = packs::render_with_progress(&pcx, &request, &out.progress())?;
            cache_note(&rendered.report);
            if out.is_json() {
                let mut value = serde_json::to_value(&rendered.report)?;
                if args.show_payload {
                    value["payload"] = json!(rendered.payload);
                }
                out.json(&value)?;
            } else if args.show_payload {
                out.report(&human_report(out, &rendered.report, args.tokens));
                out.raw(rendered.payload.as_bytes())?;
            } else {
                out.line(&human_report(out, &rendered.report, args.tokens))?;
            }
        }
        PackCommand::Render(args) => {
            let (bytes, summary) = if let Some(reference) = &args.snapshot {
                let (snapshot, bytes) = packs::render_snapshot(&pcx, reference)?;
                let summary = json!({
                    "snapshot_id": snapshot.snapshot_id,
                    "render_hash": snapshot.render_hash,
                    "payload_hash": snapshot.payload_object,
                    "tokens_used": snapshot.tokens,
                });
                (bytes, summary)
            } else {
                let request = RenderRequest {
                    packs: args.names.clone(),
                    budget: args.budget,
                    tokenizer: None,
                    style: args.style.unwrap_or_default(),
                };
                let rendered = packs::render_with_progress(&pcx, &request, &out.progress())?;
                cache_note(&rendered.report);
                let summary = json!({
                    "render_hash": rendered.report.render_hash,
                    "payload_hash": rendered.report.payload_hash,
                    "tokens_used": rendered.report.tokens_used,
                    "budget_tokens": rendered.report.budget_tokens,
                    "included": rendered.report.included.len(),
                    "excluded": rendered.report.excluded.len(),
                });
                (rendered.payload.into_bytes(), summary)
            };
            if let Some(path) = &args.output {
                let target = ctx.cwd.join(path);
                std::fs::write(&target, &bytes)
                    .with_context(|| format!("cannot write `{}`", path.display()))?;
                if out.is_json() {
                    let mut summary = summary;
                    summary["output"] = json!(path.display().to_string());
                    out.json(&summary)?;
                } else {
                    out.note(&format!(
                        "wrote {} bytes to {}",
                        bytes.len(),
                        path.display()
                    ));
                }
            } else if out.is_json() {
                let mut summary = summary;
                summary["payload"] = json!(String::from_utf8_lossy(&bytes));
                out.json(&summary)?;
            } else {
                out.raw(&bytes)?;
            }
        }
        PackCommand::Snapshot(args) => {
            let request = RenderRequest {
                packs: args.names.clone(),
                budget: args.budget,
                tokenizer: None,
                style: args.style,
            };
            let (snapshot, rendered) = packs::snapshot_with_progress(
                &pcx,
                &request,
                args.name.as_deref(),
                now(),
                &out.progress(),
            )?;
            if out.is_json() {
                out.json(&json!({ "snapshot": snapshot, "report": rendered.report }))?;
            } else {
                let label = snapshot
                    .label
                    .as_deref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default();
                out.line(&format!(
                    "Snapshot {}{label}: {} included, {} excluded, {} tokens",
                    snapshot.snapshot_id,
                    rendered.report.included.len(),
                    rendered.report.excluded.len(),
                    rendered.report.tokens_used
                ))?;
            }
        }
        PackCommand::Snapshots => {
            let list = store.db().list_snapshots()?;
            if out.is_json() {
                out.json(&list)?;
            } else if list.is_empty() {
                out.line("No snapshots yet; make one with `ctx pack snapshot NAME`.")?;
            } else {
                for s in list {
                    let label = s
                        .label
                        .as_deref()
                        .map(|l| format!("  [{l}]"))
                        .unwrap_or_default();
                    out.line(&format!(
                        "{}{label}  {}  {} tokens",
                        &s.snapshot_id.to_string()[..19],
                        s.packs.join(", "),
                        s.tokens
                    ))?;
                }
            }
        }
        PackCommand::Verify(args) => {
            let report = packs::verify_snapshot(&pcx, &args.snapshot)?;
            if out.is_json() {
                out.json(&report)?;
            } else if report.identical {
                out.line(&format!(
                    "{} snapshot {} re-renders byte for byte",
                    out.paint(Style::Green, "ok:"),
                    report.snapshot_id
                ))?;
            } else {
                out.line(&format!(
                    "{} snapshot {} has drifted:",
                    out.paint(Style::Red, "drift:"),
                    report.snapshot_id
                ))?;
                for d in &report.drift {
                    out.line(&format!("  {}", describe_drift(d)))?;
                }
                if report.drift.is_empty() {
                    out.line("  the payload bytes differ (same units, same content: check the payload format)")?;
                }
            }
            return Ok(if report.identical {
                Status::Success
            } else {
                Status::Found
            });
        }
    }
    Ok(Status::Success)
}

fn describe_drift(drift: &SnapshotDrift) -> String {
    match drift {
        SnapshotDrift::ContentChanged { item, .. } => format!("content changed  {item}"),
        SnapshotDrift::Gone { item, reason } => match reason {
            Some(r) => format!("gone ({r})  {item}"),
            None => format!("gone  {item}"),
        },
        SnapshotDrift::NewlyMatched { item } => format!("newly matched  {item}"),
        SnapshotDrift::BudgetMoved {
            item, now_included, ..
        } => {
            if *now_included {
                format!("now within budget  {item}")
            } else {
                format!("now over budget  {item}")
            }
        }
        SnapshotDrift::PolicyChanged { then, now } => format!("policy changed  {then} -> {now}"),
    }
}

fn cache_note(report: &RenderReport) {
    if report.tokens_counted + report.tokens_cached > 0 {
        tracing::info!(
            cached = report.tokens_cached,
            counted = report.tokens_counted,
            "token counts"
        );
    }
}

fn human_report(out: &Output, report: &RenderReport, tokens: bool) -> String {
    let mut lines = vec![format!(
        "{}: {} included, {} excluded, {} / {} tokens ({})",
        out.paint(Style::Bold, &report.packs.join(" + ")),
        report.included.len(),
        report.excluded.len(),
        report.tokens_used,
        report.budget_tokens,
        report.tokenizer
    )];
    lines.push(format!(
        "render {}  payload {}",
        report.render_hash, report.payload_hash
    ));
    let width = report
        .included
        .iter()
        .map(|i| i.tokens.to_string().len())
        .max()
        .unwrap_or(1);
    if !report.included.is_empty() {
        lines.push("included:".to_owned());
        for item in &report.included {
            let range = item
                .lines
                .map(|[s, e]| format!(" (lines {s}-{e})"))
                .unwrap_or_default();
            let notes = if item.notes.is_empty() {
                String::new()
            } else {
                format!("  [{}]", item.notes.join("; "))
            };
            if tokens {
                lines.push(format!(
                    "  {:>width$}  {}{range}{notes}",
                    item.tokens, item.path
                ));
            } else {
                lines.push(format!("  {}{range}{notes}", item.path));
            }
        }
    }
    if !report.excluded.is_empty() {
        lines.push("excluded:".to_owned());
        for item in &report.excluded {
            lines.push(format!(
                "  {:<12} {}  ({})",
                item.reason, item.path, item.detail
            ));
        }
    }
    if !report.redactions.is_empty() {
        lines.push("redacted:".to_owned());
        for r in &report.redactions {
            let times = if r.count > 1 {
                format!(" x{}", r.count)
            } else {
                String::new()
            };
            lines.push(format!("  {}  {}:{}{times}", r.rule, r.path, r.line));
        }
    }
    lines.join("\n")
}
