//! The bodies of the fuzz targets, one function per target taking the fuzzer's bytes: the
//! `fuzz_targets/` binaries call them under libFuzzer, and `tests/replay.rs` runs them over
//! the committed corpus (`corpus/<target>/`) in a plain `cargo test`, so the seeds and every
//! reproducer added there stay checked without a fuzzing toolchain.
//!
//! Each function panics only when the code under test breaks a promise (a panic inside it, or
//! an assertion here about what it returned).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use ctx_code::search::{TextQuery, build_matcher};
use ctx_fs::{FsReadInput, Operation};
use ctx_mcp::jsonrpc::{Screened, screen};
use ctx_runs::import::{RunFormat, detect, parse};
use ctx_sources::{AddOptions, parse_source};

/// The workspace root `source_uri` resolves against: a temp dir with `a.txt` and `docs/b.md`.
static ROOT: LazyLock<(tempfile::TempDir, PathBuf)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical root");
    std::fs::create_dir_all(root.join("docs")).expect("docs");
    std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").expect("a.txt");
    std::fs::write(root.join("docs/b.md"), "# b\n").expect("b.md");
    (dir, root)
});

/// `pack add` source URIs and their line ranges (`file:PATH#L10-L50`): any string either
/// parses into a spec whose paths stay inside the root, or is refused with an error; never a
/// panic. The root is a temp dir holding one file, so `file:` URIs reach the range parser.
pub fn source_uri(data: &[u8]) {
    let Ok(uri) = std::str::from_utf8(data) else {
        return;
    };
    let root = &ROOT.1;
    let options = AddOptions::default();
    if let Ok(spec) = parse_source(uri, root, root, &options) {
        // Whatever parsed has an id and serializes.
        let _ = spec.artifact_id();
    }
    let _ = parse_source(uri, &root.join("docs"), root, &options);
}

/// Pack and index names: the validators accept exactly letters, digits, `.`, `_`, `-`,
/// starting with a letter or digit, at most 100 bytes; never a panic, and no accepted name
/// can name a path outside its directory.
pub fn names(data: &[u8]) {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    let pack = ctx::packs::validate_pack_name(name).is_ok();
    let index = ctx_select::index::validate_index_name(name).is_ok();
    for accepted in [pack, index] {
        if accepted {
            assert!(!name.is_empty() && name.len() <= 100, "{name:?}");
            assert!(
                !name.contains('/') && !name.contains('\\') && !name.contains('\0'),
                "{name:?}"
            );
            assert!(
                name != "." && name != ".." && !name.starts_with('.'),
                "{name:?}"
            );
        }
    }
}

/// Run importers: format detection, each adapter's parser (Claude Code, OpenHands,
/// SWE-agent) on any bytes, ctx's own export format and manifest decoding, and RFC 3339
/// timestamps. Parsers never touch a store; a bad file is an error, never a panic.
pub fn run_import(data: &[u8]) {
    let path = Path::new("fuzz.log");
    let _ = detect(data);
    for format in [
        RunFormat::ClaudeCode,
        RunFormat::OpenHands,
        RunFormat::SweAgent,
    ] {
        let _ = parse(format, path, data);
    }
    let _ = serde_json::from_slice::<ctx_runs::CtxExport>(data);
    let _ = ctx_runs::export::parse_manifest(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ctx_runs::export::parse_rfc3339_nanos(text);
    }
}

/// The fs_read request parser: any JSON value becomes an input (each operation valid or an
/// error entry) or one error for a malformed request; never a panic.
pub fn fs_read_input(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let _ = FsReadInput::from_json(&value);
    let _ = Operation::from_json(&value);
}

/// The search pattern compilers: ctx-code's (`ctx search`, `ctx_search`) and fs_read's
/// `Search` mode (its matcher is private, so a `Search` runs on a one-file workspace):
/// literal or regex, either case; a pattern compiles or is refused with an error; never a
/// panic. The first byte picks the flags, the rest is the pattern.
pub fn search_pattern(data: &[u8]) {
    let Some((flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(pattern) = std::str::from_utf8(rest) else {
        return;
    };
    let query = TextQuery {
        pattern: pattern.to_owned(),
        regex: flags & 1 == 0,
        ignore_case: flags & 2 != 0,
        context: 0,
        threads: 1,
        ..TextQuery::default()
    };
    let _ = build_matcher(&query);
    let search = Operation::Search {
        path: "notes.txt".into(),
        pattern: pattern.to_owned(),
        context_lines: u32::from(flags >> 4),
        regex: flags & 1 == 0,
        case_sensitive: flags & 2 == 0,
        offset: 0,
    };
    let options = ctx_fs::ReadOptions {
        walk_threads: 1,
        ..ctx_fs::ReadOptions::default()
    };
    let _ = ctx_fs::fs_read(&SEARCH_WORKSPACE.1, &FsReadInput::new([search]), &options);
}

/// The workspace `search_pattern` searches: one small file.
static SEARCH_WORKSPACE: LazyLock<(tempfile::TempDir, ctx_fs::Sandbox)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("notes.txt"),
        "fn main() {}\nTODO: fuzz\n\u{e9}t\u{e9} 42 \t tabs\n",
    )
    .expect("notes.txt");
    let workspace = ctx_fs::Sandbox::open(dir.path()).expect("workspace");
    (dir, workspace)
});

/// The MCP stdio decoder: every line is forwarded as a well-formed message, ignored (a bad
/// notification or response), or answered with a JSON-RPC error that carries the request's
/// id when it has a valid one; never a panic. Cursors (`next_cursor` passed back by an
/// agent) are parsed from the same bytes.
pub fn mcp_message(data: &[u8]) {
    match screen(data) {
        Screened::Answer(answer) => {
            let answers = match &answer {
                serde_json::Value::Array(items) => items.clone(),
                one => vec![one.clone()],
            };
            assert!(!answers.is_empty());
            for one in &answers {
                assert_eq!(one["jsonrpc"], "2.0", "{answer}");
                let code = one["error"]["code"].as_i64().expect("a code");
                assert!([-32700, -32600, -32602].contains(&code), "{answer}");
                if let Some(id) = one.get("id") {
                    assert!(id.is_string() || id.is_i64(), "{answer}");
                }
            }
            // Every answer is one line.
            assert!(
                !serde_json::to_string(&answer)
                    .expect("serializes")
                    .contains('\n')
            );
        }
        Screened::Message(message) => {
            // What rmcp receives serializes again.
            let _ = serde_json::to_vec(&message).expect("a message serializes");
        }
        Screened::Ignore => {}
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ctx_mcp::paging::Cursor::parse(text);
    }
}

/// The `/tool` body decoder of `ctx serve`: any bytes become a call (workspace id and fs_read
/// input) or a 400 message; never a panic.
pub fn tool_body(data: &[u8]) {
    match ctx_server::decode_tool_body(data) {
        Ok(call) => {
            let _ = call.input;
        }
        Err(err) => assert!(!err.0.is_empty()),
    }
}

/// A target's body.
pub type Target = fn(&[u8]);

/// The targets by name (as `cargo fuzz` and `corpus/` name them).
pub const TARGETS: &[(&str, Target)] = &[
    ("source_uri", source_uri),
    ("names", names),
    ("run_import", run_import),
    ("fs_read_input", fs_read_input),
    ("search_pattern", search_pattern),
    ("mcp_message", mcp_message),
    ("tool_body", tool_body),
];

/// A file of the corpus of a target, for the replay test.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}
