//! The sandbox attack suite (`ctx-fs/tests/fixtures/sandbox_attacks.json`, 39 cases: `..`
//! chains, absolute and encoded paths, NUL bytes, symlinks out, a hard link, a FIFO, a socket,
//! over-long paths) through every MCP tool that takes a path: `fs_read` (each mode),
//! `ctx_map`, `ctx_summarize`, `ctx_search` (text, regex, symbol, caller), `ctx_related`,
//! `ctx_diff_context`, and `ctx_packs_add` followed by `ctx_packs_preview` and
//! `ctx_packs_render`. No answer (text or structured content) may hold a byte from outside
//! the workspace. The swapped-symlink race is in `security.rs`.

#[path = "../../../ctx-fs/tests/support/attacks.rs"]
mod suite;

use std::process::Command;

use ctx::config::ConfigLayers;
use ctx_mcp::rmcp::model::JsonObject;
use ctx_mcp::{CtxServer, McpConfig, ToolSet};
use serde_json::{Value, json};

/// Content only found outside the workspace: the fixture's secret, and `/etc/passwd`'s first
/// entry.
const OUTSIDE_CONTENT: [&str; 2] = [suite::SECRET, "root:x:0:0"];

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attack_suite_gets_no_byte_out_through_any_path_taking_tool() {
    let fixture = suite::build();
    let root = &fixture.root;
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "ok.txt", "sub/inner.txt"]);
    git(root, &["commit", "-q", "-m", "inside"]);
    ctx::store::Store::init(&root.join(".ctx")).expect("store");
    let config = McpConfig::new(
        root.clone(),
        root.join(".ctx"),
        root.clone(),
        ConfigLayers::default(),
    )
    .with_tools(ToolSet::All)
    .with_allow_write(true);
    let server = CtxServer::new(&config).expect("server");
    let cases = suite::cases(&fixture);
    assert!(cases.len() >= 39, "{} cases", cases.len());

    let mut calls = 0;
    let mut escapes = Vec::new();
    for (n, case) in cases.iter().enumerate() {
        let path = case.path.as_str();
        let pack = format!("attack{n}");
        let requests: Vec<(&str, Value)> = vec![
            (
                "fs_read",
                json!({"operations": [{"mode": "Line", "path": path}]}),
            ),
            (
                "fs_read",
                json!({"operations": [{"mode": "Directory", "path": path, "depth": 3}]}),
            ),
            (
                "fs_read",
                json!({"operations": [{"mode": "Search", "path": path, "pattern": "SECRET"}]}),
            ),
            ("ctx_map", json!({"path": path})),
            ("ctx_summarize", json!({"path": path})),
            ("ctx_search", json!({"pattern": "SECRET", "path": path})),
            (
                "ctx_search",
                json!({"pattern": "S.CRET", "mode": "regex", "path": path}),
            ),
            (
                "ctx_search",
                json!({"pattern": "secret", "mode": "symbol", "path": path}),
            ),
            (
                "ctx_search",
                json!({"pattern": "secret", "mode": "caller", "path": path}),
            ),
            ("ctx_related", json!({"file": path})),
            ("ctx_diff_context", json!({"path": path})),
            ("ctx_packs_create", json!({"name": pack})),
            (
                "ctx_packs_add",
                json!({"pack": pack, "source": format!("file:{path}")}),
            ),
            (
                "ctx_packs_add",
                json!({"pack": pack, "source": format!("glob:{path}")}),
            ),
            (
                "ctx_packs_add",
                json!({"pack": pack, "source": format!("md_dir:{path}")}),
            ),
            (
                "ctx_packs_preview",
                json!({"packs": [pack], "show_payload": true}),
            ),
            ("ctx_packs_render", json!({"packs": [pack]})),
        ];
        for (tool, args) in requests {
            let result = server
                .dispatch(tool, object(args.clone()))
                .await
                .expect("a known tool");
            calls += 1;
            let mut answer: String = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            if let Some(structured) = &result.structured_content {
                answer.push_str(&structured.to_string());
            }
            if OUTSIDE_CONTENT.iter().any(|needle| answer.contains(needle)) {
                escapes.push(format!(
                    "{}: {tool} {args}: {}",
                    case.name,
                    &answer[..answer.len().min(300)]
                ));
            }
        }
    }
    assert!(calls >= 39 * 17);
    // The same calls on an inside path answer its content: the harness sees what tools return.
    for (tool, args) in [
        (
            "fs_read",
            json!({"operations": [{"mode": "Line", "path": "ok.txt"}]}),
        ),
        ("ctx_search", json!({"pattern": "hello", "path": "."})),
        ("ctx_packs_create", json!({"name": "control"})),
        (
            "ctx_packs_add",
            json!({"pack": "control", "source": "file:ok.txt"}),
        ),
        ("ctx_packs_render", json!({"packs": ["control"]})),
    ] {
        let result = server
            .dispatch(tool, object(args.clone()))
            .await
            .expect("a known tool");
        assert_ne!(result.is_error, Some(true), "{tool} {args}: {result:?}");
        if tool != "ctx_packs_create" && tool != "ctx_packs_add" {
            let text: String = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            assert!(text.contains("hello inside"), "{tool}: {text}");
        }
    }
    assert!(
        escapes.is_empty(),
        "{} of {calls} calls answered with outside content:\n{}",
        escapes.len(),
        escapes.join("\n")
    );
}
