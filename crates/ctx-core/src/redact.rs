//! Secret redaction: find credentials in text and replace each with `[REDACTED:RULE_ID]`.
//!
//! A [`Redactor`] holds an ordered list of rules. The built-in set ([`Redactor::builtin`]) covers
//! vendor tokens with a recognisable shape (AWS, GCP, Azure, GitHub, GitLab, Slack, Stripe,
//! Twilio, SendGrid, npm, PyPI, OpenAI, Anthropic, …), JWTs, PEM and SSH private keys (the
//! whole block), `Authorization` headers, passwords in URLs and connection strings, and generic
//! `api_key = "…"` / `password: …` assignments. Custom rules (an id and a regex, from config)
//! come after the built-in ones ([`Redactor::with_custom`]).
//!
//! Guarantees:
//!
//! - Only the secret is replaced: in `api_key = "…"` the value, in `scheme://user:pass@host` the
//!   password, for a private key the whole `BEGIN … END` block. No byte outside a replaced span
//!   changes, and text without findings is returned borrowed, untouched.
//! - Overlapping candidates are resolved deterministically: earliest start first, then the
//!   longest, then the rule that comes first. Same input, same output bytes.
//! - A [`RedactionFinding`] names the rule and the line, never the secret.
//! - Text already redacted stays as it is: `[REDACTED:…]` is never itself taken for a secret.
//!
//! False positives are kept down by shape and entropy: generic assignments, bearer tokens and
//! URL passwords are redacted only when the value looks generated, so `password = "changeme"`,
//! `token = "<YOUR_TOKEN>"`, `${ENV_VAR}`, `os.environ["X"]`, `xxxxxxxx` and
//! `your-api-key-here` stay. Keys that vendors publish as non-secret examples are left alone:
//! AWS's documentation keys (those ending in `EXAMPLE`, such as `AKIAIOSFODNN7EXAMPLE`) and the
//! Azure storage emulator's well-known account key.
//!
//! Speed: each rule names fingerprints, literals found in every match it can make (`ghp_`,
//! `AKIA`, and for case-insensitive key names the case variants people write: `key`, `Key`,
//! `KEY`). A few small multi-literal searches (SIMD where the CPU has it) find them; a rule
//! whose fingerprints are absent costs nothing, and most rules then run their regex only on the
//! lines that hold a fingerprint.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, Input, MatchKind, packed};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

/// A redaction rule from configuration: an id and a Rust regex.
///
/// The id becomes upper snake case in the replacement (`internal-token` gives
/// `[REDACTED:INTERNAL_TOKEN]`). If the regex has capture groups, only the first group that
/// takes part in a match is replaced; otherwise the whole match is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomRule {
    /// The rule's name, as written in config.
    pub id: String,
    /// The pattern, in the `regex` crate's syntax (no look-around, no backreferences).
    pub regex: String,
}

/// Why a set of custom rules could not become a [`Redactor`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedactionError {
    #[error(
        "custom redaction rule `{id}` has an invalid regex: {message}; fix its `regex` \
         (Rust regex syntax: no look-around, no backreferences)"
    )]
    InvalidRegex { id: String, message: String },
    #[error(
        "custom redaction rule `{id}` matches the empty string; make its `regex` require at \
         least one character"
    )]
    MatchesEmpty { id: String },
    #[error(
        "custom redaction rule id `{id}` has no letters or digits; name the rule, for example \
         `internal-token`"
    )]
    InvalidId { id: String },
    #[error(
        "custom redaction rule `{id}` would be reported as `{rule_id}`, which {owner} already \
         uses; rename the custom rule"
    )]
    DuplicateId {
        id: String,
        rule_id: String,
        owner: &'static str,
    },
}

/// Text after redaction, with what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text with each secret replaced by `[REDACTED:RULE_ID]`; borrowed when nothing was.
    pub text: Cow<'a, str>,
    /// One finding per replaced span, in text order.
    pub findings: Vec<RedactionFinding>,
}

impl Redacted<'_> {
    /// Whether anything was replaced.
    pub fn is_redacted(&self) -> bool {
        !self.findings.is_empty()
    }
}

/// One replaced secret: which rule found it and where. Never holds the secret.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RedactionFinding {
    /// The rule id, upper snake case (`AWS_ACCESS_KEY_ID`).
    pub rule: String,
    /// The 1-based line on which the replaced span starts.
    pub line: u32,
}

/// An ordered set of redaction rules, ready to apply.
#[derive(Clone)]
pub struct Redactor {
    rules: Vec<Rule>,
    /// Searchers over the rules' fingerprints, [`FINGERPRINTS_PER_SEARCHER`] at most each, with
    /// the index of each one's first fingerprint.
    searchers: Vec<(FingerprintSearcher, usize)>,
    /// For each fingerprint, the rules to run where it is seen: its own, and those of every
    /// fingerprint it contains (a leftmost-longest search reports only the longest of the
    /// fingerprints starting at one place).
    fingerprint_rules: Vec<Vec<usize>>,
    /// Rules without fingerprints: they always run, over the whole text.
    unconditional: Vec<usize>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.rule_ids())
            .finish_non_exhaustive()
    }
}

static BUILTIN: LazyLock<Redactor> = LazyLock::new(|| {
    let rules = BUILTIN_RULES
        .iter()
        .map(|spec| Rule {
            id: Cow::Borrowed(spec.id),
            regex: RegexBuilder::new(&ascii_word_boundaries(spec.pattern))
                .build()
                .unwrap_or_else(|err| panic!("built-in rule {} is a valid regex: {err}", spec.id)),
            fingerprints: spec.fingerprints,
            scope: spec.scope,
            accept: spec.accept,
        })
        .collect();
    Redactor::from_rules(rules)
});

impl Redactor {
    /// The built-in rule set, compiled on first use and shared afterwards.
    pub fn builtin() -> &'static Redactor {
        &BUILTIN
    }

    /// The built-in rules followed by `custom` ones, in the order given.
    pub fn with_custom(custom: &[CustomRule]) -> Result<Redactor, RedactionError> {
        let builtin = Self::builtin();
        let mut redactor = builtin.clone();
        for rule in custom {
            let rule_id = rule_id_of(&rule.id).ok_or_else(|| RedactionError::InvalidId {
                id: rule.id.clone(),
            })?;
            if let Some(existing) = redactor.rules.iter().position(|r| r.id == rule_id) {
                return Err(RedactionError::DuplicateId {
                    id: rule.id.clone(),
                    rule_id,
                    owner: if existing < builtin.rules.len() {
                        "a built-in rule"
                    } else {
                        "another custom rule"
                    },
                });
            }
            let regex = Regex::new(&rule.regex).map_err(|err| RedactionError::InvalidRegex {
                id: rule.id.clone(),
                message: err.to_string(),
            })?;
            if regex.is_match("") {
                return Err(RedactionError::MatchesEmpty {
                    id: rule.id.clone(),
                });
            }
            redactor.unconditional.push(redactor.rules.len());
            redactor.rules.push(Rule {
                id: Cow::Owned(rule_id),
                regex,
                fingerprints: &[],
                scope: Scope::Text,
                accept: accept_any,
            });
        }
        Ok(redactor)
    }

    /// The ids of the rules, each once, in rule order.
    pub fn rule_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for rule in &self.rules {
            if !ids.contains(&rule.id.as_ref()) {
                ids.push(&rule.id);
            }
        }
        ids
    }

    /// Replaces every secret in `text` with `[REDACTED:RULE_ID]`.
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        let mut spans = self.candidates(text);
        if spans.is_empty() {
            return Redacted {
                text: Cow::Borrowed(text),
                findings: Vec::new(),
            };
        }
        spans.sort_unstable_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.end.cmp(&a.end))
                .then(a.rule.cmp(&b.rule))
        });
        let mut out = String::with_capacity(text.len());
        let mut findings = Vec::new();
        let mut copied = 0;
        let mut line: usize = 1;
        for span in spans {
            if span.start < copied {
                continue;
            }
            line += count_newlines(&text[copied..span.start]);
            out.push_str(&text[copied..span.start]);
            let id = &self.rules[span.rule].id;
            out.push_str("[REDACTED:");
            out.push_str(id);
            out.push(']');
            findings.push(RedactionFinding {
                rule: id.to_string(),
                line: u32::try_from(line).unwrap_or(u32::MAX),
            });
            line += count_newlines(&text[span.start..span.end]);
            copied = span.end;
        }
        out.push_str(&text[copied..]);
        Redacted {
            text: Cow::Owned(out),
            findings,
        }
    }

    fn from_rules(rules: Vec<Rule>) -> Self {
        let mut by_fingerprint: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
        let mut unconditional = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if rule.fingerprints.is_empty() {
                unconditional.push(index);
            }
            for fingerprint in rule.fingerprints {
                by_fingerprint.entry(fingerprint).or_default().push(index);
            }
        }
        // Shortest first: a searcher's speed depends on its shortest literal, so similar
        // lengths go together.
        let mut fingerprints: Vec<&str> = by_fingerprint.keys().copied().collect();
        fingerprints.sort_by_key(|f| (f.len(), *f));
        let fingerprint_rules = fingerprints
            .iter()
            .map(|outer| {
                let mut enabled: Vec<usize> = by_fingerprint
                    .iter()
                    .filter(|(inner, _)| outer.contains(**inner))
                    .flat_map(|(_, rules)| rules.iter().copied())
                    .collect();
                enabled.sort_unstable();
                enabled.dedup();
                enabled
            })
            .collect();
        let searchers = fingerprints
            .chunks(FINGERPRINTS_PER_SEARCHER)
            .enumerate()
            .map(|(i, chunk)| {
                (
                    FingerprintSearcher::new(chunk),
                    i * FINGERPRINTS_PER_SEARCHER,
                )
            })
            .collect();
        Self {
            rules,
            searchers,
            fingerprint_rules,
            unconditional,
        }
    }

    /// Where fingerprints start, as (offset, fingerprint index), sorted: each fingerprint once
    /// per line (rules search whole lines, so its first place on a line is enough).
    fn fingerprint_hits(&self, text: &str) -> Vec<(usize, usize)> {
        let mut hits = Vec::new();
        for (searcher, first) in &self.searchers {
            let mut at = 0;
            // The end of the current line, and which of this searcher's fingerprints it holds.
            let mut line_end = 0;
            let mut seen: u32 = 0;
            // Restarting one byte after each hit (not after its end) reports fingerprints that
            // overlap an earlier one.
            while let Some((start, pattern)) = searcher.find(text, at) {
                if start >= line_end {
                    line_end = text[start..]
                        .find('\n')
                        .map_or(text.len(), |i| start + i + 1);
                    seen = 0;
                }
                let bit = 1 << pattern;
                if seen & bit == 0 {
                    seen |= bit;
                    hits.push((start, first + pattern));
                }
                at = start + 1;
            }
        }
        hits.sort_unstable();
        hits
    }

    /// Every accepted match of every rule, unresolved (spans may overlap).
    fn candidates(&self, text: &str) -> Vec<Span> {
        let mut spans = Vec::new();
        if text.is_empty() {
            return spans;
        }
        let mut whole_text = vec![false; self.rules.len()];
        for &rule in &self.unconditional {
            whole_text[rule] = true;
        }
        // The last line searched for each line-scoped rule, as (start, end).
        let mut last_line: Vec<Option<(usize, usize)>> = vec![None; self.rules.len()];
        let mut line: Option<(usize, usize)> = None;
        for (at, fingerprint) in self.fingerprint_hits(text) {
            // Hits are sorted: each is on the current line or a later one, so finding lines
            // costs one pass over the text.
            let (start, end) = match line {
                Some((start, end)) if at <= end => (start, end),
                _ => {
                    let from = line.map_or(0, |(_, end)| end);
                    let start = text[from..at].rfind('\n').map_or(from, |i| from + i + 1);
                    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
                    line = Some((start, end));
                    (start, end)
                }
            };
            for &rule in &self.fingerprint_rules[fingerprint] {
                match self.rules[rule].scope {
                    Scope::Text => whole_text[rule] = true,
                    Scope::Line => {
                        if last_line[rule] != Some((start, end)) {
                            last_line[rule] = Some((start, end));
                            self.rules[rule].search(rule, text, start, end, &mut spans);
                        }
                    }
                }
            }
        }
        for (rule, run) in whole_text.into_iter().enumerate() {
            if run {
                self.rules[rule].search(rule, text, 0, text.len(), &mut spans);
            }
        }
        // Text redacted before stays as it is: no span may touch a `[REDACTED:…]` marker.
        let markers = if spans.is_empty() {
            Vec::new()
        } else {
            redaction_markers(text)
        };
        if !markers.is_empty() {
            spans.retain(|span| {
                !markers
                    .iter()
                    .any(|&(start, end)| span.start < end && start < span.end)
            });
        }
        spans
    }
}

/// A leftmost-longest search for a few literals.
#[derive(Clone)]
enum FingerprintSearcher {
    /// Teddy, the SIMD multi-literal search, where the CPU has it.
    Packed(packed::Searcher),
    /// An Aho-Corasick automaton elsewhere.
    Automaton(AhoCorasick),
}

impl FingerprintSearcher {
    fn new(literals: &[&str]) -> Self {
        packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(literals)
            .build()
            .map_or_else(
                || {
                    Self::Automaton(
                        AhoCorasick::builder()
                            .match_kind(MatchKind::LeftmostLongest)
                            .build(literals)
                            .expect("a few short literals form a valid automaton"),
                    )
                },
                Self::Packed,
            )
    }

    /// The first literal found at or after `at`, as (start, literal index).
    fn find(&self, text: &str, at: usize) -> Option<(usize, usize)> {
        let found = match self {
            Self::Packed(searcher) => {
                searcher.find_in(text.as_bytes(), aho_corasick::Span::from(at..text.len()))
            }
            Self::Automaton(automaton) => automaton.find(Input::new(text).span(at..text.len())),
        };
        found.map(|m| (m.start(), m.pattern().as_usize()))
    }
}

/// A compiled rule.
#[derive(Clone)]
struct Rule {
    id: Cow<'static, str>,
    regex: Regex,
    fingerprints: &'static [&'static str],
    scope: Scope,
    accept: Accept,
}

impl Rule {
    /// Adds this rule's accepted candidates in `text[from..to]` to `spans`.
    fn search(&self, index: usize, text: &str, from: usize, to: usize, spans: &mut Vec<Span>) {
        let haystack = &text[from..to];
        // A DFA scan first: most searched lines hold no match, and finding none is cheap.
        let Some(first) = self.regex.find(haystack) else {
            return;
        };
        let mut locations = self.regex.capture_locations();
        let mut at = first.start();
        while at <= haystack.len() {
            let Some(whole) = self.regex.captures_read_at(&mut locations, haystack, at) else {
                break;
            };
            at = if whole.is_empty() {
                // Step over one character so an empty match cannot repeat forever.
                haystack[whole.end()..]
                    .chars()
                    .next()
                    .map_or(haystack.len() + 1, |c| whole.end() + c.len_utf8())
            } else {
                whole.end()
            };
            // The span is the first capture group that took part, else the whole match.
            let (group, (start, end)) = (1..locations.len())
                .find_map(|i| locations.get(i).map(|span| (i, span)))
                .unwrap_or((0, (whole.start(), whole.end())));
            if start == end {
                continue;
            }
            let candidate = Candidate {
                text,
                match_start: from + whole.start(),
                start: from + start,
                end: from + end,
                group,
            };
            if (self.accept)(&candidate) {
                spans.push(Span {
                    start: candidate.start,
                    end: candidate.end,
                    rule: index,
                });
            }
        }
    }
}

/// How many fingerprints one searcher takes: small sets keep the SIMD (Teddy) search fast, where
/// one set of all of them would fall back to a slower automaton.
const FINGERPRINTS_PER_SEARCHER: usize = 16;
const _: () = assert!(
    FINGERPRINTS_PER_SEARCHER <= 32,
    "fingerprint_hits keeps one bit per fingerprint of a searcher in a u32"
);

/// Where a rule's regex runs once one of its fingerprints is seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Only on the lines holding one of the rule's fingerprints (a match cannot cross lines).
    Line,
    /// On the whole text (multi-line matches such as PEM blocks).
    Text,
}

/// A candidate secret: the span a rule would replace, in the whole text.
struct Candidate<'t> {
    text: &'t str,
    /// Where the whole regex match starts (the key, for `key = value` rules).
    match_start: usize,
    start: usize,
    end: usize,
    /// The capture group that gave the span (0 for the whole match).
    group: usize,
}

impl Candidate<'_> {
    fn secret(&self) -> &str {
        &self.text[self.start..self.end]
    }

    fn next_byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.end).copied()
    }
}

/// Decides whether a regex match is a real secret rather than a look-alike.
type Accept = fn(&Candidate<'_>) -> bool;

/// A span chosen for replacement.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    rule: usize,
}

/// A built-in rule as written in [`BUILTIN_RULES`].
struct RuleSpec {
    id: &'static str,
    pattern: &'static str,
    fingerprints: &'static [&'static str],
    scope: Scope,
    accept: Accept,
}

/// Rewrites `\b` as `(?-u:\b)`: an ASCII word boundary keeps the regex on its fast DFA path
/// on non-ASCII text, where a Unicode boundary would not.
fn ascii_word_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}

/// The upper snake case id for a custom rule name, or `None` if it has no letters or digits.
fn rule_id_of(name: &str) -> Option<String> {
    let mut id = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_uppercase());
        } else if !id.is_empty() && !id.ends_with('_') {
            id.push('_');
        }
    }
    while id.ends_with('_') {
        id.pop();
    }
    (!id.is_empty()).then_some(id)
}

/// The byte ranges of the `[REDACTED:RULE_ID]` markers already in `text`.
fn redaction_markers(text: &str) -> Vec<(usize, usize)> {
    const OPEN: &str = "[REDACTED:";
    let mut markers = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(OPEN) {
        let start = from + i;
        let id_start = start + OPEN.len();
        let id_len = text[id_start..]
            .bytes()
            .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
            .count();
        let close = id_start + id_len;
        if id_len > 0 && text.as_bytes().get(close) == Some(&b']') {
            markers.push((start, close + 1));
            from = close + 1;
        } else {
            from = id_start;
        }
    }
    markers
}

fn count_newlines(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}

// ---------------------------------------------------------------------------------------------
// The built-in rules. Order matters only to break ties between candidates with the same span:
// vendor-specific rules come first, generic ones last.
// ---------------------------------------------------------------------------------------------

/// The generic secret-ish key names, shared by the assignment and XML forms.
macro_rules! secret_key {
    () => {
        r"[A-Za-z0-9_.\-]*(?:api[_.\-]?key|apikey|secret|token|passwd|password|pwd|access[_.\-]?key|auth[_.\-]?key|private[_.\-]?key|signing[_.\-]?key|encryption[_.\-]?key|master[_.\-]?key)(?:[_.\-]?(?:key|value|secret|token|str|string|b64|base64|hex|base)){0,2}"
    };
}

/// Fingerprints of the generic key names: each name above holds one, in the case variants
/// people write (`apiKey`, `API_KEY`, `Password`, `PASSWD`).
const SECRET_KEY_FINGERPRINTS: &[&str] = &[
    "key", "Key", "KEY", "secret", "Secret", "SECRET", "token", "Token", "TOKEN", "pass", "Pass",
    "PASS", "pwd", "Pwd", "PWD",
];

/// Fingerprints of key names that end in `key`.
const KEY_FINGERPRINTS: &[&str] = &["key", "Key", "KEY"];

/// The body of a PEM block: base64, headers (`Proc-Type: 4,ENCRYPTED`), and the quoting and
/// escaped newlines of keys embedded in source code or JSON. A dash must be followed by a
/// letter or digit (`AES-128-CBC`), so a body never runs over another block's `-----BEGIN`.
macro_rules! pem_body {
    () => {
        r#"(?:[A-Za-z0-9+/=\s:,.\\"'`]|-[A-Za-z0-9])*?"#
    };
}

const BUILTIN_RULES: &[RuleSpec] = &[
    // --- Cloud providers ---------------------------------------------------------------------
    RuleSpec {
        id: "AWS_ACCESS_KEY_ID",
        pattern: r"\b((?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16})\b",
        fingerprints: &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        scope: Scope::Line,
        accept: accept_aws_key_id,
    },
    RuleSpec {
        id: "AWS_SECRET_ACCESS_KEY",
        pattern: r#"(?i)(?:aws[_.\-]?secret[_.\-]?(?:access[_.\-]?)?key|secret[_.\-]?access[_.\-]?key|aws[_.\-]?secret)["']?[ \t]*(?::=|=>|=|:)[ \t]*["']?([A-Za-z0-9/+]{40})"#,
        fingerprints: &["secret", "Secret", "SECRET"],
        scope: Scope::Line,
        accept: accept_aws_secret,
    },
    RuleSpec {
        id: "GCP_SERVICE_ACCOUNT_KEY",
        pattern: r#""private_key"[ \t]*:[ \t]*"(-----BEGIN[A-Z ]{0,32}PRIVATE KEY-----(?:\\[nr]|[A-Za-z0-9+/= ])+?-----END[A-Z ]{0,32}PRIVATE KEY-----(?:\\n)?)""#,
        fingerprints: &["\"private_key\""],
        scope: Scope::Line,
        accept: accept_pem,
    },
    RuleSpec {
        id: "GCP_API_KEY",
        pattern: r"\b(AIza[0-9A-Za-z_\-]{35})",
        fingerprints: &["AIza"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GOOGLE_OAUTH_CLIENT_SECRET",
        pattern: r"\b(GOCSPX-[0-9A-Za-z_\-]{28})",
        fingerprints: &["GOCSPX-"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GOOGLE_OAUTH_ACCESS_TOKEN",
        pattern: r"\b(ya29\.[0-9A-Za-z_\-]{30,})",
        fingerprints: &["ya29."],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "AZURE_STORAGE_KEY",
        pattern: r#"(?i)(?:AccountKey|azure[_.\-]?storage[_.\-]?(?:account[_.\-]?)?(?:access[_.\-]?)?key|storage[_.\-]?account[_.\-]?(?:access[_.\-]?)?key)["']?[ \t]*(?::=|=>|=|:)[ \t]*["']?([A-Za-z0-9+/]{86}==)"#,
        fingerprints: KEY_FINGERPRINTS,
        scope: Scope::Line,
        accept: accept_azure_storage_key,
    },
    RuleSpec {
        id: "AZURE_SHARED_ACCESS_KEY",
        pattern: r"(?i)SharedAccessKey[ \t]*=[ \t]*([A-Za-z0-9+/]{40,88}={0,2})",
        fingerprints: KEY_FINGERPRINTS,
        scope: Scope::Line,
        accept: accept_base64_secret,
    },
    RuleSpec {
        id: "AZURE_SAS_TOKEN",
        pattern: r#"\bsv=[0-9]{4}-[0-9]{2}-[0-9]{2}[^\s"'<>]*?[?&;]sig=([A-Za-z0-9%+/]{30,}(?:%3[Dd]|=){0,2})"#,
        fingerprints: &["sig="],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "DIGITALOCEAN_TOKEN",
        pattern: r"\b(do[opr]_v1_[a-f0-9]{64})\b",
        fingerprints: &["_v1_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "HEROKU_API_KEY",
        pattern: r"\b(HRKU-[0-9A-Za-z_\-]{60})",
        fingerprints: &["HRKU-"],
        scope: Scope::Line,
        accept: accept_token,
    },
    // --- Source hosting and CI ---------------------------------------------------------------
    RuleSpec {
        id: "GITHUB_PAT",
        pattern: r"\b(ghp_[A-Za-z0-9]{36,255})\b",
        fingerprints: &["ghp_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GITHUB_OAUTH_TOKEN",
        pattern: r"\b(gho_[A-Za-z0-9]{36,255})\b",
        fingerprints: &["gho_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GITHUB_APP_TOKEN",
        pattern: r"\b((?:ghu|ghs)_[A-Za-z0-9]{36,255})\b",
        fingerprints: &["ghu_", "ghs_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GITHUB_REFRESH_TOKEN",
        pattern: r"\b(ghr_[A-Za-z0-9]{36,255})\b",
        fingerprints: &["ghr_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GITHUB_FINE_GRAINED_PAT",
        pattern: r"\b(github_pat_[A-Za-z0-9_]{50,255})\b",
        fingerprints: &["github_pat_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GITLAB_TOKEN",
        pattern: r"\b((?:gl(?:pat|dt|rt|ptt|cbt|oas|soat|ft|imt|agent|ffct)-|GR1348941)[0-9A-Za-z_\-]{20,255}(?:\.[0-9a-z]{2}\.[0-9a-z]{7,9})?)",
        fingerprints: &[
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glcbt-",
            "gloas-",
            "glsoat-",
            "glft-",
            "glimt-",
            "glagent-",
            "glffct-",
            "GR1348941",
        ],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "DOCKER_HUB_TOKEN",
        pattern: r"\b(dckr_pat_[0-9A-Za-z_\-]{27,})",
        fingerprints: &["dckr_pat_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "ATLASSIAN_API_TOKEN",
        pattern: r"\b(ATATT3[0-9A-Za-z_\-=]{150,})",
        fingerprints: &["ATATT3"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "POSTMAN_API_KEY",
        pattern: r"\b(PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b",
        fingerprints: &["PMAK-"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "LINEAR_API_KEY",
        pattern: r"\b(lin_(?:api|oauth)_[A-Za-z0-9]{40})\b",
        fingerprints: &["lin_api_", "lin_oauth_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    // --- Messaging -----------------------------------------------------------------------------
    RuleSpec {
        id: "SLACK_TOKEN",
        pattern: r"\b(xox[abeoprs]-(?:[0-9]+-)+[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*)\b",
        fingerprints: &["xox"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "SLACK_TOKEN",
        pattern: r"\b(xapp-[0-9]+-[A-Z0-9]+-[0-9]+-[a-z0-9]{16,})\b",
        fingerprints: &["xapp-"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "SLACK_WEBHOOK_URL",
        pattern: r"hooks\.slack\.com/((?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,})",
        fingerprints: &["hooks.slack.com"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "DISCORD_WEBHOOK_URL",
        pattern: r"discord(?:app)?\.com/api/webhooks/([0-9]{15,20}/[A-Za-z0-9_\-]{60,})",
        fingerprints: &["discord"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "TELEGRAM_BOT_TOKEN",
        pattern: r"\b([0-9]{8,10}:AA[0-9A-Za-z_\-]{33})",
        fingerprints: &[":AA"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "TWILIO_API_KEY",
        pattern: r"\b(SK[0-9a-f]{32})\b",
        fingerprints: &[],
        scope: Scope::Text,
        accept: accept_hex_token,
    },
    RuleSpec {
        id: "TWILIO_AUTH_TOKEN",
        pattern: r#"(?i)twilio[A-Za-z0-9_.\-]*?(?:auth[_.\-]?)?token["']?[ \t]*(?::=|=>|=|:)[ \t]*["']?([0-9a-f]{32})\b"#,
        fingerprints: &["token", "Token", "TOKEN"],
        scope: Scope::Line,
        accept: accept_hex_token,
    },
    RuleSpec {
        id: "SENDGRID_API_KEY",
        pattern: r"\b(SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})",
        fingerprints: &["SG."],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "MAILCHIMP_API_KEY",
        pattern: r"\b([0-9a-f]{32}-us[0-9]{1,2})\b",
        fingerprints: &["-us"],
        scope: Scope::Line,
        accept: accept_hex_token,
    },
    // --- Payments and commerce -----------------------------------------------------------------
    RuleSpec {
        id: "STRIPE_SECRET_KEY",
        pattern: r"\b((?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,247})\b",
        fingerprints: &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "STRIPE_WEBHOOK_SECRET",
        pattern: r"\b(whsec_[A-Za-z0-9]{24,})\b",
        fingerprints: &["whsec_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "SHOPIFY_TOKEN",
        pattern: r"\b(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})\b",
        fingerprints: &["shpat_", "shpca_", "shppa_", "shpss_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "SQUARE_TOKEN",
        pattern: r"\b(sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43})",
        fingerprints: &["sq0atp-", "sq0csp-"],
        scope: Scope::Line,
        accept: accept_token,
    },
    // --- Package registries --------------------------------------------------------------------
    RuleSpec {
        id: "NPM_TOKEN",
        pattern: r"\b(npm_[A-Za-z0-9]{36})\b",
        fingerprints: &["npm_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "PYPI_TOKEN",
        pattern: r"\b(pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,})",
        fingerprints: &["pypi-Ag"],
        scope: Scope::Line,
        accept: accept_token,
    },
    // --- AI providers --------------------------------------------------------------------------
    RuleSpec {
        id: "ANTHROPIC_API_KEY",
        pattern: r"\b(sk-ant-(?:api|admin|sid|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{32,})",
        fingerprints: &["sk-ant-"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "OPENAI_API_KEY",
        pattern: r"\b(sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{16,}T3BlbkFJ[A-Za-z0-9_\-]{16,}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|sk-[A-Za-z0-9]{48})",
        fingerprints: &["sk-"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "HUGGINGFACE_TOKEN",
        pattern: r"\b(hf_[A-Za-z0-9]{34,40})\b",
        fingerprints: &["hf_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "GROQ_API_KEY",
        pattern: r"\b(gsk_[A-Za-z0-9]{52})\b",
        fingerprints: &["gsk_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "REPLICATE_API_TOKEN",
        pattern: r"\b(r8_[A-Za-z0-9]{37})\b",
        fingerprints: &["r8_"],
        scope: Scope::Line,
        accept: accept_token,
    },
    // --- Secret managers and key files ---------------------------------------------------------
    RuleSpec {
        id: "VAULT_TOKEN",
        pattern: r"\b(hv[sbr]\.[A-Za-z0-9_\-]{24,})",
        fingerprints: &["hvs.", "hvb.", "hvr."],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "DOPPLER_TOKEN",
        pattern: r"\b(dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})\b",
        fingerprints: &["dp."],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "AGE_SECRET_KEY",
        pattern: r"\b(AGE-SECRET-KEY-1[0-9A-Z]{58})\b",
        fingerprints: &["AGE-SECRET-KEY-1"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "NPM_AUTH_TOKEN",
        pattern: r#"(?m)(?:^[ \t]*|:)(?:_authToken|_auth|_password)[ \t]*=[ \t]*["']?([A-Za-z0-9+/=_\-.:]{16,})"#,
        fingerprints: &["_auth", "_password"],
        scope: Scope::Line,
        accept: accept_credential,
    },
    RuleSpec {
        id: "JWT",
        pattern: r"\b(eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{16,})",
        fingerprints: &["eyJ"],
        scope: Scope::Line,
        accept: accept_token,
    },
    RuleSpec {
        id: "SSH_PRIVATE_KEY",
        pattern: concat!(
            r"-----BEGIN (?:OPENSSH|SSH2 ENCRYPTED) PRIVATE KEY-----",
            pem_body!(),
            r"-----END (?:OPENSSH|SSH2 ENCRYPTED) PRIVATE KEY-----"
        ),
        fingerprints: &["PRIVATE KEY"],
        scope: Scope::Text,
        accept: accept_pem,
    },
    RuleSpec {
        id: "SSH_PRIVATE_KEY",
        pattern: r"PuTTY-User-Key-File-[0-9]+: [^\r\n]*(?:\r?\n[^\r\n]*){0,80}?\r?\nPrivate-MAC: [0-9a-fA-F]+",
        fingerprints: &["PuTTY-User-Key-File-"],
        scope: Scope::Text,
        accept: accept_any,
    },
    RuleSpec {
        id: "PEM_PRIVATE_KEY",
        pattern: concat!(
            r"-----BEGIN[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----",
            r"(?:",
            pem_body!(),
            r"-----END[ A-Z0-9]{0,32}PRIVATE KEY(?: BLOCK)?-----",
            // A key cut short (no END line): the header and the base64 lines that follow.
            r"|(?:\r?\n[A-Za-z0-9+/]{40,})+(?:\r?\n[A-Za-z0-9+/]+={0,2})?)"
        ),
        fingerprints: &["PRIVATE KEY"],
        scope: Scope::Text,
        accept: accept_pem,
    },
    // --- HTTP authentication and URLs ----------------------------------------------------------
    RuleSpec {
        id: "BASIC_AUTH",
        pattern: r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{8,}={0,2})",
        fingerprints: &["asic", "ASIC"],
        scope: Scope::Line,
        accept: accept_basic_auth,
    },
    RuleSpec {
        id: "BASIC_AUTH",
        pattern: r#"\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]*["']?[^\s:"']+:([^\s"']+)"#,
        fingerprints: &["curl"],
        scope: Scope::Line,
        accept: accept_credential,
    },
    RuleSpec {
        id: "BEARER_TOKEN",
        pattern: r"(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{16,}=*)",
        fingerprints: &["earer", "EARER"],
        scope: Scope::Line,
        accept: accept_bearer,
    },
    RuleSpec {
        id: "BEARER_TOKEN",
        pattern: r#"(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?token[ \t]+([A-Za-z0-9\-._~+/]{16,}=*)"#,
        fingerprints: &["token", "Token", "TOKEN"],
        scope: Scope::Line,
        accept: accept_bearer,
    },
    RuleSpec {
        id: "URL_PASSWORD",
        pattern: r#"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/?#@"'<>\[\]{}]{0,128}:([^\s/?#"'<>{}]{1,256})@[A-Za-z0-9\[._\-]"#,
        fingerprints: &["://"],
        scope: Scope::Line,
        accept: accept_url_password,
    },
    RuleSpec {
        id: "CONNECTION_STRING_PASSWORD",
        pattern: r#"(?i)[;&?][ \t]*(?:password|pwd)[ \t]*=[ \t]*([^;&"'\s<>{}]{1,256})"#,
        fingerprints: &["pass", "Pass", "PASS", "pwd", "Pwd", "PWD"],
        scope: Scope::Line,
        accept: accept_password,
    },
    // --- Generic assignments (last: any specific rule with the same span wins) ----------------
    RuleSpec {
        id: "GENERIC_SECRET",
        pattern: concat!(
            r"(?i)",
            secret_key!(),
            r#"["'\]]?[ \t]*(?::=|=>|=|:)[ \t]*"#,
            r#"(?:"([^"\s\\]{8,})"|'([^'\s\\]{8,})'|`([^`\s\\]{8,})`"#,
            r#"|([^\s"'`,;&(){}\[\]<>\\=:][^\s"'`,;&(){}\[\]<>\\]{7,}))"#
        ),
        fingerprints: SECRET_KEY_FINGERPRINTS,
        scope: Scope::Line,
        accept: accept_generic,
    },
    RuleSpec {
        id: "GENERIC_SECRET",
        pattern: concat!(r"(?i)<", secret_key!(), r">([^<\s]{8,})</"),
        fingerprints: SECRET_KEY_FINGERPRINTS,
        scope: Scope::Line,
        accept: accept_generic,
    },
];

// ---------------------------------------------------------------------------------------------
// Acceptance checks.
// ---------------------------------------------------------------------------------------------

/// The Azure storage emulator's account key, published by Microsoft for local development.
const AZURE_EMULATOR_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn accept_any(_: &Candidate<'_>) -> bool {
    true
}

/// A vendor token: not cut from a longer token, varied enough to be generated.
fn accept_token(c: &Candidate<'_>) -> bool {
    !c.next_byte().is_some_and(is_token_byte) && is_generated(c.secret(), 3.0)
}

/// A hex token: as [`accept_token`], and it mixes letters and digits as random hex does.
fn accept_hex_token(c: &Candidate<'_>) -> bool {
    let secret = c.secret();
    accept_token(c)
        && secret.bytes().any(|b| b.is_ascii_digit())
        && secret.bytes().any(|b| matches!(b, b'a'..=b'f'))
}

fn accept_aws_key_id(c: &Candidate<'_>) -> bool {
    accept_token(c) && !c.secret().ends_with("EXAMPLE")
}

fn accept_aws_secret(c: &Candidate<'_>) -> bool {
    accept_base64_secret(c) && !c.secret().contains("EXAMPLE")
}

fn accept_azure_storage_key(c: &Candidate<'_>) -> bool {
    accept_base64_secret(c) && c.secret() != AZURE_EMULATOR_KEY
}

/// Raw base64 key material: not cut from longer base64, and random.
fn accept_base64_secret(c: &Candidate<'_>) -> bool {
    !c.next_byte()
        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && is_generated(c.secret(), 4.0)
}

/// A private key block with real key material (not `...` in documentation).
fn accept_pem(c: &Candidate<'_>) -> bool {
    let block = c.secret();
    // The body: after the `-----BEGIN … KEY-----` line's closing dashes, before `-----END`.
    let after_begin = block
        .get(5..)
        .and_then(|rest| rest.find("-----"))
        .map_or(0, |i| i + 10);
    let body_end = block.rfind("-----END").unwrap_or(block.len());
    let body = &block[after_begin.min(body_end)..body_end];
    let material: String = body
        .split("\\n")
        .flat_map(str::chars)
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/'))
        .collect();
    material.len() >= 64 && shannon_entropy(&material) >= 4.0
}

/// An `Authorization: Basic …` value: base64 of printable `user:password`, the password real.
fn accept_basic_auth(c: &Candidate<'_>) -> bool {
    let Some(decoded) = decode_base64(c.secret()) else {
        return false;
    };
    let Ok(decoded) = String::from_utf8(decoded) else {
        return false;
    };
    let Some((user, password)) = decoded.split_once(':') else {
        return false;
    };
    !decoded.chars().any(char::is_control)
        && !user.is_empty()
        && !password.is_empty()
        && !is_placeholder(password)
}

/// A password or token typed by a person: anything but a placeholder or a name from code.
fn accept_credential(c: &Candidate<'_>) -> bool {
    !is_placeholder(c.secret()) && !is_code_or_path(c.secret())
}

/// A password in a connection string: four characters at least (`a:b@host` is a test), not a
/// placeholder.
fn accept_password(c: &Candidate<'_>) -> bool {
    c.secret().chars().count() >= 4 && accept_credential(c)
}

fn accept_url_password(c: &Candidate<'_>) -> bool {
    let password = c.secret();
    // `host:8080@…` is a port, not a password.
    let port_like = password.len() <= 5 && password.bytes().all(|b| b.is_ascii_digit());
    !port_like && accept_password(c)
}

fn accept_bearer(c: &Candidate<'_>) -> bool {
    let token = c.secret();
    // `Bearer realm="api"`: a challenge's parameter, not a token.
    let parameter = token.ends_with('=') && c.next_byte() == Some(b'"');
    !parameter
        && !c.next_byte().is_some_and(is_token_byte)
        && !is_placeholder(token)
        && !is_identifier_like(token.trim_end_matches('='))
        && looks_random(token)
}

/// A generic `key = value`: the value must look generated and not be code or a placeholder.
fn accept_generic(c: &Candidate<'_>) -> bool {
    let value = c.secret();
    // Group 4 is the unquoted form. In code an unquoted value is an expression or a type:
    // `token = make_token(…)`, `token: Token,`, `const TOKEN: Kind = …;`. In `.env` files, YAML
    // and shell it ends the line or is followed by a comment or another argument.
    if c.group == 4 {
        let after = c.text[c.end..].trim_start_matches([' ', '\t']);
        // In a URL query (`?access_token=…&page=2`) the next parameter follows.
        let in_query = c.text[..c.match_start].ends_with(['?', '&']) && after.starts_with('&');
        let code = after.starts_with([
            '(', '[', '{', '<', '=', ',', ';', ')', '|', '&', '?', ':', '.',
        ]);
        if (code && !in_query) || value.bytes().all(|b| b.is_ascii_alphabetic()) {
            return false;
        }
    }
    // `https://x-access-token:…@host` is a URL's user and password: URL_PASSWORD's to judge.
    if c.text[..c.match_start].ends_with("://") {
        return false;
    }
    !is_placeholder(value)
        && !is_code_or_path(value)
        && !is_identifier_like(value)
        && looks_random(value)
}

/// Whether a value reads as a name: words of letters, each optionally ending in digits, joined
/// by `_`, `-` or `.` (`WIN32_ERROR`, `_bindgen_ty_7`, `access-1`, `PULONG64`). Generated
/// secrets mix letters and digits all through.
fn is_identifier_like(value: &str) -> bool {
    value
        .split(['_', '-', '.'])
        .filter(|part| !part.is_empty())
        .all(|part| {
            let letters = part.bytes().take_while(u8::is_ascii_alphabetic).count();
            part.bytes().skip(letters).all(|b| b.is_ascii_digit())
        })
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Whether a vendor token's characters vary as a generated one's do.
fn is_generated(secret: &str, min_entropy: f64) -> bool {
    !has_run(secret, 6) && shannon_entropy(secret) >= min_entropy
}

/// Shannon entropy of the bytes, in bits per byte.
fn shannon_entropy(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in text.bytes() {
        counts[usize::from(b)] += 1;
    }
    let len = text.len() as f64;
    counts
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| {
            let p = f64::from(n) / len;
            -p * p.log2()
        })
        .sum()
}

/// Whether some byte repeats `n` times in a row (`xxxxxx`, `000000`).
fn has_run(text: &str, n: usize) -> bool {
    let mut run = 0;
    let mut last = None;
    for b in text.bytes() {
        if Some(b) == last {
            run += 1;
        } else {
            run = 1;
            last = Some(b);
        }
        if run >= n {
            return true;
        }
    }
    false
}

/// Whether most neighbouring bytes count up or down (`abcdef`, `12345678`, `0123456789abcdef`).
fn is_sequential(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 4 {
        return false;
    }
    let steps = bytes
        .windows(2)
        .filter(|w| w[1].wrapping_sub(w[0]) == 1 || w[0].wrapping_sub(w[1]) == 1)
        .count();
    steps * 2 >= bytes.len() - 1
}

/// Substrings that mark a value as a template, a reference or a documentation placeholder.
const PLACEHOLDER_MARKERS: &[&str] = &[
    "${",
    "{{",
    "}}",
    "<",
    ">",
    "$(",
    "%s",
    "%(",
    "%{",
    "process.env",
    "os.environ",
    "getenv",
    "environ[",
    "env[",
    "env.",
    "...",
    "\u{2026}",
    "***",
    "xxxx",
    "example",
    "placeholder",
    "your",
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "replace",
    "redacted",
    "dummy",
    "sample",
    "fake",
    "insert",
    "todo",
    "fixme",
    "_here",
    "-here",
    "notreal",
    "not_real",
    "not-real",
    "lorem",
    "passw",
    "secret",
    "token",
];

/// Weak or demo values, compared after [`normalize_weak`].
const WEAK_VALUES: &[&str] = &[
    "password",
    "passwd",
    "pass",
    "pw",
    "secret",
    "token",
    "changeme",
    "changeit",
    "admin",
    "administrator",
    "root",
    "toor",
    "test",
    "testing",
    "tester",
    "demo",
    "default",
    "example",
    "sample",
    "foo",
    "bar",
    "foobar",
    "baz",
    "qux",
    "qwerty",
    "qwertyuiop",
    "letmein",
    "welcome",
    "hunter",
    "abc",
    "abcdef",
    "xyz",
    "none",
    "null",
    "nil",
    "empty",
    "mysecret",
    "mypassword",
    "mypass",
    "mysecretpassword",
    "secretpassword",
    "supersecret",
    "supersecretpassword",
    "topsecret",
    "secretkey",
    "mysecretkey",
    "apikey",
    "myapikey",
    "mytoken",
    "yourpassword",
    "userpassword",
    "dbpassword",
    "dbpass",
    "pgpassword",
    "hidden",
    "masked",
    "notasecret",
    "notsecret",
    "insecure",
    "dev",
    "development",
    "local",
    "localhost",
    "postgres",
    "postgresql",
    "mysql",
    "redis",
    "mongo",
    "mongodb",
    "rabbitmq",
    "guest",
    "user",
    "username",
    "oracle",
    "docker",
    "ubuntu",
    "vagrant",
    "pa",
    "pwd",
    "ok",
    "opensesame",
];

/// Whether a value is a placeholder, a reference to another value, or a weak demo value.
fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    if value.is_empty()
        || value.starts_with(['$', '%', '@'])
        || PLACEHOLDER_MARKERS.iter().any(|m| lower.contains(m))
        || has_run(value, 5)
        || is_sequential(value)
    {
        return true;
    }
    let digits_only = value.bytes().all(|b| b.is_ascii_digit());
    (digits_only && value.len() <= 8) || WEAK_VALUES.contains(&normalize_weak(value).as_str())
}

/// Lower case, trailing digits and symbols dropped, leetspeak read back, non-letters dropped:
/// `P@ssw0rd1!` becomes `password`.
fn normalize_weak(value: &str) -> String {
    let core = value.trim_end_matches(|c: char| !c.is_ascii_alphabetic());
    core.chars()
        .filter_map(|c| match c.to_ascii_lowercase() {
            '@' | '4' => Some('a'),
            '0' => Some('o'),
            '3' => Some('e'),
            '1' | '!' => Some('i'),
            '$' | '5' => Some('s'),
            '7' => Some('t'),
            c if c.is_ascii_alphabetic() => Some(c),
            _ => None,
        })
        .collect()
}

/// Whether a value is a URL, a file path, a path in code (`crate::Token`) or a dotted name
/// (`self.password`, `config.json`, `self.next_token?`).
fn is_code_or_path(value: &str) -> bool {
    if value.contains("://") || value.contains("::") || value.contains("->") {
        return true;
    }
    let value = value.trim_end_matches(['?', '!']);
    let pathish = ["/", "./", "../", "~/"]
        .iter()
        .any(|p| value.starts_with(p))
        && value.matches('/').count() >= 2
        && !value.contains(['+', '=']);
    let dotted_name = value.contains('.')
        && value.split('.').all(|part| {
            part.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
    pathish || dotted_name
}

/// Whether a value looks generated (key material) rather than a word, name or number.
fn looks_random(value: &str) -> bool {
    let len = value.len();
    if len < 8 {
        return false;
    }
    let (mut lower, mut upper, mut digit, mut other) = (0usize, 0usize, 0usize, 0usize);
    for b in value.bytes() {
        match b {
            b'a'..=b'z' => lower += 1,
            b'A'..=b'Z' => upper += 1,
            b'0'..=b'9' => digit += 1,
            _ => other += 1,
        }
    }
    if digit == len {
        return false;
    }
    let entropy = shannon_entropy(value);
    let separators_only = value
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_' | b'.'));
    if digit == 0 && separators_only {
        // Words: `my-app-secret`, `GITHUB_TOKEN`, `SomeIdentifier`. Random letters have case
        // changes all through and no separators.
        return other == 0 && len >= 20 && upper * 4 >= len && lower * 4 >= len && entropy >= 3.9;
    }
    let classes = [lower, upper, digit, other]
        .iter()
        .filter(|&&n| n > 0)
        .count();
    // Entropy cannot exceed log2(len); ask for most of that on short values, 3.2 on long ones.
    let threshold = ((len as f64).log2() * 0.78).min(3.2);
    classes >= 2 && entropy >= threshold
}

/// Decodes standard base64 (padding optional); `None` if it is not base64.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let trimmed = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in trimmed.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((acc >> bits) & 0xff).expect("masked to a byte"));
        }
    }
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(text: &str) -> (String, Vec<(String, u32)>) {
        let out = Redactor::builtin().redact(text);
        let findings = out
            .findings
            .iter()
            .map(|f| (f.rule.clone(), f.line))
            .collect();
        (out.text.into_owned(), findings)
    }

    #[test]
    fn builtin_rules_compile_and_have_upper_snake_ids() {
        let ids = Redactor::builtin().rule_ids();
        assert!(ids.len() >= 40, "{ids:?}");
        for id in ids {
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                "{id}"
            );
        }
    }

    #[test]
    fn a_redactor_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Redactor>();
    }

    #[test]
    fn a_long_line_full_of_fingerprints_is_handled_in_one_pass() {
        // Each fingerprint is recorded once per line; the line is searched once per rule.
        let line = "key token secret pass ".repeat(50_000);
        let out = Redactor::builtin().redact(&line);
        assert!(!out.is_redacted());
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        let text = "fn main() {\n    let token = tokens.next();\n}\n";
        let out = Redactor::builtin().redact(text);
        assert!(matches!(out.text, Cow::Borrowed(_)));
        assert!(!out.is_redacted());
        assert_eq!(Redactor::builtin().redact("").text, "");
    }

    #[test]
    fn only_the_value_is_replaced_and_the_line_is_reported() {
        let (text, findings) =
            redact("# config\n\napi_key = \"Zq8rT2vLx9Kp4mNw7Bc3Yd6Hf1Gs5Ja0\"\nnext = 1\n");
        assert_eq!(
            text,
            "# config\n\napi_key = \"[REDACTED:GENERIC_SECRET]\"\nnext = 1\n"
        );
        assert_eq!(findings, [("GENERIC_SECRET".to_owned(), 3)]);
    }

    #[test]
    fn a_specific_rule_wins_over_the_generic_one_on_the_same_span() {
        let (text, findings) = redact("GITHUB_TOKEN=ghp_R8x2Kq7Lm4Np9Vt3Wz6Bc1Df5Gh0Jk2Ms8Yq\n");
        assert_eq!(text, "GITHUB_TOKEN=[REDACTED:GITHUB_PAT]\n");
        assert_eq!(findings, [("GITHUB_PAT".to_owned(), 1)]);
    }

    #[test]
    fn the_longest_overlapping_span_wins() {
        // The GCP rule's span (the JSON value, trailing `\n` included) contains the PEM rule's.
        let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Vj3f9Q2kLm8Rt5Xw";
        let json = format!(
            "{{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{body}\\n{body}\\n-----END PRIVATE KEY-----\\n\"}}"
        );
        let (text, findings) = redact(&json);
        assert_eq!(
            text,
            "{\"type\": \"service_account\", \"private_key\": \"[REDACTED:GCP_SERVICE_ACCOUNT_KEY]\"}"
        );
        assert_eq!(findings.len(), 1);
    }

    #[test]
    fn redaction_is_idempotent() {
        let text = "password: \"Xk9#mQ2zLw7!\"\nurl = postgres://app:Tr0ub4dor3xK@db:5432/app\n";
        let (once, _) = redact(text);
        let again = Redactor::builtin().redact(&once);
        assert!(!again.is_redacted(), "{once}");
        assert_eq!(again.text, once);
    }

    #[test]
    fn a_pem_block_is_replaced_whole_and_later_lines_are_counted() {
        let line = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw";
        let text = format!(
            "a\n-----BEGIN RSA PRIVATE KEY-----\n{line}\n{line}\n-----END RSA PRIVATE KEY-----\nkey = \"AIzaSyD8k3Lq9Xw2Vb7Nm4Pz6Rt1Yc5Hf0Gj3Ks\"\n"
        );
        let (out, findings) = redact(&text);
        assert_eq!(
            out,
            "a\n[REDACTED:PEM_PRIVATE_KEY]\nkey = \"[REDACTED:GCP_API_KEY]\"\n"
        );
        assert_eq!(
            findings,
            [
                ("PEM_PRIVATE_KEY".to_owned(), 2),
                ("GCP_API_KEY".to_owned(), 6)
            ]
        );
    }

    #[test]
    fn crlf_and_non_ascii_text_around_secrets_is_kept() {
        let text = "héllo ✓\r\nTOKEN=glpat-Xr4Tq9LmZ2Wb7Nc5Vd1K\r\nfin ✓\r\n";
        let (out, _) = redact(text);
        assert_eq!(out, "héllo ✓\r\nTOKEN=[REDACTED:GITLAB_TOKEN]\r\nfin ✓\r\n");
    }

    #[test]
    fn custom_rules_apply_after_the_builtin_ones() {
        let redactor = Redactor::with_custom(&[CustomRule {
            id: "acme internal-token".to_owned(),
            regex: r"acme_([0-9a-f]{16})".to_owned(),
        }])
        .expect("valid rule");
        assert_eq!(redactor.rule_ids().last(), Some(&"ACME_INTERNAL_TOKEN"));
        let out = redactor.redact("x = acme_0123fedc4567ba98;\n");
        assert_eq!(out.text, "x = acme_[REDACTED:ACME_INTERNAL_TOKEN];\n");
        assert_eq!(out.findings[0].rule, "ACME_INTERNAL_TOKEN");
        // The built-in set itself is unchanged.
        assert!(
            !Redactor::builtin()
                .rule_ids()
                .contains(&"ACME_INTERNAL_TOKEN")
        );
    }

    #[test]
    fn bad_custom_rules_are_refused_with_their_name() {
        let rule = |id: &str, regex: &str| CustomRule {
            id: id.to_owned(),
            regex: regex.to_owned(),
        };
        let err = Redactor::with_custom(&[rule("mine", "(unclosed")]).expect_err("bad regex");
        assert!(matches!(&err, RedactionError::InvalidRegex { id, .. } if id == "mine"));
        assert!(err.to_string().contains("`mine`"), "{err}");
        let err = Redactor::with_custom(&[rule("lookaround", "(?=x)y")]).expect_err("look-around");
        assert!(matches!(err, RedactionError::InvalidRegex { .. }));
        let err = Redactor::with_custom(&[rule("empty", "x*")]).expect_err("matches empty");
        assert_eq!(err, RedactionError::MatchesEmpty { id: "empty".into() });
        let err = Redactor::with_custom(&[rule("--", "x")]).expect_err("no id");
        assert_eq!(err, RedactionError::InvalidId { id: "--".into() });
        let err = Redactor::with_custom(&[rule("jwt", "x")]).expect_err("taken");
        assert!(matches!(
            err,
            RedactionError::DuplicateId {
                owner: "a built-in rule",
                ..
            }
        ));
        let err = Redactor::with_custom(&[rule("a-b", "x"), rule("A_B", "y")]).expect_err("dup");
        assert!(matches!(
            err,
            RedactionError::DuplicateId {
                owner: "another custom rule",
                ..
            }
        ));
    }

    #[test]
    fn findings_serialize_without_the_secret() {
        let out = Redactor::builtin()
            .redact("export NPM_TOKEN=npm_Qw8Er2Ty6Ui0Op4As9Df3Gh7Jk1Lz5Xc2Vb6\n");
        let json = serde_json::to_string(&out.findings).expect("serializes");
        assert_eq!(json, r#"[{"rule":"NPM_TOKEN","line":1}]"#);
    }

    #[test]
    fn helpers_classify_values() {
        assert!(is_placeholder("changeme"));
        assert!(is_placeholder("P@ssw0rd1!"));
        assert!(is_placeholder("${DB_PASSWORD}"));
        assert!(is_placeholder("xxxxxxxx"));
        assert!(is_placeholder("0123456789abcdef"));
        assert!(!is_placeholder("Xk9#mQ2zLw7!"));
        assert!(looks_random("d8e8fca2dc0f896fd7cb4cb0031ba249"));
        assert!(!looks_random("my-app-secret"));
        assert!(!looks_random("GITHUB_TOKEN"));
        assert!(!looks_random("12345678901234"));
        assert!(looks_random("QwErTyUiOpAsDfGhJkLzXcVbNm"));
        assert!(is_code_or_path("self.password"));
        assert!(is_code_or_path("/run/secrets/db_password"));
        assert!(!is_code_or_path("Zq8rT2vLx9Kp4mNw"));
        assert_eq!(decode_base64("dXNlcjpwYXNz"), Some(b"user:pass".to_vec()));
        assert_eq!(
            decode_base64("dXNlcjpwYXNzd29yZA=="),
            Some(b"user:password".to_vec())
        );
        assert_eq!(decode_base64("not base64!"), None);
        assert_eq!(rule_id_of("my rule-2"), Some("MY_RULE_2".to_owned()));
    }
}
