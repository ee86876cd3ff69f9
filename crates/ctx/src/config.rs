//! Settings: known keys, their types and defaults, and the layers that set them.
//!
//! Precedence, highest first: command-line flag, environment (`CTX_<KEY>` with `.` as `_`,
//! upper case), project file (`.ctx/config.toml`), global file (`~/.config/ctx/config.toml`),
//! built-in default. Files are TOML; dotted keys are tables (`mcp.max_tokens` is
//! `[mcp] max_tokens`). Writing a key keeps the rest of the file, comments included.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ctx_core::TokenizerKind;
use serde::Serialize;
use toml_edit::{DocumentMut, Item, Table, value};

/// The type of a setting's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A tokenizer name.
    Tokenizer,
    /// A non-negative integer.
    Count,
    /// A set of MCP tools: `core`, `all`, or tool names separated by commas.
    ToolSet,
    /// Where a store backend lives: `postgres://…`, `s3://…`, an absolute directory, or empty
    /// for the embedded default.
    StoreUrl,
}

/// A setting ctx understands.
#[derive(Debug, Clone, Copy)]
pub struct ConfigKey {
    pub name: &'static str,
    pub kind: ValueKind,
    pub default: &'static str,
    pub help: &'static str,
}

/// Every setting, in name order. Later parts of ctx add theirs here.
pub const KEYS: &[ConfigKey] = &[
    ConfigKey {
        name: "budget",
        kind: ValueKind::Count,
        default: "128000",
        help: "token budget of new packs",
    },
    ConfigKey {
        name: "cmd_timeout_secs",
        kind: ValueKind::Count,
        default: "30",
        help: "seconds a cmd: source may run before it is killed",
    },
    ConfigKey {
        name: "hook.deadline_ms",
        kind: ValueKind::Count,
        default: "5000",
        help: "milliseconds the Claude Code hook may take; past it the hook answers with what is ready (or nothing) and a cold index is built in the background",
    },
    ConfigKey {
        name: "hook.max_chars",
        kind: ValueKind::Count,
        default: "9000",
        help: "most characters of the Claude Code hook's whole output (Claude Code sets output over 10,000 characters aside as a file)",
    },
    ConfigKey {
        name: "hook.max_files",
        kind: ValueKind::Count,
        default: "100000",
        help: "the Claude Code hook indexes a project of at most this many files (larger ones: run `ctx index build` yourself)",
    },
    ConfigKey {
        name: "http.body_timeout_secs",
        kind: ValueKind::Count,
        default: "30",
        help: "seconds an HTTP client (ctx mcp --http, ctx serve) may take to send a request body; a slower one gets 408",
    },
    ConfigKey {
        name: "http.max_body_bytes",
        kind: ValueKind::Count,
        default: "4194304",
        help: "largest HTTP request body (ctx mcp --http, ctx serve), checked before it is read further; a larger one gets 413",
    },
    ConfigKey {
        name: "http.max_sessions",
        kind: ValueKind::Count,
        default: "1000",
        help: "most MCP sessions an HTTP server keeps at once (per workspace under ctx serve); a new one past it gets 503",
    },
    ConfigKey {
        name: "http.session_idle_secs",
        kind: ValueKind::Count,
        default: "300",
        help: "an MCP session unused for this many seconds is closed",
    },
    ConfigKey {
        name: "max_file_bytes",
        kind: ValueKind::Count,
        default: "1048576",
        help: "files larger than this are left out of packs without being read",
    },
    ConfigKey {
        name: "mcp.max_tokens",
        kind: ValueKind::Count,
        default: "8000",
        help: "most tokens one MCP tool answer may hold (larger answers are paged with a cursor)",
    },
    ConfigKey {
        name: "mcp.tools",
        kind: ValueKind::ToolSet,
        default: "core",
        help: "the MCP tools offered: core (select, search, summarize, map, read, render), all, or names separated by commas",
    },
    ConfigKey {
        name: "store.metadata",
        kind: ValueKind::StoreUrl,
        default: "",
        help: "where the store's metadata lives: postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME] to share it; empty for state.db",
    },
    ConfigKey {
        name: "store.objects",
        kind: ValueKind::StoreUrl,
        default: "",
        help: "where the store's objects live: s3://BUCKET/PREFIX[?endpoint=URL] (AWS_* variables give credentials) or an absolute directory; empty for .ctx/objects",
    },
    ConfigKey {
        name: "tokenizer",
        kind: ValueKind::Tokenizer,
        default: "o200k_base",
        help: "tokenizer for counts and budgets: o200k_base, cl100k_base or approx",
    },
];

/// A setting's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ConfigValue {
    Tokenizer(TokenizerKind),
    Count(u64),
    Text(String),
}

impl fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tokenizer(kind) => f.write_str(kind.name()),
            Self::Count(n) => write!(f, "{n}"),
            Self::Text(text) => f.write_str(text),
        }
    }
}

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "layer", rename_all = "snake_case")]
pub enum ConfigSource {
    Default,
    Global { path: PathBuf },
    Project { path: PathBuf },
    Env { var: String },
    Flag,
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::Global { path } => write!(f, "global ({})", path.display()),
            Self::Project { path } => write!(f, "project ({})", path.display()),
            Self::Env { var } => write!(f, "env ({var})"),
            Self::Flag => f.write_str("flag"),
        }
    }
}

/// An effective setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedValue {
    pub key: &'static str,
    pub value: ConfigValue,
    pub source: ConfigSource,
}

/// Configuration problems, each naming the input and the fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown config key `{0}`; known keys: {known}", known = known_keys())]
    UnknownKey(String),
    #[error("invalid value `{value}` for `{key}` ({origin}): {reason}")]
    InvalidValue {
        key: String,
        value: String,
        origin: String,
        reason: String,
    },
    #[error("{}: invalid TOML: {message}; fix or delete the file", path.display())]
    InvalidFile { path: PathBuf, message: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn known_keys() -> String {
    KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

/// Looks up a key by name.
pub fn key(name: &str) -> Result<&'static ConfigKey, ConfigError> {
    KEYS.iter()
        .find(|k| k.name == name)
        .ok_or_else(|| ConfigError::UnknownKey(name.to_owned()))
}

impl ConfigKey {
    /// The environment variable that overrides this key.
    pub fn env_var(&self) -> String {
        format!("CTX_{}", self.name.replace('.', "_").to_uppercase())
    }

    /// Parses a textual value (from a flag, the environment or `config set`).
    pub fn parse(&self, text: &str, origin: &str) -> Result<ConfigValue, ConfigError> {
        let invalid = |reason: String| ConfigError::InvalidValue {
            key: self.name.to_owned(),
            value: text.to_owned(),
            origin: origin.to_owned(),
            reason,
        };
        match self.kind {
            ValueKind::Tokenizer => text
                .parse()
                .map(ConfigValue::Tokenizer)
                .map_err(|e| invalid(e.to_string())),
            ValueKind::Count => text
                .parse()
                .map(ConfigValue::Count)
                .map_err(|_| invalid("expected a non-negative integer".to_owned())),
            ValueKind::ToolSet => {
                let names: Vec<&str> = text.split(',').map(str::trim).collect();
                let well_formed = names.iter().all(|name| {
                    !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                });
                if well_formed {
                    Ok(ConfigValue::Text(names.join(",")))
                } else {
                    Err(invalid(
                        "expected core, all, or tool names separated by commas (ctx_search,fs_read)"
                            .to_owned(),
                    ))
                }
            }
            ValueKind::StoreUrl => {
                let known = ["postgres://", "postgresql://", "s3://", "file:///", "/"];
                if text.is_empty() || known.iter().any(|p| text.starts_with(p)) {
                    Ok(ConfigValue::Text(text.to_owned()))
                } else {
                    Err(invalid(
                        "expected postgres://…, s3://BUCKET/PREFIX, an absolute directory, or empty"
                            .to_owned(),
                    ))
                }
            }
        }
    }

    fn parse_toml(&self, item: &Item, origin: &str) -> Result<ConfigValue, ConfigError> {
        match (self.kind, item.as_value()) {
            (ValueKind::Tokenizer | ValueKind::ToolSet | ValueKind::StoreUrl, Some(v))
                if v.is_str() =>
            {
                self.parse(v.as_str().unwrap_or_default(), origin)
            }
            (ValueKind::Count, Some(v)) if v.is_integer() => {
                self.parse(&v.as_integer().unwrap_or_default().to_string(), origin)
            }
            _ => Err(ConfigError::InvalidValue {
                key: self.name.to_owned(),
                value: item.to_string().trim().to_owned(),
                origin: origin.to_owned(),
                reason: match self.kind {
                    ValueKind::Tokenizer | ValueKind::ToolSet | ValueKind::StoreUrl => {
                        "expected a string".to_owned()
                    }
                    ValueKind::Count => "expected an integer".to_owned(),
                },
            }),
        }
    }
}

/// A parsed config file.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    doc: DocumentMut,
}

impl ConfigFile {
    /// Reads `path`; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(ConfigError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let doc = text
            .parse::<DocumentMut>()
            .map_err(|err| ConfigError::InvalidFile {
                path: path.to_owned(),
                message: err.message().to_owned(),
            })?;
        Ok(Self {
            path: path.to_owned(),
            doc,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lookup(&self, key: &ConfigKey) -> Option<&Item> {
        let mut item = self.doc.as_item();
        for part in key.name.split('.') {
            item = item.get(part)?;
        }
        Some(item)
    }

    /// Sets `key` in the file (validated), keeping everything else, and writes it atomically.
    pub fn set(&mut self, key: &ConfigKey, text: &str) -> Result<ConfigValue, ConfigError> {
        let parsed = key.parse(text, "config set")?;
        let mut parts: Vec<&str> = key.name.split('.').collect();
        let leaf = parts.pop().expect("keys are non-empty");
        let mut table: &mut Table = self.doc.as_table_mut();
        for part in parts {
            let entry = table
                .entry(part)
                .or_insert_with(|| Item::Table(Table::new()));
            table = entry
                .as_table_mut()
                .ok_or_else(|| ConfigError::InvalidFile {
                    path: self.path.clone(),
                    message: format!("`{part}` is not a table"),
                })?;
        }
        table[leaf] = match &parsed {
            ConfigValue::Tokenizer(kind) => value(kind.name()),
            ConfigValue::Count(n) => value(i64::try_from(*n).unwrap_or(i64::MAX)),
            ConfigValue::Text(text) => value(text.as_str()),
        };
        self.save()?;
        Ok(parsed)
    }

    /// Removes `key` from the file (and tables it leaves empty), keeping everything else;
    /// returns whether it was set. The file is written only when something changed.
    pub fn unset(&mut self, key: &ConfigKey) -> Result<bool, ConfigError> {
        let parts: Vec<&str> = key.name.split('.').collect();
        let removed = remove_path(self.doc.as_table_mut(), &parts);
        if removed {
            self.save()?;
        }
        Ok(removed)
    }

    fn save(&self) -> Result<(), ConfigError> {
        let io = |source| ConfigError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        tmp.write_all(self.doc.to_string().as_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(&self.path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// Removes `parts` (a dotted key) from `table`, and each table the removal leaves empty.
fn remove_path(table: &mut Table, parts: &[&str]) -> bool {
    match parts {
        [] => false,
        [leaf] => table.remove(leaf).is_some(),
        [first, rest @ ..] => {
            let Some(inner) = table.get_mut(first).and_then(Item::as_table_mut) else {
                return false;
            };
            let removed = remove_path(inner, rest);
            if removed && inner.is_empty() {
                table.remove(first);
            }
            removed
        }
    }
}

/// The layers that set values, lowest precedence first (defaults are implicit).
#[derive(Debug, Clone, Default)]
pub struct ConfigLayers {
    pub global: Option<ConfigFile>,
    pub project: Option<ConfigFile>,
    /// `CTX_*` environment variables, as the front end read them.
    pub env: BTreeMap<String, String>,
    /// Values given as command-line flags, by key name.
    pub flags: BTreeMap<String, String>,
}

impl ConfigLayers {
    /// The effective value of `key` and where it came from.
    pub fn resolve(&self, key: &'static ConfigKey) -> Result<ResolvedValue, ConfigError> {
        let resolved = |value, source| {
            Ok(ResolvedValue {
                key: key.name,
                value,
                source,
            })
        };
        if let Some(text) = self.flags.get(key.name) {
            return resolved(key.parse(text, "flag")?, ConfigSource::Flag);
        }
        let var = key.env_var();
        if let Some(text) = self.env.get(&var) {
            return resolved(key.parse(text, &var)?, ConfigSource::Env { var });
        }
        if let Some(file) = &self.project
            && let Some(item) = file.lookup(key)
        {
            let origin = file.path.display().to_string();
            return resolved(
                key.parse_toml(item, &origin)?,
                ConfigSource::Project {
                    path: file.path.clone(),
                },
            );
        }
        if let Some(file) = &self.global
            && let Some(item) = file.lookup(key)
        {
            let origin = file.path.display().to_string();
            return resolved(
                key.parse_toml(item, &origin)?,
                ConfigSource::Global {
                    path: file.path.clone(),
                },
            );
        }
        resolved(key.parse(key.default, "default")?, ConfigSource::Default)
    }

    /// Every key's effective value, in name order.
    pub fn resolve_all(&self) -> Result<Vec<ResolvedValue>, ConfigError> {
        KEYS.iter().map(|k| self.resolve(k)).collect()
    }

    /// The effective value of a count-typed key.
    pub fn count(&self, name: &str) -> Result<u64, ConfigError> {
        match self.resolve(key(name)?)?.value {
            ConfigValue::Count(n) => Ok(n),
            _ => unreachable!("`{name}` is a count-typed key"),
        }
    }

    /// Custom redaction rules: `[[redaction.rules]]` tables with `id` and `regex`, from the
    /// global file, then the project file.
    pub fn redaction_rules(&self) -> Result<Vec<ctx_core::redact::CustomRule>, ConfigError> {
        let mut rules = Vec::new();
        for file in [&self.global, &self.project].into_iter().flatten() {
            let Some(item) = file.doc.get("redaction").and_then(|r| r.get("rules")) else {
                continue;
            };
            let invalid = |message: &str| ConfigError::InvalidFile {
                path: file.path.clone(),
                message: format!("redaction.rules: {message}"),
            };
            let tables: Vec<&Table> = if let Some(array) = item.as_array_of_tables() {
                array.iter().collect()
            } else {
                return Err(invalid(
                    "expected [[redaction.rules]] tables with `id` and `regex`",
                ));
            };
            for table in tables {
                let field = |name: &str| {
                    table
                        .get(name)
                        .and_then(Item::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| invalid(&format!("every rule needs a string `{name}`")))
                };
                rules.push(ctx_core::redact::CustomRule {
                    id: field("id")?,
                    regex: field("regex")?,
                });
            }
        }
        Ok(rules)
    }

    /// Extra sensitive-path patterns: `sensitive.extra = ["…"]` from both files.
    pub fn sensitive_extra(&self) -> Result<Vec<String>, ConfigError> {
        let mut patterns = Vec::new();
        for file in [&self.global, &self.project].into_iter().flatten() {
            let Some(item) = file.doc.get("sensitive").and_then(|r| r.get("extra")) else {
                continue;
            };
            let array = item.as_array().ok_or_else(|| ConfigError::InvalidFile {
                path: file.path.clone(),
                message: "sensitive.extra: expected an array of glob patterns".into(),
            })?;
            for value in array {
                let pattern = value.as_str().ok_or_else(|| ConfigError::InvalidFile {
                    path: file.path.clone(),
                    message: "sensitive.extra: every pattern must be a string".into(),
                })?;
                patterns.push(pattern.to_owned());
            }
        }
        Ok(patterns)
    }

    /// The effective tokenizer.
    pub fn tokenizer(&self) -> Result<TokenizerKind, ConfigError> {
        match self.resolve(key("tokenizer")?)?.value {
            ConfigValue::Tokenizer(kind) => Ok(kind),
            _ => unreachable!("tokenizer is a tokenizer-typed key"),
        }
    }

    /// The value of a text-typed setting (`mcp.tools`).
    pub fn text(&self, name: &str) -> Result<String, ConfigError> {
        match self.resolve(key(name)?)?.value {
            ConfigValue::Text(text) => Ok(text),
            other => Ok(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, text: &str) -> ConfigFile {
        let path = dir.join(name);
        fs::write(&path, text).expect("write");
        ConfigFile::load(&path).expect("load")
    }

    #[test]
    fn precedence_is_flag_env_project_global_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tokenizer = key("tokenizer").expect("known");
        let mut layers = ConfigLayers::default();
        assert_eq!(
            layers.resolve(tokenizer).expect("ok").source,
            ConfigSource::Default
        );

        layers.global = Some(file(dir.path(), "g.toml", "tokenizer = \"approx\"\n"));
        let r = layers.resolve(tokenizer).expect("ok");
        assert_eq!(r.value, ConfigValue::Tokenizer(TokenizerKind::Approx));
        assert!(matches!(r.source, ConfigSource::Global { .. }));

        layers.project = Some(file(dir.path(), "p.toml", "tokenizer = \"cl100k_base\"\n"));
        let r = layers.resolve(tokenizer).expect("ok");
        assert_eq!(r.value, ConfigValue::Tokenizer(TokenizerKind::Cl100kBase));
        assert!(matches!(r.source, ConfigSource::Project { .. }));

        layers.env.insert("CTX_TOKENIZER".into(), "approx".into());
        assert!(matches!(
            layers.resolve(tokenizer).expect("ok").source,
            ConfigSource::Env { .. }
        ));

        layers.flags.insert("tokenizer".into(), "o200k_base".into());
        let r = layers.resolve(tokenizer).expect("ok");
        assert_eq!(
            (r.value, r.source),
            (
                ConfigValue::Tokenizer(TokenizerKind::O200kBase),
                ConfigSource::Flag
            )
        );
    }

    #[test]
    fn bad_values_and_files_name_their_origin() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut layers = ConfigLayers {
            project: Some(file(dir.path(), "p.toml", "tokenizer = 3\n")),
            ..ConfigLayers::default()
        };
        let err = layers.tokenizer().expect_err("wrong type");
        assert!(err.to_string().contains("p.toml"), "{err}");

        layers.env.insert("CTX_TOKENIZER".into(), "gpt2".into());
        let err = layers.tokenizer().expect_err("unknown");
        assert!(err.to_string().contains("CTX_TOKENIZER"), "{err}");

        let path = dir.path().join("broken.toml");
        fs::write(&path, "tokenizer = \n").expect("write");
        let err = ConfigFile::load(&path).expect_err("invalid toml");
        assert!(err.to_string().contains("broken.toml"), "{err}");

        assert!(
            key("nope")
                .expect_err("unknown")
                .to_string()
                .contains("tokenizer")
        );
    }

    #[test]
    fn set_keeps_comments_and_other_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut f = file(dir.path(), "c.toml", "# my settings\nother = 1\n");
        f.set(key("tokenizer").expect("known"), "cl100k_base")
            .expect("set");
        let text = fs::read_to_string(dir.path().join("c.toml")).expect("read");
        assert_eq!(
            text,
            "# my settings\nother = 1\ntokenizer = \"cl100k_base\"\n"
        );
        assert!(f.set(key("tokenizer").expect("known"), "bogus").is_err());
        assert_eq!(
            fs::read_to_string(dir.path().join("c.toml")).expect("read"),
            text,
            "unchanged on error"
        );
    }
}
