//! The checks every request passes before any route sees it: `Host` and `Origin` (the DNS
//! rebinding defence the MCP transport applies, shared through [`HostPolicy`]) and, for a
//! `POST`, a JSON body (`Content-Type: application/json`), so that a web page cannot reach a
//! route with a "simple" cross-site request (`text/plain`, forms) that skips the browser's
//! CORS preflight.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use ctx_mcp::HostPolicy;
use serde_json::json;

use crate::http::json_response;

/// Refuses a request whose `Host` or `Origin` the policy does not accept (400 or 403), or a
/// `POST` whose body is not declared JSON (415); passes everything else on.
pub(crate) async fn guard(
    State(policy): State<Arc<HostPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(rejection) = policy.check(request.uri(), request.headers()) {
        tracing::warn!(
            target: "ctx_server::access",
            path = request.uri().path(),
            "refused: {}",
            rejection.message
        );
        return refusal(rejection.status, &rejection.message);
    }
    if request.method() == Method::POST && !is_json(request.headers().get(header::CONTENT_TYPE)) {
        let sent = request.headers().get(header::CONTENT_TYPE).map_or_else(
            || "no Content-Type".to_owned(),
            |value| {
                format!(
                    "Content-Type `{}`",
                    String::from_utf8_lossy(value.as_bytes())
                )
            },
        );
        return refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!(
                "the body was sent with {sent}; send JSON with `Content-Type: application/json`"
            ),
        );
    }
    next.run(request).await
}

/// `application/json`, in any case, with or without parameters (`; charset=utf-8`).
fn is_json(value: Option<&axum::http::HeaderValue>) -> bool {
    let Some(Ok(text)) = value.map(|v| v.to_str()) else {
        return false;
    };
    let essence = text.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// The `/tool` answer shape, so a client of `/tool` reads every refusal the same way.
fn refusal(status: StatusCode, message: &str) -> Response {
    json_response(
        status,
        &json!({
            "success": false,
            "result": null,
            "error": message,
            "latency_ms": 0.0,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::is_json;
    use axum::http::HeaderValue;

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
        ] {
            assert!(is_json(Some(&HeaderValue::from_static(ok))), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonp",
            "application/json-seq",
            "",
        ] {
            assert!(!is_json(Some(&HeaderValue::from_static(bad))), "{bad}");
        }
        assert!(!is_json(None));
    }
}
