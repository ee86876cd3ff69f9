//! The sandbox attack fixture, shared by the library, CLI and HTTP tests (`#[path]`-included).
//!
//! Layout, built in a fresh temp dir (mirrored by `tests/python/attack_fixture.py`):
//!
//! ```text
//! outside/secret.txt, outside/only_outside.txt   "TOP SECRET …"
//! ws/ok.txt  ws/sub/inner.txt  ws/race_real/only_inside.txt
//! ws/link_passwd -> /etc/passwd            ws/link_secret -> ../outside/secret.txt
//! ws/link_abs_secret -> <tmp>/outside/secret.txt
//! ws/linkdir_out -> ../outside             ws/linkdir_etc -> /etc
//! ws/link_dotdot -> ..                     ws/sub/link_up2 -> ../../outside/secret.txt
//! ws/link_loop -> link_loop                ws/link_proc -> /proc/self/root
//! ws/link_inside -> sub/inner.txt (allowed)
//! ws/hard_secret (hard link of outside/secret.txt)   ws/fifo (FIFO)   ws/sock (socket)
//! ```
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// Text found only outside the workspace; no response may ever contain it.
pub const SECRET: &str = "TOP SECRET";

pub struct Fixture {
    pub _tmp: tempfile::TempDir,
    pub base: PathBuf,
    pub root: PathBuf,
    pub outside: PathBuf,
}

pub struct Case {
    pub name: String,
    pub path: String,
    pub expect: Vec<String>,
}

pub fn build() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical tempdir");
    let root = base.join("ws");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("sub")).expect("mkdir sub");
    fs::create_dir_all(root.join("race_real")).expect("mkdir race_real");
    fs::create_dir_all(&outside).expect("mkdir outside");
    fs::write(outside.join("secret.txt"), format!("{SECRET} outside\n")).expect("secret");
    fs::write(outside.join("only_outside.txt"), format!("{SECRET} too\n")).expect("secret 2");
    fs::write(root.join("ok.txt"), "hello inside\n").expect("ok.txt");
    fs::write(root.join("sub/inner.txt"), "inner\n").expect("inner");
    fs::write(root.join("race_real/only_inside.txt"), "inside\n").expect("inside");
    let links: &[(&str, String)] = &[
        ("link_passwd", "/etc/passwd".to_owned()),
        ("link_secret", "../outside/secret.txt".to_owned()),
        (
            "link_abs_secret",
            outside.join("secret.txt").display().to_string(),
        ),
        ("linkdir_out", "../outside".to_owned()),
        ("linkdir_etc", "/etc".to_owned()),
        ("link_dotdot", "..".to_owned()),
        ("sub/link_up2", "../../outside/secret.txt".to_owned()),
        ("link_loop", "link_loop".to_owned()),
        ("link_proc", "/proc/self/root".to_owned()),
        ("link_inside", "sub/inner.txt".to_owned()),
    ];
    for (name, target) in links {
        symlink(target, root.join(name)).expect("symlink");
    }
    fs::hard_link(outside.join("secret.txt"), root.join("hard_secret")).expect("hard link");
    let status = std::process::Command::new("mkfifo")
        .arg(root.join("fifo"))
        .status()
        .expect("mkfifo");
    assert!(status.success(), "mkfifo failed");
    drop(std::os::unix::net::UnixListener::bind(root.join("sock")).expect("socket"));
    Fixture {
        _tmp: tmp,
        base,
        root,
        outside,
    }
}

/// The attack cases with placeholders filled in for this fixture.
pub fn cases(fixture: &Fixture) -> Vec<Case> {
    let raw: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/sandbox_attacks.json"))
            .expect("attack cases parse");
    let fill = |path: &str| {
        path.replace("{ROOT}", &fixture.root.display().to_string())
            .replace("{OUTSIDE}", &fixture.outside.display().to_string())
            .replace("{LONG_COMPONENT}", &"a".repeat(300))
            .replace("{LONG_PATH}", &format!("{}x", "d/".repeat(2100)))
            .replace("{DOTDOT_CHAIN}", &format!("{}etc/passwd", "../".repeat(64)))
    };
    raw["cases"]
        .as_array()
        .expect("cases array")
        .iter()
        .map(|case| Case {
            name: case["name"].as_str().expect("name").to_owned(),
            path: fill(case["path"].as_str().expect("path")),
            expect: case["expect"]
                .as_array()
                .expect("expect")
                .iter()
                .map(|k| k.as_str().expect("kind").to_owned())
                .collect(),
        })
        .collect()
}

/// A thread flipping `ws/race` (see [`flipper`]); `flips()` reads its count while it runs.
pub struct Flipper {
    handle: std::thread::JoinHandle<()>,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Flipper {
    /// How many times the symlink has been swapped so far.
    pub fn flips(&self) -> u64 {
        self.count.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits for the thread (after `stop` was set) and returns the final count.
    pub fn join(self) -> std::thread::Result<u64> {
        let Self { handle, count } = self;
        handle.join()?;
        Ok(count.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Whether a race loop has run long enough: at least `min_rounds`, and the flipper has
/// swapped the link more than ten times meanwhile (on a loaded machine the flipper thread
/// can be starved, so a fixed round count alone would not prove a race took place). Gives
/// up after `50 * min_rounds` rounds; the caller's assertion on the count then fails.
pub fn raced_enough(round: usize, min_rounds: usize, flipper: &Flipper) -> bool {
    (round >= min_rounds && flipper.flips() > 10) || round >= 50 * min_rounds
}

/// Flips `ws/race` between a real directory (`race_real`) and a symlink to `outside` until
/// `stop` is set, as fast as it can: the "symlink swapped during the request" attack.
pub fn flipper(root: &Path, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Flipper {
    let root = root.to_owned();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = std::sync::Arc::clone(&count);
    let handle = std::thread::spawn(move || {
        let race = root.join("race");
        let inside_tmp = root.join(".race_in");
        let outside_tmp = root.join(".race_out");
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = fs::remove_file(&inside_tmp);
            let _ = fs::remove_file(&outside_tmp);
            symlink("race_real", &inside_tmp).expect("symlink in");
            symlink("../outside", &outside_tmp).expect("symlink out");
            let _ = fs::rename(&inside_tmp, &race);
            let _ = fs::rename(&outside_tmp, &race);
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    Flipper { handle, count }
}
