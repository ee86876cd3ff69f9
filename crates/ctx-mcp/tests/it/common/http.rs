//! A minimal Streamable HTTP MCP client on hyper, for the load test and benchmark: one
//! keep-alive connection per client, the 2025 handshake (session id), then tool calls.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

pub struct HttpClient {
    addr: SocketAddr,
    sender: SendRequest<Full<Bytes>>,
    session: Option<String>,
    next_id: u64,
}

/// A raw answer: status and the JSON-RPC messages in the body (JSON or SSE).
pub struct Answer {
    pub status: u16,
    pub messages: Vec<Value>,
    pub session: Option<String>,
}

impl HttpClient {
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        Self {
            addr,
            sender,
            session: None,
            next_id: 1,
        }
    }

    /// POSTs one message with extra headers.
    pub async fn post(&mut self, body: &Value, headers: &[(&str, &str)]) -> Answer {
        let host = headers
            .iter()
            .find(|(name, _)| *name == "host")
            .map_or_else(|| self.addr.to_string(), |(_, v)| (*v).to_owned());
        let mut request = hyper::Request::post("/mcp")
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        for (name, value) in headers.iter().filter(|(name, _)| *name != "host") {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("request");
        self.sender.ready().await.expect("ready");
        let response = self.sender.send_request(request).await.expect("response");
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
        let messages = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text)
                .map(|v| vec![v])
                .unwrap_or_default()
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        };
        Answer {
            status,
            messages,
            session,
        }
    }

    /// initialize + notifications/initialized.
    pub async fn initialize(&mut self) {
        let answer = self
            .post(
                &json!({
                    "jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": { "name": "load", "version": "1" }
                    }
                }),
                &[],
            )
            .await;
        assert_eq!(answer.status, 200);
        self.session = Some(answer.session.expect("a session id"));
        let note = self
            .post(
                &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
                &[],
            )
            .await;
        assert!(note.status < 300, "initialized: {}", note.status);
    }

    /// Ends the session (DELETE); returns the status.
    pub async fn delete(&mut self) -> u16 {
        let mut request = hyper::Request::delete("/mcp").header("host", self.addr.to_string());
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let request = request.body(Full::new(Bytes::new())).expect("request");
        self.sender.ready().await.expect("ready");
        let response = self.sender.send_request(request).await.expect("response");
        let status = response.status().as_u16();
        let _ = response.into_body().collect().await;
        self.session = None;
        status
    }

    /// Calls a tool; returns the result object and the latency.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> (Value, Duration) {
        let id = self.next_id;
        self.next_id += 1;
        let started = Instant::now();
        let answer = self
            .post(
                &json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": { "name": tool, "arguments": arguments }
                }),
                &[],
            )
            .await;
        let elapsed = started.elapsed();
        assert_eq!(answer.status, 200, "{tool}");
        let message = answer
            .messages
            .into_iter()
            .find(|m| m.get("id") == Some(&json!(id)))
            .unwrap_or_else(|| panic!("no answer to call {id} of {tool}"));
        let result = message
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool} failed: {message}"));
        (result, elapsed)
    }
}

/// Percentile of sorted durations, in milliseconds.
pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank: p% of the way through the sorted list.
    let last = sorted.len() - 1;
    let permille = (p * 10.0).clamp(0.0, 1000.0);
    let rank = (0..=last)
        .find(|&i| (i as f64) * 1000.0 >= permille * last as f64)
        .unwrap_or(last);
    sorted[rank].as_secs_f64() * 1000.0
}
