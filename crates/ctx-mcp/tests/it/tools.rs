//! In-process tests of every tool: a valid call, each kind of invalid argument, paging, the
//! sandbox, and unknown tools.

use crate::common::{Fixture, call, fails, object, ok, text_of};
use ctx_mcp::rmcp::model::ErrorCode;
use serde_json::{Value, json};

const READ_TOOLS: &[&str] = &[
    "ctx_packs_list",
    "ctx_packs_get",
    "ctx_packs_preview",
    "ctx_packs_render",
    "ctx_packs_snapshot",
    "ctx_status",
    "ctx_map",
    "ctx_summarize",
    "ctx_search",
    "ctx_related",
    "ctx_diff_context",
    "fs_read",
    "ctx_select",
    "ctx_index_inspect",
    "ctx_runs_list",
    "ctx_runs_show",
    "ctx_runs_diff",
];

fn names(server: &ctx_mcp::CtxServer) -> Vec<String> {
    server.tools().iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn read_only_by_default_and_write_tools_with_allow_write() {
    let fx = Fixture::new();
    let read_only = fx.server(false);
    assert_eq!(names(&read_only), READ_TOOLS);
    let writable = fx.server(true);
    let mut expected: Vec<&str> = READ_TOOLS[..5].to_vec();
    expected.extend(["ctx_packs_create", "ctx_packs_add", "ctx_packs_remove"]);
    expected.extend(&READ_TOOLS[5..]);
    assert_eq!(names(&writable), expected);
    let err = read_only
        .dispatch("ctx_packs_create", object(json!({ "name": "x" })))
        .await
        .expect_err("not offered");
    assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
    assert!(err.message.contains("--allow-write"), "{}", err.message);
}

#[tokio::test]
async fn unknown_tools_are_invalid_params() {
    let fx = Fixture::new();
    let server = fx.server(true);
    for name in ["nope", "ctx_pack_list", ""] {
        let err = server
            .dispatch(name, object(json!({})))
            .await
            .expect_err("unknown tool");
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{name}");
        assert_eq!(err.code.0, -32602);
        assert!(err.message.contains("tools/list"), "{}", err.message);
    }
}

#[tokio::test]
async fn every_tool_refuses_unknown_and_ill_typed_arguments() {
    let fx = Fixture::new();
    let server = fx.with_packs().await;
    // fs_read's arguments are the file engine's batch format, tested in `fs_read` below.
    for tool in server.tools().into_iter().filter(|t| t.name != "fs_read") {
        let name = tool.name.to_string();
        let message = fails(&server, &name, json!({ "bogus": 1 })).await;
        assert!(
            message.contains("unknown field `bogus`"),
            "{name}: {message}"
        );
        assert!(
            message.starts_with(&format!("invalid arguments for `{name}`")),
            "{message}"
        );
        // Every property with a type rejects a value of the wrong type.
        let props = tool.input_schema["properties"]
            .as_object()
            .expect("props")
            .clone();
        for (prop, schema) in props {
            let wrong = match schema.get("type") {
                Some(Value::String(t)) if t == "string" => json!(12),
                Some(Value::Array(ts)) if ts.contains(&json!("string")) => json!(12),
                Some(Value::String(t)) if t == "boolean" => json!("yes"),
                Some(Value::String(t)) if t == "array" => json!("not a list"),
                Some(Value::Array(ts)) if ts.contains(&json!("array")) => json!("not a list"),
                Some(_) => json!("not a number"),
                None => json!({ "x": [1] }),
            };
            let message = fails(&server, &name, json!({ prop.clone(): wrong })).await;
            assert!(message.contains("invalid"), "{name}.{prop}: {message}");
        }
        // Required arguments are required.
        if let Some(required) = tool.input_schema.get("required").and_then(Value::as_array)
            && !required.is_empty()
        {
            let message = fails(&server, &name, json!({})).await;
            assert!(message.contains("missing field"), "{name}: {message}");
        }
    }
}

#[tokio::test]
async fn paging_arguments_are_checked_everywhere() {
    let fx = Fixture::new();
    let server = fx.with_packs().await;
    let valid: [(&str, Value); 10] = [
        ("ctx_packs_list", json!({})),
        ("ctx_packs_get", json!({ "pack": "docs" })),
        ("ctx_packs_preview", json!({ "packs": ["docs"] })),
        ("ctx_packs_render", json!({ "packs": ["docs"] })),
        ("ctx_status", json!({})),
        ("ctx_map", json!({})),
        ("ctx_summarize", json!({ "path": "src" })),
        ("ctx_search", json!({ "pattern": "helper" })),
        ("ctx_related", json!({ "file": "src/main.rs" })),
        ("ctx_diff_context", json!({})),
    ];
    for (tool, args) in valid {
        let answer = ok(&server, tool, args.clone()).await;
        assert_eq!(
            answer["next_cursor"],
            Value::Null,
            "{tool}: small answers are whole"
        );
        assert!(answer["page"]["total"].is_u64(), "{tool}");
        let mut small = args.clone();
        small["max_tokens"] = json!(10);
        let message = fails(&server, tool, small).await;
        assert!(message.contains("at least 64"), "{tool}: {message}");
        let mut bad = args.clone();
        bad["cursor"] = json!("garbage");
        let message = fails(&server, tool, bad).await;
        assert!(message.contains("not a cursor"), "{tool}: {message}");
        let mut foreign = args.clone();
        foreign["cursor"] = json!("1.0123456789abcdef");
        let message = fails(&server, tool, foreign).await;
        assert!(
            message.contains("different call") || message.contains("no snapshot"),
            "{tool}: {message}"
        );
    }
}

#[tokio::test]
async fn pack_tools() {
    let fx = Fixture::new();
    let server = fx.with_packs().await;

    let list = ok(&server, "ctx_packs_list", json!({})).await;
    let packs: Vec<&str> = list["packs"]
        .as_array()
        .expect("packs")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(packs, ["code", "docs"]);
    assert_eq!(list["packs"][1]["uri"], "ctx://pack/docs");

    let docs = ok(&server, "ctx_packs_get", json!({ "pack": "docs" })).await;
    assert_eq!(docs["pack"]["budget_tokens"], 4000);
    assert_eq!(docs["artifacts"].as_array().expect("artifacts").len(), 2);
    assert_eq!(docs["artifacts"][0]["uri"], "file:README.md");
    let message = fails(&server, "ctx_packs_get", json!({ "pack": "nope" })).await;
    assert!(message.contains("nope"), "{message}");

    let preview = ok(&server, "ctx_packs_preview", json!({ "packs": ["docs"] })).await;
    assert_eq!(preview["included_count"], 2);
    assert!(preview.get("payload").is_none(), "no payload unless asked");
    let (with_payload, text) = crate::common::ok_text(
        &server,
        "ctx_packs_preview",
        json!({ "packs": ["docs"], "show_payload": true }),
    )
    .await;
    assert!(text.contains("# Demo"), "{text}");
    assert!(
        with_payload.get("payload").is_none(),
        "the payload is the text only"
    );
    for (args, needle) in [
        (json!({ "packs": [] }), "at least one pack"),
        (json!({ "packs": ["nope"] }), "nope"),
        (json!({ "packs": ["docs"], "style": "yaml" }), "style"),
    ] {
        let message = fails(&server, "ctx_packs_preview", args).await;
        assert!(message.contains(needle), "{message}");
    }

    // render records a snapshot; rendering it by id returns the same bytes.
    let (rendered, rendered_text) = crate::common::ok_text(
        &server,
        "ctx_packs_render",
        json!({ "packs": ["docs", "code"] }),
    )
    .await;
    let id = rendered["snapshot_id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("sha256:"));
    let (again, again_text) =
        crate::common::ok_text(&server, "ctx_packs_render", json!({ "snapshot_id": id })).await;
    assert_eq!(again_text, rendered_text);
    assert_eq!(again["payload_hash"], rendered["payload_hash"]);
    for (args, needle) in [
        (json!({}), "name `packs`"),
        (json!({ "packs": ["docs"], "snapshot_id": id }), "not both"),
        (json!({ "snapshot_id": "sha256:0000" }), "0000"),
        (json!({ "snapshot_id": id, "budget": 5 }), "as recorded"),
    ] {
        let message = fails(&server, "ctx_packs_render", args).await;
        assert!(message.contains(needle), "{message}");
    }

    let snap = ok(
        &server,
        "ctx_packs_snapshot",
        json!({ "packs": ["docs"], "label": "v1" }),
    )
    .await;
    assert_eq!(snap["snapshot"]["label"], "v1");
    let by_label = ok(&server, "ctx_packs_render", json!({ "snapshot_id": "v1" })).await;
    assert_eq!(by_label["snapshot_id"], snap["snapshot"]["snapshot_id"]);
    let message = fails(
        &server,
        "ctx_packs_snapshot",
        json!({ "packs": ["docs"], "label": "" }),
    )
    .await;
    assert!(message.contains("label"), "{message}");
    let docs = ok(&server, "ctx_packs_get", json!({ "pack": "docs" })).await;
    assert_eq!(docs["snapshots"].as_array().expect("snapshots").len(), 2);
}

#[tokio::test]
async fn write_tools() {
    let fx = Fixture::new();
    let server = fx.server(true);
    let pack = ok(
        &server,
        "ctx_packs_create",
        json!({ "name": "p", "tokenizer": "approx" }),
    )
    .await;
    assert_eq!(pack["tokenizer"], "approx");
    assert_eq!(pack["budget_tokens"], 128_000);
    for (args, needle) in [
        (json!({ "name": "bad name" }), "invalid pack name"),
        (json!({ "name": "p" }), "p"),
        (json!({ "name": "q", "tokenizer": "gpt2" }), "tokenizer"),
    ] {
        let message = fails(&server, "ctx_packs_create", args).await;
        assert!(message.contains(needle), "{message}");
    }
    let added = ok(
        &server,
        "ctx_packs_add",
        json!({ "pack": "p", "source": "file:src/lib.rs#L1-L5", "priority": 3 }),
    )
    .await;
    let artifact = added["artifact"]["artifact_id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(added["artifact"]["kind"], "file_range");
    // Sensitive files: the hints say MCP never adds them, not which CLI flag would.
    crate::common::write(&fx.root, "conf/.env", "TOKEN=1\n");
    crate::common::write(&fx.root, "conf/server.pem", "not a key\n");
    let message = fails(
        &server,
        "ctx_packs_add",
        json!({ "pack": "p", "source": "file:conf/.env" }),
    )
    .await;
    assert!(
        message.contains("cannot be added over MCP") && !message.contains("--"),
        "{message}"
    );
    let globbed = ok(
        &server,
        "ctx_packs_add",
        json!({ "pack": "p", "source": "glob:conf/*" }),
    )
    .await;
    let warnings = globbed["warnings"].to_string();
    assert!(
        warnings.contains("never added over MCP") && !warnings.contains("--"),
        "{warnings}"
    );
    for (args, needle) in [
        (
            json!({ "pack": "p", "source": "cmd:ls" }),
            "cannot be added over MCP",
        ),
        (
            json!({ "pack": "p", "source": "file:../outside.txt" }),
            "outside the workspace",
        ),
        (
            json!({ "pack": "p", "source": "file:/etc/passwd" }),
            "outside the workspace",
        ),
        (
            json!({ "pack": "p", "source": "md_dir:/tmp" }),
            "outside the workspace",
        ),
        (json!({ "pack": "p", "source": "glob:../**" }), ".."),
        (json!({ "pack": "p", "source": "nothing" }), "nothing"),
        (
            json!({ "pack": "p", "source": "file:missing.rs" }),
            "missing.rs",
        ),
        (
            json!({ "pack": "nope", "source": "file:README.md" }),
            "nope",
        ),
    ] {
        let message = fails(&server, "ctx_packs_add", args).await;
        assert!(message.contains(needle), "{message}");
    }
    let message = fails(
        &server,
        "ctx_packs_remove",
        json!({ "pack": "p", "artifact_id": "zzz" }),
    )
    .await;
    assert!(message.contains("zzz"), "{message}");
    let removed = ok(
        &server,
        "ctx_packs_remove",
        json!({ "pack": "p", "artifact_id": &artifact[..6] }),
    )
    .await;
    assert_eq!(removed["artifact_id"], artifact.as_str());
}

#[tokio::test]
async fn code_tools() {
    let fx = Fixture::new();
    let server = fx.server(false);

    let status = ok(&server, "ctx_status", json!({})).await;
    assert_eq!(status["project_name"], "demo");
    assert_eq!(status["branch"], "main");
    assert_eq!(status["modified_count"], 1);
    assert_eq!(status["recent_commits"][0]["message"], "First commit");

    let map = ok(&server, "ctx_map", json!({})).await;
    let paths: Vec<&str> = map["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert!(paths.contains(&"src/lib.rs"), "{paths:?}");
    let src = ok(&server, "ctx_map", json!({ "path": "src", "depth": 1 })).await;
    assert_eq!(src["root"], "src");
    for (args, needle) in [
        (json!({ "depth": 0 }), "at least 1"),
        (json!({ "path": "missing" }), "missing"),
        (json!({ "path": "README.md" }), "not a directory"),
        (json!({ "path": "../" }), "outside the workspace"),
    ] {
        let message = fails(&server, "ctx_map", args).await;
        assert!(message.contains(needle), "{message}");
    }

    let (summary, summary_text) = crate::common::ok_text(
        &server,
        "ctx_summarize",
        json!({ "path": "src/lib.rs", "skeleton": true }),
    )
    .await;
    let file = &summary["files"][0];
    assert_eq!(file["path"], "src/lib.rs");
    assert_eq!(file["language"], "rust");
    let symbols: Vec<&str> = file["symbols"]
        .as_array()
        .expect("symbols")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert!(
        symbols.contains(&"Parser") && symbols.contains(&"helper"),
        "{symbols:?}"
    );
    // The skeleton is code: in the text, not repeated in the structured answer.
    assert!(summary_text.contains("pub fn helper"), "{summary_text}");
    assert_eq!(file.get("skeleton"), None);
    let dir = ok(&server, "ctx_summarize", json!({ "path": "." })).await;
    assert!(dir["files"].as_array().expect("files").len() >= 3);
    for (args, needle) in [
        (json!({ "path": "nope.rs" }), "nope.rs"),
        (json!({ "path": "/etc/passwd" }), "outside the workspace"),
        (json!({ "path": "src", "depth": 0 }), "at least 1"),
        (json!({ "path": "README.md" }), "supported language"),
    ] {
        let message = fails(&server, "ctx_summarize", args).await;
        assert!(message.contains(needle), "{message}");
    }

    let text = ok(&server, "ctx_search", json!({ "pattern": "helper" })).await;
    assert_eq!(text["mode"], "literal");
    assert!(text["total"].as_u64().expect("total") >= 3);
    let symbol = ok(
        &server,
        "ctx_search",
        json!({ "pattern": "helper", "mode": "symbol" }),
    )
    .await;
    assert_eq!(symbol["results"][0]["path"], "src/lib.rs");
    let callers = ok(
        &server,
        "ctx_search",
        json!({ "pattern": "helper", "mode": "caller" }),
    )
    .await;
    assert_eq!(callers["results"][0]["path"], "src/main.rs");
    let regex = ok(
        &server,
        "ctx_search",
        json!({ "pattern": "fn \\w+\\(", "mode": "regex", "path": "src", "context": 1, "max_results": 1 }),
    )
    .await;
    assert_eq!(regex["results"].as_array().expect("results").len(), 1);
    assert_eq!(regex["truncated"], true);
    let none = ok(
        &server,
        "ctx_search",
        json!({ "pattern": "no such text anywhere" }),
    )
    .await;
    assert_eq!(none["total"], 0);
    for (args, needle) in [
        (json!({ "pattern": "" }), "empty"),
        // The hint names the tool argument, not the CLI's --regex.
        (
            json!({ "pattern": "(", "mode": "regex" }),
            "set `mode` to \"text\"",
        ),
        (
            json!({ "pattern": "x", "mode": "fuzzy" }),
            "unknown variant",
        ),
        (json!({ "pattern": "x", "context": 99 }), "at most 20"),
        (
            json!({ "pattern": "x", "path": "../.." }),
            "outside the workspace",
        ),
        (json!({ "pattern": "x", "path": "nope" }), "nope"),
    ] {
        let message = fails(&server, "ctx_search", args).await;
        assert!(message.contains(needle), "{message}");
        assert!(!message.contains("--"), "a CLI flag in `{message}`");
    }

    let related = ok(&server, "ctx_related", json!({ "file": "src/main.rs" })).await;
    assert_eq!(related["file"], "src/main.rs");
    assert_eq!(related["imports"][0]["path"], "src/lib.rs");
    for (args, needle) in [
        (json!({ "file": "src" }), "directory"),
        (json!({ "file": "nope.rs" }), "nope.rs"),
        (json!({ "file": "../x.rs" }), "outside the workspace"),
        (json!({ "file": "src/main.rs", "limit": 0 }), "at least 1"),
    ] {
        let message = fails(&server, "ctx_related", args).await;
        assert!(message.contains(needle), "{message}");
    }

    let diff = ok(&server, "ctx_diff_context", json!({})).await;
    assert_eq!(diff["files"][0]["path"], "src/lib.rs");
    let hunk = &diff["files"][0]["hunks"][0];
    assert_eq!(hunk["scope"]["name"], "helper");
    let filtered = ok(&server, "ctx_diff_context", json!({ "path": "docs" })).await;
    assert_eq!(filtered["files"], json!([]));
    for (args, needle) in [
        (json!({ "base": "no-such-rev" }), "no-such-rev"),
        (json!({ "head": "HEAD" }), "needs `base`"),
        (json!({ "path": "/" }), "outside the workspace"),
    ] {
        let message = fails(&server, "ctx_diff_context", args).await;
        assert!(message.contains(needle), "{message}");
    }
}

#[tokio::test]
async fn large_answers_are_paged_never_cut() {
    let fx = Fixture::new();
    for i in 0..120 {
        crate::common::write(
            &fx.root,
            &format!("gen/file_{i:03}.rs"),
            &format!("pub fn helper_{i}() -> u32 {{ helper({i}) }}\n"),
        );
    }
    let server = fx.server(false);
    let whole = ok(
        &server,
        "ctx_search",
        json!({ "pattern": "helper", "path": "gen", "max_tokens": 1_000_000 }),
    )
    .await;
    assert_eq!(whole["next_cursor"], Value::Null);
    let total = whole["results"].as_array().expect("results").len();
    assert_eq!(total, 120);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({ "pattern": "helper", "path": "gen", "max_tokens": 500 });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let result = call(&server, "ctx_search", args).await;
        let text = text_of(&result);
        assert!(
            ctx::core::TokenizerKind::O200kBase.count(&text) <= 500,
            "every page is within max_tokens"
        );
        let page = result.structured_content.expect("structured");
        seen.extend(page["results"].as_array().expect("results").iter().cloned());
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert!(pages > 3, "{pages}");
    assert_eq!(
        Value::Array(seen),
        whole["results"],
        "pages concatenate to the whole answer"
    );

    // A cursor cannot continue a different query.
    let first = ok(
        &server,
        "ctx_search",
        json!({ "pattern": "helper", "path": "gen", "max_tokens": 500 }),
    )
    .await;
    let next = first["next_cursor"].as_str().expect("more");
    let message = fails(
        &server,
        "ctx_search",
        json!({ "pattern": "fn", "path": "gen", "cursor": next }),
    )
    .await;
    assert!(message.contains("different call"), "{message}");
}

#[tokio::test]
async fn render_pages_concatenate_to_the_snapshot_bytes() {
    let fx = Fixture::new();
    for i in 0..40 {
        crate::common::write(
            &fx.root,
            &format!("src/gen_{i:02}.rs"),
            &format!(
                "/// Generated {i}.\npub fn generated_{i}(a: u32, b: u32) -> u32 {{\n    a * {i} + b\n}}\n"
            ),
        );
    }
    let server = fx.with_packs().await;
    let (first, mut payload) = crate::common::ok_text(
        &server,
        "ctx_packs_render",
        json!({ "packs": ["code"], "max_tokens": 400 }),
    )
    .await;
    let id = first["snapshot_id"].as_str().expect("id").to_owned();
    let mut cursor = first["next_cursor"].as_str().map(str::to_owned);
    assert!(cursor.is_some(), "a long payload is paged");
    while let Some(c) = cursor {
        let (page, text) = crate::common::ok_text(
            &server,
            "ctx_packs_render",
            json!({ "packs": ["code"], "max_tokens": 400, "cursor": c }),
        )
        .await;
        assert_eq!(
            page["snapshot_id"],
            id.as_str(),
            "later pages come from the same snapshot"
        );
        payload.push_str(&text);
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    let store = ctx::store::Store::open(&fx.root.join(".ctx")).expect("store");
    let record = store.db().find_snapshot(&id).expect("snapshot");
    let bytes = store
        .objects()
        .get(&record.payload_object)
        .expect("payload object");
    assert_eq!(
        payload.as_bytes(),
        bytes.as_slice(),
        "pages are the snapshot's bytes"
    );
    assert_eq!(first["payload_bytes"], bytes.len());
}

#[tokio::test]
async fn huge_arguments_get_a_clear_error_and_the_server_goes_on() {
    let fx = Fixture::new();
    let server = fx.server(false);
    let huge = "x".repeat(ctx_mcp::MAX_ARGUMENT_BYTES + 1);
    let message = fails(&server, "ctx_search", json!({ "pattern": huge })).await;
    assert!(message.contains("limit"), "{message}");
    ok(&server, "ctx_search", json!({ "pattern": "helper" })).await;
}

#[tokio::test]
async fn symbolic_links_cannot_leave_the_workspace() {
    let fx = Fixture::new();
    let outside = fx.root.parent().expect("parent").join("secret");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("key.rs"), "pub fn secret() {}\n").expect("write");
    std::os::unix::fs::symlink(&outside, fx.root.join("link")).expect("symlink");
    let server = fx.server(false);
    for (tool, args) in [
        ("ctx_summarize", json!({ "path": "link/key.rs" })),
        ("ctx_search", json!({ "pattern": "secret", "path": "link" })),
        ("ctx_map", json!({ "path": "link" })),
    ] {
        let message = fails(&server, tool, args).await;
        assert!(
            message.contains("outside the workspace"),
            "{tool}: {message}"
        );
    }
    let all = ok(&server, "ctx_search", json!({ "pattern": "secret" })).await;
    assert_eq!(all["total"], 0, "the walk does not follow the link out");
}

#[tokio::test]
async fn a_recorder_sees_every_call() {
    use std::sync::{Arc, Mutex};
    #[derive(Default)]
    struct Log(Mutex<Vec<(String, bool)>>);
    impl ctx_mcp::CallRecorder for Log {
        fn record(&self, call: &ctx_mcp::RecordedCall<'_>) {
            self.0
                .lock()
                .expect("lock")
                .push((call.tool.to_owned(), call.result.is_error == Some(true)));
        }
    }
    let fx = Fixture::new();
    let log = Arc::new(Log::default());
    let server = ctx_mcp::CtxServer::new(&fx.config().with_recorder(log.clone())).expect("server");
    ok(&server, "ctx_status", json!({})).await;
    fails(&server, "ctx_search", json!({ "pattern": "" })).await;
    let _ = server.dispatch("nope", object(json!({}))).await;
    assert_eq!(
        *log.0.lock().expect("lock"),
        [
            ("ctx_status".to_owned(), false),
            ("ctx_search".to_owned(), true)
        ]
    );
}

#[tokio::test]
async fn fs_read() {
    let fx = Fixture::new();
    let server = fx.server(false);
    let (answer, text) = crate::common::ok_text(
        &server,
        "fs_read",
        json!({ "operations": [
            { "mode": "Line", "path": "src/lib.rs", "start_line": 1, "end_line": 3 },
            { "mode": "Directory", "path": "src" },
            { "mode": "Search", "path": ".", "pattern": "helper" },
            { "mode": "Line", "path": "../outside" }
        ] }),
    )
    .await;
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    // The lines are the answer's text; the structured answer keeps their range.
    assert!(text.contains("//! The library."), "{text}");
    assert_eq!(results[0]["result"].get("content"), None);
    assert_eq!(results[0]["result"]["end_line"], 3);
    assert_eq!(
        results[3]["ok"], false,
        "one failing operation does not fail the call"
    );
    assert_eq!(answer["failed"], 1);

    // A long file is cut to max_tokens and says where to continue.
    let long = "line number N of a long generated file\n".repeat(3000);
    crate::common::write(&fx.root, "long.txt", &long);
    let result = call(
        &server,
        "fs_read",
        json!({ "operations": [{ "mode": "Line", "path": "long.txt" }], "max_tokens": 300 }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text_of(&result));
    assert!(ctx::core::TokenizerKind::O200kBase.count(&text_of(&result)) <= 300);
    let line = &result.structured_content.expect("structured")["results"][0]["result"];
    assert_eq!(line["truncated"], true);
    assert!(line["next_start_line"].as_u64().expect("next") > 1);

    for (args, needle) in [
        (json!({}), "mode"),
        (json!({ "operations": [] }), "operation"),
        (
            json!({ "operations": [{ "mode": "Line", "path": "/etc/passwd" }] }),
            "/etc/passwd",
        ),
        (
            json!({ "operations": [{ "mode": "Line", "path": "missing.txt" }] }),
            "missing.txt",
        ),
        (
            json!({ "operations": [{ "mode": "Line", "path": "long.txt" }], "max_tokens": 5 }),
            "at least 64",
        ),
        (
            json!({ "operations": [{ "mode": "Line", "path": "long.txt" }], "max_tokens": "many" }),
            "whole number",
        ),
        (
            json!({ "operations": [{ "mode": "Line", "path": "long.txt" }], "bogus": 1 }),
            "bogus",
        ),
    ] {
        let message = fails(&server, "fs_read", args).await;
        assert!(message.contains(needle), "{message}");
    }
}
