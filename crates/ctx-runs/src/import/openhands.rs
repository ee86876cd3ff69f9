//! OpenHands logs: V0 event arrays, the resolver's and the evaluation harness's
//! `output.jsonl` rows, and (in [`super::openhands_v1`]) the V1 SDK's event streams.
//!
//! V0 events are actions or observations. Actions carry `action`, `args` (with the agent's
//! `thought`), `source` and, for tool calls, `tool_call_metadata` (`function_name`,
//! `tool_call_id`, and the `model_response` that made the call: its model, its usage and the
//! model's own tool-call arguments, which become the step's arguments). Observations carry
//! `observation`, `content` and `cause` (the id of the action they answer). A user `message`
//! is a prompt, an agent `message` a model step, any other action a tool step whose output is
//! its observation and which lasts until it; an `error` observation that answers no action is
//! an error step of its own. A `system` action gives the system prompt; environment
//! bookkeeping (`agent_state_changed`, `recall`, `null`, …) is skipped by name. Timestamps
//! carry no offset; they are read as UTC.
//!
//! An `output.jsonl` row holds a `history` of one run, with the task (`instruction`), the
//! model (`metadata.llm_config` or `metadata.llm`) and the patch (`git_patch`). Evaluation
//! rows hold V0 events with ids, or V1 events; resolver rows hold a flat history whose
//! actions and observations carry their arguments at the top level and no ids, each
//! observation answering the action before it (or `[action, observation]` pairs). Each row is
//! a run of its own, or only row N with `--row N`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use super::{
    ImportOptions, ImportReport, ImportWarning, LogSource, LossKind, ParsedRun, SourceKind,
    UnknownKinds, jsonl, millis_between, openhands_v1, usage_of,
};
use crate::RunError;
use crate::model::{ModelInfo, StepStatus};
use crate::store::StepDraft;

const FORMAT: &str = "openhands";

/// Events that describe the agent's state, not the run's work.
const BOOKKEEPING: &[&str] = &[
    "agent_state_changed",
    "change_agent_state",
    "recall",
    "null",
    "condensation",
    "condensation_request",
];

pub(super) fn parse(
    source: &LogSource,
    options: &ImportOptions,
) -> Result<Vec<ParsedRun>, RunError> {
    let path = source.path.as_path();
    if source.kind == SourceKind::OpenHandsConversation {
        return openhands_v1::parse_conversation(source).map(|run| vec![run]);
    }
    let bad = |detail: String| RunError::BadFile {
        path: path.to_owned(),
        format: FORMAT,
        detail,
    };
    match serde_json::from_slice::<Value>(&source.bytes) {
        Ok(Value::Array(events)) => return Ok(vec![v0_events(&events, "events")]),
        Ok(Value::Object(mut map)) => {
            if let Some(Value::Array(events)) = map.remove("events") {
                return Ok(vec![v0_events(&events, "events")]);
            }
            if looks_like_row(&map) {
                return Ok(vec![row(path, &map, None)?]);
            }
            if openhands_v1::looks_like_event(&map) {
                return Ok(vec![openhands_v1::events(&[(1, map)], true, None)]);
            }
            return Err(bad(
                "expected an array of events, an `output.jsonl` row or V1 events".to_owned(),
            ));
        }
        Ok(_) => return Err(bad("expected an array of events".to_owned())),
        Err(e) => {
            // JSON Lines when the first line is a JSON object of its own; otherwise one JSON
            // document that does not parse.
            let first = source
                .bytes
                .split(|b| *b == b'\n')
                .find(|l| !l.iter().all(u8::is_ascii_whitespace));
            let first_is_object = first
                .is_some_and(|l| serde_json::from_slice::<Value>(l).is_ok_and(|v| v.is_object()));
            if !first_is_object {
                return Err(bad(format!(
                    "not valid JSON at line {}, column {}: {e}",
                    e.line(),
                    e.column()
                )));
            }
        }
    }
    // JSON Lines: V1 events, or rows.
    let mut report = ImportReport::default();
    let mut warnings = Vec::new();
    let lines = jsonl::objects(
        path,
        FORMAT,
        &source.bytes,
        options,
        &mut report,
        &mut warnings,
    )?;
    if lines.iter().any(|(_, o)| openhands_v1::looks_like_event(o)) {
        let mut run = openhands_v1::events(&lines, true, None);
        run.warnings.splice(0..0, warnings);
        run.report.skipped_lines = report.skipped_lines;
        return Ok(vec![run]);
    }
    if !lines.iter().any(|(_, o)| looks_like_row(o)) {
        return Err(bad(
            "expected an array of events, V1 events (one per line) or `output.jsonl` rows"
                .to_owned(),
        ));
    }
    let rows: Vec<(usize, Map<String, Value>)> = lines;
    let picked: Vec<&(usize, Map<String, Value>)> = match options.row {
        Some(n) => {
            let Some(row) = n.checked_sub(1).and_then(|i| rows.get(i)) else {
                return Err(RunError::BadRow {
                    path: path.to_owned(),
                    row: n,
                    rows: rows.len(),
                });
            };
            vec![row]
        }
        None => rows.iter().collect(),
    };
    let mut runs = Vec::with_capacity(picked.len());
    for (n, (line, obj)) in picked.into_iter().enumerate() {
        let number = options.row.unwrap_or(n + 1) as u64;
        let mut run = row(path, obj, Some(number)).map_err(|e| match e {
            RunError::BadFile { detail, .. } => bad(format!("line {line}: {detail}")),
            other => other,
        })?;
        if n == 0 {
            run.warnings.splice(0..0, warnings.clone());
            run.report.skipped_lines = report.skipped_lines;
        }
        runs.push(run);
    }
    Ok(runs)
}

/// An `output.jsonl` row: an object with a `history` array and a task or an instance id.
pub(super) fn looks_like_row(map: &Map<String, Value>) -> bool {
    map.get("history").is_some_and(Value::is_array)
        && [
            "instruction",
            "instance_id",
            "issue",
            "instance",
            "metadata",
        ]
        .iter()
        .any(|k| map.contains_key(*k))
}

/// One `output.jsonl` row as a run.
fn row(path: &Path, map: &Map<String, Value>, number: Option<u64>) -> Result<ParsedRun, RunError> {
    let history = map
        .get("history")
        .and_then(Value::as_array)
        .ok_or_else(|| RunError::BadFile {
            path: path.to_owned(),
            format: FORMAT,
            detail: "an `output.jsonl` row without a `history` array".to_owned(),
        })?;
    let mut run = if history
        .iter()
        .any(|e| e.get("kind").and_then(Value::as_str).is_some())
    {
        let events: Vec<(usize, Map<String, Value>)> = history
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_object().map(|o| (i, o.clone())))
            .collect();
        openhands_v1::events(&events, false, Some("history"))
    } else if history
        .iter()
        .any(|e| e.get("id").is_some() && e.get("timestamp").is_some())
    {
        v0_events(history, "history")
    } else {
        flat_history(history)
    };
    run.row = number;
    let metadata = map.get("metadata");
    let llm = metadata.and_then(|m| m.get("llm_config").or_else(|| m.get("llm")));
    if let Some(model) = llm.and_then(|l| l.get("model")).and_then(Value::as_str) {
        let mut parameters = BTreeMap::new();
        for key in ["temperature", "top_p", "max_output_tokens"] {
            if let Some(v) = llm.and_then(|l| l.get(key)).filter(|v| !v.is_null()) {
                parameters.insert(key.to_owned(), v.clone());
            }
        }
        let identifier = model.to_owned();
        match &mut run.model {
            Some(info) => info.parameters = parameters,
            None => {
                run.model = Some(ModelInfo {
                    identifier,
                    provider: None,
                    parameters,
                });
            }
        }
    }
    if let Some(version) = metadata
        .and_then(|m| m.get("openhands_version"))
        .and_then(Value::as_str)
    {
        run.environment
            .tool_versions
            .insert("openhands".to_owned(), version.to_owned());
    }
    if let Some(instruction) = map.get("instruction").and_then(Value::as_str)
        && !run.prompts.iter().any(|(_, p)| p == instruction)
    {
        run.prompts
            .insert(0, ("user".to_owned(), instruction.to_owned()));
    }
    run.conversation_id = map
        .get("instance_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            let issue = map.get("issue")?;
            let number = issue.get("number")?;
            Some(match (issue.get("owner"), issue.get("repo")) {
                (Some(Value::String(o)), Some(Value::String(r))) => format!("{o}/{r}#{number}"),
                _ => format!("#{number}"),
            })
        });
    let git_patch = map
        .get("git_patch")
        .or_else(|| map.get("test_result").and_then(|t| t.get("git_patch")))
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    if let Some(diff) = git_patch {
        run.outputs
            .push(("git_patch.diff".to_owned(), diff.as_bytes().to_vec()));
    }
    Ok(run)
}

/// V0 events (with ids and `cause`s) as a run; `label` names the array in warnings.
fn v0_events(events: &[Value], label: &str) -> ParsedRun {
    let mut run = ParsedRun::default();
    run.environment.runtime = Some("openhands".to_owned());
    let mut state = V0::default();
    for (i, event) in events.iter().enumerate() {
        let at = format!("{label}[{i}]");
        let Some(obj) = event.as_object() else {
            run.warnings
                .push(ImportWarning::at_item(at, "not a JSON object"));
            continue;
        };
        if run.created.is_none() {
            run.created = obj
                .get("timestamp")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if let Some(action) = obj.get("action").and_then(Value::as_str) {
            state.action(&mut run, obj, action, &at);
        } else if let Some(observation) = obj.get("observation").and_then(Value::as_str) {
            state.observation(&mut run, obj, observation, &at);
        } else {
            state
                .unknown
                .note("(neither action nor observation)".to_owned(), i);
        }
    }
    let unknown = std::mem::take(&mut state.unknown);
    run.warnings.extend(
        unknown
            .warnings("event(s)", false)
            .into_iter()
            .map(|mut w| {
                w.item = w.item.map(|i| format!("{label}{i}"));
                w
            }),
    );
    if let Some(model) = super::main_model(state.models.iter().map(String::as_str)) {
        run.model = Some(ModelInfo {
            identifier: model,
            provider: None,
            parameters: BTreeMap::new(),
        });
    }
    run.report = state.report;
    run
}

#[derive(Default)]
struct V0 {
    /// Action id -> its step index.
    by_id: HashMap<i64, usize>,
    /// Model responses whose usage a step already carries.
    usage_given: HashSet<String>,
    models: Vec<String>,
    report: ImportReport,
    unknown: UnknownKinds,
}

impl V0 {
    fn action(&mut self, run: &mut ParsedRun, obj: &Map<String, Value>, action: &str, at: &str) {
        if action == "system" {
            // SystemMessageAction: the agent's system prompt.
            match obj
                .get("args")
                .and_then(|a| a.get("content"))
                .and_then(Value::as_str)
            {
                Some(content) if run.system_prompt.is_none() => {
                    run.system_prompt = Some(content.to_owned());
                }
                Some(_) => run.warnings.push(ImportWarning::at_item(
                    at.to_owned(),
                    "a second system prompt; the first one is kept",
                )),
                None => {}
            }
            return;
        }
        if BOOKKEEPING.contains(&action) {
            return;
        }
        let source = obj.get("source").and_then(Value::as_str).unwrap_or("agent");
        let mut args = obj
            .get("args")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let timestamp = obj
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let meta = obj.get("tool_call_metadata").and_then(Value::as_object);
        let response = meta.and_then(|m| m.get("model_response"));
        let model = response
            .and_then(|r| r.get("model"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(m) = &model {
            self.models.push(m.clone());
        }
        if action == "message" {
            self.report.held.messages += 1;
            self.report.kept.messages += 1;
            let content = args
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if source == "user" {
                run.prompts.push(("user".to_owned(), content));
            } else {
                let mut step = StepDraft::model_call(model.as_deref(), &content);
                step.timestamp = timestamp;
                step.usage = self.usage(response);
                if let Some(id) = obj.get("id").and_then(Value::as_i64) {
                    self.by_id.insert(id, run.steps.len());
                }
                run.steps.push(step);
            }
            return;
        }
        self.report.held.calls += 1;
        self.report.kept.calls += 1;
        let thought = match args.remove("thought") {
            Some(Value::String(t)) if !t.is_empty() => Some(t),
            _ => None,
        };
        let tool = meta
            .and_then(|m| m.get("function_name"))
            .and_then(Value::as_str)
            .unwrap_or(action);
        let call_id = meta
            .and_then(|m| m.get("tool_call_id"))
            .and_then(Value::as_str);
        // The model's own arguments, when the response that made the call is recorded.
        let model_args = call_id.and_then(|id| model_arguments(response, id));
        let deterministic = is_deterministic(action, tool, &Value::Object(args.clone()));
        let mut step = StepDraft::tool_call(tool, model_args.unwrap_or(Value::Object(args)));
        step.call_id = call_id.map(str::to_owned);
        step.model = model;
        step.deterministic = deterministic;
        step.reasoning = thought;
        step.timestamp = timestamp;
        step.usage = self.usage(response);
        if let Some(id) = obj.get("id").and_then(Value::as_i64) {
            self.by_id.insert(id, run.steps.len());
        }
        run.steps.push(step);
    }

    /// The usage of `response`, for the first step that response made.
    fn usage(&mut self, response: Option<&Value>) -> Option<crate::model::TokenUsage> {
        let response = response?;
        let usage = response.get("usage").and_then(usage_of)?;
        let id = response
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.usage_given.insert(id.to_owned()).then_some(usage)
    }

    fn observation(
        &mut self,
        run: &mut ParsedRun,
        obj: &Map<String, Value>,
        observation: &str,
        at: &str,
    ) {
        if BOOKKEEPING.contains(&observation) {
            return;
        }
        let content = obj
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let timestamp = obj.get("timestamp").and_then(Value::as_str);
        self.report.held.outputs += 1;
        let cause = obj.get("cause").and_then(Value::as_i64);
        let Some(cause) = cause else {
            if observation == "error" {
                // An error of the agent's loop (the model failed, it got stuck): a step.
                let mut step = StepDraft::model_call(None, content);
                step.status = StepStatus::Error;
                step.timestamp = timestamp.map(str::to_owned);
                run.steps.push(step);
                self.report.kept.outputs += 1;
            } else {
                self.report.lose(
                    LossKind::Outputs,
                    1,
                    "observations that answer no action (no `cause`)",
                );
                run.warnings.push(ImportWarning::at_item(
                    at.to_owned(),
                    format!("observation `{observation}` answers no action (no `cause`)"),
                ));
            }
            return;
        };
        let Some(&index) = self.by_id.get(&cause) else {
            self.report.lose(
                LossKind::Outputs,
                1,
                "observations that answer actions not in the file",
            );
            run.warnings.push(ImportWarning::at_item(
                at.to_owned(),
                format!("observation `{observation}` answers unknown action id {cause}"),
            ));
            return;
        };
        if run.steps[index].output.is_some()
            && run.steps[index].kind == crate::model::StepKind::ToolCall
        {
            self.report.lose(
                LossKind::Outputs,
                1,
                "a second observation for an action replaces the first one's output",
            );
            run.warnings.push(ImportWarning::at_item(
                at.to_owned(),
                format!(
                    "a second observation for action id {cause}; it replaces the first one's output"
                ),
            ));
        } else {
            self.report.kept.outputs += 1;
        }
        let step = &mut run.steps[index];
        if step.kind == crate::model::StepKind::ModelCall {
            // An observation of an agent message (a reply in interactive runs): not a tool
            // output.
            return;
        }
        step.output = Some(content.as_bytes().to_vec());
        if let (Some(start), Some(end)) = (step.timestamp.as_deref(), timestamp) {
            step.duration_ms = millis_between(start, end);
        }
        let exit_code = obj
            .get("extras")
            .and_then(|e| e.get("metadata"))
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64);
        if observation == "error" || exit_code.is_some_and(|c| c != 0) {
            step.status = StepStatus::Error;
        }
    }
}

/// The arguments the model gave call `id`, from the response recorded with it.
fn model_arguments(response: Option<&Value>, id: &str) -> Option<Value> {
    let calls = response?
        .get("choices")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("message")?.get("tool_calls")?.as_array())
        .flatten();
    for call in calls {
        if call.get("id").and_then(Value::as_str) == Some(id) {
            let arguments = call.get("function")?.get("arguments")?;
            return match arguments {
                Value::String(text) => serde_json::from_str::<Value>(text)
                    .ok()
                    .filter(Value::is_object),
                Value::Object(_) => Some(arguments.clone()),
                _ => None,
            };
        }
    }
    None
}

/// A resolver's flat history: actions and observations with their fields at the top level
/// and no ids, each observation answering the action before it; or `[action, observation]`
/// pairs.
fn flat_history(history: &[Value]) -> ParsedRun {
    let mut run = ParsedRun::default();
    run.environment.runtime = Some("openhands".to_owned());
    let mut report = ImportReport::default();
    let mut unknown = UnknownKinds::default();
    let mut open: Option<usize> = None;
    let mut seen_message = false;
    let items: Vec<(String, &Value)> = history
        .iter()
        .enumerate()
        .flat_map(|(i, item)| match item {
            Value::Array(pair) => pair
                .iter()
                .enumerate()
                .map(|(j, v)| (format!("history[{i}][{j}]"), v))
                .collect::<Vec<_>>(),
            other => vec![(format!("history[{i}]"), other)],
        })
        .collect();
    for (n, (at, item)) in items.into_iter().enumerate() {
        let Some(obj) = item.as_object() else {
            unknown.note("(not a JSON object)".to_owned(), n);
            continue;
        };
        if let Some(action) = obj.get("action").and_then(Value::as_str) {
            if BOOKKEEPING.contains(&action) || action == "system" {
                continue;
            }
            if action == "message" {
                report.held.messages += 1;
                report.kept.messages += 1;
                let content = obj
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if seen_message {
                    run.steps.push(StepDraft::model_call(None, content));
                    open = Some(run.steps.len() - 1);
                } else {
                    run.prompts.push(("user".to_owned(), content.to_owned()));
                }
                seen_message = true;
                continue;
            }
            report.held.calls += 1;
            report.kept.calls += 1;
            let mut args = obj.clone();
            args.remove("action");
            let thought = match args.remove("thought") {
                Some(Value::String(t)) if !t.is_empty() => Some(t),
                _ => None,
            };
            let deterministic = is_deterministic(action, action, &Value::Object(args.clone()));
            let mut step = StepDraft::tool_call(action, Value::Object(args));
            step.reasoning = thought;
            step.deterministic = deterministic;
            open = Some(run.steps.len());
            run.steps.push(step);
        } else if let Some(observation) = obj.get("observation").and_then(Value::as_str) {
            if BOOKKEEPING.contains(&observation) {
                continue;
            }
            report.held.outputs += 1;
            let content = obj
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match open.take() {
                Some(index) if run.steps[index].kind == crate::model::StepKind::ToolCall => {
                    let step = &mut run.steps[index];
                    step.output = Some(content.as_bytes().to_vec());
                    let exit = obj.get("exit_code").and_then(Value::as_i64);
                    if observation == "error" || exit.is_some_and(|c| c != 0) {
                        step.status = StepStatus::Error;
                    }
                    report.kept.outputs += 1;
                }
                _ if observation == "error" => {
                    let mut step = StepDraft::model_call(None, content);
                    step.status = StepStatus::Error;
                    run.steps.push(step);
                    report.kept.outputs += 1;
                }
                _ => {
                    report.lose(LossKind::Outputs, 1, "observations that follow no action");
                    run.warnings.push(ImportWarning::at_item(
                        at,
                        format!("observation `{observation}` follows no action"),
                    ));
                }
            }
        } else {
            unknown.note("(neither action nor observation)".to_owned(), n);
        }
    }
    run.warnings.extend(
        unknown
            .warnings("history item(s)", false)
            .into_iter()
            .map(|mut w| {
                w.item = w.item.map(|i| format!("history{i}"));
                w
            }),
    );
    run.report = report;
    run
}

/// Whether an OpenHands action's output depends only on its arguments and the workspace: file
/// reads (`read`, or `str_replace_editor` with `command: view`). `browse` fetches a URL, so it
/// is not.
fn is_deterministic(action: &str, function_name: &str, args: &Value) -> bool {
    let command = args.get("command").and_then(Value::as_str);
    action == "read" || (function_name == "str_replace_editor" && command == Some("view"))
}
