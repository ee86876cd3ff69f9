//! The HTTP tool server end to end: /tool and /health, bad input, the concurrency limit,
//! the cache and single flight, graceful shutdown, and the sandbox attack suite over HTTP.

#[path = "../../../ctx-fs/tests/support/attacks.rs"]
mod attacks;

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::{Server, write};
use ctx_server::ServerConfig;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn workspaces() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "alpha/src/lib.rs",
        "pub fn a() {}\n// TODO one\n",
    );
    write(dir.path(), "alpha/README.md", "# alpha\nsecond\nthird\n");
    write(dir.path(), "beta/notes.txt", "beta notes\n");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_lists_workspaces_and_picks_up_new_ones() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let (status, body) = server.get("/health").await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "healthy");
    assert_eq!(body["workspaces"], 2);
    assert_eq!(body["workspace_ids"], json!(["alpha", "beta"]));
    write(dir.path(), "gamma/x.txt", "x\n");
    let (_, body) = server.get("/health").await;
    assert_eq!(body["workspace_ids"], json!(["alpha", "beta", "gamma"]));
    let (status, body) = server
        .tool("gamma", json!({"mode": "Line", "path": "x.txt"}))
        .await;
    assert_eq!(
        (status, body["success"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    std::fs::remove_dir_all(dir.path().join("gamma")).expect("rm");
    let (status, _) = server
        .tool("gamma", json!({"mode": "Line", "path": "x.txt"}))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_runs_each_mode_and_batches() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let (status, body) = server
        .tool(
            "alpha",
            json!({"operations": [
                {"mode": "Line", "path": "README.md", "start_line": -2},
                {"mode": "Directory", "path": ".", "depth": 1},
                {"mode": "Search", "path": ".", "pattern": "todo", "context_lines": 0},
                {"mode": "Line", "path": "missing.md"},
            ]}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["success"], true,
        "a batch succeeds with per-operation errors"
    );
    assert!(body["latency_ms"].as_f64().expect("latency") >= 0.0);
    let results = &body["result"]["results"];
    assert_eq!(results[0]["result"]["content"], "second\nthird");
    let paths: Vec<&str> = results[1]["result"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, ["README.md", "src", "src/lib.rs"]);
    assert_eq!(
        results[2]["result"]["matches"][0]["context"],
        "→ 2: // TODO one\n"
    );
    assert_eq!(results[3]["error"]["kind"], "not_found");
    assert_eq!(body["result"]["failed"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_clear_errors_and_status_codes() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let (status, body) = server
        .tool("nope", json!({"mode": "Line", "path": "x"}))
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["workspace_ids"], json!(["alpha", "beta"]));
    let error = body["error"].as_str().expect("error");
    assert!(
        error.contains("unknown workspace `nope`") && error.contains("alpha, beta"),
        "{error}"
    );
    for bad_id in ["..", "../alpha", ".hidden", "alpha/src", ""] {
        let (status, _) = server
            .tool(bad_id, json!({"mode": "Line", "path": "README.md"}))
            .await;
        assert_eq!(status, 404, "{bad_id}");
    }
    let (status, _, body) = server
        .post(
            "/tool",
            &json!({"workspace": "alpha", "tool": "rm_rf", "params": {}}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .expect("e")
            .contains("unknown tool `rm_rf`; available: fs_read")
    );
    let (status, _, body) =
        crate::support::request(server.addr, "POST", "/tool", Some("{not json".into())).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]
            .as_str()
            .expect("e")
            .contains("invalid request body")
    );
    let (status, body) = server.tool("alpha", json!("Line")).await;
    assert_eq!(status, 400, "{body}");
    let cases = [
        (
            json!({"mode": "Sideways", "path": "README.md"}),
            "unknown mode",
        ),
        (json!({"mode": "Search", "path": "."}), "needs a `pattern`"),
        (
            json!({"mode": "Directory", "path": ".", "depth": -1}),
            "`depth` must be 0 or more",
        ),
        (
            json!({"mode": "Line", "path": "README.md", "start_line": 9}),
            "it has 3 lines",
        ),
    ];
    for (params, needle) in cases {
        let (status, body) = server.tool("alpha", params).await;
        // A failed single operation is the request's fault: 400, with the kind in the body.
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["kind"], "user_input", "{body}");
        assert_eq!(body["success"], false);
        assert!(
            body["error"].as_str().expect("e").contains(needle),
            "{body}"
        );
    }
    write(&dir.path().join("alpha"), "latin1.txt", "");
    std::fs::write(dir.path().join("alpha/latin1.txt"), b"caf\xe9\n").expect("write");
    let (_, body) = server
        .tool("alpha", json!({"mode": "Line", "path": "latin1.txt"}))
        .await;
    let error = body["error"].as_str().expect("e");
    assert!(
        error.contains("not UTF-8") && error.contains("5 bytes"),
        "{error}"
    );
}

/// Opens a request whose body does not finish arriving until `finish`.
async fn stalled_request(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = json!({"workspace": "alpha", "tool": "fs_read", "params": {"mode": "Line", "path": "README.md"}}).to_string();
    let head = format!(
        "POST /tool HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(&body.as_bytes()[..5]).await.expect("part");
    stream
}

async fn finish(mut stream: tokio::net::TcpStream) -> String {
    let body = json!({"workspace": "alpha", "tool": "fs_read", "params": {"mode": "Line", "path": "README.md"}}).to_string();
    stream.write_all(&body.as_bytes()[5..]).await.expect("rest");
    let mut buf = vec![0; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .expect("answer in time")
        .expect("read");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Clients sending their bodies slowly hold none of the `max_concurrent` places (before, 210
/// of them locked every `POST /tool` out with 503 for 60 s): a body is read in full before
/// its request takes a place, and one that takes longer than `http.body_timeout_secs` gets
/// 408. (The 503 itself is tested in `http.rs`, with requests whose work is held.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_senders_hold_no_place_and_are_answered_408() {
    let dir = workspaces();
    let mut config = ServerConfig::new(dir.path());
    config.max_concurrent = 2;
    config.http_limits.body_timeout = Duration::from_secs(2);
    let server = Server::start(config).await;
    let stalled: Vec<_> = futures_stalled(server.addr, 4).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = server
        .tool("alpha", json!({"mode": "Line", "path": "README.md"}))
        .await;
    assert_eq!(status, 200, "four slow senders leave both places free");
    let (status, health) = server.get("/health").await;
    assert_eq!((status, health["in_flight"].as_u64()), (200, Some(0)));
    let mut stalled = stalled.into_iter();
    // A body that arrives within its time is answered.
    let first = stalled.next().expect("a stalled request");
    assert!(finish(first).await.starts_with("HTTP/1.1 200"));
    // The others, once their time is up, are answered 408 without sending more.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for mut stream in stalled {
        let mut buf = vec![0; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("answer in time")
            .expect("read");
        let answer = String::from_utf8_lossy(&buf[..n]);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("http.body_timeout_secs"), "{answer}");
    }
}

async fn futures_stalled(addr: std::net::SocketAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        streams.push(stalled_request(addr).await);
    }
    streams
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_reads_hit_the_cache_until_the_file_changes() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let read = json!({"mode": "Line", "path": "README.md"});
    let (_, first) = server.tool("alpha", read.clone()).await;
    let (_, second) = server.tool("alpha", read.clone()).await;
    assert_eq!(first["result"], second["result"]);
    let (_, health) = server.get("/health").await;
    assert_eq!(health["stats"]["cache_hits"], 1, "{health}");
    write(
        &dir.path().join("alpha"),
        "README.md",
        "# changed, and longer\n",
    );
    let (_, third) = server.tool("alpha", read).await;
    assert_eq!(
        third["result"]["results"][0]["result"]["content"],
        "# changed, and longer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_reads_in_flight_run_once() {
    let dir = workspaces();
    let big = (0..300_000).fold(String::new(), |mut acc, i| {
        let _ = writeln!(acc, "row {i} filler text");
        acc
    });
    write(&dir.path().join("alpha"), "big.txt", &big);
    let mut config = ServerConfig::new(dir.path());
    config.cache_entries = 0;
    let server = Arc::new(Server::start(config).await);
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let server = Arc::clone(&server);
        tasks.push(tokio::spawn(async move {
            server
                .tool(
                    "alpha",
                    json!({"mode": "Search", "path": "big.txt", "pattern": "row 299999 "}),
                )
                .await
        }));
    }
    for task in tasks {
        let (status, body) = task.await.expect("task");
        assert_eq!(status, 200);
        assert_eq!(body["result"]["results"][0]["result"]["total_matches"], 1);
    }
    let (_, health) = server.get("/health").await;
    let stats = &health["stats"];
    assert!(stats["deduplicated"].as_u64().expect("n") > 0, "{stats}");
    assert_eq!(
        stats["operations"].as_u64().expect("n") + stats["deduplicated"].as_u64().expect("n"),
        40,
        "{stats}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_requests_in_flight_finish() {
    let dir = workspaces();
    let mut server = Server::start(ServerConfig::new(dir.path())).await;
    let held = stalled_request(server.addr).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.shutdown();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(finish(held).await.starts_with("HTTP/1.1 200"));
    let result = tokio::time::timeout(Duration::from_secs(5), server.task.take().expect("task"))
        .await
        .expect("the server stops")
        .expect("join");
    assert!(result.is_ok(), "{result:?}");
    assert!(
        tokio::net::TcpStream::connect(server.addr).await.is_err(),
        "still listening"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attack_suite_gets_no_byte_out_over_http() {
    let fixture = attacks::build();
    // The fixture's base holds `ws` (the workspace) and `outside`.
    let server = Server::start(ServerConfig::new(&fixture.base)).await;
    let cases = attacks::cases(&fixture);
    assert!(cases.len() >= 30);
    for case in &cases {
        for op in [
            json!({"mode": "Line", "path": case.path}),
            json!({"mode": "Directory", "path": case.path, "depth": 2}),
            json!({"mode": "Search", "path": case.path, "pattern": "secret"}),
        ] {
            let (status, body) = server.tool("ws", op).await;
            assert_eq!(body["success"], false, "{}: {body}", case.name);
            let kind = body["result"]["results"][0]["error"]["kind"]
                .as_str()
                .expect("kind");
            assert_eq!(
                status,
                ctx_server::status_of(kind).as_u16(),
                "{}: {body}",
                case.name
            );
            assert!(
                status / 100 == 4,
                "{}: refused as the request's fault",
                case.name
            );
            assert!(
                case.expect.iter().any(|k| k == kind),
                "{}: {kind}",
                case.name
            );
            assert!(!body.to_string().contains(attacks::SECRET), "{}", case.name);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = attacks::flipper(&fixture.root, Arc::clone(&stop));
    let mut round = 0;
    while !attacks::raced_enough(round, 300, &flipper) {
        round += 1;
        let (_, body) = server
            .tool(
                "ws",
                json!({"operations": [
                    {"mode": "Line", "path": "race/only_outside.txt"},
                    {"mode": "Directory", "path": "race"},
                    {"mode": "Search", "path": "race", "pattern": "secret"},
                ]}),
            )
            .await;
        let text = body.to_string();
        assert!(!text.contains(attacks::SECRET), "{text}");
        assert!(!text.contains("only_outside.txt\",\"kind"), "{text}");
    }
    stop.store(true, Ordering::Relaxed);
    assert!(flipper.join().expect("flipper") > 10);
}
