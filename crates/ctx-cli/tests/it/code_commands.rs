//! End-to-end tests of `status`, `map`, `summarize`, `search`, `related` and `diff-context`:
//! bad inputs (clear one-line errors, exit 2), "nothing found" (exit 1), and git-backed
//! answers on repositories built here with fixed dates.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::Env;

fn write(root: &Path, rel: &str, body: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, body).expect("write");
}

/// Runs git in `dir` with a cleared environment and fixed identity and dates.
fn git(dir: &Path, home: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05Z")
        .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05Z")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn project() -> Env {
    let env = Env::new();
    let w = env.work();
    write(&w, "src/lib.rs", b"//! Lib.\npub mod util;\n\n/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    util::check(a);\n    a + b\n}\n");
    write(
        &w,
        "src/util.rs",
        b"pub fn check(x: i32) -> bool {\n    x > 0\n}\n",
    );
    write(&w, "README.md", b"# demo\n");
    write(&w, "Cargo.toml", b"[package]\nname = \"demo\"\n");
    env.run(&["init"]).ok();
    env
}

#[test]
fn nonexistent_paths_are_named() {
    let env = project();
    env.run(&["summarize", "nope.rs"])
        .bad_input("`nope.rs` does not exist");
    env.run(&["map", "nope"]).bad_input("`nope` does not exist");
    env.run(&["search", "x", "nope"])
        .bad_input("`nope` does not exist");
    env.run(&["related", "nope.rs"])
        .bad_input("`nope.rs` does not exist");
    env.run(&["related", "src"]).bad_input("is a directory");
}

/// `search`, `summarize` and `map` resolve paths through the workspace's sandbox, as `read`
/// does: nothing outside the project is read or named, and a FIFO is refused, not waited on.
#[test]
fn code_commands_stay_inside_the_project() {
    let env = project();
    let w = env.work();
    let outside = env.root.join("outside");
    write(&outside, "secret.rs", b"pub fn hidden_secret_marker() {}\n");
    std::os::unix::fs::symlink(outside.join("secret.rs"), w.join("src/link.rs")).expect("link");
    std::os::unix::fs::symlink(&outside, w.join("out")).expect("dir link");
    let fifo = w.join("pipe.rs");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let absolute = outside.join("secret.rs").display().to_string();
    let out_dir = outside.display().to_string();
    for args in [
        vec!["search", "hidden_secret_marker", absolute.as_str()],
        vec!["search", "hidden_secret_marker", "../outside"],
        vec!["search", "hidden_secret_marker", "out"],
        vec!["search", "x", "pipe.rs"],
        vec!["summarize", absolute.as_str()],
        vec!["summarize", "../outside/secret.rs"],
        vec!["summarize", "src/link.rs"],
        vec!["summarize", "pipe.rs"],
        vec!["map", out_dir.as_str()],
        vec!["map", ".."],
        vec!["map", "out"],
    ] {
        // A FIFO is refused at once: opening one for reading would wait for a writer.
        let run = env.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(
            !run.stdout.contains("hidden_secret_marker")
                && !run.stderr.contains("hidden_secret_marker"),
            "{args:?}: {}",
            run.stdout
        );
        assert!(
            run.stderr.contains("outside the workspace")
                || run.stderr.contains("symlink")
                || run.stderr.contains("FIFO"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // The project itself is searched as before, without the link out.
    let run = env.run(&["search", "check", "."]);
    assert!(run.ok().stdout.contains("src/util.rs"), "{}", run.stdout);
}

#[test]
fn binary_and_unsupported_files() {
    let env = project();
    write(&env.work(), "blob.rs", b"\0\x01\x02binary");
    env.run(&["summarize", "blob.rs"])
        .bad_input("`blob.rs` is a binary file");
    env.run(&["summarize", "README.md"])
        .bad_input("not in a supported language");
    // A directory run skips them and says so, without failing.
    let run = env.run(&["--json", "summarize", "."]);
    let report = run.ok().json();
    let files: Vec<&str> = report["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("p"))
        .collect();
    assert_eq!(files, ["src/lib.rs", "src/util.rs"]);
    let skipped: Vec<(&str, &str)> = report["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .map(|s| {
            (
                s["path"].as_str().expect("p"),
                s["reason"].as_str().expect("r"),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            ("Cargo.toml", "unsupported language"),
            ("README.md", "unsupported language"),
            ("blob.rs", "binary file")
        ]
    );
    let human = env.run(&["summarize", "."]);
    human.ok();
    assert!(
        human.stderr.contains("skipped blob.rs: binary file"),
        "{}",
        human.stderr
    );
}

#[test]
fn syntax_errors_give_partial_symbols() {
    let env = project();
    write(
        &env.work(),
        "broken.py",
        b"def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass After:\n    pass\n",
    );
    let answer = env.run(&["--json", "summarize", "broken.py"]).ok().json();
    let report = &answer["files"][0];
    assert_eq!(report["has_errors"], true);
    let names: Vec<&str> = report["symbols"]
        .as_array()
        .expect("s")
        .iter()
        .map(|s| s["name"].as_str().expect("n"))
        .collect();
    assert!(names.contains(&"ok"), "{names:?}");
    assert!(names.contains(&"After"), "{names:?}");
    let human = env.run(&["summarize", "broken.py"]);
    assert!(
        human.ok().stdout.contains("syntax errors"),
        "{}",
        human.stdout
    );
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(secs_ago);
    fs::File::options()
        .write(true)
        .open(path)
        .expect("open")
        .set_modified(when)
        .expect("mtime");
}

fn symbol_names(report: &serde_json::Value) -> Vec<String> {
    report["files"]
        .as_array()
        .expect("files")
        .iter()
        .flat_map(|f| f["symbols"].as_array().expect("symbols").iter())
        .map(|s| s["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn warm_summaries_follow_file_changes_the_stamps_reveal() {
    let env = project();
    let w = env.work();
    write(&w, "src/a.rs", b"fn alpha() {}\n");
    set_mtime(&w.join("src/a.rs"), 100);
    let first = env.run(&["--json", "summarize", "src"]).ok().json();
    assert!(symbol_names(&first).contains(&"alpha".to_owned()));
    // Same size, another (settled) modification time: read again.
    write(&w, "src/a.rs", b"fn bravo() {}\n");
    set_mtime(&w.join("src/a.rs"), 50);
    let second = env.run(&["--json", "summarize", "src"]).ok().json();
    let names = symbol_names(&second);
    assert!(names.contains(&"bravo".to_owned()), "{names:?}");
    assert!(!names.contains(&"alpha".to_owned()), "{names:?}");
    // A fresh modification time (not yet trusted) and another size.
    write(&w, "src/a.rs", b"fn charlie() {}\n");
    let third = env.run(&["--json", "summarize", "src"]).ok().json();
    assert!(symbol_names(&third).contains(&"charlie".to_owned()));
    let again = env.run(&["--json", "summarize", "src"]).ok().json();
    assert_eq!(symbol_names(&third), symbol_names(&again));
}

#[test]
fn invalid_regex_points_at_the_error_and_no_match_exits_one() {
    let env = project();
    let run = env.run(&["search", "--regex", "fn (a"]);
    run.bad_input("invalid regex: unclosed group at column 4");
    // Literal by default: the same text is fine and simply not found.
    let none = env.run(&["search", "fn (a"]);
    assert_eq!(none.code, 1, "{}", none.stderr);
    assert_eq!(none.stdout, "");
    assert_eq!(none.stderr, "ctx: no matches\n");
    let found = env.run(&["search", "a + b"]);
    assert_eq!(found.ok().stdout, "src/lib.rs:7:5:     a + b\n");
    let capped = env.run(&[
        "--json",
        "search",
        "--regex",
        "\\bfn\\b",
        "--max-results",
        "1",
    ]);
    let report = capped.ok().json();
    assert_eq!(report["total"], 2);
    assert_eq!(report["truncated"], true);
    assert_eq!(report["results"].as_array().expect("r").len(), 1);
}

#[test]
fn search_context_symbol_and_caller_human_output() {
    let env = project();
    let run = env.run(&["search", "--caller", "check", "--context", "1"]);
    assert_eq!(
        run.ok().stdout,
        "src/lib.rs-5-pub fn add(a: i32, b: i32) -> i32 {\nsrc/lib.rs:6:5: util::check(a);  (in add)\nsrc/lib.rs-7-    a + b\n--\n"
    );
    let symbol = env.run(&["search", "--symbol", "check"]);
    assert_eq!(
        symbol.ok().stdout,
        "src/util.rs:1:1: [fn] pub fn check(x: i32) -> bool\n"
    );
    assert!(
        !symbol.stderr.contains("no definition"),
        "{}",
        symbol.stderr
    );
    // No definition by that exact name: said on stderr, not passed off as one.
    let loose = env.run(&["search", "--symbol", "chec"]);
    assert_eq!(
        loose.ok().stdout,
        "src/util.rs:1:1: [fn] pub fn check(x: i32) -> bool\n"
    );
    assert!(
        loose
            .stderr
            .contains("no definition named `chec`; showing 1 whose names contain it"),
        "{}",
        loose.stderr
    );
    let none = env.run(&["search", "--symbol", "nowhere_defined"]);
    assert_eq!(none.code, 1);
    assert!(
        none.stderr
            .contains("no definition named `nowhere_defined`"),
        "{}",
        none.stderr
    );
}

#[test]
fn map_lists_files_symbols_and_honours_budget() {
    let env = project();
    let map = env.run(&["map"]);
    assert_eq!(
        map.ok().stdout,
        ". (4 files, 14 lines)\n  Cargo.toml (2 lines)\n  README.md (1 lines)\n  src/ (2 files, 11 lines)\n    lib.rs (rust, 8 lines): fn add\n    util.rs (rust, 3 lines): fn check\n"
    );
    let json = env.run(&["--json", "map", "--budget", "20"]).ok().json();
    assert_eq!(json["truncated"], true);
    let depth = env.run(&["--json", "map", "--depth", "1"]).ok().json();
    let paths: Vec<&str> = depth["entries"]
        .as_array()
        .expect("e")
        .iter()
        .map(|e| e["path"].as_str().expect("p"))
        .collect();
    assert_eq!(paths, ["Cargo.toml", "README.md", "src"]);
    env.run(&["map", "src/lib.rs"]).bad_input("not a directory");
}

#[test]
fn outside_git_status_degrades_and_diff_context_refuses() {
    let env = project();
    let status = env.run(&["--json", "status"]).ok().json();
    assert_eq!(status["project_name"], "demo");
    assert_eq!(status["project_type"], "rust");
    assert_eq!(status["is_git_repo"], false);
    assert!(
        status["note"]
            .as_str()
            .expect("note")
            .contains("not a git repository")
    );
    let human = env.run(&["status"]);
    assert!(
        human.ok().stdout.contains("not a git repository"),
        "{}",
        human.stdout
    );
    env.run(&["diff-context"])
        .bad_input("is not inside a git repository");
    let related = env.run(&["--json", "related", "src/util.rs"]);
    let report = related.ok().json();
    assert_eq!(report["imported_by"][0]["path"], "src/lib.rs");
    assert_eq!(report["co_changed"], serde_json::json!([]));
    assert!(
        related.stderr.contains("not a git repository"),
        "{}",
        related.stderr
    );
}

#[test]
fn git_status_co_change_and_diff_context() {
    let env = project();
    let w = env.work();
    git(&w, &env.home, &["init", "-q"]);
    git(&w, &env.home, &["add", "-A"]);
    git(&w, &env.home, &["commit", "-q", "-m", "first"]);
    write(
        &w,
        "src/util.rs",
        b"pub fn check(x: i32) -> bool {\n    x >= 0\n}\n",
    );
    write(&w, "src/lib.rs", b"//! Lib.\npub mod util;\n\n/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    util::check(b);\n    a + b\n}\n");
    git(&w, &env.home, &["commit", "-q", "-am", "second"]);
    write(&w, "src/lib.rs", b"//! Lib.\npub mod util;\n\n/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    util::check(b);\n    a - b\n}\n");
    write(&w, "new.txt", b"n\n");

    let status = env.run(&["--json", "status"]).ok().json();
    assert_eq!(status["branch"], "main");
    assert_eq!(status["is_git_repo"], true);
    assert_eq!(
        (
            status["modified_count"].as_u64(),
            status["untracked_count"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(status["recent_commits"][0]["message"], "second");
    assert_eq!(status["recent_commits"][0]["time"], "2024-01-02T03:04:05Z");
    assert_eq!(status["diff_stats"], serde_json::json!([1, 1]));
    assert_eq!(status["hot_directories"][0]["path"], "src");

    let related = env.run(&["--json", "related", "src/util.rs"]).ok().json();
    assert_eq!(related["co_changed"][0]["path"], "src/lib.rs");
    assert_eq!(related["co_changed"][0]["reason"], "2 commits together");

    let diff = env.run(&["diff-context"]);
    assert_eq!(
        diff.ok().stdout,
        "diff src/lib.rs (modified)\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -4,5 +4,5 @@ function add\n /// Adds.\n pub fn add(a: i32, b: i32) -> i32 {\n     util::check(b);\n-    a + b\n+    a - b\n }\n"
    );
    let between = env
        .run(&[
            "--json",
            "diff-context",
            "--base",
            "HEAD~1",
            "--head",
            "HEAD",
        ])
        .ok()
        .json();
    let paths: Vec<&str> = between["files"]
        .as_array()
        .expect("f")
        .iter()
        .map(|f| f["path"].as_str().expect("p"))
        .collect();
    assert_eq!(paths, ["src/lib.rs", "src/util.rs"]);
    assert_eq!(between["files"][1]["hunks"][0]["scope"]["name"], "check");
    env.run(&["diff-context", "--base", "nope"])
        .bad_input("unknown revision `nope`");
    // No difference: exit 1.
    git(&w, &env.home, &["commit", "-q", "-am", "third"]);
    let clean = env.run(&["diff-context"]);
    assert_eq!(clean.code, 1, "{}", clean.stderr);
}

/// Search sees a file's secrets whole: a context window that cuts a key hides every line of
/// it, and a pattern that matches only inside a secret finds nothing (match counts are no
/// oracle for the secret's characters).
#[test]
fn search_hides_secrets_its_windows_cut_and_finds_none() {
    let env = project();
    let body: Vec<String> = (0..20)
        .map(|i| format!("MIIEow{i:02}AAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbtPkZc4dd7LH6Hy"))
        .collect();
    let text = format!(
        "package auth\n\nconst key = `\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n`\n\n// stripe_key_marker\nconst stripe = \"sk_live_51Hq8LyjWDarjtT1zdp7dcQ8vXpL2mN4rT6yU0wE3sZ9aKd\"\n\nfunc after_the_key() {{}}\n",
        body.join("\n")
    );
    write(&env.work(), "src/auth/keys.go", text.as_bytes());
    // Context lines reach into the key's body from below; the header is out of the window.
    let run = env.run(&["search", "after_the_key", ".", "--context", "8"]);
    let out = run.ok().stdout.clone();
    assert!(out.contains("after_the_key"), "{out}");
    for line in &body {
        assert!(!out.contains(line.as_str()), "{out}");
    }
    // Context reaching up into the key from the END line's side, and JSON output.
    let run = env.run(&[
        "--json",
        "search",
        "stripe_key_marker",
        ".",
        "--context",
        "6",
    ]);
    let out = run.ok().stdout.clone();
    assert!(
        !out.contains("U0wE3sZ9aKd") && !out.contains("MIIEow1"),
        "{out}"
    );
    // Patterns that match only inside secrets find nothing.
    for pattern in ["MIIEow07", "sk_live_51Hq", "U0wE3sZ9aKd"] {
        let run = env.run(&["search", pattern, "."]);
        assert_eq!(run.code, 1, "{pattern}: {}", run.stdout);
    }
    let run = env.run(&["search", "--regex", "sk_live_[0-9a-zA-Z]", "."]);
    assert_eq!(run.code, 1, "{}", run.stdout);
}

/// A secret pasted into a commit message is redacted where ctx shows commit messages.
#[test]
fn status_redacts_a_secret_in_a_commit_message() {
    let env = project();
    let w = env.work();
    git(&w, &env.home, &["init", "-q"]);
    git(&w, &env.home, &["add", "-A"]);
    let key = "AKIAZ4Q7XK2M5TRB3VWP";
    git(
        &w,
        &env.home,
        &[
            "commit",
            "-q",
            "-m",
            &format!("deploy with aws_access_key_id={key}"),
        ],
    );
    for args in [&["--json", "status"][..], &["status"]] {
        let run = env.run(args);
        let out = run.ok().stdout.clone();
        assert!(!out.contains(key), "{args:?}: {out}");
        assert!(out.contains("[REDACTED:"), "{args:?}: {out}");
    }
}

/// A file the sandbox refuses (a hard link may share its bytes with a file outside the
/// workspace) is named by `map` and `search`, not dropped without a word.
#[test]
fn map_and_search_name_the_files_they_could_not_read() {
    let env = Env::new();
    let work = env.work();
    write(&work, "src/a.rs", b"fn needle() {}\n");
    write(&work, "src/c.rs", b"fn other() { needle() }\n");
    fs::hard_link(work.join("src/a.rs"), work.join("src/b.rs")).expect("hard link");
    for args in [
        &["--json", "map", "."][..],
        &["--json", "search", "needle"][..],
    ] {
        let run = env.run(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let report = run.json();
        // Each skipped file as `path: why`, as MCP answers name them.
        let skipped: Vec<&str> = report["skipped"]
            .as_array()
            .unwrap_or_else(|| panic!("{args:?}: no skipped list: {report}"))
            .iter()
            .filter_map(|s| s.as_str()?.split_once(": ").map(|(path, _)| path))
            .collect();
        assert_eq!(skipped, ["src/a.rs", "src/b.rs"], "{args:?}: {report}");
        assert!(
            report["skipped"][0]
                .as_str()
                .expect("reason")
                .contains("hard links")
        );
    }
    let human = env.run(&["map", "."]);
    assert!(
        human.stdout.contains("not mapped, unreadable: src/a.rs"),
        "{}",
        human.stdout
    );
    let human = env.run(&["search", "needle"]);
    assert!(
        human.stderr.contains("could not be read: src/a.rs"),
        "{}",
        human.stderr
    );
}
