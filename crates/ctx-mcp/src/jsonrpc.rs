//! The line-level screen in front of the MCP service on stdio: every line a client sends is
//! checked against JSON-RPC 2.0 and MCP before rmcp sees it, so that every request with an
//! id gets an answer, even one rmcp could not parse.
//!
//! - Not UTF-8, or not JSON: `-32700` (parse error).
//! - Not an object, no `method` and no `result`/`error`, a wrong `jsonrpc` version, an id that
//!   is not a string or an integer, a method that is not a string: `-32600` (invalid request).
//! - `params` that is not an object (MCP has no by-position parameters), or params a known
//!   method's schema refuses (`"arguments": [1, 2]` for `tools/call`): `-32602` (invalid
//!   params).
//! - A batch (a JSON array): MCP 2025-06-18 removed batching, so each request in it gets
//!   `-32600` with its id, in one array answer, as JSON-RPC 2.0 answers a batch; an empty
//!   array gets one `-32600`.
//! - A bad notification or a bad response is dropped: JSON-RPC never answers those.
//!
//! An answer carries the request's id when the line has a valid one; otherwise it has no `id`
//! member, as MCP specifies for errors whose request id cannot be read (JSON-RPC 2.0 writes
//! `null` there; MCP's schema has no null ids).

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::{Map, Value, json};

/// JSON-RPC 2.0: the text is not JSON (or not UTF-8).
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: the JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0: the method's parameters are invalid.
pub const INVALID_PARAMS: i64 = -32602;

/// What to do with one line from the client.
#[derive(Debug)]
pub enum Screened {
    /// Nothing: an empty line, or a bad notification or response (never answered).
    Ignore,
    /// A well-formed message, for the MCP service.
    Message(Box<ClientJsonRpcMessage>),
    /// The answer to write back instead: one JSON-RPC error, or an array of them for a batch.
    Answer(Value),
}

/// The request methods rmcp knows for a server. A request for one of them that rmcp's typed
/// parse refuses would reach the service as a custom request and be answered "method not
/// found"; the screen answers "invalid params" instead.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// Screens one line (its `\n`, a trailing `\r` and a leading byte order mark are ignored).
pub fn screen(line: &[u8]) -> Screened {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Screened::Ignore;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(err) => {
            // Answer with the id when the rest of the line is a request that names one.
            let lossy = String::from_utf8_lossy(line);
            let id = serde_json::from_str::<Value>(&lossy)
                .ok()
                .and_then(|value| request_id(&value));
            return Screened::Answer(error(
                id.as_ref(),
                PARSE_ERROR,
                &format!(
                    "the message is not valid UTF-8 (the byte at offset {} is not); send UTF-8 JSON, one message per line",
                    err.valid_up_to()
                ),
            ));
        }
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            return Screened::Answer(error(
                None,
                PARSE_ERROR,
                &format!("the message is not JSON ({err}); send one JSON-RPC object per line"),
            ));
        }
    };
    match value {
        Value::Array(items) => batch(&items),
        Value::Object(object) => match check(&object) {
            Verdict::Forward => forward(Value::Object(object)),
            Verdict::Drop => Screened::Ignore,
            Verdict::Refuse { id, code, message } => {
                Screened::Answer(error(id.as_ref(), code, &message))
            }
        },
        other => Screened::Answer(error(
            None,
            INVALID_REQUEST,
            &format!(
                "the message is a JSON {}, not a JSON-RPC object; send {{\"jsonrpc\": \"2.0\", \"id\": …, \"method\": …}}",
                kind(&other)
            ),
        )),
    }
}

enum Verdict {
    Forward,
    Drop,
    Refuse {
        id: Option<Value>,
        code: i64,
        message: String,
    },
}

/// The structural checks of one message object.
fn check(object: &Map<String, Value>) -> Verdict {
    let refuse = |id: Option<&Value>, code, message: String| Verdict::Refuse {
        id: id.cloned(),
        code,
        message,
    };
    let id = object.get("id");
    let valid_id = id.filter(|id| is_valid_id(id));
    let has_method = object.contains_key("method");
    let is_response =
        !has_method && (object.contains_key("result") || object.contains_key("error"));
    if is_response {
        // A client's answer to a server request: pass on what parses, never answer.
        return if object.get("jsonrpc") == Some(&json!("2.0")) {
            Verdict::Forward
        } else {
            Verdict::Drop
        };
    }
    if has_method && id.is_none() {
        // A notification: bad ones are dropped, good ones go on.
        let good = object.get("jsonrpc") == Some(&json!("2.0"))
            && object.get("method").is_some_and(Value::is_string)
            && object.get("params").is_none_or(Value::is_object);
        return if good {
            Verdict::Forward
        } else {
            Verdict::Drop
        };
    }
    if let Some(id) = id
        && valid_id.is_none()
    {
        return refuse(
            None,
            INVALID_REQUEST,
            format!(
                "the id is a JSON {}; a request id must be a string or an integer",
                kind(id)
            ),
        );
    }
    if !has_method {
        return refuse(
            valid_id,
            INVALID_REQUEST,
            "the message has no `method` (and is not a response); a request needs \"method\""
                .into(),
        );
    }
    match object.get("jsonrpc") {
        Some(Value::String(version)) if version == "2.0" => {}
        Some(other) => {
            return refuse(
                valid_id,
                INVALID_REQUEST,
                format!("\"jsonrpc\" is {other}; it must be \"2.0\""),
            );
        }
        None => {
            return refuse(
                valid_id,
                INVALID_REQUEST,
                "the message has no \"jsonrpc\" member; it must be \"2.0\"".into(),
            );
        }
    }
    let Some(Value::String(method)) = object.get("method") else {
        return refuse(
            valid_id,
            INVALID_REQUEST,
            "\"method\" must be a string".into(),
        );
    };
    if let Some(params) = object.get("params")
        && !params.is_object()
    {
        return refuse(
            valid_id,
            INVALID_PARAMS,
            format!(
                "the params of `{method}` are a JSON {}; MCP params are an object of named members",
                kind(params)
            ),
        );
    }
    Verdict::Forward
}

/// Parses a message that passed [`check`] into rmcp's type; a known method whose params do
/// not fit its schema is refused with `-32602`.
fn forward(value: Value) -> Screened {
    let id = request_id(&value);
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(JsonRpcMessage::Request(request))
            if matches!(request.request, ClientRequest::CustomRequest(_))
                && KNOWN_METHODS.contains(&request.request.method()) =>
        {
            let method = request.request.method().to_owned();
            Screened::Answer(error(
                id.as_ref(),
                INVALID_PARAMS,
                &format!(
                    "the params of `{method}` do not match its schema{}",
                    schema_detail(&method, request.request)
                ),
            ))
        }
        Ok(message) => Screened::Message(Box::new(message)),
        Err(err) => match (id, method) {
            (Some(id), Some(method)) => Screened::Answer(error(
                Some(&id),
                INVALID_PARAMS,
                &format!("the params of `{method}` do not match its schema ({err})"),
            )),
            // A notification or a response rmcp cannot read: dropped.
            _ => Screened::Ignore,
        },
    }
}

/// Why the params of a few common methods were refused, from their typed parse.
fn schema_detail(method: &str, request: ClientRequest) -> String {
    let ClientRequest::CustomRequest(custom) = request else {
        return String::new();
    };
    let params = custom.params.unwrap_or_else(|| json!({}));
    let err = match method {
        "tools/call" => serde_json::from_value::<rmcp::model::CallToolRequestParams>(params).err(),
        "resources/read" => {
            serde_json::from_value::<rmcp::model::ReadResourceRequestParams>(params).err()
        }
        "initialize" => {
            serde_json::from_value::<rmcp::model::InitializeRequestParams>(params).err()
        }
        "prompts/get" => {
            serde_json::from_value::<rmcp::model::GetPromptRequestParams>(params).err()
        }
        _ => None,
    };
    err.map(|err| format!(" ({err})")).unwrap_or_default()
}

/// The longest batch answered element by element; a longer one gets a single error.
pub const MAX_BATCH: usize = 64;

/// A batch: each request in it gets `-32600` with its id (batching is not part of MCP since
/// 2025-06-18); elements that are invalid get what they would get alone; notifications and
/// responses get nothing. An empty batch is one `-32600`.
fn batch(items: &[Value]) -> Screened {
    if items.is_empty() {
        return Screened::Answer(error(
            None,
            INVALID_REQUEST,
            "the message is an empty array; send one JSON-RPC object per line",
        ));
    }
    if items.len() > MAX_BATCH {
        // Not checked one by one: a batch of many thousands would cost the server more than
        // every other client together, and batches are refused anyway.
        return Screened::Answer(error(
            None,
            INVALID_REQUEST,
            &format!(
                "the message is a batch of {} messages; JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send each request on its own",
                items.len()
            ),
        ));
    }
    let mut answers = Vec::new();
    for item in items {
        let Value::Object(object) = item else {
            answers.push(error(
                None,
                INVALID_REQUEST,
                &format!(
                    "a batch element is a JSON {}, not a JSON-RPC object",
                    kind(item)
                ),
            ));
            continue;
        };
        match check(object) {
            Verdict::Refuse { id, code, message } => {
                answers.push(error(id.as_ref(), code, &message));
            }
            Verdict::Drop => {}
            Verdict::Forward => {
                if object.contains_key("method")
                    && let Some(id) = object.get("id")
                {
                    answers.push(error(
                        Some(id),
                        INVALID_REQUEST,
                        "JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send each request on its own line",
                    ));
                }
            }
        }
    }
    if answers.is_empty() {
        Screened::Ignore
    } else {
        Screened::Answer(Value::Array(answers))
    }
}

/// The id of a request (a message with a method and a valid id), if any.
fn request_id(value: &Value) -> Option<Value> {
    let object = value.as_object()?;
    object.get("method")?;
    object.get("id").filter(|id| is_valid_id(id)).cloned()
}

/// A string or an integer (JSON-RPC allows any number but advises against fractions; MCP's
/// ids are strings or integers, and rmcp reads integers as i64).
fn is_valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64(),
        _ => false,
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A JSON-RPC error object, with `id` when known.
fn error(id: Option<&Value>, code: i64, message: &str) -> Value {
    let mut answer = json!({
        "jsonrpc": "2.0",
        "error": { "code": code, "message": message },
    });
    if let Some(id) = id {
        answer["id"] = id.clone();
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match screen(line.as_bytes()) {
            Screened::Answer(value) => value,
            other => panic!("{line}: expected an answer, got {other:?}"),
        }
    }

    fn code_and_id(line: &str) -> (i64, Value) {
        let answer = answer(line);
        (
            answer["error"]["code"].as_i64().expect("code"),
            answer.get("id").cloned().unwrap_or(Value::Null),
        )
    }

    #[test]
    fn requests_with_an_id_get_the_right_error() {
        let cases = [
            (
                r#"{"jsonrpc":"1.0","id":2,"method":"tools/list"}"#,
                INVALID_REQUEST,
                json!(2),
            ),
            (
                r#"{"id":"a","method":"tools/list"}"#,
                INVALID_REQUEST,
                json!("a"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1]}"#,
                INVALID_PARAMS,
                json!(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":"x"}"#,
                INVALID_PARAMS,
                json!(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fs_read","arguments":[1,2]}}"#,
                INVALID_PARAMS,
                json!(6),
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#,
                INVALID_PARAMS,
                json!(7),
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"method":5}"#,
                INVALID_REQUEST,
                json!(8),
            ),
            (r#"{"jsonrpc":"2.0","id":9}"#, INVALID_REQUEST, json!(9)),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            ("garbage", PARSE_ERROR, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
                PARSE_ERROR,
                Value::Null,
            ),
            ("42", INVALID_REQUEST, Value::Null),
            ("null", INVALID_REQUEST, Value::Null),
            ("{}", INVALID_REQUEST, Value::Null),
            ("[]", INVALID_REQUEST, Value::Null),
        ];
        for (line, code, id) in cases {
            assert_eq!(code_and_id(line), (code, id), "{line}");
        }
        let arguments = answer(
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fs_read","arguments":[1,2]}}"#,
        );
        let message = arguments["error"]["message"].as_str().expect("message");
        assert!(
            message.contains("tools/call") && message.contains("invalid type"),
            "{message}"
        );
    }

    #[test]
    fn bad_utf8_is_a_parse_error_with_the_id_when_readable() {
        let answer = match screen(
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n",
        ) {
            Screened::Answer(value) => value,
            other => panic!("{other:?}"),
        };
        assert_eq!(answer["error"]["code"], PARSE_ERROR);
        assert_eq!(answer["id"], 5);
        let Screened::Answer(answer) = screen(b"\xff\xfe\n") else {
            panic!("an answer");
        };
        assert_eq!(answer["error"]["code"], PARSE_ERROR);
        assert!(answer.get("id").is_none());
    }

    #[test]
    fn a_batch_gets_an_error_per_request() {
        let answer = answer(
            r#"[{"jsonrpc":"2.0","id":4,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},1,{"jsonrpc":"2.0","id":"x","method":"ping"}]"#,
        );
        let answers = answer.as_array().expect("an array");
        assert_eq!(answers.len(), 3, "{answer}");
        assert_eq!(answers[0]["id"], 4);
        assert_eq!(answers[0]["error"]["code"], INVALID_REQUEST);
        assert!(answers[1].get("id").is_none());
        assert_eq!(answers[2]["id"], "x");
        assert!(matches!(
            screen(br#"[{"jsonrpc":"2.0","method":"notifications/initialized"}]"#),
            Screened::Ignore
        ));
    }

    #[test]
    fn a_long_batch_gets_one_error_without_checking_each_element() {
        // About 2 MB: the body that kept the HTTP servers busy for 100 s and 1.6 GB.
        let one = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ctx_search","arguments":{"pattern":"x"}}}"#;
        let items = vec![one; 2 * 1024 * 1024 / one.len()];
        let body = format!("[{}]", items.join(","));
        let single = answer(&body);
        assert!(single.is_object(), "one error, not one per element");
        assert_eq!(single["error"]["code"], INVALID_REQUEST);
        let message = single["error"]["message"].as_str().expect("message");
        assert!(
            message.contains(&format!("a batch of {} messages", items.len())),
            "{message}"
        );
        // Up to the limit, each request still gets its own answer.
        let body = format!("[{}]", vec![one; MAX_BATCH].join(","));
        assert_eq!(answer(&body).as_array().map(Vec::len), Some(MAX_BATCH));
    }

    #[test]
    fn good_messages_pass_and_bad_notifications_and_responses_are_dropped() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\r\n",
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"x","arguments":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        ] {
            assert!(
                matches!(screen(line.as_bytes()), Screened::Message(_)),
                "{line}"
            );
        }
        for line in [
            "",
            "   \r\n",
            r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[1]}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
            r#"{"jsonrpc":"1.0","id":3,"result":{}}"#,
        ] {
            assert!(
                matches!(screen(line.as_bytes()), Screened::Ignore),
                "{line}"
            );
        }
    }
}
