//! Token counting throughput on real source code.
//!
//! The corpus is up to 8 MB of Rust sources from the local cargo registry (the crates every
//! Rust developer has), falling back to this workspace's own sources.

#[path = "common/corpus.rs"]
mod corpus;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctx_core::TokenizerKind;

const CORPUS_BYTES: usize = 8 * 1024 * 1024;

fn corpus() -> String {
    corpus::documents(&["rs"], CORPUS_BYTES).concat()
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
    // Each count on a fresh thread, so its memo of short pieces starts empty: a cold render
    // counts every file once, and its misses (distinct pieces) cost more than the hits above.
    let mut group = c.benchmark_group("count_tokens_fresh_memo");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    for kind in TokenizerKind::ALL {
        group.bench_function(kind.name(), |b| {
            b.iter(|| {
                std::thread::scope(|scope| {
                    scope
                        .spawn(|| kind.count(black_box(&text)))
                        .join()
                        .expect("counting does not panic")
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_tokens);
criterion_main!(benches);
