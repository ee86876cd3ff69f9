//! Progress reporting only observes: a render reported to a `Progress` gives the same bytes
//! and hashes as one that is not, and the reports cover every unit of the pack.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ctx::core::redact::Redactor;
use ctx::core::{Progress, TokenizerKind};
use ctx::packs::{self, PackContext, PackSettings, RenderRequest};
use ctx::sources::AddOptions;
use ctx::sources::sensitive::SensitivePaths;
use ctx::store::Store;

/// Pack settings for small test trees: a 1,000-token budget, exact counts, no custom rules.
fn settings() -> PackSettings {
    PackSettings {
        default_budget: 1000,
        default_tokenizer: TokenizerKind::O200kBase,
        max_file_bytes: 1 << 20,
        command_timeout: Duration::from_secs(5),
        redactor: Redactor::with_custom(&[]).expect("rules"),
        sensitive: SensitivePaths::with_extra(&[]).expect("patterns"),
    }
}

#[derive(Default)]
struct Recorder {
    phases: Mutex<Vec<(String, Option<u64>)>>,
    steps: AtomicU64,
    finished: AtomicU64,
}

impl Progress for Recorder {
    fn phase(&self, label: &str, total: Option<u64>) {
        self.phases
            .lock()
            .expect("phases")
            .push((label.to_owned(), total));
    }
    fn advance(&self, steps: u64) {
        self.steps.fetch_add(steps, Ordering::Relaxed);
    }
    fn finish(&self) {
        self.finished.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_reported_render_is_the_same_render() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    for i in 0..5 {
        std::fs::write(root.join(format!("f{i}.txt")), format!("file {i}\n")).expect("write");
    }
    let (store, _) = Store::init(&root.join(".ctx")).expect("init");
    let ctx = PackContext {
        store: &store,
        root: root.clone(),
        settings: &settings(),
        clock: &|| 0,
    };
    packs::create_pack(&ctx, "p", Some(1000), None, 0).expect("create");
    packs::add_source(&ctx, "p", "glob:*.txt", &root, &AddOptions::default(), 0, 0).expect("add");
    let request = RenderRequest {
        packs: vec!["p".into()],
        ..RenderRequest::default()
    };

    let recorder = Recorder::default();
    let reported = packs::render_with_progress(&ctx, &request, &recorder).expect("reported");
    let plain = packs::render(&ctx, &request).expect("plain");
    assert_eq!(reported.payload, plain.payload);
    assert_eq!(reported.report.render_hash, plain.report.render_hash);

    let phases = recorder.phases.lock().expect("phases").clone();
    let labels: Vec<&str> = phases.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["walk", "read", "write"]);
    // The collection is walked, its five files read, redacted and counted a chunk at a
    // time, and the five blocks written.
    assert_eq!(phases[0].1, None);
    assert_eq!(phases[1].1, Some(5));
    assert_eq!(phases[2].1, Some(5));
    assert_eq!(recorder.steps.load(Ordering::Relaxed), 5 + 5);
    assert_eq!(recorder.finished.load(Ordering::Relaxed), 1);
}

#[test]
fn a_one_shot_pack_reports_walk_read_and_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    for i in 0..3 {
        std::fs::write(root.join(format!("f{i}.txt")), format!("file {i}\n")).expect("write");
    }
    let settings = settings();
    let recorder = Recorder::default();
    let request = packs::OneShotRequest::default();
    let reported =
        packs::pack_paths(&root, &root, &settings, None, &request, &recorder).expect("pack");
    let plain = packs::pack_paths(
        &root,
        &root,
        &settings,
        None,
        &request,
        &ctx::core::NoProgress,
    )
    .expect("pack");
    assert_eq!(reported.payload, plain.payload);
    let labels: Vec<String> = recorder
        .phases
        .lock()
        .expect("phases")
        .iter()
        .map(|(l, _)| l.clone())
        .collect();
    assert_eq!(labels, ["walk", "read", "write"]);
    assert_eq!(reported.report.included.len(), 3);
}

/// A render whose caller gave up stops between chunks with `Cancelled`, and one whose caller
/// waits is the same render as ever: cancellation is checked, never guessed.
#[test]
fn a_render_stops_when_its_caller_gives_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    for i in 0..3 {
        std::fs::write(root.join(format!("f{i}.txt")), format!("file {i}\n")).expect("write");
    }
    let settings = settings();
    let request = packs::OneShotRequest::default();
    let flag = std::sync::atomic::AtomicBool::new(true);
    let recorder = Recorder::default();
    let given_up = ctx::core::Cancellable {
        inner: &recorder,
        flag: &flag,
    };
    let err = packs::pack_paths(&root, &root, &settings, None, &request, &given_up)
        .expect_err("a cancelled render stops");
    assert!(matches!(err, ctx::CtxError::Cancelled), "{err}");
    assert_eq!(err.kind(), ctx::ErrorKind::UserInput);
    flag.store(false, Ordering::Relaxed);
    let waited = packs::pack_paths(&root, &root, &settings, None, &request, &given_up)
        .expect("a render whose caller waits");
    let plain = packs::pack_paths(
        &root,
        &root,
        &settings,
        None,
        &request,
        &ctx::core::NoProgress,
    )
    .expect("pack");
    assert_eq!(waited.payload, plain.payload);
}
