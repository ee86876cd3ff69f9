//! Code-intelligence tools: status, map, summarize, search, related and diff-context, on the
//! `ctx::code` facade, with every path argument resolved inside the workspace.
//!
//! `related` and `diff-context` work on the git repository holding the workspace; when the
//! repository is larger than the workspace, only files inside the workspace are reported, and
//! every path is relative to the workspace root.

use std::path::Path;

use ctx::code::{SearchKind, SearchLimit, TextQuery};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Call, ToolDef, define, reads};
use crate::error::ToolError;
use crate::paging::Page;
use crate::paging::{PageInfo, Section};
use crate::text;

pub fn definitions() -> Vec<ToolDef> {
    vec![
        define::<StatusArgs, StatusPage>(
            "ctx_status",
            "Project status",
            "The project at a glance: name and type, git branch, staged/modified/untracked counts, recent commits and the directories that changed most. Call it first to orient yourself.",
            reads(),
            false,
            status,
        ),
        define::<MapArgs, MapPage>(
            "ctx_map",
            "Map the code",
            "An annotated tree of a directory: files with line counts and top-level symbols, honouring .gitignore: where things live.",
            reads(),
            false,
            map,
        ),
        define::<SummarizeArgs, SummarizePage>(
            "ctx_summarize",
            "Summarize files",
            "Symbols (signature, lines, doc) and imports of a file or of every source file under a directory; with skeleton, code with bodies elided.",
            reads(),
            false,
            summarize,
        ),
        define::<SearchArgs, SearchPage>(
            "ctx_search",
            "Search the code",
            "Search the workspace for literal text (default), a regular expression, definitions of a symbol, or call sites of a function (from the syntax tree).",
            reads(),
            false,
            search,
        ),
        define::<RelatedArgs, RelatedPage>(
            "ctx_related",
            "Related files",
            "Files related to one file: what it imports, what imports it, files that changed together with it in git history, and its tests.",
            reads(),
            false,
            related,
        ),
        define::<DiffArgs, DiffPage>(
            "ctx_diff_context",
            "Diff with context",
            "The working-tree diff (or base..head) with each hunk widened to its enclosing function or class, so changes are seen with their whole definitions.",
            reads(),
            false,
            diff_context,
        ),
    ]
}

// ---- ctx_status ----------------------------------------------------------------------------

/// Arguments of ctx_status.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusPage {
    #[serde(flatten)]
    pub answer: ctx::answers::StatusAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn status(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: StatusArgs = call.parse()?;
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let answer = StatusPage {
        answer: call.with(|ws| Ok(ws.status()?))?,
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(
        &answer,
        &[
            Section::Items("recent_commits"),
            Section::Items("hot_directories"),
        ],
        &request,
        text::outline,
    )
}

// ---- ctx_map -------------------------------------------------------------------------------

/// Arguments of ctx_map.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapArgs {
    /// Directory to map (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
    /// Most levels listed (deeper files count in their directory), at least 1.
    #[serde(default)]
    pub depth: Option<u64>,
    /// Trim the map to about this many tokens instead of paging it.
    #[serde(default)]
    pub budget: Option<u64>,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_map.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MapPage {
    #[serde(flatten)]
    pub answer: ctx::answers::MapAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn positive(call: &Call<'_>, name: &str, value: Option<u64>) -> Result<Option<usize>, ToolError> {
    match value {
        Some(0) => Err(ToolError::invalid(
            call.tool,
            format!("`{name}` must be at least 1"),
        )),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        None => Ok(None),
    }
}

fn map(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: MapArgs = call.parse()?;
    let depth = positive(call, "depth", args.depth)?;
    let budget = positive(call, "budget", args.budget)?;
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let target = call
        .workspace
        .resolve(args.path.as_deref().unwrap_or("."))?;
    let answer = MapPage {
        answer: call.with(|ws| Ok(ws.map(Path::new(&target.rel), depth, budget)?))?,
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(&answer, &[Section::Items("entries")], &request, text::map)
}

// ---- ctx_summarize -------------------------------------------------------------------------

/// Arguments of ctx_summarize.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizeArgs {
    /// A source file or a directory.
    pub path: String,
    /// Also return each file's skeleton: the code with function bodies elided.
    #[serde(default)]
    pub skeleton: bool,
    /// For a directory: files at most this many levels deep; at least 1.
    #[serde(default)]
    pub depth: Option<u64>,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_summarize.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SummarizePage {
    #[serde(flatten)]
    pub answer: ctx::answers::SummarizeAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn summarize(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: SummarizeArgs = call.parse()?;
    let depth = positive(call, "depth", args.depth)?;
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let target = call.workspace.resolve(&args.path)?;
    let answer = SummarizePage {
        answer: call
            .with(|ws| Ok(ws.summarize(Path::new(&target.rel), depth, args.skeleton)?))?,
        next_cursor: None,
        page: PageInfo::default(),
    };
    // A skeleton is code: the answer's text carries it, the structured answer does not.
    call.paged_text_only(
        &answer,
        &[Section::Items("files"), Section::Items("skipped")],
        &request,
        text::summarize,
        &["files/*/skeleton"],
    )
}

// ---- ctx_search ----------------------------------------------------------------------------

/// How ctx_search matches.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Literal text.
    #[default]
    Text,
    /// A regular expression (Rust regex syntax, as ripgrep).
    Regex,
    /// Definitions named `pattern` (`Type::method` narrows the scope).
    Symbol,
    /// Call sites of the function `pattern`.
    Caller,
}

/// Arguments of ctx_search.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Text, regular expression, symbol or function name.
    pub pattern: String,
    /// File or directory to search (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
    /// text (default), regex (Rust syntax), symbol (definitions; `Type::method` narrows) or caller (call sites).
    #[serde(default)]
    pub mode: SearchMode,
    /// Match text and regex case-insensitively.
    #[serde(default)]
    pub ignore_case: bool,
    /// Lines of context around each match (0 to 20).
    #[serde(default)]
    pub context: u64,
    /// Return at most this many results.
    #[serde(default)]
    pub max_results: Option<u64>,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_search.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchPage {
    #[serde(flatten)]
    pub answer: ctx::answers::SearchAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

/// The bytes of matches a search keeps for its answer: about a hundred pages of the default
/// 8,000 tokens, and a bounded cost per request (the answer is built, as text and JSON,
/// before it is paged). Past it the answer says how many matches there were in all.
const MAX_SEARCH_BYTES: usize = 2 << 20;

fn search(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: SearchArgs = call.parse()?;
    if args.pattern.is_empty() {
        return Err(ToolError::invalid(
            call.tool,
            "`pattern` is empty; name the text, symbol or function to search for",
        ));
    }
    if args.context > 20 {
        return Err(ToolError::invalid(
            call.tool,
            "`context` must be at most 20 lines",
        ));
    }
    let context = usize::try_from(args.context).unwrap_or(20);
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let target = call
        .workspace
        .resolve(args.path.as_deref().unwrap_or("."))?;
    let kind = match args.mode {
        SearchMode::Text | SearchMode::Regex => SearchKind::Text(TextQuery {
            pattern: args.pattern.clone(),
            regex: matches!(args.mode, SearchMode::Regex),
            ignore_case: args.ignore_case,
            context,
            limit: SearchLimit {
                max_results: None,
                max_bytes: MAX_SEARCH_BYTES,
            },
            ..TextQuery::default()
        }),
        SearchMode::Symbol => SearchKind::Symbol {
            name: args.pattern.clone(),
            context,
        },
        SearchMode::Caller => SearchKind::Caller {
            name: args.pattern.clone(),
            context,
        },
    };
    let max_results = args
        .max_results
        .map(|max| usize::try_from(max).unwrap_or(usize::MAX));
    let found = call.with(|ws| {
        ws.search_cached(call.tree_cache, Path::new(&target.rel), &kind, max_results)
            .map_err(|err| ToolError::from(err).reworded(in_tool_words))
    })?;
    let answer = SearchPage {
        answer: found,
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(
        &answer,
        &[Section::Items("results")],
        &request,
        text::search,
    )
}

/// The library's hint for a bad regular expression names the CLI's flag; over MCP the
/// argument to change is `mode`.
fn in_tool_words(message: &str) -> String {
    message.replace(
        "use --regex only for regular expressions, or drop it to search the literal text",
        "set `mode` to \"text\" to search for the literal text",
    )
}

// ---- ctx_related ---------------------------------------------------------------------------

/// Arguments of ctx_related.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelatedArgs {
    /// The file, relative to the workspace root.
    pub file: String,
    /// Commits of history to look at for co-changes (default 500).
    #[serde(default)]
    pub history: Option<u64>,
    /// Most co-changed files to list (default 10).
    #[serde(default)]
    pub limit: Option<u64>,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_related.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RelatedPage {
    #[serde(flatten)]
    pub answer: ctx::answers::RelatedAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn related(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: RelatedArgs = call.parse()?;
    let history = positive(call, "history", args.history)?.unwrap_or(500);
    let limit = positive(call, "limit", args.limit)?.unwrap_or(10);
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let target = call.workspace.resolve(&args.file)?;
    let answer = call.with(|ws| Ok(ws.related(Path::new(&target.rel), history, limit)?))?;
    let answer = RelatedPage {
        answer,
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(
        &answer,
        &[
            Section::Items("imports"),
            Section::Items("imported_by"),
            Section::Items("co_changed"),
            Section::Items("test_files"),
        ],
        &request,
        text::outline,
    )
}

// ---- ctx_diff_context ----------------------------------------------------------------------

/// Arguments of ctx_diff_context.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// The revision to compare against (default HEAD).
    #[serde(default)]
    pub base: Option<String>,
    /// The revision to compare (default: the working tree with the index); needs base.
    #[serde(default)]
    pub head: Option<String>,
    /// Only files under this path, relative to the workspace root.
    #[serde(default)]
    pub path: Option<String>,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_diff_context.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffPage {
    #[serde(flatten)]
    pub answer: ctx::answers::DiffAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn diff_context(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: DiffArgs = call.parse()?;
    if args.head.is_some() && args.base.is_none() {
        return Err(ToolError::invalid(call.tool, "`head` needs `base`"));
    }
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let under = match &args.path {
        Some(path) => Some(call.workspace.resolve(path)?.rel),
        None => None,
    };
    let diff = call.with(|ws| {
        Ok(ws.diff_context(
            args.base.as_deref(),
            args.head.as_deref(),
            under.as_deref().map(Path::new),
        )?)
    })?;
    let answer = DiffPage {
        answer: diff,
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(&answer, &[Section::Items("files")], &request, text::outline)
}
