//! A store written by the last release opens with today's code and reads the same.
//!
//! `tests/fixtures/release-store/` was written by the `ctx` binary of the release named in
//! `expected/version.txt` (see `make-release-store.sh`): `work/.ctx` is the store, and
//! `expected/` holds what that binary read back from it. These tests open a copy with the
//! current `Store` (metadata and objects behind their traits) and compare.

use std::fs;
use std::path::{Path, PathBuf};

use ctx_core::ContentHash;
use ctx_store::{MIGRATIONS, NewPack, Store};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/release-store")
}

fn expected(name: &str) -> Value {
    let text = fs::read_to_string(fixture().join("expected").join(name)).expect("expected file");
    serde_json::from_str(&text).expect("expected JSON")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("readdir") {
        let entry = entry.expect("entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

/// A private copy of the release's store, so the committed fixture is never written.
fn release_store() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture().join("work/.ctx"), &tmp.path().join(".ctx"));
    let dir = tmp.path().join(".ctx");
    (tmp, dir)
}

#[test]
fn the_release_store_migrates_once_and_verifies_clean() {
    let (_tmp, dir) = release_store();
    {
        // The release wrote schema version 8; the render cache (version 9) came after it,
        // and opening adds it.
        let store = Store::open(&dir).expect("open the release's store");
        assert_eq!(
            store.db().schema_version().expect("version"),
            MIGRATIONS.last().expect("migrations").version,
            "opened at today's schema"
        );
    }
    let before = fs::read(dir.join("state.db")).expect("state.db");
    {
        let store = Store::open(&dir).expect("open the migrated store");
        let report = store.verify().expect("verify");
        assert!(report.is_clean(), "{:?}", report.problems);
        let then = &expected("store-verify.json")["report"];
        assert_eq!(
            (
                report.objects_checked,
                report.bytes_checked,
                report.references_checked
            ),
            (
                then["objects_checked"].as_u64().expect("n"),
                then["bytes_checked"].as_u64().expect("n"),
                then["references_checked"].as_u64().expect("n"),
            ),
            "the same objects and references as the release counted"
        );
        store.db().list_packs().expect("packs");
        store.db().list_snapshots().expect("snapshots");
        store.db().list_run_rows().expect("runs");
    }
    assert!(
        fs::read(dir.join("state.db")).expect("state.db") == before,
        "opening the migrated store again and reading left state.db byte-identical"
    );
}

#[test]
fn packs_snapshots_and_runs_read_as_the_release_wrote_them() {
    let (_tmp, dir) = release_store();
    let store = Store::open(&dir).expect("open");
    let db = store.db();

    let packs = db.list_packs().expect("packs");
    let then = expected("pack-list.json");
    let then = then.as_array().expect("packs array");
    assert_eq!(packs.len(), then.len());
    for (now, then) in packs.iter().zip(then) {
        assert_eq!(now.name, then["name"].as_str().expect("name"));
        assert_eq!(Some(now.budget_tokens), then["budget_tokens"].as_u64());
        assert_eq!(
            now.tokenizer.name(),
            then["tokenizer"].as_str().expect("tok")
        );
        assert_eq!(Some(now.created_at), then["created_at"].as_i64());
        assert_eq!(Some(now.artifact_count), then["artifact_count"].as_u64());
    }

    let docs = expected("pack-show-docs.json");
    let artifacts = db.artifacts("docs").expect("artifacts");
    let then: Vec<(&str, &str, i64, u64)> = docs["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .map(|a| {
            (
                a["artifact_id"].as_str().expect("id"),
                a["uri"].as_str().expect("uri"),
                a["priority"].as_i64().expect("priority"),
                a["seq"].as_u64().expect("seq"),
            )
        })
        .collect();
    let now: Vec<(&str, &str, i64, u64)> = artifacts
        .iter()
        .map(|a| (a.artifact_id.as_str(), a.uri.as_str(), a.priority, a.seq))
        .collect();
    assert_eq!(now, then, "artifacts in the release's render order");

    let snapshot = db.find_snapshot("v1").expect("snapshot v1");
    let then = expected("snapshots.json");
    let listed: Vec<String> = db
        .list_snapshots()
        .expect("snapshots")
        .iter()
        .map(|s| s.snapshot_id.to_string())
        .collect();
    let then_ids: Vec<String> = then
        .as_array()
        .expect("snapshots")
        .iter()
        .map(|s| s["snapshot_id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(listed, then_ids);
    let payload = store
        .objects()
        .get(&snapshot.payload_object)
        .expect("payload object");
    let rendered = fs::read(fixture().join("expected/snapshot-v1.txt")).expect("rendered");
    assert!(
        payload == rendered,
        "the snapshot's payload is byte for byte what the release rendered from it"
    );
    let items = db.snapshot_items(&snapshot.snapshot_id).expect("items");
    assert!(!items.is_empty());
    for item in items.iter().filter(|i| i.included) {
        assert!(item.content_hash.is_some(), "{item:?}");
    }

    let runs: Vec<String> = db
        .list_run_rows()
        .expect("runs")
        .into_iter()
        .map(|r| r.run_id)
        .collect();
    let then: Vec<String> = expected("run-log.json")["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(runs, then, "runs newest first, as the release listed them");
    let latest: ContentHash = then[0].parse().expect("hash");
    assert_eq!(
        db.get_ref("runs", "latest").expect("ref"),
        Some(latest),
        "the `latest` ref survives"
    );
}

#[test]
fn the_release_store_takes_new_writes() {
    let (_tmp, dir) = release_store();
    let store = Store::open(&dir).expect("open");
    let hash = store
        .objects()
        .put(b"written by today's code")
        .expect("put");
    store.db().set_ref("test", "new", &hash).expect("ref");
    store
        .db()
        .create_pack(&NewPack {
            name: "new",
            budget_tokens: 100,
            tokenizer: ctx_core::TokenizerKind::Approx,
            created_at: 1,
        })
        .expect("pack");
    drop(store);
    let store = Store::open(&dir).expect("reopen");
    assert_eq!(store.db().list_packs().expect("packs").len(), 3);
    assert!(store.verify().expect("verify").is_clean());
}
