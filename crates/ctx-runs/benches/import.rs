//! Importing, loading and exporting a generated 1,000-step run (a Claude Code transcript with
//! 1,000 tool calls, each with a ~1 KiB result).
//!
//! `import_new` writes every object for the first time (tmp + fsync + rename per object), so a
//! fresh store is used per iteration; `import_again` re-imports into a store that already has
//! them; `parse` is the adapter alone; `load` re-hashes the manifest, every step and blob.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use ctx_runs::RunFormat;
use ctx_store::Store;
use serde_json::json;

const STEPS: usize = 1000;

fn transcript(seed: &str) -> String {
    let mut text = String::new();
    let session = json!({"type": "user", "sessionId": "bench", "uuid": "u0", "parentUuid": null,
        "timestamp": "2025-07-01T10:00:00Z", "message": {"role": "user", "content": "Read every file."}});
    writeln!(text, "{session}").expect("write");
    for i in 0..STEPS {
        let parent = if i == 0 {
            "u0".to_owned()
        } else {
            format!("r{}", i - 1)
        };
        let call = json!({"type": "assistant", "sessionId": "bench", "uuid": format!("a{i}"),
            "parentUuid": parent, "timestamp": "2025-07-01T10:00:01Z",
            "message": {"role": "assistant", "model": "claude-sonnet-4-20250514", "content": [
                {"type": "thinking", "thinking": format!("Next I read file {i}.")},
                {"type": "tool_use", "id": format!("toolu_{i}"), "name": "Read",
                 "input": {"file_path": format!("src/module_{i}.rs")}}]}});
        let body = format!(
            "// {seed} module {i}\n{}",
            "pub fn f() -> u32 { 42 }\n".repeat(40)
        );
        let result = json!({"type": "user", "sessionId": "bench", "uuid": format!("r{i}"),
            "parentUuid": format!("a{i}"), "timestamp": "2025-07-01T10:00:02Z",
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": body}]}});
        writeln!(text, "{call}\n{result}").expect("write");
    }
    text
}

fn fresh_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::init(&dir.path().join(".ctx")).expect("init");
    (dir, store)
}

fn bench_import(c: &mut Criterion) {
    let text = transcript("bench");
    let path = Path::new("bench.jsonl");
    let mut group = c.benchmark_group("run_1000_steps");
    group.sample_size(10);
    group.bench_function("parse", |b| {
        b.iter(|| {
            ctx_runs::import::parse(RunFormat::ClaudeCode, path, black_box(text.as_bytes()))
                .expect("parse")
        });
    });
    let mut round = 0u64;
    group.bench_function("import_new", |b| {
        b.iter_batched(
            || {
                // Distinct contents per round so nothing is deduplicated.
                round += 1;
                (fresh_store(), transcript(&format!("round {round}")))
            },
            |((_dir, store), text)| {
                ctx_runs::import_bytes(&store, path, text.as_bytes(), Some(RunFormat::ClaudeCode))
                    .expect("import")
            },
            criterion::BatchSize::PerIteration,
        );
    });
    let (_dir, store) = fresh_store();
    let outcome = ctx_runs::import_bytes(&store, path, text.as_bytes(), None).expect("import");
    assert_eq!(outcome.steps, STEPS as u64);
    group.bench_function("import_again", |b| {
        b.iter(|| {
            ctx_runs::import_bytes(&store, path, black_box(text.as_bytes()), None).expect("import")
        });
    });
    let id = outcome.run.to_string();
    group.bench_function("load", |b| {
        b.iter(|| ctx_runs::load_run(&store, black_box(&id)).expect("load"));
    });
    let run = ctx_runs::load_run(&store, &id).expect("load");
    group.bench_function("export_ctx", |b| {
        b.iter(|| ctx_runs::export_ctx(&store, black_box(&run)).expect("export"));
    });
    group.finish();
}

criterion_group!(benches, bench_import);
criterion_main!(benches);
