//! Redacts texts given as JSON lines on stdin (`{"id": …, "text": …}`) with the built-in rules
//! and writes one JSON line per text to stdout (`{"id": …, "text": <redacted>, "rules": […]}`),
//! in input order. `scripts/redaction-bench` feeds it the benchmark's cases:
//!
//! ```text
//! cargo run --release -p ctx-core --example redact_cases < cases.jsonl > redacted.jsonl
//! ```

// An example's output is its point.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufWriter, Write};

use ctx_core::redact::Redactor;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Case {
    id: serde_json::Value,
    text: String,
}

#[derive(Serialize)]
struct Outcome<'a> {
    id: &'a serde_json::Value,
    text: &'a str,
    rules: Vec<&'a str>,
}

fn main() {
    let redactor = Redactor::builtin();
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (number, line) in stdin.lines().enumerate() {
        let line =
            line.unwrap_or_else(|err| panic!("stdin line {} is readable: {err}", number + 1));
        if line.trim().is_empty() {
            continue;
        }
        let case: Case = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("line {} is a JSON case: {err}", number + 1));
        let redacted = redactor.redact(&case.text);
        let outcome = Outcome {
            id: &case.id,
            text: &redacted.text,
            rules: redacted.findings.iter().map(|f| f.rule.as_str()).collect(),
        };
        serde_json::to_writer(&mut out, &outcome).expect("stdout takes the outcome");
        out.write_all(b"\n").expect("stdout takes a newline");
    }
    out.flush().expect("stdout is flushed");
}
