//! How a one-shot pack (`ctx pack PATH`) spends its budget: on what a reader of the project
//! needs first, down a ladder, instead of in byte order.
//!
//! - **Left out by default**: lockfiles, minified files, source maps and SVG drawings found in
//!   a walked directory (named by path, or matched by an `--include` glob, they are packed).
//!   The report lists each as `default_ignored`.
//! - **Importance**: the project's manifests and its entry points (`main`, `lib`, `index`,
//!   `__init__`…) first, then the rest of the source, then documentation (READMEs too) and
//!   configuration, then tests, examples and benchmarks, then everything else.
//! - **Degrade before drop**: every source file first gets its *outline* (the first line of
//!   each definition, numbered, tests left out), or its whole text when it is small; then
//!   outlines become whole files, the cheapest upgrade first, while the budget allows; then
//!   the other classes, whole or as outlines. What does not fit even as an outline is left
//!   out as `over_budget`.
//!
//! The payload keeps its byte order: only what goes in, and how, follows the ladder.

use std::fmt::Write as _;

use ctx_select::role::Role;

/// Why a file found in a walked directory is left out by default, if it is.
pub(crate) fn default_ignored(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    if ctx_select::role::LOCKFILES.contains(&name) || ext == "lock" {
        return Some("a lockfile");
    }
    if name.contains(".min.") {
        return Some("a minified file");
    }
    if ext == "map" && (name.ends_with(".js.map") || name.ends_with(".css.map")) {
        return Some("a source map");
    }
    if ext == "svg" {
        return Some("an SVG drawing");
    }
    None
}

/// File stems that start a program or a library.
const ENTRY_STEMS: &[&str] = &[
    "main", "lib", "mod", "index", "__init__", "__main__", "app", "cli",
];

/// A file's place on the ladder: 0 entry points and manifests; 1 other source; 2
/// documentation (READMEs too) and configuration; 3 tests, examples, benchmarks; 4 the rest.
pub(crate) fn importance(path: &str, code: bool) -> u8 {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let stem = name.split('.').next().unwrap_or(name);
    if ctx_select::role::MANIFESTS.contains(&name) {
        return 0;
    }
    match ctx_select::role::role(path) {
        Role::Source if code && ENTRY_STEMS.contains(&stem) => 0,
        Role::Source if code => 1,
        Role::Source | Role::Docs | Role::Changelog => 2,
        Role::Test | Role::Example => 3,
        Role::Translation | Role::Vendored | Role::Generated => 4,
    }
}

/// One unit as the ladder sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rung {
    /// Place on the ladder ([`importance`]).
    pub class: u8,
    /// Tokens of its whole block, when it can be packed at all.
    pub whole: Option<u64>,
}

/// What the ladder keeps of each unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    No,
    Whole,
    Outline,
}

/// Fills `room` tokens down the ladder. `outline(i)` gives the tokens of unit `i`'s outline
/// block, when it has one smaller than the whole (it is asked only while there is room, in
/// importance order, so a large tree is not parsed past what the budget can hold).
pub(crate) fn fill(
    rungs: &[Rung],
    room: u64,
    outline: &mut dyn FnMut(usize) -> Option<u64>,
) -> (Vec<Kept>, u64) {
    let mut order: Vec<usize> = (0..rungs.len())
        .filter(|&i| rungs[i].whole.is_some())
        .collect();
    order.sort_by_key(|&i| (rungs[i].class, i));
    let mut kept = vec![Kept::No; rungs.len()];
    let mut cost = vec![0u64; rungs.len()];
    let mut used = 0u64;
    let source = |i: usize| rungs[i].class <= 1;
    // Every source file at its smallest, in order.
    let mut outlined: Vec<(u64, usize)> = Vec::new();
    for &i in order.iter().filter(|&&i| source(i)) {
        let whole = rungs[i].whole.unwrap_or(0);
        if used + whole <= room && whole <= SMALL {
            (kept[i], cost[i]) = (Kept::Whole, whole);
        } else if let Some(small) = outline(i).filter(|&o| o < whole && used + o <= room) {
            (kept[i], cost[i]) = (Kept::Outline, small);
            outlined.push((whole - small, i));
        } else if used + whole <= room {
            (kept[i], cost[i]) = (Kept::Whole, whole);
        } else {
            continue;
        }
        used += cost[i];
    }
    // Outlines become whole files: entry points first, then the cheapest upgrade first.
    outlined.sort_unstable_by_key(|&(extra, i)| (rungs[i].class, extra, i));
    for (extra, i) in outlined {
        if used + extra <= room {
            used += extra;
            kept[i] = Kept::Whole;
            cost[i] = rungs[i].whole.unwrap_or(0);
        }
    }
    // Then the other classes, whole or as outlines.
    for &i in order.iter().filter(|&&i| !source(i)) {
        let whole = rungs[i].whole.unwrap_or(0);
        if used + whole <= room {
            (kept[i], cost[i]) = (Kept::Whole, whole);
            used += whole;
        } else if used < room
            && let Some(small) = outline(i).filter(|&o| o < whole && used + o <= room)
        {
            (kept[i], cost[i]) = (Kept::Outline, small);
            used += small;
        }
    }
    (kept, used)
}

/// A source file this small is packed whole before anything is outlined (its outline would
/// save little).
const SMALL: u64 = 200;

/// The outline of `text` (file `label`, `whole_tokens` whole): after a first line saying
/// what it is, the file's leading comment and the first line of each definition, each
/// prefixed with its line number (`120: pub fn walk(&self) {`), so a reader knows where to
/// read. Definitions inside test modules and test functions are left out. `None` when the
/// file's language is unknown or it defines nothing; with the shown lines (1-based ranges).
pub(crate) fn outline(
    label: &str,
    text: &str,
    whole_tokens: u64,
) -> Option<(String, Vec<[u32; 2]>)> {
    let lang = ctx_code::Language::from_path(std::path::Path::new(label))?;
    if text.len() > MAX_OUTLINE_BYTES {
        return None;
    }
    let symbols = ctx_code::symbols::extract(lang, text.as_bytes()).symbols;
    let lines: Vec<&str> = text.lines().collect();
    let mut shown: Vec<usize> = symbols
        .iter()
        .filter(|s| !is_test_symbol(s) && s.line >= 1 && s.line <= lines.len())
        .filter(|s| s.kind != ctx_code::SymbolKind::Variable || s.parent.is_none())
        .map(|s| s.line)
        .collect();
    if shown.is_empty() {
        return None;
    }
    // The leading comment or docstring (a few lines of it).
    for (i, line) in lines.iter().enumerate().take(3) {
        let t = line.trim_start();
        let comment = LEADING_COMMENTS.iter().any(|p| t.starts_with(p));
        if !comment || t.starts_with("#[") || t.starts_with("#include") {
            break;
        }
        shown.push(i + 1);
    }
    shown.sort_unstable();
    shown.dedup();
    let width = shown.last().map_or(1, |n| n.to_string().len());
    let mut out = format!(
        "… outline of {label}: the first line of each definition, numbered; bodies not shown ({whole_tokens} tokens whole)\n"
    );
    for &n in &shown {
        let _ = writeln!(out, "{n:>width$}: {}", lines[n - 1].trim_end());
    }
    let ranges = shown
        .iter()
        .map(|&n| {
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            [n, n]
        })
        .collect();
    Some((out, ranges))
}

/// How a file's leading comment or docstring starts.
const LEADING_COMMENTS: &[&str] = &["//", "#", "/*", "*", "\"\"\"", "'''", "--", ";"];

/// Files larger than this are not parsed for an outline.
const MAX_OUTLINE_BYTES: usize = 1024 * 1024;

/// Whether a definition is a test or lives in a test module (`mod tests`, `test_*`,
/// `Test*` classes).
fn is_test_symbol(symbol: &ctx_code::Symbol) -> bool {
    let in_tests = symbol.parent.as_deref().is_some_and(|p| {
        p.split(['.', ':'])
            .any(|seg| seg == "tests" || seg == "test" || seg.starts_with("Test"))
    });
    let name = symbol.name.as_str();
    in_tests
        || name == "tests"
        || name.starts_with("test_")
        || (symbol.kind == ctx_code::SymbolKind::Class && name.starts_with("Test"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockfiles_minified_maps_and_svg_are_left_out_by_default() {
        for path in [
            "Cargo.lock",
            "web/package-lock.json",
            "yarn.lock",
            "go.sum",
            "static/app.min.js",
            "static/app.js.map",
            "doc/screencast.svg",
        ] {
            assert!(default_ignored(path).is_some(), "{path}");
        }
        for path in [
            "src/main.rs",
            "Cargo.toml",
            "src/lock.rs",
            "docs/map.md",
            "src/sitemap.py",
        ] {
            assert!(default_ignored(path).is_none(), "{path}");
        }
    }

    #[test]
    fn entry_points_and_manifests_lead_then_source_docs_tests() {
        assert_eq!(importance("Cargo.toml", false), 0);
        assert_eq!(importance("README.md", false), 2);
        assert_eq!(importance("src/main.rs", true), 0);
        assert_eq!(importance("src/walk.rs", true), 1);
        assert_eq!(importance("doc/guide.md", false), 2);
        assert_eq!(importance("tests/walk.rs", true), 3);
        assert_eq!(importance("vendor/x/y.rs", true), 4);
    }

    #[test]
    fn every_source_file_is_at_least_an_outline_before_anything_else_is_whole() {
        let rungs = [
            Rung {
                class: 2,
                whole: Some(500),
            }, // docs
            Rung {
                class: 1,
                whole: Some(4000),
            }, // big source
            Rung {
                class: 1,
                whole: Some(1000),
            },
            Rung {
                class: 0,
                whole: Some(100),
            }, // small entry point
            Rung {
                class: 3,
                whole: Some(300),
            }, // a test
        ];
        let outlines = [None, Some(400), Some(150), None, Some(50)];
        let (kept, used) = fill(&rungs, 1500, &mut |i| outlines[i]);
        assert_eq!(kept[3], Kept::Whole);
        assert_eq!(kept[1], Kept::Outline);
        // 100 + 400 + 150 = 650, then the cheapest upgrade (850 more) fits: 1500.
        assert_eq!(kept[2], Kept::Whole);
        assert_eq!(kept[0], Kept::No);
        assert_eq!(kept[4], Kept::No);
        assert_eq!(used, 1500);
        // With room to spare, docs and tests follow.
        let (kept, _) = fill(&rungs, 6000, &mut |i| outlines[i]);
        assert_eq!(
            kept,
            [
                Kept::Whole,
                Kept::Whole,
                Kept::Whole,
                Kept::Whole,
                Kept::Whole
            ]
        );
    }

    #[test]
    fn an_outline_numbers_each_definition_and_says_what_it_is() {
        let text = "use std::fmt;\n\npub struct Walker {\n    depth: usize,\n}\n\nimpl Walker {\n    pub fn new() -> Self {\n        Self { depth: 0 }\n    }\n\n    pub fn walk(&self) {\n        let x = 1;\n        let y = 2;\n        println!(\"{x}{y}\");\n    }\n}\n";
        let (out, shown) = outline("src/walk.rs", text, 60).expect("an outline");
        assert!(shown.contains(&[12, 12]), "{shown:?}");
        assert!(
            out.starts_with("… outline of src/walk.rs: the first line of each definition"),
            "{out}"
        );
        assert!(out.contains("\n12:     pub fn walk(&self) {\n"), "{out}");
        assert!(out.contains("\n 3: pub struct Walker {\n"), "{out}");
        assert!(!out.contains("println!"), "{out}");
        assert!(outline("notes.txt", "just text\n", 3).is_none());
    }
}
