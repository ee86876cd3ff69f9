//! The shallow parse gives the same symbols and imports as a full parse on a real tree: this
//! workspace's own Rust sources (the registry-wide check is the `shallow_check` example).

use std::path::Path;

use ctx_code::Language;
use ctx_code::symbols::{extract_from_tree, parse};

#[test]
fn shallow_and_full_parses_agree_on_the_workspace_sources() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let entries = ctx_fs::walk(&crates, &ctx_fs::WalkOptions::default()).expect("walk");
    let mut shallow = 0;
    for entry in entries.iter().filter(|e| !e.is_dir) {
        if Language::from_path(Path::new(&entry.rel)) != Some(Language::Rust) {
            continue;
        }
        let bytes = std::fs::read(&entry.path).expect("read");
        let full = parse(Language::Rust, &bytes).expect("full parse");
        if full.root_node().has_error() {
            continue;
        }
        let Some(quick) = ctx_code::shallow::parse(Language::Rust, &bytes) else {
            continue;
        };
        shallow += 1;
        let (a, b) = (
            extract_from_tree(Language::Rust, &bytes, &full),
            extract_from_tree(Language::Rust, &bytes, &quick),
        );
        assert_eq!(a.symbols, b.symbols, "{}", entry.rel);
        assert_eq!(a.imports, b.imports, "{}", entry.rel);
    }
    assert!(shallow > 100, "only {shallow} files parsed shallow");
}
