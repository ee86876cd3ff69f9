//! Where a value sits in structured text, read from the lines around a provider's name without
//! parsing any format: which pieces are assignments (`key = value`, `key: value`,
//! `"key": "value"`, `key=value` in a query or a log line), which line opens a block (a YAML
//! key without a value, `"key": {`, `name = {`, a call's open parenthesis, an INI or TOML
//! `[section]`), and how far the block reaches (the lines indented deeper, or up to the next
//! section).
//!
//! A keyed rule (a provider's name and a value shape, see `catalog`) finds its value where the
//! key names the provider (`DATADOG_API_KEY=…`). With this module it also finds the value where
//! the provider is named around the key: a parent key (`datadog:` then `  api_key: …`), a
//! section (`[postmark]` then `server_token = …`), a call (`PostmarkClient(server_token=…)`),
//! or earlier on the line (`[opsgenie] client initialised api_key=…`,
//! `https://api.openweathermap.org/…?appid=…`). There the key must name a credential (`key`,
//! `token`, `secret`, `password`, …) and must not name an id, a hash or a checksum (`id`,
//! `uuid`, `sha256`, `commit`, `integrity`, …): a hex string or a UUID under
//! `datadog.api_key` is a key, under `datadog.commit_sha` it is not.
//!
//! The cost is paid only on lines that name a provider: one scan of the line, and of the block
//! it opens (at most [`MAX_BLOCK_LINES`] lines or [`MAX_BLOCK_BYTES`]), each block once per
//! rule.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// How far a block may reach below the line that opens it, in lines and bytes: provider
/// settings sit near their parent key, and the bound keeps a long file linear.
pub(crate) const MAX_BLOCK_LINES: usize = 128;
pub(crate) const MAX_BLOCK_BYTES: usize = 16 * 1024;

/// An assignment in text, as byte ranges of the whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assignment {
    pub key: Range<usize>,
    pub value: Range<usize>,
    /// Whether the value was written in quotes.
    pub quoted: bool,
}

/// A key (optionally quoted) after a delimiter, an assignment operator, an optional opening
/// quote and a value that runs to the next delimiter or quote (a `?` ends it too, so that the
/// query of a URL written as a value is read as assignments of its own).
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)(?:^|[\s,{(\[;&?|$@:])["'`]?([A-Za-z_][A-Za-z0-9_.\-]{0,63})["'`]?[ \t]*(?::=|=>|=|:)[ \t]*(["'`]?)([^\s"'`,;&(){}\[\]<>\\|?]+)"#,
    )
    .expect("the assignment pattern is a valid regex")
});

/// The fewest characters a keyed rule's value has (Dropbox's app secrets): text without a run
/// of this many value characters holds no such value, and the per-rule regexes need not run.
pub(crate) const SHORTEST_VALUE: usize = 15;

/// Whether `text` holds a run of at least [`SHORTEST_VALUE`] bytes that a value may hold (the
/// assignment pattern's value characters).
pub(crate) fn may_hold_a_value(text: &str) -> bool {
    let mut run = 0;
    for &b in text.as_bytes() {
        let value_byte = !b.is_ascii_whitespace()
            && !matches!(
                b,
                b'"' | b'\''
                    | b'`'
                    | b','
                    | b';'
                    | b'&'
                    | b'('
                    | b')'
                    | b'{'
                    | b'}'
                    | b'['
                    | b']'
                    | b'<'
                    | b'>'
                    | b'\\'
                    | b'|'
                    | b'?'
            );
        run = if value_byte { run + 1 } else { 0 };
        if run >= SHORTEST_VALUE {
            return true;
        }
    }
    false
}

/// An XML element holding text: `<apiKey>…</apiKey>`.
static XML_ELEMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<([A-Za-z_][A-Za-z0-9_.\-]{0,63})>[ \t]*([^<\s]{1,512})[ \t]*</")
        .expect("the element pattern is a valid regex")
});

/// The assignments in `text[range]`: XML elements first, then `key = value` pairs.
pub(crate) fn assignments(text: &str, range: Range<usize>, out: &mut Vec<Assignment>) {
    let from = range.start;
    if text[range.clone()].contains("</") {
        for captures in XML_ELEMENT.captures_iter(&text[range.clone()]) {
            let (Some(key), Some(value)) = (captures.get(1), captures.get(2)) else {
                continue;
            };
            out.push(Assignment {
                key: from + key.start()..from + key.end(),
                value: from + value.start()..from + value.end(),
                quoted: true,
            });
        }
    }
    for captures in ASSIGNMENT.captures_iter(&text[range]) {
        let (Some(key), Some(quote), Some(value)) =
            (captures.get(1), captures.get(2), captures.get(3))
        else {
            continue;
        };
        out.push(Assignment {
            key: from + key.start()..from + key.end(),
            value: from + value.start()..from + value.end(),
            quoted: !quote.is_empty(),
        });
    }
}

/// Words that open code rather than data when they begin a line: a block after them is a
/// function or type body, not a provider's settings.
const CODE_WORDS: &[&str] = &[
    "def",
    "class",
    "if",
    "elif",
    "else",
    "for",
    "foreach",
    "while",
    "with",
    "try",
    "except",
    "catch",
    "finally",
    "fn",
    "func",
    "function",
    "impl",
    "struct",
    "enum",
    "trait",
    "match",
    "case",
    "switch",
    "return",
    "async",
    "pub",
    "mod",
    "namespace",
    "package",
    "interface",
    "type",
    "public",
    "private",
    "protected",
    "static",
    "do",
    "unless",
    "until",
    "macro_rules!",
];

/// A line that opens a block: where its opener is (a name must end before it to govern the
/// block), how the block is bounded, and whether the opening line's own key names a credential
/// (`variable "okta_api_token" {`), which makes any value in the block that credential's
/// (`default = "…"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opener {
    pub at: usize,
    pub names_a_credential: bool,
    /// For a name/value pair (`- name: DB_PASSWORD`), the name's byte range.
    pub pair_name: Option<Range<usize>>,
    /// Where the opening line ends.
    line_end: usize,
    bound: Bound,
}

/// How far a block reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// The lines indented deeper than the opener (`yaml_key`: also a sequence at its depth).
    Indented { indent: usize, yaml_key: bool },
    /// The lines up to the next `[section]` header.
    Section,
    /// The rest of a name/value pair's mapping: the lines after it at `indent` or deeper,
    /// up to a few (`- name: DD_API_KEY` then `  value: …`).
    Siblings { indent: usize },
}

impl Opener {
    /// The block's byte range: found by walking its lines, so only asked for when a rule needs
    /// it.
    pub(crate) fn block(&self, text: &str) -> Range<usize> {
        match self.bound {
            Bound::Indented { indent, yaml_key } => {
                indented_block(text, self.line_end, indent, yaml_key)
            }
            Bound::Section => section(text, self.line_end),
            Bound::Siblings { indent } => siblings(text, self.line_end, indent),
        }
    }
}

/// The block that `line` opens, if it is a parent: a YAML or dict key without a value
/// (`datadog:`), a line ending in `{`, `[` or `(` (`"postmark": {`, `POSTMARK = {`,
/// `PostmarkClient(`, `provider "datadog" {`), an INI/TOML section header (`[datadog]`,
/// `[sinks.datadog]`). A name governs the block when it ends by [`Opener::at`]. A comment opens
/// nothing: prose names providers in passing (`// vendors whose keys are UUIDs: Heroku, …`).
pub(crate) fn opened_block(text: &str, line: Range<usize>) -> Option<Opener> {
    let content = &text[line.clone()];
    let trimmed = content.trim_end();
    let indent = indentation(content);
    if let Some(opener) = named_pair(&trimmed[indent..], line.start + indent, indent, line.end) {
        return Some(opener);
    }
    // Most lines end in none of the openers and hold no comment: a look at the last byte and one
    // scan for `#` and `/` tell.
    let last = trimmed.bytes().next_back()?;
    if !matches!(last, b':' | b'{' | b'[' | b'(' | b']' | b'>' | b'|' | b'o')
        && !content.contains(['#', '/'])
    {
        return None;
    }
    let body = without_trailing_comment(&trimmed[indent..]).trim_end();
    let opener = body.chars().next_back()?;
    let before = &body[..body.len() - opener.len_utf8()];
    let at = line.start + indent + before.len();
    let names_a_credential = last_key(before).is_some_and(names_a_credential);
    if body.starts_with('[') && opener == ']' && !body.contains(['=', '"', '\'']) {
        return Some(Opener {
            at,
            names_a_credential,
            pair_name: None,
            line_end: line.end,
            bound: Bound::Section,
        });
    }
    let first_word = body
        .split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    if CODE_WORDS.contains(&first_word) {
        return None;
    }
    let yaml_key = opener == ':' && is_key(before.trim_start_matches("- "));
    // An XML element that holds others (`<datadog>`), a Ruby block (`Postmark.configure do
    // |config|`).
    let xml_parent = opener == '>'
        && body.starts_with('<')
        && !body.starts_with(['?', '!'])
        && !body[1..].starts_with(['?', '!', '/'])
        && !body.contains("</")
        && !body.ends_with("/>");
    let ruby_block = body.ends_with(" do") || (opener == '|' && body.contains(" do |"));
    if !(yaml_key || xml_parent || ruby_block || matches!(opener, '{' | '[' | '(')) {
        return None;
    }
    Some(Opener {
        at,
        names_a_credential,
        pair_name: None,
        line_end: line.end,
        bound: Bound::Indented { indent, yaml_key },
    })
}

/// Keys that name the value beside them in a name/value pair: Kubernetes' and ECS's `env`
/// entries (`name`/`value`), .NET's `<add key=… value=…/>`.
const PAIR_NAMES: &[&str] = &["name", "key"];

/// The opener of a name/value pair's siblings, if `body` (a line without its indentation)
/// names one: `- name: DD_API_KEY`, `name: DD_API_KEY`, `"name": "DD_API_KEY",`. The pair's
/// name governs the siblings from the line's end, and makes their `value` the credential the
/// name names.
fn named_pair(body: &str, body_start: usize, indent: usize, line_end: usize) -> Option<Opener> {
    let (item, rest) = match body.strip_prefix("- ") {
        Some(rest) => (true, rest.trim_start()),
        None => (false, body),
    };
    let rest = rest.strip_prefix('"').unwrap_or(rest);
    let key = PAIR_NAMES.iter().find(|name| rest.starts_with(*name))?;
    let after = rest[key.len()..].trim_start_matches('"').trim_start();
    let value = after.strip_prefix(':')?;
    let name = value
        .trim()
        .trim_end_matches(',')
        .trim_matches(|c| c == '"' || c == '\'');
    if name.is_empty() || !is_key(name) {
        return None;
    }
    let name_start = body_start + offset_in(body, name);
    Some(Opener {
        at: line_end,
        names_a_credential: names_a_credential(name),
        pair_name: Some(name_start..name_start + name.len()),
        line_end,
        bound: Bound::Siblings {
            indent: indent + if item { 2 } else { 0 },
        },
    })
}

/// The byte offset of `part`, a subslice of `whole`, in `whole`.
fn offset_in(whole: &str, part: &str) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

/// Which credential a name/value pair's name names, for the generic rules: a password
/// (`DB_PASSWORD`, `smtp_passwd`), or another secret (`API_TOKEN`, `stripe_secret_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PairKind {
    Password,
    Secret,
}

/// What a pair's name names, if a credential: the words the generic rules read in a key
/// (`password`, `passwd`, `passphrase`, `pwd`; `secret`, `token`, `api_key`, `access_key`, …),
/// and no id or setting.
pub(crate) fn pair_kind(name: &str) -> Option<PairKind> {
    if names_an_id_words(name) {
        return None;
    }
    let squeezed: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let has = |words: &[&str]| words.iter().any(|w| squeezed.contains(w));
    if has(&["password", "passwd", "passphrase", "pwd"]) {
        Some(PairKind::Password)
    } else if has(&[
        "secret",
        "token",
        "apikey",
        "accesskey",
        "authkey",
        "privatekey",
        "signingkey",
        "encryptionkey",
        "masterkey",
    ]) {
        Some(PairKind::Secret)
    } else {
        None
    }
}

/// The name of a pair on a line (`{"name": "DB_PASSWORD", "value": …}`, `<add
/// key="DbPassword" value=…/>`): the value of its first `name` or `key` assignment.
pub(crate) fn pair_name_on_line<'a>(
    text: &str,
    assignments: &'a [Assignment],
) -> Option<&'a Assignment> {
    assignments.iter().find(|a| {
        PAIR_NAMES
            .iter()
            .any(|name| text[a.key.clone()].eq_ignore_ascii_case(name))
    })
}

/// Whether the line `line` names a pair (`{"name": "DD_API_KEY", "value": …}`, `<add
/// key="ApiKey" value=…/>`) whose name names a credential: then the other values on the line
/// are that credential.
pub(crate) fn names_a_credential_pair(text: &str, assignments: &[Assignment]) -> bool {
    assignments.iter().any(|a| {
        PAIR_NAMES
            .iter()
            .any(|name| text[a.key.clone()].eq_ignore_ascii_case(name))
            && names_a_credential(&text[a.value.clone()])
    })
}

/// The lines after `from` (a line's end) at `indent` or deeper, at most eight: a pair's
/// siblings.
fn siblings(text: &str, from: usize, indent: usize) -> Range<usize> {
    let start = (from + 1).min(text.len());
    let mut end = start;
    let mut at = start;
    for _ in 0..8 {
        if at >= text.len() {
            break;
        }
        let line_end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |i| at + i);
        let line = &text[at..line_end];
        let depth = indentation(line);
        if line.trim().is_empty()
            || depth < indent
            || line[depth..].starts_with("- ") && depth == indent
        {
            break;
        }
        end = line_end;
        at = line_end + 1;
    }
    start..end
}

/// The last key-like word of `text` (`variable "okta_api_token"` gives `okta_api_token`).
fn last_key(text: &str) -> Option<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .rfind(|word| word.bytes().any(|b| b.is_ascii_alphabetic()))
}

/// Whether `text` is a key as configuration writes it: a name, optionally quoted.
fn is_key(text: &str) -> bool {
    let name = text.trim_matches(|c| c == '"' || c == '\'');
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
}

/// `text` without a trailing `# …` or `// …` comment (one after whitespace, so that `#` in a
/// value and `//` in a URL stay).
fn without_trailing_comment(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, window) in bytes.windows(2).enumerate() {
        let comment = window[1] == b'#' || (window[1] == b'/' && bytes.get(i + 2) == Some(&b'/'));
        if comment && window[0].is_ascii_whitespace() {
            return &text[..i];
        }
    }
    if text.starts_with('#') || text.starts_with("//") {
        return "";
    }
    text
}

pub(crate) fn indentation(line: &str) -> usize {
    line.bytes()
        .take_while(|&b| b == b' ' || b == b'\t')
        .count()
}

/// The lines after `from` (a line's end) indented deeper than `indent`, blank and comment lines
/// included; after a YAML key, also a sequence (`- …`) at the key's own indentation.
fn indented_block(text: &str, from: usize, indent: usize, yaml_key: bool) -> Range<usize> {
    let start = (from + 1).min(text.len());
    let mut end = start;
    let mut at = start;
    for _ in 0..MAX_BLOCK_LINES {
        if at >= text.len() || at - start > MAX_BLOCK_BYTES {
            break;
        }
        let line_end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |i| at + i);
        let line = &text[at..line_end];
        let depth = indentation(line);
        let rest = line[depth..].trim_end();
        let inside = rest.is_empty()
            || rest.starts_with('#')
            || rest.starts_with("//")
            || depth > indent
            || (yaml_key && depth == indent && rest.starts_with("- "));
        if !inside {
            break;
        }
        if !rest.is_empty() {
            end = line_end;
        }
        at = line_end + 1;
    }
    start..end.max(start)
}

/// The lines of the section whose header ends at `from`: up to the next `[section]` header.
fn section(text: &str, from: usize) -> Range<usize> {
    let start = (from + 1).min(text.len());
    let mut end = start;
    let mut at = start;
    for _ in 0..MAX_BLOCK_LINES {
        if at >= text.len() || at - start > MAX_BLOCK_BYTES {
            break;
        }
        let line_end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |i| at + i);
        let rest = text[at..line_end].trim();
        if rest.starts_with('[') && rest.ends_with(']') {
            break;
        }
        end = line_end;
        at = line_end + 1;
    }
    start..end
}

/// `value` with its percent-escapes decoded, when it has any (a key in a URL query is written
/// so: `…%2B…%3D%3D`); `None` when it has none or they do not decode to UTF-8.
pub(crate) fn percent_decoded(value: &str) -> Option<String> {
    if !value.contains('%') {
        return None;
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push(u8::try_from(high * 16 + low).expect("two hex digits make a byte"));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Calls `word` with each word of a key, lower case, until it returns `true`:
/// `X-Postmark-Server-Token`, `serverToken`, `APIKey`, `api_key` split at separators and at
/// case changes. Words longer than 32 bytes are passed cut to 32.
fn any_key_word(key: &str, mut word: impl FnMut(&str) -> bool) -> bool {
    for part in key.split(|c: char| !c.is_ascii_alphanumeric()) {
        let bytes = part.as_bytes();
        let mut buffer = [0u8; 32];
        let mut len = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let boundary = i > 0
                && b.is_ascii_uppercase()
                && (bytes[i - 1].is_ascii_lowercase()
                    || bytes[i - 1].is_ascii_digit()
                    || bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase)
                        && bytes[i - 1].is_ascii_uppercase());
            if boundary && len > 0 {
                if word(std::str::from_utf8(&buffer[..len]).expect("ASCII")) {
                    return true;
                }
                len = 0;
            }
            if len < buffer.len() {
                buffer[len] = b.to_ascii_lowercase();
                len += 1;
            }
        }
        if len > 0 && word(std::str::from_utf8(&buffer[..len]).expect("ASCII")) {
            return true;
        }
    }
    false
}

/// Words that make a key a credential's: `api_key`, `serverToken`, `client_secret`,
/// `LicenseKey`, `hec_token`, `auth`, and words ending in one (`authtoken`, `clientsecret`,
/// `dbpassword`; `key` only after a credential's modifier: `apikey`, `secretkey`).
const CREDENTIAL_WORDS: &[&str] = &[
    "key",
    "keys",
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "pass",
    "auth",
    "credential",
    "credentials",
    "creds",
    "license",
    "licence",
    "bearer",
    "pat",
    "skey",
];
const CREDENTIAL_ENDINGS: &[&str] = &["token", "secret", "password", "passwd", "pwd"];
const KEY_MODIFIERS: &[&str] = &[
    "api",
    "auth",
    "access",
    "secret",
    "private",
    "app",
    "sdk",
    "license",
    "licence",
    "master",
    "signing",
    "client",
    "server",
    "account",
    "service",
    "admin",
    "ingest",
    "write",
    "hec",
    "integration",
    "deploy",
    "personal",
    "project",
    "bot",
    "encryption",
    "shared",
];

/// Words that make a key an identifier's, a digest's or a setting's around a credential, never
/// the credential itself: `app_id`, `commit_sha`, `integrity`, `api_key_name`,
/// `public_key`, `token_url`, `key_file`.
const NOT_A_CREDENTIAL: &[&str] = &[
    "id",
    "ids",
    "uuid",
    "guid",
    "sha",
    "sha1",
    "sha256",
    "sha384",
    "sha512",
    "md5",
    "hash",
    "hashes",
    "checksum",
    "digest",
    "commit",
    "integrity",
    "fingerprint",
    "version",
    "revision",
    "rev",
    "etag",
    "public",
    "publishable",
    "name",
    "url",
    "uri",
    "host",
    "endpoint",
    "region",
    "email",
    "username",
    "trace",
    "span",
    "request",
    "correlation",
    "idempotency",
    "message",
    "event",
    "type",
    "kind",
    "format",
    "algorithm",
    "length",
    "size",
    "count",
    "expiry",
    "expires",
    "ttl",
    "timeout",
    "path",
    "file",
    "env",
    "var",
    "header",
    "prefix",
    "field",
    "param",
    "index",
    "cache",
];

/// Whether a key names a credential and nothing that is not one (see [`NOT_A_CREDENTIAL`]).
pub(crate) fn names_a_credential(key: &str) -> bool {
    !names_an_id_words(key)
        && any_key_word(key, |w| {
            CREDENTIAL_WORDS.contains(&w)
                || CREDENTIAL_ENDINGS
                    .iter()
                    .any(|ending| w.len() > ending.len() && w.ends_with(ending))
                || w.strip_suffix("key")
                    .is_some_and(|modifier| KEY_MODIFIERS.contains(&modifier))
        })
}

/// Whether the key that ends `assignment` (text up to a value: `DD_TRACE_ID = "`,
/// `…/weather?format=json&appid=`) names an identifier, a digest or a setting (see
/// [`NOT_A_CREDENTIAL`]). Only the last key counts, not what comes before it on the line.
pub(crate) fn names_an_id(assignment: &str) -> bool {
    let key = assignment.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    let start = key
        .char_indices()
        .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map_or(0, |(i, c)| i + c.len_utf8());
    names_an_id_words(&key[start..])
}

fn names_an_id_words(key: &str) -> bool {
    any_key_word(key, |w| NOT_A_CREDENTIAL.contains(&w))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte range of the line holding `at`, without its line break.
    fn line_at(text: &str, at: usize) -> Range<usize> {
        let bytes = text.as_bytes();
        let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(text.len(), |i| at + i);
        start..end
    }

    fn found(text: &str) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        assignments(text, 0..text.len(), &mut out);
        out.iter()
            .map(|a| (&text[a.key.clone()], &text[a.value.clone()]))
            .collect()
    }

    #[test]
    fn assignments_are_read_in_every_common_syntax() {
        assert_eq!(found("api_key: abc123"), [("api_key", "abc123")]);
        assert_eq!(
            found("  \"serverToken\": \"u-1\","),
            [("serverToken", "u-1")]
        );
        assert_eq!(
            found("[opsgenie] client initialised api_key=k1 region=eu"),
            [("api_key", "k1"), ("region", "eu")]
        );
        assert_eq!(
            found("curl \"https://api.x.org/a?q=London&appid=f00d\""),
            [
                ("https", "//api.x.org/a"),
                ("q", "London"),
                ("appid", "f00d")
            ]
        );
        assert_eq!(
            found("Client(server_token=\"t\", timeout=30)"),
            [("server_token", "t"), ("timeout", "30")]
        );
        assert_eq!(
            found("new X({ serverToken: 't' });"),
            [("serverToken", "t")]
        );
        assert_eq!(found("$api_key = 'v';"), [("api_key", "v")]);
        assert_eq!(found("{\"a\":{\"token\":\"z\"}}"), [("token", "z")]);
        assert!(found("datadog:\n").is_empty());
        assert!(found("key: |\n").is_empty());
        assert_eq!(found("  <apiKey>k1</apiKey>"), [("apiKey", "k1")]);
    }

    /// The block the line holding `name` opens, if the name governs it.
    fn block<'t>(text: &'t str, name: &str) -> Option<&'t str> {
        let at = text.find(name).expect("the name is in the text");
        opened_block(text, line_at(text, at))
            .filter(|opener| at + name.len() <= opener.at)
            .map(|opener| &text[opener.block(text)])
    }

    #[test]
    fn parents_open_the_block_below_them() {
        let yaml = "datadog:\n  site: eu\n  api_key: k\nother: 1\n";
        assert_eq!(block(yaml, "datadog"), Some("  site: eu\n  api_key: k"));
        let list = "datadog:\n- api_key: k\n  site: eu\nnext: 1\n";
        assert_eq!(block(list, "datadog"), Some("- api_key: k\n  site: eu"));
        let json = "{\n  \"postmark\": {\n    \"serverToken\": \"t\"\n  },\n  \"x\": 1\n}\n";
        assert_eq!(block(json, "postmark"), Some("    \"serverToken\": \"t\""));
        let python = "client = PostmarkClient(\n    server_token=\"t\",\n)\nx = 1\n";
        assert_eq!(block(python, "Postmark"), Some("    server_token=\"t\","));
        let ini = "[server]\nport = 1\n[postmark]\nserver_token = t\n\n[other]\nk = v\n";
        assert_eq!(block(ini, "postmark"), Some("server_token = t\n"));
        let pair = "env:\n  - name: DD_API_KEY\n    value: k\n  - name: OTHER\n    value: v\n";
        assert_eq!(block(pair, "DD_API"), Some("    value: k"));
        let xml = "<datadog>\n  <apiKey>k</apiKey>\n</datadog>\n";
        assert_eq!(block(xml, "datadog"), Some("  <apiKey>k</apiKey>"));
        let ruby = "Postmark.configure do |config|\n  config.api_token = 'k'\nend\n";
        assert_eq!(block(ruby, "Postmark"), Some("  config.api_token = 'k'"));
        let hcl = "provider \"datadog\" {\n  api_key = \"k\"\n}\n";
        assert_eq!(block(hcl, "datadog"), Some("  api_key = \"k\""));
        let commented = "datadog: # the agent\n  api_key: k\n";
        assert_eq!(block(commented, "datadog"), Some("  api_key: k"));
        assert_eq!(block("datadog 🚀\n  api_key: k\n", "datadog"), None);
        assert_eq!(
            block("datadog: ✓ (\n  api_key: k\n", "datadog"),
            Some("  api_key: k")
        );
        let prose = "// keyed rules: Heroku, Snyk\nval apiKey = \"k\"\n";
        assert_eq!(block(prose, "Heroku"), None);
        let terraform = "variable \"okta_api_token\" {\n  default = \"t\"\n}\n";
        let first_line = 0..terraform.find('\n').expect("the text has lines");
        let opener = opened_block(terraform, first_line).expect("a block opens");
        assert!(opener.names_a_credential);
    }

    #[test]
    fn values_code_and_names_after_the_opener_open_nothing() {
        assert_eq!(block("datadog: enabled\n  api_key: k\n", "datadog"), None);
        assert_eq!(block("def datadog(x):\n    token = 1\n", "datadog"), None);
        assert_eq!(block("impl Datadog {\n    key: u8,\n}\n", "Datadog"), None);
        assert_eq!(block("x = {  # datadog\n  key: 1\n}\n", "datadog"), None);
        assert_eq!(
            block("description: see datadog docs\n  key: 1\n", "datadog"),
            None
        );
    }

    #[test]
    fn keys_are_judged_by_their_words() {
        for key in [
            "api_key",
            "serverToken",
            "client_secret",
            "LicenseKey",
            "hec_token",
            "APIKey",
            "X-Postmark-Server-Token",
            "apikey",
            "authToken",
            "password",
            "app_key",
        ] {
            assert!(names_a_credential(key), "{key}");
        }
        for key in [
            "app_id",
            "commit_sha",
            "integrity",
            "api_key_name",
            "public_key",
            "token_url",
            "key_file",
            "site",
            "region",
            "sha256",
            "uuid",
            "trace_id",
            "monkey",
            "tokenizer",
        ] {
            assert!(!names_a_credential(key), "{key}");
        }
        assert!(names_an_id("datadog_trace_id"));
        assert_eq!(percent_decoded("a%2Bb%3D%3D").as_deref(), Some("a+b=="));
        assert_eq!(percent_decoded("plain"), None);
        assert!(!names_an_id("datadog_api_key"));
    }
}
