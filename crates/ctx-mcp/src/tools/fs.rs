//! `fs_read`: the file engine's batched Line / Directory / Search reads (issue 7), inside the
//! workspace sandbox, with the answer capped at `max_tokens`.
//!
//! The engine caps its answers in bytes and says how to continue (`next_start_line`,
//! `next_offset`), so this tool pages that way rather than with a cursor: it asks for about
//! four bytes per token and, if the answer still has too many tokens, asks again for less.

use ctx::fs::{FsReadInput, ReadOptions, fs_read as read};
use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::{Call, ToolDef, reads};
use crate::error::ToolError;
use crate::paging::MIN_MAX_TOKENS;
use crate::paging::Page;
use crate::schema::{Portability, portable};
use crate::text;

pub fn definitions() -> Vec<ToolDef> {
    let mut input = ctx::fs::read::input_schema();
    input["additionalProperties"] = json!(false);
    input["properties"]["max_tokens"] = json!({
        "type": "integer",
        "minimum": MIN_MAX_TOKENS,
        "description": "Token cap of the answer's text (default 8000); a cut result says how to continue."
    });
    // Shorter words for the engine's descriptions: `tools/list` is read every session.
    let operation = &mut input["properties"]["operations"]["items"]["properties"];
    for (name, description) in [
        (
            "mode",
            "Line (lines of a file), Directory (list it) or Search (a pattern in a file or under a directory).",
        ),
        ("path", "File or directory."),
        (
            "start_line",
            "Line: first line, 1-based; negative counts from the end.",
        ),
        (
            "end_line",
            "Line: last line, inclusive; negative counts from the end.",
        ),
        ("depth", "Directory: levels below the children to list."),
        (
            "offset",
            "Directory, Search: entries or matches to skip (to continue).",
        ),
        (
            "pattern",
            "Search: the text (case-insensitive unless case_sensitive).",
        ),
        ("regex", "Search: pattern is a regular expression."),
        ("case_sensitive", "Search: match case."),
        ("context_lines", "Search: lines around each match."),
    ] {
        if operation.get(name).is_some() {
            operation[name]["description"] = json!(description);
        }
    }
    input["properties"]["operations"]["description"] =
        json!("Operations; each succeeds or fails alone.");
    input["properties"]["summary"]["description"] = json!("Why these reads (ignored).");
    let output = json!({
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "description": "One entry per operation, in request order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "mode": { "type": "string", "description": "The operation's mode as requested." },
                        "path": { "type": "string", "description": "The operation's path as requested." },
                        "ok": { "type": "boolean", "description": "Whether it succeeded." },
                        "result": { "type": "object", "description": "Line: start_line, end_line, total_lines, truncated, next_start_line (the lines are the answer's text). Directory: entries, total_entries, truncated, next_offset. Search: matches, total_matches, truncated." },
                        "error": {
                            "type": "object",
                            "description": "Why it failed.",
                            "properties": {
                                "kind": { "type": "string", "description": "not_found, permission_denied, invalid_input or io." },
                                "message": { "type": "string", "description": "What was wrong and what to do." }
                            },
                            "required": ["kind", "message"]
                        }
                    },
                    "required": ["mode", "path", "ok"]
                }
            },
            "failed": { "type": "integer", "description": "How many operations failed." },
            "truncated": { "type": "boolean", "description": "Whether the cap cut any result short." },
            "max_response_bytes": { "type": "integer", "description": "The byte cap that applied." }
        },
        "required": ["results", "failed", "truncated", "max_response_bytes"]
    });
    let object = |v: Value| -> JsonObject {
        match v {
            Value::Object(map) => map,
            _ => unreachable!("schemas are objects"),
        }
    };
    let annotations = reads();
    let tool = Tool::new(
        "fs_read",
        "Read files in the workspace, several operations per call: lines of a file, a directory listing, or a search with context.",
        portable(&object(input), Portability { descriptions: true }),
    )
    .with_title("Read files")
    .with_raw_output_schema(std::sync::Arc::new(portable(
        &object(output),
        Portability {
            descriptions: false,
        },
    )))
    .with_annotations(annotations);
    vec![ToolDef {
        tool,
        write: false,
        run: fs_read,
    }]
}

fn fs_read(call: &Call<'_>) -> Result<Page, ToolError> {
    let mut arguments = call.arguments.clone();
    let max_tokens = match arguments.remove("max_tokens") {
        None | Some(Value::Null) => call.workspace.max_tokens(),
        Some(value) => value.as_u64().ok_or_else(|| {
            ToolError::invalid(
                call.tool,
                format!("`max_tokens` must be a whole number, not {value}"),
            )
        })?,
    };
    if max_tokens < MIN_MAX_TOKENS {
        return Err(ToolError::invalid(
            call.tool,
            format!("`max_tokens` must be at least {MIN_MAX_TOKENS} (got {max_tokens})"),
        ));
    }
    if !arguments.contains_key("operations") {
        return Err(ToolError::invalid(
            call.tool,
            "missing `operations`: give a list of operations, as in {\"operations\": [{\"mode\": \"Line\", \"path\": \"README.md\"}]}".to_owned(),
        ));
    }
    let input = FsReadInput::from_json(&Value::Object(arguments))
        .map_err(|e| ToolError::invalid(call.tool, e.to_string()))?;
    let sandbox = call.workspace.sandbox()?;
    let tokenizer = call.workspace.tokenizer();
    let max = usize::try_from(max_tokens).unwrap_or(usize::MAX);
    let mut bytes = max.saturating_mul(4);
    for _ in 0..4 {
        let options = ReadOptions {
            max_response_bytes: bytes,
            cancel: Some(std::sync::Arc::clone(call.cancel)),
            ..ReadOptions::default()
        };
        let out = read(sandbox, &input, &options);
        let value = crate::schema::without_nulls(
            serde_json::to_value(&out).expect("fs_read output serializes"),
        );
        let text = text::fs_read(&value);
        let tokens = if text.len() <= max {
            text.len()
        } else {
            tokenizer.count(&text)
        };
        if tokens <= max {
            if out.failed > 0 && out.failed == out.results.len() {
                let errors: Vec<_> = out
                    .results
                    .iter()
                    .filter_map(|r| r.error.as_ref().map(|e| (r.path.as_str(), e)))
                    .collect();
                let messages: Vec<String> = errors
                    .iter()
                    .map(|(path, e)| format!("{path}: {}", e.message))
                    .collect();
                // Every operation failed: the call's kind is theirs when they agree.
                let kind = match errors.first() {
                    Some((_, first)) if errors.iter().all(|(_, e)| e.kind == first.kind) => {
                        ctx::ErrorKind::of_fs(first.kind)
                    }
                    _ => ctx::ErrorKind::UserInput,
                };
                return Err(ToolError::failed(kind, messages.join("\n")));
            }
            // A file's lines are the answer's text; the structured answer keeps their range
            // and counts, not the lines again.
            let mut structured = value;
            if let Some(results) = structured["results"].as_array_mut() {
                for result in results {
                    if let Some(read) = result["result"].as_object_mut() {
                        read.remove("content");
                    }
                }
            }
            return Ok(Page::whole(structured, text));
        }
        // Too many tokens: shrink the byte cap in proportion, with a margin for the frame.
        let scaled = (bytes as u128 * max as u128 * 9) / (10 * tokens as u128);
        bytes = usize::try_from(scaled).unwrap_or(usize::MAX).max(1);
    }
    Err(ToolError::TooLarge(format!(
        "the answer does not fit in max_tokens {max_tokens} even cut short; raise max_tokens or ask for fewer operations"
    )))
}
