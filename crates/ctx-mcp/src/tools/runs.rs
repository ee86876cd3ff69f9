//! Run record tools (seed 004): list the runs in the store, show one run's steps, and diff two
//! runs into typed drift entries. All read-only; long answers are paged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Call, ToolDef, define, reads};
use crate::error::ToolError;
use crate::paging::Page;
use crate::paging::{PageInfo, Section};
use crate::text;

/// Step outputs longer than this are cut in ctx_runs_show unless asked for more.
const DEFAULT_OUTPUT_BYTES: usize = 2000;

pub fn definitions() -> Vec<ToolDef> {
    vec![
        define::<ListArgs, ListAnswer>(
            "ctx_runs_list",
            "List recorded runs",
            "List the agent runs recorded in this workspace's store (imported logs, `ctx mcp --record` sessions, forks), most recent first: id, refs such as `latest` or tags, source, model, step count and start time. Use an id (or a unique prefix, or a ref) with ctx_runs_show or ctx_runs_diff.",
            reads(),
            false,
            runs_list,
        ),
        define::<ShowArgs, ShowPage>(
            "ctx_runs_show",
            "Show a run",
            "Show one recorded run: its model, prompts, inputs and outputs, and every step in order (tool or model call, arguments, output hash and optionally the output text, whether it is deterministic). Every object is re-hashed, so a damaged record is reported rather than shown. Long runs come in pages: pass next_cursor to continue.",
            reads(),
            false,
            runs_show,
        ),
        define::<DiffArgs, DiffAnswer>(
            "ctx_runs_diff",
            "Diff two runs",
            "Compare two recorded runs and list typed drift entries: prompt_drift (system prompt, prompts, inputs), tool_drift (a different tool at a step, or a step on one side only), param_drift (model parameters or a step's arguments), reasoning_drift (a step's output or reasoning), output_drift (the run's outputs); each with its step index and both sides' hashes.",
            reads(),
            false,
            runs_diff,
        ),
    ]
}

// ---- ctx_runs_list -------------------------------------------------------------------------

/// Arguments of ctx_runs_list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// A run in a listing.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunItem {
    /// The run id, `sha256:…` (the hash of its manifest).
    pub id: String,
    /// The run it was forked from, if any.
    pub parent: Option<String>,
    /// Where it came from: claude-code, openhands, swe-agent, mcp, ctx or fork.
    pub source: String,
    /// Number of steps.
    pub steps: u64,
    /// The model, when known.
    pub model: Option<String>,
    /// When the run started, as the agent recorded it (RFC 3339).
    pub started: Option<String>,
    /// Refs naming the run (`latest`, tags).
    pub refs: Vec<String>,
}

/// Answer of ctx_runs_list.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListAnswer {
    /// Runs, most recently stored first.
    pub runs: Vec<RunItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn runs_list(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: ListArgs = call.parse()?;
    let runs = call.with(|ws| Ok(ws.run_list()?))?;
    // Cursors stay valid only while the newest run is the same one.
    let state = runs.first().map(|r| r.id.to_string()).unwrap_or_default();
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), &state)?;
    let answer = ListAnswer {
        runs: runs
            .into_iter()
            .map(|r| RunItem {
                id: r.id.to_string(),
                parent: r.parent.map(|p| p.to_string()),
                source: r.source,
                steps: r.steps,
                model: r.model,
                started: r.started,
                refs: r.refs,
            })
            .collect(),
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(&answer, &[Section::Items("runs")], &request, text::outline)
}

// ---- ctx_runs_show -------------------------------------------------------------------------

/// Arguments of ctx_runs_show.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowArgs {
    /// The run: its id, a unique prefix of it (4+ hex digits), `latest` or a tag.
    pub run: String,
    /// Also return each step's output text and reasoning, and the prompts' text (default false: hashes only).
    #[serde(default)]
    pub include_content: bool,
    /// With include_content, cut each text after this many bytes (default 2000).
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_runs_show.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShowPage {
    #[serde(flatten)]
    pub answer: ctx::answers::RunShowAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn runs_show(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: ShowArgs = call.parse()?;
    if args.max_output_bytes == Some(0) {
        return Err(ToolError::invalid(
            call.tool,
            "`max_output_bytes` must be at least 1",
        ));
    }
    let content = args
        .include_content
        .then(|| args.max_output_bytes.unwrap_or(DEFAULT_OUTPUT_BYTES));
    let (answer, request) = call.with(|ws| {
        let (run, refs) = ws.run_show_with_refs(&args.run)?;
        // The run id pins cursors: a ref like `latest` that moves invalidates them.
        let request =
            call.page_request(args.max_tokens, args.cursor.as_deref(), &run.id.to_string())?;
        // Each step is one paged unit of at least one token, so no page holds more than
        // `max_tokens` steps from its start: only those steps' contents are read.
        let window = request.start
            ..request
                .start
                .saturating_add(usize::try_from(request.max_tokens).unwrap_or(usize::MAX));
        let answer = ShowPage {
            answer: ws.run_show_answer(&run, refs, content, &window)?,
            next_cursor: None,
            page: PageInfo::default(),
        };
        Ok((answer, request))
    })?;
    // With include_content the texts are the answer's text; the structured answer keeps
    // their hashes only.
    call.paged_text_only(
        &answer,
        &[Section::Items("steps")],
        &request,
        text::outline,
        &["steps/*/output", "steps/*/reasoning", "run/prompts/*/text"],
    )
}

// ---- ctx_runs_diff -------------------------------------------------------------------------

/// Arguments of ctx_runs_diff.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// Run A: id, unique prefix, `latest` or a tag.
    pub a: String,
    /// Run B: id, unique prefix, `latest` or a tag.
    pub b: String,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One drift entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DriftItem {
    /// prompt_drift, tool_drift, param_drift, reasoning_drift or output_drift.
    #[serde(rename = "type")]
    pub kind: String,
    /// The step's index in A, for step-level drift; for a step only in B, the index in A it was inserted before.
    pub step: Option<u64>,
    /// The step's index in B; for a step only in A, the index in B it was deleted before. Steps are aligned, so after an inserted step it differs from `step`.
    pub step_b: Option<u64>,
    /// What differs (system_prompt, prompts[0], model, gen_ai.tool.name, gen_ai.tool.call.arguments, output_ref, …).
    pub field: String,
    /// The hash on side A (null when A has nothing there).
    pub a: Option<String>,
    /// The hash on side B.
    pub b: Option<String>,
    /// A one-line description.
    pub detail: String,
}

/// Answer of ctx_runs_diff.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffAnswer {
    /// Run A's id.
    pub a: String,
    /// Run B's id.
    pub b: String,
    /// Whether there is any drift.
    pub differs: bool,
    /// Entries per drift type.
    pub counts: std::collections::BTreeMap<String, u64>,
    /// The drift entries, by section then step.
    pub drift: Vec<DriftItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn runs_diff(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: DiffArgs = call.parse()?;
    let report = call.with(|ws| Ok(ws.run_diff(&args.a, &args.b)?))?;
    let state = format!("{} {}", report.a, report.b);
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), &state)?;
    let answer = DiffAnswer {
        a: report.a.to_string(),
        b: report.b.to_string(),
        differs: report.differs(),
        counts: report
            .counts
            .iter()
            .map(|(k, n)| (k.name().to_owned(), *n))
            .collect(),
        drift: report
            .drift
            .iter()
            .map(|d| DriftItem {
                kind: d.kind.name().to_owned(),
                step: d.step,
                step_b: d.step_b,
                field: d.field.clone(),
                a: d.a.map(|h| h.to_string()),
                b: d.b.map(|h| h.to_string()),
                detail: d.detail.clone(),
            })
            .collect(),
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(&answer, &[Section::Items("drift")], &request, text::outline)
}
