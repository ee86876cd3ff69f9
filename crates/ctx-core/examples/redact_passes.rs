//! Redacts one of the redaction benchmark's inputs a fixed number of times:
//! `redact_passes source_tree|secret_dense PASSES`. Wall-clock throughput on a shared machine
//! varies more between runs than a tenth; instructions do not. `scripts/redaction-instructions`
//! runs this under cachegrind with 1 and 3 passes, at two revisions, and reports the
//! instructions of one pass (the difference over two: the rules compile lazily in the first).

#![allow(clippy::print_stdout)]

#[path = "../benches/common/redaction_inputs.rs"]
mod inputs;

use ctx_core::redact::Redactor;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_default();
    let passes: usize = args
        .next()
        .and_then(|p| p.parse().ok())
        .expect("usage: redact_passes source_tree|secret_dense PASSES");
    let documents = match case.as_str() {
        "source_tree" => inputs::source_tree(),
        "secret_dense" => vec![inputs::secret_dense()],
        other => panic!("unknown case `{other}`: source_tree or secret_dense"),
    };
    let bytes: usize = documents.iter().map(String::len).sum();
    let redactor = Redactor::builtin();
    let mut findings = 0;
    for _ in 0..passes {
        for document in &documents {
            findings += redactor
                .redact(std::hint::black_box(document))
                .findings
                .len();
        }
    }
    println!("{case}: {bytes} bytes, {passes} passes, {findings} findings");
}
