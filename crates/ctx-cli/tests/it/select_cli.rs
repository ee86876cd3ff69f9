//! `ctx select`, `ctx index`, `ctx inject` and `ctx hook` end to end, in isolated temp dirs.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::process::Stdio;

use crate::common::{Env, McpSession, Run, git, write_files};

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
    spawn_with_stdin(env.cmd(args), input)
}

/// Runs `cmd` with `input` on its stdin.
fn spawn_with_stdin(mut cmd: std::process::Command, input: &str) -> Run {
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
    // A budget of 0 holds nothing: refused, with what to give instead.
    env.run(&["--json", "select", "parser", "--budget", "0"])
        .bad_input("a budget of 0 tokens holds nothing");
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
        text.replace("\"format_version\": 3", "\"format_version\": 7"),
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

/// Claude Code's hook input for `event` in `cwd`.
fn hook_input(cwd: &std::path::Path, prompt: &str) -> String {
    serde_json::json!({
        "session_id": "abc",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    })
    .to_string()
}

/// Runs the hook from `from` (its process directory) with `input`, and `vars` set; the
/// answer, parsed, and how long it took.
fn run_hook(
    env: &Env,
    from: &std::path::Path,
    args: &[&str],
    input: &str,
    vars: &[(&str, &str)],
) -> (serde_json::Value, std::time::Duration, Run) {
    let mut cmd = env.cmd(args);
    cmd.current_dir(from);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let started = std::time::Instant::now();
    let run = spawn_with_stdin(cmd, input);
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {:?} {}", run.stdout, run.stderr));
    (value, took, run)
}

fn context_of(answer: &serde_json::Value) -> &str {
    answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
}

/// A git repository of the `project` files, one commit.
fn git_project(env: &Env) {
    project(env);
    git(&env.work(), &["init", "-q"]);
    git(&env.work(), &["add", "-A"]);
    git(&env.work(), &["commit", "-qm", "import"]);
}

#[test]
fn claude_code_hook_answers_both_events_and_never_blocks() {
    let env = Env::new();
    git_project(&env);
    let work = env.work();
    let prompt = hook_input(&work, "Where is parse_source defined?");
    let run = with_stdin(&env, &["hook", "claude-code"], &prompt);
    run.ok();
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    let ctx = context_of(&v);
    assert!(ctx.contains("[RELEVANT: src/parser.rs"), "{ctx}");
    assert!(run.stdout.chars().count() <= 9_000);
    // One commit is no history: no `[RECENT: …]` lines of files "modified just now".
    assert!(!ctx.contains("[RECENT"), "{ctx}");

    let start = serde_json::json!({"session_id":"abc","cwd":work,"hook_event_name":"SessionStart","source":"startup"}).to_string();
    let run = with_stdin(&env, &["hook", "claude-code"], &start);
    run.ok();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(context_of(&v).starts_with("[CTX: project=work"), "{v}");

    for bad in [
        "not json".to_owned(),
        r#"{"hook_event_name":"Stop"}"#.to_owned(),
        String::new(),
        hook_input(&work.join("missing"), "parse source"),
    ] {
        let run = with_stdin(&env, &["hook", "claude-code"], &bad);
        assert_eq!(run.code, 0, "{bad}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{bad}: {}", run.stdout);
        assert!(run.stderr.contains("ctx hook"), "{bad}: {}", run.stderr);
    }
}

#[test]
fn hook_stays_silent_on_small_talk_and_instructions_without_a_code_subject() {
    let env = Env::new();
    git_project(&env);
    let work = env.work();
    for prompt in [
        "thanks, looks good",
        "run the tests",
        "commit this",
        "explain your last answer",
        "ok",
        "go ahead and push",
    ] {
        let (answer, _, _) = run_hook(
            &env,
            &work,
            &["hook", "claude-code"],
            &hook_input(&work, prompt),
            &[],
        );
        assert_eq!(answer, serde_json::json!({}), "{prompt}");
    }
    // A prompt with a code subject still gets its context.
    let (answer, _, _) = run_hook(
        &env,
        &work,
        &["hook", "claude-code"],
        &hook_input(&work, "the parser miscounts source text"),
        &[],
    );
    assert!(context_of(&answer).contains("src/parser.rs"), "{answer}");
}

#[test]
fn hook_answers_for_the_sessions_cwd_not_its_own() {
    let env = Env::new();
    git_project(&env);
    let other = env.root.join("billing");
    write_files(
        &other,
        &[
            (
                "billing/invoice.py",
                "def compute_invoice_total(lines):\n    \"\"\"Sums invoice lines with tax.\"\"\"\n    return sum(l.amount for l in lines)\n",
            ),
            ("README.md", "# billing\n"),
        ],
    );
    git(&other, &["init", "-q"]);
    // Started in the first project, asked about the second.
    let (answer, _, _) = run_hook(
        &env,
        &env.work(),
        &["hook", "claude-code"],
        &hook_input(&other, "where is compute_invoice_total defined?"),
        &[],
    );
    let context = context_of(&answer);
    assert!(context.contains("[CTX: project=billing"), "{context}");
    assert!(context.contains("billing/invoice.py"), "{context}");
    assert!(!context.contains("parser.rs"), "{context}");
}

/// Bytes of every file under `dir`.
fn tree_bytes(dir: &std::path::Path) -> u64 {
    let Ok(listing) = fs::read_dir(dir) else {
        return 0;
    };
    listing
        .flatten()
        .map(|e| {
            let meta = e.metadata().expect("meta");
            if meta.is_dir() {
                tree_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

#[test]
fn hook_in_a_non_project_directory_of_200000_files_answers_at_once_and_writes_nothing() {
    let env = Env::new();
    let big = env.root.join("downloads");
    for d in 0..200 {
        let dir = big.join(format!("d{d:03}"));
        fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..1000 {
            fs::File::create(dir.join(format!("parser{f}.py"))).expect("file");
        }
    }
    let home = env.root.join("ctx-home");
    let home_var = home.to_string_lossy().into_owned();
    let deadline_ms = 5_000;
    for event in [
        hook_input(&big, "where is the parser defined?"),
        serde_json::json!({"hook_event_name":"SessionStart","cwd":big,"source":"startup"})
            .to_string(),
    ] {
        let (answer, took, run) = run_hook(
            &env,
            &env.work(),
            &["hook", "claude-code"],
            &event,
            &[("CTX_HOME", &home_var)],
        );
        assert_eq!(answer, serde_json::json!({}), "{event}");
        assert!(
            run.stderr.contains("not inside a project"),
            "{}",
            run.stderr
        );
        assert!(
            took < std::time::Duration::from_millis(deadline_ms),
            "{took:?}"
        );
    }
    // Neither the store nor anything else was written for it.
    assert!(tree_bytes(&home) < 10 << 20);
    assert!(tree_bytes(&env.home) < 10 << 20);
}

#[test]
fn hook_on_a_cold_40000_file_tree_answers_within_its_deadline_and_builds_once_in_the_background() {
    let env = Env::new();
    let repo = env.root.join("big");
    for d in 0..200 {
        let dir = repo.join(format!("pkg{d:03}"));
        fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..200 {
            fs::write(
                dir.join(format!("mod{f:03}.py")),
                format!("def helper_{d}_{f}(x):\n    return x + {f}\n"),
            )
            .expect("file");
        }
    }
    write_files(
        &repo,
        &[(
            "payments/refund.py",
            "def issue_partial_refund(order, amount):\n    \"\"\"Refunds part of an order.\"\"\"\n    return order.refund(amount)\n",
        )],
    );
    git(&repo, &["init", "-q"]);
    let home = env.root.join("ctx-home");
    let home_var = home.to_string_lossy().into_owned();
    let deadline_ms: u64 = 1_500;
    let deadline = deadline_ms.to_string();
    let vars = [
        ("CTX_HOME", home_var.as_str()),
        ("CTX_HOOK_DEADLINE_MS", deadline.as_str()),
    ];
    let input = hook_input(&repo, "where is issue_partial_refund defined?");
    // Three prompts at once on a cold index: each answers within its deadline (a process
    // start and a little more of slack), and one build runs.
    let runs: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| run_hook(&env, &repo, &["hook", "claude-code"], &input, &vars)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("join"))
            .collect()
    });
    for (_, took, run) in &runs {
        assert!(
            *took < std::time::Duration::from_millis(deadline_ms + 3_000),
            "{took:?}: {}",
            run.stderr
        );
    }
    // Later prompts get the built index.
    let started = std::time::Instant::now();
    loop {
        let (answer, took, _) = run_hook(&env, &repo, &["hook", "claude-code"], &input, &vars);
        assert!(took < std::time::Duration::from_millis(deadline_ms + 3_000));
        if context_of(&answer).contains("[RELEVANT: payments/refund.py") {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(900),
            "the background build never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    // One build read the tree; any other worker found the lock taken or nothing to read.
    let log = fs::read_dir(home.join("indexes"))
        .expect("indexes")
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".background.log"))
        .map(|e| fs::read_to_string(e.path()).expect("log"))
        .expect("a background log");
    let builds = log
        .lines()
        .filter(|l| l.contains("documents (") && !l.contains("(0 read"))
        .count();
    assert_eq!(builds, 1, "{log}");
    // No staging is left behind.
    let staging: Vec<_> = fs::read_dir(home.join("indexes"))
        .expect("indexes")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-") || n.contains(".old-"))
        .collect();
    assert!(staging.is_empty(), "{staging:?}");
}

#[test]
fn hook_output_stays_under_max_chars_with_fences_closed_at_any_budget() {
    let env = Env::new();
    git_project(&env);
    // Large matching files, with backticks and quotes that JSON and fences must survive.
    let body = "/// Parses ```source``` text: \"quoted\" and\ttabbed.\npub fn parse_source_line(text: &str) -> usize {\n    text.len()\n}\n".repeat(400);
    write_files(
        &env.work(),
        &[("src/parse_a.rs", &body), ("src/parse_b.rs", &body)],
    );
    let work = env.work();
    for (max, vars) in [
        (9_000, vec![]),
        (3_000, vec![("CTX_HOOK_MAX_CHARS", "3000")]),
    ] {
        let (answer, _, run) = run_hook(
            &env,
            &work,
            &["hook", "claude-code", "--budget", "100000"],
            &hook_input(&work, "how does parse_source_line parse source text?"),
            &vars,
        );
        let printed = run.stdout.trim_end();
        assert!(
            printed.chars().count() <= max,
            "{max}: {} characters",
            printed.chars().count()
        );
        let context = context_of(&answer);
        assert!(ctx::hooks::fences_balanced(context), "{context}");
        let last = context.lines().last().expect("a last line");
        assert!(
            last.starts_with("[ctx: not shown in full") && last.contains("fs_read"),
            "{last}"
        );
    }
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

#[test]
fn session_start_redacts_a_secret_in_a_commit_message() {
    let env = Env::new();
    git_project(&env);
    let work = env.work();
    fs::write(work.join("src/render.rs"), "pub fn render_html() {}\n").expect("write");
    let key = "AKIAZ4Q7XK2M5TRB3VWP";
    git(
        &work,
        &[
            "commit",
            "-qam",
            &format!("render: aws_access_key_id={key}"),
        ],
    );
    let start = serde_json::json!({"hook_event_name":"SessionStart","cwd":work,"source":"startup"})
        .to_string();
    let (answer, _, _) = run_hook(&env, &work, &["hook", "claude-code"], &start, &[]);
    let context = context_of(&answer);
    assert!(context.contains("[COMMIT: "), "{context}");
    assert!(!context.contains(key), "{context}");
    assert!(
        context.contains("[REDACTED:AWS_ACCESS_KEY_ID]"),
        "{context}"
    );
}

/// The top-ranked file is represented in what `select`, `inject`, `ctx_select` and the hook
/// show, even when it is far larger than the budget (it used to be dropped when not even its
/// skeleton fit).
#[test]
fn the_top_ranked_file_is_shown_everywhere_at_any_budget() {
    let env = Env::new();
    let mut ledger =
        String::from("//! The ledger: entries, balances and their reconciliation.\n\n");
    for i in 0..60 {
        let _ = write!(
            ledger,
            "/// Posts entry kind {i} to the ledger.\npub fn post_entry_{i}(amount: i64) -> i64 {{\n    let balance = amount * {i};\n    balance + 1\n}}\n\n"
        );
    }
    ledger.push_str(
        "/// Reconciles the ledger balance after a reversed entry.\npub fn reconcile_ledger_balance(reversed: i64) -> i64 {\n    -reversed\n}\n",
    );
    write_files(
        &env.work(),
        &[
            ("src/ledger.rs", ledger.as_str()),
            (
                "src/report.rs",
                "/// Prints the ledger.\npub fn print() {}\n",
            ),
            (
                "src/audit.rs",
                "/// Checks a balance.\npub fn check_balance() {}\n",
            ),
        ],
    );
    git(&env.work(), &["init", "-q"]);
    git(&env.work(), &["add", "-A"]);
    git(&env.work(), &["commit", "-qm", "import"]);
    let query = "reconcile the ledger balance when an entry is reversed";
    let full = env.run(&["--json", "select", query, "--budget", "2000000"]);
    full.ok();
    let top = full.json()["documents"][0]["id"]
        .as_str()
        .expect("a top file")
        .to_owned();
    let whole: u64 = full.json()["documents"][0]["tokens"]
        .as_u64()
        .expect("tokens");
    assert!(
        whole > 1500,
        "the top file must not fit the small budgets whole: {whole}"
    );
    let mut mcp = McpSession::start(&env, &["mcp"]);
    for budget in [500u64, 800, 2000, 8000] {
        let b = budget.to_string();
        let select = env.run(&["--json", "select", query, "--budget", &b]);
        select.ok();
        let shown = select.json();
        assert_eq!(
            shown["documents"][0]["id"],
            top.as_str(),
            "select at {budget}: {shown}"
        );
        assert!(
            shown["documents"][0]["content"]
                .as_str()
                .is_some_and(|c| !c.is_empty())
        );

        let inject = with_stdin(&env, &["inject", "--budget", &b], query);
        inject.ok();
        assert!(
            inject.stdout.contains(&format!("[RELEVANT: {top} ")),
            "inject at {budget}: {}",
            inject.stdout
        );
        assert!(
            inject.stdout.contains(&format!("\n{top} ("))
                || inject.stdout.contains(&format!("\n{top}:")),
            "inject at {budget} shows no snippet of {top}: {}",
            inject.stdout
        );

        let answer = mcp.call(
            "ctx_select",
            &serde_json::json!({"query": query, "budget": budget}),
        );
        assert_eq!(
            answer["result"]["structuredContent"]["documents"][0]["id"],
            top.as_str(),
            "ctx_select at {budget}: {answer}"
        );
    }
    let (hook, _, _) = run_hook(
        &env,
        &env.work(),
        &["hook", "claude-code"],
        &hook_input(&env.work(), query),
        &[],
    );
    assert!(
        context_of(&hook).contains(&format!("[RELEVANT: {top} ")),
        "{hook}"
    );
}

#[test]
fn index_watch_prints_each_update_as_files_change() {
    use std::io::BufRead as _;
    let env = Env::new();
    project(&env);
    env.run(&["init"]).ok();
    let mut child = env
        .cmd(&["index", "watch", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (send, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = send.send(line);
        }
    });
    let next = || -> serde_json::Value {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("an update");
        serde_json::from_str(&line).expect("one JSON object per line")
    };
    let first = next();
    assert_eq!(first["read"], first["documents"], "{first}");
    fs::write(
        env.work().join("src/parser.rs"),
        "/// Parses tokens.\npub fn parse_tokens() {}\n",
    )
    .expect("edit");
    let edited = next();
    assert_eq!(
        (edited["read"].as_u64(), edited["removed"].as_u64()),
        (Some(1), Some(0)),
        "{edited}"
    );
    fs::remove_file(env.work().join("src/parser.rs")).expect("remove");
    let removed = next();
    assert_eq!(removed["removed"], 1, "{removed}");
    child.kill().expect("stop");
    let _ = child.wait();
    // Killed at any moment, the index is whole.
    env.run(&["index", "verify"]).ok();
    env.run(&["select", "parse tokens"]).ok();
}
