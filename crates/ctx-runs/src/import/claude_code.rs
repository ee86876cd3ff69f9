//! Claude Code session transcripts: one JSON object per line.
//!
//! Lines carry `type` (`user`, `assistant`, `summary`, `system`), `uuid`, `parentUuid`,
//! `sessionId`, `timestamp` and a `message` whose `content` is a string or a list of blocks:
//! `text`, `thinking`, `tool_use` (`id`, `name`, `input`) and `tool_result` (`tool_use_id`,
//! `content`, `is_error`). A user line with text is a prompt; assistant text is a model step;
//! each `tool_use` is a tool step whose output is the matching `tool_result` (`is_error` makes
//! it an error step); thinking becomes the reasoning of the next step.
//!
//! Only the main conversation is imported: lines repeating a `uuid`, sidechain (sub-agent)
//! lines and lines on abandoned branches (not on the `parentUuid` chain of the last user or
//! assistant line) are skipped, each kind reported once as a warning with its count.
//! `file-history-snapshot` and `queue-operation` lines are known and ignored, like `summary`.

use std::collections::{BTreeMap, BTreeSet};
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
    // Every tool_use id seen, with its line, to report repeats.
    let mut seen_calls: BTreeMap<String, usize> = BTreeMap::new();
    // Thinking not yet attached to a step, with the line it came from.
    let mut reasoning: Option<(String, usize)> = None;
    let lines = parse_lines(text, &mut run.warnings);
    let skip = lines_off_the_main_chain(&lines, &mut run.warnings);
    for (line_no, obj) in &lines {
        let line_no = *line_no;
        if skip.contains(&line_no) {
            records += 1;
            continue;
        }
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "summary" | "system" | "file-history-snapshot" | "queue-operation" => {
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
                            Some((prev, _)) => (format!("{prev}\n{t}"), line_no),
                            None => (t.to_owned(), line_no),
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
                    step.reasoning = reasoning.take().map(|(text, _)| text);
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
                    step.reasoning = reasoning.take().map(|(text, _)| text);
                    step.timestamp.clone_from(&timestamp);
                    if let Some(first) = seen_calls.insert(id.to_owned(), line_no) {
                        let lost = if pending.contains_key(id) {
                            "; the earlier step, still without a result, gets no output"
                        } else {
                            ""
                        };
                        run.warnings.push(ImportWarning::at_line(
                            line_no,
                            format!(
                                "tool_use id `{id}` repeats the one at line {first}; results go to this step{lost}"
                            ),
                        ));
                    }
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
    if let Some((_, line_no)) = reasoning {
        run.warnings.push(ImportWarning::at_line(
            line_no,
            "thinking at the end of the transcript has no step after it; dropped",
        ));
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

/// The lines that parse as JSON objects, with their 1-based numbers; the others become warnings.
fn parse_lines(text: &str, warnings: &mut Vec<ImportWarning>) -> Vec<(usize, Map<String, Value>)> {
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => lines.push((line_no, obj)),
            Ok(_) => warnings.push(ImportWarning::at_line(line_no, "not a JSON object")),
            Err(err) => warnings.push(ImportWarning::at_line(line_no, json_problem(&err))),
        }
    }
    lines
}

/// Lines not to import, each kind reported once with its count: repeats of a `uuid` already
/// seen, sidechain (sub-agent) lines, and lines on branches the session abandoned. The main
/// chain is found by following `parentUuid` (or `logicalParentUuid` across a compaction) back
/// from the last main-chain line. When the chain reaches a parent that is not in the file (a
/// resumed session) or a line with no `parentUuid` at all, lines before the chain's first line
/// are kept.
fn lines_off_the_main_chain(
    lines: &[(usize, Map<String, Value>)],
    warnings: &mut Vec<ImportWarning>,
) -> BTreeSet<usize> {
    let uuid_of =
        |obj: &Map<String, Value>| obj.get("uuid").and_then(Value::as_str).map(str::to_owned);
    let mut skip = BTreeSet::new();
    let mut first_line: BTreeMap<String, usize> = BTreeMap::new();
    let mut duplicates = Vec::new();
    let mut sidechain = Vec::new();
    for (line_no, obj) in lines {
        if let Some(uuid) = uuid_of(obj) {
            if first_line.contains_key(&uuid) {
                duplicates.push(*line_no);
                continue;
            }
            first_line.insert(uuid, *line_no);
        }
        if obj.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            sidechain.push(*line_no);
        }
    }
    skip.extend(&duplicates);
    skip.extend(&sidechain);
    let parent_of = |obj: &Map<String, Value>| {
        ["parentUuid", "logicalParentUuid"]
            .iter()
            .find_map(|key| obj.get(*key).and_then(Value::as_str).map(str::to_owned))
    };
    let by_uuid: BTreeMap<String, &Map<String, Value>> = lines
        .iter()
        .filter(|(line_no, _)| !skip.contains(line_no))
        .filter_map(|(_, obj)| uuid_of(obj).map(|u| (u, obj)))
        .collect();
    let leaf = lines
        .iter()
        .rev()
        .filter(|(line_no, _)| !skip.contains(line_no))
        .filter(|(_, obj)| is_turn(obj))
        .find_map(|(_, obj)| uuid_of(obj));
    let mut chain = BTreeSet::new();
    let mut reached_the_root = true;
    let mut next = leaf;
    while let Some(uuid) = next {
        let Some(obj) = by_uuid.get(&uuid) else {
            reached_the_root = false;
            break;
        };
        if !chain.insert(uuid) {
            break;
        }
        if !obj.contains_key("parentUuid") {
            // No link recorded: nothing is known about the lines before it.
            reached_the_root = false;
            break;
        }
        next = parent_of(obj);
    }
    let chain_start = lines
        .iter()
        .filter(|(_, obj)| uuid_of(obj).is_some_and(|u| chain.contains(&u)))
        .map(|(line_no, _)| *line_no)
        .min()
        .unwrap_or(0);
    let abandoned: Vec<usize> = lines
        .iter()
        .filter(|(line_no, _)| !skip.contains(line_no))
        .filter(|(line_no, _)| reached_the_root || *line_no > chain_start)
        .filter(|(_, obj)| is_turn(obj) && uuid_of(obj).is_some_and(|u| !chain.contains(&u)))
        .map(|(line_no, _)| *line_no)
        .collect();
    skip.extend(&abandoned);
    for (found, what) in [
        (duplicates, "repeat a `uuid` seen earlier"),
        (sidechain, "are sidechain (sub-agent) records"),
        (
            abandoned,
            "are on a branch the session abandoned (not on the `parentUuid` chain of the last record)",
        ),
    ] {
        if let Some(first) = found.first() {
            warnings.push(ImportWarning::at_line(
                *first,
                format!("{} line(s) from here on {what}; skipped", found.len()),
            ));
        }
    }
    skip
}

/// A user or assistant line: the records that become prompts and steps.
fn is_turn(obj: &Map<String, Value>) -> bool {
    matches!(
        obj.get("type").and_then(Value::as_str),
        Some("user" | "assistant")
    )
}
