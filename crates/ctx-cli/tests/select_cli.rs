//! `ctx select`, `ctx index`, `ctx inject` and `ctx hook` end to end, in isolated temp dirs.

mod common;

use std::fs;
use std::io::Write as _;
use std::process::Stdio;

use common::{Env, Run, git, write_files};

fn project(env: &Env) {
    write_files(
        &env.work(),
        &[
            ("Cargo.toml", "[package]\nname = \"demo\"\n"),
            (
                "src/main.rs",
                "mod parser;\nfn main() {\n    parser::parse_source(\"x\");\n}\n",
            ),
            (
                "src/parser.rs",
                "/// Parses source text into a syntax tree.\npub fn parse_source(text: &str) -> usize {\n    text.len()\n}\n",
            ),
            (
                "src/render.rs",
                "/// Renders output as HTML.\npub fn render_html() -> String {\n    String::new()\n}\n",
            ),
            ("README.md", "# demo\n\nParses and renders.\n"),
        ],
    );
}

fn with_stdin(env: &Env, args: &[&str], input: &str) -> Run {
    let mut cmd = env.cmd(args);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().expect("code"),
        stdout: String::from_utf8(out.stdout).expect("utf8"),
        stderr: String::from_utf8(out.stderr).expect("utf8"),
    }
}

#[test]
fn select_works_with_no_setup_and_is_incremental_and_deterministic() {
    let env = Env::new();
    project(&env);
    let first = env.run(&[
        "select",
        "where is parse_source defined",
        "--budget",
        "8000",
    ]);
    first.ok();
    assert!(
        first.stderr.contains("created the global store"),
        "{}",
        first.stderr
    );
    assert!(
        first.stderr.contains("5 read, 0 reused"),
        "{}",
        first.stderr
    );
    assert!(first.stdout.starts_with("# ctx select"), "{}", first.stdout);
    assert!(
        first.stdout.contains("1. src/parser.rs"),
        "{}",
        first.stdout
    );
    assert!(
        first.stdout.contains("bm25_symbols"),
        "why summary: {}",
        first.stdout
    );
    assert!(
        first.stdout.contains("pub fn parse_source"),
        "content: {}",
        first.stdout
    );

    let second = env.run(&[
        "select",
        "where is parse_source defined",
        "--budget",
        "8000",
    ]);
    second.ok();
    assert_eq!(first.stdout, second.stdout, "byte-identical");
    assert!(
        !second.stderr.contains("read"),
        "no-op rebuild: {}",
        second.stderr
    );

    fs::write(
        env.work().join("src/render.rs"),
        "pub fn render_html() {}\n",
    )
    .expect("edit");
    let third = env.run(&["select", "render html"]);
    third.ok();
    assert!(
        third.stderr.contains("1 read, 4 reused"),
        "{}",
        third.stderr
    );

    let json = env.run(&["--json", "select", "parse_source", "--explain"]);
    json.ok();
    let v = json.json();
    assert_eq!(v["documents"][0]["id"], "src/parser.rs");
    assert!(
        v["documents"][0]["why"]["signals"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
    assert_eq!(v["selection"]["tokenizer"], "o200k_base");
    assert!(
        v["selection"]["tokens_used"]
            .as_u64()
            .is_some_and(|t| t > 0)
    );
}

#[test]
fn bad_input_is_refused_or_gives_an_empty_selection() {
    let env = Env::new();
    project(&env);
    env.run(&["select", "   "]).bad_input("the query is empty");
    env.run(&["select", "what is the"])
        .bad_input("only stop words");
    let zero = env.run(&["--json", "select", "parser", "--budget", "0"]);
    zero.ok();
    assert_eq!(zero.json()["documents"].as_array().map(Vec::len), Some(0));
    let nothing = env.run(&["select", "zzzqqq"]);
    assert_eq!(nothing.code, 1, "{}", nothing.stderr);
    env.run(&["index", "verify", "no-such-index"])
        .bad_input("ctx index build --name no-such-index");
}

#[test]
fn index_commands_and_corruption() {
    let env = Env::new();
    project(&env);
    env.run(&["init"]).ok();
    let built = env.run(&["index", "build"]);
    built.ok();
    assert!(
        built.stdout.contains("index default: 5 documents (5 read"),
        "{}",
        built.stdout
    );
    assert!(
        env.run(&["index", "build"])
            .ok()
            .stdout
            .contains("up to date")
    );
    let list = env.run(&["index", "list"]);
    assert!(
        list.ok().stdout.starts_with("default  5 documents"),
        "{}",
        list.stdout
    );
    let inspect = env.run(&["--json", "index", "inspect"]);
    let v = inspect.ok().json();
    assert_eq!(
        (v["documents"].as_u64(), v["valid"].as_bool()),
        (Some(5), Some(true))
    );
    assert!(
        env.run(&["index", "verify"])
            .ok()
            .stdout
            .contains("index default is valid")
    );

    // Damage one document file.
    let docs = env.work().join(".ctx/indexes/default/documents");
    let mut files: Vec<_> = fs::read_dir(&docs)
        .expect("docs")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let victim = files[0].clone();
    let text = fs::read_to_string(&victim).expect("read");
    fs::write(
        &victim,
        text.replacen("\"content\": \"", "\"content\": \"X", 1),
    )
    .expect("tamper");
    let name = victim
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let verify = env.run(&["index", "verify"]);
    assert_eq!(verify.code, 1);
    assert!(
        verify.stdout.contains(&format!("documents/{name}")),
        "{}",
        verify.stdout
    );
    assert!(
        verify.stdout.contains("ctx index build --force"),
        "{}",
        verify.stdout
    );
    // Remove it: select refuses with the fix.
    fs::remove_file(&victim).expect("remove");
    env.run(&["select", "parser"])
        .bad_input("ctx index build --force");
    env.run(&["index", "build", "--force"]).ok();
    env.run(&["select", "parser"]).ok();

    // An index from a newer ctx.
    let manifest = env.work().join(".ctx/indexes/default/manifest.json");
    let text = fs::read_to_string(&manifest).expect("manifest");
    fs::write(
        &manifest,
        text.replace("\"format_version\": 2", "\"format_version\": 7"),
    )
    .expect("newer");
    env.run(&["select", "parser"]).bad_input("upgrade ctx");
}

#[test]
fn inject_puts_context_before_the_prompt() {
    let env = Env::new();
    project(&env);
    git(&env.work(), &["init", "-q", "-b", "main"]);
    git(&env.work(), &["add", "."]);
    git(&env.work(), &["commit", "-q", "-m", "initial"]);
    // The import commit says nothing of what is worked on; a later change does.
    fs::write(
        env.work().join("src/parser.rs"),
        "/// Parses source text into a syntax tree.\npub fn parse_source(text: &str) -> usize {\n    text.trim().len()\n}\n",
    )
    .expect("write");
    git(&env.work(), &["commit", "-qam", "trim before parsing"]);
    let run = with_stdin(
        &env,
        &["inject", "--budget", "1000"],
        "fix the parser in parser.rs",
    );
    run.ok();
    let text = &run.stdout;
    assert!(
        text.starts_with("[CTX: project=work lang=rust branch=main]\n"),
        "{text}"
    );
    assert!(text.contains("[RECENT: src/parser.rs modified"), "{text}");
    assert_eq!(text.matches("[RECENT: ").count(), 1, "{text}");
    let relevant = text
        .lines()
        .find(|l| l.starts_with("[RELEVANT: src/parser.rs ("))
        .expect("parser.rs is relevant");
    assert!(relevant.contains("filename mentioned"), "{text}");
    assert!(text.contains("[KEYWORDS: fix, parser]"), "{text}");
    assert!(text.contains("pub fn parse_source"), "{text}");
    assert!(
        text.ends_with("\n---\n\nfix the parser in parser.rs\n"),
        "{text}"
    );
    // Nothing relevant: the prompt goes out alone.
    let run = with_stdin(
        &env,
        &["inject", "--budget", "1000"],
        "bake a chocolate cake",
    );
    assert_eq!(run.ok().stdout, "bake a chocolate cake\n");
}

#[test]
fn claude_code_hook_answers_both_events_and_never_blocks() {
    let env = Env::new();
    project(&env);
    let prompt = r#"{"session_id":"abc","transcript_path":"/tmp/t.jsonl","cwd":"/w","permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"Where is parse_source defined?"}"#;
    let run = with_stdin(&env, &["hook", "claude-code"], prompt);
    run.ok();
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    assert!(ctx.contains("[RELEVANT: src/parser.rs"), "{ctx}");
    assert!(ctx.chars().count() <= 10_000);

    let start = r#"{"session_id":"abc","transcript_path":"/tmp/t.jsonl","cwd":"/w","hook_event_name":"SessionStart","source":"startup"}"#;
    let run = with_stdin(&env, &["hook", "claude-code"], start);
    run.ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.starts_with("[CTX: project=work"))
    );

    for bad in ["not json", r#"{"hook_event_name":"Stop"}"#, ""] {
        let run = with_stdin(&env, &["hook", "claude-code"], bad);
        assert_eq!(run.code, 0, "{bad}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{bad}: {}", run.stdout);
        assert!(run.stderr.contains("ctx hook"), "{bad}: {}", run.stderr);
    }
    // A huge prompt still answers within the limit.
    let big = format!(
        r#"{{"hook_event_name":"UserPromptSubmit","prompt":"{}"}}"#,
        "parse source render ".repeat(5000)
    );
    let run = with_stdin(&env, &["hook", "claude-code", "--budget", "100000"], &big);
    run.ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.chars().count() <= 10_000)
    );
}

#[test]
fn hook_install_twice_leaves_one_entry_and_keeps_existing_ones() {
    let env = Env::new();
    project(&env);
    env.run(&["init"]).ok();
    write_files(
        &env.work(),
        &[
            (
                ".claude/settings.json",
                r#"{"permissions":{"allow":["Bash(ls)"]},"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo mine"}]}]}}"#,
            ),
            (".mcp.json", r#"{"mcpServers":{"other":{"command":"x"}}}"#),
        ],
    );
    let first = env.run(&["hook", "install", "claude-code"]);
    assert!(first.ok().stdout.contains("updated"), "{}", first.stdout);
    let second = env.run(&["hook", "install", "claude-code"]);
    assert!(!second.ok().stdout.contains("updated"), "{}", second.stdout);
    let settings: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(env.work().join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    let prompt_hooks = settings["hooks"]["UserPromptSubmit"]
        .as_array()
        .expect("array");
    let ours = prompt_hooks
        .iter()
        .filter(|g| g["hooks"][0]["command"] == "ctx hook claude-code")
        .count();
    assert_eq!((prompt_hooks.len(), ours), (2, 1));
    assert_eq!(
        settings["hooks"]["SessionStart"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls)");
    let mcp: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(env.work().join(".mcp.json")).expect("mcp"))
            .expect("json");
    assert_eq!(mcp["mcpServers"]["other"]["command"], "x");
    assert_eq!(mcp["mcpServers"]["ctx"]["args"][0], "mcp");
}
