//! Transports: stdio (one client on stdin/stdout until stdin closes) and Streamable HTTP at
//! `/mcp` (many clients, both protocol eras: sessions started by `initialize`, and stateless
//! 2026-07-28 requests), with `Host` and `Origin` checks against DNS rebinding.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};

use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::error::McpError;
use crate::server::CtxServer;

/// The largest message accepted on stdio or as an HTTP body. Tool arguments have a lower limit
/// of their own (`MAX_ARGUMENT_BYTES`) that is answered with a clear error.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The Streamable HTTP service type that answers at `/mcp`.
pub type CtxHttpService = StreamableHttpService<CtxServer, LocalSessionManager>;

/// Who may talk to the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Accepted `Host` header values (host names or `host:port`).
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` header values (`scheme://host:port`, `:*` for any port). Requests from
    /// other origins get 403; requests without an `Origin` (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// Stops every session and the server when cancelled.
    pub cancellation: CancellationToken,
}

impl HttpOptions {
    /// Loopback only: `localhost`, `127.0.0.1` and `::1`, from pages served on them alone.
    pub fn loopback() -> Self {
        Self {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: ["localhost", "127.0.0.1", "[::1]"]
                .iter()
                .flat_map(|h| [format!("http://{h}:*"), format!("https://{h}:*")])
                .collect(),
            cancellation: CancellationToken::new(),
        }
    }

    /// Loopback, plus the address the server is bound to when that is a specific one.
    pub fn for_address(addr: SocketAddr) -> Self {
        let mut options = Self::loopback();
        let ip = addr.ip();
        if !ip.is_loopback() && !ip.is_unspecified() {
            let host = match ip {
                IpAddr::V4(v4) => v4.to_string(),
                IpAddr::V6(v6) => v6.to_string(),
            };
            let bracketed = if ip.is_ipv6() {
                format!("[{host}]")
            } else {
                host.clone()
            };
            options.allowed_hosts.push(host);
            options
                .allowed_origins
                .push(format!("http://{bracketed}:*"));
        }
        options
    }
}

/// The Streamable HTTP service for `server`, to mount at `/mcp` in any axum or tower app (the
/// HTTP tool server mounts it this way).
pub fn streamable_http_service(server: CtxServer, options: &HttpOptions) -> CtxHttpService {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_allowed_origins(options.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES)
        .with_cancellation_token(options.cancellation.clone());
    StreamableHttpService::new(
        move || Ok(server.clone()),
        std::sync::Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// An axum router serving `server` at `/mcp`.
pub fn router(server: CtxServer, options: &HttpOptions) -> axum::Router {
    axum::Router::new().nest_service("/mcp", streamable_http_service(server, options))
}

/// Serves Streamable HTTP on `listener` until `options.cancellation` is cancelled.
pub async fn serve_http(
    server: CtxServer,
    listener: tokio::net::TcpListener,
    options: HttpOptions,
) -> Result<(), McpError> {
    use axum::serve::ListenerExt as _;
    let app = router(server, &options);
    let stop = options.cancellation.clone();
    // Answers are written in several small pieces (headers, SSE events); without NODELAY,
    // Nagle's algorithm and the client's delayed ACK add about 40 ms to each.
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {err}");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled_owned().await })
        .await
        .map_err(McpError::Http)
}

/// Serves one client over a byte stream pair (stdin/stdout, or a pipe in tests) until the
/// input closes. Input closed before the handshake is a normal end, not an error.
pub async fn serve_io<R, W>(server: CtxServer, read: R, write: W) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let transport = AsyncRwTransport::new(read, write).with_max_line_length(MAX_MESSAGE_BYTES);
    match server.serve(transport).await {
        Ok(running) => {
            running
                .waiting()
                .await
                .map_err(|e| McpError::Session(e.to_string()))?;
            Ok(())
        }
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(err) => Err(McpError::Session(err.to_string())),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, McpError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| McpError::Session(format!("cannot start the async runtime: {e}")))
}

/// Serves `server` on stdin/stdout until stdin closes (blocking; builds its own runtime).
pub fn run_stdio(server_config: &crate::McpConfig) -> Result<(), McpError> {
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let server = CtxServer::new(server_config)?;
        let (read, write) = rmcp::transport::io::stdio_pipes();
        serve_io(server, read, write).await
    });
    // Do not wait for a blocked stdin read: the client is gone.
    runtime.shutdown_background();
    result
}

/// Serves `server` over Streamable HTTP on `addr` until Ctrl-C (blocking; builds its own
/// runtime). `on_listening` is told the bound address (useful with port 0).
pub fn run_http(
    server_config: &crate::McpConfig,
    addr: SocketAddr,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), McpError> {
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        let server = CtxServer::new(server_config)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| McpError::Bind { addr, source })?;
        let bound = listener.local_addr().map_err(McpError::Http)?;
        let options = HttpOptions::for_address(bound);
        let stop = options.cancellation.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.cancel();
            }
        });
        on_listening(bound);
        serve_http(server, listener, options).await
    });
    runtime.shutdown_background();
    result
}

/// Runs `future` to completion on a fresh runtime (for front ends without one).
pub fn block_on<T>(future: impl Future<Output = T>) -> Result<T, McpError> {
    let runtime = runtime()?;
    let out = runtime.block_on(future);
    runtime.shutdown_background();
    Ok(out)
}
