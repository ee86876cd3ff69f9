//! mini-swe-agent `.traj.json` files: `{info, messages, trajectory_format}` (format
//! `mini-swe-agent-1` from the 1.x releases, `mini-swe-agent-1.1` from 2.0), or a bare list of
//! messages (the earliest releases and test data).
//!
//! The first system message is the system prompt and the first user message the task. Each
//! assistant message runs the shell command in its one ```` ```bash ```` (or
//! ```` ```mswea_bash_command ````) block, or the commands listed in `extra.actions`, or its
//! `tool_calls`: each is a tool step (`bash`, `{"command": …}`, the message's text as its
//! reasoning), whose output is the observation message that follows (`role: tool` with its
//! `tool_call_id`, or the next user message). An assistant message that runs nothing (a format
//! error) is a model step, and the feedback it gets a prompt. A step records the model and
//! token usage of the response that made it (`extra.response`) and its time
//! (`extra.timestamp`, else the response's `created`), lasting until its observation's
//! `extra.timestamp`. `info.submission` is the run's output.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{ParsedRun, rfc3339_of_unix_seconds, text_of, usage_of};
use crate::RunError;
use crate::model::{ModelInfo, StepStatus};
use crate::store::StepDraft;

/// A mini-swe-agent trajectory object.
pub(super) fn looks_like_trajectory(map: &Map<String, Value>) -> bool {
    map.get("trajectory_format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with("mini-swe-agent"))
        || (map.get("messages").is_some_and(Value::is_array)
            && map
                .get("info")
                .is_some_and(|i| i.get("mini_version").is_some()))
}

/// A bare message list in which an assistant ran a command in a fenced block.
pub(super) fn looks_like_messages(items: &[Value]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|m| m.get("role").and_then(Value::as_str).is_some())
        && items.iter().any(|m| {
            m.get("role").and_then(Value::as_str) == Some("assistant")
                && m.get("content")
                    .and_then(text_of)
                    .is_some_and(|t| !commands_in(&t).is_empty())
        })
}

/// The commands of the fenced blocks mini-swe-agent runs (```` ```bash ```` and
/// ```` ```mswea_bash_command ````).
fn commands_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for fence in ["```bash", "```mswea_bash_command"] {
        let mut rest = text;
        while let Some(start) = rest.find(fence) {
            let after = &rest[start + fence.len()..];
            // The fence line ends (only whitespace may follow the language tag).
            let Some(newline) = after.find('\n') else {
                break;
            };
            if !after[..newline].trim().is_empty() {
                rest = after;
                continue;
            }
            let body = &after[newline + 1..];
            let Some(end) = body.find("\n```") else {
                break;
            };
            out.push(body[..end].to_owned());
            rest = &body[end + 4..];
        }
    }
    out
}

pub(super) fn parse(path: &Path, text: &str) -> Result<ParsedRun, RunError> {
    let bad = |detail: String| RunError::BadFile {
        path: path.to_owned(),
        format: "mini-swe-agent",
        detail,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "not valid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let (messages, root) = match &value {
        Value::Array(items) => (items.as_slice(), None),
        Value::Object(map) => match map.get("messages").and_then(Value::as_array) {
            Some(items) => (items.as_slice(), Some(map)),
            None => return Err(bad("expected an object with a `messages` array".to_owned())),
        },
        _ => return Err(bad("expected a list of messages".to_owned())),
    };
    let mut run = ParsedRun::default();
    run.environment.runtime = Some("mini-swe-agent".to_owned());
    let info = root.and_then(|r| r.get("info"));
    if let Some(version) = info
        .and_then(|i| i.get("mini_version"))
        .and_then(Value::as_str)
    {
        run.environment
            .tool_versions
            .insert("mini-swe-agent".to_owned(), version.to_owned());
    }
    run.conversation_id = root
        .and_then(|r| r.get("instance_id"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let model_config = info
        .and_then(|i| i.get("config"))
        .and_then(|c| c.get("model"));
    let configured_model = model_config
        .and_then(|m| m.get("model_name"))
        .and_then(Value::as_str);
    let mut turns = Turns {
        run,
        configured_model,
        models: Vec::new(),
        open: Vec::new(),
        after_chat: false,
        seen_task: false,
    };
    for message in messages {
        turns.message(message);
    }
    let Turns {
        mut run, models, ..
    } = turns;
    run.model = model_info(&models, model_config);
    run.created = run.steps.iter().find_map(|s| s.timestamp.clone());
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

/// The run being read from the messages, and what reading it keeps track of.
struct Turns<'a> {
    run: ParsedRun,
    /// The model the trajectory's config names, for turns whose response does not.
    configured_model: Option<&'a str>,
    /// Model names the turns report, in order.
    models: Vec<String>,
    /// Steps waiting for their observation, in order: (step, tool call id).
    open: Vec<(usize, Option<String>)>,
    /// The last message was a model turn that ran nothing: its feedback is a prompt.
    after_chat: bool,
    seen_task: bool,
}

impl Turns<'_> {
    fn message(&mut self, message: &Value) {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let content = message.get("content").and_then(text_of).unwrap_or_default();
        match role {
            "system" if self.run.system_prompt.is_none() => {
                self.run.system_prompt = Some(content);
            }
            "assistant" => self.assistant(message, &content),
            "user" | "tool" => self.answer(message, role, content),
            _ => {}
        }
    }

    /// A model turn: one step per command it runs, or one model-call step if it runs none.
    fn assistant(&mut self, message: &Value, content: &str) {
        let run = &mut self.run;
        let extra = message.get("extra");
        self.after_chat = false;
        let response = extra.and_then(|e| e.get("response"));
        let model = response
            .and_then(|r| r.get("model"))
            .and_then(Value::as_str)
            .or(self.configured_model)
            .map(str::to_owned);
        if let Some(m) = &model {
            self.models.push(m.clone());
        }
        let timestamp = extra
            .and_then(|e| e.get("timestamp"))
            .and_then(Value::as_f64)
            .or_else(|| {
                response
                    .and_then(|r| r.get("created"))
                    .and_then(Value::as_f64)
            })
            .and_then(rfc3339_of_unix_seconds);
        let mut usage = response.and_then(|r| r.get("usage")).and_then(usage_of);
        let calls = calls_of(message, content);
        if calls.is_empty() {
            run.report.held.messages += 1;
            run.report.kept.messages += 1;
            let mut step = StepDraft::model_call(model.as_deref(), content);
            step.timestamp = timestamp;
            step.usage = usage;
            run.steps.push(step);
            self.after_chat = true;
            return;
        }
        for (tool, id, arguments) in calls {
            run.report.held.calls += 1;
            run.report.kept.calls += 1;
            let mut step = StepDraft::tool_call(&tool, arguments);
            step.call_id.clone_from(&id);
            step.model.clone_from(&model);
            step.reasoning = Some(content.to_owned()).filter(|c| !c.is_empty());
            step.timestamp.clone_from(&timestamp);
            step.usage = usage.take();
            self.open.push((run.steps.len(), id));
            run.steps.push(step);
        }
    }

    /// A user or tool message: the task (the first user message), a command's output, or
    /// the environment's feedback.
    fn answer(&mut self, message: &Value, role: &str, content: String) {
        let run = &mut self.run;
        let extra = message.get("extra");
        if role == "user" && !self.seen_task {
            self.seen_task = true;
            run.report.held.messages += 1;
            run.report.kept.messages += 1;
            run.prompts.push(("user".to_owned(), content));
            return;
        }
        let call_id = message.get("tool_call_id").and_then(Value::as_str);
        let slot = match call_id {
            Some(id) => self.open.iter().position(|(_, c)| c.as_deref() == Some(id)),
            None if self.open.is_empty() => None,
            None => Some(0),
        };
        if let Some(slot) = slot {
            let (index, _) = self.open.remove(slot);
            run.report.held.outputs += 1;
            run.report.kept.outputs += 1;
            let step = &mut run.steps[index];
            step.output = Some(content.into_bytes());
            let returncode = extra
                .and_then(|e| e.get("returncode"))
                .and_then(Value::as_i64);
            if returncode.is_some_and(|c| c != 0) {
                step.status = StepStatus::Error;
            }
            if let (Some(start), Some(end)) = (
                step.timestamp.as_deref(),
                extra
                    .and_then(|e| e.get("timestamp"))
                    .and_then(Value::as_f64)
                    .and_then(rfc3339_of_unix_seconds),
            ) {
                step.duration_ms = super::millis_between(start, &end);
            }
        } else if !content.is_empty() {
            // Feedback on a turn that ran nothing, or the submitted result: the environment
            // speaking to the model.
            run.report.held.messages += 1;
            run.report.kept.messages += 1;
            let role = if self.after_chat {
                "user"
            } else {
                "environment"
            };
            run.prompts.push((role.to_owned(), content));
        }
    }
}

/// The run's main model, with the sampling parameters the trajectory's config gives.
fn model_info(models: &[String], model_config: Option<&Value>) -> Option<ModelInfo> {
    let model = super::main_model(models.iter().map(String::as_str))?;
    let mut parameters = BTreeMap::new();
    if let Some(kwargs) = model_config
        .and_then(|m| m.get("model_kwargs"))
        .and_then(Value::as_object)
    {
        for key in ["temperature", "top_p", "max_tokens"] {
            if let Some(v) = kwargs.get(key).filter(|v| !v.is_null()) {
                parameters.insert(key.to_owned(), v.clone());
            }
        }
    }
    Some(ModelInfo {
        identifier: model,
        provider: None,
        parameters,
    })
}

/// The commands an assistant message runs: its `tool_calls`, else `extra.actions`, else the
/// one fenced command of its text (a message with several runs nothing: a format error).
fn calls_of(message: &Value, content: &str) -> Vec<(String, Option<String>, Value)> {
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        return calls
            .iter()
            .filter_map(|call| {
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
            })
            .collect();
    }
    if let Some(actions) = message
        .get("extra")
        .and_then(|e| e.get("actions"))
        .and_then(Value::as_array)
    {
        return actions
            .iter()
            .filter_map(|a| a.get("command").and_then(Value::as_str))
            .map(|c| ("bash".to_owned(), None, serde_json::json!({ "command": c })))
            .collect();
    }
    match commands_in(content).as_slice() {
        [one] => vec![(
            "bash".to_owned(),
            None,
            serde_json::json!({ "command": one }),
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_commands_are_found_and_other_fences_ignored() {
        let text = "THOUGHT: look\n\n```bash\nls -la\n```\n\n```python\nprint(1)\n```";
        assert_eq!(commands_in(text), ["ls -la"]);
        let old = "Run it.\n\n```mswea_bash_command\necho 'hi'\n```";
        assert_eq!(commands_in(old), ["echo 'hi'"]);
        assert!(commands_in("```bashful\nx\n```").is_empty());
        assert_eq!(commands_in("```bash\na\n```\n```bash\nb\n```").len(), 2);
    }
}
