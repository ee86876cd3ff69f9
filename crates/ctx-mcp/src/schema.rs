//! Schemas every MCP client accepts, and answers that match them.
//!
//! schemars writes what JSON Schema allows but not every client reads: `$ref` into `$defs`,
//! `"format": "uint64"` (not a format JSON Schema defines), optional values as
//! `"type": ["string", "null"]` or `anyOf` with `{"type": "null"}`, and `title` and `$schema`
//! keys. [`portable`] rewrites a schema into the plain subset: references inlined, only
//! standard formats, an optional value as absent-or-typed (a property that may be null is
//! dropped from `required` and typed without `null`). Answers follow suit: [`without_nulls`]
//! leaves null properties out, so a structured answer conforms to its portable output schema.

use serde_json::{Map, Value};

/// The `format` values JSON Schema 2020-12 defines; any other is dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// How deep references are inlined before giving up (the answer types are not recursive).
const MAX_DEPTH: usize = 32;

/// Options of [`portable`].
#[derive(Debug, Clone, Copy)]
pub struct Portability {
    /// Keep `description` keys (input schemas), or drop them with `minimum` and, below the
    /// top level, `required` (output schemas: programs reading an answer need its types,
    /// while `tools/list` is read into every session).
    pub descriptions: bool,
}

/// The portable form of `schema` (an object schema as rmcp's `schema_for_*` returns it).
pub fn portable(schema: &Map<String, Value>, options: Portability) -> Map<String, Value> {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut root = schema.clone();
    root.remove("$defs");
    root.remove("definitions");
    root.remove("$schema");
    root.remove("title");
    match rewrite(Value::Object(root), &defs, options, 0) {
        Value::Object(map) => map,
        _ => unreachable!("an object schema stays an object"),
    }
}

fn rewrite(value: Value, defs: &Map<String, Value>, options: Portability, depth: usize) -> Value {
    let Value::Object(mut map) = value else {
        return value;
    };
    if depth > MAX_DEPTH {
        return Value::Object(map);
    }
    if let Some(Value::String(reference)) = map.get("$ref").cloned() {
        let name = reference.rsplit('/').next().unwrap_or_default();
        if let Some(Value::Object(target)) = defs.get(name) {
            map.remove("$ref");
            let mut merged = target.clone();
            // The referring schema's own keys (its description) win.
            for (key, value) in map {
                merged.insert(key, value);
            }
            merged.remove("title");
            return rewrite(Value::Object(merged), defs, options, depth + 1);
        }
    }
    map.remove("title");
    if map.get("default").is_some_and(Value::is_null) {
        map.remove("default");
    }
    if let Some(Value::String(format)) = map.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        map.remove("format");
    }
    // `"type": ["T", "null"]` -> `"type": "T"`.
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() < types.len() {
            let single = if kept.len() == 1 {
                kept.into_iter().next().expect("one type")
            } else {
                Value::Array(kept)
            };
            map.insert("type".to_owned(), single);
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
        }
    }
    // `anyOf: [S, {"type": "null"}]` -> S (with this schema's description).
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let kept: Vec<Value> = branches
                .iter()
                .filter(|b| !is_null_branch(b))
                .cloned()
                .collect();
            if kept.len() < branches.len() {
                map.remove(key);
                if kept.len() == 1 {
                    if let Value::Object(inner) = kept.into_iter().next().expect("one branch") {
                        for (k, v) in inner {
                            map.entry(k).or_insert(v);
                        }
                    }
                    if map.contains_key("$ref") {
                        return rewrite(Value::Object(map), defs, options, depth + 1);
                    }
                } else {
                    map.insert(key.to_owned(), Value::Array(kept));
                }
            }
        }
    }
    // `oneOf` of described constants -> `enum` (the parent's description names them).
    if let Some(Value::Array(branches)) = map.get("oneOf")
        && !branches.is_empty()
        && branches.iter().all(|b| {
            b.get("const").is_some_and(Value::is_string)
                && b.as_object().is_some_and(|o| {
                    o.keys()
                        .all(|k| k == "const" || k == "type" || k == "description")
                })
        })
    {
        let values: Vec<Value> = branches.iter().map(|b| b["const"].clone()).collect();
        map.remove("oneOf");
        map.insert("type".to_owned(), Value::String("string".to_owned()));
        map.insert("enum".to_owned(), Value::Array(values));
    }
    if !options.descriptions {
        // Programs reading an answer need its shape, not its bounds.
        map.remove("minimum");
    }
    // Properties that may be null are optional instead.
    let nullable: Vec<String> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| may_be_null(p, defs))
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !nullable.iter().any(|n| n == r)));
        if required.is_empty() {
            map.remove("required");
        }
    }
    if !options.descriptions && depth > 0 {
        map.remove("description");
        map.remove("required");
    }
    let map = map
        .into_iter()
        .map(|(key, value)| {
            let value = match key.as_str() {
                "properties" | "patternProperties" | "$defs" => match value {
                    Value::Object(props) => Value::Object(
                        props
                            .into_iter()
                            .map(|(k, v)| (k, rewrite(v, defs, options, depth + 1)))
                            .collect(),
                    ),
                    other => other,
                },
                "items" | "additionalProperties" | "not" | "contains" => {
                    rewrite(value, defs, options, depth + 1)
                }
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => match value {
                    Value::Array(items) => Value::Array(
                        items
                            .into_iter()
                            .map(|v| rewrite(v, defs, options, depth + 1))
                            .collect(),
                    ),
                    other => other,
                },
                _ => value,
            };
            (key, value)
        })
        .collect();
    Value::Object(map)
}

/// A branch that only admits null (`{"type": "null"}`, perhaps described).
fn is_null_branch(schema: &Value) -> bool {
    schema.as_object().is_some_and(|map| {
        map.get("type").is_some_and(|t| t == "null")
            && map.keys().all(|k| k == "type" || k == "description")
    })
}

/// Whether a property schema (before rewriting) admits null.
fn may_be_null(schema: &Value, defs: &Map<String, Value>) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    if let Some(Value::String(reference)) = map.get("$ref") {
        let name = reference.rsplit('/').next().unwrap_or_default();
        if defs.get(name).is_some_and(|d| may_be_null(d, defs)) {
            return true;
        }
    }
    let null_type = |t: &Value| t == "null";
    match map.get("type") {
        Some(Value::Array(types)) if types.iter().any(null_type) => return true,
        Some(t) if null_type(t) => return true,
        _ => {}
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        map.get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(|b| may_be_null(b, defs)))
    })
}

/// `value` with every null object property left out, at every depth.
pub fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("object"),
        }
    }

    #[test]
    fn nullable_unions_become_optional_typed_properties() {
        let schema = object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "path": { "type": ["string", "null"], "description": "A path." },
                "depth": { "type": ["integer", "null"], "format": "uint64", "minimum": 0 },
                "mode": { "$ref": "#/$defs/Mode", "description": "How." },
                "scope": { "anyOf": [{ "$ref": "#/$defs/Scope" }, { "type": "null" }] },
                "when": { "type": "string", "format": "date-time" }
            },
            "required": ["path", "scope", "when"],
            "$defs": {
                "Mode": { "type": "string", "enum": ["a", "b"], "title": "Mode" },
                "Scope": { "type": "object", "properties": { "n": { "type": "integer", "format": "int32" } } }
            }
        }));
        let out = Value::Object(portable(&schema, Portability { descriptions: true }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "A path." },
                    "depth": { "type": "integer", "minimum": 0 },
                    "mode": { "type": "string", "enum": ["a", "b"], "description": "How." },
                    "scope": { "type": "object", "properties": { "n": { "type": "integer" } } },
                    "when": { "type": "string", "format": "date-time" }
                },
                "required": ["when"]
            })
        );
    }

    #[test]
    fn output_schemas_keep_only_the_top_description() {
        let schema = object(json!({
            "type": "object",
            "description": "Answer.",
            "properties": { "n": { "type": "integer", "description": "Count." } }
        }));
        let out = Value::Object(portable(
            &schema,
            Portability {
                descriptions: false,
            },
        ));
        assert_eq!(
            out,
            json!({ "type": "object", "description": "Answer.", "properties": { "n": { "type": "integer" } } })
        );
    }

    #[test]
    fn described_constants_become_an_enum() {
        let schema = object(json!({
            "type": "object",
            "properties": { "mode": { "description": "How.", "oneOf": [
                { "const": "a", "type": "string", "description": "A." },
                { "const": "b", "type": "string", "description": "B." } ] } }
        }));
        let out = Value::Object(portable(&schema, Portability { descriptions: true }));
        assert_eq!(
            out["properties"]["mode"],
            json!({ "description": "How.", "type": "string", "enum": ["a", "b"] })
        );
    }

    #[test]
    fn null_properties_are_left_out_at_every_depth() {
        let value = json!({ "a": null, "b": [{ "c": null, "d": 1 }, null], "e": { "f": null } });
        assert_eq!(
            without_nulls(value),
            json!({ "b": [{ "d": 1 }, null], "e": {} })
        );
    }
}
