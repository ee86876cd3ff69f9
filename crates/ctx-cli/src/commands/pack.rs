//! `ctx pack …`: pack paths now (`ctx pack PATH…`), or create, fill, preview, render and
//! snapshot named packs.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use ctx::answers::RenderAnswer;
use ctx::packs::{
    OneShotRequest, PayloadOptions, PayloadStyle, Render, RenderReport, RenderRequest,
    SnapshotDrift, TokenTreeRow,
};
use ctx::sources::AddOptions;
use serde_json::json;

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Pack files into one prompt-ready payload, now or as named, reproducible packs.
///
/// `ctx pack [PATH]...` renders now; the subcommands keep named packs whose renders can be
/// snapshotted and verified byte for byte. The payload opens with what it is and a tree of the included files, gives each file under
/// a header with its path, lines and language, and ends with a summary of what was left out
/// and why. Secrets are redacted; the token budget is exact.
///
/// Examples:
///   ctx pack . -o context.md
///   ctx pack src --include '*.rs' --ignore '**/tests/**' --budget 50000
///   git ls-files | ctx pack --stdin --style xml --copy
///   ctx pack . --git-diff --git-log 5 --token-tree
///   ctx pack . --split-output 100000 -o context.md    (context.1.md, context.2.md, …)
///
///   ctx pack create api --budget 32000
///   ctx pack add api 'glob:src/**/*.rs' --exclude '**/tests/**'
///   ctx pack snapshot api --name v1 && ctx pack verify v1
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, args_conflicts_with_subcommands = true)]
pub struct PackArgs {
    #[command(subcommand)]
    pub command: Option<PackCommand>,
    #[command(flatten)]
    pub oneshot: OneShotArgs,
}

/// `ctx pack [PATH]...`: what to pack now and how.
#[derive(Debug, Args)]
pub struct OneShotArgs {
    /// Files and directories to pack [default: .]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Only files matching GLOB (repeatable; `*.rs` matches names, `src/**/*.rs` paths).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out files and directories matching GLOB (repeatable; .gitignore is applied too).
    #[arg(long, value_name = "GLOB")]
    pub ignore: Vec<String>,
    /// Token budget [default: the `budget` setting].
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget)]
    pub budget: Option<u64>,
    /// Tokenizer: o200k_base, cl100k_base or approx [default: the `tokenizer` setting].
    #[arg(long, value_name = "T")]
    pub tokenizer: Option<String>,
    /// Payload style: markdown, xml, plain or json.
    #[arg(long, default_value = "markdown", value_parser = parse_style)]
    pub style: PayloadStyle,
    /// Write the payload to FILE instead of stdout (the report goes to stdout).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Copy the payload to the clipboard through the terminal (OSC 52).
    #[arg(long)]
    pub copy: bool,
    /// Read paths from stdin, one per line (e.g. `git ls-files | ctx pack --stdin`).
    #[arg(long)]
    pub stdin: bool,
    /// Add the working tree's changes against HEAD (one diff per changed file).
    #[arg(long)]
    pub git_diff: bool,
    /// Add the last N commits of the git log.
    #[arg(long, value_name = "N")]
    pub git_log: Option<u64>,
    /// Show tokens per directory and file (only rows with at least MIN tokens).
    #[arg(long, value_name = "MIN", num_args = 0..=1, default_missing_value = "0")]
    pub token_tree: Option<u64>,
    /// Cut the payload between files into parts of at most TOKENS tokens, written to
    /// FILE.1.ext, FILE.2.ext, … (needs -o FILE).
    #[arg(long, value_name = "TOKENS", requires = "output")]
    pub split_output: Option<u64>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// Named packs: prioritized collections of sources rendered into one deterministic,
/// redacted, token-budgeted payload.
#[derive(Debug, Subcommand)]
pub enum PackCommand {
    /// Create an empty pack.
    #[command(
        after_help = "Examples:\n  ctx pack create api\n  ctx pack create api --budget 32000 --tokenizer cl100k_base"
    )]
    Create(CreateArgs),
    /// List packs.
    #[command(after_help = "Examples:\n  ctx pack list\n  ctx pack list --json")]
    List,
    /// Show a pack's settings and artifacts in render order.
    #[command(after_help = "Examples:\n  ctx pack show api")]
    Show(NameArg),
    /// Delete a pack and its artifacts (snapshots are kept).
    #[command(after_help = "Examples:\n  ctx pack delete api")]
    Delete(NameArg),
    /// Add a source: file:PATH, file:PATH#L10-L50, md:PATH, md_dir:DIR, glob:PATTERN,
    /// git:diff [--base=REV --head=REV], git:log [-n N], cmd:COMMAND, text:STRING.
    #[command(
        after_help = "Examples:\n  ctx pack add api file:README.md\n  ctx pack add api 'glob:src/**/*.rs' --exclude '**/tests/**'\n  ctx pack add api 'file:src/main.rs#L1-L50' --priority 10\n  ctx pack add api 'git:diff --base=main'\n  ctx pack add api 'cmd:cargo tree --depth 1'"
    )]
    Add(AddArgs),
    /// Remove an artifact (a unique prefix of its id is enough).
    #[command(after_help = "Examples:\n  ctx pack remove api 3f2a")]
    Remove(RemoveArgs),
    /// Render without recording: what is included, excluded and redacted, and the tokens used.
    #[command(
        after_help = "Examples:\n  ctx pack preview api --tokens\n  ctx pack preview api --show-payload --style xml"
    )]
    Preview(PreviewArgs),
    /// Print the payload (or a snapshot's stored payload, byte for byte).
    #[command(
        after_help = "Styles: markdown (default), xml, plain, json.\n\nExamples:\n  ctx pack render api -o context.md\n  ctx pack render api docs --style xml --budget 50000\n  ctx pack render --snapshot v1"
    )]
    Render(RenderArgs),
    /// Render and record a snapshot that can be re-rendered and verified later.
    #[command(after_help = "Examples:\n  ctx pack snapshot api --name v1")]
    Snapshot(SnapshotArgs),
    /// List snapshots, newest first.
    #[command(after_help = "Examples:\n  ctx pack snapshots")]
    Snapshots,
    /// Re-render a snapshot and report what changed, artifact by artifact (exit 1 if drifted).
    #[command(after_help = "Examples:\n  ctx pack verify v1")]
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
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget)]
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
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget)]
    pub budget: Option<u64>,
    /// Show each artifact's token count.
    #[arg(long)]
    pub tokens: bool,
    /// Print the payload on stdout (the report goes to stderr).
    #[arg(long)]
    pub show_payload: bool,
    /// Payload style: markdown, xml, plain or json.
    #[arg(long, default_value = "markdown", value_parser = parse_style)]
    pub style: PayloadStyle,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Packs, in order.
    #[arg(required_unless_present = "snapshot")]
    pub names: Vec<String>,
    /// Print this snapshot's stored payload instead (id, unique prefix or label).
    #[arg(long, value_name = "ID", conflicts_with_all = ["budget", "style", "hashes", "line_numbers"])]
    pub snapshot: Option<String>,
    /// Write the payload to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Override the budget.
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget)]
    pub budget: Option<u64>,
    /// Payload style: markdown (default), xml, plain or json.
    #[arg(long, value_parser = parse_style)]
    pub style: Option<PayloadStyle>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// Payload options shared by render, preview and snapshot.
#[derive(Debug, Args)]
pub struct FormatArgs {
    /// Show each part's content hash in its header (always in the report and snapshot).
    #[arg(long)]
    pub hashes: bool,
    /// Number every line.
    #[arg(long)]
    pub line_numbers: bool,
}

impl FormatArgs {
    fn options(&self) -> PayloadOptions {
        PayloadOptions {
            hashes: self.hashes,
            line_numbers: self.line_numbers,
        }
    }
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
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget)]
    pub budget: Option<u64>,
    /// Payload style: markdown, xml, plain or json.
    #[arg(long, default_value = "markdown", value_parser = parse_style)]
    pub style: PayloadStyle,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The snapshot: id, unique prefix, or label.
    pub snapshot: String,
}

fn parse_style(s: &str) -> Result<PayloadStyle, String> {
    s.parse()
}

pub fn run(args: PackArgs, ctx: &Context, out: &Output) -> Result<Status> {
    match args.command {
        Some(command) => run_named(command, ctx, out),
        None => run_oneshot(&args.oneshot, ctx, out),
    }
}

fn run_named(command: PackCommand, ctx: &Context, out: &Output) -> Result<Status> {
    let ws = ctx.workspace()?;
    Context::store(&ws, out)?;
    match command {
        PackCommand::Create(args) => {
            let tokenizer = args.tokenizer.as_deref().map(str::parse).transpose()?;
            let pack = ws.pack_create(&args.name, args.budget, tokenizer)?;
            if out.is_json() {
                out.json(&pack)?;
            } else {
                let root = pack
                    .root
                    .as_deref()
                    .map(|r| format!(", sources relative to {r}"))
                    .unwrap_or_default();
                out.line(&format!(
                    "Created pack `{}` (budget {} tokens, {}{root})",
                    pack.name, pack.budget_tokens, pack.tokenizer
                ))?;
            }
        }
        PackCommand::List => {
            let list = ws.pack_list()?;
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
            show(&name, &ws, out)?;
        }
        PackCommand::Delete(NameArg { name }) => {
            ws.pack_delete(&name)?;
            if out.is_json() {
                out.json(&json!({ "deleted": name }))?;
            } else {
                out.line(&format!("Deleted pack `{name}`"))?;
            }
        }
        PackCommand::Add(args) => {
            add(&args, &ws, out)?;
        }
        PackCommand::Remove(args) => {
            let removed = ws.pack_remove(&args.name, &args.artifact_id)?;
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
            preview(&args, &ws, out)?;
        }
        PackCommand::Render(args) if args.snapshot.is_none() && args.output.is_some() => {
            render_to_file(&args, &ws, out)?;
        }
        PackCommand::Render(args) => {
            render(&args, &ws, ctx, out)?;
        }
        PackCommand::Snapshot(args) => {
            snapshot(&args, &ws, out)?;
        }
        PackCommand::Snapshots => {
            let list = ws.pack_snapshots()?;
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
            return verify(&args.snapshot, &ws, out);
        }
    }
    Ok(Status::Success)
}

/// `ctx pack render NAME -o FILE`: streamed to the file as it is made, so memory stays
/// bounded however large the tree.
fn render_to_file(args: &RenderArgs, ws: &ctx::Workspace, out: &Output) -> Result<()> {
    let path = args.output.as_ref().expect("guarded above");
    let request = RenderRequest {
        packs: args.names.clone(),
        budget: args.budget,
        tokenizer: None,
        style: args.style.unwrap_or_default(),
    };
    let report = ws
        .pack_render_to_file(&request, args.format.options(), &out.progress(), path)
        .map_err(|err| match err {
            ctx::CtxError::WritePayload { .. } => {
                anyhow::Error::new(err).context(format!("cannot write `{}`", path.display()))
            }
            other => other.into(),
        })?;
    cache_note(&report);
    if out.is_json() {
        let output = Some(path.display().to_string());
        out.json(&RenderAnswer::of_report(&report, None, output))?;
    } else {
        out.note(&format!(
            "wrote {} bytes to {}",
            report.payload_bytes,
            path.display()
        ));
    }
    Ok(())
}

/// `ctx pack render`: a pack's payload now, or a snapshot's as recorded, to stdout or a file.
fn render(args: &RenderArgs, ws: &ctx::Workspace, ctx: &Context, out: &Output) -> Result<()> {
    let (bytes, answer) = if let Some(reference) = &args.snapshot {
        let (snapshot, bytes) = ws.pack_snapshot_payload(reference)?;
        let payload = String::from_utf8_lossy(&bytes).into_owned();
        (bytes, RenderAnswer::of_snapshot(&snapshot, payload))
    } else {
        let request = RenderRequest {
            packs: args.names.clone(),
            budget: args.budget,
            tokenizer: None,
            style: args.style.unwrap_or_default(),
        };
        let rendered = ws.pack_render_with(&request, args.format.options(), &out.progress())?;
        cache_note(&rendered.report);
        let answer = RenderAnswer::of_report(&rendered.report, None, None);
        (rendered.payload.into_bytes(), answer)
    };
    if let Some(path) = &args.output {
        let target = ctx.cwd.join(path);
        std::fs::write(&target, &bytes)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
        if out.is_json() {
            out.json(&RenderAnswer {
                output: Some(path.display().to_string()),
                payload: None,
                ..answer
            })?;
        } else {
            out.note(&format!(
                "wrote {} bytes to {}",
                bytes.len(),
                path.display()
            ));
        }
    } else if out.is_json() {
        out.json(&RenderAnswer {
            payload: Some(String::from_utf8_lossy(&bytes).into_owned()),
            ..answer
        })?;
    } else {
        out.raw(&bytes)?;
    }
    Ok(())
}

/// `ctx pack verify SNAPSHOT`: re-renders it; exit 1 (found) when it drifted.
fn verify(snapshot: &str, ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let report = ws.pack_verify(snapshot)?;
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
            out.line(
                "  the payload bytes differ (same units, same content: check the payload format)",
            )?;
        }
    }
    Ok(if report.identical {
        Status::Success
    } else {
        Status::Found
    })
}

/// `ctx pack show NAME`: the pack and its artifacts.
fn show(name: &str, ws: &ctx::Workspace, out: &Output) -> Result<()> {
    let view = ws.pack_show(name)?;
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
    Ok(())
}

/// `ctx pack add NAME SOURCE`.
fn add(args: &AddArgs, ws: &ctx::Workspace, out: &Output) -> Result<()> {
    let options = AddOptions {
        recursive: args.recursive,
        max_files: args.max_files,
        exclude: args.exclude.clone(),
        allow_sensitive: args.allow_sensitive,
    };
    let report = ws.pack_add(&args.name, &args.source, &options, args.priority)?;
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
    Ok(())
}

/// `ctx pack preview NAME`: what a render would include, exclude and redact.
fn preview(args: &PreviewArgs, ws: &ctx::Workspace, out: &Output) -> Result<()> {
    let mut names = vec![args.name.clone()];
    names.extend(args.with_packs.iter().cloned());
    let request = RenderRequest {
        packs: names,
        budget: args.budget,
        tokenizer: None,
        style: args.style,
    };
    if out.is_json() {
        let answer = ws.pack_preview(
            &request,
            args.format.options(),
            args.show_payload,
            &out.progress(),
        )?;
        out.json(&answer)?;
        return Ok(());
    }
    let rendered = ws.pack_render_with(&request, args.format.options(), &out.progress())?;
    cache_note(&rendered.report);
    if args.show_payload {
        out.report(&human_report(out, &rendered.report, args.tokens));
        out.raw(rendered.payload.as_bytes())?;
    } else {
        out.line(&human_report(out, &rendered.report, args.tokens))?;
    }
    Ok(())
}

/// `ctx pack snapshot NAME`: renders and records a snapshot.
fn snapshot(args: &SnapshotArgs, ws: &ctx::Workspace, out: &Output) -> Result<()> {
    let request = RenderRequest {
        packs: args.names.clone(),
        budget: args.budget,
        tokenizer: None,
        style: args.style,
    };
    let (snapshot, rendered) = ws.pack_snapshot_with(
        &request,
        args.format.options(),
        args.name.as_deref(),
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
    Ok(())
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

/// The paths of `ctx pack`: those named, and with `--stdin` those read from it, one a line.
fn oneshot_paths(args: &OneShotArgs) -> Result<Vec<PathBuf>> {
    let mut paths = args.paths.clone();
    if args.stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("--stdin: cannot read the list of paths from stdin")?;
        paths.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(PathBuf::from),
        );
        if paths.is_empty() {
            anyhow::bail!(
                "--stdin read no paths; pipe one path per line, e.g. `git ls-files | ctx pack --stdin`"
            );
        }
    }
    Ok(paths)
}

/// Nothing fits `budget_tokens`: the smallest budget that holds a file, grown from
/// `estimate` until `fits`, then narrowed down (renders are cached, so trying a few is cheap).
fn smallest_budget_that_fits(
    estimate: u64,
    budget_tokens: u64,
    fits: impl Fn(u64) -> Result<bool>,
) -> Result<u64> {
    let (mut low, mut budget) = (budget_tokens, estimate);
    for _ in 0..12 {
        if fits(budget)? {
            break;
        }
        low = budget;
        budget = budget + budget / 2 + 16;
    }
    while budget - low > 1 {
        let middle = low + (budget - low) / 2;
        if fits(middle)? {
            budget = middle;
        } else {
            low = middle;
        }
    }
    Ok(budget)
}

/// `--token-tree`'s rows as indented lines: tokens, then the name under its parent.
fn token_tree_lines(tree: &[TokenTreeRow]) -> Vec<String> {
    let mut lines = Vec::new();
    let width = tree
        .iter()
        .map(|r| r.tokens.to_string().len())
        .max()
        .unwrap_or(1);
    for row in tree {
        let name = row
            .path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        let slash = if row.path.ends_with('/') { "/" } else { "" };
        lines.push(format!(
            "  {:>width$}  {}{name}{slash}",
            row.tokens,
            "  ".repeat(row.depth)
        ));
    }
    lines
}

/// `ctx pack [PATH]...`: renders now, without a pack; the token cache is used when a store
/// already exists (none is created).
fn run_oneshot(args: &OneShotArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let paths = oneshot_paths(args)?;
    let ws = ctx.workspace()?;
    let request = OneShotRequest {
        paths,
        include: args.include.clone(),
        ignore: args.ignore.clone(),
        git_diff: args.git_diff,
        git_log: args.git_log,
        budget: args.budget,
        tokenizer: args.tokenizer.as_deref().map(str::parse).transpose()?,
        style: args.style,
        options: args.format.options(),
        now: Some(super::select::now()),
    };
    let (root, rendered) = ws.pack_paths(&request, &out.progress())?;
    cache_note(&rendered.report);
    if let Some(estimate) = smallest_useful_budget(&rendered.report) {
        let smallest = smallest_budget_that_fits(
            estimate,
            rendered.report.budget_tokens,
            |budget| -> Result<bool> {
                let (_, trial) = ws.pack_paths(
                    &OneShotRequest {
                        budget: Some(budget),
                        ..request.clone()
                    },
                    &ctx::core::NoProgress,
                )?;
                Ok(!trial.report.included.is_empty())
            },
        )?;
        anyhow::bail!(
            "--budget {} holds no file (each one is over it); the smallest useful budget here is {smallest} tokens",
            rendered.report.budget_tokens
        );
    }
    let tree = args.token_tree.map(|min| rendered.token_tree(min));

    // Where the payload goes: parts, a file, the clipboard, or stdout.
    let mut written = Vec::new();
    if let Some(max) = args.split_output {
        let target = args
            .output
            .as_deref()
            .expect("clap requires -o with --split-output");
        let parts = rendered.split_payload(max)?;
        for (index, (text, tokens)) in parts.iter().enumerate() {
            let path = part_path(target, index + 1);
            write_file(ctx, &path, text.as_bytes())?;
            written.push(json!({ "path": path.display().to_string(), "tokens": tokens, "bytes": text.len() }));
        }
    } else if let Some(path) = &args.output {
        write_file(ctx, path, rendered.payload.as_bytes())?;
        written.push(json!({ "path": path.display().to_string(), "tokens": rendered.report.tokens_used, "bytes": rendered.payload.len() }));
    }
    if args.copy {
        out.clipboard(rendered.payload.as_bytes())?;
    }
    let payload_on_stdout = args.output.is_none() && !args.copy;

    if out.is_json() {
        let mut value = serde_json::to_value(&rendered.report)?;
        value["root"] = json!(root.display().to_string());
        if !written.is_empty() {
            value["written"] = json!(written);
        }
        if let Some(tree) = &tree {
            value["token_tree"] = json!(tree);
        }
        if payload_on_stdout {
            value["payload"] = json!(rendered.payload);
        }
        out.json(&value)?;
        return Ok(Status::Success);
    }
    let mut report = vec![oneshot_summary(&rendered)];
    for file in &written {
        report.push(format!(
            "wrote {} ({} tokens, {} bytes)",
            file["path"].as_str().unwrap_or_default(),
            file["tokens"],
            file["bytes"]
        ));
    }
    if args.copy {
        report.push("copied the payload to the clipboard".to_owned());
    }
    if let Some(tree) = &tree {
        report.push("tokens per directory and file:".to_owned());
        report.extend(token_tree_lines(tree));
    }
    if payload_on_stdout {
        out.raw(rendered.payload.as_bytes())?;
        out.report(&report.join("\n"));
    } else {
        out.line(&report.join("\n"))?;
    }
    Ok(Status::Success)
}

/// When a render included nothing because every candidate was over the budget: a first guess
/// at the smallest budget that holds one (the smallest file and the frame held back).
fn smallest_useful_budget(report: &RenderReport) -> Option<u64> {
    if !report.included.is_empty() {
        return None;
    }
    report
        .excluded
        .iter()
        .filter(|e| e.reason == "over_budget")
        .filter_map(|e| e.tokens)
        .min()
        .map(|tokens| tokens + report.frame_reserve)
}

/// `packed 12 files (3456 / 128000 tokens, o200k_base); left out 2: 1 binary, 1 over_budget`.
fn oneshot_summary(rendered: &Render) -> String {
    let report = &rendered.report;
    let files = report
        .included
        .iter()
        .filter(|i| i.kind == ctx::sources::UnitKind::File)
        .count();
    let others = report.included.len() - files;
    let others = if others > 0 {
        format!(" and {others} other part(s)")
    } else {
        String::new()
    };
    let mut line = format!(
        "packed {files} file(s){others} ({} / {} tokens, {})",
        report.tokens_used, report.budget_tokens, report.tokenizer
    );
    if !report.excluded.is_empty() {
        let mut reasons = std::collections::BTreeMap::<&str, usize>::new();
        for item in &report.excluded {
            *reasons.entry(item.reason.as_str()).or_default() += 1;
        }
        let reasons: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
        let _ = write!(
            line,
            "; left out {}: {}",
            report.excluded.len(),
            reasons.join(", ")
        );
    }
    if !report.redactions.is_empty() {
        let count: u64 = report.redactions.iter().map(|r| r.count).sum();
        let _ = write!(line, "; redacted {count} secret(s)");
    }
    line
}

/// `context.md` → `context.2.md`; `context` → `context.2`.
fn part_path(target: &Path, number: usize) -> PathBuf {
    let stem = target
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match target.extension() {
        Some(ext) => format!("{stem}.{number}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{number}"),
    };
    target.with_file_name(name)
}

fn write_file(ctx: &Context, path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(ctx.cwd.join(path), bytes).with_context(|| {
        format!(
            "cannot write `{}`; check the directory exists",
            path.display()
        )
    })
}
