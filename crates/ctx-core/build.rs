//! Writes the redaction catalog as the redactor reads it at run time: `rules.toml` without
//! what only people and tests read (each rule's `positives`, `negatives` and `description`,
//! and the comments), a third of its size. Every process that redacts parses it once at
//! start; the full catalog is still compiled in for the tests that run its samples.

use std::path::PathBuf;

fn main() {
    const SOURCE: &str = "src/redact/rules.toml";
    println!("cargo:rerun-if-changed={SOURCE}");
    let text = std::fs::read_to_string(SOURCE).expect("src/redact/rules.toml is readable");
    let document: toml_edit::DocumentMut = text.parse().expect("src/redact/rules.toml parses");
    let mut rules = toml_edit::ArrayOfTables::new();
    if let Some(entries) = document
        .get("rule")
        .and_then(toml_edit::Item::as_array_of_tables)
    {
        for entry in entries {
            let mut kept = toml_edit::Table::new();
            for (key, item) in entry {
                if !matches!(key, "positives" | "negatives" | "description") {
                    kept.insert(key, item.clone());
                }
            }
            rules.push(kept);
        }
    }
    // Other top-level keys are kept, so the run-time parse refuses them as the tests do.
    let mut stripped = toml_edit::DocumentMut::new();
    for (key, item) in document.iter() {
        if key != "rule" {
            stripped.insert(key, item.clone());
        }
    }
    stripped.insert("rule", toml_edit::Item::ArrayOfTables(rules));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("rules.runtime.toml"), stripped.to_string())
        .expect("OUT_DIR is writable");
}
