//! Agent hooks: Claude Code's hook protocol (`UserPromptSubmit`, `SessionStart`) and the
//! settings merge behind `ctx hook install claude-code`. Pure JSON in, JSON out;
//! [`crate::select`] does the file work. The command lines the hooks and the MCP server run
//! come from the front end (the CLI knows its own executable and arguments).

use serde_json::{Map, Value, json};

/// The most characters of context a hook returns (Claude Code's limit for injected context).
pub const MAX_CONTEXT_CHARS: usize = 10_000;

/// Why hook input or a settings file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("hook input is not JSON: {0}")]
    NotJson(String),
    #[error("hook input has no `hook_event_name`; ctx answers UserPromptSubmit and SessionStart")]
    NoEvent,
    #[error("hook event `{0}` is not handled; ctx answers UserPromptSubmit and SessionStart")]
    UnknownEvent(String),
    #[error(
        "`{file}` is not a JSON object ({message}); fix or remove it, then run `ctx hook install claude-code` again"
    )]
    BadConfig { file: String, message: String },
}

/// A hook event ctx answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookEvent {
    /// The user submitted a prompt.
    UserPromptSubmit { prompt: String },
    /// A session started: `startup`, `resume`, `clear` or `compact`.
    SessionStart { source: String },
}

impl HookEvent {
    /// The event name Claude Code uses.
    pub fn name(&self) -> &'static str {
        match self {
            Self::UserPromptSubmit { .. } => "UserPromptSubmit",
            Self::SessionStart { .. } => "SessionStart",
        }
    }
}

/// Parsed hook input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookInput {
    pub event: HookEvent,
    /// The session's working directory, when given.
    pub cwd: Option<String>,
    pub session_id: Option<String>,
}

/// Parses the JSON Claude Code writes to a hook's stdin.
pub fn parse_hook_input(text: &str) -> Result<HookInput, HookError> {
    let value: Value = serde_json::from_str(text).map_err(|e| HookError::NotJson(e.to_string()))?;
    let field = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    let event = match field("hook_event_name").as_deref() {
        Some("UserPromptSubmit") => HookEvent::UserPromptSubmit {
            prompt: field("prompt").unwrap_or_default(),
        },
        Some("SessionStart") => HookEvent::SessionStart {
            source: field("source").unwrap_or_else(|| "startup".to_owned()),
        },
        Some(other) => return Err(HookError::UnknownEvent(other.to_owned())),
        None => return Err(HookError::NoEvent),
    };
    Ok(HookInput {
        event,
        cwd: field("cwd"),
        session_id: field("session_id"),
    })
}

/// Cuts `text` to at most `max` characters (on a character boundary), saying so at the end.
pub fn truncate_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let marker = "\n[ctx: context truncated]\n";
    let keep = max.saturating_sub(marker.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(marker);
    out
}

/// The hook's answer: `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`,
/// the context cut to [`MAX_CONTEXT_CHARS`].
pub fn hook_output(event: &HookEvent, context: &str) -> Value {
    if context.is_empty() {
        // Nothing to add: an empty answer leaves the prompt as it is.
        return json!({});
    }
    json!({
        "hookSpecificOutput": {
            "hookEventName": event.name(),
            "additionalContext": truncate_chars(context, MAX_CONTEXT_CHARS),
        }
    })
}

fn parse_object(existing: Option<&str>, file: &str) -> Result<Map<String, Value>, HookError> {
    let Some(text) = existing.filter(|t| !t.trim().is_empty()) else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(HookError::BadConfig {
            file: file.to_owned(),
            message: "the top level is not an object".to_owned(),
        }),
        Err(e) => Err(HookError::BadConfig {
            file: file.to_owned(),
            message: e.to_string(),
        }),
    }
}

fn pretty(map: Map<String, Value>) -> String {
    let mut text =
        serde_json::to_string_pretty(&Value::Object(map)).expect("JSON values serialize");
    text.push('\n');
    text
}

/// Adds ctx's `UserPromptSubmit` and `SessionStart` hooks to Claude Code settings
/// (`.claude/settings.json`), keeping every other entry. Returns the new text and whether
/// anything changed (an event that already runs `command` is left alone).
pub fn merge_claude_settings(
    existing: Option<&str>,
    command: &str,
) -> Result<(String, bool), HookError> {
    let file = ".claude/settings.json";
    let mut root = parse_object(existing, file)?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(HookError::BadConfig {
            file: file.to_owned(),
            message: "`hooks` is not an object".to_owned(),
        });
    };
    let mut changed = false;
    for event in ["UserPromptSubmit", "SessionStart"] {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = groups else {
            return Err(HookError::BadConfig {
                file: file.to_owned(),
                message: format!("`hooks.{event}` is not an array"),
            });
        };
        let present = groups.iter().any(|group| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|list| {
                    list.iter()
                        .any(|h| h.get("command").and_then(Value::as_str) == Some(command))
                })
        });
        if !present {
            groups.push(json!({
                "hooks": [{ "type": "command", "command": command, "timeout": 30 }]
            }));
            changed = true;
        }
    }
    Ok((pretty(root), changed))
}

/// Removes the hooks that run `command` from Claude Code settings (and the groups, events
/// and `hooks` object they leave empty), keeping every other entry. Returns the new text and
/// whether anything changed.
pub fn remove_claude_settings(existing: &str, command: &str) -> Result<(String, bool), HookError> {
    let file = ".claude/settings.json";
    let mut root = parse_object(Some(existing), file)?;
    let mut changed = false;
    if let Some(Value::Object(hooks)) = root.get_mut("hooks") {
        for groups in hooks.values_mut() {
            let Value::Array(groups) = groups else {
                continue;
            };
            for group in groups.iter_mut() {
                if let Some(Value::Array(list)) = group.get_mut("hooks") {
                    let before = list.len();
                    list.retain(|h| h.get("command").and_then(Value::as_str) != Some(command));
                    changed |= list.len() != before;
                }
            }
            groups.retain(|group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|list| !list.is_empty())
            });
        }
        hooks.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
        if hooks.is_empty() {
            root.remove("hooks");
        }
    }
    Ok((pretty(root), changed))
}

/// Removes the ctx MCP server from `.mcp.json` if it runs `command` (a `ctx` entry someone
/// changed is left alone). Returns the new text and whether anything changed.
pub fn remove_mcp_config(existing: &str, command: &str) -> Result<(String, bool), HookError> {
    let file = ".mcp.json";
    let mut root = parse_object(Some(existing), file)?;
    let mut changed = false;
    if let Some(Value::Object(servers)) = root.get_mut("mcpServers")
        && servers
            .get("ctx")
            .and_then(|s| s.get("command"))
            .and_then(Value::as_str)
            == Some(command)
    {
        servers.remove("ctx");
        changed = true;
    }
    Ok((pretty(root), changed))
}

/// Adds the ctx MCP server to `.mcp.json` under `mcpServers.ctx` unless an entry of that
/// name exists (it is never replaced). Returns the new text and whether anything changed.
pub fn merge_mcp_config(
    existing: Option<&str>,
    command: &str,
    args: &[&str],
) -> Result<(String, bool), HookError> {
    let file = ".mcp.json";
    let mut root = parse_object(existing, file)?;
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(HookError::BadConfig {
            file: file.to_owned(),
            message: "`mcpServers` is not an object".to_owned(),
        });
    };
    if servers.contains_key("ctx") {
        return Ok((pretty(root), false));
    }
    servers.insert(
        "ctx".to_owned(),
        json!({ "command": command, "args": args }),
    );
    Ok((pretty(root), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uninstall_removes_only_what_install_added() {
        let mine = "ctx hook claude-code";
        let theirs = r#"{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"lint"}]}]},"model":"x"}"#;
        let (installed, _) = merge_claude_settings(Some(theirs), mine).expect("install");
        let (removed, changed) = remove_claude_settings(&installed, mine).expect("remove");
        assert!(changed);
        let value: Value = serde_json::from_str(&removed).expect("json");
        let expected: Value = serde_json::from_str(theirs).expect("json");
        assert_eq!(value, expected);
        let (again, changed) = remove_claude_settings(&removed, mine).expect("again");
        assert!(!changed);
        assert_eq!(again, removed);
        let (mcp, _) =
            merge_mcp_config(Some(r#"{"mcpServers":{"other":{}}}"#), "ctx", &["mcp"]).expect("mcp");
        let (mcp, changed) = remove_mcp_config(&mcp, "ctx").expect("remove");
        assert!(changed);
        assert_eq!(
            serde_json::from_str::<Value>(&mcp).expect("json"),
            serde_json::json!({ "mcpServers": { "other": {} } })
        );
    }

    #[test]
    fn parses_both_events_and_refuses_others() {
        let input = parse_hook_input(
            r#"{"session_id":"s1","transcript_path":"/t.jsonl","cwd":"/w","hook_event_name":"UserPromptSubmit","prompt":"fix it"}"#,
        )
        .expect("prompt");
        assert_eq!(
            input.event,
            HookEvent::UserPromptSubmit {
                prompt: "fix it".to_owned()
            }
        );
        assert_eq!(input.cwd.as_deref(), Some("/w"));
        let start = parse_hook_input(r#"{"hook_event_name":"SessionStart","source":"resume"}"#)
            .expect("start");
        assert_eq!(
            start.event,
            HookEvent::SessionStart {
                source: "resume".to_owned()
            }
        );
        assert!(matches!(
            parse_hook_input(r#"{"hook_event_name":"Stop"}"#),
            Err(HookError::UnknownEvent(_))
        ));
        assert!(matches!(
            parse_hook_input("nope"),
            Err(HookError::NotJson(_))
        ));
    }

    #[test]
    fn output_is_capped_on_a_char_boundary() {
        let event = HookEvent::SessionStart {
            source: "startup".to_owned(),
        };
        let big = "é".repeat(20_000);
        let out = hook_output(&event, &big);
        let ctx = out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("string");
        assert!(ctx.chars().count() <= MAX_CONTEXT_CHARS);
        assert!(ctx.ends_with("truncated]\n"));
    }

    #[test]
    fn settings_merge_is_idempotent_and_keeps_other_entries() {
        let existing = r#"{"model":"opus","hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"other"}]}]}}"#;
        let (once, changed) =
            merge_claude_settings(Some(existing), "ctx hook claude-code").expect("merge");
        assert!(changed);
        let (twice, changed_again) =
            merge_claude_settings(Some(&once), "ctx hook claude-code").expect("merge");
        assert!(!changed_again);
        assert_eq!(once, twice);
        let v: Value = serde_json::from_str(&twice).expect("json");
        assert_eq!(v["model"], "opus");
        assert_eq!(
            v["hooks"]["UserPromptSubmit"].as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(v["hooks"]["SessionStart"].as_array().map(Vec::len), Some(1));
        assert!(merge_claude_settings(Some("[1]"), "ctx hook claude-code").is_err());

        let mcp = r#"{"mcpServers":{"ctx":{"command":"mine"},"x":{"command":"y"}}}"#;
        let (text, changed) = merge_mcp_config(Some(mcp), "ctx", &["mcp"]).expect("mcp");
        assert!(!changed);
        assert!(text.contains("\"mine\""));
        let (fresh, changed) = merge_mcp_config(None, "ctx", &["mcp"]).expect("mcp");
        assert!(changed);
        assert!(fresh.contains("\"mcp\""));
    }
}
