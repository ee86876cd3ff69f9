//! The built-in rule catalog: `rules.toml`, compiled into the binary and read once.
//!
//! Each `[[rule]]` names a provider's credential and says how to find it:
//!
//! - `id`: the id in `[REDACTED:ID]` and in findings (upper snake case). Several entries may
//!   share an id when one credential has several shapes.
//! - `provider`, `description`: what the credential is, for people.
//! - `keywords`: literals of three bytes or more, matched without regard to ASCII case, of which
//!   every match holds one; the rule's regex runs only where one is found (on its line, or for `scope = "text"`
//!   on the whole text).
//! - Either `regex` (the first capture group that takes part is the secret, else the whole
//!   match; a group named `bare` marks a value written without quotes, one named `typed` a
//!   type annotation after the key, which is never the secret), or `context` and `value`: a provider name (a regex, matched without regard to case)
//!   that names the key, and the value's shape. The catalog builds `context`, the rest of the
//!   key, an assignment (`=`, `:`, `:=`, `=>`, `,` and quotes) and the value into one regex, so
//!   every keyed rule reads assignments the same way. A keyed rule also finds a value of its
//!   shape under a credential's key where `context` names the provider around the key: a
//!   parent key or section, a call, or earlier on the line (see `super::structure`).
//! - `check`: what a match must also be ([`Check`]), `token` unless said; `entropy`: the least
//!   Shannon entropy (bits per byte) of the secret, for the checks that measure it; `max_run`:
//!   the longest run of one character the secret may hold (5 unless said; formats that contain
//!   runs, such as X bearer tokens' `AAAA…`, say more); `allow`: regexes that mark a matched
//!   secret as a known non-secret (documentation keys).
//! - `positives`, `negatives`: samples the rule must redact and look-alikes that nothing may
//!   change; a unit test runs every one.

use super::checks::Check;
use super::{Scope, rule_id_of};

/// The catalog's text, with its samples (for tests and [`super::Redactor::builtin_catalog`]).
pub(crate) const CATALOG_TOML: &str = include_str!("rules.toml");

/// The catalog as the redactor reads it at run time, without what only people and tests read
/// (`positives`, `negatives`, `description`): `build.rs` reads `rules.toml` and writes its
/// rules as Rust ([`RawRule`] literals), so no process parses TOML to redact (that was a
/// millisecond, and a thousand page faults, at the start of every command that redacts).
mod runtime {
    use super::{RawRule, StaticRule};
    include!(concat!(env!("OUT_DIR"), "/rules_runtime.rs"));

    /// The table as [`RawRule`]s.
    pub(crate) fn rules() -> Vec<RawRule<'static>> {
        RULES
            .iter()
            .map(|rule| RawRule {
                id: rule.id,
                provider: rule.provider,
                keywords: rule.keywords.to_vec(),
                regex: rule.regex,
                context: rule.context,
                value: rule.value,
                check: rule.check,
                entropy: rule.entropy,
                max_run: rule.max_run,
                allow: rule.allow.to_vec(),
                scope: rule.scope,
                positives: Vec::new(),
                negatives: Vec::new(),
            })
            .collect()
    }
}

/// One rule of the table `build.rs` writes: a [`RawRule`]'s fields as static data.
struct StaticRule {
    id: Option<&'static str>,
    provider: Option<&'static str>,
    keywords: &'static [&'static str],
    regex: Option<&'static str>,
    context: Option<&'static str>,
    value: Option<&'static str>,
    check: Option<&'static str>,
    entropy: Option<f64>,
    max_run: Option<usize>,
    allow: &'static [&'static str],
    scope: Option<&'static str>,
}

/// A rule's fields as written (in `rules.toml`, or as `build.rs` wrote them), before they are
/// checked and a keyed rule's regex is built.
#[derive(Debug, Default)]
pub(crate) struct RawRule<'a> {
    pub id: Option<&'a str>,
    pub provider: Option<&'a str>,
    pub keywords: Vec<&'a str>,
    pub regex: Option<&'a str>,
    pub context: Option<&'a str>,
    pub value: Option<&'a str>,
    pub check: Option<&'a str>,
    pub entropy: Option<f64>,
    pub max_run: Option<usize>,
    pub allow: Vec<&'a str>,
    pub scope: Option<&'a str>,
    pub positives: Vec<&'a str>,
    pub negatives: Vec<&'a str>,
}

/// The built-in catalog as the redactor uses it (without samples).
pub(crate) fn runtime_rules() -> Result<Vec<CatalogRule>, String> {
    runtime::rules()
        .iter()
        .enumerate()
        .map(|(index, raw)| {
            check_rule(raw, false).map_err(|message| {
                format!(
                    "rule {} (`{}`): {message}",
                    index + 1,
                    raw.id.unwrap_or("?")
                )
            })
        })
        .collect()
}

/// One rule as the catalog describes it.
#[derive(Debug, Clone)]
pub(crate) struct CatalogRule {
    pub id: String,
    pub provider: String,
    pub keywords: Vec<String>,
    pub pattern: String,
    pub check: Check,
    pub entropy: Option<f64>,
    pub max_run: Option<usize>,
    /// For a keyed rule, its provider context and value shape, which also find the value under
    /// a key path that names the provider (see `super::structure`).
    pub keyed: Option<Keyed>,
    pub allow: Vec<String>,
    pub scope: Scope,
    pub positives: Vec<String>,
    pub negatives: Vec<String>,
}

/// A keyed rule's two halves, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keyed {
    /// The provider's name (a regex, matched without regard to case).
    pub context: String,
    /// The value's shape (a regex).
    pub value: String,
}

/// The assignment between a keyed rule's context and its value: the rest of the key, closing
/// quotes or brackets, an operator, an opening quote.
const ASSIGNMENT: &str = r#"[A-Za-z0-9_.\-]{0,30}?["'\]]{0,2}[ \t]*(?::=|=>|=|:|,)[ \t]*["'`]?"#;

/// Reads the catalog; an error names the entry and what is wrong with it. With `samples`,
/// every rule must have `positives` and `negatives` (the catalog as written).
pub(crate) fn parse(text: &str, samples: bool) -> Result<Vec<CatalogRule>, String> {
    let document = toml_edit::Document::parse(text).map_err(|err| err.to_string())?;
    let root = document.as_table();
    for (key, _) in root {
        if key != "rule" {
            return Err(format!("unknown top-level key `{key}`"));
        }
    }
    let Some(entries) = root.get("rule").and_then(|r| r.as_array_of_tables()) else {
        return Err("no [[rule]] entries".to_owned());
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, table)| {
            let named = |message: String| {
                let id = table.get("id").and_then(|v| v.as_str()).unwrap_or("?");
                format!("rule {} (`{id}`): {message}", index + 1)
            };
            let raw = raw_rule(table).map_err(named)?;
            check_rule(&raw, samples).map_err(named)
        })
        .collect()
}

/// A `[[rule]]` table's fields, typed.
fn raw_rule(table: &toml_edit::Table) -> Result<RawRule<'_>, String> {
    const KNOWN: &[&str] = &[
        "id",
        "provider",
        "description",
        "keywords",
        "regex",
        "context",
        "value",
        "check",
        "entropy",
        "max_run",
        "allow",
        "scope",
        "positives",
        "negatives",
    ];
    for (key, _) in table {
        if !KNOWN.contains(&key) {
            return Err(format!("unknown key `{key}`"));
        }
    }
    let entropy = match table.get("entropy") {
        None => None,
        Some(item) => Some(
            item.as_float()
                .or_else(|| item.as_integer().map(|i| i as f64))
                .ok_or("`entropy` must be a number")?,
        ),
    };
    Ok(RawRule {
        id: string(table, "id")?,
        provider: string(table, "provider")?,
        keywords: strings(table, "keywords")?,
        regex: string(table, "regex")?,
        context: string(table, "context")?,
        value: string(table, "value")?,
        check: string(table, "check")?,
        entropy,
        max_run: match table.get("max_run") {
            None => None,
            Some(item) => Some(
                item.as_integer()
                    .and_then(|i| usize::try_from(i).ok())
                    .ok_or("`max_run` must be a count")?,
            ),
        },
        allow: strings(table, "allow")?,
        scope: string(table, "scope")?,
        positives: strings(table, "positives")?,
        negatives: strings(table, "negatives")?,
    })
}

/// Checks a rule's fields and builds it (a keyed rule's regex from its context and value).
fn check_rule(raw: &RawRule<'_>, samples: bool) -> Result<CatalogRule, String> {
    let id = raw.id.ok_or("no `id`")?.to_owned();
    if rule_id_of(&id).as_deref() != Some(id.as_str()) {
        return Err("`id` must be upper snake case".to_owned());
    }
    let pattern = match (raw.regex, raw.context, raw.value) {
        (Some(regex), None, None) => regex.to_owned(),
        (None, Some(context), Some(value)) => {
            format!("(?i:(?:{context})){ASSIGNMENT}({value})")
        }
        _ => return Err("give either `regex`, or `context` and `value`".to_owned()),
    };
    let check = match raw.check {
        None => Check::Token,
        Some(name) => Check::from_name(name).ok_or(format!("unknown check `{name}`"))?,
    };
    let scope = match raw.scope {
        None | Some("line") => Scope::Line,
        Some("text") => Scope::Text,
        Some(other) => return Err(format!("unknown scope `{other}` (line or text)")),
    };
    if raw.keywords.is_empty() || raw.keywords.iter().any(|k| k.len() < 3 || k.contains('\n')) {
        return Err(
            "`keywords` must list literals of three bytes or more, without newlines".to_owned(),
        );
    }
    if samples && (raw.positives.is_empty() || raw.negatives.is_empty()) {
        return Err("every rule needs `positives` and `negatives`".to_owned());
    }
    let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    Ok(CatalogRule {
        provider: raw.provider.ok_or("no `provider`")?.to_owned(),
        id,
        keywords: owned(&raw.keywords),
        pattern,
        check,
        entropy: raw.entropy,
        max_run: raw.max_run,
        keyed: raw.context.zip(raw.value).map(|(context, value)| Keyed {
            context: context.to_owned(),
            value: value.to_owned(),
        }),
        allow: owned(&raw.allow),
        scope,
        positives: owned(&raw.positives),
        negatives: owned(&raw.negatives),
    })
}

fn string<'a>(table: &'a toml_edit::Table, key: &str) -> Result<Option<&'a str>, String> {
    match table.get(key) {
        None => Ok(None),
        Some(item) => item
            .as_str()
            .map(Some)
            .ok_or(format!("`{key}` must be a string")),
    }
}

fn strings<'a>(table: &'a toml_edit::Table, key: &str) -> Result<Vec<&'a str>, String> {
    match table.get(key) {
        None => Ok(Vec::new()),
        Some(item) => item
            .as_array()
            .ok_or(format!("`{key}` must be an array of strings"))?
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or(format!("`{key}` must be an array of strings"))
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalog the redactor reads (as `build.rs` wrote it) is the catalog as written, less
    /// its samples: every rule, in order, with everything a redaction uses.
    #[test]
    fn the_runtime_catalog_is_the_catalog_without_its_samples() {
        let full = parse(CATALOG_TOML, true).expect("the catalog parses");
        let runtime = runtime_rules().expect("the catalog as build.rs wrote it");
        let used = |rule: &CatalogRule| {
            (
                rule.id.clone(),
                rule.provider.clone(),
                rule.keywords.clone(),
                rule.pattern.clone(),
                rule.check,
                rule.entropy.map(f64::to_bits),
                rule.max_run,
                rule.keyed.clone(),
                rule.allow.clone(),
                rule.scope,
            )
        };
        assert_eq!(full.len(), runtime.len());
        for (full, runtime) in full.iter().zip(&runtime) {
            assert_eq!(used(full), used(runtime));
            assert!(runtime.positives.is_empty() && runtime.negatives.is_empty());
        }
        // Samples are still required of the catalog as written.
        let no_samples = "[[rule]]\nid = \"X_KEY\"\nprovider = 'X'\nkeywords = ['xkey']\nregex = 'xkey_[a-z]{8}'\n";
        assert!(parse(no_samples, true).is_err());
        assert!(parse(no_samples, false).is_ok());
    }
}
