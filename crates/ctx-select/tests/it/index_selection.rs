//! Seed 003's cache and selection tests, over indexes built in temp dirs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use ctx_select::index::{FORMAT_VERSION, MANIFEST_FILE, read_manifest};
use ctx_select::{
    ApproxTokenCounter, BuildOptions, CanonicalizeOptions, ContextSelector, ErrorPolicy,
    FilesystemSource, IndexError, MemorySource, OpenIndex, Query, RawDocument, ScorerKind,
    SelectOptions, SelectionError, TermFrequencyScorer, build_index, ingest_from_source,
    verify_index,
};

fn opts(name: &str, created_at: &str) -> BuildOptions {
    BuildOptions {
        name: name.to_owned(),
        force: false,
        canonicalize: CanonicalizeOptions::default(),
        policy: ErrorPolicy::SkipAndWarn,
        created_at: created_at.to_owned(),
        root: None,
        git_head: None,
    }
}

fn no_git() -> BTreeMap<String, u32> {
    BTreeMap::new()
}

fn mem(docs: &[(&str, &str)]) -> MemorySource {
    MemorySource::new(
        docs.iter()
            .map(|(id, c)| MemorySource::text(id, c).expect("id"))
            .collect(),
    )
}

fn write_tree(root: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let full = root.join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        fs::write(full, content).expect("write");
    }
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    write_tree(
        dir.path(),
        &[
            ("Cargo.toml", "[package]\nname = \"demo\"\n"),
            (
                "src/main.rs",
                "mod parser;\nmod render;\nfn main() {\n    let ast = parser::parse_source(\"x\");\n    render::render_tree(&ast);\n}\n",
            ),
            (
                "src/parser.rs",
                "//! The parser: tokens to a syntax tree.\npub struct SyntaxTree;\n/// Parses source text into a tree.\npub fn parse_source(text: &str) -> SyntaxTree {\n    let _ = text;\n    SyntaxTree\n}\n",
            ),
            (
                "src/render.rs",
                "use crate::parser::SyntaxTree;\n/// Renders a tree as text.\npub fn render_tree(tree: &SyntaxTree) -> String {\n    let _ = tree;\n    String::new()\n}\n",
            ),
            (
                "docs/guide.md",
                "# Guide\n\nThe renderer prints trees. The parser builds them.\n",
            ),
            ("README.md", "# demo\n\nA tiny demo project.\n"),
        ],
    );
    dir
}

fn build_fs(root: &Path, indexes: &Path, name: &str) -> ctx_select::BuildReport {
    let source = FilesystemSource::new(root, Vec::new(), 1 << 20);
    build_index(
        indexes,
        &source,
        &opts(name, "2026-01-01T00:00:00Z"),
        &no_git,
    )
    .expect("build")
}

fn tree_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("readdir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "search.db") {
                out.push((
                    p.strip_prefix(dir).expect("inside").display().to_string(),
                    fs::read(&p).expect("read"),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn cache_rebuild_is_deterministic_and_created_at_is_excluded() {
    let source = mem(&[("b.md", "bee"), ("a.md", "ay"), ("c/d.txt", "")]);
    let one = tempfile::tempdir().expect("tmp");
    let two = tempfile::tempdir().expect("tmp");
    let r1 = build_index(
        one.path(),
        &source,
        &opts("x", "2026-01-01T00:00:00Z"),
        &no_git,
    )
    .expect("one");
    let r2 = build_index(
        two.path(),
        &source,
        &opts("x", "2027-06-01T12:00:00Z"),
        &no_git,
    )
    .expect("two");
    assert_eq!(r1.cache_version, r2.cache_version);
    let m1 = fs::read_to_string(one.path().join("x").join(MANIFEST_FILE)).expect("m1");
    let m2 = fs::read_to_string(two.path().join("x").join(MANIFEST_FILE)).expect("m2");
    assert_ne!(m1, m2, "created_at differs");
    assert_eq!(
        m1.replace("2026-01-01T00:00:00Z", "T"),
        m2.replace("2027-06-01T12:00:00Z", "T")
    );
    let strip = |v: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        v.into_iter().filter(|(p, _)| p != MANIFEST_FILE).collect()
    };
    assert_eq!(
        strip(tree_bytes(&one.path().join("x"))),
        strip(tree_bytes(&two.path().join("x")))
    );
    // Manifest documents are sorted, with fixed field order.
    let manifest = read_manifest(&one.path().join("x"), "x").expect("manifest");
    let ids: Vec<_> = manifest
        .documents
        .iter()
        .map(|d| d.id.to_string())
        .collect();
    assert_eq!(ids, ["a.md", "b.md", "c/d.txt"]);
    let first_doc = fs::read_to_string(
        one.path()
            .join("x/documents")
            .join(&manifest.documents[0].file),
    )
    .expect("doc");
    let order: Vec<usize> = [
        "\"id\"",
        "\"version\"",
        "\"source\"",
        "\"content\"",
        "\"metadata\"",
    ]
    .iter()
    .map(|k| first_doc.find(k).expect("field"))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{first_doc}");
    let index = fs::read_to_string(one.path().join("x/index.json")).expect("index.json");
    assert!(
        index.starts_with("{\n  \"a.md\": \""),
        "flat sorted map: {index}"
    );
}

#[test]
fn config_change_changes_the_cache_version() {
    let source = mem(&[("a.md", "x  \r\n")]);
    let dir = tempfile::tempdir().expect("tmp");
    let plain = build_index(dir.path(), &source, &opts("p", "t"), &no_git).expect("plain");
    let mut canon = opts("c", "t");
    canon.canonicalize.trailing_whitespace = true;
    let canonical = build_index(dir.path(), &source, &canon, &no_git).expect("canon");
    assert_ne!(plain.cache_version, canonical.cache_version);
    // Rebuilding an index under a new config re-reads everything.
    canon.name = "p".to_owned();
    let again = build_index(dir.path(), &source, &canon, &no_git).expect("again");
    assert_eq!((again.read, again.reused), (1, 0));
    assert_eq!(again.cache_version, canonical.cache_version);
}

#[test]
fn duplicate_ids_are_fatal_and_leave_nothing_behind() {
    let source = MemorySource::new(vec![
        MemorySource::text("a.md", "one").expect("id"),
        MemorySource::text("a.md", "two").expect("id"),
    ]);
    let dir = tempfile::tempdir().expect("tmp");
    let err = build_index(dir.path(), &source, &opts("d", "t"), &no_git).expect_err("duplicate");
    assert!(
        matches!(err, IndexError::DuplicateDocumentId(ref id) if id.as_str() == "a.md"),
        "{err}"
    );
    assert!(!dir.path().join("d").exists());
}

#[test]
fn corruption_is_named_by_verify_and_refused_by_select() {
    let tree = project();
    let idx = tempfile::tempdir().expect("tmp");
    build_fs(tree.path(), idx.path(), "default");
    let dir = idx.path().join("default");
    assert!(verify_index(&dir, "default").expect("verify").valid);

    let manifest = read_manifest(&dir, "default").expect("manifest");
    let entry = manifest
        .documents
        .iter()
        .find(|d| d.id.as_str() == "src/parser.rs")
        .expect("parser");
    let path = dir.join("documents").join(&entry.file);
    let text = fs::read_to_string(&path).expect("doc");
    fs::write(&path, text.replace("syntax tree", "SYNTAX TREE")).expect("tamper");

    let report = verify_index(&dir, "default").expect("verify");
    assert!(!report.valid);
    let failed: Vec<_> = report.checks.iter().filter(|c| !c.ok).collect();
    assert_eq!(failed.len(), 1, "{report:?}");
    assert!(
        failed[0].problems[0].contains(&format!("documents/{}", entry.file)),
        "{report:?}"
    );

    // Version mismatch on load: selecting the damaged file refuses, with the fix.
    let index = OpenIndex::open(idx.path(), "default").expect("cheap checks pass");
    let err = index
        .select(
            &Query::parse("parser syntax tree").expect("q"),
            &SelectOptions::default(),
            &ApproxTokenCounter,
        )
        .expect_err("damaged");
    let message = err.to_string();
    assert!(
        message.contains(&entry.file) && message.contains("ctx index build --force"),
        "{message}"
    );
    drop(index);

    // A missing document file is caught when opening.
    fs::remove_file(&path).expect("remove");
    let err = OpenIndex::open(idx.path(), "default")
        .err()
        .expect("missing file");
    assert!(err.to_string().contains("is missing"), "{err}");
    let report = verify_index(&dir, "default").expect("verify");
    assert!(
        report
            .checks
            .iter()
            .any(|c| !c.ok && c.problems.iter().any(|p| p.contains("missing")))
    );

    // An orphan is reported too, and --force repairs everything.
    fs::write(dir.join("documents/000000000000.json"), "{}").expect("orphan");
    let report = verify_index(&dir, "default").expect("verify");
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.check.contains("orphan") && !c.ok)
    );
    let err = build_index(
        idx.path(),
        &FilesystemSource::new(tree.path(), Vec::new(), 1 << 20),
        &opts("default", "t"),
        &no_git,
    );
    // An incremental build over a damaged index either repairs it by re-reading or refuses;
    // --force always rebuilds.
    drop(err);
    let mut force = opts("default", "t");
    force.force = true;
    build_index(
        idx.path(),
        &FilesystemSource::new(tree.path(), Vec::new(), 1 << 20),
        &force,
        &no_git,
    )
    .expect("force");
    assert!(verify_index(&dir, "default").expect("verify").valid);
}

#[test]
fn a_damaged_manifest_is_named_and_an_index_from_a_newer_ctx_is_refused() {
    let tree = project();
    let idx = tempfile::tempdir().expect("tmp");
    build_fs(tree.path(), idx.path(), "default");
    let manifest_path = idx.path().join("default").join(MANIFEST_FILE);
    let text = fs::read_to_string(&manifest_path).expect("manifest");

    fs::write(&manifest_path, "{ not json").expect("break");
    let report = verify_index(&idx.path().join("default"), "default").expect("verify");
    assert!(
        !report.valid && report.checks[0].problems[0].contains("manifest.json"),
        "{report:?}"
    );
    let err = OpenIndex::open(idx.path(), "default")
        .err()
        .expect("refused");
    assert!(err.to_string().contains("ctx index build --force"), "{err}");

    fs::write(
        &manifest_path,
        text.replace(
            &format!("\"format_version\": {FORMAT_VERSION}"),
            "\"format_version\": 99",
        ),
    )
    .expect("newer");
    let err = OpenIndex::open(idx.path(), "default").err().expect("newer");
    assert!(
        matches!(err, IndexError::NewerFormat { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade ctx"), "{err}");
    let err = build_index(
        idx.path(),
        &FilesystemSource::new(tree.path(), Vec::new(), 1 << 20),
        &opts("default", "t"),
        &no_git,
    )
    .expect_err("build refuses to reuse a newer index");
    assert!(matches!(err, IndexError::NewerFormat { .. }), "{err}");
}

#[test]
fn rebuilds_are_incremental() {
    let tree = project();
    let idx = tempfile::tempdir().expect("tmp");
    let first = build_fs(tree.path(), idx.path(), "default");
    assert_eq!((first.documents, first.read, first.reused), (6, 6, 0));
    let again = build_fs(tree.path(), idx.path(), "default");
    assert!(again.up_to_date, "{again:?}");
    assert_eq!(again.cache_version, first.cache_version);

    // A stale temp dir from a crashed build is removed by the next build.
    fs::create_dir_all(idx.path().join(".default.tmp-999-deadbeef/documents")).expect("stale");
    fs::write(
        tree.path().join("src/render.rs"),
        "pub fn render_tree() {}\n",
    )
    .expect("edit");
    fs::remove_file(tree.path().join("README.md")).expect("remove");
    fs::write(tree.path().join("src/extra.rs"), "pub fn extra() {}\n").expect("add");
    let third = build_fs(tree.path(), idx.path(), "default");
    assert_eq!(
        (third.documents, third.read, third.reused, third.removed),
        (6, 2, 4, 1),
        "{third:?}"
    );
    assert!(!idx.path().join(".default.tmp-999-deadbeef").exists());
    assert!(
        verify_index(&idx.path().join("default"), "default")
            .expect("verify")
            .valid
    );
    // Same bytes as a fresh build of the same tree.
    let fresh = tempfile::tempdir().expect("tmp");
    let clean = build_fs(tree.path(), fresh.path(), "default");
    assert_eq!(clean.cache_version, third.cache_version);
    let strip = |v: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        v.into_iter().filter(|(p, _)| p != MANIFEST_FILE).collect()
    };
    assert_eq!(
        strip(tree_bytes(&idx.path().join("default"))),
        strip(tree_bytes(&fresh.path().join("default")))
    );
}

#[test]
fn binary_and_oversized_files_are_skipped_with_reasons_and_remembered() {
    let tree = project();
    fs::write(tree.path().join("logo.png"), [0x89, b'P', b'N', b'G', 0, 0]).expect("bin");
    fs::write(tree.path().join("big.txt"), "x".repeat(5000)).expect("big");
    let idx = tempfile::tempdir().expect("tmp");
    let source = FilesystemSource::new(tree.path(), Vec::new(), 4096);
    let report = build_index(idx.path(), &source, &opts("default", "t"), &no_git).expect("build");
    assert_eq!(report.documents, 6);
    assert_eq!(report.skipped.len(), 2, "{:?}", report.skipped);
    assert!(
        report
            .skipped
            .iter()
            .any(|s| s.contains("logo.png") && s.contains("binary"))
    );
    let again = build_index(idx.path(), &source, &opts("default", "t"), &no_git).expect("again");
    assert!(again.up_to_date && again.skipped.len() == 2, "{again:?}");
    let abort = ErrorPolicy::Abort;
    let mut strict = opts("strict", "t");
    strict.policy = abort;
    assert!(build_index(idx.path(), &source, &strict, &no_git).is_err());
}

#[test]
fn default_ranking_finds_mentioned_files_and_their_neighbours_and_explains_why() {
    let tree = project();
    let idx = tempfile::tempdir().expect("tmp");
    build_fs(tree.path(), idx.path(), "default");
    let index = OpenIndex::open(idx.path(), "default").expect("open");
    let query =
        Query::parse("why does parse_source in parser.rs return an empty tree?").expect("q");
    let result = index
        .select(&query, &SelectOptions::default(), &ApproxTokenCounter)
        .expect("select");
    assert_eq!(result.documents[0].id.as_str(), "src/parser.rs");
    let why = &result.documents[0].why;
    let names: Vec<&str> = why.signals.iter().map(|s| s.name.as_str()).collect();
    assert!(
        names.contains(&"filename_mentioned") && names.contains(&"bm25_content"),
        "{names:?}"
    );
    assert!(why.term_matches.contains_key("parse"), "{why:?}");
    // The importers of the mentioned file come with graph rank.
    let ranked = index
        .rank(&query, ScorerKind::Default, &ctx_select::Weights::default())
        .expect("rank");
    let main = ranked
        .iter()
        .find(|r| r.id == "src/main.rs")
        .expect("main ranked");
    assert!(
        main.why.signals.iter().any(|s| s.name == "graph"),
        "{main:?}"
    );
    // BM25 alone has no path or graph signals.
    let bm25 = index
        .rank(&query, ScorerKind::Bm25, &ctx_select::Weights::default())
        .expect("bm25");
    assert!(
        bm25.iter()
            .all(|r| r.why.signals.iter().all(|s| s.name.starts_with("bm25")))
    );
    // Byte-identical output for identical inputs.
    let again = index
        .select(&query, &SelectOptions::default(), &ApproxTokenCounter)
        .expect("again");
    assert_eq!(
        serde_json::to_string(&result).expect("json"),
        serde_json::to_string(&again).expect("json")
    );
}

#[test]
fn budget_edge_cases_and_skeleton_degradation() {
    let tree = project();
    let mut body = String::new();
    for i in 0..400 {
        let _ = writeln!(body, "    let value_{i} = compute_total({i});");
    }
    write_tree(
        tree.path(),
        &[(
            "src/ledger.rs",
            &format!("/// Ledger totals.\npub fn ledger_total() -> u64 {{\n{body}    0\n}}\n"),
        )],
    );
    let idx = tempfile::tempdir().expect("tmp");
    build_fs(tree.path(), idx.path(), "default");
    let index = OpenIndex::open(idx.path(), "default").expect("open");
    let query = Query::parse("ledger total").expect("q");
    let select = |budget: u64, degrade: bool| {
        index
            .select(
                &query,
                &SelectOptions {
                    budget,
                    degrade,
                    ..SelectOptions::default()
                },
                &ApproxTokenCounter,
            )
            .expect("select")
    };
    let zero = select(0, true);
    assert!(zero.documents.is_empty() && zero.selection.tokens_used == 0);
    let one = select(1, true);
    assert!(
        one.documents.is_empty(),
        "nothing fits in 1 token: {:?}",
        one.selection
    );
    let small = select(200, true);
    let ledger = small
        .documents
        .iter()
        .find(|d| d.id.as_str() == "src/ledger.rs")
        .expect("ledger as skeleton");
    assert!(
        ledger.degraded
            && ledger.content.contains("ledger_total")
            && !ledger.content.contains("value_399")
    );
    assert_eq!(small.selection.degraded.len(), 1);
    assert!(small.selection.tokens_used <= 200);
    let whole = select(200, false);
    assert!(
        whole
            .documents
            .iter()
            .all(|d| d.id.as_str() != "src/ledger.rs" && !d.degraded)
    );
}

#[test]
fn bad_queries_are_refused_with_a_hint() {
    assert!(matches!(
        Query::parse("   "),
        Err(SelectionError::EmptyQuery)
    ));
    assert!(matches!(
        Query::parse("the of and what is"),
        Err(SelectionError::OnlyStopWords(_))
    ));
    assert!(matches!(
        Query::parse("?!... ;;"),
        Err(SelectionError::OnlyStopWords(_))
    ));
    let q = Query::parse("Parser::parse()?! <T> & src/lib.rs").expect("punctuation is fine");
    assert_eq!(q.terms, ["parser", "parse", "src", "lib", "rs"]);
}

#[test]
fn seed_pipeline_edge_cases() {
    let docs = |list: &[(&str, &str)]| {
        ingest_from_source(
            &mem(list),
            CanonicalizeOptions::default(),
            ErrorPolicy::Abort,
        )
        .expect("ingest")
        .documents
    };
    let q = Query::new("alpha beta");
    // Empty set.
    let empty = ContextSelector::select(&[], &q, &TermFrequencyScorer, &ApproxTokenCounter, 100)
        .expect("empty");
    assert!(empty.documents.is_empty() && empty.selection.documents_considered == 0);
    // One document; empty content.
    let one = docs(&[("a.md", "alpha beta gamma"), ("e.md", "")]);
    let r = ContextSelector::select(&one, &q, &TermFrequencyScorer, &ApproxTokenCounter, 100)
        .expect("one");
    assert_eq!(r.documents[0].id.as_str(), "a.md");
    assert!(
        (r.documents[0].score - 0.666_667).abs() < 1e-9,
        "{}",
        r.documents[0].score
    );
    let e = r
        .documents
        .iter()
        .find(|d| d.id.as_str() == "e.md")
        .expect("empty doc selected");
    assert_eq!((e.score, e.tokens, e.why.total_words), (0.0, 0, 0));
    // Multi-MB document.
    let big = "alpha ".repeat(600_000);
    let mb = docs(&[("big.txt", &big), ("small.txt", "beta")]);
    let r = ContextSelector::select(
        &mb,
        &q,
        &TermFrequencyScorer,
        &ApproxTokenCounter,
        1_000_000,
    )
    .expect("big");
    assert_eq!(r.documents[0].id.as_str(), "big.txt");
    assert_eq!(r.documents[0].tokens, 900_000);
    // Budget 1: smaller than any document.
    let r = ContextSelector::select(&one, &q, &TermFrequencyScorer, &ApproxTokenCounter, 1)
        .expect("b1");
    assert_eq!(r.documents.len(), 1, "only the empty document fits");
    // All scores 0: everything may be selected, ordered by id.
    let zero = docs(&[("c.md", "x"), ("a.md", "y"), ("b.md", "z")]);
    let r = ContextSelector::select(&zero, &q, &TermFrequencyScorer, &ApproxTokenCounter, 100)
        .expect("zeros");
    let ids: Vec<_> = r.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["a.md", "b.md", "c.md"]);
    assert!(r.documents.iter().all(|d| d.score == 0.0));
    // Punctuation-only query: no terms, every score 0.
    let punct = Query::new("!!! ??? ...");
    let r = ContextSelector::select(&one, &punct, &TermFrequencyScorer, &ApproxTokenCounter, 100)
        .expect("punct");
    assert!(r.documents.iter().all(|d| d.score == 0.0));
    // Budget 0.
    let r = ContextSelector::select(&one, &q, &TermFrequencyScorer, &ApproxTokenCounter, 0)
        .expect("zero budget");
    assert!(r.documents.is_empty());
    // The query deserializes (fixtures).
    let q2: Query =
        serde_json::from_str(r#"{"raw":"alpha","terms":["alpha"]}"#).expect("query json");
    assert_eq!(q2.terms, ["alpha"]);
}

#[test]
fn indexes_of_zero_and_one_document_and_of_a_large_one() {
    let idx = tempfile::tempdir().expect("tmp");
    let none = build_index(idx.path(), &mem(&[]), &opts("none", "t"), &no_git).expect("empty");
    assert_eq!(none.documents, 0);
    assert!(
        verify_index(&idx.path().join("none"), "none")
            .expect("verify")
            .valid
    );
    let index = OpenIndex::open(idx.path(), "none").expect("open");
    let r = index
        .select(
            &Query::parse("anything").expect("q"),
            &SelectOptions::default(),
            &ApproxTokenCounter,
        )
        .expect("select");
    assert!(r.documents.is_empty() && r.selection.documents_considered == 0);

    let big = format!(
        "fn main() {{}}\n{}",
        "// filler line with words\n".repeat(150_000)
    );
    let docs = vec![
        MemorySource::text("big.rs", &big).expect("id"),
        RawDocument {
            ..MemorySource::text("empty.txt", "").expect("id")
        },
    ];
    build_index(
        idx.path(),
        &MemorySource::new(docs),
        &opts("big", "t"),
        &no_git,
    )
    .expect("big");
    assert!(
        verify_index(&idx.path().join("big"), "big")
            .expect("verify")
            .valid
    );
    let index = OpenIndex::open(idx.path(), "big").expect("open");
    let r = index
        .select(
            &Query::parse("filler words").expect("q"),
            &SelectOptions {
                budget: 10_000_000,
                ..SelectOptions::default()
            },
            &ApproxTokenCounter,
        )
        .expect("select");
    assert_eq!(r.documents.len(), 1);
    assert_eq!(r.documents[0].content.len(), big.len());
}

fn index_of(files: &[(&str, &str)]) -> (tempfile::TempDir, tempfile::TempDir, OpenIndex) {
    let tree = tempfile::tempdir().expect("tmp");
    write_tree(tree.path(), files);
    let idx = tempfile::tempdir().expect("tmp");
    build_fs(tree.path(), idx.path(), "default");
    let index = OpenIndex::open(idx.path(), "default").expect("open");
    (tree, idx, index)
}

fn ranked_ids(index: &OpenIndex, query: &str) -> Vec<String> {
    index
        .rank(
            &Query::parse(query).expect("query"),
            ScorerKind::Default,
            &ctx_select::Weights::default(),
        )
        .expect("rank")
        .into_iter()
        .map(|r| r.id)
        .collect()
}

#[test]
fn the_file_defining_a_named_identifier_beats_files_that_mention_it() {
    let user = "from sympy.series import SeqFormula\n\ndef show():\n    s = SeqFormula(1)\n    t = SeqFormula(2)\n    return SeqFormula(s, t), SeqFormula\n";
    let (_t, _i, index) = index_of(&[
        (
            "sympy/series/sequences.py",
            "class SeqBase:\n    pass\n\nclass SeqFormula(SeqBase):\n    \"\"\"A sequence from a formula.\"\"\"\n    def _print(self):\n        return 'formula'\n",
        ),
        ("sympy/printing/latex.py", user),
        ("sympy/printing/pretty.py", user),
        (
            "sympy/core/basic.py",
            "class Basic:\n    def atoms(self):\n        return 1\n",
        ),
    ]);
    let ids = ranked_ids(&index, "SeqFormula display is wrong");
    assert_eq!(ids[0], "sympy/series/sequences.py", "{ids:?}");
}

#[test]
fn tests_and_vendored_code_rank_as_context_unless_the_query_is_about_them() {
    let (_t, _i, index) = index_of(&[
        (
            "src/flask/json/__init__.py",
            "def dumps(obj, sort_keys=True):\n    \"\"\"Serialize to JSON, sorting keys.\"\"\"\n    return _json.dumps(obj, sort_keys=sort_keys)\n",
        ),
        (
            "tests/test_json.py",
            "def test_json_key_sorting():\n    assert dumps({'b': 1, 'a': 2}, sort_keys=True) == 'sorted json keys'\n\ndef test_json_key_sorting_disabled():\n    assert dumps({}, sort_keys=False)\n",
        ),
        (
            "tests/static/config.json",
            "{\"json\": \"key sorting\", \"sort_keys\": true}\n",
        ),
        (
            "src/flask/packages/six.py",
            "def json_key_sorting(sort_keys):\n    return sort_keys  # json sorting keys\n",
        ),
    ]);
    let ids = ranked_ids(&index, "disable JSON key sorting");
    assert_eq!(ids[0], "src/flask/json/__init__.py", "{ids:?}");
    let ranked = index
        .rank(
            &Query::parse("disable JSON key sorting").expect("q"),
            ScorerKind::Default,
            &ctx_select::Weights::default(),
        )
        .expect("rank");
    let test = ranked.iter().find(|r| r.id == "tests/test_json.py");
    if let Some(test) = test {
        let why = test
            .why
            .signals
            .iter()
            .find(|s| s.name == "context_file")
            .expect("demotion explained");
        assert!(why.detail.contains("test file"), "{why:?}");
    }
    // A query about the tests ranks the test first.
    let ids = ranked_ids(&index, "fix the flaky test for JSON key sorting");
    assert_eq!(ids[0], "tests/test_json.py", "{ids:?}");
}

#[test]
fn an_unrelated_prompt_selects_nothing() {
    let tree = project();
    let idx = tempfile::tempdir().expect("tmp");
    build_fs(tree.path(), idx.path(), "default");
    let index = OpenIndex::open(idx.path(), "default").expect("open");
    for prompt in [
        "bake a chocolate cake",
        "fix the bug please",
        "add a new feature",
    ] {
        let result = index
            .select(
                &Query::parse(prompt).expect("q"),
                &SelectOptions::default(),
                &ApproxTokenCounter,
            )
            .expect("select");
        assert!(result.documents.is_empty(), "{prompt}: {result:?}");
    }
    // A relevant one still selects.
    let result = index
        .select(
            &Query::parse("fix the parser").expect("q"),
            &SelectOptions::default(),
            &ApproxTokenCounter,
        )
        .expect("select");
    assert_eq!(result.documents[0].id.as_str(), "src/parser.rs");
    // A word found only in context files (docs, tests) is not relevance either.
    let (_t, _i, other) = index_of(&[
        (
            "src/app.py",
            "def run(config):\n    return config.get('debug')\n",
        ),
        ("src/views.py", "def index(request):\n    return 'hello'\n"),
        (
            "docs/conf.py",
            "# a parser for the docs theme\nextensions = ['sphinx']\n",
        ),
    ]);
    assert!(ranked_ids(&other, "fix the parser").is_empty());
    assert_eq!(ranked_ids(&other, "the debug config")[0], "src/app.py");
}

#[test]
fn a_traceback_and_a_dotted_module_path_point_at_their_files() {
    let (_t, _i, index) = index_of(&[
        (
            "pkg/db/models/query.py",
            "class QuerySet:\n    def get(self):\n        raise ValueError('no rows')\n",
        ),
        (
            "pkg/db/models/base.py",
            "class Model:\n    def save(self):\n        pass\n",
        ),
        (
            "pkg/contrib/admin/utils.py",
            "def display_for_field(value):\n    return str(value)\n",
        ),
        (
            "pkg/forms/fields.py",
            "class Field:\n    def display(self, value):\n        return value\n",
        ),
    ]);
    let q = "Crash on get\nTraceback (most recent call last):\n  File \"/venv/lib/site-packages/pkg/db/models/query.py\", line 3, in get\nValueError: no rows";
    assert_eq!(ranked_ids(&index, q)[0], "pkg/db/models/query.py");
    let q = "Readonly values should go through pkg.contrib.admin.utils when shown";
    assert_eq!(ranked_ids(&index, q)[0], "pkg/contrib/admin/utils.py");
}

#[test]
fn a_project_of_prose_is_not_all_context() {
    let (_t, _i, index) = index_of(&[
        (
            "docs/install.md",
            "# Install\n\nRun the installer, then sign in.\n",
        ),
        (
            "docs/billing.md",
            "# Billing\n\nInvoices are sent monthly.\n",
        ),
        ("docs/faq.md", "# FAQ\n\nAsk us anything.\n"),
        ("conf.py", "project = 'handbook'\n"),
    ]);
    assert_eq!(
        ranked_ids(&index, "how are invoices sent")[0],
        "docs/billing.md"
    );
}

/// The index over real code (this crate's own sources, tests and benches), built once.
fn real_code_index() -> &'static (tempfile::TempDir, Vec<String>) {
    static INDEX: std::sync::OnceLock<(tempfile::TempDir, Vec<String>)> =
        std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let indexes = tempfile::tempdir().expect("tmp");
        build_fs(root, indexes.path(), "real");
        // Identifiers the code defines, as query words.
        let mut words: Vec<String> = Vec::new();
        for dir in ["src", "src/index", "tests"] {
            for entry in fs::read_dir(root.join(dir)).expect("readdir").flatten() {
                let Ok(text) = fs::read_to_string(entry.path()) else {
                    continue;
                };
                for line in text.lines() {
                    let t = line.trim_start();
                    for kw in ["fn ", "struct ", "enum ", "const "] {
                        if let Some(rest) = t.strip_prefix("pub ").unwrap_or(t).strip_prefix(kw) {
                            let name: String = rest
                                .chars()
                                .take_while(|c| c.is_alphanumeric() || *c == '_')
                                .collect();
                            if name.len() > 3 {
                                words.push(name);
                            }
                        }
                    }
                }
            }
        }
        words.sort();
        words.dedup();
        (indexes, words)
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// At any budget of 500 tokens or more, the top-ranked file is shown (first), what is
    /// shown of a file is its own lines verbatim with `… lines A-B not shown` between them,
    /// the budget holds, and whatever was left out is counted and listed.
    #[test]
    fn the_top_ranked_file_is_always_shown_and_nothing_is_lost_silently(
        picks in proptest::collection::vec(0usize..10_000, 1..4),
        budget in 500u64..40_000,
    ) {
        let (indexes, words) = real_code_index();
        let query_text: Vec<&str> = picks.iter().map(|i| words[i % words.len()].as_str()).collect();
        let query = Query::new(&query_text.join(" "));
        let index = OpenIndex::open(indexes.path(), "real").expect("open");
        let select_opts = SelectOptions { budget, ..SelectOptions::default() };
        let ranked = index.rank(&query, select_opts.scorer, &select_opts.weights).expect("rank");
        let result = index.select(&query, &select_opts, &ApproxTokenCounter).expect("select");
        let meta = &result.selection;
        if let Some(top) = ranked.first() {
            proptest::prop_assert_eq!(
                result.documents.first().map(|d| d.id.as_str()),
                Some(top.id.as_str()),
                "budget {}", budget
            );
        }
        let used: u64 = result.documents.iter().map(|d| d.tokens).sum();
        proptest::prop_assert_eq!(used, meta.tokens_used);
        proptest::prop_assert!(used <= budget);
        proptest::prop_assert_eq!(meta.documents_selected, result.documents.len());
        proptest::prop_assert!(meta.documents_selected + meta.over_budget <= meta.documents_considered);
        proptest::prop_assert!(meta.left_out.len() <= meta.over_budget.min(ctx_select::MAX_LEFT_OUT));
        if meta.over_budget > 0 {
            proptest::prop_assert!(!meta.left_out.is_empty());
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for doc in &result.documents {
            proptest::prop_assert!(meta.left_out.iter().all(|l| l.id != doc.id));
            let file = fs::read_to_string(root.join(doc.id.as_str())).expect("read");
            if doc.lines.is_empty() {
                proptest::prop_assert!(!doc.degraded);
                proptest::prop_assert_eq!(&doc.content, &file);
                continue;
            }
            proptest::prop_assert!(doc.degraded);
            proptest::prop_assert!(doc.tokens < doc.file_tokens);
            // Rebuild the view from the file and the shown ranges.
            let lines: Vec<&str> = file.lines().collect();
            let mut expected = String::new();
            let mut next = 1u32;
            for [a, b] in &doc.lines {
                proptest::prop_assert!(*a >= next && a <= b);
                if *a > next {
                    let indent = (next..*a)
                        .map(|l| lines[l as usize - 1])
                        .find(|l| !l.trim().is_empty())
                        .map_or("", |l| &l[..l.len() - l.trim_start().len()]);
                    if *a - 1 == next {
                        let _ = writeln!(expected, "{indent}… line {next} not shown");
                    } else {
                        let _ = writeln!(expected, "{indent}… lines {next}-{} not shown", a - 1);
                    }
                }
                for l in *a..=*b {
                    expected.push_str(lines[l as usize - 1]);
                    expected.push('\n');
                }
                next = b + 1;
            }
            let total = u32::try_from(lines.len()).expect("lines");
            if next <= total {
                let indent = (next..=total)
                    .map(|l| lines[l as usize - 1])
                    .find(|l| !l.trim().is_empty())
                    .map_or("", |l| &l[..l.len() - l.trim_start().len()]);
                if next == total {
                    let _ = writeln!(expected, "{indent}… line {next} not shown");
                } else {
                    let _ = writeln!(expected, "{indent}… lines {next}-{total} not shown");
                }
            }
            proptest::prop_assert_eq!(&doc.content, &expected, "{}", doc.id);
        }
    }
}

#[test]
fn git_activity_counts_for_code_not_for_manifests_and_lockfiles() {
    let source = mem(&[
        (
            "package.json",
            "{\"name\": \"client\", \"dependencies\": {\"redirect\": \"1\"}}\n",
        ),
        ("requirements.txt", "redirect-client==1.0\n"),
        (
            "src/client.js",
            "export function followRedirect(url) { return url; }\n",
        ),
    ]);
    let dir = tempfile::tempdir().expect("tmp");
    let git = || {
        BTreeMap::from([
            ("package.json".to_owned(), 9),
            ("requirements.txt".to_owned(), 9),
            ("src/client.js".to_owned(), 2),
        ])
    };
    build_index(dir.path(), &source, &opts("g", "t"), &git).expect("build");
    let index = OpenIndex::open(dir.path(), "g").expect("open");
    let ranked = index
        .rank(
            &Query::new("client redirect"),
            ScorerKind::Default,
            &ctx_select::Weights::default(),
        )
        .expect("rank");
    let git_points = |id: &str| {
        let found = ranked
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("{id} not ranked: {ranked:?}"));
        found
            .why
            .signals
            .iter()
            .filter(|s| s.name == "git_activity")
            .map(|s| s.contribution)
            .sum::<f64>()
    };
    assert!(git_points("src/client.js") > 0.0);
    assert!(git_points("package.json").abs() < f64::EPSILON);
    assert!(git_points("requirements.txt").abs() < f64::EPSILON);
}

#[test]
fn a_live_index_takes_a_new_file_from_its_directory_alone() {
    let tree = project();
    let root = tree.path();
    write_tree(root, &[(".gitignore", "*.log\n")]);
    let idx = tempfile::tempdir().expect("tmp");
    let source = FilesystemSource::new(root, Vec::new(), 1 << 20);
    let opts = opts("default", "2026-01-01T00:00:00Z");
    let mut live = ctx_select::LiveIndex::new(idx.path(), "default");
    let first = live
        .update(&source, &opts, &no_git, &ctx_core::NoProgress)
        .expect("build");
    // The update the watcher's report of `path` makes.
    let update = |live: &mut ctx_select::LiveIndex, path: &str| {
        let id = ctx_core::DocumentId::new(path).expect("id");
        live.update_ids(&source, &[id], &opts, &no_git, &ctx_core::NoProgress)
            .expect("update")
    };
    // Two new files; the watcher reports one. Only its directory is walked, so the other
    // waits for a listing.
    write_tree(
        root,
        &[
            ("src/lexer.rs", "pub fn lex_tokens() {}\n"),
            ("docs/unreported.md", "# Not reported\n"),
        ],
    );
    let report = update(&mut live, "src/lexer.rs");
    assert_eq!(
        (report.read, report.documents),
        (1, first.documents + 1),
        "{report:?}"
    );
    // Ignored by the project's rules: not indexed, and still no listing.
    write_tree(root, &[("src/debug.log", "lex_tokens called\n")]);
    let report = update(&mut live, "src/debug.log");
    assert!(report.up_to_date, "{report:?}");
    // A new file in a directory the index holds nothing of takes a listing, which finds the
    // unreported file too.
    write_tree(root, &[("tools/gen.py", "def generate():\n    pass\n")]);
    let report = update(&mut live, "tools/gen.py");
    assert_eq!(report.read, 2, "{report:?}");
    // What it holds is what a fresh build holds.
    let fresh = tempfile::tempdir().expect("tmp");
    let built = build_index(fresh.path(), &source, &opts, &no_git).expect("fresh");
    assert_eq!(report.cache_version, built.cache_version);
    assert!(
        verify_index(&idx.path().join("default"), "default")
            .expect("verify")
            .valid
    );
}

#[test]
fn reasons_are_kept_for_the_candidates_a_selection_may_show_not_for_every_candidate() {
    let n = ctx_select::selection::DETAILED_CANDIDATES + 100;
    let texts: Vec<(String, String)> = (0..n)
        .map(|i| {
            (
                format!("pkg/mod_{i:05}.py"),
                format!(
                    "def render_cache_{i}(x):\n    return x + {}\n",
                    "1 + ".repeat(i % 7)
                ),
            )
        })
        .collect();
    let docs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let idx = tempfile::tempdir().expect("tmp");
    build_index(idx.path(), &mem(&docs), &opts("many", "t"), &no_git).expect("build");
    let index = OpenIndex::open(idx.path(), "many").expect("open");
    let query = Query::parse("render cache").expect("q");
    let ranked = index
        .rank(&query, ScorerKind::Default, &ctx_select::Weights::default())
        .expect("rank");
    assert_eq!(ranked.len(), n, "every document is a candidate");
    let (best, rest) = ranked.split_at(ctx_select::selection::DETAILED_CANDIDATES);
    assert!(
        best.iter()
            .all(|r| !r.why.query_terms.is_empty() && !r.why.signals.is_empty())
    );
    assert!(
        rest.iter()
            .all(|r| r.why.signals.is_empty() && r.score > 0.0)
    );
    // Scores and order are what they would be with every reason written: non-increasing,
    // ties in id order.
    assert!(ranked.windows(2).all(|w| {
        w[0].score
            .total_cmp(&w[1].score)
            .then_with(|| w[1].id.cmp(&w[0].id))
            == std::cmp::Ordering::Greater
    }));
    // A selection that may show more candidates than that gives each its reasons.
    let many = SelectOptions {
        budget: 10_000_000,
        max_candidates: n,
        max_documents: n,
        ..SelectOptions::default()
    };
    let r = index
        .select(&query, &many, &ApproxTokenCounter)
        .expect("select");
    assert_eq!(r.documents.len(), n);
    assert!(r.documents.iter().all(|d| !d.why.query_terms.is_empty()));
}
