//! The Streamable HTTP transport: Host and Origin checks, both protocol eras, and many
//! concurrent clients.

use std::time::Duration;

use crate::common::Fixture;
use crate::common::http::{HttpClient, percentile};
use ctx_mcp::HttpOptions;
use serde_json::json;

async fn start(server: ctx_mcp::CtxServer) -> (std::net::SocketAddr, HttpOptions) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let options = HttpOptions::for_address(addr);
    tokio::spawn(ctx_mcp::serve_http(server, listener, options.clone()));
    (addr, options)
}

#[tokio::test(flavor = "multi_thread")]
async fn foreign_origins_and_hosts_are_refused() {
    let fx = Fixture::new();
    let (addr, options) = start(fx.server(false)).await;
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let mut client = HttpClient::connect(addr).await;
    let evil = client
        .post(&init, &[("origin", "http://evil.example")])
        .await;
    assert_eq!(evil.status, 403);
    let evil_https = client
        .post(&init, &[("origin", "https://attacker.test:443")])
        .await;
    assert_eq!(evil_https.status, 403);
    let mut rebinding = HttpClient::connect(addr).await;
    let answer = rebinding.post(&init, &[("host", "evil.example")]).await;
    assert_eq!(
        answer.status, 403,
        "DNS rebinding: a foreign Host is refused"
    );
    let local_origin = format!("http://localhost:{}", addr.port());
    let ok = client.post(&init, &[("origin", &local_origin)]).await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.messages[0]["result"]["serverInfo"]["name"], "ctx");
    let garbage = HttpClient::connect(addr)
        .await
        .post(&json!("not a message"), &[])
        .await;
    assert!(garbage.status >= 400, "{}", garbage.status);
    options.cancellation.cancel();
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_2026_requests_need_no_session() {
    let fx = Fixture::new();
    let (addr, options) = start(fx.server(false)).await;
    let mut client = HttpClient::connect(addr).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "t", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let answer = client
        .post(
            &json!({
                "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": { "name": "ctx_search", "arguments": { "pattern": "helper" }, "_meta": meta }
            }),
            &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "ctx_search")],
        )
        .await;
    assert_eq!(answer.status, 200);
    let message = answer
        .messages
        .iter()
        .find(|m| m["id"] == 7)
        .expect("answer");
    assert_eq!(message["result"]["isError"], false, "{message}");
    assert!(answer.session.is_none(), "no session in the stateless era");
    options.cancellation.cancel();
}

/// 100 clients, each with its own session, make 20 calls each; none fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_concurrent_clients() {
    let fx = Fixture::new();
    let server = fx.with_packs().await;
    let (addr, options) = start(server).await;
    let mut tasks = Vec::new();
    for n in 0..100 {
        tasks.push(tokio::spawn(async move {
            let mut client = HttpClient::connect(addr).await;
            client.initialize().await;
            let mut latencies = Vec::new();
            for i in 0..20 {
                let (tool, args) = if (n + i) % 2 == 0 {
                    ("ctx_search", json!({ "pattern": "helper" }))
                } else {
                    ("ctx_packs_preview", json!({ "packs": ["docs"] }))
                };
                let (result, elapsed) = client.call(tool, args).await;
                assert_eq!(result["isError"], false, "{tool}: {result}");
                latencies.push(elapsed);
            }
            latencies
        }));
    }
    let mut all: Vec<Duration> = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("client"));
    }
    assert_eq!(all.len(), 2000);
    all.sort();
    // Latency figures come from the release benchmark (benches/mcp_load.rs); here only sanity.
    assert!(percentile(&all, 50.0) <= percentile(&all, 99.0));
    options.cancellation.cancel();
}

async fn start_with(
    server: ctx_mcp::CtxServer,
    limits: ctx_mcp::HttpLimits,
) -> (std::net::SocketAddr, HttpOptions) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut options = HttpOptions::for_address(addr);
    options.limits = limits;
    tokio::spawn(ctx_mcp::serve_http(server, listener, options.clone()));
    (addr, options)
}

/// A body over `http.max_body_bytes` is refused with 413 before it is parsed.
#[tokio::test(flavor = "multi_thread")]
async fn a_body_over_the_limit_is_refused_with_413() {
    let fx = Fixture::new();
    let limits = ctx_mcp::HttpLimits {
        max_body_bytes: 4096,
        ..ctx_mcp::HttpLimits::default()
    };
    let (addr, options) = start_with(fx.server(false), limits).await;
    let mut client = HttpClient::connect(addr).await;
    client.initialize().await;
    let big = json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": { "name": "ctx_search", "arguments": { "pattern": "x".repeat(8192) } }
    });
    let answer = client.post(&big, &[]).await;
    assert_eq!(answer.status, 413);
    let message = answer.messages[0]["error"]["message"]
        .as_str()
        .expect("a JSON-RPC error");
    assert!(message.contains("http.max_body_bytes"), "{message}");
    // A body within the limit on the same session still works.
    let (result, _) = client
        .call("ctx_search", json!({ "pattern": "helper" }))
        .await;
    assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
    options.cancellation.cancel();
}

/// A client sending its body a byte at a time is answered 408 when `http.body_timeout_secs`
/// has passed, and holds nothing after.
#[tokio::test(flavor = "multi_thread")]
async fn a_body_sent_too_slowly_is_answered_408() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let fx = Fixture::new();
    let limits = ctx_mcp::HttpLimits {
        body_timeout: Duration::from_secs(1),
        ..ctx_mcp::HttpLimits::default()
    };
    let (addr, options) = start_with(fx.server(false), limits).await;
    let mut slow = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{"
    );
    slow.write_all(head.as_bytes()).await.expect("send head");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut buf = [0u8; 4096];
        loop {
            match slow.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buf[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server answered the slow client");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    options.cancellation.cancel();
}

/// Past `http.max_sessions`, a new session is refused with 503 and `Retry-After`; ending one
/// makes room. Requests without a session (2026-07-28) are not counted.
#[tokio::test(flavor = "multi_thread")]
async fn sessions_past_the_limit_are_refused_until_one_ends() {
    let fx = Fixture::new();
    let limits = ctx_mcp::HttpLimits {
        max_sessions: 3,
        ..ctx_mcp::HttpLimits::default()
    };
    let (addr, options) = start_with(fx.server(false), limits).await;
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let mut client = HttpClient::connect(addr).await;
        client.initialize().await;
        sessions.push(client);
    }
    let refused = HttpClient::connect(addr).await.post(&init, &[]).await;
    assert_eq!(refused.status, 503);
    let message = refused.messages[0]["error"]["message"]
        .as_str()
        .expect("a JSON-RPC error");
    assert!(message.contains("http.max_sessions"), "{message}");
    // Sessions already open go on working.
    let (result, _) = sessions[0]
        .call("ctx_search", json!({ "pattern": "helper" }))
        .await;
    assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
    // Ending one makes room for a new one.
    assert!(sessions[1].delete().await < 300);
    let mut again = HttpClient::connect(addr).await;
    again.initialize().await;
    options.cancellation.cancel();
}

/// A session unused for `http.session_idle_secs` is closed: its id is then unknown (404).
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_session_expires() {
    let fx = Fixture::new();
    let limits = ctx_mcp::HttpLimits {
        session_idle: Duration::from_secs(1),
        ..ctx_mcp::HttpLimits::default()
    };
    let (addr, options) = start_with(fx.server(false), limits).await;
    let mut client = HttpClient::connect(addr).await;
    client.initialize().await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let answer = client
        .post(
            &json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/list" }),
            &[],
        )
        .await;
    assert_eq!(answer.status, 404, "{:?}", answer.messages);
    options.cancellation.cancel();
}
