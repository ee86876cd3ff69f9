//! Every transcript of the public corpus (`tests/transcripts/`, see its README) imports, and
//! its runs hold exactly the tool calls the file holds: a small counter here reads each file
//! on its own terms and the step counts must match it. On a sample of files every tool call's
//! arguments and output are compared byte for byte with the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ctx_runs::import::{ImportOptions, RunFormat};
use ctx_runs::{ImportOutcome, Run, StepKind, StoredRun};
use ctx_store::Store;
use serde_json::Value;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/transcripts")
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::init(&dir.path().join(".ctx")).expect("store");
    (dir, store)
}

/// Every transcript in the corpus: session and log files, not the sub-agent files that come
/// with a session (those are counted with it) or the README.
fn corpus_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("corpus dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "subagents") {
                    continue;
                }
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e != "md") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&corpus(), &mut out);
    out
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

// ---- the independent counter ---------------------------------------------------------------

/// Tool calls in a Claude Code transcript: `tool_use` blocks of assistant lines, each line
/// once (a line repeating a `uuid` is a copy), split into the session's own lines and its
/// sidechain lines.
fn claude_calls(path: &Path) -> (usize, usize) {
    let mut seen = std::collections::HashSet::new();
    let values = lines(path);
    let all_sidechain = values
        .iter()
        .filter(|v| matches!(v["type"].as_str(), Some("user" | "assistant")))
        .all(|v| v["isSidechain"] == true);
    let (mut main, mut side) = (0, 0);
    for v in &values {
        if let Some(uuid) = v["uuid"].as_str()
            && !seen.insert(uuid.to_owned())
        {
            continue;
        }
        if v["type"] != "assistant" || v["isMeta"] == true {
            continue;
        }
        let calls = v["message"]["content"].as_array().map_or(0, |blocks| {
            blocks
                .iter()
                .filter(|b| matches!(b["type"].as_str(), Some("tool_use" | "server_tool_use")))
                .count()
        });
        if v["isSidechain"] == true && !all_sidechain {
            side += calls;
        } else {
            main += calls;
        }
    }
    (main, side)
}

/// Tool calls in a SWE-agent `.traj`: its trajectory entries, or (history only) the
/// assistant messages that took an action.
fn swe_agent_calls(value: &Value) -> usize {
    match value["trajectory"].as_array() {
        Some(t) => t.len(),
        None => value["history"]
            .as_array()
            .expect("history")
            .iter()
            .filter(|m| m["role"] == "assistant" && m["is_demo"] != true)
            .filter(|m| m.get("action").is_some() || m.get("tool_calls").is_some())
            .count(),
    }
}

/// Commands in a mini-swe-agent trajectory: assistant messages with exactly one fenced
/// ```` ```bash ```` / ```` ```mswea_bash_command ```` block.
fn mini_calls(value: &Value) -> usize {
    let messages = value
        .as_array()
        .or_else(|| value["messages"].as_array())
        .expect("messages");
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter(|m| {
            let text = m["content"].as_str().unwrap_or("");
            let blocks =
                text.matches("```bash\n").count() + text.matches("```mswea_bash_command\n").count();
            blocks == 1
        })
        .count()
}

const OPENHANDS_NOT_CALLS: &[&str] = &[
    "message",
    "system",
    "agent_state_changed",
    "change_agent_state",
    "recall",
    "null",
    "condensation",
];

/// Tool calls in OpenHands events: V0 actions that are not messages or bookkeeping, or V1
/// `ActionEvent`s.
fn openhands_calls(events: &[Value]) -> usize {
    events
        .iter()
        .filter(|e| {
            e["kind"] == "ActionEvent"
                || e["action"]
                    .as_str()
                    .is_some_and(|a| !OPENHANDS_NOT_CALLS.contains(&a))
        })
        .count()
}

/// The tool calls the file holds, per run the import should give: by row for
/// `output.jsonl` files, one entry otherwise.
fn expected_calls(path: &Path) -> Vec<usize> {
    let name = path.to_string_lossy();
    let text = std::fs::read_to_string(path).expect("read");
    if name.contains("openhands") || name.contains("all-hands") {
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(events)) => return vec![openhands_calls(&events)],
            Ok(row) if row.get("history").is_some() => {
                return vec![openhands_calls(row["history"].as_array().expect("history"))];
            }
            _ => {}
        }
        let rows = lines(path);
        if rows.iter().all(|r| r.get("history").is_some()) {
            return rows
                .iter()
                .map(|r| {
                    let history = r["history"].as_array().expect("history");
                    openhands_calls(history)
                })
                .collect();
        }
        return vec![openhands_calls(&rows)];
    }
    if name.ends_with(".traj.json") {
        return vec![mini_calls(&serde_json::from_str(&text).expect("json"))];
    }
    if name.ends_with(".traj") {
        return vec![swe_agent_calls(&serde_json::from_str(&text).expect("json"))];
    }
    let (main, side) = claude_calls(path);
    vec![main + side]
}

// ---- the runs an import made ------------------------------------------------------------------

fn load(store: &Store, id: &ctx_runs::RunId) -> Run {
    ctx_runs::load_run_by_id(store, id).expect("the run loads")
}

/// Tool steps of a stored run, its nested runs and its forks, each step object once (a fork
/// shares the step objects before its branch).
fn tool_steps(store: &Store, stored: &StoredRun, out: &mut BTreeMap<String, usize>) {
    let run = load(store, &stored.run);
    for (step, hash) in run.steps.iter().zip(&run.manifest.steps) {
        if step.kind == StepKind::ToolCall {
            out.insert(hash.to_string(), 1);
        }
    }
    for fork in &stored.forks {
        tool_steps(store, fork, out);
    }
    for child in &stored.children {
        tool_steps(store, &child.stored, out);
    }
}

/// Files that are excerpts missing part of what they refer to, and what their import drops.
const INCOMPLETE: &[(&str, &str)] = &[(
    // A test fixture cut from a longer stream: one observation's action is not in it.
    "openhands-software-agent-sdk/goal-events.jsonl",
    "1 of 3 tool outputs dropped (observations that answer tool calls not in the file)",
)];

fn known_loss(path: &Path) -> Option<&'static str> {
    INCOMPLETE
        .iter()
        .find(|(name, _)| path.ends_with(name))
        .map(|(_, loss)| *loss)
}

fn import(store: &Store, path: &Path) -> ImportOutcome {
    let options = ImportOptions {
        // The one file that holds lines that are not JSON, on purpose.
        skip_bad_lines: path.ends_with("daaain-claude-code-log/edge_cases.jsonl"),
        lossy: known_loss(path).is_some(),
        ..ImportOptions::default()
    };
    ctx_runs::import_path(store, path, &options)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_corpus_file_imports_with_every_tool_call_it_holds() {
    let files = corpus_files();
    assert!(files.len() >= 30, "{} files", files.len());
    let (_dir, store) = store();
    let mut formats = BTreeMap::new();
    for path in &files {
        let outcome = import(&store, path);
        *formats.entry(outcome.format.name()).or_insert(0) += 1;
        let expected = expected_calls(path);
        assert_eq!(
            outcome.runs.len(),
            expected.len(),
            "{}: one run per row",
            path.display()
        );
        for (stored, calls) in outcome.runs.iter().zip(&expected) {
            let mut steps = BTreeMap::new();
            tool_steps(&store, stored, &mut steps);
            assert_eq!(
                steps.len(),
                calls + sidecar_calls(path),
                "{}: tool steps (sub-agents included) against the file's tool calls",
                path.display()
            );
        }
        // What the report says was held is what the file holds.
        assert_eq!(
            usize::try_from(outcome.report.held.calls).expect("fits"),
            expected.iter().sum::<usize>() + sidecar_calls(path),
            "{}: {:?}",
            path.display(),
            outcome.report
        );
        assert_eq!(
            outcome.report.loss_line().as_deref(),
            known_loss(path),
            "{}",
            path.display()
        );
        if known_loss(path).is_none() {
            assert_eq!(
                outcome.report.kept,
                outcome.report.held,
                "{}",
                path.display()
            );
        }
    }
    for format in [
        RunFormat::ClaudeCode,
        RunFormat::OpenHands,
        RunFormat::SweAgent,
        RunFormat::MiniSweAgent,
    ] {
        assert!(formats.contains_key(format.name()), "{formats:?}");
    }
}

/// The sub-agent files that come with a session file (`<session>/subagents/*.jsonl`).
fn sidecars(path: &Path) -> Vec<PathBuf> {
    let Some(stem) = path.file_stem() else {
        return Vec::new();
    };
    let dir = path.with_file_name(stem).join("subagents");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn sidecar_calls(path: &Path) -> usize {
    sidecars(path).iter().map(|f| claude_calls(f).0).sum()
}

#[test]
fn sub_agent_files_become_runs_nested_under_the_calls_that_started_them() {
    let (_dir, store) = store();
    for session in [
        "marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
        "marot-spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    ] {
        let path = corpus().join(session);
        let outcome = import(&store, &path);
        let main = &outcome.runs[0];
        let files = sidecars(&path);
        assert_eq!(main.children.len(), files.len(), "{session}");
        let run = load(&store, &main.run);
        for (child, file) in main.children.iter().zip(&files) {
            let step = usize::try_from(child.step.expect("linked to its call")).expect("fits");
            let call = &run.steps[step];
            assert!(
                matches!(call.tool.as_deref(), Some("Task" | "Agent")),
                "{session}: {call:?}"
            );
            let nested = load(&store, &child.stored.run);
            let calls = nested
                .steps
                .iter()
                .filter(|s| s.kind == StepKind::ToolCall)
                .count();
            assert_eq!(calls, claude_calls(file).0, "{}", file.display());
            let link = run
                .manifest
                .child_of_step(step as u64)
                .expect("in the manifest");
            assert_eq!(link.run, child.stored.run);
            assert_eq!(link.call_id, call.call_id);
        }
    }
}

// ---- byte for byte on a sample ------------------------------------------------------------------

fn read_blob(store: &Store, hash: Option<ctx_core::ContentHash>) -> Option<Vec<u8>> {
    hash.map(|h| ctx_runs::read_blob(store, &h).expect("blob"))
}

/// The bytes of a Claude tool result as the file holds them: a string, or its text blocks
/// joined by newlines.
fn claude_result_bytes(content: &Value) -> Vec<u8> {
    match content {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| b["text"].as_str().expect("text blocks only in the sample"))
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
        Value::Null => Vec::new(),
        other => panic!("unexpected result content {other}"),
    }
}

#[test]
fn claude_arguments_and_outputs_are_byte_exact() {
    let (_dir, store) = store();
    for name in [
        "jimmc414-cctrace/main.jsonl",
        "marot-spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        "daaain-claude-code-log/todowrite_examples.jsonl",
    ] {
        let path = corpus().join(name);
        let mut inputs: BTreeMap<String, Value> = BTreeMap::new();
        let mut results: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for v in lines(&path) {
            for block in v["message"]["content"].as_array().into_iter().flatten() {
                match block["type"].as_str() {
                    Some("tool_use") => {
                        inputs.insert(
                            block["id"].as_str().expect("id").to_owned(),
                            block["input"].clone(),
                        );
                    }
                    Some("tool_result") => {
                        results.insert(
                            block["tool_use_id"].as_str().expect("id").to_owned(),
                            claude_result_bytes(&block["content"]),
                        );
                    }
                    _ => {}
                }
            }
        }
        let outcome = import(&store, &path);
        let run = load(&store, &outcome.run);
        let mut checked = 0;
        for step in run.steps.iter().filter(|s| s.kind == StepKind::ToolCall) {
            let id = step.call_id.as_deref().expect("call id");
            assert_eq!(
                ctx_core::canonical::to_vec(&step.parameters).expect("json"),
                ctx_core::canonical::to_vec(&inputs[id]).expect("json"),
                "{name}: arguments of {id}"
            );
            assert_eq!(
                read_blob(&store, step.output_ref),
                results.get(id).cloned(),
                "{name}: output of {id}"
            );
            checked += 1;
        }
        assert_eq!(checked, inputs.len(), "{name}");
    }
}

#[test]
fn swe_agent_arguments_and_outputs_are_byte_exact() {
    let (_dir, store) = store();
    // Function calling: the model's tool call names the tool, its id and its arguments.
    let path = corpus().join("swe-agent/marshmallow-1867__function_calling.traj");
    let traj: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    let calls: Vec<&Value> = traj["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()))
        .collect();
    let run = load(&store, &import(&store, &path).run);
    assert_eq!(run.steps.len(), calls.len());
    for ((step, call), entry) in run
        .steps
        .iter()
        .zip(&calls)
        .zip(traj["trajectory"].as_array().expect("trajectory"))
    {
        assert_eq!(step.tool.as_deref(), call["function"]["name"].as_str());
        assert_eq!(step.call_id.as_deref(), call["id"].as_str());
        let arguments: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().expect("arguments"))
                .expect("json arguments");
        assert_eq!(step.parameters, arguments);
        assert_eq!(
            read_blob(&store, step.output_ref),
            entry["observation"].as_str().map(|o| o.as_bytes().to_vec())
        );
    }
    // Classic: the command as the argument, its first word as the tool.
    let path = corpus().join("swe-agent/pydicom__pydicom-1458.traj");
    let traj: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    let run = load(&store, &import(&store, &path).run);
    for (step, entry) in run
        .steps
        .iter()
        .zip(traj["trajectory"].as_array().expect("trajectory"))
    {
        let command = entry["action"].as_str().expect("action").trim();
        assert_eq!(step.parameters, serde_json::json!({ "command": command }));
        assert_eq!(step.tool.as_deref(), command.split_whitespace().next());
        assert_eq!(
            read_blob(&store, step.output_ref),
            entry["observation"].as_str().map(|o| o.as_bytes().to_vec())
        );
    }
}

#[test]
fn openhands_arguments_and_outputs_are_byte_exact() {
    let (_dir, store) = store();
    // V0 evaluation row: the model's tool-call arguments, the observation's content.
    let path = corpus().join("all-hands-ai-openhands/multi-swe-bench-output.jsonl");
    let row = &lines(&path)[0];
    let history = row["history"].as_array().expect("history");
    let run = load(&store, &import(&store, &path).run);
    let tools: Vec<&ctx_runs::Step> = run
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::ToolCall)
        .collect();
    let mut checked = 0;
    for step in tools {
        let id = step.call_id.as_deref().expect("call id");
        let action = history
            .iter()
            .find(|e| e.get("action").is_some() && e["tool_call_metadata"]["tool_call_id"] == id)
            .expect("the action");
        let call =
            action["tool_call_metadata"]["model_response"]["choices"][0]["message"]["tool_calls"]
                .as_array()
                .expect("tool calls")
                .iter()
                .find(|c| c["id"] == id)
                .expect("the call");
        let arguments: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().expect("string"))
                .expect("json");
        assert_eq!(step.parameters, arguments, "{id}");
        let observation = history
            .iter()
            .find(|e| e.get("observation").is_some() && e["cause"] == action["id"]);
        assert_eq!(
            read_blob(&store, step.output_ref),
            observation.map(|o| o["content"].as_str().expect("content").as_bytes().to_vec()),
            "{id}"
        );
        checked += 1;
    }
    assert!(checked > 10, "{checked}");
    // V1 event stream: arguments from `tool_call.arguments`, output from the observation.
    let path = corpus().join("openhands-software-agent-sdk/goal-events.jsonl");
    let events = lines(&path);
    let run = load(&store, &import(&store, &path).run);
    for step in &run.steps {
        let id = step.call_id.as_deref().expect("call id");
        let action = events
            .iter()
            .find(|e| e["kind"] == "ActionEvent" && e["tool_call_id"] == id)
            .expect("action");
        let arguments: Value =
            serde_json::from_str(action["tool_call"]["arguments"].as_str().expect("string"))
                .expect("json");
        assert_eq!(step.parameters, arguments);
        let observation = events
            .iter()
            .find(|e| e["kind"] == "ObservationEvent" && e["tool_call_id"] == id);
        let expected = observation.map(|o| {
            o["observation"]["content"]
                .as_array()
                .expect("blocks")
                .iter()
                .map(|b| b["text"].as_str().expect("text"))
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes()
        });
        assert_eq!(read_blob(&store, step.output_ref), expected, "{id}");
    }
}

#[test]
fn mini_swe_agent_commands_and_outputs_are_byte_exact() {
    let (_dir, store) = store();
    let path = corpus().join("gruckion-mini-swe-agent/django__django-16255.traj.json");
    let traj: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    let messages = traj["messages"].as_array().expect("messages");
    let run = load(&store, &import(&store, &path).run);
    let mut steps = run.steps.iter();
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        let text = m["content"].as_str().expect("text");
        let step = steps.next().expect("a step per assistant message");
        let Some(start) = text.find("```bash\n") else {
            assert_eq!(step.kind, StepKind::ModelCall);
            continue;
        };
        let body = &text[start + "```bash\n".len()..];
        let command = &body[..body.find("\n```").expect("closed")];
        assert_eq!(step.parameters, serde_json::json!({ "command": command }));
        assert_eq!(
            read_blob(&store, step.output_ref),
            Some(
                messages[i + 1]["content"]
                    .as_str()
                    .expect("text")
                    .as_bytes()
                    .to_vec()
            )
        );
        assert_eq!(
            step.model.as_deref(),
            m["extra"]["response"]["model"].as_str()
        );
    }
}
