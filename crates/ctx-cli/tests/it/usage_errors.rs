//! Command lines clap refuses: one line on stderr naming the input and what to do, exit 2,
//! nothing on stdout; `--help` and `--version` still print in full and exit 0.

use crate::common::Env;

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

/// Budgets are written as people write them (`10k`, `1.5M`); a budget of 0, or one too small
/// for any file, is an error naming the smallest useful budget, and nothing is written.
#[test]
fn budgets_take_suffixes_and_too_small_ones_name_the_smallest_useful_one() {
    let env = Env::new();
    crate::common::write_files(
        &env.work(),
        &[("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n")],
    );
    let out = env.work().join("context.md");
    let out_arg = out.to_str().expect("utf8");
    let run = env.run(&["pack", ".", "--budget", "10k", "-o", out_arg]);
    assert!(run.ok().stdout.contains("/ 10000 tokens"), "{}", run.stdout);
    std::fs::remove_file(&out).expect("remove");
    let zero = env.run(&["pack", ".", "--budget", "0", "-o", out_arg]);
    zero.bad_input("a budget of 0 tokens holds nothing");
    assert!(!out.exists(), "nothing is written for a bad budget");
    let small = env.run(&["pack", ".", "--budget", "5", "-o", out_arg]);
    small.bad_input("the smallest useful budget here is");
    assert!(
        !out.exists(),
        "nothing is written for a budget that holds no file"
    );
    let smallest: u64 = small
        .stderr
        .split("is ")
        .last()
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a number of tokens");
    env.run(&[
        "pack",
        ".",
        "--budget",
        &smallest.to_string(),
        "-o",
        out_arg,
    ])
    .ok();
    assert!(out.exists());
    env.run(&[
        "pack",
        ".",
        "--budget",
        &(smallest - 1).to_string(),
        "-o",
        out_arg,
    ])
    .bad_input("holds no file");
    let select = env.run(&["select", "--budget", "1.5M", "--", "main"]);
    assert!(
        select.ok().stdout.contains("of 1500000 tokens"),
        "{}",
        select.stdout
    );
}

/// A missing file is one sentence: what is wrong and what to do, once.
#[test]
fn tokens_of_a_missing_file_says_so_once() {
    let env = Env::new();
    let run = env.run(&["tokens", "nope.txt"]);
    run.bad_input("`nope.txt` does not exist");
    assert_eq!(
        run.stderr.matches("name ").count(),
        1,
        "one hint, not two: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("cannot read `nope.txt` does"),
        "{}",
        run.stderr
    );
}

/// An error that names its cause in its own message does not repeat the cause on the line, and
/// a transcript that is not there is refused before a store is made for it.
#[test]
fn importing_a_missing_transcript_names_the_cause_once() {
    let env = Env::new();
    let run = env.run(&["run", "import", "nope.jsonl"]);
    run.bad_input("nope.jsonl");
    assert!(
        !env.home.join(".ctx").exists(),
        "bad input leaves no global store behind"
    );
    assert_eq!(
        run.stderr.matches("os error 2").count(),
        1,
        "the cause once: {}",
        run.stderr
    );
}

/// Every command's `--help` lists each global option once, and speaks of what ctx does, not of
/// the documents or issues it was built from.
#[test]
fn every_help_lists_global_options_once_and_no_project_history() {
    let env = Env::new();
    let mut pending: Vec<Vec<String>> = vec![Vec::new()];
    let mut seen = 0;
    while let Some(path) = pending.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let run = env.run(&args);
        run.ok();
        let help = &run.stdout;
        seen += 1;
        assert_eq!(
            help.matches("--store <DIR>").count(),
            1,
            "{args:?}:\n{help}"
        );
        assert_eq!(help.matches("-C <DIR>").count(), 1, "{args:?}:\n{help}");
        let lower = help.to_lowercase();
        for word in ["seed 0", "seed's", "issue 1", "issue 2", "issue 3"] {
            assert!(!lower.contains(word), "{args:?} says `{word}`:\n{help}");
        }
        // Subcommands listed under "Commands:", until the next heading.
        let mut in_commands = false;
        for line in help.lines() {
            if line.starts_with("Commands:") {
                in_commands = true;
                continue;
            }
            if in_commands {
                if !line.starts_with("  ") {
                    in_commands = false;
                    continue;
                }
                // A command's line starts at the indent; a wrapped description is deeper.
                if line.starts_with("   ") {
                    continue;
                }
                let name = line.split_whitespace().next().unwrap_or_default();
                if !name.is_empty() && name != "help" {
                    let mut next = path.clone();
                    next.push(name.to_owned());
                    pending.push(next);
                }
            }
        }
    }
    assert!(seen > 40, "walked {seen} commands");
}
