//! What a regex match must also be to count as a secret: the named checks a catalog rule picks
//! (`check = "token"`), and the value classifiers they share (entropy, placeholders, references,
//! code).
//!
//! Two placeholder lists serve two kinds of value. A password in a URL, a connection string or a
//! credentials file is redacted whatever it looks like, so only [`is_documented_placeholder`]
//! (templates, references, `****`, and the few dummies vendors' documentation writes) spares
//! it. A generic `token = "…"` in code is redacted only when it looks generated, and
//! [`is_placeholder`] is the broad list of words, demo values and markers that say otherwise.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

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
    /// An Atlassian Data Center personal access token: base64 of a 12-digit id, `:` and 20
    /// random bytes (Bitbucket's with `BBDC-` first).
    AtlassianPat,
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
            "atlassian_pat" => Check::AtlassianPat,
            _ => return None,
        })
    }

    /// Whether `c` passes this check, with the rule's tuning of the randomness checks.
    pub(crate) fn accepts(self, c: &Candidate<'_>, tuning: Randomness) -> bool {
        match self {
            Check::Any => true,
            Check::Token => accept_token(c, tuning.with_entropy(3.0)),
            Check::Hex => accept_hex_token(c, tuning.with_entropy(3.0)),
            Check::Base64 => accept_base64(c, tuning.with_entropy(4.0)),
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
            Check::AtlassianPat => accept_atlassian_pat(c),
        }
    }
}

/// What a rule asks of its secret's randomness, as its catalog entry tunes it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Randomness {
    /// The least Shannon entropy, bits per byte; the check's own floor when `None`.
    pub min_entropy: Option<f64>,
    /// The longest run of one character allowed; [`MAX_RUN`] when `None`.
    pub max_run: Option<usize>,
}

/// The longest run of one character a generated value holds unless its rule says otherwise:
/// random text of 64 symbols has a run of six once in a billion characters.
pub(crate) const MAX_RUN: usize = 5;

/// A rule's randomness tuning with the check's defaults filled in.
#[derive(Debug, Clone, Copy)]
struct Floors {
    min_entropy: f64,
    max_run: usize,
}

impl Randomness {
    fn with_entropy(self, min_entropy: f64) -> Floors {
        Floors {
            min_entropy: self.min_entropy.unwrap_or(min_entropy),
            max_run: self.max_run.unwrap_or(MAX_RUN),
        }
    }
}

fn accept_token(c: &Candidate<'_>, floors: Floors) -> bool {
    let secret = c.secret();
    !c.next_byte().is_some_and(is_token_byte)
        && is_generated(secret, floors.min_entropy, floors.max_run)
        && !has_placeholder_word(secret)
        && !is_sequential(secret)
}

fn accept_hex_token(c: &Candidate<'_>, floors: Floors) -> bool {
    let secret = c.secret();
    accept_token(c, floors)
        && secret.bytes().any(|b| b.is_ascii_digit())
        && secret
            .bytes()
            .any(|b| matches!(b, b'a'..=b'f' | b'A'..=b'F'))
}

fn accept_base64(c: &Candidate<'_>, floors: Floors) -> bool {
    !c.next_byte()
        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && is_generated(c.secret(), floors.min_entropy, floors.max_run)
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
    // Documentation shows a key's first and last lines around an elision.
    let elided = body
        .split(['\n', '\r'])
        .flat_map(|line| line.split("\\n"))
        .any(|line| matches!(line.trim().trim_matches('"'), "..." | "\u{2026}"));
    if elided {
        return false;
    }
    // A key's first kilobyte of material says whether it is random as well as all of it.
    let material: String = body
        .split("\\n")
        .flat_map(str::chars)
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/'))
        .take(1024)
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
        && !is_stand_in_password(password, user)
}

fn accept_atlassian_pat(c: &Candidate<'_>) -> bool {
    let token = c.secret();
    let encoded = token.strip_prefix("BBDC-").unwrap_or(token);
    !c.next_byte()
        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        && decode_base64(encoded).is_some_and(|raw| {
            raw.len() == 33
                && raw[..12].iter().all(u8::is_ascii_digit)
                && raw[12] == b':'
                && is_generated_bytes(&raw[13..])
        })
}

/// Whether raw key material varies as random bytes do: 20 random bytes repeat few of their
/// values, a stand-in (`xxxx…`, zeros) repeats one.
fn is_generated_bytes(raw: &[u8]) -> bool {
    let mut seen = [false; 256];
    let distinct = raw
        .iter()
        .filter(|&&b| !std::mem::replace(&mut seen[usize::from(b)], true))
        .count();
    distinct * 2 > raw.len()
}

fn accept_credential(value: &str) -> bool {
    !is_placeholder(value) && !is_code_or_path(value)
}

fn accept_url_password(c: &Candidate<'_>) -> bool {
    let password = c.secret();
    // `host:8080@…` is a port, not a password.
    let port_like = password.len() <= 5 && password.bytes().all(|b| b.is_ascii_digit());
    // `scheme://user:` before the password, the host after it.
    let userinfo = &c.text[c.match_start..c.start];
    let (scheme, user) = userinfo
        .split_once("://")
        .map_or(("", ""), |(scheme, user)| {
            (scheme, user.trim_end_matches(':'))
        });
    let host = c.text[c.end..].strip_prefix('@').map_or("", |rest| {
        let end = rest
            .find(|ch: char| {
                matches!(
                    ch,
                    '/' | ':' | '?' | '#' | '"' | '\'' | '<' | '>' | ')' | '\\' | '`'
                ) || ch.is_whitespace()
            })
            .unwrap_or(rest.len());
        &rest[..end]
    });
    let decoded = structure_decoded(password);
    let bare = decoded.trim_matches(|ch: char| !ch.is_alphanumeric());
    // A password equal to its user is a product's documented default (`guest:guest` for
    // RabbitMQ, `root:root`, `postgres:postgres` in container documentation), one character
    // is a test's stand-in (`http://a:b@host`).
    !port_like
        && password != user
        && decoded != user
        && decoded.chars().count() > 1
        && !is_documented_placeholder(password)
        && !is_documented_placeholder(&decoded)
        && !is_documented_placeholder(bare)
        // `http://foo:bar:baz@host` in a URL parser's tests: stand-ins all through.
        && !password.split([':', '@']).all(is_documented_placeholder)
        && !is_stand_in_password(&decoded, user)
        && !is_test_vector(scheme, user, host, &decoded)
        && !(is_reserved_host(host)
            && (decoded.chars().count() <= 3 || is_plain_word(&decoded) || in_documentation(c)))
}

/// `value` with its percent-escapes decoded (as a URL's userinfo writes `@` or `:`).
fn structure_decoded(value: &str) -> std::borrow::Cow<'_, str> {
    super::structure::percent_decoded(value)
        .map_or(std::borrow::Cow::Borrowed(value), std::borrow::Cow::Owned)
}

/// Whether a URL is a parser's test vector or an anonymous login rather than a service's
/// address: a password that does not look generated on a host of one character or a
/// metasyntactic name (`http://&a:foo(b]c@d:2/`, `https://user:pass[\u007F@foo/bar`), a
/// scheme that reaches no server (`javascript:`, `data:`), or the `anonymous` FTP user, whose
/// password is an email address by convention.
fn is_test_vector(scheme: &str, user: &str, host: &str, password: &str) -> bool {
    const STAND_IN_HOSTS: &[&str] = &[
        "foo", "bar", "baz", "qux", "quux", "host", "hostname", "domain",
    ];
    const NO_SERVER: &[&str] = &["javascript", "data", "file", "about", "blob"];
    let host = host.trim_start_matches('[');
    let stand_in_host =
        host.chars().count() == 1 || STAND_IN_HOSTS.contains(&host.to_ascii_lowercase().as_str());
    (stand_in_host && !looks_random(password))
        || NO_SERVER.iter().any(|s| scheme.eq_ignore_ascii_case(s))
        || user.eq_ignore_ascii_case("anonymous")
        || user.eq_ignore_ascii_case("ftp")
}

/// Whether a host is reserved for documentation, tests or the local machine (RFC 2606 and
/// RFC 6761 names, mDNS's `.local`): `example.com`, `db.example.org`, `yo.local`,
/// `localhost`, `api.test`.
fn is_reserved_host(host: &str) -> bool {
    let host = host.trim_end_matches('.').as_bytes();
    let ends_with = |suffix: &str| {
        host.len() >= suffix.len()
            && host[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
    };
    ["example.com", "example.net", "example.org", "localhost"]
        .iter()
        .any(|name| {
            ends_with(name)
                && (host.len() == name.len() || host[host.len() - name.len() - 1] == b'.')
        })
        || [".example", ".test", ".invalid", ".localhost", ".local"]
            .iter()
            .any(|tld| ends_with(tld))
}

/// Whether a password is one word of one case (`vector`, `invalid`): a stand-in where the
/// host is a documentation or local one.
fn is_plain_word(value: &str) -> bool {
    value.bytes().all(|b| b.is_ascii_lowercase()) || value.bytes().all(|b| b.is_ascii_uppercase())
}

/// Whether the candidate sits in documentation: a comment or doc comment line (`///`, `//`,
/// `#`, ` * `, `--`), a doctest (`>>>`), or a Python docstring (after an odd number of
/// triple quotes).
fn in_documentation(c: &Candidate<'_>) -> bool {
    let line_start = c.text[..c.start].rfind('\n').map_or(0, |i| i + 1);
    let line = c.text[line_start..c.start].trim_start();
    let commented = ["//", "#", "*", "/*", "--", ";", ">>>", "..", "<!--"]
        .iter()
        .any(|marker| line.starts_with(marker))
        && !line.starts_with("#!");
    // Triple quotes are counted over the 16 KiB before the line: a docstring is shorter, and
    // the count stays linear however many candidates a long file holds.
    commented || {
        let mut from = line_start.saturating_sub(16 * 1024);
        while !c.text.is_char_boundary(from) {
            from += 1;
        }
        let before = &c.text[from..line_start];
        (before.matches("\"\"\"").count() + before.matches("\'\'\'").count()) % 2 == 1
    }
}

fn accept_connection_password(c: &Candidate<'_>) -> bool {
    let value = c.secret();
    let decoded = structure_decoded(value);
    if is_documented_placeholder(value)
        || is_documented_placeholder(&decoded)
        || value.chars().count() < 2
        || is_stand_in_password(&decoded, connection_user(c))
        || decoded == connection_user(c)
    {
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

/// The user named beside a connection string's password (`user=`, `username=`, `uid=`,
/// `user id=` on its line), or `""`.
fn connection_user<'t>(c: &Candidate<'t>) -> &'t str {
    let line_start = c.text[..c.match_start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = c.text[c.end..]
        .find('\n')
        .map_or(c.text.len(), |i| c.end + i);
    let line = &c.text[line_start..line_end];
    let lower = line.to_ascii_lowercase();
    for key in ["username=", "user=", "uid=", "user id="] {
        for (i, _) in lower.match_indices(key) {
            let before = lower[..i].chars().next_back();
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == '_') {
                continue;
            }
            let rest = &line[i + key.len()..];
            let end = rest
                .find(|ch: char| matches!(ch, ';' | '&' | '"' | '\'') || ch.is_whitespace())
                .unwrap_or(rest.len());
            return &rest[..end];
        }
    }
    ""
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
    // `${TOKEN:?TOKEN required}`: a shell expansion's message, not a value.
    let before = &c.text[..c.match_start];
    if before.ends_with("${") || before.ends_with("{{") || (c.bare && value.starts_with('?')) {
        return false;
    }
    let key = &c.text[c.match_start..c.start];
    !is_placeholder(value)
        && !is_code_or_path(value)
        && !is_identifier_like(value)
        && !is_words(value)
        && !is_uuid_like(value)
        && !contains_uuid(value)
        && !is_codecov_badge(c)
        && !is_hex_number(value)
        && !has_template_variable(value)
        && !names_a_public_value(key, value)
        && !in_an_arn(c)
        && !encodes_a_stand_in(value)
        && looks_random(value)
}

/// Whether a value is a number written in hex (`0xDECAFBAD`, `0x8004_004A`): at most 16 digits.
fn is_hex_number(value: &str) -> bool {
    value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
        .is_some_and(|digits| {
            (1..=16).contains(&digits.len())
                && digits.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_')
        })
}

/// Whether a value substitutes a variable (`keyword.$0`, `tok_$name`, `${id}`): a template.
fn has_template_variable(value: &str) -> bool {
    value
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1].is_ascii_alphanumeric() || matches!(w[1], b'{' | b'_')))
}

/// Whether the key or the value says the value is published by design: a public or
/// publishable key (`typesense_public_apikey`, Stripe's `pk_…`), or a Datadog browser client
/// token (`pub` and 32 hex digits), which Datadog documents as safe to expose.
fn names_a_public_value(key: &str, value: &str) -> bool {
    key.as_bytes()
        .windows(6)
        .any(|w| w.eq_ignore_ascii_case(b"public"))
        || value.strip_prefix("pub").is_some_and(|hex| {
            hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}

/// Whether the key is a part of an AWS ARN (`arn:aws:secretsmanager:…:secret:name-*`).
fn in_an_arn(c: &Candidate<'_>) -> bool {
    let before = &c.text[..c.match_start];
    let token_start = before
        .rfind(|ch: char| ch.is_whitespace() || matches!(ch, '"' | '\'' | '`' | '(' | '[' | ','))
        .map_or(0, |i| i + 1);
    before[token_start..].starts_with("arn:")
}

/// Whether a value is base64 of a stand-in (`ZXhhbXBsZS1hcHAtc2VjcmV0` is
/// `example-app-secret`, `TUlTU0lORw==` is `MISSING`): text, not key material.
fn encodes_a_stand_in(value: &str) -> bool {
    decode_base64(value)
        .and_then(|raw| String::from_utf8(raw).ok())
        .map(|text| text.trim().to_owned())
        .is_some_and(|text| {
            let printable =
                !text.is_empty() && text.chars().all(|c| c.is_ascii_graphic() || c == ' ');
            // Base64 JSON: a short piece (a JWT's header cut short) is structure, not a key; a
            // whole object may hold one (a JWK's private `d`), so it is judged as a value.
            let json = text.contains('"') && text.contains(':');
            printable
                && if json {
                    text.len() < 48
                } else {
                    is_documented_placeholder(&text)
                        || WEAK_VALUES.contains(&normalize_weak(&text).as_str())
                        || has_placeholder_word(&text)
                        || is_identifier_like(&text)
                }
        })
}

/// Whether a value is words, however spelled: one case all through, parts joined by `-`, `_`
/// or `.` that read as letters (leetspeak read back: `B14CK-L1V35-M4TT4R`) or as a word with
/// a numeral inside (`etcd-cluster-k8s`, `i18n`). Generated tokens mix cases or digits.
fn is_words(value: &str) -> bool {
    let one_case = !value.bytes().any(|b| b.is_ascii_uppercase())
        || !value.bytes().any(|b| b.is_ascii_lowercase());
    let parts = || value.split(['-', '_', '.']).filter(|p| !p.is_empty());
    one_case
        && parts().nth(1).is_some()
        && parts().all(|part| {
            let leet_letters = part.chars().map(read_leet).all(|c| c.is_ascii_alphabetic());
            let digit_runs = part
                .as_bytes()
                .split(|b| !b.is_ascii_digit())
                .filter(|run| !run.is_empty())
                .count();
            part.len() >= 2
                && part.bytes().all(|b| b.is_ascii_alphanumeric())
                && (leet_letters
                    || (digit_runs == 1
                        && part.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())))
        })
}

/// A digit read back as the letter leetspeak writes with it.
fn read_leet(c: char) -> char {
    match c.to_ascii_lowercase() {
        '0' => 'o',
        '1' => 'i',
        '3' => 'e',
        '4' | '@' => 'a',
        '5' | '$' => 's',
        '7' => 't',
        '8' => 'b',
        '9' => 'g',
        c => c,
    }
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
        && !is_percent_encoded_text(value)
        && !is_plain_stand_in_password(value)
        && !encodes_a_stand_in(value)
        // `user:$2y$10$…`: an htpasswd line, a user and a password's hash.
        && !value.split_once(':').is_some_and(|(_, hash)| is_password_hash(hash))
        // `P@ssw0rd1!` is `password` written to pass a complexity check: a demo value.
        && !DOCUMENTED_DUMMIES.contains(&normalize_weak(value).as_str())
        && !has_placeholder_word(value)
        && !is_code_or_path(value)
        && !is_identifier_like(value)
        && !is_password_hash(value)
        && !contains_uuid(value)
        && (char_classes(value) == 4
            || (value.len() >= 12 && looks_random(value))
            || is_made_password(value))
}

/// Whether a value is a password as people make them to pass a policy: ten characters or
/// more with digits and a symbol (`h0pk1ns~21s`, `maple#4821`), and no word that marks a
/// test's stand-in (`test-pass1`, `admin@2024`, `foobar123!`).
fn is_made_password(value: &str) -> bool {
    let symbol = value.bytes().any(|b| b.is_ascii_punctuation());
    let digit = value.bytes().any(|b| b.is_ascii_digit());
    let letter = value.bytes().any(|b| b.is_ascii_alphabetic());
    if value.len() < 10 || !(symbol && digit && letter) {
        return false;
    }
    let read: String = value.chars().map(read_leet).collect();
    !STAND_IN_WORDS.iter().any(|word| read.contains(word))
}

/// Words in a made-up password that mark it as a test's or an example's.
const STAND_IN_WORDS: &[&str] = &[
    "test", "pass", "pwd", "secret", "admin", "user", "demo", "example", "sample", "dummy", "foo",
    "bar", "baz", "changeme", "qwerty", "letmein", "welcome", "hello", "default", "guest", "root",
    "login", "abc", "xyz", "123", "mypw", "fake",
];

/// Keys their vendors publish for everyone to use, which no rule may redact: the Azure Storage
/// emulator's (Azurite) account key, the Azure Cosmos DB emulator's key, and the keys of AWS's
/// documentation (`AKIAIOSFODNN7EXAMPLE`, `…EXAMPLEKEY`).
pub(crate) fn is_published_sample(secret: &str) -> bool {
    const PUBLISHED: &[&str] = &[
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==",
    ];
    secret.ends_with("EXAMPLE")
        || secret.ends_with("EXAMPLEKEY")
        || (secret.len() >= 88
            && (PUBLISHED.contains(&secret)
                || (secret.contains('%')
                    && PUBLISHED.contains(&structure_decoded(secret).as_ref()))))
}

/// Whether a value is text percent-encoded, as URL parsers' tests write it (`%c3%89t%C3%A9`,
/// `%00%01%09…`): two escapes or more. A password typed in a config has none.
fn is_percent_encoded_text(value: &str) -> bool {
    value
        .as_bytes()
        .windows(3)
        .filter(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
        .count()
        >= 2
}

/// Whether a password is a test's or an example's stand-in: it holds `password` or `passwd`
/// (leetspeak read back: `s3cr3tpassw0rd`, `P@ssw0rd`), the word `pass`, `pwd` or `secret`
/// (`uri_pass`, `proxy-pass`), a placeholder word (`example_pass`), or its own user's name
/// (`alice-pw` for alice, `proxy-pass` for proxy-user).
pub(crate) fn is_stand_in_password(password: &str, user: &str) -> bool {
    let read: String = password.chars().map(read_leet).collect();
    stand_in_password(password, &read, user)
}

/// [`is_stand_in_password`] without reading leetspeak back: a password typed into code that
/// spells `password` in leetspeak (`S3cr3tP@ssw0rd!`) has four classes and counts as real.
fn is_plain_stand_in_password(password: &str) -> bool {
    stand_in_password(password, &password.to_ascii_lowercase(), "")
}

fn stand_in_password(password: &str, read: &str, user: &str) -> bool {
    let words = || {
        password
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
    };
    let user = user.to_ascii_lowercase();
    let user_word = user
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() >= 3)
        .unwrap_or("");
    let lower = password.to_ascii_lowercase();
    read.contains("password")
        || read.contains("passwd")
        || words().any(|w| {
            [
                "pass", "pwd", "pw", "secret", "test", "foo", "bar", "baz", "qux",
            ]
            .iter()
            .any(|stand_in| w.eq_ignore_ascii_case(stand_in))
        })
        || has_placeholder_word(password)
        || (!user_word.is_empty() && lower.contains(user_word))
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
    // `config.yaml: |`: a block scalar's indicator; the file below is judged by the other rules.
    let block_scalar = c
        .secret()
        .trim_end_matches(|ch: char| ch.is_ascii_digit())
        .len()
        <= 2
        && c.secret().starts_with(['|', '>']);
    if indent == 0
        || block_scalar
        || is_documented_placeholder(c.secret())
        || encodes_a_stand_in(c.secret())
    {
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

/// Whether a vendor token's characters vary as a generated one's do: no run of one character
/// longer than `max_run`, and at least `min_entropy` bits per byte.
pub(crate) fn is_generated(secret: &str, min_entropy: f64, max_run: usize) -> bool {
    !has_run(secret, max_run + 1) && shannon_entropy(secret) >= min_entropy
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
    static WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| case_blind(PLACEHOLDER_WORDS));
    WORDS.is_match(value)
}

/// One automaton finding any of `literals`, blind to ASCII case: a value is read once for all
/// of them, instead of once per literal.
fn case_blind(literals: &[&str]) -> AhoCorasick {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(literals)
        .expect("literals make an automaton")
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
    "foobar",
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
        || is_upper_snake_name(value)
        || DOCUMENTED_DUMMIES
            .iter()
            .any(|dummy| dummy.eq_ignore_ascii_case(value))
}

/// Whether a value is a name in upper snake case (`DB_PASSWORD`, `PERSONAL_ACCESS_TOKEN`):
/// where documentation names the value to put in, not a value.
fn is_upper_snake_name(value: &str) -> bool {
    value.contains('_')
        && value.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && value.split('_').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        })
}

/// A template or a reference to another value rather than a value.
fn is_reference(value: &str) -> bool {
    is_variable(value)
        || is_format_placeholder(value)
        // Vector's secret references: `SECRET[backend.key]`.
        || value.starts_with("SECRET[")
        || value.contains("${")
        || value.contains("$(")
        || value.contains("{{")
        || value.contains("}}")
        || (value.starts_with('<') && value.ends_with('>'))
        || (value.starts_with('{') && value.ends_with('}'))
        || (value.starts_with('[') && value.ends_with(']'))
}

/// Whether a value is a shell or environment variable: `$PASSWORD`, `$db_pass` (names are
/// written in one case), `%DB_PASSWORD%`. `$ecretP4ss` and `$3cr3t!` are passwords that begin
/// with `$`.
fn is_variable(value: &str) -> bool {
    if let Some(name) = value.strip_prefix('$') {
        let name = name.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        let identifier = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let one_case = !name.bytes().any(|b| b.is_ascii_uppercase())
            || !name.bytes().any(|b| b.is_ascii_lowercase());
        return identifier && one_case;
    }
    value.len() > 2
        && value.starts_with('%')
        && value.ends_with('%')
        && value[1..value.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether a value begins with a format directive (`%s`, `%(password)s`, `%d`) rather than a
/// percent-escape (`%5E3u6…`, a password's first character encoded).
fn is_format_placeholder(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.first() == Some(&b'%')
        && !(bytes.len() >= 3 && bytes[1].is_ascii_hexdigit() && bytes[2].is_ascii_hexdigit())
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
    static MARKERS: LazyLock<AhoCorasick> = LazyLock::new(|| case_blind(PLACEHOLDER_MARKERS));
    if value.is_empty()
        || value.starts_with(['$', '%', '@'])
        || MARKERS.is_match(value)
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
    // `./s390x.prv`, `~/.ssh/id`: relative and home paths; an absolute path needs two
    // components, since base64 may begin with `/`.
    let pathish = ["./", "../", "~/"].iter().any(|p| value.starts_with(p))
        || (value.starts_with('/')
            && value.matches('/').count() >= 2
            && !value.contains(['+', '=']));
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
            "%DB_PASSWORD%",
            "$db_pass",
            "SECRET[backend.db_password]",
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
            "$ecretP4ss",
            "$3cr3t!x",
            "%5E3u6=skPR86OlFy",
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
