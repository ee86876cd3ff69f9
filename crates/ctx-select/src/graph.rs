//! The import/reference graph of an index and a personalized PageRank over it (the idea of
//! aider's repo map): files the query points at pass rank to the files they import, the files
//! that import them, and the files defining the identifiers they use.
//!
//! Edges, built once at index time:
//! - **import** (weight 3): an import statement resolved to a file by `ctx_code::related`;
//! - **reference** (weight 1): a file's content uses an identifier (of 4+ characters) that is
//!   defined in at most [`MAX_DEFINERS`] files.
//!
//! Rank flows both ways along an edge (a change to a callee often touches its callers).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use ctx_code::FileSummary;
use ctx_code::related::{ProjectLayout, resolve_imports};

use crate::analyze::{Analysis, Field, get_varint, put_varint};

/// Identifiers defined in more files than this make no reference edges (too common).
pub const MAX_DEFINERS: usize = 3;
const IMPORT_WEIGHT: u32 = 3;
const REFERENCE_WEIGHT: u32 = 1;

/// Adjacency lists by document number: (neighbour, weight), sorted by neighbour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    pub edges: Vec<Vec<(u32, u32)>>,
}

impl Graph {
    /// Builds the graph of documents given in id order as (id, analysis, text of
    /// `Cargo.toml`/`go.mod` files).
    pub fn build(docs: &[(&str, &Analysis, Option<&str>)]) -> Self {
        Self::build_with(docs, |i| {
            Cow::Borrowed(docs[i].1.fields[Field::Content.index()].as_slice())
        })
    }

    /// [`Self::build`], with document `i`'s content terms from `content_terms(i)` instead of
    /// its analysis (an index build holds them packed, and unpacks one document at a time).
    pub fn build_with<'d>(
        docs: &'d [(&str, &Analysis, Option<&str>)],
        content_terms: impl Fn(usize) -> Cow<'d, [(String, u32)]>,
    ) -> Self {
        let num: HashMap<&str, u32> = docs
            .iter()
            .enumerate()
            .map(|(i, (id, _, _))| (*id, u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        let texts: HashMap<&str, &str> = docs
            .iter()
            .filter_map(|(id, _, text)| text.map(|t| (*id, t)))
            .collect();
        let files: BTreeSet<String> = docs.iter().map(|(id, _, _)| (*id).to_owned()).collect();
        let layout = ProjectLayout::new(files, |path| texts.get(path).map(|t| (*t).to_owned()));
        // Go imports resolve to package directories: map each to its files.
        let mut dir_files: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for (i, (id, _, _)) in docs.iter().enumerate() {
            let dir = id.rsplit_once('/').map_or("", |(d, _)| d);
            dir_files
                .entry(dir)
                .or_default()
                .push(u32::try_from(i).unwrap_or(u32::MAX));
        }

        let mut weights: Vec<BTreeMap<u32, u32>> = vec![BTreeMap::new(); docs.len()];
        let add = |a: u32, b: u32, w: u32, weights: &mut Vec<BTreeMap<u32, u32>>| {
            if a == b {
                return;
            }
            for (x, y) in [(a, b), (b, a)] {
                if let Some(slot) = weights.get_mut(x as usize) {
                    *slot.entry(y).or_insert(0) += w;
                }
            }
        };

        for (i, (id, analysis, _)) in docs.iter().enumerate() {
            let Some(language) = analysis.language else {
                continue;
            };
            if analysis.imports.is_empty() {
                continue;
            }
            let summary = FileSummary {
                path: (*id).to_owned(),
                language,
                lines: 0,
                symbols: Vec::new(),
                imports: analysis.imports.clone(),
                has_errors: false,
                skeleton: None,
            };
            let from = u32::try_from(i).unwrap_or(u32::MAX);
            for target in resolve_imports(&summary, &layout) {
                if let Some(&to) = num.get(target.path.as_str()) {
                    add(from, to, IMPORT_WEIGHT, &mut weights);
                } else if let Some(files) = dir_files.get(target.path.as_str()) {
                    for &to in files {
                        add(from, to, IMPORT_WEIGHT, &mut weights);
                    }
                }
            }
        }

        // Reference edges: identifier (as its joined, lower-cased term) → defining files.
        let mut definers: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, (_, analysis, _)) in docs.iter().enumerate() {
            for name in &analysis.symbols {
                let term = crate::text::identifier_parts(name).concat();
                if term.len() >= 4 && !crate::text::is_stop_word(&term) {
                    let list = definers.entry(crate::text::stem(&term)).or_default();
                    let n = u32::try_from(i).unwrap_or(u32::MAX);
                    if list.last() != Some(&n) {
                        list.push(n);
                    }
                }
            }
        }
        definers.retain(|_, files| files.len() <= MAX_DEFINERS);
        for i in 0..docs.len() {
            let from = u32::try_from(i).unwrap_or(u32::MAX);
            for (term, _) in content_terms(i).iter() {
                if let Some(files) = definers.get(term) {
                    for &to in files {
                        add(from, to, REFERENCE_WEIGHT, &mut weights);
                    }
                }
            }
        }
        Self {
            edges: weights
                .into_iter()
                .map(|m| m.into_iter().collect())
                .collect(),
        }
    }

    /// The graph as one compact blob.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, self.edges.len() as u64);
        for list in &self.edges {
            put_varint(&mut out, list.len() as u64);
            let mut last = 0u32;
            for &(to, w) in list {
                put_varint(&mut out, u64::from(to - last));
                put_varint(&mut out, u64::from(w));
                last = to;
            }
        }
        out
    }

    /// Inverse of [`Graph::encode`]; `None` if damaged.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let mut pos = 0;
        let n = usize::try_from(get_varint(bytes, &mut pos)?).ok()?;
        let mut edges = Vec::with_capacity(n.min(1 << 24));
        for _ in 0..n {
            let degree = usize::try_from(get_varint(bytes, &mut pos)?).ok()?;
            let mut list = Vec::with_capacity(degree.min(1 << 20));
            let mut previous = 0u32;
            for _ in 0..degree {
                let to = previous.checked_add(u32::try_from(get_varint(bytes, &mut pos)?).ok()?)?;
                let w = u32::try_from(get_varint(bytes, &mut pos)?).ok()?;
                list.push((to, w));
                previous = to;
            }
            edges.push(list);
        }
        (pos == bytes.len()).then_some(Self { edges })
    }

    /// Number of edges (each direction counted).
    pub fn edge_count(&self) -> usize {
        self.edges.iter().map(Vec::len).sum()
    }

    /// Personalized PageRank: `seeds` are (document number, weight); returns a rank per
    /// document (summing to 1), or all zeros without seeds. Damping 0.85, 30 iterations;
    /// the arithmetic order is fixed, so the result is the same on every run.
    pub fn personalized_pagerank(&self, seeds: &[(u32, f64)]) -> Vec<f64> {
        let n = self.edges.len();
        let mut teleport = vec![0.0; n];
        let total: f64 = seeds.iter().map(|s| s.1).sum();
        if n == 0 || total <= 0.0 {
            return teleport;
        }
        for &(doc, w) in seeds {
            if let Some(t) = teleport.get_mut(doc as usize) {
                *t += w / total;
            }
        }
        let out_weight: Vec<f64> = self
            .edges
            .iter()
            .map(|l| l.iter().map(|&(_, w)| f64::from(w)).sum())
            .collect();
        let damping = 0.85;
        let mut rank = teleport.clone();
        let mut next = vec![0.0; n];
        for _ in 0..30 {
            let mut dangling = 0.0;
            next.fill(0.0);
            for (u, list) in self.edges.iter().enumerate() {
                if rank[u] == 0.0 {
                    continue;
                }
                if list.is_empty() {
                    dangling += rank[u];
                    continue;
                }
                let share = rank[u] / out_weight[u];
                for &(v, w) in list {
                    next[v as usize] += share * f64::from(w);
                }
            }
            for (i, x) in next.iter_mut().enumerate() {
                *x = damping * (*x + dangling * teleport[i]) + (1.0 - damping) * teleport[i];
            }
            std::mem::swap(&mut rank, &mut next);
        }
        rank
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::analyze;

    #[test]
    fn imports_and_references_make_edges_and_rank_flows_along_them() {
        let main = analyze(
            "src/main.rs",
            "mod parser;\nfn main() { parser::run_parser(); }\n",
        );
        let parser = analyze("src/parser.rs", "pub fn run_parser() {}\n");
        let other = analyze("src/other.rs", "pub fn unrelated() {}\n");
        let docs = [
            ("src/main.rs", &main, None),
            ("src/other.rs", &other, None),
            ("src/parser.rs", &parser, None),
        ];
        let graph = Graph::build(&docs);
        assert!(graph.edges[0].iter().any(|&(to, _)| to == 2), "{graph:?}");
        assert!(graph.edges[2].iter().any(|&(to, _)| to == 0), "{graph:?}");
        assert!(graph.edges[1].is_empty());
        assert_eq!(Graph::decode(&graph.encode()), Some(graph.clone()));
        let rank = graph.personalized_pagerank(&[(0, 1.0)]);
        assert!(rank[2] > 0.1 && rank[1] == 0.0, "{rank:?}");
        assert!(graph.personalized_pagerank(&[]).iter().all(|&r| r == 0.0));
    }
}
