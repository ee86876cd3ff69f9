//! `fs_read` through the library: each mode, batches with failing operations, the response
//! cap and its continuations, bad input, and the text form.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use ctx_fs::read::{FsReadInput, OpResult, Operation, ReadOptions, fs_read, input_schema};
use ctx_fs::sandbox::Sandbox;
use serde_json::{Value, json};

fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, body) in files {
        let path = dir.path().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, body).expect("write");
    }
    dir
}

/// [`tree`] of generated files.
fn tree_owned(files: &[(String, Vec<u8>)]) -> tempfile::TempDir {
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    tree(&refs)
}

fn run(root: &Path, request: &Value) -> Value {
    run_with(root, request, &ReadOptions::default())
}

fn run_with(root: &Path, request: &Value, options: &ReadOptions) -> Value {
    let ws = Sandbox::open(root).expect("workspace");
    let input = FsReadInput::from_json(request).expect("request parses");
    serde_json::to_value(fs_read(&ws, &input, options)).expect("json")
}

#[test]
fn line_mode_reads_ranges_and_reports_numbers() {
    let dir = tree(&[("src/a.rs", b"one\r\ntwo\r\nthree\r\nfour\r\n")]);
    let out = run(
        dir.path(),
        &json!({"operations": [
            {"mode": "Line", "path": "src/a.rs", "start_line": 2, "end_line": 3},
            {"mode": "Line", "path": "src/a.rs", "start_line": -1},
            {"mode": "Line", "path": "src/a.rs"},
        ]}),
    );
    assert_eq!(out["failed"], 0);
    let r = &out["results"][0]["result"];
    assert_eq!(r["content"], "two\nthree");
    assert_eq!(
        (r["start_line"].as_u64(), r["end_line"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(r["total_lines"], 4);
    assert_eq!(out["results"][1]["result"]["content"], "four");
    assert_eq!(
        out["results"][2]["result"]["content"],
        "one\ntwo\nthree\nfour"
    );
    assert_eq!(out["results"][2]["result"]["file_bytes"], 23);
}

#[test]
fn directory_mode_is_breadth_first_sorted_and_honours_ignore_rules() {
    let dir = tree(&[
        (".gitignore", b"*.log\n"),
        ("b.txt", b"bb"),
        ("a/z.txt", b"z"),
        ("a/deep/x.txt", b"x"),
        ("A.txt", b""),
        ("debug.log", b"ignored"),
        ("node_modules/pkg/index.js", b""),
        (".github/ci.yml", b""),
    ]);
    let out = run(dir.path(), &json!({"mode": "Directory", "path": "."}));
    let r = &out["results"][0]["result"];
    let paths: Vec<&str> = r["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, [".github", ".gitignore", "A.txt", "a", "b.txt"]);
    let b = &r["entries"][4];
    assert_eq!(
        (b["kind"].as_str(), b["size"].as_u64()),
        (Some("file"), Some(2))
    );
    assert!(b["mtime"].as_i64().expect("mtime") > 1_600_000_000);
    assert_eq!(r["entries"][3]["kind"], "dir");

    let out = run(
        dir.path(),
        &json!({"mode": "Directory", "path": ".", "depth": 1}),
    );
    let paths: Vec<&str> = out["results"][0]["result"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert_eq!(
        paths,
        [
            ".github",
            ".gitignore",
            "A.txt",
            "a",
            "b.txt",
            ".github/ci.yml",
            "a/deep",
            "a/z.txt"
        ]
    );

    let out = run(
        dir.path(),
        &json!({"mode": "Directory", "path": "a", "depth": 5}),
    );
    let paths: Vec<&str> = out["results"][0]["result"]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, ["a/deep", "a/z.txt", "a/deep/x.txt"]);
}

#[test]
fn search_mode_finds_literals_regexes_and_skips_binaries() {
    let dir = tree(&[
        ("src/a.rs", b"fn main() {\n    // TODO: fix\n}\n"),
        ("src/b.rs", b"let todo = 1;\nlet x = a.b;\n"),
        ("bin.dat", b"TODO\0\0\0"),
        ("ignored/.keep", b""),
        (".gitignore", b"ignored/\n"),
        ("ignored/c.rs", b"TODO hidden by gitignore"),
    ]);
    let out = run(
        dir.path(),
        &json!({"operations": [
            {"mode": "Search", "path": ".", "pattern": "todo", "context_lines": 1},
            {"mode": "Search", "path": "src/b.rs", "pattern": "a.b", "context_lines": 0},
            {"mode": "Search", "path": "src", "pattern": "fn \\w+\\(", "regex": true, "context_lines": 0},
            {"mode": "Search", "path": "src", "pattern": "todo", "case_sensitive": true, "context_lines": 0},
            {"mode": "Search", "path": "src", "pattern": "nothing here"},
            {"mode": "Search", "path": "bin.dat", "pattern": "TODO"},
        ]}),
    );
    let all = &out["results"][0]["result"];
    assert_eq!(all["total_matches"], 2, "{all}");
    assert_eq!(all["files_skipped"], 1, "the binary file");
    assert_eq!(all["matches"][0]["path"], "src/a.rs");
    assert_eq!(all["matches"][0]["line_number"], 2);
    assert_eq!(
        all["matches"][0]["context"],
        "  1: fn main() {\n→ 2:     // TODO: fix\n  3: }\n"
    );
    assert_eq!(all["matches"][1]["path"], "src/b.rs");
    let literal = &out["results"][1]["result"];
    assert_eq!(literal["total_matches"], 1);
    assert_eq!(literal["matches"][0]["context"], "→ 2: let x = a.b;\n");
    assert_eq!(out["results"][2]["result"]["matches"][0]["line_number"], 1);
    assert_eq!(out["results"][3]["result"]["total_matches"], 1);
    assert_eq!(out["results"][4]["result"]["total_matches"], 0);
    let binary = &out["results"][5];
    assert_eq!(binary["ok"], false);
    assert!(
        binary["error"]["message"]
            .as_str()
            .expect("message")
            .contains("binary")
    );
}

#[test]
fn a_failing_operation_does_not_stop_the_batch() {
    let dir = tree(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let out = run(
        dir.path(),
        &json!({"operations": [
            {"mode": "Line", "path": "a.txt"},
            {"mode": "Line", "path": "missing.txt"},
            {"mode": "Frobnicate", "path": "a.txt"},
            {"mode": "Line", "path": "b.txt"},
        ]}),
    );
    assert_eq!(out["failed"], 2);
    let results = out["results"].as_array().expect("results");
    assert_eq!(results[0]["result"]["content"], "a");
    assert_eq!(results[1]["error"]["kind"], "not_found");
    assert!(
        results[1]["error"]["message"]
            .as_str()
            .expect("m")
            .contains("missing.txt")
    );
    assert_eq!(results[2]["error"]["kind"], "invalid_input");
    assert_eq!(results[2]["mode"], "Frobnicate");
    assert_eq!(results[3]["result"]["content"], "b");
}

#[test]
fn bad_input_is_explained() {
    let dir = tree(&[("bin.dat", b"\xff\xfe\x00abc"), ("d/x", b"")]);
    let out = run(
        dir.path(),
        &json!({"operations": [
            {"mode": "Line", "path": "bin.dat"},
            {"mode": "Search", "path": "d"},
            {"mode": "Directory", "path": "d", "depth": -1},
            {"mode": "Line", "path": "d"},
            {"mode": "Directory", "path": "bin.dat"},
            {"mode": "Line", "path": "bin.dat", "start_line": 9},
            {"mode": "Line", "path": "d/x", "start_line": 2},
        ]}),
    );
    let message = |i: usize| {
        out["results"][i]["error"]["message"]
            .as_str()
            .expect("message")
            .to_owned()
    };
    assert!(
        message(0).contains("not UTF-8") && message(0).contains("6 bytes"),
        "{}",
        message(0)
    );
    assert!(message(1).contains("needs a `pattern`"), "{}", message(1));
    assert!(
        message(2).contains("`depth` must be 0 or more"),
        "{}",
        message(2)
    );
    assert!(message(3).contains("is a directory"), "{}", message(3));
    assert!(message(4).contains("not a directory"), "{}", message(4));
    assert!(message(6).contains("has 0 lines"), "{}", message(6));
    assert_eq!(out["failed"], 7);
}

#[test]
fn the_response_cap_truncates_in_order_and_continuations_resume() {
    let body = (1..=200).fold(String::new(), |mut acc, i| {
        let _ = writeln!(acc, "line {i:04}");
        acc
    });
    let dir = tree(&[("a.txt", body.as_bytes()), ("b.txt", body.as_bytes())]);
    let options = ReadOptions {
        max_response_bytes: 1000,
        ..ReadOptions::default()
    };
    // a.txt fills 899 bytes (90 lines joined by \n); b.txt gets the 101 left: 10 lines.
    let out = run_with(
        dir.path(),
        &json!({"operations": [
            {"mode": "Line", "path": "a.txt", "start_line": 1, "end_line": 90},
            {"mode": "Line", "path": "b.txt"},
        ]}),
        &options,
    );
    assert_eq!(out["truncated"], true);
    let a = &out["results"][0]["result"];
    assert_eq!(
        (a["lines_returned"].as_u64(), a["truncated"].as_bool()),
        (Some(90), Some(false))
    );
    let b = &out["results"][1]["result"];
    assert_eq!(b["truncated"], true);
    assert_eq!(b["lines_returned"], 10);
    assert_eq!(b["next_start_line"], 11);
    let again = run_with(
        dir.path(),
        &json!({"mode": "Line", "path": "b.txt", "start_line": 11}),
        &options,
    );
    assert!(
        again["results"][0]["result"]["content"]
            .as_str()
            .expect("c")
            .starts_with("line 0011\n")
    );

    // Directory and Search continue by offset; the pages join up to the whole listing.
    let many: Vec<(String, Vec<u8>)> = (0..60)
        .map(|i| (format!("d/f{i:02}.txt"), b"hit\n".to_vec()))
        .collect();
    let many_refs: Vec<(&str, &[u8])> = many
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let dir = tree(&many_refs);
    for (mode, extra, list) in [
        ("Directory", json!({}), "entries"),
        (
            "Search",
            json!({"pattern": "hit", "context_lines": 0}),
            "matches",
        ),
    ] {
        let mut seen = Vec::new();
        let mut offset = 0;
        for _ in 0..20 {
            let mut op = json!({"mode": mode, "path": "d", "offset": offset});
            for (k, v) in extra.as_object().expect("object") {
                op[k] = v.clone();
            }
            let out = run_with(dir.path(), &op, &options);
            let r = &out["results"][0]["result"];
            for item in r[list].as_array().expect("list") {
                seen.push(item["path"].as_str().expect("path").to_owned());
            }
            match r["next_offset"].as_u64() {
                Some(next) => offset = next,
                None => break,
            }
        }
        let want: Vec<String> = (0..60).map(|i| format!("d/f{i:02}.txt")).collect();
        assert_eq!(seen, want, "{mode}");
    }
}

#[test]
fn the_text_form_is_amazon_q_style() {
    let dir = tree(&[("a.txt", b"alpha\nbeta\n"), ("d/x.rs", b"x")]);
    let ws = Sandbox::open(dir.path()).expect("workspace");
    let single = fs_read(
        &ws,
        &FsReadInput::new([Operation::line("a.txt")]),
        &ReadOptions::default(),
    );
    assert_eq!(single.to_text(), "alpha\nbeta\n");
    let batch = fs_read(
        &ws,
        &FsReadInput::new([
            Operation::search("a.txt", "BETA"),
            Operation::directory("d", 0),
            Operation::line("nope"),
        ]),
        &ReadOptions::default(),
    );
    let text = batch.to_text();
    assert!(
        text.starts_with("=== [1] Search a.txt ===\na.txt:2\n  1: alpha\n→ 2: beta\n"),
        "{text}"
    );
    assert!(
        text.contains("=== [2] Directory d ===\n-          1 "),
        "{text}"
    );
    assert!(text.contains(" d/x.rs\n"), "{text}");
    assert!(
        text.contains("=== [3] Line nope ===\nerror: `nope` does not exist"),
        "{text}"
    );
    assert!(matches!(batch.results[0].result, Some(OpResult::Search(_))));
}

#[test]
fn the_schema_names_every_field_the_parser_accepts() {
    let schema = input_schema();
    let props = schema["properties"]["operations"]["items"]["properties"]
        .as_object()
        .expect("properties");
    for field in [
        "mode",
        "path",
        "start_line",
        "end_line",
        "depth",
        "pattern",
        "context_lines",
        "regex",
        "case_sensitive",
        "offset",
    ] {
        assert!(props.contains_key(field), "{field}");
        let mut op = json!({"mode": "Search", "path": "x", "pattern": "p"});
        if !["mode", "path", "pattern"].contains(&field) {
            op[field] = if ["regex", "case_sensitive"].contains(&field) {
                json!(true)
            } else {
                json!(1)
            };
        }
        let input = FsReadInput::from_json(&op).expect("parses");
        assert!(input.operations[0].operation.is_ok(), "{field}");
    }
}

#[test]
fn a_one_thread_walk_lists_and_searches_the_same_as_a_parallel_one() {
    let files: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("d{}/sub{}/f{i}.txt", i % 3, i % 5),
                format!("hit {i}\n").into_bytes(),
            )
        })
        .collect();
    let dir = tree_owned(&files);
    let request = json!({"operations": [
        {"mode": "Directory", "path": ".", "depth": 3},
        {"mode": "Search", "path": ".", "pattern": "hit", "context_lines": 0},
    ]});
    let parallel = run(dir.path(), &request);
    let single = run_with(
        dir.path(),
        &request,
        &ReadOptions {
            walk_threads: 1,
            ..ReadOptions::default()
        },
    );
    assert_eq!(parallel, single);
    assert_eq!(single["results"][1]["result"]["total_matches"], 40);
}

/// A PEM private key block of `lines` body lines: a synthetic key in the real shape.
fn pem_key(lines: usize) -> (String, Vec<String>) {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let body: Vec<String> = (0..lines)
        .map(|_| {
            (0..64)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    char::from(ALPHABET[(state >> 58) as usize])
                })
                .collect()
        })
        .collect();
    let block = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        body.join("\n")
    );
    (block, body)
}

/// A key cut by a window is still a key: every window over the file, however it cuts the
/// block (the body without its BEGIN line, the END line alone, one body line), shows no
/// line of the key's body.
#[test]
fn a_window_that_cuts_a_key_shows_none_of_it() {
    let (key, body) = pem_key(25);
    let text = format!(
        "package auth\n\n// The service key.\nconst key = `\n{key}\n`\n\nfunc Load() string {{\n\treturn key\n}}\n"
    );
    let total = text.lines().count();
    let dir = tree(&[("src/auth/keys.go", text.as_bytes())]);
    for start in 1..=total {
        for end in start..=total {
            let out = run(
                dir.path(),
                &json!({"mode": "Line", "path": "src/auth/keys.go", "start_line": start, "end_line": end}),
            );
            let content = out["results"][0]["result"]["content"]
                .as_str()
                .expect("content");
            for line in &body {
                assert!(
                    !content.contains(line.as_str()),
                    "lines {start}:{end} show a line of the key:\n{content}"
                );
            }
            // The window keeps its lines: one per line asked for.
            assert_eq!(
                content.split('\n').count(),
                end - start + 1,
                "lines {start}:{end}:\n{content}"
            );
        }
    }
    // Lines away from the key are shown as they are.
    let out = run(
        dir.path(),
        &json!({"mode": "Line", "path": "src/auth/keys.go", "start_line": total - 2, "end_line": total}),
    );
    assert_eq!(
        out["results"][0]["result"]["content"],
        "func Load() string {\n\treturn key\n}"
    );
}

/// Search sees the file's secrets whole: a context that reaches into a key from below shows
/// none of it, and a pattern found only inside the key matches nothing.
#[test]
fn search_contexts_hide_a_key_they_cut_and_secrets_match_nothing() {
    let (key, body) = pem_key(20);
    let text = format!("const key = `\n{key}\n`\n\n// find_me_here\n");
    let dir = tree(&[("keys.go", text.as_bytes())]);
    let out = run(
        dir.path(),
        &json!({"mode": "Search", "path": ".", "pattern": "find_me_here", "context_lines": 6}),
    );
    let matches = &out["results"][0]["result"]["matches"];
    let context = matches[0]["context"].as_str().expect("context");
    assert!(context.contains("find_me_here"), "{context}");
    for line in &body {
        assert!(!context.contains(line.as_str()), "{context}");
    }
    for pattern in [&body[3][..20], &body[10][5..30]] {
        let out = run(
            dir.path(),
            &json!({"mode": "Search", "path": ".", "pattern": pattern}),
        );
        assert_eq!(
            out["results"][0]["result"]["total_matches"], 0,
            "{pattern}: {out}"
        );
    }
}

/// "Work whose request timed out keeps burning CPU" (issue: nothing takes the host down): a
/// caller that gave up sets `cancel`, and listings, searches and walks stop instead of
/// running to their end; without the flag the same requests succeed.
#[test]
fn work_whose_request_timed_out_stops() {
    let files: Vec<(String, Vec<u8>)> = (0..300)
        .map(|i| (format!("d{}/f{i}.txt", i % 7), b"needle\n".to_vec()))
        .collect();
    let dir = tree_owned(&files);
    let request = json!({"operations": [
        {"mode": "Directory", "path": ".", "depth": 3},
        {"mode": "Search", "path": ".", "pattern": "needle"},
    ]});
    let given_up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    for threads in [1, 0] {
        let options = ReadOptions {
            walk_threads: threads,
            cancel: Some(std::sync::Arc::clone(&given_up)),
            ..ReadOptions::default()
        };
        let stopped = run_with(dir.path(), &request, &options);
        for result in stopped["results"].as_array().expect("results") {
            assert_eq!(result["ok"], false, "{result}");
            assert!(
                result["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("caller gave up")),
                "{result}"
            );
        }
        let options = ReadOptions {
            walk_threads: threads,
            ..ReadOptions::default()
        };
        let done = run_with(dir.path(), &request, &options);
        assert_eq!(done["failed"], 0, "{done}");
    }
    // The walk itself: nothing is kept once the flag is set, on one thread or several.
    for threads in [1, 2] {
        let opts = ctx_fs::WalkOptions {
            threads,
            cancel: Some(std::sync::Arc::clone(&given_up)),
            ..ctx_fs::WalkOptions::default()
        };
        assert!(matches!(
            ctx_fs::walk(dir.path(), &opts),
            Err(ctx_fs::WalkError::Cancelled)
        ));
    }
}
