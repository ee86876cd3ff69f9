//! Related files: imports resolved to files in the repository, files importing a file, test
//! files by naming convention, and (with git) files changed in the same commits.
//!
//! Resolution works from the import statements in [`FileSummary::imports`], so a warm summary
//! cache makes `related` parse nothing:
//! - Rust: `mod x;`, `use crate::…`, `use self::…`, `use super::…`, and `use other_crate::…`
//!   for crates of the same workspace (names from their `Cargo.toml`);
//! - Python: absolute imports (from the root and from `src/`) and relative imports;
//! - JavaScript and TypeScript: relative specifiers, extensions and `index` files;
//! - Go: package import paths under a `go.mod` module, resolved to the package directory;
//! - Java: class imports by package path;
//! - C and C++: quoted includes (then angle includes that name a file of the repository).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::lang::Language;
use crate::summary::FileSummary;

/// A related file and why it is related.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelatedFile {
    pub path: String,
    pub reason: String,
}

/// Everything related to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Related {
    pub source: String,
    pub imports: Vec<RelatedFile>,
    pub imported_by: Vec<RelatedFile>,
    pub co_changed: Vec<RelatedFile>,
    pub test_files: Vec<RelatedFile>,
}

/// The repository facts resolution needs besides the file list.
#[derive(Debug, Clone, Default)]
pub struct ProjectLayout {
    /// Every file path in the repository (relative, `/`-separated).
    pub files: BTreeSet<String>,
    /// Go modules: module path → directory (`""` for the root).
    pub go_modules: BTreeMap<String, String>,
    /// Rust crates: crate name (with `_`) → crate directory (`""` for the root).
    pub rust_crates: BTreeMap<String, String>,
}

impl ProjectLayout {
    /// Reads `go.mod` module lines and `Cargo.toml` package names with `read`, which gets a
    /// relative path and returns the file's text.
    pub fn new(files: BTreeSet<String>, read: impl Fn(&str) -> Option<String>) -> Self {
        let mut go_modules = BTreeMap::new();
        let mut rust_crates = BTreeMap::new();
        for path in &files {
            let (dir, name) = split_dir(path);
            if name == "go.mod"
                && let Some(text) = read(path)
                && let Some(module) = text.lines().find_map(|l| l.trim().strip_prefix("module "))
            {
                go_modules.insert(module.trim().trim_matches('"').to_owned(), dir.to_owned());
            }
            if name == "Cargo.toml"
                && let Some(text) = read(path)
                && let Some(crate_name) = cargo_package_name(&text)
            {
                rust_crates.insert(crate_name.replace('-', "_"), dir.to_owned());
            }
        }
        Self {
            files,
            go_modules,
            rust_crates,
        }
    }

    fn has(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    fn first_existing(&self, candidates: impl IntoIterator<Item = String>) -> Option<String> {
        candidates.into_iter().find(|c| self.has(c))
    }

    fn has_dir(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|p| p.starts_with(&prefix))
    }
}

fn cargo_package_name(text: &str) -> Option<String> {
    let mut in_package = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if in_package
            && let Some(rest) = line.strip_prefix("name")
            && let Some(value) = rest.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').to_owned());
        }
    }
    None
}

/// `("a/b", "c.rs")` for `a/b/c.rs`, `("", "c.rs")` for `c.rs`.
fn split_dir(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() {
        rest.to_owned()
    } else if rest.is_empty() {
        dir.to_owned()
    } else {
        format!("{dir}/{rest}")
    }
}

/// Lexically normalizes `a/./b/../c` to `a/c`; `None` if it leaves the root.
fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// The files (or, for Go, package directories) a file's imports resolve to, with the import
/// statement that names each; first mention wins, in import order.
pub fn resolve_imports(file: &FileSummary, layout: &ProjectLayout) -> Vec<RelatedFile> {
    let mut out: Vec<RelatedFile> = Vec::new();
    let mut seen = BTreeSet::new();
    for statement in &file.imports {
        for target in resolve_statement(file, statement, layout) {
            if target != file.path && seen.insert(target.clone()) {
                out.push(RelatedFile {
                    path: target,
                    reason: statement.clone(),
                });
            }
        }
    }
    out
}

fn resolve_statement(file: &FileSummary, statement: &str, layout: &ProjectLayout) -> Vec<String> {
    match file.language {
        Language::Rust => resolve_rust(&file.path, statement, layout),
        Language::Python => resolve_python(&file.path, statement, layout),
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            resolve_js(&file.path, statement, layout)
                .into_iter()
                .collect()
        }
        Language::Go => resolve_go(statement, layout).into_iter().collect(),
        Language::Java => resolve_java(statement, layout).into_iter().collect(),
        Language::C | Language::Cpp => resolve_include(&file.path, statement, layout)
            .into_iter()
            .collect(),
    }
}

// --- Rust -----------------------------------------------------------------------------

/// The crate `src` directory and the module path of a Rust file.
fn rust_module(path: &str, layout: &ProjectLayout) -> Option<(String, Vec<String>)> {
    // The nearest ancestor directory named `src` whose parent has a Cargo.toml, else the
    // nearest `src` directory, else the file's directory.
    let parts: Vec<&str> = path.split('/').collect();
    let mut src_index = None;
    for i in (0..parts.len().saturating_sub(1)).rev() {
        if parts[i] == "src" {
            let crate_dir = parts[..i].join("/");
            if layout.has(&join(&crate_dir, "Cargo.toml")) || src_index.is_none() {
                src_index = Some(i);
                if layout.has(&join(&crate_dir, "Cargo.toml")) {
                    break;
                }
            }
        }
    }
    let i = src_index?;
    let src_dir = parts[..=i].join("/");
    let mut module: Vec<String> = parts[i + 1..].iter().map(|s| (*s).to_owned()).collect();
    let last = module.pop()?;
    let stem = last.strip_suffix(".rs")?;
    let is_root = module.is_empty() && matches!(stem, "lib" | "main");
    if !is_root && stem != "mod" {
        module.push(stem.to_owned());
    }
    Some((src_dir, module))
}

/// `src/a/b.rs` or `src/a/b/mod.rs` for the longest prefix of `segments` that is a file.
fn rust_module_file(src_dir: &str, segments: &[String], layout: &ProjectLayout) -> Option<String> {
    for len in (1..=segments.len()).rev() {
        let rel = segments[..len].join("/");
        if let Some(found) = layout.first_existing([
            join(src_dir, &format!("{rel}.rs")),
            join(src_dir, &format!("{rel}/mod.rs")),
        ]) {
            return Some(found);
        }
    }
    None
}

/// Expands a use tree: `a::{b, c::{d as e, self}}` → `a::b`, `a::c::d`, `a::c`.
fn expand_use_tree(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let prefix = tree[..open].trim().trim_end_matches("::");
        let inner = tree[open + 1..]
            .trim_end()
            .strip_suffix('}')
            .unwrap_or(&tree[open + 1..]);
        let mut out = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        let bytes = inner.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                b',' if depth == 0 => {
                    out.extend(
                        expand_use_tree(&inner[start..i])
                            .into_iter()
                            .map(|s| join_use(prefix, &s)),
                    );
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.extend(
            expand_use_tree(&inner[start..])
                .into_iter()
                .map(|s| join_use(prefix, &s)),
        );
        return out;
    }
    let path = tree.split(" as ").next().unwrap_or(tree).trim();
    let path = path.trim_end_matches("::*").trim_end_matches('*');
    if path.is_empty() {
        Vec::new()
    } else {
        vec![path.to_owned()]
    }
}

fn join_use(prefix: &str, rest: &str) -> String {
    if rest == "self" {
        prefix.to_owned()
    } else if prefix.is_empty() {
        rest.to_owned()
    } else {
        format!("{prefix}::{rest}")
    }
}

fn resolve_rust(path: &str, statement: &str, layout: &ProjectLayout) -> Vec<String> {
    let Some((src_dir, module)) = rust_module(path, layout) else {
        return Vec::new();
    };
    let text = statement.trim().trim_end_matches(';');
    let text = text
        .strip_prefix("pub ")
        .or_else(|| {
            text.strip_prefix("pub(")
                .and_then(|r| r.split_once(')'))
                .map(|(_, rest)| rest.trim_start())
        })
        .unwrap_or(text);
    if let Some(name) = text.strip_prefix("mod ") {
        let name = name.trim();
        let dir = if module.is_empty() {
            src_dir.clone()
        } else {
            join(&src_dir, &module.join("/"))
        };
        // `mod x;` in a non-mod.rs file `a.rs` looks in `a/`; in lib/main/mod.rs, beside it.
        return layout
            .first_existing([
                join(&dir, &format!("{name}.rs")),
                join(&dir, &format!("{name}/mod.rs")),
            ])
            .into_iter()
            .collect();
    }
    let Some(tree) = text.strip_prefix("use ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for use_path in expand_use_tree(tree) {
        let segments: Vec<String> = use_path.split("::").map(|s| s.trim().to_owned()).collect();
        let Some(first) = segments.first() else {
            continue;
        };
        let (base_src, rest): (String, Vec<String>) = match first.as_str() {
            "crate" => (src_dir.clone(), segments[1..].to_vec()),
            "self" => (
                src_dir.clone(),
                module
                    .iter()
                    .cloned()
                    .chain(segments[1..].iter().cloned())
                    .collect(),
            ),
            "super" => {
                let mut m = module.clone();
                let mut rest = &segments[..];
                while rest.first().is_some_and(|s| s == "super") {
                    m.pop();
                    rest = &rest[1..];
                }
                (
                    src_dir.clone(),
                    m.into_iter().chain(rest.iter().cloned()).collect(),
                )
            }
            name => match layout.rust_crates.get(name) {
                Some(crate_dir) => (join(crate_dir, "src"), segments[1..].to_vec()),
                None => continue,
            },
        };
        let found = if rest.is_empty() {
            layout.first_existing([join(&base_src, "lib.rs"), join(&base_src, "main.rs")])
        } else {
            rust_module_file(&base_src, &rest, layout).or_else(|| {
                // `use other_crate::Item` where Item lives in lib.rs.
                (first != "crate" && first != "self" && first != "super")
                    .then(|| layout.first_existing([join(&base_src, "lib.rs")]))
                    .flatten()
            })
        };
        out.extend(found);
    }
    out
}

// --- Python ---------------------------------------------------------------------------

fn python_module_file(base: &str, module: &str, layout: &ProjectLayout) -> Option<String> {
    let rel = module.replace('.', "/");
    let stem = join(base, &rel);
    layout.first_existing([
        format!("{stem}.py"),
        format!("{stem}.pyi"),
        join(&stem, "__init__.py"),
    ])
}

fn resolve_python(path: &str, statement: &str, layout: &ProjectLayout) -> Vec<String> {
    let (dir, _) = split_dir(path);
    let roots = ["", "src", "lib"];
    let statement = crate::symbols::collapse_whitespace(statement);
    let mut out = Vec::new();
    if let Some(rest) = statement.strip_prefix("import ") {
        for part in rest.split(',') {
            let module = part.split(" as ").next().unwrap_or("").trim();
            if let Some(found) = roots
                .iter()
                .find_map(|r| python_module_file(r, module, layout))
            {
                out.push(found);
            }
        }
        return out;
    }
    let Some(rest) = statement.strip_prefix("from ") else {
        return out;
    };
    let Some((module, names)) = rest.split_once(" import ") else {
        return out;
    };
    let module = module.trim();
    let names: Vec<&str> = names
        .trim_matches(|c| c == '(' || c == ')' || char::is_whitespace(c))
        .split(',')
        .map(|n| n.split(" as ").next().unwrap_or("").trim())
        .filter(|n| !n.is_empty() && *n != "*")
        .collect();
    let level = module.chars().take_while(|&c| c == '.').count();
    let module = &module[level..];
    let bases: Vec<String> = if level > 0 {
        let mut base = dir;
        for _ in 1..level {
            base = split_dir(base).0;
        }
        vec![base.to_owned()]
    } else {
        roots.iter().map(|r| (*r).to_owned()).collect()
    };
    for base in &bases {
        let mut found_any = false;
        for name in &names {
            let sub = if module.is_empty() {
                (*name).to_owned()
            } else {
                format!("{module}.{name}")
            };
            if let Some(found) = python_module_file(base, &sub, layout) {
                out.push(found);
                found_any = true;
            }
        }
        if !found_any
            && !module.is_empty()
            && let Some(found) = python_module_file(base, module, layout)
        {
            out.push(found);
            found_any = true;
        }
        if found_any {
            break;
        }
    }
    out
}

// --- JavaScript / TypeScript ----------------------------------------------------------

/// The last quoted string in a statement (the module specifier).
fn last_quoted(statement: &str) -> Option<&str> {
    let bytes = statement.as_bytes();
    let end = bytes
        .iter()
        .rposition(|&b| b == b'\'' || b == b'"' || b == b'`')?;
    let quote = bytes[end];
    let start = bytes[..end].iter().rposition(|&b| b == quote)?;
    Some(&statement[start + 1..end])
}

const JS_EXTENSIONS: &[&str] = &["ts", "tsx", "d.ts", "js", "jsx", "mjs", "cjs", "mts", "cts"];

fn resolve_js(path: &str, statement: &str, layout: &ProjectLayout) -> Option<String> {
    let spec = last_quoted(statement)?;
    if !(spec.starts_with("./") || spec.starts_with("../") || spec == "." || spec == "..") {
        return None;
    }
    let (dir, _) = split_dir(path);
    let base = normalize(&join(dir, spec))?;
    let mut candidates = vec![base.clone()];
    candidates.extend(JS_EXTENSIONS.iter().map(|e| format!("{base}.{e}")));
    // TypeScript ESM: `./x.js` names the source `./x.ts`.
    for (from, to) in [
        (".js", "ts"),
        (".js", "tsx"),
        (".jsx", "tsx"),
        (".mjs", "mts"),
        (".cjs", "cts"),
    ] {
        if let Some(stem) = base.strip_suffix(from) {
            candidates.push(format!("{stem}.{to}"));
        }
    }
    candidates.extend(
        JS_EXTENSIONS
            .iter()
            .map(|e| join(&base, &format!("index.{e}"))),
    );
    layout.first_existing(candidates)
}

// --- Go, Java, C/C++ --------------------------------------------------------------------

fn resolve_go(statement: &str, layout: &ProjectLayout) -> Option<String> {
    let import = last_quoted(statement)?;
    for (module, dir) in layout.go_modules.iter().rev() {
        let rest = if import == module {
            ""
        } else if let Some(rest) = import.strip_prefix(&format!("{module}/")) {
            rest
        } else {
            continue;
        };
        let pkg = join(dir, rest);
        if layout.has_dir(&pkg) || pkg.is_empty() {
            return Some(if pkg.is_empty() { ".".to_owned() } else { pkg });
        }
    }
    None
}

fn resolve_java(statement: &str, layout: &ProjectLayout) -> Option<String> {
    let body = statement
        .trim()
        .strip_prefix("import ")?
        .trim_end_matches(';')
        .trim();
    let body = body.strip_prefix("static ").unwrap_or(body).trim();
    let segments: Vec<&str> = body.split('.').collect();
    for len in (1..=segments.len()).rev() {
        if segments[len - 1] == "*" {
            continue;
        }
        let suffix = format!("{}.java", segments[..len].join("/"));
        let slash_suffix = format!("/{suffix}");
        if let Some(found) = layout
            .files
            .iter()
            .find(|f| **f == suffix || f.ends_with(&slash_suffix))
        {
            return Some(found.clone());
        }
    }
    None
}

fn resolve_include(path: &str, statement: &str, layout: &ProjectLayout) -> Option<String> {
    let text = statement
        .trim()
        .strip_prefix("#")?
        .trim_start()
        .strip_prefix("include")?
        .trim();
    let (dir, _) = split_dir(path);
    if let Some(quoted) = text.strip_prefix('"').and_then(|t| t.split('"').next()) {
        let mut candidates: Vec<String> = Vec::new();
        candidates.extend(normalize(&join(dir, quoted)));
        candidates.extend(normalize(quoted));
        candidates.push(join("include", quoted));
        candidates.push(join("src", quoted));
        if let Some(found) = layout.first_existing(candidates) {
            return Some(found);
        }
        let suffix = format!("/{quoted}");
        return layout.files.iter().find(|f| f.ends_with(&suffix)).cloned();
    }
    let angled = text.strip_prefix('<').and_then(|t| t.split('>').next())?;
    layout.first_existing([
        join("include", angled),
        angled.to_owned(),
        join("src", angled),
    ])
}

// --- putting it together ---------------------------------------------------------------

/// Imports, importers and tests of `source` among `summaries` (every source file of the
/// repository). Co-change is added by the caller (it needs git).
pub fn related(source: &str, summaries: &[FileSummary], layout: &ProjectLayout) -> Related {
    let mut found = RelatedFinder::new(source, layout);
    for file in summaries {
        found.add(file);
    }
    found.finish()
}

/// [`related`] over summaries handed in one at a time (as a streamed summary run makes them),
/// keeping what each tells of `source` and nothing else: memory is bounded by the answer, not
/// by the tree.
pub struct RelatedFinder<'a> {
    source: &'a str,
    layout: &'a ProjectLayout,
    source_dir: &'a str,
    source_is_go: bool,
    /// The source's own imports, once its summary was added.
    imports: Option<Vec<RelatedFile>>,
    imported_by: Vec<RelatedFile>,
}

impl<'a> RelatedFinder<'a> {
    pub fn new(source: &'a str, layout: &'a ProjectLayout) -> Self {
        Self {
            source,
            layout,
            source_dir: split_dir(source).0,
            source_is_go: Language::from_path(std::path::Path::new(source)) == Some(Language::Go),
            imports: None,
            imported_by: Vec::new(),
        }
    }

    /// Adds a file's summary: the source's gives its imports (the first one added counts), any
    /// other file that imports the source is an importer.
    pub fn add(&mut self, file: &FileSummary) {
        if file.path == self.source {
            if self.imports.is_none() {
                self.imports = Some(resolve_imports(file, self.layout));
            }
            return;
        }
        let (source, dir) = (self.source, self.source_dir);
        if let Some(hit) = resolve_imports(file, self.layout).into_iter().find(|r| {
            r.path == source
                || (self.source_is_go && (r.path == dir || (r.path == "." && dir.is_empty())))
        }) {
            self.imported_by.push(RelatedFile {
                path: file.path.clone(),
                reason: hit.reason,
            });
        }
    }

    /// Whether the source's own summary was added.
    pub fn has_source(&self) -> bool {
        self.imports.is_some()
    }

    pub fn finish(self) -> Related {
        Related {
            source: self.source.to_owned(),
            imports: self.imports.unwrap_or_default(),
            imported_by: self.imported_by,
            co_changed: Vec::new(),
            test_files: test_files(self.source, self.layout),
        }
    }
}

/// Test files for `source` by the naming conventions of its language.
pub fn test_files(source: &str, layout: &ProjectLayout) -> Vec<RelatedFile> {
    let (dir, name) = split_dir(source);
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return Vec::new();
    };
    let mut names: BTreeSet<String> = BTreeSet::new();
    match ext {
        "py" => {
            names.insert(format!("test_{stem}.py"));
            names.insert(format!("{stem}_test.py"));
        }
        "go" => {
            names.insert(format!("{stem}_test.go"));
        }
        "java" => {
            names.insert(format!("{stem}Test.java"));
            names.insert(format!("{stem}Tests.java"));
            names.insert(format!("{stem}IT.java"));
        }
        "rs" => {}
        _ => {
            for e in [
                "js", "jsx", "ts", "tsx", "mjs", "cjs", "c", "cc", "cpp", "cxx",
            ] {
                names.insert(format!("{stem}.test.{e}"));
                names.insert(format!("{stem}.spec.{e}"));
                names.insert(format!("{stem}_test.{e}"));
                names.insert(format!("test_{stem}.{e}"));
            }
        }
    }
    let is_test_dir = |path: &str| {
        path.split('/')
            .any(|p| matches!(p, "tests" | "test" | "__tests__" | "spec" | "testing"))
    };
    let mut out = Vec::new();
    for path in &layout.files {
        if path == source {
            continue;
        }
        let (file_dir, file_name) = split_dir(path);
        let by_name =
            names.contains(file_name) && (file_dir == dir || is_test_dir(path) || ext == "java");
        // Rust: an integration test named after the module, in the crate's tests/ dir.
        let rust_test = ext == "rs"
            && file_name == name
            && file_dir.ends_with("tests")
            && is_test_dir(file_dir);
        if by_name || rust_test {
            out.push(RelatedFile {
                path: path.clone(),
                reason: format!("test naming convention ({file_name})"),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(files: &[&str]) -> ProjectLayout {
        let files: BTreeSet<String> = files.iter().map(|s| (*s).to_owned()).collect();
        ProjectLayout::new(files, |path| match path {
            "go.mod" => Some("module example.com/app\n".to_owned()),
            "crates/b/Cargo.toml" => Some("[package]\nname = \"crate-b\"\n".to_owned()),
            _ => None,
        })
    }

    fn summary(path: &str, lang: Language, imports: &[&str]) -> FileSummary {
        FileSummary {
            path: path.to_owned(),
            language: lang,
            lines: 1,
            symbols: Vec::new(),
            imports: imports.iter().map(|s| (*s).to_owned()).collect(),
            has_errors: false,
            skeleton: None,
        }
    }

    fn targets(file: &FileSummary, layout: &ProjectLayout) -> Vec<String> {
        resolve_imports(file, layout)
            .into_iter()
            .map(|r| r.path)
            .collect()
    }

    #[test]
    fn rust_mods_uses_and_workspace_crates() {
        let l = layout(&[
            "Cargo.toml",
            "src/main.rs",
            "src/cli/mod.rs",
            "src/cli/args.rs",
            "src/util.rs",
            "crates/b/Cargo.toml",
            "crates/b/src/lib.rs",
            "crates/b/src/x.rs",
        ]);
        let main = summary(
            "src/main.rs",
            Language::Rust,
            &[
                "mod cli;",
                "use crate::util::{helper, Other as O};",
                "use crate_b::x::Thing;",
                "use std::fs;",
            ],
        );
        assert_eq!(
            targets(&main, &l),
            ["src/cli/mod.rs", "src/util.rs", "crates/b/src/x.rs"]
        );
        let cli = summary(
            "src/cli/mod.rs",
            Language::Rust,
            &["pub mod args;", "use super::util;"],
        );
        assert_eq!(targets(&cli, &l), ["src/cli/args.rs", "src/util.rs"]);
    }

    #[test]
    fn python_js_go_java_and_includes() {
        let l = layout(&[
            "pkg/__init__.py",
            "pkg/a.py",
            "pkg/sub/b.py",
            "src/web/app.ts",
            "src/web/util/index.ts",
            "src/web/x.tsx",
            "go.mod",
            "internal/store/db.go",
            "main.go",
            "src/main/java/com/acme/Foo.java",
            "lib/x.h",
            "lib/x.c",
        ]);
        let py = summary(
            "pkg/sub/b.py",
            Language::Python,
            &["from .. import a", "import pkg.a", "from pkg.sub import b"],
        );
        assert_eq!(targets(&py, &l), ["pkg/a.py"]);
        let ts = summary(
            "src/web/app.ts",
            Language::TypeScript,
            &[
                "import { u } from './util';",
                "import X from \"./x.js\";",
                "import r from 'react';",
            ],
        );
        assert_eq!(targets(&ts, &l), ["src/web/util/index.ts", "src/web/x.tsx"]);
        let go = summary(
            "main.go",
            Language::Go,
            &[
                "import \"fmt\"",
                "import \"example.com/app/internal/store\"",
            ],
        );
        assert_eq!(targets(&go, &l), ["internal/store"]);
        let java = summary(
            "B.java",
            Language::Java,
            &["import com.acme.Foo;", "import java.util.List;"],
        );
        assert_eq!(targets(&java, &l), ["src/main/java/com/acme/Foo.java"]);
        let c = summary(
            "lib/x.c",
            Language::C,
            &["#include \"x.h\"", "#include <stdio.h>"],
        );
        assert_eq!(targets(&c, &l), ["lib/x.h"]);
    }

    #[test]
    fn importers_and_test_files() {
        let l = layout(&[
            "src/util.py",
            "src/app.py",
            "tests/test_util.py",
            "src/util_test.go",
            "src/util.go",
        ]);
        let summaries = vec![
            summary("src/app.py", Language::Python, &["from util import f"]),
            summary("src/util.py", Language::Python, &[]),
        ];
        let r = related("src/util.py", &summaries, &l);
        assert_eq!(
            r.imported_by,
            [RelatedFile {
                path: "src/app.py".into(),
                reason: "from util import f".into()
            }]
        );
        assert_eq!(r.test_files[0].path, "tests/test_util.py");
        let go_tests = test_files("src/util.go", &l);
        assert_eq!(go_tests[0].path, "src/util_test.go");
    }
}
