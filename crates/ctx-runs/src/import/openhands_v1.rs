//! OpenHands V1 (the software-agent SDK): events tagged by `kind`, as an `events.jsonl`
//! stream, in a persisted conversation directory (`events/event-*.json`, with
//! `base_state.json` naming the model), or as the `history` of an evaluation row.
//!
//! `SystemPromptEvent` gives the system prompt; a `MessageEvent` from the user is a prompt and
//! from the agent a model step; each `ActionEvent` is a tool step (`tool_name`,
//! `tool_call_id`, the model's own arguments from `tool_call.arguments`, its `thought` and
//! `reasoning_content` as reasoning), whose output is the `ObservationEvent`,
//! `UserRejectObservation` or `AgentErrorEvent` with its `tool_call_id`, in any order (parallel
//! calls). An `AgentErrorEvent` or `ConversationErrorEvent` that answers no call is an error
//! step of its own; a condenser's summary is a `compact_summary` prompt. State updates
//! (whose `stats` name the model), pauses, token and completion logs are skipped by name.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

use super::{
    ImportReport, ImportWarning, LogSource, LossKind, ParsedRun, UnknownKinds, main_model,
    millis_between, output_of,
};
use crate::RunError;
use crate::model::{ModelInfo, StepStatus};
use crate::store::StepDraft;

/// Event kinds that carry no part of the run.
const BOOKKEEPING: &[&str] = &[
    "ConversationStateUpdateEvent",
    "PauseEvent",
    "TokenEvent",
    "LLMCompletionLogEvent",
    "CondensationRequest",
    "StreamingDeltaEvent",
    "HookExecutionEvent",
];

/// Whether `map` is a V1 event: a `kind` the SDK uses, with an id or a source.
pub(super) fn looks_like_event(map: &Map<String, Value>) -> bool {
    map.get("kind").and_then(Value::as_str).is_some_and(|k| {
        k.ends_with("Event") || k.starts_with("Condensation") || k.ends_with("Observation")
    }) && (map.contains_key("source") || map.contains_key("id"))
}

/// A persisted conversation: `base_state.json` (the bytes) and `events/event-*.json` (the
/// sidecars, in file-name order).
pub(super) fn parse_conversation(source: &LogSource) -> Result<ParsedRun, RunError> {
    let mut events = Vec::with_capacity(source.sidecars.len());
    for (n, (file, bytes)) in source.sidecars.iter().enumerate() {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => events.push((n, map)),
            Ok(_) => {
                return Err(RunError::BadFile {
                    path: file.clone(),
                    format: "openhands",
                    detail: "an event file must hold one JSON object".to_owned(),
                });
            }
            Err(e) => {
                return Err(RunError::BadFile {
                    path: file.clone(),
                    format: "openhands",
                    detail: format!(
                        "not valid JSON at line {}, column {}: {e}",
                        e.line(),
                        e.column()
                    ),
                });
            }
        }
    }
    let mut run = events_with_names(&events, &source.sidecars);
    if !source.bytes.is_empty() {
        let state: Value =
            serde_json::from_slice(&source.bytes).map_err(|e| RunError::BadFile {
                path: source.path.join("base_state.json"),
                format: "openhands",
                detail: format!("not valid JSON: {e}"),
            })?;
        if run.conversation_id.is_none() {
            run.conversation_id = state.get("id").and_then(Value::as_str).map(str::to_owned);
        }
        let llm = state.get("agent").and_then(|a| a.get("llm"));
        if let Some(model) = llm.and_then(|l| l.get("model")).and_then(Value::as_str) {
            let mut parameters = BTreeMap::new();
            for key in ["temperature", "top_p", "max_output_tokens"] {
                if let Some(v) = llm.and_then(|l| l.get(key)).filter(|v| !v.is_null()) {
                    parameters.insert(key.to_owned(), v.clone());
                }
            }
            run.model = Some(ModelInfo {
                identifier: model.to_owned(),
                provider: None,
                parameters,
            });
        }
    }
    Ok(run)
}

fn events_with_names(
    list: &[(usize, Map<String, Value>)],
    files: &[(std::path::PathBuf, Vec<u8>)],
) -> ParsedRun {
    let mut run = events(list, false, Some("events"));
    for w in &mut run.warnings {
        if let Some(item) = &w.item
            && let Some(n) = item
                .strip_prefix("events[")
                .and_then(|i| i.strip_suffix(']'))
                .and_then(|i| i.parse::<usize>().ok())
            && let Some((file, _)) = files.get(n)
        {
            w.item = Some(
                file.file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    run
}

/// V1 events as a run. `by_line`: the numbers are lines (JSONL) rather than item indices
/// (named `label[n]` in warnings).
pub(super) fn events(
    events: &[(usize, Map<String, Value>)],
    by_line: bool,
    label: Option<&str>,
) -> ParsedRun {
    let mut reader = V1Reader {
        run: ParsedRun::default(),
        report: ImportReport::default(),
        unknown: UnknownKinds::default(),
        by_call: HashMap::new(),
        by_action: HashMap::new(),
        models: Vec::new(),
        by_line,
        label,
    };
    reader.run.environment.runtime = Some("openhands".to_owned());
    for (n, event) in events {
        reader.event(*n, event);
    }
    reader.finish()
}

/// The run being read from V1 events, and what reading it keeps track of.
struct V1Reader<'a> {
    run: ParsedRun,
    report: ImportReport,
    unknown: UnknownKinds,
    /// Step index by tool call id, and by action event id (observations name either).
    by_call: HashMap<String, usize>,
    by_action: HashMap<String, usize>,
    /// Model names the state updates report, in order.
    models: Vec<String>,
    by_line: bool,
    label: Option<&'a str>,
}

impl V1Reader<'_> {
    /// Where event `n` is, for a warning.
    fn at(&self, n: usize) -> String {
        match (self.by_line, self.label) {
            (true, _) => format!("line {n}"),
            (false, Some(label)) => format!("{label}[{n}]"),
            (false, None) => format!("[{n}]"),
        }
    }

    fn event(&mut self, n: usize, event: &Map<String, Value>) {
        let kind = event.get("kind").and_then(Value::as_str).unwrap_or("");
        let timestamp = event
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if self.run.created.is_none() {
            self.run.created.clone_from(&timestamp);
        }
        match kind {
            "SystemPromptEvent" => {
                let text = event.get("system_prompt").and_then(text_or_block);
                if self.run.system_prompt.is_none() {
                    self.run.system_prompt = text;
                }
            }
            "MessageEvent" => self.message(event, timestamp),
            "ActionEvent" => self.action(event, timestamp),
            "ObservationEvent" | "UserRejectObservation" | "AgentErrorEvent" => {
                self.observation(n, kind, event, timestamp);
            }
            "ConversationErrorEvent" => {
                let detail = event
                    .get("detail")
                    .or_else(|| event.get("error"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let mut step = StepDraft::model_call(None, detail);
                step.status = StepStatus::Error;
                step.timestamp = timestamp;
                self.run.steps.push(step);
            }
            "Condensation" | "CondensationSummaryEvent" => {
                if let Some(summary) = event
                    .get("summary")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    self.run
                        .prompts
                        .push(("compact_summary".to_owned(), summary.to_owned()));
                }
            }
            "ConversationStateUpdateEvent" => self.state_update(event),
            k if BOOKKEEPING.contains(&k) => {}
            "" => self.unknown.note("(no `kind`)".to_owned(), n),
            other => self.unknown.note(format!("`{other}`"), n),
        }
    }

    fn message(&mut self, event: &Map<String, Value>, timestamp: Option<String>) {
        self.report.held.messages += 1;
        let source = event
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or("user");
        let message = event.get("llm_message");
        let text = message
            .and_then(|m| m.get("content"))
            .map(text_of_content)
            .unwrap_or_default();
        if source == "agent" {
            let mut step = StepDraft::model_call(None, &text);
            step.reasoning = message
                .and_then(|m| m.get("reasoning_content"))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .map(str::to_owned);
            step.timestamp = timestamp;
            self.run.steps.push(step);
        } else {
            self.run.prompts.push((source.to_owned(), text));
        }
        self.report.kept.messages += 1;
    }

    fn action(&mut self, event: &Map<String, Value>, timestamp: Option<String>) {
        self.report.held.calls += 1;
        let call = event.get("tool_call");
        let tool = event
            .get("tool_name")
            .or_else(|| call.and_then(|c| c.get("name")))
            .and_then(Value::as_str)
            .unwrap_or("tool");
        let arguments = call
            .and_then(|c| c.get("arguments"))
            .and_then(|a| match a {
                Value::String(text) => serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(Value::is_object),
                Value::Object(_) => Some(a.clone()),
                _ => None,
            })
            .or_else(|| {
                let mut action = event.get("action")?.as_object()?.clone();
                action.remove("kind");
                Some(Value::Object(action))
            })
            .unwrap_or(Value::Null);
        let mut step = StepDraft::tool_call(tool, arguments);
        step.call_id = event
            .get("tool_call_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let thought = event
            .get("thought")
            .map(text_of_content)
            .unwrap_or_default();
        step.reasoning = if thought.is_empty() {
            event
                .get("reasoning_content")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .map(str::to_owned)
        } else {
            Some(thought)
        };
        step.deterministic = is_deterministic(tool, &step.parameters);
        step.timestamp = timestamp;
        if let Some(id) = &step.call_id {
            self.by_call.insert(id.clone(), self.run.steps.len());
        }
        if let Some(id) = event.get("id").and_then(Value::as_str) {
            self.by_action.insert(id.to_owned(), self.run.steps.len());
        }
        self.run.steps.push(step);
        self.report.kept.calls += 1;
    }

    fn observation(
        &mut self,
        n: usize,
        kind: &str,
        event: &Map<String, Value>,
        timestamp: Option<String>,
    ) {
        let call = event
            .get("tool_call_id")
            .and_then(Value::as_str)
            .and_then(|id| self.by_call.get(id))
            .or_else(|| {
                event
                    .get("action_id")
                    .and_then(Value::as_str)
                    .and_then(|id| self.by_action.get(id))
            })
            .copied();
        let (output, error) = match kind {
            "ObservationEvent" => observation_output(event.get("observation")),
            "UserRejectObservation" => (
                event
                    .get("rejection_reason")
                    .and_then(Value::as_str)
                    .unwrap_or("rejected by the user")
                    .as_bytes()
                    .to_vec(),
                true,
            ),
            _ => (
                event
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .as_bytes()
                    .to_vec(),
                true,
            ),
        };
        self.report.held.outputs += 1;
        match call {
            Some(index) if self.run.steps[index].output.is_none() => {
                let step = &mut self.run.steps[index];
                step.output = Some(output);
                if error {
                    step.status = StepStatus::Error;
                }
                if let (Some(start), Some(end)) = (step.timestamp.as_deref(), timestamp.as_deref())
                {
                    step.duration_ms = millis_between(start, end);
                }
                self.report.kept.outputs += 1;
            }
            Some(_) => {
                self.report.lose(
                    LossKind::Outputs,
                    1,
                    "a second observation for a call that already has one",
                );
                let at = self.at(n);
                self.run.warnings.push(ImportWarning::at_item(
                    at,
                    format!("a second `{kind}` for the same tool call"),
                ));
            }
            None if kind == "AgentErrorEvent" => {
                let mut step = StepDraft::model_call(None, &String::from_utf8_lossy(&output));
                step.status = StepStatus::Error;
                step.timestamp = timestamp;
                self.run.steps.push(step);
                self.report.kept.outputs += 1;
            }
            None => {
                self.report.lose(
                    LossKind::Outputs,
                    1,
                    "observations that answer tool calls not in the file",
                );
                let at = self.at(n);
                self.run.warnings.push(ImportWarning::at_item(
                    at,
                    format!("`{kind}` answers a tool call not in the file"),
                ));
            }
        }
    }

    /// A state update with the conversation's stats names the model.
    fn state_update(&mut self, event: &Map<String, Value>) {
        if event.get("key").and_then(Value::as_str) == Some("stats")
            && let Some(metrics) = event
                .get("value")
                .and_then(|v| v.get("usage_to_metrics"))
                .and_then(Value::as_object)
        {
            let name = metrics
                .get("agent")
                .or_else(|| metrics.get("default"))
                .or_else(|| metrics.values().next())
                .and_then(|m| m.get("model_name"))
                .and_then(Value::as_str);
            if let Some(name) = name {
                self.models.push(name.to_owned());
            }
        }
    }

    fn finish(mut self) -> ParsedRun {
        let mut notes = self.unknown.warnings("event(s)", self.by_line);
        if !self.by_line {
            for w in &mut notes {
                w.item = w
                    .item
                    .take()
                    .map(|i| format!("{}{i}", self.label.unwrap_or("")));
            }
        }
        self.run.warnings.extend(notes);
        if let Some(model) = main_model(self.models.iter().map(String::as_str)) {
            self.run.model = Some(ModelInfo {
                identifier: model,
                provider: None,
                parameters: BTreeMap::new(),
            });
        }
        self.run.report = self.report;
        self.run
    }
}

/// An observation's output: its `content` (text blocks joined), else its `output`, else the
/// whole observation; and whether it reports an error.
fn observation_output(observation: Option<&Value>) -> (Vec<u8>, bool) {
    let Some(obs) = observation.and_then(Value::as_object) else {
        return (Vec::new(), false);
    };
    let error = obs.get("is_error").and_then(Value::as_bool) == Some(true)
        || obs.get("error").and_then(Value::as_bool) == Some(true);
    let output = if let Some(content) = obs.get("content") {
        output_of(content)
    } else if let Some(Value::String(output)) = obs.get("output") {
        output.as_bytes().to_vec()
    } else {
        ctx_core::canonical::to_vec(&Value::Object(obs.clone())).expect("JSON values serialize")
    };
    (output, error)
}

/// The text of a string, a `{text}` block or a list of blocks.
fn text_or_block(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("text").and_then(Value::as_str).map(str::to_owned),
        Value::Array(_) => Some(text_of_content(value)),
        _ => None,
    }
}

/// The text blocks of a message's content, joined by newlines.
fn text_of_content(value: &Value) -> String {
    super::text_of(value).unwrap_or_default()
}

/// File views are deterministic: `file_editor`/`str_replace_editor` with `command: view`.
fn is_deterministic(tool: &str, args: &Value) -> bool {
    matches!(tool, "file_editor" | "str_replace_editor")
        && args.get("command").and_then(Value::as_str) == Some("view")
}
