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
    assert_eq!(picked.result.documents[0].id.as_str(), "notes.md");
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
