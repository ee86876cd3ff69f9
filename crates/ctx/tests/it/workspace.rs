//! `ctx::Workspace`: opened once with what the environment said and a clock, every use case a
//! method, every failure with its kind.

use std::sync::Arc;

use ctx::{Environment, ErrorKind, OpenOptions, Workspace};

fn open(dir: &std::path::Path, init: bool) -> Result<Workspace, ctx::CtxError> {
    Workspace::open(
        &OpenOptions {
            cwd: dir.to_owned(),
            store: None,
            init,
            env: Environment {
                home: Some(dir.join("home")),
                ..Environment::default()
            },
        },
        Arc::new(|| 1_767_225_600),
    )
}

#[test]
fn a_workspace_opens_its_store_and_answers_with_kinds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(
        root.join("notes.md"),
        "# Notes\n\nTokens are counted here.\n",
    )
    .expect("write");
    let ws = open(&root, true).expect("open");
    assert_eq!(ws.store().expect("store").dir(), root.join(".ctx"));
    assert_eq!(ws.root(), root);

    let pack = ws.pack_create("docs", Some(1000), None).expect("create");
    assert_eq!(pack.created_at, 1_767_225_600, "the injected clock");
    ws.pack_add(
        "docs",
        "file:notes.md",
        &ctx::sources::AddOptions::default(),
        0,
    )
    .expect("add");
    let request = ctx::packs::RenderRequest {
        packs: vec!["docs".to_owned()],
        budget: None,
        tokenizer: None,
        style: ctx::packs::PayloadStyle::default(),
    };
    let first = ws.pack_render(&request).expect("render");
    assert!(first.payload.contains("Tokens are counted"));
    assert_eq!(
        ws.pack_render(&request).expect("again").payload,
        first.payload
    );
    assert_eq!(ws.count_tokens(&["hello world"], None).expect("count"), [2]);

    let kind = |err: ctx::CtxError| err.kind();
    assert_eq!(
        kind(ws.pack_show("nope").map(drop).expect_err("missing")),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(
            ws.pack_create("docs", None, None)
                .map(drop)
                .expect_err("twice")
        ),
        ErrorKind::Conflict
    );
    assert_eq!(
        kind(
            ws.pack_create("../x", None, None)
                .map(drop)
                .expect_err("bad name")
        ),
        ErrorKind::UserInput
    );
    assert_eq!(
        kind(ws.run_show("nosuch").map(drop).expect_err("no run")),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(
            ws.select("tokens", 1000, Some("nosuch"))
                .map(drop)
                .expect_err("no index")
        ),
        ErrorKind::NotFound
    );
    let picked = ws
        .select("where are tokens counted", 2000, None)
        .expect("select");
    assert_eq!(picked.documents[0].id, "notes.md");
    drop(ws);

    std::fs::write(root.join(".ctx/state.db"), b"").expect("empty it");
    assert_eq!(
        kind(
            open(&root, false)
                .and_then(|ws| ws.store().map(drop))
                .expect_err("empty db")
        ),
        ErrorKind::Damaged
    );
}

/// "Work whose request timed out keeps burning CPU": once the caller's flag is set, the code
/// walks (text, symbol and caller search, map, a directory's summaries) stop with a
/// user-input error instead of running to their end; cleared, the same calls answer.
#[test]
fn code_walks_stop_once_their_caller_gives_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    for i in 0..40 {
        std::fs::write(
            root.join(format!("src/m{i}.py")),
            format!("def f{i}():\n    return helper()\n"),
        )
        .expect("write");
    }
    let mut ws = open(&root, true).expect("open");
    let given_up = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let text = ctx::code::SearchKind::Text(ctx::code::TextQuery {
        pattern: "helper".to_owned(),
        ..ctx::code::TextQuery::default()
    });
    let symbol = ctx::code::SearchKind::Symbol {
        name: "f1".to_owned(),
        context: 0,
    };
    let caller = ctx::code::SearchKind::Caller {
        name: "helper".to_owned(),
        context: 0,
    };
    let src = std::path::Path::new("src");
    let calls = |ws: &Workspace| -> Vec<Result<(), ctx::CtxError>> {
        vec![
            ws.search(src, &text, None).map(drop),
            ws.search(src, &symbol, None).map(drop),
            ws.search(src, &caller, None).map(drop),
            ws.map(src, None, None).map(drop),
            ws.summarize(src, None, false).map(drop),
        ]
    };
    ws.cancel_on(Some(Arc::clone(&given_up)));
    for (i, outcome) in calls(&ws).into_iter().enumerate() {
        let err = outcome.expect_err("stopped");
        assert_eq!(err.kind(), ErrorKind::UserInput, "call {i}: {err}");
        assert!(
            err.to_string().contains("caller gave up"),
            "call {i}: {err}"
        );
    }
    ws.cancel_on(None);
    for (i, outcome) in calls(&ws).into_iter().enumerate() {
        outcome.unwrap_or_else(|err| panic!("call {i}: {err}"));
    }
}

#[test]
fn a_watched_index_takes_in_edits_without_a_selection_or_a_walk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("src/a.py"), "def parse(x):\n    return x\n").expect("write");
    std::fs::write(root.join("src/b.py"), "def render(y):\n    return y\n").expect("write");
    // Dependencies cost no watches.
    std::fs::create_dir_all(root.join("node_modules/left-pad/lib/x")).expect("mkdir");
    std::fs::create_dir_all(root.join("target/debug/deps")).expect("mkdir");
    let ws = open(&root, true).expect("open");
    let (send, updates) = std::sync::mpsc::channel();
    let (keeper, first) = ws.watch_index(send).expect("watch");
    assert_eq!((first.documents, first.read), (2, 2), "{first:?}");
    assert!(keeper.is_watching());
    assert_eq!(
        keeper.watched_directories(),
        3,
        "the root, src and the index directory"
    );
    let next = || {
        updates
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the watcher reports an update")
    };
    assert_eq!(next().read, 2, "the first build is reported too");

    std::fs::write(root.join("src/a.py"), "def parse(x):\n    return x + 1\n").expect("edit");
    let edited = next();
    assert_eq!(
        (edited.read, edited.reused, edited.removed),
        (1, 1, 0),
        "{edited:?}"
    );
    std::fs::write(root.join("src/c.py"), "def tokenize(z):\n    return z\n").expect("add");
    let added = next();
    assert_eq!((added.documents, added.read), (3, 1), "{added:?}");
    std::fs::remove_file(root.join("src/b.py")).expect("remove");
    let removed = next();
    assert_eq!((removed.documents, removed.removed), (2, 1), "{removed:?}");
    // A new directory is watched as it appears: a file made in it later is seen too.
    std::fs::create_dir_all(root.join("src/deep/er")).expect("mkdir");
    std::fs::write(root.join("src/deep/er/d.py"), "def lex(z):\n    return z\n").expect("add");
    let deep = next();
    assert_eq!(deep.documents, 3, "{deep:?}");
    std::fs::write(
        root.join("src/deep/er/e.py"),
        "def emit(z):\n    return z\n",
    )
    .expect("add");
    let deeper = next();
    assert_eq!((deeper.documents, deeper.read), (4, 1), "{deeper:?}");
    // Ignored and hidden paths are not looked at.
    std::fs::create_dir_all(root.join("node_modules/x")).expect("mkdir");
    std::fs::write(root.join("node_modules/x/i.js"), "x").expect("write");
    std::fs::write(root.join(".env"), "A=1").expect("write");
    assert!(
        updates
            .recv_timeout(std::time::Duration::from_millis(500))
            .is_err(),
        "nothing to update"
    );
    assert!(keeper.updates() >= 4, "{}", keeper.updates());
    let verify = ws.index_verify(None).expect("verify");
    assert!(verify.valid, "{verify:?}");
}

#[test]
fn a_watched_index_counts_git_activity_again_after_a_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("HOME", &root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    };
    std::fs::write(root.join("a.py"), "def parse(x):\n    return x\n").expect("write");
    std::fs::write(root.join(".gitignore"), ".ctx/\n").expect("write");
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "one"]);
    let ws = open(&root, true).expect("open");
    let (send, updates) = std::sync::mpsc::channel();
    let (keeper, _) = ws.watch_index(send).expect("watch");
    assert!(keeper.is_watching());
    while updates
        .recv_timeout(std::time::Duration::from_millis(300))
        .is_ok()
    {}
    // A commit changes no file of the tree, only git's: the index takes the new commit.
    std::fs::write(root.join("a.py"), "def parse(x):\n    return x * 2\n").expect("edit");
    let edited = updates
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the edit");
    assert_eq!(edited.read, 1, "{edited:?}");
    git(&["commit", "-q", "-am", "two"]);
    let committed = updates
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the commit is seen");
    assert_eq!((committed.read, committed.removed), (0, 0), "{committed:?}");
    assert!(ws.index_verify(None).expect("verify").valid);
}
