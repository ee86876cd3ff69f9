//! Packs end to end: seed 000's acceptance scripts (M1, M2, M4), determinism, bad input.

use std::fs;
use std::path::Path;

use crate::common::{Env, git, snapshot, write_files};

/// A small Rust project in `dir`: README, src with a 60-line main.rs, docs with nested
/// Markdown, committed on `main` with a change on a feature commit.
fn fixture_repo(dir: &Path) {
    let main_rs = (1..=60).fold(String::new(), |mut text, i| {
        text.push_str("// line ");
        text.push_str(&i.to_string());
        text.push('\n');
        text
    });
    write_files(
        dir,
        &[
            ("README.md", "# Fixture\n\nA small project.\n"),
            ("src/main.rs", &main_rs),
            (
                "src/lib.rs",
                "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
            ),
            ("docs/guide.md", "# Guide\n\nUse it.\n"),
            ("docs/deep/more.md", "# More\n"),
            (".gitignore", "target/\n"),
            ("target/debug/junk.rs", "ignored\n"),
        ],
    );
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "initial"]);
    fs::write(
        dir.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a.wrapping_add(b)\n}\n",
    )
    .expect("edit");
    git(dir, &["commit", "-q", "-am", "wrapping add"]);
}

#[test]
fn seed_000_m1_packs_and_persistence() {
    let env = Env::new();
    fixture_repo(&env.work());
    env.run(&["pack", "create", "test-pack"]).ok();
    let list = env.run(&["pack", "list"]);
    assert!(list.ok().stdout.contains("test-pack"));
    env.run(&["pack", "add", "test-pack", "file:./README.md"])
        .ok();
    env.run(&["pack", "add", "test-pack", "file:./src/main.rs#L1-L50"])
        .ok();
    let md = env.run(&["pack", "add", "test-pack", "md_dir:./docs", "--recursive"]);
    assert!(md.ok().stdout.contains("2 file(s) match"), "{}", md.stdout);
    let glob = env.run(&["pack", "add", "test-pack", "glob:**/*.rs"]);
    assert!(
        glob.ok().stdout.contains("2 file(s) match"),
        "target/ is ignored: {}",
        glob.stdout
    );
    env.run(&["pack", "add", "test-pack", "text:Hello world"])
        .ok();
    let show = env.run(&["--json", "pack", "show", "test-pack"]);
    let view = show.ok().json();
    let artifacts = view["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 5);
    let kinds: Vec<&str> = artifacts
        .iter()
        .map(|a| a["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["file", "file_range", "md_dir", "glob", "text"]);
    let text_id = artifacts[4]["artifact_id"].as_str().expect("id").to_owned();
    env.run(&["pack", "remove", "test-pack", &text_id]).ok();
    assert_eq!(
        env.run(&["--json", "pack", "show", "test-pack"]).json()["artifacts"]
            .as_array()
            .expect("a")
            .len(),
        4
    );
    // Persistence, with DESIGN.md's names: the global store's database and object directory.
    assert!(env.home.join(".ctx/state.db").is_file());
    assert!(env.home.join(".ctx/objects/sha256").is_dir());
}

#[test]
fn seed_000_m2_render_preview_snapshot() {
    let env = Env::new();
    fixture_repo(&env.work());
    env.run(&["pack", "create", "test-pack"]).ok();
    env.run(&["pack", "add", "test-pack", "file:./README.md"])
        .ok();
    env.run(&["pack", "add", "test-pack", "file:./src/main.rs#L1-L50"])
        .ok();
    env.run(&["pack", "add", "test-pack", "glob:**/*.rs"]).ok();

    let tokens = env.run(&["pack", "preview", "test-pack", "--tokens"]);
    let text = &tokens.ok().stdout;
    assert!(text.contains("test-pack: 4 included"), "{text}");
    assert!(text.contains("src/main.rs (lines 1-50)"), "{text}");

    let payload = env.run(&["pack", "preview", "test-pack", "--show-payload"]);
    assert!(
        payload.ok().stdout.starts_with("# Packed files\n"),
        "{}",
        payload.stdout
    );
    // Headers name the path and lines, not the content hash (that is in the report).
    assert!(!payload.stdout.contains("sha256:"), "{}", payload.stdout);
    assert!(payload.stdout.contains("# Summary\n"), "{}", payload.stdout);
    let range = payload
        .stdout
        .split("src/main.rs (lines 1-50)\n")
        .nth(1)
        .expect("the range block");
    let range = range.split("\n## ").next().expect("block");
    assert!(
        range.contains("// line 50\n") && !range.contains("// line 51\n"),
        "{range}"
    );

    env.run(&["pack", "create", "styles"]).ok();
    env.run(&["pack", "add", "styles", "text:Use Rust idioms"])
        .ok();
    let multi = env.run(&[
        "pack",
        "preview",
        "test-pack",
        "--with-pack",
        "styles",
        "--show-payload",
    ]);
    assert!(multi.ok().stdout.contains("Use Rust idioms"));

    let snap = env.run(&["--json", "pack", "snapshot", "test-pack", "--name", "v1.0"]);
    let snapshot_id = snap.ok().json()["snapshot"]["snapshot_id"]
        .as_str()
        .expect("id")
        .to_owned();

    // Reproducibility: two previews are byte-identical, and the snapshot renders its bytes.
    let out1 = env.run(&["pack", "preview", "test-pack", "--show-payload"]);
    let out2 = env.run(&["pack", "preview", "test-pack", "--show-payload"]);
    assert_eq!(out1.ok().stdout, out2.ok().stdout);
    let stored = env.run(&["pack", "render", "--snapshot", "v1.0"]);
    assert_eq!(stored.ok().stdout, out1.stdout);
    // Streamed to a file (outside the tree, which the glob would list): the same bytes, and
    // the summary names them by hash. An existing file is replaced whole.
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("out.md");
    fs::write(&target, "x".repeat(100_000)).expect("old file");
    let target_arg = target.to_str().expect("utf-8 path");
    let written = env.run(&["--json", "pack", "render", "test-pack", "-o", target_arg]);
    let summary = written.ok().json();
    let file = fs::read(&target).expect("payload file");
    assert_eq!(String::from_utf8_lossy(&file), out1.stdout);
    assert_eq!(
        summary["payload_hash"],
        format!("sha256:{}", ctx::core::ContentHash::of(&file).to_hex())
    );
    assert_eq!(summary["output"], target_arg);
    // A render that fails (no such pack) leaves the file as it was.
    env.run(&["pack", "render", "nosuch", "-o", target_arg])
        .bad_input("nosuch");
    assert_eq!(fs::read(&target).expect("payload file"), file);
    let by_prefix = env.run(&[
        "pack",
        "render",
        "--snapshot",
        &snapshot_id["sha256:".len()..][..10],
    ]);
    assert_eq!(by_prefix.ok().stdout, out1.stdout);
    env.run(&["pack", "verify", "v1.0"]).ok();
    let snapshots = env.run(&["--json", "pack", "snapshots"]);
    assert_eq!(snapshots.ok().json()[0]["label"], "v1.0");

    // Drift: change a file, verify names it and exits 1.
    fs::write(env.work().join("src/lib.rs"), "pub fn changed() {}\n").expect("edit");
    let drift = env.run(&["--json", "pack", "verify", "v1.0"]);
    assert_eq!(drift.code, 1, "{}", drift.stdout);
    let report = drift.json();
    assert_eq!(report["identical"], false);
    assert_eq!(report["drift"][0]["kind"], "content_changed");
    assert!(
        report["drift"][0]["item"]
            .as_str()
            .expect("item")
            .ends_with("src/lib.rs")
    );
    fs::remove_file(env.work().join("README.md")).expect("rm");
    let gone = env.run(&["pack", "verify", "v1.0"]);
    assert_eq!(gone.code, 1);
    assert!(gone.stdout.contains("gone (missing)"), "{}", gone.stdout);
}

#[test]
fn seed_000_m4_hardening() {
    let env = Env::new();
    fixture_repo(&env.work());
    fs::write(env.work().join(".env"), "API_KEY=abc\n").expect("write");
    env.run(&["pack", "create", "test"]).ok();
    env.run(&["pack", "add", "test", "file:.env"])
        .bad_input("--allow-sensitive");
    env.run(&["pack", "add", "test", "file:.env", "--allow-sensitive"])
        .ok();

    env.run(&["pack", "create", "feature"]).ok();
    env.run(&[
        "pack",
        "add",
        "feature",
        "git:diff --base=main~1 --head=HEAD",
    ])
    .ok();
    env.run(&["pack", "add", "feature", "git:diff --base=main --head=HEAD"])
        .ok();
    let diff = env.run(&["pack", "preview", "feature", "--show-payload"]);
    assert!(
        diff.ok().stdout.contains("+    a.wrapping_add(b)"),
        "{}",
        diff.stdout
    );

    env.run(&["pack", "create", "debug"]).ok();
    env.run(&["pack", "add", "debug", "cmd:ls -la", "--capture"])
        .ok();
    let cmd = env.run(&["pack", "preview", "debug", "--show-payload"]);
    assert!(
        cmd.ok().stdout.contains("README.md") && cmd.stdout.contains("[exit code: 0]"),
        "{}",
        cmd.stdout
    );

    env.run(&["config", "set", "--global", "budget", "50"]).ok();
    env.run(&["pack", "create", "large"]).ok();
    env.run(&["pack", "add", "large", "glob:**/*.rs"]).ok();
    let large = env.run(&["--json", "pack", "preview", "large", "--tokens"]);
    let report = large.ok().json();
    assert_eq!(report["budget_tokens"], 50, "uses the config default");
    assert!(report["tokens_used"].as_u64().expect("n") <= 50);
    assert_eq!(report["excluded"][0]["reason"], "over_budget");
}

#[test]
fn rendering_is_identical_across_directories_and_locales() {
    let env = Env::new();
    fixture_repo(&env.work());
    fs::write(env.work().join("docs/İstanbul.md"), "# İ ı i I\n").expect("write");
    fs::write(env.work().join("docs/Zeta.md"), "z\n").expect("write");
    fs::write(env.work().join("docs/alpha.md"), "a\n").expect("write");
    env.run(&["init"]).ok();
    env.run(&["pack", "create", "p"]).ok();
    env.run(&["pack", "add", "p", "glob:**/*"]).ok();
    let render = |dir: &str, locale: &str| {
        let mut cmd = env.cmd(&[
            "-C",
            dir,
            "--json",
            "pack",
            "preview",
            "p",
            "--show-payload",
        ]);
        cmd.env("LC_ALL", locale).env("LANG", locale);
        let run = env.run_with(cmd);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout
    };
    let base = render(".", "C");
    for (dir, locale) in [
        ("docs", "C"),
        (".", "tr_TR.UTF-8"),
        ("src", "tr_TR.UTF-8"),
        ("docs/deep", "de_DE.UTF-8"),
    ] {
        assert_eq!(render(dir, locale), base, "{dir} {locale}");
    }
    let value: serde_json::Value = serde_json::from_str(&base).expect("json");
    let paths: Vec<&str> = value["included"]
        .as_array()
        .expect("a")
        .iter()
        .map(|i| i["path"].as_str().expect("p"))
        .collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    assert_eq!(paths, sorted, "byte order");
    assert!(paths.contains(&"docs/İstanbul.md") && paths.contains(&"docs/Zeta.md"));
}

#[test]
fn pack_bad_input() {
    let env = Env::new();
    fixture_repo(&env.work());
    env.run(&["init"]).ok();
    env.run(&["pack", "create", "p"]).ok();
    let store = env.work().join(".ctx");
    let before = snapshot(&store);
    let cases: &[(&[&str], &str)] = &[
        (&["pack", "add", "p", "nope:x"], "unknown source scheme"),
        (
            &["pack", "add", "p", "file:README.md#L50-L10"],
            "ends before it starts",
        ),
        (&["pack", "add", "p", "file:README.md#Lx"], "not a number"),
        (&["pack", "add", "p", "file:missing.md"], "does not exist"),
        (&["pack", "add", "p", "file:src"], "is a directory"),
        (
            &["pack", "add", "nope", "file:README.md"],
            "no pack named `nope`",
        ),
        (&["pack", "create", "p"], "already exists"),
        (&["pack", "create", "bad name"], "invalid pack name"),
        (&["pack", "remove", "p", "abc123"], "has no artifact"),
        (
            &["pack", "add", "p", "git:diff --base=nosuchrev"],
            "unknown revision",
        ),
        (
            &["pack", "add", "p", "file:../outside.md"],
            "outside the workspace",
        ),
        (&["pack", "preview", "nope"], "no pack named"),
        (&["pack", "verify", "nosuch"], "no snapshot"),
        (&["pack", "render", "--snapshot", "nosuch"], "no snapshot"),
        (
            &["pack", "preview", "p", "--style", "html"],
            "unknown style",
        ),
    ];
    fs::write(env.root.join("outside.md"), "x").expect("write");
    for (args, needle) in cases {
        let run = env.run(args);
        if args[1] == "preview" && args.len() > 4 {
            assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
            assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
            continue;
        }
        run.bad_input(needle);
    }
    assert_eq!(
        snapshot(&store),
        before,
        "bad input leaves the store as it was"
    );
    let dup = env.run(&["pack", "add", "p", "file:README.md"]);
    dup.ok();
    env.run(&["pack", "add", "p", "file:README.md"])
        .bad_input("already has this source");

    // A symlink loop is refused at add time.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("loop", env.work().join("loop")).expect("symlink");
        env.run(&["pack", "add", "p", "file:loop"])
            .bad_input("symlink loop");
    }
    // A glob matching nothing is a warning, not an error.
    let empty = env.run(&["pack", "add", "p", "glob:**/*.nothing"]);
    assert!(
        empty.ok().stderr.contains("matches no files"),
        "{}",
        empty.stderr
    );
}

#[test]
fn unreadable_content_is_left_out_with_a_reason() {
    let env = Env::new();
    env.run(&["init"]).ok();
    write_files(&env.work(), &[("ok.txt", "fine\n")]);
    fs::write(env.work().join("latin1.txt"), b"caf\xe9\n").expect("write");
    fs::write(env.work().join("image.bin"), b"\x89PNG\r\n\x1a\n\0\0").expect("write");
    let huge = fs::File::create(env.work().join("huge.log")).expect("create");
    huge.set_len(2 * 1024 * 1024 * 1024)
        .expect("sparse 2 GB file");
    env.run(&["config", "set", "cmd_timeout_secs", "1"]).ok();
    env.run(&["pack", "create", "p"]).ok();
    env.run(&["pack", "add", "p", "glob:*"]).ok();
    env.run(&["pack", "add", "p", "cmd:sleep 5"]).ok();
    env.run(&["pack", "add", "p", "cmd:echo out; echo err >&2; exit 3"])
        .ok();
    let started = std::time::Instant::now();
    let run = env.run(&["--json", "pack", "preview", "p", "--show-payload"]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "the timeout was honoured"
    );
    let report = run.ok().json();
    let reason = |path: &str| {
        report["excluded"]
            .as_array()
            .expect("excluded")
            .iter()
            .find(|e| e["path"] == path)
            .map(|e| e["reason"].as_str().expect("reason").to_owned())
    };
    assert_eq!(reason("latin1.txt").as_deref(), Some("not_utf8"));
    assert_eq!(reason("image.bin").as_deref(), Some("binary"));
    assert_eq!(reason("huge.log").as_deref(), Some("too_large"));
    let payload = report["payload"].as_str().expect("payload");
    assert!(payload.contains("fine\n"));
    assert!(
        payload.contains("[timed out after 1s; killed]"),
        "{payload}"
    );
    assert!(
        payload.contains("out\n[stderr]\nerr\n[exit code: 3]"),
        "{payload}"
    );
    let notes: Vec<String> = report["included"]
        .as_array()
        .expect("included")
        .iter()
        .flat_map(|i| i["notes"].as_array().cloned().unwrap_or_default())
        .map(|n| n.as_str().expect("note").to_owned())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("exited with code 3")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("timed out")), "{notes:?}");
}

#[test]
fn secrets_are_redacted_and_reported_without_the_secret() {
    let env = Env::new();
    env.run(&["init"]).ok();
    let key = "AKIA4QWERTYUIOPASDFG";
    // A URL password and a password assignment of the kind people type, not only tokens.
    let (url_password, password) = ("hunter2secret", "S3cr3tP@ssw0rd!");
    write_files(
        &env.work(),
        &[(
            "config.py",
            &format!(
                "AWS_ACCESS_KEY_ID = \"{key}\"\nregion = \"eu\"\n\
                 DATABASE_URL = \"postgresql://admin:{url_password}@db.example.com/app\"\n\
                 password = \"{password}\"\n"
            ),
        )],
    );
    env.run(&["pack", "create", "p"]).ok();
    env.run(&["pack", "add", "p", "file:config.py"]).ok();
    let run = env.run(&["--json", "pack", "preview", "p", "--show-payload"]);
    let out = &run.ok().stdout;
    for secret in [key, url_password, password] {
        assert!(!out.contains(secret), "the secret never appears: {out}");
    }
    let report = run.json();
    // Each redaction says where and which rule, how often, and nothing else.
    let redactions = report["redactions"].as_array().expect("redactions");
    assert_eq!(redactions.len(), 3, "{out}");
    for redaction in redactions {
        let keys: Vec<&str> = redaction
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["artifact_id", "count", "line", "path", "rule"],
            "{out}"
        );
    }
    assert_eq!(redactions[1]["rule"], "URL_PASSWORD");
    assert_eq!(redactions[2]["rule"], "PASSWORD_ASSIGNMENT");
    assert!(
        report["payload"]
            .as_str()
            .expect("payload")
            .contains("[REDACTED:"),
        "{out}"
    );
    assert_eq!(report["redactions"][0]["path"], "config.py");
    assert_eq!(report["redactions"][0]["line"], 1);
    let human = env.run(&["pack", "preview", "p"]);
    assert!(human.ok().stdout.contains("redacted:"));
    for secret in [key, url_password, password] {
        assert!(!human.stdout.contains(secret) && !human.stderr.contains(secret));
    }
}

/// A line range inside a key is still the key: a pack source `file:keys.go#L6-L10`, whose
/// range starts below the key's BEGIN line, renders none of its body, in render, preview and
/// a snapshot.
#[test]
fn a_line_range_that_cuts_a_key_renders_none_of_it() {
    let env = Env::new();
    env.run(&["init"]).ok();
    let body: Vec<String> = (0..20)
        .map(|i| format!("MIIEow{i:02}AAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbtPkZc4dd7LH6Hy"))
        .collect();
    let text = format!(
        "package auth\n\n// The key.\nconst key = `\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n`\n",
        body.join("\n")
    );
    write_files(&env.work(), &[("src/auth/keys.go", &text)]);
    env.run(&["pack", "create", "p"]).ok();
    env.run(&["pack", "add", "p", "file:src/auth/keys.go#L6-L10"])
        .ok();
    env.run(&["pack", "add", "p", "file:src/auth/keys.go#L24-L26"])
        .ok();
    env.run(&["pack", "snapshot", "p", "--name", "v1"]).ok();
    for args in [
        &["pack", "render", "p"][..],
        &["pack", "preview", "p", "--show-payload"],
        &["pack", "render", "--snapshot", "v1"],
    ] {
        let run = env.run(args);
        let out = run.ok().stdout.clone();
        for line in &body {
            assert!(!out.contains(line.as_str()), "{args:?}:\n{out}");
        }
        assert!(out.contains("[REDACTED:"), "{args:?}:\n{out}");
    }
}

/// Packs in the global store keep the directory they were made for as their root: sources
/// and headers are relative to it, whichever directory renders them.
#[test]
fn global_store_packs_render_without_absolute_paths_from_any_directory() {
    let env = Env::new();
    let project = env.work().join("proj");
    write_files(
        &project,
        &[
            ("src/a.rs", "fn a() {}\n"),
            ("src/b.rs", "fn b() {}\n"),
            ("README.md", "# P\n"),
        ],
    );
    let elsewhere = env.work().join("elsewhere");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    let in_dir = |dir: &Path, args: &[&str]| {
        let mut cmd = env.cmd(args);
        cmd.current_dir(dir);
        env.run_with(cmd)
    };
    // From a directory outside the pack's, the global store shows that directory's packs
    // only (workspaces that share it do not see each other); naming the store shows all.
    let store = env.home.join(".ctx");
    let store = store.to_str().expect("utf8");
    let named = |args: &[&str]| -> Vec<String> {
        ["--store", store]
            .iter()
            .chain(args)
            .map(|a| (*a).to_owned())
            .collect()
    };
    in_dir(&project, &["pack", "create", "g"]).ok();
    in_dir(&project, &["pack", "add", "g", "glob:src/*.rs"]).ok();
    in_dir(
        &project.join("src"),
        &["pack", "add", "g", "file:../README.md"],
    )
    .ok();
    in_dir(&elsewhere, &["pack", "show", "g"]).bad_input("no pack named `g`");
    let args = named(&["--json", "pack", "show", "g"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let show = in_dir(&elsewhere, &args);
    let uris: Vec<String> = show.ok().json()["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .map(|a| a["uri"].as_str().expect("uri").to_owned())
        .collect();
    assert_eq!(uris, ["glob:src/*.rs", "file:README.md"]);
    let from_project = in_dir(&project, &["pack", "render", "g"]);
    let args = named(&["pack", "render", "g"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let from_elsewhere = in_dir(&elsewhere, &args);
    assert_eq!(from_project.ok().stdout, from_elsewhere.ok().stdout);
    let payload = &from_project.stdout;
    assert!(payload.contains("## src/a.rs (1 line)\n"), "{payload}");
    assert!(payload.contains("## README.md (1 line)\n"), "{payload}");
    let absolute = env.root.to_str().expect("utf8");
    assert!(!payload.contains(absolute), "{payload}");
    assert!(
        !payload.contains("## /") && !payload.contains("## tmp/"),
        "{payload}"
    );
    // Named from elsewhere, the same file is the same source; one outside the pack's
    // directory is refused with the reason.
    let args = named(&["pack", "add", "g", "file:../proj/README.md"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    in_dir(&elsewhere, &args).bad_input("already has this source");
    fs::write(elsewhere.join("x.md"), "x\n").expect("write");
    let args = named(&["pack", "add", "g", "file:x.md"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    in_dir(&elsewhere, &args).bad_input("outside");
}
