//! DNS rebinding and cross-site requests: every route (`/tool`, `/health`, `/mcp`) checks
//! `Host` and `Origin` as the MCP transport does, and a `POST` body must be declared JSON.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{Server, write};
use ctx_server::{HostPolicy, Mcp, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "the secret line of notes.txt";

fn workspaces() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "alpha/notes.txt", &format!("{SECRET}\n"));
    dir
}

fn read_body() -> String {
    serde_json::json!({
        "workspace": "alpha", "tool": "fs_read",
        "params": {"mode": "Line", "path": "notes.txt"}
    })
    .to_string()
}

/// Sends one request exactly as written (headers as given, no others but Content-Length
/// and Connection) and returns the status and the whole response text.
async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let _ = write!(
        head,
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(body.as_bytes()).await.expect("body");
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
        .unwrap_or_else(|| panic!("no status line: {text}"));
    (status, text)
}

/// A mount whose servers share one store outside the workspaces.
fn mount(store: &Path) -> Mcp {
    ctx::store::Store::init(store).expect("store");
    let store = store.to_owned();
    Mcp::new(Arc::new(move |_id: &str, root: &Path| {
        let config = ctx_mcp::McpConfig::new(
            root.to_owned(),
            store.clone(),
            root.to_owned(),
            ctx::config::ConfigLayers::default(),
        );
        let server = ctx_mcp::CtxServer::new(&config)?;
        Ok(ctx_mcp::streamable_http_service(
            server,
            &ctx_mcp::HttpOptions::loopback(),
        ))
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebound_page_cannot_read_a_file_through_tool() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let loopback = format!("127.0.0.1:{}", server.addr.port());
    // The request a page on attacker.example makes once its name resolves to 127.0.0.1:
    // foreign Host and Origin, a text/plain body (no CORS preflight).
    let (status, text) = raw(
        server.addr,
        "POST",
        "/tool",
        &[
            ("host", "attacker.example"),
            ("origin", "http://attacker.example"),
            ("content-type", "text/plain"),
        ],
        &read_body(),
    )
    .await;
    assert_eq!(status, 403, "{text}");
    assert!(!text.contains(SECRET), "{text}");
    assert!(
        text.contains("attacker.example") && text.contains("DNS rebinding"),
        "{text}"
    );
    // Each of the three alone is refused too.
    for headers in [
        &[
            ("host", "attacker.example"),
            ("content-type", "application/json"),
        ][..],
        &[
            ("host", "attacker.example:80"),
            ("content-type", "application/json"),
        ][..],
        &[
            ("host", loopback.as_str()),
            ("origin", "http://attacker.example"),
            ("content-type", "application/json"),
        ][..],
        &[
            ("host", loopback.as_str()),
            ("origin", "null"),
            ("content-type", "application/json"),
        ][..],
        &[
            ("host", loopback.as_str()),
            ("origin", "http://127.0.0.1.attacker.example"),
            ("content-type", "application/json"),
        ][..],
    ] {
        let (status, text) = raw(server.addr, "POST", "/tool", headers, &read_body()).await;
        assert_eq!(status, 403, "{headers:?}: {text}");
        assert!(!text.contains(SECRET), "{text}");
    }
    let malformed = raw(
        server.addr,
        "POST",
        "/tool",
        &[
            ("host", "bad host name"),
            ("content-type", "application/json"),
        ],
        &read_body(),
    )
    .await;
    assert_eq!(malformed.0, 400, "{}", malformed.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_bodies_must_be_declared_json() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let loopback = format!("127.0.0.1:{}", server.addr.port());
    for content_type in [
        Some("text/plain"),
        Some("text/plain; charset=utf-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut headers = vec![("host", loopback.as_str())];
        if let Some(content_type) = content_type {
            headers.push(("content-type", content_type));
        }
        let (status, text) = raw(server.addr, "POST", "/tool", &headers, &read_body()).await;
        assert_eq!(status, 415, "{content_type:?}: {text}");
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("Content-Type: application/json"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_clients_still_work() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let ipv6 = format!("[::1]:{}", server.addr.port());
    let port = server.addr.port().to_string();
    let with_port = format!("127.0.0.1:{port}");
    let localhost = format!("localhost:{port}");
    let page = format!("http://localhost:{port}");
    for headers in [
        vec![
            ("host", with_port.as_str()),
            ("content-type", "application/json"),
        ],
        vec![
            ("host", localhost.as_str()),
            ("content-type", "Application/JSON; charset=utf-8"),
        ],
        vec![
            ("host", with_port.as_str()),
            ("origin", page.as_str()),
            ("content-type", "application/json"),
        ],
        vec![
            ("host", ipv6.as_str()),
            ("content-type", "application/json"),
        ],
    ] {
        let (status, text) = raw(server.addr, "POST", "/tool", &headers, &read_body()).await;
        assert_eq!(status, 200, "{headers:?}: {text}");
        assert!(text.contains(SECRET), "{text}");
    }
    let (status, text) = raw(server.addr, "GET", "/health", &[("host", &with_port)], "").await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_a_foreign_host() {
    let dir = workspaces();
    let store = tempfile::tempdir().expect("store");
    let server = Server::start_with(ServerConfig::new(dir.path()), Some(mount(store.path()))).await;
    let loopback = format!("127.0.0.1:{}", server.addr.port());
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    })
    .to_string();
    let (status, text) = raw(
        server.addr,
        "GET",
        "/health",
        &[("host", "attacker.example")],
        "",
    )
    .await;
    assert_eq!(status, 403, "{text}");
    assert!(
        !text.contains("alpha"),
        "the workspace ids stay hidden: {text}"
    );
    for path in ["/mcp", "/mcp/alpha", "/tool"] {
        let (status, text) = raw(
            server.addr,
            "POST",
            path,
            &[
                ("host", "attacker.example"),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            &initialize,
        )
        .await;
        assert_eq!(status, 403, "{path}: {text}");
        let (status, text) = raw(
            server.addr,
            "POST",
            path,
            &[
                ("host", loopback.as_str()),
                ("origin", "https://attacker.example"),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            &initialize,
        )
        .await;
        assert_eq!(status, 403, "{path}: {text}");
    }
    // The same request from a loopback host reaches the MCP service.
    let (status, text) = raw(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("host", loopback.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &initialize,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("serverInfo"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_hosts_are_configurable() {
    let dir = workspaces();
    let mut config = ServerConfig::new(dir.path());
    let mut policy = HostPolicy::loopback();
    policy.allowed_hosts.push("ctx.internal:8443".into());
    policy
        .allowed_origins
        .push("https://ctx.internal:8443".into());
    config.host_policy = Some(policy);
    let server = Server::start(config).await;
    let json = ("content-type", "application/json");
    let ok = raw(
        server.addr,
        "POST",
        "/tool",
        &[
            ("host", "ctx.internal:8443"),
            ("origin", "https://ctx.internal:8443"),
            json,
        ],
        &read_body(),
    )
    .await;
    assert_eq!(ok.0, 200, "{}", ok.1);
    let other_port = raw(
        server.addr,
        "POST",
        "/tool",
        &[("host", "ctx.internal:9000"), json],
        &read_body(),
    )
    .await;
    assert_eq!(other_port.0, 403, "{}", other_port.1);
    let other_origin = raw(
        server.addr,
        "POST",
        "/tool",
        &[
            ("host", "ctx.internal:8443"),
            ("origin", "http://ctx.internal:8443"),
            json,
        ],
        &read_body(),
    )
    .await;
    assert_eq!(other_origin.0, 403, "{}", other_origin.1);
}

/// `Host` and `Origin` are parsed, not matched by prefix: one of each, a host and a port of
/// digits, the bound port exactly, an origin with nothing after its port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_and_origin_are_parsed_strictly() {
    let dir = workspaces();
    let server = Server::start(ServerConfig::new(dir.path())).await;
    let port = server.addr.port();
    let host = format!("127.0.0.1:{port}");
    let json = ("content-type", "application/json");
    let origin_ok = format!("http://127.0.0.1:{port}");
    let ok = raw(
        server.addr,
        "POST",
        "/tool",
        &[("host", &host), ("origin", &origin_ok), json],
        &read_body(),
    )
    .await;
    assert_eq!(ok.0, 200, "{}", ok.1);
    let suffixed = format!("http://127.0.0.1:{port}.evil.com");
    let with_path = format!("http://127.0.0.1:{port}/x");
    let with_user = format!("http://user@127.0.0.1:{port}");
    let other_port = format!("http://127.0.0.1:{}", port.wrapping_add(1));
    let host_user = format!("evil@127.0.0.1:{port}");
    let host_suffixed = format!("127.0.0.1:{port}.evil.com");
    let host_other_port = format!("127.0.0.1:{}", port.wrapping_add(1));
    let cases: Vec<(Vec<(&str, &str)>, u16)> = vec![
        // A second Host after a good one.
        (
            vec![("host", &host), ("host", "attacker.example"), json],
            400,
        ),
        (
            vec![
                ("host", &host),
                ("origin", &origin_ok),
                ("origin", "http://attacker.example"),
                json,
            ],
            403,
        ),
        (vec![("host", &host), ("origin", &suffixed), json], 403),
        (vec![("host", &host), ("origin", &with_path), json], 403),
        (vec![("host", &host), ("origin", &with_user), json], 403),
        (vec![("host", &host), ("origin", &other_port), json], 403),
        (vec![("host", &host_user), json], 400),
        (vec![("host", &host_suffixed), json], 400),
        (vec![("host", &host_other_port), json], 403),
        // No port is port 80: not the bound one.
        (vec![("host", "127.0.0.1"), json], 403),
    ];
    for (headers, status) in cases {
        for path in ["/tool", "/health"] {
            let method = if path == "/tool" { "POST" } else { "GET" };
            let body = if path == "/tool" {
                read_body()
            } else {
                String::new()
            };
            let (got, text) = raw(server.addr, method, path, &headers, &body).await;
            assert_eq!(got, status, "{path} {headers:?}: {text}");
            assert!(!text.contains(SECRET), "{text}");
        }
    }
}
