//! Runs the built-in redactor over every UTF-8 file under a directory and prints each finding
//! as `path:line: RULE` (never the secret), then a summary line. Use it to review what a tree
//! would lose to redaction:
//!
//! ```text
//! cargo run --release -p ctx-core --example redact_scan -- /path/to/tree [--show]
//! ```
//!
//! With `--show`, each finding's line is printed after redaction (so still without the secret).

// An example's output is its point.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use ctx_core::redact::Redactor;

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_symlink() {
            continue;
        }
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let show = args.iter().any(|a| a == "--show");
    let roots: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    assert!(!roots.is_empty(), "usage: redact_scan DIR... [--show]");
    let redactor = Redactor::builtin();
    let (mut files, mut bytes, mut changed, mut findings) = (0usize, 0usize, 0usize, 0usize);
    let mut elapsed = std::time::Duration::ZERO;
    for root in roots {
        let mut paths = Vec::new();
        walk(Path::new(root), &mut paths);
        for path in paths {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            files += 1;
            bytes += text.len();
            let start = Instant::now();
            let out = redactor.redact(&text);
            elapsed += start.elapsed();
            if out.is_redacted() {
                changed += 1;
                findings += out.findings.len();
                let lines: Vec<&str> = out.text.lines().collect();
                for finding in &out.findings {
                    println!("{}:{}: {}", path.display(), finding.line, finding.rule);
                    if show {
                        let line = usize::try_from(finding.line).unwrap_or(usize::MAX);
                        if let Some(text) = lines.get(line.saturating_sub(1)) {
                            println!("    {}", text.chars().take(200).collect::<String>());
                        }
                    }
                }
            }
        }
    }
    println!(
        "{files} files, {bytes} bytes, {changed} changed, {findings} findings, {:.0} MB/s",
        bytes as f64 / elapsed.as_secs_f64() / 1e6
    );
}
