//! Claude Code session transcripts: one JSON object per line.
//!
//! Lines carry `type` (`user`, `assistant`, `summary`, `system`), `uuid`, `parentUuid`,
//! `sessionId`, `timestamp` and a `message` whose `content` is a string or a list of blocks:
//! `text`, `thinking`, `tool_use` (`id`, `name`, `input`) and `tool_result` (`tool_use_id`,
//! `content`, `is_error`). A user line with text is a prompt; assistant text is a model step;
//! each `tool_use` is a tool step whose output is the matching `tool_result`; thinking becomes
//! the reasoning of the next step.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{ImportWarning, ParsedRun, is_deterministic_tool, json_problem, text_of};
use crate::RunError;
use crate::model::{ModelInfo, StepStatus};
use crate::store::StepDraft;

pub(super) fn parse(path: &Path, text: &str) -> Result<ParsedRun, RunError> {
    let mut run = ParsedRun::default();
    run.environment.runtime = Some("claude-code".to_owned());
    let mut records = 0usize;
    // tool_use id -> index of its step, for matching results.
    let mut pending: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut reasoning: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(err) => {
                run.warnings
                    .push(ImportWarning::at_line(line_no, json_problem(&err)));
                continue;
            }
        };
        let Some(obj) = value.as_object() else {
            run.warnings
                .push(ImportWarning::at_line(line_no, "not a JSON object"));
            continue;
        };
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "summary" | "system" => {
                records += 1;
                continue;
            }
            "user" | "assistant" => {}
            "" => {
                run.warnings
                    .push(ImportWarning::at_line(line_no, "no `type` field"));
                continue;
            }
            other => {
                run.warnings.push(ImportWarning::at_line(
                    line_no,
                    format!("unknown record type `{other}`"),
                ));
                continue;
            }
        }
        let Some(message) = obj.get("message").and_then(Value::as_object) else {
            run.warnings
                .push(ImportWarning::at_line(line_no, "no `message` object"));
            continue;
        };
        records += 1;
        note_session(&mut run, obj);
        let timestamp = obj
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        if kind == "user" {
            user_line(&mut run, &content, line_no, &mut pending);
            continue;
        }
        let model = message.get("model").and_then(Value::as_str);
        if let (None, Some(model)) = (&run.model, model) {
            run.model = Some(ModelInfo {
                identifier: model.to_owned(),
                provider: Some("anthropic".to_owned()),
                parameters: BTreeMap::new(),
            });
        }
        let blocks = match content {
            Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
            Value::Array(blocks) => blocks,
            _ => {
                run.warnings.push(ImportWarning::at_line(
                    line_no,
                    "assistant message without content",
                ));
                continue;
            }
        };
        for block in &blocks {
            let block_type = block.get("type").and_then(Value::as_str).unwrap_or("");
            match block_type {
                "thinking" | "redacted_thinking" => {
                    if let Some(t) = block.get("thinking").and_then(Value::as_str) {
                        reasoning = Some(match reasoning.take() {
                            Some(prev) => format!("{prev}\n{t}"),
                            None => t.to_owned(),
                        });
                    }
                }
                "text" => {
                    let Some(t) = block.get("text").and_then(Value::as_str) else {
                        run.warnings
                            .push(ImportWarning::at_line(line_no, "text block without text"));
                        continue;
                    };
                    let mut step = StepDraft::model_call(model, t);
                    step.reasoning = reasoning.take();
                    step.timestamp.clone_from(&timestamp);
                    run.steps.push(step);
                }
                "tool_use" => {
                    let (Some(id), Some(name)) = (
                        block.get("id").and_then(Value::as_str),
                        block.get("name").and_then(Value::as_str),
                    ) else {
                        run.warnings.push(ImportWarning::at_line(
                            line_no,
                            "tool_use block without `id` or `name`",
                        ));
                        continue;
                    };
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    let mut step = StepDraft::tool_call(name, input);
                    step.call_id = Some(id.to_owned());
                    step.deterministic = is_deterministic_tool(name);
                    step.reasoning = reasoning.take();
                    step.timestamp.clone_from(&timestamp);
                    pending.insert(id.to_owned(), (run.steps.len(), line_no));
                    run.steps.push(step);
                }
                other => run.warnings.push(ImportWarning::at_line(
                    line_no,
                    format!("unknown content block `{other}` skipped"),
                )),
            }
        }
    }
    for (id, (_, line_no)) in pending {
        run.warnings.push(ImportWarning::at_line(
            line_no,
            format!("tool_use `{id}` has no tool_result; its step has no output"),
        ));
    }
    run.warnings.sort_by_key(|w| w.line);
    if records == 0 || (run.steps.is_empty() && run.prompts.is_empty()) {
        return Err(RunError::NoRecords {
            path: path.to_owned(),
            format: "claude-code",
            warnings: run.warnings,
        });
    }
    Ok(run)
}

fn note_session(run: &mut ParsedRun, obj: &Map<String, Value>) {
    if run.conversation_id.is_none() {
        run.conversation_id = obj
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    if run.created.is_none() {
        run.created = obj
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    if let Some(version) = obj.get("version").and_then(Value::as_str) {
        run.environment
            .tool_versions
            .entry("claude-code".to_owned())
            .or_insert_with(|| version.to_owned());
    }
}

fn user_line(
    run: &mut ParsedRun,
    content: &Value,
    line_no: usize,
    pending: &mut BTreeMap<String, (usize, usize)>,
) {
    if let Value::String(text) = content {
        run.prompts.push(("user".to_owned(), text.clone()));
        return;
    }
    let Value::Array(blocks) = content else {
        run.warnings.push(ImportWarning::at_line(
            line_no,
            "user message without content",
        ));
        return;
    };
    for block in blocks {
        match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    run.prompts.push(("user".to_owned(), t.to_owned()));
                }
            }
            "tool_result" => {
                let id = block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some((index, _)) = pending.remove(id) else {
                    run.warnings.push(ImportWarning::at_line(
                        line_no,
                        format!("tool_result for unknown tool_use `{id}` skipped"),
                    ));
                    continue;
                };
                let output = block.get("content").and_then(text_of).unwrap_or_default();
                let step = &mut run.steps[index];
                step.output = Some(output.into_bytes());
                if block.get("is_error").and_then(Value::as_bool) == Some(true) {
                    step.status = StepStatus::Error;
                }
            }
            other => run.warnings.push(ImportWarning::at_line(
                line_no,
                format!("unknown content block `{other}` skipped"),
            )),
        }
    }
}
