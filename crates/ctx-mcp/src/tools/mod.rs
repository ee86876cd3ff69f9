//! The tools: their definitions (name, schemas, annotations) and the one dispatch function
//! every call goes through, so a recorder can see each call and its answer.
//!
//! A tool is a plain function from a [`Call`] (the workspace and the raw arguments) to its
//! answer: the typed JSON (`structuredContent`) and the compact text a model reads (`content`),
//! rendered from it by the tool's renderer in [`crate::text`]. Arguments are parsed into a
//! typed struct whose JSON schema is the tool's `inputSchema`; the answer is a typed struct
//! whose schema is its `outputSchema`. Both schemas are made portable ([`crate::schema`]).
//! Tools that return content are paged by [`crate::paging`].

mod code;
mod fs;
mod packs;
mod runs;
mod select;

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::paging::{
    Cursor, MIN_MAX_TOKENS, Page, PageRequest, Render, Section, paginate, pin_for,
};
use crate::schema::{Portability, portable};
use crate::workspace::WorkspacePool;

/// Arguments larger than this (as JSON) are refused before parsing.
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// A tool's implementation.
pub type ToolFn = fn(&Call<'_>) -> Result<Page, ToolError>;

/// A tool: what `tools/list` shows, whether it writes, and its implementation.
pub struct ToolDef {
    pub tool: Tool,
    /// Offered only with `--allow-write`.
    pub write: bool,
    pub run: ToolFn,
}

/// One call: the workspace, the tool's name and its raw arguments.
pub struct Call<'a> {
    pub workspace: &'a WorkspacePool,
    pub tool: &'a str,
    pub arguments: &'a JsonObject,
    /// The server's long-lived cache of the walk and file contents (for `ctx_search`).
    pub tree_cache: &'a ctx::code::TreeCache,
    /// Told how long work advances (progress and log notifications to the client).
    pub progress: &'a dyn ctx::core::Progress,
    /// Set when the call is answered with a timeout: walks and searches stop.
    pub cancel: &'a ctx::fs::walk::Cancel,
}

impl Call<'_> {
    /// Runs `f` with a pooled [`ctx::Workspace`] that stops its walks once the call is
    /// given up.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&ctx::Workspace) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        self.workspace.with_cancel(Some(self.cancel), f)
    }

    /// Parses the arguments into the tool's argument type.
    pub fn parse<A: DeserializeOwned>(&self) -> Result<A, ToolError> {
        // The argument at fault is named (`depth`: invalid type …), so the agent knows
        // which one to change.
        serde_path_to_error::deserialize(Value::Object(self.arguments.clone())).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let message = if path.is_empty() || path == "." {
                inner.to_string()
            } else {
                format!("`{path}`: {inner}")
            };
            ToolError::invalid(self.tool, message)
        })
    }

    /// The page a call asks for, after checking `max_tokens` and `cursor`. `pin_extra` ties
    /// cursors to the state the answer was built from (a payload hash), besides the arguments.
    pub fn page_request(
        &self,
        max_tokens: Option<u64>,
        cursor: Option<&str>,
        pin_extra: &str,
    ) -> Result<PageRequest, ToolError> {
        let max_tokens = max_tokens.unwrap_or(self.workspace.max_tokens());
        if max_tokens < MIN_MAX_TOKENS {
            return Err(ToolError::invalid(
                self.tool,
                format!("`max_tokens` must be at least {MIN_MAX_TOKENS} (got {max_tokens})"),
            ));
        }
        let mut pin = pin_for(self.tool, self.arguments);
        if !pin_extra.is_empty() {
            pin = pin_for(
                &pin,
                &serde_json::Map::from_iter([(
                    "state".to_owned(),
                    Value::String(pin_extra.to_owned()),
                )]),
            );
        }
        let start = match cursor {
            Some(text) => {
                let cursor = Cursor::parse(text)?;
                cursor.check_pin(&pin)?;
                cursor.start
            }
            None => 0,
        };
        Ok(PageRequest {
            max_tokens,
            start,
            pin,
            tokenizer: self.workspace.tokenizer(),
        })
    }

    /// Serializes `answer` and cuts the page `request` asks for; `render` makes its text.
    pub fn paged(
        &self,
        answer: &impl Serialize,
        sections: &[Section],
        request: &PageRequest,
        render: Render,
    ) -> Result<Page, ToolError> {
        let value = serde_json::to_value(answer).expect("answers serialize");
        paginate(value, sections, request, render).map(|page| {
            let mut structured = crate::schema::without_nulls(page.structured);
            // A text section (a payload) is the answer's text: it is not repeated in the
            // structured answer, whose schema leaves it out (`#[schemars(skip)]`).
            if let Some(object) = structured.as_object_mut() {
                for section in sections {
                    if let Section::Text(name) = section {
                        let bytes = object
                            .remove(*name)
                            .and_then(|v| v.as_str().map(str::len))
                            .unwrap_or(0);
                        if let Some(page) = object.get_mut("page").and_then(Value::as_object_mut) {
                            page.insert("text_bytes".to_owned(), Value::from(bytes));
                        }
                    }
                }
            }
            Page { structured, ..page }
        })
    }

    /// [`Call::paged`], then leaves out of the structured answer the fields at `text_only`
    /// (`/`-separated paths, `*` for every item of a list): texts the page's text already
    /// carries, which the tool's output schema leaves out (`#[schemars(skip)]`).
    pub fn paged_text_only(
        &self,
        answer: &impl Serialize,
        sections: &[Section],
        request: &PageRequest,
        render: Render,
        text_only: &[&str],
    ) -> Result<Page, ToolError> {
        let mut page = self.paged(answer, sections, request, render)?;
        for path in text_only {
            let parts: Vec<&str> = path.split('/').collect();
            remove_at(&mut page.structured, &parts);
        }
        Ok(page)
    }

    /// Serializes an answer that is never paged, with its text.
    pub fn whole(answer: &impl Serialize, render: Render) -> Page {
        let value =
            crate::schema::without_nulls(serde_json::to_value(answer).expect("answers serialize"));
        let text = render(&value);
        Page::whole(value, text)
    }
}

/// Removes the field at `path` (`*` for every item of a list) from `value`.
fn remove_at(value: &mut Value, path: &[&str]) {
    match path {
        [] => {}
        [last] => {
            if let Some(object) = value.as_object_mut() {
                object.remove(*last);
            }
        }
        ["*", rest @ ..] => {
            if let Some(items) = value.as_array_mut() {
                for item in items {
                    remove_at(item, rest);
                }
            }
        }
        [key, rest @ ..] => {
            if let Some(inner) = value.get_mut(*key) {
                remove_at(inner, rest);
            }
        }
    }
}

/// Annotations of a tool that only reads.
fn reads() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).open_world(false)
}

/// Annotations of a tool that adds records to the store but changes nothing else.
fn records(idempotent: bool) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(false)
        .idempotent(idempotent)
        .open_world(false)
}

/// Annotations of a tool that deletes a record from the store.
fn deletes() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(false)
        .open_world(false)
}

/// Builds a definition from the argument and answer types.
fn define<A: JsonSchema + 'static, O: JsonSchema + 'static>(
    name: &'static str,
    title: &str,
    description: &'static str,
    annotations: ToolAnnotations,
    write: bool,
    run: ToolFn,
) -> ToolDef {
    let input = schema_for_input::<A>()
        .unwrap_or_else(|e| panic!("the input schema of `{name}` is not an object: {e}"));
    let input = portable(&input, Portability { descriptions: true });
    let output = portable(
        &schema_for_output::<O>(),
        Portability {
            descriptions: false,
        },
    );
    let tool = Tool::new(name, description, input)
        .with_title(title)
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(annotations);
    ToolDef { tool, write, run }
}

/// Every tool, in the order `tools/list` shows them.
pub fn definitions() -> Vec<Arc<ToolDef>> {
    let mut all = packs::definitions();
    all.extend(code::definitions());
    all.extend(fs::definitions());
    all.extend(select::definitions());
    all.extend(runs::definitions());
    all.into_iter().map(Arc::new).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks a schema and returns the paths of properties without a description.
    fn undocumented(schema: &Value, path: &str, out: &mut Vec<String>) {
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                let here = format!("{path}.{name}");
                if prop
                    .get("description")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    out.push(here.clone());
                }
                undocumented(prop, &here, out);
            }
        }
        if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
            for (name, def) in defs {
                undocumented(def, &format!("{path}#{name}"), out);
            }
        }
    }

    #[test]
    fn every_input_field_has_a_description() {
        for def in definitions() {
            let schema = Value::Object(def.tool.input_schema.as_ref().clone());
            let mut missing = Vec::new();
            undocumented(&schema, &def.tool.name, &mut missing);
            assert!(missing.is_empty(), "undocumented: {missing:?}");
            assert_eq!(schema["type"], "object");
            assert_eq!(
                schema["additionalProperties"],
                Value::Bool(false),
                "{} refuses unknown arguments",
                def.tool.name
            );
        }
    }

    #[test]
    fn every_tool_has_an_output_schema_and_annotations() {
        for def in definitions() {
            let tool = &def.tool;
            assert!(
                tool.name.starts_with("ctx_") || tool.name == "fs_read",
                "{}",
                tool.name
            );
            assert!(tool.output_schema.is_some(), "{}", tool.name);
            let annotations = tool.annotations.as_ref().expect("annotations");
            assert!(annotations.read_only_hint.is_some(), "{}", tool.name);
            assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 40));
        }
    }

    #[test]
    fn every_schema_is_portable() {
        for def in definitions() {
            let tool = &def.tool;
            for schema in [
                Value::Object(tool.input_schema.as_ref().clone()),
                Value::Object(
                    tool.output_schema
                        .as_ref()
                        .expect("output")
                        .as_ref()
                        .clone(),
                ),
            ] {
                let text = schema.to_string();
                for banned in [
                    "\"null\"",
                    "$ref",
                    "$defs",
                    "\"format\"",
                    "\"title\"",
                    "$schema",
                ] {
                    assert!(!text.contains(banned), "{}: {banned} in {text}", tool.name);
                }
            }
        }
    }

    #[test]
    fn content_tools_take_max_tokens_and_cursor() {
        for def in definitions() {
            let props = def.tool.input_schema["properties"]
                .as_object()
                .expect("props");
            let output = def.tool.output_schema.as_ref().expect("output");
            let paged = output["properties"]
                .as_object()
                .is_some_and(|p| p.contains_key("next_cursor"));
            assert_eq!(
                props.contains_key("max_tokens") && props.contains_key("cursor"),
                paged,
                "{}: max_tokens/cursor in and next_cursor out go together",
                def.tool.name
            );
        }
    }
}
