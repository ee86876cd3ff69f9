//! Transports: stdio (one client on stdin/stdout until stdin closes) and Streamable HTTP at
//! `/mcp` (many clients, both protocol eras: sessions started by `initialize`, and stateless
//! 2026-07-28 requests), with `Host` and `Origin` checks against DNS rebinding.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use rmcp::service::{RxJsonRpcMessage, ServerInitializeError, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::error::McpError;
use crate::jsonrpc::Screened;
use crate::server::CtxServer;

/// The largest message accepted on stdio. Tool arguments have a lower limit of their own
/// (`MAX_ARGUMENT_BYTES`) that is answered with a clear error; HTTP bodies have
/// [`HttpLimits::max_body_bytes`].
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What one HTTP client may cost the server: the body it may send and how slowly, and how
/// many sessions are kept and for how long. `ctx mcp --http` and `ctx serve` read these from
/// the `http.*` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// The largest request body, checked before it is parsed (413 past it).
    pub max_body_bytes: usize,
    /// How long a client may take to send its whole body (408 past it): a client sending
    /// a byte at a time holds nothing for longer.
    pub body_timeout: std::time::Duration,
    /// The most sessions kept at once; an `initialize` past it gets 503.
    pub max_sessions: usize,
    /// A session unused for this long is closed.
    pub session_idle: std::time::Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 << 20,
            body_timeout: std::time::Duration::from_secs(30),
            max_sessions: 1000,
            session_idle: std::time::Duration::from_secs(300),
        }
    }
}

impl HttpLimits {
    /// The `http.*` settings.
    ///
    /// # Errors
    ///
    /// A setting that is not a count.
    pub fn from_layers(layers: &ctx::config::ConfigLayers) -> Result<Self, McpError> {
        let count = |name: &str| -> Result<u64, McpError> {
            layers
                .count(name)
                .map_err(|err| McpError::from(ctx::CtxError::from(err)))
        };
        let size = |name: &str| -> Result<usize, McpError> {
            Ok(usize::try_from(count(name)?).unwrap_or(usize::MAX))
        };
        Ok(Self {
            max_body_bytes: size("http.max_body_bytes")?.max(1),
            body_timeout: std::time::Duration::from_secs(count("http.body_timeout_secs")?.max(1)),
            max_sessions: size("http.max_sessions")?,
            session_idle: std::time::Duration::from_secs(count("http.session_idle_secs")?.max(1)),
        })
    }
}

/// Reads a request's whole body within `limits` (its size, and the time the client takes to
/// send it), and gives back the request with the body in memory; a body too large or too slow
/// is answered here (413, 408) with `error`'s shape of answer.
///
/// # Errors
///
/// The answer to send instead, when the body is over a limit or the connection failed.
pub async fn read_body(
    request: axum::extract::Request,
    limits: &HttpLimits,
    error: fn(axum::http::StatusCode, &str) -> axum::response::Response,
) -> Result<axum::extract::Request, axum::response::Response> {
    let (parts, bytes) = read_body_bytes(request, limits, error).await?;
    Ok(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
}

/// [`read_body`], giving the request's parts and its body's bytes.
async fn read_body_bytes(
    request: axum::extract::Request,
    limits: &HttpLimits,
    error: fn(axum::http::StatusCode, &str) -> axum::response::Response,
) -> Result<(axum::http::request::Parts, axum::body::Bytes), axum::response::Response> {
    use http_body_util::BodyExt as _;
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, limits.max_body_bytes);
    match tokio::time::timeout(limits.body_timeout, limited.collect()).await {
        Ok(Ok(collected)) => Ok((parts, collected.to_bytes())),
        Ok(Err(err)) if err.is::<http_body_util::LengthLimitError>() => Err(error(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "the request body is over the {}-byte limit (the http.max_body_bytes setting); send smaller messages",
                limits.max_body_bytes
            ),
        )),
        Ok(Err(err)) => Err(error(
            axum::http::StatusCode::BAD_REQUEST,
            &format!("the request body could not be read ({err}); send it again"),
        )),
        Err(_) => Err(error(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body took longer than {} s to arrive (the http.body_timeout_secs setting); send it at once",
                limits.body_timeout.as_secs()
            ),
        )),
    }
}

/// An HTTP error as a JSON-RPC error object (the MCP transport's answers).
fn jsonrpc_error(status: axum::http::StatusCode, message: &str) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "error": { "code": crate::jsonrpc::INVALID_REQUEST, "message": message },
    });
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The Streamable HTTP service that answers at `/mcp`: rmcp's, plus a 404 for a `DELETE` of a
/// session that does not exist (the Streamable HTTP spec's answer for an unknown session; rmcp
/// answers 202 whether or not it existed).
#[derive(Clone)]
pub struct CtxHttpService {
    inner: StreamableHttpService<CtxServer, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    policy: Arc<HostPolicy>,
    limits: HttpLimits,
    /// When each open session was last used, and when idle ones were last swept.
    activity: Arc<std::sync::Mutex<Activity>>,
}

/// When each open session was last used (by id), and when idle ones were last swept.
#[derive(Debug)]
struct Activity {
    last_used: std::collections::HashMap<String, std::time::Instant>,
    swept: std::time::Instant,
}

impl std::fmt::Debug for CtxHttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CtxHttpService").finish_non_exhaustive()
    }
}

/// The header that names a Streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

impl CtxHttpService {
    /// Answers one HTTP request. After the `Host` and `Origin` checks, a JSON `POST` body
    /// passes the same screen as a stdio line ([`crate::jsonrpc::screen`]), so a request rmcp
    /// cannot read gets its JSON-RPC error (400 for `-32700`/`-32600`, 200 for `-32602`), and
    /// a `DELETE` of a session that does not exist is a 404.
    pub async fn handle(&self, request: axum::extract::Request) -> axum::response::Response {
        if let Err(rejection) = self.policy.check(request.uri(), request.headers()) {
            // Refused here, whatever rmcp's own (looser) check would say.
            let mut response =
                axum::response::Response::new(axum::body::Body::from(rejection.message));
            *response.status_mut() = rejection.status;
            response.headers_mut().insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            return response;
        }
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.sweep_idle().await;
        if let Some(id) = &session
            && self.expired(id).await
        {
            return unknown_session();
        }
        let method = request.method().clone();
        if method == axum::http::Method::DELETE
            && let Some(id) = request
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
        {
            let known = self
                .sessions
                .has_session(&id.to_owned().into())
                .await
                .unwrap_or(true);
            if !known {
                return unknown_session();
            }
        }
        let request = if method == axum::http::Method::POST && is_json(request.headers()) {
            let (parts, bytes) = match read_body_bytes(request, &self.limits, jsonrpc_error).await {
                Ok(read) => read,
                Err(answer) => return answer,
            };
            let starts_session = match crate::jsonrpc::screen(&bytes) {
                Screened::Answer(answer) => return screened_answer(&answer),
                Screened::Message(message) => matches!(
                    &*message,
                    rmcp::model::JsonRpcMessage::Request(request)
                        if request.request.method() == "initialize"
                ),
                Screened::Ignore => false,
            };
            if starts_session && !parts.headers.contains_key(SESSION_HEADER) {
                let open = self.sessions.sessions.read().await.len();
                if open >= self.limits.max_sessions {
                    let mut answer = jsonrpc_error(
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        &format!(
                            "the server holds {open} sessions, its limit (the http.max_sessions setting); end unused sessions with DELETE, or retry when idle ones have expired"
                        ),
                    );
                    answer.headers_mut().insert(
                        axum::http::header::RETRY_AFTER,
                        axum::http::HeaderValue::from_static("5"),
                    );
                    return answer;
                }
            }
            axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))
        } else {
            request
        };
        let response = self.inner.handle(request).await.map(axum::body::Body::new);
        let started = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok());
        if let Some(id) = session.as_deref().or(started) {
            let mut activity = self.activity.lock().expect("session activity lock");
            if method == axum::http::Method::DELETE {
                activity.last_used.remove(id);
            } else {
                activity
                    .last_used
                    .insert(id.to_owned(), std::time::Instant::now());
            }
        }
        response
    }

    /// Whether session `id` has been idle past its limit; if so it is ended now.
    async fn expired(&self, id: &str) -> bool {
        let idle = {
            let activity = self.activity.lock().expect("session activity lock");
            activity
                .last_used
                .get(id)
                .is_some_and(|used| used.elapsed() >= self.limits.session_idle)
        };
        if idle {
            self.end_sessions(vec![id.to_owned()]).await;
        }
        idle
    }

    /// Ends the sessions idle past their limit, at most once a second.
    async fn sweep_idle(&self) {
        let idle: Vec<String> = {
            let mut activity = self.activity.lock().expect("session activity lock");
            if activity.swept.elapsed() < std::time::Duration::from_secs(1) {
                return;
            }
            activity.swept = std::time::Instant::now();
            activity
                .last_used
                .iter()
                .filter(|(_, used)| used.elapsed() >= self.limits.session_idle)
                .map(|(id, _)| id.clone())
                .collect()
        };
        if !idle.is_empty() {
            self.end_sessions(idle).await;
        }
    }

    async fn end_sessions(&self, ids: Vec<String>) {
        for id in ids {
            self.activity
                .lock()
                .expect("session activity lock")
                .last_used
                .remove(&id);
            if let Err(err) = self.sessions.close_session(&id.clone().into()).await {
                tracing::debug!("closing idle session {id}: {err}");
            }
        }
    }
}

/// `Content-Type: application/json` (with or without parameters); rmcp answers the rest 415.
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The screen's answer to a POST: 400 when the message could not be read as a request, 200
/// with the JSON-RPC error when only its params were wrong (as rmcp answers errors).
fn screened_answer(answer: &serde_json::Value) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let codes: Vec<i64> = match answer {
        serde_json::Value::Array(items) => items
            .iter()
            .filter_map(|item| item["error"]["code"].as_i64())
            .collect(),
        one => one["error"]["code"].as_i64().into_iter().collect(),
    };
    let status = if codes
        .iter()
        .all(|code| *code == crate::jsonrpc::INVALID_PARAMS)
    {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::BAD_REQUEST
    };
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response()
}

fn unknown_session() -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "error": {
            "code": crate::jsonrpc::INVALID_REQUEST,
            "message": "no such session (it ended, or it never existed); start a new one with initialize",
        },
    });
    (
        axum::http::StatusCode::NOT_FOUND,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Who may talk to the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Which `Host` and `Origin` headers are accepted.
    pub policy: HostPolicy,
    /// Stops every session and the server when cancelled.
    pub cancellation: CancellationToken,
    /// What one client may cost.
    pub limits: HttpLimits,
}

impl HttpOptions {
    /// Loopback only: `localhost`, `127.0.0.1` and `::1`, from pages served on them alone.
    pub fn loopback() -> Self {
        Self {
            policy: HostPolicy::loopback(),
            cancellation: CancellationToken::new(),
            limits: HttpLimits::default(),
        }
    }

    /// Loopback, plus the address the server is bound to when that is a specific one.
    pub fn for_address(addr: SocketAddr) -> Self {
        Self {
            policy: HostPolicy::for_address(addr),
            cancellation: CancellationToken::new(),
            limits: HttpLimits::default(),
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

    /// The address the server is bound to, exactly: its loopback names (`localhost`,
    /// `127.0.0.1`, `::1`) and, when it is bound to a specific address, that address, each
    /// with the bound port alone, as `Host` and as `http`/`https` origins. A page served on
    /// another port of the same machine is another origin and is refused; name it in the
    /// allow-list (`allowed_origins`) to let it in.
    pub fn for_address(addr: SocketAddr) -> Self {
        let port = addr.port();
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let ip = addr.ip();
        if !ip.is_loopback() && !ip.is_unspecified() {
            hosts.push(match ip {
                IpAddr::V4(v4) => v4.to_string(),
                IpAddr::V6(v6) => v6.to_string(),
            });
        }
        let bracket = |host: &str| {
            if host.contains(':') {
                format!("[{host}]")
            } else {
                host.to_owned()
            }
        };
        Self {
            allowed_hosts: hosts
                .iter()
                .map(|h| format!("{}:{port}", bracket(h)))
                .collect(),
            allowed_origins: hosts
                .iter()
                .flat_map(|h| {
                    let h = bracket(h);
                    [format!("http://{h}:{port}"), format!("https://{h}:{port}")]
                })
                .collect(),
        }
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
        // One Host, one Origin: a second one would be read by someone else (a proxy, a
        // framework) than the one checked here.
        if headers.get_all(axum::http::header::HOST).iter().count() > 1 {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "the request has more than one Host header; send one".into(),
            ));
        }
        if headers.get_all(axum::http::header::ORIGIN).iter().count() > 1 {
            return Err(reject(
                StatusCode::FORBIDDEN,
                "the request has more than one Origin header".into(),
            ));
        }
        let host = match headers.get(axum::http::header::HOST) {
            Some(value) => {
                let text = value.to_str().map_err(|_| {
                    reject(
                        StatusCode::BAD_REQUEST,
                        "the Host header is not valid text".into(),
                    )
                })?;
                Authority::strict(text).ok_or_else(|| {
                    reject(
                        StatusCode::BAD_REQUEST,
                        format!(
                            "the Host header `{text}` is not a host name with an optional port"
                        ),
                    )
                })?
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

    /// A `Host` header: a host and an optional port of digits only, nothing else (no user
    /// part, no port like `8080.evil.com`).
    fn strict(text: &str) -> Option<Self> {
        let authority = axum::http::uri::Authority::try_from(text).ok()?;
        if text.contains('@') {
            return None;
        }
        strict_port(&authority).ok().map(|port| Self {
            host: normalize_host(authority.host()),
            port,
        })
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

/// The port of `authority`: `Ok(None)` without one, `Ok(Some(n))` for digits that make a
/// port, `Err(BadPort)` for anything else (`127.0.0.1:8080.evil.com`, `:99999`, `:`).
fn strict_port(authority: &axum::http::uri::Authority) -> Result<Option<u16>, BadPort> {
    let text = authority.as_str();
    let host = authority.host();
    let after_host = &text[text.rfind(host).map_or(text.len(), |at| at + host.len())..];
    let after_host = after_host.strip_prefix(']').unwrap_or(after_host);
    match after_host.strip_prefix(':') {
        None if after_host.is_empty() => Ok(None),
        None => Err(BadPort),
        Some(digits) => {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(BadPort);
            }
            digits.parse::<u16>().map(Some).map_err(|_| BadPort)
        }
    }
}

/// A port that is not one: [`strict_port`]'s refusal.
struct BadPort;

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
        // Exactly `scheme://host[:port]`: no user part, no path, no query, digits for a port.
        let uri = axum::http::Uri::try_from(value).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        if authority.as_str().contains('@')
            || uri.query().is_some()
            || !matches!(uri.path(), "" | "/")
            || value.ends_with('/')
        {
            return None;
        }
        Some(Self::Tuple {
            scheme,
            host: normalize_host(authority.host()),
            port: strict_port(authority).ok()?,
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
        .with_max_request_body_bytes(options.limits.max_body_bytes)
        .with_cancellation_token(options.cancellation.clone());
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(options.limits.session_idle);
    let sessions = Arc::new(manager);
    CtxHttpService {
        inner: StreamableHttpService::new(
            move || Ok(server.for_session()),
            Arc::clone(&sessions),
            config,
        ),
        sessions,
        policy: Arc::new(options.policy.clone()),
        limits: options.limits,
        activity: Arc::new(std::sync::Mutex::new(Activity {
            last_used: std::collections::HashMap::new(),
            swept: std::time::Instant::now(),
        })),
    }
}

/// An axum router serving `server` at `/mcp`.
pub fn router(server: CtxServer, options: &HttpOptions) -> axum::Router {
    let service = streamable_http_service(server, options);
    axum::Router::new().route(
        "/mcp",
        axum::routing::any(move |request: axum::extract::Request| {
            let service = service.clone();
            async move { service.handle(request).await }
        }),
    )
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
///
/// Every line is screened first ([`crate::jsonrpc::screen`]): a request rmcp could not read
/// (not JSON, not UTF-8, a wrong `jsonrpc`, non-object params, a batch, params its method's
/// schema refuses) is answered here with the JSON-RPC error for it, so a client never waits
/// for an answer that will not come; only well-formed messages reach rmcp.
pub async fn serve_io<R, W>(server: CtxServer, read: R, write: W) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let transport = LineTransport::new(read, write, MAX_MESSAGE_BYTES);
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

/// Newline-delimited JSON-RPC over a byte stream pair, each incoming line screened.
///
/// Writes (rmcp's messages and the screen's answers) go through one writer task in the order
/// they were queued, so a line is never interleaved with another and an answer queued by a
/// `receive` that is then cancelled is still written.
struct LineTransport<R> {
    read: tokio::io::BufReader<R>,
    /// The line read so far (kept across a cancelled `receive`).
    line: Vec<u8>,
    /// Skipping the rest of a line that went over the limit.
    discarding: bool,
    max_line_bytes: usize,
    out: Option<tokio::sync::mpsc::UnboundedSender<Outgoing>>,
    writer: Option<tokio::task::JoinHandle<()>>,
}

/// Bytes to write, and who to tell when they are written.
struct Outgoing {
    bytes: Vec<u8>,
    written: Option<tokio::sync::oneshot::Sender<std::io::Result<()>>>,
}

enum LineRead {
    Line,
    Oversized,
    Eof,
    Failed(std::io::Error),
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    fn new<W: AsyncWrite + Send + Unpin + 'static>(
        read: R,
        write: W,
        max_line_bytes: usize,
    ) -> Self {
        let (out, queue) = tokio::sync::mpsc::unbounded_channel();
        let writer = tokio::spawn(write_queue(write, queue));
        Self {
            read: tokio::io::BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            max_line_bytes,
            out: Some(out),
            writer: Some(writer),
        }
    }

    /// Reads up to the next `\n` (or the end of the input) into `self.line`, never holding
    /// more than the limit. Cancel-safe: nothing is consumed from the reader that is not
    /// already in `self.line`.
    async fn read_line(&mut self) -> LineRead {
        use tokio::io::AsyncBufReadExt as _;
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(err) => return LineRead::Failed(err),
            };
            if available.is_empty() {
                if self.line.is_empty() || std::mem::take(&mut self.discarding) {
                    self.line.clear();
                    return LineRead::Eof;
                }
                // A last message without a newline still counts.
                return LineRead::Line;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let outcome = if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
                None
            } else if self.line.len().saturating_add(take) > self.max_line_bytes {
                self.line.clear();
                self.discarding = newline.is_none();
                Some(LineRead::Oversized)
            } else {
                self.line.extend_from_slice(&available[..take]);
                newline.map(|_| LineRead::Line)
            };
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return outcome;
            }
        }
    }

    /// Queues an answer of the screen (a JSON value, one line).
    fn answer(&self, value: &serde_json::Value) {
        let mut bytes = serde_json::to_vec(value).unwrap_or_default();
        bytes.push(b'\n');
        if let Some(out) = &self.out {
            let _ = out.send(Outgoing {
                bytes,
                written: None,
            });
        }
    }
}

/// Waits until everything queued on `out` so far is written.
async fn drain(out: Option<tokio::sync::mpsc::UnboundedSender<Outgoing>>) {
    let Some(out) = out else {
        return;
    };
    let (written, done) = tokio::sync::oneshot::channel();
    let marker = Outgoing {
        bytes: Vec::new(),
        written: Some(written),
    };
    if out.send(marker).is_ok() {
        let _ = done.await;
    }
}

/// Writes queued messages in order, flushing after each, until the queue closes or a write
/// fails (the client is gone).
async fn write_queue<W: AsyncWrite + Unpin>(
    mut write: W,
    mut queue: tokio::sync::mpsc::UnboundedReceiver<Outgoing>,
) {
    use tokio::io::AsyncWriteExt as _;
    while let Some(Outgoing { bytes, written }) = queue.recv().await {
        let result = if bytes.is_empty() {
            Ok(())
        } else {
            match write.write_all(&bytes).await {
                Ok(()) => write.flush().await,
                Err(err) => Err(err),
            }
        };
        let failed = result.as_ref().err().map(std::io::Error::kind);
        if let Some(written) = written {
            let _ = written.send(result);
        }
        if let Some(kind) = failed {
            tracing::debug!("cannot write to the client ({kind}); stopping output");
            return;
        }
    }
}

fn transport_closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed")
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Queued now, in call order; the future only waits for the write.
        let queued = serde_json::to_vec(&item)
            .map_err(std::io::Error::other)
            .and_then(|mut bytes| {
                bytes.push(b'\n');
                let (written, done) = tokio::sync::oneshot::channel();
                let out = self.out.as_ref().ok_or_else(transport_closed)?;
                out.send(Outgoing {
                    bytes,
                    written: Some(written),
                })
                .map_err(|_| transport_closed())?;
                Ok(done)
            });
        async move { queued?.await.unwrap_or_else(|_| Err(transport_closed())) }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::Oversized => {
                    tracing::warn!(
                        limit = self.max_line_bytes,
                        "a message over the size limit was refused"
                    );
                    self.answer(&serde_json::json!({
                        "jsonrpc": "2.0",
                        "error": {
                            "code": crate::jsonrpc::INVALID_REQUEST,
                            "message": format!(
                                "the message is over the {}-byte limit and was not read; send smaller messages",
                                self.max_line_bytes
                            ),
                        },
                    }));
                    continue;
                }
                LineRead::Eof => {
                    // Every answer to what was read is out before the session ends.
                    drain(self.out.clone()).await;
                    return None;
                }
                LineRead::Failed(err) => {
                    tracing::error!("cannot read from the client: {err}");
                    drain(self.out.clone()).await;
                    return None;
                }
            }
            let screened = crate::jsonrpc::screen(&self.line);
            self.line.clear();
            match screened {
                Screened::Ignore => {}
                Screened::Message(message) => return Some(*message),
                Screened::Answer(answer) => {
                    tracing::debug!("answered a malformed message: {answer}");
                    self.answer(&answer);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing the queue lets the writer finish what is queued, then stop.
        drop(self.out.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
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
        let mut options = HttpOptions::for_address(bound);
        options.limits = HttpLimits::from_layers(&server_config.layers)?;
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

#[cfg(test)]
mod tests {
    use super::LineTransport;
    use rmcp::transport::Transport as _;
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    /// A line over the limit is answered (no id can be read) and skipped to its end; the
    /// next line is read whole, even when split across writes.
    #[tokio::test]
    async fn oversized_lines_are_answered_and_skipped() {
        let (mut client, server_in) = tokio::io::duplex(1024);
        let (server_out, answers) = tokio::io::duplex(1024);
        let mut transport = LineTransport::new(server_in, server_out, 64);
        let mut answers = tokio::io::BufReader::new(answers).lines();
        client.write_all(&[b'x'; 200]).await.expect("write");
        client
            .write_all(b"yyy\n{\"jsonrpc\":\"2.0\",")
            .await
            .expect("write");
        client
            .write_all(b"\"id\":1,\"method\":\"ping\"}\n")
            .await
            .expect("write");
        drop(client);
        let message = transport.receive().await.expect("the ping");
        assert!(
            format!("{message:?}").contains("PingRequest"),
            "{message:?}"
        );
        let answer = answers.next_line().await.expect("read").expect("an answer");
        let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert!(transport.receive().await.is_none());
        transport.close().await.expect("close");
    }
}
