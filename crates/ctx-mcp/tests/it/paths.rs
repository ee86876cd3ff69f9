//! Every path an answer names is workspace-root-relative and accepted as-is by `fs_read`
//! (issue 19): each tool is called on a workspace that sits below its git repository's top,
//! every path of its structured answer is collected, and each one is read back.

use std::path::Path;

use crate::common::{call, git, ok, text_of, write};
use ctx::config::ConfigLayers;
use ctx_mcp::{CtxServer, McpConfig, ToolSet};
use serde_json::{Value, json};

/// Keys whose string values (or arrays of strings) are workspace paths.
const PATH_KEYS: [&str; 6] = ["path", "file", "root", "id", "old_path", "degraded"];

/// Collects the paths under `keys` anywhere in `value`.
fn paths(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if PATH_KEYS.contains(&key.as_str()) {
                    match inner {
                        Value::String(s) => out.push(s.clone()),
                        Value::Array(items) => {
                            out.extend(items.iter().filter_map(Value::as_str).map(str::to_owned));
                        }
                        _ => {}
                    }
                }
                paths(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| paths(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_answer_path_is_accepted_by_fs_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let repo = tmp.path().canonicalize().expect("canonical").join("repo");
    let ws = repo.join("app");
    write(&repo, "outside.txt", "not in the workspace\n");
    write(&ws, "src/lib.rs", crate::common::LIB_RS);
    write(&ws, "src/main.rs", crate::common::MAIN_RS);
    write(
        &ws,
        "src/parser/mod.rs",
        "pub fn parse() -> u32 { crate::helper(1) }\n",
    );
    write(
        &ws,
        "tests/lib_test.rs",
        "#[test]\nfn helper_adds() { assert_eq!(demo::helper(1), 2); }\n",
    );
    write(&ws, "README.md", "# App\n\nThe parser calls `helper`.\n");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "First"]);
    write(
        &ws,
        "src/lib.rs",
        &crate::common::LIB_RS.replace("x + 1", "x + 2"),
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "Second"]);
    write(
        &ws,
        "src/lib.rs",
        &crate::common::LIB_RS.replace("x + 1", "x + 3"),
    );
    ctx::store::Store::init(&ws.join(".ctx")).expect("store");
    let mut config = McpConfig::new(
        ws.clone(),
        ws.join(".ctx"),
        ws.clone(),
        ConfigLayers::default(),
    )
    .with_allow_write(true)
    .with_tools(ToolSet::All);
    config.clock = std::sync::Arc::new(|| 1_767_225_600);
    let server = CtxServer::new(&config).expect("server");
    ok(&server, "ctx_packs_create", json!({ "name": "code" })).await;
    ok(
        &server,
        "ctx_packs_add",
        json!({ "pack": "code", "source": "glob:src/**/*.rs" }),
    )
    .await;

    let calls = [
        ("ctx_status", json!({})),
        ("ctx_map", json!({})),
        ("ctx_map", json!({ "path": "src" })),
        ("ctx_map", json!({ "path": "src/parser" })),
        ("ctx_summarize", json!({ "path": "src" })),
        ("ctx_summarize", json!({ "path": "src/parser/mod.rs" })),
        ("ctx_search", json!({ "pattern": "helper", "path": "src" })),
        (
            "ctx_search",
            json!({ "pattern": "helper", "mode": "symbol" }),
        ),
        (
            "ctx_search",
            json!({ "pattern": "helper", "mode": "caller", "path": "src" }),
        ),
        ("ctx_related", json!({ "file": "src/main.rs" })),
        ("ctx_diff_context", json!({})),
        ("ctx_select", json!({ "query": "parser helper" })),
        ("ctx_packs_preview", json!({ "packs": ["code"] })),
        (
            "fs_read",
            json!({ "operations": [
                { "mode": "Directory", "path": "src", "depth": 2 },
                { "mode": "Search", "path": "src", "pattern": "helper" }
            ] }),
        ),
    ];
    let mut checked = 0;
    for (tool, args) in calls {
        let answer = ok(&server, tool, args.clone()).await;
        let mut found = Vec::new();
        paths(&answer, &mut found);
        // fs_read's results name their entries and matches inside `result`.
        assert!(!found.is_empty(), "{tool} {args}: no paths in {answer}");
        for path in found {
            let mode = if ws.join(&path).is_dir() {
                "Directory"
            } else {
                "Line"
            };
            let read = call(
                &server,
                "fs_read",
                json!({ "operations": [{ "mode": mode, "path": path, "end_line": 1 }] }),
            )
            .await;
            let text = text_of(&read);
            assert_eq!(
                read.is_error,
                Some(false),
                "{tool} {args} answered `{path}`, which fs_read refuses: {text}"
            );
            let structured = read.structured_content.expect("structured");
            assert_eq!(
                structured["failed"], 0,
                "{tool} {args} answered `{path}`: {structured}"
            );
            assert!(
                Path::new(&path).is_relative() && !path.starts_with("./") && !path.contains(".."),
                "{tool}: `{path}` is not workspace-root-relative"
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "{checked} paths checked");
}
