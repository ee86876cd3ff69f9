//! Pack tools (seed 000 §5.2): list, get, preview, render (which records a snapshot unless
//! given one), snapshot; and with `--allow-write`, create, add and remove.

use ctx::packs::{ArtifactView, PayloadOptions, PayloadStyle, RenderRequest};
use ctx::sources::AddOptions;
use ctx::store::{PackRecord, SnapshotRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Call, ToolDef, define, deletes, reads, records};
use crate::error::ToolError;
use crate::paging::Page;
use crate::paging::{PageInfo, Section};
use crate::text;

pub fn definitions() -> Vec<ToolDef> {
    vec![
        define::<ListArgs, ListAnswer>(
            "ctx_packs_list",
            "List packs",
            "List the context packs in this workspace's store: name, token budget, tokenizer and number of sources. Start here, then use ctx_packs_get for one pack's sources and snapshots.",
            reads(),
            false,
            packs_list,
        ),
        define::<GetArgs, GetAnswer>(
            "ctx_packs_get",
            "Show a pack",
            "Show one pack: its settings, its sources (artifacts) in render order, and the snapshots recorded from it, newest first.",
            reads(),
            false,
            packs_get,
        ),
        define::<PreviewArgs, PreviewPage>(
            "ctx_packs_preview",
            "Preview a render",
            "Render packs without recording anything: which files and parts are included or left out (and why), what was redacted, the exact tokens used against the budget, and the hashes. With show_payload the payload text is returned too, byte for byte what `ctx pack preview --show-payload` prints.",
            reads(),
            false,
            packs_preview,
        ),
        define::<RenderArgs, RenderPage>(
            "ctx_packs_render",
            "Render packs",
            "The payload of packs (curated, token-budgeted source bundles), recorded as a snapshot that reproduces it byte for byte; or a snapshot's payload.",
            records(true),
            false,
            packs_render,
        ),
        define::<SnapshotArgs, SnapshotAnswer>(
            "ctx_packs_snapshot",
            "Record a snapshot",
            "Render packs and record a snapshot (optionally labelled, e.g. v1.0) without returning the payload; read it later with ctx_packs_render and its snapshot_id, or as the resource ctx://snapshot/<id>.",
            records(true),
            false,
            packs_snapshot,
        ),
        define::<CreateArgs, PackSummary>(
            "ctx_packs_create",
            "Create a pack",
            "Create an empty pack with a token budget and tokenizer (defaults from the workspace settings). Add sources with ctx_packs_add.",
            records(false),
            true,
            packs_create,
        ),
        define::<AddArgs, AddAnswer>(
            "ctx_packs_add",
            "Add a source to a pack",
            "Add a source to a pack: file:PATH, file:PATH#L10-L50, md:PATH, md_dir:DIR, glob:PATTERN, git:diff [--base=REV --head=REV] or text:STRING. Paths are relative to the workspace root and must stay inside it; cmd: sources cannot be added over MCP.",
            records(true),
            true,
            packs_add,
        ),
        define::<RemoveArgs, RemoveAnswer>(
            "ctx_packs_remove",
            "Remove a source from a pack",
            "Remove one source (artifact) from a pack by its id or a unique prefix of it, as ctx_packs_get lists them.",
            deletes(),
            true,
            packs_remove,
        ),
    ]
}

// ---- shared answer parts -------------------------------------------------------------------

/// A pack in a listing.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PackSummary {
    /// The pack's name (its id).
    pub name: String,
    /// Token budget of a render.
    pub budget_tokens: u64,
    /// Tokenizer budgets are counted with: o200k_base, cl100k_base or approx.
    pub tokenizer: String,
    /// Number of sources (artifacts).
    pub artifact_count: u64,
    /// When it was created, Unix seconds.
    pub created_at: i64,
    /// The pack as a resource.
    pub uri: String,
}

impl From<PackRecord> for PackSummary {
    fn from(p: PackRecord) -> Self {
        Self {
            uri: format!("ctx://pack/{}", p.name),
            name: p.name,
            budget_tokens: p.budget_tokens,
            tokenizer: p.tokenizer.name().to_owned(),
            artifact_count: p.artifact_count,
            created_at: p.created_at,
        }
    }
}

/// One source of a pack.
#[derive(Debug, Serialize, JsonSchema)]
#[allow(clippy::struct_field_names)] // `artifact_id` is the name used everywhere else
pub struct Artifact {
    /// Stable id (12 hex digits of the source's hash).
    pub artifact_id: String,
    /// file, file_range, md, md_dir, glob, git_diff, cmd or text.
    pub kind: String,
    /// The source URI as stored (paths relative to the project root).
    pub uri: String,
    /// Higher priorities render first.
    pub priority: i64,
    /// Order of addition.
    pub seq: u64,
    /// Whether it expands to many files (md_dir, glob, git_diff).
    pub collection: bool,
    /// Whether sensitive files are included.
    pub allow_sensitive: bool,
}

impl From<ArtifactView> for Artifact {
    fn from(a: ArtifactView) -> Self {
        Self {
            artifact_id: a.artifact_id,
            kind: a.kind.to_owned(),
            uri: a.uri,
            priority: a.priority,
            seq: a.seq,
            collection: a.collection,
            allow_sensitive: a.allow_sensitive,
        }
    }
}

/// A recorded snapshot.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SnapshotSummary {
    /// The snapshot's id, `sha256:…`.
    pub snapshot_id: String,
    /// Its label, if one was given.
    pub label: Option<String>,
    /// The packs rendered, in order.
    pub packs: Vec<String>,
    /// Hash of the packs, policy and included content.
    pub render_hash: String,
    /// Hash of the payload bytes.
    pub payload_hash: String,
    /// Tokens of the payload.
    pub tokens: u64,
    /// When it was recorded, Unix seconds.
    pub created_at: i64,
    /// The payload as a resource.
    pub uri: String,
}

impl From<&SnapshotRecord> for SnapshotSummary {
    fn from(s: &SnapshotRecord) -> Self {
        Self {
            snapshot_id: s.snapshot_id.to_string(),
            label: s.label.clone(),
            packs: s.packs.clone(),
            render_hash: s.render_hash.to_string(),
            payload_hash: s.payload_object.to_string(),
            tokens: s.tokens,
            created_at: s.created_at,
            uri: format!("ctx://snapshot/{}", s.snapshot_id),
        }
    }
}

// ---- ctx_packs_list ------------------------------------------------------------------------

/// Arguments of ctx_packs_list.
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

/// Answer of ctx_packs_list.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListAnswer {
    /// Packs in name order.
    pub packs: Vec<PackSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn packs_list(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: ListArgs = call.parse()?;
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let list = call.with(|ws| Ok(ws.pack_list()?))?;
    let answer = ListAnswer {
        packs: list.into_iter().map(PackSummary::from).collect(),
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(&answer, &[Section::Items("packs")], &request, text::outline)
}

// ---- ctx_packs_get -------------------------------------------------------------------------

/// Arguments of ctx_packs_get.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The pack's name.
    pub pack: String,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_packs_get.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GetAnswer {
    /// The pack.
    pub pack: PackSummary,
    /// Its sources in render order (priority descending, then order of addition).
    pub artifacts: Vec<Artifact>,
    /// Snapshots that rendered this pack, newest first.
    pub snapshots: Vec<SnapshotSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn packs_get(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: GetArgs = call.parse()?;
    let request = call.page_request(args.max_tokens, args.cursor.as_deref(), "")?;
    let answer = call.with(|ws| {
        let view = ws.pack_show(&args.pack)?;
        let snapshots = ws
            .pack_snapshots()?
            .iter()
            .filter(|s| s.packs.contains(&args.pack))
            .map(SnapshotSummary::from)
            .collect();
        let mut pack = view.pack;
        pack.artifact_count = view.artifacts.len() as u64;
        Ok(GetAnswer {
            pack: pack.into(),
            artifacts: view.artifacts.into_iter().map(Artifact::from).collect(),
            snapshots,
            next_cursor: None,
            page: PageInfo::default(),
        })
    })?;
    call.paged(
        &answer,
        &[Section::Items("artifacts"), Section::Items("snapshots")],
        &request,
        text::outline,
    )
}

// ---- ctx_packs_preview ---------------------------------------------------------------------

fn parse_style(call: &Call<'_>, style: Option<&str>) -> Result<PayloadStyle, ToolError> {
    style.map_or(Ok(PayloadStyle::default()), |s| {
        s.parse()
            .map_err(|e: String| ToolError::invalid(call.tool, format!("`style`: {e}")))
    })
}

fn check_packs(call: &Call<'_>, names: &[String]) -> Result<(), ToolError> {
    if names.is_empty() {
        return Err(ToolError::invalid(
            call.tool,
            "`packs` is empty; name at least one pack (ctx_packs_list lists them)",
        ));
    }
    Ok(())
}

/// Arguments of ctx_packs_preview.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewArgs {
    /// Packs to render, in order; the first one's budget and tokenizer apply.
    pub packs: Vec<String>,
    /// Token budget instead of the first pack's.
    #[serde(default)]
    pub budget: Option<u64>,
    /// Payload style: markdown (default), xml, plain or json.
    #[serde(default)]
    pub style: Option<String>,
    /// Also return the payload text (default false: only the report).
    #[serde(default)]
    pub show_payload: bool,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_packs_preview.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PreviewPage {
    #[serde(flatten)]
    pub answer: ctx::answers::PreviewAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn packs_preview(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: PreviewArgs = call.parse()?;
    check_packs(call, &args.packs)?;
    let style = parse_style(call, args.style.as_deref())?;
    // Check paging arguments before the (possibly long) render.
    call.page_request(args.max_tokens, None, "")?;
    let answer = call.with(|ws| {
        Ok(ws.pack_preview(
            &RenderRequest {
                packs: args.packs.clone(),
                budget: args.budget,
                tokenizer: None,
                style,
            },
            PayloadOptions::default(),
            args.show_payload,
            &ctx::core::NoProgress,
        )?)
    })?;
    // The cursor is tied to the payload too: if files changed between pages, say so.
    let request = call.page_request(
        args.max_tokens,
        args.cursor.as_deref(),
        &answer.payload_hash,
    )?;
    let answer = PreviewPage {
        answer,
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(
        &answer,
        &[
            Section::Items("included"),
            Section::Items("excluded"),
            Section::Items("redactions"),
            Section::Text("payload"),
        ],
        &request,
        text::payload,
    )
}

// ---- ctx_packs_render ----------------------------------------------------------------------

/// Arguments of ctx_packs_render.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenderArgs {
    /// Packs to render, in order (records a snapshot). Give this or snapshot_id.
    #[serde(default)]
    pub packs: Option<Vec<String>>,
    /// A snapshot to return byte for byte: its id (sha256:…), a unique prefix, or its label. Give this or packs.
    #[serde(default)]
    pub snapshot_id: Option<String>,
    /// Token budget instead of the first pack's (with packs only).
    #[serde(default)]
    pub budget: Option<u64>,
    /// Payload style: markdown (default), xml, plain or json (with packs only).
    #[serde(default)]
    pub style: Option<String>,
    /// Token cap of the answer (default 8000); the rest is paged.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// next_cursor of the previous page of this call.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Answer of ctx_packs_render.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RenderPage {
    #[serde(flatten)]
    pub answer: ctx::answers::RenderAnswer,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
    /// Where this page sits in the whole answer.
    pub page: PageInfo,
}

fn packs_render(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: RenderArgs = call.parse()?;
    let style = parse_style(call, args.style.as_deref())?;
    let continued = args
        .cursor
        .as_deref()
        .map(crate::paging::Cursor::parse)
        .transpose()?;
    let (snapshot, bytes) = call.with(|ws| {
        if let Some(cursor) = &continued {
            // Later pages come from the snapshot the first page recorded, so they fit together.
            let (snapshot, bytes) = ws.pack_snapshot_payload(&format!("sha256:{}", cursor.pin))
                .map_err(|_| {
                    ToolError::BadCursor(
                        "this cursor names no snapshot in this store; leave `cursor` out to start over".into(),
                    )
                })?;
            if let Some(reference) = &args.snapshot_id {
                let named = ws.pack_snapshot_record(reference)?;
                if named.snapshot_id != snapshot.snapshot_id {
                    return Err(ToolError::BadCursor(
                        "this cursor belongs to another snapshot; repeat the call that returned it with only `cursor` changed".into(),
                    ));
                }
            }
            if let Some(names) = &args.packs
                && *names != snapshot.packs
            {
                return Err(ToolError::BadCursor(
                    "this cursor belongs to a render of other packs; repeat the call that returned it with only `cursor` changed".into(),
                ));
            }
            return Ok((snapshot, bytes));
        }
        match (&args.packs, &args.snapshot_id) {
            (Some(_), Some(_)) => Err(ToolError::invalid(
                call.tool,
                "give either `packs` (to render and record a snapshot) or `snapshot_id` (to return a recorded payload), not both",
            )),
            (None, None) => Err(ToolError::invalid(
                call.tool,
                "name `packs` to render, or `snapshot_id` to return a recorded payload",
            )),
            (None, Some(reference)) => {
                if args.budget.is_some() || args.style.is_some() {
                    return Err(ToolError::invalid(
                        call.tool,
                        "`budget` and `style` apply to renders of `packs`; a snapshot's payload is returned as recorded",
                    ));
                }
                Ok(ws.pack_snapshot_payload(reference)?)
            }
            (Some(names), None) => {
                check_packs(call, names)?;
                let (snapshot, rendered) = ws.pack_snapshot(
                    &RenderRequest {
                        packs: names.clone(),
                        budget: args.budget,
                        tokenizer: None,
                        style,
                    },
                    None,
                )?;
                Ok((snapshot, rendered.payload.into_bytes()))
            }
        }
    })?;
    let payload = String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(
            ctx::ErrorKind::Damaged,
            format!(
                "snapshot {} holds a payload that is not UTF-8; run `ctx store verify`",
                snapshot.snapshot_id
            ),
        )
    })?;
    let hex = snapshot.snapshot_id.to_string();
    let hex = hex.strip_prefix("sha256:").unwrap_or(&hex);
    let mut request = call.page_request(args.max_tokens, None, "")?;
    hex.clone_into(&mut request.pin);
    if let Some(cursor) = &continued {
        request.start = cursor.start;
    }
    let answer = RenderPage {
        answer: ctx::answers::RenderAnswer::of_snapshot(&snapshot, payload),
        next_cursor: None,
        page: PageInfo::default(),
    };
    call.paged(
        &answer,
        &[Section::Text("payload")],
        &request,
        text::payload,
    )
}

// ---- ctx_packs_snapshot --------------------------------------------------------------------

/// Arguments of ctx_packs_snapshot.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotArgs {
    /// Packs to render, in order; the first one's budget and tokenizer apply.
    pub packs: Vec<String>,
    /// A label to find the snapshot by later (e.g. v1.0).
    #[serde(default)]
    pub label: Option<String>,
    /// Token budget instead of the first pack's.
    #[serde(default)]
    pub budget: Option<u64>,
    /// Payload style: markdown (default), xml, plain or json.
    #[serde(default)]
    pub style: Option<String>,
}

/// Answer of ctx_packs_snapshot.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SnapshotAnswer {
    /// The snapshot recorded.
    pub snapshot: SnapshotSummary,
    /// Number of parts included.
    pub included_count: u64,
    /// Number of parts left out.
    pub excluded_count: u64,
    /// The token budget applied.
    pub budget_tokens: u64,
}

fn packs_snapshot(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: SnapshotArgs = call.parse()?;
    check_packs(call, &args.packs)?;
    let style = parse_style(call, args.style.as_deref())?;
    let (snapshot, rendered) = call.with(|ws| {
        Ok(ws.pack_snapshot(
            &RenderRequest {
                packs: args.packs.clone(),
                budget: args.budget,
                tokenizer: None,
                style,
            },
            args.label.as_deref(),
        )?)
    })?;
    Ok(Call::whole(
        &SnapshotAnswer {
            snapshot: SnapshotSummary::from(&snapshot),
            included_count: rendered.report.included.len() as u64,
            excluded_count: rendered.report.excluded.len() as u64,
            budget_tokens: rendered.report.budget_tokens,
        },
        text::outline,
    ))
}

// ---- write tools ---------------------------------------------------------------------------

/// Arguments of ctx_packs_create.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// The pack's name: letters, digits, `.`, `_` and `-`, starting with a letter or digit.
    pub name: String,
    /// Token budget of a render (default: the `budget` setting).
    #[serde(default)]
    pub budget: Option<u64>,
    /// Tokenizer: o200k_base, cl100k_base or approx (default: the `tokenizer` setting).
    #[serde(default)]
    pub tokenizer: Option<String>,
}

fn packs_create(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: CreateArgs = call.parse()?;
    let tokenizer = args
        .tokenizer
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: ctx::core::tokenizer::UnknownTokenizer| {
            ToolError::invalid(call.tool, format!("`tokenizer`: {e}"))
        })?;
    let pack = call.with(|ws| Ok(ws.pack_create(&args.name, args.budget, tokenizer)?))?;
    Ok(Call::whole(&PackSummary::from(pack), text::outline))
}

/// Arguments of ctx_packs_add.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddArgs {
    /// The pack.
    pub pack: String,
    /// The source URI: file:PATH, file:PATH#L10-L50, md:PATH, md_dir:DIR, glob:PATTERN, git:diff [--base=REV --head=REV] or text:STRING.
    pub source: String,
    /// Higher priorities render first and survive tight budgets (default 0).
    #[serde(default)]
    pub priority: i64,
    /// md_dir: include subdirectories.
    #[serde(default)]
    pub recursive: bool,
    /// Collections: at most this many files (the first in byte order).
    #[serde(default)]
    pub max_files: Option<u64>,
    /// Collections: leave out files matching these globs.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// Answer of ctx_packs_add.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AddAnswer {
    /// The pack.
    pub pack: String,
    /// The source as stored.
    pub artifact: Artifact,
    /// For collections: how many files match now (they expand again at each render).
    pub matches: Option<u64>,
    /// Things worth knowing (no matches yet, sensitive files skipped).
    pub warnings: Vec<String>,
}

fn packs_add(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: AddArgs = call.parse()?;
    let (scheme, rest) = args.source.split_once(':').unwrap_or(("", ""));
    match scheme {
        "cmd" => {
            return Err(ToolError::invalid(
                call.tool,
                "cmd: sources run commands and cannot be added over MCP; add them with `ctx pack add` on the command line",
            ));
        }
        "file" | "md" | "md_dir" => {
            let path = if scheme == "file" {
                rest.rsplit_once('#').map_or(rest, |(p, _)| p)
            } else {
                rest
            };
            call.workspace
                .resolve(if path.is_empty() { "." } else { path })?;
        }
        _ => {}
    }
    let options = AddOptions {
        recursive: args.recursive,
        max_files: args.max_files,
        exclude: args.exclude.clone(),
        allow_sensitive: false,
    };
    let report = call
        .with(|ws| Ok(ws.pack_add(&args.pack, &args.source, &options, args.priority)?))
        .map_err(|err| err.reworded(sensitive_in_tool_words))?;
    Ok(Call::whole(
        &AddAnswer {
            pack: report.pack,
            artifact: report.artifact.into(),
            matches: report.matches.map(|n| n as u64),
            warnings: report
                .warnings
                .iter()
                .map(|w| sensitive_in_tool_words(w))
                .collect(),
        },
        text::outline,
    ))
}

/// The library's hints about sensitive files name the CLI's `--allow-sensitive`, which MCP
/// never offers: say so instead.
fn sensitive_in_tool_words(message: &str) -> String {
    message
        .replace(
            "pass --allow-sensitive to add it anyway",
            "sensitive files cannot be added over MCP; leave it out",
        )
        .replace(
            "add --allow-sensitive to include them",
            "sensitive files are never added over MCP",
        )
}

/// Arguments of ctx_packs_remove.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveArgs {
    /// The pack.
    pub pack: String,
    /// The artifact's id, or a unique prefix of it, as ctx_packs_get lists it.
    pub artifact_id: String,
}

/// Answer of ctx_packs_remove.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RemoveAnswer {
    /// The pack.
    pub pack: String,
    /// The id of the artifact removed.
    pub artifact_id: String,
    /// Its source URI.
    pub uri: String,
}

fn packs_remove(call: &Call<'_>) -> Result<Page, ToolError> {
    let args: RemoveArgs = call.parse()?;
    let removed = call.with(|ws| Ok(ws.pack_remove(&args.pack, &args.artifact_id)?))?;
    Ok(Call::whole(
        &RemoveAnswer {
            pack: args.pack,
            artifact_id: removed.artifact_id,
            uri: removed.uri,
        },
        text::outline,
    ))
}
