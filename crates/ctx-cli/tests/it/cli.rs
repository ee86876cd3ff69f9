//! End-to-end tests of the `ctx` binary, each in an isolated temp dir with a cleared
//! environment (no developer HOME, no CTX_* variables).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::{Env, snapshot};

use ctx::core::ContentHash;
use ctx::store::Store;

fn token_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ctx-core/tests/fixtures/tokens")
}

#[test]
fn init_then_verify_exits_zero() {
    let env = Env::new();
    let init = env.run(&["init"]);
    init.ok();
    assert!(
        init.stdout.contains("Initialized empty ctx store"),
        "{}",
        init.stdout
    );
    assert!(env.work().join(".ctx/state.db").is_file());
    let verify = env.run(&["store", "verify"]);
    verify.ok();
    assert!(verify.stdout.starts_with("ok:"), "{}", verify.stdout);
    let again = env.run(&["--json", "init"]);
    assert_eq!(again.ok().json()["created"], false);
}

#[test]
fn tokens_equal_tiktoken_for_both_encodings() {
    let env = Env::new();
    let dir = token_fixtures();
    let expected: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("expected.json")).expect("vectors"))
            .expect("json");
    for encoding in ["o200k_base", "cl100k_base"] {
        let files: Vec<String> = expected
            .as_object()
            .expect("object")
            .keys()
            .map(|f| dir.join(f).display().to_string())
            .collect();
        let mut args = vec!["--json", "tokens", "--tokenizer", encoding];
        args.extend(files.iter().map(String::as_str));
        let run = env.run(&args);
        let report = run.ok().json();
        assert_eq!(report["tokenizer"], encoding);
        for entry in report["files"].as_array().expect("files") {
            let path = PathBuf::from(entry["path"].as_str().expect("path"));
            let name = path.file_name().expect("name").to_str().expect("utf8");
            assert_eq!(
                entry["tokens"], expected[name][encoding],
                "{name} {encoding}"
            );
        }
    }
}

#[test]
fn tokens_reads_stdin_and_uses_the_configured_tokenizer() {
    let env = Env::new();
    env.run(&["init"]).ok();
    env.run(&["config", "set", "tokenizer", "cl100k_base"]).ok();
    let mut cmd = env.cmd(&["--json", "tokens", "-"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all("<|endoftext|>".as_bytes()).expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["tokenizer"], "cl100k_base");
    assert_eq!(
        report["total_tokens"], 7,
        "special-token text counts as ordinary text"
    );
    // The count went into the project store's cache.
    let store = Store::open(&env.work().join(".ctx")).expect("open");
    let hash = ContentHash::of(b"<|endoftext|>");
    assert_eq!(
        store
            .db()
            .cached_token_count(&hash, ctx::core::TokenizerKind::Cl100kBase)
            .expect("query"),
        Some(7)
    );
}

#[test]
fn tokens_bad_input() {
    let env = Env::new();
    fs::write(env.work().join("bad.bin"), b"ok\xff\xfe").expect("write");
    fs::create_dir(env.work().join("dir")).expect("mkdir");
    env.run(&["tokens", "missing.txt"]).bad_input("missing.txt");
    env.run(&["tokens", "dir"]).bad_input("is a directory");
    env.run(&["tokens", "bad.bin"]).bad_input("not valid UTF-8");
    env.run(&["tokens", "--tokenizer", "gpt2", "bad.bin"])
        .bad_input("unknown tokenizer `gpt2`");
    let mut cmd = env.cmd(&["tokens", "x"]);
    cmd.env("CTX_TOKENIZER", "nope");
    env.run_with(cmd).bad_input("CTX_TOKENIZER");
    // Nothing here made a store.
    assert!(!env.home.join(".ctx").exists());
    assert!(!env.work().join(".ctx").exists());
}

#[test]
fn store_verify_names_a_corrupt_object_and_exits_one() {
    let env = Env::new();
    env.run(&["init"]).ok();
    let hash = {
        let store = Store::open(&env.work().join(".ctx")).expect("open");
        let hash = store
            .objects()
            .put(b"some content worth keeping")
            .expect("put");
        store.db().set_ref("test", "x", &hash).expect("ref");
        hash
    };
    env.run(&["store", "verify"]).ok();
    let path = env
        .work()
        .join(".ctx/objects/sha256")
        .join(&hash.to_hex()[..2])
        .join(&hash.to_hex()[2..]);
    let mut perms = fs::metadata(&path).expect("meta").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&path, perms).expect("chmod");
    let mut bytes = fs::read(&path).expect("read");
    bytes[0] ^= 0x20;
    fs::write(&path, bytes).expect("flip");

    let run = env.run(&["store", "verify"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(&hash.to_string()),
        "names the object: {}",
        run.stdout
    );
    let json = env.run(&["--json", "store", "verify"]);
    assert_eq!(json.code, 1);
    let report = json.json();
    assert_eq!(report["ok"], false);
    assert_eq!(report["report"]["problems"][0]["kind"], "corrupt_object");
    assert_eq!(report["report"]["problems"][0]["object"], hash.to_string());
}

#[test]
fn store_gc_reports_bytes_freed() {
    let env = Env::new();
    env.run(&["init"]).ok();
    {
        let store = Store::open(&env.work().join(".ctx")).expect("open");
        let kept = store.objects().put(b"kept").expect("put");
        store.db().set_ref("test", "kept", &kept).expect("ref");
        store.objects().put(b"garbage!").expect("put");
    }
    let young = env.run(&["--json", "store", "gc"]);
    assert_eq!(young.ok().json()["objects_in_grace"], 1);
    let gc = env.run(&["--json", "store", "gc", "--grace", "0"]);
    let report = gc.ok().json();
    assert_eq!(report["objects_removed"], 1);
    assert_eq!(report["bytes_freed"], 8);
    assert_eq!(report["objects_kept"], 1);
    env.run(&["store", "verify"]).ok();
}

#[test]
fn global_store_is_created_on_first_use_and_said_once() {
    let env = Env::new();
    let first = env.run(&["store", "verify"]);
    first.ok();
    assert!(
        first.stderr.contains("created the global store"),
        "{}",
        first.stderr
    );
    assert_eq!(first.stderr.lines().count(), 1);
    assert!(env.home.join(".ctx/state.db").is_file());
    let second = env.run(&["store", "verify"]);
    assert_eq!(second.ok().stderr, "", "said only once");
    let mut cmd = env.cmd(&["--json", "store", "verify"]);
    cmd.env("CTX_HOME", env.root.join("elsewhere"));
    let run = env.run_with(cmd);
    assert_eq!(
        run.ok().json()["store"],
        env.root.join("elsewhere").display().to_string()
    );
}

#[test]
fn discovery_walks_up_and_honours_chdir_and_store_flags() {
    let env = Env::new();
    env.run(&["init"]).ok();
    fs::create_dir_all(env.work().join("a/b")).expect("mkdir");
    let from_sub = env.run(&["--json", "-C", "a/b", "store", "verify"]);
    assert_eq!(
        from_sub.ok().json()["store"],
        env.work().join(".ctx").display().to_string()
    );
    let other = env.root.join("other");
    fs::create_dir_all(&other).expect("mkdir");
    env.run(&["-C", "../other", "init"]).ok();
    let explicit = env.run(&["--json", "--store", "../other/.ctx", "store", "verify"]);
    assert_eq!(
        explicit.ok().json()["store"],
        env.work().join("../other/.ctx").display().to_string()
    );
    env.run(&["-C", "nowhere", "store", "verify"])
        .bad_input("nowhere");
    env.run(&["--store", "../other", "store", "verify"])
        .bad_input("is not a ctx store");
}

#[test]
fn config_set_get_list_and_bad_input() {
    let env = Env::new();
    env.run(&["config", "set", "tokenizer", "approx"])
        .bad_input("ctx init");
    let global = env.run(&[
        "--json",
        "config",
        "set",
        "--global",
        "tokenizer",
        "cl100k_base",
    ]);
    global.ok();
    assert!(env.home.join(".config/ctx/config.toml").is_file());
    env.run(&["init"]).ok();
    env.run(&["config", "set", "tokenizer", "approx"]).ok();
    let get = env.run(&["--json", "config", "get", "tokenizer"]);
    let value = get.ok().json();
    assert_eq!(value["value"], "approx");
    assert_eq!(value["source"]["layer"], "project");
    let mut cmd = env.cmd(&["config", "get", "tokenizer"]);
    cmd.env("CTX_TOKENIZER", "o200k_base");
    assert_eq!(env.run_with(cmd).ok().stdout, "o200k_base\n");
    let list = env.run(&["--compact", "config", "list"]);
    assert_eq!(list.ok().stdout.lines().count(), 1, "compact is one line");

    let before = snapshot(&env.work().join(".ctx"));
    env.run(&["config", "get", "nope"])
        .bad_input("unknown config key `nope`");
    env.run(&["config", "set", "tokenizer", "gpt2"])
        .bad_input("unknown tokenizer");
    env.run(&["config", "set", "nope", "1"]).bad_input(
        "known keys: budget, cmd_timeout_secs, hook.deadline_ms, hook.max_chars, hook.max_files, http.body_timeout_secs, http.max_body_bytes, http.max_sessions, http.session_idle_secs, max_file_bytes, mcp.max_tokens, mcp.tools, store.metadata, store.objects, tokenizer",
    );
    env.run(&["config", "set", "store.objects", "gs://bucket"])
        .bad_input("expected postgres://…, s3://BUCKET/PREFIX");
    env.run(&["config", "set", "mcp.tools", "ctx_search, Bad Name"])
        .bad_input("expected core, all, or tool names");
    env.run(&["mcp", "--tools", "ctx_search,nope"])
        .bad_input("there is no tool `nope`");
    // `ctx serve` builds MCP sessions on demand, but refuses a bad set before it listens.
    fs::create_dir_all(env.work().join("ws/alpha")).expect("mkdir");
    env.run(&[
        "serve",
        "--workspaces",
        "ws",
        "--addr",
        "127.0.0.1:0",
        "--tools",
        "nope",
    ])
    .bad_input("there is no tool `nope`");
    assert_eq!(
        snapshot(&env.work().join(".ctx")),
        before,
        "bad input leaves the store as it was"
    );

    fs::write(env.work().join(".ctx/config.toml"), "tokenizer = [").expect("write");
    env.run(&["config", "list"]).bad_input("config.toml");
}

#[test]
fn a_store_from_a_newer_ctx_is_refused() {
    let env = Env::new();
    env.run(&["init"]).ok();
    {
        let store = Store::open(&env.work().join(".ctx")).expect("open");
        store
            .sqlite()
            .expect("a local store")
            .connection()
            .pragma_update(None, "user_version", 999)
            .expect("bump");
    }
    env.run(&["store", "verify"]).bad_input("upgrade ctx");
}

#[test]
fn a_closed_stdout_pipe_exits_quietly() {
    let env = Env::new();
    let mut child = env
        .cmd(&["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read");
    assert!(status.success(), "exit {status:?}, stderr {stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn version_help_and_completions() {
    let env = Env::new();
    let version = env.run(&["--version"]);
    assert_eq!(
        version.ok().stdout,
        format!("ctx {}\n", env!("CARGO_PKG_VERSION"))
    );
    let help = env.run(&["tokens", "--help"]);
    assert!(help.ok().stdout.contains("Examples:"));
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let run = env.run(&["completions", shell]);
        assert!(run.ok().stdout.contains("ctx"), "{shell}");
    }
    let bad = env.run(&["completions", "tcsh"]);
    assert_eq!(bad.code, 2);
}
