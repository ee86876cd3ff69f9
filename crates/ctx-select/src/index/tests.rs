//! What an index holds, pinned: builds of a fixed tree must keep giving the same rows in every
//! table of `search.db` and the same manifest, whatever the build's memory limits. The
//! expected digests were computed by the build that held the whole corpus in memory (before
//! builds streamed), so a change to streaming, spilling or merging that alters one posting
//! list, one document row or the graph fails here.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use ctx_core::ContentHash;

use super::*;
use crate::source::{MemorySource, RawDocument};

/// A small mixed tree: Rust (a crate with modules importing each other), Python, Go, JS,
/// prose, an empty file, a binary (skipped) and a large-ish generated file, so every field,
/// import and reference edges, and skips show up.
fn fixture(variant: u32) -> Vec<RawDocument> {
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut put = |id: &str, text: String| {
        files.insert(id.to_owned(), text.into_bytes());
    };
    put(
        "Cargo.toml",
        "[package]\nname = \"fixture-crate\"\nversion = \"0.1.0\"\n".to_owned(),
    );
    put(
        "src/lib.rs",
        "//! The fixture crate.\nmod parser;\nmod cache;\npub use crate::parser::run_parser;\n\
         pub fn start() -> usize { parser::run_parser(\"start\") + cache::TokenCache::new().len() }\n"
            .to_owned(),
    );
    put(
        "src/parser.rs",
        "use crate::cache::TokenCache;\n/// Parses the input.\npub fn run_parser(input: &str) -> usize {\n    \
         let cache = TokenCache::new();\n    input.len() + cache.len() // tokens counted\n}\n"
            .to_owned(),
    );
    put(
        "src/cache.rs",
        "/// Holds tokens between runs.\npub struct TokenCache { entries: Vec<String> }\n\
         impl TokenCache {\n    pub fn new() -> Self { Self { entries: Vec::new() } }\n    \
         pub fn len(&self) -> usize { self.entries.len() }\n}\n"
            .to_owned(),
    );
    for i in 0..24 {
        let next = (i + 1) % 24;
        let mut text = format!(
            "//! Module {i} of the walker.\nuse crate::m{next}::helper_{next};\n\n/// Helps with {i}.\npub fn helper_{i}(x: u32) -> u32 {{\n    \
             let message = \"retry budget {i} exceeded\";\n    x + {i} + message.len() as u32\n}}\n"
        );
        for k in 0..(i % 5) {
            let _ = writeln!(
                text,
                "pub struct Ledger{i}x{k} {{ invoice_{k}: u64 }}\n// socket timeout {k}\nfn render_{k}() -> &'static str {{ \"schema {i}\" }}\n"
            );
        }
        if variant == 1 && i == 7 {
            text.push_str("pub fn changed_in_variant() -> TokenCache { TokenCache::new() }\n");
        }
        put(&format!("src/m{i}.rs"), text);
    }
    put(
        "py/pkg/__init__.py",
        "from .models import Invoice\nfrom . import views\n".to_owned(),
    );
    put(
        "py/pkg/models.py",
        "import json\n\nclass Invoice:\n    \"\"\"An invoice.\"\"\"\n    def total(self):\n        return json.dumps({'total': 1})\n"
            .to_owned(),
    );
    put(
        "py/pkg/views.py",
        "from pkg.models import Invoice\n\ndef render_invoice(inv: Invoice) -> str:\n    # renders the invoice\n    return str(inv.total())\n"
            .to_owned(),
    );
    put(
        "go.mod",
        "module example.com/fixture\n\ngo 1.22\n".to_owned(),
    );
    put(
        "go/store/store.go",
        "package store\n\n// Store keeps ledgers.\ntype Store struct{ Ledgers []string }\n\nfunc Open() *Store { return &Store{} }\n"
            .to_owned(),
    );
    put(
        "go/cmd/main.go",
        "package main\n\nimport \"example.com/fixture/go/store\"\n\nfunc main() { _ = store.Open() }\n"
            .to_owned(),
    );
    put(
        "web/app.js",
        "const util = require('./util');\nimport { render } from './render';\nexport function app() { return util.format(render('app')); }\n"
            .to_owned(),
    );
    put(
        "web/util.js",
        "exports.format = function format(s) { return `[${s}]`; };\n".to_owned(),
    );
    put(
        "web/render.js",
        "export function render(name) { return 'rendered ' + name; }\n".to_owned(),
    );
    put(
        "README.md",
        "# Fixture\n\nThe parser, the token cache and the ledger store.\n".to_owned(),
    );
    put("empty.txt", String::new());
    let mut big = String::new();
    for i in 0..400 {
        let _ = writeln!(
            big,
            "pub const VALUE_{i}: u64 = {};  // value number {i} of the table",
            i * 7919 % 1000
        );
    }
    put("src/table.rs", big);
    if variant == 1 {
        put(
            "web/added.js",
            "import { app } from './app';\napp();\n".to_owned(),
        );
        put(
            "README.md",
            "# Fixture\n\nChanged: the parser and the invoice views.\n".to_owned(),
        );
    }
    if variant == 1 {
        files.remove("web/render.js");
    }
    files.insert(
        "data/blob.bin".to_owned(),
        vec![0xff, 0xfe, 0x00, 0x01, 0x80],
    );
    files
        .into_iter()
        .map(|(id, bytes)| RawDocument {
            bytes,
            ..MemorySource::text(&id, "").expect("valid id")
        })
        .collect()
}

fn opts(force: bool) -> BuildOptions {
    BuildOptions {
        name: "fixture".to_owned(),
        force,
        canonicalize: CanonicalizeOptions::default(),
        policy: ErrorPolicy::SkipAndWarn,
        created_at: "2026-01-01T00:00:00Z".to_owned(),
        root: None,
        git_head: Some("0123456789abcdef".to_owned()),
    }
}

fn commits() -> BTreeMap<String, u32> {
    BTreeMap::from([("src/parser.rs".to_owned(), 3), ("README.md".to_owned(), 1)])
}

/// SHA-256 over every row of every table of `search.db` (in key order, each value with its
/// type), `manifest.json`, `index.json` and the document files.
fn digest(index: &Path) -> String {
    let mut out = db::dump_rows(&index.join(SEARCH_DB_FILE));
    for file in [MANIFEST_FILE, INDEX_FILE] {
        out.extend_from_slice(&fs::read(index.join(file)).expect("read"));
    }
    let mut documents: Vec<_> = fs::read_dir(index.join(DOCUMENTS_DIR))
        .expect("documents")
        .map(|e| e.expect("entry").path())
        .collect();
    documents.sort();
    for path in documents {
        out.extend_from_slice(path.file_name().expect("name").as_encoded_bytes());
        out.extend_from_slice(&fs::read(&path).expect("read"));
    }
    ContentHash::of(&out).to_hex()
}

/// Computed by the in-memory build (fixture 0, fresh).
const FRESH: &str = "c63436183c6cf96ae6af8dfc1fc6d107a2bc1fe6f6338adaecd045eba3a8c150";
/// Computed by the in-memory build (fixture 1, fresh).
const CHANGED: &str = "2a2733f2c005e78ff935962d589e7d173136d1c2d0d3ad4c5a70f82b8f5c5f02";

fn build(dir: &Path, variant: u32, force: bool) -> BuildReport {
    build_index(
        dir,
        &MemorySource::new(fixture(variant)),
        &opts(force),
        &commits,
    )
    .expect("build")
}

#[test]
fn a_fresh_build_holds_what_the_in_memory_build_held() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let report = build(tmp.path(), 0, false);
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!(digest(&tmp.path().join("fixture")), FRESH);
    // The digest covers both kinds of graph edges: imports (3) and references (1).
    let db =
        SearchDb::open(&tmp.path().join("fixture").join(SEARCH_DB_FILE), "fixture").expect("open");
    let weights: BTreeSet<u32> = db
        .graph()
        .expect("graph")
        .edges
        .iter()
        .flatten()
        .map(|&(_, w)| w)
        .collect();
    assert!(weights.contains(&1) && weights.contains(&3), "{weights:?}");
    let changed = tempfile::tempdir().expect("tempdir");
    build(changed.path(), 1, false);
    assert_eq!(digest(&changed.path().join("fixture")), CHANGED);
}

#[test]
fn an_incremental_build_holds_what_a_fresh_one_does() {
    let tmp = tempfile::tempdir().expect("tempdir");
    build(tmp.path(), 0, false);
    let report = build(tmp.path(), 1, false);
    assert!(report.reused == 37 && report.read == 3, "{report:?}");
    assert_eq!(report.removed, 1);
    assert_eq!(digest(&tmp.path().join("fixture")), CHANGED);
    let again = build(tmp.path(), 1, false);
    assert!(again.up_to_date);
    assert_eq!(digest(&tmp.path().join("fixture")), CHANGED);
}

fn build_limited(dir: &Path, variant: u32, limits: Limits) -> BuildReport {
    build_index_inner(
        dir,
        &MemorySource::new(fixture(variant)),
        &opts(false),
        &commits,
        &NoProgress,
        limits,
    )
    .expect("build")
}

#[test]
fn small_chunks_and_spilled_postings_change_nothing() {
    for (chunk_docs, postings_bytes) in [(1, 0), (3, 1), (7, 2000), (1000, 20_000)] {
        let limits = Limits {
            chunk_docs,
            postings_bytes,
        };
        let tmp = tempfile::tempdir().expect("tempdir");
        build_limited(tmp.path(), 0, limits);
        let index = tmp.path().join("fixture");
        assert_eq!(digest(&index), FRESH, "{limits:?}");
        let report = build_limited(tmp.path(), 1, limits);
        assert_eq!(report.reused, 37, "{limits:?}");
        assert_eq!(digest(&index), CHANGED, "{limits:?}");
        let left: Vec<_> = fs::read_dir(&index)
            .expect("index")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left.len(), 4, "no run or graph files left: {left:?}");
    }
}
