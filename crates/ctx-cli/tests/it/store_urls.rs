//! Bad shared-store settings fail with one line naming the URL and what to do, before anything
//! is written. (The shared backends themselves are tested in ctx-store's `tests/it/backends.rs`
//! and by `scripts/scale-test`.)

use crate::common::Env;

#[test]
fn an_unknown_object_url_is_refused() {
    let env = Env::new();
    env.run(&["init"]).ok();
    env.run(&["--store-url", "gs://bucket/prefix", "store", "verify"])
        .bad_input("s3://BUCKET/PREFIX");
    env.run(&["--store-url", "s3://", "store", "verify"])
        .bad_input("no bucket");
}

#[test]
fn an_unreachable_database_names_itself_without_its_password() {
    let env = Env::new();
    env.run(&["init"]).ok();
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    let run = env.run(&[
        "--store-url",
        "postgres://ctx:hunter2@127.0.0.1:1/ctx?connect_timeout=2",
        "store",
        "verify",
    ]);
    assert_eq!(
        run.code, 74,
        "an I/O failure, as for a failing disk: {}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("postgres://ctx:***@127.0.0.1:1/ctx"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    assert!(run.stderr.contains("cannot connect"), "{}", run.stderr);
}
