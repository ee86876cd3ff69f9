//! Regression tests for issue 33 (run import lost data from real agents' transcripts while
//! exiting 0), one per defect, named after it.

use std::path::{Path, PathBuf};

use ctx_runs::import::{self, ImportOptions, RunFormat};
use ctx_runs::{DriftKind, ImportOutcome, RunBuilder, StepDraft, StepKind, StepStatus};
use ctx_store::Store;
use serde_json::{Value, json};

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/transcripts")
        .join(name)
}

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

fn jsonl(lines: &[Value]) -> String {
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text
}

/// A Claude Code line: `kind` user or assistant, with `uuid`, `parentUuid` and `content`.
fn line(kind: &str, uuid: &str, parent: Option<&str>, content: &Value, at: &str) -> Value {
    let mut message = json!({"role": kind, "content": content});
    if kind == "assistant" {
        message["model"] = json!("claude-sonnet-4-20250514");
        message["id"] = json!(format!("msg_{uuid}"));
        message["usage"] = json!({"input_tokens": 10, "output_tokens": 5});
    }
    json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
           "version": "1.0.51", "timestamp": at, "isSidechain": false, "message": message})
}

fn call(id: &str, name: &str, input: &Value) -> Value {
    json!([{"type": "tool_use", "id": id, "name": name, "input": input}])
}

fn result(id: &str, text: &str) -> Value {
    json!([{"type": "tool_result", "tool_use_id": id, "content": text}])
}

fn parse_claude(text: &str) -> import::ParsedRun {
    import::parse(RunFormat::ClaudeCode, Path::new("s.jsonl"), text.as_bytes()).expect("parses")
}

fn tools(run: &import::ParsedRun) -> Vec<(String, Option<String>)> {
    run.steps
        .iter()
        .filter(|s| s.kind == StepKind::ToolCall)
        .map(|s| {
            (
                s.tool.clone().unwrap_or_default(),
                s.output
                    .as_ref()
                    .map(|o| String::from_utf8_lossy(o).into_owned()),
            )
        })
        .collect()
}

#[test]
fn compaction_continues_the_session() {
    // 1.0: after an auto-compaction the session goes on in a new tree (`parentUuid: null`)
    // opening with the summary; 2.x: a `compact_boundary` names the line it continues.
    // Before the fix every line before the compaction was taken for an abandoned branch.
    let before = [
        line(
            "user",
            "u1",
            None,
            &json!("Fix the parser"),
            "2025-07-01T10:00:00Z",
        ),
        // A small model's side call (a title) must not become the run's model.
        {
            let mut l = line(
                "assistant",
                "t1",
                Some("u1"),
                &json!([{"type": "text", "text": "Parser fix"}]),
                "2025-07-01T10:00:01Z",
            );
            l["message"]["model"] = json!("claude-3-5-haiku-20241022");
            l
        },
        line(
            "assistant",
            "a1",
            Some("t1"),
            &call("c1", "Read", &json!({"file_path": "p.rs"})),
            "2025-07-01T10:00:02Z",
        ),
        line(
            "user",
            "r1",
            Some("a1"),
            &result("c1", "fn parse() {}"),
            "2025-07-01T10:00:03Z",
        ),
        line(
            "assistant",
            "a2",
            Some("r1"),
            &call("c2", "Edit", &json!({"file_path": "p.rs"})),
            "2025-07-01T10:00:04Z",
        ),
        line(
            "user",
            "r2",
            Some("a2"),
            &result("c2", "edited"),
            "2025-07-01T10:00:05Z",
        ),
    ];
    let summary = "This session is being continued from a previous conversation. Summary: …";
    let mut old_style = before.to_vec();
    let mut s = line("user", "u2", None, &json!(summary), "2025-07-01T10:10:00Z");
    s["isCompactSummary"] = json!(true);
    old_style.push(s);
    old_style.push(line(
        "assistant",
        "a3",
        Some("u2"),
        &call("c3", "Bash", &json!({"command": "cargo test"})),
        "2025-07-01T10:10:01Z",
    ));
    old_style.push(line(
        "user",
        "r3",
        Some("a3"),
        &result("c3", "ok"),
        "2025-07-01T10:10:09Z",
    ));
    old_style.push(line(
        "assistant",
        "a4",
        Some("r3"),
        &json!([{"type": "text", "text": "Fixed."}]),
        "2025-07-01T10:10:10Z",
    ));

    let mut new_style = before.to_vec();
    new_style.push(
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "cb",
        "parentUuid": null, "logicalParentUuid": "r2", "sessionId": "s",
        "timestamp": "2025-07-01T10:09:59Z", "content": "Conversation compacted",
        "compactMetadata": {"trigger": "auto", "preTokens": 170_000}}),
    );
    let mut s = line(
        "user",
        "u2",
        Some("cb"),
        &json!(summary),
        "2025-07-01T10:10:00Z",
    );
    s["isCompactSummary"] = json!(true);
    new_style.push(s);
    new_style.extend(old_style[7..].iter().cloned());

    for (style, lines) in [("1.0", old_style), ("2.x", new_style)] {
        let run = parse_claude(&jsonl(&lines));
        assert_eq!(
            tools(&run),
            [
                ("Read".to_owned(), Some("fn parse() {}".to_owned())),
                ("Edit".to_owned(), Some("edited".to_owned())),
                ("Bash".to_owned(), Some("ok".to_owned())),
            ],
            "{style}"
        );
        assert_eq!(
            run.steps.len(),
            5,
            "{style}: the title, three calls, the answer"
        );
        assert!(run.forks.is_empty(), "{style}: no branch");
        assert_eq!(
            run.prompts,
            [
                ("user".to_owned(), "Fix the parser".to_owned()),
                ("compact_summary".to_owned(), summary.to_owned()),
            ],
            "{style}"
        );
        assert_eq!(
            run.model.as_ref().map(|m| m.identifier.as_str()),
            Some("claude-sonnet-4-20250514"),
            "{style}: the model of most of the session"
        );
        assert_eq!(
            run.steps[0].model.as_deref(),
            Some("claude-3-5-haiku-20241022"),
            "{style}: each step keeps the model that made it"
        );
        assert!(run.warnings.is_empty(), "{style}: {:?}", run.warnings);
        assert!(run.report.losses.is_empty(), "{style}: {:?}", run.report);
    }
}

#[test]
fn parallel_calls_pair_results_by_tool_use_id() {
    // 2.x writes each parallel call on a line of its own and hangs each result under its own
    // call's line, with hook `progress` lines between; the session continues from the last
    // result. Before the fix the results off that chain were dropped.
    let lines = [
        line(
            "user",
            "u1",
            None,
            &json!("Look at a and b"),
            "2025-07-01T10:00:00Z",
        ),
        line(
            "assistant",
            "a1",
            Some("u1"),
            &call("c1", "Read", &json!({"file_path": "a"})),
            "2025-07-01T10:00:01Z",
        ),
        json!({"type": "progress", "uuid": "p1", "parentUuid": "a1", "sessionId": "s",
               "data": {"type": "hook_progress"}, "timestamp": "2025-07-01T10:00:01Z"}),
        {
            let mut l = line(
                "assistant",
                "a2",
                Some("p1"),
                &call("c2", "Read", &json!({"file_path": "b"})),
                "2025-07-01T10:00:02Z",
            );
            l["message"]["id"] = json!("msg_a1");
            l
        },
        line(
            "user",
            "r1",
            Some("a1"),
            &result("c1", "content of a"),
            "2025-07-01T10:00:03Z",
        ),
        line(
            "user",
            "r2",
            Some("a2"),
            &result("c2", "content of b"),
            "2025-07-01T10:00:04Z",
        ),
        line(
            "assistant",
            "a3",
            Some("r2"),
            &json!([{"type": "text", "text": "Both read."}]),
            "2025-07-01T10:00:05Z",
        ),
    ];
    let run = parse_claude(&jsonl(&lines));
    assert_eq!(
        tools(&run),
        [
            ("Read".to_owned(), Some("content of a".to_owned())),
            ("Read".to_owned(), Some("content of b".to_owned())),
        ]
    );
    assert!(run.forks.is_empty());
    assert_eq!(run.report.kept, run.report.held);
    // Both calls came from one message: its usage is on the first step only.
    assert!(run.steps[0].usage.is_some());
    assert!(run.steps[1].usage.is_none());
    // Each call lasts until its own result.
    assert_eq!(run.steps[0].duration_ms, Some(2000));
    assert_eq!(run.steps[1].duration_ms, Some(2000));

    // A real 2.1 session with parallel calls: every result is paired.
    let bytes = std::fs::read(corpus(
        "marot-spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    ))
    .expect("corpus");
    let run = import::parse(RunFormat::ClaudeCode, Path::new("x.jsonl"), &bytes).expect("parses");
    let calls: Vec<&StepDraft> = run
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::ToolCall)
        .collect();
    assert_eq!(calls.len(), 23);
    assert!(calls.iter().all(|s| s.output.is_some()));
    assert!(run.forks.is_empty());
}

#[test]
fn sub_agents_nest_under_their_task_call() {
    let (dir, store) = store();
    // A sub-agent transcript on its own (all `isSidechain`) was refused before.
    let outcome = import::import_file(
        &store,
        &corpus("marot-spotter/standalone/agent-a881341.jsonl"),
        None,
    )
    .expect("a sub-agent transcript imports");
    assert_eq!(outcome.steps, 5);

    // 2.0 keeps sub-agents next to the session as agent-<id>.jsonl, named by the `agentId` of
    // the Task call's result; importing the session brings them along.
    let session = dir.path().join("session.jsonl");
    let lines = [
        line(
            "user",
            "u1",
            None,
            &json!("Explore the code"),
            "2025-07-01T10:00:00Z",
        ),
        line(
            "assistant",
            "a1",
            Some("u1"),
            &call(
                "t1",
                "Task",
                &json!({"description": "Explore", "prompt": "Find the parser", "subagent_type": "Explore"}),
            ),
            "2025-07-01T10:00:01Z",
        ),
        {
            let mut l = line(
                "user",
                "r1",
                Some("a1"),
                &result("t1", "The parser is in p.rs"),
                "2025-07-01T10:00:09Z",
            );
            l["toolUseResult"] = json!({"status": "completed", "agentId": "abc123"});
            l
        },
    ];
    std::fs::write(&session, jsonl(&lines)).expect("write");
    let mut agent_lines = vec![
        line(
            "user",
            "s1",
            None,
            &json!("Find the parser"),
            "2025-07-01T10:00:01Z",
        ),
        line(
            "assistant",
            "s2",
            Some("s1"),
            &call("g1", "Grep", &json!({"pattern": "fn parse"})),
            "2025-07-01T10:00:02Z",
        ),
        line(
            "user",
            "s3",
            Some("s2"),
            &result("g1", "p.rs:1"),
            "2025-07-01T10:00:03Z",
        ),
        line(
            "assistant",
            "s4",
            Some("s3"),
            &json!([{"type": "text", "text": "In p.rs"}]),
            "2025-07-01T10:00:04Z",
        ),
    ];
    for l in &mut agent_lines {
        l["isSidechain"] = json!(true);
        l["agentId"] = json!("abc123");
    }
    std::fs::write(dir.path().join("agent-abc123.jsonl"), jsonl(&agent_lines)).expect("write");
    let outcome = import::import_file(&store, &session, None).expect("imports");
    let main = &outcome.runs[0];
    assert_eq!(main.children.len(), 1);
    assert_eq!(main.children[0].step, Some(0));
    assert_eq!(main.children[0].stored.steps, 2);
    let run = ctx_runs::load_run_by_id(&store, &outcome.run).expect("loads");
    let link = run.manifest.child_of_step(0).expect("linked");
    assert_eq!(link.call_id.as_deref(), Some("t1"));
    assert_eq!(link.agent_id.as_deref(), Some("abc123"));
    assert_eq!(link.agent_name.as_deref(), Some("Explore"));
    assert_eq!(outcome.report.held.calls, 2);
    assert_eq!(outcome.report.kept, outcome.report.held);
    // `latest` is the session, not its sub-agent.
    assert_eq!(
        ctx_runs::resolve_run(&store, "latest").expect("latest"),
        outcome.run
    );
}

#[test]
fn progress_noise_is_skipped_silently() {
    // Before the fix each `progress` line was a warning: 1,085 to 1,705 per session.
    let path = corpus("marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl");
    let text = std::fs::read_to_string(&path).expect("corpus");
    let progress = text.matches("\"type\":\"progress\"").count();
    assert!(progress > 50, "{progress}");
    let run = import::parse(RunFormat::ClaudeCode, &path, text.as_bytes()).expect("parses");
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    // A shape ctx does not know warns once, with its count.
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    for n in 0..3 {
        lines.push(json!({"type": "hologram", "uuid": format!("h{n}"), "sessionId": "s"}));
    }
    let run = parse_claude(&jsonl(&lines));
    let warnings: Vec<String> = run.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].ends_with("3 line(s) of unknown kind `hologram` skipped"),
        "{warnings:?}"
    );
}

#[test]
fn resolver_format_keeps_arguments_observations_prompt_and_model() {
    let path = corpus("all-hands-ai-openhands/resolver-mock-output.jsonl");
    let bytes = std::fs::read(&path).expect("corpus");
    let rows = import::parse_with(
        RunFormat::OpenHands,
        &path,
        &bytes,
        &ImportOptions::default(),
    )
    .expect("parses");
    assert_eq!(rows.len(), 2, "one run per row");
    let first = &rows[0];
    assert_eq!(first.row, Some(1));
    assert!(
        first.prompts[0]
            .1
            .starts_with("Please fix the following issue")
    );
    assert_eq!(first.steps[0].tool.as_deref(), Some("run"));
    assert_eq!(first.steps[0].parameters["command"], "touch LICENSE");
    assert_eq!(
        first.steps[0].reasoning.as_deref(),
        Some(
            "Certainly! I'll add the MIT license to the repository in /workspace. Let's start by creating the license file."
        )
    );
    assert_eq!(
        first.steps[0].output.as_deref(),
        Some(&b"\r\nroot@bcd3959393a1:/workspace # "[..])
    );
    assert!(first.outputs.iter().any(|(n, _)| n == "git_patch.diff"));
    assert_eq!(first.report.kept, first.report.held);
    // --row N picks one row.
    let options = ImportOptions {
        row: Some(2),
        ..ImportOptions::default()
    };
    let second = import::parse_with(RunFormat::OpenHands, &path, &bytes, &options).expect("row");
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].steps, rows[1].steps);
    let options = ImportOptions {
        row: Some(3),
        ..ImportOptions::default()
    };
    let err =
        import::parse_with(RunFormat::OpenHands, &path, &bytes, &options).expect_err("no row 3");
    assert!(err.to_string().contains("has 2 rows; --row 3"), "{err}");
    // The model, when the row records it.
    let mut row: Value = serde_json::from_str(
        std::str::from_utf8(&bytes)
            .expect("utf8")
            .lines()
            .next()
            .expect("row"),
    )
    .expect("json");
    row["metadata"] = json!({"llm_config": {"model": "anthropic/claude-3-5-sonnet-20241022", "temperature": 0.0}});
    let run = import::parse(
        RunFormat::OpenHands,
        Path::new("o.jsonl"),
        row.to_string().as_bytes(),
    )
    .expect("parses");
    assert_eq!(
        run.model.as_ref().map(|m| m.identifier.as_str()),
        Some("anthropic/claude-3-5-sonnet-20241022")
    );
}

#[test]
fn v1_events_import_from_streams_rows_and_conversation_directories() {
    // An events.jsonl stream (a test fixture missing one action: a loss, reported).
    let path = corpus("openhands-software-agent-sdk/goal-events.jsonl");
    let bytes = std::fs::read(&path).expect("corpus");
    assert_eq!(import::detect(&bytes), Some(RunFormat::OpenHands));
    let run = import::parse(RunFormat::OpenHands, &path, &bytes).expect("parses");
    assert_eq!(run.steps.len(), 2);
    assert_eq!(run.steps[0].tool.as_deref(), Some("terminal"));
    assert_eq!(
        run.steps[0].status,
        StepStatus::Error,
        "is_error observation"
    );
    assert_eq!(
        run.report.loss_line().as_deref(),
        Some("1 of 3 tool outputs dropped (observations that answer tool calls not in the file)")
    );
    assert_eq!(
        run.model.as_ref().map(|m| m.identifier.as_str()),
        Some("litellm_proxy/minimax-m2.7")
    );
    // V1 histories in evaluation rows, with the task and the model.
    let path = corpus("openhands-benchmarks/openagentsafety-output.jsonl");
    let bytes = std::fs::read(&path).expect("corpus");
    let rows = import::parse_with(
        RunFormat::OpenHands,
        &path,
        &bytes,
        &ImportOptions::default(),
    )
    .expect("parses");
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.steps.len() == 9));
    assert!(rows[0].prompts[0].1.starts_with("# Task"));
    assert_eq!(
        rows[0].model.as_ref().map(|m| m.identifier.as_str()),
        Some("litellm_proxy/neulab/gpt-4o-2024-08-06")
    );
    // A persisted conversation directory: events/event-*.json and base_state.json.
    let dir = tempfile::tempdir().expect("tempdir");
    let conversation = dir.path().join("conv");
    std::fs::create_dir_all(conversation.join("events")).expect("mkdir");
    let row: Value = serde_json::from_str(
        std::str::from_utf8(&bytes)
            .expect("utf8")
            .lines()
            .next()
            .expect("row"),
    )
    .expect("json");
    for (n, event) in row["history"]
        .as_array()
        .expect("history")
        .iter()
        .enumerate()
    {
        let file = conversation.join("events").join(format!(
            "event-{n:05}-{}.json",
            event["id"].as_str().expect("id")
        ));
        std::fs::write(file, event.to_string()).expect("write");
    }
    std::fs::write(
        conversation.join("base_state.json"),
        json!({"id": "conv-1", "agent": {"llm": {"model": "gpt-4o", "temperature": 0.0}}})
            .to_string(),
    )
    .expect("write");
    let (_store_dir, store) = store();
    let outcome: ImportOutcome =
        ctx_runs::import_path(&store, &conversation, &ImportOptions::default())
            .expect("a conversation directory imports");
    assert_eq!(outcome.steps, 9);
    let run = ctx_runs::load_run_by_id(&store, &outcome.run).expect("loads");
    assert_eq!(run.manifest.conversation_id.as_deref(), Some("conv-1"));
    assert_eq!(
        run.manifest.model.as_ref().map(|m| m.identifier.as_str()),
        Some("gpt-4o")
    );
    assert!(run.steps.iter().all(|s| s.output_ref.is_some()));
}

#[test]
fn mini_swe_agent_trajectories_import() {
    // Refused before the fix, in every format.
    for name in [
        "gruckion-mini-swe-agent/django__django-16255.traj.json",
        "swe-agent-mini-swe-agent/github_issue.traj.json",
    ] {
        let bytes = std::fs::read(corpus(name)).expect("corpus");
        assert_eq!(
            import::detect(&bytes),
            Some(RunFormat::MiniSweAgent),
            "{name}"
        );
        let run = import::parse(RunFormat::MiniSweAgent, Path::new(name), &bytes).expect(name);
        assert!(run.steps.len() > 3, "{name}");
        assert!(run.system_prompt.is_some(), "{name}");
        assert_eq!(run.report.kept, run.report.held, "{name}");
    }
    let bytes = std::fs::read(corpus(
        "gruckion-mini-swe-agent/django__django-16255.traj.json",
    ))
    .expect("corpus");
    let run = import::parse(RunFormat::MiniSweAgent, Path::new("t"), &bytes).expect("parses");
    assert_eq!(run.environment.tool_versions["mini-swe-agent"], "1.15.0");
    assert_eq!(run.conversation_id.as_deref(), Some("django__django-16255"));
    assert!(run.outputs.iter().any(|(n, _)| n == "submission.patch"));
    assert!(run.steps.iter().all(|s| s.timestamp.is_some()));
    assert!(run.steps.iter().any(|s| s.usage.is_some()));
    // mini-swe-agent-1.1 (2.x) with a tool-calling model: calls by id, `role: tool` answers.
    let traj = json!({
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"mini_version": "2.1.0", "exit_status": "Submitted", "submission": "diff",
                 "config": {"model": {"model_name": "openai/gpt-5"}}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"false\"}"}}],
             "extra": {"timestamp": 1_750_000_000.0, "response": {"model": "gpt-5", "usage": {"prompt_tokens": 100, "completion_tokens": 20}}}},
            {"role": "tool", "tool_call_id": "call_2", "content": "", "extra": {"returncode": 1, "timestamp": 1_750_000_002.0}},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py", "extra": {"returncode": 0, "timestamp": 1_750_000_001.0}},
            {"role": "user", "content": "", "extra": {"exit_status": "Submitted", "submission": "diff"}}
        ]
    });
    let bytes = traj.to_string();
    assert_eq!(
        import::detect(bytes.as_bytes()),
        Some(RunFormat::MiniSweAgent)
    );
    let run =
        import::parse(RunFormat::MiniSweAgent, Path::new("t"), bytes.as_bytes()).expect("parses");
    assert_eq!(run.steps.len(), 2);
    assert_eq!(run.steps[0].call_id.as_deref(), Some("call_1"));
    assert_eq!(run.steps[0].output.as_deref(), Some(&b"a.py"[..]));
    assert_eq!(run.steps[0].duration_ms, Some(1000));
    assert_eq!(run.steps[1].status, StepStatus::Error);
    assert_eq!(run.steps[0].usage.map(|u| u.input_tokens), Some(100));
    assert!(run.steps[1].usage.is_none(), "one response, one usage");
    assert_eq!(run.report.kept, run.report.held);
}

#[test]
fn truncated_line_fails_the_import_and_stores_nothing() {
    let (_dir, store) = store();
    let good = std::fs::read_to_string(fixture("claude-code.jsonl")).expect("fixture");
    let cases = [
        format!("{good}{{\"type\":\"assistant\",\"message\":{{\"content\":[{{\"type\":\"te\n"),
        format!("{good}{{\"type\":\"user\",\"uuid\":\"x\0y\"}}\n"),
        format!("{good}{}\n", "garbage ".repeat(1_000_000)),
    ];
    for text in &cases {
        let err = import::import_bytes(&store, Path::new("s.jsonl"), text.as_bytes(), None)
            .expect_err("refused");
        assert!(
            err.to_string()
                .contains("is not a valid claude-code record"),
            "{err}"
        );
        assert!(err.to_string().len() < 400, "one short line: {err}");
    }
    assert!(ctx_runs::list_runs(&store).expect("list").is_empty());
    // A log whose lines hold no step is not stored either.
    let prompt_only = line("user", "u1", None, &json!("hello"), "2025-07-01T10:00:00Z");
    let err = import::import_bytes(
        &store,
        Path::new("p.jsonl"),
        jsonl(&[prompt_only]).as_bytes(),
        None,
    )
    .expect_err("no step");
    assert!(err.to_string().contains("holds no step"), "{err}");
    assert!(ctx_runs::list_runs(&store).expect("list").is_empty());
}

#[test]
fn output_drift_types_a_changed_step_output() {
    let (_dir, store) = store();
    let build = |output: &str, answer: &str| {
        let mut builder = RunBuilder::new("test");
        let mut read = StepDraft::tool_call("Read", json!({"file_path": "a.rs"}));
        read.output = Some(output.as_bytes().to_vec());
        builder.push_step(&store, read).expect("step");
        builder
            .push_step(&store, StepDraft::model_call(Some("m"), answer))
            .expect("step");
        let id = builder.finish(&store).expect("finish");
        ctx_runs::load_run_by_id(&store, &id).expect("load")
    };
    let base = build("fn a() {}", "Done.");
    let kinds = |other: &ctx_runs::Run| -> Vec<(DriftKind, Option<u64>)> {
        ctx_runs::diff_runs(&base, other)
            .drift
            .iter()
            .map(|d| (d.kind, d.step))
            .collect()
    };
    // A tool's output changed: output drift (it was reasoning drift before the fix).
    assert_eq!(
        kinds(&build("fn a() { 1 }", "Done.")),
        [(DriftKind::OutputDrift, Some(0))]
    );
    // The model's own text changed: reasoning drift.
    assert_eq!(
        kinds(&build("fn a() {}", "Fixed.")),
        [(DriftKind::ReasoningDrift, Some(1))]
    );
}

fn spans(otel: &Value) -> &Vec<Value> {
    otel["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .expect("spans")
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .expect("attributes")
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn nanos(span: &Value, key: &str) -> Option<u64> {
    span[key].as_str().map(|t| t.parse().expect("number"))
}

#[test]
fn otel_times_and_usage_come_from_the_transcript() {
    let (_dir, store) = store();
    let outcome = ctx_runs::import_path(
        &store,
        &corpus("jimmc414-cctrace/main.jsonl"),
        &ImportOptions::default(),
    )
    .expect("imports");
    let tree = ctx_runs::load_run_tree(&store, &outcome.run).expect("loads");
    let otel = ctx_runs::export_otel_tree(&tree);
    let tool_spans: Vec<&Value> = spans(&otel)
        .iter()
        .filter(|s| {
            attr(s, "gen_ai.operation.name") == Some(&json!({"stringValue": "execute_tool"}))
        })
        .collect();
    assert_eq!(tool_spans.len(), 19);
    // Before the fix every tool span but one lasted zero nanoseconds.
    let lasting = tool_spans
        .iter()
        .filter(|s| nanos(s, "endTimeUnixNano") > nanos(s, "startTimeUnixNano"))
        .count();
    assert_eq!(lasting, tool_spans.len());
    // Token usage, as the GenAI conventions name it, where the transcript records it.
    let with_usage: Vec<&Value> = spans(&otel)
        .iter()
        .filter(|s| attr(s, "gen_ai.usage.input_tokens").is_some())
        .collect();
    assert!(with_usage.len() > 10, "{}", with_usage.len());
    for span in &with_usage {
        let input = attr(span, "gen_ai.usage.input_tokens").expect("input");
        assert!(input["intValue"].as_str().is_some(), "{input}");
        assert!(attr(span, "gen_ai.usage.output_tokens").is_some());
    }
    // The first step's usage is its message's final one (2.x writes a message over several
    // lines, the first with a streaming count), input counting the cached tokens too.
    let text = std::fs::read_to_string(corpus("jimmc414-cctrace/main.jsonl")).expect("corpus");
    let assistant: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .filter(|v| v["type"] == "assistant")
        .collect();
    let id = &assistant[0]["message"]["id"];
    let last = assistant
        .iter()
        .rev()
        .find(|v| &v["message"]["id"] == id)
        .expect("a line");
    let recorded = &last["message"]["usage"];
    let count = |key: &str| recorded[key].as_u64().expect("count");
    let usage = tree.run.steps[0].usage.expect("usage");
    assert_eq!(
        usage.input_tokens,
        count("input_tokens")
            + count("cache_read_input_tokens")
            + count("cache_creation_input_tokens")
    );
    assert_eq!(usage.output_tokens, count("output_tokens"));
    assert_ne!(
        assistant[0]["message"]["usage"]["output_tokens"], recorded["output_tokens"],
        "the first line holds a streaming count"
    );
    // SWE-agent records no times: its spans carry none (they started at Unix 0 before).
    let swe = ctx_runs::import_path(
        &store,
        &corpus("swe-agent/pydicom__pydicom-1458.traj"),
        &ImportOptions::default(),
    )
    .expect("imports");
    let run = ctx_runs::load_run_by_id(&store, &swe.run).expect("loads");
    let otel = ctx_runs::export_otel(&run);
    assert!(
        spans(&otel)
            .iter()
            .all(|s| s.get("startTimeUnixNano").is_none() && s.get("endTimeUnixNano").is_none()),
        "{otel}"
    );
}

#[test]
fn a_ctx_export_carries_nested_runs_and_an_edited_one_stores_nothing() {
    let (_dir, first) = store();
    let session = corpus("marot-spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl");
    let outcome =
        ctx_runs::import_path(&first, &session, &ImportOptions::default()).expect("imports");
    let run = ctx_runs::load_run_by_id(&first, &outcome.run).expect("loads");
    let export = ctx_runs::export_ctx(&first, &run).expect("export");
    assert_eq!(export.children.len(), 1);
    let bytes = serde_json::to_vec(&export).expect("json");
    // Into a fresh store: the same ids, the nested run included.
    let (_other_dir, other) = store();
    let again = import::import_bytes(&other, Path::new("e.json"), &bytes, None).expect("imports");
    assert_eq!(again.run, outcome.run);
    let tree = ctx_runs::load_run_tree(&other, &again.run).expect("the tree loads");
    assert_eq!(tree.children.len(), 1);
    // A nested run, or the run itself, edited by hand: refused, and nothing at all is stored
    // (the nested runs are checked and the run is checked before anything is written).
    for edit in [
        "/children/0/steps/0/deterministic",
        "/steps/0/deterministic",
    ] {
        let mut edited: Value = serde_json::from_slice(&bytes).expect("json");
        let flag = edited.pointer_mut(edit).expect("the field");
        *flag = json!(!flag.as_bool().expect("a flag"));
        let (_third_dir, third) = store();
        let err = import::import_bytes(
            &third,
            Path::new("e.json"),
            &serde_json::to_vec(&edited).expect("json"),
            None,
        )
        .expect_err("refused");
        assert!(
            err.to_string().contains("the export was edited"),
            "{edit}: {err}"
        );
        assert!(
            ctx_runs::list_runs(&third).expect("list").is_empty(),
            "{edit}"
        );
        let objects = third.dir().join("objects/sha256");
        let written = std::fs::read_dir(&objects).map_or(0, Iterator::count);
        assert_eq!(written, 0, "{edit}: no object written");
    }
}
