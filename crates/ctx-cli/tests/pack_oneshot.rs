//! `ctx pack [PATH]...`: one-shot packs, snapshotted with insta in every style, with their
//! options, and checked for determinism across working directories and locales.

mod common;

use std::io::Write as _;
use std::process::Stdio;

use common::{Env, git, write_files};

/// A small project: sources, docs, an ignored build dir, a binary file, a secret.
fn fixture(env: &Env) {
    write_files(
        &env.work(),
        &[
            ("README.md", "# Demo\n\nA demo project.\n"),
            ("src/main.rs", "fn main() {\n    demo::run();\n}\n"),
            (
                "src/lib.rs",
                "pub mod util;\n\npub fn run() {\n    util::greet(\"world\");\n}\n",
            ),
            (
                "src/util/mod.rs",
                "pub fn greet(name: &str) {\n    println!(\"hello {name}\");\n}\n",
            ),
            ("docs/guide.md", "# Guide\n\nRun `cargo run`.\n"),
            ("config.py", "AWS_KEY = \"AKIAZ7VRSQ4TDJKTFNLE\"\n"),
            (".gitignore", "target/\n"),
            ("target/debug/out.rs", "// build output\n"),
        ],
    );
    std::fs::write(env.work().join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0").expect("write");
}

fn pack(env: &Env, args: &[&str]) -> common::Run {
    let mut full = vec!["pack"];
    full.extend_from_slice(args);
    env.run(&full)
}

#[test]
fn pack_dot_in_every_style() {
    let env = Env::new();
    fixture(&env);
    for style in ["markdown", "xml", "plain", "json"] {
        let run = pack(&env, &[".", "--style", style]);
        run.ok();
        insta::assert_snapshot!(format!("pack_dot_{style}"), run.stdout);
        insta::assert_snapshot!(format!("pack_dot_{style}_report"), run.stderr);
    }
    let json = pack(&env, &[".", "--style", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("a JSON payload");
    assert_eq!(value[0]["type"], "about");
    assert_eq!(
        value.as_array().expect("array").last().expect("last")["type"],
        "summary"
    );
}

#[test]
fn pack_with_include_and_ignore() {
    let env = Env::new();
    fixture(&env);
    let run = pack(
        &env,
        &[
            ".",
            "--include",
            "*.rs",
            "--include",
            "*.md",
            "--ignore",
            "src/util/**",
        ],
    );
    run.ok();
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn pack_token_tree_and_hashes_and_line_numbers() {
    let env = Env::new();
    fixture(&env);
    let run = pack(&env, &["src", "--token-tree", "--hashes", "--line-numbers"]);
    run.ok();
    insta::assert_snapshot!("token_tree_payload", run.stdout);
    insta::assert_snapshot!("token_tree_report", run.stderr);
    // With --json the tree is a list of rows.
    let json = env.run(&["--json", "pack", "src", "--token-tree", "5"]);
    let rows = json.ok().json()["token_tree"].clone();
    assert!(
        rows.as_array()
            .expect("rows")
            .iter()
            .all(|r| r["tokens"].as_u64() >= Some(5)),
        "{rows}"
    );
}

#[test]
fn pack_split_output_cuts_between_files() {
    let env = Env::new();
    fixture(&env);
    let whole = pack(&env, &["."]);
    whole.ok();
    let run = pack(&env, &[".", "--split-output", "120", "-o", "context.md"]);
    run.ok();
    insta::assert_snapshot!(run.stdout);
    let mut joined = String::new();
    for part in 1.. {
        let path = env.work().join(format!("context.{part}.md"));
        if !path.exists() {
            assert!(part > 2, "split into several parts");
            break;
        }
        let text = std::fs::read_to_string(&path).expect("part");
        let tokens = env.run(&["--json", "tokens", path.to_str().expect("utf8")]);
        assert!(tokens.ok().json()["total_tokens"].as_u64().expect("n") <= 120);
        joined.push_str(&text);
    }
    assert_eq!(
        joined, whole.stdout,
        "the parts are the payload, byte for byte"
    );
    // A file bigger than a part, JSON, and a missing -o are refused with the reason.
    pack(&env, &[".", "--split-output", "10", "-o", "c.md"]).bad_input("raise it");
    pack(
        &env,
        &[
            ".",
            "--split-output",
            "500",
            "-o",
            "c.json",
            "--style",
            "json",
        ],
    )
    .bad_input("JSON");
    pack(&env, &[".", "--split-output", "500"]).bad_input("--output");
}

#[test]
fn pack_stdin_takes_paths_one_per_line() {
    let env = Env::new();
    fixture(&env);
    let mut cmd = env.cmd(&["pack", "--stdin"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"src/lib.rs\n\nREADME.md\n.env\n")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let stdout = String::from_utf8(out.stdout).expect("utf8");
    // `.env` does not exist: a clear error naming it.
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    let stderr = String::from_utf8(out.stderr).expect("utf8");
    assert!(
        stderr.contains("`.env`") && stderr.contains("no such file"),
        "{stderr}"
    );

    let mut cmd = env.cmd(&["pack", "--stdin"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"src/lib.rs\n\nREADME.md\n")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8(out.stdout).expect("utf8"));
}

#[test]
fn pack_git_diff_and_log() {
    let env = Env::new();
    fixture(&env);
    git(&env.work(), &["init", "-q", "-b", "main"]);
    git(&env.work(), &["add", "."]);
    git(&env.work(), &["commit", "-q", "-m", "Initial commit"]);
    write_files(
        &env.work(),
        &[(
            "src/main.rs",
            "fn main() {\n    demo::run();\n    demo::run();\n}\n",
        )],
    );
    let run = pack(&env, &["src/main.rs", "--git-diff", "--git-log", "1"]);
    run.ok();
    insta::assert_snapshot!(run.stdout);
    // Outside a repository the flag is refused.
    let plain = Env::new();
    fixture(&plain);
    pack(&plain, &[".", "--git-diff"]).bad_input("not inside a git repository");
}

#[test]
fn pack_is_the_same_from_any_directory_and_locale() {
    let env = Env::new();
    fixture(&env);
    git(&env.work(), &["init", "-q", "-b", "main"]);
    let top = pack(&env, &["src"]);
    top.ok();
    let mut inside = env.cmd(&["pack", "."]);
    inside.current_dir(env.work().join("src"));
    let inside = env.run_with(inside);
    inside.ok();
    assert_eq!(top.stdout, inside.stdout);
    assert!(
        top.stdout.contains("## src/lib.rs (5 lines)"),
        "{}",
        top.stdout
    );
    for locale in ["C", "tr_TR.UTF-8", "de_DE.UTF-8"] {
        let mut cmd = env.cmd(&["pack", "src"]);
        cmd.env("LC_ALL", locale).env("LANG", locale);
        let run = env.run_with(cmd);
        assert_eq!(run.ok().stdout, top.stdout, "locale {locale}");
    }
    // No absolute path of the machine in the payload.
    assert!(!top.stdout.contains(env.root.to_str().expect("utf8")));
}

#[test]
fn pack_needs_no_store_and_bad_input_is_one_line() {
    let env = Env::new();
    fixture(&env);
    pack(&env, &["."]).ok();
    assert!(
        !env.home.join(".ctx").exists(),
        "a one-shot pack creates no store"
    );
    pack(&env, &["missing"]).bad_input("`missing`");
    pack(&env, &[".", "--include", "a{"]).bad_input("glob `a{`");
    pack(&env, &[".", "--git-log", "0"]).bad_input("--git-log 0");
    // Named packs still work beside the one-shot form.
    env.run(&["pack", "list"]).ok();
}

#[test]
fn pack_copy_without_a_terminal_is_a_clear_error() {
    let env = Env::new();
    fixture(&env);
    pack(&env, &[".", "--copy"]).bad_input("--copy needs a terminal");
}

#[test]
fn help_puts_global_options_under_their_own_heading_with_examples() {
    let env = Env::new();
    let top = env.run(&["--help"]);
    assert!(
        top.ok().stdout.contains("Global options:"),
        "{}",
        top.stdout
    );
    assert!(
        top.stdout.contains("ctx pack . -o context.md"),
        "{}",
        top.stdout
    );
    // Each command's summary fits on its own lines (no stray breaks from doc comments).
    for line in top.stdout.lines() {
        assert_ne!(line.trim(), "it", "{}", top.stdout);
    }
    let pack = env.run(&["pack", "--help"]);
    assert!(pack.ok().stdout.contains("Examples:"), "{}", pack.stdout);
    let render = env.run(&["pack", "render", "--help"]);
    assert!(
        render
            .ok()
            .stdout
            .contains("markdown (default), xml, plain or json"),
        "{}",
        render.stdout
    );
    let help = env.run(&["pack", "create", "--help"]);
    assert!(
        help.ok().stdout.contains("Global options:"),
        "{}",
        help.stdout
    );
    assert!(help.stdout.contains("Examples:"), "{}", help.stdout);
}
