//! Load benchmark of the Streamable HTTP transport: a generated 2,000-file repository,
//! 100 concurrent clients (each its own session) making 20 calls each, half `ctx_search` and
//! half `ctx_packs_preview`; then the same calls from one client, one at a time.
//!
//! Run: `cargo bench -p ctx-mcp --bench mcp_load` (CLIENTS, CALLS and FILES override the sizes).
#![allow(clippy::print_stderr)]

#[path = "../tests/it/common/http.rs"]
mod http;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ctx::config::ConfigLayers;
use ctx_mcp::{CtxServer, HttpOptions, McpConfig};
use http::{HttpClient, percentile};
use serde_json::{Value, json};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A repository of `files` Rust files in 40 directories, one in ten with a TODO.
fn generate(root: &std::path::Path, files: usize) {
    for i in 0..files {
        let dir = root.join(format!("src/module_{:02}", i % 40));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut text = format!("//! Module file {i}.\n\nuse std::collections::HashMap;\n\n");
        for f in 0..8 {
            let _ = write!(
                text,
                "/// Computes value {f} of file {i}.\npub fn compute_{i}_{f}(input: &HashMap<String, u64>) -> u64 {{\n    input.values().sum::<u64>() * {f}\n}}\n\n"
            );
        }
        if i % 10 == 0 {
            text.push_str("// TODO: make this faster\n");
        }
        std::fs::write(dir.join(format!("file_{i:04}.rs")), text).expect("write");
    }
}

fn report(name: &str, mut latencies: Vec<Duration>) {
    latencies.sort();
    eprintln!(
        "  {name:<18} n={:<5} p50 {:>7.2} ms   p90 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms",
        latencies.len(),
        percentile(&latencies, 50.0),
        percentile(&latencies, 90.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 100.0),
    );
}

fn call_for(n: usize) -> (&'static str, Value) {
    if n.is_multiple_of(2) {
        ("ctx_search", json!({ "pattern": "TODO" }))
    } else {
        ("ctx_packs_preview", json!({ "packs": ["bench"] }))
    }
}

/// Where a call's time goes: the walk, the facade's search, the in-process dispatch.
async fn breakdown(root: &std::path::Path, server: &CtxServer) {
    let time = |f: &mut dyn FnMut()| {
        let mut samples: Vec<Duration> = (0..20)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .collect();
        samples.sort();
        samples
    };
    let walk = time(&mut || {
        ctx::fs::walk(root, &ctx::fs::WalkOptions::default()).expect("walk");
    });
    let query = ctx::code::SearchKind::Text(ctx::code::TextQuery {
        pattern: "TODO".into(),
        ..ctx::code::TextQuery::default()
    });
    let cx = ctx::code::CodeContext {
        cwd: root.to_owned(),
        store: None,
        sandbox: None,
        clock: &ctx_mcp::system_clock,
        cancel: None,
    };
    let search = time(&mut || {
        ctx::code::search(&cx, std::path::Path::new("."), &query, None).expect("search");
    });
    let cache = ctx::code::TreeCache::with_settings(ctx::code::TreeCacheSettings {
        global_ignore_files: Vec::new(),
        clock: std::time::SystemTime::now,
    });
    let cached = time(&mut || {
        ctx::code::search_cached(&cx, &cache, std::path::Path::new("."), &query, None)
            .expect("search");
    });
    let mut dispatch = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let args = json!({ "pattern": "TODO" });
        let Value::Object(args) = args else {
            unreachable!()
        };
        server.dispatch("ctx_search", args).await.expect("dispatch");
        dispatch.push(started.elapsed());
    }
    dispatch.sort();
    eprintln!("breakdown (one at a time, in process):");
    report("walk", walk);
    report("facade search", search);
    report("cached search", cached);
    report("dispatch search", dispatch);
}

fn main() {
    let clients = env_number("CLIENTS", 100);
    let calls = env_number("CALLS", 20);
    let files = env_number("FILES", 2000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");
    generate(&root, files);
    let (store, _) = ctx::store::Store::init(&root.join(".ctx")).expect("store");
    {
        let pcx = ctx::packs::PackContext {
            store: &store,
            root: root.clone(),
            settings: &ctx::packs::PackSettings::from_layers(&ConfigLayers::default())
                .expect("settings"),
            clock: &|| 0,
        };
        ctx::packs::create_pack(&pcx, "bench", Some(32_000), None, 0).expect("pack");
        ctx::packs::add_source(
            &pcx,
            "bench",
            "glob:src/module_00/*.rs",
            &root,
            &ctx::sources::AddOptions::default(),
            0,
            0,
        )
        .expect("add");
    }
    drop(store);
    // The server's stat-checked tree cache does not trust a directory or file modified in the
    // last 2 s (mtime granularity); a real repository is older than that, so let the new one
    // (and the store just created in it) age first.
    std::thread::sleep(Duration::from_millis(2_200));
    let config = McpConfig::new(
        root.clone(),
        root.join(".ctx"),
        root.clone(),
        ConfigLayers::default(),
    )
    .with_tools(ctx_mcp::ToolSet::All);
    let server = CtxServer::new(&config).expect("server");
    let server_for_breakdown = server.clone();
    let root_for_breakdown = root.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let options = HttpOptions::for_address(addr);
        tokio::spawn(ctx_mcp::serve_http(server, listener, options.clone()));

        // Warm up (token and summary caches, page cache).
        let mut warm = HttpClient::connect(addr).await;
        warm.initialize().await;
        for n in 0..4 {
            let (tool, args) = call_for(n);
            let (result, _) = warm.call(tool, args).await;
            assert_eq!(result["isError"], false, "{result}");
        }

        breakdown(&root_for_breakdown, &server_for_breakdown).await;
        eprintln!("mcp_load: {files} files, {} cores", std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
        let mut search = Vec::new();
        let mut preview = Vec::new();
        for n in 0..40 {
            let (tool, args) = call_for(n);
            let (_, elapsed) = warm.call(tool, args).await;
            if n.is_multiple_of(2) { search.push(elapsed) } else { preview.push(elapsed) }
        }
        eprintln!("one client, sequential:");
        report("ctx_search", search);
        report("ctx_packs_preview", preview);

        let started = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..clients {
            tasks.push(tokio::spawn(async move {
                let mut client = HttpClient::connect(addr).await;
                client.initialize().await;
                let mut out = Vec::new();
                for i in 0..calls {
                    let (tool, args) = call_for(c + i);
                    let (result, elapsed) = client.call(tool, args).await;
                    assert_eq!(result["isError"], false, "{tool}: {result}");
                    out.push((tool, elapsed));
                }
                out
            }));
        }
        let mut search = Vec::new();
        let mut preview = Vec::new();
        for task in tasks {
            for (tool, elapsed) in task.await.expect("client") {
                if tool == "ctx_search" { search.push(elapsed) } else { preview.push(elapsed) }
            }
        }
        let wall = started.elapsed();
        let total = search.len() + preview.len();
        eprintln!(
            "{clients} concurrent clients x {calls} calls: {total} calls in {:.2} s ({:.0} calls/s), no errors",
            wall.as_secs_f64(),
            total as f64 / wall.as_secs_f64()
        );
        report("ctx_search", search);
        report("ctx_packs_preview", preview);
        options.cancellation.cancel();
    });
}
