//! `ctx mcp` over stdio answers every request that has an id, even one it cannot read: a
//! wrong `jsonrpc` version, array params, a batch, a line that is not UTF-8 or not JSON, and
//! arguments that are not an object each get the JSON-RPC error for it, and the session goes
//! on. Bad notifications get no answer (JSON-RPC never answers notifications).

use crate::common::{Env, McpSession};
use serde_json::{Value, json};

/// A `ctx mcp` session in an initialized workspace.
fn session(env: &Env) -> McpSession {
    assert_eq!(env.run(&["init"]).code, 0);
    McpSession::start(env, &["mcp"])
}

#[test]
fn every_request_with_an_id_gets_an_answer() {
    let env = Env::new();
    let mut session = session(&env);
    let cases: &[(&[u8], i64, Value)] = &[
        (
            br#"{"jsonrpc":"1.0","id":2,"method":"tools/list"}"#,
            -32600,
            json!(2),
        ),
        (br#"{"id":"no-version","method":"tools/list"}"#, -32600, json!("no-version")),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1,2]}"#,
            -32602,
            json!(3),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\"}}",
            -32700,
            json!(5),
        ),
        (
            br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fs_read","arguments":[1,2]}}"#,
            -32602,
            json!(6),
        ),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
            -32602,
            json!(7),
        ),
        (br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, -32600, Value::Null),
        (b"not json at all", -32700, Value::Null),
        (b"\xff\xfe\xfd", -32700, Value::Null),
        (b"17", -32600, Value::Null),
        (b"[]", -32600, Value::Null),
    ];
    for (line, code, id) in cases {
        session.send_line(line);
        let answer = session.next_message();
        let shown = String::from_utf8_lossy(line);
        assert_eq!(answer["jsonrpc"], "2.0", "{shown}: {answer}");
        assert_eq!(answer["error"]["code"], *code, "{shown}: {answer}");
        assert_eq!(
            answer.get("id").cloned().unwrap_or(Value::Null),
            *id,
            "{shown}: {answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{answer}"
        );
    }

    // A batch: one array answer, a -32600 for each request in it, by id.
    session.send_line(
        br#"[{"jsonrpc":"2.0","id":10,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":11,"method":"ping"}]"#,
    );
    let batch = session.next_message();
    let answers = batch
        .as_array()
        .unwrap_or_else(|| panic!("an array: {batch}"));
    assert_eq!(answers.len(), 2, "{batch}");
    for (answer, id) in answers.iter().zip([10, 11]) {
        assert_eq!(answer["id"], id, "{batch}");
        assert_eq!(answer["error"]["code"], -32600, "{batch}");
    }

    // Bad notifications are not answered; the next request is, and the session still works.
    session.send_line(br#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#);
    session.send_line(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}"#);
    session.send_line(br#"{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"fs_read","arguments":{"operations":[{"mode":"Directory","path":"."}]}}}"#);
    let after = session.next_message();
    assert_eq!(after["id"], "after", "{after}");
    assert!(after["result"]["structuredContent"].is_object(), "{after}");
}

#[test]
fn answers_to_the_last_lines_are_written_before_exit() {
    let env = Env::new();
    let mut session = session(&env);
    session.send_line(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}"#);
    // The last line has no newline, and stdin closes right after it.
    session.write_raw(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":7}");
    session.close_stdin();
    let first = session.next_message();
    let second = session.next_message();
    assert_eq!(
        (first["id"].clone(), first["error"]["code"].clone()),
        (json!(1), json!(-32602))
    );
    assert_eq!(
        (second["id"].clone(), second["error"]["code"].clone()),
        (json!(2), json!(-32602))
    );
    let status = session.close_and_wait();
    assert!(status.success(), "{status:?}");
}
