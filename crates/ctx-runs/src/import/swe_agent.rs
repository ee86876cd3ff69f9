//! SWE-agent `.traj` files: one JSON object with `trajectory`, `history` and `info`.
//!
//! Each `trajectory` entry (`action`, `observation`, `thought`, `execution_time`) is a tool
//! step named after the action's first word (`open`, `edit`, `python`, `submit`, …) with the
//! whole command as its argument. The `history` gives the system prompt and the task prompts
//! (the user turns before the first assistant turn); `info.submission` is the run's output
//! and `info.swe_agent_version` its tool version.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{ImportWarning, ParsedRun, is_deterministic_tool, text_of};
use crate::RunError;
use crate::model::ModelInfo;
use crate::store::StepDraft;

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
    let Some(trajectory) = root.get("trajectory").and_then(Value::as_array) else {
        return Err(bad(
            "expected an object with a `trajectory` array".to_owned()
        ));
    };
    let mut run = ParsedRun::default();
    run.environment.runtime = Some("swe-agent".to_owned());
    history(&mut run, root.get("history"));
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
        let command = action.trim();
        let tool = command.split_whitespace().next().unwrap_or("");
        if tool.is_empty() {
            run.warnings
                .push(ImportWarning::at_item(at, "empty `action`; skipped"));
            continue;
        }
        let mut step = StepDraft::tool_call(tool, serde_json::json!({ "command": command }));
        step.output = obj
            .get("observation")
            .and_then(Value::as_str)
            .map(|o| o.as_bytes().to_vec());
        step.reasoning = obj
            .get("thought")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        step.deterministic = is_deterministic_tool(tool);
        step.duration_ms = obj
            .get("execution_time")
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s >= 0.0)
            .and_then(|seconds| {
                let ms = seconds_to_ms(seconds);
                if ms > crate::store::MAX_JSON_INT {
                    run.warnings.push(ImportWarning::at_item(
                        format!("{at}.execution_time"),
                        format!("{seconds} seconds is out of range; the duration is left out"),
                    ));
                    None
                } else {
                    Some(ms)
                }
            });
        run.steps.push(step);
    }
    if let Some(patch) = info
        .and_then(|i| i.get("submission"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        run.outputs
            .push(("submission.patch".to_owned(), patch.as_bytes().to_vec()));
    }
    if run.steps.is_empty() {
        return Err(RunError::NoRecords {
            path: path.to_owned(),
            format: "swe-agent",
            warnings: run.warnings,
        });
    }
    Ok(run)
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a finite, non-negative duration in seconds, rounded to whole milliseconds"
)]
fn seconds_to_ms(seconds: f64) -> u64 {
    (seconds * 1000.0).round() as u64
}

fn history(run: &mut ParsedRun, history: Option<&Value>) {
    let Some(entries) = history.and_then(Value::as_array) else {
        return;
    };
    for entry in entries {
        // Demonstrations (example trajectories shown to the model) are not the task.
        if entry.get("is_demo").and_then(Value::as_bool) == Some(true)
            || entry.get("message_type").and_then(Value::as_str) == Some("demonstration")
        {
            continue;
        }
        let role = entry.get("role").and_then(Value::as_str).unwrap_or("");
        let Some(content) = entry.get("content").and_then(text_of) else {
            continue;
        };
        match role {
            "system" if run.system_prompt.is_none() => run.system_prompt = Some(content),
            "user" => run.prompts.push(("user".to_owned(), content)),
            // Later turns are observations, already in the trajectory.
            "assistant" => break,
            _ => {}
        }
    }
}

fn model_of(root: &serde_json::Map<String, Value>) -> Option<ModelInfo> {
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
