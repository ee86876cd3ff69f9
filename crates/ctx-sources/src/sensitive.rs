//! Sensitive paths: files that hold credentials and are refused or skipped unless allowed.

use std::sync::LazyLock;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Patterns that mark a file as sensitive, matched against its `/`-separated relative path at
/// any depth (a pattern without `/` matches the file name).
pub const DEFAULT_PATTERNS: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".aws/credentials",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "credentials.json",
    "secrets.*",
    "*.tfvars",
    ".git-credentials",
    ".htpasswd",
    "service-account*.json",
    ".kube/config",
];

/// Names that look sensitive but are documentation or public halves of key pairs.
const ALLOWED: &[&str] = &[
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.dist",
    "*.pub",
];

/// A compiled denylist.
#[derive(Debug, Clone)]
pub struct SensitivePaths {
    patterns: Vec<String>,
    set: GlobSet,
    allowed: GlobSet,
}

/// A pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid sensitive-path pattern `{pattern}`: {message}; fix `sensitive.extra` in your config"
)]
pub struct SensitivePatternError {
    pub pattern: String,
    pub message: String,
}

fn compile(pattern: &str) -> Result<Glob, SensitivePatternError> {
    // Anchored at any depth: `.env` matches `a/b/.env`, `.aws/credentials` matches `~/.aws/credentials`.
    GlobBuilder::new(&format!("**/{pattern}"))
        .literal_separator(true)
        .build()
        .map_err(|e| SensitivePatternError {
            pattern: pattern.to_owned(),
            message: e.to_string(),
        })
}

static BUILTIN: LazyLock<SensitivePaths> =
    LazyLock::new(|| SensitivePaths::with_extra(&[]).expect("built-in patterns compile"));

impl SensitivePaths {
    /// The default denylist.
    pub fn builtin() -> &'static Self {
        &BUILTIN
    }

    /// The default denylist plus `extra` patterns (same syntax).
    pub fn with_extra(extra: &[String]) -> Result<Self, SensitivePatternError> {
        let mut patterns: Vec<String> = DEFAULT_PATTERNS.iter().map(|p| (*p).to_owned()).collect();
        patterns.extend(extra.iter().cloned());
        let mut set = GlobSetBuilder::new();
        for pattern in &patterns {
            set.add(compile(pattern)?);
        }
        let mut allowed = GlobSetBuilder::new();
        for pattern in ALLOWED {
            allowed.add(compile(pattern)?);
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|e| SensitivePatternError {
                pattern: String::new(),
                message: e.to_string(),
            })
        };
        Ok(Self {
            patterns,
            set: build(set)?,
            allowed: build(allowed)?,
        })
    }

    /// The pattern `rel_path` matches, if it is sensitive.
    pub fn matches(&self, rel_path: &str) -> Option<&str> {
        if self.allowed.is_match(rel_path) {
            return None;
        }
        self.set
            .matches(rel_path)
            .first()
            .map(|&i| self.patterns[i].as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_sensitive_at_any_depth() {
        let s = SensitivePaths::builtin();
        for path in [
            ".env",
            ".env.local",
            "app/.env.production",
            "certs/server.pem",
            "tls.key",
            "home/.ssh/id_rsa",
            "id_ed25519",
            "x/.aws/credentials",
            ".netrc",
            ".npmrc",
            "deploy/.pypirc",
            "store.p12",
            "cert.pfx",
            "gcp/credentials.json",
            "config/secrets.yaml",
            "prod.tfvars",
            "service-account-prod.json",
            "me/.kube/config",
        ] {
            assert!(s.matches(path).is_some(), "{path} should be sensitive");
        }
    }

    #[test]
    fn look_alikes_are_not() {
        let s = SensitivePaths::builtin();
        for path in [
            ".env.example",
            "app/.env.sample",
            "id_rsa.pub",
            "src/env.rs",
            "keyboard.rs",
            "docs/secrets-management.md",
            "keys/README.md",
            "credentials.rs",
            "environment.json",
        ] {
            assert_eq!(s.matches(path), None, "{path} should not be sensitive");
        }
    }

    #[test]
    fn extra_patterns_add_to_the_defaults() {
        let s = SensitivePaths::with_extra(&["*.secret".into(), "deploy/keys/**".into()])
            .expect("valid");
        assert_eq!(s.matches("a/b.secret"), Some("*.secret"));
        assert_eq!(s.matches("deploy/keys/x.txt"), Some("deploy/keys/**"));
        assert!(s.matches(".env").is_some());
        assert!(SensitivePaths::with_extra(&["[".into()]).is_err());
    }
}
