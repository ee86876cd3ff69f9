//! `ctx pack [PATH]...`: one-shot packs, snapshotted with insta in every style, with their
//! options, and checked for determinism across working directories and locales.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::Stdio;

use crate::common::{Env, git, write_files};

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

fn pack(env: &Env, args: &[&str]) -> crate::common::Run {
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

/// `n` pieces of text, one per index.
fn repeated(n: usize, piece: impl Fn(usize) -> String) -> String {
    let mut out = String::new();
    for i in 0..n {
        out += &piece(i);
    }
    out
}

/// The source modules of [`fd_shaped`] (`src/{module}.rs`).
const FD_MODULES: [&str; 7] = [
    "main",
    "walk",
    "output",
    "config",
    "filter/size",
    "filter/time",
    "exec/mod",
];

/// A project shaped like sharkdp/fd (whose default pack used to spend its budget on
/// `doc/screencast.svg` and `Cargo.lock` and leave `src/` out): a lockfile, drawings, docs,
/// a large test file and more source than the budget holds whole.
fn fd_shaped(env: &Env) {
    let mut files: Vec<(String, String)> = vec![
        (
            "Cargo.toml".into(),
            "[package]\nname = \"fd-find\"\nversion = \"10.0.0\"\n".into(),
        ),
        (
            "Cargo.lock".into(),
            repeated(400, |i| {
                format!("[[package]]\nname = \"crate-{i}\"\nversion = \"1.{i}.0\"\n\n")
            }),
        ),
        (
            "doc/screencast.svg".into(),
            format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\">{}</svg>\n",
                repeated(800, |i| format!(
                    "<rect x=\"{i}\" y=\"{i}\" width=\"3\" height=\"4\"/>\n"
                ))
            ),
        ),
        (
            "doc/logo.svg".into(),
            "<svg><circle r=\"4\"/></svg>\n".into(),
        ),
        (
            "README.md".into(),
            "# fd\n\nA simple, fast and user-friendly alternative to find.\n".repeat(40),
        ),
        (
            "tests/tests.rs".into(),
            repeated(60, |i| {
                format!(
                    "#[test]\nfn finds_case_{i}() {{\n    assert_eq!(1 + {i}, {i} + 1);\n}}\n\n"
                )
            }),
        ),
    ];
    for module in FD_MODULES {
        let mut text = format!("//! The {module} module.\n\nuse std::path::Path;\n\n");
        for f in 0..10 {
            let _ = write!(
                text,
                "/// Does step {f} of {module}.\npub fn step_{f}(path: &Path) -> usize {{\n    let name = path.display().to_string();\n    let mut total = 0;\n    for c in name.chars() {{\n        total += c.len_utf8() * {f};\n    }}\n    total\n}}\n\n"
            );
        }
        files.push((format!("src/{module}.rs"), text));
    }
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    write_files(&env.work(), &borrowed);
}

#[test]
fn a_default_pack_spends_its_budget_on_source_and_outlines_what_does_not_fit() {
    let env = Env::new();
    fd_shaped(&env);
    let out = |name: &str| {
        env.work()
            .join("..")
            .join(name)
            .to_string_lossy()
            .into_owned()
    };
    let run = env.run(&[
        "--json",
        "pack",
        ".",
        "--budget",
        "3000",
        "-o",
        &out("out.md"),
    ]);
    run.ok();
    let report = run.json();
    let included: Vec<&serde_json::Value> = report["included"]
        .as_array()
        .expect("included")
        .iter()
        .collect();
    let excluded: Vec<&serde_json::Value> = report["excluded"]
        .as_array()
        .expect("excluded")
        .iter()
        .collect();
    let reason = |path: &str| {
        excluded
            .iter()
            .find(|e| e["path"] == path)
            .map(|e| e["reason"].as_str().expect("reason").to_owned())
    };
    for path in ["Cargo.lock", "doc/screencast.svg", "doc/logo.svg"] {
        assert_eq!(
            reason(path).as_deref(),
            Some("default_ignored"),
            "{path}: {report}"
        );
    }
    let mut outlined = 0;
    for module in FD_MODULES {
        let path = format!("src/{module}.rs");
        let item = included
            .iter()
            .find(|i| i["path"] == path.as_str())
            .unwrap_or_else(|| panic!("{path} is not in the pack: {report}"));
        if item["notes"].to_string().contains("outline") {
            outlined += 1;
        }
    }
    assert!(outlined > 0, "{report}");
    assert!(report["tokens_used"].as_u64().expect("used") <= 3000);
    // The test file is context: it did not take the budget whole.
    assert!(
        included
            .iter()
            .all(|i| i["path"] != "tests/tests.rs" || i["notes"].to_string().contains("outline"))
    );
    let payload = std::fs::read_to_string(out("out.md")).expect("payload");
    assert!(
        payload.contains("… outline of src/output.rs: the first line of each definition"),
        "{payload}"
    );
    assert!(
        payload.contains("pub fn step_3(path: &Path) -> usize {"),
        "{payload}"
    );
    assert!(
        payload.contains("Outlined (the first line of each definition"),
        "{payload}"
    );
    assert!(payload.contains("Largest (tokens): "), "{payload}");
    // The same bytes again.
    env.run(&["pack", ".", "--budget", "3000", "-o", "again.md"])
        .ok();
    assert_eq!(
        payload,
        std::fs::read_to_string(env.work().join("again.md")).expect("again")
    );
    // Named, or matched by --include, a lockfile is packed.
    let named = env.run(&["--json", "pack", "Cargo.lock", "-o", &out("lock.md")]);
    named.ok();
    assert_eq!(named.json()["included"][0]["path"], "Cargo.lock");
    let matched = env.run(&[
        "--json",
        "pack",
        ".",
        "--include",
        "*.lock",
        "-o",
        "lock2.md",
    ]);
    matched.ok();
    assert_eq!(matched.json()["included"][0]["path"], "Cargo.lock");
}

/// On this repository, the default pack holds every crate's source file at least as an
/// outline.
#[test]
fn this_repository_packs_every_crate_source_file_at_least_as_an_outline() {
    let env = Env::new();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo");
    let out = env.work().join("self.md");
    let run = env.run(&[
        "--json",
        "pack",
        repo.to_str().expect("utf-8"),
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    run.ok();
    let report = run.json();
    let included: std::collections::BTreeSet<&str> = report["included"]
        .as_array()
        .expect("included")
        .iter()
        .filter_map(|i| i["path"].as_str())
        .collect();
    let mut missing = Vec::new();
    let mut stack = vec![repo.join("crates")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(&repo)
                .expect("inside")
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                let name = entry.file_name();
                if name != "target" && name != "tests" && name != "fuzz" {
                    stack.push(path);
                }
                continue;
            }
            let in_src = rel.split('/').nth(2) == Some("src");
            let code = matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "py"));
            let test = path.file_stem().is_some_and(|s| s == "tests");
            if in_src && code && !test && !included.contains(rel.as_str()) {
                missing.push(rel);
            }
        }
    }
    assert!(missing.is_empty(), "not in the default pack: {missing:?}");
    assert!(report["tokens_used"].as_u64().expect("used") <= 128_000);
}
