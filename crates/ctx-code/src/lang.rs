//! The languages ctx understands, detected from file names, with their tree-sitter grammars.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A language with a tree-sitter grammar compiled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    C,
    Cpp,
}

/// Every supported language, in a fixed order.
pub const LANGUAGES: &[Language] = &[
    Language::Rust,
    Language::Python,
    Language::JavaScript,
    Language::TypeScript,
    Language::Tsx,
    Language::Go,
    Language::Java,
    Language::C,
    Language::Cpp,
];

/// Bumped whenever extraction changes what it produces for the same bytes, so cached
/// summaries made by an older ctx are not reused. (6: signatures and doc comments are
/// stored redacted.)
pub const EXTRACTOR_VERSION: u32 = 6;

impl Language {
    /// The language of a file, from its extension (or name); `None` when unsupported.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        Self::from_extension(ext)
    }

    /// The language of a file from its name and contents: a `.h` header that uses C++
    /// (`class`, `namespace`, `template`, `::`) is C++.
    pub fn detect(path: &Path, bytes: &[u8]) -> Option<Self> {
        let lang = Self::from_path(path)?;
        if lang == Self::C && path.extension().is_some_and(|e| e == "h") {
            let finder = |needle: &str| memchr::memmem::find(bytes, needle.as_bytes()).is_some();
            if finder("namespace ")
                || finder("class ")
                || finder("template<")
                || finder("template <")
                || finder("::")
            {
                return Some(Self::Cpp);
            }
        }
        Some(lang)
    }

    /// The language of a file extension (without the dot).
    pub fn from_extension(ext: &str) -> Option<Self> {
        Some(match ext {
            "rs" => Self::Rust,
            "py" | "pyi" | "pyw" => Self::Python,
            "js" | "mjs" | "cjs" | "jsx" => Self::JavaScript,
            "ts" | "mts" | "cts" => Self::TypeScript,
            "tsx" => Self::Tsx,
            "go" => Self::Go,
            "java" => Self::Java,
            "c" | "h" => Self::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" | "tpp" | "inl" => {
                Self::Cpp
            }
            _ => return None,
        })
    }

    /// The name used in output (`rust`, `typescript`, `tsx`, `cpp`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::JavaScript => "javascript",
            Self::TypeScript => "typescript",
            Self::Tsx => "tsx",
            Self::Go => "go",
            Self::Java => "java",
            Self::C => "c",
            Self::Cpp => "cpp",
        }
    }

    /// Parses a name as printed by [`Language::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        LANGUAGES.iter().copied().find(|l| l.name() == name)
    }

    /// The tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Self::Rust => tree_sitter_rust::LANGUAGE.into(),
            Self::Python => tree_sitter_python::LANGUAGE.into(),
            Self::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Self::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Self::Go => tree_sitter_go::LANGUAGE.into(),
            Self::Java => tree_sitter_java::LANGUAGE.into(),
            Self::C => tree_sitter_c::LANGUAGE.into(),
            Self::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }

    /// The cache key part that changes when the grammar or the extractor changes: the
    /// language, the grammar's ABI version and [`EXTRACTOR_VERSION`].
    ///
    /// It names the built-in redaction rules too (`r` and the start of their fingerprint):
    /// signatures and doc comments are stored redacted, so a summary made under other rules
    /// is made again rather than trusted, and answers need not redact them a second time.
    pub fn extractor_key(self) -> String {
        format!(
            "{}:abi{}:x{EXTRACTOR_VERSION}:r{}",
            self.name(),
            self.grammar().abi_version(),
            redaction_tag()
        )
    }

    /// The separator between a scope and a member name (`Foo::bar` or `Foo.bar`).
    pub fn scope_separator(self) -> &'static str {
        match self {
            Self::Rust | Self::Cpp => "::",
            _ => ".",
        }
    }

    /// Whether the language uses C-style `{ … }` bodies (everything but Python).
    pub fn has_braces(self) -> bool {
        self != Self::Python
    }
}

/// A project type guessed from manifest files in a directory (`rust`, `python`, …). When
/// manifests of several types are there (a Python project with a `package.json` for its
/// JavaScript tests), the type with the most source files near the top of the tree wins
/// ([`count_sources`]); a tie goes to the first in the order below.
pub fn detect_project_type(dir: &Path) -> Option<&'static str> {
    let has = |name: &str| dir.join(name).exists();
    let mut found: Vec<&'static str> = Vec::new();
    if has("Cargo.toml") {
        found.push("rust");
    }
    if has("go.mod") {
        found.push("go");
    }
    if has("package.json") {
        found.push(if has("tsconfig.json") {
            "typescript"
        } else {
            "javascript"
        });
    }
    if has("pyproject.toml") || has("setup.py") || has("requirements.txt") {
        found.push("python");
    }
    if has("pom.xml") || has("build.gradle") || has("build.gradle.kts") {
        found.push("java");
    }
    if has("CMakeLists.txt") || has("meson.build") || has("Makefile") {
        found.push("c/c++");
    }
    if found.len() <= 1 {
        return found.first().copied();
    }
    let counts = count_sources(dir);
    let files = |kind: &str| -> usize {
        let extensions: &[&str] = match kind {
            "rust" => &["rs"],
            "go" => &["go"],
            "typescript" => &["ts", "tsx", "js", "jsx", "mjs", "cjs"],
            "javascript" => &["js", "jsx", "mjs", "cjs"],
            "python" => &["py"],
            "java" => &["java", "kt"],
            _ => &["c", "h", "cc", "cpp", "hpp", "cxx"],
        };
        extensions
            .iter()
            .map(|e| counts.get(*e).copied().unwrap_or(0))
            .sum()
    };
    // The first of the most (max_by_key keeps the last of equals, so walk in reverse).
    found.iter().rev().copied().max_by_key(|kind| files(kind))
}

/// Files per extension in the first three levels of `dir`, walked as every other listing is
/// (`ctx_fs::walk`: gitignore rules, dependency and build directories skipped, one thread):
/// enough to tell a project's language, cheap enough for a hook.
fn count_sources(dir: &Path) -> std::collections::HashMap<String, usize> {
    let options = ctx_fs::WalkOptions {
        max_depth: Some(3),
        threads: 1,
        metadata: false,
        ..ctx_fs::WalkOptions::default()
    };
    let mut counts = std::collections::HashMap::new();
    for entry in ctx_fs::walk(dir, &options).unwrap_or_default() {
        let name = entry.rel.rsplit('/').next().unwrap_or(&entry.rel);
        if let Some((_, ext)) = name.rsplit_once('.') {
            *counts.entry(ext.to_ascii_lowercase()).or_insert(0) += 1;
        }
    }
    counts
}

/// The first 12 hex digits of the built-in redaction rules' fingerprint (computed once).
fn redaction_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let fingerprint = ctx_core::redact::Redactor::builtin().fingerprint();
        let hex = fingerprint.rsplit(':').next().unwrap_or_default();
        hex.get(..12).unwrap_or(hex).to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_type_with_the_most_sources_wins_between_manifests() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let write = |path: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, "x").expect("write");
        };
        write("package.json");
        assert_eq!(detect_project_type(root), Some("javascript"));
        // A Python project with a package.json for its JavaScript tests (Django's layout).
        write("setup.py");
        for f in [
            "pkg/__init__.py",
            "pkg/a.py",
            "pkg/sub/b.py",
            "tests/test_a.py",
        ] {
            write(f);
        }
        write("js_tests/admin/x.js");
        for f in [
            "node_modules/m/a.js",
            "node_modules/m/b.js",
            "node_modules/m/c.js",
        ] {
            write(f);
        }
        assert_eq!(detect_project_type(root), Some("python"));
        // A tie goes to the first in order (Rust before the others).
        let tie = tempfile::tempdir().expect("tempdir");
        std::fs::write(tie.path().join("Cargo.toml"), "").expect("write");
        std::fs::write(tie.path().join("pyproject.toml"), "").expect("write");
        assert_eq!(detect_project_type(tie.path()), Some("rust"));
    }

    #[test]
    fn extensions_map_to_languages_and_every_grammar_loads() {
        assert_eq!(
            Language::from_path(Path::new("a/b.rs")),
            Some(Language::Rust)
        );
        assert_eq!(Language::from_path(Path::new("x.tsx")), Some(Language::Tsx));
        assert_eq!(Language::from_path(Path::new("x.hpp")), Some(Language::Cpp));
        assert_eq!(Language::from_path(Path::new("x.h")), Some(Language::C));
        assert_eq!(Language::from_path(Path::new("README")), None);
        assert_eq!(Language::from_path(Path::new("x.rb")), None);
        let h = Path::new("a.h");
        assert_eq!(Language::detect(h, b"int f(void);"), Some(Language::C));
        assert_eq!(
            Language::detect(h, b"namespace a { class B {}; }"),
            Some(Language::Cpp)
        );
        for &lang in LANGUAGES {
            let mut parser = crate::symbols::new_parser();
            parser.set_language(&lang.grammar()).expect("grammar loads");
            assert_eq!(Language::from_name(lang.name()), Some(lang));
        }
    }
}
