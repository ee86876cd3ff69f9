//! Index build (cold, with its peak memory; incremental with nothing changed; updates in
//! place after one file is edited, added or removed) and select latency on a large tree.
//!
//! ```sh
//! cargo bench -p ctx-select --bench index_select                          # 12,000 generated files
//! CTX_BENCH_FILES=40000 cargo bench -p ctx-select --bench index_select    # 40,000
//! cargo bench -p ctx-select --bench index_select -- ~/.cargo/registry/src  # any directory
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ctx_select::{
    ApproxTokenCounter, BuildOptions, CanonicalizeOptions, ErrorPolicy, FilesystemSource,
    LiveIndex, OpenIndex, Query, SelectOptions, build_index,
};

const WORDS: &[&str] = &[
    "parser", "token", "cache", "index", "render", "budget", "config", "store", "query", "symbol",
    "graph", "walker", "schema", "socket", "retry", "invoice", "ledger", "report",
];

/// A generated tree: `files` Rust files (12,000 unless `CTX_BENCH_FILES` says), 100 per
/// directory, importing each other.
fn generate(root: &Path) {
    let files: usize = std::env::var("CTX_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12_000);
    for d in 0..files.div_ceil(100) {
        let dir = root.join(format!("crate_{d:03}/src"));
        fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..100 {
            let a = WORDS[(d * 7 + f) % WORDS.len()];
            let b = WORDS[(d + f * 3) % WORDS.len()];
            let mut text = format!(
                "//! The {a} {b} module {d}/{f}.\nuse crate::m{}::helper;\n\n",
                (f + 1) % 100
            );
            for k in 0..12 {
                let _ = writeln!(
                    text,
                    "/// Computes the {a} of a {b} ({k}).\npub fn {a}_{b}_{k}(input: &str) -> usize {{\n    let {b}_count = input.len() + {k};\n    helper({b}_count)\n}}\n"
                );
            }
            fs::write(dir.join(format!("m{f}.rs")), text).expect("write");
        }
    }
}

/// The process's peak resident memory so far (Linux: `VmHWM`), in MB.
fn peak_rss_mb() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

fn opts() -> BuildOptions {
    BuildOptions {
        name: "bench".to_owned(),
        force: false,
        canonicalize: CanonicalizeOptions::default(),
        policy: ErrorPolicy::SkipAndWarn,
        created_at: "2026-01-01T00:00:00Z".to_owned(),
        root: None,
        git_head: None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let tmp = tempfile::tempdir().expect("tempdir");
    let root: PathBuf = if let Some(dir) = args.first() {
        PathBuf::from(dir)
    } else {
        let root = tmp.path().join("tree");
        generate(&root);
        root
    };
    let indexes = tmp.path().join("indexes");
    let source = FilesystemSource::new(&root, Vec::new(), 1 << 20);
    let no_git = BTreeMap::new;

    let t = Instant::now();
    let cold = build_index(&indexes, &source, &opts(), &no_git).expect("cold build");
    let cold_s = t.elapsed().as_secs_f64();
    let cold_peak = peak_rss_mb();
    let mut noop = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let r = build_index(&indexes, &source, &opts(), &no_git).expect("no-op build");
        assert!(r.up_to_date);
        noop.push(t.elapsed().as_secs_f64());
    }
    noop.sort_by(f64::total_cmp);

    let index = OpenIndex::open(&indexes, "bench").expect("open");
    let queries = [
        "where is the parser token cache invalidated",
        "render budget config",
        "fix retry on socket timeout",
        "ledger invoice report",
        "graph walker schema symbol query index store",
    ];
    let mut open_ms = Vec::new();
    let mut select_ms = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let index = OpenIndex::open(&indexes, "bench").expect("open");
        open_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        for q in queries {
            let t = Instant::now();
            let r = index
                .select(
                    &Query::parse(q).expect("query"),
                    &SelectOptions::default(),
                    &ApproxTokenCounter,
                )
                .expect("select");
            select_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(!r.documents.is_empty(), "{q}");
        }
    }
    drop(index);
    open_ms.sort_by(f64::total_cmp);
    select_ms.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v[v.len() / 2];
    let p95 = |v: &[f64]| v[(v.len() * 95 / 100).min(v.len() - 1)];
    println!(
        "tree: {} ({} documents, {} skipped)",
        root.display(),
        cold.documents,
        cold.skipped.len()
    );
    println!("index build, cold:                      {cold_s:.2} s");
    if let Some(mb) = cold_peak {
        println!("peak RSS after the cold build:          {mb} MB");
    }
    println!(
        "index build, incremental, no change:    {:.3} s (median of 5)",
        median(&noop)
    );
    println!(
        "open index (cheap integrity checks):    {:.1} ms (median)",
        median(&open_ms)
    );
    println!(
        "select (rank + budget 8000, approx):    {:.1} ms median, {:.1} ms p95 over {} runs",
        median(&select_ms),
        p95(&select_ms),
        select_ms.len()
    );
    // Edits: one file's body, one file's imports, a file added, a file removed; each followed
    // by the update a select makes (a walk of the tree, then the index changed in place).
    let first = fs::read_dir(&root)
        .ok()
        .and_then(|mut d| d.next())
        .and_then(Result::ok);
    if args.is_empty()
        && let Some(entry) = first
    {
        updates(&entry.path().join("src"), &indexes, &source);
        live_updates(&root, &entry.path().join("src"), &indexes, &source);
        let index = OpenIndex::open(&indexes, "bench").expect("open");
        let mut after = Vec::new();
        for q in queries {
            let t = Instant::now();
            index
                .select(
                    &Query::parse(q).expect("query"),
                    &SelectOptions::default(),
                    &ApproxTokenCounter,
                )
                .expect("select");
            after.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        after.sort_by(f64::total_cmp);
        println!("select after the updates: {:.1} ms median", median(&after));
    }
}

/// A file edited, added or removed in `dir`; each followed by the update a select makes.
type Edit<'a> = (&'static str, Box<dyn Fn(u32) + 'a>);

fn updates(dir: &Path, indexes: &Path, source: &FilesystemSource) {
    let no_git = BTreeMap::new;
    let median = |v: &[f64]| v[v.len() / 2];
    let t = Instant::now();
    let listed = ctx_select::DocumentSource::list(source)
        .expect("list")
        .len();
    println!(
        "walk of the tree (stamps of {listed} files): {:.1} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let edits: [Edit<'_>; 4] = [
        (
            "a function body edited",
            Box::new(|i| {
                fs::write(
                    dir.join("m0.rs"),
                    format!(
                        "use crate::m1::helper;

pub fn changed_{i}() -> usize {{ helper({i}) }}
"
                    ),
                )
                .expect("edit");
            }),
        ),
        (
            "its imports edited",
            Box::new(|i| {
                fs::write(
                    dir.join("m0.rs"),
                    format!(
                        "use crate::m{}::helper;

pub fn changed() {{}}
",
                        2 + i % 50
                    ),
                )
                .expect("edit");
            }),
        ),
        (
            "a file added",
            Box::new(|i| {
                fs::write(
                    dir.join(format!("added_{i}.rs")),
                    "pub fn added_parser() {}
",
                )
                .expect("add");
            }),
        ),
        (
            "a file removed",
            Box::new(|i| {
                fs::remove_file(dir.join(format!("added_{i}.rs"))).expect("remove");
            }),
        ),
    ];
    for (what, edit) in &edits {
        let mut times = Vec::new();
        let mut last = None;
        for i in 0..5 {
            edit(i);
            let t = Instant::now();
            let r = build_index(indexes, source, &opts(), &no_git).expect("update");
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            last = Some(r);
        }
        times.sort_by(f64::total_cmp);
        let r = last.expect("ran");
        println!(
            "update, {what}: {:.1} ms median of 5 ({} read, {} reused, {} removed)",
            median(&times),
            r.read,
            r.reused,
            r.removed
        );
    }
}

/// What a server's watcher does: the index held between updates, each update told the file
/// that changed (no walk, no reading of the previous index).
fn live_updates(root: &Path, dir: &Path, indexes: &Path, source: &FilesystemSource) {
    let no_git = BTreeMap::new;
    let mut live = LiveIndex::new(indexes, "bench");
    live.update(source, &opts(), &no_git, &ctx_core::NoProgress)
        .expect("prime");
    let rel = dir
        .join("m0.rs")
        .strip_prefix(root)
        .expect("under the root")
        .to_string_lossy()
        .into_owned();
    let id = ctx_core::DocumentId::new(&rel).expect("id");
    let mut times = Vec::new();
    for i in 0..21 {
        fs::write(
            dir.join("m0.rs"),
            format!("use crate::m1::helper;\n\npub fn live_{i}() -> usize {{ helper({i}) }}\n"),
        )
        .expect("edit");
        let t = Instant::now();
        let r = live
            .update_ids(
                source,
                std::slice::from_ref(&id),
                &opts(),
                &no_git,
                &ctx_core::NoProgress,
            )
            .expect("update");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(r.read, 1, "{r:?}");
    }
    times.sort_by(f64::total_cmp);
    println!(
        "live update, one file edited (watcher): {:.1} ms median, {:.1} ms p90 of {}",
        times[times.len() / 2],
        times[times.len() * 9 / 10],
        times.len()
    );
    let mut added = Vec::new();
    for i in 0..11 {
        let file = dir.join(format!("live_added_{i}.rs"));
        fs::write(&file, "pub fn added_live() {}\n").expect("add");
        let rel = file
            .strip_prefix(root)
            .expect("under the root")
            .to_string_lossy()
            .into_owned();
        let id = ctx_core::DocumentId::new(&rel).expect("id");
        let t = Instant::now();
        let r = live
            .update_ids(source, &[id], &opts(), &no_git, &ctx_core::NoProgress)
            .expect("update");
        added.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(r.read, 1, "{r:?}");
    }
    added.sort_by(f64::total_cmp);
    println!(
        "live update, one file added (watcher): {:.1} ms median of {}",
        added[added.len() / 2],
        added.len()
    );
}
