//! Runs in the store: building, saving, resolving ids, loading with checks, refs, forks.
//!
//! Blobs (prompts, inputs, outputs, step results, reasoning), step objects and the manifest
//! all live in the object store. The `runs` table lists stored runs in the order they were
//! added, and `run_objects` names every object each run references, so `store gc` keeps
//! them and `store verify` checks them. Named refs live in the `refs` table under the
//! namespace [`REF_NAMESPACE`]; [`LATEST`] always names the run stored last.

use std::collections::{BTreeMap, BTreeSet};

use ctx_core::ContentHash;
use ctx_core::redact::Redactor;
use ctx_store::{Objects, Store};
use serde::Serialize;
use serde_json::Value;

use crate::RunError;
use crate::model::{
    ChildRun, ContentRef, Environment, ModelInfo, PromptRef, RUN_FORMAT_VERSION, RunId,
    RunManifest, Step, StepKind, StepStatus, TokenUsage,
};

/// The refs namespace holding run names (`latest`, tags).
pub const REF_NAMESPACE: &str = "runs";
/// The ref that names the run stored last.
pub const LATEST: &str = "latest";
/// The fewest hex digits accepted as a run id prefix.
pub const MIN_PREFIX_LEN: usize = 4;

/// The largest integer stored in a run object: canonical JSON (RFC 8785) writes numbers as
/// IEEE doubles, so larger integers would not read back as the value that was hashed.
pub const MAX_JSON_INT: u64 = (1 << 53) - 1;

/// A step about to be recorded: contents inline, written to blobs by [`RunBuilder::push_step`].
#[derive(Debug, Clone, PartialEq)]
pub struct StepDraft {
    pub kind: StepKind,
    pub tool: Option<String>,
    pub call_id: Option<String>,
    pub model: Option<String>,
    /// The arguments, a JSON object (`Value::Null` is stored as `{}`).
    pub parameters: Value,
    /// The result bytes, or the model's message.
    pub output: Option<Vec<u8>>,
    /// The reasoning text stated before this step.
    pub reasoning: Option<String>,
    pub deterministic: bool,
    pub status: StepStatus,
    pub timestamp: Option<String>,
    pub duration_ms: Option<u64>,
    /// The tokens of the model call that made this step.
    pub usage: Option<TokenUsage>,
}

impl StepDraft {
    /// A tool call with `parameters`, not yet with an output.
    pub fn tool_call(tool: &str, parameters: Value) -> Self {
        Self {
            kind: StepKind::ToolCall,
            tool: Some(tool.to_owned()),
            call_id: None,
            model: None,
            parameters,
            output: None,
            reasoning: None,
            deterministic: false,
            status: StepStatus::Ok,
            timestamp: None,
            duration_ms: None,
            usage: None,
        }
    }

    /// A model turn whose message is `text`.
    pub fn model_call(model: Option<&str>, text: &str) -> Self {
        Self {
            kind: StepKind::ModelCall,
            tool: None,
            call_id: None,
            model: model.map(str::to_owned),
            parameters: Value::Object(serde_json::Map::new()),
            output: Some(text.as_bytes().to_vec()),
            reasoning: None,
            deterministic: false,
            status: StepStatus::Ok,
            timestamp: None,
            duration_ms: None,
            usage: None,
        }
    }
}

/// Builds a run one step at a time (the recorder and the importers use it), then saves it.
///
/// A builder from [`RunBuilder::new`] writes blobs and step objects as they arrive (what a
/// recorder wants); one from [`RunBuilder::buffered`] keeps them in memory and writes them all
/// at [`RunBuilder::finish`], in parallel (what an import wants: each object costs an fsync).
/// `finish` then writes the manifest, lists the run and moves [`LATEST`]. Objects written by a
/// builder that is never finished are unreferenced and `store gc` removes them after its grace
/// period.
#[derive(Debug, Clone)]
pub struct RunBuilder {
    manifest: RunManifest,
    prev: Option<ContentHash>,
    objects: BTreeSet<ContentHash>,
    /// Objects not yet written (buffered builders only).
    pending: Option<BTreeMap<ContentHash, Vec<u8>>>,
}

impl RunBuilder {
    /// An empty run from `source` (`claude-code`, `mcp`, …).
    pub fn new(source: &str) -> Self {
        Self {
            manifest: RunManifest {
                version: RUN_FORMAT_VERSION.to_owned(),
                source: source.to_owned(),
                conversation_id: None,
                created: None,
                model: None,
                system_prompt: None,
                prompts: Vec::new(),
                inputs: Vec::new(),
                steps: Vec::new(),
                outputs: Vec::new(),
                environment: Environment::default(),
                parent: None,
                children: Vec::new(),
            },
            prev: None,
            objects: BTreeSet::new(),
            pending: None,
        }
    }

    /// Like [`RunBuilder::new`], but objects are written only by [`RunBuilder::finish`].
    pub fn buffered(source: &str) -> Self {
        Self {
            pending: Some(BTreeMap::new()),
            ..Self::new(source)
        }
    }

    /// Sets when the run started, as the agent recorded it (RFC 3339).
    pub fn set_created(&mut self, created: Option<String>) -> &mut Self {
        self.manifest.created = created;
        self
    }

    /// Sets the agent's session id (`gen_ai.conversation.id`).
    pub fn set_conversation_id(&mut self, id: Option<String>) -> &mut Self {
        self.manifest.conversation_id = id;
        self
    }

    /// Sets the model and its parameters.
    pub fn set_model(&mut self, model: Option<ModelInfo>) -> &mut Self {
        self.manifest.model = model;
        self
    }

    /// Sets the environment.
    pub fn set_environment(&mut self, environment: Environment) -> &mut Self {
        self.manifest.environment = environment;
        self
    }

    /// Links the run to the run it was forked from.
    pub fn set_parent(&mut self, parent: Option<RunId>) -> &mut Self {
        self.manifest.parent = parent;
        self
    }

    /// Nests run `child` (already stored) in this one.
    pub fn add_child(&mut self, child: ChildRun) -> &mut Self {
        self.manifest.children.push(child);
        self
    }

    /// Stores the system prompt.
    pub fn set_system_prompt(
        &mut self,
        store: &Store,
        text: &str,
    ) -> Result<ContentHash, RunError> {
        let hash = self.blob(store, text.as_bytes())?;
        self.manifest.system_prompt = Some(hash);
        Ok(hash)
    }

    /// Appends a prompt.
    pub fn add_prompt(
        &mut self,
        store: &Store,
        role: &str,
        text: &str,
    ) -> Result<ContentHash, RunError> {
        let content_ref = self.blob(store, text.as_bytes())?;
        self.manifest.prompts.push(PromptRef {
            role: role.to_owned(),
            content_ref,
        });
        Ok(content_ref)
    }

    /// Appends an input.
    pub fn add_input(
        &mut self,
        store: &Store,
        name: &str,
        bytes: &[u8],
    ) -> Result<ContentHash, RunError> {
        let content_ref = self.blob(store, bytes)?;
        self.manifest.inputs.push(ContentRef {
            name: name.to_owned(),
            content_ref,
            size: bytes.len() as u64,
        });
        Ok(content_ref)
    }

    /// Appends an output.
    pub fn add_output(
        &mut self,
        store: &Store,
        name: &str,
        bytes: &[u8],
    ) -> Result<ContentHash, RunError> {
        let content_ref = self.blob(store, bytes)?;
        self.manifest.outputs.push(ContentRef {
            name: name.to_owned(),
            content_ref,
            size: bytes.len() as u64,
        });
        Ok(content_ref)
    }

    /// Writes a step's blobs and its object, chained to the previous step; returns its hash.
    pub fn push_step(&mut self, store: &Store, draft: StepDraft) -> Result<ContentHash, RunError> {
        let output_ref = draft
            .output
            .as_deref()
            .map(|bytes| self.blob(store, bytes))
            .transpose()?;
        let reasoning_ref = draft
            .reasoning
            .as_deref()
            .map(|text| self.blob(store, text.as_bytes()))
            .transpose()?;
        let parameters = match draft.parameters {
            Value::Null => Value::Object(serde_json::Map::new()),
            other => redact_strings(other),
        };
        let step = Step {
            index: self.manifest.steps.len() as u64,
            prev: self.prev,
            kind: draft.kind,
            tool: draft.tool,
            call_id: draft.call_id,
            model: draft.model,
            parameters,
            output_ref,
            reasoning_ref,
            deterministic: draft.deterministic,
            status: draft.status,
            timestamp: draft.timestamp,
            // Larger values would not survive canonical JSON; adapters warn before this.
            duration_ms: draft.duration_ms.map(|ms| ms.min(MAX_JSON_INT)),
            usage: draft.usage.map(|u| TokenUsage {
                input_tokens: u.input_tokens.min(MAX_JSON_INT),
                output_tokens: u.output_tokens.min(MAX_JSON_INT),
                cache_read_input_tokens: u.cache_read_input_tokens.map(|n| n.min(MAX_JSON_INT)),
                cache_creation_input_tokens: u
                    .cache_creation_input_tokens
                    .map(|n| n.min(MAX_JSON_INT)),
            }),
        };
        let bytes = ctx_core::canonical::to_vec(&step).expect("steps serialize");
        let hash = self.blob(store, &bytes)?;
        self.manifest.steps.push(hash);
        self.prev = Some(hash);
        Ok(hash)
    }

    /// How many steps have been pushed.
    pub fn step_count(&self) -> usize {
        self.manifest.steps.len()
    }

    /// The manifest as it stands.
    pub fn manifest(&self) -> &RunManifest {
        &self.manifest
    }

    /// Writes the manifest, lists the run, points [`LATEST`] at it; returns the run id.
    pub fn finish(self, store: &Store) -> Result<RunId, RunError> {
        if let Some(pending) = &self.pending {
            let blobs: Vec<&[u8]> = pending.values().map(Vec::as_slice).collect();
            put_parallel(store.objects(), &blobs)?;
        }
        save_manifest(store, &self.manifest, &self.objects, None)
    }

    fn blob(&mut self, store: &Store, bytes: &[u8]) -> Result<ContentHash, RunError> {
        // What a run records is redacted as it is stored (an imported transcript holds what
        // the agent saw and typed, secrets included): every text blob with the built-in rules.
        let redacted = std::str::from_utf8(bytes).ok().and_then(|text| {
            match Redactor::builtin().redact(text).text {
                std::borrow::Cow::Owned(text) => Some(text),
                std::borrow::Cow::Borrowed(_) => None,
            }
        });
        let bytes = redacted.as_ref().map_or(bytes, String::as_bytes);
        let hash = match &mut self.pending {
            Some(pending) => {
                let hash = ContentHash::of(bytes);
                pending.entry(hash).or_insert_with(|| bytes.to_vec());
                hash
            }
            None => store.objects().put(bytes)?,
        };
        self.objects.insert(hash);
        Ok(hash)
    }
}

/// `value` with every string redacted with the built-in rules (a secret in a tool call's
/// arguments: a token in a shell command).
fn redact_strings(value: Value) -> Value {
    match value {
        Value::String(text) => match Redactor::builtin().redact(&text).text {
            std::borrow::Cow::Owned(redacted) => Value::String(redacted),
            std::borrow::Cow::Borrowed(_) => Value::String(text),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(redact_strings).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (key, redact_strings(value)))
                .collect(),
        ),
        other => other,
    }
}

/// A run loaded from the store, every object re-hashed and the step chain checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub id: RunId,
    pub manifest: RunManifest,
    /// The steps, in order (`steps[i]` is the object `manifest.steps[i]`).
    pub steps: Vec<Step>,
}

impl Run {
    /// Every object the run references, manifest included, in byte order.
    pub fn objects(&self) -> BTreeSet<ContentHash> {
        let mut out: BTreeSet<ContentHash> = self.manifest.blob_refs().into_iter().collect();
        out.insert(self.id);
        out.extend(self.manifest.steps.iter().copied());
        for step in &self.steps {
            out.extend(step.output_ref);
            out.extend(step.reasoning_ref);
        }
        out
    }

    /// The first timestamp of the run: `created`, else the first step's.
    pub fn started(&self) -> Option<&str> {
        self.manifest
            .created
            .as_deref()
            .or_else(|| self.steps.iter().find_map(|s| s.timestamp.as_deref()))
    }

    /// [`Run::started`] in Unix seconds, when it is a time `ctx` can read.
    pub fn started_secs(&self) -> Option<i64> {
        self.started()
            .and_then(crate::export::parse_rfc3339_nanos)
            .map(|nanos| i64::try_from(nanos / 1_000_000_000).unwrap_or(i64::MAX))
    }

    /// The names of the tools the run called, sorted, without repeats.
    pub fn tools(&self) -> Vec<String> {
        let set: BTreeSet<String> = self.steps.iter().filter_map(|s| s.tool.clone()).collect();
        set.into_iter().collect()
    }
}

/// One row of `run log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    pub id: RunId,
    pub parent: Option<RunId>,
    pub source: String,
    pub steps: u64,
    pub model: Option<String>,
    pub started: Option<String>,
    /// Refs naming this run (`latest`, tags), in byte order.
    pub refs: Vec<String>,
}

/// Reads a blob, checking its hash.
pub fn read_blob(store: &Store, hash: &ContentHash) -> Result<Vec<u8>, RunError> {
    Ok(store.objects().get(hash)?)
}

/// Resolves a ref name (`latest`, a tag), a full id or a hex prefix to a stored run's id.
///
/// Prefixes work as in git: `sha256:` is optional, at least [`MIN_PREFIX_LEN`] hex digits in
/// either case, and a prefix matching several runs is an error listing them.
pub fn resolve_run(store: &Store, input: &str) -> Result<RunId, RunError> {
    let input = input.trim();
    if let Some(id) = store.db().get_ref(REF_NAMESPACE, input)? {
        return Ok(id);
    }
    // Case-insensitive, like snapshot prefixes: `SHA256:0B07` names the same run as `0b07`.
    let lowered = input.to_ascii_lowercase();
    let digits = lowered.strip_prefix("sha256:").unwrap_or(&lowered);
    let is_hex = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_hex || digits.len() > 64 {
        return Err(if lowered.starts_with("sha256:") || is_hex {
            RunError::BadRunId {
                input: input.to_owned(),
                min: MIN_PREFIX_LEN,
            }
        } else {
            RunError::NoSuchRun {
                id: input.to_owned(),
            }
        });
    }
    if digits.len() < MIN_PREFIX_LEN {
        return Err(RunError::BadRunId {
            input: input.to_owned(),
            min: MIN_PREFIX_LEN,
        });
    }
    let ids = store.db().run_ids_with_prefix(digits)?;
    match ids.as_slice() {
        [] => Err(RunError::NoSuchRun {
            id: input.to_owned(),
        }),
        [one] => parse_id(one),
        many => Err(RunError::AmbiguousRun {
            prefix: input.to_owned(),
            candidates: many.to_vec(),
        }),
    }
}

/// Loads the run `input` names (see [`resolve_run`]), re-hashing every object it references
/// and checking the step chain; a damaged object is an error naming it and its step.
pub fn load_run(store: &Store, input: &str) -> Result<Run, RunError> {
    let id = resolve_run(store, input)?;
    load_run_by_id(store, &id)
}

/// [`load_run`] for an exact id.
pub fn load_run_by_id(store: &Store, id: &RunId) -> Result<Run, RunError> {
    let run_label = id.to_string();
    let bytes = store.objects().get(id).map_err(|source| RunError::Object {
        run: run_label.clone(),
        what: "manifest".to_owned(),
        object: *id,
        source: Box::new(source),
    })?;
    let manifest: RunManifest = parse_canonical(&bytes).map_err(|detail| RunError::Malformed {
        run: run_label.clone(),
        what: "manifest".to_owned(),
        object: *id,
        kind: "run manifest",
        detail,
    })?;
    let mut steps = Vec::with_capacity(manifest.steps.len());
    let mut prev = None;
    for (index, hash) in manifest.steps.iter().enumerate() {
        let what = format!("step {index}");
        let bytes = store
            .objects()
            .get(hash)
            .map_err(|source| RunError::Object {
                run: run_label.clone(),
                what: what.clone(),
                object: *hash,
                source: Box::new(source),
            })?;
        let step: Step = parse_canonical(&bytes).map_err(|detail| RunError::Malformed {
            run: run_label.clone(),
            what: what.clone(),
            object: *hash,
            kind: "run step",
            detail,
        })?;
        if step.index != index as u64 {
            return Err(RunError::BrokenChain {
                run: *id,
                index,
                object: *hash,
                detail: format!("it says it is step {}", step.index),
            });
        }
        if step.prev != prev {
            return Err(RunError::BrokenChain {
                run: *id,
                index,
                object: *hash,
                detail: "its `prev` does not name the step before it".to_owned(),
            });
        }
        for (field, blob) in [
            ("output", step.output_ref),
            ("reasoning", step.reasoning_ref),
        ] {
            if let Some(blob) = blob {
                check_blob(store, &run_label, &format!("{what} {field}"), &blob)?;
            }
        }
        prev = Some(*hash);
        steps.push(step);
    }
    for blob in manifest.blob_refs() {
        check_blob(store, &run_label, "blob", &blob)?;
    }
    for child in &manifest.children {
        check_blob(store, &run_label, "nested run", &child.run)?;
    }
    Ok(Run {
        id: *id,
        manifest,
        steps,
    })
}

/// [`load_run_by_id`] with every run nested in it (sub-agents, compactions), recursively.
pub fn load_run_tree(store: &Store, id: &RunId) -> Result<crate::export::RunTree, RunError> {
    let run = load_run_by_id(store, id)?;
    let mut children = Vec::with_capacity(run.manifest.children.len());
    for child in &run.manifest.children {
        children.push((child.clone(), load_run_tree(store, &child.run)?));
    }
    Ok(crate::export::RunTree { run, children })
}

/// Stored runs, most recently added first, with the refs naming each.
pub fn list_runs(store: &Store) -> Result<Vec<RunSummary>, RunError> {
    let rows = store.db().list_run_rows()?;
    let refs = refs_by_run(store)?;
    rows.into_iter()
        .map(|row| {
            let id = parse_id(&row.run_id)?;
            Ok(RunSummary {
                id,
                parent: row.parent.as_deref().map(parse_id).transpose()?,
                source: row.source,
                steps: u64::try_from(row.step_count).unwrap_or(0),
                model: row.model,
                started: row.started,
                refs: refs.get(&id).cloned().unwrap_or_default(),
            })
        })
        .collect()
}

/// Ref names by the run they name, each list in byte order.
pub fn refs_by_run(store: &Store) -> Result<BTreeMap<RunId, Vec<String>>, RunError> {
    let mut out: BTreeMap<RunId, Vec<String>> = BTreeMap::new();
    for entry in store.db().list_refs(REF_NAMESPACE)? {
        out.entry(entry.object).or_default().push(entry.name);
    }
    Ok(out)
}

/// Checks that `tag` can name a run: letters, digits, `.`, `_`, `-`; not `latest` (which
/// [`save_manifest`] moves), not starting with `sha256`, and not all hex (it would shadow id
/// prefixes).
pub fn check_tag(tag: &str) -> Result<(), RunError> {
    let ok = !tag.is_empty()
        && tag.len() <= 100
        && !tag.starts_with("sha256")
        && !tag.eq_ignore_ascii_case(LATEST)
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !tag.bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        Ok(())
    } else {
        Err(RunError::BadTag {
            tag: tag.to_owned(),
        })
    }
}

/// Names run `id` with `tag` (moving the tag if it named another run).
pub fn tag_run(store: &Store, tag: &str, id: &RunId) -> Result<(), RunError> {
    check_tag(tag)?;
    store.db().set_ref(REF_NAMESPACE, tag, id)?;
    Ok(())
}

/// Stores a copy of run `input` linked to it as its parent, keeping its first `at` steps
/// (all when `None`); returns the new run's id.
pub fn fork_run(store: &Store, input: &str, at: Option<usize>) -> Result<RunId, RunError> {
    let run = load_run(store, input)?;
    let steps = run.steps.len();
    let keep = at.unwrap_or(steps);
    if keep > steps {
        return Err(RunError::BadForkPoint {
            run: run.id,
            steps,
            at: keep,
        });
    }
    let mut manifest = run.manifest.clone();
    manifest.steps.truncate(keep);
    if keep < steps {
        // The outputs came from the steps that are cut off, and so did the runs they started.
        manifest.outputs.clear();
        manifest
            .children
            .retain(|c| c.step.is_some_and(|s| s < keep as u64));
    }
    manifest.parent = Some(run.id);
    "fork".clone_into(&mut manifest.source);
    let mut objects: BTreeSet<ContentHash> = manifest.blob_refs().into_iter().collect();
    for (hash, step) in manifest.steps.iter().zip(&run.steps) {
        objects.insert(*hash);
        objects.extend(step.output_ref);
        objects.extend(step.reasoning_ref);
    }
    let started = run.started().map(str::to_owned);
    save_manifest(store, &manifest, &objects, started)
}

/// Writes `manifest` (whose steps and blobs, listed in `objects`, are already stored), lists
/// the run and moves [`LATEST`] to it.
pub(crate) fn save_manifest(
    store: &Store,
    manifest: &RunManifest,
    objects: &BTreeSet<ContentHash>,
    started: Option<String>,
) -> Result<RunId, RunError> {
    let id = store.objects().put(&manifest.canonical_bytes())?;
    let started = started.or_else(|| manifest.created.clone()).or_else(|| {
        // The first step's timestamp, read back from its object.
        manifest.steps.first().and_then(|hash| {
            let bytes = store.objects().get(hash).ok()?;
            serde_json::from_slice::<Step>(&bytes).ok()?.timestamp
        })
    });
    store.db().record_run(
        &ctx_store::RunRow {
            run_id: id.to_string(),
            parent: manifest.parent.map(|p| p.to_string()),
            source: manifest.source.clone(),
            step_count: i64::try_from(manifest.steps.len()).unwrap_or(i64::MAX),
            model: manifest.model.as_ref().map(|m| m.identifier.clone()),
            started,
            // A store shared by workspaces stamps its workspace's root (`Store::scoped`).
            root: None,
        },
        objects,
        (REF_NAMESPACE, LATEST),
    )?;
    Ok(id)
}

/// How many threads write objects at once: each write waits on fsync, not on a CPU.
const WRITERS: usize = 16;

/// Writes `objects` with [`WRITERS`] threads (each object still tmp + fsync + rename).
pub(crate) fn put_parallel(objects: &dyn Objects, blobs: &[&[u8]]) -> Result<(), RunError> {
    let chunk = blobs.len().div_ceil(WRITERS).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = blobs
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().try_for_each(|b| objects.put(b).map(drop))))
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("object writers do not panic"))
    })?;
    Ok(())
}

/// Parses an object that must be the canonical JSON of a `T` (nothing lost, nothing added).
pub(crate) fn parse_canonical<T>(bytes: &[u8]) -> Result<T, String>
where
    T: serde::de::DeserializeOwned + Serialize,
{
    let value: T = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let again = ctx_core::canonical::to_vec(&value).map_err(|e| e.to_string())?;
    if again != bytes {
        return Err("it is not in canonical form".to_owned());
    }
    Ok(value)
}

fn check_blob(store: &Store, run: &str, what: &str, blob: &ContentHash) -> Result<(), RunError> {
    store
        .objects()
        .get(blob)
        .map(drop)
        .map_err(|source| RunError::Object {
            run: run.to_owned(),
            what: what.to_owned(),
            object: *blob,
            source: Box::new(source),
        })
}

fn parse_id(text: &str) -> Result<RunId, RunError> {
    text.parse().map_err(|_| {
        RunError::Store(ctx_store::StoreError::BadHashInDatabase {
            table: "runs",
            column: "run_id",
            value: text.to_owned(),
        })
    })
}
