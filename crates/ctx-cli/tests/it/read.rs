//! `ctx read` and `ctx serve` end to end: modes, workspace roots, batches, bad input, the
//! sandbox attack suite and a symlink swapped between invocations.

#[path = "../../../ctx-fs/tests/support/attacks.rs"]
mod attacks;

use std::fs;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{Env, http, write_files};

fn fixture(env: &Env) {
    write_files(
        &env.work(),
        &[
            ("notes.txt", "one\ntwo\nthree\nfour\nfive\n"),
            ("src/main.rs", "fn main() {\n    // TODO: start\n}\n"),
            ("src/lib.rs", "pub fn todo() {}\n"),
            (".gitignore", "target/\n"),
            ("target/junk.rs", "// TODO ignored\n"),
        ],
    );
}

#[test]
fn each_mode_and_line_forms() {
    let env = Env::new();
    fixture(&env);
    let run = env.run(&["read", "notes.txt", "--lines", "2:3"]);
    assert_eq!(run.ok().stdout, "two\nthree\n");
    assert_eq!(
        env.run(&["read", "notes.txt", "--lines", "-2:"])
            .ok()
            .stdout,
        "four\nfive\n"
    );
    assert_eq!(
        env.run(&["read", "notes.txt", "--lines", ":1"]).ok().stdout,
        "one\n"
    );
    assert_eq!(
        env.run(&["read", "notes.txt", "--lines", "4"]).ok().stdout,
        "four\n"
    );
    assert_eq!(
        env.run(&["read", "notes.txt"]).ok().stdout,
        "one\ntwo\nthree\nfour\nfive\n"
    );

    let listing = env.run(&["read", "."]);
    let lines: Vec<&str> = listing.ok().stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", listing.stdout);
    assert!(
        lines[0].ends_with(" .gitignore") && lines[2].ends_with(" src/"),
        "{}",
        listing.stdout
    );
    let deep = env
        .run(&["--json", "read", "src", "--depth", "1"])
        .ok()
        .json();
    let paths: Vec<&str> = deep["results"][0]["result"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, ["src/lib.rs", "src/main.rs"]);

    let found = env.run(&["read", ".", "--search", "todo", "--context", "0"]);
    assert_eq!(
        found.ok().stdout,
        "src/lib.rs:1\n→ 1: pub fn todo() {}\nsrc/main.rs:2\n→ 2:     // TODO: start\n"
    );
    let none = env.run(&["read", ".", "--search", "absent text"]);
    assert_eq!(none.code, 1, "no match exits 1");
    let regex = env
        .run(&[
            "--json",
            "read",
            "src",
            "--search",
            r"fn \w+\(\)",
            "--regex",
        ])
        .ok()
        .json();
    assert_eq!(regex["results"][0]["result"]["total_matches"], 2);
}

#[test]
fn relative_paths_start_at_the_working_directory() {
    let env = Env::new();
    fixture(&env);
    let mut cmd = env.cmd(&["read", "main.rs", "--lines", "1:1", "--root", ".."]);
    cmd.current_dir(env.work().join("src"));
    assert_eq!(env.run_with(cmd).ok().stdout, "fn main() {\n");
    let mut cmd = env.cmd(&["read", "../notes.txt", "--lines", "1:1", "--root", ".."]);
    cmd.current_dir(env.work().join("src"));
    assert_eq!(env.run_with(cmd).ok().stdout, "one\n");
}

#[test]
fn the_workspace_is_the_project_root_else_the_git_tree_else_the_cwd() {
    let env = Env::new();
    fixture(&env);
    write_files(&env.root, &[("outside.txt", "outside\n")]);
    // Plain directory: the cwd is the root, so its parent is out of reach.
    env.run(&["read", "../outside.txt"])
        .bad_input("leaves the workspace");
    // A git work tree above the cwd widens the workspace to it.
    crate::common::git(&env.root, &["init", "-q"]);
    let mut cmd = env.cmd(&["read", "../outside.txt"]);
    cmd.current_dir(env.work());
    assert_eq!(env.run_with(cmd).ok().stdout, "outside\n");
    // A project store nearer than the git root wins.
    env.run(&["init"]).ok();
    env.run(&["read", "../outside.txt"])
        .bad_input("leaves the workspace");
    // --root names another directory.
    let mut cmd = env.cmd(&["read", "../outside.txt", "--root", ".."]);
    cmd.current_dir(env.work());
    assert_eq!(env.run_with(cmd).ok().stdout, "outside\n");
    // From a working directory outside the root, paths start at the root.
    let mut cmd = env.cmd(&["read", "notes.txt", "--lines", "1:1", "--root", "work"]);
    cmd.current_dir(&env.root);
    assert_eq!(env.run_with(cmd).ok().stdout, "one\n");
}

#[test]
fn a_batch_runs_every_operation_and_reports_failures() {
    let env = Env::new();
    fixture(&env);
    fs::write(
        env.work().join("ops.json"),
        r#"{"operations": [
            {"mode": "Line", "path": "notes.txt", "start_line": -1},
            {"mode": "Line", "path": "missing.txt"},
            {"mode": "Teleport", "path": "notes.txt"},
            {"mode": "Search", "path": "src", "pattern": "start", "context_lines": 0}
        ]}"#,
    )
    .expect("ops");
    let run = env.run(&["--json", "read", "--batch", "ops.json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("2 of 4 operations failed"),
        "{}",
        run.stderr
    );
    let out = run.json();
    assert_eq!(out["results"][0]["result"]["content"], "five");
    assert_eq!(out["results"][1]["error"]["kind"], "not_found");
    assert!(
        out["results"][2]["error"]["message"]
            .as_str()
            .expect("m")
            .contains("unknown mode `Teleport`")
    );
    assert_eq!(out["results"][3]["result"]["total_matches"], 1);
    let text = env.run(&["read", "--batch", "ops.json"]);
    assert!(
        text.stdout
            .starts_with("=== [1] Line notes.txt ===\nfive\n"),
        "{}",
        text.stdout
    );
    let mut cmd = env.cmd(&["read", "--batch", "-"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(br#"[{"mode": "Line", "path": "notes.txt", "start_line": 1, "end_line": 1}]"#)
        .expect("write");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "one\n");
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    let env = Env::new();
    fixture(&env);
    fs::write(env.work().join("latin1.txt"), b"caf\xe9\n").expect("latin1");
    env.run(&["read", "latin1.txt"])
        .bad_input("not UTF-8 text (5 bytes");
    env.run(&["read", "src", "--depth", "-1"])
        .bad_input("`depth` must be 0 or more, not -1");
    env.run(&["read", "notes.txt", "--lines", "9:"])
        .bad_input("it has 5 lines");
    env.run(&["read", "notes.txt", "--lines", "4:2"])
        .bad_input("start_line 4 is after end_line 2");
    env.run(&["read", "notes.txt", "--lines", "x"])
        .bad_input("--lines `x`");
    env.run(&["read", "src", "--lines", "1:2"])
        .bad_input("is a directory");
    env.run(&["read", "nope.txt"]).bad_input("does not exist");
    env.run(&["read", "x", "--root", "no-such-dir"])
        .bad_input("cannot open workspace");
    fs::write(env.work().join("bad.json"), "{oops").expect("bad json");
    env.run(&["read", "--batch", "bad.json"])
        .bad_input("not JSON");
    fs::write(env.work().join("empty.json"), r#"{"operations": []}"#).expect("empty");
    env.run(&["read", "--batch", "empty.json"])
        .bad_input("`operations` is empty");
    let run = env.run(&["read", "src", "--search"]);
    assert_eq!(run.code, 2, "clap refuses a missing pattern");
}

#[test]
fn the_attack_suite_gets_nothing_out_of_the_cli() {
    let env = Env::new();
    let fixture = attacks::build();
    let root = fixture.root.display().to_string();
    let cases = attacks::cases(&fixture);
    assert!(cases.len() >= 30);
    // Through --batch on stdin: every case in every mode (NUL bytes included, which argv
    // cannot carry).
    let mut ops = Vec::new();
    for case in &cases {
        ops.push(serde_json::json!({"mode": "Line", "path": case.path}));
        ops.push(serde_json::json!({"mode": "Directory", "path": case.path, "depth": 1}));
        ops.push(serde_json::json!({"mode": "Search", "path": case.path, "pattern": "secret"}));
    }
    let mut cmd = env.cmd(&["--json", "read", "--root", &root, "--batch", "-"]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            serde_json::json!({"operations": ops})
                .to_string()
                .as_bytes(),
        )
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(
        report["failed"].as_u64(),
        Some(ops.len() as u64),
        "{stdout}"
    );
    assert!(!stdout.contains(attacks::SECRET) && !stdout.contains("root:x:0"));
    // Through PATH on the command line: every case argv can carry.
    for case in cases.iter().filter(|c| !c.path.contains('\0')) {
        for extra in [
            &["--lines", "1:"][..],
            &["--depth", "1"],
            &["--search", "secret"],
        ] {
            let mut args = vec!["read", "--root", &root, "--", &case.path];
            args.splice(1..1, extra.iter().copied());
            let mut cmd = env.cmd(&args);
            cmd.current_dir(&fixture.root);
            let out = cmd.output().expect("run ctx");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{} {extra:?}: {stdout} {stderr}",
                case.name
            );
            assert!(
                !stdout.contains(attacks::SECRET) && !stderr.contains(attacks::SECRET),
                "{}",
                case.name
            );
            assert!(!stdout.contains("root:x:0"), "{}", case.name);
        }
    }
    // A symlink flipped in and out while ctx runs never lets one through.
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = attacks::flipper(&fixture.root, Arc::clone(&stop));
    let mut round = 0;
    while !attacks::raced_enough(round, 40, &flipper) {
        round += 1;
        let mut cmd = env.cmd(&["--compact", "read", "--root", &root, "--batch", "-"]);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(br#"[{"mode": "Line", "path": "race/only_outside.txt"}, {"mode": "Directory", "path": "race"}, {"mode": "Search", "path": "race", "pattern": "secret"}]"#)
            .expect("write");
        let out = child.wait_with_output().expect("wait");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(attacks::SECRET), "{stdout}");
        assert!(!stdout.contains("only_outside.txt\",\"kind"), "{stdout}");
    }
    stop.store(true, Ordering::Relaxed);
    assert!(flipper.join().expect("flipper") > 10);
}

#[test]
fn serve_answers_tool_health_and_mcp_and_stops_on_sigterm() {
    let env = Env::new();
    write_files(
        &env.work(),
        &[("ws/alpha/a.txt", "alpha\n"), ("ws/beta/b.txt", "beta\n")],
    );
    let (mut child, mut stderr, addr) =
        env.spawn_server(&["serve", "--workspaces", "ws", "--addr", "127.0.0.1:0"]);
    let health = http(&addr, "GET", "/health", &[], "");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(
        health.contains(r#""workspace_ids":["alpha","beta"]"#),
        "{health}"
    );
    let tool = http(
        &addr,
        "POST",
        "/tool",
        &[],
        r#"{"workspace":"beta","tool":"fs_read","params":{"mode":"Line","path":"b.txt"}}"#,
    );
    assert!(
        tool.contains(r#""content":"beta""#) && tool.contains(r#""success":true"#),
        "{tool}"
    );
    let missing = http(
        &addr,
        "POST",
        "/tool",
        &[],
        r#"{"workspace":"gamma","tool":"fs_read","params":{"mode":"Line","path":"b.txt"}}"#,
    );
    assert!(
        missing.starts_with("HTTP/1.1 404") && missing.contains("known workspaces: alpha, beta"),
        "{missing}"
    );
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mcp = http(&addr, "POST", "/mcp/alpha", &[], init);
    assert!(
        mcp.starts_with("HTTP/1.1 200") && mcp.contains("serverInfo"),
        "{mcp}"
    );
    let no_ws = http(&addr, "POST", "/mcp/gamma", &[], init);
    assert!(no_ws.starts_with("HTTP/1.1 404"), "{no_ws}");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = child.wait().expect("wait");
    assert_eq!(exit.code(), Some(0));
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).expect("rest of stderr");
    assert!(rest.contains("stopped"), "{rest}");
}
