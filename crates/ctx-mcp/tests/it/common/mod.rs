//! Fixtures for the in-process tests: a small git repository with a project store and packs.
#![allow(dead_code)]

pub mod http;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ctx::config::ConfigLayers;
use ctx::store::Store;
use ctx_mcp::rmcp::model::{CallToolResult, JsonObject};
use ctx_mcp::{CtxServer, McpConfig};
use serde_json::Value;

pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
}

/// Runs `git` in `dir` with a fixed identity and clock.
pub fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "Fixture")
        .env("GIT_AUTHOR_EMAIL", "fixture@example.com")
        .env("GIT_COMMITTER_NAME", "Fixture")
        .env("GIT_COMMITTER_EMAIL", "fixture@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?} failed");
}

pub fn write(dir: &Path, path: &str, content: &str) {
    let full = dir.join(path);
    fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
    fs::write(full, content).expect("write");
}

pub const LIB_RS: &str = "//! The library.\n\n/// Parses input.\npub struct Parser {\n    pub depth: usize,\n}\n\nimpl Parser {\n    /// Makes a parser.\n    pub fn new() -> Self {\n        Parser { depth: 0 }\n    }\n}\n\n/// Helps.\npub fn helper(x: u32) -> u32 {\n    x + 1\n}\n";
pub const MAIN_RS: &str =
    "use demo::helper;\n\nfn main() {\n    let n = helper(41);\n    println!(\"{n}\");\n}\n";

impl Fixture {
    /// A git repository with a Rust crate, a Python file, docs, a committed history, one
    /// uncommitted change, and a project store.
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical").join("repo");
        fs::create_dir_all(&root).expect("mkdir");
        write(
            &root,
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n",
        );
        write(
            &root,
            "README.md",
            "# Demo\n\nA demo project for the MCP tests.\n",
        );
        write(
            &root,
            "docs/guide.md",
            "# Guide\n\nUse `helper` to add one.\n",
        );
        write(&root, "src/lib.rs", LIB_RS);
        write(&root, "src/main.rs", MAIN_RS);
        write(
            &root,
            "tools/script.py",
            "def greet(name):\n    return f\"hi {name}\"\n\n\ndef main():\n    greet(\"x\")\n",
        );
        write(&root, ".gitignore", "/.ctx\n/target\n");
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "First commit"]);
        write(&root, "src/lib.rs", &LIB_RS.replace("x + 1", "x + 2"));
        Store::init(&root.join(".ctx")).expect("store");
        Self { _tmp: tmp, root }
    }

    /// The configuration of a server offering every tool.
    pub fn config(&self) -> McpConfig {
        McpConfig::new(
            self.root.clone(),
            self.root.join(".ctx"),
            self.root.clone(),
            ConfigLayers::default(),
        )
        .with_tools(ctx_mcp::ToolSet::All)
    }

    /// A server offering every tool (the write tools with `allow_write`).
    pub fn server(&self, allow_write: bool) -> CtxServer {
        self.server_with(|config| config.with_allow_write(allow_write))
    }

    /// A server with the fixture's clock and the configuration `adjust` makes.
    pub fn server_with(&self, adjust: impl FnOnce(McpConfig) -> McpConfig) -> CtxServer {
        let mut config = adjust(self.config());
        config.clock = std::sync::Arc::new(|| 1_767_225_600);
        CtxServer::new(&config).expect("server")
    }

    /// A server with packs `docs` (README + guide) and `code` (src/**/*.rs), write tools on.
    pub async fn with_packs(&self) -> CtxServer {
        let server = self.server(true);
        ok(
            &server,
            "ctx_packs_create",
            serde_json::json!({ "name": "docs", "budget": 4000 }),
        )
        .await;
        ok(
            &server,
            "ctx_packs_add",
            serde_json::json!({ "pack": "docs", "source": "file:README.md" }),
        )
        .await;
        ok(
            &server,
            "ctx_packs_add",
            serde_json::json!({ "pack": "docs", "source": "md_dir:docs" }),
        )
        .await;
        ok(
            &server,
            "ctx_packs_create",
            serde_json::json!({ "name": "code" }),
        )
        .await;
        ok(
            &server,
            "ctx_packs_add",
            serde_json::json!({ "pack": "code", "source": "glob:src/**/*.rs" }),
        )
        .await;
        server
    }
}

pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

pub async fn call(server: &CtxServer, tool: &str, args: Value) -> CallToolResult {
    server
        .dispatch(tool, object(args))
        .await
        .expect("known tool")
}

/// A successful call's structured answer (its text content, the compact form a model reads,
/// is checked to be there).
pub async fn ok(server: &CtxServer, tool: &str, args: Value) -> Value {
    let result = call(server, tool, args.clone()).await;
    succeeded(&result, tool, &args)
}

/// The structured answer of `result`, a success of `tool` called with `args`.
fn succeeded(result: &CallToolResult, tool: &str, args: &Value) -> Value {
    let text = text_of(result);
    assert_eq!(result.is_error, Some(false), "{tool} {args} failed: {text}");
    assert!(!text.is_empty(), "{tool} {args}: no text content");
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "{tool} {args}: the text is JSON, not the compact form: {text}"
    );
    result
        .structured_content
        .clone()
        .expect("structured content")
}

/// A successful call's structured answer and its text without the cursor line a paged text
/// ends with: for `ctx_select`, `ctx_packs_render` and `ctx_runs_show` with content, the
/// payload, which the structured answer does not repeat.
pub async fn ok_text(server: &CtxServer, tool: &str, args: Value) -> (Value, String) {
    let result = call(server, tool, args.clone()).await;
    let answer = succeeded(&result, tool, &args);
    let mut text = text_of(&result);
    if answer["next_cursor"].is_string()
        && let Some(at) = text.rfind("[parts ")
    {
        text.truncate(at);
    }
    (answer, text)
}

/// A failed call's message (an isError result).
pub async fn fails(server: &CtxServer, tool: &str, args: Value) -> String {
    fails_with_kind(server, tool, args).await.1
}

/// A failed call's kind and message. The kind is in `_meta["ctx/error"]`, with the same
/// message as the text the agent reads; there is no `structuredContent` (it would not match
/// the tool's output schema).
pub async fn fails_with_kind(server: &CtxServer, tool: &str, args: Value) -> (String, String) {
    let result = call(server, tool, args.clone()).await;
    assert_eq!(
        result.is_error,
        Some(true),
        "{tool} {args} should fail: {}",
        text_of(&result)
    );
    let text = text_of(&result);
    assert_eq!(result.structured_content, None, "{tool} {args}");
    let meta = result.meta.clone().expect("the error's kind");
    let error = &meta.0[ctx_mcp::ERROR_META_KEY];
    assert_eq!(error["message"], Value::from(text.clone()));
    let kind = error["kind"].as_str().expect("kind").to_owned();
    assert!(
        [
            "user_input",
            "not_found",
            "conflict",
            "damaged",
            "io",
            "internal"
        ]
        .contains(&kind.as_str()),
        "{kind}"
    );
    (kind, text)
}

pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}
