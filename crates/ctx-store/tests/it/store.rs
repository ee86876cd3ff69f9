//! Store-level tests: verify, gc, and writers in separate processes.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use ctx_core::ContentHash;
use ctx_store::{GcOptions, Problem, Store};

fn make_writable(path: &Path) {
    let mut perms = fs::metadata(path).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(path, perms).expect("chmod");
}

/// Where a local store keeps `hash` (these tests damage objects on disk).
fn object_path(store: &Store, hash: &ContentHash) -> std::path::PathBuf {
    let hex = hash.to_hex();
    store
        .objects()
        .local_root()
        .expect("a local store")
        .join(&hex[..2])
        .join(&hex[2..])
}

#[test]
fn verify_finds_a_flipped_byte_and_a_dangling_reference() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, created) = Store::init(&dir.path().join(".ctx")).expect("init");
    assert!(created);
    let good = store.objects().put(b"good object").expect("put");
    let bad = store.objects().put(b"object to damage").expect("put");
    store.db().set_ref("test", "good", &good).expect("ref");
    store.db().set_ref("test", "bad", &bad).expect("ref");
    let clean = store.verify().expect("verify");
    assert!(clean.is_clean(), "{:?}", clean.problems);
    assert_eq!((clean.objects_checked, clean.references_checked), (2, 2));

    let path = object_path(&store, &bad);
    make_writable(&path);
    let mut bytes = fs::read(&path).expect("read");
    bytes[3] ^= 0x01;
    fs::write(&path, &bytes).expect("flip a byte");
    let missing = ContentHash::of(b"never stored");
    store
        .db()
        .set_ref("test", "dangling", &missing)
        .expect("ref");

    let report = store.verify().expect("verify");
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
}

#[test]
fn gc_removes_only_old_unreferenced_objects_and_stale_temp_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _) = Store::init(&dir.path().join(".ctx")).expect("init");
    let kept = store.objects().put(b"referenced").expect("put");
    let garbage = store.objects().put(b"nobody points here").expect("put");
    store.db().set_ref("test", "kept", &kept).expect("ref");
    std::mem::forget(
        store
            .objects()
            .stage(&mut &b"crashed write"[..])
            .expect("stage"),
    );
    // An index build killed while staging, and the index it would have replaced.
    let indexes = dir.path().join(".ctx/indexes");
    let staging = indexes.join(".default.tmp-4242-0badcafe");
    fs::create_dir_all(staging.join("documents")).expect("mkdir");
    fs::write(staging.join("documents/abc.json"), b"{}").expect("write");
    fs::create_dir_all(indexes.join("default/documents")).expect("mkdir");
    fs::write(indexes.join("default/manifest.json"), b"{}").expect("write");

    let now = SystemTime::now();
    let young = store
        .gc(GcOptions {
            now,
            grace: Duration::from_secs(3600),
            dry_run: false,
        })
        .expect("gc");
    assert_eq!(
        (
            young.objects_removed,
            young.objects_in_grace,
            young.temp_files_removed
        ),
        (0, 1, 0)
    );

    let later = now + Duration::from_secs(7200);
    let dry = store
        .gc(GcOptions {
            now: later,
            grace: Duration::from_secs(3600),
            dry_run: true,
        })
        .expect("gc");
    assert_eq!((dry.objects_removed, dry.bytes_freed), (1, 18));
    assert!(
        store.objects().contains(&garbage).expect("contains"),
        "dry run removes nothing"
    );

    let report = store
        .gc(GcOptions {
            now: later,
            grace: Duration::from_secs(3600),
            dry_run: false,
        })
        .expect("gc");
    assert_eq!(report.objects_removed, 1);
    assert_eq!(report.bytes_freed, b"nobody points here".len() as u64);
    assert_eq!(report.objects_kept, 1);
    assert_eq!(
        report.temp_files_removed, 2,
        "the staged object and the index staging"
    );
    assert!(!staging.exists());
    assert!(
        indexes.join("default/manifest.json").is_file(),
        "indexes stay"
    );
    assert!(!store.objects().contains(&garbage).expect("contains"));
    assert_eq!(store.objects().get(&kept).expect("kept"), b"referenced");
    assert!(store.verify().expect("verify").is_clean());
}

const CHILD_ENV: &str = "CTX_STORE_TEST_CHILD_DIR";

/// Run by `two_processes_write_the_same_object` in child processes; does nothing otherwise.
#[test]
#[ignore = "helper: runs only as a child process of another test"]
fn child_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let store = Store::open(Path::new(&dir)).expect("open in child");
    let payload = shared_payload();
    for _ in 0..50 {
        store.objects().put(&payload).expect("put in child");
    }
}

fn shared_payload() -> Vec<u8> {
    (0..1_000_000u32).flat_map(u32::to_le_bytes).collect()
}

#[test]
fn two_processes_write_the_same_object() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store_dir = dir.path().join(".ctx");
    let (store, _) = Store::init(&store_dir).expect("init");
    let me = std::env::current_exe().expect("test binary");
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&me)
                .args(["--exact", &child_writer_test(), "--ignored", "--quiet"])
                .env(CHILD_ENV, &store_dir)
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn child")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "child writer failed");
    }
    let payload = shared_payload();
    let hash = ContentHash::of(&payload);
    assert_eq!(store.objects().get(&hash).expect("intact"), payload);
    let listing = store.objects().list().expect("list");
    assert_eq!(listing.len(), 1, "exactly one object");
    assert_eq!(
        fs::read_dir(store_dir.join("tmp")).expect("tmp").count(),
        0,
        "no temp files left"
    );
}

/// Two hooks on a new machine make the global store at once: every maker and every opener
/// gets a working store, none finds a half-made (empty) database.
#[test]
fn stores_made_and_opened_at_once_all_work() {
    for round in 0..5 {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join(format!("store{round}"));
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            for i in 0..8 {
                let (dir, barrier) = (&dir, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    // Half make it, half open it once its database file shows up (as the
                    // CLI does: it opens a store whose state.db exists).
                    let store = if i % 2 == 0 {
                        Store::init(dir).expect("init").0
                    } else {
                        let db = dir.join(ctx_store::DATABASE_FILE);
                        while !db.exists() {
                            std::thread::yield_now();
                        }
                        Store::open(dir).expect("an open while another makes it")
                    };
                    store.db().list_packs().expect("a working database");
                });
            }
        });
    }
}

/// `child_writer`'s name as the test binary knows it (its module's path, without the crate).
fn child_writer_test() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    format!("{module}::child_writer")
}
