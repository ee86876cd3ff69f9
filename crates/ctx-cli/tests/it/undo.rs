//! Settings and hooks can be undone: `config unset`, `hook uninstall`, `hook install
//! --local`; and the global config follows `CTX_CONFIG_HOME` / `CTX_HOME`.

use crate::common::Env;
use serde_json::Value;

#[test]
fn config_unset_falls_back_to_the_next_layer() {
    let env = Env::new();
    env.run(&["init"]).ok();
    env.run(&["config", "set", "tokenizer", "cl100k_base"]).ok();
    assert_eq!(
        env.run(&["config", "get", "tokenizer"]).ok().stdout,
        "cl100k_base\n"
    );
    let unset = env.run(&["config", "unset", "tokenizer"]);
    assert!(
        unset.ok().stdout.starts_with("removed tokenizer from"),
        "{}",
        unset.stdout
    );
    assert_eq!(
        env.run(&["config", "get", "tokenizer"]).ok().stdout,
        "o200k_base\n"
    );
    let again = env.run(&["--json", "config", "unset", "tokenizer"]);
    assert_eq!(again.ok().json()["removed"], false);
    let file = std::fs::read_to_string(env.work().join(".ctx/config.toml")).expect("config");
    assert!(!file.contains("tokenizer"), "{file}");
    // Bad keys and values are refused with the key named.
    env.run(&["config", "set", "sensitive.extra", "3"])
        .bad_input("sensitive.extra");
    env.run(&["config", "unset", "nope"]).bad_input("nope");
    // Without a project store, unset without --global says what to do.
    let bare = Env::new();
    bare.run(&["config", "unset", "budget"])
        .bad_input("ctx init");
}

#[test]
fn ctx_home_keeps_config_set_global_out_of_the_real_home() {
    let env = Env::new();
    let ctx_home = env.root.join("ctx-home");
    let mut set = env.cmd(&["config", "set", "--global", "budget", "500"]);
    set.env("CTX_HOME", &ctx_home);
    env.run_with(set).ok();
    assert!(ctx_home.join("config.toml").is_file());
    assert!(
        !env.home.join(".config").exists(),
        "the real home is untouched"
    );
    let mut get = env.cmd(&["config", "get", "budget"]);
    get.env("CTX_HOME", &ctx_home);
    assert_eq!(env.run_with(get).ok().stdout, "500\n");
    // Without CTX_HOME the real home's (empty) config applies.
    assert_eq!(
        env.run(&["config", "get", "budget"]).ok().stdout,
        "128000\n"
    );
    let mut unset = env.cmd(&["config", "unset", "--global", "budget"]);
    unset.env("CTX_HOME", &ctx_home);
    env.run_with(unset).ok();
    let mut get = env.cmd(&["config", "get", "budget"]);
    get.env("CTX_HOME", &ctx_home);
    assert_eq!(env.run_with(get).ok().stdout, "128000\n");

    // CTX_CONFIG_HOME wins over CTX_HOME.
    let config_home = env.root.join("conf");
    let mut set = env.cmd(&["config", "set", "--global", "budget", "700"]);
    set.env("CTX_HOME", &ctx_home)
        .env("CTX_CONFIG_HOME", &config_home);
    env.run_with(set).ok();
    assert!(config_home.join("config.toml").is_file());
    assert!(!env.home.join(".config").exists());
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

#[test]
fn hook_uninstall_restores_the_settings_it_found() {
    let env = Env::new();
    env.run(&["init"]).ok();
    let claude = env.work().join(".claude");
    std::fs::create_dir_all(&claude).expect("mkdir");
    let theirs =
        r#"{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"lint"}]}]}}"#;
    std::fs::write(claude.join("settings.json"), theirs).expect("write");
    std::fs::write(
        env.work().join(".mcp.json"),
        r#"{"mcpServers":{"db":{"command":"db"}}}"#,
    )
    .expect("write");
    env.run(&["hook", "install", "claude-code"]).ok();
    let installed = read_json(&claude.join("settings.json"));
    assert_eq!(
        installed["hooks"]["UserPromptSubmit"]
            .as_array()
            .expect("a")
            .len(),
        2
    );
    assert!(read_json(&env.work().join(".mcp.json"))["mcpServers"]["ctx"].is_object());

    let out = env.run(&["hook", "uninstall", "claude-code"]);
    assert!(
        out.ok().stdout.contains("removed ctx from"),
        "{}",
        out.stdout
    );
    assert_eq!(
        read_json(&claude.join("settings.json")),
        serde_json::from_str::<Value>(theirs).expect("json")
    );
    assert_eq!(
        read_json(&env.work().join(".mcp.json")),
        serde_json::json!({ "mcpServers": { "db": { "command": "db" } } })
    );
    let again = env.run(&["hook", "uninstall", "claude-code"]);
    assert!(
        again.ok().stdout.contains("nothing changed"),
        "{}",
        again.stdout
    );
}

#[test]
fn hook_install_local_writes_only_the_personal_settings() {
    let env = Env::new();
    env.run(&["init"]).ok();
    let out = env.run(&["hook", "install", "claude-code", "--local"]);
    out.ok();
    let local = env.work().join(".claude/settings.local.json");
    assert!(local.is_file());
    assert!(!env.work().join(".claude/settings.json").exists());
    assert!(!env.work().join(".mcp.json").exists());
    let settings = read_json(&local);
    assert_eq!(
        settings["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "ctx hook claude-code"
    );
    env.run(&["hook", "uninstall", "claude-code"]).ok();
    assert_eq!(read_json(&local), serde_json::json!({}));
}
