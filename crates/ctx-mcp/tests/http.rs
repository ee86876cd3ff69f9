//! The Streamable HTTP transport: Host and Origin checks, both protocol eras, and many
//! concurrent clients.

mod common;

use std::time::Duration;

use common::Fixture;
use common::http::{HttpClient, percentile};
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
