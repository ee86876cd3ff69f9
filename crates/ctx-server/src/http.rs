//! The HTTP surface: `POST /tool`, `GET /health`, the concurrency limit and request logs.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ctx::fs::read::FsReadInput;
use ctx_mcp::HostPolicy;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::guard::guard;
use crate::registry::Registry;
use crate::tool::ToolEngine;

/// Seconds a client is told to wait (`Retry-After`) when the server is at its limit.
pub const RETRY_AFTER_SECS: u32 = 1;

/// The tools `/tool` knows.
pub const TOOLS: &[&str] = &["fs_read"];

/// Everything the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: Arc<Registry>,
    engine: Arc<ToolEngine>,
    limiter: Arc<Semaphore>,
    max_concurrent: usize,
    http_limits: ctx_mcp::HttpLimits,
}

impl AppState {
    /// State for a server over `registry`, running at most `max_concurrent` requests at once.
    pub fn new(registry: Registry, engine: ToolEngine, max_concurrent: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                registry: Arc::new(registry),
                engine: Arc::new(engine),
                limiter: Arc::new(Semaphore::new(max_concurrent)),
                max_concurrent,
                http_limits: ctx_mcp::HttpLimits::default(),
            }),
        }
    }

    /// The same state with `limits` on request bodies (before it is shared).
    #[must_use]
    pub fn with_http_limits(mut self, limits: ctx_mcp::HttpLimits) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.http_limits = limits;
        }
        self
    }

    /// The workspaces.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The workspaces, shared.
    pub fn registry_handle(&self) -> Arc<Registry> {
        Arc::clone(&self.inner.registry)
    }

    /// The `fs_read` engine (for its counters).
    pub fn engine(&self) -> &ToolEngine {
        &self.inner.engine
    }
}

/// The routes: `/tool` (behind the concurrency limit, as is `extra`, e.g. `/mcp`) and
/// `/health`, all logged, and all behind one guard: `Host` and `Origin` as `policy` allows
/// (the same check the MCP transport makes), and JSON bodies only.
pub fn router(state: AppState, extra: Option<Router>, policy: HostPolicy) -> Router {
    let mut limited = Router::new()
        .route("/tool", post(tool))
        // `whole_body` holds bodies to `http.max_body_bytes`, not axum's default of 2 MB.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state.clone());
    if let Some(extra) = extra {
        limited = limited.merge(extra);
    }
    // The body is read in full (within its size and time limits) before the request takes a
    // place: a client sending slowly holds none of the `max_concurrent` places.
    let limited = limited
        .layer(middleware::from_fn_with_state(state.clone(), limit))
        .layer(middleware::from_fn_with_state(state.clone(), whole_body));
    Router::new()
        .route("/health", get(health))
        .with_state(state)
        .merge(limited)
        .layer(middleware::from_fn_with_state(Arc::new(policy), guard))
        .layer(middleware::from_fn(log_request))
}

/// Refuses a request at once with 503 and `Retry-After` when `max_concurrent` are running.
async fn limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Ok(permit) = Arc::clone(&state.inner.limiter).try_acquire_owned() else {
        let body = json!({
            "success": false,
            "result": null,
            "error": format!(
                "server busy: {} requests are running (the limit); retry after {RETRY_AFTER_SECS} s",
                state.inner.max_concurrent
            ),
            "latency_ms": 0.0,
        });
        let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, &body);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        return response;
    };
    let response = next.run(request).await;
    drop(permit);
    response
}

/// Reads a `POST` body in full, within the size and time limits, before anything else runs.
async fn whole_body(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    match ctx_mcp::read_body(request, &state.inner.http_limits, body_refusal).await {
        Ok(request) => next.run(request).await,
        Err(answer) => answer,
    }
}

/// A body over its limits, in the `/tool` answer shape.
fn body_refusal(status: StatusCode, message: &str) -> Response {
    json_response(
        status,
        &json!({ "success": false, "result": null, "error": message, "latency_ms": 0.0 }),
    )
}

/// One `tracing` event per request: method, path, status, microseconds.
async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    tracing::info!(
        target: "ctx_server::access",
        %method,
        path,
        status = response.status().as_u16(),
        micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    response
}

async fn health(State(state): State<AppState>) -> Response {
    let ids = state.inner.registry.ids();
    let body = json!({
        "status": "healthy",
        "workspaces": ids.len(),
        "workspace_ids": ids,
        "in_flight": state.inner.max_concurrent - state.inner.limiter.available_permits(),
        "max_concurrent": state.inner.max_concurrent,
        "stats": state.inner.engine.stats(),
    });
    json_response(StatusCode::OK, &body)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolRequest {
    workspace: String,
    tool: String,
    #[serde(default)]
    params: Value,
}

/// A decoded `/tool` body: which workspace, and the `fs_read` input (only `fs_read` exists).
#[derive(Debug)]
pub struct ToolCall {
    /// The workspace id the body names (not yet looked up).
    pub workspace: String,
    /// The parsed operations.
    pub input: FsReadInput,
    /// The params were one operation (not `{"operations": [...]}` or an array), so a failure
    /// of that operation fails the call.
    pub single: bool,
}

/// Why a `/tool` body was refused: a message for the client (a 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolBodyError(pub String);

/// Decodes a `/tool` body: `{workspace, tool, params}` with `tool` one of [`TOOLS`] and
/// `params` an `fs_read` input. Pure (no workspace is looked up), so it can be fuzzed.
pub fn decode_tool_body(body: &[u8]) -> Result<ToolCall, ToolBodyError> {
    parse_tool_request(body)?.into_call()
}

fn parse_tool_request(body: &[u8]) -> Result<ToolRequest, ToolBodyError> {
    serde_json::from_slice(body).map_err(|err| {
        ToolBodyError(format!(
            "invalid request body: {err}; send {{\"workspace\": ID, \"tool\": \"fs_read\", \"params\": {{...}}}}"
        ))
    })
}

impl ToolRequest {
    fn into_call(self) -> Result<ToolCall, ToolBodyError> {
        if !TOOLS.contains(&self.tool.as_str()) {
            return Err(ToolBodyError(format!(
                "unknown tool `{}`; available: {}",
                self.tool,
                TOOLS.join(", ")
            )));
        }
        let input =
            FsReadInput::from_json(&self.params).map_err(|err| ToolBodyError(err.to_string()))?;
        let single = self.params.get("operations").is_none() && !self.params.is_array();
        Ok(ToolCall {
            workspace: self.workspace,
            input,
            single,
        })
    }
}

async fn tool(State(state): State<AppState>, body: Bytes) -> Response {
    let started = Instant::now();
    let fail = |status: StatusCode, error: String, extra: Option<(&str, Value)>| {
        let mut body = json!({
            "success": false,
            "result": null,
            "error": error,
            "latency_ms": latency_ms(started),
        });
        if let Some((key, value)) = extra {
            body[key] = value;
        }
        json_response(status, &body)
    };
    let request = match parse_tool_request(&body) {
        Ok(request) => request,
        Err(err) => return fail(StatusCode::BAD_REQUEST, err.0, None),
    };
    let Some(workspace) = state.inner.registry.get(&request.workspace) else {
        let ids = state.inner.registry.ids();
        let known = if ids.is_empty() {
            "none (the workspaces directory is empty)".to_owned()
        } else {
            ids.join(", ")
        };
        return fail(
            StatusCode::NOT_FOUND,
            format!(
                "unknown workspace `{}`; known workspaces: {known}",
                request.workspace
            ),
            Some(("workspace_ids", json!(ids))),
        );
    };
    let ToolCall {
        workspace: id,
        input,
        single,
    } = match request.into_call() {
        Ok(call) => call,
        Err(err) => return fail(StatusCode::BAD_REQUEST, err.0, None),
    };
    let output = state.inner.engine.fs_read(&id, &workspace, input).await;
    // A single operation that failed fails the call, with the status of its kind (4xx: the
    // request's fault, 5xx: the server's); in a batch, errors are per operation and the call
    // answers 200.
    let failure = if single && output.failed == 1 {
        output.results[0]
            .error
            .as_ref()
            .map(|e| (e.message.clone(), e.kind))
    } else {
        None
    };
    let Some((error, kind)) = failure else {
        let body = json!({
            "success": true,
            "result": output,
            "error": null,
            "latency_ms": latency_ms(started),
        });
        return json_response(StatusCode::OK, &body);
    };
    let body = json!({
        "success": false,
        "result": output,
        "error": error,
        "kind": ctx::ErrorKind::of_fs(kind).as_str(),
        "latency_ms": latency_ms(started),
    });
    json_response(status_of(kind), &body)
}

/// The HTTP status of a failed operation's kind.
pub fn status_of(kind: &str) -> StatusCode {
    match kind {
        "not_found" => StatusCode::NOT_FOUND,
        "permission_denied" => StatusCode::FORBIDDEN,
        "invalid_input" => StatusCode::BAD_REQUEST,
        "timeout" => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn latency_ms(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).expect("JSON values serialize");
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response()
}

#[cfg(test)]
mod limit_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::Router;
    use axum::routing::post;
    use tokio::sync::Notify;

    use super::*;

    /// Requests past `max_concurrent` are refused at once with 503 and `Retry-After`, while
    /// the ones running are held (here: until `release` is notified); then there is room again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn over_the_limit_requests_get_503_with_retry_after_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("alpha")).expect("workspace");
        let mut config = crate::ServerConfig::new(dir.path());
        config.max_concurrent = 2;
        let state = config.state().expect("state");
        let release = Arc::new(Notify::new());
        let held = Arc::clone(&release);
        let slow = Router::new().route(
            "/held",
            post(move || {
                let held = Arc::clone(&held);
                async move {
                    held.notified().await;
                    "done"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let app = router(state, Some(slow), HostPolicy::for_address(addr));
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = |path: &'static str| async move {
            let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .expect("handshake");
            tokio::spawn(conn);
            let request = hyper::Request::post(path)
                .header("host", addr.to_string())
                .header("content-type", "application/json")
                .body(http_body_util::Full::new(Bytes::from_static(b"{}")))
                .expect("request");
            let response = sender.send_request(request).await.expect("response");
            let retry = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap_or_default().to_owned());
            (response.status().as_u16(), retry)
        };
        let first = tokio::spawn(client("/held"));
        let second = tokio::spawn(client("/held"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (status, retry) = tokio::time::timeout(Duration::from_secs(5), client("/held"))
            .await
            .expect("the 503 does not wait");
        assert_eq!((status, retry.as_deref()), (503, Some("1")));
        release.notify_waiters();
        assert_eq!(first.await.expect("first").0, 200);
        assert_eq!(second.await.expect("second").0, 200);
        let third = tokio::spawn(client("/held"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        release.notify_waiters();
        assert_eq!(third.await.expect("third").0, 200, "room again");
    }
}
