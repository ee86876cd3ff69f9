//! Bench binary: preview a whole tree as one pack (`glob:**/*`), cold and warm.
//!
//! `cargo bench -p ctx --bench pack_render [-- TREE]`; TREE defaults to the cargo registry's
//! sources (`~/.cargo/registry/src`, over 10,000 files on a developer machine). Cold is the
//! first render into an empty store (every block tokenized); warm is the second (every count
//! from the token cache); the last warm run streams its payload (`render_to`, as `pack render
//! -o` does) instead of collecting it. Prints files, bytes, tokens and wall times.
#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ctx::core::TokenizerKind;
use ctx::core::redact::Redactor;
use ctx::packs::{self, PackContext, PackSettings, PayloadStyle, RenderRequest};
use ctx::sources::AddOptions;
use ctx::sources::sensitive::SensitivePaths;
use ctx::store::Store;

fn main() {
    let tree = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map_or_else(
            || PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/registry/src"),
            PathBuf::from,
        );
    let root = tree.canonicalize().expect("the tree exists");
    // CTX_BENCH_STORE=DIR keeps the store (and its token cache) between runs, for profiling
    // the warm path alone.
    let dir = tempfile::tempdir().expect("tempdir");
    let store_dir =
        std::env::var_os("CTX_BENCH_STORE").map_or_else(|| dir.path().join(".ctx"), PathBuf::from);
    let (store, _) = Store::init(&store_dir).expect("init");
    let ctx = PackContext {
        store: &store,
        root: root.clone(),
        settings: &PackSettings {
            default_budget: u64::MAX / 2,
            default_tokenizer: TokenizerKind::O200kBase,
            max_file_bytes: 1 << 20,
            command_timeout: Duration::from_secs(30),
            redactor: Redactor::with_custom(&[]).expect("rules"),
            sensitive: SensitivePaths::with_extra(&[]).expect("patterns"),
        },
        clock: &unix_now,
    };
    if store.db().get_pack("tree").expect("query").is_none() {
        packs::create_pack(&ctx, "tree", None, None, 0).expect("create");
        packs::add_source(
            &ctx,
            "tree",
            "glob:**/*",
            &root,
            &AddOptions::default(),
            0,
            0,
        )
        .expect("add");
    }
    let request = RenderRequest {
        packs: vec!["tree".into()],
        budget: None,
        tokenizer: None,
        style: PayloadStyle::Markdown,
    };
    println!("tree: {}", root.display());
    for label in ["cold", "warm", "warm", "warm, streamed"] {
        let started = Instant::now();
        // The last run streams the payload (`pack render -o` does, to a file) instead of
        // collecting it: memory bounded by a chunk of files.
        let report = if label == "warm, streamed" {
            packs::render_to(
                &ctx,
                &request,
                packs::PayloadOptions::default(),
                &ctx::core::NoProgress,
                &mut std::io::sink(),
            )
            .expect("render")
        } else {
            packs::render(&ctx, &request).expect("render").report
        };
        let elapsed = started.elapsed();
        let r = &report;
        println!(
            "{label}: {:.3} s  {} files included, {} excluded, {:.1} MB payload, {} tokens ({} counted, {} cached), {:.1} MB/s",
            elapsed.as_secs_f64(),
            r.included.len(),
            r.excluded.len(),
            r.payload_bytes as f64 / 1e6,
            r.tokens_used,
            r.tokens_counted,
            r.tokens_cached,
            r.payload_bytes as f64 / 1e6 / elapsed.as_secs_f64(),
        );
    }
}

/// Unix seconds now: the registry's files are old, so the render cache trusts their stamps.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
