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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;

use ctx_code::related::{ProjectLayout, resolve_imports};
use ctx_code::{FileSummary, Language};

use crate::analyze::{Analysis, Field, get_varint, put_varint};

/// Identifiers defined in more files than this make no reference edges (too common).
pub const MAX_DEFINERS: usize = 3;
pub(crate) const IMPORT_WEIGHT: u32 = 3;
pub(crate) const REFERENCE_WEIGHT: u32 = 1;

/// Calls `edge(user, definer)` for each reference edge of a term: `users` hold it among
/// their content terms, `definers` define a name with it as [`definer_term`]. A term defined
/// in more than [`MAX_DEFINERS`] files makes none.
pub(crate) fn reference_edges(
    users: impl IntoIterator<Item = u32>,
    definers: &[u32],
    mut edge: impl FnMut(u32, u32),
) {
    if definers.len() > MAX_DEFINERS {
        return;
    }
    for from in users {
        for &to in definers {
            edge(from, to);
        }
    }
}

/// Adjacency lists by document number: (neighbour, weight), sorted by neighbour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    pub edges: Vec<Vec<(u32, u32)>>,
}

/// The term a defined name is found by in other files' content (its joined, lower-cased and
/// stemmed parts), if it is distinctive enough to make reference edges.
pub(crate) fn definer_term(name: &str) -> Option<String> {
    let term = crate::text::identifier_parts(name).concat();
    (term.len() >= 4 && !crate::text::is_stop_word(&term)).then(|| crate::text::stem(&term))
}

/// Resolves documents' import statements to the documents they import.
pub(crate) struct ImportResolver<'a> {
    num: HashMap<&'a str, u32>,
    id: HashMap<u32, &'a str>,
    layout: ProjectLayout,
    /// Go imports resolve to package directories: each directory's files.
    dir_files: BTreeMap<&'a str, Vec<u32>>,
}

impl<'a> ImportResolver<'a> {
    /// Over every document, as (number, id) in id order.
    pub(crate) fn new(
        ids: &[(u32, &'a str)],
        layout_text: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let files: BTreeSet<String> = ids.iter().map(|(_, id)| (*id).to_owned()).collect();
        let mut dir_files: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for &(n, id) in ids {
            let dir = id.rsplit_once('/').map_or("", |(d, _)| d);
            dir_files.entry(dir).or_default().push(n);
        }
        Self {
            num: ids.iter().map(|&(n, id)| (id, n)).collect(),
            id: ids.iter().map(|&(n, id)| (n, id)).collect(),
            layout: ProjectLayout::new(files, layout_text),
            dir_files,
        }
    }

    /// Calls `to` with each document that `from`'s imports resolve to (once per import
    /// resolved; the same document may come more than once).
    pub(crate) fn targets(
        &self,
        from: u32,
        language: Language,
        imports: &[String],
        to: &mut dyn FnMut(u32),
    ) {
        let Some(id) = self.id.get(&from) else {
            return;
        };
        if imports.is_empty() {
            return;
        }
        let summary = FileSummary {
            path: (*id).to_owned(),
            language,
            lines: 0,
            symbols: Vec::new(),
            imports: imports.to_vec(),
            has_errors: false,
            skeleton: None,
        };
        for target in resolve_imports(&summary, &self.layout) {
            if let Some(&n) = self.num.get(target.path.as_str()) {
                to(n);
            } else if let Some(files) = self.dir_files.get(target.path.as_str()) {
                for &n in files {
                    to(n);
                }
            }
        }
    }
}

/// A graph being built from its edges, in any order (weights add up).
pub(crate) struct GraphBuilder {
    weights: Vec<BTreeMap<u32, u32>>,
}

impl GraphBuilder {
    pub(crate) fn new(documents: usize) -> Self {
        Self {
            weights: vec![BTreeMap::new(); documents],
        }
    }

    fn add(&mut self, a: u32, b: u32, w: u32) {
        if a == b {
            return;
        }
        for (x, y) in [(a, b), (b, a)] {
            if let Some(slot) = self.weights.get_mut(x as usize) {
                *slot.entry(y).or_insert(0) += w;
            }
        }
    }

    /// Import edges. `ids` are every document's (number, id) in id order; `layout_text`
    /// returns the text of a `Cargo.toml` or `go.mod` among them; `docs` calls its visitor
    /// with (document number, language, import statements as written) for the documents that
    /// import something.
    pub(crate) fn add_imports<E>(
        &mut self,
        ids: &[(u32, &str)],
        layout_text: impl Fn(&str) -> Option<String>,
        docs: impl FnOnce(&mut dyn FnMut(u32, Language, &[String])) -> Result<(), E>,
    ) -> Result<(), E> {
        let resolver = ImportResolver::new(ids, layout_text);
        docs(&mut |from, language, imports| {
            resolver.targets(from, language, imports, &mut |to| {
                self.add(from, to, IMPORT_WEIGHT);
            });
        })
    }

    /// Reference edges of one term: `users` hold it among their content terms, `definers`
    /// define a name with it as [`definer_term`] (each document once, in any order). A term
    /// defined in more than [`MAX_DEFINERS`] files makes none.
    pub(crate) fn add_references(
        &mut self,
        users: impl IntoIterator<Item = u32>,
        definers: &[u32],
    ) {
        reference_edges(users, definers, |from, to| {
            self.add(from, to, REFERENCE_WEIGHT);
        });
    }

    /// The graph so far, encoded as [`GraphBuilder::encode`] does.
    pub(crate) fn encoded(&self) -> Vec<u8> {
        encode_lists(
            self.weights.len(),
            self.weights
                .iter()
                .map(|m| (m.len(), m.iter().map(|(&to, &w)| (to, w)))),
        )
    }

    /// The graph as [`Graph::encode`] writes it, straight from the builder (an index build
    /// needs only the blob; its adjacency lists would be a second copy of the edges).
    pub(crate) fn encode(self) -> Vec<u8> {
        let count = self.weights.len();
        encode_lists(
            count,
            self.weights.into_iter().map(|m| (m.len(), m.into_iter())),
        )
    }

    pub(crate) fn finish(self) -> Graph {
        Graph {
            edges: self
                .weights
                .into_iter()
                .map(|m| m.into_iter().collect())
                .collect(),
        }
    }
}

/// `count` adjacency lists, each given as (length, (neighbour, weight) in neighbour order).
pub(crate) fn encode_lists<L: Iterator<Item = (u32, u32)>>(
    count: usize,
    lists: impl Iterator<Item = (usize, L)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, count as u64);
    for (len, list) in lists {
        put_varint(&mut out, len as u64);
        let mut last = 0u32;
        for (to, w) in list {
            put_varint(&mut out, u64::from(to - last));
            put_varint(&mut out, u64::from(w));
            last = to;
        }
    }
    out
}

impl Graph {
    /// Builds the graph of documents given in id order as (id, analysis, text of
    /// `Cargo.toml`/`go.mod` files).
    pub fn build(docs: &[(&str, &Analysis, Option<&str>)]) -> Self {
        let ids: Vec<(u32, &str)> = docs
            .iter()
            .enumerate()
            .map(|(i, (id, _, _))| (u32::try_from(i).unwrap_or(u32::MAX), *id))
            .collect();
        let texts: HashMap<&str, &str> = docs
            .iter()
            .filter_map(|(id, _, text)| text.map(|t| (*id, t)))
            .collect();
        let mut builder = GraphBuilder::new(docs.len());
        let imported: Result<(), Infallible> = builder.add_imports(
            &ids,
            |path| texts.get(path).map(|t| (*t).to_owned()),
            |visit| {
                for (i, (_, analysis, _)) in docs.iter().enumerate() {
                    if let Some(language) = analysis.language {
                        visit(
                            u32::try_from(i).unwrap_or(u32::MAX),
                            language,
                            &analysis.imports,
                        );
                    }
                }
                Ok(())
            },
        );
        imported.unwrap_or_else(|never| match never {});
        // Identifier term → defining files, and → files using it.
        let mut definers: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        let mut users: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, (_, analysis, _)) in docs.iter().enumerate() {
            let n = u32::try_from(i).unwrap_or(u32::MAX);
            for name in &analysis.symbols {
                if let Some(term) = definer_term(name) {
                    let list = definers.entry(term).or_default();
                    if list.last() != Some(&n) {
                        list.push(n);
                    }
                }
            }
            for (term, _) in &analysis.fields[Field::Content.index()] {
                users.entry(term).or_default().push(n);
            }
        }
        for (term, files) in &definers {
            if let Some(users) = users.get(term.as_str()) {
                builder.add_references(users.iter().copied(), files);
            }
        }
        builder.finish()
    }

    /// The graph as one compact blob.
    pub fn encode(&self) -> Vec<u8> {
        encode_lists(
            self.edges.len(),
            self.edges.iter().map(|l| (l.len(), l.iter().copied())),
        )
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
