//! The server over a byte stream, as an MCP client on stdio sees it: handshake, lists,
//! resources, and bad input (malformed JSON, requests before initialize, huge arguments,
//! unknown tools, closed input).

use std::time::Duration;

use crate::common::Fixture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

struct Client {
    write: DuplexStream,
    read: BufReader<DuplexStream>,
    server: tokio::task::JoinHandle<Result<(), ctx_mcp::McpError>>,
}

impl Client {
    fn start(server: ctx_mcp::CtxServer) -> Self {
        // Two pipes, like stdin and stdout: closing the client's end of the first is EOF.
        let (write, server_read) = tokio::io::duplex(64 * 1024 * 1024);
        let (server_write, read) = tokio::io::duplex(64 * 1024 * 1024);
        let server = tokio::spawn(ctx_mcp::serve_io(server, server_read, server_write));
        Self {
            write,
            read: BufReader::new(read),
            server,
        }
    }

    async fn send_raw(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.expect("write");
        self.write.write_all(b"\n").await.expect("write");
        self.write.flush().await.expect("flush");
    }

    async fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string()).await;
    }

    async fn receive(&mut self) -> Value {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(20), self.read.read_line(&mut line))
            .await
            .expect("an answer in time")
            .expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let message = self.receive().await;
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    async fn initialize(&mut self) -> Value {
        let answer = self
            .request(
                1,
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": { "name": "test", "version": "1" }
                }),
            )
            .await;
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        answer
    }

    async fn close(self) {
        drop(self.write);
        let done = tokio::time::timeout(Duration::from_secs(5), self.server)
            .await
            .expect("the server stops promptly when its input closes")
            .expect("join");
        done.expect("a closed input is a clean end");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn handshake_lists_and_calls() {
    let fx = Fixture::new();
    let mut client = Client::start(fx.with_packs().await);
    let init = client.initialize().await;
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "ctx");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert!(
        result["instructions"]
            .as_str()
            .expect("instructions")
            .contains("next_cursor")
    );
    assert!(result["capabilities"]["tools"].is_object());
    assert!(result["capabilities"]["resources"].is_object());

    let tools = client.request(2, "tools/list", json!({})).await;
    let tools = tools["result"]["tools"].as_array().expect("tools").clone();
    // 12 read tools, 3 write tools, ctx_select and ctx_index_inspect, 3 ctx_runs_* tools.
    assert_eq!(tools.len(), 20);
    let search = tools
        .iter()
        .find(|t| t["name"] == "ctx_search")
        .expect("ctx_search");
    assert_eq!(search["annotations"]["readOnlyHint"], true);
    assert_eq!(search["annotations"]["openWorldHint"], false);
    assert!(search["outputSchema"]["properties"]["results"].is_object());
    assert!(search["inputSchema"]["properties"]["pattern"]["description"].is_string());

    let called = client
        .request(
            3,
            "tools/call",
            json!({ "name": "ctx_search", "arguments": { "pattern": "helper" } }),
        )
        .await;
    let result = &called["result"];
    assert_eq!(result["isError"], false);
    assert!(
        result["structuredContent"]["total"]
            .as_u64()
            .expect("total")
            > 0
    );
    // The text is the compact form a model reads: a count line, then `line: text` under
    // each file's path.
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(
        text.starts_with(
            "4 results for `helper` (literal)\ndocs/guide.md\n3: Use `helper` to add one.\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\nsrc/main.rs\n1: use demo::helper;\n"),
        "{text}"
    );

    let unknown = client
        .request(
            4,
            "tools/call",
            json!({ "name": "ctx_nope", "arguments": {} }),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602);

    let failed = client
        .request(
            5,
            "tools/call",
            json!({ "name": "ctx_map", "arguments": { "path": "/etc" } }),
        )
        .await;
    assert_eq!(failed["result"]["isError"], true);
    assert!(
        failed["result"]["content"][0]["text"]
            .as_str()
            .expect("text")
            .contains("outside the workspace")
    );

    let resources = client.request(6, "resources/list", json!({})).await;
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["uri"].as_str().expect("uri"))
        .collect();
    assert_eq!(uris, ["ctx://pack/code", "ctx://pack/docs"]);
    let templates = client
        .request(7, "resources/templates/list", json!({}))
        .await;
    assert_eq!(
        templates["result"]["resourceTemplates"]
            .as_array()
            .expect("templates")
            .len(),
        2
    );
    let pack = client
        .request(8, "resources/read", json!({ "uri": "ctx://pack/docs" }))
        .await;
    let contents = &pack["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "application/json");
    let view: Value = serde_json::from_str(contents["text"].as_str().expect("text")).expect("json");
    assert_eq!(view["name"], "docs");

    let rendered = client
        .request(
            9,
            "tools/call",
            json!({ "name": "ctx_packs_render", "arguments": { "packs": ["docs"] } }),
        )
        .await;
    let structured = &rendered["result"]["structuredContent"];
    let uri = structured["uri"].as_str().expect("uri");
    let snapshot = client
        .request(10, "resources/read", json!({ "uri": uri }))
        .await;
    let contents = &snapshot["result"]["contents"][0];
    assert_eq!(
        contents["text"], rendered["result"]["content"][0]["text"],
        "the resource is the payload, the render's text"
    );
    assert!(
        structured.get("payload").is_none(),
        "said once, in the text"
    );
    assert_eq!(contents["mimeType"], "text/markdown");
    let missing = client
        .request(
            11,
            "resources/read",
            json!({ "uri": "ctx://snapshot/sha256:0000" }),
        )
        .await;
    assert!(
        missing["error"]["message"]
            .as_str()
            .expect("message")
            .contains("0000")
    );
    let foreign = client
        .request(12, "resources/read", json!({ "uri": "file:///etc/passwd" }))
        .await;
    assert!(
        foreign["error"]["message"]
            .as_str()
            .expect("message")
            .contains("ctx://pack")
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_gets_clear_errors_and_the_server_keeps_serving() {
    let fx = Fixture::new();
    let mut client = Client::start(fx.server(false));

    // A request before initialize (the 2025 era needs the handshake first).
    let early = client.request(1, "tools/list", json!({})).await;
    assert!(early["error"]["message"].is_string(), "{early}");
    // Malformed JSON is ignored (there is no id to answer); the server goes on.
    client.send_raw("{ this is not json").await;
    client.send_raw("[1, 2").await;
    let init = client.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "ctx");
    // Well-formed JSON that is not a message gets an error.
    client.send_raw(r#"{"hello": "world"}"#).await;
    // Huge arguments: a clear error, then more service.
    let huge = "y".repeat(ctx_mcp::MAX_ARGUMENT_BYTES * 2);
    let answer = client
        .request(
            2,
            "tools/call",
            json!({ "name": "ctx_search", "arguments": { "pattern": huge } }),
        )
        .await;
    assert_eq!(answer["result"]["isError"], true);
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .expect("text")
            .contains("limit")
    );
    let after = client
        .request(
            3,
            "tools/call",
            json!({ "name": "ctx_status", "arguments": {} }),
        )
        .await;
    assert_eq!(after["result"]["isError"], false);
    // Unknown methods are JSON-RPC errors.
    let unknown = client.request(4, "no/such/method", json!({})).await;
    assert!(unknown["error"]["code"].is_i64());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn closed_input_before_the_handshake_ends_cleanly() {
    let fx = Fixture::new();
    let client = Client::start(fx.server(false));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_requests_of_the_2026_era() {
    let fx = Fixture::new();
    let mut client = Client::start(fx.server(false));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let discover = client
        .request(1, "server/discover", json!({ "_meta": meta }))
        .await;
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "ctx",
        "{discover}"
    );
    let called = client
        .request(
            2,
            "tools/call",
            json!({ "name": "ctx_status", "arguments": {}, "_meta": meta }),
        )
        .await;
    assert_eq!(called["result"]["isError"], false, "{called}");
    assert_eq!(called["result"]["structuredContent"]["branch"], "main");
    client.close().await;
}

/// Reads messages until the answer to `id`, returning the notifications seen before it.
async fn notes_until(client: &mut Client, id: u64) -> (Vec<Value>, Value) {
    let mut notes = Vec::new();
    loop {
        let message = client.receive().await;
        if message.get("id") == Some(&json!(id)) {
            return (notes, message);
        }
        notes.push(message);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn log_level_and_progress_tokens_bring_notifications_of_long_work() {
    let fx = Fixture::new();
    let mut client = Client::start(fx.server(false));
    let init = client.initialize().await;
    assert!(
        init["result"]["capabilities"]["logging"].is_object(),
        "{init}"
    );
    let select = json!({ "name": "ctx_select", "arguments": { "query": "helper parser" } });

    // No level and no token: the answer alone.
    client
        .send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": select }))
        .await;
    let (notes, answer) = notes_until(&mut client, 2).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(notes, Vec::<Value>::new());

    let set = client
        .request(3, "logging/setLevel", json!({ "level": "info" }))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    // A change makes the index update its build: log lines and progress for token 7.
    crate::common::write(&fx.root, "src/extra.rs", "pub fn extra_helper() {}\n");
    let mut params = select.clone();
    params["_meta"] = json!({ "progressToken": 7 });
    client
        .send(&json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params }))
        .await;
    let (notes, answer) = notes_until(&mut client, 4).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "{notes:?}");
    let mut last = -1.0;
    for note in &progress {
        assert_eq!(note["params"]["progressToken"], 7);
        let value = note["params"]["progress"].as_f64().expect("progress");
        assert!(value > last || value == 0.0 && last <= 0.0, "{notes:?}");
        last = value;
    }
    let logs: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .collect();
    assert!(!logs.is_empty(), "{notes:?}");
    assert_eq!(logs[0]["params"]["level"], "info");
    assert_eq!(logs[0]["params"]["logger"], "ctx");

    // At level error, info lines stay quiet.
    client
        .request(5, "logging/setLevel", json!({ "level": "error" }))
        .await;
    crate::common::write(&fx.root, "src/extra2.rs", "pub fn extra_two() {}\n");
    client
        .send(&json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": select }))
        .await;
    let (notes, _) = notes_until(&mut client, 6).await;
    assert!(
        notes.iter().all(|n| n["method"] != "notifications/message"),
        "{notes:?}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_gets_no_answer_and_the_session_goes_on() {
    let fx = Fixture::new();
    // Enough files that building the index takes far longer than the cancellation's trip.
    for i in 0..1500 {
        crate::common::write(
            &fx.root,
            &format!("gen/m{i}.rs"),
            &format!("/// Module {i}.\npub fn helper_{i}(x: u32) -> u32 {{ x + {i} }}\n"),
        );
    }
    let mut client = Client::start(fx.server(false));
    client.initialize().await;
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "ctx_select", "arguments": { "query": "helper module" } } });
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 2, "reason": "changed my mind" } });
    client.send_raw(&format!("{call}\n{cancel}")).await;
    let pong = client.request(3, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    // Nothing answers request 2, even once the work it started is over.
    let late = tokio::time::timeout(Duration::from_secs(3), client.receive()).await;
    assert!(late.is_err(), "an answer to a cancelled request: {late:?}");
    client.close().await;
}
