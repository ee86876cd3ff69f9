//! The sandbox attack suite through the library: every case refused, for both resolvers,
//! through `Sandbox::resolve` and through `fs_read` in each mode; and a symlink swapped
//! while requests run never lets one out.

#[path = "../support/attacks.rs"]
mod attacks;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ctx_fs::read::{FsReadInput, Operation, ReadOptions, fs_read};
use ctx_fs::sandbox::{Resolver, Sandbox, SandboxOptions};

fn resolvers() -> Vec<Resolver> {
    vec![Resolver::Auto, Resolver::Openat2, Resolver::Components]
}

fn workspace(fixture: &attacks::Fixture, resolver: Resolver) -> Option<Sandbox> {
    let ws = Sandbox::with_options(
        &fixture.root,
        SandboxOptions {
            resolver,
            ..SandboxOptions::default()
        },
    )
    .expect("open workspace");
    // Skip the forced-openat2 run on kernels without it.
    if resolver == Resolver::Openat2
        && matches!(ws.resolve("ok.txt"), Err(ctx_fs::SandboxError::Io { .. }))
    {
        return None;
    }
    Some(ws)
}

#[test]
fn every_attack_is_refused_with_the_expected_kind() {
    let fixture = attacks::build();
    let cases = attacks::cases(&fixture);
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    for resolver in resolvers() {
        let Some(ws) = workspace(&fixture, resolver) else {
            continue;
        };
        for case in &cases {
            match ws.resolve(&case.path) {
                Ok(resolved) => panic!(
                    "{resolver:?} {}: `{}` resolved to {:?}",
                    case.name, case.path, resolved.rel
                ),
                Err(err) => {
                    let kind = err.kind().as_str();
                    assert!(
                        case.expect.iter().any(|k| k == kind),
                        "{resolver:?} {}: kind {kind} ({err}), wanted {:?}",
                        case.name,
                        case.expect
                    );
                }
            }
        }
    }
}

#[test]
fn every_attack_fails_in_every_mode_and_no_output_holds_a_secret() {
    let fixture = attacks::build();
    for resolver in resolvers() {
        let Some(ws) = workspace(&fixture, resolver) else {
            continue;
        };
        let mut ops = Vec::new();
        for case in attacks::cases(&fixture) {
            ops.push(Operation::line(case.path.clone()));
            ops.push(Operation::directory(case.path.clone(), 2));
            ops.push(Operation::search(case.path.clone(), "secret"));
        }
        let count = ops.len();
        let output = fs_read(&ws, &FsReadInput::new(ops), &ReadOptions::default());
        assert_eq!(output.failed, count, "{resolver:?}: some attack succeeded");
        let json = serde_json::to_string(&output).expect("json");
        assert!(
            !json.contains(attacks::SECRET),
            "{resolver:?}: secret leaked"
        );
        assert!(
            !json.contains("root:x:0"),
            "{resolver:?}: /etc/passwd leaked"
        );
    }
}

#[test]
fn listing_and_searching_the_root_shows_nothing_from_outside() {
    let fixture = attacks::build();
    for resolver in resolvers() {
        let Some(ws) = workspace(&fixture, resolver) else {
            continue;
        };
        let input = FsReadInput::new([
            Operation::directory(".", 5),
            Operation::search(".", "secret"),
            Operation::search(".", "root:"),
            Operation::line("link_inside"),
        ]);
        let output = fs_read(&ws, &input, &ReadOptions::default());
        let json = serde_json::to_string(&output).expect("json");
        assert!(!json.contains(attacks::SECRET), "{resolver:?}: {json}");
        assert!(!json.contains("only_outside"), "{resolver:?}: {json}");
        assert!(!json.contains("root:x:0"), "{resolver:?}");
        // A symlink that stays inside is followed.
        assert!(output.results[3].ok, "{resolver:?}: {json}");
        assert!(
            json.contains("\"content\":\"inner\""),
            "{resolver:?}: {json}"
        );
    }
}

#[test]
fn legitimate_paths_still_resolve() {
    let fixture = attacks::build();
    for resolver in resolvers() {
        let Some(ws) = workspace(&fixture, resolver) else {
            continue;
        };
        for path in [
            "ok.txt",
            "./ok.txt",
            "sub/../ok.txt",
            "sub//inner.txt",
            "link_inside",
            ".",
            "sub",
        ] {
            let resolved = ws
                .resolve(path)
                .unwrap_or_else(|e| panic!("{resolver:?} {path}: {e}"));
            assert!(!resolved.rel.contains(".."), "{path}");
        }
        let abs = fixture.root.join("ok.txt").display().to_string();
        assert_eq!(ws.resolve(&abs).expect("absolute inside").rel, "ok.txt");
    }
}

#[test]
fn hard_links_are_allowed_when_the_policy_says_so() {
    let fixture = attacks::build();
    let ws = Sandbox::with_options(
        &fixture.root,
        SandboxOptions {
            allow_hard_links: true,
            ..SandboxOptions::default()
        },
    )
    .expect("workspace");
    assert!(ws.resolve("hard_secret").is_ok());
}

#[test]
fn directory_listings_do_not_show_hard_links_unless_allowed() {
    let fixture = attacks::build();
    let listed = |allow_hard_links: bool| -> Vec<String> {
        let ws = Sandbox::with_options(
            &fixture.root,
            SandboxOptions {
                allow_hard_links,
                ..SandboxOptions::default()
            },
        )
        .expect("workspace");
        let input = FsReadInput::new([Operation::directory(".", 3)]);
        let output = fs_read(&ws, &input, &ReadOptions::default());
        let json = serde_json::to_value(&output).expect("json");
        json["results"][0]["result"]["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["path"].as_str().expect("path").to_owned())
            .collect()
    };
    let refused = listed(false);
    assert!(refused.iter().any(|p| p == "ok.txt"), "{refused:?}");
    assert!(
        !refused.iter().any(|p| p == "hard_secret"),
        "a hard link to an outside file is not listed (nor its size): {refused:?}"
    );
    assert!(listed(true).iter().any(|p| p == "hard_secret"));
}

#[test]
fn a_symlink_swapped_during_requests_never_escapes() {
    let fixture = attacks::build();
    for resolver in resolvers() {
        let Some(ws) = workspace(&fixture, resolver) else {
            continue;
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flipper = attacks::flipper(&fixture.root, Arc::clone(&stop));
        let mut inside_reads = 0;
        let mut round = 0;
        while !attacks::raced_enough(round, 1500, &flipper) || (inside_reads == 0 && round < 75_000)
        {
            round += 1;
            let input = FsReadInput::new([
                Operation::line("race/only_outside.txt"),
                Operation::line("race/only_inside.txt"),
                Operation::directory("race", 1),
                Operation::search("race", "secret"),
            ]);
            let output = fs_read(&ws, &input, &ReadOptions::default());
            let json = serde_json::to_string(&output).expect("json");
            assert!(!json.contains(attacks::SECRET), "{resolver:?}: {json}");
            assert!(
                !json.contains("only_outside.txt\",\"kind"),
                "{resolver:?}: {json}"
            );
            assert!(!output.results[0].ok, "{resolver:?}: {json}");
            if output.results[1].ok {
                inside_reads += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        let flips = flipper.join().expect("flipper");
        assert!(flips > 10, "the flipper barely ran ({flips} flips)");
        assert!(
            inside_reads > 0,
            "{resolver:?}: the legitimate target never resolved"
        );
    }
}

/// Replaces the listed file at `path` with a FIFO and opens the listing's `entry`: the error
/// it must be refused with, returned without blocking (no writer ever comes).
fn open_with_a_fifo_swapped_in(
    reader: &ctx_fs::WalkReader<'_>,
    entry: &ctx_fs::WalkEntry,
    path: &std::path::Path,
) -> ctx_fs::SandboxError {
    std::fs::remove_file(path).expect("rm");
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let _ = done.send(reader.open_entry(entry).map(drop));
        });
        // A guard against a hang, not a timing assertion: an open that blocked would never
        // answer, and the write end below unblocks it so the test can end.
        let answer = finished.recv_timeout(std::time::Duration::from_secs(60));
        if answer.is_err() {
            let _ = std::fs::OpenOptions::new().write(true).open(path);
        }
        answer
            .expect("the open of a FIFO swapped in does not block")
            .expect_err("a FIFO is refused")
    })
}

/// A workspace `ws/` (beside `outside/`, which holds a secret) with the files the two tests
/// below change under a listing, and the listing (with or without a `stat` of each file);
/// `None` when `openat2` was asked for and this kernel has none.
struct ListedTree {
    tmp: tempfile::TempDir,
    root: std::path::PathBuf,
    ws: Sandbox,
    entries: Vec<ctx_fs::WalkEntry>,
}

impl ListedTree {
    fn new(resolver: Resolver, metadata: bool) -> Option<Self> {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("ws");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        for name in [
            "kept.txt",
            "replaced.txt",
            "fifo.txt",
            "dir.txt",
            "linked.txt",
            "sub/x.txt",
        ] {
            std::fs::write(root.join(name), format!("inside {name}\n")).expect("write");
        }
        std::fs::write(outside.join("x.txt"), "top secret\n").expect("write");
        let ws = Sandbox::with_options(
            &root,
            SandboxOptions {
                resolver,
                ..SandboxOptions::default()
            },
        )
        .expect("workspace");
        if resolver == Resolver::Openat2
            && matches!(ws.resolve("kept.txt"), Err(ctx_fs::SandboxError::Io { .. }))
        {
            return None;
        }
        let options = ctx_fs::WalkOptions {
            metadata,
            ..ctx_fs::WalkOptions::default()
        };
        let entries = ctx_fs::walk(ws.root(), &options).expect("walk");
        Some(Self {
            tmp,
            root,
            ws,
            entries,
        })
    }

    fn entry(&self, rel: &str) -> ctx_fs::WalkEntry {
        self.entries
            .iter()
            .find(|e| e.rel == rel)
            .unwrap_or_else(|| panic!("{rel} listed"))
            .clone()
    }

    /// `rel` replaced by another file (another inode, as an editor's save by rename does).
    fn replace(&self, rel: &str, text: &str) {
        std::fs::write(self.root.join("new.tmp"), text).expect("write");
        std::fs::rename(self.root.join("new.tmp"), self.root.join(rel)).expect("rename");
    }

    /// A second link to `linked.txt`, then `sub` swapped for a symlink that leads out: both
    /// listed files are refused (the hard-link rule, the escape).
    fn assert_links_are_refused(&self, reader: &ctx_fs::WalkReader<'_>, resolver: Resolver) {
        std::fs::hard_link(
            self.root.join("linked.txt"),
            self.tmp.path().join("elsewhere"),
        )
        .expect("link");
        let err = reader
            .open_entry(&self.entry("linked.txt"))
            .expect_err("hard link");
        assert!(
            matches!(err, ctx_fs::SandboxError::HardLink { .. }),
            "{resolver:?}: {err}"
        );
        let listed = self.entry("sub/x.txt");
        std::fs::rename(self.root.join("sub"), self.root.join("sub.old")).expect("rename");
        std::os::unix::fs::symlink("../outside", self.root.join("sub")).expect("symlink");
        let err = reader.open_entry(&listed).expect_err("symlink out");
        assert!(
            matches!(err, ctx_fs::SandboxError::SymlinkEscapes { .. }),
            "{resolver:?}: {err}"
        );
    }
}

/// A tree listed by the walker, then changed under the listing: each file a walk listed is
/// opened once ([`ctx_fs::WalkReader::open_entry`]) and must still be what was listed.
#[test]
fn listed_files_replaced_after_the_walk_are_refused() {
    for resolver in resolvers() {
        let Some(tree) = ListedTree::new(resolver, true) else {
            continue;
        };
        let ws = &tree.ws;
        assert!(
            tree.entries.iter().all(|e| e.file_id().is_some()),
            "stamped"
        );
        let reader = ctx_fs::WalkReader::new(ws, ws.root()).expect("reader");

        // Unchanged: read, with one open.
        assert_eq!(
            reader.read_entry(&tree.entry("kept.txt")).expect("read"),
            b"inside kept.txt\n"
        );

        // Replaced by another file: refused.
        let listed = tree.entry("replaced.txt");
        tree.replace("replaced.txt", "written after the listing\n");
        let err = reader.open_entry(&listed).expect_err("replaced");
        assert!(
            matches!(err, ctx_fs::SandboxError::Changed { .. }),
            "{resolver:?}: {err}"
        );

        // Replaced by a FIFO: refused, and the open does not block (no writer ever comes).
        let fifo = tree.root.join("fifo.txt");
        let err = open_with_a_fifo_swapped_in(&reader, &tree.entry("fifo.txt"), &fifo);
        assert!(
            matches!(
                err,
                ctx_fs::SandboxError::Changed { .. } | ctx_fs::SandboxError::SpecialFile { .. }
            ),
            "{resolver:?}: {err}"
        );

        tree.assert_links_are_refused(&reader, resolver);

        // An identity that is not the file's is refused by `open_listed` itself.
        let kept = tree.entry("kept.txt").file_id().expect("id");
        let wrong = ctx_fs::FileId {
            ino: kept.ino + 1,
            ..kept
        };
        assert!(matches!(
            ws.open_listed("kept.txt", wrong),
            Err(ctx_fs::SandboxError::Changed { .. })
        ));
        assert!(ws.open_listed("kept.txt", kept).is_ok());
    }
}

/// A walk that took no `stat` (as `search` walks): each file is opened once, by the type its
/// directory entry gave, and the descriptor must be a regular file. A FIFO, a directory, a
/// hard link or a symlink out put there after the listing is refused; another regular file
/// (an editor's save by rename) is read.
#[test]
fn files_listed_by_type_alone_are_opened_once_and_checked() {
    for resolver in resolvers() {
        let Some(tree) = ListedTree::new(resolver, false) else {
            continue;
        };
        let ws = &tree.ws;
        assert!(
            tree.entries.iter().all(|e| e.file_id().is_none()),
            "not stamped"
        );
        let reader = ctx_fs::WalkReader::new(ws, ws.root()).expect("reader");
        assert_eq!(
            reader.read_entry(&tree.entry("kept.txt")).expect("read"),
            b"inside kept.txt\n"
        );
        let listed = tree.entry("replaced.txt");
        tree.replace("replaced.txt", "written after the listing\n");
        assert_eq!(
            reader.read_entry(&listed).expect("another regular file"),
            b"written after the listing\n"
        );
        // A FIFO: refused, without blocking (no writer ever comes).
        let fifo = tree.root.join("fifo.txt");
        let err = open_with_a_fifo_swapped_in(&reader, &tree.entry("fifo.txt"), &fifo);
        assert!(
            matches!(err, ctx_fs::SandboxError::SpecialFile { .. }),
            "{resolver:?}: {err}"
        );
        // A directory.
        let listed = tree.entry("dir.txt");
        std::fs::remove_file(tree.root.join("dir.txt")).expect("rm");
        std::fs::create_dir(tree.root.join("dir.txt")).expect("mkdir");
        let err = reader.open_entry(&listed).expect_err("a directory");
        assert!(
            matches!(err, ctx_fs::SandboxError::SpecialFile { .. }),
            "{resolver:?}: {err}"
        );
        tree.assert_links_are_refused(&reader, resolver);
    }
}
