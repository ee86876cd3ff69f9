//! `ctx mcp --record` and `ctx run replay`: a session recorded over stdio (a hand-written
//! JSON-RPC client, one request at a time) replays `exact`; a file the run read changed gives
//! `degraded` naming that step; deleted, `failed`. Also: SIGTERM finishes a recording, a
//! killed recording is finished by the next one, and bad input exits 2.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use crate::common::{Env, git, write_files};
use serde_json::{Value, json};

/// A stdio MCP session with `ctx mcp --record NAME`.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(env: &Env, name: &str) -> Self {
        let mut child = env
            .cmd(&["mcp", "--tools", "all", "--record", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ctx mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut session = Self {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
        };
        session.request(
            "initialize",
            &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("open stdin");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: &Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if message["id"] == json!(id) {
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: &Value) -> Value {
        self.request("tools/call", &json!({"name": tool, "arguments": arguments}))
    }

    /// Closes stdin and waits: the session ends and the run is finished.
    fn close(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let out = self.child.wait_with_output().expect("wait");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn fixture() -> Env {
    let env = Env::new();
    write_files(
        &env.work(),
        &[
            (
                "src/lib.rs",
                "//! Fixture.\n\npub fn parse_config(text: &str) -> usize {\n    text.len()\n}\n",
            ),
            (
                "src/main.rs",
                "fn main() {\n    println!(\"{}\", fixture::parse_config(\"a\"));\n}\n",
            ),
            ("README.md", "# Fixture\n\nCalls parse_config.\n"),
        ],
    );
    git(&env.work(), &["init", "-q", "-b", "main"]);
    git(&env.work(), &["add", "."]);
    git(&env.work(), &["commit", "-q", "-m", "fixture"]);
    env.run(&["init"]).ok();
    env
}

/// Records fs_read (step 0), ctx_search (1), ctx_status (2), ctx_summarize (3).
fn record(env: &Env, name: &str) {
    let mut session = Session::start(env, name);
    let read = session.call(
        "fs_read",
        &json!({"operations": [{"mode": "Line", "path": "src/lib.rs"}]}),
    );
    assert_eq!(read["isError"], json!(false), "{read}");
    let search = session.call("ctx_search", &json!({"pattern": "parse_config"}));
    assert_eq!(search["isError"], json!(false), "{search}");
    let status = session.call("ctx_status", &json!({}));
    assert_eq!(status["isError"], json!(false), "{status}");
    let summary = session.call("ctx_summarize", &json!({"path": "src/main.rs"}));
    assert_eq!(summary["isError"], json!(false), "{summary}");
    let (code, stderr) = session.close();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(&format!("as `{name}`")), "{stderr}");
}

#[test]
fn recorded_session_replays_exact_then_degraded_then_failed() {
    let env = fixture();
    record(&env, "session-1");

    let show = env.run(&["run", "show", "session-1", "--json"]);
    show.ok();
    let shown = show.json();
    let text = shown.to_string();
    for tool in ["fs_read", "ctx_search", "ctx_status", "ctx_summarize"] {
        assert!(text.contains(tool), "{tool} not in {text}");
    }

    let exact = env.run(&["run", "replay", "session-1", "--json"]);
    exact.ok();
    let report = exact.json();
    assert_eq!(report["fidelity"], "exact", "{report}");
    assert_eq!(report["exact"], 4, "{report}");
    assert_eq!(report["first_divergence"], Value::Null);

    // The same run replays the same way twice: byte-identical reports.
    let again = env.run(&["run", "replay", "session-1", "--json"]);
    assert_eq!(again.stdout, exact.stdout);

    // Change the file the run read: degraded, naming the fs_read step, with a diff.
    std::fs::write(
        env.work().join("src/lib.rs"),
        "//! Fixture.\n\npub fn parse_config(text: &str) -> usize {\n    text.len() + 1\n}\n",
    )
    .expect("write");
    let degraded = env.run(&["run", "replay", "session-1", "--json"]);
    assert_eq!(degraded.code, 1, "{}", degraded.stderr);
    let report = degraded.json();
    assert_eq!(report["fidelity"], "degraded", "{report}");
    let first = &report["first_divergence"];
    assert_eq!(first["index"], 0, "{report}");
    assert_eq!(first["tool"], "fs_read");
    assert_eq!(first["outcome"], "diverged");
    let diff = first["diff"].as_str().expect("diff");
    assert!(diff.starts_with("--- recorded\n+++ replayed\n"), "{diff}");
    assert!(diff.contains("text.len() + 1"), "{diff}");

    // Human output names the step too.
    let human = env.run(&["run", "replay", "session-1"]);
    assert_eq!(human.code, 1);
    assert!(human.stdout.contains("degraded"), "{}", human.stdout);
    assert!(
        human
            .stdout
            .contains("first divergence: step 0 (fs_read) diverged"),
        "{}",
        human.stdout
    );

    // Delete it: the read fails now.
    std::fs::remove_file(env.work().join("src/lib.rs")).expect("remove");
    let failed = env.run(&["run", "replay", "session-1", "--json", "--steps"]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    let report = failed.json();
    assert_eq!(report["fidelity"], "failed", "{report}");
    assert_eq!(report["first_divergence"]["index"], 0);
    assert_eq!(report["first_divergence"]["outcome"], "failed");
    let error = report["first_divergence"]["error"].as_str().expect("error");
    assert!(error.contains("src/lib.rs"), "{error}");
    assert_eq!(report["results"][0]["outcome"], "failed");
}

#[test]
fn sigterm_finishes_the_recording() {
    let env = fixture();
    let mut session = Session::start(&env, "stopped");
    session.call(
        "fs_read",
        &json!({"operations": [{"mode": "Line", "path": "README.md"}]}),
    );
    let pid = session.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = session.child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    let show = env.run(&["run", "show", "stopped", "--json"]);
    show.ok();
    assert!(show.stdout.contains("README.md"), "{}", show.stdout);
    env.run(&["run", "replay", "stopped"]).ok();
}

#[test]
fn a_killed_recording_is_finished_by_the_next_one() {
    let env = fixture();
    let mut session = Session::start(&env, "crashed");
    session.call(
        "fs_read",
        &json!({"operations": [{"mode": "Line", "path": "README.md"}]}),
    );
    session.call("ctx_search", &json!({"pattern": "parse_config"}));
    session.child.kill().expect("kill");
    session.child.wait().expect("wait");
    assert_eq!(env.run(&["run", "show", "crashed"]).code, 2);

    let next = Session::start(&env, "next");
    let (code, stderr) = next.close();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("finished the interrupted recording `crashed` (2 steps)"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing recorded"), "{stderr}");
    let replay = env.run(&["run", "replay", "crashed", "--json"]);
    replay.ok();
    assert_eq!(replay.json()["exact"], 2);
}

#[test]
fn bad_input_exits_2() {
    let env = fixture();
    env.run(&["run", "replay", "no-such-run"])
        .bad_input("no-such-run");
    env.run(&["mcp", "--record", "a/b"])
        .bad_input("--record `a/b`");
}

/// Builds a run directly in the work dir's store: a `cmd` step, an imported Claude Code
/// `Edit`, a model turn and a non-deterministic step.
fn build_mixed_run(env: &Env) {
    use ctx::runs::{RunBuilder, StepDraft};
    use ctx::store::Store;
    let store = Store::open(&env.work().join(".ctx")).expect("store");
    let mut builder = RunBuilder::new("ctx");
    let mut cmd = StepDraft::tool_call("cmd", json!({"command": "cat README.md"}));
    cmd.output =
        Some(b"$ cat README.md\n# Fixture\n\nCalls parse_config.\n[exit code: 0]\n".to_vec());
    cmd.deterministic = true;
    builder.push_step(&store, cmd).expect("cmd step");
    let mut edit = StepDraft::tool_call("Edit", json!({"file_path": "src/lib.rs"}));
    edit.output = Some(b"edited".to_vec());
    edit.deterministic = true;
    builder.push_step(&store, edit).expect("edit step");
    builder
        .push_step(&store, StepDraft::model_call(Some("m"), "thinking aloud"))
        .expect("model step");
    let mut status = StepDraft::tool_call("ctx_status", json!({}));
    status.output = Some(b"whatever it said then".to_vec());
    builder.push_step(&store, status).expect("status step");
    let run = builder.finish(&store).expect("finish");
    ctx::runs::tag_run(&store, "mixed", &run).expect("tag");
}

/// Issue 33 changed this: a deterministic step ctx cannot re-run (a command without
/// --allow-commands, another agent's `Edit`) is `not_replayable`, and so is the run (exit 1),
/// never `exact`.
#[test]
fn commands_run_only_when_allowed_and_foreign_tools_are_not_replayable() {
    let env = fixture();
    build_mixed_run(&env);

    let report = env.run(&["run", "replay", "mixed", "--json", "--steps"]);
    assert_eq!(report.code, 1, "{}", report.stderr);
    let report = report.json();
    assert_eq!(report["fidelity"], "not_replayable", "{report}");
    assert_eq!(
        (
            report["exact"].clone(),
            report["not_replayable"].clone(),
            report["skipped"].clone()
        ),
        (json!(0), json!(2), json!(2))
    );
    assert_eq!(report["results"][0]["outcome"], "not_replayable");
    assert_eq!(report["results"][1]["outcome"], "not_replayable");
    let reasons: Vec<&str> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["reason"].as_str().expect("reason"))
        .collect();
    assert!(reasons[0].contains("--allow-commands"), "{reasons:?}");
    assert!(reasons[1].contains("no tool `Edit`"), "{reasons:?}");
    assert!(reasons[2].contains("model turn"), "{reasons:?}");
    assert!(reasons[3].contains("not deterministic"), "{reasons:?}");

    let allowed = env.run(&["run", "replay", "mixed", "--json", "--allow-commands"]);
    assert_eq!(allowed.code, 1, "the Edit still cannot be re-run");
    let allowed = allowed.json();
    assert_eq!(allowed["fidelity"], "not_replayable");
    assert_eq!(
        (
            allowed["exact"].clone(),
            allowed["not_replayable"].clone(),
            allowed["skipped"].clone()
        ),
        (json!(1), json!(1), json!(2))
    );

    std::fs::write(env.work().join("README.md"), "# Fixture\n\nChanged.\n").expect("write");
    let changed = env.run(&["run", "replay", "mixed", "--allow-commands"]);
    assert_eq!(changed.code, 1);
    assert!(changed.stdout.contains("degraded"), "{}", changed.stdout);
    assert!(
        changed.stdout.contains("-Calls parse_config.\n+Changed.\n"),
        "{}",
        changed.stdout
    );
}

/// One HTTP/1.1 request on a fresh connection: the status line, the `mcp-session-id` header
/// (if any) and the first JSON message of the body (plain JSON or a server-sent event).
fn mcp_post(
    addr: &str,
    path: &str,
    session: Option<&str>,
    body: &Value,
) -> (String, Option<String>, Value) {
    use std::io::Read as _;
    let body = body.to_string();
    let session_header = session.map_or_else(String::new, |id| format!("mcp-session-id: {id}\r\n"));
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n{session_header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, rest) = response.split_once("\r\n\r\n").expect("headers");
    let status = head.lines().next().unwrap_or_default().to_owned();
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    // Chunked or SSE framing: the message is the first line that parses as a JSON object.
    let message = rest
        .lines()
        .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
        .find_map(|line| {
            serde_json::from_str::<Value>(line)
                .ok()
                .filter(Value::is_object)
        })
        .unwrap_or(Value::Null);
    (status, session, message)
}

#[test]
fn serve_records_mcp_calls_per_workspace_and_replay_is_exact() {
    let env = Env::new();
    write_files(
        &env.work(),
        &[
            (
                "ws/alpha/src/lib.rs",
                "//! Alpha.\n\npub fn parse_config(text: &str) -> usize {\n    text.len()\n}\n",
            ),
            ("ws/alpha/README.md", "# Alpha\n\nCalls parse_config.\n"),
        ],
    );
    let alpha = env.work().join("ws/alpha");
    git(&alpha, &["init", "-q", "-b", "main"]);
    git(&alpha, &["add", "."]);
    git(&alpha, &["commit", "-q", "-m", "fixture"]);
    env.run(&["-C", "ws/alpha", "init"]).ok();

    let (mut child, mut stderr, addr) = env.spawn_server(&[
        "serve",
        "--workspaces",
        "ws",
        "--addr",
        "127.0.0.1:0",
        "--tools",
        "all",
        "--record",
        "served",
    ]);

    let (status, session, init) = mcp_post(
        &addr,
        "/mcp/alpha",
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert!(status.contains("200"), "{status} {init}");
    let session = session.expect("a session id");
    mcp_post(
        &addr,
        "/mcp/alpha",
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let calls = [
        (
            "fs_read",
            json!({"operations": [{"mode": "Line", "path": "src/lib.rs"}]}),
        ),
        ("ctx_search", json!({"pattern": "parse_config"})),
        ("ctx_status", json!({})),
    ];
    for (id, (tool, arguments)) in calls.iter().enumerate() {
        let (status, _, answer) = mcp_post(
            &addr,
            "/mcp/alpha",
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": id + 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}),
        );
        assert!(status.contains("200"), "{status}");
        assert_eq!(
            answer["result"]["isError"],
            json!(false),
            "{tool}: {answer}"
        );
    }
    let term = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(term.success());
    assert_eq!(child.wait().expect("wait").code(), Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("stderr");
    assert!(
        rest.contains("workspace `alpha`: recorded run") && rest.contains("(3 steps) as `served`"),
        "{rest}"
    );

    // The run is in the workspace's own store, with the file it read as an input.
    let show = env.run(&["-C", "ws/alpha", "--json", "run", "show", "served"]);
    show.ok();
    let shown = show.json();
    assert!(show.stdout.contains("src/lib.rs"), "{}", show.stdout);
    assert!(show.stdout.contains("ctx-serve"), "{shown}");
    let replay = env.run(&["-C", "ws/alpha", "--json", "run", "replay", "served"]);
    replay.ok();
    let report = replay.json();
    assert_eq!(report["fidelity"], "exact", "{report}");
    assert_eq!(report["exact"], 3, "{report}");
}
