//! Per-file parse and extract times over a tree, single-threaded: where cold symbols go.
//! `cargo run --release -p ctx-code --example parse_profile -- DIR`
use std::path::Path;
use std::time::Instant;

use ctx_code::Language;
use ctx_code::symbols::{extract_from_tree, parse};

fn main() {
    let dir = std::env::args().nth(1).expect("DIR");
    let entries = ctx_fs::walk(Path::new(&dir), &ctx_fs::WalkOptions::default()).expect("walk");
    let mut rows = Vec::new();
    let mut by_lang: std::collections::BTreeMap<String, (usize, u64, f64, f64)> = Default::default();
    let (mut tp, mut te) = (0.0, 0.0);
    for e in entries.iter().filter(|e| !e.is_dir) {
        let Some(lang) = Language::from_path(Path::new(&e.rel)) else { continue };
        let Ok(bytes) = std::fs::read(&e.path) else { continue };
        if bytes.len() > 8 << 20 || ctx_code::summary::is_binary(&bytes) { continue; }
        let s = Instant::now();
        let tree = parse(lang, &bytes);
        let p = s.elapsed().as_secs_f64();
        let s = Instant::now();
        let n = tree.as_ref().map_or(0, |t| extract_from_tree(lang, &bytes, t).symbols.len());
        let x = s.elapsed().as_secs_f64();
        tp += p; te += x;
        let err = tree.as_ref().is_some_and(|t| t.root_node().has_error());
        let l = by_lang.entry(format!("{lang:?}{}", if err {"!"} else {""})).or_default();
        l.0 += 1; l.1 += bytes.len() as u64; l.2 += p; l.3 += x;
        rows.push((p, x, bytes.len(), n, err, e.rel.clone()));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("parse {tp:.1}s extract {te:.1}s files {}", rows.len());
    for (k, (n, b, p, x)) in &by_lang {
        println!("{k:12} files {n:6} MB {:8.1} parse {p:7.1}s ({:5.1} MB/s) extract {x:6.1}s", *b as f64 / 1e6, *b as f64 / 1e6 / p);
    }
    let total: f64 = rows.iter().map(|r| r.0).sum();
    let mut acc = 0.0;
    for (i, r) in rows.iter().enumerate() {
        acc += r.0;
        if i < 25 { println!("{:7.3}s {:7.3}s {:9} B {:5} syms err={} {}", r.0, r.1, r.2, r.3, r.4, r.5); }
        if [100, 500, 1000, 2000].contains(&i) { println!("top {i}: {:.1}% of parse", acc / total * 100.0); }
    }
}
