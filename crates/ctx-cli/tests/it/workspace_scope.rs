//! Workspaces that share a store do not see each other: with the global store (no `ctx init`),
//! what workspace `alpha` makes (a pack, a snapshot, a run) is not listed, rendered, shown or
//! offered as a resource in workspace `beta`, through the CLI, `ctx mcp` and `ctx serve`'s
//! `/mcp/beta`; a store named with `--store` is still seen whole.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Child;

use crate::common::{Env, McpSession, http};
use serde_json::{Value, json};

/// A secret-free marker that appears only in alpha's files.
const ALPHA_TEXT: &str = "alpha-only-marker";

fn path(dir: &Path) -> &str {
    dir.to_str().expect("utf8")
}

fn transcript() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ctx-runs/tests/fixtures/claude-code.jsonl")
}

/// Two git repositories, `alpha` and `beta`, under the work directory, and in alpha a pack
/// (`alpha-pack`), a labelled snapshot of it (`alpha-snap`) and an imported run: all in the
/// global store, which both share.
fn two_workspaces() -> (Env, PathBuf, PathBuf, String) {
    let env = Env::new();
    let alpha = env.work().join("alpha");
    let beta = env.work().join("beta");
    for (dir, text) in [(&alpha, ALPHA_TEXT), (&beta, "beta text")] {
        fs::create_dir_all(dir.join(".git")).expect("repo");
        fs::write(dir.join("notes.md"), format!("# notes\n\n{text}\n")).expect("write");
    }
    let a = alpha.to_str().expect("utf8");
    env.run(&["-C", a, "pack", "create", "alpha-pack"]).ok();
    env.run(&["-C", a, "pack", "add", "alpha-pack", "file:notes.md"])
        .ok();
    env.run(&[
        "-C",
        a,
        "pack",
        "snapshot",
        "alpha-pack",
        "--name",
        "alpha-snap",
    ])
    .ok();
    let import = env.run(&[
        "--json",
        "-C",
        a,
        "run",
        "import",
        transcript().to_str().expect("utf8"),
    ]);
    import.ok();
    let run = import.json()["run"].as_str().expect("run id").to_owned();
    (env, alpha, beta, run)
}

#[test]
fn the_cli_in_one_workspace_does_not_see_another_workspaces_packs_snapshots_or_runs() {
    let (env, alpha, beta, run) = two_workspaces();
    let (a, b) = (alpha.to_str().expect("utf8"), beta.to_str().expect("utf8"));
    // Alpha sees its own.
    let packs = env.run(&["--json", "-C", a, "pack", "list"]);
    assert!(packs.ok().stdout.contains("alpha-pack"), "{}", packs.stdout);
    let runs = env.run(&["--json", "-C", a, "run", "log"]);
    assert!(runs.ok().stdout.contains(&run), "{}", runs.stdout);
    // Beta sees none of it, by listing or by name.
    for args in [
        vec!["--json", "-C", b, "pack", "list"],
        vec!["--json", "-C", b, "pack", "snapshots"],
        vec!["--json", "-C", b, "run", "log"],
    ] {
        let listed = env.run(&args);
        // 0, or 1 where a listing says it found nothing.
        assert!(listed.code <= 1, "{args:?}: {}", listed.stderr);
        for leaked in ["alpha-pack", "alpha-snap", run.as_str()] {
            assert!(
                !listed.stdout.contains(leaked),
                "{args:?} shows {leaked}: {}",
                listed.stdout
            );
        }
    }
    env.run(&["-C", b, "pack", "render", "alpha-pack"])
        .bad_input("alpha-pack");
    env.run(&["-C", b, "pack", "show", "alpha-pack"])
        .bad_input("alpha-pack");
    let snapshot = env.run(&["-C", b, "pack", "render", "--snapshot", "alpha-snap"]);
    assert_ne!(snapshot.code, 0, "{}", snapshot.stdout);
    assert!(!snapshot.stdout.contains(ALPHA_TEXT));
    for reference in [run.as_str(), "latest"] {
        let shown = env.run(&["-C", b, "run", "show", reference]);
        assert_ne!(shown.code, 0, "run show {reference}: {}", shown.stdout);
    }
    // A store named explicitly is seen whole.
    let store = env.home.join(".ctx");
    let named = env.run(&[
        "--json",
        "--store",
        store.to_str().expect("utf8"),
        "-C",
        b,
        "pack",
        "list",
    ]);
    assert!(named.ok().stdout.contains("alpha-pack"), "{}", named.stdout);
}

/// Every answer text of `message` (result content and error), for leak checks.
fn text_of(message: &Value) -> String {
    message.to_string()
}

#[test]
fn an_mcp_server_in_one_workspace_does_not_see_another_workspaces_packs_snapshots_or_runs() {
    let (env, alpha, beta, run) = two_workspaces();
    let mut own = McpSession::start(&env, &["-C", path(&alpha), "mcp", "--tools", "all"]);
    let listed = own.call("ctx_packs_list", &json!({}));
    assert!(text_of(&listed).contains("alpha-pack"), "{listed}");
    drop(own);

    let mut other = McpSession::start(&env, &["-C", path(&beta), "mcp", "--tools", "all"]);
    let mut answers = Vec::new();
    answers.push(other.call("ctx_packs_list", &json!({})));
    answers.push(other.call("ctx_packs_get", &json!({ "pack": "alpha-pack" })));
    answers.push(other.call("ctx_packs_render", &json!({ "packs": ["alpha-pack"] })));
    answers.push(other.call("ctx_packs_render", &json!({ "snapshot_id": "alpha-snap" })));
    answers.push(other.call("ctx_packs_preview", &json!({ "packs": ["alpha-pack"] })));
    answers.push(other.call("ctx_runs_list", &json!({})));
    answers.push(other.call(
        "ctx_runs_show",
        &json!({ "run": run, "include_content": true }),
    ));
    answers.push(other.call(
        "ctx_runs_show",
        &json!({ "run": "latest", "include_content": true }),
    ));
    answers.push(other.request("resources/list", &json!({})));
    answers.push(other.request(
        "resources/read",
        &json!({ "uri": "ctx://snapshot/alpha-snap" }),
    ));
    for answer in &answers {
        let text = text_of(answer);
        assert!(!text.contains(ALPHA_TEXT), "alpha's text leaked: {text}");
        if ["alpha-pack", "alpha-snap", run.as_str()]
            .iter()
            .any(|name| text.contains(name))
        {
            // Only as the name the client asked for, in an error.
            assert!(
                answer["result"]["isError"] == true || answer.get("error").is_some(),
                "{text}"
            );
        }
    }
}

#[test]
fn serve_gives_each_workspace_its_own_view_of_a_shared_store() {
    let (env, _alpha, _beta, run) = two_workspaces();
    // `ctx serve` over a directory holding both: neither has a store of its own, so both
    // use the one `ctx serve` found (the global store).
    let workspaces = env.work();
    let (server, _stderr, addr) = env.spawn_server(&[
        "serve",
        "--workspaces",
        workspaces.to_str().expect("utf8"),
        "--addr",
        "127.0.0.1:0",
        "--tools",
        "all",
    ]);
    // Stopped however the test ends (a panic included).
    let _server = Stopped(server);
    let post = |path: &str, session: Option<&str>, body: &Value| -> (Option<String>, String) {
        let headers: Vec<(&str, &str)> = session
            .map(|s| {
                vec![
                    ("mcp-session-id", s),
                    ("mcp-protocol-version", "2025-11-25"),
                ]
            })
            .unwrap_or_default();
        let answer = http(&addr, "POST", path, &headers, &body.to_string());
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let session = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        });
        (session, body.to_owned())
    };
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let mut texts = Vec::new();
    for (ws, expect_own) in [("alpha", true), ("beta", false)] {
        let path = format!("/mcp/{ws}");
        let (session, _) = post(&path, None, &init);
        let session = session.expect("a session id");
        post(
            &path,
            Some(&session),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        let calls = [
            json!({"name": "ctx_packs_list", "arguments": {}}),
            json!({"name": "ctx_packs_render", "arguments": {"packs": ["alpha-pack"]}}),
            json!({"name": "ctx_runs_list", "arguments": {}}),
            json!({"name": "ctx_runs_show", "arguments": {"run": "latest", "include_content": true}}),
        ];
        let mut all = String::new();
        for (i, params) in calls.iter().enumerate() {
            let (_, text) = post(
                &path,
                Some(&session),
                &json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": params}),
            );
            all.push_str(&text);
        }
        let (_, resources) = post(
            &path,
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": 9, "method": "resources/list", "params": {}}),
        );
        all.push_str(&resources);
        if expect_own {
            assert!(all.contains(ALPHA_TEXT) && all.contains(&run), "{all}");
        } else {
            texts.push(all);
        }
    }
    for text in texts {
        for leaked in [ALPHA_TEXT, "alpha-snap", run.as_str()] {
            assert!(!text.contains(leaked), "{leaked} leaked to beta: {text}");
        }
    }
}

/// A child process killed and reaped when dropped.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
