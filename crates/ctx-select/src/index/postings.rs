//! Posting lists of a build, with memory bounded by a budget instead of by the tree.
//!
//! Documents arrive in number order. Their terms go into in-memory lists until those hold
//! about `budget` bytes; then the lists are written, sorted by (term, list), as a run file and
//! memory starts over. At the end the runs are merged and each term's parts, which cover
//! increasing document ranges in run order, are joined into one list per field.
//!
//! A list is what `search.db` stores: per document, the delta from the previous document in
//! the list and the term frequency, as varints. Within a run a list starts from 0 (its first
//! delta is the document's number); joining re-encodes that first delta from the previous
//! part's last document, so the merged list is byte for byte the one a single in-memory pass
//! makes.
//!
//! Besides the [`FIELDS`] of the index there is one more list per term, [`DEFINERS`]: the
//! documents defining a name with that term, which the graph joins with the content field's
//! list of the same term (its reference edges). Runs are ordered by term first, so the merge
//! hands over all lists of a term together.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::analyze::{FIELDS, get_varint, put_varint};
use crate::error::IndexError;

/// Lists per term: the index's fields and [`DEFINERS`].
pub(crate) const LISTS: usize = FIELDS + 1;
/// The list of documents defining a name with the term (see [`crate::graph::definer_term`]);
/// stored in `search.db` as list number 6, for the graph and its updates in place.
pub(crate) const DEFINERS: usize = FIELDS;

/// Bytes a held list costs besides its term and its encoded postings: the hash table slot
/// (a boxed term and a list header, at the table's load factor), two allocations' headers,
/// and the reference a spill sorts. Measured against the live heap, on the safe side.
const ENTRY_OVERHEAD: usize = 128;
/// Write buffer of a run, and read buffer per run while merging.
const RUN_BUFFER: usize = 64 * 1024;

/// A term's postings so far: `list` starts from document 0; `last` is its last document.
struct List {
    list: Vec<u8>,
    last: u32,
}

pub(crate) struct Postings {
    dir: PathBuf,
    budget: usize,
    held: usize,
    lists: [HashMap<Box<str>, List, rustc_hash::FxBuildHasher>; LISTS],
    runs: Vec<PathBuf>,
}

impl Postings {
    /// Spills runs into `dir` (created on first use) once the lists hold about `budget` bytes.
    pub(crate) fn new(dir: PathBuf, budget: usize) -> Self {
        Self {
            dir,
            budget,
            held: 0,
            lists: Default::default(),
            runs: Vec::new(),
        }
    }

    /// Adds `term` with frequency `tf` in list `list` of document `num`, which is the
    /// document of the previous call or a greater one; a term comes once per document and
    /// list.
    pub(crate) fn add(&mut self, num: u32, list: usize, term: &str, tf: u32) {
        let lists = &mut self.lists[list];
        if let Some(entry) = lists.get_mut(term) {
            let before = entry.list.capacity();
            put_varint(&mut entry.list, u64::from(num - entry.last));
            put_varint(&mut entry.list, u64::from(tf));
            entry.last = num;
            self.held += entry.list.capacity() - before;
        } else {
            let mut bytes = Vec::new();
            put_varint(&mut bytes, u64::from(num));
            put_varint(&mut bytes, u64::from(tf));
            self.held += term.len() + bytes.capacity() + ENTRY_OVERHEAD;
            lists.insert(
                term.into(),
                List {
                    list: bytes,
                    last: num,
                },
            );
        }
    }

    /// Ends a document: spills a run if the lists have outgrown the budget.
    pub(crate) fn end_document(&mut self) -> Result<(), IndexError> {
        if self.held >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the held lists as one run, sorted by (term, list), and lets go of them.
    fn spill(&mut self) -> Result<(), IndexError> {
        if self.held == 0 {
            return Ok(());
        }
        fs::create_dir_all(&self.dir).map_err(|e| IndexError::io(&self.dir, e))?;
        let path = self.dir.join(format!("run-{:05}", self.runs.len()));
        let file = File::create(&path).map_err(|e| IndexError::io(&path, e))?;
        let mut out = BufWriter::with_capacity(RUN_BUFFER, file);
        let mut record = Vec::new();
        for_each_term(&self.lists, |term, lists| {
            for (index, entry) in lists.iter().enumerate() {
                let Some(entry) = entry else { continue };
                record.clear();
                put_varint(&mut record, term.len() as u64);
                record.extend_from_slice(term.as_bytes());
                record.push(u8::try_from(index).expect("few lists"));
                put_varint(&mut record, entry.list.len() as u64);
                record.extend_from_slice(&entry.list);
                put_varint(&mut record, u64::from(entry.last));
                out.write_all(&record)
                    .map_err(|e| IndexError::io(&path, e))?;
            }
            Ok(())
        })?;
        out.flush().map_err(|e| IndexError::io(&path, e))?;
        self.runs.push(path);
        // Fresh tables: clearing would keep the old ones' capacity, and so their memory.
        self.lists = Default::default();
        self.held = 0;
        Ok(())
    }

    /// Hands each term, in order, with its lists (empty where it has none) to `visit`, then
    /// removes the run files.
    pub(crate) fn finish(
        mut self,
        mut visit: impl FnMut(&str, &[&[u8]; LISTS]) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        if self.runs.is_empty() {
            // Everything fitted: no files.
            return for_each_term(&self.lists, |term, lists| {
                visit(
                    term,
                    &lists.map(|l| l.map_or(&[][..], |l| l.list.as_slice())),
                )
            });
        }
        self.spill()?;
        let mut readers = Vec::with_capacity(self.runs.len());
        let mut heap = BinaryHeap::with_capacity(self.runs.len());
        for (run, path) in self.runs.iter().enumerate() {
            let file = File::open(path).map_err(|e| IndexError::io(path, e))?;
            let mut reader = RunReader {
                input: BufReader::with_capacity(RUN_BUFFER, file),
                path,
            };
            if let Some(head) = reader.next(run)? {
                heap.push(head);
            }
            readers.push(reader);
        }
        // The term being joined, its lists so far and each list's last document.
        let mut term: Option<String> = None;
        let mut joined: [Vec<u8>; LISTS] = Default::default();
        let mut ends = [0u32; LISTS];
        while let Some(head) = heap.pop() {
            let run = head.run;
            if term.as_deref() != Some(head.term.as_str()) {
                if let Some(done) = &term {
                    visit(done, &joined.each_ref().map(Vec::as_slice))?;
                }
                term = Some(head.term.clone());
                joined.iter_mut().for_each(Vec::clear);
            }
            let list = &mut joined[head.list];
            if list.is_empty() {
                list.extend_from_slice(&head.bytes);
            } else {
                let mut pos = 0;
                let first = get_varint(&head.bytes, &mut pos)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| n > ends[head.list])
                    .ok_or_else(|| damaged(&self.runs[run]))?;
                put_varint(list, u64::from(first - ends[head.list]));
                list.extend_from_slice(&head.bytes[pos..]);
            }
            ends[head.list] = head.last;
            if let Some(next) = readers[run].next(run)? {
                heap.push(next);
            }
        }
        if let Some(done) = &term {
            visit(done, &joined.each_ref().map(Vec::as_slice))?;
        }
        drop(readers);
        fs::remove_dir_all(&self.dir).map_err(|e| IndexError::io(&self.dir, e))
    }
}

/// Calls `visit` for each term of `lists` in order, with its entry in each list.
fn for_each_term(
    lists: &[HashMap<Box<str>, List, rustc_hash::FxBuildHasher>; LISTS],
    mut visit: impl FnMut(&str, [Option<&List>; LISTS]) -> Result<(), IndexError>,
) -> Result<(), IndexError> {
    let sorted: Vec<Vec<(&str, &List)>> = lists
        .iter()
        .map(|map| {
            let mut entries: Vec<(&str, &List)> = map.iter().map(|(t, l)| (&**t, l)).collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            entries
        })
        .collect();
    let mut next = [0usize; LISTS];
    while let Some(term) = (0..LISTS)
        .filter_map(|i| sorted[i].get(next[i]).map(|e| e.0))
        .min()
    {
        let mut group = [None; LISTS];
        for (i, entry) in group.iter_mut().enumerate() {
            if let Some(&(t, list)) = sorted[i].get(next[i])
                && t == term
            {
                *entry = Some(list);
                next[i] += 1;
            }
        }
        visit(term, group)?;
    }
    Ok(())
}

/// The document numbers of a list.
pub(crate) fn documents(list: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut pos = 0;
    let mut num = 0u64;
    std::iter::from_fn(move || {
        num += get_varint(list, &mut pos)?;
        get_varint(list, &mut pos)?;
        u32::try_from(num).ok()
    })
}

fn damaged(path: &Path) -> IndexError {
    IndexError::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidData, "damaged postings run"),
    )
}

/// One record of a run, ordered for a min-heap by (term, list, run): a term's parts come
/// out together, each list's in run order, which is document order.
struct Head {
    term: String,
    list: usize,
    bytes: Vec<u8>,
    last: u32,
    run: usize,
}

impl Head {
    fn key(&self) -> (&str, usize, usize) {
        (&self.term, self.list, self.run)
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

struct RunReader<'p> {
    input: BufReader<File>,
    path: &'p Path,
}

impl RunReader<'_> {
    fn next(&mut self, run: usize) -> Result<Option<Head>, IndexError> {
        let path = self.path;
        let io = |e| IndexError::io(path, e);
        let mut first = [0u8];
        if self.input.read(&mut first).map_err(io)? == 0 {
            return Ok(None);
        }
        let term_len = self.varint(first[0])?;
        let mut term = vec![0; term_len];
        self.input.read_exact(&mut term).map_err(io)?;
        let term = String::from_utf8(term).map_err(|_| damaged(self.path))?;
        let index = usize::from(self.byte()?);
        if index >= LISTS {
            return Err(damaged(self.path));
        }
        let byte = self.byte()?;
        let len = self.varint(byte)?;
        let mut bytes = vec![0; len];
        self.input.read_exact(&mut bytes).map_err(io)?;
        let byte = self.byte()?;
        let last = u32::try_from(self.varint(byte)?).map_err(|_| damaged(self.path))?;
        Ok(Some(Head {
            term,
            list: index,
            bytes,
            last,
            run,
        }))
    }

    fn byte(&mut self) -> Result<u8, IndexError> {
        let mut byte = [0u8];
        self.input
            .read_exact(&mut byte)
            .map_err(|e| IndexError::io(self.path, e))?;
        Ok(byte[0])
    }

    /// A varint whose first byte is `first`.
    fn varint(&mut self, first: u8) -> Result<usize, IndexError> {
        let mut value = usize::from(first & 0x7f);
        let mut byte = first;
        let mut shift = 7;
        while byte & 0x80 != 0 {
            if shift > 63 {
                return Err(damaged(self.path));
            }
            byte = self.byte()?;
            value |= usize::from(byte & 0x7f) << shift;
            shift += 7;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Doc = Vec<(usize, &'static str, u32)>;

    fn collect(budget: usize, docs: &[Doc]) -> Vec<(String, [Vec<u8>; LISTS])> {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("runs");
        let mut postings = Postings::new(dir.clone(), budget);
        for (num, terms) in docs.iter().enumerate() {
            for &(list, term, tf) in terms {
                postings.add(u32::try_from(num).expect("few"), list, term, tf);
            }
            postings.end_document().expect("spill");
        }
        let mut out = Vec::new();
        postings
            .finish(|term, lists| {
                out.push((term.to_owned(), lists.map(<[u8]>::to_vec)));
                Ok(())
            })
            .expect("finish");
        assert!(!dir.exists(), "runs are removed");
        out
    }

    #[test]
    fn spilled_runs_merge_into_the_lists_one_pass_makes() {
        let mut docs: Vec<Doc> = Vec::new();
        for i in 0..300u32 {
            let even = if i % 2 == 0 { "even" } else { "odd" };
            let rare = ["r0", "r1", "r2", "r3", "r4", "r5", "r6"][(i % 7) as usize];
            let mut doc = vec![(0, "all", i % 7 + 1), (0, even, 1), (0, rare, 200 + i)];
            doc.push((1, if i % 3 == 0 { "three" } else { "all" }, 1));
            if i % 50 == 0 {
                doc.push((DEFINERS, "all", 1));
            }
            docs.push(doc);
        }
        docs.push(Vec::new());
        docs.push(vec![(5, "last", 1)]);
        let whole = collect(usize::MAX, &docs);
        for budget in [0, 1, 500, 5000] {
            assert_eq!(collect(budget, &docs), whole, "budget {budget}");
        }
        let terms: Vec<&str> = whole.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            terms,
            [
                "all", "even", "last", "odd", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "three"
            ]
        );
        let all = &whole[0].1;
        assert!(all[2].is_empty());
        let decode = |list: &[u8]| {
            let mut pos = 0;
            let mut num = 0;
            let mut out = Vec::new();
            while pos < list.len() {
                num += get_varint(list, &mut pos).expect("delta");
                out.push((num, get_varint(list, &mut pos).expect("tf")));
            }
            out
        };
        let content = decode(&all[0]);
        assert_eq!(content.len(), 300);
        assert!(
            content
                .iter()
                .enumerate()
                .all(|(i, &(n, tf))| n == i as u64 && tf == n % 7 + 1)
        );
        assert_eq!(
            decode(&all[DEFINERS])
                .iter()
                .map(|p| p.0)
                .collect::<Vec<_>>(),
            [0, 50, 100, 150, 200, 250]
        );
    }
}
