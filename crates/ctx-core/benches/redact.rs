//! Redaction throughput over a real source tree, one document at a time as packs render.
//!
//! The corpus is up to 40 MB of text files (Rust, Markdown, TOML, JSON, YAML, Python,
//! JavaScript, shell) from the local cargo registry, falling back to this workspace's own
//! sources. A second case measures a secret-dense document (the redaction test fixtures
//! repeated), where every rule fires.

#[path = "common/corpus.rs"]
mod corpus;

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctx_core::redact::Redactor;

const CORPUS_BYTES: usize = 40 * 1024 * 1024;
const TEXT_EXTENSIONS: &[&str] = &[
    "rs", "md", "toml", "json", "yml", "yaml", "py", "js", "ts", "sh", "txt", "c", "h",
];

fn source_tree() -> Vec<String> {
    corpus::documents(TEXT_EXTENSIONS, CORPUS_BYTES)
}

fn secret_dense() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redaction");
    let mut text = String::new();
    for name in ["positives.txt", "benign.txt"] {
        let fixture = std::fs::read_to_string(dir.join(name)).expect("redaction fixtures exist");
        // The fixtures mark secrets as ⟦RULE:secret⟧; keep the secret, drop the markup.
        text.push_str(&strip_markers(&fixture));
    }
    text.repeat(20)
}

fn strip_markers(fixture: &str) -> String {
    let mut out = String::with_capacity(fixture.len());
    let mut rest = fixture;
    while let Some(open) = rest.find('⟦') {
        out.push_str(&rest[..open]);
        let after = &rest[open + '⟦'.len_utf8()..];
        let colon = after.find(':').expect("a marker names its rule");
        let close = after.find('⟧').expect("a marker is closed");
        out.push_str(&after[colon + 1..close]);
        rest = &after[close + '⟧'.len_utf8()..];
    }
    out.push_str(rest);
    out
}

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
