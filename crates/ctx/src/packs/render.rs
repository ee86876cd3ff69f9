//! The deterministic render: order, expand, redact, count, budget, frame, concatenate, hash.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use ctx_core::redact::RedactionFinding;
use ctx_core::{ContentHash, NoProgress, Progress, TokenizerKind, canonical};
use ctx_sources::{ExpandOptions, Skip, SourceSpec, Unit, UnitKind, expand};
use ctx_store::{Metadata, SnapshotItemRecord, SnapshotRecord};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::payload::{BlockHeader, Frame, PayloadOptions, PayloadStyle, write_block};
use super::{PackContext, PackSettings, spec_of};
use crate::error::CtxError;

/// What to render.
#[derive(Debug, Clone, Default)]
pub struct RenderRequest {
    /// Packs in order; the first one's budget and tokenizer apply unless overridden.
    pub packs: Vec<String>,
    pub budget: Option<u64>,
    pub tokenizer: Option<TokenizerKind>,
    pub style: PayloadStyle,
}

/// The effective policy: everything besides the sources that decides the payload. It is part
/// of the render hash, so changing any of it changes the hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderPolicy {
    pub budget_tokens: u64,
    pub tokenizer: TokenizerKind,
    pub style: PayloadStyle,
    pub max_file_bytes: u64,
    /// The redaction rules in force, by id.
    pub redaction_rules: Vec<String>,
    /// The payload format version: bumped when block layouts change.
    pub format: u32,
    /// Content hashes in headers, numbered lines.
    #[serde(default)]
    pub options: PayloadOptions,
}

/// Version 2: a head (intro, tree), headers without hashes (unless asked), a summary.
const PAYLOAD_FORMAT: u32 = 2;

/// A unit that made it into the payload.
#[derive(Debug, Clone, Serialize)]
pub struct IncludedItem {
    pub pack: String,
    pub artifact_id: String,
    /// `file`, `diff`, `log`, `command` or `text`.
    pub kind: UnitKind,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<[u64; 2]>,
    pub content_hash: ContentHash,
    pub tokens: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A unit left out, and why.
#[derive(Debug, Clone, Serialize)]
pub struct ExcludedItem {
    pub pack: String,
    pub artifact_id: String,
    pub path: String,
    /// `over_budget`, `duplicate`, `binary`, `too_large`, `not_utf8`, `sensitive`, `missing`, …
    pub reason: String,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// Redactions of one rule on one line of one included unit (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RedactionSummary {
    pub artifact_id: String,
    pub path: String,
    pub line: u32,
    pub rule: String,
    pub count: u64,
}

/// What a render produced, besides the payload.
#[derive(Debug, Clone, Serialize)]
pub struct RenderReport {
    pub packs: Vec<String>,
    pub budget_tokens: u64,
    pub tokens_used: u64,
    /// Tokens of the head (intro, tree) and the tail (summary); part of `tokens_used`.
    pub frame_tokens: u64,
    /// Tokens held back for the head and tail while the budget was filled (at least
    /// `frame_tokens`): a part left out as `over_budget` did not fit in what remained.
    pub frame_reserve: u64,
    pub tokenizer: TokenizerKind,
    pub style: PayloadStyle,
    pub included: Vec<IncludedItem>,
    pub excluded: Vec<ExcludedItem>,
    pub redactions: Vec<RedactionSummary>,
    pub render_hash: ContentHash,
    pub payload_hash: ContentHash,
    pub payload_bytes: u64,
    /// Blocks whose count came from the token cache (not serialized: it varies run to run).
    #[serde(skip)]
    pub tokens_cached: u64,
    /// Blocks counted by this render (not serialized).
    #[serde(skip)]
    pub tokens_counted: u64,
}

/// One piece of a payload, in order: the head, each block, the tail. The pieces' bytes
/// concatenate to the payload, and their tokens add up to its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadPiece {
    pub bytes: usize,
    pub tokens: u64,
}

/// A render: the report, the payload, and every unit's outcome (for snapshots).
#[derive(Debug, Clone)]
pub struct Render {
    pub report: RenderReport,
    pub payload: String,
    pub policy: RenderPolicy,
    pub items: Vec<SnapshotItemRecord>,
    /// The payload's pieces, for cutting it into parts ([`super::split_payload`]).
    pub pieces: Vec<PayloadPiece>,
}

pub(crate) fn expand_options<'a>(
    root: &'a Path,
    settings: &'a PackSettings,
    progress: &'a dyn Progress,
) -> ExpandOptions<'a> {
    ExpandOptions {
        root,
        max_file_bytes: settings.max_file_bytes,
        sensitive: &settings.sensitive,
        command_timeout: settings.command_timeout,
        progress,
    }
}

/// Everything a render reads: where paths are relative to, settings, the token cache (when
/// a store is open), and the sources in order.
pub(crate) struct RenderJob<'a> {
    pub root: &'a Path,
    pub settings: &'a PackSettings,
    pub db: Option<&'a dyn Metadata>,
    /// Named packs (empty for a one-shot pack).
    pub packs: Vec<String>,
    /// Sources in render order.
    pub sources: Vec<JobSource>,
    pub policy: RenderPolicy,
}

/// One source of a render.
pub(crate) struct JobSource {
    pub pack: String,
    pub artifact_id: String,
    pub spec: SourceSpec,
    /// The directory its paths are relative to, when not the job's root (a global-store
    /// pack's own directory).
    pub root: Option<PathBuf>,
}

struct Ready {
    content_hash: ContentHash,
    /// The redacted text.
    content: String,
    findings: Vec<RedactionFinding>,
    /// The token-cache key of this unit's block.
    block_key: ContentHash,
}

struct Prepared {
    pack: String,
    artifact_id: String,
    unit: Unit,
    body: Result<Ready, (String, String)>,
}

fn append_block(
    payload: &mut String,
    policy: &RenderPolicy,
    unit: &Unit,
    content_hash: &ContentHash,
    content: &str,
) {
    let hash = content_hash.to_string();
    let header = BlockHeader {
        kind: unit.kind,
        label: &unit.label,
        lines: unit.lines.map(|r| (r.start, r.end)),
        hash: &hash,
        lang: unit.lang,
    };
    write_block(payload, policy.style, policy.options, &header, content);
}

fn make_block(
    policy: &RenderPolicy,
    unit: &Unit,
    content_hash: &ContentHash,
    content: &str,
) -> String {
    let mut out = String::with_capacity(content.len() + unit.label.len() + 128);
    append_block(&mut out, policy, unit, content_hash, content);
    out
}

/// The token-cache key of a block: a hash of everything the block's bytes are a function of
/// (style, options, header fields, and the content's hash), so the content is hashed once,
/// not twice.
fn block_identity(policy: &RenderPolicy, unit: &Unit, content_hash: &ContentHash) -> ContentHash {
    let mut hasher = ctx_core::ContentHasher::new();
    let lines = unit
        .lines
        .map(|r| format!("{}-{}", r.start, r.end))
        .unwrap_or_default();
    let kind = format!("{:?}", unit.kind);
    let options = format!(
        "hashes={} numbers={}",
        policy.options.hashes, policy.options.line_numbers
    );
    for field in [
        "ctx-block-v2",
        policy.style.name(),
        &options,
        &kind,
        &unit.label,
        &lines,
        unit.lang,
        &content_hash.to_string(),
    ] {
        hasher.update(&(field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    hasher.finish()
}

/// Counts blocks through the store's token cache (when there is one), counting the misses in
/// parallel.
struct BlockCounter<'a> {
    db: Option<&'a dyn Metadata>,
    progress: &'a dyn Progress,
    tokenizer: TokenizerKind,
    cached: u64,
    counted: u64,
}

impl BlockCounter<'_> {
    /// Token counts of the blocks keyed by `keys`; `build(i)` writes block `i`, called only for
    /// cache misses (in parallel), so a warm render builds no block text at all.
    fn count_all(
        &mut self,
        keys: &[ContentHash],
        build: impl Fn(usize) -> String + Sync,
    ) -> Result<Vec<u64>, CtxError> {
        let mut counts = vec![None; keys.len()];
        let cache = self.db.filter(|_| self.tokenizer.is_exact());
        if let Some(db) = cache {
            for (slot, key) in counts.iter_mut().zip(keys) {
                *slot = db.cached_token_count(key, self.tokenizer)?;
            }
        }
        let misses: Vec<usize> = (0..keys.len()).filter(|&i| counts[i].is_none()).collect();
        let tokenizer = self.tokenizer;
        // Single texts (head, tail) are counted without a phase of their own.
        let progress = (misses.len() > 1).then_some(self.progress);
        if let Some(progress) = progress {
            progress.phase("tokenize", Some(misses.len() as u64));
        }
        let fresh: Vec<(usize, u64)> = misses
            .par_iter()
            .map(|&i| {
                let count = tokenizer.count(&build(i)) as u64;
                if let Some(progress) = progress {
                    progress.advance(1);
                }
                (i, count)
            })
            .collect();
        self.cached += (keys.len() - fresh.len()) as u64;
        self.counted += fresh.len() as u64;
        let mut to_cache = Vec::with_capacity(fresh.len());
        for (i, count) in fresh {
            counts[i] = Some(count);
            to_cache.push((keys[i], count));
        }
        if let Some(db) = cache
            && !to_cache.is_empty()
        {
            if let Some(progress) = progress {
                progress.phase("save counts", None);
            }
            db.cache_token_counts(self.tokenizer, &to_cache)?;
        }
        Ok(counts.into_iter().map(|c| c.unwrap_or(0)).collect())
    }

    fn count_text(&mut self, text: &str) -> Result<u64, CtxError> {
        let key = ContentHash::of(text.as_bytes());
        Ok(self.count_all(&[key], |_| text.to_owned())?[0])
    }
}

/// What a render's hash covers (seed 000 §4.1).
#[derive(Serialize)]
struct RenderIdentity<'a> {
    packs: &'a [String],
    policy: &'a RenderPolicy,
    included: Vec<ContentHash>,
}

/// What a snapshot's id covers.
#[derive(Serialize)]
struct SnapshotIdentity<'a> {
    packs: &'a [String],
    policy: &'a RenderPolicy,
    render_hash: ContentHash,
    payload_hash: ContentHash,
}

/// Renders packs into a payload and a report. Pure in its inputs: the same packs, policy and
/// files give the same bytes and hashes, from any working directory, in any locale.
pub fn render(ctx: &PackContext<'_>, request: &RenderRequest) -> Result<Render, CtxError> {
    render_with_progress(ctx, request, &NoProgress)
}

/// [`render`], reporting its phases (walk, read, redact, tokenize) to `progress`.
pub fn render_with_progress(
    ctx: &PackContext<'_>,
    request: &RenderRequest,
    progress: &dyn Progress,
) -> Result<Render, CtxError> {
    render_with(ctx, request, PayloadOptions::default(), progress)
}

/// [`render_with_progress`] with payload options (hashes in headers, line numbers).
pub fn render_with(
    ctx: &PackContext<'_>,
    request: &RenderRequest,
    options: PayloadOptions,
    progress: &dyn Progress,
) -> Result<Render, CtxError> {
    let rendered = pack_job(ctx, request, options).and_then(|job| run_job(&job, progress));
    progress.finish();
    rendered
}

/// The policy for a render of `budget`, `tokenizer`, `style` and `options` under `settings`.
pub(crate) fn policy_for(
    settings: &PackSettings,
    budget_tokens: u64,
    tokenizer: TokenizerKind,
    style: PayloadStyle,
    options: PayloadOptions,
) -> RenderPolicy {
    RenderPolicy {
        budget_tokens,
        tokenizer,
        style,
        max_file_bytes: settings.max_file_bytes,
        redaction_rules: settings
            .redactor
            .rule_ids()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        format: PAYLOAD_FORMAT,
        options,
    }
}

fn pack_job<'a>(
    ctx: &'a PackContext<'a>,
    request: &RenderRequest,
    options: PayloadOptions,
) -> Result<RenderJob<'a>, CtxError> {
    if request.packs.is_empty() {
        return Err(CtxError::InvalidInput(
            "name at least one pack to render".into(),
        ));
    }
    let mut packs: Vec<String> = Vec::new();
    for name in &request.packs {
        if !packs.contains(name) {
            packs.push(name.clone());
        }
    }
    let first = ctx.store.db().require_pack(&packs[0])?;
    for name in &packs[1..] {
        ctx.store.db().require_pack(name)?;
    }
    let policy = policy_for(
        &ctx.settings,
        request.budget.unwrap_or(first.budget_tokens),
        request.tokenizer.unwrap_or(first.tokenizer),
        request.style,
        options,
    );
    // Order: packs as given; within a pack priority DESC, then added order.
    let mut sources = Vec::new();
    for pack in &packs {
        let root = ctx.store.db().require_pack(pack)?.root.map(PathBuf::from);
        for record in ctx.store.db().artifacts(pack)? {
            sources.push(JobSource {
                pack: pack.clone(),
                spec: spec_of(&record)?,
                artifact_id: record.artifact_id,
                root: root.clone(),
            });
        }
    }
    Ok(RenderJob {
        root: &ctx.root,
        settings: &ctx.settings,
        db: Some(ctx.store.db()),
        packs,
        sources,
        policy,
    })
}

/// Which included units the budget keeps: greedy in order over blocks, with `reserve` tokens
/// held back for the frame.
fn fill(counts: &[Option<u64>], budget: u64, reserve: u64) -> (Vec<bool>, u64) {
    let room = budget.saturating_sub(reserve);
    let mut used = 0;
    let keep = counts
        .iter()
        .map(|count| match count {
            Some(tokens) if reserve <= budget && used + tokens <= room => {
                used += tokens;
                true
            }
            _ => false,
        })
        .collect();
    (keep, used)
}

pub(crate) fn run_job(job: &RenderJob<'_>, progress: &dyn Progress) -> Result<Render, CtxError> {
    let policy = &job.policy;
    // Collections expand in place, in byte order, reporting walk and read phases.
    let singles = job
        .sources
        .iter()
        .filter(|source| !source.spec.source.is_collection())
        .count();
    let mut units = Vec::new();
    for source in &job.sources {
        let root = source.root.as_deref().unwrap_or(job.root);
        let options = expand_options(root, job.settings, progress);
        let collection = source.spec.source.is_collection();
        if !collection && singles > 1 && units.is_empty() {
            progress.phase("read", Some(singles as u64));
        }
        for unit in expand(&source.spec, &options) {
            units.push((source.pack.clone(), source.artifact_id.clone(), unit));
        }
        if !collection && singles > 1 {
            progress.advance(1);
        }
    }
    let mut seen = HashSet::new();
    let duplicate: Vec<bool> = units
        .iter()
        .map(|(_, _, unit)| unit.body.is_ok() && !seen.insert(unit.key.clone()))
        .collect();

    let redactor = &job.settings.redactor;
    progress.phase("redact", Some(units.len() as u64));
    let prepared: Vec<Prepared> = units
        .into_par_iter()
        .zip(duplicate)
        .map(|((pack, artifact_id, mut unit), dup)| {
            let body = match std::mem::replace(&mut unit.body, Err(Skip::Missing)) {
                Ok(_) if dup => Err((
                    "duplicate".to_owned(),
                    format!("{} is already included", unit.key),
                )),
                Ok(text) => {
                    let redacted = redactor.redact(&text);
                    let findings = redacted.findings;
                    let content = redacted.text.into_owned();
                    let content_hash = ContentHash::of(content.as_bytes());
                    let block_key = block_identity(policy, &unit, &content_hash);
                    Ok(Ready {
                        content_hash,
                        content,
                        findings,
                        block_key,
                    })
                }
                Err(skip) => Err((skip.code().to_owned(), skip.to_string())),
            };
            progress.advance(1);
            Prepared {
                pack,
                artifact_id,
                unit,
                body,
            }
        })
        .collect();

    let mut counter = BlockCounter {
        db: job.db,
        progress,
        tokenizer: policy.tokenizer,
        cached: 0,
        counted: 0,
    };
    let ready: Vec<(&Unit, &Ready)> = prepared
        .iter()
        .filter_map(|p| p.body.as_ref().ok().map(|r| (&p.unit, r)))
        .collect();
    let keys: Vec<ContentHash> = ready.iter().map(|(_, r)| r.block_key).collect();
    let mut ready_counts = counter
        .count_all(&keys, |i| {
            let (unit, r) = ready[i];
            make_block(policy, unit, &r.content_hash, &r.content)
        })?
        .into_iter();
    drop(ready);
    let counts: Vec<Option<u64>> = prepared
        .iter()
        .map(|p| {
            p.body
                .as_ref()
                .ok()
                .map(|_| ready_counts.next().expect("one count per ready block"))
        })
        .collect();

    // Budget: fill greedily with a reserve for the head and tail; if the frame of what was
    // kept needs more than the reserve, raise it and fill again (the reserve only grows, and
    // is bounded by the largest frame, so this ends).
    let budget = policy.budget_tokens;
    let mut reserve = 0u64;
    let (keep, blocks_used, (head, head_tokens), (tail, tail_tokens)) = loop {
        let (keep, blocks_used) = fill(&counts, budget, reserve);
        let frame = frame_of(job, &prepared, &counts, &keep, blocks_used);
        let (head, tail) = (frame.head(policy.style), frame.tail(policy.style));
        let (head_tokens, tail_tokens) = (counter.count_text(&head)?, counter.count_text(&tail)?);
        let frame_tokens = head_tokens + tail_tokens;
        if frame_tokens <= reserve {
            break (keep, blocks_used, (head, head_tokens), (tail, tail_tokens));
        }
        if frame_tokens > budget {
            // Not even the frame fits: an empty payload.
            let keep = vec![false; counts.len()];
            break (keep, 0, (String::new(), 0), (String::new(), 0));
        }
        reserve = frame_tokens.max(reserve + 1);
    };
    let frame_tokens = head_tokens + tail_tokens;
    let used = blocks_used + frame_tokens;

    let mut payload = String::with_capacity(head.len() + tail.len());
    payload.push_str(&head);
    let mut pieces = Vec::new();
    if !head.is_empty() {
        pieces.push(PayloadPiece {
            bytes: head.len(),
            tokens: head_tokens,
        });
    }
    let mut included = Vec::new();
    let mut excluded = Vec::new();
    let mut redactions: BTreeMap<(String, String, u32, String), u64> = BTreeMap::new();
    let mut items = Vec::new();
    // Consumed as the payload grows, so each block's memory is freed once it is copied.
    for (position, ((p, count), fits)) in prepared.into_iter().zip(&counts).zip(keep).enumerate() {
        let path = p.unit.label.clone();
        let item_key = format!("{}:{}", p.artifact_id, p.unit.key);
        match (&p.body, count) {
            (Ok(ready), Some(tokens)) => {
                let tokens = *tokens;
                if fits {
                    let before = payload.len();
                    append_block(
                        &mut payload,
                        policy,
                        &p.unit,
                        &ready.content_hash,
                        &ready.content,
                    );
                    pieces.push(PayloadPiece {
                        bytes: payload.len() - before,
                        tokens,
                    });
                    for finding in &ready.findings {
                        *redactions
                            .entry((
                                p.artifact_id.clone(),
                                path.clone(),
                                finding.line,
                                finding.rule.clone(),
                            ))
                            .or_default() += 1;
                    }
                    included.push(IncludedItem {
                        pack: p.pack.clone(),
                        artifact_id: p.artifact_id.clone(),
                        kind: p.unit.kind,
                        path,
                        lines: p.unit.lines.map(|r| [r.start, r.end]),
                        content_hash: ready.content_hash,
                        tokens,
                        notes: p.unit.notes.clone(),
                    });
                } else {
                    excluded.push(ExcludedItem {
                        pack: p.pack.clone(),
                        artifact_id: p.artifact_id.clone(),
                        path,
                        reason: "over_budget".into(),
                        detail: over_budget_detail(tokens, budget, reserve),
                        tokens: Some(tokens),
                    });
                }
                items.push(SnapshotItemRecord {
                    position: position as u64,
                    item_key,
                    content_hash: Some(ready.content_hash),
                    tokens,
                    included: fits,
                    reason: (!fits).then(|| "over_budget".to_owned()),
                });
            }
            (Err((reason, detail)), _) => {
                excluded.push(ExcludedItem {
                    pack: p.pack.clone(),
                    artifact_id: p.artifact_id.clone(),
                    path,
                    reason: reason.clone(),
                    detail: detail.clone(),
                    tokens: None,
                });
                items.push(SnapshotItemRecord {
                    position: position as u64,
                    item_key,
                    content_hash: None,
                    tokens: 0,
                    included: false,
                    reason: Some(reason.clone()),
                });
            }
            (Ok(_), None) => unreachable!("every ready unit is counted"),
        }
    }
    if !tail.is_empty() {
        pieces.push(PayloadPiece {
            bytes: tail.len(),
            tokens: tail_tokens,
        });
    }
    payload.push_str(&tail);
    debug_assert_eq!(pieces.iter().map(|p| p.bytes).sum::<usize>(), payload.len());

    let render_hash = canonical::hash(&RenderIdentity {
        packs: &job.packs,
        policy,
        included: included.iter().map(|i| i.content_hash).collect(),
    })
    .expect("render identities serialize");
    let report = RenderReport {
        packs: job.packs.clone(),
        budget_tokens: budget,
        tokens_used: used,
        frame_tokens,
        frame_reserve: reserve,
        tokenizer: policy.tokenizer,
        style: policy.style,
        included,
        excluded,
        redactions: redactions
            .into_iter()
            .map(
                |((artifact_id, path, line, rule), count)| RedactionSummary {
                    artifact_id,
                    path,
                    line,
                    rule,
                    count,
                },
            )
            .collect(),
        render_hash,
        payload_hash: ContentHash::of(payload.as_bytes()),
        payload_bytes: payload.len() as u64,
        tokens_cached: counter.cached,
        tokens_counted: counter.counted,
    };
    Ok(Render {
        report,
        payload,
        policy: policy.clone(),
        items,
        pieces,
    })
}

fn over_budget_detail(tokens: u64, budget: u64, reserve: u64) -> String {
    format!(
        "needs {tokens} tokens; the budget is {budget}, {reserve} of it kept for the tree and summary"
    )
}

/// The head and tail's facts for a given choice of kept units.
fn frame_of(
    job: &RenderJob<'_>,
    prepared: &[Prepared],
    counts: &[Option<u64>],
    keep: &[bool],
    blocks_used: u64,
) -> Frame {
    let policy = &job.policy;
    let mut frame = Frame {
        options: policy.options,
        block_tokens: blocks_used,
        tokenizer: policy.tokenizer.to_string(),
        budget: policy.budget_tokens,
        ..Frame::default()
    };
    for ((p, count), &kept) in prepared.iter().zip(counts).zip(keep) {
        match (&p.body, count) {
            (Ok(ready), _) if kept => {
                frame.included.push((p.unit.kind, p.unit.label.clone()));
                for finding in &ready.findings {
                    let entry = frame.redactions.entry(finding.rule.clone()).or_default();
                    entry.0 += 1;
                    entry.1.insert(p.unit.label.clone());
                }
            }
            (Ok(_), count) => frame.excluded.push((
                p.unit.label.clone(),
                "over_budget".to_owned(),
                format!("needs {} tokens", count.unwrap_or(0)),
            )),
            (Err((reason, detail)), _) => {
                frame
                    .excluded
                    .push((p.unit.label.clone(), reason.clone(), detail.clone()));
            }
        }
    }
    frame
}

/// Renders and records a snapshot: the payload as an object, the items in the database.
pub fn snapshot(
    ctx: &PackContext<'_>,
    request: &RenderRequest,
    label: Option<&str>,
    now: i64,
) -> Result<(SnapshotRecord, Render), CtxError> {
    snapshot_with_progress(ctx, request, label, now, &NoProgress)
}

/// [`snapshot`], reporting the render's phases to `progress`.
pub fn snapshot_with_progress(
    ctx: &PackContext<'_>,
    request: &RenderRequest,
    label: Option<&str>,
    now: i64,
    progress: &dyn Progress,
) -> Result<(SnapshotRecord, Render), CtxError> {
    snapshot_with(
        ctx,
        request,
        PayloadOptions::default(),
        label,
        now,
        progress,
    )
}

/// [`snapshot_with_progress`] with payload options (they are part of the policy, so verify
/// re-renders with them).
pub fn snapshot_with(
    ctx: &PackContext<'_>,
    request: &RenderRequest,
    options: PayloadOptions,
    label: Option<&str>,
    now: i64,
    progress: &dyn Progress,
) -> Result<(SnapshotRecord, Render), CtxError> {
    if let Some(label) = label
        && (label.is_empty() || label.starts_with("sha256:"))
    {
        return Err(CtxError::InvalidInput(format!(
            "invalid snapshot label `{label}`; use a short name like v1.0"
        )));
    }
    let rendered = render_with(ctx, request, options, progress)?;
    let payload_object = ctx.store.objects().put(rendered.payload.as_bytes())?;
    let snapshot_id = canonical::hash(&SnapshotIdentity {
        packs: &rendered.report.packs,
        policy: &rendered.policy,
        render_hash: rendered.report.render_hash,
        payload_hash: payload_object,
    })
    .expect("snapshot identities serialize");
    let record = SnapshotRecord {
        snapshot_id,
        label: label.map(str::to_owned),
        packs: rendered.report.packs.clone(),
        policy_json: canonical::to_string(&rendered.policy).expect("policies serialize"),
        render_hash: rendered.report.render_hash,
        payload_object,
        tokens: rendered.report.tokens_used,
        created_at: now,
    };
    let stored = ctx.store.db().insert_snapshot(&record, &rendered.items)?;
    Ok((stored, rendered))
}

/// A snapshot's stored payload, byte for byte (checked against its hash on read).
pub fn render_snapshot(
    ctx: &PackContext<'_>,
    reference: &str,
) -> Result<(SnapshotRecord, Vec<u8>), CtxError> {
    let snapshot = ctx.store.db().find_snapshot(reference)?;
    let bytes = ctx.store.objects().get(&snapshot.payload_object)?;
    Ok((snapshot, bytes))
}

fn policy_of(snapshot: &SnapshotRecord) -> Result<RenderPolicy, CtxError> {
    serde_json::from_str(&snapshot.policy_json).map_err(|e| {
        CtxError::Corrupt(format!(
            "snapshot {} has an unreadable policy: {e}",
            snapshot.snapshot_id
        ))
    })
}

/// One difference between a snapshot and a fresh render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SnapshotDrift {
    /// The unit is still there but its content changed.
    ContentChanged {
        item: String,
        then: ContentHash,
        now: ContentHash,
    },
    /// The unit was in the snapshot and is gone (or can no longer be read).
    Gone {
        item: String,
        reason: Option<String>,
    },
    /// A collection now matches a unit the snapshot did not have.
    NewlyMatched { item: String },
    /// The same content moved in or out of the budget.
    BudgetMoved {
        item: String,
        was_included: bool,
        now_included: bool,
    },
    /// The effective policy (size limit, redaction rules, format) differs.
    PolicyChanged { then: String, now: String },
}

/// What `pack verify` found.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotVerify {
    pub snapshot_id: ContentHash,
    pub identical: bool,
    pub render_hash_then: ContentHash,
    pub render_hash_now: ContentHash,
    pub payload_hash_then: ContentHash,
    pub payload_hash_now: ContentHash,
    pub drift: Vec<SnapshotDrift>,
}

/// Re-renders a snapshot's packs with its policy and reports what changed, unit by unit.
pub fn verify_snapshot(ctx: &PackContext<'_>, reference: &str) -> Result<SnapshotVerify, CtxError> {
    let snapshot = ctx.store.db().find_snapshot(reference)?;
    let policy = policy_of(&snapshot)?;
    let then_items = ctx.store.db().snapshot_items(&snapshot.snapshot_id)?;
    let now = render_with(
        ctx,
        &RenderRequest {
            packs: snapshot.packs.clone(),
            budget: Some(policy.budget_tokens),
            tokenizer: Some(policy.tokenizer),
            style: policy.style,
        },
        policy.options,
        &NoProgress,
    )?;
    let mut drift = Vec::new();
    if now.policy != policy {
        drift.push(SnapshotDrift::PolicyChanged {
            then: snapshot.policy_json.clone(),
            now: canonical::to_string(&now.policy).expect("policies serialize"),
        });
    }
    let now_by_key: BTreeMap<&str, &SnapshotItemRecord> =
        now.items.iter().map(|i| (i.item_key.as_str(), i)).collect();
    let then_by_key: BTreeMap<&str, &SnapshotItemRecord> = then_items
        .iter()
        .map(|i| (i.item_key.as_str(), i))
        .collect();
    for then in &then_items {
        let item = then.item_key.clone();
        match (now_by_key.get(then.item_key.as_str()), then.content_hash) {
            (None, _) => drift.push(SnapshotDrift::Gone { item, reason: None }),
            (Some(current), Some(then_hash)) => match current.content_hash {
                None => drift.push(SnapshotDrift::Gone {
                    item,
                    reason: current.reason.clone(),
                }),
                Some(now_hash) if now_hash != then_hash => {
                    drift.push(SnapshotDrift::ContentChanged {
                        item,
                        then: then_hash,
                        now: now_hash,
                    });
                }
                Some(_) if current.included != then.included => {
                    drift.push(SnapshotDrift::BudgetMoved {
                        item,
                        was_included: then.included,
                        now_included: current.included,
                    });
                }
                Some(_) => {}
            },
            (Some(current), None) if current.content_hash.is_some() => {
                drift.push(SnapshotDrift::NewlyMatched { item });
            }
            (Some(_), None) => {}
        }
    }
    for current in &now.items {
        if !then_by_key.contains_key(current.item_key.as_str()) && current.content_hash.is_some() {
            drift.push(SnapshotDrift::NewlyMatched {
                item: current.item_key.clone(),
            });
        }
    }
    let payload_hash_now = now.report.payload_hash;
    let identical = drift.is_empty() && payload_hash_now == snapshot.payload_object;
    Ok(SnapshotVerify {
        snapshot_id: snapshot.snapshot_id,
        identical,
        render_hash_then: snapshot.render_hash,
        render_hash_now: now.report.render_hash,
        payload_hash_then: snapshot.payload_object,
        payload_hash_now,
        drift,
    })
}
