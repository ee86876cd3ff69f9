//! Lean answers (issue 19): the text an agent reads costs at most 60% of the tokens it cost
//! before, `tools/list` of the default tool set stays under 3,000 tokens, and every path an
//! answer names is accepted as-is by `fs_read`.
//!
//! The baselines were measured on the commit before issue 19 (f7ebb53) with this file's
//! fixture and calls: the exact o200k_base token count (`ctx::core::TokenizerKind`) of each
//! call's text content (then the compact JSON of the answer) and of the `tools/list` result
//! (the read-only default set, 17 tools, serialized as rmcp sends it).

// The measured figures are printed for `cargo test -p ctx-mcp --test it lean -- --nocapture`.
#![allow(clippy::print_stderr)]

use std::fmt::Write as _;

use crate::common::{Fixture, call, text_of, write};
use ctx::core::TokenizerKind;
use ctx_mcp::rmcp::model::ListToolsResult;
use serde_json::{Value, json};

/// A fixture repository with a few modules that call one another, so that searches, maps
/// and selections have something to say.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    for (module, noun) in [
        ("lexer", "token"),
        ("parser", "node"),
        ("eval", "value"),
        ("cache", "entry"),
        ("config", "setting"),
        ("store", "record"),
        ("render", "line"),
        ("report", "finding"),
        ("walk", "path"),
        ("index", "document"),
        ("query", "term"),
        ("server", "request"),
    ] {
        let mut text =
            format!("//! The {module}: turns input into {noun}s.\n\nuse crate::helper;\n\n");
        for i in 0..2 {
            write!(
                text,
                "/// Reads one {noun} at depth {i} and checks it with the helper.\npub fn {module}_step_{i}(input: &str, depth: usize) -> Option<usize> {{\n    let n = helper(depth as u32 + {i});\n    if input.is_empty() {{\n        return None;\n    }}\n    Some(n as usize + input.len())\n}}\n\n"
            )
            .expect("write");
        }
        write!(
            text,
            "/// A {noun} with its position.\npub struct {}Item {{\n    pub start: usize,\n    pub end: usize,\n}}\n",
            module[..1].to_uppercase() + &module[1..]
        )
        .expect("write");
        write(&fx.root, &format!("src/{module}.rs"), &text);
    }
    fx
}

/// The exact o200k_base tokens of a call's text content.
async fn text_tokens(server: &ctx_mcp::CtxServer, tool: &str, args: Value) -> (usize, String) {
    let result = call(server, tool, args.clone()).await;
    let text = text_of(&result);
    assert_eq!(result.is_error, Some(false), "{tool} {args}: {text}");
    (TokenizerKind::O200kBase.count(&text), text)
}

fn search_args() -> Value {
    json!({ "pattern": "helper", "path": "src" })
}

fn select_args() -> Value {
    json!({ "query": "how does the parser step read a node", "budget": 3000 })
}

fn summarize_args() -> Value {
    json!({ "path": "src" })
}

/// Tokens of the read-only default `tools/list` before issue 19 (17 tools).
const BASELINE_TOOLS_LIST: usize = 16_686;
/// Tokens of `ctx_search` `helper` under `src` before issue 19 (60 results).
const BASELINE_SEARCH: usize = 2_073;
/// Tokens of `ctx_select` (budget 3000) before issue 19 (13 documents).
const BASELINE_SELECT: usize = 4_953;
/// Tokens of `ctx_summarize src` before issue 19 (13 files).
const BASELINE_SUMMARIZE: usize = 2_821;

/// At most 60% of `baseline`.
fn lean(baseline: usize) -> usize {
    baseline * 60 / 100
}

#[tokio::test]
async fn text_answers_cost_at_most_sixty_percent_of_the_baseline() {
    let fx = fixture();
    let server = fx.server(false);
    let mut report = String::new();
    for (tool, args, baseline) in [
        ("ctx_search", search_args(), BASELINE_SEARCH),
        ("ctx_select", select_args(), BASELINE_SELECT),
        ("ctx_summarize", summarize_args(), BASELINE_SUMMARIZE),
    ] {
        let (tokens, text) = text_tokens(&server, tool, args).await;
        writeln!(report, "{tool}: {tokens} tokens (baseline {baseline})").expect("write");
        assert!(
            tokens <= lean(baseline),
            "{tool}: {tokens} tokens, over 60% of {baseline}:\n{text}"
        );
    }
    eprintln!("{report}");
}

#[tokio::test]
async fn the_default_tools_list_is_under_three_thousand_tokens() {
    let fx = fixture();
    // The default: no tool set named, so the `mcp.tools` setting (default `core`).
    let server = fx.server_with(|mut config| {
        config.tools = None;
        config
    });
    let list = ListToolsResult::with_all_items(server.tools());
    let text = serde_json::to_string(&list).expect("json");
    let tokens = TokenizerKind::O200kBase.count(&text);
    eprintln!(
        "tools/list: {} tools, {tokens} tokens (baseline {BASELINE_TOOLS_LIST})",
        server.tools().len()
    );
    assert_eq!(tokens, DEFAULT_TOOLS_LIST_TOKENS, "{text}");
    assert!(tokens < 3000);
}

/// The exact tokens of the default (core) `tools/list`, pinned so any growth is seen.
const DEFAULT_TOOLS_LIST_TOKENS: usize = 2_986;

#[tokio::test]
async fn the_select_budget_bounds_the_whole_text() {
    let fx = fixture();
    let server = fx.server(false);
    for budget in [300_u64, 600, 1200] {
        let args = json!({ "query": "how does the parser step read a node", "budget": budget });
        let (tokens, text) = text_tokens(&server, "ctx_select", args.clone()).await;
        assert!(
            tokens as u64 <= budget,
            "budget {budget}: the text holds {tokens} tokens:\n{text}"
        );
        let answer = call(&server, "ctx_select", args)
            .await
            .structured_content
            .expect("structured");
        assert_eq!(answer["selection"]["budget"], budget);
        let documents = answer["documents"].as_array().expect("documents");
        assert!(!documents.is_empty(), "budget {budget} selects something");
        // The text is the Markdown payload, each document under its `## path` line; the
        // structured answer does not repeat it.
        assert!(answer.get("payload").is_none(), "{answer}");
        for doc in documents {
            let id = doc["id"].as_str().expect("id");
            assert!(text.contains(&format!("## {id}")), "{id} not in the text");
        }
    }
}

#[tokio::test]
async fn a_paged_text_says_how_to_continue() {
    let fx = fixture();
    let server = fx.server(false);
    let args = json!({ "pattern": "helper", "path": "src", "max_tokens": 150 });
    let result = call(&server, "ctx_search", args).await;
    let text = text_of(&result);
    assert!(TokenizerKind::O200kBase.count(&text) <= 150, "{text}");
    let structured = result.structured_content.expect("structured");
    let cursor = structured["next_cursor"].as_str().expect("more pages");
    let last = text.lines().last().expect("lines");
    assert!(
        last.starts_with("[parts 1-") && last.contains(&format!("cursor \"{cursor}\"")),
        "{last}"
    );
}
