//! The layering rules that can be checked mechanically (ARCHITECTURE.md, "Dependency rule"):
//! `ctx-store` owns the store's database, so no other crate depends on SQLite or runs SQL,
//! except the selection index's own sidecar (`ctx-select/src/index/db.rs`, `search.db` inside
//! an index directory, a file format of its own, never `state.db`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_owned()
}

/// Workspace packages with their direct dependencies' names, from `cargo metadata`.
fn packages() -> Vec<(String, PathBuf, Vec<String>)> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let name = p["name"].as_str().expect("name").to_owned();
            let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest"));
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().expect("dep name").to_owned())
                .collect();
            (name, manifest.parent().expect("dir").to_owned(), deps)
        })
        .collect()
}

/// Every package links its integration tests into one binary (`tests/it/main.rs`, a module
/// per area): each test binary links tree-sitter, libgit2, SQLite and tokio, so one per file
/// cost a link each (52 where there are 10 now).
#[test]
fn each_crate_has_at_most_one_integration_test_binary() {
    for (name, dir, _) in packages() {
        let tests = dir.join("tests");
        let Ok(entries) = std::fs::read_dir(&tests) else {
            continue;
        };
        let top_level: Vec<String> = entries
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "rs"))
            .map(|path| path.display().to_string())
            .collect();
        assert!(
            top_level.is_empty(),
            "{name}: move {top_level:?} into tests/it/ as modules of tests/it/main.rs"
        );
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readdir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

const SQLITE_OWNERS: &[&str] = &["ctx-store", "ctx-select"];

#[test]
fn only_the_store_and_the_index_sidecar_use_sqlite() {
    let packages = packages();
    assert!(packages.len() >= 10, "found {} packages", packages.len());
    for (name, _, deps) in &packages {
        if deps.iter().any(|d| d == "rusqlite") {
            assert!(
                SQLITE_OWNERS.contains(&name.as_str()),
                "{name} depends on rusqlite; the store's SQL belongs in ctx-store"
            );
        }
    }
}

#[test]
fn no_sql_outside_ctx_store() {
    let sql = [
        "SELECT ",
        "INSERT ",
        "UPDATE ",
        "DELETE FROM",
        "CREATE TABLE",
        ".connection()",
    ];
    let mut offenders = Vec::new();
    for (name, dir, _) in packages() {
        if name == "ctx-store" {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for file in files {
            if file.ends_with("ctx-select/src/index/db.rs") {
                continue; // the index's own search.db
            }
            let text = std::fs::read_to_string(&file).expect("read");
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                if sql.iter().any(|s| {
                    line.contains(&format!("\"{s}")) || (s.starts_with('.') && line.contains(s))
                }) {
                    offenders.push(format!("{}:{}: {}", file.display(), n + 1, code));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "SQL outside ctx-store (move it into a ctx-store repository):\n{}",
        offenders.join("\n")
    );
}

/// Front ends (the CLI, the MCP server, the HTTP server, the Python module) reach the library
/// crates through `ctx` only.
const FRONT_ENDS: &[&str] = &["ctx-cli", "ctx-mcp", "ctx-server"];
const BEHIND_THE_FACADE: &[&str] = &["ctx-store", "ctx-runs", "ctx-fs", "ctx-code", "ctx-select"];

#[test]
fn front_ends_depend_on_the_facade_not_the_library_crates() {
    for (name, _, deps) in packages() {
        if !FRONT_ENDS.contains(&name.as_str()) {
            continue;
        }
        assert!(
            deps.iter().any(|d| d == "ctx"),
            "{name} does not use the facade"
        );
        for dep in &deps {
            assert!(
                !BEHIND_THE_FACADE.contains(&dep.as_str()),
                "{name} depends on {dep} directly; call it through the `ctx` facade"
            );
        }
    }
    // The Python module is its own workspace (maturin); read its manifest.
    let manifest = std::fs::read_to_string(workspace_root().join("crates/ctx-py/Cargo.toml"))
        .expect("ctx-py manifest");
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .expect("a [dependencies] table")
        .split("\n[")
        .next()
        .expect("its body");
    for crate_name in BEHIND_THE_FACADE {
        assert!(
            !deps.lines().any(|l| l.trim_start().starts_with(crate_name)),
            "ctx-py depends on {crate_name} directly; call it through the `ctx` facade"
        );
    }
}

/// Front ends open no file and no database themselves: every path they are given is read
/// through `ctx-fs`
/// (the sandbox for workspace paths, `ctx::fs::input::read_named_file` for an input file the
/// user names on a command line), so no front end can check a path and then open another.
/// Writing the user's own output files (`-o FILE`) is the front end's job and is not matched.
#[test]
fn front_ends_open_no_path_themselves() {
    // The store's metadata is the facade's business: front ends call `ctx::packs`,
    // `ctx::runs`, `ctx::Workspace`, never the database handle.
    let opens = [
        ".db()",
        "File::open(",
        "fs::read(",
        "fs::read_to_string(",
        "OpenOptions::new()",
        "fs::read_link(",
        "fs::metadata(",
        "fs::symlink_metadata(",
        "fs::read_dir(",
    ];
    // The HTTP server's registry lists the directory of workspaces the operator named (which
    // subdirectories exist, and their identity); the workspaces' contents are read through
    // the sandbox.
    let allowed = ["ctx-server/src/registry.rs"];
    let mut dirs: Vec<PathBuf> = packages()
        .into_iter()
        .filter(|(name, _, _)| FRONT_ENDS.contains(&name.as_str()))
        .map(|(_, dir, _)| dir.join("src"))
        .collect();
    dirs.push(workspace_root().join("crates/ctx-py/src"));
    assert_eq!(dirs.len(), FRONT_ENDS.len() + 1);
    let mut offenders = Vec::new();
    for dir in dirs {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for file in files {
            if allowed.iter().any(|a| file.ends_with(a)) {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("read");
            // Unit tests build fixtures with std::fs; only the code above them counts.
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (n, line) in code.lines().enumerate() {
                if line.trim_start().starts_with("//") {
                    continue;
                }
                if opens.iter().any(|o| line.contains(o)) {
                    offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "front ends open paths or the store's database themselves (read through ctx-fs, call the facade):\n{}",
        offenders.join("\n")
    );
}

/// The facade's modules whose functions only `ctx::Workspace` may call.
const USE_CASE_MODULES: &[&str] = &["packs", "select", "code", "runs"];

/// Calls of a facade module's functions in `text`: `ctx::packs::render(`,
/// `ctx::runs::replay::replay(` (every segment after the module lower case: a function, not
/// a type's associated function). The facade is `ctx`, or `ctx_facade` where a crate renames
/// it (ctx-py).
fn module_calls(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for facade in ["ctx::", "ctx_facade::"] {
        for module in USE_CASE_MODULES {
            let prefix = format!("{facade}{module}::");
            let mut from = 0;
            while let Some(at) = text[from..].find(&prefix) {
                let start = from + at;
                from = start + prefix.len();
                let continues = text[..start]
                    .bytes()
                    .next_back()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':');
                let rest = &text[from..];
                let len = rest
                    .bytes()
                    .take_while(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b':'
                    })
                    .count();
                let path = &rest[..len];
                if !continues
                    && !path.is_empty()
                    && !path.ends_with(':')
                    && rest[len..].starts_with('(')
                {
                    found.push(format!("{prefix}{path}("));
                }
            }
        }
    }
    found
}

/// `use` declarations that bring a facade module, or a function of one, into scope, so that
/// it could be called without its path: `use ctx::packs;`, `use ctx::{code, Workspace};`,
/// `use ctx::runs::provenance::{self, Outcome};`, `use ctx::select::render_documents;`.
/// Types (upper case) may be imported.
fn module_imports(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for declaration in text.split(';') {
        let declaration = declaration.trim();
        let Some(path) = ["use ctx::", "use ctx_facade::", "pub use ctx::"]
            .iter()
            .find_map(|p| declaration.rfind(p).map(|at| &declaration[at + p.len()..]))
        else {
            continue;
        };
        let path: String = path.chars().filter(|c| !c.is_whitespace()).collect();
        let (head, items) = match path.split_once('{') {
            Some((head, items)) => (head.to_owned(), items.trim_end_matches('}').to_owned()),
            None => match path.rsplit_once("::") {
                Some((head, item)) => (format!("{head}::"), item.to_owned()),
                None => (String::new(), path.clone()),
            },
        };
        let module = head.split("::").next().unwrap_or_default();
        for item in items.split(',').filter(|i| !i.is_empty()) {
            let name = item.split("::").next().unwrap_or(item);
            let lower = name.starts_with(|c: char| c.is_ascii_lowercase());
            let names_module = head.is_empty() && USE_CASE_MODULES.contains(&name);
            if names_module || (USE_CASE_MODULES.contains(&module) && lower) {
                found.push(format!("use ctx::{head}{item}"));
            }
        }
    }
    found
}

/// The one facade (ARCHITECTURE.md): every use case is a method of `ctx::Workspace`. Front
/// ends call none of the facade's use-case modules' functions (`ctx::packs::`,
/// `ctx::select::`, `ctx::code::`, `ctx::runs::`), import none of them, and build none of
/// their context structs; they use the modules' types.
#[test]
fn front_ends_go_through_the_workspace() {
    let mut offenders = Vec::new();
    for name in ["ctx-cli", "ctx-mcp", "ctx-server", "ctx-py"] {
        let mut files = Vec::new();
        rust_files(
            &workspace_root().join("crates").join(name).join("src"),
            &mut files,
        );
        for file in &files {
            let text = std::fs::read_to_string(file).expect("source file");
            let shown = file
                .strip_prefix(workspace_root())
                .unwrap_or(file)
                .display()
                .to_string();
            for call in module_calls(&text) {
                offenders.push(format!("{shown}: calls {call}"));
            }
            for import in module_imports(&text) {
                offenders.push(format!("{shown}: {import}"));
            }
            for context in ["CodeContext {", "SelectContext {", "PackContext {"] {
                if text.contains(context) {
                    offenders.push(format!("{shown}: builds {context} … }}"));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "front ends call around ctx::Workspace; add a Workspace method instead:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_facade_rule_sees_calls_imports_and_contexts() {
    let calls = module_calls(
        "ctx::packs::render(&cx); ctx::runs::replay::replay(a); ctx::select::Query::parse(q);\n\
         ctx_facade::code::summarize(x); my_ctx::packs::f(); ctx::select::DEFAULT_INDEX_NAME",
    );
    assert_eq!(
        calls,
        [
            "ctx::packs::render(",
            "ctx::runs::replay::replay(",
            "ctx_facade::code::summarize("
        ]
    );
    let imports = module_imports(
        "use ctx::packs;\nuse ctx::{code, Workspace};\nuse ctx::runs::provenance::{self, Outcome};\n\
         use ctx::select::{render_documents, SelectOptions};\nuse ctx::select::ScorerKind;\n\
         use ctx::store::{self, Store};\nuse crate::tools::{self, Call};",
    );
    assert_eq!(
        imports,
        [
            "use ctx::packs",
            "use ctx::code",
            "use ctx::runs::provenance::self",
            "use ctx::select::render_documents"
        ]
    );
}
