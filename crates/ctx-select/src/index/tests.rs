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

/// Computed by the in-memory build (fixture 0, fresh), then again when format 3 added the
/// definers' lists and the import edges (every build path gave the same).
const FRESH: &str = "4ce080e404ed9354f5f6ff1b463c444d635252844fe382c4dc579df4e18d8cb0";
/// Computed by the in-memory build (fixture 1, fresh); again for format 3.
const CHANGED: &str = "0f153453d423c933f9a3674ba2c004f99831fd1cda0d2fa4afd7b0fc0e968939";

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
    let inode = |dir: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(dir).expect("dir"));
    let before = inode(&tmp.path().join("fixture"));
    let report = build(tmp.path(), 1, false);
    // Updated in place: the index directory was not replaced.
    assert_eq!(inode(&tmp.path().join("fixture")), before);
    assert!(report.reused == 37 && report.read == 3, "{report:?}");
    assert_eq!(report.removed, 1);
    let fresh = tempfile::tempdir().expect("tempdir");
    let fresh_report = build(fresh.path(), 1, false);
    assert_eq!(report.skipped, fresh_report.skipped);
    assert_eq!(report.cache_version, fresh_report.cache_version);
    assert_eq!(
        digest(&tmp.path().join("fixture")),
        digest(&fresh.path().join("fixture"))
    );
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
    for (window, postings_bytes) in [(1, 0), (3, 1), (7, 2000), (1000, 20_000)] {
        let limits = Limits {
            window,
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

#[test]
fn a_new_git_commit_is_taken_in_place() {
    let tmp = tempfile::tempdir().expect("tempdir");
    build(tmp.path(), 0, false);
    let index = tmp.path().join("fixture");
    let inode = |dir: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(dir).expect("dir"));
    let before = inode(&index);
    let moved = BuildOptions {
        git_head: Some("fedcba9876543210".to_owned()),
        ..opts(false)
    };
    let later = || BTreeMap::from([("src/m3.rs".to_owned(), 2), ("README.md".to_owned(), 4)]);
    let source = MemorySource::new(fixture(0));
    let report = build_index(tmp.path(), &source, &moved, &later).expect("update");
    assert!(!report.up_to_date && report.read == 0, "{report:?}");
    assert_eq!(inode(&index), before, "updated in place");
    let fresh = tempfile::tempdir().expect("tempdir");
    build_index(fresh.path(), &source, &moved, &later).expect("fresh");
    assert_eq!(digest(&index), digest(&fresh.path().join("fixture")));
    // And with a file changed at the same time.
    let third = BuildOptions {
        git_head: Some("0000000000000001".to_owned()),
        ..opts(false)
    };
    let source = MemorySource::new(fixture(1));
    build_index(tmp.path(), &source, &third, &commits).expect("update");
    assert_eq!(inode(&index), before, "updated in place");
    let fresh = tempfile::tempdir().expect("tempdir");
    build_index(fresh.path(), &source, &third, &commits).expect("fresh");
    assert_eq!(digest(&index), digest(&fresh.path().join("fixture")));
}

#[test]
fn an_update_killed_at_any_point_is_finished_or_undone_by_the_next_build() {
    for point in [1, 2] {
        let tmp = tempfile::tempdir().expect("tempdir");
        build(tmp.path(), 0, false);
        let index = tmp.path().join("fixture");
        update::CRASH_AT.set(point);
        let killed = build_index(
            tmp.path(),
            &MemorySource::new(fixture(1)),
            &opts(false),
            &commits,
        );
        update::CRASH_AT.set(0);
        assert!(killed.is_err(), "{point}");
        assert!(
            index.join(".update.json").is_file(),
            "the journal is left: {point}"
        );
        if point == 1 {
            // Before the commit, readers still see the previous index, whole.
            assert!(crate::OpenIndex::open(tmp.path(), "fixture").is_ok());
        }
        // The next build finishes (2) or undoes (1) it, then updates what is left to do.
        let report = build(tmp.path(), 1, false);
        assert_eq!(digest(&index), CHANGED, "{point}");
        assert_eq!(
            report.read,
            if point == 1 { 3 } else { 0 },
            "{point}: {report:?}"
        );
        assert!(verify_index(&index, "fixture").expect("verify").valid);
        let left: Vec<_> = fs::read_dir(&index)
            .expect("index")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left.len(), 4, "no journal or staged files left: {left:?}");
    }
}

#[test]
fn a_live_index_updates_from_the_paths_a_watcher_saw() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let index = tmp.path().join("fixture");
    let mut live = LiveIndex::new(tmp.path(), "fixture");
    let first = live
        .update(
            &MemorySource::new(fixture(0)),
            &opts(false),
            &commits,
            &NoProgress,
        )
        .expect("build");
    assert_eq!((first.read, digest(&index)), (40, FRESH.to_owned()));
    // Fixture 1 changes src/m7.rs and README.md, adds web/added.js, removes web/render.js.
    let source = MemorySource::new(fixture(1));
    let ids = |names: &[&str]| -> Vec<DocumentId> {
        names
            .iter()
            .map(|n| DocumentId::new(n).expect("id"))
            .collect()
    };
    let report = live
        .update_ids(
            &source,
            &ids(&["src/m7.rs", "web/render.js", "README.md"]),
            &opts(false),
            &commits,
            &NoProgress,
        )
        .expect("update");
    assert_eq!((report.read, report.removed), (2, 1), "{report:?}");
    // A path new to the index takes a listing, which finds the rest.
    let report = live
        .update_ids(
            &source,
            &ids(&["web/added.js"]),
            &opts(false),
            &commits,
            &NoProgress,
        )
        .expect("update");
    assert_eq!(report.read, 1, "{report:?}");
    assert_eq!(digest(&index), CHANGED);
    let again = live
        .update_ids(
            &source,
            &ids(&["src/m7.rs", "src/m7.rs"]),
            &opts(false),
            &commits,
            &NoProgress,
        )
        .expect("nothing");
    assert!(again.up_to_date);
    // A directory moved away whole reports the directory alone.
    let without_py: Vec<RawDocument> = fixture(1)
        .into_iter()
        .filter(|d| !d.id.as_str().starts_with("py/"))
        .collect();
    let report = live
        .update_ids(
            &MemorySource::new(without_py),
            &ids(&["py/pkg", "py"]),
            &opts(false),
            &commits,
            &NoProgress,
        )
        .expect("update");
    assert_eq!(report.removed, 3, "{report:?}");
    live.update(&source, &opts(false), &commits, &NoProgress)
        .expect("back");
    assert_eq!(digest(&index), CHANGED);
    // Another process changes the index: what the live index held is read again.
    build(tmp.path(), 0, false);
    assert_eq!(digest(&index), FRESH);
    let report = live
        .update_ids(
            &source,
            &ids(&["src/m7.rs"]),
            &opts(false),
            &commits,
            &NoProgress,
        )
        .expect("update");
    assert_eq!(report.read, 1, "{report:?}");
    live.update(&source, &opts(false), &commits, &NoProgress)
        .expect("listing");
    assert_eq!(digest(&index), CHANGED);
}

/// Updates in place, after any sequence of edits, hold what a fresh build of the same tree
/// holds, and select the same.
mod in_place {
    use super::*;
    use proptest::prelude::*;

    const NAMES: &[&str] = &[
        "parse_token",
        "TokenCache",
        "render_page",
        "LedgerStore",
        "retry_socket",
        "invoice_total",
        "walk_schema",
    ];

    /// A file of `lang` (0 Rust, 1 Python, 2 JS, 3 Go, 4 prose, 5 binary) number `slot`,
    /// defining and using names picked by `seed`.
    fn file(lang: u8, slot: usize, seed: u32) -> (String, Vec<u8>) {
        let pick =
            |k: u32| NAMES[usize::try_from(seed / 7u32.pow(k)).expect("small") % NAMES.len()];
        let (def, used, other) = (pick(0), pick(1), pick(2));
        let target = (seed as usize + slot) % 6;
        match lang {
            0 => (
                format!("src/m{slot}.rs"),
                format!(
                    "use crate::m{target}::{used};\n\n/// {other} helper.\npub fn {def}_{slot}() -> usize {{ {used}() + {seed} }}\npub fn {def}() {{ {other}(); }}\n"
                )
                .into_bytes(),
            ),
            1 => (
                format!("py/pkg/m{slot}.py"),
                format!(
                    "from pkg.m{target} import {used}\n\ndef {def}():\n    \"\"\"Calls {other}.\"\"\"\n    return {used}() + {seed}\n"
                )
                .into_bytes(),
            ),
            2 => (
                format!("web/m{slot}.js"),
                format!(
                    "import {{ {used} }} from './m{target}';\nexport function {def}() {{ return {used}('{other} {seed}'); }}\n"
                )
                .into_bytes(),
            ),
            3 => (
                format!("go/m{slot}/m.go"),
                format!(
                    "package m{slot}\n\nimport \"example.com/fixture/go/m{target}\"\n\nfunc {def}() int {{ return m{target}.Run() + {seed} }}\n"
                )
                .into_bytes(),
            ),
            4 => (
                format!("docs/n{slot}.md"),
                format!("# {def}\n\nHow {used} and {other} work ({seed}).\n").into_bytes(),
            ),
            _ => (format!("data/b{slot}.bin"), vec![0xff, 0xfe, 0, (seed % 251) as u8]),
        }
    }

    #[derive(Debug, Clone)]
    enum Edit {
        /// Writes (creates or changes) file `slot` of a language.
        Write(u8, usize, u32),
        /// Removes file `slot` of a language.
        Remove(u8, usize),
        /// Renames the crate or the Go module (imports resolve differently).
        Layout(u32),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            6 => (0u8..6, 0usize..6, any::<u32>()).prop_map(|(l, s, v)| Edit::Write(l, s, v)),
            2 => (0u8..6, 0usize..6).prop_map(|(l, s)| Edit::Remove(l, s)),
            1 => any::<u32>().prop_map(Edit::Layout),
        ]
    }

    fn source(files: &BTreeMap<String, Vec<u8>>) -> MemorySource {
        MemorySource::new(
            files
                .iter()
                .map(|(id, bytes)| RawDocument {
                    bytes: bytes.clone(),
                    ..MemorySource::text(id, "").expect("valid id")
                })
                .collect(),
        )
    }

    fn selections(dir: &Path) -> Vec<String> {
        let index = crate::OpenIndex::open(dir, "fixture").expect("open");
        [
            "parse token cache",
            "render_page ledger store",
            "retry socket invoice total",
        ]
        .iter()
        .map(|q| {
            let result = index
                .select(
                    &crate::Query::parse(q).expect("query"),
                    &crate::SelectOptions::default(),
                    &crate::ApproxTokenCounter,
                )
                .expect("select");
            serde_json::to_string(&result).expect("json")
        })
        .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn updates_in_place_hold_what_a_fresh_build_holds(
            steps in prop::collection::vec(prop::collection::vec(edit(), 1..5), 1..6)
        ) {
            let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
            files.insert("Cargo.toml".into(), b"[package]\nname = \"fixture\"\n".to_vec());
            files.insert("go.mod".into(), b"module example.com/fixture\n".to_vec());
            for slot in 0..6 {
                for lang in 0..5 {
                    let (id, bytes) = file(lang, slot, u32::try_from(slot * 31 + usize::from(lang)).expect("small"));
                    files.insert(id, bytes);
                }
            }
            let tmp = tempfile::tempdir().expect("tempdir");
            build_index(tmp.path(), &source(&files), &opts(false), &commits).expect("build");
            let inode = |dir: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(dir).expect("dir"));
            let before = inode(&tmp.path().join("fixture"));
            for step in steps {
                for edit in step {
                    match edit {
                        Edit::Write(lang, slot, seed) => {
                            let (id, bytes) = file(lang, slot, seed);
                            files.insert(id, bytes);
                        }
                        Edit::Remove(lang, slot) => {
                            files.remove(&file(lang, slot, 0).0);
                        }
                        Edit::Layout(seed) => {
                            files.insert("Cargo.toml".into(), format!("[package]\nname = \"fixture{}\"\n", seed % 2).into_bytes());
                            files.insert("go.mod".into(), format!("module example.com/fixture{}\n", seed % 3).into_bytes());
                        }
                    }
                }
                let report = build_index(tmp.path(), &source(&files), &opts(false), &commits).expect("update");
                let fresh = tempfile::tempdir().expect("tempdir");
                let fresh_report = build_index(fresh.path(), &source(&files), &opts(false), &commits).expect("build");
                let (updated, built) = (tmp.path().join("fixture"), fresh.path().join("fixture"));
                prop_assert_eq!(inode(&updated), before, "updated in place");
                prop_assert_eq!(digest(&updated), digest(&built));
                prop_assert_eq!(&report.skipped, &fresh_report.skipped);
                prop_assert_eq!(report.documents, fresh_report.documents);
                let check = verify_index(&updated, "fixture").expect("verify");
                prop_assert!(check.valid, "{:?}", check);
                prop_assert_eq!(selections(tmp.path()), selections(fresh.path()));
            }
        }
    }
}
