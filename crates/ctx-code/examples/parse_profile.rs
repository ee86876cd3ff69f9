//! Where whole-tree symbol extraction spends its time, on one thread: for every source file
//! under DIR, the parse a summary uses (shallow where it applies, else full) and the symbol
//! walk, summed by language and by how the file was parsed (with the bytes the parse still
//! read), plus the files that cost most. `VERBOSE=1` also names each file whose shallow parse
//! was refused, with the first gap the tree disagreed with.
//!
//! `cargo run --release -p ctx-code --example parse_profile -- DIR [TOP]`
#![allow(clippy::print_stdout)]
use std::collections::BTreeMap;
use std::time::Instant;

use ctx_code::symbols::{extract_from_tree, parse};

mod common;

#[derive(Default)]
struct Sum {
    files: usize,
    bytes: usize,
    /// Bytes the parse read (all but the gaps of a shallow parse).
    parsed: usize,
    parse: f64,
    walk: f64,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: parse_profile DIR [TOP]");
    let top: usize = args
        .next()
        .map_or(25, |n| n.parse().expect("TOP is a number"));
    let verbose = std::env::var_os("VERBOSE").is_some();
    let mut sums: BTreeMap<(&str, &str), Sum> = BTreeMap::new();
    let mut costly: Vec<(f64, f64, usize, &str, String)> = Vec::new();
    for (path, lang, bytes) in common::source_files(&dir) {
        let gaps = ctx_code::shallow::gaps(lang, &bytes);
        let left_out: usize = gaps.iter().map(|g| g.end - g.start).sum();
        // What `parse_for_symbols` does, timed, and which way it went.
        let started = Instant::now();
        let shallow = ctx_code::shallow::parse(lang, &bytes);
        let how = if gaps.is_empty() {
            "no gaps"
        } else if shallow.is_some() {
            "shallow"
        } else {
            "refused"
        };
        let Some(tree) = shallow.or_else(|| parse(lang, &bytes)) else {
            continue;
        };
        let parse_time = started.elapsed().as_secs_f64();
        if verbose
            && how == "refused"
            && let Some(gap) = ctx_code::shallow::refused(lang, &bytes).first()
        {
            let line = memchr::memchr_iter(b'\n', &bytes[..gap.start]).count() + 1;
            let before = &bytes[gap.start.saturating_sub(60)..gap.start];
            println!(
                "refused: {path}:{line} {:?} after …{}",
                gap.hole,
                String::from_utf8_lossy(before).replace('\n', "⏎")
            );
        }
        let started = Instant::now();
        std::hint::black_box(extract_from_tree(lang, &bytes, &tree));
        let walk = started.elapsed().as_secs_f64();
        let sum = sums.entry((lang.name(), how)).or_default();
        sum.files += 1;
        sum.bytes += bytes.len();
        sum.parsed += if how == "shallow" {
            bytes.len() - left_out
        } else {
            bytes.len()
        };
        sum.parse += parse_time;
        sum.walk += walk;
        costly.push((
            parse_time + walk,
            parse_time,
            bytes.len(),
            how,
            path.clone(),
        ));
    }
    let (mut parse, mut walk) = (0.0, 0.0);
    println!(
        "{:10} {:8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "language", "how", "files", "MB", "parsed", "parse s", "walk s", "MB/s"
    );
    let mb = |bytes: usize| bytes as f64 / 1e6;
    for ((lang, how), sum) in &sums {
        parse += sum.parse;
        walk += sum.walk;
        println!(
            "{lang:10} {how:8} {:>6} {:>8.1} {:>8.1} {:>8.2} {:>8.2} {:>7.1}",
            sum.files,
            mb(sum.bytes),
            mb(sum.parsed),
            sum.parse,
            sum.walk,
            mb(sum.bytes) / (sum.parse + sum.walk)
        );
    }
    println!("total: parse {parse:.2}s, walk {walk:.2}s");
    costly.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (total, parse, bytes, how, path) in costly.iter().take(top) {
        println!("{total:7.3}s (parse {parse:.3}s) {bytes:>9} B {how:8} {path}");
    }
}
