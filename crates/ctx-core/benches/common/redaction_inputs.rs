//! The redaction benchmark's two inputs, shared by `benches/redact.rs` (throughput) and
//! `examples/redact_passes.rs` (a fixed number of passes, for instruction counts across
//! versions: `scripts/redaction-instructions`).

#[path = "corpus.rs"]
mod corpus;

use std::path::Path;

const CORPUS_BYTES: usize = 40 * 1024 * 1024;
const TEXT_EXTENSIONS: &[&str] = &[
    "rs", "md", "toml", "json", "yml", "yaml", "py", "js", "ts", "sh", "txt", "c", "h",
];

/// Up to 40 MB of real text files (see `corpus.rs`), one document each.
pub fn source_tree() -> Vec<String> {
    corpus::documents(TEXT_EXTENSIONS, CORPUS_BYTES)
}

/// The redaction test fixtures (every rule's positives, then the benign cases) with their
/// markup removed, repeated 20 times: a document where every rule fires. The fixtures are
/// this crate's, or those in `$CTX_REDACTION_FIXTURES` (so two versions read the same text).
pub fn secret_dense() -> String {
    let dir = std::env::var_os("CTX_REDACTION_FIXTURES").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redaction"),
        std::path::PathBuf::from,
    );
    let mut text = String::new();
    for name in ["positives.txt", "benign.txt"] {
        let fixture = std::fs::read_to_string(dir.join(name)).expect("redaction fixtures exist");
        // The fixtures mark secrets as ⟦RULE:secret⟧; keep the secret, drop the markup.
        text.push_str(&strip_markers(&fixture));
    }
    text.repeat(20)
}

fn strip_markers(fixture: &str) -> String {
    let mut out = String::with_capacity(fixture.len());
    let mut rest = fixture;
    while let Some(open) = rest.find('⟦') {
        out.push_str(&rest[..open]);
        let after = &rest[open + '⟦'.len_utf8()..];
        let colon = after.find(':').expect("a marker names its rule");
        let close = after.find('⟧').expect("a marker is closed");
        out.push_str(&after[colon + 1..close]);
        rest = &after[close + '⟧'.len_utf8()..];
    }
    out.push_str(rest);
    out
}
