//! Experiment: parse time with function bodies excluded via included ranges.
use std::path::Path;
use std::time::Instant;
use ctx_code::Language;
use ctx_code::symbols::parse;
use tree_sitter::Range;

fn bodies(node: tree_sitter::Node, out: &mut Vec<(usize, usize)>) {
    let mut c = node.walk();
    for ch in node.children(&mut c) {
        let k = ch.kind();
        if k == "function_item" || k == "function_definition" {
            if let Some(b) = ch.child_by_field_name("body") {
                if b.end_byte() - b.start_byte() > 2 { out.push((b.start_byte() + 1, b.end_byte() - 1)); }
                continue;
            }
        }
        if (k == "array_expression" || k == "initializer_list") && std::env::var("TABLES").is_ok() && ch.end_byte() - ch.start_byte() > 256 {
            out.push((ch.start_byte() + 1, ch.end_byte() - 1));
            continue;
        }
        bodies(ch, out);
    }
}

fn main() {
    let dir = std::env::args().nth(1).expect("DIR");
    let entries = ctx_fs::walk(Path::new(&dir), &ctx_fs::WalkOptions::default()).expect("walk");
    let (mut full, mut part, mut nb, mut kept) = (0.0, 0.0, 0usize, 0usize);
    let mut parser = ctx_code::symbols::new_parser();
    for e in entries.iter().filter(|e| !e.is_dir) {
        let Some(lang) = Language::from_path(Path::new(&e.rel)) else { continue };
        if !matches!(lang, Language::Rust | Language::C) { continue; }
        let Ok(bytes) = std::fs::read(&e.path) else { continue };
        if bytes.len() > 8 << 20 || ctx_code::summary::is_binary(&bytes) { continue; }
        let s = Instant::now();
        let Some(tree) = parse(lang, &bytes) else { continue };
        full += s.elapsed().as_secs_f64();
        let mut b = Vec::new();
        bodies(tree.root_node(), &mut b);
        // included = complement of bodies
        let mut ranges = Vec::new();
        let mut at = 0usize;
        for (s0, e0) in &b { if *s0 > at { ranges.push((at, *s0)); } at = *e0; }
        ranges.push((at, bytes.len()));
        let nl: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).collect();
        let rs: Vec<Range> = ranges.iter().map(|&(a, z)| Range { start_byte: a, end_byte: z,
            start_point: pt(&nl, a), end_point: pt(&nl, z) }).collect();
        nb += bytes.len(); kept += ranges.iter().map(|r| r.1 - r.0).sum::<usize>();
        parser.set_language(&lang.grammar()).unwrap();
        let s = Instant::now();
        parser.set_included_ranges(&rs).unwrap();
        let t2 = parser.parse(&bytes, None);
        part += s.elapsed().as_secs_f64();
        drop(t2);
        parser.set_included_ranges(&[]).unwrap();
    }
    println!("full {full:.1}s  without bodies {part:.1}s  bytes kept {:.1}%", kept as f64 / nb as f64 * 100.0);
}
fn pt(nl: &[usize], at: usize) -> tree_sitter::Point {
    let row = nl.partition_point(|&i| i < at);
    let col = if row == 0 { at } else { at - nl[row - 1] - 1 };
    tree_sitter::Point { row, column: col }
}
