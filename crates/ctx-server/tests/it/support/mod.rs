//! A server on an ephemeral port and a tiny HTTP/1 client for the tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;

use ctx_server::{Mcp, ServerConfig};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

pub struct Server {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: Option<tokio::task::JoinHandle<Result<(), ctx_server::ServerError>>>,
}

impl Server {
    pub async fn start(config: ServerConfig) -> Self {
        Self::start_with(config, None).await
    }

    pub async fn start_with(config: ServerConfig, mcp: Option<Mcp>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            ctx_server::serve(listener, &config, mcp, async {
                let _ = stopped.await;
            })
            .await
        });
        Self {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Vec<(String, String)>, Value) {
        request(self.addr, "POST", path, Some(body.to_string())).await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let (status, _, body) = request(self.addr, "GET", path, None).await;
        (status, body)
    }

    pub async fn tool(&self, workspace: &str, params: Value) -> (u16, Value) {
        let (status, _, body) = self
            .post(
                "/tool",
                &serde_json::json!({"workspace": workspace, "tool": "fs_read", "params": params}),
            )
            .await;
        (status, body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One request on a fresh connection.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<String>,
) -> (u16, Vec<(String, String)>, Value) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, headers, value)
}

pub fn write(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, body).expect("write");
}
