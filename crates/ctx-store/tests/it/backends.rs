//! The store's contract, run against every backend configuration: SQLite + local objects,
//! PostgreSQL + local objects, PostgreSQL + S3. Each test is written once (`fn name(cx)`) and
//! instantiated per configuration by `contract!`.
//!
//! PostgreSQL and S3 come from the environment: `CTX_TEST_POSTGRES_URL`
//! (`postgres://user@127.0.0.1:PORT/db`) and `CTX_TEST_S3_URL`
//! (`s3://bucket?endpoint=http://127.0.0.1:PORT`, with `AWS_*` credentials if the server
//! wants them). `scripts/test` starts both servers on loopback and sets them. Without them
//! those configurations are skipped with a note on stderr, never passed silently. Every test
//! gets its own PostgreSQL schema and S3 prefix, so tests run in parallel and leave no state
//! behind for another.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use ctx_core::{ContentHash, TokenizerKind};
use ctx_store::{
    Backends, FileStampRow, GcOptions, NewArtifact, NewPack, Problem, RENDER_PAYLOADS_KEPT,
    RenderFileRow, RenderPayloadRow, RunRow, S3Settings, SnapshotItemRecord, SnapshotRecord, Store,
    StoreError, SummaryKey,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Config {
    SqliteLocal,
    PostgresLocal,
    PostgresS3,
}

/// One test's store configuration: a scratch directory and the backends every "host" of the
/// test opens.
struct Cx {
    config: Config,
    tmp: tempfile::TempDir,
    backends: Backends,
    hosts: AtomicU64,
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn unique_name(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "t{}_{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000,
        UNIQUE.fetch_add(1, Ordering::Relaxed),
        test.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(20)
            .collect::<String>()
    )
    .to_ascii_lowercase()
}

fn s3_settings() -> S3Settings {
    let mut settings = S3Settings::from_lookup(|name| std::env::var(name).ok());
    // Local test servers accept any credentials, but the client needs some to sign with.
    settings.access_key_id.get_or_insert_with(|| "test".into());
    settings
        .secret_access_key
        .get_or_insert_with(|| "test".into());
    settings
}

/// Says on the terminal (past the test harness's capture) why a configuration did not run.
fn skip(config: Config, test: &str, missing: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test} [{config:?}]: needs {missing} (scripts/test provides it)"
    );
}

impl Cx {
    fn new(config: Config, test: &str) -> Option<Self> {
        let tmp = tempfile::tempdir().expect("tempdir");
        let name = unique_name(test);
        let mut backends = Backends {
            s3: s3_settings(),
            ..Backends::default()
        };
        if config != Config::SqliteLocal && cfg!(not(feature = "shared")) {
            skip(
                config,
                test,
                "the `shared` feature (cargo test --features shared)",
            );
            return None;
        }
        if config != Config::SqliteLocal {
            let Ok(url) = std::env::var("CTX_TEST_POSTGRES_URL") else {
                skip(config, test, "CTX_TEST_POSTGRES_URL, a PostgreSQL server");
                return None;
            };
            let sep = if url.contains('?') { '&' } else { '?' };
            backends.metadata = Some(format!("{url}{sep}schema={name}"));
        }
        match config {
            Config::SqliteLocal => {}
            Config::PostgresLocal => {
                backends.objects = Some(tmp.path().join("shared-objects").display().to_string());
            }
            Config::PostgresS3 => {
                let Ok(url) = std::env::var("CTX_TEST_S3_URL") else {
                    skip(config, test, "CTX_TEST_S3_URL, an S3-compatible server");
                    return None;
                };
                let (base, query) = url.split_once('?').unwrap_or((&url, ""));
                let base = base.trim_end_matches('/');
                let query = if query.is_empty() {
                    String::new()
                } else {
                    format!("?{query}")
                };
                backends.objects = Some(format!("{base}/{name}{query}"));
            }
        }
        Some(Self {
            config,
            tmp,
            backends,
            hosts: AtomicU64::new(0),
        })
    }

    /// The first host's store directory (for the embedded store: the store itself).
    fn dir(&self) -> PathBuf {
        self.tmp.path().join("host0/.ctx")
    }

    /// A store as one host sees it: the embedded store is one directory every host opens;
    /// shared backends give each host its own local `.ctx` (cache, tmp) over the same data.
    fn host(&self) -> Store {
        let n = self.hosts.fetch_add(1, Ordering::Relaxed);
        let dir = if self.config == Config::SqliteLocal {
            self.dir()
        } else {
            self.tmp.path().join(format!("host{n}/.ctx"))
        };
        Store::open_with(&dir, &self.backends, true).expect("open the store")
    }
}

macro_rules! contract {
    ($($test:ident),* $(,)?) => {
        mod sqlite_local {
            $(#[test]
            fn $test() {
                if let Some(cx) = super::Cx::new(super::Config::SqliteLocal, stringify!($test)) {
                    super::$test(&cx);
                }
            })*
        }
        mod postgres_local {
            $(#[test]
            fn $test() {
                if let Some(cx) = super::Cx::new(super::Config::PostgresLocal, stringify!($test)) {
                    super::$test(&cx);
                }
            })*
        }
        mod postgres_s3 {
            $(#[test]
            fn $test() {
                if let Some(cx) = super::Cx::new(super::Config::PostgresS3, stringify!($test)) {
                    super::$test(&cx);
                }
            })*
        }
    };
}

contract!(
    packs_and_artifacts_keep_render_order,
    concurrent_hosts_add_artifacts_with_distinct_seqs,
    snapshots_are_found_by_label_prefix_and_id,
    refs_round_trip,
    token_counts_are_cached_per_tokenizer,
    runs_are_listed_newest_first_and_keep_their_objects,
    summaries_and_file_stamps_round_trip,
    render_files_round_trip,
    render_files_answer_any_mix_of_paths,
    render_payloads_keep_the_newest,
    objects_round_trip_and_reads_are_hash_checked,
    an_uncommitted_stage_is_invisible,
    large_objects_round_trip,
    concurrent_writers_of_one_object_agree,
    verify_finds_a_damaged_object_and_a_dangling_reference,
    gc_removes_only_unreferenced_objects_past_the_grace_period,
    gc_on_another_host_removes_nothing_referenced,
    a_killed_writer_loses_nothing_acknowledged,
    reopening_applies_no_migration,
    copy_moves_a_store_out_and_back,
);

fn artifact(id: &str, priority: i64) -> NewArtifact<'_> {
    NewArtifact {
        artifact_id: id,
        priority,
        uri: "text:x",
        source_json: "{}",
        added_at: 0,
    }
}

fn packs_and_artifacts_keep_render_order(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let created = db
        .create_pack(&NewPack {
            name: "p",
            budget_tokens: 100,
            tokenizer: TokenizerKind::O200kBase,
            created_at: 1,
        })
        .expect("create");
    assert_eq!((created.root, created.artifact_count), (None, 0));
    db.set_pack_root("p", "/home/u/proj").expect("root");
    assert_eq!(
        db.require_pack("p").expect("pack").root.as_deref(),
        Some("/home/u/proj")
    );
    assert!(matches!(
        db.create_pack(&NewPack {
            name: "p",
            budget_tokens: 1,
            tokenizer: TokenizerKind::Approx,
            created_at: 2
        }),
        Err(StoreError::PackExists { .. })
    ));
    db.create_pack(&NewPack {
        name: "B",
        budget_tokens: 5,
        tokenizer: TokenizerKind::Approx,
        created_at: 3,
    })
    .expect("create");
    db.create_pack(&NewPack {
        name: "a",
        budget_tokens: 5,
        tokenizer: TokenizerKind::Approx,
        created_at: 3,
    })
    .expect("create");
    let names: Vec<String> = db
        .list_packs()
        .expect("list")
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["B", "a", "p"], "byte order, not locale order");
    db.add_artifact("p", &artifact("aaa111", 0)).expect("add");
    db.add_artifact("p", &artifact("bbb222", 5)).expect("add");
    db.add_artifact("p", &artifact("ccc333", 0)).expect("add");
    assert!(matches!(
        db.add_artifact("p", &artifact("aaa111", 0)),
        Err(StoreError::ArtifactExists { .. })
    ));
    assert!(matches!(
        db.add_artifact("nope", &artifact("x", 0)),
        Err(StoreError::NoSuchPack { known, .. }) if known == ["B", "a", "p"]
    ));
    let order: Vec<(String, u64)> = db
        .artifacts("p")
        .expect("list")
        .into_iter()
        .map(|a| (a.artifact_id, a.seq))
        .collect();
    assert_eq!(
        order,
        [
            ("bbb222".to_owned(), 2),
            ("aaa111".to_owned(), 1),
            ("ccc333".to_owned(), 3)
        ]
    );
    assert_eq!(db.require_pack("p").expect("p").artifact_count, 3);
    assert!(matches!(
        db.remove_artifact("p", ""),
        Err(StoreError::NoSuchArtifact { .. })
    ));
    db.add_artifact("p", &artifact("aab000", 0)).expect("add");
    assert!(matches!(
        db.remove_artifact("p", "aa"),
        Err(StoreError::AmbiguousId { .. })
    ));
    assert_eq!(
        db.remove_artifact("p", "bbb").expect("rm").artifact_id,
        "bbb222"
    );
    db.update_pack_policy("p", 7, TokenizerKind::Cl100kBase)
        .expect("policy");
    let p = db.require_pack("p").expect("p");
    assert_eq!(
        (p.budget_tokens, p.tokenizer),
        (7, TokenizerKind::Cl100kBase)
    );
    db.delete_pack("p").expect("delete");
    assert!(db.get_pack("p").expect("get").is_none());
    assert!(db.artifacts("p").expect("artifacts").is_empty(), "cascade");
    assert!(matches!(
        db.delete_pack("p"),
        Err(StoreError::NoSuchPack { .. })
    ));
}

fn concurrent_hosts_add_artifacts_with_distinct_seqs(cx: &Cx) {
    let hosts: Vec<Store> = (0..4).map(|_| cx.host()).collect();
    hosts[0]
        .db()
        .create_pack(&NewPack {
            name: "shared",
            budget_tokens: 100,
            tokenizer: TokenizerKind::Approx,
            created_at: 1,
        })
        .expect("create");
    std::thread::scope(|scope| {
        for (h, store) in hosts.iter().enumerate() {
            scope.spawn(move || {
                for i in 0..15 {
                    let id = format!("h{h}-{i:02}");
                    store
                        .db()
                        .add_artifact("shared", &artifact(&id, 0))
                        .expect("add");
                }
            });
        }
    });
    let seqs: BTreeSet<u64> = hosts[1]
        .db()
        .artifacts("shared")
        .expect("list")
        .into_iter()
        .map(|a| a.seq)
        .collect();
    assert_eq!(seqs, (1..=60).collect::<BTreeSet<u64>>());
}

fn snapshot(payload: &[u8], label: Option<&str>) -> SnapshotRecord {
    SnapshotRecord {
        snapshot_id: ContentHash::of(payload),
        label: label.map(str::to_owned),
        packs: vec!["p".into()],
        policy_json: "{}".into(),
        render_hash: ContentHash::of(b"r"),
        payload_object: ContentHash::of(payload),
        tokens: 9,
        created_at: 1,
        root: None,
    }
}

fn snapshots_are_found_by_label_prefix_and_id(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let item = SnapshotItemRecord {
        position: 0,
        item_key: "a:x".into(),
        content_hash: Some(ContentHash::of(b"x")),
        tokens: 3,
        included: true,
        reason: None,
    };
    let excluded = SnapshotItemRecord {
        position: 1,
        item_key: "a:y".into(),
        content_hash: None,
        tokens: 0,
        included: false,
        reason: Some("over budget".into()),
    };
    let first = db
        .insert_snapshot(&snapshot(b"one", None), &[item.clone(), excluded.clone()])
        .expect("insert");
    let labelled = db
        .insert_snapshot(&snapshot(b"one", Some("v1")), &[item])
        .expect("relabel");
    assert_eq!(labelled.snapshot_id, first.snapshot_id);
    assert_eq!(labelled.label.as_deref(), Some("v1"));
    let id = first.snapshot_id;
    assert_eq!(db.find_snapshot("v1").expect("label").snapshot_id, id);
    assert_eq!(
        db.find_snapshot(&id.to_hex()[..8])
            .expect("pfx")
            .snapshot_id,
        id
    );
    assert_eq!(
        db.find_snapshot(&id.to_string()).expect("id").snapshot_id,
        id
    );
    assert!(matches!(
        db.insert_snapshot(&snapshot(b"two", Some("v1")), &[]),
        Err(StoreError::LabelTaken { .. })
    ));
    assert!(matches!(
        db.find_snapshot("nope"),
        Err(StoreError::NoSuchSnapshot { .. })
    ));
    assert_eq!(
        db.snapshot_items(&id).expect("items"),
        vec![
            SnapshotItemRecord {
                position: 0,
                item_key: "a:x".into(),
                content_hash: Some(ContentHash::of(b"x")),
                tokens: 3,
                included: true,
                reason: None,
            },
            excluded
        ],
        "items kept from the first insert"
    );
    let mut newer = snapshot(b"three", None);
    newer.created_at = 5;
    db.insert_snapshot(&newer, &[]).expect("insert");
    let listed: Vec<ContentHash> = db
        .list_snapshots()
        .expect("list")
        .into_iter()
        .map(|s| s.snapshot_id)
        .collect();
    assert_eq!(listed, [newer.snapshot_id, id], "newest first");
}

fn refs_round_trip(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let (a, b) = (ContentHash::of(b"a"), ContentHash::of(b"b"));
    db.set_ref("runs", "latest", &a).expect("set");
    db.set_ref("runs", "latest", &b).expect("move");
    db.set_ref("runs", "v1", &a).expect("set");
    db.set_ref("other", "v1", &b).expect("set");
    assert_eq!(db.get_ref("runs", "latest").expect("get"), Some(b));
    assert_eq!(db.get_ref("runs", "nope").expect("get"), None);
    let names: Vec<_> = db
        .list_refs("runs")
        .expect("list")
        .into_iter()
        .map(|r| (r.name, r.object))
        .collect();
    assert_eq!(names, [("latest".to_owned(), b), ("v1".to_owned(), a)]);
    assert!(db.delete_ref("runs", "v1").expect("del"));
    assert!(!db.delete_ref("runs", "v1").expect("del again"));
    assert_eq!(db.get_ref("other", "v1").expect("get"), Some(b));
}

fn token_counts_are_cached_per_tokenizer(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let (h, g) = (ContentHash::of(b"text"), ContentHash::of(b"more"));
    assert_eq!(
        db.cached_token_count(&h, TokenizerKind::O200kBase)
            .expect("q"),
        None
    );
    assert!(!db.remembers_token_counts().expect("any"), "a fresh store");
    db.cache_token_counts(TokenizerKind::O200kBase, &[(h, 12), (g, 1), (h, 12)])
        .expect("put");
    assert!(db.remembers_token_counts().expect("any"));
    db.cache_token_counts(TokenizerKind::O200kBase, &[(g, 2)])
        .expect("replace");
    assert_eq!(
        db.cached_token_count(&h, TokenizerKind::O200kBase)
            .expect("q"),
        Some(12)
    );
    assert_eq!(
        db.cached_token_count(&g, TokenizerKind::O200kBase)
            .expect("q"),
        Some(2)
    );
    assert_eq!(
        db.cached_token_count(&h, TokenizerKind::Cl100kBase)
            .expect("q"),
        None
    );
    assert_eq!(
        db.cached_token_counts(
            &[g, ContentHash::of(b"unknown"), h, g],
            TokenizerKind::O200kBase
        )
        .expect("batch"),
        [Some(2), None, Some(12), Some(2)]
    );
    assert!(
        db.cached_token_counts(&[], TokenizerKind::O200kBase)
            .expect("none asked")
            .is_empty()
    );
    db.cache_token_counts(TokenizerKind::Approx, &[])
        .expect("nothing to cache");
}

fn run_row(id: &ContentHash, source: &str) -> RunRow {
    RunRow {
        run_id: id.to_string(),
        parent: None,
        source: source.to_owned(),
        step_count: 2,
        model: Some("m".to_owned()),
        started: None,
        root: None,
    }
}

fn runs_are_listed_newest_first_and_keep_their_objects(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let a = ContentHash::of(b"run a");
    let b = ContentHash::of(b"run b");
    let blob = ContentHash::of(b"blob");
    db.record_run(
        &run_row(&a, "mcp"),
        &BTreeSet::from([blob]),
        ("runs", "latest"),
    )
    .expect("a");
    db.record_run(
        &run_row(&b, "claude-code"),
        &BTreeSet::new(),
        ("runs", "latest"),
    )
    .expect("b");
    let ids = |rows: Vec<RunRow>| rows.into_iter().map(|r| r.run_id).collect::<Vec<_>>();
    assert_eq!(
        ids(db.list_run_rows().expect("list")),
        [b.to_string(), a.to_string()]
    );
    db.record_run(&run_row(&a, "mcp"), &BTreeSet::new(), ("runs", "latest"))
        .expect("a again");
    assert_eq!(
        ids(db.list_run_rows().expect("list")),
        [a.to_string(), b.to_string()],
        "stored again: newest again, listed once"
    );
    assert_eq!(db.get_ref("runs", "latest").expect("ref"), Some(a));
    let hex = a.to_hex();
    assert_eq!(
        db.run_ids_with_prefix(&hex[..8]).expect("prefix"),
        [a.to_string()]
    );
    assert_eq!(
        db.run_ids_with_prefix(&format!("{}_%", &hex[..8]))
            .expect("prefix"),
        [a.to_string()],
        "only hex digits reach the pattern"
    );
    let kept: BTreeSet<String> = db
        .object_references()
        .expect("refs")
        .into_iter()
        .map(|r| r.value)
        .collect();
    assert!(kept.contains(&blob.to_string()) && kept.contains(&a.to_string()));
}

fn render_row(path: &str, mtime_ns: i64, tokens: u64) -> RenderFileRow {
    RenderFileRow {
        path: path.to_owned(),
        size: 12,
        mtime_ns,
        inode: u64::MAX - 3,
        raw_hash: "sha256:01".to_owned(),
        rules: "rules:1".to_owned(),
        content_hash: "sha256:02".to_owned(),
        findings: "3 aws-access-key\n".to_owned(),
        block_key: "sha256:03".to_owned(),
        tokenizer: "cl100k_base".to_owned(),
        tokens,
        skip: String::new(),
    }
}

fn render_files_round_trip(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let a = render_row("/p/a.py", 1_700_000_000_000_000_000, 7);
    let b = render_row("/p/b.py", 5, 9);
    assert_eq!(db.render_files(&["/p/a.py"]).expect("get"), [None]);
    db.remember_render_files(&[a.clone(), b.clone()])
        .expect("remember");
    assert_eq!(
        db.render_files(&["/p/b.py", "/p/none", "/p/a.py"])
            .expect("get"),
        [Some(b.clone()), None, Some(a.clone())]
    );
    // A path's row is replaced, not added to: here by a row that says why the file is out.
    let a2 = RenderFileRow {
        skip: "not_utf8 17".to_owned(),
        ..render_row("/p/a.py", a.mtime_ns + 1, 0)
    };
    db.remember_render_files(std::slice::from_ref(&a2))
        .expect("replace");
    assert_eq!(db.render_files(&["/p/a.py"]).expect("get"), [Some(a2)]);
    db.forget_render_files(&["/p/a.py"]).expect("forget");
    assert_eq!(
        db.render_files(&["/p/a.py", "/p/b.py"]).expect("get"),
        [None, Some(b)]
    );
}

/// Paths asked in any order, with repeats, unknown ones among and around known ones, and long
/// runs of rows nobody asked for between them: each gets its own row or `None`.
fn render_files_answer_any_mix_of_paths(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let rows: Vec<RenderFileRow> = (0u32..300)
        .map(|i| render_row(&format!("/p/{i:03}.py"), i64::from(i), u64::from(i)))
        .collect();
    db.remember_render_files(&rows).expect("remember");
    let asked = [
        "/p/250.py",
        "/p/000.py",
        "/p/000.py",
        "/p/0",
        "/p/001.py",
        "/p/002.py",
        "/p/100.py",
        "/p/100.pyc",
        "/p/299.py",
        "/q",
        "/",
        "/p/050.py",
        "/p/051.py",
        "/p/053.py",
    ];
    let expected: Vec<Option<RenderFileRow>> = asked
        .iter()
        .map(|path| rows.iter().find(|row| row.path == *path).cloned())
        .collect();
    assert_eq!(db.render_files(&asked).expect("get"), expected);
    let every: Vec<&str> = rows.iter().map(|row| row.path.as_str()).collect();
    let all = db.render_files(&every).expect("get all");
    assert_eq!(all, rows.iter().cloned().map(Some).collect::<Vec<_>>());
}

/// Payload rows by layout: replaced by layout, the newest kept, forgotten on request.
fn render_payloads_keep_the_newest(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let row = |i: usize, bytes: u64| RenderPayloadRow {
        layout: format!("sha256:{i:064x}"),
        payload_hash: ContentHash::of(i.to_string().as_bytes()).to_string(),
        bytes,
    };
    assert_eq!(db.render_payload(&row(0, 0).layout).expect("get"), None);
    db.remember_render_payload(&row(0, 1)).expect("remember");
    db.remember_render_payload(&row(0, 7)).expect("replace");
    assert_eq!(
        db.render_payload(&row(0, 0).layout).expect("get"),
        Some(row(0, 7))
    );
    for i in 1..=RENDER_PAYLOADS_KEPT {
        db.remember_render_payload(&row(i, i as u64))
            .expect("remember");
    }
    assert_eq!(
        db.render_payload(&row(0, 0).layout).expect("get"),
        None,
        "the oldest went"
    );
    for i in [1, RENDER_PAYLOADS_KEPT] {
        assert_eq!(
            db.render_payload(&row(i, 0).layout).expect("get"),
            Some(row(i, i as u64))
        );
    }
    db.forget_render_payload(&row(1, 0).layout).expect("forget");
    assert_eq!(db.render_payload(&row(1, 0).layout).expect("get"), None);
}

fn summaries_and_file_stamps_round_trip(cx: &Cx) {
    let store = cx.host();
    let db = store.db();
    let a = SummaryKey {
        content_hash: "blake3:aa",
        extractor: "rust:abi15:x1",
    };
    let b = SummaryKey {
        content_hash: "blake3:aa",
        extractor: "rust:abi15:x2",
    };
    assert_eq!(db.cached_summaries(&[a, b]).expect("get"), [None, None]);
    db.cache_summaries(&[(a, b"{\"x\":1}".as_slice())])
        .expect("put");
    assert_eq!(
        db.cached_summaries(&[a, b, a]).expect("get"),
        [
            Some(b"{\"x\":1}".to_vec()),
            None,
            Some(b"{\"x\":1}".to_vec())
        ]
    );
    db.cache_summaries(&[(a, b"{}".as_slice())])
        .expect("replace");
    assert_eq!(
        db.cached_summaries(&[a]).expect("get"),
        [Some(b"{}".to_vec())]
    );
    let stamp = FileStampRow {
        path: "/p/src/lib.rs",
        size: 10,
        mtime_ns: 1_700_000_000_000_000_000,
        inode: u64::MAX - 1,
    };
    let moved = FileStampRow {
        mtime_ns: stamp.mtime_ns + 1,
        ..stamp
    };
    let unknown = FileStampRow {
        path: "/p/other.rs",
        ..stamp
    };
    db.remember_file_stamps(&[(stamp, a)]).expect("stamp");
    let keys = db
        .stamped_summary_keys(&[stamp, moved, unknown])
        .expect("keys");
    assert_eq!(
        keys[0].as_ref().map(|k| k.extractor.as_str()),
        Some("rust:abi15:x1")
    );
    assert_eq!((keys[1].is_none(), keys[2].is_none()), (true, true));
    db.remember_file_stamps(&[(moved, b)]).expect("restamp");
    let keys = db.stamped_summary_keys(&[stamp, moved]).expect("keys");
    assert!(keys[0].is_none());
    assert_eq!(
        keys[1].as_ref().map(|k| k.extractor.as_str()),
        Some("rust:abi15:x2")
    );
    assert_eq!(db.clear_summaries().expect("clear"), 1);
    assert_eq!(db.cached_summaries(&[a]).expect("get"), [None]);
}

fn objects_round_trip_and_reads_are_hash_checked(cx: &Cx) {
    let store = cx.host();
    let objects = store.objects();
    let hash = objects.put(b"hello world").expect("put");
    assert_eq!(hash, ContentHash::of(b"hello world"));
    assert_eq!(objects.get(&hash).expect("get"), b"hello world");
    assert_eq!(
        objects.put(b"hello world").expect("again"),
        hash,
        "idempotent"
    );
    let (streamed, len) = objects
        .put_reader(&mut &b"hello world"[..])
        .expect("stream");
    assert_eq!((streamed, len), (hash, 11));
    assert!(objects.contains(&hash).expect("contains"));
    let missing = ContentHash::of(b"never stored");
    assert!(!objects.contains(&missing).expect("contains"));
    assert!(matches!(
        objects.get(&missing),
        Err(StoreError::MissingObject { .. })
    ));
    let listed = objects.list().expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].hash, listed[0].len), (Some(hash), 11));
    // Another host reads the same bytes.
    assert_eq!(cx.host().objects().get(&hash).expect("get"), b"hello world");
}

fn an_uncommitted_stage_is_invisible(cx: &Cx) {
    let store = cx.host();
    let staged = store
        .objects()
        .stage(&mut &b"half-written"[..])
        .expect("stage");
    let hash = staged.hash();
    std::mem::forget(staged);
    assert!(!store.objects().contains(&hash).expect("contains"));
    assert!(store.objects().list().expect("list").is_empty());
    let staged = store.objects().stage(&mut &b"written"[..]).expect("stage");
    let hash = staged.commit(store.objects()).expect("commit");
    assert_eq!(store.objects().get(&hash).expect("get"), b"written");
}

fn large_objects_round_trip(cx: &Cx) {
    let store = cx.host();
    // Past the multipart threshold (8 MiB), with a tail that is not a whole part.
    let payload: Vec<u8> = (0..(9 * 1024 * 1024 + 12_345u32))
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect();
    let (hash, len) = store
        .objects()
        .put_reader(&mut payload.as_slice())
        .expect("stream");
    assert_eq!(
        (hash, len),
        (ContentHash::of(&payload), payload.len() as u64)
    );
    assert_eq!(store.objects().put(&payload).expect("again"), hash);
    assert!(cx.host().objects().get(&hash).expect("get") == payload);
}

fn concurrent_writers_of_one_object_agree(cx: &Cx) {
    let hosts: Vec<Store> = (0..4).map(|_| cx.host()).collect();
    let payload = vec![7u8; 256 * 1024];
    std::thread::scope(|scope| {
        for store in &hosts {
            let payload = &payload;
            scope.spawn(move || {
                for _ in 0..5 {
                    store.objects().put(payload).expect("concurrent put");
                }
            });
        }
    });
    let hash = ContentHash::of(&payload);
    assert_eq!(hosts[0].objects().get(&hash).expect("intact"), payload);
    assert_eq!(hosts[0].objects().list().expect("list").len(), 1);
}

/// Replaces the stored bytes of `hash` (a disk error, an operator's mistake).
fn damage(cx: &Cx, store: &Store, hash: &ContentHash, bytes: &[u8]) {
    let hex = hash.to_hex();
    if let Some(root) = store.objects().local_root() {
        let path = root.join(&hex[..2]).join(&hex[2..]);
        let mut perms = std::fs::metadata(&path).expect("meta").permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&path, perms).expect("chmod");
        std::fs::write(&path, bytes).expect("damage");
        return;
    }
    damage_s3(cx, &format!("{}/{}", &hex[..2], &hex[2..]), bytes);
}

#[cfg(feature = "shared")]
fn damage_s3(cx: &Cx, tail: &str, bytes: &[u8]) {
    use object_store::ObjectStore as _;
    let url = cx.backends.objects.as_deref().expect("s3 url");
    let rest = url.strip_prefix("s3://").expect("s3");
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let settings = &cx.backends.s3;
    let mut builder = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region("us-east-1")
        .with_access_key_id(settings.access_key_id.as_deref().expect("id"))
        .with_secret_access_key(settings.secret_access_key.as_deref().expect("secret"));
    let endpoint = query
        .strip_prefix("endpoint=")
        .map(str::to_owned)
        .or_else(|| settings.endpoint.clone());
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint).with_allow_http(true);
    }
    let s3 = builder.build().expect("client");
    let key = object_store::path::Path::from(format!("{prefix}/objects/sha256/{tail}"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime
        .block_on(s3.put(&key, bytes.to_vec().into()))
        .expect("overwrite");
}

#[cfg(not(feature = "shared"))]
fn damage_s3(_: &Cx, _: &str, _: &[u8]) {
    unreachable!("S3 configurations are skipped without the `shared` feature")
}

fn verify_finds_a_damaged_object_and_a_dangling_reference(cx: &Cx) {
    let store = cx.host();
    let good = store.objects().put(b"good object").expect("put");
    let bad = store.objects().put(b"object to damage").expect("put");
    store.db().set_ref("test", "good", &good).expect("ref");
    store.db().set_ref("test", "bad", &bad).expect("ref");
    let clean = store.verify().expect("verify");
    assert!(clean.is_clean(), "{:?}", clean.problems);
    assert_eq!((clean.objects_checked, clean.references_checked), (2, 2));

    damage(cx, &store, &bad, b"object to damagf");
    let missing = ContentHash::of(b"never stored");
    store
        .db()
        .set_ref("test", "dangling", &missing)
        .expect("ref");
    // A fresh host: no read cache can hide the damage.
    let report = cx.host().verify().expect("verify");
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    assert!(
        report
            .problems
            .iter()
            .any(|p| matches!(p, Problem::CorruptObject { object, .. } if *object == bad))
    );
    assert!(
        report
            .problems
            .iter()
            .any(|p| matches!(p, Problem::MissingObject { object, .. } if *object == missing))
    );
    assert!(matches!(
        cx.host().objects().get(&bad),
        Err(StoreError::CorruptObject { .. })
    ));
}

fn gc_options(grace: Duration, dry_run: bool) -> GcOptions {
    GcOptions {
        now: SystemTime::now(),
        grace,
        dry_run,
    }
}

fn gc_removes_only_unreferenced_objects_past_the_grace_period(cx: &Cx) {
    let store = cx.host();
    let kept = store.objects().put(b"referenced").expect("put");
    let garbage = store.objects().put(b"nobody points here").expect("put");
    store.db().set_ref("test", "kept", &kept).expect("ref");
    let grace = Duration::from_millis(1500);
    let young = store.gc(gc_options(grace, false)).expect("gc");
    assert_eq!(
        (
            young.objects_removed,
            young.objects_in_grace,
            young.objects_kept
        ),
        (0, 1, 1)
    );
    std::thread::sleep(grace + Duration::from_millis(300));
    let dry = store.gc(gc_options(grace, true)).expect("gc");
    assert_eq!((dry.objects_removed, dry.bytes_freed), (1, 18));
    assert!(
        store.objects().contains(&garbage).expect("contains"),
        "dry run removes nothing"
    );
    let report = cx.host().gc(gc_options(grace, false)).expect("gc");
    assert_eq!((report.objects_removed, report.objects_kept), (1, 1));
    assert_eq!(report.bytes_freed, 18);
    assert!(!store.objects().contains(&garbage).expect("contains"));
    assert_eq!(store.objects().get(&kept).expect("kept"), b"referenced");
    assert!(store.verify().expect("verify").is_clean());
}

fn gc_on_another_host_removes_nothing_referenced(cx: &Cx) {
    let writer = cx.host();
    let collector = cx.host();
    let grace = Duration::from_millis(300);
    let stop = AtomicBool::new(false);
    // Objects that were referenced, then dropped (unreferenced, so gc may take them), and
    // that the writer stores and references again later.
    let recycled: Vec<Vec<u8>> = (0..20)
        .map(|i| format!("recycled {i}").into_bytes())
        .collect();
    let re_store = writer.db().gc_marks_in_database();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                let report = collector.gc(gc_options(grace, false)).expect("gc");
                rounds += 1;
                let _ = report;
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(rounds > 3, "gc ran {rounds} times");
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(4);
        let mut i = 0u64;
        while std::time::Instant::now() < deadline {
            let fresh = writer
                .objects()
                .put(format!("fresh object {i}").as_bytes())
                .expect("put");
            writer
                .db()
                .set_ref("w", &format!("fresh{i}"), &fresh)
                .expect("ref");
            // A local directory's gc judges age by mtime between listing and unlinking, so
            // re-storing an object it is about to delete races it; shared backends close that
            // race with gc marks, and are held to it here.
            if re_store {
                let bytes = &recycled[usize::try_from(i).unwrap_or(0) % recycled.len()];
                let name = format!("recycled{}", i % 20);
                let hash = writer.objects().put(bytes).expect("re-put");
                writer.db().set_ref("w", &name, &hash).expect("ref");
                if i.is_multiple_of(3) {
                    writer.db().delete_ref("w", &name).expect("drop");
                }
            }
            i += 1;
        }
        stop.store(true, Ordering::Relaxed);
    });
    let report = cx.host().verify().expect("verify");
    assert!(report.is_clean(), "{:?}", report.problems);
    for entry in writer.db().list_refs("w").expect("refs") {
        cx.host()
            .objects()
            .get(&entry.object)
            .unwrap_or_else(|e| panic!("{}: {e}", entry.name));
    }
}

const CHILD_ENV: &str = "CTX_STORE_BACKENDS_CHILD";

/// Writes refs to fresh objects forever, printing each name once its write is acknowledged;
/// run by `a_killed_writer_loses_nothing_acknowledged` in child processes.
#[test]
#[ignore = "helper: runs only as a child process of another test"]
fn child_writer() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.splitn(4, '\n');
    let (dir, who, metadata, objects) = (
        parts.next().expect("dir"),
        parts.next().expect("who"),
        parts.next().expect("metadata"),
        parts.next().expect("objects"),
    );
    let backends = Backends {
        metadata: Some(metadata).filter(|m| !m.is_empty()).map(str::to_owned),
        objects: Some(objects).filter(|o| !o.is_empty()).map(str::to_owned),
        s3: s3_settings(),
    };
    let store = Store::open_with(Path::new(dir), &backends, true).expect("open in child");
    let mut out = std::io::stdout();
    for i in 0.. {
        let name = format!("{who}-{i}");
        let payload = format!(
            "{name} {}",
            "x".repeat(usize::try_from(i % 97).unwrap_or(0))
        );
        let hash = store.objects().put(payload.as_bytes()).expect("put");
        store.db().set_ref("acked", &name, &hash).expect("ref");
        writeln!(out, "{name} {hash}").expect("ack");
        out.flush().expect("flush");
    }
}

fn a_killed_writer_loses_nothing_acknowledged(cx: &Cx) {
    let me = std::env::current_exe().expect("test binary");
    let spawn = |who: &str| {
        let dir = if cx.config == Config::SqliteLocal {
            cx.dir()
        } else {
            cx.tmp.path().join(format!("child-{who}/.ctx"))
        };
        let spec = format!(
            "{}\n{who}\n{}\n{}",
            dir.display(),
            cx.backends.metadata.as_deref().unwrap_or_default(),
            cx.backends.objects.as_deref().unwrap_or_default()
        );
        Command::new(&me)
            .args([
                "--exact",
                &child_writer_test(),
                "--ignored",
                "--quiet",
                "--nocapture",
            ])
            .env(CHILD_ENV, spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child")
    };
    drop(cx.host()); // creates the store before the children race to
    let mut victim = spawn("victim");
    let mut survivor = spawn("survivor");
    std::thread::sleep(Duration::from_millis(1500));
    // kill -9: no destructor, no flush, whatever it was writing is cut off.
    victim.kill().expect("kill -9");
    victim.wait().expect("reap");
    std::thread::sleep(Duration::from_millis(500));
    survivor.kill().expect("stop the survivor");
    survivor.wait().expect("reap");
    let read = |child: &mut std::process::Child| {
        let mut text = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().expect("stdout"), &mut text)
            .expect("read acks");
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(name, hash)| Some((name.to_owned(), hash.parse::<ContentHash>().ok()?)))
            .collect::<Vec<_>>()
    };
    let acked: Vec<(String, ContentHash)> = read(&mut victim)
        .into_iter()
        .chain(read(&mut survivor))
        .collect();
    assert!(
        acked.iter().any(|(n, _)| n.starts_with("victim"))
            && acked.iter().any(|(n, _)| n.starts_with("survivor")),
        "both children acknowledged writes: {}",
        acked.len()
    );
    let store = cx.host();
    for (name, hash) in &acked {
        assert_eq!(
            store.db().get_ref("acked", name).expect("ref").as_ref(),
            Some(hash),
            "{name} was acknowledged"
        );
        store
            .objects()
            .get(hash)
            .expect("acknowledged object intact");
    }
    let report = store.verify().expect("verify");
    assert!(report.is_clean(), "{:?}", report.problems);
}

fn reopening_applies_no_migration(cx: &Cx) {
    let first = cx.host();
    let version = first.db().schema_version().expect("version");
    first
        .db()
        .create_pack(&NewPack {
            name: "kept",
            budget_tokens: 1,
            tokenizer: TokenizerKind::Approx,
            created_at: 1,
        })
        .expect("pack");
    let again = cx.host();
    assert_eq!(again.db().schema_version().expect("version"), version);
    assert!(again.db().get_pack("kept").expect("get").is_some());
    assert!(
        again
            .db()
            .integrity_problems()
            .expect("integrity")
            .is_empty()
    );
}

/// Everything a reader sees of a store's metadata, for comparing two stores.
fn listing(store: &Store) -> String {
    let db = store.db();
    let mut out = Vec::new();
    for pack in db.list_packs().expect("packs") {
        out.push(format!("{pack:?}"));
        for artifact in db.artifacts(&pack.name).expect("artifacts") {
            out.push(format!("  {artifact:?}"));
        }
    }
    for snapshot in db.list_snapshots().expect("snapshots") {
        out.push(format!("{snapshot:?}"));
        for item in db.snapshot_items(&snapshot.snapshot_id).expect("items") {
            out.push(format!("  {item:?}"));
        }
    }
    for run in db.list_run_rows().expect("runs") {
        let objects = db.run_objects(&run.run_id).expect("objects");
        out.push(format!("{run:?} {objects:?}"));
    }
    for namespace in db.ref_namespaces().expect("namespaces") {
        out.push(format!("{:?}", db.list_refs(&namespace).expect("refs")));
    }
    out.join("\n")
}

fn copy_moves_a_store_out_and_back(cx: &Cx) {
    let source = cx.host();
    let db = source.db();
    db.create_pack(&NewPack {
        name: "p",
        budget_tokens: 100,
        tokenizer: TokenizerKind::O200kBase,
        created_at: 1,
    })
    .expect("pack");
    db.set_pack_root("p", "/src").expect("root");
    for id in ["a1", "b2", "c3"] {
        db.add_artifact("p", &artifact(id, 0)).expect("add");
    }
    db.remove_artifact("p", "b2").expect("a gap in seq");
    let payload = source.objects().put(b"payload").expect("put");
    let mut record = snapshot(b"payload", Some("v1"));
    record.payload_object = payload;
    db.insert_snapshot(&record, &[]).expect("snapshot");
    for name in ["run one", "run two"] {
        let id = source.objects().put(name.as_bytes()).expect("put");
        let blob = source
            .objects()
            .put(format!("{name} blob").as_bytes())
            .expect("put");
        db.record_run(
            &run_row(&id, "mcp"),
            &BTreeSet::from([blob]),
            ("runs", "latest"),
        )
        .expect("run");
    }
    db.set_ref("tags", "t", &payload).expect("ref");
    let before = listing(&source);

    let local_dir = cx.tmp.path().join("copied/.ctx");
    let (local, _) = Store::init(&local_dir).expect("local store");
    let report = source.copy_into(&local).expect("copy out");
    assert_eq!(
        (
            report.packs,
            report.artifacts,
            report.snapshots,
            report.runs
        ),
        (1, 2, 1, 2)
    );
    assert_eq!(report.objects_copied, 5);
    assert_eq!(listing(&local), before, "the local copy reads the same");
    assert!(local.verify().expect("verify").is_clean());

    let Some(again) = Cx::new(cx.config, "copyback") else {
        return;
    };
    let back = again.host();
    local.copy_into(&back).expect("copy back");
    assert_eq!(listing(&back), before, "and so does the copy back");
    assert!(back.verify().expect("verify").is_clean());
    assert!(
        matches!(local.copy_into(&back), Err(StoreError::PackExists { .. })),
        "copying onto a store that has the packs already is refused"
    );
}

/// `child_writer`'s name as the test binary knows it (its module's path, without the crate).
fn child_writer_test() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    format!("{module}::child_writer")
}
