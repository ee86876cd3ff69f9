//! Issue 14's findings through the MCP tools: a pattern that would abort the process, pack
//! sources and code tools that led out of the workspace (symlinks at render time, hard links,
//! a symlink swapped in while requests run), and secrets in answers.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{Fixture, call, fails, ok, text_of};
use serde_json::{Value, json};

/// Text that must never appear in an answer: it lives outside the workspace.
const OUTSIDE: &str = "OUTSIDE_WORKSPACE_MARKER";

fn outside_dir(fx: &Fixture) -> std::path::PathBuf {
    let outside = fx.root.parent().expect("parent").join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(
        outside.join("secret.rs"),
        format!("pub fn leaked() {{ let _ = \"{OUTSIDE}\"; }}\n"),
    )
    .expect("write");
    std::fs::write(outside.join("notes.md"), format!("# {OUTSIDE}\n")).expect("write");
    outside
}

#[tokio::test]
async fn a_pattern_that_would_abort_the_process_is_refused_and_the_server_goes_on() {
    let fx = Fixture::new();
    crate::common::write(&fx.root, "long.txt", &format!("{}\n", "ab".repeat(150)));
    let server = fx.server(false);
    for pattern in [
        "()".repeat(30_000),
        "(a|b)*".repeat(1_000),
        "()".repeat(60_000),
    ] {
        let message = fails(
            &server,
            "fs_read",
            json!({ "operations": [{ "mode": "Search", "path": "long.txt", "pattern": pattern, "regex": true }] }),
        )
        .await;
        assert!(
            message.contains("capture groups") || message.contains("bytes long"),
            "{message}"
        );
        assert!(!message.contains('\n'), "one line: {message}");

        let message = fails(
            &server,
            "ctx_search",
            json!({ "pattern": pattern, "mode": "regex" }),
        )
        .await;
        assert!(
            message.contains("capture groups") || message.contains("bytes long"),
            "{message}"
        );
    }
    // Nesting and compiled size are bounded too.
    let deep = format!("{}a{}", "(?:".repeat(500), ")".repeat(500));
    fails(
        &server,
        "ctx_search",
        json!({ "pattern": deep, "mode": "regex" }),
    )
    .await;
    let message = fails(
        &server,
        "fs_read",
        json!({ "operations": [{ "mode": "Search", "path": ".", "pattern": "(?:\\w{1000}){1000}", "regex": true }] }),
    )
    .await;
    assert!(message.contains("MiB"), "{message}");
    // The same server still answers.
    ok(&server, "ctx_search", json!({ "pattern": "helper" })).await;
}

#[tokio::test]
async fn pack_sources_are_read_through_the_sandbox_at_render() {
    let fx = Fixture::new();
    let outside = outside_dir(&fx);
    std::os::unix::fs::symlink(outside.join("notes.md"), fx.root.join("pw.md")).expect("link");
    let server = fx.server(true);
    ok(&server, "ctx_packs_create", json!({ "name": "p" })).await;
    // Refused when added.
    let message = fails(
        &server,
        "ctx_packs_add",
        json!({ "pack": "p", "source": "file:pw.md" }),
    )
    .await;
    assert!(message.contains("outside the workspace"), "{message}");
    // A source that becomes a symlink after it was added is not followed at render.
    crate::common::write(&fx.root, "later.md", "# fine\n");
    ok(
        &server,
        "ctx_packs_add",
        json!({ "pack": "p", "source": "file:later.md" }),
    )
    .await;
    ok(
        &server,
        "ctx_packs_add",
        json!({ "pack": "p", "source": "md_dir:docs" }),
    )
    .await;
    std::fs::remove_file(fx.root.join("later.md")).expect("rm");
    std::os::unix::fs::symlink(outside.join("notes.md"), fx.root.join("later.md")).expect("link");
    // A collection's directory swapped for a symlink, and a hard link inside it.
    std::fs::rename(fx.root.join("docs"), fx.root.join("docs.old")).expect("mv");
    std::os::unix::fs::symlink(&outside, fx.root.join("docs")).expect("link");
    let read_only = fx.server(false);
    for tool in ["ctx_packs_render", "ctx_packs_preview"] {
        let result = call(&read_only, tool, json!({ "packs": ["p"] })).await;
        let text = text_of(&result);
        assert!(!text.contains(OUTSIDE), "{tool} leaked: {text}");
    }
    std::fs::remove_file(fx.root.join("docs")).expect("rm");
    std::fs::rename(fx.root.join("docs.old"), fx.root.join("docs")).expect("mv");
    std::fs::hard_link(outside.join("notes.md"), fx.root.join("docs/hard.md")).expect("link");
    let result = call(&read_only, "ctx_packs_render", json!({ "packs": ["p"] })).await;
    let text = text_of(&result);
    assert!(!text.contains(OUTSIDE), "hard link leaked: {text}");
    assert!(text.contains("# Guide"), "the rest still renders: {text}");
}

#[tokio::test]
async fn hard_links_are_refused_by_every_tool() {
    let fx = Fixture::new();
    let outside = outside_dir(&fx);
    std::fs::hard_link(outside.join("secret.rs"), fx.root.join("src/hard.rs")).expect("link");
    let server = fx.server(false);
    fails(&server, "ctx_summarize", json!({ "path": "src/hard.rs" })).await;
    for (tool, args) in [
        ("ctx_search", json!({ "pattern": "leaked", "context": 2 })),
        (
            "ctx_search",
            json!({ "pattern": "leaked", "mode": "symbol" }),
        ),
        (
            "ctx_search",
            json!({ "pattern": "leaked", "mode": "caller" }),
        ),
        ("ctx_summarize", json!({ "path": "src" })),
        ("ctx_map", json!({})),
        ("ctx_map", json!({ "path": "src" })),
        (
            "ctx_select",
            json!({ "query": "leaked outside workspace marker" }),
        ),
        (
            "fs_read",
            json!({ "operations": [
                { "mode": "Search", "path": ".", "pattern": "leaked" },
                { "mode": "Line", "path": "src/hard.rs" },
                { "mode": "Directory", "path": "src" }
            ] }),
        ),
    ] {
        let result = call(&server, tool, args.clone()).await;
        let text = text_of(&result);
        assert!(!text.contains(OUTSIDE), "{tool} {args}: {text}");
        assert!(!text.contains("pub fn leaked"), "{tool} {args}: {text}");
    }
}

/// A thread swaps `src` between the real directory and a symlink to a directory outside while
/// every path-taking code tool is called; no answer may hold outside content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stdout)] // the figures, with --nocapture
async fn a_symlink_swapped_in_during_requests_never_leads_out() {
    let fx = Fixture::new();
    let outside = outside_dir(&fx);
    std::fs::copy(outside.join("secret.rs"), outside.join("lib.rs")).expect("copy");
    // Write tools on, to give the race a pack whose sources lie under the swapped directory.
    let server = fx.server(true);
    ok(
        &server,
        "ctx_packs_create",
        json!({ "name": "raced", "budget": 100_000 }),
    )
    .await;
    ok(
        &server,
        "ctx_packs_add",
        json!({ "pack": "raced", "source": "glob:src/**/*.rs" }),
    )
    .await;
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let root = fx.root.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || swap_until(&root, &outside, &stop))
    };
    // The figure: 10,000 racing calls (CTX_RACE_CALLS changes the count).
    let calls: usize = std::env::var("CTX_RACE_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let tools: [(&str, Value); 9] = [
        ("ctx_summarize", json!({ "path": "src/lib.rs" })),
        ("ctx_summarize", json!({ "path": "src" })),
        ("ctx_search", json!({ "pattern": "leaked", "path": "src" })),
        ("ctx_map", json!({ "path": "src" })),
        (
            "fs_read",
            json!({ "operations": [{ "mode": "Line", "path": "src/lib.rs" }] }),
        ),
        (
            "ctx_search",
            json!({ "pattern": "leaked", "mode": "symbol" }),
        ),
        ("ctx_related", json!({ "file": "src/lib.rs" })),
        ("ctx_diff_context", json!({ "path": "src" })),
        (
            "ctx_packs_preview",
            json!({ "packs": ["raced"], "show_payload": true }),
        ),
    ];
    let mut escapes = 0;
    let mut refused = 0;
    let mut first = String::new();
    for i in 0..calls {
        let (tool, args) = &tools[i % tools.len()];
        let result = call(&server, tool, args.clone()).await;
        let text = text_of(&result);
        // A call that met the swapped-in link is refused (or finds nothing under `src`).
        if result.is_error == Some(true) || text.contains("\"ok\":false") {
            refused += 1;
        }
        if text.contains(OUTSIDE) || text.contains("pub fn leaked") {
            if first.is_empty() {
                first = format!("{tool} {args}: {}", &text[..text.len().min(400)]);
            }
            escapes += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    assert_eq!(
        escapes, 0,
        "{escapes} of {calls} calls read outside the workspace; the first: {first}"
    );
    // The race really happened: some calls met the link (and were refused).
    assert!(refused > 0, "no call of {calls} met the swapped-in link");
    println!("{calls} racing calls: 0 escapes, {refused} refused while the link was in place");
}

fn swap_until(root: &Path, outside: &Path, stop: &AtomicBool) {
    let src = root.join("src");
    let real = root.join("src.real");
    while !stop.load(Ordering::Relaxed) {
        if std::fs::rename(&src, &real).is_ok() {
            let _ = std::os::unix::fs::symlink(outside, &src);
            std::thread::yield_now();
            let _ = std::fs::remove_file(&src);
            let _ = std::fs::rename(&real, &src);
        }
        std::thread::yield_now();
    }
}

const SECRETS: &[&str] = &[
    "AKIAQYLPMN5HHHFPZAM2",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz7kq3pL9v",
    "ghp_R7sZ0vK3mQ9xW2yT5uB8nL4cE6fH1jA0pD3g",
    "Zq8vN3kP7wR2mX5t",
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn",
    "XBt7wRkl8OZfIa2AUk7z7gTqBu4wweocv81k2lsN",
];

/// A secret in code with no provider prefix (issue 14's fifth kind).
const SECRET_CONST: &str =
    "pub const AWS_SECRET: &str = \"XBt7wRkl8OZfIa2AUk7z7gTqBu4wweocv81k2lsN\";\n";

pub const SECRET_FILE: &str = "\"\"\"Deployment configuration for the billing service.\"\"\"
AWS_ACCESS_KEY_ID = \"AKIAQYLPMN5HHHFPZAM2\"
AWS_SECRET_ACCESS_KEY = \"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\"
GITHUB_TOKEN = \"ghp_R7sZ0vK3mQ9xW2yT5uB8nL4cE6fH1jA0pD3g\"
DATABASE_URL = \"postgresql://billing:Zq8vN3kP7wR2mX5t@db.internal.example.com:5432/billing\"
PRIVATE_KEY = \"\"\"-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbtPkZc4dd7LH6Hy
lGK8fZl5Y2nBd0aHh1eH7LJx8K5pQfUpN3nJZ0m3aW9nZ2VyX2RlbW9fa2V5X2Zv
-----END RSA PRIVATE KEY-----\"\"\"

def billing_client():
    \"\"\"Connect the billing client.\"\"\"
    return connect(DATABASE_URL)
";

#[tokio::test]
async fn no_tool_answers_a_raw_secret() {
    let fx = Fixture::new();
    crate::common::write(&fx.root, "src/config.py", SECRET_FILE);
    crate::common::write(&fx.root, "src/keys.rs", SECRET_CONST);
    let server = fx.server(true);
    ok(&server, "ctx_packs_create", json!({ "name": "s" })).await;
    ok(
        &server,
        "ctx_packs_add",
        json!({ "pack": "s", "source": "file:src/config.py" }),
    )
    .await;
    let calls: Vec<(&str, Value)> = vec![
        (
            "ctx_select",
            json!({ "query": "billing client configuration" }),
        ),
        ("ctx_search", json!({ "pattern": "AWS", "context": 3 })),
        (
            "ctx_search",
            json!({ "pattern": "billing", "mode": "caller" }),
        ),
        (
            "ctx_search",
            json!({ "pattern": "billing_client", "mode": "symbol", "context": 8 }),
        ),
        ("ctx_summarize", json!({ "path": "src/config.py" })),
        ("ctx_summarize", json!({ "path": "src/keys.rs" })),
        (
            "ctx_search",
            json!({ "pattern": "AWS_SECRET", "path": "src/keys.rs" }),
        ),
        (
            "ctx_summarize",
            json!({ "path": "src/config.py", "skeleton": true }),
        ),
        ("ctx_map", json!({})),
        ("ctx_diff_context", json!({})),
        ("ctx_packs_render", json!({ "packs": ["s"] })),
        (
            "ctx_packs_preview",
            json!({ "packs": ["s"], "show_payload": true }),
        ),
        (
            "fs_read",
            json!({ "operations": [
                { "mode": "Line", "path": "src/config.py" },
                { "mode": "Search", "path": ".", "pattern": "KEY", "context_lines": 3 }
            ] }),
        ),
    ];
    for (tool, args) in calls {
        let result = call(&server, tool, args.clone()).await;
        let text = format!(
            "{}{}",
            text_of(&result),
            result
                .structured_content
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default()
        );
        for secret in SECRETS {
            assert!(
                !text.contains(secret),
                "{tool} {args} returned {secret}: {text}"
            );
        }
    }
    // Nor does the index on disk hold them (documents and search.db).
    let indexes = fx.root.join(".ctx/indexes");
    for entry in walk_files(&indexes) {
        let bytes = std::fs::read(&entry).expect("read");
        for secret in SECRETS {
            assert!(
                !contains(&bytes, secret.as_bytes()),
                "{} holds {secret}",
                entry.display()
            );
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn a_call_past_its_budget_is_answered_and_the_server_goes_on() {
    let fx = Fixture::new();
    for i in 0..200 {
        crate::common::write(
            &fx.root,
            &format!("gen/m{i}.rs"),
            &format!("/// Module {i}.\npub fn f{i}(x: u32) -> u32 {{\n    x + {i}\n}}\n"),
        );
    }
    let slow = fx.server_with(|config| config.with_call_budget(std::time::Duration::ZERO));
    let message = fails(&slow, "ctx_map", json!({})).await;
    assert!(
        message.contains("took longer than") && message.contains("narrow the request"),
        "{message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
    // The default budget answers the same call.
    let server = fx.server(false);
    ok(&server, "ctx_map", json!({})).await;
}

/// The indexes a store holds, by name (a build in progress is a hidden `.NAME.tmp-…`).
fn built_indexes(root: &Path) -> Vec<String> {
    std::fs::read_dir(root.join(".ctx/indexes"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

/// A call answered with a timeout stops its work: the index build `ctx_select` started is given
/// up at its next chunk and keeps nothing, where it would otherwise run on for nobody and keep
/// a blocking thread busy (repeated, a way to take the host down). The bound: three times as
/// long as the same build takes when it is let finish.
#[tokio::test]
async fn a_timed_out_call_stops_its_work() {
    let generate = |fx: &Fixture| {
        for i in 0..1500 {
            crate::common::write(
                &fx.root,
                &format!("gen/m{i}.rs"),
                &format!(
                    "/// Module {i}: parses part {i} of the input.\npub fn parse_part_{i}(x: u32) -> u32 {{\n    x + {i}\n}}\n"
                ),
            );
        }
    };
    let query = json!({"query": "where is part 1234 of the input parsed?"});
    // The same build, let finish: how long it takes here.
    let finished = Fixture::new();
    generate(&finished);
    let started = std::time::Instant::now();
    ok(&finished.server(false), "ctx_select", query.clone()).await;
    let build = started.elapsed();
    assert!(
        !built_indexes(&finished.root).is_empty(),
        "the build keeps an index"
    );

    let fx = Fixture::new();
    generate(&fx);
    let slow = fx.server_with(|config| config.with_call_budget(std::time::Duration::ZERO));
    let message = fails(&slow, "ctx_select", query).await;
    assert!(message.contains("took longer than"), "{message}");
    let deadline = std::time::Instant::now() + build * 3 + std::time::Duration::from_secs(1);
    while std::time::Instant::now() < deadline {
        assert_eq!(
            built_indexes(&fx.root),
            Vec::<String>::new(),
            "the timed-out build ran on and kept an index (a finished build took {build:?})"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // No build directory is left behind (the build's lock file stays, as after any build).
    let leftovers: Vec<_> = std::fs::read_dir(fx.root.join(".ctx/indexes"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.contains(".tmp-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        leftovers.is_empty(),
        "nothing is left behind: {leftovers:?}"
    );
}
