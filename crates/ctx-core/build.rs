//! Writes the redaction catalog as the redactor reads it at run time: the rules of
//! `src/redact/rules.toml` as one static table of Rust literals (`StaticRule`s, made into
//! `RawRule`s and checked at run time as the TOML's are), without what only people and tests
//! read (each rule's `positives`, `negatives` and `description`). A process that redacts then
//! parses no TOML; the full catalog is still compiled in for the tests, which check that the
//! two agree. The table is data, not code: written as one function building ~300 structs and
//! their vectors, it took the optimizer minutes in release builds.
//!
//! Also writes the two exact tokenizers' tables as counting reads them (see
//! [`write_tokenizer`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

fn main() {
    let dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    write_rules(&dir);
    println!("cargo:rerun-if-changed=data");
    write_tokenizer(
        &dir,
        "o200k_base",
        include_bytes!("data/o200k_base.tiktoken.gz"),
    );
    write_tokenizer(
        &dir,
        "cl100k_base",
        include_bytes!("data/cl100k_base.tiktoken.gz"),
    );
}

fn write_rules(dir: &Path) {
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
    std::fs::write(dir.join("rules_runtime.rs"), out).expect("OUT_DIR is writable");
}

/// `bpe::byte_pair_encoding::BytePairEncoding` 0.2.3's fields in their serialized order (the
/// version is pinned with `=` for this reason), with its three Aho-Corasick automata as bytes.
#[derive(serde::Serialize, serde::Deserialize)]
struct BpeFields {
    all_tokens: Vec<u8>,
    token_starts: Vec<u32>,
    bytes_hash_to_token: BTreeMap<u32, u32>,
    split_table: Vec<(u32, u32)>,
    pair_lookup: BTreeMap<(u32, u32), u32>,
    longest_searcher: serde_bytes::ByteBuf,
    overlapping_searcher: serde_bytes::ByteBuf,
    overlapping_searcher_rev: serde_bytes::ByteBuf,
    next_prefix_match: Vec<u32>,
    hash_factor: u64,
}

/// Writes `OUT_DIR/{name}.bpe.lz4`: the encoding's byte-pair tables as counting reads them,
/// LZ4-compressed. `gzipped` is the encoding's tiktoken rank file (`data/`); the tables are
/// built from it as `bpe-openai` builds them (the same hash factor), whose crate embeds each
/// encoding's whole serialized `BytePairEncoding` (32 MB for o200k_base, 15 MB for
/// cl100k_base): half of ctx's binary. Counting walks only the longest-match automaton, the
/// prefix and split tables and the two maps; the two overlapping-match automata (the crate's
/// other encoders' tools) are replaced by a one-pattern automaton, and what is left is 16.4
/// and 7.8 MB, 12.2 and 5.7 MB compressed. LZ4 rather than gzip (8.2 and 3.9 MB): unpacking
/// o200k_base takes 10 ms instead of 45 on every first count of a process. The tests hold
/// every count to `bpe-openai`'s own tables.
fn write_tokenizer(dir: &Path, name: &str, gzipped: &[u8]) {
    /// `bpe-openai`'s hash factor for cl100k_base and o200k_base (collision-free for both).
    const HASH_FACTOR: u64 = 17_846_336_922_010_275_747;
    let mut text = String::new();
    flate2::read::GzDecoder::new(gzipped)
        .read_to_string(&mut text)
        .expect("the tiktoken file unpacks");
    let tokens = bpe::byte_pair_encoding::read_tiktoken(&text).expect("the tiktoken file parses");
    let bpe = bpe::byte_pair_encoding::BytePairEncoding::from_dictionary(tokens, Some(HASH_FACTOR));
    let full = rmp_serde::to_vec(&bpe).expect("a BytePairEncoding serializes");
    let mut fields: BpeFields = rmp_serde::from_slice(&full)
        .expect("BytePairEncoding 0.2.3 serializes as the fields of BpeFields");
    let unused = aneubeck_daachorse::DoubleArrayAhoCorasick::<u32>::new([b"\0"])
        .expect("a one-pattern automaton builds")
        .serialize();
    fields.overlapping_searcher = serde_bytes::ByteBuf::from(unused.clone());
    fields.overlapping_searcher_rev = serde_bytes::ByteBuf::from(unused);
    let counting = rmp_serde::to_vec(&fields).expect("the fields serialize");
    let packed = lz4_flex::block::compress_prepend_size(&counting);
    std::fs::write(dir.join(format!("{name}.bpe.lz4")), packed).expect("OUT_DIR is writable");
}
