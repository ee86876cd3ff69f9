//! Shared harness for the CLI tests: an isolated temp dir with a cleared environment (no
//! developer HOME, no CTX_* variables) and helpers to run `ctx` and check its results.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Env {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Env {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        let home = root.join("home");
        fs::create_dir_all(&home).expect("home");
        fs::create_dir_all(root.join("work")).expect("work");
        Self {
            _tmp: tmp,
            root,
            home,
        }
    }

    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctx"));
        cmd.args(args)
            .current_dir(self.work())
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd
    }

    /// Starts a server (`ctx serve …` or `ctx mcp --http …` listening on port 0) and returns
    /// it with its stderr and the address it announced.
    pub fn spawn_server(
        &self,
        args: &[&str],
    ) -> (
        std::process::Child,
        std::io::BufReader<std::process::ChildStderr>,
        String,
    ) {
        use std::io::BufRead as _;
        let mut cmd = self.cmd(args);
        cmd.stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("spawn the server");
        let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        for _ in 0..5 {
            let mut line = String::new();
            stderr.read_line(&mut line).expect("stderr line");
            if let Some(rest) = line.split("at http://").nth(1) {
                let addr = rest.split_whitespace().next().expect("addr").to_owned();
                return (child, stderr, addr);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("no address announced");
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(self.cmd(args))
    }

    pub fn run_with(&self, mut cmd: Command) -> Run {
        let out = cmd.output().expect("run ctx");
        Run {
            code: out.status.code().expect("exit code"),
            stdout: String::from_utf8(out.stdout).expect("utf8 stdout"),
            stderr: String::from_utf8(out.stderr).expect("utf8 stderr"),
        }
    }
}

impl Run {
    #[track_caller]
    pub fn ok(&self) -> &Self {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }

    /// A failed run: exit 2 and exactly one line on stderr that mentions `needle`.
    #[track_caller]
    pub fn bad_input(&self, needle: &str) {
        assert_eq!(
            self.code, 2,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        assert_eq!(self.stderr.lines().count(), 1, "one line: {}", self.stderr);
        assert!(self.stderr.starts_with("error: "), "{}", self.stderr);
        assert!(
            self.stderr.contains(needle),
            "`{needle}` not in: {}",
            self.stderr
        );
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).expect("JSON output")
    }
}

/// Every file under `dir` with its bytes, for "nothing changed" checks.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("readdir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), fs::read(&path).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// Runs `git` in `dir` with a fixed identity and clock, for fixture repositories.
pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.com")
        .env("GIT_COMMITTER_NAME", "Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?} failed");
}

/// Writes `files` (path, content) under `dir`, creating parent directories.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let full = dir.join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        fs::write(full, content).expect("write");
    }
}

/// Sends one HTTP/1.1 request on a fresh connection (`Connection: close`) with JSON content
/// and the MCP `Accept` header, plus `headers`; returns the raw response.
pub fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("read timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(name);
        request.push_str(": ");
        request.push_str(value);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// `ctx ARGS… mcp …` over stdio: requests by id, answers matched to them (within 30 s).
pub struct McpSession {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    next: u64,
}

impl McpSession {
    /// Starts `ctx` with `args` (which run `mcp`) and completes the handshake.
    pub fn start(env: &Env, args: &[&str]) -> Self {
        use std::io::BufRead as _;
        use std::process::Stdio;
        let mut child = env
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ctx mcp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut session = Self {
            child,
            stdin,
            lines,
            next: 1,
        };
        let init = session.request(
            "initialize",
            &serde_json::json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "ctx", "{init}");
        session.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    pub fn send(&mut self, message: &serde_json::Value) {
        self.send_line(message.to_string().as_bytes());
    }

    /// Writes `bytes` as they are (not necessarily JSON, or UTF-8), then a newline.
    pub fn send_line(&mut self, bytes: &[u8]) {
        self.write_raw(bytes);
        self.write_raw(b"\n");
    }

    /// Writes `bytes` as they are, without a newline.
    pub fn write_raw(&mut self, bytes: &[u8]) {
        use std::io::Write as _;
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    /// The next message from the server, whatever it answers (within 30 s: a missing answer
    /// fails, never hangs).
    pub fn next_message(&mut self) -> serde_json::Value {
        let line = self
            .lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("an answer from ctx mcp");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Closes the server's stdin, then waits for it to exit.
    pub fn close_and_wait(&mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("exit")
    }

    /// Closes the server's stdin (it answers what it read, then exits).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// The whole answer (`result` or `error`) to a request.
    pub fn request(&mut self, method: &str, params: &serde_json::Value) -> serde_json::Value {
        let id = self.next;
        self.next += 1;
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            let message = self.next_message();
            if message["id"] == id {
                return message;
            }
        }
    }

    pub fn call(&mut self, tool: &str, arguments: &serde_json::Value) -> serde_json::Value {
        self.request(
            "tools/call",
            &serde_json::json!({ "name": tool, "arguments": arguments }),
        )
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
