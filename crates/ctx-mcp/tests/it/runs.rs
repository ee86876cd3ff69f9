//! In-process tests of the run record tools: ctx_runs_list, ctx_runs_show, ctx_runs_diff.

use std::path::PathBuf;

use crate::common::{Fixture, fails, ok};
use ctx::store::Store;
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ctx-runs/tests/fixtures")
        .join(name)
}

/// Imports the three adapter fixtures; returns their run ids in import order.
fn import_all(fx: &Fixture) -> Vec<String> {
    let store = Store::open(&fx.root.join(".ctx")).expect("store");
    ["claude-code.jsonl", "openhands.json", "swe-agent.traj"]
        .iter()
        .map(|name| {
            ctx::runs::import_file(&store, &fixture(name), None)
                .expect("imports")
                .run
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn the_run_tools_are_listed_read_only_with_schemas() {
    let fx = Fixture::new();
    let server = fx.server(false);
    let tools = server.tools();
    for name in ["ctx_runs_list", "ctx_runs_show", "ctx_runs_diff"] {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is offered without --allow-write"));
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert_eq!(annotations.read_only_hint, Some(true), "{name}");
        let output = tool.output_schema.as_ref().expect("output schema");
        assert!(
            output["properties"]["next_cursor"].is_object(),
            "{name} is paged"
        );
        assert!(tool.input_schema["properties"]["max_tokens"].is_object());
    }
}

#[tokio::test]
async fn list_shows_runs_newest_first_with_refs() {
    let fx = Fixture::new();
    let server = fx.server(false);
    let empty = ok(&server, "ctx_runs_list", json!({})).await;
    assert_eq!(empty["runs"], json!([]));
    let ids = import_all(&fx);
    let answer = ok(&server, "ctx_runs_list", json!({})).await;
    let runs = answer["runs"].as_array().expect("runs");
    let listed: Vec<&str> = runs.iter().map(|r| r["id"].as_str().expect("id")).collect();
    assert_eq!(listed, [&ids[2], &ids[1], &ids[0]]);
    assert_eq!(runs[0]["refs"], json!(["latest"]));
    assert_eq!(runs[0]["source"], "swe-agent");
    assert_eq!(runs[0]["steps"], 5);
    assert_eq!(runs[2]["model"], "claude-sonnet-4-20250514");
    assert_eq!(runs[2]["started"], "2025-07-01T10:00:00.000Z");
    assert_eq!(answer["next_cursor"], Value::Null);
}

#[tokio::test]
async fn show_returns_steps_by_prefix_with_optional_content() {
    let fx = Fixture::new();
    let ids = import_all(&fx);
    let server = fx.server(false);
    let prefix = &ids[0]["sha256:".len().."sha256:".len() + 8];
    let answer = ok(&server, "ctx_runs_show", json!({ "run": prefix })).await;
    assert_eq!(answer["run"]["id"], ids[0].as_str());
    assert_eq!(answer["run"]["source"], "claude-code");
    assert_eq!(answer["run"]["step_count"], 6);
    let steps = answer["steps"].as_array().expect("steps");
    let tools: Vec<&str> = steps
        .iter()
        .map(|s| s["tool"].as_str().unwrap_or("chat"))
        .collect();
    assert_eq!(tools, ["chat", "Read", "Grep", "Edit", "Bash", "chat"]);
    assert_eq!(
        steps[1]["arguments"],
        json!({ "file_path": "src/range.rs" })
    );
    assert_eq!(steps[1]["deterministic"], true);
    assert_eq!(steps[1]["output"], Value::Null, "hashes only by default");
    assert!(
        steps[1]["output_ref"]
            .as_str()
            .expect("ref")
            .starts_with("sha256:")
    );

    let (full, text) = crate::common::ok_text(
        &server,
        "ctx_runs_show",
        json!({ "run": "latest", "include_content": true, "max_output_bytes": 20 }),
    )
    .await;
    assert_eq!(full["run"]["id"], ids[2].as_str());
    let first = &full["steps"][0];
    assert_eq!(first["output_truncated"], true);
    // The contents are the answer's text; the structured answer keeps their hashes only.
    for shown in [
        "Found 1 matches for ",
        "First I'll locate th",
        "We're currently solv",
    ] {
        assert!(text.contains(shown), "{shown}: {text}");
    }
    assert_eq!(first.get("output"), None);
    assert_eq!(first.get("reasoning"), None);
    assert_eq!(full["run"]["prompts"][0].get("text"), None);
}

#[tokio::test]
async fn show_pages_long_runs_and_reports_bad_ids() {
    let fx = Fixture::new();
    let ids = import_all(&fx);
    let server = fx.server(false);
    let first = ok(
        &server,
        "ctx_runs_show",
        json!({ "run": ids[1], "max_tokens": 500 }),
    )
    .await;
    let cursor = first["next_cursor"].as_str().expect("paged").to_owned();
    let mut seen = first["steps"].as_array().expect("steps").len();
    assert!(seen < 6, "a page holds fewer than all 6 steps");
    let mut cursor = Some(cursor);
    while let Some(c) = cursor {
        let page = ok(
            &server,
            "ctx_runs_show",
            json!({ "run": ids[1], "max_tokens": 500, "cursor": c }),
        )
        .await;
        seen += page["steps"].as_array().expect("steps").len();
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    assert_eq!(seen, 6, "every step is on some page");

    let unknown = fails(&server, "ctx_runs_show", json!({ "run": "deadbeef" })).await;
    assert!(unknown.contains("no run `deadbeef`"), "{unknown}");
    assert!(unknown.contains("ctx run log"), "{unknown}");
    let short = fails(&server, "ctx_runs_show", json!({ "run": "ab" })).await;
    assert!(short.contains("at least 4 hex digits"), "{short}");
    let zero = fails(
        &server,
        "ctx_runs_show",
        json!({ "run": "latest", "include_content": true, "max_output_bytes": 0 }),
    )
    .await;
    assert!(zero.contains("max_output_bytes"), "{zero}");
}

#[tokio::test]
async fn diff_lists_typed_drift() {
    let fx = Fixture::new();
    let ids = import_all(&fx);
    let server = fx.server(false);
    let same = ok(
        &server,
        "ctx_runs_diff",
        json!({ "a": ids[0], "b": ids[0] }),
    )
    .await;
    assert_eq!(same["differs"], false);
    assert_eq!(same["drift"], json!([]));
    let answer = ok(
        &server,
        "ctx_runs_diff",
        json!({ "a": ids[0], "b": ids[2] }),
    )
    .await;
    assert_eq!(answer["differs"], true);
    let drift = answer["drift"].as_array().expect("drift");
    assert!(
        drift
            .iter()
            .any(|d| d["type"] == "prompt_drift" && d["field"] == "system_prompt")
    );
    assert!(
        drift
            .iter()
            .any(|d| d["type"] == "param_drift" && d["field"] == "model")
    );
    assert!(
        drift
            .iter()
            .any(|d| d["type"] == "tool_drift" && d["step"] == 1)
    );
    assert!(drift.iter().any(|d| d["type"] == "output_drift"));
    assert_eq!(
        answer["counts"]["tool_drift"].as_u64().expect("count"),
        drift.iter().filter(|d| d["type"] == "tool_drift").count() as u64
    );
    let missing = fails(
        &server,
        "ctx_runs_diff",
        json!({ "a": ids[0], "b": "nope" }),
    )
    .await;
    assert!(missing.contains("no run `nope`"), "{missing}");
}

#[tokio::test]
async fn show_pages_with_content_match_the_whole_answer() {
    let fx = Fixture::new();
    let ids = import_all(&fx);
    let server = fx.server(false);
    let whole = ok(
        &server,
        "ctx_runs_show",
        json!({ "run": ids[1], "include_content": true, "max_output_bytes": 100, "max_tokens": 100_000 }),
    )
    .await;
    assert_eq!(whole["next_cursor"], Value::Null);
    let mut paged: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({ "run": ids[1], "include_content": true, "max_output_bytes": 100, "max_tokens": 700 });
        if let Some(c) = &cursor {
            args["cursor"] = json!(c);
        }
        let page = ok(&server, "ctx_runs_show", args).await;
        paged.extend(page["steps"].as_array().expect("steps").iter().cloned());
        cursor = page["next_cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert!(paged.len() > 1);
    assert_eq!(&paged, whole["steps"].as_array().expect("steps"));
    assert!(
        paged.iter().all(|s| s.get("output").is_none()),
        "contents are in the text only: {paged:?}"
    );
}
