//! Replay of a 1,000-step run: record it through `ctx mcp --record` (stdio, one call at a
//! time) against a generated repository, then time `ctx run replay` of it.
//!
//! Run with `cargo bench -p ctx-cli --bench replay` (release profile). Prints the recording
//! time, then the wall time of each replay and the median, with steps per second.
#![allow(clippy::print_stdout)]

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const STEPS: usize = 1_000;
const FILES: usize = 200;
const REPLAYS: usize = 5;

fn ctx(dir: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctx"));
    cmd.current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd
}

fn generate(root: &Path) {
    for i in 0..FILES {
        let dir = root.join(format!("src/m{:02}", i % 20));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut text = format!(
            "//! Module {i}.\n\nuse crate::m{:02}::f{};\n\n",
            (i + 1) % 20,
            (i + 1) % FILES
        );
        for j in 0..12 {
            let _ = writeln!(
                text,
                "/// Computes value {j} of module {i}.\npub fn f{i}_{j}(input: u64) -> u64 {{\n    let token_{i} = input * {j} + {i};\n    token_{i} ^ 0x{i:04x}\n}}\n"
            );
        }
        std::fs::write(dir.join(format!("f{i}.rs")), text).expect("write");
    }
}

/// One stdio session making the 1,000 calls one at a time: fs_read of one file, a regex
/// search, a file summary, in turn. Returns its wall time, process start to exit.
fn session(root: &Path, home: &Path, record: Option<&str>) -> Duration {
    let started = Instant::now();
    let mut args = vec!["mcp"];
    if let Some(name) = record {
        args.extend(["--record", name]);
    }
    let mut child = ctx(root, home)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ctx mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut send = |message: &serde_json::Value, answer: bool| {
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        if answer {
            line.clear();
            assert!(stdout.read_line(&mut line).expect("read") > 0);
        }
    };
    send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}),
        true,
    );
    send(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        false,
    );
    for step in 0..STEPS {
        let i = step % FILES;
        let path = format!("src/m{:02}/f{i}.rs", i % 20);
        let (tool, arguments) = match step % 3 {
            0 => (
                "fs_read",
                json!({"operations": [{"mode": "Line", "path": path}]}),
            ),
            1 => (
                "ctx_search",
                json!({"pattern": format!("token_{i}\\b"), "mode": "regex"}),
            ),
            _ => ("ctx_summarize", json!({"path": path})),
        };
        send(
            &json!({"jsonrpc": "2.0", "id": step + 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}),
            true,
        );
    }
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    started.elapsed()
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("repo");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    generate(&root);
    assert!(
        ctx(&root, &home)
            .arg("init")
            .status()
            .expect("init")
            .success()
    );

    // The same 1,000 calls without recording, then recorded.
    let plain = session(&root, &home, None);
    println!(
        "serve {STEPS} calls over stdio, not recording: {:.2} s ({:.0} calls/s)",
        plain.as_secs_f64(),
        STEPS as f64 / plain.as_secs_f64()
    );
    let recording = session(&root, &home, Some("bench"));
    println!(
        "record {STEPS} steps over stdio: {:.2} s ({:.0} calls/s, {:.2} ms per step for saving it)",
        recording.as_secs_f64(),
        STEPS as f64 / recording.as_secs_f64(),
        (recording.as_secs_f64() - plain.as_secs_f64()) * 1000.0 / STEPS as f64
    );

    let mut times: Vec<Duration> = Vec::new();
    for round in 0..REPLAYS {
        let started = Instant::now();
        let out = ctx(&root, &home)
            .args(["run", "replay", "bench", "--json"])
            .output()
            .expect("replay");
        let elapsed = started.elapsed();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(report["fidelity"], "exact");
        assert_eq!(report["exact"], STEPS);
        println!("replay {round}: {:.3} s", elapsed.as_secs_f64());
        times.push(elapsed);
    }
    times.sort();
    let median = times[REPLAYS / 2];
    println!(
        "replay {STEPS} steps (exact): median {:.3} s, min {:.3} s => {:.0} steps/s",
        median.as_secs_f64(),
        times[0].as_secs_f64(),
        STEPS as f64 / median.as_secs_f64()
    );

    let started = Instant::now();
    let out = ctx(&root, &home)
        .args(["run", "show", "bench", "--json"])
        .output()
        .expect("show");
    assert!(out.status.success());
    println!(
        "run show (loads and re-hashes all {STEPS} steps): {:.3} s",
        started.elapsed().as_secs_f64()
    );
}
