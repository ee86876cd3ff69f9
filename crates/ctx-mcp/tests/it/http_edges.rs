//! Streamable HTTP edges: a `DELETE` ends a session (202), and a `DELETE` of a session that
//! does not exist, or no longer does, is a 404, as the spec answers unknown sessions; a POST
//! body rmcp cannot read gets the JSON-RPC error for it, with its id, as on stdio.

use std::time::Duration;

use crate::common::Fixture;
use crate::common::http::HttpClient;
use ctx_mcp::HttpOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn start(server: ctx_mcp::CtxServer) -> (std::net::SocketAddr, HttpOptions) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let options = HttpOptions::for_address(addr);
    tokio::spawn(ctx_mcp::serve_http(server, listener, options.clone()));
    (addr, options)
}

/// A `DELETE /mcp` with the given headers; the status and the body.
async fn delete(addr: std::net::SocketAddr, headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n");
    for (name, value) in headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("answer in time")
        .expect("read");
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status: {text}"));
    (status, text)
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_an_unknown_session_is_a_404() {
    let fx = Fixture::new();
    let (addr, options) = start(fx.server(false)).await;
    let version = ("mcp-protocol-version", "2025-11-25");
    let (status, text) = delete(addr, &[("mcp-session-id", "no-such-session"), version]).await;
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("no such session"), "{text}");

    // A real session: DELETE ends it (202), and a second DELETE finds nothing (404).
    let mut client = HttpClient::connect(addr).await;
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let answer = client.post(&init, &[]).await;
    assert_eq!(answer.status, 200);
    let session = answer.session.expect("a session id");
    let (status, text) = delete(addr, &[("mcp-session-id", &session), version]).await;
    assert_eq!(status, 202, "{text}");
    let (status, text) = delete(addr, &[("mcp-session-id", &session), version]).await;
    assert_eq!(status, 404, "{text}");

    // Host and Origin are still checked first.
    let (status, text) = delete(
        addr,
        &[
            ("mcp-session-id", "no-such-session"),
            version,
            ("origin", "http://attacker.example"),
        ],
    )
    .await;
    assert_eq!(status, 403, "{text}");
    options.cancellation.cancel();
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_posts_get_their_json_rpc_error() {
    let fx = Fixture::new();
    let (addr, options) = start(fx.server(false)).await;
    let mut client = HttpClient::connect(addr).await;
    client.initialize().await;
    let cases = [
        (
            serde_json::json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "fs_read", "arguments": [1, 2]}}),
            200,
            -32602,
            serde_json::json!(6),
        ),
        (
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1]}),
            200,
            -32602,
            serde_json::json!(3),
        ),
        (
            serde_json::json!({"jsonrpc": "1.0", "id": "v", "method": "tools/list"}),
            400,
            -32600,
            serde_json::json!("v"),
        ),
        (serde_json::json!(17), 400, -32600, serde_json::Value::Null),
    ];
    for (message, status, code, id) in cases {
        let answer = client.post(&message, &[]).await;
        assert_eq!(answer.status, status, "{message}: {:?}", answer.messages);
        let error = &answer.messages[0];
        assert_eq!(error["error"]["code"], code, "{message}: {error}");
        assert_eq!(
            error.get("id").cloned().unwrap_or_default(),
            id,
            "{message}: {error}"
        );
    }
    let batch = client
        .post(
            &serde_json::json!([{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}]),
            &[],
        )
        .await;
    assert_eq!(batch.status, 400);
    // The session still works.
    let list = client
        .post(
            &serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
            &[],
        )
        .await;
    assert_eq!(list.status, 200);
    assert!(
        list.messages[0]["result"]["tools"].is_array(),
        "{:?}",
        list.messages
    );
    options.cancellation.cancel();
}

/// `ctx mcp --http` parses `Host` and `Origin` as `ctx serve` does: a second `Host` after a
/// good one is refused, and so is an origin whose port runs on into another name.
#[tokio::test(flavor = "multi_thread")]
async fn host_and_origin_are_parsed_strictly() {
    let fx = Fixture::new();
    let (addr, _) = start(fx.server(false)).await;
    let version = ("mcp-protocol-version", "2025-11-25");
    let session = ("mcp-session-id", "no-such-session");
    let (status, text) = delete(addr, &[("host", "attacker.example"), session, version]).await;
    assert_eq!(status, 400, "two Host headers: {text}");
    let suffixed = format!("http://{addr}.evil.com");
    let (status, text) = delete(addr, &[("origin", &suffixed), session, version]).await;
    assert_eq!(status, 403, "{suffixed}: {text}");
    let other_port = format!("http://127.0.0.1:{}", addr.port().wrapping_add(1));
    let (status, text) = delete(addr, &[("origin", &other_port), session, version]).await;
    assert_eq!(status, 403, "{other_port}: {text}");
    // The page served on this very address passes the guard (and finds no such session).
    let own = format!("http://{addr}");
    let (status, text) = delete(addr, &[("origin", &own), session, version]).await;
    assert_eq!(status, 404, "{own}: {text}");
}
