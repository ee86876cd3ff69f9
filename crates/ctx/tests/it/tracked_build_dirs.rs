//! The built-in excludes (`build`, `dist`, `target`, …) apply to what git does not track: a
//! tracked file under `build/` is found by search and packed, while an untracked `build/`
//! directory (and the untracked rest of a tracked one) stays skipped.

use std::path::Path;
use std::time::Duration;

use ctx::code::{CodeContext, SearchKind, TextQuery};
use ctx::core::TokenizerKind;
use ctx::core::redact::Redactor;
use ctx::packs::{self, PackContext, PackSettings, RenderRequest};
use ctx::sources::AddOptions;
use ctx::sources::sensitive::SensitivePaths;
use ctx::store::Store;

const NEEDLE: &str = "needle_in_build";

fn write(root: &Path, rel: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, format!("fn {NEEDLE}() {{}} // {rel}\n")).expect("write");
}

/// A repository tracking `pkg/build/run_bindgen.rs` (as openssl-sys does) and `src/lib.rs`,
/// with untracked files beside the tracked one and in an untracked `build/` and `dist/`.
fn repository() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    for rel in [
        "src/lib.rs",
        "pkg/build/run_bindgen.rs",
        "pkg/build/out/generated.rs",
        "pkg/build/untracked.rs",
        "build/debug/artifact.rs",
        "dist/bundle.rs",
    ] {
        write(&root, rel);
    }
    let repo = ctx_code::git2::Repository::init(&root).expect("git init");
    let mut index = repo.index().expect("index");
    for rel in ["src/lib.rs", "pkg/build/run_bindgen.rs"] {
        index.add_path(Path::new(rel)).expect("git add");
    }
    index.write().expect("write index");
    (dir, root)
}

const SEEN: [&str; 2] = ["pkg/build/run_bindgen.rs", "src/lib.rs"];

#[test]
fn a_tracked_build_file_is_searched_and_an_untracked_build_dir_is_not() {
    let (_dir, root) = repository();
    let cx = CodeContext {
        cwd: root.clone(),
        store: None,
        sandbox: None,
        clock: &|| 1_767_225_600,
        cancel: None,
    };
    let query = SearchKind::Text(TextQuery {
        pattern: NEEDLE.to_owned(),
        ..TextQuery::default()
    });
    let found = ctx::code::search(&cx, Path::new("."), &query, None)
        .expect("search")
        .matches;
    let paths: Vec<&str> = found.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, SEEN);
    // From a subdirectory the tracked file is found too (paths relative to the repository's
    // work tree are matched against the walk root).
    let found = ctx::code::search(&cx, Path::new("pkg"), &query, None)
        .expect("search")
        .matches;
    let paths: Vec<&str> = found.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["pkg/build/run_bindgen.rs"]);
}

#[test]
fn a_tracked_build_file_is_packed_and_an_untracked_build_dir_is_not() {
    let (_dir, root) = repository();
    let (store, _) = Store::init(&root.join(".ctx")).expect("init");
    let ctx = PackContext {
        store: &store,
        root: root.clone(),
        settings: &PackSettings {
            default_budget: 100_000,
            default_tokenizer: TokenizerKind::O200kBase,
            max_file_bytes: 1 << 20,
            command_timeout: Duration::from_secs(5),
            redactor: Redactor::with_custom(&[]).expect("rules"),
            sensitive: SensitivePaths::with_extra(&[]).expect("patterns"),
        },
        clock: &|| 0,
    };
    packs::create_pack(&ctx, "p", Some(100_000), None, 0).expect("create");
    packs::add_source(
        &ctx,
        "p",
        "glob:**/*.rs",
        &root,
        &AddOptions::default(),
        0,
        0,
    )
    .expect("add");
    let request = RenderRequest {
        packs: vec!["p".into()],
        ..RenderRequest::default()
    };
    let rendered = packs::render(&ctx, &request).expect("render");
    let payload = rendered.payload;
    for rel in SEEN {
        assert!(payload.contains(&format!("// {rel}\n")), "{rel} packed");
    }
    for rel in [
        "pkg/build/out/generated.rs",
        "pkg/build/untracked.rs",
        "build/debug/artifact.rs",
        "dist/bundle.rs",
    ] {
        assert!(!payload.contains(rel), "{rel} skipped");
    }
}
