//! The deterministic render: order, expand, redact, count, budget, frame, concatenate, hash.
//!
//! A render runs in two passes so that its memory is bounded by a chunk of files, not by the
//! tree: the first reads, redacts and counts [`CHUNK_UNITS`] units at a time, keeping only
//! their hashes and counts (and the texts of the first [`RETAIN_BYTES`]); once the budget and
//! the frame are decided, the second writes the head, each kept block (reading again, a
//! [`WRITE_CHUNK_UNITS`] chunk at a time, a file whose text was not kept, and checking it is
//! unchanged) and the tail to the output as it goes.
//!
//! Beside the calling thread, pass one has a thread that reads the render cache's rows a chunk
//! ahead and one that stores fresh counts and rows a chunk behind; pass two has one that hashes
//! the payload, while blocks are made on the thread pool and written by the calling thread.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctx_core::redact::RedactionFinding;
use ctx_core::redact::Redactor;
use ctx_core::{ContentHash, ContentHasher, NoProgress, Progress, TokenizerKind, canonical};
use ctx_sources::{ExpandOptions, FileStamp, PlannedUnit, Skip, SourceSpec, Unit, UnitKind, plan};
use ctx_store::{Metadata, RenderFileRow, RenderPayloadRow, SnapshotItemRecord, SnapshotRecord};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::payload::{
    BlockHeader, Frame, PayloadOptions, PayloadStyle, verbatim_frame, write_block,
};
use super::{PackContext, PackSettings, spec_of};
use crate::code::STAMP_TRUST_NS;
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
    /// The payload's pieces, for cutting it into parts ([`Render::split_payload`]).
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
    /// Unix seconds now (the front end's clock), so the render cache remembers only stamps
    /// old enough to trust; `None` remembers nothing.
    pub now: Option<i64>,
    /// Spend the budget down the ladder of [`super::ladder`] (a one-shot pack) instead of in
    /// order (a pack's render, which a snapshot must reproduce).
    pub ladder: bool,
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

/// Units read, redacted and counted at a time in the first pass.
const CHUNK_UNITS: usize = 256;

/// Bytes of file text read a chunk at a time in the first pass (a chunk ends at
/// [`CHUNK_UNITS`] units or past this many bytes).
const CHUNK_BYTES: usize = 4 << 20;

/// Units, and bytes, written a chunk at a time in the second pass. Smaller than the first
/// pass's: its three stages (make, hash, write) run a chunk apart, so the first and last
/// chunks are not overlapped, and three chunks are in flight.
const WRITE_CHUNK_UNITS: usize = 64;
const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// Redacted file texts kept from the first pass for the second, in bytes. Past it a file is
/// read (and redacted) again when its block is written: a small tree is read once, a large
/// one holds at most this much besides the chunk at hand.
const RETAIN_BYTES: usize = 8 << 20;

struct Ready {
    content_hash: ContentHash,
    /// The BLAKE3 hash of the text before redaction: a file read again when written must
    /// still hash to it. (BLAKE3, not SHA-256: it runs several times faster, and every file a
    /// warm render writes is hashed with it.)
    raw_hash: RawHash,
    /// The redacted text, while it is kept (`None`: read again when written; only for files).
    content: Option<String>,
    findings: Vec<RedactionFinding>,
    /// The token-cache key of this unit's block.
    block_key: ContentHash,
    /// Planned from the render cache, without reading the file.
    from_cache: bool,
    /// The text's length (as remembered, for a unit planned from the cache).
    bytes: usize,
}

struct Prepared {
    /// The unit's source, by its place in the job's sources.
    source: usize,
    /// The unit (its body taken out) and how to read its file again.
    planned: PlannedUnit,
    body: Result<Ready, (String, String)>,
}

impl Prepared {
    fn unit(&self) -> &Unit {
        &self.planned.unit
    }
}

/// The BLAKE3 hash of a file's bytes as read.
type RawHash = [u8; 32];

fn raw_hash(bytes: &[u8]) -> RawHash {
    *blake3::hash(bytes).as_bytes()
}

/// A raw hash as the render cache keeps it.
fn raw_hash_text(hash: &RawHash) -> String {
    format!("blake3:{}", blake3::Hash::from_bytes(*hash).to_hex())
}

fn parse_raw_hash(text: &str) -> Option<RawHash> {
    let hex = text.strip_prefix("blake3:")?;
    blake3::Hash::from_hex(hex).ok().map(|h| *h.as_bytes())
}

/// A unit's text redacted: the text (the same string when nothing was redacted), its hash,
/// the hash before redaction, and the findings.
struct RedactedText {
    content: String,
    content_hash: ContentHash,
    raw_hash: RawHash,
    findings: Vec<RedactionFinding>,
}

fn redact_text(redactor: &Redactor, text: String) -> RedactedText {
    let raw_hash = raw_hash(text.as_bytes());
    let redacted = redactor.redact(&text);
    let findings = redacted.findings;
    let content = match redacted.text {
        Cow::Owned(changed) => changed,
        Cow::Borrowed(_) => text,
    };
    RedactedText {
        content_hash: ContentHash::of(content.as_bytes()),
        content,
        raw_hash,
        findings,
    }
}

/// Findings as the render cache keeps them: `line rule` per line.
fn encode_findings(findings: &[RedactionFinding]) -> String {
    let mut text = String::new();
    for finding in findings {
        text.push_str(&finding.line.to_string());
        text.push(' ');
        text.push_str(&finding.rule);
        text.push('\n');
    }
    text
}

fn decode_findings(text: &str) -> Option<Vec<RedactionFinding>> {
    text.lines()
        .map(|line| {
            let (number, rule) = line.split_once(' ')?;
            Some(RedactionFinding {
                line: number.parse().ok()?,
                rule: rule.to_owned(),
            })
        })
        .collect()
}

/// What the render cache says of a unit, when it says it all: the file's stamp as listed is
/// the one remembered, under the same redaction rules, block layout and tokenizer.
fn cached_unit(
    row: &RenderFileRow,
    stamp: FileStamp,
    rules: &str,
    policy: &RenderPolicy,
    unit: &Unit,
) -> Option<(Ready, u64)> {
    if !row.skip.is_empty()
        || !stamp_holds(row, stamp, policy.max_file_bytes)
        || row.rules != rules
        || row.tokenizer != policy.tokenizer.name()
    {
        return None;
    }
    let content_hash: ContentHash = row.content_hash.parse().ok()?;
    let block_key = block_identity(policy, unit, &content_hash);
    if row.block_key != block_key.to_text().as_str() {
        return None;
    }
    Some((
        Ready {
            content_hash,
            raw_hash: parse_raw_hash(&row.raw_hash)?,
            content: None,
            findings: decode_findings(&row.findings)?,
            block_key,
            from_cache: true,
            bytes: usize::try_from(row.size).unwrap_or(usize::MAX),
        },
        row.tokens,
    ))
}

/// Whether `row` speaks for the file listed with `stamp`: the stamp remembered is the stamp
/// listed, and the file is within the size limit (a file past it is left out as too large,
/// which its stamp alone tells, whatever the row says).
fn stamp_holds(row: &RenderFileRow, stamp: FileStamp, max_file_bytes: u64) -> bool {
    row.size == stamp.size
        && row.mtime_ns == stamp.mtime_ns
        && row.inode == stamp.inode
        && stamp.size <= max_file_bytes
}

/// A file the render cache says its bytes leave out, and why.
fn cached_skip(row: &RenderFileRow, stamp: FileStamp, max_file_bytes: u64) -> Option<Skip> {
    if row.skip.is_empty() || !stamp_holds(row, stamp, max_file_bytes) {
        return None;
    }
    decode_skip(&row.skip)
}

/// A skipped unit's reason and detail, as the report gives them.
fn skip_reason(skip: &Skip) -> (String, String) {
    (skip.code().to_owned(), skip.to_string())
}

/// A verdict of a file's bytes as the render cache keeps it (`binary`, `not_utf8 OFFSET`);
/// `None` for a skip that the bytes do not decide.
fn encode_skip(skip: &Skip) -> Option<String> {
    match skip {
        Skip::Binary => Some("binary".to_owned()),
        Skip::NotUtf8 { offset } => Some(format!("not_utf8 {offset}")),
        _ => None,
    }
}

fn decode_skip(text: &str) -> Option<Skip> {
    match text.split_once(' ') {
        None if text == "binary" => Some(Skip::Binary),
        Some(("not_utf8", offset)) => Some(Skip::NotUtf8 {
            offset: offset.parse().ok()?,
        }),
        _ => None,
    }
}

/// What the render cache answers for a unit.
enum Hit {
    /// Its block, planned without reading the file, and its count.
    Ready(Ready, u64),
    /// Why its bytes leave it out.
    Skipped(Skip),
}

/// The render cache of a job's store: looked up a chunk at a time, remembered a chunk at a
/// time (only stamps old enough to trust), forgotten for a file that changed unstamped.
struct RenderCache<'a> {
    db: &'a dyn Metadata,
    rules: String,
    /// Stamps modified after this (ns since the epoch) are not remembered.
    trust_before_ns: i64,
}

impl RenderCache<'_> {
    fn lookup(&self, paths: &[Option<String>]) -> Result<Vec<Option<RenderFileRow>>, CtxError> {
        let asked: Vec<&str> = paths.iter().flatten().map(String::as_str).collect();
        let mut found = self.db.render_files(&asked)?.into_iter();
        Ok(paths
            .iter()
            .map(|path| path.as_ref().and_then(|_| found.next().flatten()))
            .collect())
    }
}

/// The payload's bytes as they are written: to the output, into the hash, and counted.
struct PayloadSink<'a> {
    out: &'a mut dyn Write,
    hasher: ContentHasher,
    bytes: usize,
}

impl PayloadSink<'_> {
    fn write(&mut self, text: &str) -> Result<(), CtxError> {
        self.hasher.update(text.as_bytes());
        self.write_unhashed(text)
    }

    /// Writes a chunk's blocks, which another thread adds to the hash (in the same order),
    /// with vectored writes: a chunk larger than the output's buffer goes to the file
    /// without being copied into the buffer first.
    fn write_blocks_unhashed(&mut self, blocks: &[KeptBlock]) -> Result<(), CtxError> {
        let mut slices: Vec<IoSlice<'_>> = blocks
            .iter()
            .flat_map(KeptBlock::parts)
            .filter(|part| !part.is_empty())
            .map(IoSlice::new)
            .collect();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match self.out.write_vectored(rest) {
                Ok(0) => {
                    let source = std::io::Error::from(std::io::ErrorKind::WriteZero);
                    return Err(CtxError::WritePayload { source });
                }
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => return Err(CtxError::WritePayload { source }),
            }
        }
        self.bytes += blocks.iter().map(KeptBlock::len).sum::<usize>();
        Ok(())
    }

    /// Writes bytes that another thread adds to the hash (in the same order).
    fn write_unhashed(&mut self, text: &str) -> Result<(), CtxError> {
        self.out
            .write_all(text.as_bytes())
            .map_err(|source| CtxError::WritePayload { source })?;
        self.bytes += text.len();
        Ok(())
    }
}

fn append_block(
    payload: &mut String,
    policy: &RenderPolicy,
    unit: &Unit,
    content_hash: &ContentHash,
    content: &str,
) {
    let hash = content_hash.to_string();
    let header = block_header(unit, &hash);
    write_block(payload, policy.style, policy.options, &header, content);
}

/// The header of `unit`'s block, whose content hashes to `hash`.
fn block_header<'a>(unit: &'a Unit, hash: &'a str) -> BlockHeader<'a> {
    BlockHeader {
        kind: unit.kind,
        label: &unit.label,
        lines: unit.lines.map(|r| (r.start, r.end)),
        hash,
        lang: unit.lang,
    }
}

/// A kept block as it is written: `head + body + tail`. When the style holds the content as
/// it is, the body is the text as read (moved, not copied into one string with its frame).
#[derive(Debug)]
struct KeptBlock {
    head: String,
    /// The content as it is written: text, or bytes read again that hash to a text's.
    body: Vec<u8>,
    tail: String,
}

impl KeptBlock {
    /// A block made as one string.
    fn whole(block: String) -> Self {
        Self {
            head: block,
            body: Vec::new(),
            tail: String::new(),
        }
    }

    /// The block of `unit` around `content`, which it takes: a text's bytes, framed as they
    /// are where the style holds them verbatim; `None` if a style that rewrites them meets
    /// bytes that are not UTF-8 (never, for bytes checked against a text's hash).
    fn around(
        policy: &RenderPolicy,
        unit: &Unit,
        content_hash: &ContentHash,
        content: Vec<u8>,
    ) -> Option<Self> {
        let hash = content_hash.to_string();
        let header = block_header(unit, &hash);
        if let Some((head, tail)) = verbatim_frame(policy.style, policy.options, &header, &content)
        {
            return Some(Self {
                head,
                body: content,
                tail,
            });
        }
        let text = String::from_utf8(content).ok()?;
        Some(Self::whole(make_block(policy, unit, content_hash, &text)))
    }

    fn parts(&self) -> [&[u8]; 3] {
        [self.head.as_bytes(), &self.body, self.tail.as_bytes()]
    }

    fn len(&self) -> usize {
        self.head.len() + self.body.len() + self.tail.len()
    }
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
    // Every field as text, without allocating: a warm render checks one key per file.
    let mut lines_text = [0u8; 41];
    let lines = match unit.lines {
        Some(r) => {
            let mut cursor = std::io::Cursor::new(&mut lines_text[..]);
            write!(cursor, "{}-{}", r.start, r.end).expect("two u64s fit");
            let len = usize::try_from(cursor.position()).expect("a short text");
            std::str::from_utf8(&lines_text[..len]).expect("digits and a dash")
        }
        None => "",
    };
    let options = match (policy.options.hashes, policy.options.line_numbers) {
        (false, false) => "hashes=false numbers=false",
        (false, true) => "hashes=false numbers=true",
        (true, false) => "hashes=true numbers=false",
        (true, true) => "hashes=true numbers=true",
    };
    let hash = content_hash.to_text();
    let mut hasher = ContentHasher::new();
    for field in [
        "ctx-block-v2",
        policy.style.name(),
        options,
        kind_name(unit.kind),
        &unit.label,
        lines,
        unit.lang,
        hash.as_str(),
    ] {
        hash_field(&mut hasher, field);
    }
    hasher.finish()
}

/// Feeds `field` to `hasher` after its length, so that no two lists of fields feed the same
/// bytes.
fn hash_field(hasher: &mut ContentHasher, field: &str) {
    hasher.update(&(field.len() as u64).to_le_bytes());
    hasher.update(field.as_bytes());
}

/// A payload's layout: a hash of everything its bytes are a function of, its head, its
/// blocks' keys (each covers its block's header, layout and text) in order, and its tail,
/// under this version of ctx (which writes them).
fn payload_layout<'a>(
    head: &str,
    blocks: impl Iterator<Item = &'a ContentHash>,
    tail: &str,
) -> ContentHash {
    let mut hasher = ContentHasher::new();
    for field in ["ctx-payload-layout-v1", env!("CARGO_PKG_VERSION"), head] {
        hash_field(&mut hasher, field);
    }
    let mut count = 0u64;
    for key in blocks {
        hasher.update(key.to_text().as_str().as_bytes());
        count += 1;
    }
    hasher.update(&count.to_le_bytes());
    hash_field(&mut hasher, tail);
    hasher.finish()
}

/// A unit kind as its `Debug` form writes it (which block keys have always held).
fn kind_name(kind: UnitKind) -> &'static str {
    match kind {
        UnitKind::File => "File",
        UnitKind::Diff => "Diff",
        UnitKind::Log => "Log",
        UnitKind::Command => "Command",
        UnitKind::Text => "Text",
    }
}

/// Blocks' counts, and the fresh ones the token cache should learn.
type CountedBlocks = (Vec<u64>, Vec<(ContentHash, u64)>);

/// Counts blocks through the store's token cache (when there is one), counting the misses in
/// parallel.
struct BlockCounter<'a> {
    db: Option<&'a dyn Metadata>,
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
        let (counts, to_cache) = self.count_fresh(keys, build)?;
        if let Some(db) = self.db
            && !to_cache.is_empty()
        {
            db.cache_token_counts(self.tokenizer, &to_cache)?;
        }
        Ok(counts)
    }

    /// [`Self::count_all`], leaving the fresh counts for the caller to store: the counts, and
    /// the counts the cache should learn (none without a cache).
    fn count_fresh(
        &mut self,
        keys: &[ContentHash],
        build: impl Fn(usize) -> String + Sync,
    ) -> Result<CountedBlocks, CtxError> {
        let cache = self.db.filter(|_| self.tokenizer.is_exact());
        let mut counts = match cache {
            Some(db) => db.cached_token_counts(keys, self.tokenizer)?,
            None => vec![None; keys.len()],
        };
        let misses: Vec<usize> = (0..keys.len()).filter(|&i| counts[i].is_none()).collect();
        let tokenizer = self.tokenizer;
        let fresh: Vec<(usize, u64)> = misses
            .par_iter()
            .map(|&i| (i, tokenizer.count(&build(i)) as u64))
            .collect();
        self.cached += (keys.len() - fresh.len()) as u64;
        self.counted += fresh.len() as u64;
        let mut to_cache = Vec::with_capacity(fresh.len());
        for (i, count) in fresh {
            counts[i] = Some(count);
            if cache.is_some() {
                to_cache.push((keys[i], count));
            }
        }
        Ok((
            counts.into_iter().map(|c| c.unwrap_or(0)).collect(),
            to_cache,
        ))
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

/// [`render`], reporting its phases to `progress`: `walk` (collections), `read` (units read,
/// redacted and counted) and `write` (blocks written).
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

/// [`render_with`], writing the payload to `out` as it is made instead of holding it: memory
/// stays bounded by a chunk of files however large the tree. The report is the same as
/// [`render_with`]'s, and the bytes written are its payload.
pub fn render_to(
    ctx: &PackContext<'_>,
    request: &RenderRequest,
    options: PayloadOptions,
    progress: &dyn Progress,
    out: &mut dyn Write,
) -> Result<RenderReport, CtxError> {
    let streamed = pack_job(ctx, request, options)
        .and_then(|job| stream_job(&job, progress, out))
        .map(|streamed| streamed.report);
    progress.finish();
    streamed
}

/// [`render_to`] a file: written to a temporary file beside `path` and renamed over it only
/// when the whole payload is written, so a failed render leaves `path` as it was.
pub fn render_to_file(
    ctx: &PackContext<'_>,
    request: &RenderRequest,
    options: PayloadOptions,
    progress: &dyn Progress,
    path: &Path,
) -> Result<RenderReport, CtxError> {
    let write_error = |source| CtxError::WritePayload { source };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".ctx-render-");
    // Created as a plain file would be (0666 less the umask), not private as temp files are.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let file = builder.tempfile_in(dir).map_err(write_error)?;
    // A buffer for the frame's small writes; a chunk of blocks (mostly larger) goes to the
    // file in one vectored write, not copied through it.
    let mut writer = std::io::BufWriter::with_capacity(64 << 10, file);
    let report = render_to(ctx, request, options, progress, &mut writer)?;
    let file = writer
        .into_inner()
        .map_err(|err| write_error(err.into_error()))?;
    persist_over(file, path).map_err(write_error)?;
    Ok(report)
}

/// Puts the written temporary `file` at `path`, atomically: a reader sees the old file or the
/// new one, never part of either.
///
/// Over an existing regular file, Linux's `renameat2(RENAME_EXCHANGE)` swaps the two names and
/// the old file is then removed. A plain rename over it would make ext4 start writing the new
/// file out within the call (its `auto_da_alloc` guard for files replaced by rename), which
/// for a 36 MB payload took 22 ms, a sixth of a warm render. Neither way waits for the disk:
/// after a power loss soon after a render, `path` may be empty until rendered again.
fn persist_over(file: tempfile::NamedTempFile, path: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_file()) {
        use rustix::fs::{CWD, OFlags, RenameFlags, renameat_with};
        let (handle, temp) = file.into_parts();
        drop(handle);
        if renameat_with(CWD, &*temp, CWD, path, RenameFlags::EXCHANGE).is_err() {
            return temp.persist(path).map_err(|err| err.error);
        }
        // The temporary path now names what was at `path`: a regular file, unless something
        // else was put there since it was looked at, which is then put back.
        let old = rustix::fs::open(
            &*temp,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        );
        let regular = old.as_ref().is_ok_and(|old| {
            rustix::fs::fstat(old).is_ok_and(|stat| {
                rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::RegularFile
            })
        });
        if !regular {
            renameat_with(CWD, &*temp, CWD, path, RenameFlags::EXCHANGE)?;
            return Err(std::io::Error::other(format!(
                "{} changed while the payload was written; it was left as it was",
                path.display()
            )));
        }
        // Its name goes at once (a failure leaves a hidden temporary file, not a failed
        // render: the payload is in place). Freeing its pages (milliseconds for a large
        // payload) waits for the last descriptor, closed on a thread of its own, or by the
        // kernel if the process ends first.
        let _ = temp.close();
        if let Ok(old) = old {
            let _ = std::thread::Builder::new().spawn(move || drop(old));
        }
        return Ok(());
    }
    file.persist(path).map(drop).map_err(|err| err.error)
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
        ctx.settings,
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
        settings: ctx.settings,
        db: Some(ctx.store.db()),
        packs,
        sources,
        policy,
        now: Some((ctx.clock)()),
        ladder: false,
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
    let mut payload = Vec::new();
    let streamed = stream_job(job, progress, &mut payload)?;
    // Made of UTF-8 pieces, and of files whose bytes hash to texts read before: only a
    // damaged (or forged) render cache could make it anything else.
    let payload = String::from_utf8(payload).map_err(|_| {
        CtxError::Corrupt("the render cache vouched for bytes that are not text".to_owned())
    })?;
    Ok(Render {
        report: streamed.report,
        payload,
        policy: streamed.policy,
        items: streamed.items,
        pieces: streamed.pieces,
    })
}

/// A render whose payload went to an output.
pub(crate) struct Streamed {
    pub report: RenderReport,
    pub policy: RenderPolicy,
    pub items: Vec<SnapshotItemRecord>,
    pub pieces: Vec<PayloadPiece>,
}

/// Renders `job`, writing the payload to `out` as it is made (see the module's overview).
pub(crate) fn stream_job(
    job: &RenderJob<'_>,
    progress: &dyn Progress,
    out: &mut dyn Write,
) -> Result<Streamed, CtxError> {
    stream_job_retaining(job, progress, out, RETAIN_BYTES)
}

/// [`stream_job`], keeping at most `retain_bytes` of file texts between the passes.
fn stream_job_retaining(
    job: &RenderJob<'_>,
    progress: &dyn Progress,
    out: &mut dyn Write,
    retain_bytes: usize,
) -> Result<Streamed, CtxError> {
    let policy = &job.policy;
    // The tokenizer's tables are built on a thread of their own once a text is read that the
    // cache holds no count for, while the rest of its chunk is read and redacted (every thread
    // that counts would wait for them). A render the cache vouches for never builds them.
    let load_tokenizer = std::sync::Once::new();
    let tokenizer_needed = || {
        let tokenizer = policy.tokenizer;
        if tokenizer.is_exact() {
            load_tokenizer.call_once(|| {
                // Without a thread, the first count builds them.
                let _ = std::thread::Builder::new().spawn(move || tokenizer.load());
            });
        }
    };
    // Blocks are counted in the stage that reads them when no cache would answer for them:
    // without a token cache (no store, or counts that are not exact), or while the store's
    // token cache is empty (then the tokenizer's tables are built at once, while the tree is
    // listed). Otherwise a chunk's blocks are looked up first, and only the misses counted.
    let count_in_stage = match job.db {
        Some(db) if policy.tokenizer.is_exact() => !db.remembers_token_counts()?,
        _ => true,
    };
    if count_in_stage {
        tokenizer_needed();
    }
    let started = std::time::Instant::now();
    // Units in order; collections are listed (in byte order), not read.
    let mut planned = Vec::new();
    for (index, source) in job.sources.iter().enumerate() {
        let root = source.root.as_deref().unwrap_or(job.root);
        let options = expand_options(root, job.settings, progress);
        for unit in plan(&source.spec, &options) {
            planned.push((index, unit));
        }
    }

    let redactor = &job.settings.redactor;
    let default_ignore: Vec<bool> = job
        .sources
        .iter()
        .map(|s| {
            job.ladder
                && matches!(&s.spec.source, ctx_sources::Source::Tree { include, .. } if include.is_empty())
        })
        .collect();
    let mut counter = BlockCounter {
        db: job.db,
        tokenizer: policy.tokenizer,
        cached: 0,
        counted: 0,
    };
    tracing::debug!(units = planned.len(), elapsed = ?started.elapsed(), "render: listed");
    // The render cache, for a store whose token counts are exact: files whose listed stamp it
    // vouches for are planned without being read, redacted or counted, and read once, when
    // written (checked against the hash it remembered).
    let cache = job
        .db
        .filter(|_| policy.tokenizer.is_exact())
        .map(|db| RenderCache {
            db,
            rules: redactor.fingerprint(),
            trust_before_ns: job.now.map_or(i64::MIN, |now| {
                now.saturating_mul(1_000_000_000)
                    .saturating_sub(STAMP_TRUST_NS)
            }),
        });
    progress.phase("read", Some(planned.len() as u64));
    let stage = Stage {
        policy,
        default_ignore: &default_ignore,
        redactor,
        tokenizer_needed: &tokenizer_needed,
        count: count_in_stage,
    };
    let (mut prepared, mut counts) = read_pass(
        job,
        planned,
        &stage,
        cache.as_ref(),
        &mut counter,
        retain_bytes,
        progress,
    )?;

    tracing::debug!(
        cached = counter.cached,
        counted = counter.counted,
        elapsed = ?started.elapsed(),
        "render: read (pass one)"
    );
    let budget = policy.budget_tokens;
    let fitted = fit_budget(job, &mut prepared, &mut counts, &mut counter)?;
    let frame_tokens = fitted.head_tokens + fitted.tail_tokens;
    let used = fitted.blocks_used + frame_tokens;
    let reserve = fitted.reserve;

    let written = write_payload(
        job,
        out,
        &fitted,
        &prepared,
        &counts,
        cache.as_ref(),
        progress,
    )?;
    tracing::debug!(bytes = written.bytes, elapsed = ?started.elapsed(), "render: written (pass two)");

    let Listed {
        included,
        excluded,
        redactions,
        items,
    } = items_of(job, prepared, &counts, &fitted.keep, reserve);

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
        payload_hash: written.payload_hash,
        payload_bytes: written.bytes as u64,
        tokens_cached: counter.cached,
        tokens_counted: counter.counted,
    };
    Ok(Streamed {
        report,
        policy: policy.clone(),
        items,
        pieces: written.pieces,
    })
}

/// Pass one: reads, redacts, keys and counts every planned unit, a chunk at a time (see the
/// module's overview), keeping at most `retain_bytes` of file texts for pass two. Returns the
/// units in order with their token counts (`None` for a unit left out).
fn read_pass(
    job: &RenderJob<'_>,
    planned: Vec<(usize, PlannedUnit)>,
    stage: &Stage<'_>,
    cache: Option<&RenderCache<'_>>,
    counter: &mut BlockCounter<'_>,
    retain_bytes: usize,
    progress: &dyn Progress,
) -> Result<(Vec<Prepared>, Vec<Option<u64>>), CtxError> {
    let policy = &job.policy;
    let mut prepared: Vec<Prepared> = Vec::with_capacity(planned.len());
    let mut counts: Vec<Option<u64>> = Vec::with_capacity(planned.len());
    let mut seen = FxHashSet::default();
    let mut retained = 0usize;
    // Chunks end at CHUNK_UNITS units or past CHUNK_BYTES of files (as listed).
    let chunk_sizes = unit_chunks(&planned);
    let planned = planned.into_iter();
    // Beside this thread, a reader thread takes each chunk's units a chunk ahead and looks up
    // their rows in the render cache (keyed by absolute path), and a writer thread (with a
    // cache) stores each chunk's fresh counts and rows while the next chunk is read.
    std::thread::scope(|scope| -> Result<(), CtxError> {
        let (to_render, looked_up) = std::sync::mpsc::sync_channel(1);
        let (mut planned, chunk_sizes) = (planned, &chunk_sizes);
        scope.spawn(move || {
            for &size in chunk_sizes {
                let chunk: Vec<(usize, PlannedUnit)> = planned.by_ref().take(size).collect();
                let rows = match cache {
                    Some(cache) => {
                        let paths: Vec<Option<String>> = chunk
                            .iter()
                            .map(|(_, p)| {
                                p.file_path()
                                    .and_then(|path| path.into_os_string().into_string().ok())
                            })
                            .collect();
                        cache.lookup(&paths).map(|rows| (chunk, paths, rows))
                    }
                    None => Ok((chunk, Vec::new(), Vec::new())),
                };
                let failed = rows.is_err();
                if to_render.send(rows).is_err() || failed {
                    break;
                }
            }
        });
        let (to_store, writer) = match cache {
            Some(cache) => {
                let (to_store, chunks) = std::sync::mpsc::sync_channel::<(
                    Vec<(ContentHash, u64)>,
                    Vec<RenderFileRow>,
                )>(1);
                let (db, tokenizer) = (cache.db, policy.tokenizer);
                let writer = scope.spawn(move || -> Result<(), CtxError> {
                    for (counts, rows) in chunks {
                        if !counts.is_empty() {
                            db.cache_token_counts(tokenizer, &counts)?;
                        }
                        if !rows.is_empty() {
                            db.remember_render_files(&rows)?;
                        }
                    }
                    Ok(())
                });
                (Some(to_store), Some(writer))
            }
            None => (None, None),
        };
        let rules = cache.map(|cache| cache.rules.as_str());
        let read = (|| -> Result<(), CtxError> {
            // Each chunk's units, with their cache paths and rows (when there is a cache).
            for looked_up in &looked_up {
                if progress.cancelled() {
                    return Err(CtxError::Cancelled);
                }
                let (chunk, chunk_paths, rows) = looked_up?;
                let size = chunk.len() as u64;
                // One parallel stage: each row is checked and decoded, and each unit the cache
                // does not vouch for is read, redacted and keyed.
                let mut chunk: Vec<(Prepared, Counted, Option<Learned>)> = chunk
                    .into_par_iter()
                    .enumerate()
                    .map(|(at, (source, planned))| {
                        let hit = rows.get(at).and_then(|row| {
                            let (row, stamp) = (row.as_ref()?, planned.listed_stamp()?);
                            if let Some(skip) = cached_skip(row, stamp, policy.max_file_bytes) {
                                return Some(Hit::Skipped(skip));
                            }
                            cached_unit(row, stamp, rules?, policy, &planned.unit)
                                .map(|(ready, tokens)| Hit::Ready(ready, tokens))
                        });
                        stage.prepare(source, planned, hit)
                    })
                    .collect();
                let (fresh_counts, remember) = settle_chunk(
                    policy,
                    cache,
                    counter,
                    &mut chunk,
                    chunk_paths,
                    &mut seen,
                    &mut counts,
                    (&mut retained, retain_bytes),
                )?;
                // The store learns this chunk's counts and rows while the next chunk is read.
                if let Some(to_store) = &to_store
                    && (!fresh_counts.is_empty() || !remember.is_empty())
                    && to_store.send((fresh_counts, remember)).is_err()
                {
                    break;
                }
                prepared.extend(chunk.into_iter().map(|(p, _, _)| p));
                progress.advance(size);
            }
            Ok(())
        })();
        drop(to_store);
        let stored = writer.map_or(Ok(()), |writer| {
            writer.join().expect("the store writer does not panic")
        });
        read.and(stored)
    })?;
    Ok((prepared, counts))
}

/// What the store learns from a chunk: fresh token counts by block key, and render cache rows.
type ToStore = (Vec<(ContentHash, u64)>, Vec<RenderFileRow>);

/// After pass one's parallel stage over a chunk: marks duplicates, counts the blocks no cache
/// answered for, records each unit's count in `counts`, and drops texts past the retention
/// limit (`retention`: bytes retained so far, and the limit). Returns the counts and render
/// cache rows the store is to learn.
#[allow(clippy::too_many_arguments)]
fn settle_chunk(
    policy: &RenderPolicy,
    cache: Option<&RenderCache<'_>>,
    counter: &mut BlockCounter<'_>,
    chunk: &mut [(Prepared, Counted, Option<Learned>)],
    chunk_paths: Vec<Option<String>>,
    seen: &mut FxHashSet<String>,
    counts: &mut Vec<Option<u64>>,
    (retained, retain_bytes): (&mut usize, usize),
) -> Result<ToStore, CtxError> {
    // The second unit with a key already included is a duplicate.
    for (p, tokens, _) in chunk.iter_mut() {
        if p.body.is_ok() && !seen.insert(p.planned.unit.key.clone()) {
            p.body = Err((
                "duplicate".to_owned(),
                format!("{} is already included", p.planned.unit.key),
            ));
            *tokens = Counted::No;
        }
    }
    let ready: Vec<&Prepared> = chunk
        .iter()
        .filter(|(p, tokens, _)| p.body.is_ok() && matches!(tokens, Counted::No))
        .map(|(p, _, _)| p)
        .collect();
    let keys: Vec<ContentHash> = ready
        .iter()
        .filter_map(|p| p.body.as_ref().ok().map(|r| r.block_key))
        .collect();
    let (chunk_counts, mut fresh_counts) = counter.count_fresh(&keys, |i| {
        let p = ready[i];
        let r = p.body.as_ref().expect("only ready units are counted");
        let content = r.content.as_deref().expect("texts are held until counted");
        make_block(policy, p.unit(), &r.content_hash, content)
    })?;
    let mut chunk_counts = chunk_counts.into_iter();
    drop(ready);
    let mut remember = Vec::new();
    let mut chunk_paths = chunk_paths.into_iter();
    for (p, cached, learned) in chunk.iter_mut() {
        let path = chunk_paths.next();
        let count = match (&p.body, *cached) {
            (Ok(_), Counted::Cached(tokens)) => {
                counter.cached += 1;
                Some(tokens)
            }
            (Ok(ready), Counted::Fresh(tokens)) => {
                counter.counted += 1;
                if cache.is_some() {
                    fresh_counts.push((ready.block_key, tokens));
                }
                Some(tokens)
            }
            (Ok(_), Counted::No) => Some(chunk_counts.next().expect("one count per ready block")),
            (Err(_), _) => None,
        };
        counts.push(count);
        if let (Some(cache), Some(learned)) = (&cache, learned.take())
            && learned.stamp.mtime_ns < cache.trust_before_ns
            && let Some(Some(path)) = path
        {
            let stamp = learned.stamp;
            let row = match (&p.body, count, learned.skip) {
                (Ok(ready), Some(tokens), None) if !ready.from_cache => Some(RenderFileRow {
                    path,
                    size: stamp.size,
                    mtime_ns: stamp.mtime_ns,
                    inode: stamp.inode,
                    raw_hash: raw_hash_text(&ready.raw_hash),
                    rules: cache.rules.clone(),
                    content_hash: ready.content_hash.to_string(),
                    findings: encode_findings(&ready.findings),
                    block_key: ready.block_key.to_string(),
                    tokenizer: policy.tokenizer.name().to_owned(),
                    tokens,
                    ..RenderFileRow::default()
                }),
                // Left out by its bytes: only the stamp and the verdict count.
                (Err(_), _, Some(skip)) => Some(RenderFileRow {
                    path,
                    size: stamp.size,
                    mtime_ns: stamp.mtime_ns,
                    inode: stamp.inode,
                    skip,
                    ..RenderFileRow::default()
                }),
                _ => None,
            };
            remember.extend(row);
        }
        // Texts past the limit are dropped, and read again when written; a command's
        // output or a diff cannot be, and is kept.
        if let Ok(ready) = &mut p.body
            && p.planned.is_file()
        {
            let len = ready.content.as_ref().map_or(0, String::len);
            if *retained + len <= retain_bytes {
                *retained += len;
            } else {
                ready.content = None;
            }
        }
    }
    Ok((fresh_counts, remember))
}

/// What [`write_payload`] wrote.
struct Written {
    pieces: Vec<PayloadPiece>,
    payload_hash: ContentHash,
    bytes: usize,
}

/// Pass two: writes the payload to `out` as it goes (head, the kept blocks in order, tail),
/// hashing it unless the render cache knows its layout's hash.
#[allow(clippy::too_many_arguments)]
fn write_payload(
    job: &RenderJob<'_>,
    out: &mut dyn Write,
    fitted: &Fitted,
    prepared: &[Prepared],
    counts: &[Option<u64>],
    cache: Option<&RenderCache<'_>>,
    progress: &dyn Progress,
) -> Result<Written, CtxError> {
    let policy = &job.policy;
    let redactor = &job.settings.redactor;
    let Fitted {
        keep,
        head,
        head_tokens,
        tail,
        tail_tokens,
        ..
    } = fitted;
    let (head_tokens, tail_tokens) = (*head_tokens, *tail_tokens);
    // The payload, written as it goes: head, kept blocks in order, tail.
    let mut sink = PayloadSink {
        out,
        hasher: ContentHasher::new(),
        bytes: 0,
    };
    let mut pieces = Vec::new();
    sink.write(head)?;
    if !head.is_empty() {
        pieces.push(PayloadPiece {
            bytes: head.len(),
            tokens: head_tokens,
        });
    }
    let kept: Vec<usize> = (0..prepared.len())
        .filter(|&i| keep[i] && prepared[i].body.is_ok())
        .collect();
    tracing::debug!(kept = kept.len(), "render: framed");
    progress.phase("write", Some(kept.len() as u64));
    let chunks = byte_chunks(&kept, |i| {
        prepared[i].body.as_ref().map_or(0, |ready| ready.bytes)
    });
    // A payload's bytes are a function of its layout: a layout written before has its hash
    // remembered, and every block is made from a text checked against its hash as it is
    // written, so the bytes need not be hashed again.
    let memo = job.db.map(|db| {
        let blocks = kept.iter().map(|&i| {
            let ready = prepared[i].body.as_ref().expect("kept units are ready");
            &ready.block_key
        });
        (db, payload_layout(head, blocks, tail))
    });
    let known = match &memo {
        Some((db, layout)) => db
            .render_payload(layout.to_text().as_str())?
            .and_then(|row| Some((row.payload_hash.parse::<ContentHash>().ok()?, row.bytes))),
        None => None,
    };
    // Three stages, a chunk apart: blocks are made (files read, checked and redacted) in
    // parallel; one thread adds them to the payload's hash (unless it is known); this one
    // writes them.
    let mut hasher = std::mem::replace(&mut sink.hasher, ContentHasher::new());
    sink.hasher = std::thread::scope(|scope| -> Result<ContentHasher, CtxError> {
        let (to_writer, from_maker) = std::sync::mpsc::sync_channel(1);
        let chunks = &chunks;
        let (to_hasher, from_maker_hashed) =
            std::sync::mpsc::sync_channel::<Arc<Vec<KeptBlock>>>(1);
        let to_hasher = known.is_none().then_some(to_hasher);
        let prepared = &prepared;
        scope.spawn(move || {
            for &chunk in chunks {
                let blocks: Result<Vec<KeptBlock>, Box<(usize, CtxError)>> = chunk
                    .par_iter()
                    .map(|&i| {
                        kept_block(policy, redactor, &prepared[i]).map_err(|e| Box::new((i, e)))
                    })
                    .collect();
                let sent = match blocks {
                    Ok(blocks) => {
                        let blocks = Arc::new(blocks);
                        to_hasher
                            .as_ref()
                            .is_none_or(|to_hasher| to_hasher.send(Arc::clone(&blocks)).is_ok())
                            && to_writer.send(Ok(blocks)).is_ok()
                    }
                    Err(failed) => {
                        let _ = to_writer.send(Err(failed));
                        false
                    }
                };
                if !sent {
                    break;
                }
            }
        });
        let hashing = known.is_none().then(|| {
            scope.spawn(move || {
                for blocks in from_maker_hashed {
                    for part in blocks.iter().flat_map(KeptBlock::parts) {
                        hasher.update(part);
                    }
                }
                hasher
            })
        });
        for (&chunk, blocks) in chunks.iter().zip(from_maker) {
            if progress.cancelled() {
                return Err(CtxError::Cancelled);
            }
            let blocks = blocks.map_err(|failed| {
                let (i, err) = *failed;
                // A file the cache vouched for changed without its stamp moving: forget it,
                // so the next render reads it.
                if let (Some(cache), Ok(ready)) = (&cache, &prepared[i].body)
                    && ready.from_cache
                    && let Some(path) = prepared[i].planned.file_path()
                    && let Some(path) = path.to_str()
                {
                    let _ = cache.db.forget_render_files(&[path]);
                }
                err
            })?;
            sink.write_blocks_unhashed(&blocks)?;
            for (block, &i) in blocks.iter().zip(chunk) {
                pieces.push(PayloadPiece {
                    bytes: block.len(),
                    tokens: counts[i].expect("kept blocks are counted"),
                });
            }
            progress.advance(chunk.len() as u64);
        }
        Ok(hashing.map_or_else(ContentHasher::new, |hashing| {
            hashing.join().expect("the hashing thread does not panic")
        }))
    })?;
    sink.write(tail)?;
    if !tail.is_empty() {
        pieces.push(PayloadPiece {
            bytes: tail.len(),
            tokens: tail_tokens,
        });
    }
    sink.out
        .flush()
        .map_err(|source| CtxError::WritePayload { source })?;
    debug_assert_eq!(pieces.iter().map(|p| p.bytes).sum::<usize>(), sink.bytes);
    let payload_hash = settle_payload_hash(memo, known, sink.bytes, sink.hasher)?;
    Ok(Written {
        pieces,
        payload_hash,
        bytes: sink.bytes,
    })
}

/// The payload's hash: the one the render cache remembers for its layout (checked against
/// the bytes written), else the one `hasher` computed (remembered for next time).
fn settle_payload_hash(
    memo: Option<(&dyn Metadata, ContentHash)>,
    known: Option<(ContentHash, u64)>,
    bytes_written: usize,
    hasher: ContentHasher,
) -> Result<ContentHash, CtxError> {
    Ok(match (memo, known) {
        (Some((db, layout)), Some((hash, bytes))) => {
            if bytes != bytes_written as u64 {
                // Only a damaged store could say so: forget it, so the next render hashes.
                let _ = db.forget_render_payload(layout.to_text().as_str());
                return Err(CtxError::Corrupt(format!(
                    "the render cache remembered a payload of {bytes} bytes for this layout, \
                     but {bytes_written} were written; it is forgotten: render again"
                )));
            }
            hash
        }
        (Some((db, layout)), None) => {
            let hash = hasher.finish();
            db.remember_render_payload(&RenderPayloadRow {
                layout: layout.to_string(),
                payload_hash: hash.to_string(),
                bytes: bytes_written as u64,
            })?;
            hash
        }
        (None, _) => hasher.finish(),
    })
}

/// What [`fit_budget`] kept, and the payload's frame around it.
struct Fitted {
    keep: Vec<bool>,
    /// Tokens of the kept blocks.
    blocks_used: u64,
    head: String,
    head_tokens: u64,
    tail: String,
    tail_tokens: u64,
    /// Tokens held back for the frame.
    reserve: u64,
}

/// Chooses what fits: fills greedily (or by importance, a rung at a time, for a one-shot
/// pack's ladder) with a reserve for the head and tail; if the frame of what was kept needs
/// more than the reserve, raises it and fills again (the reserve only grows, and is bounded by
/// the largest frame, so this ends). Units kept as outlines become their outlines.
fn fit_budget(
    job: &RenderJob<'_>,
    prepared: &mut [Prepared],
    counts: &mut [Option<u64>],
    counter: &mut BlockCounter<'_>,
) -> Result<Fitted, CtxError> {
    let policy = &job.policy;
    let redactor = &job.settings.redactor;
    let budget = policy.budget_tokens;
    let mut reserve = 0u64;
    let rungs: Vec<super::ladder::Rung> = prepared
        .iter()
        .zip(counts.iter())
        .map(|(p, count)| super::ladder::Rung {
            class: if p.unit().kind == UnitKind::File {
                super::ladder::importance(
                    &p.unit().label,
                    ctx_code::Language::from_path(Path::new(&p.unit().label)).is_some(),
                )
            } else {
                0
            },
            whole: if p.body.is_ok() { *count } else { None },
        })
        .collect();
    let mut outlines: FxHashMap<usize, Option<Outline>> = FxHashMap::default();
    let mut as_outline = vec![false; prepared.len()];
    let (keep, blocks_used, (head, head_tokens), (tail, tail_tokens)) = loop {
        let (keep, blocks_used) = if job.ladder {
            let room = budget.saturating_sub(reserve);
            let (kept, used) = super::ladder::fill(&rungs, room, &mut |i| {
                outlines
                    .entry(i)
                    .or_insert_with(|| outline_of(policy, redactor, &prepared[i], counts[i]))
                    .as_ref()
                    .map(|o| o.tokens)
            });
            for (o, k) in as_outline.iter_mut().zip(&kept) {
                *o = *k == super::ladder::Kept::Outline;
            }
            (
                kept.iter().map(|k| *k != super::ladder::Kept::No).collect(),
                used,
            )
        } else {
            fill(counts, budget, reserve)
        };
        let frame = frame_of(
            job,
            prepared,
            counts,
            &keep,
            blocks_used,
            &as_outline,
            &outlines,
        );
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
    // Outlined units are written as their outlines.
    for (i, p) in prepared.iter_mut().enumerate() {
        if as_outline[i]
            && keep[i]
            && let Some(Some(o)) = outlines.remove(&i)
            && let Ok(ready) = &mut p.body
        {
            let whole = counts[i].unwrap_or(0);
            p.planned.unit.notes.push(format!(
                "outline: signatures only, the whole file is {whole} tokens"
            ));
            ready.content_hash = o.content_hash;
            ready.block_key = o.block_key;
            ready.bytes = o.text.len();
            ready.content = Some(o.text);
            ready.findings = o.findings;
            ready.from_cache = false;
            counts[i] = Some(o.tokens);
        }
    }

    Ok(Fitted {
        keep,
        blocks_used,
        head,
        head_tokens,
        tail,
        tail_tokens,
        reserve,
    })
}

/// What a render's report and snapshot list: the included and excluded units, the redactions
/// in what was included, and one item per unit.
struct Listed {
    included: Vec<IncludedItem>,
    excluded: Vec<ExcludedItem>,
    redactions: BTreeMap<(String, String, u32, String), u64>,
    items: Vec<SnapshotItemRecord>,
}

/// The report's and the snapshot's view of each unit, in order.
fn items_of(
    job: &RenderJob<'_>,
    prepared: Vec<Prepared>,
    counts: &[Option<u64>],
    keep: &[bool],
    reserve: u64,
) -> Listed {
    let budget = job.policy.budget_tokens;
    let mut included = Vec::new();
    let mut excluded = Vec::new();
    let mut redactions: BTreeMap<(String, String, u32, String), u64> = BTreeMap::new();
    let mut items = Vec::new();
    for (position, ((p, count), fits)) in prepared
        .into_iter()
        .zip(counts)
        .zip(keep.iter().copied())
        .enumerate()
    {
        let unit = p.planned.unit;
        let path = unit.label;
        let JobSource {
            pack, artifact_id, ..
        } = &job.sources[p.source];
        let item_key = format!("{artifact_id}:{}", unit.key);
        match (p.body, count) {
            (Ok(ready), Some(tokens)) => {
                let tokens = *tokens;
                if fits {
                    for finding in &ready.findings {
                        *redactions
                            .entry((
                                artifact_id.clone(),
                                path.clone(),
                                finding.line,
                                finding.rule.clone(),
                            ))
                            .or_default() += 1;
                    }
                    included.push(IncludedItem {
                        pack: pack.clone(),
                        artifact_id: artifact_id.clone(),
                        kind: unit.kind,
                        path,
                        lines: unit.lines.map(|r| [r.start, r.end]),
                        content_hash: ready.content_hash,
                        tokens,
                        notes: unit.notes,
                    });
                } else {
                    excluded.push(ExcludedItem {
                        pack: pack.clone(),
                        artifact_id: artifact_id.clone(),
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
                items.push(SnapshotItemRecord {
                    position: position as u64,
                    item_key,
                    content_hash: None,
                    tokens: 0,
                    included: false,
                    reason: Some(reason.clone()),
                });
                excluded.push(ExcludedItem {
                    pack: pack.clone(),
                    artifact_id: artifact_id.clone(),
                    path,
                    reason,
                    detail,
                    tokens: None,
                });
            }
            (Ok(_), None) => unreachable!("every ready unit is counted"),
        }
    }

    Listed {
        included,
        excluded,
        redactions,
        items,
    }
}

/// A unit's count after pass one's parallel stage.
#[derive(Clone, Copy)]
enum Counted {
    /// Not counted yet: its block is looked up in the token cache, and counted if missing.
    No,
    /// From the render cache.
    Cached(u64),
    /// Counted in the stage (for the token cache to learn).
    Fresh(u64),
}

/// What pass one read of a file that the render cache may remember: its stamp as read, and
/// the verdict when its bytes left it out (as [`encode_skip`] writes it).
struct Learned {
    stamp: FileStamp,
    skip: Option<String>,
}

/// Pass one's parallel stage, for one unit at a time.
struct Stage<'a> {
    policy: &'a RenderPolicy,
    /// Per source: whether its walked files are left out by [`super::ladder::default_ignored`]
    /// (a one-shot pack's directory without `--include`).
    default_ignore: &'a [bool],
    redactor: &'a Redactor,
    /// Called for a text to count (the tokenizer's tables are built on first need).
    tokenizer_needed: &'a (dyn Fn() + Sync),
    /// Whether blocks are counted here (no cache would answer for them).
    count: bool,
}

impl Stage<'_> {
    /// The unit planned from the cache's `hit`, or read, redacted, keyed (and counted, when
    /// the stage counts); its count, and what the render cache may learn of its file.
    fn prepare(
        &self,
        source: usize,
        mut planned: PlannedUnit,
        hit: Option<Hit>,
    ) -> (Prepared, Counted, Option<Learned>) {
        let policy = self.policy;
        if self.default_ignore.get(source).copied().unwrap_or(false)
            && planned.is_file()
            && let Some(why) = super::ladder::default_ignored(&planned.unit.label)
        {
            let body = Err((
                "default_ignored".to_owned(),
                format!("{why}: left out by default; name it, or match it with --include"),
            ));
            let prepared = Prepared {
                source,
                planned,
                body,
            };
            return (prepared, Counted::No, None);
        }
        if let Some(hit) = hit {
            let (body, counted) = match hit {
                Hit::Ready(ready, tokens) => (Ok(ready), Counted::Cached(tokens)),
                Hit::Skipped(skip) => (Err(skip_reason(&skip)), Counted::No),
            };
            let prepared = Prepared {
                source,
                planned,
                body,
            };
            return (prepared, counted, None);
        }
        let mut stamp = None;
        let mut verdict = None;
        if let Some((read, read_stamp)) = planned.read_stamped() {
            stamp = read_stamp;
            if let Err(skip) = &read {
                verdict = encode_skip(skip);
            }
            planned.unit.body = read;
        }
        let unit = &mut planned.unit;
        let mut counted = Counted::No;
        let body = match std::mem::replace(&mut unit.body, Err(Skip::Missing)) {
            Ok(text) => {
                (self.tokenizer_needed)();
                let redacted = redact_text(self.redactor, text);
                let block_key = block_identity(policy, unit, &redacted.content_hash);
                if self.count {
                    let block = make_block(policy, unit, &redacted.content_hash, &redacted.content);
                    counted = Counted::Fresh(policy.tokenizer.count(&block) as u64);
                }
                Ok(Ready {
                    content_hash: redacted.content_hash,
                    raw_hash: redacted.raw_hash,
                    bytes: redacted.content.len(),
                    content: Some(redacted.content),
                    findings: redacted.findings,
                    block_key,
                    from_cache: false,
                })
            }
            Err(skip) => Err(skip_reason(&skip)),
        };
        let prepared = Prepared {
            source,
            planned,
            body,
        };
        let learned = stamp.map(|stamp| Learned {
            stamp,
            skip: verdict,
        });
        (prepared, counted, learned)
    }
}

/// The sizes of the chunks pass one cuts `planned` into (by their files' sizes as listed).
fn unit_chunks(planned: &[(usize, PlannedUnit)]) -> Vec<usize> {
    let sizes = planned.iter().map(|(_, unit)| {
        unit.listed_stamp()
            .map_or(0, |s| usize::try_from(s.size).unwrap_or(usize::MAX))
    });
    chunk_lengths(sizes, CHUNK_UNITS, CHUNK_BYTES)
}

/// `units` cut into the second pass's chunks by their `bytes` (see [`chunk_lengths`]).
fn byte_chunks(units: &[usize], bytes: impl Fn(usize) -> usize) -> Vec<&[usize]> {
    let mut rest = units;
    let sizes = units.iter().map(|&unit| bytes(unit));
    chunk_lengths(sizes, WRITE_CHUNK_UNITS, WRITE_CHUNK_BYTES)
        .into_iter()
        .map(|len| {
            let (chunk, after) = rest.split_at(len);
            rest = after;
            chunk
        })
        .collect()
}

/// The lengths of the chunks a run of units of `sizes` bytes is cut into: each ends at
/// `max_units` units or once its units pass `max_bytes`.
fn chunk_lengths(
    sizes: impl IntoIterator<Item = usize>,
    max_units: usize,
    max_bytes: usize,
) -> Vec<usize> {
    let mut lengths = Vec::new();
    let (mut units, mut bytes) = (0usize, 0usize);
    for size in sizes {
        units += 1;
        bytes = bytes.saturating_add(size);
        if units == max_units || bytes > max_bytes {
            lengths.push(units);
            (units, bytes) = (0, 0);
        }
    }
    if units > 0 {
        lengths.push(units);
    }
    lengths
}

/// A kept unit's block: from its kept text, or from its file read again, which must hash to
/// what the first pass (or the render cache) saw, and is redacted again only when something
/// in it was.
fn kept_block(
    policy: &RenderPolicy,
    redactor: &Redactor,
    p: &Prepared,
) -> Result<KeptBlock, CtxError> {
    let ready = p.body.as_ref().expect("kept units are ready");
    let unit = p.unit();
    if let Some(content) = &ready.content {
        return Ok(KeptBlock::whole(make_block(
            policy,
            unit,
            &ready.content_hash,
            content,
        )));
    }
    let changed = || CtxError::ChangedDuringRender {
        path: unit.label.clone(),
    };
    // A whole file's bytes as they are; they must hash to the text read before, so they are
    // that text (and need not be checked for text or decoded again).
    let bytes = match p.planned.read_raw() {
        Some(read) => read.map_err(|_| changed())?,
        None => p
            .planned
            .read()
            .ok_or_else(changed)?
            .map_err(|_| changed())?
            .into_bytes(),
    };
    if raw_hash(&bytes) != ready.raw_hash {
        return Err(changed());
    }
    // Nothing was redacted (a redaction always finds something): the text is the content.
    if ready.findings.is_empty() {
        return KeptBlock::around(policy, unit, &ready.content_hash, bytes).ok_or_else(changed);
    }
    let text = String::from_utf8(bytes).map_err(|_| changed())?;
    let redacted = redact_text(redactor, text);
    if redacted.content_hash != ready.content_hash {
        return Err(changed());
    }
    KeptBlock::around(
        policy,
        unit,
        &redacted.content_hash,
        redacted.content.into_bytes(),
    )
    .ok_or_else(changed)
}

fn over_budget_detail(tokens: u64, budget: u64, reserve: u64) -> String {
    format!(
        "needs {tokens} tokens; the budget is {budget}, {reserve} of it kept for the tree and summary"
    )
}

/// A unit's outline block (see [`super::ladder::outline`]).
struct Outline {
    text: String,
    content_hash: ContentHash,
    block_key: ContentHash,
    tokens: u64,
    /// The unit's findings on the lines the outline shows.
    findings: Vec<RedactionFinding>,
}

/// The outline of a ready file unit whose whole block is `whole` tokens, from its kept text
/// or its file read again (which must still hash to what was read); `None` when it has none
/// smaller than the whole, or the file cannot be read as it was.
fn outline_of(
    policy: &RenderPolicy,
    redactor: &Redactor,
    p: &Prepared,
    whole: Option<u64>,
) -> Option<Outline> {
    let ready = p.body.as_ref().ok()?;
    let unit = p.unit();
    if unit.kind != UnitKind::File || unit.lines.is_some() {
        return None;
    }
    let read;
    let content = if let Some(content) = &ready.content {
        content
    } else {
        let text = p.planned.read()?.ok()?;
        if raw_hash(text.as_bytes()) != ready.raw_hash {
            return None;
        }
        read = redact_text(redactor, text).content;
        &read
    };
    let whole = whole?;
    let (text, shown) = super::ladder::outline(&unit.label, content, whole)?;
    let content_hash = ContentHash::of(text.as_bytes());
    let block = make_block(policy, unit, &content_hash, &text);
    let tokens = policy.tokenizer.count(&block) as u64;
    if tokens >= whole {
        return None;
    }
    let findings = ready
        .findings
        .iter()
        .filter(|f| shown.iter().any(|[a, b]| *a <= f.line && f.line <= *b))
        .cloned()
        .collect();
    let key = ContentHash::of(format!("outline\n{content_hash}").as_bytes());
    Some(Outline {
        block_key: block_identity(policy, unit, &key),
        text,
        content_hash,
        tokens,
        findings,
    })
}

/// The head and tail's facts for a given choice of kept units (`as_outline`: kept as their
/// outlines).
fn frame_of(
    job: &RenderJob<'_>,
    prepared: &[Prepared],
    counts: &[Option<u64>],
    keep: &[bool],
    blocks_used: u64,
    as_outline: &[bool],
    outlines: &FxHashMap<usize, Option<Outline>>,
) -> Frame {
    let policy = &job.policy;
    let mut frame = Frame {
        options: policy.options,
        block_tokens: blocks_used,
        tokenizer: policy.tokenizer.to_string(),
        budget: policy.budget_tokens,
        ..Frame::default()
    };
    frame.ladder = job.ladder;
    for (i, ((p, count), &kept)) in prepared.iter().zip(counts).zip(keep).enumerate() {
        match (&p.body, count) {
            (Ok(ready), _) if kept => {
                frame.included.push((p.unit().kind, p.unit().label.clone()));
                let outline = as_outline[i]
                    .then(|| outlines.get(&i).and_then(Option::as_ref))
                    .flatten();
                if job.ladder {
                    let tokens = outline.map_or(count.unwrap_or(0), |o| o.tokens);
                    frame.largest.push((tokens, p.unit().label.clone()));
                }
                if outline.is_some() {
                    frame
                        .outlined
                        .push((p.unit().label.clone(), count.unwrap_or(0)));
                }
                let findings = outline.map_or(&ready.findings, |o| &o.findings);
                for finding in findings {
                    let entry = frame.redactions.entry(finding.rule.clone()).or_default();
                    entry.0 += 1;
                    entry.1.insert(p.unit().label.clone());
                }
            }
            (Ok(_), count) => frame.excluded.push((
                p.unit().label.clone(),
                "over_budget".to_owned(),
                format!("needs {} tokens", count.unwrap_or(0)),
            )),
            (Err((reason, detail)), _) => {
                frame
                    .excluded
                    .push((p.unit().label.clone(), reason.clone(), detail.clone()));
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
        // A store shared by workspaces stamps its workspace's root (`Store::scoped`).
        root: None,
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ctx_core::redact::Redactor;
    use ctx_sources::sensitive::SensitivePaths;
    use ctx_sources::{Source, SourceSpec};

    use super::*;

    /// A temporary file in `dir` holding `text`, as `render_to_file` writes one.
    fn written(dir: &Path, text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::Builder::new()
            .prefix(".ctx-render-")
            .tempfile_in(dir)
            .expect("temp file");
        file.write_all(text.as_bytes()).expect("write");
        file
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn persist_over_replaces_a_file_or_a_symlink_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out.md");
        // A new name, then over the file it made.
        persist_over(written(dir.path(), "first"), &out).expect("new");
        persist_over(written(dir.path(), "second"), &out).expect("over a file");
        assert_eq!(std::fs::read_to_string(&out).expect("read"), "second");
        assert_eq!(names(dir.path()), ["out.md"]);
        // Over a symlink: the link is replaced, the file it points to is not written.
        let elsewhere = dir.path().join("elsewhere.md");
        std::fs::write(&elsewhere, "kept").expect("write");
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&elsewhere, &link).expect("symlink");
        persist_over(written(dir.path(), "third"), &link).expect("over a symlink");
        assert!(std::fs::symlink_metadata(&link).expect("stat").is_file());
        assert_eq!(std::fs::read_to_string(&link).expect("read"), "third");
        assert_eq!(std::fs::read_to_string(&elsewhere).expect("read"), "kept");
        assert_eq!(names(dir.path()), ["elsewhere.md", "link.md", "out.md"]);
        // Over a directory: an error, the directory as it was, no temporary file left.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).expect("mkdir");
        std::fs::write(sub.join("inner"), "inner").expect("write");
        persist_over(written(dir.path(), "fourth"), &sub).expect_err("over a directory");
        assert_eq!(names(&sub), ["inner"]);
        assert_eq!(
            names(dir.path()),
            ["elsewhere.md", "link.md", "out.md", "sub"]
        );
    }

    /// The key as it was first written (with `format!`): keys made since match it, so token
    /// caches and render caches of earlier versions still answer.
    fn block_identity_as_first_written(
        policy: &RenderPolicy,
        unit: &Unit,
        content_hash: &ContentHash,
    ) -> ContentHash {
        let mut hasher = ContentHasher::new();
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

    #[test]
    fn block_keys_are_the_keys_first_written() {
        let hash = ContentHash::of(b"text");
        for kind in [
            UnitKind::File,
            UnitKind::Diff,
            UnitKind::Log,
            UnitKind::Command,
            UnitKind::Text,
        ] {
            for lines in [None, Some((1, 1)), Some((7, u64::MAX))] {
                for (hashes, line_numbers) in
                    [(false, false), (false, true), (true, false), (true, true)]
                {
                    let mut policy = policy_for(
                        &settings(),
                        100,
                        TokenizerKind::Cl100kBase,
                        PayloadStyle::default(),
                        PayloadOptions::default(),
                    );
                    policy.options.hashes = hashes;
                    policy.options.line_numbers = line_numbers;
                    let unit = Unit {
                        key: "src/a.rs".into(),
                        kind,
                        label: "src/a.rs".into(),
                        lines: lines.map(|(start, end)| ctx_sources::LineRange { start, end }),
                        lang: "rust",
                        body: Err(Skip::Missing),
                        notes: Vec::new(),
                    };
                    assert_eq!(
                        block_identity(&policy, &unit, &hash),
                        block_identity_as_first_written(&policy, &unit, &hash),
                        "{kind:?} {lines:?} {hashes} {line_numbers}"
                    );
                }
            }
        }
    }

    #[test]
    fn byte_chunks_end_at_a_unit_count_or_past_a_byte_count() {
        let units: Vec<usize> = (0..150).collect();
        let small = byte_chunks(&units, |_| 10);
        assert_eq!(
            small.iter().map(|c| c.len()).collect::<Vec<_>>(),
            [
                WRITE_CHUNK_UNITS,
                WRITE_CHUNK_UNITS,
                150 - 2 * WRITE_CHUNK_UNITS
            ]
        );
        // Unit 3 is huge: its chunk ends with it.
        let sizes = |i: usize| if i == 3 { WRITE_CHUNK_BYTES } else { 1 };
        let chunks = byte_chunks(&units[..10], sizes);
        assert_eq!(chunks, [&units[..4], &units[4..10]]);
        assert!(byte_chunks(&[], sizes).is_empty());
        let all: Vec<usize> = byte_chunks(&units, sizes).concat();
        assert_eq!(all, units);
    }

    fn settings() -> PackSettings {
        PackSettings {
            default_budget: 1_000_000,
            default_tokenizer: TokenizerKind::Approx,
            max_file_bytes: 1 << 20,
            command_timeout: Duration::from_secs(5),
            redactor: Redactor::with_custom(&[]).expect("rules"),
            sensitive: SensitivePaths::with_extra(&[]).expect("patterns"),
        }
    }

    fn source(spec: Source) -> JobSource {
        JobSource {
            pack: "p".into(),
            artifact_id: format!("a{}", spec.uri().len()),
            spec: SourceSpec {
                source: spec,
                allow_sensitive: false,
            },
            root: None,
        }
    }

    fn job<'a>(root: &'a Path, settings: &'a PackSettings, budget: u64) -> RenderJob<'a> {
        let glob = Source::Glob {
            base: String::new(),
            pattern: "**/*".into(),
            max_files: None,
            exclude: Vec::new(),
        };
        let text = Source::Text {
            text: "a note\n".into(),
        };
        // The same file again (a duplicate), and a missing one.
        let again = Source::File {
            path: "d/f0007.txt".into(),
            lines: None,
        };
        let missing = Source::File {
            path: "gone.txt".into(),
            lines: None,
        };
        RenderJob {
            root,
            settings,
            db: None,
            packs: vec!["p".into()],
            sources: [text, glob, again, missing]
                .into_iter()
                .map(source)
                .collect(),
            policy: policy_for(
                settings,
                budget,
                TokenizerKind::Approx,
                PayloadStyle::Markdown,
                PayloadOptions::default(),
            ),
            now: None,
            ladder: false,
        }
    }

    fn stream(job: &RenderJob<'_>, retain: usize) -> (Vec<u8>, String, Vec<PayloadPiece>) {
        let mut out = Vec::new();
        let streamed = stream_job_retaining(job, &NoProgress, &mut out, retain).expect("render");
        let report = serde_json::to_string(&streamed.report).expect("report");
        (out, report, streamed.pieces)
    }

    /// Files large enough that chunks end by bytes, not by units, in both passes: every file
    /// is read, counted and written once, in order.
    #[test]
    fn chunks_cut_by_bytes_lose_no_unit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("d")).expect("mkdir");
        let big = "y\n".repeat(500_000);
        let mut expected = Vec::new();
        for i in 0..40 {
            let body = if i % 4 == 1 {
                big.clone()
            } else {
                format!("file {i}\n")
            };
            let rel = format!("d/f{i:04}.txt");
            std::fs::write(root.join(&rel), body).expect("write");
            expected.push(rel);
        }
        let settings = settings();
        let job = job(&root, &settings, u64::MAX / 4);
        let mut out = Vec::new();
        let streamed = stream_job_retaining(&job, &NoProgress, &mut out, 0).expect("render");
        let included: Vec<&str> = streamed
            .report
            .included
            .iter()
            .map(|i| i.path.as_str())
            .filter(|p| p.starts_with("d/"))
            .collect();
        assert_eq!(included, expected);
        assert!(out.len() > 10 * big.len(), "every big file written");
    }

    /// More files than a chunk holds, some with secrets: keeping no text between the passes
    /// (every kept file read and redacted again) writes the same bytes and report as keeping
    /// every text, over budget or not.
    #[test]
    fn a_render_that_reads_files_again_writes_the_same_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("d")).expect("mkdir");
        for i in 0..(CHUNK_UNITS * 2 + 17) {
            let body = if i % 50 == 0 {
                format!("file {i}\naws_key = \"AKIA4QWERTYUIOPASDFG\"\n")
            } else {
                format!("file {i}\n{}\n", "x".repeat(i % 300))
            };
            std::fs::write(root.join(format!("d/f{i:04}.txt")), body).expect("write");
        }
        let settings = settings();
        // Every style, and numbered lines: files read again are framed from their bytes
        // where the style holds them verbatim, and decoded where it rewrites them.
        let styles = [
            (PayloadStyle::Markdown, false),
            (PayloadStyle::Markdown, true),
            (PayloadStyle::Xml, false),
            (PayloadStyle::Plain, false),
            (PayloadStyle::Json, false),
        ];
        for (budget, (style, line_numbers)) in [1_000_000, 20_000]
            .into_iter()
            .flat_map(|budget| styles.map(|style| (budget, style)))
        {
            let mut job = job(&root, &settings, budget);
            job.policy.style = style;
            job.policy.options.line_numbers = line_numbers;
            let (all_kept, report, pieces) = stream(&job, usize::MAX);
            let (none_kept, report_again, pieces_again) = stream(&job, 0);
            assert!(all_kept == none_kept, "the same payload bytes");
            assert_eq!(report, report_again);
            assert_eq!(pieces, pieces_again);
            assert_eq!(
                pieces.iter().map(|p| p.bytes).sum::<usize>(),
                all_kept.len()
            );
            let in_memory = run_job(&job, &NoProgress).expect("render");
            assert_eq!(in_memory.payload.as_bytes(), &all_kept[..]);
            assert_eq!(
                in_memory.report.payload_hash,
                ContentHash::of(&all_kept),
                "the streamed hash is the payload's"
            );
            assert!(report.contains("\"duplicate\"") && report.contains("\"missing\""));
            assert!(
                report.contains("\"redactions\":[{"),
                "secrets were redacted"
            );
        }
    }

    #[test]
    fn a_file_changed_between_the_passes_is_an_error_not_a_wrong_payload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join("a.txt"), "first\n").expect("write");
        let settings = settings();
        let options = expand_options(&root, &settings, &NoProgress);
        let spec = SourceSpec {
            source: Source::File {
                path: "a.txt".into(),
                lines: None,
            },
            allow_sensitive: false,
        };
        let mut planned = plan(&spec, &options).pop().expect("one unit");
        planned.load();
        let text = std::mem::replace(&mut planned.unit.body, Ok(String::new())).expect("text");
        let redacted = redact_text(&settings.redactor, text);
        let policy = job(&root, &settings, 1000).policy;
        let prepared = Prepared {
            source: 0,
            body: Ok(Ready {
                content_hash: redacted.content_hash,
                raw_hash: redacted.raw_hash,
                bytes: redacted.content.len(),
                content: None,
                findings: redacted.findings,
                block_key: block_identity(&policy, &planned.unit, &redacted.content_hash),
                from_cache: false,
            }),
            planned,
        };
        let block = kept_block(&policy, &settings.redactor, &prepared).expect("unchanged");
        assert!(
            String::from_utf8(block.parts().concat())
                .expect("text")
                .contains("first")
        );
        std::fs::write(root.join("a.txt"), "second\n").expect("edit");
        let err = kept_block(&policy, &settings.redactor, &prepared).expect_err("changed");
        assert!(matches!(err, CtxError::ChangedDuringRender { ref path } if path == "a.txt"));
        assert_eq!(err.kind(), crate::ErrorKind::Conflict);
    }
}
