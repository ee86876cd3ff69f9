//! Today's `ctx` reads a store written by the last release and prints what the release
//! printed, byte for byte (the fixture and its expected output live in ctx-store:
//! `crates/ctx-store/tests/fixtures/release-store/`, made by `make-release-store.sh`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::Env;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ctx-store/tests/fixtures/release-store")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("readdir") {
        let entry = entry.expect("entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

#[test]
fn read_commands_print_what_the_release_printed() {
    let env = Env::new();
    copy_dir(&fixture().join("work"), &env.work());
    let work = env.work().to_str().expect("utf8").to_owned();
    for (args, file) in [
        (&["--json", "pack", "list"][..], "pack-list.json"),
        (
            &["--json", "pack", "show", "docs"][..],
            "pack-show-docs.json",
        ),
        (&["--json", "pack", "snapshots"][..], "snapshots.json"),
        (
            &["pack", "render", "docs", "--snapshot", "v1"][..],
            "snapshot-v1.txt",
        ),
        (&["--json", "run", "log"][..], "run-log.json"),
        (&["--json", "store", "verify"][..], "store-verify.json"),
    ] {
        let run = env.run(args);
        run.ok();
        let then = fs::read_to_string(fixture().join("expected").join(file)).expect("expected");
        assert_eq!(
            run.stdout.replace(&work, "WORK"),
            then,
            "`ctx {}` differs from the release's output",
            args.join(" ")
        );
    }
}
