//! Exports: ctx's own JSON (lossless, re-importable with the same run id), OTLP-JSON spans
//! with `gen_ai.*` attributes, and an in-toto Statement.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use ctx_core::ContentHash;
use ctx_store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::RunError;
use crate::model::{ChildRun, RunId, RunManifest, Step, StepKind, StepStatus, TokenUsage};
use crate::store::{Run, parse_canonical, save_manifest};

/// Every ctx export's `format` starts with this.
pub const CTX_EXPORT_PREFIX: &str = "ctx.run.export/";
/// The `format` this version writes.
pub const CTX_EXPORT_FORMAT: &str = "ctx.run.export/0.1";
/// The in-toto predicate type of a run (the one `ctx run attach` and `ctx run verify` use).
pub const IN_TOTO_PREDICATE_TYPE: &str = crate::provenance::PREDICATE_TYPE;

/// A run with all its objects inline: `ctx run export --format ctx`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CtxExport {
    pub format: String,
    pub run: RunId,
    pub manifest: RunManifest,
    pub steps: Vec<Step>,
    /// Every blob, by hash: UTF-8 contents as `text`, anything else as `hex`.
    pub blobs: BTreeMap<ContentHash, ExportedBlob>,
    /// The runs nested in this one (the manifest's `children`), each exported whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<CtxExport>,
}

/// A blob's bytes in an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportedBlob {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hex: Option<String>,
}

impl ExportedBlob {
    fn of(bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(text) => Self {
                text: Some(text),
                hex: None,
            },
            Err(err) => Self {
                text: None,
                hex: Some(hex::encode(err.into_bytes())),
            },
        }
    }

    fn bytes(&self) -> Result<Vec<u8>, String> {
        match (&self.text, &self.hex) {
            (Some(text), None) => Ok(text.as_bytes().to_vec()),
            (None, Some(digits)) => hex::decode(digits).map_err(|e| e.to_string()),
            _ => Err("a blob needs exactly one of `text` and `hex`".to_owned()),
        }
    }
}

/// The ctx export of a loaded run.
pub fn export_ctx(store: &Store, run: &Run) -> Result<CtxExport, RunError> {
    let mut blobs = BTreeMap::new();
    for hash in run.objects() {
        if hash == run.id || run.manifest.steps.contains(&hash) {
            continue;
        }
        blobs.insert(hash, ExportedBlob::of(store.objects().get(&hash)?));
    }
    let mut children = Vec::with_capacity(run.manifest.children.len());
    for child in &run.manifest.children {
        let nested = crate::store::load_run_by_id(store, &child.run)?;
        children.push(export_ctx(store, &nested)?);
    }
    Ok(CtxExport {
        format: CTX_EXPORT_FORMAT.to_owned(),
        run: run.id,
        manifest: run.manifest.clone(),
        steps: run.steps.clone(),
        blobs,
        children,
    })
}

/// Imports a ctx export, checking every object against its hash before storing anything;
/// returns the run id (the one the export names) and the step count.
pub(crate) fn import_ctx(
    store: &Store,
    path: &Path,
    bytes: &[u8],
) -> Result<(RunId, usize), RunError> {
    let bad = |detail: String| RunError::BadFile {
        path: path.to_owned(),
        format: "ctx",
        detail,
    };
    let export: CtxExport = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    // Every run (nested ones first) is checked before anything is written.
    let mut checked = Vec::new();
    check_export(store, path, &export, &mut checked)?;
    for run in &checked {
        let all: Vec<&[u8]> = run.objects.iter().map(Vec::as_slice).collect();
        crate::store::put_parallel(store.objects(), &all)?;
        let stored = save_manifest(store, &run.manifest, &run.references, None)?;
        debug_assert_eq!(stored, run.manifest.id());
    }
    Ok((export.run, export.steps.len()))
}

/// A run of an export, checked and ready to store.
struct CheckedRun {
    manifest: RunManifest,
    /// Its blobs and step objects.
    objects: Vec<Vec<u8>>,
    /// Every object it references.
    references: BTreeSet<ContentHash>,
}

/// Checks one export, its nested runs first, appending each to `checked`.
fn check_export(
    store: &Store,
    path: &Path,
    export: &CtxExport,
    checked: &mut Vec<CheckedRun>,
) -> Result<(), RunError> {
    let bad = |detail: String| RunError::BadFile {
        path: path.to_owned(),
        format: "ctx",
        detail,
    };
    let listed: BTreeSet<RunId> = export.manifest.children.iter().map(|c| c.run).collect();
    let given: BTreeSet<RunId> = export.children.iter().map(|c| c.run).collect();
    if listed != given {
        return Err(bad(format!(
            "run {} nests {} runs but the export holds {} of them",
            export.run,
            listed.len(),
            listed.intersection(&given).count()
        )));
    }
    for child in &export.children {
        check_export(store, path, child, checked)?;
    }
    if !export.format.starts_with(CTX_EXPORT_PREFIX) {
        return Err(bad(format!(
            "`format` is `{}`, expected `{CTX_EXPORT_FORMAT}`",
            export.format
        )));
    }
    let mut blobs = Vec::with_capacity(export.blobs.len());
    for (hash, blob) in &export.blobs {
        let bytes = blob.bytes().map_err(|e| bad(format!("blob {hash}: {e}")))?;
        let actual = ContentHash::of(&bytes);
        if actual != *hash {
            return Err(bad(format!(
                "blob {hash} holds content hashing to {actual}"
            )));
        }
        blobs.push(bytes);
    }
    if export.steps.len() != export.manifest.steps.len() {
        return Err(bad(format!(
            "the manifest lists {} steps but {} are given",
            export.manifest.steps.len(),
            export.steps.len()
        )));
    }
    let mut step_bytes = Vec::with_capacity(export.steps.len());
    let mut prev = None;
    for (index, (step, listed)) in export.steps.iter().zip(&export.manifest.steps).enumerate() {
        if step
            .duration_ms
            .is_some_and(|ms| ms > crate::store::MAX_JSON_INT)
        {
            return Err(bad(format!(
                "step {index} has a `duration_ms` above 2^53 - 1, which canonical JSON cannot hold"
            )));
        }
        let bytes = ctx_core::canonical::to_vec(step).map_err(|e| bad(e.to_string()))?;
        let actual = ContentHash::of(&bytes);
        if actual != *listed || step.index != index as u64 || step.prev != prev {
            return Err(bad(format!(
                "step {index} does not match the manifest (it hashes to {actual}, the manifest lists {listed}); the export was edited"
            )));
        }
        prev = Some(actual);
        step_bytes.push(bytes);
    }
    if let Some(big) = export
        .manifest
        .inputs
        .iter()
        .chain(&export.manifest.outputs)
        .find(|c| c.size > crate::store::MAX_JSON_INT)
    {
        return Err(bad(format!(
            "`{}` has a `size` above 2^53 - 1, which canonical JSON cannot hold",
            big.name
        )));
    }
    let mut referenced: BTreeSet<ContentHash> = export.manifest.blob_refs().into_iter().collect();
    for step in &export.steps {
        referenced.extend(step.output_ref);
        referenced.extend(step.reasoning_ref);
    }
    let mut missing = None;
    for hash in referenced.iter().filter(|h| !export.blobs.contains_key(h)) {
        if !store.objects().contains(hash)? {
            missing = Some(hash);
            break;
        }
    }
    if let Some(missing) = missing {
        return Err(bad(format!(
            "blob {missing} is referenced but not included"
        )));
    }
    let id = export.manifest.id();
    if id != export.run {
        return Err(bad(format!(
            "the manifest hashes to {id}, not to the run id {} it claims; the export was edited",
            export.run
        )));
    }
    let mut all_objects = referenced;
    all_objects.extend(export.manifest.steps.iter().copied());
    checked.push(CheckedRun {
        manifest: export.manifest.clone(),
        objects: blobs.into_iter().chain(step_bytes).collect(),
        references: all_objects,
    });
    Ok(())
}

/// Parses a ctx export's manifest object bytes (exposed for tools that read raw objects).
pub fn parse_manifest(bytes: &[u8]) -> Result<RunManifest, String> {
    parse_canonical(bytes)
}

/// OTLP-JSON (`resourceSpans`) for a run without its nested runs (see [`export_otel_tree`]).
pub fn export_otel(run: &Run) -> Value {
    export_otel_tree(&RunTree {
        run: run.clone(),
        children: Vec::new(),
    })
}

/// OTLP-JSON (`resourceSpans`) for a run and the runs nested in it: an `invoke_agent` span per
/// run and a span per step, each nested run's span under the step that started it (or under
/// its parent run's span), all in one trace. Spans carry every manifest and step field as
/// attributes, and `gen_ai.usage.*` where the step recorded its tokens.
///
/// Times are the transcript's: a step starts at its timestamp and lasts its recorded
/// duration; a run's span covers its steps (and `created`). Where the transcript records no
/// time, the span has no `startTimeUnixNano`/`endTimeUnixNano` (nothing is invented; a step's
/// recorded duration is still in `ctx.step.duration_ms`).
pub fn export_otel_tree(tree: &RunTree) -> Value {
    let trace_id = tree.run.id.to_hex()[..32].to_owned();
    let mut spans = Vec::new();
    let root_span_id = tree.run.id.to_hex()[32..48].to_owned();
    otel_run_spans(tree, &trace_id, &root_span_id, None, &mut spans);
    json!({
        "resourceSpans": [{
            "resource": {"attributes": [kv_str("service.name", "ctx")]},
            "scopeSpans": [{
                "scope": {"name": "ctx-runs", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}

/// A run loaded with the runs nested in it (see [`crate::store::load_run_tree`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunTree {
    pub run: Run,
    /// Each nested run with its link.
    pub children: Vec<(ChildRun, RunTree)>,
}

/// A span's times: (start, end) in Unix nanoseconds, when recorded.
type SpanTimes = Option<(u64, u64)>;

/// A step span's attributes (OpenTelemetry's GenAI names, and ctx's own).
fn step_attributes(
    run: &Run,
    step: &Step,
    hash: &ContentHash,
    provider: Option<&str>,
) -> Vec<Value> {
    let mut attrs = vec![
        kv_str("gen_ai.operation.name", step.kind.operation_name()),
        kv_int("ctx.step.index", step.index),
        kv_str("ctx.step.hash", &hash.to_string()),
        kv_bool("ctx.step.deterministic", step.deterministic),
    ];
    match step.kind {
        StepKind::ToolCall => attrs.push(kv_str(
            "gen_ai.tool.call.arguments",
            &ctx_core::canonical::to_string(&step.parameters).expect("JSON values serialize"),
        )),
        StepKind::ModelCall => attrs.extend(request_parameters(run)),
    }
    if let Some(provider) = provider {
        attrs.push(kv_str("gen_ai.provider.name", provider));
    }
    if step.status == StepStatus::Error {
        attrs.push(kv_str(
            "error.type",
            match step.kind {
                StepKind::ToolCall => "tool_error",
                StepKind::ModelCall => "model_error",
            },
        ));
    }
    if let Some(prev) = step.prev {
        attrs.push(kv_str("ctx.step.prev", &prev.to_string()));
    }
    if let Some(tool) = &step.tool {
        attrs.push(kv_str("gen_ai.tool.name", tool));
    }
    if let Some(id) = &step.call_id {
        attrs.push(kv_str("gen_ai.tool.call.id", id));
    }
    if let Some(model) = &step.model {
        attrs.push(kv_str("gen_ai.request.model", model));
    }
    if let Some(usage) = &step.usage {
        attrs.extend(usage_attributes(usage));
    }
    if let Some(output) = step.output_ref {
        attrs.push(kv_str("ctx.step.output_ref", &output.to_string()));
    }
    if let Some(reasoning) = step.reasoning_ref {
        attrs.push(kv_str("ctx.step.reasoning_ref", &reasoning.to_string()));
    }
    if let Some(ts) = &step.timestamp {
        attrs.push(kv_str("ctx.step.timestamp", ts));
    }
    if let Some(ms) = step.duration_ms {
        attrs.push(kv_int("ctx.step.duration_ms", ms));
    }
    attrs
}

/// Appends the spans of `tree` (its root span first); returns the root span's times.
fn otel_run_spans(
    tree: &RunTree,
    trace_id: &str,
    span_id: &str,
    parent_span: Option<(&str, &ChildRun)>,
    spans: &mut Vec<Value>,
) -> SpanTimes {
    let run = &tree.run;
    let root_at = spans.len();
    spans.push(Value::Null);
    // Nested runs get span ids of their own, derived from their parent's, so that two
    // nested runs with the same content do not share ids.
    let nested = parent_span.is_some();
    let step_span_id = |hash: &ContentHash| -> String {
        if nested {
            ContentHash::of(format!("{span_id}/{hash}").as_bytes()).to_hex()[..16].to_owned()
        } else {
            hash.to_hex()[..16].to_owned()
        }
    };
    let provider = run
        .manifest
        .model
        .as_ref()
        .and_then(|m| m.provider.as_deref());
    let mut first: Option<u64> = run
        .manifest
        .created
        .as_deref()
        .and_then(parse_rfc3339_nanos);
    let mut last: Option<u64> = first;
    let mut totals = TokenUsage::default();
    let mut any_usage = false;
    let mut step_spans: Vec<String> = Vec::with_capacity(run.steps.len());
    for (step, hash) in run.steps.iter().zip(&run.manifest.steps) {
        let start = step.timestamp.as_deref().and_then(parse_rfc3339_nanos);
        let times = start.map(|start| {
            let ms = step.duration_ms.unwrap_or(0);
            (start, start.saturating_add(ms.saturating_mul(1_000_000)))
        });
        if let Some((start, end)) = times {
            first = Some(first.map_or(start, |f| f.min(start)));
            last = Some(last.map_or(end, |l| l.max(end)));
        }
        if let Some(usage) = &step.usage {
            any_usage = true;
            totals.input_tokens += usage.input_tokens;
            totals.output_tokens += usage.output_tokens;
        }
        let attrs = step_attributes(run, step, hash, provider);
        let name = match step.kind {
            StepKind::ToolCall => format!("execute_tool {}", step.tool.as_deref().unwrap_or("")),
            StepKind::ModelCall => format!("chat {}", step.model.as_deref().unwrap_or("")),
        };
        let id = step_span_id(hash);
        let mut span = json!({
            "traceId": trace_id,
            "spanId": id,
            "parentSpanId": span_id,
            "name": name.trim_end(),
            "kind": if step.kind == StepKind::ModelCall { 3 } else { 1 },
            "attributes": attrs,
            "status": match step.status {
                StepStatus::Ok => json!({"code": 1}),
                StepStatus::Error => json!({"code": 2, "message": "the tool reported an error"}),
            },
        });
        set_times(&mut span, times);
        step_spans.push(id);
        spans.push(span);
    }
    for (link, child) in &tree.children {
        let parent = link
            .step
            .and_then(|s| step_spans.get(usize::try_from(s).ok()?))
            .map_or(span_id, String::as_str);
        let child_span = ContentHash::of(format!("{span_id}/{}", child.run.id).as_bytes()).to_hex()
            [..16]
            .to_owned();
        if let Some((start, end)) =
            otel_run_spans(child, trace_id, &child_span, Some((parent, link)), spans)
        {
            first = Some(first.map_or(start, |f| f.min(start)));
            last = Some(last.map_or(end, |l| l.max(end)));
        }
    }
    let mut root_attrs = vec![
        kv_str("gen_ai.operation.name", "invoke_agent"),
        kv_str("ctx.run.id", &run.id.to_string()),
        kv_str("ctx.run.source", &run.manifest.source),
        kv_int("ctx.run.steps", run.steps.len() as u64),
        kv_str(
            "ctx.run.manifest",
            &String::from_utf8(run.manifest.canonical_bytes()).expect("canonical JSON is UTF-8"),
        ),
    ];
    if let Some(id) = &run.manifest.conversation_id {
        root_attrs.push(kv_str("gen_ai.conversation.id", id));
    }
    if let Some(model) = &run.manifest.model {
        root_attrs.push(kv_str("gen_ai.request.model", &model.identifier));
        if let Some(provider) = &model.provider {
            root_attrs.push(kv_str("gen_ai.provider.name", provider));
        }
        root_attrs.extend(request_parameters(run));
    }
    if any_usage {
        root_attrs.push(kv_int("gen_ai.usage.input_tokens", totals.input_tokens));
        root_attrs.push(kv_int("gen_ai.usage.output_tokens", totals.output_tokens));
    }
    if let Some(parent) = run.manifest.parent {
        root_attrs.push(kv_str("ctx.run.parent", &parent.to_string()));
    }
    let parent_id = match parent_span {
        Some((parent, link)) => {
            root_attrs.push(kv_str("ctx.run.kind", &link.kind));
            if let Some(id) = &link.agent_id {
                root_attrs.push(kv_str("gen_ai.agent.id", id));
            }
            if let Some(name) = &link.agent_name {
                root_attrs.push(kv_str("gen_ai.agent.name", name));
            }
            if let Some(call) = &link.call_id {
                root_attrs.push(kv_str("gen_ai.tool.call.id", call));
            }
            Some(parent.to_owned())
        }
        None => None,
    };
    let times = first.zip(last);
    let mut root = json!({
        "traceId": trace_id,
        "spanId": span_id,
        "name": "invoke_agent",
        "kind": 1,
        "attributes": root_attrs,
        "status": {"code": 1},
    });
    if let Some(parent) = parent_id {
        root["parentSpanId"] = json!(parent);
    }
    set_times(&mut root, times);
    spans[root_at] = root;
    times
}

/// Sets a span's start and end, when recorded; otherwise leaves them out.
fn set_times(span: &mut Value, times: SpanTimes) {
    if let Some((start, end)) = times {
        span["startTimeUnixNano"] = json!(start.to_string());
        span["endTimeUnixNano"] = json!(end.to_string());
    }
}

/// The GenAI conventions' token usage attributes.
fn usage_attributes(usage: &TokenUsage) -> Vec<Value> {
    let mut out = vec![
        kv_int("gen_ai.usage.input_tokens", usage.input_tokens),
        kv_int("gen_ai.usage.output_tokens", usage.output_tokens),
    ];
    if let Some(n) = usage.cache_read_input_tokens {
        out.push(kv_int("gen_ai.usage.cache_read.input_tokens", n));
    }
    if let Some(n) = usage.cache_creation_input_tokens {
        out.push(kv_int("gen_ai.usage.cache_creation.input_tokens", n));
    }
    out
}

/// The in-toto Statements (v1) for a run, built by [`crate::provenance::Statement::for_run`]:
/// one per output, each with that output as its subject (the run manifest when the run has no
/// outputs). Each one, saved as the output's sidecar (`<file>.ctx.json`), is what
/// `ctx run verify` reads.
pub fn in_toto_statements(run: &Run) -> Vec<crate::provenance::Statement> {
    let facts = crate::provenance::RunFacts::of(run);
    if run.manifest.outputs.is_empty() {
        return vec![crate::provenance::Statement::for_run(
            &facts,
            "ctx-run-manifest.json",
            &run.id,
        )];
    }
    run.manifest
        .outputs
        .iter()
        .map(|o| crate::provenance::Statement::for_run(&facts, &o.name, &o.content_ref))
        .collect()
}

/// [`in_toto_statements`] as JSON: the Statement itself when there is one, an array of them
/// (in output order) when the run has several outputs.
pub fn export_in_toto(run: &Run) -> Value {
    let mut statements = in_toto_statements(run);
    if statements.len() == 1 {
        serde_json::to_value(statements.remove(0)).expect("statements serialize")
    } else {
        serde_json::to_value(statements).expect("statements serialize")
    }
}

/// The model's request parameters that OpenTelemetry's GenAI conventions name, as
/// `gen_ai.request.*` attributes (`stop` is written as `stop_sequences`). The others stay in
/// the manifest (`ctx.run.manifest`).
fn request_parameters(run: &Run) -> Vec<Value> {
    const NAMED: &[(&str, &str)] = &[
        ("frequency_penalty", "gen_ai.request.frequency_penalty"),
        ("max_tokens", "gen_ai.request.max_tokens"),
        ("presence_penalty", "gen_ai.request.presence_penalty"),
        ("seed", "gen_ai.request.seed"),
        ("stop", "gen_ai.request.stop_sequences"),
        ("stop_sequences", "gen_ai.request.stop_sequences"),
        ("temperature", "gen_ai.request.temperature"),
        ("top_k", "gen_ai.request.top_k"),
        ("top_p", "gen_ai.request.top_p"),
    ];
    let Some(model) = &run.manifest.model else {
        return Vec::new();
    };
    let mut out: Vec<Value> = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, key) in NAMED {
        if let Some(value) = model.parameters.get(*name).and_then(any_value)
            && seen.insert(*key)
        {
            out.push(json!({"key": key, "value": value}));
        }
    }
    out
}

/// An OTLP-JSON `AnyValue` for a JSON scalar or array of scalars; `None` for other shapes.
fn any_value(value: &Value) -> Option<Value> {
    Some(match value {
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => json!({"intValue": i.to_string()}),
            (None, Some(f)) => json!({"doubleValue": f}),
            (None, None) => return None,
        },
        Value::String(text) => json!({"stringValue": text}),
        Value::Array(items) => {
            let values: Option<Vec<Value>> = items
                .iter()
                .map(|v| if v.is_array() { None } else { any_value(v) })
                .collect();
            json!({"arrayValue": {"values": values?}})
        }
        Value::Null | Value::Object(_) => return None,
    })
}

fn kv_str(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

fn kv_int(key: &str, value: u64) -> Value {
    // OTLP-JSON writes 64-bit integers as strings.
    json!({"key": key, "value": {"intValue": value.to_string()}})
}

fn kv_bool(key: &str, value: bool) -> Value {
    json!({"key": key, "value": {"boolValue": value}})
}

/// Nanoseconds since the Unix epoch of an RFC 3339 timestamp (`2025-07-01T10:00:00.5Z`,
/// `…+02:00`); `None` if it is not one, is before 1970, or does not fit in a `u64` of
/// nanoseconds (after the year 2554). A timestamp without an offset (`2025-07-01T10:00:00.5`,
/// as OpenHands writes them) is read as UTC. Works on bytes, so any input is safe.
pub fn parse_rfc3339_nanos(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            digits
                .iter()
                .fold(0, |acc, d| acc * 10 + i64::from(d - b'0')),
        )
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut nanos: i64 = 0;
    if let Some(frac) = rest.strip_prefix(b".") {
        let digits = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let mut scale = 1_000_000_000;
        for d in &frac[..digits.min(9)] {
            scale /= 10;
            nanos += i64::from(d - b'0') * scale;
        }
        rest = &frac[digits..];
    }
    let offset_seconds = match rest {
        b"" | b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let h = num(rest_range(b, rest, 1, 3))?;
            let m = num(rest_range(b, rest, 4, 6))?;
            let sign = if *sign == b'-' { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    let days = ctx_core::time::days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    let seconds = u64::try_from(seconds).ok()?;
    let nanos = u64::try_from(nanos).ok()?;
    seconds.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// The range of `rest[from..to]` within `whole`, for `rest` a tail of `whole`.
fn rest_range(whole: &[u8], rest: &[u8], from: usize, to: usize) -> std::ops::Range<usize> {
    let base = whole.len() - rest.len();
    base + from..base + to
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_timestamps_parse_to_unix_nanos() {
        assert_eq!(parse_rfc3339_nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_nanos("2025-07-01T10:00:00.5Z"),
            Some(1_751_364_000_500_000_000)
        );
        assert_eq!(
            parse_rfc3339_nanos("2025-07-01T12:00:00+02:00"),
            Some(1_751_364_000_000_000_000)
        );
        assert_eq!(
            parse_rfc3339_nanos("2024-02-29T23:59:59.123456789Z"),
            Some(1_709_251_199_123_456_789)
        );
        for bad in [
            "",
            "2025-07-01",
            "2025-13-01T00:00:00Z",
            "x025-07-01T00:00:00Z",
            "2025-07-01T00:00:00+0\u{e9}00",
            "2025-07-01T00:00:00\u{e9}1:00",
            "2025-07-01T00:00:0\u{e9}Z",
            "\u{e9}025-07-01T00:00:00Z",
            "2025-07-01T00:00:00.\u{e9}Z",
            "9999-12-31T23:59:59.999999999Z",
            "2600-01-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(parse_rfc3339_nanos(bad), None, "{bad}");
        }
    }

    #[test]
    fn timestamps_without_an_offset_are_utc() {
        assert_eq!(
            parse_rfc3339_nanos("2025-07-01T10:00:00.5"),
            parse_rfc3339_nanos("2025-07-01T10:00:00.5Z")
        );
        assert_eq!(
            parse_rfc3339_nanos("2025-07-01T10:00:00"),
            Some(1_751_364_000_000_000_000)
        );
    }
}
