//! The MCP Streamable HTTP service mounted by the tool server: `/mcp/{workspace}`, and `/mcp`
//! with the workspace named by `?workspace=ID` or `X-Ctx-Workspace`, or the only one there is.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crate::support::{Server, write};
use ctx_server::{Mcp, ServerConfig};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

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

/// The status, the JSON-RPC messages (JSON or SSE) or error body, and the session id.
struct Answer {
    status: u16,
    body: Vec<Value>,
    session: Option<String>,
}

async fn post(addr: SocketAddr, path: &str, message: &Value, headers: &[(&str, &str)]) -> Answer {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let mut request = hyper::Request::post(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(message.to_string())))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let body = if text.trim_start().starts_with('{') {
        vec![serde_json::from_str(&text).expect("JSON body")]
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    Answer {
        status,
        body,
        session,
    }
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    })
}

/// Initializes a session at `path` and lists the files at the workspace root with fs_read.
async fn root_listing(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Vec<String> {
    let init = post(addr, path, &initialize(), headers).await;
    assert_eq!(init.status, 200, "{path}: {:?}", init.body);
    assert_eq!(init.body[0]["result"]["serverInfo"]["name"], "ctx");
    let session = init.session.expect("a session id");
    let mut with_session = headers.to_vec();
    with_session.push(("mcp-session-id", &session));
    with_session.push(("mcp-protocol-version", "2025-11-25"));
    let note = post(
        addr,
        path,
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        &with_session,
    )
    .await;
    assert!(note.status < 300, "{}", note.status);
    let call = post(
        addr,
        path,
        &json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "fs_read", "arguments": { "operations": [{ "mode": "Directory", "path": "." }] } }
        }),
        &with_session,
    )
    .await;
    assert_eq!(call.status, 200);
    let entries = &call.body[0]["result"]["structuredContent"]["results"][0]["result"]["entries"];
    entries
        .as_array()
        .unwrap_or_else(|| panic!("{:?}", call.body))
        .iter()
        .map(|e| e["path"].as_str().expect("path").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_workspace_is_served_at_mcp_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspaces = dir.path().join("ws");
    write(&workspaces, "only/hello.txt", "hi\n");
    let server = Server::start_with(
        ServerConfig::new(&workspaces),
        Some(mount(&dir.path().join("store"))),
    )
    .await;
    assert_eq!(root_listing(server.addr, "/mcp", &[]).await, ["hello.txt"]);
    // The other forms name the same workspace.
    assert_eq!(
        root_listing(server.addr, "/mcp?workspace=only", &[]).await,
        ["hello.txt"]
    );
    assert_eq!(
        root_listing(server.addr, "/mcp/only", &[]).await,
        ["hello.txt"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_several_workspaces_the_client_names_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspaces = dir.path().join("ws");
    write(&workspaces, "alpha/a.txt", "a\n");
    write(&workspaces, "beta/b.txt", "b\n");
    let server = Server::start_with(
        ServerConfig::new(&workspaces),
        Some(mount(&dir.path().join("store"))),
    )
    .await;
    let addr = server.addr;

    let unnamed = post(addr, "/mcp", &initialize(), &[]).await;
    assert_eq!(unnamed.status, 400);
    let error = unnamed.body[0]["error"].as_str().expect("error");
    assert!(
        error.contains("?workspace=ID")
            && error.contains("X-Ctx-Workspace")
            && error.contains("alpha, beta"),
        "{error}"
    );
    assert_eq!(unnamed.body[0]["workspace_ids"], json!(["alpha", "beta"]));

    assert_eq!(
        root_listing(addr, "/mcp?workspace=beta", &[]).await,
        ["b.txt"]
    );
    assert_eq!(
        root_listing(addr, "/mcp", &[("x-ctx-workspace", "alpha")]).await,
        ["a.txt"]
    );
    assert_eq!(
        root_listing(addr, "/mcp?other=1&workspace=alph%61", &[]).await,
        ["a.txt"],
        "percent-escapes are decoded"
    );
    assert_eq!(root_listing(addr, "/mcp/beta", &[]).await, ["b.txt"]);

    let unknown = post(addr, "/mcp?workspace=gamma", &initialize(), &[]).await;
    assert_eq!(unknown.status, 404);
    assert!(
        unknown.body[0]["error"]
            .as_str()
            .expect("error")
            .contains("unknown workspace `gamma`")
    );
    assert_eq!(unknown.body[0]["workspace_ids"], json!(["alpha", "beta"]));
    for escape in ["..", "../ws", "alpha%2F..", "%2e%2e"] {
        let answer = post(
            addr,
            &format!("/mcp?workspace={escape}"),
            &initialize(),
            &[],
        )
        .await;
        assert_eq!(answer.status, 404, "{escape}");
    }
    let header_unknown = post(addr, "/mcp", &initialize(), &[("x-ctx-workspace", "nope")]).await;
    assert_eq!(header_unknown.status, 404);

    let conflict = post(
        addr,
        "/mcp?workspace=alpha",
        &initialize(),
        &[("x-ctx-workspace", "beta")],
    )
    .await;
    assert_eq!(conflict.status, 400);
    assert!(
        conflict.body[0]["error"]
            .as_str()
            .expect("error")
            .contains("name different workspaces")
    );
    // Agreeing query and header are fine.
    assert_eq!(
        root_listing(
            addr,
            "/mcp?workspace=alpha",
            &[("x-ctx-workspace", "alpha")]
        )
        .await,
        ["a.txt"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_workspaces_is_a_clear_404() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspaces = dir.path().join("ws");
    std::fs::create_dir_all(&workspaces).expect("mkdir");
    let server = Server::start_with(
        ServerConfig::new(&workspaces),
        Some(mount(&dir.path().join("store"))),
    )
    .await;
    let answer = post(server.addr, "/mcp", &initialize(), &[]).await;
    assert_eq!(answer.status, 404);
    let error = answer.body[0]["error"].as_str().expect("error");
    assert!(error.contains("no workspaces yet"), "{error}");
    assert_eq!(answer.body[0]["workspace_ids"], json!([]));
    // A workspace added later is served at /mcp.
    write(&workspaces, "late/x.txt", "x\n");
    assert_eq!(root_listing(server.addr, "/mcp", &[]).await, ["x.txt"]);
}

/// Many clients starting the first sessions of a workspace at once: every session started is
/// found by its next request (before, the services built by racing first requests replaced
/// each other, and 33 of 1,000 sessions answered `404 Session not found`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_session_starts_all_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspaces = dir.path().join("ws");
    write(&workspaces, "only/hello.txt", "hi\n");
    let server = Server::start_with(
        ServerConfig::new(&workspaces),
        Some(mount(&dir.path().join("store"))),
    )
    .await;
    let addr = server.addr;
    let clients: Vec<_> = (0..64)
        .map(|_| tokio::spawn(async move { root_listing(addr, "/mcp/only", &[]).await }))
        .collect();
    for client in clients {
        assert_eq!(client.await.expect("client"), ["hello.txt"]);
    }
}
