//! Resources: every pack as `ctx://pack/<name>` (its settings and sources, JSON) and every
//! snapshot as `ctx://snapshot/<id>` (its payload, byte for byte).

use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

use crate::error::ToolError;
use crate::workspace::WorkspacePool;

const PACK_PREFIX: &str = "ctx://pack/";
const SNAPSHOT_PREFIX: &str = "ctx://snapshot/";

fn failed(err: &ToolError) -> ErrorData {
    ErrorData::internal_error(err.to_string(), None)
}

/// The MIME type of a payload style.
fn mime_of_style(style: &str) -> &'static str {
    match style {
        "xml" => "application/xml",
        "plain" => "text/plain",
        "json" => "application/json",
        _ => "text/markdown",
    }
}

fn style_of(policy_json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(policy_json)
        .ok()
        .and_then(|p| p.get("style").and_then(|s| s.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "markdown".to_owned())
}

/// Every pack and snapshot.
pub fn list(ws: &WorkspacePool) -> Result<Vec<Resource>, ErrorData> {
    ws.with(|ws| {
        let mut out = Vec::new();
        for pack in ws.pack_list()? {
            out.push(
                Resource::new(format!("{PACK_PREFIX}{}", pack.name), pack.name.clone())
                    .with_title(format!("Pack {}", pack.name))
                    .with_description(format!(
                        "{} source(s), budget {} tokens ({})",
                        pack.artifact_count, pack.budget_tokens, pack.tokenizer
                    ))
                    .with_mime_type("application/json"),
            );
        }
        for snapshot in ws.pack_snapshots()? {
            let id = snapshot.snapshot_id.to_string();
            let name = snapshot
                .label
                .clone()
                .unwrap_or_else(|| id[..19].to_owned());
            out.push(
                Resource::new(format!("{SNAPSHOT_PREFIX}{id}"), name)
                    .with_title(format!("Snapshot of {}", snapshot.packs.join(" + ")))
                    .with_description(format!(
                        "payload of {} ({} tokens), recorded at {} (Unix seconds)",
                        snapshot.packs.join(", "),
                        snapshot.tokens,
                        snapshot.created_at
                    ))
                    .with_mime_type(mime_of_style(&style_of(&snapshot.policy_json))),
            );
        }
        Ok(out)
    })
    .map_err(|e| failed(&e))
}

/// The URI templates of packs and snapshots.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{PACK_PREFIX}{{name}}"), "pack")
            .with_title("A pack")
            .with_description("A pack's settings and sources in render order, as JSON")
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{SNAPSHOT_PREFIX}{{id}}"), "snapshot")
            .with_title("A snapshot's payload")
            .with_description(
                "The payload a snapshot recorded, byte for byte; id is sha256:…, a unique prefix, or a label",
            ),
    ]
}

/// Reads one resource.
pub fn read(ws: &WorkspacePool, uri: &str) -> Result<ResourceContents, ErrorData> {
    if let Some(name) = uri.strip_prefix(PACK_PREFIX) {
        let view = ws
            .with(|ws| Ok(ws.pack_show(name)?))
            .map_err(|e| ErrorData::resource_not_found(format!("{uri}: {e}"), None))?;
        let text = serde_json::to_string_pretty(&view).expect("pack views serialize");
        return Ok(ResourceContents::text(text, uri).with_mime_type("application/json"));
    }
    if let Some(reference) = uri.strip_prefix(SNAPSHOT_PREFIX) {
        let (snapshot, bytes) = ws
            .with(|ws| Ok(ws.pack_snapshot_payload(reference)?))
            .map_err(|e| ErrorData::resource_not_found(format!("{uri}: {e}"), None))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            ErrorData::internal_error(
                format!("{uri}: the stored payload is not UTF-8; run `ctx store verify`"),
                None,
            )
        })?;
        return Ok(ResourceContents::text(text, uri)
            .with_mime_type(mime_of_style(&style_of(&snapshot.policy_json))));
    }
    Err(ErrorData::resource_not_found(
        format!(
            "unknown resource `{uri}`; ctx serves ctx://pack/<name> and ctx://snapshot/<id> (resources/list lists them)"
        ),
        None,
    ))
}
