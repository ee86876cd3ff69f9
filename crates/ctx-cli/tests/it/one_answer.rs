//! One result model: for each answer the CLI and MCP both give, `ctx --json VERB` prints
//! exactly MCP's `structuredContent` for the same question, less the paging fields
//! (`next_cursor`, `page`) that only MCP has. Both come from one facade type (`ctx::answers`).

use serde_json::{Value, json};

use crate::common::{Env, McpSession, git, write_files};

/// What the CLI prints that MCP gives as its answer's text instead of in `structuredContent`:
/// each selected document's `content` (MCP's text is those documents' payload), and a
/// render's `payload`.
fn without_text(mut printed: Value) -> Value {
    printed.as_object_mut().map(|p| p.remove("payload"));
    if let Some(documents) = printed.get_mut("documents").and_then(Value::as_array_mut) {
        for document in documents {
            document.as_object_mut().map(|d| d.remove("content"));
        }
    }
    printed
}

/// MCP's structured answer without what paging adds.
fn unpaged(result: &Value) -> Value {
    let mut structured = result["result"]["structuredContent"].clone();
    let object = structured
        .as_object_mut()
        .unwrap_or_else(|| panic!("a structured answer: {result}"));
    object.remove("next_cursor");
    object.remove("page");
    structured
}

fn fixture() -> Env {
    let env = Env::new();
    let work = env.work();
    write_files(
        &work,
        &[
            ("src/util.py", "def helper():\n    return 1\n"),
            (
                "src/app.py",
                "from util import helper\n\ndef main():\n    return helper()\n",
            ),
            (
                "tests/test_util.py",
                "from util import helper\n\ndef test_helper():\n    assert helper() == 1\n",
            ),
        ],
    );
    git(&work, &["init", "-q"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "first"]);
    env.run(&["init"]).ok();
    env.run(&["pack", "create", "docs"]).ok();
    env.run(&["pack", "add", "docs", "file:src/util.py"]).ok();
    env.run(&["pack", "add", "docs", "glob:tests/*.py"]).ok();
    env.run(&["pack", "snapshot", "docs", "--name", "v1"]).ok();
    // A change in the work tree, for diff-context.
    write_files(&work, &[("src/util.py", "def helper():\n    return 2\n")]);
    let transcript = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ctx-runs/tests/fixtures/swe-agent.traj");
    let transcript = transcript.to_str().expect("utf8");
    env.run(&["run", "import", transcript, "--from", "swe-agent"])
        .ok();
    // Built last, so both front ends find it up to date (an answer reports its update).
    env.run(&["index", "build"]).ok();
    env
}

#[test]
fn the_cli_and_mcp_give_one_answer_for_the_same_question() {
    let env = fixture();
    let mut mcp = McpSession::start(&env, &["mcp", "--tools", "all"]);
    let cases: Vec<(Vec<&str>, &str, Value)> = vec![
        (
            vec!["related", "src/util.py"],
            "ctx_related",
            json!({ "file": "src/util.py" }),
        ),
        (vec!["map"], "ctx_map", json!({})),
        (vec!["status"], "ctx_status", json!({})),
        (
            vec!["run", "show", "latest"],
            "ctx_runs_show",
            json!({ "run": "latest" }),
        ),
        (vec!["diff-context"], "ctx_diff_context", json!({})),
        (
            vec!["diff-context", "src"],
            "ctx_diff_context",
            json!({ "path": "src" }),
        ),
        (
            vec!["pack", "preview", "docs"],
            "ctx_packs_preview",
            json!({ "packs": ["docs"] }),
        ),
        (
            vec!["pack", "render", "--snapshot", "v1"],
            "ctx_packs_render",
            json!({ "snapshot_id": "v1" }),
        ),
        (
            vec!["select", "where is helper used", "--budget", "2000"],
            "ctx_select",
            json!({ "query": "where is helper used", "budget": 2000 }),
        ),
        (
            vec!["select", "helper", "--budget", "500", "--explain"],
            "ctx_select",
            json!({ "query": "helper", "budget": 500, "explain": true }),
        ),
        (
            vec!["summarize", "src"],
            "ctx_summarize",
            json!({ "path": "src" }),
        ),
        (
            vec!["summarize", "src/app.py"],
            "ctx_summarize",
            json!({ "path": "src/app.py" }),
        ),
        (
            vec!["search", "helper"],
            "ctx_search",
            json!({ "pattern": "helper" }),
        ),
        (
            vec!["search", "--symbol", "helper"],
            "ctx_search",
            json!({ "pattern": "helper", "mode": "symbol" }),
        ),
        (
            vec!["search", "--caller", "helper", "--context", "1"],
            "ctx_search",
            json!({ "pattern": "helper", "mode": "caller", "context": 1 }),
        ),
        (vec!["map", "src"], "ctx_map", json!({ "path": "src" })),
    ];
    for (cli, tool, arguments) in cases {
        let mut args = vec!["--json"];
        args.extend(&cli);
        let printed = without_text(env.run(&args).ok().json());
        let answered = unpaged(&mcp.call(tool, &arguments));
        assert_eq!(printed, answered, "`ctx {}` and {tool}", cli.join(" "));
    }
}
