//! What a regex match must also be to count as a secret: the named checks a catalog rule picks
//! (`check = "token"`), and the value classifiers they share (entropy, placeholders, references,
//! code).
//!
//! Two placeholder lists serve two kinds of value. A password in a URL, a connection string or a
//! credentials file is redacted whatever it looks like, so only [`is_documented_placeholder`]
//! (templates, references, `****`, and the few dummies vendors' documentation writes) spares
//! it. A generic `token = "…"` in code is redacted only when it looks generated, and
//! [`is_placeholder`] is the broad list of words, demo values and markers that say otherwise.

use super::Candidate;

/// A named acceptance check, as written in the catalog's `check` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Every match is a secret (the regex says all).
    Any,
    /// A vendor token: not cut from a longer token, random enough, not a placeholder.
    Token,
    /// A hex token: as `Token`, and it mixes digits and the letters `a`–`f`.
    Hex,
    /// Raw base64 key material: not cut from longer base64, random enough.
    Base64,
    /// A private key block holding real key material.
    Pem,
    /// An `Authorization: Basic` value: base64 of `user:password` with a real password.
    BasicAuth,
    /// A token or password typed into a config file: not a placeholder, not code.
    Credential,
    /// A password where only a password can be (credential files): anything but a documented
    /// placeholder.
    Password,
    /// The password of `scheme://user:password@host`: anything but a port or a documented
    /// placeholder.
    UrlPassword,
    /// `Password=`/`Pwd=` in a connection string (`;`, `&` or `?` before it, or `;` after the
    /// value): anything but a documented placeholder.
    ConnectionPassword,
    /// A bearer token: random, not a challenge parameter.
    Bearer,
    /// `api_key = "…"`, `token: …`: the value must look generated.
    GenericSecret,
    /// `password = "…"`: the value must look like a real password (three character classes,
    /// or random), not a placeholder or a reference.
    GenericPassword,
    /// A value in the `data:`/`stringData:` map of a Kubernetes `kind: Secret` document.
    KubernetesSecret,
    /// A `password` in a `.netrc` entry (after `machine` or `default`).
    Netrc,
    /// A `password` in a `.pypirc` section: unindented, under a `[section]` header whose
    /// lines are all `key = value`.
    Pypirc,
}

impl Check {
    /// The check a catalog name stands for.
    pub(crate) fn from_name(name: &str) -> Option<Check> {
        Some(match name {
            "any" => Check::Any,
            "token" => Check::Token,
            "hex" => Check::Hex,
            "base64" => Check::Base64,
            "pem" => Check::Pem,
            "basic_auth" => Check::BasicAuth,
            "credential" => Check::Credential,
            "password" => Check::Password,
            "url_password" => Check::UrlPassword,
            "connection_password" => Check::ConnectionPassword,
            "bearer" => Check::Bearer,
            "generic_secret" => Check::GenericSecret,
            "generic_password" => Check::GenericPassword,
            "kubernetes_secret" => Check::KubernetesSecret,
            "netrc" => Check::Netrc,
            "pypirc" => Check::Pypirc,
            _ => return None,
        })
    }

    /// Whether `c` passes this check; `min_entropy` overrides the check's entropy floor.
    pub(crate) fn accepts(self, c: &Candidate<'_>, min_entropy: Option<f64>) -> bool {
        match self {
            Check::Any => true,
            Check::Token => accept_token(c, min_entropy.unwrap_or(3.0)),
            Check::Hex => accept_hex_token(c, min_entropy.unwrap_or(3.0)),
            Check::Base64 => accept_base64(c, min_entropy.unwrap_or(4.0)),
            Check::Pem => accept_pem(c.secret()),
            Check::BasicAuth => accept_basic_auth(c.secret()),
            Check::Credential => accept_credential(c.secret()),
            Check::Password => !is_documented_placeholder(c.secret()),
            Check::UrlPassword => accept_url_password(c),
            Check::ConnectionPassword => accept_connection_password(c),
            Check::Bearer => accept_bearer(c),
            Check::GenericSecret => accept_generic_secret(c),
            Check::GenericPassword => accept_generic_password(c),
            Check::KubernetesSecret => accept_kubernetes_secret(c),
            Check::Netrc => accept_netrc(c),
            Check::Pypirc => accept_pypirc(c),
        }
    }
}

fn accept_token(c: &Candidate<'_>, min_entropy: f64) -> bool {
    let secret = c.secret();
    !c.next_byte().is_some_and(is_token_byte)
        && is_generated(secret, min_entropy)
        && !has_placeholder_word(secret)
}

fn accept_hex_token(c: &Candidate<'_>, min_entropy: f64) -> bool {
    let secret = c.secret();
    accept_token(c, min_entropy)
        && secret.bytes().any(|b| b.is_ascii_digit())
        && secret
            .bytes()
            .any(|b| matches!(b, b'a'..=b'f' | b'A'..=b'F'))
}

fn accept_base64(c: &Candidate<'_>, min_entropy: f64) -> bool {
    !c.next_byte()
        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && is_generated(c.secret(), min_entropy)
        && !has_placeholder_word(c.secret())
}

/// A private key block with real key material (not `...` in documentation).
fn accept_pem(block: &str) -> bool {
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

fn accept_basic_auth(value: &str) -> bool {
    let Some(decoded) = decode_base64(value) else {
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

fn accept_credential(value: &str) -> bool {
    !is_placeholder(value) && !is_code_or_path(value)
}

fn accept_url_password(c: &Candidate<'_>) -> bool {
    let password = c.secret();
    // `host:8080@…` is a port, not a password.
    let port_like = password.len() <= 5 && password.bytes().all(|b| b.is_ascii_digit());
    // `scheme://user:` before the password.
    let userinfo = &c.text[c.match_start..c.start];
    let user = userinfo
        .find("://")
        .map_or("", |i| &userinfo[i + 3..])
        .trim_end_matches(':');
    // A password equal to its user is a product's documented default (`guest:guest` for
    // RabbitMQ, `root:root`, `postgres:postgres` in container documentation), one character
    // is a test's stand-in (`http://a:b@host`).
    !port_like
        && password != user
        && password.chars().count() > 1
        && !is_documented_placeholder(password)
        // `http://foo:bar:baz@host` in a URL parser's tests: stand-ins all through.
        && !password.split([':', '@']).all(is_documented_placeholder)
}

fn accept_connection_password(c: &Candidate<'_>) -> bool {
    let value = c.secret();
    if is_documented_placeholder(value) || value.chars().count() < 2 {
        return false;
    }
    // `;Password=…`, `&password=…`, `?password=…`: inside a connection string or a query.
    if matches!(c.text.as_bytes()[c.match_start], b';' | b'&' | b'?') {
        return true;
    }
    // `Password=…;` first in a string, or after a space or quote: only when the line holds
    // another connection-string key, so that `echo password=b;` or code is not taken.
    let line_start = c.text[..c.match_start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = c.text[c.end..]
        .find('\n')
        .map_or(c.text.len(), |i| c.end + i);
    let line = c.text[line_start..line_end].to_ascii_lowercase();
    let has_key = CONNECTION_KEYS.iter().any(|key| {
        line.match_indices(key).any(|(i, _)| {
            let before = line[..i].chars().next_back();
            let after = line[i + key.len()..].trim_start_matches([' ', '\t']);
            before.is_none_or(|b| matches!(b, ';' | ' ' | '"' | '\'' | '\t'))
                && after.starts_with('=')
        })
    });
    c.next_byte() == Some(b';') && has_key && !value.contains('(') && !is_code_or_path(value)
}

/// Keys of ADO.NET, ODBC and JDBC connection strings other than the password.
const CONNECTION_KEYS: &[&str] = &[
    "server",
    "data source",
    "host",
    "database",
    "initial catalog",
    "uid",
    "user id",
    "user",
    "driver",
    "dsn",
    "provider",
];

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

/// Whether an unquoted value is a literal (as in `.env`, YAML, INI and shell) rather than an
/// expression in code: `token = make_token(…)`, `token: Token,`, `const TOKEN: Kind = …;`.
fn bare_value_is_literal(c: &Candidate<'_>) -> bool {
    let value = c.secret();
    let after = c.text[c.end..].trim_start_matches([' ', '\t']);
    // In a URL query (`?access_token=…&page=2`) the next parameter follows.
    let in_query = c.text[..c.match_start].ends_with(['?', '&']) && after.starts_with('&');
    let code = after.starts_with([
        '(', '[', '{', '<', '=', ',', ';', ')', '|', '&', '?', ':', '.', '+', '*', '/', '%',
    ]);
    (!code || in_query)
        && !c.typed
        && !value.bytes().all(|b| b.is_ascii_alphabetic())
        && !is_number_literal(value)
}

/// Whether a value is a number as code writes it: `0x8004_004A_u32`, `1_000_000`, `42i64`.
fn is_number_literal(value: &str) -> bool {
    let body = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
        .unwrap_or(value);
    let body = body.trim_end_matches(|c: char| {
        c.is_ascii_alphanumeric() && !c.is_ascii_hexdigit() || c == '_'
    });
    let body = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
    ]
    .iter()
    .find_map(|suffix| body.strip_suffix(suffix))
    .unwrap_or(body);
    !body.is_empty()
        && body
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || value.starts_with("0x"))
        && body.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_')
}

/// Whether a value holds a UUID or GUID (`_SA_{262E99C9-6160-4871-ACEC-4E61736B6F21}`): a name
/// or an id built from one, not key material.
fn contains_uuid(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.windows(36).any(|w| {
        w.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
    })
}

/// Codecov's badge URLs carry a graph token, which Codecov documents as safe to publish.
fn is_codecov_badge(c: &Candidate<'_>) -> bool {
    let line_start = c.text[..c.start].rfind('\n').map_or(0, |i| i + 1);
    let line = &c.text[line_start..c.start];
    line.contains("codecov.io/") && line.ends_with("token=")
}

fn accept_generic_secret(c: &Candidate<'_>) -> bool {
    let value = c.secret();
    if c.bare && !bare_value_is_literal(c) {
        return false;
    }
    // `https://x-access-token:…@host` is a URL's user and password: URL_PASSWORD's to judge.
    if c.text[..c.match_start].ends_with("://") {
        return false;
    }
    !is_placeholder(value)
        && !is_code_or_path(value)
        && !is_identifier_like(value)
        && !is_uuid_like(value)
        && !contains_uuid(value)
        && !is_codecov_badge(c)
        && looks_random(value)
}

/// Whether a value is a UUID or a piece of one: groups of hex digits joined by `-`
/// (`c4d77c62-6196-4f17-a06b-c462cffae87a`, `a06b-c462cffae87a`). In code these are ids far
/// more often than keys; vendors whose keys are UUIDs have their own keyed rules.
fn is_uuid_like(value: &str) -> bool {
    value.contains('-')
        && value.split('-').all(|group| {
            (4..=12).contains(&group.len()) && group.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

fn accept_generic_password(c: &Candidate<'_>) -> bool {
    let value = c.secret();
    if c.bare && !bare_value_is_literal(c) {
        return false;
    }
    if c.text[..c.match_start].ends_with("://") {
        return false;
    }
    value.chars().count() >= 8
        && !is_documented_placeholder(value)
        // `P@ssw0rd1!` is `password` written to pass a complexity check: a demo value.
        && !DOCUMENTED_DUMMIES.contains(&normalize_weak(value).as_str())
        && !has_placeholder_word(value)
        && !is_code_or_path(value)
        && !is_identifier_like(value)
        && !is_password_hash(value)
        && !contains_uuid(value)
        && (char_classes(value) == 4 || (value.len() >= 16 && looks_random(value)))
}

/// Whether a value is a stored password hash (`pbkdf2_sha256$…`, `$2b$12$…`, `$argon2id$…`):
/// what a system keeps instead of the password.
fn is_password_hash(value: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "pbkdf2_",
        "argon2$",
        "bcrypt$",
        "bcrypt_sha256$",
        "scrypt$",
        "sha1$",
        "md5$",
        "unsalted_",
        "crypt$",
        "$2a$",
        "$2b$",
        "$2x$",
        "$2y$",
        "$argon2",
        "$1$",
        "$5$",
        "$6$",
        "$apr1$",
        "$scrypt$",
        "$pbkdf2",
    ];
    PREFIXES.iter().any(|p| value.starts_with(p))
}

/// A value inside the `data:` or `stringData:` map of a YAML document of `kind: Secret`.
fn accept_kubernetes_secret(c: &Candidate<'_>) -> bool {
    /// How far up the parent key may be, and how far the document may reach: bounds that keep
    /// the check linear on long YAML files.
    const MAX_LINES_UP: usize = 4096;
    const MAX_DOCUMENT_BYTES: usize = 1 << 20;
    let text = c.text;
    let line_start = text[..c.match_start].rfind('\n').map_or(0, |i| i + 1);
    let indent = indentation(&text[line_start..]);
    if indent == 0 || is_documented_placeholder(c.secret()) {
        return false;
    }
    // The parent: the nearest line above with less indentation must be `data:`/`stringData:`.
    let mut parent = None;
    for (seen, line) in text[..line_start].lines().rev().enumerate() {
        if seen >= MAX_LINES_UP {
            return false;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if indentation(line) < indent {
            parent = Some(line.trim_end());
            break;
        }
    }
    if !matches!(parent, Some("data:" | "stringData:")) {
        return false;
    }
    // The document: from the `---` before the value to the one after (or the text's ends).
    let lower = line_start.saturating_sub(MAX_DOCUMENT_BYTES);
    let doc_start = text[..line_start]
        .rfind("\n---")
        .filter(|&i| i >= lower)
        .map_or(lower, |i| i + 1);
    let upper = (c.end + MAX_DOCUMENT_BYTES).min(text.len());
    let doc_end = text[c.end..]
        .find("\n---")
        .map_or(upper, |i| (c.end + i).min(upper));
    text.get(doc_start..doc_end).is_some_and(|document| {
        document
            .lines()
            .any(|line| matches!(line.trim_end(), "kind: Secret" | "kind: \"Secret\""))
    })
}

fn indentation(line: &str) -> usize {
    line.bytes()
        .take_while(|&b| b == b' ' || b == b'\t')
        .count()
}

/// A `password` token in a `.netrc` entry: `machine` or `default` opens the entry on this line
/// or on one of the three before.
fn accept_netrc(c: &Candidate<'_>) -> bool {
    let line_end = c.text[c.end..]
        .find('\n')
        .map_or(c.text.len(), |i| c.end + i);
    let before: Vec<&str> = c.text[..line_end].lines().rev().take(4).collect();
    let opened = before.iter().any(|line| {
        let mut words = line.split_whitespace();
        matches!(words.next(), Some("machine") if words.next().is_some())
            || line.trim() == "default"
            || line.trim_start().starts_with("default ")
    });
    opened && !is_documented_placeholder(c.secret())
}

fn accept_pypirc(c: &Candidate<'_>) -> bool {
    let line_start = c.text[..c.match_start].rfind('\n').map_or(0, |i| i + 1);
    if indentation(&c.text[line_start..]) > 0 || is_documented_placeholder(c.secret()) {
        return false;
    }
    for line in c.text[..line_start].lines().rev() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            return true;
        }
        let key_value = indentation(line) == 0
            && line.split_once(['=', ':']).is_some_and(|(key, _)| {
                let key = key.trim();
                !key.is_empty()
                    && key
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            });
        if !key_value {
            return false;
        }
    }
    false
}

/// Whether a value reads as a name: words of letters, each optionally ending in digits, joined
/// by `_`, `-` or `.` (`WIN32_ERROR`, `_bindgen_ty_7`, `access-1`, `PULONG64`). Generated
/// secrets mix letters and digits all through.
pub(crate) fn is_identifier_like(value: &str) -> bool {
    value
        .split(['_', '-', '.'])
        .filter(|part| !part.is_empty())
        .all(|part| {
            let letters = part.bytes().take_while(u8::is_ascii_alphabetic).count();
            part.bytes().skip(letters).all(|b| b.is_ascii_digit())
        })
}

pub(crate) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Whether a vendor token's characters vary as a generated one's do.
pub(crate) fn is_generated(secret: &str, min_entropy: f64) -> bool {
    !has_run(secret, 6) && shannon_entropy(secret) >= min_entropy
}

/// How many of lower case letters, upper case letters, digits and other characters a value has.
fn char_classes(value: &str) -> usize {
    let mut classes = [false; 4];
    for b in value.bytes() {
        let class = match b {
            b'a'..=b'z' => 0,
            b'A'..=b'Z' => 1,
            b'0'..=b'9' => 2,
            _ => 3,
        };
        classes[class] = true;
    }
    classes.iter().filter(|&&c| c).count()
}

/// Shannon entropy of the bytes, in bits per byte.
pub(crate) fn shannon_entropy(text: &str) -> f64 {
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

/// Words that mark a token-shaped value as documentation: `ghp_xxxx…`, `sk_live_YOUR_KEY…`.
const PLACEHOLDER_WORDS: &[&str] = &[
    "xxxx",
    "example",
    "placeholder",
    "your",
    "dummy",
    "sample",
    "fake",
    "redacted",
    "changeme",
    "insert",
    "replace",
    "notreal",
    "not_real",
    "not-real",
];

fn has_placeholder_word(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    PLACEHOLDER_WORDS.iter().any(|w| lower.contains(w))
}

/// Values vendors' and frameworks' documentation writes where a password goes. Each is here
/// because documentation uses it as a stand-in, not because it is weak: `password`, `passwd`,
/// `pass`, `pwd`, `secret` (the field's own name), `changeme`/`changeit` (the documented
/// defaults to change: Java keystores, many Helm charts), `mypassword`/`yourpassword` and their
/// separators (connection-string documentation), `mysecretpassword` (the Docker `postgres`
/// image's documentation), `tiger` (Oracle's `scott/tiger` sample schema), `opensesame`
/// (RFC 7617's example), `foo`/`bar`/`baz`/`qux` (metasyntactic stand-ins), `example`,
/// `placeholder`, `redacted`.
const DOCUMENTED_DUMMIES: &[&str] = &[
    "password",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "mypassword",
    "my_password",
    "my-password",
    "yourpassword",
    "your_password",
    "your-password",
    "mysecretpassword",
    "tiger",
    "opensesame",
    "foo",
    "bar",
    "baz",
    "qux",
    "example",
    "placeholder",
    "redacted",
];

/// Whether a password is one documentation writes in its place: a template or a reference
/// (`${DB_PASSWORD}`, `$PASSWORD`, `{{ .Values.password }}`, `<password>`, `%(password)s`,
/// `%DB_PASS%`, `{password}`, `[password]`), one character three times or more (`****`, `xxx`)
/// or a run of eight of one character (padding), an
/// ellipsis, or one of [`DOCUMENTED_DUMMIES`] in any case.
pub(crate) fn is_documented_placeholder(value: &str) -> bool {
    let first = value.as_bytes().first().copied();
    value.is_empty()
        || is_reference(value)
        || (value.len() >= 3 && value.bytes().all(|b| Some(b) == first))
        // `paaaaaaaa…ssword`: padding in a parser's tests.
        || has_run(value, 8)
        || value.contains("...")
        || value.contains('\u{2026}')
        || DOCUMENTED_DUMMIES
            .iter()
            .any(|dummy| dummy.eq_ignore_ascii_case(value))
}

/// A template or a reference to another value rather than a value.
fn is_reference(value: &str) -> bool {
    value.starts_with(['$', '%'])
        || value.contains("${")
        || value.contains("$(")
        || value.contains("{{")
        || value.contains("}}")
        || (value.starts_with('<') && value.ends_with('>'))
        || (value.starts_with('{') && value.ends_with('}'))
        || (value.starts_with('[') && value.ends_with(']'))
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

/// Whether a token-like value is a placeholder, a reference to another value, or a weak demo
/// value (the broad list, for values that must also look generated).
pub(crate) fn is_placeholder(value: &str) -> bool {
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
pub(crate) fn is_code_or_path(value: &str) -> bool {
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
pub(crate) fn looks_random(value: &str) -> bool {
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
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
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
    }

    #[test]
    fn documented_placeholders_are_few_and_exact() {
        for value in [
            "<password>",
            "${PASSWORD}",
            "$DB_PASS",
            "{{ .Values.db.password }}",
            "%(password)s",
            "****",
            "xxx",
            "password",
            "PASSWORD",
            "pass",
            "changeme",
            "your_password",
            "...",
        ] {
            assert!(is_documented_placeholder(value), "{value}");
        }
        for value in [
            "hunter2secret",
            "hunter2",
            "postgres",
            "S3cr3tP@ssw0rd!",
            "password1",
            "a",
        ] {
            assert!(!is_documented_placeholder(value), "{value}");
        }
    }

    #[test]
    fn character_classes_are_counted() {
        assert_eq!(char_classes("S3cr3tP@ssw0rd!"), 4);
        assert_eq!(char_classes("passwordPASSWORDpassword"), 2);
        assert_eq!(char_classes("test123"), 2);
    }
}
