//! Selection tools (issue 6): `ctx_select`, the files relevant to a question within a token
//! budget with the reasons for each (seed 003's `context.resolve`), and `ctx_index_inspect`,
//! the counts, size, version and validity of an index (its `inspect_cache`).
//!
//! `ctx_select` builds the workspace index on first use and updates it incrementally on later
//! calls, as `ctx select` does. The workspace index is `default` when the store sits in the
//! workspace root (the index `ctx select` uses there); when the store is elsewhere (a global
//! or shared store) it is named after the workspace directory and a hash of its path, so
//! workspaces sharing a store keep separate indexes. Other indexes are used only if they were
//! built over this workspace.

use ctx::select::{IndexInspection, IndexSummary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Call, ToolDef, define, reads};
use crate::error::ToolError;
use crate::paging::Page;
use crate::paging::{Cursor, PageInfo, Section};
use crate::text;

/// The largest token budget a selection may ask for.
pub const MAX_BUDGET: u64 = 10_000_000;

/// The budget when none is given (as `ctx select`).
const DEFAULT_BUDGET: u64 = 8000;

pub fn definitions() -> Vec<ToolDef> {
    vec![
        define::<SelectArgs, SelectPage>(
            "ctx_select",
            "Select context for a question",
            "The code most relevant to a question or task, best first, within a token budget: small files whole, large ones as their matching regions; reasons in the structured answer.",
            reads(),
            false,
            select,
        ),
        define::<InspectArgs, InspectAnswer>(
            "ctx_index_inspect",
            "Inspect an index",
            "Counts, sizes, format and cache version, and validity of a selection index (the workspace index unless one is named), with every index in the store. An invalid index names its broken files; rebuild it with `ctx index build --force`.",
            reads(),
            false,
            inspect,
        ),
    ]
}

// ---- ctx_select ----------------------------------------------------------------------------

/// Arguments of ctx_select.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectArgs {
    /// The question or task; file names, paths and identifiers count extra.
    pub query: String,
    /// Token budget of the whole answer, 0 to 10000000 (default 8000).
    #[serde(default)]
    #[schemars(with = "Option<u64>")]
    pub budget: Option<Value>,
    /// An index built over this workspace (default: the workspace index).
    #[serde(default)]
    pub index: Option<String>,
    /// Give each ranking signal's detail in the structured answer.
    #[serde(default)]
    pub explain: bool,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_select.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SelectPage {
    #[serde(flatten)]
    pub answer: ctx::answers::SelectAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

/// The budget argument, checked.
fn budget(tool: &str, value: Option<&Value>) -> Result<u64, ToolError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(DEFAULT_BUDGET);
    };
    value
        .as_u64()
        .filter(|n| *n <= MAX_BUDGET)
        .ok_or_else(|| {
            ToolError::invalid(
                tool,
                format!(
                    "`budget` must be a whole number of tokens from 0 to {MAX_BUDGET} (got {value}); 8000 is a good start"
                ),
            )
        })
}

fn names(indexes: &[IndexSummary]) -> String {
    if indexes.is_empty() {
        "none yet".to_owned()
    } else {
        indexes
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The facade's refusal of a named index, phrased with this tool's argument.
fn index_error(tool: &str, err: ctx::CtxError) -> ToolError {
    match err {
        ctx::CtxError::UnknownIndex {
            name,
            known,
            default,
        } => ToolError::invalid(
            tool,
            format!(
                "no index `{name}` in the store (indexes: {}); leave `index` out to use the workspace index `{default}`, built on demand",
                if known.is_empty() {
                    "none yet".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        ),
        ctx::CtxError::ForeignIndex {
            name,
            built,
            root,
            default,
        } => ToolError::invalid(
            tool,
            format!(
                "index `{name}` was built over {built}, not this workspace ({root}); leave `index` out to use the workspace index `{default}`"
            ),
        ),
        // A query without search terms: the argument is at fault.
        ctx::CtxError::Selection(
            err @ (ctx::select::SelectionError::EmptyQuery
            | ctx::select::SelectionError::OnlyStopWords(_)),
        ) => ToolError::invalid(tool, err.to_string()),
        other => other.into(),
    }
}

fn select(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: SelectArgs = call.parse()?;
    let budget = budget(call.tool, args.budget.as_ref())?;
    // Check max_tokens and the cursor's form before the work; the cursor's pin is checked
    // once the index state it is tied to is known.
    call.page_request(args.max_tokens, None, "")?;
    if let Some(cursor) = args.cursor.as_deref() {
        Cursor::parse(cursor)?;
    }
    // The same options as `ctx select`, `ctx inject` and the hook; the budget bounds the
    // whole payload (paths and fences too), which is the answer's text. An empty query (or
    // one of stop words only) is refused before the index is touched.
    let outcome = call.with(|ws| {
        ws.select_payload(&args.query, args.index.as_deref(), budget, call.progress)
            .map_err(|e| index_error(call.tool, e))
    })?;
    let (outcome, payload) = outcome;
    let state = outcome.build.cache_version.to_string();
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), &state)?;
    let answer = SelectPage {
        answer: ctx::answers::SelectAnswer::new(
            outcome,
            Some(payload),
            ctx::answers::SelectShow {
                explain: args.explain,
                content: false,
            },
        ),
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(
        &answer,
        &[Section::Items("documents"), Section::Text("payload")],
        &request,
        text::select,
    )
}

// ---- ctx_index_inspect ---------------------------------------------------------------------

/// Arguments of ctx_index_inspect.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectArgs {
    /// The index to inspect (default: the workspace index that ctx_select uses).
    #[serde(default)]
    pub index: Option<String>,
}

/// An index in the store.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IndexListed {
    /// Its name.
    pub name: String,
    /// Documents in it.
    pub documents: u64,
    /// When it was last built (RFC 3339).
    pub created_at: String,
    /// The directory it was built over, when recorded.
    pub root: Option<String>,
    /// Why it cannot be read, if it cannot.
    pub problem: Option<String>,
}

/// Answer of ctx_index_inspect.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InspectAnswer {
    /// The index's name.
    pub name: String,
    /// Its on-disk format version.
    pub format_version: u32,
    /// Its cache version: a hash of its build configuration and documents (not of the build time).
    pub cache_version: String,
    /// When it was last built (RFC 3339).
    pub created_at: String,
    /// Documents in it.
    pub documents: u64,
    /// Bytes of document content.
    pub content_bytes: u64,
    /// Bytes on disk (every file of the index directory).
    pub disk_bytes: u64,
    /// Files listed but left out (binary, too large, not UTF-8).
    pub skipped: u64,
    /// Edges of the import/reference graph (each direction counted).
    pub graph_edges: u64,
    /// The directory it was built over, when recorded.
    pub root: Option<String>,
    /// How it was built (source paths, canonicalization).
    pub config: Value,
    /// Whether every verification check passes (manifest, documents, versions, index, search database).
    pub valid: bool,
    /// The failing checks' problems (each names the broken file), when not valid.
    pub problems: Vec<String>,
    /// What to do about an invalid index (null when valid).
    pub fix: Option<String>,
    /// Every index in the store.
    pub indexes: Vec<IndexListed>,
}

fn inspect(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: InspectArgs = call.parse()?;
    let answer = call.with(|ws| {
        let default_index = ws.default_index();
        let name = args.index.as_deref().unwrap_or(default_index).to_owned();
        let indexes = ws.index_list()?;
        if !indexes.iter().any(|i| i.name == name) {
            let hint = if args.index.is_none() {
                format!(
                    "the workspace index `{name}` is not built yet; call ctx_select (it builds the index) or run `ctx index build`"
                )
            } else {
                format!(
                    "no index `{name}` in the store (indexes: {}); leave `index` out for the workspace index `{default_index}`",
                    names(&indexes)
                )
            };
            return Err(ToolError::invalid(call.tool, hint));
        }
        let i: IndexInspection = ws.index_inspect(Some(&name))?;
        let fix = (!i.valid).then(|| {
            let flag = if name == ctx::select::DEFAULT_INDEX_NAME {
                String::new()
            } else {
                format!(" --name {name}")
            };
            format!("rebuild it with `ctx index build --force{flag}`")
        });
        Ok(InspectAnswer {
            name: i.name,
            format_version: i.format_version,
            cache_version: i.cache_version.to_string(),
            created_at: i.created_at,
            documents: i.documents as u64,
            content_bytes: i.content_bytes,
            disk_bytes: i.disk_bytes,
            skipped: i.skipped as u64,
            graph_edges: i.graph_edges as u64,
            root: i.root,
            config: i.config,
            valid: i.valid,
            problems: i.problems,
            fix,
            indexes: indexes
                .into_iter()
                .map(|s| IndexListed {
                    name: s.name,
                    documents: s.documents as u64,
                    created_at: s.created_at,
                    root: s.root,
                    problem: s.problem,
                })
                .collect(),
        })
    })?;
    Ok(Call::whole(&answer, text::outline))
}
