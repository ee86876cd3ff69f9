//! What part a file plays in a project, read from its path: the code a task edits, or
//! context around it (tests, fixtures, examples, docs, changelogs, translations, vendored
//! or generated code, lockfiles). Selection ranks context files below code unless the query
//! is about them, and says so in the file's reasons.

use serde::{Deserialize, Serialize};

/// The part a file plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Code or configuration a task may change.
    Source,
    /// Tests, test helpers and test data.
    Test,
    /// Examples, samples, demos, benchmarks.
    Example,
    /// Documentation and prose (`docs/`, `*.md`, `*.rst`).
    Docs,
    /// Changelogs and release notes.
    Changelog,
    /// Message catalogs (`locale/`, `*.po`).
    Translation,
    /// Third-party code kept in the tree (`vendor/`, `third_party/`, `node_modules/`).
    Vendored,
    /// Generated or minified files and lockfiles.
    Generated,
}

impl Role {
    /// The lowercase name used in reasons.
    pub fn name(self) -> &'static str {
        match self {
            Self::Source => "source",
            Self::Test => "test",
            Self::Example => "example",
            Self::Docs => "docs",
            Self::Changelog => "changelog",
            Self::Translation => "translation",
            Self::Vendored => "vendored",
            Self::Generated => "generated",
        }
    }

    /// Whether files of this role are context rather than an answer by default.
    pub fn is_context(self) -> bool {
        self != Self::Source
    }
}

const VENDOR_DIRS: &[&str] = &[
    "vendor",
    "vendored",
    "_vendor",
    "third_party",
    "third-party",
    "thirdparty",
    "node_modules",
    "bower_components",
    "site-packages",
    "dist-packages",
    "external",
    "extern",
];
const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "test_data",
    "fixtures",
    "__fixtures__",
    "__mocks__",
    "e2e",
];
const EXAMPLE_DIRS: &[&str] = &[
    "example",
    "examples",
    "sample",
    "samples",
    "demo",
    "demos",
    "benches",
    "bench",
    "benchmarks",
    "benchmark",
];
const DOC_DIRS: &[&str] = &["doc", "docs", "documentation", "man"];
const LOCKFILES: &[&str] = &[
    "cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "pipfile.lock",
    "gemfile.lock",
    "composer.lock",
    "go.sum",
    "uv.lock",
    "npm-shrinkwrap.json",
];

/// Manifests: what a project is and how it builds (names lower cased).
pub const MANIFESTS: &[&str] = &[
    "cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "gemfile",
    "composer.json",
    "cmakelists.txt",
    "makefile",
    "meson.build",
    "mix.exs",
    "deno.json",
    "tsconfig.json",
];

/// Whether `id` names a manifest ([`MANIFESTS`]) or a lockfile: files every change to
/// dependencies touches, so their commit history says nothing about a task.
pub fn is_manifest_or_lockfile(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    MANIFESTS.contains(&name)
        || LOCKFILES.contains(&name)
        || ext == "lock"
        || (name.starts_with("requirements") && ext == "txt")
}

/// The role of the file at `id` (a `/`-separated path relative to the workspace).
pub fn role(id: &str) -> Role {
    let lower = id.to_ascii_lowercase();
    let (dirs, name) = lower.rsplit_once('/').unwrap_or(("", lower.as_str()));
    let dirs: Vec<&str> = if dirs.is_empty() {
        Vec::new()
    } else {
        dirs.split('/').collect()
    };
    let stem = name.split('.').next().unwrap_or(name);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    // Vendored first: a vendored package's tests are still vendored. A `packages/` directory
    // below the top (`requests/packages/urllib3`) is a Python vendoring idiom; at the top it
    // is a monorepo's own code.
    if dirs.iter().any(|d| VENDOR_DIRS.contains(d)) || dirs.iter().skip(1).any(|d| *d == "packages")
    {
        return Role::Vendored;
    }
    if LOCKFILES.contains(&name)
        || ext == "lock"
        || name.contains(".min.")
        || ext == "map"
        || name.ends_with(".pb.go")
        || name.ends_with("_pb2.py")
        || name.ends_with(".generated.ts")
        || dirs
            .iter()
            .any(|d| *d == "generated" || *d == "__generated__" || *d == "dist")
    {
        return Role::Generated;
    }
    if dirs.iter().any(|d| TEST_DIRS.contains(d))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem == "conftest"
        || stem == "tests"
        || name.contains(".test.")
        || name.contains(".spec.")
        || (ext == "java" && stem.ends_with("test"))
    {
        return Role::Test;
    }
    if ext == "po" || ext == "mo" || ext == "pot" || dirs.contains(&"locale") {
        return Role::Translation;
    }
    if stem == "changelog"
        || stem == "changes"
        || stem == "history"
        || stem == "news"
        || stem == "releases"
        || dirs.contains(&"releases") && dirs.iter().any(|d| DOC_DIRS.contains(d))
        || dirs.contains(&"changelog")
        || dirs.contains(&"changes")
    {
        return Role::Changelog;
    }
    if dirs.iter().any(|d| EXAMPLE_DIRS.contains(d)) {
        return Role::Example;
    }
    if dirs.iter().any(|d| DOC_DIRS.contains(d))
        || matches!(ext, "md" | "rst" | "adoc" | "markdown")
        || (ext == "txt" && !dirs.is_empty() && stem != "requirements")
    {
        return Role::Docs;
    }
    Role::Source
}

/// The roles a query asks about by name ("the tests for …", "update the docs", a path
/// inside a vendored tree): files of those roles are not ranked as context for it.
pub fn roles_wanted(query_lower: &str, mentioned: &[Role]) -> Vec<Role> {
    let words: Vec<&str> = query_lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
    let mut out: Vec<Role> = mentioned.to_vec();
    // A question ("how are invoices sent?") may be answered by prose; a task ("fix the
    // parser") by code.
    let question = query_lower.trim_end().ends_with('?')
        || words.first().is_some_and(|w| {
            [
                "how", "what", "where", "why", "which", "who", "when", "is", "are", "does", "do",
                "can",
            ]
            .contains(w)
        });
    if question {
        out.extend([Role::Docs, Role::Example]);
    }
    if has(&[
        "test", "tests", "testing", "testcase", "unittest", "pytest", "spec", "specs", "fixture",
        "fixtures", "flaky",
    ]) {
        out.push(Role::Test);
    }
    if has(&[
        "example",
        "examples",
        "sample",
        "samples",
        "demo",
        "benchmark",
    ]) {
        out.push(Role::Example);
    }
    if has(&[
        "doc",
        "docs",
        "documentation",
        "readme",
        "docstring",
        "docstrings",
        "tutorial",
        "guide",
    ]) {
        out.push(Role::Docs);
    }
    if has(&["changelog", "changelogs", "release", "releases", "news"]) {
        out.push(Role::Changelog);
    }
    if has(&[
        "translation",
        "translations",
        "locale",
        "locales",
        "i18n",
        "gettext",
    ]) {
        out.push(Role::Translation);
    }
    if has(&["vendor", "vendored", "vendoring", "third", "upstream"]) {
        out.push(Role::Vendored);
    }
    if has(&["lockfile", "lock", "generated", "minified", "codegen"]) {
        out.push(Role::Generated);
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_from_paths() {
        assert_eq!(role("src/flask/json/__init__.py"), Role::Source);
        assert_eq!(role("tests/test_json.py"), Role::Test);
        assert_eq!(role("tests/static/config.json"), Role::Test);
        assert_eq!(role("django/test/utils.py"), Role::Test);
        assert_eq!(role("pkg/walk_test.go"), Role::Test);
        assert_eq!(role("web/app.spec.ts"), Role::Test);
        assert_eq!(
            role("requests/packages/urllib3/packages/six.py"),
            Role::Vendored
        );
        assert_eq!(role("packages/core/src/index.ts"), Role::Source);
        assert_eq!(role("vendor/github.com/x/y.go"), Role::Vendored);
        assert_eq!(role("static/js/jquery.min.js"), Role::Generated);
        assert_eq!(role("Cargo.lock"), Role::Generated);
        assert_eq!(role("docs/config.rst"), Role::Docs);
        assert_eq!(role("README.md"), Role::Docs);
        assert_eq!(role("CHANGES.rst"), Role::Changelog);
        assert_eq!(role("docs/releases/4.2.txt"), Role::Changelog);
        assert_eq!(
            role("django/conf/locale/de/LC_MESSAGES/django.po"),
            Role::Translation
        );
        assert_eq!(role("examples/tutorial/app.py"), Role::Example);
        assert_eq!(role("requirements.txt"), Role::Source);
    }

    #[test]
    fn queries_ask_for_roles() {
        assert_eq!(
            roles_wanted("fix the flaky test in walk", &[]),
            [Role::Test]
        );
        assert!(roles_wanted("add a config option", &[]).is_empty());
        assert_eq!(
            roles_wanted("how do I install it", &[]),
            [Role::Example, Role::Docs]
        );
        assert_eq!(
            roles_wanted("update the docs", &[Role::Vendored]),
            [Role::Docs, Role::Vendored]
        );
    }
}
