//! Sensitive paths: files that hold credentials, refused by `pack add` and skipped when a
//! collection expands over them, unless the user allows them.
//!
//! A [`SensitivePaths`] is an ordered list of glob patterns matched against a file's
//! `/`-separated path relative to the workspace, with gitignore-like rules:
//!
//! - a pattern matches at any depth (`.env` matches `.env` and `app/.env`, `.aws/credentials`
//!   matches `home/.aws/credentials`); a leading `/` anchors it to the workspace root;
//! - a pattern that matches a directory also matches everything under it (`secrets/` or
//!   `deploy/keys` cover the files inside);
//! - `!pattern` allows what it matches again, and the last matching pattern decides, so
//!   configured patterns can remove a default (`!*.pem`) or let one file through
//!   (`!config/dev.key`);
//! - matching ignores ASCII case (`.ENV`, `Server.PEM`), as the file systems of macOS and
//!   Windows do.
//!
//! The defaults ([`DEFAULT_PATTERNS`]) are followed by [`DEFAULT_ALLOWED`]: documentation
//! templates (`.env.example`, `*.sample`) and public halves of key pairs (`*.pub`).

use std::sync::LazyLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Paths that hold credentials, by default.
pub const DEFAULT_PATTERNS: &[&str] = &[
    // Environment files.
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    // Private keys and key stores.
    "*.pem",
    "*.key",
    "*.ppk",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    // Credential files of tools.
    ".aws/credentials",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    ".docker/config.json",
    ".vault-token",
    ".kube/config",
    "kubeconfig",
    "*.kubeconfig",
    // Cloud credentials and secret stores.
    "credentials.json",
    "client_secret*.json",
    "service-account*.json",
    "service_account*.json",
    "secrets.{json,yaml,yml,toml,ini,env,txt,xml,properties,conf,cfg,enc}",
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.backup",
];

/// Paths allowed again after [`DEFAULT_PATTERNS`]: documentation templates and public keys.
pub const DEFAULT_ALLOWED: &[&str] = &[
    "!*.example",
    "!*.sample",
    "!*.template",
    "!*.dist",
    "!*.pub",
];

/// A sensitive-path pattern that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid sensitive-path pattern `{pattern}`: {message}; fix or remove it in `sensitive.extra`"
)]
pub struct SensitivePatternError {
    /// The pattern as configured.
    pub pattern: String,
    /// What is wrong with it.
    pub message: String,
}

/// A compiled, ordered list of sensitive-path patterns.
#[derive(Debug, Clone)]
pub struct SensitivePaths {
    /// The patterns as written (`!` included), in order.
    patterns: Vec<String>,
    /// Whether each pattern allows (`!…`) rather than denies.
    allows: Vec<bool>,
    /// Two globs per pattern (the path itself, and anything under it): glob `i` belongs to
    /// pattern `i / 2`.
    globs: GlobSet,
}

static BUILTIN: LazyLock<SensitivePaths> =
    LazyLock::new(|| SensitivePaths::with_extra(&[]).expect("the built-in patterns compile"));

impl SensitivePaths {
    /// The defaults, compiled once.
    pub fn builtin() -> &'static Self {
        &BUILTIN
    }

    /// The defaults followed by `extra` patterns from config, which win over them: `*.secret`
    /// adds a pattern, `!*.pem` removes one, `!config/dev.key` allows a single file.
    pub fn with_extra(extra: &[String]) -> Result<Self, SensitivePatternError> {
        let patterns: Vec<String> = DEFAULT_PATTERNS
            .iter()
            .chain(DEFAULT_ALLOWED)
            .map(|p| (*p).to_owned())
            .chain(extra.iter().cloned())
            .collect();
        let mut globs = GlobSetBuilder::new();
        let mut allows = Vec::with_capacity(patterns.len());
        for pattern in &patterns {
            let (allow, body) = match pattern.strip_prefix('!') {
                Some(body) => (true, body),
                None => (false, pattern.as_str()),
            };
            let (itself, under) = globs_for(pattern, body)?;
            globs.add(itself);
            globs.add(under);
            allows.push(allow);
        }
        let globs = globs.build().map_err(|err| SensitivePatternError {
            pattern: extra.join(", "),
            message: err.to_string(),
        })?;
        Ok(Self {
            patterns,
            allows,
            globs,
        })
    }

    /// The pattern that makes `rel_path` sensitive, to name in messages; `None` if it is not.
    ///
    /// `rel_path` is `/`-separated and relative to the workspace root (a document id).
    pub fn matches(&self, rel_path: &str) -> Option<&str> {
        let path = rel_path.trim_start_matches("./");
        if !self.globs.is_match(path) {
            return None;
        }
        // The last matching pattern decides; name the first deny after the last allow, the
        // one a reader of the list would point to (`.env` rather than `*.env`).
        let mut deciding = None;
        for pattern in self.globs.matches(path).into_iter().map(|glob| glob / 2) {
            if self.allows[pattern] {
                deciding = None;
            } else if deciding.is_none() {
                deciding = Some(pattern);
            }
        }
        deciding.map(|pattern| self.patterns[pattern].as_str())
    }

    /// The patterns in order, `!` marking those that allow.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// The two globs for a pattern: the path itself and everything under it, at any depth unless
/// the pattern starts with `/`.
fn globs_for(
    pattern: &str,
    body: &str,
) -> Result<(globset::Glob, globset::Glob), SensitivePatternError> {
    let invalid = |message: String| SensitivePatternError {
        pattern: pattern.to_owned(),
        message,
    };
    let anchored = body.starts_with('/');
    let body = body.trim_start_matches('/').trim_end_matches('/');
    if body.is_empty() {
        return Err(invalid("it names no file".to_owned()));
    }
    let base = if anchored {
        body.to_owned()
    } else {
        format!("**/{body}")
    };
    let build = |glob: &str| {
        GlobBuilder::new(glob)
            .literal_separator(true)
            .case_insensitive(true)
            .build()
            .map_err(|err| invalid(err.kind().to_string()))
    };
    Ok((build(&base)?, build(&format!("{base}/**"))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_sensitive_at_any_depth() {
        let sensitive = SensitivePaths::builtin();
        for (path, pattern) in [
            (".env", ".env"),
            (".env.local", ".env.*"),
            ("app/.env.production", ".env.*"),
            ("deploy/prod.env", "*.env"),
            (".envrc", ".envrc"),
            ("certs/server.pem", "*.pem"),
            ("tls.key", "*.key"),
            ("keys/deploy.ppk", "*.ppk"),
            ("home/.ssh/id_rsa", "id_rsa*"),
            ("id_rsa_backup", "id_rsa*"),
            ("id_dsa", "id_dsa*"),
            ("a/id_ecdsa", "id_ecdsa*"),
            ("id_ed25519", "id_ed25519*"),
            ("x/.aws/credentials", ".aws/credentials"),
            (".netrc", ".netrc"),
            ("_netrc", "_netrc"),
            (".npmrc", ".npmrc"),
            ("deploy/.pypirc", ".pypirc"),
            (".pgpass", ".pgpass"),
            ("store.p12", "*.p12"),
            ("cert.pfx", "*.pfx"),
            ("android/release.jks", "*.jks"),
            ("app.keystore", "*.keystore"),
            ("gcp/credentials.json", "credentials.json"),
            (
                "client_secret_1234.apps.googleusercontent.com.json",
                "client_secret*.json",
            ),
            ("service-account-prod.json", "service-account*.json"),
            (
                "config/secrets.yaml",
                "secrets.{json,yaml,yml,toml,ini,env,txt,xml,properties,conf,cfg,enc}",
            ),
            ("prod.tfvars", "*.tfvars"),
            ("infra/terraform.tfstate", "*.tfstate"),
            (".git-credentials", ".git-credentials"),
            ("web/.htpasswd", ".htpasswd"),
            ("me/.docker/config.json", ".docker/config.json"),
            ("me/.kube/config", ".kube/config"),
            ("clusters/kubeconfig", "kubeconfig"),
            ("ci/staging.kubeconfig", "*.kubeconfig"),
        ] {
            assert_eq!(sensitive.matches(path), Some(pattern), "{path}");
        }
    }

    #[test]
    fn look_alikes_are_not_sensitive() {
        let sensitive = SensitivePaths::builtin();
        for path in [
            ".env.example",
            "app/.env.sample",
            ".env.template",
            "config/.env.dist",
            "terraform.tfvars.example",
            "id_rsa.pub",
            "home/.ssh/id_ed25519.pub",
            "src/env.rs",
            "src/environment.rs",
            "keyboard.rs",
            "keys/README.md",
            "docs/secrets-management.md",
            "src/secrets.rs",
            "lib/python3/secrets.py",
            "credentials.rs",
            "environment.json",
            ".aws/config",
            ".ssh/known_hosts",
            "kube/config.yaml",
            "src/key.rs",
            "monkey.txt",
            "pem/README.md",
        ] {
            assert_eq!(sensitive.matches(path), None, "{path}");
        }
    }

    #[test]
    fn matching_ignores_case_and_a_leading_dot_slash() {
        let sensitive = SensitivePaths::builtin();
        assert_eq!(sensitive.matches("Config/.ENV"), Some(".env"));
        assert_eq!(sensitive.matches("certs/Server.PEM"), Some("*.pem"));
        assert_eq!(sensitive.matches("./.env"), Some(".env"));
        assert_eq!(sensitive.matches(".ENV.Example"), None);
    }

    #[test]
    fn extra_patterns_add_to_the_defaults() {
        let sensitive =
            SensitivePaths::with_extra(&["*.secret".into(), "deploy/keys/".into()]).expect("valid");
        assert_eq!(sensitive.matches("a/b.secret"), Some("*.secret"));
        assert_eq!(sensitive.matches("deploy/keys/x.txt"), Some("deploy/keys/"));
        assert_eq!(
            sensitive.matches("srv/deploy/keys/a/b"),
            Some("deploy/keys/")
        );
        assert_eq!(sensitive.matches(".env"), Some(".env"));
        assert_eq!(sensitive.matches("deploy/keys.txt"), None);
    }

    #[test]
    fn a_directory_pattern_covers_its_contents() {
        let sensitive = SensitivePaths::with_extra(&["vault".into()]).expect("valid");
        assert_eq!(sensitive.matches("ops/vault/token.txt"), Some("vault"));
        assert_eq!(sensitive.matches("ops/vault.md"), None);
    }

    #[test]
    fn a_leading_slash_anchors_to_the_root() {
        let sensitive = SensitivePaths::with_extra(&["/private/**".into()]).expect("valid");
        assert_eq!(sensitive.matches("private/notes.md"), Some("/private/**"));
        assert_eq!(sensitive.matches("docs/private/notes.md"), None);
    }

    #[test]
    fn negations_remove_defaults_and_allow_single_files() {
        let sensitive = SensitivePaths::with_extra(&["!*.pem".into(), "!config/dev.key".into()])
            .expect("valid");
        assert_eq!(sensitive.matches("certs/ca.pem"), None);
        assert_eq!(sensitive.matches("config/dev.key"), None);
        assert_eq!(sensitive.matches("config/prod.key"), Some("*.key"));
        // The last matching pattern decides: a later deny wins over an earlier allow.
        let sensitive = SensitivePaths::with_extra(&["*.pub".into()]).expect("valid");
        assert_eq!(sensitive.matches("id_rsa.pub"), Some("*.pub"));
    }

    #[test]
    fn bad_patterns_are_refused_with_their_text() {
        let err = SensitivePaths::with_extra(&["[".into()]).expect_err("unclosed class");
        assert_eq!(err.pattern, "[");
        assert!(err.to_string().contains("`[`"), "{err}");
        assert!(err.to_string().contains("sensitive.extra"), "{err}");
        for empty in ["", "!", "/", "!/"] {
            let err = SensitivePaths::with_extra(&[empty.into()]).expect_err("names nothing");
            assert_eq!(err.pattern, empty);
        }
    }

    #[test]
    fn patterns_are_listed_in_order() {
        let sensitive = SensitivePaths::with_extra(&["*.secret".into()]).expect("valid");
        let patterns = sensitive.patterns();
        assert_eq!(patterns.first().map(String::as_str), Some(".env"));
        assert_eq!(patterns.last().map(String::as_str), Some("*.secret"));
        assert_eq!(
            patterns.len(),
            DEFAULT_PATTERNS.len() + DEFAULT_ALLOWED.len() + 1
        );
    }
}
