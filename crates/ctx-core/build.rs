//! Writes the redaction catalog as the redactor reads it at run time: the rules of
//! `src/redact/rules.toml` as one static table of Rust literals (`StaticRule`s, made into
//! `RawRule`s and checked at run time as the TOML's are), without what only people and tests
//! read (each rule's `positives`, `negatives` and `description`). A process that redacts then
//! parses no TOML; the full catalog is still compiled in for the tests, which check that the
//! two agree. The table is data, not code: written as one function building ~300 structs and
//! their vectors, it took the optimizer minutes in release builds.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    const SOURCE: &str = "src/redact/rules.toml";
    println!("cargo:rerun-if-changed={SOURCE}");
    let text = std::fs::read_to_string(SOURCE).expect("src/redact/rules.toml is readable");
    let document: toml_edit::DocumentMut = text.parse().expect("src/redact/rules.toml parses");
    let entries = document
        .get("rule")
        .and_then(toml_edit::Item::as_array_of_tables)
        .expect("src/redact/rules.toml has [[rule]] entries");
    let mut out = String::from(
        "// Written by build.rs from src/redact/rules.toml.\n\
         pub(crate) static RULES: &[StaticRule] = &[\n",
    );
    for entry in entries {
        out.push_str("    StaticRule {\n");
        for key in [
            "id", "provider", "regex", "context", "value", "check", "scope",
        ] {
            let value = entry.get(key).map(|item| {
                item.as_str()
                    .unwrap_or_else(|| panic!("rules.toml: `{key}` must be a string"))
            });
            writeln!(out, "            {key}: {value:?},").expect("a String takes writes");
        }
        for key in ["keywords", "allow"] {
            let values: Vec<&str> = entry
                .get(key)
                .and_then(toml_edit::Item::as_array)
                .map(|array| {
                    array
                        .iter()
                        .map(|v| {
                            v.as_str().unwrap_or_else(|| {
                                panic!("rules.toml: `{key}` must be an array of strings")
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            writeln!(out, "            {key}: &{values:?},").expect("a String takes writes");
        }
        let entropy = entry.get("entropy").map(|item| {
            item.as_float()
                .or_else(|| item.as_integer().map(|i| i as f64))
                .expect("rules.toml: `entropy` must be a number")
        });
        writeln!(out, "            entropy: {entropy:?},").expect("a String takes writes");
        let max_run = entry.get("max_run").map(|item| {
            item.as_integer()
                .and_then(|i| usize::try_from(i).ok())
                .expect("rules.toml: `max_run` must be a count")
        });
        writeln!(out, "            max_run: {max_run:?},").expect("a String takes writes");
        out.push_str("    },\n");
    }
    out.push_str("];\n");
    let dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(dir.join("rules_runtime.rs"), out).expect("OUT_DIR is writable");
}
