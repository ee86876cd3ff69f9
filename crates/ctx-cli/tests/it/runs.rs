//! `ctx run …` end to end: import of every adapter, show, log, diff (golden, one case per
//! drift type), fork, export, tamper detection, bad input and determinism.
//!
//! Set `CTX_UPDATE_GOLDEN=1` to rewrite the golden files in tests/golden/runs.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{Env, snapshot};
use serde_json::{Value, json};

const FIXTURES: [(&str, &str, u64); 3] = [
    ("claude-code.jsonl", "claude-code", 6),
    ("openhands.json", "openhands", 6),
    ("swe-agent.traj", "swe-agent", 5),
];

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

/// Imports `path` and returns the run id.
fn import(env: &Env, path: &Path, from: &str) -> String {
    let run = env.run(&[
        "--json",
        "run",
        "import",
        path.to_str().expect("utf8"),
        "--from",
        from,
    ]);
    run.ok();
    run.json()["run"].as_str().expect("run id").to_owned()
}

fn write(env: &Env, name: &str, content: &str) -> PathBuf {
    let path = env.work().join(name);
    fs::write(&path, content).expect("write");
    path
}

#[test]
fn every_adapter_round_trips_through_the_ctx_export_with_the_same_id() {
    let env = init();
    for (name, format, steps) in FIXTURES {
        let imported = env.run(&[
            "--json",
            "run",
            "import",
            fixture(name).to_str().expect("utf8"),
        ]);
        imported.ok();
        let report = imported.json();
        assert_eq!(report["format"], format, "auto-detected");
        assert_eq!(report["steps"], steps, "{name}");
        assert_eq!(report["warnings"], json!([]), "{name}");
        let id = report["run"].as_str().expect("id").to_owned();

        let show = env.run(&["run", "show", &id]);
        show.ok();
        let shown = show.json();
        assert_eq!(shown["run"]["id"], id.as_str(), "show is JSON by default");
        assert_eq!(shown["run"]["source"], format);
        assert_eq!(
            shown["steps"].as_array().expect("steps").len() as u64,
            steps
        );

        let export = env.run(&["run", "export", &id, "--format", "ctx"]);
        export.ok();
        let path = write(&env, &format!("{format}.ctx.json"), &export.stdout);
        // A fresh store: the run comes back from the export alone, with the same id.
        let other = init();
        assert_eq!(import(&other, &path, "auto"), id, "{name}");
        assert_eq!(
            other.run(&["run", "show", &id]).stdout,
            show.stdout,
            "{name}: byte-identical show after the round trip"
        );
        assert_eq!(
            other.run(&["run", "export", &id, "--format", "ctx"]).stdout,
            export.stdout
        );
        // Re-importing into the same store changes nothing.
        assert_eq!(import(&env, &path, "ctx"), id);
    }
    let log = env.run(&["run", "log", "--oneline"]);
    log.ok();
    assert_eq!(log.stdout.lines().count(), 3, "{}", log.stdout);
    assert!(
        log.stdout
            .lines()
            .next()
            .expect("line")
            .contains("(latest)")
    );
    env.run(&["store", "verify"]).ok();
}

#[test]
fn the_same_import_gives_the_same_bytes_in_any_store() {
    let first = init();
    let second = init();
    for (name, format, _) in FIXTURES {
        let a = import(&first, &fixture(name), format);
        // Copy the file elsewhere: the path it was imported from does not matter.
        let copy = write(
            &second,
            name,
            &fs::read_to_string(fixture(name)).expect("read"),
        );
        let b = import(&second, &copy, "auto");
        assert_eq!(a, b, "{name}");
        for args in [
            vec!["run", "show", a.as_str()],
            vec!["run", "show", a.as_str(), "--format", "human"],
            vec!["run", "export", a.as_str(), "--format", "otel"],
            vec!["run", "export", a.as_str(), "--format", "in-toto"],
        ] {
            let x = first.run(&args);
            x.ok();
            assert_eq!(x.stdout, second.run(&args).stdout, "{args:?}");
        }
    }
    assert_eq!(
        first.run(&["run", "log"]).stdout,
        second.run(&["run", "log"]).stdout
    );
}

#[test]
fn log_show_fork_tag_and_export() {
    let env = init();
    let id = import(&env, &fixture("claude-code.jsonl"), "claude-code");
    let human = env.run(&["run", "show", "latest", "--format", "human"]);
    human.ok();
    for needle in [
        "Source:  claude-code",
        "Model:   claude-sonnet-4-20250514",
        "Session: b3f4c2a1-6d2e-4f7a-8c9b-0e1d2f3a4b5c",
        "Prompt (user): The test parse_range_inclusive fails.",
        "1 tool Read {\"file_path\":\"src/range.rs\"}",
        "[deterministic]",
    ] {
        assert!(human.stdout.contains(needle), "{needle}: {}", human.stdout);
    }

    let fork = env.run(&[
        "--json",
        "run",
        "fork",
        &id[..14],
        "--at",
        "3",
        "--tag",
        "retry",
    ]);
    fork.ok();
    let forked = fork.json();
    assert_eq!(forked["parent"], id.as_str());
    assert_eq!(forked["steps"], 3);
    let child = forked["run"].as_str().expect("id").to_owned();
    assert_ne!(child, id);
    let shown = env.run(&["run", "show", "retry"]).json();
    assert_eq!(shown["run"]["parent"], id.as_str());
    assert_eq!(shown["run"]["refs"], json!(["latest", "retry"]));
    // A fork keeps the parent's step objects: the chain is shared.
    let parent = env.run(&["run", "show", &id]).json();
    let steps = |v: &Value| -> Vec<Value> {
        v["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|s| s["hash"].clone())
            .collect()
    };
    assert_eq!(steps(&shown)[..], steps(&parent)[..3]);

    let log = env.run(&["run", "log"]);
    log.ok();
    assert!(
        log.stdout
            .starts_with(&format!("run {child} (latest, retry)\nParent:  {id}\n")),
        "{}",
        log.stdout
    );
    let log_json = env.run(&["--json", "run", "log", "-n", "1"]).json();
    assert_eq!(log_json["runs"].as_array().expect("runs").len(), 1);

    let bad_fork = env.run(&["run", "fork", &id, "--at", "99"]);
    bad_fork.bad_input("--at 99 must be at most 6");
    env.run(&["run", "tag", &id, "0abc"])
        .bad_input("not a usable tag");
    env.run(&["--json", "run", "tag", &id, "base"]).ok();
    assert_eq!(
        env.run(&["run", "show", "base"]).json()["run"]["id"],
        id.as_str()
    );

    let otel = env.run(&["run", "export", "base", "--format", "otel"]);
    otel.ok();
    let otel = otel.json();
    let spans = otel["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .expect("spans");
    assert_eq!(spans.len(), 7, "a root span and one per step");
    assert_eq!(spans[0]["name"], "invoke_agent");
    assert_eq!(spans[2]["name"], "execute_tool Read");
    assert_eq!(spans[2]["traceId"], spans[0]["traceId"]);
    assert_eq!(spans[2]["parentSpanId"], spans[0]["spanId"]);
    let attr = |span: &Value, key: &str| -> Value {
        span["attributes"]
            .as_array()
            .expect("attributes")
            .iter()
            .find(|a| a["key"] == key)
            .map_or(Value::Null, |a| a["value"].clone())
    };
    assert_eq!(
        attr(&spans[2], "gen_ai.tool.name"),
        json!({"stringValue": "Read"})
    );
    assert_eq!(
        attr(&spans[2], "gen_ai.tool.call.id"),
        json!({"stringValue": "toolu_01Read"})
    );
    assert_eq!(
        attr(&spans[1], "gen_ai.request.model"),
        json!({"stringValue": "claude-sonnet-4-20250514"})
    );
    assert_eq!(spans[2]["startTimeUnixNano"], "1751364002150000000");
    // Lossless: the manifest rides along on the root span.
    let manifest = attr(&spans[0], "ctx.run.manifest");
    let manifest: Value =
        serde_json::from_str(manifest["stringValue"].as_str().expect("string")).expect("JSON");
    let exported = env
        .run(&["run", "export", "base", "--format", "ctx"])
        .json();
    assert_eq!(manifest, exported["manifest"]);

    let swe = import(&env, &fixture("swe-agent.traj"), "swe-agent");
    let statement = env.run(&["run", "export", &swe, "--format", "in-toto"]);
    statement.ok();
    let statement = statement.json();
    assert_eq!(statement["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(statement["subject"][0]["name"], "submission.patch");
    assert_eq!(
        statement["subject"][0]["digest"]["sha256"]
            .as_str()
            .expect("hex")
            .len(),
        64
    );
    assert_eq!(statement["predicate"]["run"], swe.as_str());
    assert_eq!(
        statement["predicate"]["tools"],
        json!(["edit", "find_file", "open", "python", "submit"])
    );
    let xml = env.run(&["run", "export", &swe, "--format", "xml"]);
    assert_eq!(xml.code, 2, "{}", xml.stderr);
    assert!(
        xml.stderr.contains("possible values: ctx, otel, in-toto"),
        "{}",
        xml.stderr
    );
}

#[test]
fn import_reads_stdin_with_a_dash() {
    let env = init();
    let id = import(&env, &fixture("swe-agent.traj"), "swe-agent");
    let mut cmd = env.cmd(&["--json", "run", "import", "-"]);
    cmd.stdin(fs::File::open(fixture("swe-agent.traj")).expect("fixture"));
    let piped = env.run_with(cmd);
    piped.ok();
    assert_eq!(
        piped.json()["run"],
        id.as_str(),
        "same run as from the file"
    );
    let mut cmd = env.cmd(&["run", "import", "-"]);
    cmd.stdin(std::process::Stdio::null());
    env.run_with(cmd)
        .bad_input("`<stdin>` holds no valid run record (the file is empty)");
}

#[test]
fn store_gc_keeps_every_run_object() {
    let env = init();
    let empty = env.run(&["run", "log"]);
    assert_eq!(empty.code, 1, "nothing to list");
    assert!(empty.stderr.contains("no runs yet"), "{}", empty.stderr);
    assert_eq!(
        env.run(&["--json", "run", "log"]).json(),
        json!({ "runs": [] })
    );
    let id = import(&env, &fixture("openhands.json"), "openhands");
    let gc = env.run(&["--json", "store", "gc", "--grace", "0"]);
    gc.ok();
    assert_eq!(gc.json()["objects_removed"], 0, "{}", gc.stdout);
    env.run(&["run", "show", &id]).ok();
    env.run(&["store", "verify"]).ok();
}

// ---- diff golden tests ----------------------------------------------------------------------

fn claude_session(prompt: &str, tool: &str, path: &str, result: &str) -> String {
    claude_session_answering(prompt, tool, path, result, "Done.")
}

fn claude_session_answering(
    prompt: &str,
    tool: &str,
    path: &str,
    result: &str,
    answer: &str,
) -> String {
    let lines = [
        json!({"type": "user", "sessionId": "s1", "uuid": "u1", "parentUuid": null, "timestamp": "2025-07-01T09:00:00Z",
               "message": {"role": "user", "content": prompt}}),
        json!({"type": "assistant", "sessionId": "s1", "uuid": "u2", "parentUuid": "u1", "timestamp": "2025-07-01T09:00:01Z",
               "message": {"role": "assistant", "model": "claude-sonnet-4-20250514", "content": [
                   {"type": "tool_use", "id": "toolu_1", "name": tool, "input": {"file_path": path}}]}}),
        json!({"type": "user", "sessionId": "s1", "uuid": "u3", "parentUuid": "u2", "timestamp": "2025-07-01T09:00:02Z",
               "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]}}),
        json!({"type": "assistant", "sessionId": "s1", "uuid": "u4", "parentUuid": "u3", "timestamp": "2025-07-01T09:00:03Z",
               "message": {"role": "assistant", "model": "claude-sonnet-4-20250514", "content": [{"type": "text", "text": answer}]}}),
    ];
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text
}

/// A session calling each `(tool, path, result, is_error)` in turn, then answering "Done.".
fn claude_calls(calls: &[(&str, &str, &str, bool)]) -> String {
    let mut lines = vec![
        json!({"type": "user", "sessionId": "s1", "uuid": "u0", "parentUuid": null,
        "timestamp": "2025-07-01T09:00:00Z", "message": {"role": "user", "content": "Fix the bug in a.rs"}}),
    ];
    for (n, (tool, path, result, is_error)) in calls.iter().enumerate() {
        let id = format!("toolu_{n}");
        lines.push(
            json!({"type": "assistant", "sessionId": "s1", "uuid": format!("a{n}"),
            "parentUuid": if n == 0 { "u0".to_owned() } else { format!("r{}", n - 1) },
            "timestamp": "2025-07-01T09:00:01Z",
            "message": {"role": "assistant", "model": "claude-sonnet-4-20250514", "content": [
                {"type": "tool_use", "id": id, "name": tool, "input": {"file_path": path}}]}}),
        );
        lines.push(json!({"type": "user", "sessionId": "s1", "uuid": format!("r{n}"), "parentUuid": format!("a{n}"),
            "timestamp": "2025-07-01T09:00:02Z",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                "content": result, "is_error": is_error}]}}));
    }
    lines.push(json!({"type": "assistant", "sessionId": "s1", "uuid": "end",
        "parentUuid": format!("r{}", calls.len() - 1), "timestamp": "2025-07-01T09:00:03Z",
        "message": {"role": "assistant", "model": "claude-sonnet-4-20250514", "content": [{"type": "text", "text": "Done."}]}}));
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text
}

#[test]
fn diff_aligns_an_inserted_step_and_reports_a_status_change() {
    let env = init();
    let base = claude_calls(&[
        ("Read", "a.rs", "fn a() {}", false),
        ("Read", "b.rs", "fn b() {}", false),
    ]);
    let inserted = claude_calls(&[
        ("Read", "a.rs", "fn a() {}", false),
        ("Grep", "x", "a.rs:1", false),
        ("Read", "b.rs", "fn b() {}", false),
    ]);
    let failed = claude_calls(&[
        ("Read", "a.rs", "fn a() {}", false),
        ("Read", "b.rs", "fn b() {}", true),
    ]);
    let base = import(&env, &write(&env, "base.jsonl", &base), "claude-code");
    let inserted = import(
        &env,
        &write(&env, "inserted.jsonl", &inserted),
        "claude-code",
    );
    let failed = import(&env, &write(&env, "failed.jsonl", &failed), "claude-code");

    let diff = env.run(&["run", "diff", &base, &inserted]);
    assert_eq!(diff.code, 1, "{}", diff.stderr);
    let report = diff.json();
    // One inserted step; the later Read and the answer are matched, not drifted.
    assert_eq!(
        report["drift"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(report["drift"][0]["step"], 1);
    assert_eq!(report["drift"][0]["step_b"], 1);
    assert_eq!(report["drift"][0]["a"], Value::Null);
    check_golden("inserted_step", &diff.stdout);
    let back = env.run(&["--json", "run", "diff", &inserted, &base]).json();
    assert_eq!(back["drift"].as_array().map(Vec::len), Some(1), "{back}");
    assert_eq!(back["drift"][0]["b"], Value::Null);

    let diff = env.run(&["run", "diff", &base, &failed]);
    assert_eq!(diff.code, 1);
    let report = diff.json();
    assert_eq!(
        report["drift"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(report["drift"][0]["field"], "status");
    // Issue 33 changed this: a tool that now fails is output drift.
    assert_eq!(report["drift"][0]["type"], "output_drift");
    check_golden("status_drift", &diff.stdout);
}

fn swe_traj(submission: &str) -> String {
    json!({
        "trajectory": [{"action": "open a.py", "observation": "1: x = 1", "thought": "Look.", "execution_time": 0.1}],
        "history": [{"role": "user", "content": "Fix a.py"}],
        "info": {"submission": submission, "swe_agent_version": "1.0.1"},
    })
    .to_string()
}

fn check_golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/runs")
        .join(format!("{name}.json"));
    if std::env::var_os("CTX_UPDATE_GOLDEN").is_some() {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, actual).expect("write golden");
    }
    let expected = fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {}; run with CTX_UPDATE_GOLDEN=1", path.display()));
    assert_eq!(actual, expected, "{name} differs from {}", path.display());
}

#[test]
fn diff_golden_one_case_per_drift_type() {
    let env = init();
    let base = claude_session("Fix the bug in a.rs", "Read", "a.rs", "fn a() {}");
    let base_id = import(&env, &write(&env, "base.jsonl", &base), "claude-code");
    let cases = [
        (
            "prompt_drift",
            claude_session("Fix the bug in b.rs", "Read", "a.rs", "fn a() {}"),
        ),
        (
            "tool_drift",
            claude_session("Fix the bug in a.rs", "Grep", "a.rs", "fn a() {}"),
        ),
        (
            "param_drift",
            claude_session("Fix the bug in a.rs", "Read", "b.rs", "fn a() {}"),
        ),
        // Issue 33 changed this case: a changed tool output is output_drift (below), the
        // model's own text reasoning_drift.
        (
            "reasoning_drift",
            claude_session_answering("Fix the bug in a.rs", "Read", "a.rs", "fn a() {}", "Fixed."),
        ),
        (
            "step_output_drift",
            claude_session("Fix the bug in a.rs", "Read", "a.rs", "fn a() { 1 }"),
        ),
    ];
    for (kind, content) in cases {
        let id = import(
            &env,
            &write(&env, &format!("{kind}.jsonl"), &content),
            "claude-code",
        );
        let diff = env.run(&["run", "diff", &base_id, &id]);
        assert_eq!(diff.code, 1, "{kind} differs: {}", diff.stderr);
        let report = diff.json();
        let kinds: Vec<&str> = report["drift"]
            .as_array()
            .expect("drift")
            .iter()
            .map(|d| d["type"].as_str().expect("type"))
            .collect();
        let expected = kind.strip_prefix("step_").unwrap_or(kind);
        assert_eq!(kinds, [expected], "exactly one {kind}");
        check_golden(kind, &diff.stdout);
    }
    let a = import(
        &env,
        &write(&env, "a.traj", &swe_traj("diff --git a/a.py\n+x = 2\n")),
        "swe-agent",
    );
    let b = import(
        &env,
        &write(&env, "b.traj", &swe_traj("diff --git a/a.py\n+x = 3\n")),
        "swe-agent",
    );
    let diff = env.run(&["run", "diff", &a, &b]);
    assert_eq!(diff.code, 1);
    assert_eq!(diff.json()["drift"][0]["type"], "output_drift");
    assert_eq!(diff.json()["drift"][0]["field"], "outputs/submission.patch");
    check_golden("output_drift", &diff.stdout);

    let same = env.run(&["run", "diff", &base_id, &base_id[7..15]]);
    assert_eq!(same.code, 0, "{}", same.stdout);
    assert_eq!(same.json()["drift"], json!([]));

    let human = env.run(&["run", "diff", &a, &b, "--format", "human"]);
    assert_eq!(human.code, 1);
    assert!(human.stdout.contains("output_drift"), "{}", human.stdout);
    assert!(
        human.stdout.contains("output `submission.patch` differs"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("drift: 1 drift entries: 1 output_drift"),
        "{}",
        human.stdout
    );
}

// ---- tamper and bad input ---------------------------------------------------------------------

#[test]
fn a_flipped_byte_in_a_step_object_is_reported_by_store_verify_and_run_show() {
    let env = init();
    let id = import(&env, &fixture("claude-code.jsonl"), "claude-code");
    let shown = env.run(&["run", "show", &id]).json();
    let step = shown["steps"][2]["hash"].as_str().expect("hash").to_owned();
    let hex = &step["sha256:".len()..];
    let path = env
        .work()
        .join(".ctx/objects/sha256")
        .join(&hex[..2])
        .join(&hex[2..]);
    let mut bytes = fs::read(&path).expect("step object");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    let mut perms = fs::metadata(&path).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&path, perms).expect("chmod");
    fs::write(&path, &bytes).expect("tamper");

    let verify = env.run(&["store", "verify"]);
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify.stdout.contains(&format!("corrupt object {step}")),
        "{}",
        verify.stdout
    );

    let show = env.run(&["run", "show", &id]);
    show.bad_input(&format!("step 2 {step}"));
    assert!(show.stderr.contains("is corrupt"), "{}", show.stderr);
    env.run(&["run", "export", &id, "--format", "ctx"])
        .bad_input("is corrupt");
    env.run(&["run", "diff", &id, &id]).bad_input("is corrupt");
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_the_store_unchanged() {
    let env = init();
    let id = import(&env, &fixture("swe-agent.traj"), "auto");
    let store = env.work().join(".ctx/objects");
    let before = snapshot(&store);
    let log_before = env.run(&["--json", "run", "log"]).stdout;

    let empty = write(&env, "empty.jsonl", "");
    env.run(&["run", "import", "empty.jsonl"])
        .bad_input("holds no valid run record (the file is empty)");
    env.run(&[
        "run",
        "import",
        empty.to_str().expect("utf8"),
        "--from",
        "claude-code",
    ])
    .bad_input("holds no valid claude-code record");

    let truncated =
        r#"{"type":"user","sessionId":"s1","uuid":"u1","message":{"role":"user","content":"Fix it"#;
    write(&env, "truncated.jsonl", &format!("{truncated}\n"));
    // Issue 33 changed the wording: a bad line now fails the file by itself.
    env.run(&["run", "import", "truncated.jsonl", "--from", "claude-code"])
        .bad_input("line 1 is not a valid claude-code record: truncated JSON");

    env.run(&["run", "import", "empty.jsonl", "--from", "yaml"])
        .bad_input(
            "unknown run format `yaml`; use one of: auto, ctx, claude-code, openhands, swe-agent, mini-swe-agent",
        );
    write(&env, "other.json", r#"{"hello": "world"}"#);
    env.run(&["run", "import", "other.json"])
        .bad_input("does not look like any known run format (ctx, claude-code, openhands, swe-agent, mini-swe-agent); pass --from FORMAT");
    env.run(&["run", "import", "missing.jsonl"])
        .bad_input("cannot read");
    write(&env, "broken.traj", "{\"trajectory\": [");
    env.run(&["run", "import", "broken.traj", "--from", "swe-agent"])
        .bad_input("not valid JSON at line 1");

    // An export whose step was edited by hand is refused.
    let export = env.run(&["run", "export", &id, "--format", "ctx"]).stdout;
    let edited = export.replacen("find_file", "find_fils", 1);
    assert_ne!(edited, export);
    write(&env, "edited.json", &edited);
    env.run(&["run", "import", "edited.json"])
        .bad_input("the export was edited");

    env.run(&["run", "show", "deadbeef"])
        .bad_input("no run `deadbeef`; `ctx run log` lists the runs");
    env.run(&["run", "show", "nosuchtag"])
        .bad_input("no run `nosuchtag`");
    env.run(&["run", "show", "abc"])
        .bad_input("at least 4 hex digits");
    env.run(&["run", "diff", &id, "sha256:0000"])
        .bad_input("no run `sha256:0000`");

    assert_eq!(snapshot(&store), before, "no object written");
    assert_eq!(env.run(&["--json", "run", "log"]).stdout, log_before);
}

/// Issue 33 changed this: a truncated line fails the import (exit 2, nothing stored) unless
/// --skip-bad-lines, and a `progress` line is known and skipped without a word.
#[test]
fn a_truncated_last_line_is_reported_and_skipped() {
    let env = init();
    let mut text = fs::read_to_string(fixture("claude-code.jsonl")).expect("read");
    let whole = text.lines().count();
    text.push_str(r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"te"#);
    text.push('\n');
    text.push_str("{\"type\":\"progress\",\"uuid\":\"p1\"}\n");
    write(&env, "session.jsonl", &text);
    env.run(&["run", "import", "session.jsonl"])
        .bad_input(&format!(
            "line {} is not a valid claude-code record: truncated JSON",
            whole + 1
        ));
    assert_eq!(env.run(&["--json", "run", "log"]).json()["runs"], json!([]));
    let run = env.run(&[
        "--json",
        "run",
        "import",
        "session.jsonl",
        "--skip-bad-lines",
    ]);
    run.ok();
    let report = run.json();
    assert_eq!(report["steps"], 6);
    assert_eq!(report["warnings"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["warnings"][0]["line"], whole + 1);
    assert!(
        report["warnings"][0]["message"]
            .as_str()
            .expect("msg")
            .starts_with("truncated JSON")
    );
    assert_eq!(report["report"]["skipped_lines"], 1);
    assert!(
        run.stderr.contains(&format!(
            "warning: session.jsonl: line {}: truncated JSON",
            whole + 1
        )),
        "{}",
        run.stderr
    );
    // The skipped lines do not change the run: it is the fixture's run.
    let clean = import(&env, &fixture("claude-code.jsonl"), "claude-code");
    assert_eq!(report["run"], clean.as_str());

    let human = env.run(&["run", "import", "session.jsonl", "--skip-bad-lines"]);
    human.ok();
    assert!(
        human
            .stdout
            .contains("(claude-code, 6 steps, 1 warning(s))"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("kept 4 of 4 tool calls, 4 of 4 tool outputs, 3 of 3 messages"),
        "{}",
        human.stdout
    );
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates() {
    // Two empty runs whose ids share their first 4 hex digits, found by varying `created`.
    let mut seen: std::collections::BTreeMap<String, (String, Value)> =
        std::collections::BTreeMap::new();
    let (first, second) = (0..100_000)
        .find_map(|i| {
            let mut builder = ctx::runs::RunBuilder::new("ctx");
            builder.set_created(Some(format!("2025-01-01T00:00:00.{i:06}Z")));
            let manifest = builder.manifest().clone();
            let id = manifest.id().to_string();
            let export = json!({
                "format": ctx::runs::export::CTX_EXPORT_FORMAT,
                "run": id,
                "manifest": manifest,
                "steps": [],
                "blobs": {},
            });
            let prefix = id[7..11].to_owned();
            seen.insert(prefix, (id.clone(), export.clone()))
                .map(|other| (other, (id, export)))
        })
        .expect("a 16-bit collision within 100k tries");
    let env = init();
    for (n, (id, export)) in [&first, &second].into_iter().enumerate() {
        let path = write(&env, &format!("run{n}.json"), &export.to_string());
        assert_eq!(&import(&env, &path, "ctx"), id);
    }
    let prefix = &first.0[7..11];
    let mut candidates = [first.0.clone(), second.0.clone()];
    candidates.sort();
    env.run(&["run", "show", prefix]).bad_input(&format!(
        "run id `{prefix}` is ambiguous; it could be any of: {}, {}; give more digits",
        candidates[0], candidates[1]
    ));
    // More digits, or the full id, resolve it.
    env.run(&["run", "show", &first.0[7..]]).ok();
    env.run(&["run", "show", &first.0]).ok();
}

#[test]
fn a_bad_import_tag_stores_nothing_and_a_reimport_is_listed_first() {
    let env = init();
    let objects = env.work().join(".ctx/objects");
    let before = snapshot(&objects);
    let claude = fixture("claude-code.jsonl");
    let claude = claude.to_str().expect("utf8");
    for tag in ["latest", "LATEST", "0abc", "bad tag"] {
        env.run(&["run", "import", claude, "--tag", tag])
            .bad_input("not a usable tag");
    }
    assert_eq!(snapshot(&objects), before, "no object written");
    assert_eq!(env.run(&["--json", "run", "log"]).json()["runs"], json!([]));

    let first = import(&env, &fixture("claude-code.jsonl"), "claude-code");
    let second = import(&env, &fixture("swe-agent.traj"), "swe-agent");
    assert_ne!(first, second);
    // Importing the first run again makes it `latest` and the newest in the log.
    assert_eq!(
        import(&env, &fixture("claude-code.jsonl"), "claude-code"),
        first
    );
    let log = env.run(&["run", "log", "--oneline"]);
    log.ok();
    let lines: Vec<&str> = log.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", log.stdout);
    assert!(lines[0].contains("(latest)"), "{}", log.stdout);
    assert!(lines[0].contains(&first[7..19]), "{}", log.stdout);
}

#[test]
fn a_truncating_fork_drops_the_parents_outputs() {
    let env = init();
    let id = import(&env, &fixture("swe-agent.traj"), "swe-agent");
    let parent = env.run(&["--json", "run", "show", &id]).json();
    assert_eq!(parent["run"]["outputs"].as_array().map(Vec::len), Some(1));
    let cut = env.run(&["--json", "run", "fork", &id, "--at", "2"]).json();
    let child = env
        .run(&["--json", "run", "show", cut["run"].as_str().expect("id")])
        .json();
    assert_eq!(child["run"]["outputs"], json!([]));
    let whole = env.run(&["--json", "run", "fork", &id]).json();
    let copy = env
        .run(&["--json", "run", "show", whole["run"].as_str().expect("id")])
        .json();
    assert_eq!(copy["run"]["outputs"], parent["run"]["outputs"]);
}

#[test]
fn the_in_toto_export_is_a_sidecar_that_run_verify_accepts() {
    let env = init();
    let id = import(&env, &fixture("swe-agent.traj"), "swe-agent");
    let export = env.run(&["run", "export", &id, "--format", "in-toto"]);
    export.ok();
    let statement = export.json();
    assert_eq!(statement["predicateType"], "ctx://predicate/run/v1");
    assert_eq!(statement["predicate"]["run"], id.as_str());
    // The submitted patch, saved next to its exported statement, verifies against the store.
    let shown = env.run(&["--json", "run", "show", &id]).json();
    let patch_ref = shown["run"]["outputs"][0]["content_ref"]
        .as_str()
        .expect("ref")
        .to_owned();
    let traj: Value =
        serde_json::from_str(&fs::read_to_string(fixture("swe-agent.traj")).expect("read"))
            .expect("json");
    let patch = traj["info"]["submission"].as_str().expect("patch");
    assert_eq!(
        ctx::core::ContentHash::of(patch.as_bytes()).to_string(),
        patch_ref
    );
    write(&env, "submission.patch", patch);
    write(&env, "submission.patch.ctx.json", &export.stdout);
    let verify = env.run(&["run", "verify", "submission.patch", "--json"]);
    verify.ok();
    assert_eq!(verify.json()["verified"], true, "{}", verify.stdout);
}
