//! Agent hooks: Claude Code's hook protocol (`UserPromptSubmit`, `SessionStart`) and the
//! settings merge behind `ctx hook install claude-code`. Pure JSON in, JSON out;
//! [`crate::select`] does the file work. The command lines the hooks and the MCP server run
//! come from the front end (the CLI knows its own executable and arguments).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value, json};

/// The most characters a hook's whole output holds by default (`hook.max_chars`): Claude Code
/// replaces hook output over 10,000 characters with a file path and a short preview, so the
/// context would never reach the model.
pub const DEFAULT_MAX_CHARS: usize = 9_000;

/// Fewest lines of a file worth showing when the whole file does not fit.
const MIN_SHOWN_LINES: usize = 8;

/// The project a hook's directory belongs to: the nearest directory at or above `dir` that
/// holds `.git` or a `.ctx` store; `None` when there is none, or when it is the file system's
/// root or the user's home (a home directory under git for its dotfiles is not a project to
/// index). The hook never walks a directory that is not a project.
pub fn hook_project(dir: &Path, home: Option<&Path>) -> Option<std::path::PathBuf> {
    let root = dir
        .ancestors()
        .find(|d| d.join(".git").exists() || d.join(".ctx").is_dir())?;
    let same = |a: &Path, b: &Path| {
        a == b
            || a.canonicalize()
                .ok()
                .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    if root.parent().is_none() || home.is_some_and(|h| same(root, h)) {
        return None;
    }
    Some(root.to_owned())
}

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

/// Characters `text` takes inside a JSON string (escapes counted).
fn json_chars(text: &str) -> usize {
    serde_json::to_string(text)
        .map_or(text.len(), |s| s.chars().count())
        .saturating_sub(2)
}

/// One document as a snippet: `path (skeleton):`, then its content (the first `lines` lines
/// of it when cut) in a fence longer than any backtick run inside.
fn snippet(doc: &ctx_select::SelectedDocument, lines: Option<usize>) -> String {
    let id = doc.id.as_str();
    let lang = id.rsplit_once('.').map_or("", |(_, ext)| ext);
    let fence = ctx_select::inject::fence_for(&doc.content);
    let label = doc.label();
    let mut out = format!("{id}{label}:\n{fence}{lang}\n");
    match lines {
        None => out.push_str(&doc.content),
        Some(n) => {
            for line in doc.content.lines().take(n) {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&fence);
    out.push('\n');
    if let Some(n) = lines {
        let total = doc.content.lines().count();
        let _ = writeln!(out, "[… lines {}-{total} of {id} not shown]", n + 1);
    }
    out
}

/// The last line when something was cut or left out: what, and how to read it, in at most
/// `budget` characters as printed: every item while they fit, then how many more.
fn left_out_line(cut: &[(String, String)], budget: usize) -> String {
    if cut.is_empty() {
        return String::new();
    }
    let line = |items: &[String], more: usize| {
        let mut listed = items.join(", ");
        if more > 0 {
            if !listed.is_empty() {
                listed.push_str(", and ");
            }
            let _ = write!(listed, "{more} more file(s)");
        }
        format!(
            "[ctx: not shown in full to stay under the hook's size limit: {listed}; read them with your file tool or ctx's fs_read]\n"
        )
    };
    let items: Vec<String> = cut
        .iter()
        .map(|(id, why)| format!("{id} ({why})"))
        .collect();
    let mut shown = items.len();
    loop {
        let text = line(&items[..shown], items.len() - shown);
        if shown == 0 || json_chars(&text) <= budget {
            return text;
        }
        shown -= 1;
    }
}

/// Characters the shortest last line about `files` left out takes.
fn shortest_left_out_line(files: usize) -> usize {
    let items = vec![(String::new(), String::new()); files];
    json_chars(&left_out_line(&items, 0))
}

/// Whether the Markdown fences of `text` open and close in pairs: an opening fence is three
/// or more backticks (with a language or not), its closing one the same backticks alone.
pub fn fences_balanced(text: &str) -> bool {
    let mut open: Option<&str> = None;
    for line in text.lines() {
        let ticks = &line[..line.len() - line.trim_start_matches('`').len()];
        if ticks.len() < 3 {
            continue;
        }
        match open {
            None => open = Some(ticks),
            Some(fence) if line == fence => open = None,
            Some(_) => {}
        }
    }
    open.is_none()
}

/// The hook's answer, `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`, or
/// `{}` when there is nothing to add, holding at most `max_chars` characters as printed
/// (JSON escapes counted) by construction: the lines, then each document whole while it
/// fits, else its first lines (at least a few) with the fence closed, else nothing of it;
/// a last line names what was cut or left out and how to read it.
pub fn fit_output(
    event: &HookEvent,
    lines: &[String],
    documents: &[ctx_select::SelectedDocument],
    max_chars: usize,
) -> Value {
    let wrap = |context: &str| {
        json!({
            "hookSpecificOutput": {
                "hookEventName": event.name(),
                "additionalContext": context,
            }
        })
    };
    // The envelope, and the newline before the last line (two characters escaped).
    let room = max_chars.saturating_sub(wrap("").to_string().chars().count() + 2);
    // The lines first (only a pathological line could overflow: lines are dropped from the
    // end until they fit).
    let mut kept_lines = lines.len();
    let head = |n: usize| -> String {
        let mut text = String::new();
        for line in &lines[..n] {
            text.push_str(line);
            text.push('\n');
        }
        text
    };
    // Room for the shortest last line, should every document be left out.
    let reserve = if documents.is_empty() {
        0
    } else {
        shortest_left_out_line(documents.len()) + 2
    };
    while kept_lines > 0 && json_chars(&head(kept_lines)) + reserve > room {
        kept_lines -= 1;
    }
    let mut context = head(kept_lines);
    if context.is_empty() {
        return json!({});
    }
    if !documents.is_empty() {
        // A blank line between the lines and the snippets, as `inject` writes them.
        context.push('\n');
    }
    let mut used = json_chars(&context);
    let mut cut: Vec<(String, String)> = Vec::new();
    for (i, doc) in documents.iter().enumerate() {
        // What the last line would say if this and every later document were left out.
        let rest = |cut: &[(String, String)], from: usize| -> usize {
            let mut all = cut.to_vec();
            all.extend(
                documents[from..]
                    .iter()
                    .map(|d| (d.id.as_str().to_owned(), format!("{} tokens", d.tokens))),
            );
            json_chars(&left_out_line(&all, usize::MAX))
        };
        let whole = snippet(doc, None);
        if used + json_chars(&whole) + rest(&cut, i + 1) <= room {
            used += json_chars(&whole);
            context.push_str(&whole);
            continue;
        }
        // The first lines that fit, if enough of them do.
        let total = doc.content.lines().count();
        let mut shown = None;
        let (mut lo, mut hi) = (MIN_SHOWN_LINES.min(total), total.saturating_sub(1));
        if lo > 0 && lo <= hi {
            let fits = |n: usize| {
                let mut with = cut.clone();
                with.push((
                    doc.id.as_str().to_owned(),
                    format!("cut after line {n} of {total}"),
                ));
                used + json_chars(&snippet(doc, Some(n))) + rest(&with, i + 1) <= room
            };
            if fits(lo) {
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if fits(mid) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                shown = Some(lo);
            }
        }
        match shown {
            Some(n) => {
                let part = snippet(doc, Some(n));
                used += json_chars(&part);
                context.push_str(&part);
                cut.push((
                    doc.id.as_str().to_owned(),
                    format!("cut after line {n} of {total}"),
                ));
            }
            None => cut.push((doc.id.as_str().to_owned(), format!("{} tokens", doc.tokens))),
        }
    }
    // The newline before it is in `room` already.
    let last = left_out_line(&cut, room.saturating_sub(used));
    if !last.is_empty() {
        if !context.ends_with("\n\n") {
            context.push('\n');
        }
        context.push_str(&last);
    }
    debug_assert!(fences_balanced(&context), "{context}");
    wrap(&context)
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

/// Opens the background build's log at `path` for appending (a worker that finds another
/// running says so after it), started over once it passes 64 KiB.
pub fn open_background_log(path: &Path) -> std::io::Result<std::fs::File> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > 64 << 10) {
        std::fs::remove_file(path)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// Whether the background build whose log is at `log` last ran longer ago than `every` (or
/// never ran): a prompt then starts another to bring the index up to date.
pub fn refresh_due(log: &Path, every: std::time::Duration) -> bool {
    std::fs::metadata(log)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age >= every)
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

    fn document(id: &str, content: String) -> ctx_select::SelectedDocument {
        ctx_select::SelectedDocument {
            id: ctx_core::DocumentId::new(id).expect("id"),
            version: ctx_core::ContentHash::of(content.as_bytes()),
            score: 1.0,
            tokens: content.len() as u64 / 4,
            content,
            why: ctx_select::SelectionWhy::default(),
            degraded: false,
            view: ctx_select::view::ViewKind::Whole,
            lines: Vec::new(),
            file_tokens: 0,
        }
    }

    #[test]
    fn output_fits_max_chars_as_printed_with_fences_closed() {
        let event = HookEvent::UserPromptSubmit {
            prompt: "why".to_owned(),
        };
        // Escape-heavy text (quotes, backslashes, tabs, control characters, backtick runs,
        // non-ASCII) so characters as printed differ from characters of the text.
        let line = "let s = \"a\\tb\" + `x` + ```y``` + \u{1}é;\t// \"quoted\"\n";
        let docs = vec![
            document("src/a.rs", line.repeat(300)),
            document("src/b.py", "def f():\n    return '\"'\n".repeat(200)),
            document("small.txt", "tiny\n".to_owned()),
        ];
        let lines = vec![
            "[CTX: project=p]".to_owned(),
            "[RELEVANT: src/a.rs (mentions a)]".to_owned(),
        ];
        for max in [300, 900, 2_000, 5_000, 9_000, 30_000, 200_000] {
            let out = fit_output(&event, &lines, &docs, max);
            let printed = out.to_string();
            assert!(
                printed.chars().count() <= max,
                "{max}: {} characters",
                printed.chars().count()
            );
            let context = out["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .expect("context");
            assert!(context.starts_with("[CTX: project=p]\n"), "{max}");
            assert!(fences_balanced(context), "{max}: {context}");
            let whole = docs.iter().all(|d| context.contains(d.content.as_str()));
            // Whatever is not there whole is named on the last line.
            assert_eq!(
                !whole,
                context.contains("[ctx: not shown in full"),
                "{max}: {context}"
            );
            if max >= 2_000 {
                // The first document shows at least its first lines.
                assert!(context.contains("src/a.rs:\n````rs\nlet s"), "{max}");
            }
        }
        // Room for everything: nothing is cut.
        let out = fit_output(&event, &lines, &docs, 200_000).to_string();
        assert!(!out.contains("not shown"));
        // Nothing to say: an empty answer.
        assert_eq!(fit_output(&event, &[], &docs, 9_000), json!({}));
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
