//! Redaction throughput over a real source tree, one document at a time as packs render.
//!
//! The corpus is up to 40 MB of text files (Rust, Markdown, TOML, JSON, YAML, Python,
//! JavaScript, shell) from the local cargo registry, falling back to this workspace's own
//! sources. A second case measures a secret-dense document (the redaction test fixtures
//! repeated), where every rule fires.

#[path = "common/redaction_inputs.rs"]
mod inputs;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctx_core::redact::Redactor;
use inputs::{secret_dense, source_tree};

fn bench_redact(c: &mut Criterion) {
    let redactor = Redactor::builtin();
    let tree = source_tree();
    let tree_bytes: usize = tree.iter().map(String::len).sum();
    let dense = secret_dense();

    let mut group = c.benchmark_group("redact");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(tree_bytes as u64));
    group.bench_function("source_tree", |b| {
        b.iter(|| {
            let mut findings = 0;
            for doc in &tree {
                findings += redactor.redact(black_box(doc)).findings.len();
            }
            findings
        });
    });
    group.throughput(Throughput::Bytes(dense.len() as u64));
    group.bench_function("secret_dense", |b| {
        b.iter(|| redactor.redact(black_box(&dense)).findings.len());
    });
    group.finish();
}

criterion_group!(benches, bench_redact);
criterion_main!(benches);
