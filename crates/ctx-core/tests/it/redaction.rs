//! The redaction corpus: realistic secrets that must be redacted and look-alikes that must not.
//!
//! `tests/fixtures/redaction/positives.txt` holds cases whose secrets are marked
//! `⟦RULE_ID:secret⟧`; the expected output replaces each marked span with `[REDACTED:RULE_ID]`
//! and changes nothing else. `benign.txt` holds look-alikes (placeholders, hashes, UUIDs,
//! documentation keys, base64 images) that must come out byte for byte unchanged. Run with
//! `cargo test -p ctx-core --test it redaction -- --nocapture` to see recall and false positives.

// The corpus report is printed on purpose: it is what `--nocapture` is for.
#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;
use std::path::Path;

use ctx_core::redact::{RedactionFinding, Redactor};

const OPEN: char = '⟦';
const CLOSE: char = '⟧';

/// One corpus case: the input, the expected output and the secrets it holds.
struct Case {
    name: String,
    input: String,
    expected: String,
    secrets: Vec<Secret>,
}

struct Secret {
    rule: String,
    value: String,
    line: u32,
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/redaction")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// Splits a fixture into cases: a `=== name` line starts one; `#` lines before the first are
/// comments.
fn cases(name: &str) -> Vec<Case> {
    let text = fixture(name);
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(title) = line.strip_prefix("=== ") {
            out.push((title.trim_end().to_owned(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
        } else {
            assert!(
                line.starts_with('#'),
                "{name}: text before the first case: {line:?}"
            );
        }
    }
    out.into_iter()
        .map(|(name, raw)| parse_case(name, &raw))
        .collect()
}

/// Removes the `⟦RULE:secret⟧` markup, building the input and the expected output.
fn parse_case(name: String, raw: &str) -> Case {
    let mut input = String::new();
    let mut expected = String::new();
    let mut secrets = Vec::new();
    let mut rest = raw;
    while let Some(open) = rest.find(OPEN) {
        input.push_str(&rest[..open]);
        expected.push_str(&rest[..open]);
        let after = &rest[open + OPEN.len_utf8()..];
        let close = after
            .find(CLOSE)
            .unwrap_or_else(|| panic!("{name}: unclosed marker"));
        let (rule, value) = after[..close]
            .split_once(':')
            .unwrap_or_else(|| panic!("{name}: a marker is ⟦RULE_ID:secret⟧"));
        let line = 1 + u32::try_from(input.matches('\n').count()).expect("small fixture");
        input.push_str(value);
        expected.push_str("[REDACTED:");
        expected.push_str(rule);
        expected.push(']');
        secrets.push(Secret {
            rule: rule.to_owned(),
            value: value.to_owned(),
            line,
        });
        rest = &after[close + CLOSE.len_utf8()..];
    }
    input.push_str(rest);
    expected.push_str(rest);
    Case {
        name,
        input,
        expected,
        secrets,
    }
}

fn findings_of(case: &Case) -> Vec<RedactionFinding> {
    case.secrets
        .iter()
        .map(|s| RedactionFinding {
            rule: s.rule.clone(),
            line: s.line,
        })
        .collect()
}

#[test]
fn corpus_recall_and_false_positives() {
    let redactor = Redactor::builtin();
    let positives = cases("positives.txt");
    let benign = cases("benign.txt");
    assert!(positives.len() >= 60, "{} positive cases", positives.len());
    assert!(benign.len() >= 40, "{} benign cases", benign.len());

    let mut failures = Vec::new();
    let (mut secrets, mut found, mut extra) = (0, 0, 0);
    for case in &positives {
        assert!(!case.secrets.is_empty(), "{}: marks no secret", case.name);
        let out = redactor.redact(&case.input);
        let want = findings_of(case);
        secrets += want.len();
        found += want.iter().filter(|f| out.findings.contains(f)).count();
        extra += out.findings.iter().filter(|f| !want.contains(f)).count();
        if out.text != case.expected || out.findings != want {
            failures.push(format!(
                "positive `{}`:\n  want {want:?}\n  got  {:?}\n  output:\n{}",
                case.name, out.findings, out.text
            ));
        }
        for secret in &case.secrets {
            assert!(
                !out.text.contains(&secret.value),
                "{}: the secret survives",
                case.name
            );
        }
    }
    let mut touched = 0;
    for case in &benign {
        assert!(
            case.secrets.is_empty(),
            "{}: benign cases mark nothing",
            case.name
        );
        let out = redactor.redact(&case.input);
        if out.text != case.input || !out.findings.is_empty() {
            touched += 1;
            failures.push(format!(
                "benign `{}` was changed: {:?}\n  output:\n{}",
                case.name, out.findings, out.text
            ));
        }
    }

    println!(
        "redaction corpus: {} positive cases with {secrets} secrets, {} benign cases",
        positives.len(),
        benign.len()
    );
    println!(
        "recall: {found}/{secrets} secrets redacted with the expected rule ({:.1}%)",
        100.0 * found as f64 / secrets as f64
    );
    println!(
        "false positives: {touched}/{} benign cases changed, {extra} unexpected findings in \
         positive cases",
        benign.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_builtin_rule_has_a_positive_case() {
    // In this corpus, or among the catalog's own samples (which the unit tests redact).
    let mut covered: BTreeSet<String> = cases("positives.txt")
        .into_iter()
        .flat_map(|case| case.secrets.into_iter().map(|s| s.rule))
        .collect();
    for entry in Redactor::builtin_catalog() {
        if !entry.positives.is_empty() {
            covered.insert(entry.id);
        }
    }
    let missing: Vec<&str> = Redactor::builtin()
        .rule_ids()
        .into_iter()
        .filter(|id| !covered.contains(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a positive case: {missing:?}"
    );
}

#[test]
fn the_whole_corpus_as_one_text_gives_the_same_result_with_absolute_lines() {
    // One long text exercises keyword prefiltering across many lines and multi-line spans.
    let all: Vec<Case> = cases("positives.txt")
        .into_iter()
        .chain(cases("benign.txt"))
        .collect();
    let input: String = all.iter().map(|c| c.input.as_str()).collect();
    let expected: String = all.iter().map(|c| c.expected.as_str()).collect();
    let mut want = Vec::new();
    let mut offset = 0;
    for case in &all {
        for mut finding in findings_of(case) {
            finding.line += offset;
            want.push(finding);
        }
        offset += u32::try_from(case.input.matches('\n').count()).expect("small fixture");
    }
    let out = Redactor::builtin().redact(&input);
    if let Some((n, (got, want))) = out
        .text
        .lines()
        .zip(expected.lines())
        .enumerate()
        .find(|(_, (got, want))| got != want)
    {
        panic!("line {}: got\n{got}\nwant\n{want}", n + 1);
    }
    assert!(
        out.text == expected,
        "the concatenated corpus redacts as its cases do"
    );
    assert_eq!(out.findings, want);
    // Deterministic: a second run gives the same bytes.
    assert_eq!(Redactor::builtin().redact(&input), out);
}

#[test]
fn redacted_output_redacts_to_itself() {
    for case in cases("positives.txt") {
        let once = Redactor::builtin().redact(&case.input).text.into_owned();
        let twice = Redactor::builtin().redact(&once);
        assert!(
            twice.findings.is_empty(),
            "{}: {:?} in\n{once}",
            case.name,
            twice.findings
        );
    }
}

#[test]
fn findings_never_carry_the_secret() {
    for case in cases("positives.txt") {
        let out = Redactor::builtin().redact(&case.input);
        let json = serde_json::to_string(&out.findings).expect("findings serialize");
        for secret in &case.secrets {
            assert!(!json.contains(&secret.value), "{}", case.name);
        }
    }
}

#[test]
fn real_project_files_come_out_unchanged() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redaction/benign-files");
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).expect("manifest exists");
    let listed: BTreeSet<&str> = manifest
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split('\t').next())
        .collect();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("benign files exist")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 100, "{} benign files", files.len());
    let mut changed = Vec::new();
    for path in &files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 name");
        assert!(listed.contains(name), "{name} is not in MANIFEST.tsv");
        let text = std::fs::read_to_string(path).expect("utf-8 file");
        let out = Redactor::builtin().redact(&text);
        if out.is_redacted() || out.text != text {
            changed.push(format!("{name}: {:?}", out.findings));
        }
    }
    println!(
        "benign files: {} from real projects, {} changed",
        files.len(),
        changed.len()
    );
    assert!(changed.is_empty(), "{}", changed.join("\n"));
}
