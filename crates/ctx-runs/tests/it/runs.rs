//! Library tests: the step chain, loading checks, the adapters on their fixtures, detection,
//! id resolution and diff.

use std::path::{Path, PathBuf};

use ctx_runs::import::{self, ParsedRun, RunFormat};
use ctx_runs::{
    DriftKind, ModelInfo, RunBuilder, RunError, RunManifest, Step, StepDraft, StepKind, StepStatus,
};
use ctx_store::Store;
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn parse_fixture(name: &str, format: RunFormat) -> ParsedRun {
    let bytes = std::fs::read(fixture(name)).expect("fixture");
    import::parse(format, &fixture(name), &bytes).expect("parses")
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::init(&dir.path().join(".ctx")).expect("store");
    (dir, store)
}

fn read_step(name: &str, args: serde_json::Value, output: &str) -> StepDraft {
    let mut step = StepDraft::tool_call(name, args);
    step.output = Some(output.as_bytes().to_vec());
    step.deterministic = true;
    step
}

fn three_steps(store: &Store, middle_path: &str) -> ctx_runs::RunId {
    let mut builder = RunBuilder::new("test");
    builder.add_prompt(store, "user", "Fix it").expect("prompt");
    builder
        .push_step(store, read_step("Read", json!({"file_path": "a.rs"}), "a"))
        .expect("step");
    builder
        .push_step(
            store,
            read_step("Read", json!({"file_path": middle_path}), "b"),
        )
        .expect("step");
    builder
        .push_step(store, StepDraft::model_call(Some("m"), "done"))
        .expect("step");
    builder.finish(store).expect("finish")
}

#[test]
fn steps_form_a_chain_and_editing_one_changes_every_later_step_and_the_id() {
    let (_dir, store) = store();
    let id = three_steps(&store, "b.rs");
    let run = ctx_runs::load_run_by_id(&store, &id).expect("loads");
    assert_eq!(run.manifest.id(), id);
    assert_eq!(run.steps[0].prev, None);
    for i in 1..3 {
        assert_eq!(run.steps[i].prev, Some(run.manifest.steps[i - 1]));
        assert_eq!(run.steps[i].index, i as u64);
        assert_eq!(run.steps[i].hash(), run.manifest.steps[i]);
    }
    let edited = three_steps(&store, "c.rs");
    let other = ctx_runs::load_run_by_id(&store, &edited).expect("loads");
    assert_ne!(edited, id);
    assert_eq!(other.manifest.steps[0], run.manifest.steps[0]);
    assert_ne!(other.manifest.steps[1], run.manifest.steps[1]);
    // Step 2 has the same content but a different predecessor, so a different hash.
    assert_eq!(other.steps[2].output_ref, run.steps[2].output_ref);
    assert_ne!(other.manifest.steps[2], run.manifest.steps[2]);
    // `latest` follows the last finished run; the listing has both, newest first.
    assert_eq!(
        ctx_runs::resolve_run(&store, "latest").expect("latest"),
        edited
    );
    let listed: Vec<_> = ctx_runs::list_runs(&store)
        .expect("list")
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(listed, [edited, id]);
}

#[test]
fn loading_refuses_a_reordered_chain_and_non_canonical_objects() {
    let (_dir, store) = store();
    let id = three_steps(&store, "b.rs");
    let run = ctx_runs::load_run_by_id(&store, &id).expect("loads");

    let mut swapped: RunManifest = run.manifest.clone();
    swapped.steps.swap(0, 1);
    let swapped_id = store
        .objects()
        .put(&swapped.canonical_bytes())
        .expect("put");
    match ctx_runs::load_run_by_id(&store, &swapped_id) {
        Err(RunError::BrokenChain { index: 0, .. }) => {}
        other => panic!("expected a broken chain at step 0, got {other:?}"),
    }

    let pretty = serde_json::to_vec_pretty(&run.steps[0]).expect("json");
    let pretty_hash = store.objects().put(&pretty).expect("put");
    let mut loose = run.manifest.clone();
    loose.steps[0] = pretty_hash;
    let loose_id = store.objects().put(&loose.canonical_bytes()).expect("put");
    let err = ctx_runs::load_run_by_id(&store, &loose_id).expect_err("non-canonical");
    assert!(err.to_string().contains("step 0"), "{err}");
    assert!(err.to_string().contains("not in canonical form"), "{err}");

    let mut extra: serde_json::Value = serde_json::to_value(&run.steps[0]).expect("json");
    extra["surprise"] = json!(1);
    let extra_hash = store
        .objects()
        .put(&ctx_core::canonical::to_vec(&extra).expect("canonical"))
        .expect("put");
    let mut unknown = run.manifest.clone();
    unknown.steps[0] = extra_hash;
    let unknown_id = store
        .objects()
        .put(&unknown.canonical_bytes())
        .expect("put");
    let err = ctx_runs::load_run_by_id(&store, &unknown_id).expect_err("unknown field");
    assert!(
        err.to_string().contains("unknown field `surprise`"),
        "{err}"
    );
}

#[test]
fn claude_code_transcripts_become_prompts_model_and_tool_steps() {
    let run = parse_fixture("claude-code.jsonl", RunFormat::ClaudeCode);
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    assert_eq!(
        run.conversation_id.as_deref(),
        Some("b3f4c2a1-6d2e-4f7a-8c9b-0e1d2f3a4b5c")
    );
    assert_eq!(run.created.as_deref(), Some("2025-07-01T10:00:00.000Z"));
    assert_eq!(
        run.model.as_ref().map(|m| m.identifier.as_str()),
        Some("claude-sonnet-4-20250514")
    );
    assert_eq!(run.environment.tool_versions["claude-code"], "1.0.51");
    assert_eq!(run.prompts.len(), 1);
    let labels: Vec<(StepKind, Option<&str>)> = run
        .steps
        .iter()
        .map(|s| (s.kind, s.tool.as_deref()))
        .collect();
    assert_eq!(
        labels,
        [
            (StepKind::ModelCall, None),
            (StepKind::ToolCall, Some("Read")),
            (StepKind::ToolCall, Some("Grep")),
            (StepKind::ToolCall, Some("Edit")),
            (StepKind::ToolCall, Some("Bash")),
            (StepKind::ModelCall, None),
        ]
    );
    assert_eq!(
        run.steps[0].reasoning.as_deref(),
        Some("I should look at the failing test first, then the parser.")
    );
    let read = &run.steps[1];
    assert_eq!(read.call_id.as_deref(), Some("toolu_01Read"));
    assert_eq!(read.parameters, json!({"file_path": "src/range.rs"}));
    assert!(read.deterministic);
    assert!(
        String::from_utf8_lossy(read.output.as_deref().expect("output")).contains("split_once")
    );
    // Block-list results are joined text.
    assert_eq!(
        run.steps[2].output.as_deref(),
        Some(&b"tests/range.rs:5:    assert_eq!(parse_range(\"3-7\"), (3, 7));"[..])
    );
    assert_eq!(
        run.steps[3].reasoning.as_deref(),
        Some("The upper bound is inclusive, so the `- 1` is the bug.")
    );
    assert!(!run.steps[4].deterministic, "Bash is not deterministic");
    assert_eq!(run.steps[4].status, StepStatus::Ok);
    assert_eq!(
        run.steps[4].timestamp.as_deref(),
        Some("2025-07-01T10:00:08.000Z")
    );
}

/// Issue 33 changed this: a line that is not a JSON object fails the file unless
/// `skip_bad_lines`; a result whose call is not in the file is a loss, not a warning.
#[test]
fn claude_code_problems_are_warnings_with_line_numbers() {
    let text = [
        r#"{"type":"user","sessionId":"s","uuid":"1","message":{"role":"user","content":"go"}}"#,
        "not json",
        r#"{"type":"assistant","uuid":"2","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}},{"type":"image"}]}}"#,
        r#"{"type":"user","uuid":"3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}}"#,
        "[1,2]",
    ]
    .join("\n");
    let err = import::parse(RunFormat::ClaudeCode, Path::new("s.jsonl"), text.as_bytes())
        .expect_err("a bad line fails the file");
    assert!(
        err.to_string()
            .starts_with("`s.jsonl` line 2 is not a valid claude-code record: not valid JSON"),
        "{err}"
    );
    let options = import::ImportOptions {
        skip_bad_lines: true,
        ..import::ImportOptions::default()
    };
    let run = import::parse_with(
        RunFormat::ClaudeCode,
        Path::new("s.jsonl"),
        text.as_bytes(),
        &options,
    )
    .expect("the other lines are valid")
    .remove(0);
    let warnings: Vec<String> = run.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 4, "{warnings:#?}");
    assert!(
        warnings[0].starts_with("line 2: not valid JSON"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings
            .iter()
            .any(|w| w == "line 3: unknown content block `image` skipped")
    );
    assert!(warnings.iter().any(
        |w| w == "line 3: tool_use `t1` has no tool_result in the file; its step has no output"
    ));
    assert!(warnings.iter().any(|w| w == "line 5: not a JSON object"));
    assert_eq!(run.report.skipped_lines, 2);
    assert_eq!(
        run.report.loss_line().as_deref(),
        Some("1 of 1 tool outputs dropped (they answer tool calls that are not in the file)")
    );
    assert_eq!(run.steps.len(), 1);
    assert_eq!(run.steps[0].output, None);
}

#[test]
fn openhands_events_pair_actions_with_their_observations() {
    let run = parse_fixture("openhands.json", RunFormat::OpenHands);
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    assert_eq!(run.prompts.len(), 1);
    assert!(
        run.prompts[0]
            .1
            .starts_with("The /health endpoint returns 500")
    );
    assert_eq!(
        run.model.as_ref().map(|m| m.identifier.as_str()),
        Some("claude-3-5-sonnet-20241022")
    );
    let tools: Vec<Option<&str>> = run.steps.iter().map(|s| s.tool.as_deref()).collect();
    assert_eq!(
        tools,
        [
            Some("execute_bash"),
            Some("str_replace_editor"),
            Some("str_replace_editor"),
            Some("execute_bash"),
            None,
            Some("finish"),
        ]
    );
    let grep = &run.steps[0];
    assert_eq!(grep.call_id.as_deref(), Some("toolu_vrtx_01"));
    assert_eq!(
        grep.reasoning.as_deref(),
        Some("Let me find the health handler.")
    );
    assert!(
        grep.parameters.get("thought").is_none(),
        "the thought is reasoning, not an argument"
    );
    assert_eq!(grep.parameters["command"], "grep -rn \"def health\" app/");
    assert_eq!(
        grep.output.as_deref(),
        Some(&b"app/routes.py:41:def health():"[..])
    );
    assert!(run.steps[1].deterministic, "a read is deterministic");
    assert!(!run.steps[2].deterministic, "an edit is not");
    assert_eq!(run.steps[4].kind, StepKind::ModelCall);
    assert_eq!(run.created.as_deref(), Some("2025-06-12T14:03:11.020441"));
}

#[test]
fn swe_agent_trajectories_become_tool_steps_with_the_submission_as_output() {
    let run = parse_fixture("swe-agent.traj", RunFormat::SweAgent);
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    assert!(
        run.system_prompt
            .as_deref()
            .expect("system")
            .starts_with("SETTING:")
    );
    assert_eq!(
        run.prompts.len(),
        1,
        "only the task, not later observations"
    );
    let model = run.model.as_ref().expect("model");
    assert_eq!(model.identifier, "gpt-4o-2024-08-06");
    assert_eq!(model.parameters["temperature"], json!(0.0));
    let tools: Vec<&str> = run.steps.iter().filter_map(|s| s.tool.as_deref()).collect();
    assert_eq!(tools, ["find_file", "open", "edit", "python", "submit"]);
    assert_eq!(run.steps[0].duration_ms, Some(214));
    assert_eq!(
        run.steps[0].parameters,
        json!({"command": "find_file \"tokenizer.py\""})
    );
    assert_eq!(
        run.steps[2].reasoning.as_deref(),
        Some("split(\" \") keeps empty strings for repeated spaces; split() does not.")
    );
    assert_eq!(run.outputs.len(), 1);
    assert_eq!(run.outputs[0].0, "submission.patch");
    assert_eq!(run.environment.tool_versions["swe-agent"], "1.0.1");

    let broken =
        json!({"trajectory": [{"observation": "no action"}, 7, {"action": "ls"}]}).to_string();
    let run = import::parse(RunFormat::SweAgent, Path::new("x.traj"), broken.as_bytes())
        .expect("one valid");
    let warnings: Vec<String> = run.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "trajectory[0]: no `action` string; skipped",
            "trajectory[1]: not a JSON object"
        ]
    );
}

#[test]
fn formats_are_detected_from_their_shape() {
    for (name, format) in [
        ("claude-code.jsonl", RunFormat::ClaudeCode),
        ("openhands.json", RunFormat::OpenHands),
        ("swe-agent.traj", RunFormat::SweAgent),
    ] {
        let bytes = std::fs::read(fixture(name)).expect("fixture");
        assert_eq!(import::detect(&bytes), Some(format), "{name}");
    }
    for junk in [&b""[..], b"hello", b"{\"a\":1}", b"[1,2,3]", b"\xff\xfe"] {
        assert_eq!(import::detect(junk), None, "{junk:?}");
    }
    let err = "yaml".parse::<import::FormatChoice>().expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "unknown run format `yaml`; use one of: auto, ctx, claude-code, openhands, swe-agent, mini-swe-agent"
    );
}

#[test]
fn ids_resolve_by_ref_full_id_and_prefix() {
    let (_dir, store) = store();
    let id = three_steps(&store, "b.rs");
    let hex = id.to_hex();
    for input in [
        id.to_string(),
        hex.clone(),
        hex[..4].to_owned(),
        format!("sha256:{}", &hex[..10]),
        "latest".to_owned(),
    ] {
        assert_eq!(
            ctx_runs::resolve_run(&store, &input).expect("resolves"),
            id,
            "{input}"
        );
    }
    ctx_runs::tag_run(&store, "v1.0", &id).expect("tag");
    assert_eq!(ctx_runs::resolve_run(&store, "v1.0").expect("tag"), id);
    for bad in ["v1.0/x", "sha256x", "cafe", ""] {
        assert!(ctx_runs::tag_run(&store, bad, &id).is_err(), "{bad}");
    }
    assert!(matches!(
        ctx_runs::resolve_run(&store, &hex[..3]),
        Err(RunError::BadRunId { .. })
    ));
    let other = if hex.starts_with('0') { "ffff" } else { "0000" };
    assert!(matches!(
        ctx_runs::resolve_run(&store, other),
        Err(RunError::NoSuchRun { .. })
    ));
}

#[test]
fn diff_reports_model_parameters_and_missing_steps() {
    let (_dir, store) = store();
    let build = |temperature: f64, steps: usize| {
        let mut builder = RunBuilder::new("test");
        builder.set_model(Some(ModelInfo {
            identifier: "m".to_owned(),
            provider: None,
            parameters: [("temperature".to_owned(), json!(temperature))].into(),
        }));
        for i in 0..steps {
            builder
                .push_step(&store, read_step("Read", json!({"i": i}), "x"))
                .expect("step");
        }
        let id = builder.finish(&store).expect("finish");
        ctx_runs::load_run_by_id(&store, &id).expect("load")
    };
    let a = build(0.0, 2);
    let b = build(0.7, 3);
    let diff = ctx_runs::diff_runs(&a, &b);
    let kinds: Vec<(DriftKind, Option<u64>, &str)> = diff
        .drift
        .iter()
        .map(|d| (d.kind, d.step, d.field.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (DriftKind::ParamDrift, None, "model"),
            (DriftKind::ToolDrift, Some(2), "step"),
        ]
    );
    assert_eq!(diff.drift[1].a, None);
    assert_eq!(diff.drift[1].b, Some(b.manifest.steps[2]));
    assert!(!ctx_runs::diff_runs(&a, &a).differs());
}

#[test]
fn a_step_round_trips_through_canonical_json_with_otel_names() {
    let step = Step {
        index: 0,
        prev: None,
        kind: StepKind::ToolCall,
        tool: Some("Read".to_owned()),
        call_id: Some("c1".to_owned()),
        model: None,
        parameters: json!({"b": 1, "a": 2}),
        output_ref: None,
        reasoning_ref: None,
        deterministic: true,
        status: StepStatus::Ok,
        timestamp: None,
        duration_ms: Some(5),
        usage: None,
    };
    let text = ctx_core::canonical::to_string(&step).expect("canonical");
    assert_eq!(
        text,
        r#"{"deterministic":true,"duration_ms":5,"gen_ai.operation.name":"execute_tool","gen_ai.tool.call.arguments":{"a":2,"b":1},"gen_ai.tool.call.id":"c1","gen_ai.tool.name":"Read","index":0,"prev":null}"#
    );
    let back: Step = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, step);
}
