//! The MCP Streamable HTTP service of each workspace, at `/mcp/{workspace}`.
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
pub type McpFactory = Arc<dyn Fn(&str, &Path) -> Result<CtxHttpService, String> + Send + Sync>;

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

    /// The routes: `/mcp/{workspace}` (and `/mcp`, which says to name a workspace).
    pub(crate) fn router(self, registry: Arc<Registry>) -> Router {
        let state = McpState {
            mcp: self,
            registry,
        };
        Router::new()
            .route("/mcp", any(no_workspace))
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
        let service = (self.factory)(id, workspace.root()).map_err(|message| {
            Box::new(error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("cannot start the MCP server of workspace `{id}`: {message}"),
            ))
        })?;
        self.services
            .lock()
            .expect("mcp services lock")
            .insert(id.to_owned(), (identity, service.clone()));
        Ok(service)
    }
}

async fn handle(
    State(state): State<McpState>,
    UrlPath(workspace): UrlPath<String>,
    request: Request,
) -> Response {
    match state.mcp.service(&workspace, &state.registry) {
        Ok(service) => service.handle(request).await.map(axum::body::Body::new),
        Err(response) => *response,
    }
}

async fn no_workspace(State(state): State<McpState>) -> Response {
    let ids = state.registry.ids();
    error_response(
        StatusCode::NOT_FOUND,
        &format!(
            "name a workspace: /mcp/{{workspace}}; known workspaces: {}",
            if ids.is_empty() {
                "none".to_owned()
            } else {
                ids.join(", ")
            }
        ),
    )
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
