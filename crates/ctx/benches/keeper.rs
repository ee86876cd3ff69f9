//! How soon a watcher-held index reflects an edit: `ctx index watch` (and `ctx mcp`, `ctx
//! serve`) on a generated tree, one file written at a time, timed from the write to the
//! keeper's report of the update (the watcher's event, the debounce, the update in place);
//! then a server's warm selections (`ctx_select`'s payload through the facade, the index
//! kept), p50 and p99.
//!
//! ```sh
//! cargo bench -p ctx --bench keeper                        # 40,000 generated files
//! CTX_BENCH_FILES=12000 cargo bench -p ctx --bench keeper
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WORDS: &[&str] = &[
    "parser", "token", "cache", "index", "render", "budget", "config", "store", "query", "symbol",
];

fn generate(root: &Path, files: usize) {
    for d in 0..files.div_ceil(100) {
        let dir = root.join(format!("crate_{d:03}/src"));
        fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..100 {
            let a = WORDS[(d * 7 + f) % WORDS.len()];
            let mut text = format!(
                "//! The {a} module {d}/{f}.\nuse crate::m{}::helper;\n\n",
                (f + 1) % 100
            );
            for k in 0..12 {
                let _ = writeln!(
                    text,
                    "pub fn {a}_{k}(input: &str) -> usize {{\n    input.len() + {k}\n}}\n"
                );
            }
            fs::write(dir.join(format!("m{f}.rs")), text).expect("write");
        }
    }
}

fn main() {
    let files: usize = std::env::var("CTX_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40_000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical").join("tree");
    generate(&root, files);
    ctx::init_store(&root.join(".ctx")).expect("store");
    let ws = ctx::Workspace::open(
        &ctx::OpenOptions {
            cwd: root.clone(),
            store: None,
            init: false,
            env: ctx::Environment::default(),
        },
        Arc::new(|| 1_767_225_600),
    )
    .expect("workspace");
    let (send, receive) = std::sync::mpsc::channel();
    let t = Instant::now();
    let (keeper, first) = ws.watch_index(send).expect("watch");
    println!(
        "tree: {files} files; first build {:.2} s ({} documents); watching: {} ({} directories)",
        t.elapsed().as_secs_f64(),
        first.documents,
        keeper.is_watching(),
        keeper.watched_directories()
    );
    // The first build's own report comes through the channel too.
    while receive.recv_timeout(Duration::from_millis(200)).is_ok() {}
    let file = root.join("crate_000/src/m0.rs");
    let mut latency = Vec::new();
    for i in 0..20 {
        std::thread::sleep(Duration::from_millis(150));
        fs::write(&file, format!("pub fn edited_{i}() -> usize {{ {i} }}\n")).expect("edit");
        let t = Instant::now();
        let report = receive
            .recv_timeout(Duration::from_secs(10))
            .expect("an update within 10 s");
        latency.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(report.read, 1, "{report:?}");
    }
    latency.sort_by(f64::total_cmp);
    println!(
        "edit -> index updated on disk: {:.0} ms median, {:.0} ms max of {} (debounce {} ms)",
        latency[latency.len() / 2],
        latency[latency.len() - 1],
        latency.len(),
        ctx::DEBOUNCE.as_millis()
    );
    drop(keeper);
    warm_selects(&root);
}

/// A server's selections: the workspace keeps its index, so none walks the tree.
fn warm_selects(root: &Path) {
    let ws = ctx::Workspace::serve(
        &ctx::ServeOptions {
            root: root.to_owned(),
            store_dir: root.join(".ctx"),
            sources_root: root.to_owned(),
            layers: ctx::config::ConfigLayers::default(),
        },
        Arc::new(|| 1_767_225_600),
    )
    .expect("workspace")
    .keep_index_in(ctx::KeptIndex::new());
    let queries = [
        "where is the parser token cache invalidated",
        "render budget config",
        "store query symbol",
        "index cache helper",
        "fix the token parser for empty input",
    ];
    ws.select_payload(queries[0], None, 8000, &ctx::core::NoProgress)
        .expect("first");
    let mut times = Vec::new();
    for round in 0..20 {
        for q in queries {
            let t = Instant::now();
            let (outcome, _) = ws
                .select_payload(q, None, 8000, &ctx::core::NoProgress)
                .expect("select");
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(round > 0 || !outcome.result.documents.is_empty(), "{q}");
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "warm select (payload, 8,000 tokens): {:.1} ms p50, {:.1} ms p99 of {}",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times.len()
    );
    println!(
        "resident memory with the index kept: {} MB (peak {} MB)",
        status_mb("VmRSS:").unwrap_or(0),
        status_mb("VmHWM:").unwrap_or(0)
    );
}

/// A line of `/proc/self/status`, in MB (Linux).
fn status_mb(key: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}
