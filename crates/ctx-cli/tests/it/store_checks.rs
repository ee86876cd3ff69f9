//! Damaged, odd and read-only stores and indexes: each is refused with one line naming the
//! fix (exit 2) and left exactly as it was, or read as far as reading can go.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Env, Run, snapshot, write_files};

/// A project with a store, one pack with a rendered snapshot, and a built index.
fn project() -> Env {
    let env = Env::new();
    write_files(
        &env.work(),
        &[
            ("parser.py", "def parse(text):\n    return text.split()\n"),
            (
                "main.py",
                "from parser import parse\n\nprint(parse('a b'))\n",
            ),
            ("README.md", "# Demo\n\nParses words.\n"),
        ],
    );
    env.run(&["init"]).ok();
    env.run(&["pack", "create", "docs"]).ok();
    env.run(&["pack", "add", "docs", "file:README.md"]).ok();
    env.run(&["pack", "snapshot", "docs", "--name", "v1"]).ok();
    env.run(&["index", "build"]).ok();
    env
}

fn store_dir(env: &Env) -> PathBuf {
    env.work().join(".ctx")
}

/// The store's files and bytes, leaving out SQLite's transient WAL files and index locks.
fn store_state(env: &Env) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot(&store_dir(env))
        .into_iter()
        .filter(|(p, _)| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !["-wal", "-shm", ".lock"]
                .iter()
                .any(|suffix| name.ends_with(suffix))
        })
        .collect()
}

#[test]
fn an_empty_or_foreign_state_db_is_refused_by_every_command_and_left_alone() {
    let env = project();
    let db = store_dir(&env).join("state.db");
    let objects_before = snapshot(&store_dir(&env).join("objects"));
    for (what, bytes, needle) in [
        ("empty", Vec::new(), "is empty, not a ctx database"),
        (
            "foreign",
            b"PK\x03\x04 a zip file, say".repeat(64),
            "not a SQLite database",
        ),
    ] {
        fs::write(&db, &bytes).expect("damage state.db");
        for args in [
            &["pack", "list"][..],
            &["store", "verify"],
            &["store", "gc"],
            &["pack", "render", "docs"],
            &["select", "parse words"],
        ] {
            let run = env.run(args);
            run.bad_input(needle);
            assert!(
                run.stderr.contains("ctx init"),
                "{what} {args:?}: {}",
                run.stderr
            );
            assert_eq!(fs::read(&db).expect("read"), bytes, "{what} {args:?}");
        }
        assert_eq!(
            snapshot(&store_dir(&env).join("objects")),
            objects_before,
            "{what}: gc removed nothing"
        );
    }
}

#[test]
fn index_names_are_checked_and_unknown_indexes_refused_everywhere() {
    let env = project();
    let before = store_state(&env);
    let outside = env.root.join("outside-index");
    fs::create_dir_all(&outside).expect("mkdir");
    let cases: &[(&[&str], &str)] = &[
        (&["index", "verify", "/etc"], "index name `/etc` is invalid"),
        (&["index", "verify", "../x"], "index name `../x` is invalid"),
        (
            &["index", "inspect", "/etc"],
            "index name `/etc` is invalid",
        ),
        (
            &["index", "build", "--name", "../../outside-index"],
            "is invalid",
        ),
        (
            &["select", "--index", "nosuch", "parse words"],
            "no index `nosuch` in this store (indexes: default)",
        ),
        (
            &["select", "--index", "../../outside-index", "parse words"],
            "no index `../../outside-index`",
        ),
    ];
    for (args, needle) in cases {
        env.run(args).bad_input(needle);
    }
    inject(&env, &["--index", "nosuch"], "parse the words please").bad_input("no index `nosuch`");
    assert_eq!(store_state(&env), before, "nothing was written");
    assert_eq!(
        fs::read_dir(&outside).expect("readdir").count(),
        0,
        "nothing written outside the store"
    );
    // The workspace index, named explicitly, still works.
    env.run(&["select", "--index", "default", "parse words"])
        .ok();
}

#[test]
fn a_damaged_index_is_refused_before_anything_is_written() {
    let env = project();
    let docs = store_dir(&env).join("indexes/default/documents");
    let mut files: Vec<PathBuf> = fs::read_dir(&docs)
        .expect("readdir")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    // Valid JSON whose text no longer hashes to its version, and a change in the workspace,
    // so `select` has an incremental build to do.
    for file in &files {
        let text = fs::read_to_string(file).expect("read");
        fs::write(file, text.replace("parse", "PARSE")).expect("write");
    }
    fs::write(
        env.work().join("parser.py"),
        "def parse(text):\n    return text.split(' ')\n",
    )
    .expect("write");
    let before = store_state(&env);
    env.run(&["select", "parse words"]).bad_input("is damaged");
    assert_eq!(store_state(&env), before, "select wrote before refusing");
    inject(&env, &[], "parse the words please").bad_input("is damaged");
    assert_eq!(store_state(&env), before, "inject wrote before refusing");
    // A missing document file reads the same way.
    fs::remove_file(&files[0]).expect("remove");
    let before = store_state(&env);
    env.run(&["select", "parse words"]).bad_input("is missing");
    assert_eq!(store_state(&env), before);
    // The fix the message names works.
    env.run(&["index", "build", "--force"]).ok();
    env.run(&["select", "parse words"]).ok();
}

/// `ctx inject ARGS` with `prompt` on stdin.
fn inject(env: &Env, args: &[&str], prompt: &str) -> Run {
    use std::io::Write;
    let mut all = vec!["inject"];
    all.extend_from_slice(args);
    let mut cmd = env.cmd(&all);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn ctx");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(prompt.as_bytes())
        .expect("write prompt");
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).expect("utf8"),
        stderr: String::from_utf8(out.stderr).expect("utf8"),
    }
}

/// Runs `ctx` with the store directory read-only: a read-only bind mount in a private mount
/// namespace when running as root (permissions do not stop root), else a chmod.
fn run_read_only(env: &Env, args: &[&str]) -> Option<Run> {
    let store = store_dir(env);
    if is_root() {
        let script =
            r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@""#;
        let ctx = Path::new(env!("CARGO_BIN_EXE_ctx"));
        let mut wrapped = Command::new("unshare");
        wrapped
            .args(["-m", "sh", "-c", script, "sh"])
            .arg(&store)
            .arg(ctx)
            .args(args)
            .current_dir(env.work())
            .env_clear()
            .env("HOME", &env.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        let probe = Command::new("unshare")
            .args(["-m", "sh", "-c", "mount --bind / /tmp && true"])
            .output()
            .ok()?;
        if !probe.status.success() {
            return None;
        }
        Some(env.run_with(wrapped))
    } else {
        set_writable(&store, false);
        let run = env.run(args);
        set_writable(&store, true);
        Some(run)
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn set_writable(dir: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt;
    for (path, _) in snapshot(dir) {
        let mode = if writable { 0o644 } else { 0o444 };
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
    }
    let mut dirs = vec![dir.to_owned()];
    let mut all = Vec::new();
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).expect("readdir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            }
        }
        all.push(d);
    }
    for d in all {
        let mode = if writable { 0o755 } else { 0o555 };
        fs::set_permissions(&d, fs::Permissions::from_mode(mode)).expect("chmod");
    }
}

#[test]
fn a_read_only_store_is_readable() {
    let env = project();
    // Warm what the reads below use, so the comparison sees only their own writes.
    env.run(&["pack", "render", "docs"]).ok();
    env.run(&["select", "parse words"]).ok();
    let before = store_state(&env);
    // Root without a private mount namespace (a locked-down container) has no way to make
    // the store read-only; everywhere else (this machine, CI) the checks below run.
    let Some(list) = run_read_only(&env, &["pack", "list", "--json"]) else {
        assert!(is_root(), "chmod always works for a non-root user");
        return;
    };
    list.ok();
    assert!(list.stdout.contains("\"docs\""), "{}", list.stdout);
    for args in [
        &["pack", "show", "docs"][..],
        &["pack", "render", "docs"],
        &["pack", "snapshots"],
        &["pack", "verify", "v1"],
        &["store", "verify"],
        &["index", "list"],
        &["index", "verify", "default"],
        &["select", "parse words"],
        &["tokens", "parser.py"],
    ] {
        let run = run_read_only(&env, args).expect("read-only run");
        assert_eq!(
            run.code, 0,
            "{args:?} on a read-only store: {}{}",
            run.stdout, run.stderr
        );
    }
    let create = run_read_only(&env, &["pack", "create", "more"]).expect("read-only run");
    // A file-system failure, not the user's input: exit 74 (README, "Exit codes").
    assert_eq!(create.code, 74, "{}", create.stderr);
    assert_eq!(create.stderr.lines().count(), 1, "{}", create.stderr);
    assert!(create.stderr.contains("is read-only"), "{}", create.stderr);
    assert_eq!(store_state(&env), before, "nothing changed");
}
