//! What select shows of a file that does not fit whole: the regions the query is about.
//!
//! A file is cut into regions: each function, method or constructor (with its decorators
//! and the comments just above it), and the code between them in paragraphs (class headers
//! and attributes, module constants, imports). Regions are scored against the query like
//! small documents (BM25 over the query's terms, weighted by how rare each term is in the
//! index), plus the definition of an identifier the query names and a message it quotes.
//!
//! A view within an allowance of tokens is built down a ladder: the best regions whole with
//! the signatures of their enclosing scopes; a region too large cut around its matching
//! lines; then the file's other signatures; then its head (docstring, imports). Lines are
//! shown verbatim, in file order; each run of lines left out becomes one marker line
//! `… lines 120-164 not shown`, so an agent can read exactly those lines next.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use crate::analyze::{MAX_PARSE_BYTES, def_term};
use crate::text::terms;

/// Query-side inputs of region scoring.
#[derive(Debug, Clone, Default)]
pub struct Focus {
    /// Query terms with their weight (inverse document frequency in the index).
    pub weights: Vec<(String, f64)>,
    /// Whole-identifier terms the query names ([`def_term`] form).
    pub idents: Vec<String>,
    /// Message fragments the query quotes, to find verbatim.
    pub messages: Vec<String>,
}

impl Focus {
    fn max_weight(&self) -> f64 {
        self.weights.iter().map(|(_, w)| *w).fold(1.0, f64::max)
    }
}

/// What a view shows of its file.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ViewKind {
    /// The whole file.
    #[default]
    Whole,
    /// The regions the query matches, with signatures around them.
    Regions,
    /// Signatures and the file's head only (no region matched, or none fitted).
    Outline,
    /// The file's skeleton: every body elided (selection without a query focus).
    Skeleton,
}

impl ViewKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Whole => "whole",
            Self::Regions => "regions",
            Self::Outline => "outline",
            Self::Skeleton => "skeleton",
        }
    }
}

/// A built view.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub kind: ViewKind,
    pub content: String,
    /// Shown line ranges, 1-based and inclusive, in file order.
    pub lines: Vec<[u32; 2]>,
}

/// One region of a file (0-based inclusive line range).
#[derive(Debug, Clone)]
struct Region {
    start: usize,
    end: usize,
    /// Header lines of the scopes around it (class, impl, module).
    scopes: Vec<usize>,
    score: f64,
    /// A function or method (not the code between definitions).
    callable: bool,
}

/// A file cut into regions and scored, ready to build views of it at any allowance.
pub struct FileRegions {
    /// Byte range of each line (without its newline).
    lines: Vec<(usize, usize)>,
    /// Estimated tokens per line (the file's exact count spread by bytes).
    line_tokens: Vec<f64>,
    /// Per line: the summed weight of the distinct query terms on it.
    heat: Vec<f64>,
    regions: Vec<Region>,
    /// Header lines of every definition, in file order.
    outline: Vec<usize>,
    /// Lines before the first definition (docstring, imports).
    head_end: usize,
}

/// Tokens a marker line costs (estimate).
const MARKER_TOKENS: f64 = 8.0;
/// Lines of context kept around a matching line when a region is cut.
const CUT_CONTEXT: usize = 2;
/// Longest paragraph region between definitions.
const MAX_GAP_REGION: usize = 30;
/// Regions between definitions shorter than this many lines are shown once the signatures
/// are (a struct's fields, an enum's variants).
const SMALL_REGION: usize = 12;

/// Per line of a file: the indices of the query terms on it (into `focus.weights`), the
/// summed weight of the distinct ones (its heat), and its number of terms.
fn line_hits(lines: &[&str], focus: &Focus) -> (Vec<Vec<u32>>, Vec<f64>, Vec<u32>) {
    let mut line_terms: Vec<Vec<u32>> = Vec::with_capacity(lines.len());
    let mut heat = Vec::with_capacity(lines.len());
    let mut line_len = Vec::with_capacity(lines.len());
    for line in lines {
        let mut hits: Vec<u32> = Vec::new();
        let mut len = 0u32;
        terms(line, |t| {
            len += 1;
            if let Some(i) = focus.weights.iter().position(|(q, _)| q == t) {
                hits.push(u32::try_from(i).unwrap_or(u32::MAX));
            }
        });
        let mut distinct = hits.clone();
        distinct.sort_unstable();
        distinct.dedup();
        heat.push(
            distinct
                .iter()
                .map(|&i| focus.weights[i as usize].1)
                .sum::<f64>(),
        );
        line_terms.push(hits);
        line_len.push(len);
    }

    (line_terms, heat, line_len)
}

/// Scores each region: BM25 over the query's terms, plus a strong bonus for defining an
/// identifier the query names or holding a message it quotes.
fn score_regions(
    regions: &mut [Region],
    lines: &[&str],
    line_terms: &[Vec<u32>],
    line_len: &[u32],
    def_at: &[(usize, String)],
    focus: &Focus,
) {
    // BM25 over regions.
    let lens: Vec<f64> = regions
        .iter()
        .map(|r| f64::from(line_len[r.start..=r.end].iter().sum::<u32>()))
        .collect();
    let avg = (lens.iter().sum::<f64>() / lens.len().max(1) as f64).max(1.0);
    let (k1, b) = (1.2, 0.75);
    let strong = 2.0 * focus.max_weight();
    for (r, len) in regions.iter_mut().zip(&lens) {
        let mut tf = vec![0u32; focus.weights.len()];
        for hits in &line_terms[r.start..=r.end] {
            for &h in hits {
                tf[h as usize] += 1;
            }
        }
        let mut score = 0.0;
        for (i, &f) in tf.iter().enumerate() {
            if f == 0 {
                continue;
            }
            let f = f64::from(f);
            score += focus.weights[i].1 * f * (k1 + 1.0) / (f + k1 * (1.0 - b + b * len / avg));
        }
        if !focus.idents.is_empty()
            && def_at.iter().any(|(line, term)| {
                *line >= r.start
                    && *line <= r.end
                    && !term.is_empty()
                    && focus.idents.contains(term)
            })
        {
            score += strong;
        }
        if !focus.messages.is_empty() {
            let text = lines[r.start..=r.end].join("\n");
            if focus.messages.iter().any(|m| text.contains(m.as_str())) {
                score += strong;
            }
        }
        r.score = score;
    }
}

impl FileRegions {
    /// Cuts `content` (file `id`, `tokens` exact tokens whole) into scored regions.
    pub fn new(id: &str, content: &str, tokens: u64, focus: &Focus) -> Self {
        let lines: Vec<&str> = content.lines().collect();
        let bytes = content.len().max(1) as f64;
        let per_byte = tokens as f64 / bytes;
        let line_tokens: Vec<f64> = lines
            .iter()
            .map(|l| ((l.len() + 1) as f64 * per_byte).max(1.0))
            .collect();
        let (line_terms, heat, line_len) = line_hits(&lines, focus);

        let language = ctx_code::Language::from_path(Path::new(id));
        let symbols = language
            .filter(|_| content.len() <= MAX_PARSE_BYTES)
            .map(|l| ctx_code::symbols::extract(l, content.as_bytes()).symbols)
            .unwrap_or_default();
        let n = lines.len();
        // Definitions: callables not inside another callable become regions.
        let mut covered = vec![false; n];
        let mut regions: Vec<Region> = Vec::new();
        let mut defs: Vec<(usize, usize)> = Vec::new();
        let mut sorted: Vec<&ctx_code::Symbol> = symbols.iter().collect();
        sorted.sort_by_key(|s| (s.line, std::cmp::Reverse(s.end_line)));
        for sym in &sorted {
            if !sym.kind.is_callable() || sym.line == 0 || sym.line > n {
                continue;
            }
            let header = sym.line - 1;
            let end = sym.end_line.clamp(sym.line, n) - 1;
            if covered[header] {
                continue;
            }
            let start = lead_in(&lines, header, &covered);
            for c in &mut covered[start..=end] {
                *c = true;
            }
            defs.push((start, end));
        }
        let containers: Vec<(usize, usize)> = sorted
            .iter()
            .filter(|s| s.kind.is_container() && s.line >= 1 && s.line <= n)
            .map(|s| (s.line - 1, s.end_line.clamp(s.line, n) - 1))
            .collect();
        let scopes_of = |start: usize| -> Vec<usize> {
            containers
                .iter()
                .filter(|(h, e)| *h < start && start <= *e)
                .map(|(h, _)| *h)
                .collect()
        };
        for &(start, end) in &defs {
            regions.push(Region {
                start,
                end,
                scopes: scopes_of(start),
                score: 0.0,
                callable: true,
            });
        }
        // Between definitions: paragraphs, split at blank lines and container headers.
        let container_starts: BTreeSet<usize> = containers
            .iter()
            .map(|(h, _)| lead_in(&lines, *h, &covered))
            .collect();
        let mut i = 0;
        while i < n {
            if covered[i] || lines[i].trim().is_empty() {
                i += 1;
                continue;
            }
            let start = i;
            let mut end = i;
            let mut j = i + 1;
            while j < n && !covered[j] && j - start < MAX_GAP_REGION {
                if container_starts.contains(&j) {
                    break;
                }
                if lines[j].trim().is_empty() {
                    // A paragraph ends here unless the region is still short.
                    if end - start >= 3 {
                        break;
                    }
                } else {
                    end = j;
                }
                j += 1;
            }
            regions.push(Region {
                start,
                end,
                scopes: scopes_of(start),
                score: 0.0,
                callable: false,
            });
            i = end + 1;
        }
        regions.sort_by_key(|r| r.start);

        let def_at: Vec<(usize, String)> = sorted
            .iter()
            .filter(|s| s.line >= 1 && s.line <= n)
            .map(|s| (s.line - 1, def_term(&s.name)))
            .collect();
        score_regions(&mut regions, &lines, &line_terms, &line_len, &def_at, focus);

        let mut outline: Vec<usize> = sorted
            .iter()
            .filter(|s| s.line >= 1 && s.line <= n)
            .map(|s| s.line - 1)
            .collect();
        outline.sort_unstable();
        outline.dedup();
        let head_end = outline.first().copied().unwrap_or(n.min(40));
        let base = content.as_ptr() as usize;
        let lines = lines
            .iter()
            .map(|l| {
                let at = l.as_ptr() as usize - base;
                (at, at + l.len())
            })
            .collect();
        Self {
            lines,
            line_tokens,
            heat,
            regions,
            outline,
            head_end,
        }
    }

    /// Whether any region matched the query.
    pub fn matched(&self) -> bool {
        self.regions.iter().any(|r| r.score > 0.0)
    }

    /// The view of `content` (the text these regions were cut from) within `allowance`
    /// tokens (estimated; the caller counts the result exactly), or `None` when not even one
    /// line fits.
    pub fn view(&self, content: &str, allowance: f64) -> Option<View> {
        let line = |i: usize| -> &str { &content[self.lines[i].0..self.lines[i].1] };
        let n = self.lines.len();
        if n == 0 {
            return None;
        }
        let mut plan = Plan {
            shown: vec![false; n],
            cost: MARKER_TOKENS,
            tokens: &self.line_tokens,
        };
        let mut ranked: Vec<&Region> = self.regions.iter().filter(|r| r.score > 0.0).collect();
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.start.cmp(&b.start)));
        let top = ranked.first().map_or(0.0, |r| r.score);
        let mut regions_shown = false;
        for region in &ranked {
            let mut lines: Vec<usize> = region.scopes.clone();
            lines.extend(region.start..=region.end);
            if plan.try_add(&lines, allowance) {
                regions_shown = true;
                continue;
            }
            if region.score < 0.5 * top {
                continue;
            }
            // Too large: its header and scopes, then windows around its hottest lines.
            let header = region.scopes.iter().copied().chain([region.start]);
            if !plan.try_add(&header.collect::<Vec<_>>(), allowance) {
                continue;
            }
            let mut hot: Vec<usize> = (region.start..=region.end)
                .filter(|&l| self.heat[l] > 0.0)
                .collect();
            hot.sort_by(|&a, &b| self.heat[b].total_cmp(&self.heat[a]).then(a.cmp(&b)));
            for l in hot {
                let from = l.saturating_sub(CUT_CONTEXT).max(region.start);
                let to = (l + CUT_CONTEXT).min(region.end);
                if plan.try_add(&(from..=to).collect::<Vec<_>>(), allowance)
                    || plan.try_add(&[l], allowance)
                {
                    regions_shown = true;
                }
            }
        }
        // Signatures, nearest to what is shown first, then the head.
        let mut outline = self.outline.clone();
        let shown_at: Vec<usize> = (0..n).filter(|&l| plan.shown[l]).collect();
        outline.sort_by_key(|&l| {
            let d = shown_at.iter().map(|&s| s.abs_diff(l)).min().unwrap_or(l);
            (d, l)
        });
        for l in outline {
            if !plan.try_add(&[l], allowance) && plan.cost + self.line_tokens[l] > allowance {
                break;
            }
        }
        for l in 0..self.head_end.min(n) {
            if line(l).trim().is_empty() {
                continue;
            }
            if !plan.try_add(&[l], allowance) {
                break;
            }
        }
        // Then small definitions between functions (fields, variants, constants).
        for region in self.regions.iter().filter(|r| !r.callable) {
            if region.end - region.start < SMALL_REGION {
                let mut lines: Vec<usize> = region.scopes.clone();
                lines.extend(region.start..=region.end);
                plan.try_add(&lines, allowance);
            }
        }
        if !plan.shown.iter().any(|s| *s) {
            return None;
        }
        // A gap of one or two blank lines reads better (and costs less) shown than marked.
        let mut i = 0;
        while i < n {
            if plan.shown[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < n && !plan.shown[i] {
                i += 1;
            }
            if start > 0 && i < n && i - start <= 2 && (start..i).all(|l| line(l).trim().is_empty())
            {
                for shown in &mut plan.shown[start..i] {
                    *shown = true;
                }
            }
        }
        let kind = if plan.shown.iter().all(|s| *s) {
            ViewKind::Whole
        } else if regions_shown {
            ViewKind::Regions
        } else {
            ViewKind::Outline
        };
        Some(self.render(content, &plan.shown, kind))
    }

    fn render(&self, content_of: &str, shown: &[bool], kind: ViewKind) -> View {
        let line = |i: usize| -> &str { &content_of[self.lines[i].0..self.lines[i].1] };
        let n = self.lines.len();
        let mut content = String::new();
        let mut ranges: Vec<[u32; 2]> = Vec::new();
        let mut i = 0;
        while i < n {
            let start = i;
            let on = shown[i];
            while i < n && shown[i] == on {
                i += 1;
            }
            let (a, b) = (start + 1, i);
            if on {
                for l in start..i {
                    content.push_str(line(l));
                    content.push('\n');
                }
                ranges.push([
                    u32::try_from(a).unwrap_or(u32::MAX),
                    u32::try_from(b).unwrap_or(u32::MAX),
                ]);
            } else {
                let indent: String = (start..i)
                    .map(line)
                    .find(|l| !l.trim().is_empty())
                    .map(|l| l.chars().take_while(|c| c.is_whitespace()).collect())
                    .unwrap_or_default();
                if a == b {
                    let _ = writeln!(content, "{indent}… line {a} not shown");
                } else {
                    let _ = writeln!(content, "{indent}… lines {a}-{b} not shown");
                }
            }
        }
        View {
            kind,
            content,
            lines: ranges,
        }
    }
}

/// The first line of a definition's lead-in: decorators, attributes and comments directly
/// above its header.
fn lead_in(lines: &[&str], header: usize, covered: &[bool]) -> usize {
    let mut start = header;
    while start > 0 && header - start < 20 && !covered[start - 1] {
        let t = lines[start - 1].trim_start();
        let lead = t.starts_with('@')
            || t.starts_with("#[")
            || t.starts_with("//")
            || t.starts_with("/*")
            || t.starts_with("* ")
            || t == "*/"
            || t.starts_with("*/")
            || (t.starts_with('#') && !t.starts_with("#include") && !t.starts_with("#define"));
        if !lead {
            break;
        }
        start -= 1;
    }
    start
}

/// Lines chosen so far and their estimated cost.
struct Plan<'t> {
    shown: Vec<bool>,
    cost: f64,
    tokens: &'t [f64],
}

impl Plan<'_> {
    /// Adds `lines` if the cost stays within `allowance` (a new run of lines costs a marker).
    fn try_add(&mut self, lines: &[usize], allowance: f64) -> bool {
        let mut fresh: Vec<usize> = lines
            .iter()
            .copied()
            .filter(|&l| l < self.shown.len() && !self.shown[l])
            .collect();
        fresh.sort_unstable();
        fresh.dedup();
        if fresh.is_empty() {
            return true;
        }
        let mut extra: f64 = fresh.iter().map(|&l| self.tokens[l]).sum();
        // Each new run that touches nothing shown splits a marker in two.
        let mut prev: Option<usize> = None;
        for &l in &fresh {
            let joins = prev == Some(l.wrapping_sub(1))
                || (l > 0 && self.shown[l - 1])
                || (l + 1 < self.shown.len() && self.shown[l + 1]);
            if !joins {
                extra += MARKER_TOKENS;
            }
            prev = Some(l);
        }
        if self.cost + extra > allowance {
            return false;
        }
        for l in fresh {
            self.shown[l] = true;
        }
        self.cost += extra;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn focus(terms: &[(&str, f64)], idents: &[&str]) -> Focus {
        Focus {
            weights: terms
                .iter()
                .map(|(t, w)| (crate::text::stem(t), *w))
                .collect(),
            idents: idents.iter().map(|s| def_term(s)).collect(),
            messages: Vec::new(),
        }
    }

    const SOURCE: &str = "\"\"\"Ledger module.\"\"\"
import os


class Ledger:
    \"\"\"Keeps entries.\"\"\"

    currency = \"EUR\"

    def add(self, entry):
        self.entries.append(entry)
        return len(self.entries)

    @property
    def balance(self):
        total = 0
        for entry in self.entries:
            total += entry.amount
        return total

    def close(self):
        self.closed = True


def helper():
    return os.getcwd()
";

    #[test]
    fn the_matching_method_is_shown_whole_with_its_class_header() {
        let f = focus(&[("balance", 3.0), ("amount", 2.0)], &[]);
        let regions = FileRegions::new("ledger.py", SOURCE, 160, &f);
        let view = regions.view(SOURCE, 100.0).expect("a view");
        assert_eq!(view.kind, ViewKind::Regions);
        assert!(view.content.contains("class Ledger:\n"), "{}", view.content);
        assert!(
            view.content
                .contains("    @property\n    def balance(self):\n")
        );
        assert!(view.content.contains("            total += entry.amount\n"));
        assert!(
            !view.content.contains("self.closed = True"),
            "{}",
            view.content
        );
        // Line numbers of what is left out.
        assert!(view.content.contains("… lines "), "{}", view.content);
        assert!(
            view.lines.iter().any(|[a, b]| *a <= 15 && *b >= 19),
            "{:?}",
            view.lines
        );
    }

    #[test]
    fn a_named_definition_wins_over_term_matches() {
        let f = focus(&[("entries", 1.0)], &["close"]);
        let regions = FileRegions::new("ledger.py", SOURCE, 160, &f);
        let view = regions.view(SOURCE, 60.0).expect("a view");
        assert!(
            view.content.contains("self.closed = True"),
            "{}",
            view.content
        );
    }

    #[test]
    fn a_large_region_is_cut_around_its_matching_lines() {
        let mut body = String::from("def big(x):\n");
        for i in 0..200 {
            if i == 120 {
                body.push_str("    raise ValueError('needle in the haystack')\n");
            } else {
                let _ = writeln!(body, "    x = x + {i}");
            }
        }
        let f = focus(&[("needle", 5.0), ("haystack", 5.0)], &[]);
        let regions = FileRegions::new("big.py", &body, 2400, &f);
        let view = regions.view(&body, 120.0).expect("a view");
        assert_eq!(view.kind, ViewKind::Regions);
        assert!(
            view.content.starts_with("def big(x):\n"),
            "{}",
            view.content
        );
        assert!(view.content.contains("needle in the haystack"));
        assert!(view.content.contains("    x = x + 119\n"));
        assert!(view.content.len() < body.len() / 4);
    }

    #[test]
    fn without_a_match_the_outline_is_shown() {
        let f = focus(&[("zebra", 3.0)], &[]);
        let regions = FileRegions::new("ledger.py", SOURCE, 160, &f);
        assert!(!regions.matched());
        let view = regions.view(SOURCE, 100.0).expect("a view");
        assert_eq!(view.kind, ViewKind::Outline);
        assert!(
            view.content.contains("    def close(self):\n"),
            "{}",
            view.content
        );
        assert!(!view.content.contains("total += entry.amount"));
    }

    #[test]
    fn a_generous_allowance_shows_what_matches_and_every_signature() {
        let f = focus(&[("balance", 3.0)], &[]);
        let regions = FileRegions::new("ledger.py", SOURCE, 160, &f);
        let view = regions.view(SOURCE, 1000.0).expect("a view");
        for sig in ["def add(self, entry):", "def close(self):", "def helper():"] {
            assert!(view.content.contains(sig), "{sig}: {}", view.content);
        }
    }

    #[test]
    fn nothing_fits_in_nothing() {
        let f = focus(&[("balance", 3.0)], &[]);
        let regions = FileRegions::new("ledger.py", SOURCE, 160, &f);
        assert!(regions.view(SOURCE, 0.0).is_none());
    }

    #[test]
    fn text_without_a_grammar_is_cut_in_paragraphs() {
        let text = "Intro line.\n\nFirst topic here.\nMore of it.\n\nThe needle paragraph.\nAnd its tail.\n\nClosing words.\n";
        let f = focus(&[("needle", 4.0)], &[]);
        let regions = FileRegions::new("notes.txt", text, 30, &f);
        let view = regions.view(text, 40.0).expect("a view");
        assert!(
            view.content
                .contains("The needle paragraph.\nAnd its tail.\n"),
            "{}",
            view.content
        );
    }
}
