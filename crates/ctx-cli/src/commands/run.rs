//! `ctx run …`: import, list, show, diff, fork, tag and export agent run records; replay and
//! provenance (`replay`, `attach`, `verify`, `keygen`) live in `run_replay` / `run_provenance`.

use std::io::Read as _;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use clap::{Args, Subcommand};
use ctx::runs::{
    FormatChoice, ImportOptions, ImportWarning, RunDiff, RunSummary, RunTree, StepKind, StepStatus,
    StoredRun,
};
use serde_json::json;

use crate::args::Format;
use crate::commands::{run_provenance, run_replay};
use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Run records: import, log, show, diff, replay, fork, export and provenance of agent runs.
///
/// Agent runs are captured as content-addressed packs you can show, diff, replay, fork,
/// export and attach to the artifacts they produced.
///
/// A run's id is the hash of its manifest; any unique prefix of it (4+ hex digits), `latest`
/// or a tag names it. `run show` and `run diff` print JSON unless --format human.
///
/// Examples:
///   ctx run import ~/.claude/projects/myproj/3f2a….jsonl
///   ctx run import ~/.claude/projects/myproj/3f2a…/          # the session with its sub-agents
///   ctx run import trajectory.traj --from swe-agent --tag baseline
///   ctx run log --oneline
///   ctx run show latest --format human
///   ctx run diff baseline latest --format human
///   ctx run export latest --format otel > spans.json
#[derive(Debug, Subcommand)]
#[command(verbatim_doc_comment)]
pub enum RunCommand {
    Import(ImportArgs),
    Log(LogArgs),
    Show(ShowArgs),
    Diff(DiffArgs),
    Fork(ForkArgs),
    Tag(TagArgs),
    Export(ExportArgs),
    Replay(run_replay::ReplayArgs),
    Attach(run_provenance::AttachArgs),
    Verify(run_provenance::VerifyArgs),
    Keygen(run_provenance::KeygenArgs),
}

/// Import an agent log as a run: ctx's own export, a Claude Code session (1.0 to 2.1, with
/// its sub-agents), OpenHands (V0 event arrays, V1 event streams and conversation
/// directories, resolver and evaluation output.jsonl rows), a SWE-agent .traj or a
/// mini-swe-agent .traj.json file.
///
/// The import says what it kept of what the log holds (tool calls, their outputs, messages).
/// When it would drop something the format defines, it stores nothing and exits 1 with one
/// line saying how much and why, unless --lossy. A line of a JSONL log that is not a JSON
/// object fails the import (exit 2, store unchanged) unless --skip-bad-lines; records of a
/// shape ctx does not know are reported once per kind. A log without a single step is not
/// stored. Sub-agents become runs nested in the session's run; branches the session went
/// back from become forks of it. Importing the same file twice gives the same run ids.
///
/// Examples:
///   ctx run import session.jsonl
///   ctx run import ~/.claude/projects/myproj/3f2a…/
///   ctx run import events.json --from openhands --tag first-try
///   ctx run import output.jsonl --row 3
///   cat session.jsonl | ctx run import -
///   ctx run export latest --format ctx > run.json && ctx run import run.json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ImportArgs {
    /// The log file, a Claude Code session directory or an OpenHands conversation directory;
    /// `-` reads stdin.
    #[arg(value_name = "PATH|-")]
    pub file: PathBuf,
    /// Its format: auto, ctx, claude-code, openhands, swe-agent or mini-swe-agent.
    #[arg(long, default_value = "auto", value_name = "FORMAT")]
    pub from: String,
    /// Also name the run with this tag (the first row's run, for a file of rows).
    #[arg(long, value_name = "NAME")]
    pub tag: Option<String>,
    /// Store what was kept even when the import drops something the log holds.
    #[arg(long)]
    pub lossy: bool,
    /// Skip (and report) lines of a JSONL log that are not JSON objects.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Import only row N (from 1) of a file of evaluation rows (output.jsonl).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub row: Option<u64>,
}

/// List runs, most recently stored first (like `git log`).
///
/// Examples:
///   ctx run log
///   ctx run log --oneline -n 5
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LogArgs {
    /// One line per run: short id, refs, source, steps, model, start time.
    #[arg(long)]
    pub oneline: bool,
    /// Show at most N runs.
    #[arg(short = 'n', long, value_name = "N")]
    pub max_count: Option<usize>,
}

/// Show a run: its manifest and steps, every object re-hashed (a damaged object is reported).
///
/// JSON by default; --format human for a readable summary.
///
/// Examples:
///   ctx run show latest
///   ctx run show 3f2a9c --format human
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ShowArgs {
    /// Run id, unique prefix, `latest` or tag.
    pub id: String,
}

/// Compare two runs: typed drift entries (prompt_drift, tool_drift, param_drift,
/// reasoning_drift, output_drift), each with its step and both sides' hashes.
///
/// JSON by default; --format human for a summary. Exits 1 when the runs drift.
///
/// Examples:
///   ctx run diff baseline latest
///   ctx run diff 3f2a 9c1e --format human
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DiffArgs {
    /// Run A.
    pub a: String,
    /// Run B.
    pub b: String,
}

/// Store a new run derived from another, linked to it as its parent.
///
/// Examples:
///   ctx run fork latest --tag experiment
///   ctx run fork 3f2a --at 4        # keep steps 0..4 and continue from there
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ForkArgs {
    /// The run to fork.
    pub id: String,
    /// Keep only the first N steps.
    #[arg(long, value_name = "N")]
    pub at: Option<usize>,
    /// Name the new run with this tag.
    #[arg(long, value_name = "NAME")]
    pub tag: Option<String>,
}

/// Name a run with a tag (moving the tag if it named another run).
///
/// Example: ctx run tag latest baseline
#[derive(Debug, Args)]
pub struct TagArgs {
    /// The run.
    pub id: String,
    /// The tag: letters, digits, `.`, `_`, `-`.
    pub tag: String,
}

/// Export a run: ctx (lossless JSON, re-importable with the same id), otel (OTLP-JSON spans
/// with gen_ai.* attributes) or in-toto (the Statement `ctx run verify` reads, one per output:
/// an array when the run has several; with no outputs, the run manifest is the subject).
///
/// Examples:
///   ctx run export latest --format ctx > run.json
///   ctx run export latest --format otel > spans.json
///   ctx run export 3f2a --format in-toto > submission.patch.ctx.json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// The run.
    pub id: String,
    /// The export format.
    #[arg(
        long,
        required = true,
        value_name = "FORMAT",
        value_parser = PossibleValuesParser::new(["ctx", "otel", "in-toto"])
            .map(|s| match s.as_str() {
                "otel" => Format::Otel,
                "in-toto" => Format::InToto,
                _ => Format::Ctx,
            })
    )]
    pub format: Option<Format>,
}

pub fn run(command: RunCommand, ctx: &Context, out: &Output) -> Result<Status> {
    match command {
        RunCommand::Replay(args) => run_replay::replay(&args, ctx, out),
        RunCommand::Attach(args) => run_provenance::attach(&args, ctx, out),
        RunCommand::Verify(args) => run_provenance::verify(&args, ctx, out),
        RunCommand::Keygen(args) => run_provenance::keygen(&args, ctx, out),
        RunCommand::Import(args) => {
            // Bad input (a format, a tag, a file that is not there) is refused before the
            // store is opened, so it leaves no store behind where there was none.
            let FormatChoice(from) = args.from.parse()?;
            let ws = ctx.workspace()?;
            let status = import(&args, from, &ws, out);
            Context::said_created(&ws, out);
            status
        }
        other => {
            let ws = ctx.workspace()?;
            Context::store(&ws, out)?;
            match other {
                RunCommand::Log(args) => log(&args, &ws, out),
                RunCommand::Show(args) => show(&args, &ws, out),
                RunCommand::Diff(args) => diff(&args, &ws, out),
                RunCommand::Fork(args) => fork(&args, &ws, out),
                RunCommand::Tag(args) => tag(&args, &ws, out),
                RunCommand::Export(args) => export(&args, &ws, out),
                RunCommand::Replay(_)
                | RunCommand::Import(_)
                | RunCommand::Attach(_)
                | RunCommand::Verify(_)
                | RunCommand::Keygen(_) => unreachable!("routed above"),
            }
        }
    }
}

/// `ctx run import`, its input checked (`from` is the format asked for).
fn import(
    args: &ImportArgs,
    from: Option<ctx::runs::RunFormat>,
    ws: &ctx::Workspace,
    out: &Output,
) -> Result<Status> {
    let options = ImportOptions {
        from,
        lossy: args.lossy,
        skip_bad_lines: args.skip_bad_lines,
        row: args.row.map(|r| usize::try_from(r).unwrap_or(usize::MAX)),
    };
    let mut bytes = Vec::new();
    let input = if args.file.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read the log from stdin")?;
        ctx::RunInput::Bytes {
            name: "<stdin>",
            bytes: &bytes,
        }
    } else {
        ctx::RunInput::File(&args.file)
    };
    let outcome = match ws.run_import_with(&input, &options, args.tag.as_deref()) {
        Ok(outcome) => outcome,
        Err(err @ ctx::CtxError::Run(ctx::runs::RunError::Lossy { .. })) => {
            // The import ran and found a loss: nothing stored, exit 1.
            out.error(&err.to_string());
            return Ok(Status::Found);
        }
        Err(err) => return Err(err.into()),
    };
    let shown = args.file.display().to_string();
    for warning in &outcome.warnings {
        out.warn(&format!("{shown}: {warning}"));
    }
    if out.is_json() {
        out.json(&json!({
            "run": outcome.run,
            "format": outcome.format,
            "steps": outcome.steps,
            "tag": args.tag,
            "warnings": outcome.warnings,
            "report": outcome.report,
            "runs": outcome.runs,
        }))?;
    } else {
        for stored in &outcome.runs {
            let row = stored.row.map(|r| format!("row {r}: ")).unwrap_or_default();
            out.line(&format!(
                "{row}imported {} ({}, {} steps{}{})",
                stored.run,
                outcome.format,
                stored.steps,
                nested_note(stored),
                skipped_note(&outcome.warnings)
            ))?;
            for child in &stored.children {
                out.line(&format!(
                    "  {} run {} ({} steps{})",
                    child.kind,
                    child.stored.run,
                    child.stored.steps,
                    child
                        .step
                        .map(|s| format!(", started by step {s}"))
                        .unwrap_or_default()
                ))?;
            }
            for fork in &stored.forks {
                out.line(&format!(
                    "  fork {} ({} steps, a branch the session went back from)",
                    fork.run, fork.steps
                ))?;
            }
        }
        if outcome.format != ctx::runs::RunFormat::Ctx {
            out.line(&format!(
                "{}{}",
                outcome.report.kept_line(),
                outcome
                    .report
                    .loss_line()
                    .map(|l| format!("; {l} (--lossy)"))
                    .unwrap_or_default()
            ))?;
        }
    }
    Ok(Status::Success)
}

fn nested_note(stored: &StoredRun) -> String {
    let mut parts = Vec::new();
    match stored.children.len() {
        0 => {}
        1 => parts.push("1 nested run".to_owned()),
        n => parts.push(format!("{n} nested runs")),
    }
    match stored.forks.len() {
        0 => {}
        1 => parts.push("1 fork".to_owned()),
        n => parts.push(format!("{n} forks")),
    }
    parts.iter().fold(String::new(), |mut note, part| {
        note.push_str(", ");
        note.push_str(part);
        note
    })
}

fn skipped_note(warnings: &[ImportWarning]) -> String {
    match warnings.len() {
        0 => String::new(),
        n => format!(", {n} warning(s)"),
    }
}

fn log(args: &LogArgs, ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let mut runs = ws.run_list()?;
    if let Some(n) = args.max_count {
        runs.truncate(n);
    }
    if out.is_json() {
        out.json(&json!({ "runs": runs }))?;
    } else if runs.is_empty() {
        out.note("no runs yet; import one with `ctx run import FILE`");
    } else if args.oneline {
        for run in &runs {
            out.line(&oneline(out, run))?;
        }
    } else {
        for (i, run) in runs.iter().enumerate() {
            if i > 0 {
                out.line("")?;
            }
            long_entry(out, run)?;
        }
    }
    Ok(if runs.is_empty() {
        Status::Found
    } else {
        Status::Success
    })
}

fn decorations(out: &Output, refs: &[String]) -> String {
    if refs.is_empty() {
        String::new()
    } else {
        format!(
            " {}",
            out.paint(Style::Yellow, &format!("({})", refs.join(", ")))
        )
    }
}

fn oneline(out: &Output, run: &RunSummary) -> String {
    let mut line = format!(
        "{}{} {} {} steps",
        out.paint(Style::Yellow, &run.id.to_hex()[..12]),
        decorations(out, &run.refs),
        run.source,
        run.steps
    );
    if let Some(model) = &run.model {
        line.push(' ');
        line.push_str(model);
    }
    if let Some(started) = &run.started {
        line.push(' ');
        line.push_str(started);
    }
    line
}

fn long_entry(out: &Output, run: &RunSummary) -> Result<()> {
    out.line(&format!(
        "{}{}",
        out.paint(Style::Yellow, &format!("run {}", run.id)),
        decorations(out, &run.refs)
    ))?;
    if let Some(parent) = &run.parent {
        out.line(&format!("Parent:  {parent}"))?;
    }
    out.line(&format!("Source:  {}", run.source))?;
    if let Some(model) = &run.model {
        out.line(&format!("Model:   {model}"))?;
    }
    if let Some(started) = &run.started {
        out.line(&format!("Started: {started}"))?;
    }
    out.line(&format!("Steps:   {}", run.steps))
}

fn show(args: &ShowArgs, ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let (run, refs) = ws.run_show_with_refs(&args.id)?;
    if out.is_json_by_default() {
        // The header and every step, texts by hash (`run export` gives them whole).
        out.json(&ws.run_show_answer(&run, refs, None, &(0..run.steps.len()))?)?;
        return Ok(Status::Success);
    }
    let tree = ws.run_tree(&run.id)?;
    let m = &run.manifest;
    out.line(&format!(
        "{}{}",
        out.paint(Style::Yellow, &format!("run {}", run.id)),
        decorations(out, &refs)
    ))?;
    if let Some(parent) = &m.parent {
        out.line(&format!("Parent:  {parent}"))?;
    }
    out.line(&format!("Source:  {}", m.source))?;
    if let Some(id) = &m.conversation_id {
        out.line(&format!("Session: {id}"))?;
    }
    if let Some(model) = &m.model {
        let params = if model.parameters.is_empty() {
            String::new()
        } else {
            format!(" {}", serde_json::to_string(&model.parameters)?)
        };
        out.line(&format!("Model:   {}{params}", model.identifier))?;
    }
    if let Some(started) = run.started() {
        out.line(&format!("Started: {started}"))?;
    }
    if let Some(system) = &m.system_prompt {
        out.line(&format!("System prompt: {system}"))?;
    }
    for prompt in &m.prompts {
        let text = ws.run_blob(&prompt.content_ref)?;
        out.line(&format!(
            "Prompt ({}): {}",
            prompt.role,
            preview(&String::from_utf8_lossy(&text), 100)
        ))?;
    }
    for input in &m.inputs {
        out.line(&format!(
            "Input:   {} ({} bytes, {})",
            input.name, input.size, input.content_ref
        ))?;
    }
    out.line(&format!("Steps:   {}", run.steps.len()))?;
    show_steps(out, &tree, 1)?;
    for output in &m.outputs {
        out.line(&format!(
            "Output:  {} ({} bytes, {})",
            output.name, output.size, output.content_ref
        ))?;
    }
    Ok(Status::Success)
}

/// The steps of `tree`, each nested run under the step that started it (the others after
/// the steps), indented by `depth`.
fn show_steps(out: &Output, tree: &RunTree, depth: usize) -> Result<()> {
    let pad = "  ".repeat(depth);
    let nested = |out: &Output, link: &ctx::runs::ChildRun, child: &RunTree| -> Result<()> {
        let agent = link
            .agent_name
            .as_deref()
            .or(link.agent_id.as_deref())
            .map(|a| format!(" {a}"))
            .unwrap_or_default();
        out.line(&format!(
            "{pad}    ↳ {}{agent} run {} ({} steps)",
            link.kind,
            child.run.id,
            child.run.steps.len()
        ))?;
        show_steps(out, child, depth + 3)
    };
    for step in &tree.run.steps {
        out.line(&format!("{pad}{}", step_line(out, step)?))?;
        for (link, child) in tree
            .children
            .iter()
            .filter(|(l, _)| l.step == Some(step.index))
        {
            nested(out, link, child)?;
        }
    }
    for (link, child) in tree.children.iter().filter(|(l, _)| {
        l.step
            .is_none_or(|s| usize::try_from(s).map_or(true, |s| s >= tree.run.steps.len()))
    }) {
        nested(out, link, child)?;
    }
    Ok(())
}

fn step_line(out: &Output, step: &ctx::runs::Step) -> Result<String> {
    let args_text = if step
        .parameters
        .as_object()
        .is_some_and(serde_json::Map::is_empty)
    {
        String::new()
    } else {
        format!(
            " {}",
            preview(&serde_json::to_string(&step.parameters)?, 80)
        )
    };
    let mut flags = Vec::new();
    if step.deterministic {
        flags.push("deterministic");
    }
    if step.status == StepStatus::Error {
        flags.push("error");
    }
    let output = step.output_ref.map_or_else(
        || "no output".to_owned(),
        |h| format!("-> {}", &h.to_hex()[..12]),
    );
    let kind = match step.kind {
        StepKind::ToolCall => "tool",
        StepKind::ModelCall => "chat",
    };
    Ok(format!(
        "{:>3} {kind} {}{args_text} {output}{}",
        step.index,
        out.paint(Style::Bold, &step.label()),
        if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        }
    ))
}

/// The first line of `text`, cut to `max` characters.
fn preview(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut cut: String = line.chars().take(max).collect();
    if cut.len() < line.len() || text.lines().nth(1).is_some() {
        cut.push('…');
    }
    cut
}

fn diff(args: &DiffArgs, ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let report = ws.run_diff(&args.a, &args.b)?;
    if out.is_json_by_default() {
        out.json(&report)?;
    } else {
        human_diff(out, &report)?;
    }
    Ok(if report.differs() {
        Status::Found
    } else {
        Status::Success
    })
}

fn human_diff(out: &Output, report: &RunDiff) -> Result<()> {
    out.line(&format!("A: {}", report.a))?;
    out.line(&format!("B: {}", report.b))?;
    if !report.differs() {
        out.line(&format!("{} no drift", out.paint(Style::Green, "same:")))?;
        return Ok(());
    }
    let short = |h: &Option<ctx::runs::RunId>| {
        h.map_or_else(|| "-".to_owned(), |h| h.to_hex()[..12].to_owned())
    };
    for d in &report.drift {
        let step = match (d.step, d.step_b) {
            (Some(a), Some(b)) if a != b => format!("{a:>5}/{b}"),
            (Some(a), _) => format!("{a:>5}"),
            (None, Some(b)) => format!("{:>5}", format!("B{b}")),
            (None, None) => "     ".to_owned(),
        };
        out.line(&format!(
            "{} {step}  {}  ({} -> {})",
            out.paint(Style::Red, &format!("{:<15}", d.kind.name())),
            d.detail,
            short(&d.a),
            short(&d.b)
        ))?;
    }
    let counts: Vec<String> = report
        .counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    out.line(&format!(
        "{} {} drift entries: {}",
        out.paint(Style::Red, "drift:"),
        report.drift.len(),
        counts.join(", ")
    ))
}

fn fork(args: &ForkArgs, ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let (parent, run) = ws.run_fork(&args.id, args.at, args.tag.as_deref())?;
    let id = run.id;
    if out.is_json() {
        out.json(&json!({
            "run": id,
            "parent": parent,
            "steps": run.steps.len(),
            "tag": args.tag,
        }))?;
    } else {
        out.line(&format!(
            "forked {id} from {parent} ({} steps)",
            run.steps.len()
        ))?;
    }
    Ok(Status::Success)
}

fn tag(args: &TagArgs, ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let id = ws.run_tag(&args.id, &args.tag)?;
    if out.is_json() {
        out.json(&json!({ "run": id, "tag": args.tag }))?;
    } else {
        out.line(&format!("tagged {id} as {}", args.tag))?;
    }
    Ok(Status::Success)
}

fn export(args: &ExportArgs, ws: &ctx::Workspace, out: &Output) -> Result<Status> {
    let format = match args.format {
        Some(Format::Otel) => ctx::RunExport::Otel,
        Some(Format::InToto) => ctx::RunExport::InToto,
        _ => ctx::RunExport::Ctx,
    };
    let value = ws.run_export(&args.id, format)?;
    out.json(&value)?;
    Ok(Status::Success)
}
