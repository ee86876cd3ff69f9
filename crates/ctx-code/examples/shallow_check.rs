//! Checks shallow parses against full ones over a tree: the symbols and imports must be the
//! same for every file the grammar parses without errors. (Where the full parse had to
//! recover from errors inside a function body, its recovery can move the function's end or
//! lose later definitions; the shallow parse never sees those bodies, so it may differ there,
//! and those files are listed apart.) Prints how many files took the shallow parse, the parse
//! times both ways, and every file that differs; exit status 1 if a clean file differs.
//!
//! `cargo run --release -p ctx-code --example shallow_check -- DIR`
#![allow(clippy::print_stdout)]
use std::collections::BTreeMap;
use std::time::Instant;

use ctx_code::symbols::{extract_from_tree, parse};

mod common;

fn main() {
    let dir = std::env::args().nth(1).expect("usage: shallow_check DIR");
    let (mut files, mut shallow, mut differ, mut recovered) = (0usize, 0usize, 0usize, 0usize);
    let (mut full_time, mut shallow_time) = (0.0, 0.0);
    // Files parsed in full: (language, whether a shallow parse was tried and refused).
    let mut fallback: BTreeMap<(&str, bool), usize> = BTreeMap::new();
    for (path, lang, bytes) in common::source_files(&dir) {
        files += 1;
        let started = Instant::now();
        let Some(full) = parse(lang, &bytes) else {
            continue;
        };
        full_time += started.elapsed().as_secs_f64();
        let started = Instant::now();
        let quick = ctx_code::shallow::parse(lang, &bytes);
        shallow_time += started.elapsed().as_secs_f64();
        let Some(quick) = quick else {
            let (lang_name, attempted) = (
                lang.name(),
                !ctx_code::shallow::gaps(lang, &bytes).is_empty(),
            );
            *fallback.entry((lang_name, attempted)).or_default() += 1;
            continue;
        };
        shallow += 1;
        let (a, b) = (
            extract_from_tree(lang, &bytes, &full),
            extract_from_tree(lang, &bytes, &quick),
        );
        if a.symbols != b.symbols || a.imports != b.imports {
            let first = a.symbols.iter().zip(&b.symbols).position(|(x, y)| x != y);
            if full.root_node().has_error() {
                recovered += 1;
                println!("differs after error recovery: {path}");
            } else {
                differ += 1;
                println!(
                    "DIFFERS {path} ({} vs {} symbols, first difference at {first:?})",
                    a.symbols.len(),
                    b.symbols.len()
                );
            }
            if std::env::var_os("VERBOSE").is_some() {
                let i = first.unwrap_or(a.symbols.len().min(b.symbols.len()));
                println!(
                    "  full:    {:?}\n  shallow: {:?}",
                    a.symbols.get(i),
                    b.symbols.get(i)
                );
            }
        }
    }
    println!(
        "files {files}, shallow {shallow}, differ {differ} (and {recovered} where the full parse recovered from errors); \
         parse full {full_time:.1}s, shallow attempts {shallow_time:.1}s"
    );
    for ((lang, attempted), n) in &fallback {
        println!(
            "parsed in full: {lang:10} {} {n}",
            if *attempted { "refused" } else { "no gaps" }
        );
    }
    if differ > 0 {
        std::process::exit(1);
    }
}
