//! `ctx run import` of real agents' transcripts end to end (issue 33): a Claude Code session
//! directory with its sub-agents in `run show` and in the OTel export, losses refused with one
//! line, rows, replay of an imported run, and malformed logs refused without a trace.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{Env, snapshot};
use serde_json::{Value, json};

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/transcripts")
        .join(name)
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ctx-runs/tests/fixtures")
        .join(name)
}

fn init() -> Env {
    let env = Env::new();
    env.run(&["init"]).ok();
    env
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .expect("attributes")
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[test]
fn a_session_directory_brings_its_sub_agents_into_show_and_otel() {
    let env = init();
    let dir = corpus("marot-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46");
    let import = env.run(&["--json", "run", "import", path(&dir)]);
    import.ok();
    let report = import.json();
    assert_eq!(report["format"], "claude-code");
    let main = &report["runs"][0];
    assert_eq!(
        main["children"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(main["children"][0]["kind"], "subagent");
    assert_eq!(main["children"][0]["step"], 6);
    assert_eq!(report["report"]["held"], report["report"]["kept"]);
    assert!(import.stderr.is_empty(), "no warning: {}", import.stderr);

    // run show: the sub-agent's steps under the Task call that started it.
    let human = env.run(&["run", "show", "latest", "--format", "human"]);
    human.ok();
    let lines: Vec<&str> = human.stdout.lines().collect();
    let task = lines
        .iter()
        .position(|l| l.contains("tool Task"))
        .expect("the Task step");
    assert!(
        lines[task + 1].contains("↳ subagent Explore run sha256:"),
        "{}",
        human.stdout
    );
    assert!(
        lines[task + 2].starts_with("          0 chat"),
        "nested steps are indented: {}",
        human.stdout
    );
    let shown = env.run(&["run", "show", "latest"]).json();
    let child = &shown["run"]["children"][0];
    assert_eq!(child["kind"], "subagent");
    assert_eq!(child["step"], 6);
    assert_eq!(child["gen_ai.agent.name"], "Explore");
    assert_eq!(child["run"], main["children"][0]["run"]);
    let nested = env
        .run(&["run", "show", child["run"].as_str().expect("id")])
        .json();
    assert_eq!(
        nested["steps"].as_array().map(|s| s.len() as u64),
        main["children"][0]["steps"].as_u64()
    );

    // OTel: the sub-agent's spans nest under the Task step's span, in the same trace.
    let otel = env.run(&["run", "export", "latest", "--format", "otel"]);
    otel.ok();
    let otel = otel.json();
    let spans = otel["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .expect("spans");
    let task_span = spans
        .iter()
        .find(|s| s["name"] == "execute_tool Task")
        .expect("the Task span");
    let agents: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "invoke_agent")
        .collect();
    assert_eq!(agents.len(), 2);
    let nested = agents
        .iter()
        .find(|s| s.get("parentSpanId").is_some())
        .expect("the sub-agent's span");
    assert_eq!(nested["parentSpanId"], task_span["spanId"]);
    assert_eq!(nested["traceId"], task_span["traceId"]);
    assert_eq!(
        attr(nested, "gen_ai.agent.name"),
        Some(&json!({"stringValue": "Explore"}))
    );
    let nested_steps = spans
        .iter()
        .filter(|s| s["parentSpanId"] == nested["spanId"])
        .count();
    assert_eq!(
        nested_steps as u64,
        main["children"][0]["steps"].as_u64().expect("steps")
    );
    // The sub-agent ran inside the Task call's time.
    let time = |s: &Value, k: &str| s[k].as_str().expect("time").parse::<u64>().expect("n");
    assert!(time(nested, "startTimeUnixNano") >= time(task_span, "startTimeUnixNano"));
    assert!(time(nested, "endTimeUnixNano") <= time(task_span, "endTimeUnixNano"));

    // The ctx export carries the nested run: the round trip keeps every id.
    let export = env.run(&["run", "export", "latest", "--format", "ctx"]);
    export.ok();
    let file = env.work().join("session.ctx.json");
    fs::write(&file, &export.stdout).expect("write");
    let other = init();
    let again = other.run(&["--json", "run", "import", path(&file)]);
    again.ok();
    assert_eq!(again.json()["run"], shown["run"]["id"]);
    assert_eq!(
        other.run(&["run", "show", "latest"]).stdout,
        env.run(&["run", "show", "latest"]).stdout
    );
    other.run(&["store", "verify"]).ok();
}

#[test]
fn a_loss_exits_1_with_one_line_and_stores_nothing_unless_lossy() {
    let env = init();
    let objects = env.work().join(".ctx/objects");
    let before = snapshot(&objects);
    let file = corpus("openhands-software-agent-sdk/goal-events.jsonl");
    let refused = env.run(&["run", "import", path(&file)]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "1 of 3 tool outputs dropped (observations that answer tool calls not in the file); nothing imported (pass --lossy to import what was kept)"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(snapshot(&objects), before, "nothing stored");
    let kept = env.run(&["run", "import", path(&file), "--lossy"]);
    kept.ok();
    assert!(
        kept.stdout
            .contains("kept 2 of 2 tool calls, 2 of 3 tool outputs, 0 of 0 messages; 1 of 3 tool outputs dropped"),
        "{}",
        kept.stdout
    );
}

#[test]
fn rows_of_an_output_file_are_runs_of_their_own() {
    let env = init();
    let file = corpus("all-hands-ai-openhands/resolver-mock-output.jsonl");
    let all = env.run(&["--json", "run", "import", path(&file)]);
    all.ok();
    let report = all.json();
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(2));
    assert_eq!(report["runs"][1]["row"], 2);
    // `latest` (and --tag) name the first row's run.
    assert_eq!(report["run"], report["runs"][0]["run"]);
    assert_eq!(
        env.run(&["run", "show", "latest"]).json()["run"]["id"],
        report["run"]
    );
    let one = env.run(&["--json", "run", "import", path(&file), "--row", "2"]);
    one.ok();
    assert_eq!(one.json()["run"], report["runs"][1]["run"]);
    env.run(&["run", "import", path(&file), "--row", "3"])
        .bad_input("has 2 rows; --row 3 must be between 1 and 2");
}

#[test]
fn replay_of_an_imported_run_is_not_replayable() {
    // Before the fix: every step skipped ("ctx has no tool Read to re-run"), fidelity exact,
    // exit 0.
    let env = init();
    env.run(&["run", "import", path(&fixture("claude-code.jsonl"))])
        .ok();
    let replay = env.run(&["run", "replay", "latest", "--json", "--steps"]);
    assert_eq!(replay.code, 1, "{}", replay.stderr);
    let report = replay.json();
    assert_eq!(report["fidelity"], "not_replayable", "{report}");
    assert_eq!(report["exact"], 0);
    assert!(
        report["not_replayable"].as_u64().expect("count") >= 2,
        "{report}"
    );
    let human = env.run(&["run", "replay", "latest"]);
    assert_eq!(human.code, 1);
    assert!(
        human.stdout.contains(": not replayable"),
        "{}",
        human.stdout
    );
}

#[test]
fn malformed_logs_are_refused_with_one_line_and_exit_2() {
    let env = init();
    let objects = env.work().join(".ctx/objects");
    let before = snapshot(&objects);
    let cases: [(&str, &str, &str); 4] = [
        (
            "broken.json",
            "[{\"action\": \"run\", ",
            "not a valid openhands file",
        ),
        (
            "broken.traj.json",
            "{\"messages\": [",
            "not a valid mini-swe-agent file",
        ),
        (
            "nul.jsonl",
            "{\"type\":\"user\",\"sessionId\":\"s\",\"uuid\":\"a\u{0}\"}\n",
            "line 1 is not a valid claude-code record",
        ),
        (
            "events.jsonl",
            "{\"kind\":\"ActionEvent\",\"id\":\"1\",\"source\":\"agent\"}\n{\"kind\":\n",
            "line 2 is not a valid openhands record: truncated JSON",
        ),
    ];
    for (name, text, message) in cases {
        fs::write(env.work().join(name), text).expect("write");
        let from = if name.ends_with(".traj.json") {
            "mini-swe-agent"
        } else if name == "nul.jsonl" {
            "claude-code"
        } else {
            "openhands"
        };
        let run = env.run(&["run", "import", name, "--from", from]);
        run.bad_input(message);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
    assert_eq!(snapshot(&objects), before, "nothing stored");
    assert_eq!(env.run(&["--json", "run", "log"]).json()["runs"], json!([]));
}

/// An imported transcript is redacted as it is stored: a secret the agent was told, typed
/// into a command, or read from a file is in no stored object and in no answer.
#[test]
fn an_imported_transcript_is_stored_redacted() {
    let env = init();
    let aws = "AKIAZ4Q7XK2M5TRB3VWP";
    let github = "ghp_R8kXw2QpL5vN9mT3yB7cD1fG4hJ6sA0eZuIo";
    let body = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbtPkZc4dd7LH6Hy";
    let pem = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\n{body}\n-----END RSA PRIVATE KEY-----\n"
    );
    let lines = [
        json!({"type":"user","timestamp":"2025-12-24T10:00:00.000Z","sessionId":"s","cwd":"/p","message":{"role":"user","content":format!("deploy with aws_access_key_id={aws}")},"uuid":"u1"}),
        json!({"type":"assistant","timestamp":"2025-12-24T10:00:05.000Z","sessionId":"s","parentUuid":"u1","message":{"role":"assistant","model":"claude-sonnet-4","content":[{"type":"text","text":"Reading the key."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":format!("GITHUB_TOKEN={github} gh release list")}}]},"uuid":"a1"}),
        json!({"type":"user","timestamp":"2025-12-24T10:00:06.000Z","sessionId":"s","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":pem}]},"uuid":"u2"}),
    ];
    let file = env.work().join("session.jsonl");
    fs::write(
        &file,
        lines
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
            + "\n",
    )
    .expect("write");
    env.run(&["run", "import", path(&file)]).ok();
    let shown = env.run(&["run", "show", "latest", "--json"]);
    let exported = env.run(&["run", "export", "--format", "ctx", "latest"]);
    for (what, text) in [
        ("show", shown.ok().stdout.clone()),
        ("export", exported.ok().stdout.clone()),
    ] {
        for secret in [aws, github, body] {
            assert!(!text.contains(secret), "{what} shows {secret}:\n{text}");
        }
    }
    // Nor does any object of the store hold them.
    for (name, bytes) in snapshot(&env.work().join(".ctx/objects")) {
        let text = String::from_utf8_lossy(&bytes);
        for secret in [aws, github, body] {
            assert!(!text.contains(secret), "{} holds {secret}", name.display());
        }
    }
}
