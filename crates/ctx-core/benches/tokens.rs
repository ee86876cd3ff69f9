//! Token counting throughput on real source code.
//!
//! The corpus is up to 8 MB of Rust sources from the local cargo registry (the crates every
//! Rust developer has), falling back to this workspace's own sources.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctx_core::TokenizerKind;

const CORPUS_BYTES: usize = 8 * 1024 * 1024;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn corpus() -> String {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut files = Vec::new();
    collect(&home.join(".cargo/registry/src"), &mut files);
    if files.is_empty() {
        collect(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            &mut files,
        );
    }
    let mut text = String::new();
    for file in files {
        if let Ok(content) = std::fs::read_to_string(&file) {
            text.push_str(&content);
            if text.len() >= CORPUS_BYTES {
                break;
            }
        }
    }
    text
}

fn bench_tokens(c: &mut Criterion) {
    let text = corpus();
    let mut group = c.benchmark_group("count_tokens");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    for kind in TokenizerKind::ALL {
        kind.count("warm up: build the tables outside the measurement");
        group.bench_function(kind.name(), |b| b.iter(|| kind.count(black_box(&text))));
    }
    group.finish();
}

criterion_group!(benches, bench_tokens);
criterion_main!(benches);
