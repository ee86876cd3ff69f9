//! Command lines clap refuses: one line on stderr naming the input and what to do, exit 2,
//! nothing on stdout; `--help` and `--version` still print in full and exit 0.

mod common;

use common::Env;

#[test]
fn argument_errors_are_one_line_with_exit_2() {
    let env = Env::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["pack", "add"],
            "`ctx pack add` is missing <NAME> and <SOURCE>",
        ),
        (
            &["pack", "add", "docs"],
            "is missing <SOURCE>; write `ctx pack add <NAME> <SOURCE>`",
        ),
        (
            &["config"],
            "`ctx config` needs a subcommand: get, set, unset, list",
        ),
        (
            &["pack", "--budget", "x"],
            "invalid value 'x' for '--budget <N>'",
        ),
        (
            &["pack", "create", "x", "--budget", "abc"],
            "invalid value 'abc' for '--budget <N>'",
        ),
        (
            &["--format", "yaml", "status"],
            "[possible values: human, json, compact]",
        ),
        (&["--bogus"], "unexpected argument '--bogus'"),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&["serve"], "`ctx serve` is missing --workspaces <DIR>"),
        (&["read", "--lines", "1:2"], "`ctx read` is missing <PATH>"),
    ];
    for (args, needle) in cases {
        let run = env.run(args);
        run.bad_input(needle);
        assert!(
            run.stderr.contains("--help` explains") || run.stderr.contains("--help` says"),
            "{}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

#[test]
fn help_and_version_still_print_in_full() {
    let env = Env::new();
    let help = env.run(&["pack", "add", "--help"]);
    help.ok();
    assert!(
        help.stdout.contains("Usage: ctx pack add"),
        "{}",
        help.stdout
    );
    let version = env.run(&["--version"]);
    version.ok();
    assert!(version.stdout.starts_with("ctx "), "{}", version.stdout);
}
