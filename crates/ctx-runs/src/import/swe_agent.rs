//! SWE-agent `.traj` files: one JSON object with `trajectory`, `history` and `info`, from the
//! 0.x releases of 2024 to 1.x.
//!
//! Each `trajectory` entry (`action`, `observation`, `thought`, `execution_time`) is a tool
//! step. With function calling, the `history` message that made it carries the model's tool
//! call: the step takes its tool name, call id and arguments from it. Otherwise (classic
//! SWE-agent) the step is named after the action's first word (`open`, `edit`, `python`,
//! `submit`, …) with the whole command as its argument. A file with a `history` and no
//! `trajectory` (demonstrations) gives its steps from the history: each assistant message with
//! an action, answered by the next `tool` (or user) message. The `history` also gives the
//! system prompt and the task (the user turns before the first assistant turn);
//! `info.submission` is the run's output and `info.swe_agent_version` its tool version. The
//! files record no timestamps, only each step's `execution_time`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{ImportWarning, LossKind, ParsedRun, is_deterministic_tool, text_of};
use crate::RunError;
use crate::model::ModelInfo;
use crate::store::StepDraft;

/// A `.traj` without a `trajectory`: a `history` of role-tagged messages, one of them an
/// assistant action.
pub(super) fn looks_like_history_only(map: &Map<String, Value>) -> bool {
    !map.contains_key("trajectory")
        && !map.contains_key("trajectory_format")
        && map
            .get("history")
            .and_then(Value::as_array)
            .is_some_and(|h| {
                h.iter().any(|m| {
                    m.get("role").and_then(Value::as_str) == Some("assistant")
                        && (m.get("action").is_some() || m.get("tool_calls").is_some())
                })
            })
}

pub(super) fn parse(path: &Path, text: &str) -> Result<ParsedRun, RunError> {
    let bad = |detail: String| RunError::BadFile {
        path: path.to_owned(),
        format: "swe-agent",
        detail,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "not valid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let Some(root) = value.as_object() else {
        return Err(bad(
            "expected an object with a `trajectory` array".to_owned()
        ));
    };
    let trajectory = root.get("trajectory").and_then(Value::as_array);
    if trajectory.is_none() && !looks_like_history_only(root) {
        return Err(bad(
            "expected an object with a `trajectory` array (or a `history` of actions)".to_owned(),
        ));
    }
    let mut run = ParsedRun::default();
    run.environment.runtime = Some("swe-agent".to_owned());
    let task = history(&mut run, root.get("history"));
    run.report.held.messages = task;
    run.report.kept.messages = task;
    let info = root.get("info").and_then(Value::as_object);
    if let Some(version) = info
        .and_then(|i| i.get("swe_agent_version"))
        .and_then(Value::as_str)
    {
        run.environment
            .tool_versions
            .insert("swe-agent".to_owned(), version.to_owned());
    }
    run.model = model_of(root);
    let actions = assistant_actions(root.get("history"));
    match trajectory {
        Some(trajectory) => trajectory_steps(&mut run, trajectory, &actions),
        None => history_steps(&mut run, root.get("history"), &actions),
    }
    if let Some(patch) = info
        .and_then(|i| i.get("submission"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        run.outputs
            .push(("submission.patch".to_owned(), patch.as_bytes().to_vec()));
    }
    Ok(run)
}

/// The history's assistant messages that took an action (demonstrations left out), with their
/// index in the history.
fn assistant_actions(history: Option<&Value>) -> Vec<(usize, &Map<String, Value>)> {
    history
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.as_object().map(|o| (i, o)))
                .filter(|(_, o)| !is_demo(o))
                .filter(|(_, o)| o.get("role").and_then(Value::as_str) == Some("assistant"))
                .filter(|(_, o)| o.get("action").is_some() || o.get("tool_calls").is_some())
                .collect()
        })
        .unwrap_or_default()
}

fn is_demo(entry: &Map<String, Value>) -> bool {
    entry.get("is_demo").and_then(Value::as_bool) == Some(true)
        || entry.get("message_type").and_then(Value::as_str) == Some("demonstration")
}

/// The first tool call of a history message: (name, id, arguments).
fn tool_call(message: &Map<String, Value>) -> Option<(String, Option<String>, Value)> {
    let call = message.get("tool_calls")?.as_array()?.first()?;
    let function = call.get("function")?;
    let name = function.get("name")?.as_str()?.to_owned();
    let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
    let arguments = match function.get("arguments") {
        Some(Value::String(text)) => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({ "arguments": text })),
        Some(v @ Value::Object(_)) => v.clone(),
        _ => Value::Object(Map::new()),
    };
    Some((name, id, arguments))
}

/// A classic step: the action's first word as the tool, the whole command as the argument.
fn classic_step(command: &str) -> Option<StepDraft> {
    let tool = command.split_whitespace().next()?;
    let mut step = StepDraft::tool_call(tool, serde_json::json!({ "command": command }));
    step.deterministic = is_deterministic_tool(tool);
    Some(step)
}

fn trajectory_steps(
    run: &mut ParsedRun,
    trajectory: &[Value],
    actions: &[(usize, &Map<String, Value>)],
) {
    let mut next_action = 0;
    for (i, entry) in trajectory.iter().enumerate() {
        let at = format!("trajectory[{i}]");
        let Some(obj) = entry.as_object() else {
            run.warnings
                .push(ImportWarning::at_item(at, "not a JSON object"));
            continue;
        };
        let Some(action) = obj.get("action").and_then(Value::as_str) else {
            run.warnings
                .push(ImportWarning::at_item(at, "no `action` string; skipped"));
            continue;
        };
        run.report.held.calls += 1;
        if obj.get("observation").is_some_and(Value::is_string) {
            run.report.held.outputs += 1;
        }
        let command = action.trim();
        // The history message that made this call: the next one with the same action.
        let made_by = actions[next_action.min(actions.len())..]
            .iter()
            .position(|(_, m)| {
                m.get("action").and_then(Value::as_str).map(str::trim) == Some(command)
            })
            .map(|p| next_action + p);
        let fc = made_by.and_then(|k| {
            next_action = k + 1;
            tool_call(actions[k].1)
        });
        let step = match fc {
            Some((name, id, arguments)) => {
                let mut step = StepDraft::tool_call(&name, arguments);
                step.call_id = id;
                step.deterministic = is_deterministic_tool(&name);
                Some(step)
            }
            None => classic_step(command),
        };
        let Some(mut step) = step else {
            run.report
                .lose(LossKind::Calls, 1, "their `action` is empty");
            if obj.get("observation").is_some_and(Value::is_string) {
                run.report
                    .lose(LossKind::Outputs, 1, "they answer an empty `action`");
            }
            run.warnings
                .push(ImportWarning::at_item(at, "empty `action`; skipped"));
            continue;
        };
        run.report.kept.calls += 1;
        step.output = obj
            .get("observation")
            .and_then(Value::as_str)
            .map(|o| o.as_bytes().to_vec());
        if step.output.is_some() {
            run.report.kept.outputs += 1;
        }
        step.reasoning = obj
            .get("thought")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        step.duration_ms = duration(&mut run.warnings, obj.get("execution_time"), &at);
        run.steps.push(step);
    }
}

/// Steps from a history without a trajectory.
fn history_steps(
    run: &mut ParsedRun,
    history: Option<&Value>,
    actions: &[(usize, &Map<String, Value>)],
) {
    let entries: &[Value] = history.and_then(Value::as_array).map_or(&[], Vec::as_slice);
    for (k, (index, message)) in actions.iter().enumerate() {
        run.report.held.calls += 1;
        let step = match tool_call(message) {
            Some((name, id, arguments)) => {
                let mut step = StepDraft::tool_call(&name, arguments);
                step.call_id = id;
                step.deterministic = is_deterministic_tool(&name);
                Some(step)
            }
            None => message
                .get("action")
                .and_then(Value::as_str)
                .and_then(|a| classic_step(a.trim())),
        };
        let Some(mut step) = step else {
            run.report
                .lose(LossKind::Calls, 1, "their `action` is empty");
            continue;
        };
        run.report.kept.calls += 1;
        step.reasoning = message
            .get("thought")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        // The answer: the next tool (or user) message before the next action.
        let end = actions.get(k + 1).map_or(entries.len(), |(i, _)| *i);
        let answer = entries[index + 1..end]
            .iter()
            .find(|e| matches!(e.get("role").and_then(Value::as_str), Some("tool" | "user")));
        if let Some(content) = answer.and_then(|a| a.get("content")).and_then(text_of) {
            run.report.held.outputs += 1;
            run.report.kept.outputs += 1;
            step.output = Some(content.into_bytes());
        }
        run.steps.push(step);
    }
}

fn duration(warnings: &mut Vec<ImportWarning>, value: Option<&Value>, at: &str) -> Option<u64> {
    value
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .and_then(|seconds| {
            let ms = seconds_to_ms(seconds);
            if ms > crate::store::MAX_JSON_INT {
                warnings.push(ImportWarning::at_item(
                    format!("{at}.execution_time"),
                    format!("{seconds} seconds is out of range; the duration is left out"),
                ));
                None
            } else {
                Some(ms)
            }
        })
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a finite, non-negative duration in seconds, rounded to whole milliseconds"
)]
fn seconds_to_ms(seconds: f64) -> u64 {
    (seconds * 1000.0).round() as u64
}

/// Takes the system prompt and the task prompts; returns how many task prompts there are.
fn history(run: &mut ParsedRun, history: Option<&Value>) -> u64 {
    let Some(entries) = history.and_then(Value::as_array) else {
        return 0;
    };
    let mut prompts = 0;
    for entry in entries {
        // Demonstrations (example trajectories shown to the model) are not the task.
        if entry.as_object().is_some_and(is_demo) {
            continue;
        }
        let role = entry.get("role").and_then(Value::as_str).unwrap_or("");
        let Some(content) = entry.get("content").and_then(text_of) else {
            continue;
        };
        match role {
            "system" if run.system_prompt.is_none() => run.system_prompt = Some(content),
            "user" => {
                run.prompts.push(("user".to_owned(), content));
                prompts += 1;
            }
            // Later turns are observations, already in the steps.
            "assistant" => break,
            _ => {}
        }
    }
    prompts
}

fn model_of(root: &Map<String, Value>) -> Option<ModelInfo> {
    // `replay_config` is a JSON string (or object) holding `agent.model`.
    let config = match root.get("replay_config") {
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok(),
        Some(v @ Value::Object(_)) => Some(v.clone()),
        _ => None,
    }?;
    let model = config.get("agent")?.get("model")?;
    let name = model
        .get("name")
        .or_else(|| model.get("model_name"))?
        .as_str()?;
    let mut parameters = BTreeMap::new();
    for key in ["temperature", "top_p", "per_instance_cost_limit"] {
        if let Some(v) = model.get(key).filter(|v| !v.is_null()) {
            parameters.insert(key.to_owned(), v.clone());
        }
    }
    Some(ModelInfo {
        identifier: name.to_owned(),
        provider: None,
        parameters,
    })
}
