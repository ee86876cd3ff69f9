//! Exact counts against tiktoken: `tests/fixtures/tokens/expected.json` was written by OpenAI's
//! tiktoken (`scripts/gen-token-vectors.py`); every fixture must count the same here.

use std::collections::BTreeMap;
use std::path::Path;

use ctx_core::TokenizerKind;

#[test]
fn counts_equal_tiktoken_for_every_fixture_and_encoding() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokens");
    let expected: BTreeMap<String, BTreeMap<String, usize>> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .expect("valid vectors");
    assert!(expected.len() >= 10, "the vector set is complete");
    let mut mismatches = Vec::new();
    for (file, counts) in &expected {
        let text = std::fs::read_to_string(dir.join(file)).expect("fixture");
        for (encoding, &want) in counts {
            let kind: TokenizerKind = encoding.parse().expect("known encoding");
            let got = kind.count(&text);
            if got != want {
                mismatches.push(format!("{file} {encoding}: tiktoken {want}, ctx {got}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
