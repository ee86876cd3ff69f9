//! In-process tests of `ctx_select` and `ctx_index_inspect`: a valid call with reasons,
//! paging, each invalid argument, an unknown index, a damaged index, and determinism.

use std::fs;

use crate::common::{Fixture, fails, ok};
use serde_json::{Value, json};

#[tokio::test]
async fn select_builds_the_index_and_says_why() {
    let fx = Fixture::new();
    let server = fx.server(false);

    let message = fails(&server, "ctx_index_inspect", json!({})).await;
    assert!(
        message.contains("not built yet") && message.contains("ctx_select"),
        "{message}"
    );

    let (answer, text) = crate::common::ok_text(
        &server,
        "ctx_select",
        json!({ "query": "where is the Parser struct in lib.rs", "budget": 4000 }),
    )
    .await;
    assert_eq!(answer["index"]["name"], "default");
    assert_eq!(answer["index"]["up_to_date"], false, "built on demand");
    let docs = answer["documents"].as_array().expect("documents");
    assert_eq!(docs[0]["id"], "src/lib.rs", "{answer:#}");
    let signals: Vec<&str> = docs[0]["why"]["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert!(signals.contains(&"filename_mentioned"), "{signals:?}");
    assert!(
        docs[0]["why"]["signals"][0].get("detail").is_none(),
        "details only with explain"
    );
    assert!(docs[0]["why"]["term_matches"]["parser"].as_u64() > Some(0));
    let payload = text.as_str();
    assert!(
        answer.get("payload").is_none(),
        "the payload is the text only"
    );
    assert!(payload.starts_with("## src/lib.rs\n```rs\n"), "{payload}");
    assert!(payload.contains("pub struct Parser"), "{payload}");
    assert!(answer["selection"]["tokens_used"].as_u64() <= Some(4000));
    assert_eq!(answer["next_cursor"], Value::Null);

    // The second call reuses the index; the answer is the same.
    let (again, again_text) = crate::common::ok_text(
        &server,
        "ctx_select",
        json!({ "query": "where is the Parser struct in lib.rs", "budget": 4000 }),
    )
    .await;
    assert_eq!(again["index"]["up_to_date"], true);
    assert_eq!(again["documents"], answer["documents"]);
    assert_eq!(again_text, text);

    let explained = ok(
        &server,
        "ctx_select",
        json!({ "query": "where is the Parser struct in lib.rs", "explain": true }),
    )
    .await;
    assert!(
        explained["documents"][0]["why"]["signals"]
            .as_array()
            .expect("signals")
            .iter()
            .any(|s| s["detail"].is_string()),
        "{explained:#}"
    );

    // Budget 0 is an empty selection, not an error.
    let empty = ok(
        &server,
        "ctx_select",
        json!({ "query": "parser", "budget": 0 }),
    )
    .await;
    assert_eq!(empty["documents"], json!([]));
    assert_eq!(empty.get("payload"), None);

    let inspect = ok(&server, "ctx_index_inspect", json!({})).await;
    assert_eq!(inspect["name"], "default");
    assert_eq!(inspect["valid"], true);
    assert_eq!(inspect["fix"], Value::Null);
    assert_eq!(inspect["documents"], answer["index"]["documents"]);
    assert_eq!(inspect["cache_version"], answer["index"]["cache_version"]);
    assert!(inspect["disk_bytes"].as_u64() > inspect["content_bytes"].as_u64());
    assert_eq!(inspect["indexes"][0]["name"], "default");
    let named = ok(&server, "ctx_index_inspect", json!({ "index": "default" })).await;
    assert_eq!(named, inspect);
}

#[tokio::test]
async fn select_pages_long_answers() {
    let fx = Fixture::new();
    let server = fx.server(false);
    let args = json!({ "query": "helper parser greet demo guide", "budget": 4000 });
    let (whole, whole_payload) = crate::common::ok_text(&server, "ctx_select", args.clone()).await;
    assert!(whole["documents"].as_array().expect("docs").len() >= 3);
    let mut small = args.clone();
    small["max_tokens"] = json!(100);
    let mut documents = Vec::new();
    let mut payload = String::new();
    let mut pages = 0;
    loop {
        let (page, text) = crate::common::ok_text(&server, "ctx_select", small.clone()).await;
        pages += 1;
        documents.extend(page["documents"].as_array().expect("docs").iter().cloned());
        payload.push_str(&text);
        match page["next_cursor"].as_str() {
            Some(cursor) => small["cursor"] = json!(cursor),
            None => break,
        }
        assert!(pages < 100, "paging ends");
    }
    assert!(pages > 1, "a 100-token cap pages the answer");
    assert_eq!(Value::Array(documents), whole["documents"]);
    assert_eq!(payload, whole_payload);

    // A cursor from another query is refused.
    let mut other = json!({ "query": "greet", "max_tokens": 400 });
    other["cursor"] = small["cursor"].clone();
    if other["cursor"].is_string() {
        let message = fails(&server, "ctx_select", other).await;
        assert!(message.contains("different call"), "{message}");
    }
    let message = fails(
        &server,
        "ctx_select",
        json!({ "query": "greet", "cursor": "garbage" }),
    )
    .await;
    assert!(message.contains("not a cursor"), "{message}");
    let message = fails(
        &server,
        "ctx_select",
        json!({ "query": "greet", "max_tokens": 10 }),
    )
    .await;
    assert!(message.contains("at least 64"), "{message}");
}

#[tokio::test]
async fn select_refuses_bad_arguments_with_what_to_do() {
    let fx = Fixture::new();
    let server = fx.server(false);
    for (args, needles) in [
        (json!({ "query": "" }), &["query is empty"][..]),
        (json!({ "query": "   " }), &["query is empty"]),
        (json!({ "query": "the and of" }), &["only stop words"]),
        (json!({}), &["missing field `query`"]),
        (
            json!({ "query": "parser", "budget": -5 }),
            &["`budget` must be a whole number", "-5"],
        ),
        (json!({ "query": "parser", "budget": 1.5 }), &["`budget`"]),
        (
            json!({ "query": "parser", "budget": "lots" }),
            &["`budget`"],
        ),
        (
            json!({ "query": "parser", "budget": 20_000_000 }),
            &["from 0 to 10000000"],
        ),
        (
            json!({ "query": "parser", "index": "nope" }),
            &["no index `nope`", "indexes: none yet", "leave `index` out"],
        ),
        (
            json!({ "query": "parser", "index": "../escape" }),
            &["no index `../escape`"],
        ),
        (json!({ "query": "parser", "explain": "yes" }), &["invalid"]),
    ] {
        let message = fails(&server, "ctx_select", args.clone()).await;
        assert!(
            message.starts_with("invalid arguments for `ctx_select`"),
            "{args}: {message}"
        );
        for needle in needles {
            assert!(message.contains(needle), "{args}: {message}");
        }
    }
    // Nothing was built by the refused calls.
    assert!(!fx.root.join(".ctx/indexes/default").exists());

    ok(&server, "ctx_select", json!({ "query": "parser" })).await;
    let message = fails(
        &server,
        "ctx_select",
        json!({ "query": "parser", "index": "other" }),
    )
    .await;
    assert!(message.contains("indexes: default"), "{message}");
    let message = fails(&server, "ctx_index_inspect", json!({ "index": "other" })).await;
    assert!(
        message.contains("no index `other`") && message.contains("indexes: default"),
        "{message}"
    );
    let message = fails(&server, "ctx_index_inspect", json!({ "bogus": 1 })).await;
    assert!(message.contains("unknown field `bogus`"), "{message}");
}

#[tokio::test]
async fn a_damaged_index_is_reported_and_refused_with_the_fix() {
    let fx = Fixture::new();
    let server = fx.server(false);
    ok(&server, "ctx_select", json!({ "query": "parser" })).await;
    let docs = fx.root.join(".ctx/indexes/default/documents");
    let mut files: Vec<_> = fs::read_dir(&docs)
        .expect("docs")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let victim = files[0].clone();
    let name = victim
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let text = fs::read_to_string(&victim).expect("read");
    fs::write(
        &victim,
        text.replacen("\"content\": \"", "\"content\": \"X", 1),
    )
    .expect("tamper");

    let inspect = ok(&server, "ctx_index_inspect", json!({})).await;
    assert_eq!(inspect["valid"], false);
    let problems = inspect["problems"].to_string();
    assert!(
        problems.contains(&format!("documents/{name}")),
        "{problems}"
    );
    assert_eq!(
        inspect["fix"], "rebuild it with `ctx index build --force`",
        "{inspect:#}"
    );

    fs::remove_file(&victim).expect("remove");
    let message = fails(&server, "ctx_select", json!({ "query": "parser" })).await;
    assert!(message.contains("ctx index build --force"), "{message}");

    // An index written by a newer ctx.
    let fx = Fixture::new();
    let server = fx.server(false);
    ok(&server, "ctx_select", json!({ "query": "parser" })).await;
    let manifest = fx.root.join(".ctx/indexes/default/manifest.json");
    let text = fs::read_to_string(&manifest).expect("manifest");
    fs::write(
        &manifest,
        text.replace("\"format_version\": 3", "\"format_version\": 7"),
    )
    .expect("newer");
    let message = fails(&server, "ctx_select", json!({ "query": "parser" })).await;
    assert!(message.contains("upgrade ctx"), "{message}");
}

#[tokio::test]
async fn a_store_outside_the_workspace_gets_a_workspace_index() {
    let fx = Fixture::new();
    let store = fx.root.parent().expect("parent").join("shared-store");
    ctx::store::Store::init(&store).expect("store");
    let mut config = ctx_mcp::McpConfig::new(
        fx.root.clone(),
        store.clone(),
        fx.root.clone(),
        ctx::config::ConfigLayers::default(),
    );
    config.clock = std::sync::Arc::new(|| 1_767_225_600);
    let server = ctx_mcp::CtxServer::new(&config).expect("server");
    let answer = ok(&server, "ctx_select", json!({ "query": "greet" })).await;
    let name = answer["index"]["name"].as_str().expect("name");
    assert!(
        name.starts_with("repo-") && name.len() == "repo-".len() + 8,
        "{name}"
    );
    assert!(store.join("indexes").join(name).is_dir());
    assert_eq!(answer["documents"][0]["id"], "tools/script.py");
}

/// The settings `ctx select`, `ctx inject` and the hook would use in the fixture.
fn select_context<'a>(
    store: &'a ctx::store::Store,
    root: &std::path::Path,
) -> ctx::select::SelectContext<'a> {
    ctx::select::SelectContext {
        store,
        root: root.to_owned(),
        default_index: ctx::select::DEFAULT_INDEX_NAME.to_owned(),
        tokenizer: ctx::core::TokenizerKind::default(),
        max_file_bytes: 1 << 20,
        redactor: ctx::core::redact::Redactor::builtin().clone(),
        now: 1_767_225_600,
        progress: &ctx::core::NoProgress,
        keeper: None,
    }
}

#[tokio::test]
async fn select_inject_hook_and_mcp_rank_alike_and_inject_nothing_when_nothing_is_relevant() {
    let fx = Fixture::new();
    let server = fx.server(false);
    let prompt = "where is the Parser struct and its helper";
    let budget = 4000;
    let mcp = ok(
        &server,
        "ctx_select",
        json!({ "query": prompt, "budget": budget }),
    )
    .await;
    let mcp_ids: Vec<&str> = mcp["documents"]
        .as_array()
        .expect("documents")
        .iter()
        .map(|d| d["id"].as_str().expect("id"))
        .collect();
    assert!(!mcp_ids.is_empty());

    let store = ctx::store::Store::open(&fx.root.join(".ctx")).expect("store");
    let cx = select_context(&store, &fx.root);
    let query = ctx::select::Query::parse(prompt).expect("query");
    let selected = ctx::select::select(&cx, None, &query, &ctx::select::prompt_options(budget))
        .expect("select");
    let ids: Vec<&str> = selected
        .result
        .documents
        .iter()
        .map(|d| d.id.as_str())
        .collect();
    assert_eq!(ids, mcp_ids, "ctx select and MCP ctx_select");

    let injection = ctx::select::inject(&cx, None, prompt, budget).expect("inject");
    let injected: Vec<&str> = injection
        .selection
        .as_ref()
        .expect("a selection")
        .documents
        .iter()
        .map(|d| d.id.as_str())
        .collect();
    assert!(!injected.is_empty());
    assert_eq!(
        injected,
        ids[..injected.len()],
        "inject takes the selection's first files"
    );

    let limits = ctx::select::HookLimits {
        budget,
        max_chars: ctx::select::DEFAULT_MAX_CHARS,
    };
    let input = ctx::select::parse_hook_input(
        &json!({ "hook_event_name": "UserPromptSubmit", "prompt": prompt }).to_string(),
    )
    .expect("hook input");
    let hook =
        ctx::select::hook_answer(&cx, &input, limits, ctx::select::IndexUpdate::Now).expect("hook");
    assert_eq!(
        hook["hookSpecificOutput"]["additionalContext"], injection.context,
        "the hook injects what inject does"
    );

    // Nothing relevant: an empty selection everywhere, and nothing injected.
    let unrelated = "bake a chocolate cake";
    let mcp = ok(&server, "ctx_select", json!({ "query": unrelated })).await;
    assert_eq!(mcp["documents"], json!([]), "{mcp:#}");
    let injection = ctx::select::inject(&cx, None, unrelated, budget).expect("inject");
    assert_eq!(injection.text, format!("{unrelated}\n"));
    assert!(injection.context.is_empty());
    let input = ctx::select::parse_hook_input(
        &json!({ "hook_event_name": "UserPromptSubmit", "prompt": unrelated }).to_string(),
    )
    .expect("hook input");
    assert_eq!(
        ctx::select::hook_answer(&cx, &input, limits, ctx::select::IndexUpdate::Now).expect("hook"),
        json!({})
    );
}

#[tokio::test]
async fn a_running_server_selects_from_an_index_that_has_the_file_written_a_moment_before() {
    let fx = Fixture::new();
    let server = fx.server(false);
    ok(&server, "ctx_select", json!({ "query": "parser" })).await;
    let keeper = server
        .index_keeper()
        .expect("the first selection starts the keeper");
    assert!(keeper.is_watching(), "inotify watches this tree");
    let top = |answer: &Value| answer["documents"][0]["id"].as_str().map(str::to_owned);

    // Written, then asked about at once: no pause for the watcher.
    fs::write(
        fx.root.join("src/zebra.rs"),
        "pub fn zebra_stripes_counted() {}\n",
    )
    .expect("write");
    let answer = ok(
        &server,
        "ctx_select",
        json!({ "query": "zebra_stripes_counted" }),
    )
    .await;
    assert_eq!(top(&answer).as_deref(), Some("src/zebra.rs"), "{answer:#}");

    fs::write(
        fx.root.join("src/zebra.rs"),
        "pub fn okapi_necks_measured() {}\n",
    )
    .expect("edit");
    let answer = ok(
        &server,
        "ctx_select",
        json!({ "query": "okapi_necks_measured" }),
    )
    .await;
    assert_eq!(top(&answer).as_deref(), Some("src/zebra.rs"), "{answer:#}");
    assert_eq!(
        answer["index"]["read"], 1,
        "only the edited file was read: {answer:#}"
    );

    fs::remove_file(fx.root.join("src/zebra.rs")).expect("remove");
    let answer = ok(
        &server,
        "ctx_select",
        json!({ "query": "okapi_necks_measured" }),
    )
    .await;
    assert_ne!(top(&answer).as_deref(), Some("src/zebra.rs"), "{answer:#}");
    assert_eq!(answer["index"]["removed"], 1, "{answer:#}");
    assert!(keeper.updates() >= 3, "{}", keeper.updates());

    // The index on disk is the one a fresh build makes.
    let verify = ok(&server, "ctx_index_inspect", json!({})).await;
    assert_eq!(verify["valid"], true, "{verify:#}");
}
