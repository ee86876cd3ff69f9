//! The MCP Streamable HTTP service of each workspace, at `/mcp/{workspace}` and at `/mcp`.
//!
//! At `/mcp` the workspace is the one the client names with a `?workspace=ID` query parameter
//! or an `X-Ctx-Workspace` header; when it names none and exactly one workspace exists, it is
//! that one. Otherwise the answer is an error listing the workspace ids (400 when the client
//! must choose, 404 for an unknown id).
//!
//! The server does not decide how a workspace's MCP server is set up (its store, its
//! settings): the front end passes an [`McpFactory`] that builds the service for a workspace
//! root. Services are built on first use and kept while the workspace directory stays the
//! same.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use ctx_mcp::CtxHttpService;
use serde_json::json;

use crate::registry::Registry;

/// Builds the MCP service for a workspace, given its id and root; an error is a message for
/// the client.
pub type McpFactory =
    Arc<dyn Fn(&str, &Path) -> Result<CtxHttpService, ctx::core::BoxError> + Send + Sync>;

/// The MCP mount: a factory and the services built so far.
#[derive(Clone)]
pub struct Mcp {
    factory: McpFactory,
    services: Arc<Mutex<HashMap<String, Built>>>,
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mcp").finish_non_exhaustive()
    }
}

/// A service built for a workspace, with the (device, inode) of the root it was built for.
type Built = ((u64, u64), CtxHttpService);

#[derive(Clone)]
struct McpState {
    mcp: Mcp,
    registry: Arc<Registry>,
}

impl Mcp {
    /// A mount that builds services with `factory`.
    pub fn new(factory: McpFactory) -> Self {
        Self {
            factory,
            services: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The routes: `/mcp/{workspace}` and `/mcp` (the workspace named by `?workspace=ID` or
    /// the `X-Ctx-Workspace` header, else the only one).
    pub(crate) fn router(self, registry: Arc<Registry>) -> Router {
        let state = McpState {
            mcp: self,
            registry,
        };
        Router::new()
            .route("/mcp", any(handle_chosen))
            .route("/mcp/{workspace}", any(handle))
            .with_state(state)
    }

    fn service(&self, id: &str, registry: &Registry) -> Result<CtxHttpService, Box<Response>> {
        let Some(workspace) = registry.get(id) else {
            return Err(Box::new(unknown_workspace(id, registry)));
        };
        let identity = workspace.root_id();
        if let Some((known, service)) = self.services.lock().expect("mcp services lock").get(id)
            && *known == identity
        {
            return Ok(service.clone());
        }
        let service = (self.factory)(id, workspace.root()).map_err(|err| {
            // The failure's own kind: a damaged or read-only store is the server's, a store
            // someone named that is not there is not found.
            let status = match ctx::kind_of(err.as_ref()) {
                Some(ctx::ErrorKind::UserInput) => StatusCode::BAD_REQUEST,
                Some(ctx::ErrorKind::NotFound) => StatusCode::NOT_FOUND,
                Some(ctx::ErrorKind::Conflict) => StatusCode::CONFLICT,
                Some(ctx::ErrorKind::Io) => StatusCode::SERVICE_UNAVAILABLE,
                Some(ctx::ErrorKind::Damaged | ctx::ErrorKind::Internal) | None => {
                    StatusCode::INTERNAL_SERVER_ERROR
                }
            };
            Box::new(error_response(
                status,
                &format!("cannot start the MCP server of workspace `{id}`: {err}"),
            ))
        })?;
        // Two first requests may both have built a service; the first one stored is the one
        // every request uses, so a session started on it is found by the next request.
        let mut services = self.services.lock().expect("mcp services lock");
        match services.get(id) {
            Some((known, stored)) if *known == identity => Ok(stored.clone()),
            _ => {
                services.insert(id.to_owned(), (identity, service.clone()));
                Ok(service)
            }
        }
    }
}

async fn handle(
    State(state): State<McpState>,
    UrlPath(workspace): UrlPath<String>,
    request: Request,
) -> Response {
    match state.mcp.service(&workspace, &state.registry) {
        Ok(service) => service.handle(request).await,
        Err(response) => *response,
    }
}

/// The header naming the workspace at `/mcp`.
pub const WORKSPACE_HEADER: &str = "x-ctx-workspace";

async fn handle_chosen(State(state): State<McpState>, request: Request) -> Response {
    let id = match chosen_workspace(&request, &state.registry) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    match state.mcp.service(&id, &state.registry) {
        Ok(service) => service.handle(request).await,
        Err(response) => *response,
    }
}

/// The workspace a request to `/mcp` is for: the one it names (query parameter or header,
/// which must agree), else the only one there is.
fn chosen_workspace(request: &Request, registry: &Registry) -> Result<String, Box<Response>> {
    let from_query = request.uri().query().and_then(|query| {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
            .find(|(key, _)| *key == "workspace")
            .map(|(_, value)| percent_decode(value))
    });
    let from_header = match request.headers().get(WORKSPACE_HEADER) {
        None => None,
        Some(value) => Some(value.to_str().map(str::to_owned).map_err(|_| {
            Box::new(error_response(
                StatusCode::BAD_REQUEST,
                "the X-Ctx-Workspace header is not valid text; send a workspace id",
            ))
        })?),
    };
    match (from_query, from_header) {
        (Some(query), Some(header)) if query != header => Err(Box::new(error_response(
            StatusCode::BAD_REQUEST,
            &format!(
                "?workspace=`{query}` and the X-Ctx-Workspace header `{header}` name different workspaces; name one"
            ),
        ))),
        (Some(id), _) | (None, Some(id)) => Ok(id),
        (None, None) => {
            let ids = registry.ids();
            match ids.as_slice() {
                [only] => Ok(only.clone()),
                [] => Err(Box::new(listing_response(
                    StatusCode::NOT_FOUND,
                    &format!(
                        "there are no workspaces yet; add a directory under {}",
                        registry.dir().display()
                    ),
                    &ids,
                ))),
                _ => Err(Box::new(listing_response(
                    StatusCode::BAD_REQUEST,
                    &format!(
                        "{} workspaces are served; name one with /mcp?workspace=ID, the X-Ctx-Workspace header or /mcp/ID; known workspaces: {}",
                        ids.len(),
                        ids.join(", ")
                    ),
                    &ids,
                ))),
            }
        }
    }
}

/// Decodes `%XX` escapes and `+` (a space) in a query value; malformed escapes stay as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    out.push(b);
                    i += 3;
                } else {
                    out.push(b'%');
                    i += 1;
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn listing_response(status: StatusCode, message: &str, ids: &[String]) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&json!({ "error": message, "workspace_ids": ids }))
            .expect("JSON values serialize"),
    )
        .into_response()
}

fn unknown_workspace(id: &str, registry: &Registry) -> Response {
    let ids = registry.ids();
    let body = json!({
        "error": format!("unknown workspace `{id}`; known workspaces: {}", ids.join(", ")),
        "workspace_ids": ids,
    });
    (
        StatusCode::NOT_FOUND,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&body).expect("JSON values serialize"),
    )
        .into_response()
}

fn error_response(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&json!({ "error": message })).expect("JSON values serialize"),
    )
        .into_response()
}
