//! Hot paths of code intelligence: symbol extraction per language, skeletons, and text search
//! over a generated tree (after the walk, while walking, and through the tree cache).
//! Real-tree figures (against ctags and ripgrep) come from `scripts/bench-code.sh`,
//! `scripts/symbol-recall.sh` and `scripts/search-vs-rg.sh`.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctx_code::Language;
use ctx_code::search::{TextQuery, search_text, search_tree};
use ctx_code::tree_cache::{TreeCache, TreeCacheSettings, search_cached};

/// Dates the files and the directory a minute back, so the tree cache trusts their stamps.
fn settle(dir: &std::path::Path) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(when).unwrap();
    }
    std::fs::File::open(dir)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

fn rust_source(functions: usize) -> String {
    let mut src = String::from("use std::collections::BTreeMap;\n\n");
    for i in 0..functions {
        let _ = write!(
            src,
            "/// Doc {i}.\npub struct S{i} {{ a: u32 }}\n\nimpl S{i} {{\n    /// Method.\n    pub fn run_{i}(&self, x: u32) -> u32 {{\n        let mut m = BTreeMap::new();\n        m.insert(x, self.a);\n        helper(x) + m.len() as u32\n    }}\n}}\n\nfn helper_{i}(x: u32) -> u32 {{ x * 2 }}\n\n"
        );
    }
    src
}

fn python_source(functions: usize) -> String {
    let mut src = String::from("import os\n\n");
    for i in 0..functions {
        let _ = write!(
            src,
            "class C{i}:\n    \"\"\"Doc.\"\"\"\n\n    def run_{i}(self, x):\n        return os.path.join(str(x), 'a')\n\n\ndef helper_{i}(x):\n    \"\"\"Doubles, then adds.\"\"\"\n    y = x * 2\n    for k in range(3):\n        y += k\n    return y\n\n"
        );
    }
    src
}

fn extraction(c: &mut Criterion) {
    // As the `ctx` binary parses.
    ctx_code::symbols::use_mimalloc_for_tree_sitter();
    let mut group = c.benchmark_group("extract");
    for (name, lang, src) in [
        ("rust", Language::Rust, rust_source(400)),
        ("python", Language::Python, python_source(400)),
    ] {
        group.throughput(Throughput::Bytes(src.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| ctx_code::symbols::extract(lang, black_box(src.as_bytes())));
        });
        // What a cold summary parses: shallow where the language is scanned, against a full
        // parse of the same bytes.
        group.bench_function(format!("{name}-parse-for-summary"), |b| {
            b.iter(|| ctx_code::symbols::parse_for_symbols(lang, black_box(src.as_bytes())));
        });
        group.bench_function(format!("{name}-parse-full"), |b| {
            b.iter(|| ctx_code::symbols::parse(lang, black_box(src.as_bytes())));
        });
        group.bench_function(format!("{name}-skeleton"), |b| {
            b.iter(|| ctx_code::skeleton::skeleton(lang, black_box(src.as_bytes())));
        });
    }
    group.finish();
}

fn text_search(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..200 {
        std::fs::write(dir.path().join(format!("f{i}.rs")), rust_source(20)).unwrap();
    }
    settle(dir.path());
    let entries = ctx_fs::walk(dir.path(), &ctx_fs::WalkOptions::default()).unwrap();
    let bytes: u64 = entries.iter().map(|e| e.size).sum();
    let mut group = c.benchmark_group("search");
    group.throughput(Throughput::Bytes(bytes));
    for (name, pattern, regex) in [
        ("literal", "helper_1", false),
        ("regex", r"fn run_\d+7\(", true),
    ] {
        let query = TextQuery {
            pattern: pattern.to_owned(),
            regex,
            ..TextQuery::default()
        };
        group.bench_function(name, |b| {
            b.iter(|| search_text(black_box(&entries), &query).unwrap());
        });
        let walk = ctx_fs::WalkOptions::default();
        group.bench_function(format!("{name}-while-walking"), |b| {
            b.iter(|| search_tree(black_box(dir.path()), &walk, "", &query, None).unwrap());
        });
        // As the facade runs it: every file opened through the workspace sandbox.
        let sandbox = ctx_fs::Sandbox::open(dir.path()).unwrap();
        let reader = ctx_fs::WalkReader::new(&sandbox, sandbox.root()).unwrap();
        group.bench_function(format!("{name}-while-walking-sandboxed"), |b| {
            b.iter(|| {
                search_tree(black_box(sandbox.root()), &walk, "", &query, Some(&reader)).unwrap()
            });
        });
        // A server's long-lived cache: walk and contents reused while their stamps hold (the
        // files are made to look settled, as an unedited tree is).
        let cache = TreeCache::new(TreeCacheSettings::with_clock(std::time::SystemTime::now));
        group.bench_function(format!("{name}-tree-cache"), |b| {
            b.iter(|| search_cached(&cache, black_box(dir.path()), "", &query, None).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, extraction, text_search);
criterion_main!(benches);
