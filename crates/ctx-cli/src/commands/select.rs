//! `ctx select`: the files relevant to a question, within a token budget, with reasons.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;
use clap::{Args, ValueEnum};
use ctx::select::{ScorerKind, SelectOptions, SelectOutcome};

use crate::context::Context;
use crate::output::{Output, Status, Style};

/// Select the files relevant to a question, within a token budget, and say why.
///
/// Builds the workspace index on first use (into the project store, else the global store)
/// and updates it incrementally afterwards. Ranking: BM25F over content, path segments,
/// symbol names, string literals and comments, with the question's first line weighted up;
/// modules its dotted names spell, paths it mentions (tracebacks too), rank flowing along
/// imports and references, recent git activity when there is history. Tests, docs,
/// examples, vendored and generated files rank as context unless the question is about
/// them; files far below the best are left out (an empty selection is an answer). The best
/// files are represented first: small ones whole, large ones as the regions the question
/// matches (whole functions, with their class's signature), then their other signatures,
/// each run of lines left out marked `… lines A-B not shown`. `ctx inject`, the Claude
/// Code hook and MCP `ctx_select` make this same selection.
///
/// Examples:
///   ctx select "how are indexes built" --budget 8000
///   ctx select "fix the walker in walk.rs" --explain
///   ctx --json select "token cache" --budget 2000
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SelectArgs {
    /// The question (several words are joined with spaces).
    #[arg(value_name = "QUERY", required = true)]
    pub query: Vec<String>,
    /// Token budget for the selected content.
    #[arg(long, value_name = "N", value_parser = crate::args::parse_budget, default_value_t = 8000)]
    pub budget: u64,
    /// Show every signal behind each score.
    #[arg(long)]
    pub explain: bool,
    /// The index to use (default: the workspace's).
    #[arg(long, value_name = "NAME")]
    pub index: Option<String>,
    /// The ranking.
    #[arg(long, value_enum, default_value_t = ScorerArg::Default)]
    pub scorer: ScorerArg,
    /// Show files whole or not at all (no regions or outlines).
    #[arg(long, alias = "whole-files")]
    pub no_skeletons: bool,
}

/// Rankings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScorerArg {
    /// BM25 plus path, git, file-type and graph signals.
    Default,
    /// BM25 over content, path segments and symbol names only.
    Bm25,
    /// Plain term frequency, the original ranking (reads every document).
    Tf,
}

impl From<ScorerArg> for ScorerKind {
    fn from(arg: ScorerArg) -> Self {
        match arg {
            ScorerArg::Default => Self::Default,
            ScorerArg::Bm25 => Self::Bm25,
            ScorerArg::Tf => Self::Tf,
        }
    }
}

/// Unix seconds now (the CLI is where the clock is read).
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

pub fn run(args: &SelectArgs, ctx: &Context, out: &Output) -> Result<Status> {
    let query = args.query.join(" ");
    let ws = ctx.workspace()?;
    // The options `ctx inject`, the hook and MCP `ctx_select` use, unless asked otherwise.
    let opts = SelectOptions {
        scorer: args.scorer.into(),
        degrade: !args.no_skeletons,
        budget: args.budget,
        ..SelectOptions::default()
    };
    let outcome = ws.select_with(&query, args.index.as_deref(), &opts, &out.progress());
    Context::said_created(&ws, out);
    let outcome = outcome?;
    let build = &outcome.build;
    if !build.up_to_date {
        out.note(&format!(
            "index {}: {} documents ({} read, {} reused, {} removed)",
            build.name, build.documents, build.read, build.reused, build.removed
        ));
    }
    let considered = outcome.result.selection.documents_considered;
    if out.is_json() {
        let show = ctx::answers::SelectShow {
            explain: args.explain,
            content: true,
        };
        out.json(&ctx::answers::SelectAnswer::new(outcome, None, show))?;
    } else {
        out.raw(render(&outcome, args.explain, out).as_bytes())?;
    }
    Ok(if considered == 0 && args.budget > 0 {
        out.note(
            "nothing in the index matches the question; try other words, a file name or a symbol",
        );
        Status::Found
    } else {
        Status::Success
    })
}

/// The human rendering: a summary with each file's reasons, then the files.
pub fn render(outcome: &SelectOutcome, explain: bool, out: &Output) -> String {
    let result = &outcome.result;
    let meta = &result.selection;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} {:?}: {} file(s), {} of {} tokens ({}), {} candidate(s){}",
        out.paint(Style::Bold, "# ctx select"),
        meta.query,
        meta.documents_selected,
        meta.tokens_used,
        meta.budget,
        meta.tokenizer,
        meta.documents_considered,
        if meta.degraded.is_empty() {
            String::new()
        } else {
            format!(", {} in part", meta.degraded.len())
        }
    );
    for (i, doc) in result.documents.iter().enumerate() {
        let mut signals: Vec<String> = doc
            .why
            .signals
            .iter()
            .map(|s| format!("{} {:+.2}", s.name, s.contribution))
            .collect();
        if !explain {
            signals.truncate(4);
        }
        let _ = writeln!(
            text,
            "#  {:>2}. {}{}  score {:.2}, {} tokens: {}",
            i + 1,
            doc.id,
            doc.label(),
            doc.score,
            doc.tokens,
            signals.join(", ")
        );
        if explain {
            let matches: Vec<String> = doc
                .why
                .term_matches
                .iter()
                .map(|(t, n)| format!("{t}×{n}"))
                .collect();
            let _ = writeln!(
                text,
                "#        terms [{}]; matches [{}] of {} words",
                doc.why.query_terms.join(", "),
                matches.join(", "),
                doc.why.total_words
            );
            for signal in doc.why.signals.iter().filter(|s| !s.detail.is_empty()) {
                let _ = writeln!(text, "#        {}: {}", signal.name, signal.detail);
            }
        }
    }
    text.push('\n');
    text.push_str(&outcome.text());
    text
}
