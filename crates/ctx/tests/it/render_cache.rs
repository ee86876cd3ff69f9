//! The render cache: a warm render plans unchanged files from what the last render learned
//! (no read, no redaction, no count) and writes the same bytes; every file it writes is read
//! once and checked against the hash it remembered, so a file changed without its stamp
//! moving fails the render (and is forgotten, so the next render reads it) instead of
//! slipping a wrong hash into the report.

use std::path::Path;
use std::time::{Duration, SystemTime};

use ctx::CtxError;
use ctx::core::redact::Redactor;
use ctx::core::{ContentHash, TokenizerKind};
use ctx::packs::{self, PackContext, PackSettings, Render, RenderRequest};
use ctx::sources::AddOptions;
use ctx::sources::sensitive::SensitivePaths;
use ctx::store::{RENDER_PAYLOADS_KEPT, RenderPayloadRow, Store};

/// Unix seconds far past any file written by a test: every stamp is old enough to trust.
fn settled() -> i64 {
    4_000_000_000
}

/// Unix seconds before any file was written: no stamp is trusted.
fn unsettled() -> i64 {
    0
}

const TOKEN: &str = "ghp_SByUTmH25TAL9rifUbgIJArNDu2NlqNE5zzK";

fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/a.py"), "def a():\n    return 1\n").expect("write");
    std::fs::write(root.join("src/b.rs"), "fn b() -> u32 {\n    2\n}\n").expect("write");
    std::fs::write(
        root.join("src/deploy.sh"),
        format!("#!/bin/sh\ngit clone https://{TOKEN}@github.com/acme/app\n"),
    )
    .expect("write");
    (dir, root)
}

fn context<'a>(
    store: &'a Store,
    root: &Path,
    clock: &'a (dyn Fn() -> i64 + Sync),
) -> PackContext<'a> {
    PackContext {
        store,
        root: root.to_owned(),
        // Leaked: the context borrows its settings, and each test makes a few.
        settings: Box::leak(Box::new(settings())),
        clock,
    }
}

fn settings() -> PackSettings {
    PackSettings {
        default_budget: 100_000,
        default_tokenizer: TokenizerKind::Cl100kBase,
        max_file_bytes: 1 << 20,
        command_timeout: Duration::from_secs(5),
        redactor: Redactor::with_custom(&[]).expect("rules"),
        sensitive: SensitivePaths::with_extra(&[]).expect("patterns"),
    }
}

fn setup(root: &Path) -> Store {
    let (store, _) = Store::init(&root.join(".ctx")).expect("init");
    let ctx = context(&store, root, &settled);
    packs::create_pack(&ctx, "p", None, None, 0).expect("create");
    packs::add_source(&ctx, "p", "glob:src/**", root, &AddOptions::default(), 0, 0).expect("add");
    store
}

fn render(ctx: &PackContext<'_>) -> Result<Render, CtxError> {
    let request = RenderRequest {
        packs: vec!["p".into()],
        ..RenderRequest::default()
    };
    packs::render(ctx, &request)
}

fn remembered(store: &Store, root: &Path, rel: &str) -> bool {
    let path = root.join(rel);
    store
        .db()
        .render_files(&[path.to_str().expect("utf-8")])
        .expect("lookup")[0]
        .is_some()
}

/// Rewrites `rel` in place with `text` (same length) and puts its modification time back:
/// size, modification time and inode, the whole stamp, stay the same.
fn rewrite_keeping_stamp(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
    let (path, text) = (root.join(rel), text.as_ref());
    let before = std::fs::metadata(&path).expect("stat");
    assert_eq!(before.len(), text.len() as u64, "same length");
    std::fs::write(&path, text).expect("rewrite");
    let file = std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_modified(before.modified().expect("mtime"))
        .expect("set mtime");
    let after = std::fs::metadata(&path).expect("stat");
    assert_eq!(
        (after.len(), after.modified().ok()),
        (before.len(), before.modified().ok())
    );
}

#[test]
fn a_warm_render_writes_the_same_bytes_from_the_cache() {
    let (_dir, root) = tree();
    let store = setup(&root);
    let ctx = context(&store, &root, &settled);
    let cold = render(&ctx).expect("cold render");
    assert!(cold.report.tokens_counted > 0);
    assert!(
        cold.report
            .redactions
            .iter()
            .any(|r| r.rule == "GITHUB_PAT"),
        "the token is redacted: {:?}",
        cold.report.redactions
    );
    assert!(!cold.payload.contains(TOKEN));
    for rel in ["src/a.py", "src/b.rs", "src/deploy.sh"] {
        assert!(remembered(&store, &root, rel), "{rel} remembered");
    }

    let warm = render(&ctx).expect("warm render");
    assert_eq!(warm.payload, cold.payload, "same bytes");
    assert_eq!(warm.report.payload_hash, cold.report.payload_hash);
    assert_eq!(warm.report.render_hash, cold.report.render_hash);
    assert_eq!(warm.report.redactions, cold.report.redactions);
    let hashes = |r: &Render| {
        r.report
            .included
            .iter()
            .map(|i| (i.path.clone(), i.content_hash, i.tokens))
            .collect::<Vec<_>>()
    };
    assert_eq!(hashes(&warm), hashes(&cold));
    assert_eq!(warm.report.tokens_counted, 0, "nothing counted again");
    assert!(!warm.payload.contains(TOKEN));

    // Streamed to a writer, as `pack render -o` does: the same bytes again.
    let mut streamed = Vec::new();
    let request = RenderRequest {
        packs: vec!["p".into()],
        ..RenderRequest::default()
    };
    let report = packs::render_to(
        &ctx,
        &request,
        packs::PayloadOptions::default(),
        &ctx::core::NoProgress,
        &mut streamed,
    )
    .expect("streamed render");
    assert_eq!(streamed, cold.payload.as_bytes());
    assert_eq!(report.payload_hash, cold.report.payload_hash);
}

/// More files than several chunks of a render hold (its cache rows are read a chunk ahead
/// and stored a chunk behind): every file is remembered, and the warm render reads the same
/// bytes from the cache, counting nothing.
#[test]
fn a_warm_render_of_many_chunks_writes_the_same_bytes_from_the_cache() {
    let (_dir, root) = tree();
    for i in 0..700 {
        let text = if i % 100 == 7 {
            format!("# {i}\ntoken = \"{TOKEN}\"\n")
        } else {
            format!("def f{i}():\n    return {}\n", "x + ".repeat(i % 40))
        };
        std::fs::write(root.join(format!("src/m{i:03}.py")), text).expect("write");
    }
    std::fs::write(root.join("src/blob.bin"), b"\0\x01binary").expect("write");
    let store = setup(&root);
    let ctx = context(&store, &root, &settled);
    let cold = render(&ctx).expect("cold render");
    assert_eq!(cold.report.included.len(), 703);
    assert!(cold.report.tokens_counted >= 703, "every block is counted");
    assert!(
        cold.report
            .excluded
            .iter()
            .any(|e| e.path == "src/blob.bin" && e.reason == "binary"),
        "{:?}",
        cold.report.excluded
    );
    for i in [0, 255, 256, 511, 699] {
        assert!(
            remembered(&store, &root, &format!("src/m{i:03}.py")),
            "m{i:03}"
        );
    }
    let warm = render(&ctx).expect("warm render");
    assert_eq!(warm.payload, cold.payload, "same bytes");
    assert_eq!(warm.report.tokens_counted, 0, "nothing counted again");
    let report = |r: &Render| {
        let mut report = serde_json::to_value(&r.report).expect("json");
        let fields = report.as_object_mut().expect("an object");
        fields.remove("tokens_cached");
        fields.remove("tokens_counted");
        report
    };
    assert_eq!(report(&warm), report(&cold));
}

/// The payload rows the store remembers, as (layout, hash, bytes).
fn payload_rows(root: &Path) -> Vec<(String, String, u64)> {
    let db = rusqlite::Connection::open(root.join(".ctx").join(ctx::store::DATABASE_FILE))
        .expect("open state.db");
    let mut stmt = db
        .prepare("SELECT layout, payload_hash, bytes FROM render_payloads ORDER BY layout")
        .expect("select");
    stmt.query_map([], |row| {
        let bytes: i64 = row.get(2)?;
        Ok((row.get(0)?, row.get(1)?, bytes.cast_unsigned()))
    })
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// A render remembers its payload's hash by its layout (head, block keys, tail); a render of
/// the same layout takes the hash from there instead of hashing the bytes again, and any
/// change to a file is a new layout, hashed afresh.
#[test]
fn a_layout_written_before_gives_the_payload_hash_without_hashing_again() {
    let (_dir, root) = tree();
    let store = setup(&root);
    let ctx = context(&store, &root, &settled);
    let cold = render(&ctx).expect("cold render");
    let hash = ContentHash::of(cold.payload.as_bytes());
    assert_eq!(cold.report.payload_hash, hash);
    let rows = payload_rows(&root);
    let [(layout, remembered_hash, bytes)] = &rows[..] else {
        panic!("one layout remembered: {rows:?}");
    };
    assert_eq!(
        (remembered_hash.as_str(), *bytes),
        (hash.to_string().as_str(), cold.payload.len() as u64)
    );

    // The same layout again: the hash comes from the row (a forged one shows it does).
    let forged = ContentHash::of(b"forged");
    store
        .db()
        .remember_render_payload(&RenderPayloadRow {
            layout: layout.clone(),
            payload_hash: forged.to_string(),
            bytes: *bytes,
        })
        .expect("forge");
    let warm = render(&ctx).expect("warm render");
    assert_eq!(warm.payload, cold.payload);
    assert_eq!(warm.report.payload_hash, forged, "taken from the row");

    // A changed file is a new layout: hashed, and remembered beside the old one.
    std::fs::write(
        root.join("src/a.py"),
        "def a():
    return 2
",
    )
    .expect("edit");
    let edited = render(&ctx).expect("edited render");
    assert_ne!(edited.payload, cold.payload);
    assert_eq!(
        edited.report.payload_hash,
        ContentHash::of(edited.payload.as_bytes())
    );
    assert_eq!(payload_rows(&root).len(), 2);

    // A row whose length disagrees with the bytes written is damage: the render fails, the
    // row is forgotten, and the next render hashes again.
    let rows = payload_rows(&root);
    let current = rows
        .iter()
        .find(|(_, hash, _)| *hash == edited.report.payload_hash.to_string())
        .expect("the edited layout's row");
    store
        .db()
        .remember_render_payload(&RenderPayloadRow {
            layout: current.0.clone(),
            payload_hash: current.1.clone(),
            bytes: current.2 + 1,
        })
        .expect("forge");
    let err = render(&ctx).expect_err("a damaged row");
    assert_eq!(ctx::kind_of(&err), Some(ctx::ErrorKind::Damaged), "{err}");
    let again = render(&ctx).expect("hashed again");
    assert_eq!(
        again.report.payload_hash,
        ContentHash::of(again.payload.as_bytes())
    );
}

/// Only the newest rows are kept.
#[test]
fn the_store_keeps_the_newest_payload_rows() {
    let (_dir, root) = tree();
    let store = setup(&root);
    let row = |i: usize| RenderPayloadRow {
        layout: format!("layout {i}"),
        payload_hash: ContentHash::of(i.to_string().as_bytes()).to_string(),
        bytes: i as u64,
    };
    for i in 0..RENDER_PAYLOADS_KEPT + 5 {
        store
            .db()
            .remember_render_payload(&row(i))
            .expect("remember");
    }
    let rows = payload_rows(&root);
    assert_eq!(rows.len(), RENDER_PAYLOADS_KEPT);
    for i in 0..5 {
        assert_eq!(
            store.db().render_payload(&row(i).layout).expect("lookup"),
            None
        );
    }
    let newest = row(RENDER_PAYLOADS_KEPT + 4);
    assert_eq!(
        store.db().render_payload(&newest.layout).expect("lookup"),
        Some(newest.clone())
    );
    store
        .db()
        .forget_render_payload(&newest.layout)
        .expect("forget");
    assert_eq!(
        store.db().render_payload(&newest.layout).expect("lookup"),
        None
    );
}

#[test]
fn a_file_changed_without_its_stamp_moving_fails_the_render_once() {
    let (_dir, root) = tree();
    let store = setup(&root);
    let ctx = context(&store, &root, &settled);
    render(&ctx).expect("cold render");
    rewrite_keeping_stamp(&root, "src/a.py", "def z():\n    return 9\n");
    let err = render(&ctx).expect_err("the cache vouched for old bytes");
    assert!(
        matches!(err, CtxError::ChangedDuringRender { ref path } if path == "src/a.py"),
        "{err}"
    );
    assert!(!remembered(&store, &root, "src/a.py"), "forgotten");
    let again = render(&ctx).expect("read afresh");
    assert!(again.payload.contains("def z():"));
    assert!(!again.payload.contains("def a():"));
}

/// A file its bytes left out (binary, not UTF-8) is left out again by its stamp, unopened:
/// rewritten as text keeping its stamp, it stays out (with the same reason and detail) until
/// its stamp moves. A smaller size limit still reports it as too large.
#[test]
fn files_their_bytes_left_out_stay_out_by_their_stamps() {
    let (_dir, root) = tree();
    std::fs::write(root.join("src/blob.bin"), b"\0\x01binary\n").expect("write");
    std::fs::write(root.join("src/latin1.txt"), b"caf\xe9 au lait\n").expect("write");
    let store = setup(&root);
    let ctx = context(&store, &root, &settled);
    let out = |r: &Render| {
        r.report
            .excluded
            .iter()
            .map(|e| (e.path.clone(), e.reason.clone(), e.detail.clone()))
            .collect::<Vec<_>>()
    };
    let cold = render(&ctx).expect("cold render");
    let expected = vec![
        (
            "src/blob.bin".to_owned(),
            "binary".to_owned(),
            "binary file".to_owned(),
        ),
        (
            "src/latin1.txt".to_owned(),
            "not_utf8".to_owned(),
            "not valid UTF-8 (byte 3)".to_owned(),
        ),
    ];
    assert_eq!(out(&cold), expected);
    assert!(remembered(&store, &root, "src/blob.bin"));
    assert!(remembered(&store, &root, "src/latin1.txt"));

    // Text now, under the same stamps: the verdicts stand, so the files were not read.
    rewrite_keeping_stamp(&root, "src/blob.bin", "binary!!\n");
    rewrite_keeping_stamp(&root, "src/latin1.txt", "cafe au lait\n");
    let warm = render(&ctx).expect("warm render");
    assert_eq!(out(&warm), expected);
    assert_eq!(warm.payload, cold.payload);

    // Under a limit the files pass, they are too large, as their sizes say: those the cache
    // left out and those it vouched for alike (once a render failed on the latter).
    let mut small = context(&store, &root, &settled);
    small.settings = Box::leak(Box::new(PackSettings {
        max_file_bytes: 8,
        ..settings()
    }));
    let limited = render(&small).expect("render under a small limit");
    let too_large: Vec<&str> = limited
        .report
        .excluded
        .iter()
        .filter(|e| e.reason == "too_large")
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(
        too_large,
        [
            "src/a.py",
            "src/b.rs",
            "src/blob.bin",
            "src/deploy.sh",
            "src/latin1.txt"
        ]
    );

    // A moved stamp: read again, and now included.
    std::fs::write(root.join("src/blob.bin"), "plain text!\n").expect("edit");
    let moved = render(&ctx).expect("render after the edit");
    assert!(
        moved
            .report
            .included
            .iter()
            .any(|i| i.path == "src/blob.bin")
    );
    assert!(moved.payload.contains("plain text!"));
    assert!(!remembered_skip(&store, &root, "src/blob.bin"));
    assert!(remembered_skip(&store, &root, "src/latin1.txt"));
}

fn remembered_skip(store: &Store, root: &Path, rel: &str) -> bool {
    let path = root.join(rel);
    store
        .db()
        .render_files(&[path.to_str().expect("utf-8")])
        .expect("lookup")[0]
        .as_ref()
        .is_some_and(|row| !row.skip.is_empty())
}

#[test]
fn a_file_changed_with_its_stamp_is_read_again() {
    let (_dir, root) = tree();
    let store = setup(&root);
    let ctx = context(&store, &root, &settled);
    let cold = render(&ctx).expect("cold render");
    // Another size: the stamp moves whatever the clock's resolution.
    std::fs::write(root.join("src/b.rs"), "fn b() -> u64 {\n    20\n}\n").expect("edit");
    let warm = render(&ctx).expect("warm render");
    assert!(warm.payload.contains("    20\n"));
    assert_ne!(warm.report.payload_hash, cold.report.payload_hash);
    assert_eq!(
        warm.report.tokens_counted, 1,
        "only the edited block is counted"
    );
}

#[test]
fn stamps_too_recent_to_trust_are_not_remembered() {
    let (_dir, root) = tree();
    let store = setup(&root);
    let ctx = context(&store, &root, &unsettled);
    render(&ctx).expect("render");
    assert!(!remembered(&store, &root, "src/a.py"));
    // The files were written just now: a clock reading now does not trust them either.
    let now = || {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    };
    let ctx = context(&store, &root, &now);
    render(&ctx).expect("render");
    assert!(!remembered(&store, &root, "src/a.py"));
}

/// A store whose token cache is empty counts every block as it reads it; once the cache holds
/// counts, a render that may not trust its files' stamps (so remembers none) still takes every
/// block's count from it, and counts the same.
#[test]
fn counts_come_from_the_token_cache_when_no_file_is_remembered() {
    let (_dir, root) = tree();
    let store = setup(&root);
    assert!(!store.db().remembers_token_counts().expect("any"));
    let ctx = context(&store, &root, &unsettled);
    let first = render(&ctx).expect("first render");
    assert!(first.report.tokens_counted >= 3, "every block counted");
    assert!(store.db().remembers_token_counts().expect("any"));
    assert!(!remembered(&store, &root, "src/a.py"));
    let second = render(&ctx).expect("second render");
    assert_eq!(
        second.report.tokens_counted, 0,
        "every count from the cache"
    );
    assert!(
        second.report.tokens_cached >= 3,
        "every block from the cache"
    );
    assert_eq!(second.payload, first.payload);
    assert_eq!(second.report.tokens_used, first.report.tokens_used);
}

/// A forged (or damaged) cache row that vouches for bytes that are not text: the render
/// fails as damaged, it does not panic, and no such bytes reach a payload.
#[test]
fn a_row_vouching_for_bytes_that_are_not_text_is_an_error_not_a_panic() {
    let (_dir, root) = tree();
    let store = setup(&root);
    let ctx = context(&store, &root, &settled);
    render(&ctx).expect("cold render");
    // `src/a.py` becomes bytes that are not UTF-8 (same length, stamp kept), and its row is
    // forged to vouch for them.
    let path = root.join("src/a.py");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[0] = 0xff;
    rewrite_keeping_stamp(&root, "src/a.py", &bytes);
    let key = path.to_str().expect("utf-8");
    let mut row = store.db().render_files(&[key]).expect("lookup")[0]
        .clone()
        .expect("remembered");
    row.raw_hash = format!("blake3:{}", blake3::hash(&bytes).to_hex());
    store.db().remember_render_files(&[row]).expect("forge");
    let err = render(&ctx).expect_err("not text");
    assert_eq!(ctx::kind_of(&err), Some(ctx::ErrorKind::Damaged), "{err}");
}
