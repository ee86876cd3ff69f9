//! OpenHands event arrays: a JSON array of events, each an action or an observation.
//!
//! Actions carry `action`, `args` (with the agent's `thought`), `source` and, for tool calls,
//! `tool_call_metadata` (`function_name`, `tool_call_id`, `model_response.model`).
//! Observations carry `observation`, `content` and `cause` (the id of the action they answer).
//! A user `message` is a prompt, an agent `message` a model step, any other agent action a
//! tool step whose output is its observation; a `system` action (SystemMessageAction) gives the
//! system prompt; environment bookkeeping (`agent_state_changed`, `recall`, …) is skipped.
//! Timestamps carry no offset; they are read as UTC.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{ImportWarning, ParsedRun};
use crate::RunError;
use crate::model::{ModelInfo, StepStatus};
use crate::store::StepDraft;

/// Events that describe the agent's state, not the run's work.
const BOOKKEEPING: &[&str] = &[
    "agent_state_changed",
    "change_agent_state",
    "system",
    "recall",
    "null",
    "condensation",
];

pub(super) fn parse(path: &Path, text: &str) -> Result<ParsedRun, RunError> {
    let value: Value = serde_json::from_str(text).map_err(|e| RunError::BadFile {
        path: path.to_owned(),
        format: "openhands",
        detail: format!(
            "not valid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ),
    })?;
    let events = match value {
        Value::Array(events) => events,
        Value::Object(mut map) => match map.remove("events") {
            Some(Value::Array(events)) => events,
            _ => {
                return Err(RunError::BadFile {
                    path: path.to_owned(),
                    format: "openhands",
                    detail: "expected an array of events".to_owned(),
                });
            }
        },
        _ => {
            return Err(RunError::BadFile {
                path: path.to_owned(),
                format: "openhands",
                detail: "expected an array of events".to_owned(),
            });
        }
    };
    let mut run = ParsedRun::default();
    run.environment.runtime = Some("openhands".to_owned());
    // action id -> its step index.
    let mut by_id: BTreeMap<i64, usize> = BTreeMap::new();
    let mut records = 0usize;
    for (i, event) in events.iter().enumerate() {
        let at = format!("events[{i}]");
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
            records += 1;
            action_event(&mut run, obj, action, &mut by_id, at);
        } else if let Some(observation) = obj.get("observation").and_then(Value::as_str) {
            records += 1;
            observation_event(&mut run, obj, observation, &by_id, at);
        } else {
            run.warnings.push(ImportWarning::at_item(
                at,
                "neither an action nor an observation",
            ));
        }
    }
    if records == 0 || (run.steps.is_empty() && run.prompts.is_empty()) {
        return Err(RunError::NoRecords {
            path: path.to_owned(),
            format: "openhands",
            warnings: run.warnings,
        });
    }
    Ok(run)
}

fn action_event(
    run: &mut ParsedRun,
    obj: &Map<String, Value>,
    action: &str,
    by_id: &mut BTreeMap<i64, usize>,
    at: String,
) {
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
                at,
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
    let model = meta
        .and_then(|m| m.get("model_response"))
        .and_then(|r| r.get("model"))
        .and_then(Value::as_str);
    if let (None, Some(model)) = (&run.model, model) {
        run.model = Some(ModelInfo {
            identifier: model.to_owned(),
            provider: None,
            parameters: BTreeMap::new(),
        });
    }
    if action == "message" {
        let content = args
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if source == "user" {
            run.prompts.push(("user".to_owned(), content));
        } else {
            let mut step = StepDraft::model_call(model, &content);
            step.timestamp = timestamp;
            run.steps.push(step);
        }
        return;
    }
    if source == "user" {
        run.warnings.push(ImportWarning::at_item(
            at,
            format!("user action `{action}` is not a tool call; skipped"),
        ));
        return;
    }
    let thought = match args.remove("thought") {
        Some(Value::String(t)) if !t.is_empty() => Some(t),
        _ => None,
    };
    let tool = meta
        .and_then(|m| m.get("function_name"))
        .and_then(Value::as_str)
        .unwrap_or(action);
    let mut step = StepDraft::tool_call(tool, Value::Object(args));
    step.call_id = meta
        .and_then(|m| m.get("tool_call_id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    step.deterministic = is_deterministic(action, tool, &step.parameters);
    step.reasoning = thought;
    step.timestamp = timestamp;
    if let Some(id) = obj.get("id").and_then(Value::as_i64) {
        by_id.insert(id, run.steps.len());
    }
    run.steps.push(step);
}

fn observation_event(
    run: &mut ParsedRun,
    obj: &Map<String, Value>,
    observation: &str,
    by_id: &BTreeMap<i64, usize>,
    at: String,
) {
    if BOOKKEEPING.contains(&observation) {
        return;
    }
    let Some(cause) = obj.get("cause").and_then(Value::as_i64) else {
        run.warnings.push(ImportWarning::at_item(
            at,
            format!("observation `{observation}` answers no action (no `cause`); skipped"),
        ));
        return;
    };
    let Some(&index) = by_id.get(&cause) else {
        run.warnings.push(ImportWarning::at_item(
            at,
            format!("observation `{observation}` answers unknown action id {cause}; skipped"),
        ));
        return;
    };
    let content = obj
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if run.steps[index].output.is_some() {
        run.warnings.push(ImportWarning::at_item(
            at,
            format!(
                "a second observation for action id {cause}; it replaces the first one's output"
            ),
        ));
    }
    let step = &mut run.steps[index];
    step.output = Some(content.as_bytes().to_vec());
    let exit_code = obj
        .get("extras")
        .and_then(|e| e.get("metadata"))
        .and_then(|m| m.get("exit_code"))
        .and_then(Value::as_i64);
    if observation == "error" || exit_code.is_some_and(|c| c != 0) {
        step.status = StepStatus::Error;
    }
}

/// Whether an OpenHands action's output depends only on its arguments and the workspace: file
/// reads (`read`, or `str_replace_editor` with `command: view`). `browse` fetches a URL, so it
/// is not.
fn is_deterministic(action: &str, function_name: &str, args: &Value) -> bool {
    let command = args.get("command").and_then(Value::as_str);
    action == "read" || (function_name == "str_replace_editor" && command == Some("view"))
}
