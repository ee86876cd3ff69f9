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
    /// Which `Host` and `Origin` headers are accepted.
    pub policy: HostPolicy,
    /// Stops every session and the server when cancelled.
    pub cancellation: CancellationToken,
}

impl HttpOptions {
    /// Loopback only: `localhost`, `127.0.0.1` and `::1`, from pages served on them alone.
    pub fn loopback() -> Self {
        Self {
            policy: HostPolicy::loopback(),
            cancellation: CancellationToken::new(),
        }
    }

    /// Loopback, plus the address the server is bound to when that is a specific one.
    pub fn for_address(addr: SocketAddr) -> Self {
        Self {
            policy: HostPolicy::for_address(addr),
            cancellation: CancellationToken::new(),
        }
    }
}

/// The defence against DNS rebinding and cross-site requests: which `Host` and `Origin`
/// headers an HTTP server accepts. The MCP transport enforces it (through rmcp) and the HTTP
/// tool server checks every one of its routes with [`HostPolicy::check`], so both answer the
/// same requests the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    /// Accepted `Host` header values (host names, or `host:port` for one port only).
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` header values (`scheme://host:port`, `:*` for any port). Requests from
    /// other origins get 403; requests without an `Origin` (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
}

/// Why [`HostPolicy::check`] refused a request: the HTTP status to answer and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRejection {
    /// 400 for a malformed or missing `Host`, 403 for a foreign `Host` or `Origin`.
    pub status: axum::http::StatusCode,
    /// What was refused and why, for the client.
    pub message: String,
}

impl HostPolicy {
    /// Loopback only: `localhost`, `127.0.0.1` and `::1`, from pages served on them alone.
    pub fn loopback() -> Self {
        Self {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: ["localhost", "127.0.0.1", "[::1]"]
                .iter()
                .flat_map(|h| [format!("http://{h}:*"), format!("https://{h}:*")])
                .collect(),
        }
    }

    /// Loopback, plus the address the server is bound to when that is a specific one.
    pub fn for_address(addr: SocketAddr) -> Self {
        let mut policy = Self::loopback();
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
            policy.allowed_hosts.push(host);
            policy.allowed_origins.push(format!("http://{bracketed}:*"));
        }
        policy
    }

    /// Checks a request's `Host` (or, without one, the URI's authority) and `Origin` the way
    /// rmcp's Streamable HTTP service does: the host must be an allowed one (any port unless
    /// the allowed entry names one); an `Origin`, when present, must match an allowed origin
    /// (scheme, host, and port or `:*`). An empty host list allows every host.
    pub fn check(
        &self,
        uri: &axum::http::Uri,
        headers: &axum::http::HeaderMap,
    ) -> Result<(), HostRejection> {
        use axum::http::StatusCode;
        let reject = |status: StatusCode, message: String| HostRejection { status, message };
        let host = match headers.get(axum::http::header::HOST) {
            Some(value) => {
                let text = value.to_str().map_err(|_| {
                    reject(
                        StatusCode::BAD_REQUEST,
                        "the Host header is not valid text".into(),
                    )
                })?;
                let authority = axum::http::uri::Authority::try_from(text).map_err(|_| {
                    reject(
                        StatusCode::BAD_REQUEST,
                        format!("the Host header `{text}` is not a host name"),
                    )
                })?;
                Authority::of(&authority)
            }
            None => match uri.authority() {
                Some(authority) => Authority::of(authority),
                None => {
                    return Err(reject(
                        StatusCode::BAD_REQUEST,
                        "the request has no Host header; send one".into(),
                    ));
                }
            },
        };
        let host_allowed = self.allowed_hosts.is_empty()
            || self
                .allowed_hosts
                .iter()
                .filter_map(|allowed| Authority::parse(allowed))
                .any(|allowed| {
                    allowed.host == host.host && allowed.port.is_none_or(|p| host.port == Some(p))
                });
        if !host_allowed {
            return Err(reject(
                StatusCode::FORBIDDEN,
                format!(
                    "Host `{}` is not served here (a DNS rebinding defence); use http://127.0.0.1 or http://localhost, or start the server with that host allowed",
                    host.host
                ),
            ));
        }
        let Some(origin) = headers.get(axum::http::header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin
            .to_str()
            .ok()
            .and_then(Origin::parse)
            .ok_or_else(|| {
                reject(
                    StatusCode::FORBIDDEN,
                    "the Origin header is malformed".into(),
                )
            })?;
        if self
            .allowed_origins
            .iter()
            .filter_map(|allowed| AllowedOrigin::parse(allowed))
            .any(|allowed| allowed.matches(&origin))
        {
            Ok(())
        } else {
            Err(reject(
                StatusCode::FORBIDDEN,
                format!(
                    "requests from the web page at {origin} are refused (a cross-origin defence); only pages served on this machine's loopback may call this server"
                ),
            ))
        }
    }
}

/// A host and optional port, the host lower-cased and without IPv6 brackets.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Authority {
    host: String,
    port: Option<u16>,
}

impl Authority {
    fn of(authority: &axum::http::uri::Authority) -> Self {
        Self {
            host: normalize_host(authority.host()),
            port: authority.port_u16(),
        }
    }

    /// An allowed-host entry: `host` or `host:port` (an unparsable entry is taken as a host).
    fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        Some(match axum::http::uri::Authority::try_from(entry) {
            Ok(authority) => Self::of(&authority),
            Err(_) => Self {
                host: normalize_host(entry),
                port: None,
            },
        })
    }
}

fn normalize_host(host: &str) -> String {
    host.trim_matches('[')
        .trim_matches(']')
        .to_ascii_lowercase()
}

/// An `Origin` header: `null` or scheme, host and optional port.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl Origin {
    fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.is_empty() {
            return None;
        }
        if value.eq_ignore_ascii_case("null") {
            return Some(Self::Null);
        }
        let uri = axum::http::Uri::try_from(value).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        Some(Self::Tuple {
            scheme,
            host: normalize_host(authority.host()),
            port: authority.port_u16(),
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Null => f.write_str("null"),
            Self::Tuple { scheme, host, port } => {
                write!(f, "{scheme}://{host}")?;
                match port {
                    Some(port) => write!(f, ":{port}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// An allowed-origin entry: an origin, or `scheme://host:*` for any port; an entry without a
/// port matches any port (as rmcp does for now).
struct AllowedOrigin {
    origin: Origin,
    any_port: bool,
}

impl AllowedOrigin {
    fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if let Some(base) = entry.strip_suffix(":*") {
            let origin = Origin::parse(base)?;
            return matches!(origin, Origin::Tuple { port: None, .. }).then_some(Self {
                origin,
                any_port: true,
            });
        }
        let origin = Origin::parse(entry)?;
        let any_port = matches!(origin, Origin::Tuple { port: None, .. });
        Some(Self { origin, any_port })
    }

    fn matches(&self, origin: &Origin) -> bool {
        match (&self.origin, origin) {
            (Origin::Null, Origin::Null) => true,
            (
                Origin::Tuple {
                    scheme: a_scheme,
                    host: a_host,
                    port: a_port,
                },
                Origin::Tuple { scheme, host, port },
            ) => {
                let default_port = match scheme.as_str() {
                    "http" => Some(80),
                    "https" => Some(443),
                    _ => None,
                };
                a_scheme == scheme
                    && a_host == host
                    && (self.any_port || *a_port == port.or(default_port))
            }
            _ => false,
        }
    }
}

/// The Streamable HTTP service for `server`, to mount at `/mcp` in any axum or tower app (the
/// HTTP tool server mounts it this way).
pub fn streamable_http_service(server: CtxServer, options: &HttpOptions) -> CtxHttpService {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.policy.allowed_hosts.clone())
        .with_allowed_origins(options.policy.allowed_origins.clone())
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
