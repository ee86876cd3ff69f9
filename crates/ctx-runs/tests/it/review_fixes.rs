//! Regression tests for the reviewed problems: detection, Claude Code branches and sidechains,
//! integers canonical JSON cannot hold, and OTel timestamps.

use std::path::{Path, PathBuf};

use ctx_runs::StepStatus;
use ctx_runs::import::{self, RunFormat};
use ctx_store::Store;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::init(&dir.path().join(".ctx")).expect("store");
    (dir, store)
}

#[test]
fn claude_files_opening_with_snapshot_lines_are_detected_and_the_lines_ignored() {
    let bytes = std::fs::read(fixture("claude-code-branches.jsonl")).expect("fixture");
    assert_eq!(import::detect(&bytes), Some(RunFormat::ClaudeCode));
    let parsed =
        import::parse(RunFormat::ClaudeCode, Path::new("x.jsonl"), &bytes).expect("parses");
    assert!(
        parsed
            .warnings
            .iter()
            .all(|w| w.line != Some(1) && w.line != Some(2)),
        "{:?}",
        parsed.warnings
    );
}

#[test]
fn openhands_objects_with_an_events_array_are_detected() {
    let events = std::fs::read_to_string(fixture("openhands.json")).expect("fixture");
    let wrapped = format!("{{\"events\": {events}}}");
    assert_eq!(
        import::detect(wrapped.as_bytes()),
        Some(RunFormat::OpenHands)
    );
    assert_eq!(import::detect(br#"{"events": [1, 2]}"#), None);
}

fn step_summary(steps: &[ctx_runs::StepDraft]) -> Vec<(String, Option<String>, StepStatus)> {
    steps
        .iter()
        .map(|s| {
            (
                s.tool.clone().unwrap_or_else(|| "model".to_owned()),
                s.output
                    .as_ref()
                    .map(|o| String::from_utf8_lossy(o).into_owned()),
                s.status,
            )
        })
        .collect()
}

/// Issue 33 changed this: the abandoned answer is a fork of the session (not a skipped line),
/// the sidechain a nested run, a repeated `uuid` a copy skipped without a word, and thinking
/// at the end a model step of its own.
#[test]
fn claude_branches_sidechains_repeats_and_errors_are_handled() {
    let bytes = std::fs::read(fixture("claude-code-branches.jsonl")).expect("fixture");
    let parsed =
        import::parse(RunFormat::ClaudeCode, Path::new("x.jsonl"), &bytes).expect("parses");
    let text = |s: &str| Some(s.to_owned());
    assert_eq!(
        step_summary(&parsed.steps),
        vec![
            ("Bash".to_owned(), text("error: boom"), StepStatus::Error),
            ("model".to_owned(), text("retry"), StepStatus::Ok),
            ("Read".to_owned(), None, StepStatus::Ok),
            ("Read".to_owned(), text("fn b() {}"), StepStatus::Ok),
            ("model".to_owned(), None, StepStatus::Ok),
        ]
    );
    assert_eq!(parsed.steps[4].reasoning.as_deref(), Some("left over"));
    // The answer the session went back from: a fork sharing the steps before it.
    assert_eq!(parsed.forks.len(), 1);
    assert_eq!(
        step_summary(&parsed.forks[0].steps),
        vec![
            ("Bash".to_owned(), text("error: boom"), StepStatus::Error),
            ("model".to_owned(), text("abandoned answer"), StepStatus::Ok),
        ]
    );
    assert_eq!(parsed.forks[0].steps[0], parsed.steps[0]);
    // The sidechain: a nested sub-agent run (its call is not in the file, so unlinked).
    assert_eq!(parsed.children.len(), 1);
    assert_eq!(parsed.children[0].step, None);
    assert_eq!(
        step_summary(&parsed.children[0].run.steps),
        vec![("model".to_owned(), text("sub-agent work"), StepStatus::Ok)]
    );
    let warnings: Vec<String> = parsed.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "line 11: tool_use id `t2` repeats the one at line 10; results go to this step; the earlier step, still without a result, gets no output"
        ]
    );
    assert!(parsed.report.losses.is_empty(), "{:?}", parsed.report);
}

#[test]
fn a_huge_swe_agent_execution_time_is_left_out_and_the_run_loads() {
    let text = std::fs::read_to_string(fixture("swe-agent.traj")).expect("fixture");
    let text = text.replacen("\"execution_time\": 0.214", "\"execution_time\": 1e300", 1);
    assert!(text.contains("1e300"));
    let (_dir, store) = store();
    let outcome = import::import_bytes(&store, Path::new("big.traj"), text.as_bytes(), None)
        .expect("imports");
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.to_string().contains("trajectory[0].execution_time")),
        "{:?}",
        outcome.warnings
    );
    let run = ctx_runs::load_run_by_id(&store, &outcome.run).expect("the run loads");
    assert_eq!(run.steps[0].duration_ms, None);
    // 2^53 seconds in ms is above the limit too, yet finite.
    let text = std::fs::read_to_string(fixture("swe-agent.traj"))
        .expect("fixture")
        .replacen(
            "\"execution_time\": 0.214",
            "\"execution_time\": 9007199254740993",
            1,
        );
    let outcome = import::import_bytes(&store, Path::new("big.traj"), text.as_bytes(), None)
        .expect("imports");
    ctx_runs::load_run_by_id(&store, &outcome.run).expect("the run loads");
}

#[test]
fn a_ctx_export_with_an_unrepresentable_duration_is_refused() {
    let (_dir, store) = store();
    let outcome = import::import_file(&store, &fixture("swe-agent.traj"), None).expect("imports");
    let run = ctx_runs::load_run_by_id(&store, &outcome.run).expect("loads");
    let mut export =
        serde_json::to_value(ctx_runs::export::export_ctx(&store, &run).expect("export"))
            .expect("json");
    export["steps"][0]["duration_ms"] = serde_json::json!(u64::MAX);
    let bytes = serde_json::to_vec(&export).expect("bytes");
    let err = import::import_bytes(
        &store,
        Path::new("edited.json"),
        &bytes,
        Some(RunFormat::Ctx),
    )
    .expect_err("refused");
    assert!(err.to_string().contains("2^53"), "{err}");
}

fn otel_start_times(store: &Store, name: &str) -> Vec<Option<u64>> {
    let outcome = import::import_file(store, &fixture(name), None).expect("imports");
    let run = ctx_runs::load_run_by_id(store, &outcome.run).expect("loads");
    let otel = ctx_runs::export::export_otel(&run);
    otel["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .expect("spans")
        .iter()
        .map(|s| {
            s["startTimeUnixNano"]
                .as_str()
                .map(|t| t.parse().expect("number"))
        })
        .collect()
}

#[test]
fn openhands_and_swe_agent_runs_export_to_otel_with_real_times() {
    let (_dir, store) = store();
    let openhands = otel_start_times(&store, "openhands.json");
    assert!(openhands.len() > 1);
    // 2025-06-12T14:03:11Z or later, read as UTC.
    assert!(
        openhands
            .iter()
            .all(|t| t.is_some_and(|t| t >= 1_749_736_991_000_000_000)),
        "{openhands:?}"
    );
    // Issue 33 changed this: SWE-agent records no times, so its spans carry none (they
    // started at Unix time 0 before).
    let swe = otel_start_times(&store, "swe-agent.traj");
    assert!(swe.len() > 1);
    assert!(swe.iter().all(Option::is_none), "{swe:?}");
}

#[test]
fn openhands_system_prompt_bookkeeping_errors_and_determinism() {
    let events = serde_json::json!([
        {"id": 0, "timestamp": "2025-06-12T14:03:10", "source": "agent", "action": "system",
         "args": {"content": "You are OpenHands agent.", "tools": []}},
        {"id": 1, "timestamp": "2025-06-12T14:03:11", "source": "user", "action": "message",
         "args": {"content": "Fix it"}},
        {"id": 2, "timestamp": "2025-06-12T14:03:11", "source": "environment", "observation": "recall",
         "cause": 1, "content": "", "extras": {}},
        {"id": 3, "timestamp": "2025-06-12T14:03:12", "source": "agent", "action": "browse",
         "tool_call_metadata": {"function_name": "browser", "tool_call_id": "c1"},
         "args": {"url": "https://example.com", "thought": ""}},
        {"id": 4, "timestamp": "2025-06-12T14:03:13", "source": "agent", "observation": "browse",
         "cause": 3, "content": "page"},
        {"id": 5, "timestamp": "2025-06-12T14:03:14", "source": "agent", "action": "edit",
         "tool_call_metadata": {"function_name": "str_replace_editor", "tool_call_id": "c2"},
         "args": {"command": "view", "path": "/w/a.py", "thought": ""}},
        {"id": 6, "timestamp": "2025-06-12T14:03:15", "source": "agent", "observation": "edit",
         "cause": 5, "content": "1\tx = 1"},
        {"id": 7, "timestamp": "2025-06-12T14:03:16", "source": "agent", "action": "run",
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c3"},
         "args": {"command": "false", "thought": ""}},
        {"id": 8, "timestamp": "2025-06-12T14:03:17", "source": "agent", "observation": "run",
         "cause": 7, "content": "", "extras": {"metadata": {"exit_code": 1}}},
        {"id": 9, "timestamp": "2025-06-12T14:03:18", "source": "agent", "action": "run",
         "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "c4"},
         "args": {"command": "sleep 999", "thought": ""}},
        {"id": 10, "timestamp": "2025-06-12T14:03:19", "source": "agent", "observation": "error",
         "cause": 9, "content": "timed out"},
        {"id": 11, "timestamp": "2025-06-12T14:03:20", "source": "agent", "observation": "error",
         "cause": 9, "content": "timed out again"},
        {"id": 12, "timestamp": "2025-06-12T14:03:21", "source": "environment", "observation": "null",
         "cause": 1, "content": ""}
    ]);
    let bytes = serde_json::to_vec(&events).expect("json");
    let parsed = import::parse(RunFormat::OpenHands, Path::new("oh.json"), &bytes).expect("parses");
    assert_eq!(
        parsed.system_prompt.as_deref(),
        Some("You are OpenHands agent.")
    );
    let warnings: Vec<String> = parsed.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        vec![
            "events[11]: a second observation for action id 9; it replaces the first one's output"
        ]
    );
    let steps: Vec<(&str, bool, StepStatus)> = parsed
        .steps
        .iter()
        .map(|s| (s.tool.as_deref().unwrap_or(""), s.deterministic, s.status))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("browser", false, StepStatus::Ok),
            ("str_replace_editor", true, StepStatus::Ok),
            ("execute_bash", false, StepStatus::Error),
            ("execute_bash", false, StepStatus::Error),
        ]
    );
    // The fixture's `read` action is still deterministic.
    let bytes = std::fs::read(fixture("openhands.json")).expect("fixture");
    let parsed = import::parse(RunFormat::OpenHands, Path::new("oh.json"), &bytes).expect("parses");
    assert!(parsed.steps.iter().any(|s| s.deterministic));
}

#[test]
fn swe_agent_demonstrations_do_not_hide_the_task_prompt() {
    let traj = serde_json::json!({
        "trajectory": [{"action": "ls", "observation": "a.py", "thought": "look", "execution_time": 0.1}],
        "history": [
            {"role": "system", "content": "SETTING: a shell."},
            {"role": "user", "content": "Here is a demonstration: ...", "is_demo": true},
            {"role": "assistant", "content": "ls", "is_demo": true},
            {"role": "user", "content": "demo observation", "message_type": "demonstration"},
            {"role": "user", "content": "ISSUE: fix the bug"},
            {"role": "assistant", "content": "ls"}
        ]
    });
    let bytes = serde_json::to_vec(&traj).expect("json");
    let parsed = import::parse(RunFormat::SweAgent, Path::new("t.traj"), &bytes).expect("parses");
    assert_eq!(parsed.system_prompt.as_deref(), Some("SETTING: a shell."));
    assert_eq!(
        parsed.prompts,
        vec![("user".to_owned(), "ISSUE: fix the bug".to_owned())]
    );
}

#[test]
fn run_prefixes_are_case_insensitive_and_latest_is_not_a_tag() {
    let (_dir, store) = store();
    let outcome = import::import_file(&store, &fixture("swe-agent.traj"), None).expect("imports");
    let hex = outcome.run.to_hex();
    for input in [
        hex[..8].to_ascii_uppercase(),
        format!("SHA256:{}", hex[..12].to_ascii_uppercase()),
        hex.to_ascii_uppercase(),
    ] {
        assert_eq!(
            ctx_runs::resolve_run(&store, &input).expect("resolves"),
            outcome.run,
            "{input}"
        );
    }
    for bad in ["latest", "Latest", "CAFE"] {
        assert!(ctx_runs::check_tag(bad).is_err(), "{bad}");
        assert!(
            ctx_runs::tag_run(&store, bad, &outcome.run).is_err(),
            "{bad}"
        );
    }
    ctx_runs::check_tag("v1.0-rc_2").expect("a good tag");
}

fn attr<'a>(span: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    span["attributes"]
        .as_array()
        .expect("attributes")
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[test]
fn otel_spans_follow_the_genai_conventions() {
    let (_dir, store) = store();
    let swe = import::import_file(&store, &fixture("swe-agent.traj"), None).expect("imports");
    let run = ctx_runs::load_run_by_id(&store, &swe.run).expect("loads");
    let otel = ctx_runs::export::export_otel(&run);
    let spans = otel["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .expect("spans");
    assert_eq!(
        attr(&spans[0], "gen_ai.request.temperature"),
        Some(&serde_json::json!({"intValue": "0"}))
    );
    assert!(attr(&spans[0], "gen_ai.request.top_p").is_some());
    assert!(attr(&spans[0], "gen_ai.request.per_instance_cost_limit").is_none());

    let claude =
        import::import_file(&store, &fixture("claude-code-branches.jsonl"), None).expect("imports");
    let run = ctx_runs::load_run_by_id(&store, &claude.run).expect("loads");
    let otel = ctx_runs::export::export_otel(&run);
    let spans = otel["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .expect("spans");
    for span in spans {
        assert_eq!(
            attr(span, "gen_ai.provider.name"),
            Some(&serde_json::json!({"stringValue": "anthropic"})),
            "{span}"
        );
        let op = attr(span, "gen_ai.operation.name").expect("op")["stringValue"].clone();
        assert_eq!(
            attr(span, "gen_ai.tool.call.arguments").is_some(),
            op == "execute_tool",
            "{span}"
        );
    }
    // The failed Bash call (step 0) carries error.type and an error status.
    assert_eq!(
        attr(&spans[1], "error.type"),
        Some(&serde_json::json!({"stringValue": "tool_error"}))
    );
    assert_eq!(spans[1]["status"]["code"], 2);
    assert!(attr(&spans[2], "error.type").is_none());
}
