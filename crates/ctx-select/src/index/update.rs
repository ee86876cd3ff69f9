//! Updates in place: when few entries changed, the index is changed where it stands instead of
//! being written anew. Only the changed documents are read and analyzed; their rows, the
//! posting lists whose documents or frequencies change, the graph edges they make and the
//! averages are rewritten in one transaction of `search.db`; their document files are
//! replaced and the manifest and `index.json` rewritten. Documents keep their numbers; new
//! ones are numbered after the last (readers see positions in id order, see [`super::db`]).
//!
//! What comes out holds what a fresh build of the same tree holds, row for row and byte for
//! byte in the manifest and documents (a property test checks it after random edits). The
//! graph's edges are recomputed only where a change can move them: the reference edges of
//! the terms whose users or definers changed, and the import edges of the documents whose
//! imports changed, or of every document when a document came or went or a `Cargo.toml` or
//! `go.mod` changed (imports resolve against the whole tree).
//!
//! The exclusive index lock is held while the index changes, so readers see it before or
//! after. A process killed at any point leaves nothing half done for the next build: before
//! the database commits, the update writes its journal (`.update.json`: the cache version it
//! commits, the document files it replaces and removes) and the new files beside the old
//! ones (`*.next`); after, it moves them in place and removes the journal. The next build
//! finds a journal left behind and finishes the update when the database holds its cache
//! version, or throws the new files away when it does not ([`recover`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use ctx_core::{ContentHash, DocumentId, Progress};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::db::{Editor, NewDoc};
use super::{
    BuildOptions, BuildReport, Built, CacheBuildConfig, CacheIndex, CacheManifest, DOCUMENTS_DIR,
    FORMAT_VERSION, INDEX_FILE, MANIFEST_FILE, Previous, SEARCH_DB_FILE, cache_version,
    document_file_stem, is_layout_file, read_document, write_json,
};
use crate::analyze::{FIELDS, Field, decode_fields};
use crate::error::IndexError;
use crate::graph::{
    Graph, GraphBuilder, IMPORT_WEIGHT, ImportResolver, REFERENCE_WEIGHT, reference_edges,
};
use crate::index::postings::DEFINERS;
use crate::source::{DocumentSource, ErrorPolicy, SourceEntry};

/// At most this many changed entries are applied in place, and at most a quarter of the
/// documents (more is cheaper to build afresh, reusing the unchanged analyses).
const MAX_CHANGES: usize = 2_000;
fn worth_it(changes: usize, documents: usize) -> bool {
    changes > 0 && changes <= MAX_CHANGES && changes * 4 <= documents.max(256)
}

/// A changed entry as it is now.
enum Now {
    /// Read and analyzed, with its document file's bytes.
    Doc(Box<Built>, Vec<u8>),
    Skipped(String),
}

/// A document as `search.db` holds it before the update.
struct OldDoc {
    num: u32,
    commits: u32,
    lengths: [u32; FIELDS],
    fields: [Vec<(String, u32)>; FIELDS],
    definers: Vec<String>,
    imports: Vec<String>,
    lang: Option<String>,
}

/// One document's change: what it was and what it is (either may be missing).
struct Change<'a> {
    id: &'a str,
    old: Option<OldDoc>,
    new: Option<&'a Built>,
    /// Its number: the old one, or a new one after the last.
    num: u32,
}

/// Edits of one posting list: documents leaving it, and documents entering it or changing
/// their frequency.
#[derive(Default)]
struct ListEdit {
    remove: BTreeSet<u32>,
    set: BTreeMap<u32, u32>,
}

/// A posting list: (document number, term frequency) by number.
type List = Vec<(u32, u32)>;
/// A list before and after the update.
type BeforeAfter = (List, List);

/// Graph edge weight changes, both directions recorded.
#[derive(Default)]
struct EdgeDelta(HashMap<(u32, u32), i64>);

impl EdgeDelta {
    fn bump(&mut self, a: u32, b: u32, w: i64) {
        if a == b || w == 0 {
            return;
        }
        *self.0.entry((a, b)).or_insert(0) += w;
        *self.0.entry((b, a)).or_insert(0) += w;
    }

    /// Reference edges of a term with `users` and `definers`, added with `sign`.
    fn references(&mut self, users: &[(u32, u32)], definers: &[(u32, u32)], sign: i64) {
        let definers: Vec<u32> = definers.iter().map(|&(d, _)| d).collect();
        let weight = sign * i64::from(REFERENCE_WEIGHT);
        reference_edges(users.iter().map(|&(u, _)| u), &definers, |u, d| {
            self.bump(u, d, weight);
        });
    }

    /// Applies the changes to adjacency lists by number.
    fn apply(&self, lists: &mut Vec<Vec<(u32, u32)>>, name: &str) -> Result<(), IndexError> {
        let damaged =
            || IndexError::corrupt(name, "search.db: the graph does not match its postings");
        for (&(a, b), &dw) in &self.0 {
            if dw == 0 {
                continue;
            }
            if lists.len() <= a as usize {
                lists.resize(a as usize + 1, Vec::new());
            }
            let list = &mut lists[a as usize];
            match list.binary_search_by_key(&b, |e| e.0) {
                Ok(i) => {
                    let w = i64::from(list[i].1) + dw;
                    match w {
                        0 => {
                            list.remove(i);
                        }
                        w if w < 0 => return Err(damaged()),
                        w => list[i].1 = u32::try_from(w).map_err(|_| damaged())?,
                    }
                }
                Err(i) if dw > 0 => list.insert(i, (b, u32::try_from(dw).map_err(|_| damaged())?)),
                Err(_) => return Err(damaged()),
            }
        }
        Ok(())
    }
}

/// Whether index `prev` can be updated in place for `config` at all (its format and config
/// are the build's). A moved git commit is updated in place too: the recent-activity
/// counts are set again.
pub(super) fn updatable(prev: &Previous, config: &CacheBuildConfig) -> bool {
    prev.manifest.format_version == FORMAT_VERSION
        && prev.config == *config
        && prev.db.has_meta("import_graph")
        && prev.db.has_meta("len_totals")
}

/// Applies the changes a listing of the source shows since `prev` in place when they are
/// few; `None` when a full build is the better (or the only) way: too many changes, another
/// format, config or git commit, or something a full build must report (a file name
/// collision, an abort on a skipped entry).
#[allow(clippy::too_many_arguments)]
pub(super) fn in_place(
    indexes_dir: &Path,
    final_dir: &Path,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    config: &CacheBuildConfig,
    prev: &mut Previous,
    entries: &[SourceEntry],
    git_commits: &dyn Fn() -> BTreeMap<String, u32>,
    progress: &dyn Progress,
) -> Result<Option<BuildReport>, IndexError> {
    if !updatable(prev, config) {
        return Ok(None);
    }
    let listed: HashSet<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    let changed: Vec<&SourceEntry> = entries
        .iter()
        .filter(|e| {
            e.fingerprint.is_none()
                || prev
                    .sources
                    .get(e.id.as_str())
                    .is_none_or(|s| s.fingerprint != e.fingerprint)
        })
        .collect();
    let mut gone: Vec<String> = prev
        .sources
        .keys()
        .filter(|id| !listed.contains(id.as_str()))
        .cloned()
        .collect();
    gone.sort_unstable();
    apply(
        indexes_dir,
        final_dir,
        source,
        opts,
        config,
        prev,
        &changed,
        &gone,
        git_commits,
        progress,
    )
}

/// Applies in place the entries `changed` (new, or with a new fingerprint) and `gone` (no
/// longer listed) to `prev`, which then describes the updated index; `None` as for
/// [`in_place`], with nothing changed.
#[allow(clippy::too_many_arguments)]
pub(super) fn apply(
    indexes_dir: &Path,
    final_dir: &Path,
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    config: &CacheBuildConfig,
    prev: &mut Previous,
    changed: &[&SourceEntry],
    gone: &[String],
    git_commits: &dyn Fn() -> BTreeMap<String, u32>,
    progress: &dyn Progress,
) -> Result<Option<BuildReport>, IndexError> {
    let entries_changed = changed.len() + gone.len();
    let head_moved = prev.git_head != opts.git_head;
    let only_the_head = entries_changed == 0 && head_moved;
    if !(only_the_head || worth_it(entries_changed, prev.manifest.documents.len())) {
        return Ok(None);
    }
    let gone: Vec<&str> = gone.iter().map(String::as_str).collect();
    progress.phase("updating", Some(changed.len() as u64));
    let now: Vec<Now> = changed
        .par_iter()
        .inspect(|_| progress.advance(1))
        .map(|entry| read_entry(source, opts, entry))
        .collect::<Result<_, _>>()?;
    if progress.cancelled() {
        return Err(IndexError::Cancelled);
    }
    let files: HashMap<&str, &DocumentId> = prev
        .manifest
        .documents
        .iter()
        .map(|e| (e.file.as_str(), &e.id))
        .collect();
    for item in &now {
        match item {
            Now::Skipped(_) if opts.policy == ErrorPolicy::Abort => return Ok(None),
            Now::Doc(built, _)
                if files
                    .get(built.entry.file.as_str())
                    .is_some_and(|id| **id != built.entry.id) =>
            {
                return Ok(None);
            }
            _ => {}
        }
    }

    let _swap = super::lock(indexes_dir, &opts.name, true)?;
    // What a full build checks as it reads: nothing is written into a damaged index.
    if !prev.listing_checked {
        super::check_listing(final_dir, &opts.name, &prev.manifest)?;
        prev.listing_checked = true;
    }
    check_replaced(final_dir, &opts.name, prev, changed, &gone)?;
    let db = Editor::open(&final_dir.join(SEARCH_DB_FILE), &opts.name)?;
    let update = Update {
        db: &db,
        name: &opts.name,
        docs_dir: final_dir.join(DOCUMENTS_DIR),
    };
    let (manifest, removed_files) =
        update.run(opts, config, prev, changed, &gone, &now, git_commits)?;
    let journal = Journal {
        cache_version: manifest.cache_version,
        write: now
            .iter()
            .filter_map(|n| match n {
                Now::Doc(built, _) => Some(built.entry.file.clone()),
                Now::Skipped(_) => None,
            })
            .collect(),
        remove: removed_files,
    };
    stage(final_dir, &journal, &now, &manifest)?;
    crash_point(1)?;
    db.commit()?;
    crash_point(2)?;
    journal.finish(final_dir)?;
    let removed = gone
        .iter()
        .filter(|id| {
            prev.manifest
                .documents
                .binary_search_by(|e| e.id.as_str().cmp(id))
                .is_ok()
        })
        .count();
    let report = report(
        opts, final_dir, prev, changed, &gone, &now, &manifest, removed,
    );
    prev.manifest = manifest;
    prev.git_head.clone_from(&opts.git_head);
    for (entry, item) in changed.iter().zip(&now) {
        let skipped = match item {
            Now::Skipped(reason) => Some(reason.clone()),
            Now::Doc(..) => None,
        };
        prev.sources.insert(
            entry.id.to_string(),
            super::SourceRow {
                fingerprint: entry.fingerprint.clone(),
                skipped,
            },
        );
    }
    for id in &gone {
        prev.sources.remove(*id);
    }
    Ok(Some(report))
}

#[cfg(test)]
thread_local! {
    /// Where a test makes this thread's next update stop as a killed process would: 1 after
    /// staging, 2 after the database's commit.
    pub(super) static CRASH_AT: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn crash_point(point: u8) -> Result<(), IndexError> {
    if CRASH_AT.get() == point {
        return Err(IndexError::Cancelled);
    }
    Ok(())
}

#[cfg(not(test))]
#[allow(clippy::unnecessary_wraps)] // the test build's can fail
fn crash_point(_point: u8) -> Result<(), IndexError> {
    Ok(())
}

/// Checks the document files the update replaces or removes against the manifest (their
/// content must hash to the version it records).
fn check_replaced(
    final_dir: &Path,
    name: &str,
    prev: &Previous,
    changed: &[&SourceEntry],
    gone: &[&str],
) -> Result<(), IndexError> {
    let docs_dir = final_dir.join(DOCUMENTS_DIR);
    let ids = changed
        .iter()
        .map(|e| e.id.as_str())
        .chain(gone.iter().copied());
    for id in ids {
        let Ok(i) = prev
            .manifest
            .documents
            .binary_search_by(|e| e.id.as_str().cmp(id))
        else {
            continue;
        };
        let entry = &prev.manifest.documents[i];
        let path = docs_dir.join(&entry.file);
        if let Some(problem) =
            super::verify::check_document_file(&path, &entry.id, entry.version, &entry.file)
        {
            return Err(IndexError::corrupt(name, problem));
        }
    }
    Ok(())
}

/// Reads and analyzes a changed entry.
fn read_entry(
    source: &dyn DocumentSource,
    opts: &BuildOptions,
    entry: &SourceEntry,
) -> Result<Now, IndexError> {
    Ok(match super::read_fresh(source, opts, entry)? {
        Ok((built, json)) => Now::Doc(Box::new(built), json),
        Err(reason) => Now::Skipped(reason),
    })
}

/// The database side of an update, inside its transaction.
struct Update<'t> {
    db: &'t Editor,
    name: &'t str,
    docs_dir: PathBuf,
}

impl Update<'_> {
    fn damaged(&self, what: &str) -> IndexError {
        IndexError::corrupt(self.name, format!("{SEARCH_DB_FILE}: {what}"))
    }

    /// Changes every table; returns the new manifest and the document files to remove.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        opts: &BuildOptions,
        config: &CacheBuildConfig,
        prev: &Previous,
        changed: &[&SourceEntry],
        gone: &[&str],
        now: &[Now],
        git_commits: &dyn Fn() -> BTreeMap<String, u32>,
    ) -> Result<(CacheManifest, Vec<String>), IndexError> {
        let mut next = self.db.next_num()?;
        let mut doc_changes: Vec<Change<'_>> = Vec::new();
        let ids = changed
            .iter()
            .map(|e| e.id.as_str())
            .zip(now.iter().map(Some));
        for (id, item) in ids.chain(gone.iter().map(|id| (*id, None))) {
            let old = self.old_doc(id)?;
            let new = match item {
                Some(Now::Doc(built, _)) => Some(&**built),
                _ => None,
            };
            if old.is_none() && new.is_none() {
                continue;
            }
            let num = old.as_ref().map_or_else(
                || {
                    next += 1;
                    next - 1
                },
                |o| o.num,
            );
            doc_changes.push(Change { id, old, new, num });
        }
        let mut edges = EdgeDelta::default();
        self.postings(&doc_changes, &mut edges)?;
        let head_moved = prev.git_head != opts.git_head;
        let commits = if head_moved || doc_changes.iter().any(|c| c.old.is_none()) {
            git_commits()
        } else {
            BTreeMap::new()
        };
        self.rows(&doc_changes, &commits)?;
        if head_moved {
            // Recent activity is counted at the new commit, for every document.
            self.db.set_commits(&commits)?;
            self.db.set_meta(
                "git_head",
                opts.git_head.as_ref().map(|h| h as &dyn rusqlite::ToSql),
            )?;
        }
        for (entry, item) in changed.iter().zip(now) {
            let skipped = match item {
                Now::Skipped(reason) => Some(reason.as_str()),
                Now::Doc(..) => None,
            };
            self.db
                .put_source(entry.id.as_str(), entry.fingerprint.as_deref(), skipped)?;
        }
        for id in gone {
            self.db.delete_source(id)?;
        }
        self.graph(&doc_changes, edges)?;
        let manifest = new_manifest(opts, config, prev, &doc_changes);
        self.meta(opts, &doc_changes, &manifest)?;
        let removed = doc_changes
            .iter()
            .filter(|c| c.new.is_none())
            .filter_map(|c| DocumentId::new(c.id).ok())
            .map(|id| format!("{}.json", document_file_stem(&id)))
            .collect();
        Ok((manifest, removed))
    }

    fn old_doc(&self, id: &str) -> Result<Option<OldDoc>, IndexError> {
        let Some(row) = self.db.doc(id)? else {
            return Ok(None);
        };
        let fields = decode_fields(&row.terms)
            .ok_or_else(|| self.damaged(&format!("damaged terms of `{id}`")))?;
        let definers = super::definers_of(&row.symbols);
        Ok(Some(OldDoc {
            num: row.num,
            commits: row.commits,
            lengths: row.lengths,
            fields,
            definers,
            imports: row.imports,
            lang: row.lang,
        }))
    }

    /// Rewrites the posting lists the changes touch and records the reference edges that
    /// move with them.
    fn postings(&self, changes: &[Change<'_>], edges: &mut EdgeDelta) -> Result<(), IndexError> {
        let mut edits: BTreeMap<(usize, String), ListEdit> = BTreeMap::new();
        // Terms whose set of users or definers changes: their reference edges move.
        let mut moved: BTreeSet<String> = BTreeSet::new();
        for change in changes {
            let empty: [Vec<(String, u32)>; FIELDS] = Default::default();
            let new_fields = match change.new {
                Some(built) => decode_fields(&built.analysis.terms)
                    .ok_or_else(|| self.damaged("terms packed by this update"))?,
                None => Default::default(),
            };
            let old_fields = change.old.as_ref().map_or(&empty, |o| &o.fields);
            for f in 0..FIELDS {
                let old: HashMap<&str, u32> = old_fields[f]
                    .iter()
                    .map(|(t, n)| (t.as_str(), *n))
                    .collect();
                let new: HashSet<&str> = new_fields[f].iter().map(|(t, _)| t.as_str()).collect();
                for (term, tf) in &new_fields[f] {
                    if old.get(term.as_str()) != Some(tf) {
                        let edit = edits.entry((f, term.clone())).or_default();
                        edit.set.insert(change.num, *tf);
                        if f == Field::Content.index() && !old.contains_key(term.as_str()) {
                            moved.insert(term.clone());
                        }
                    }
                }
                for (term, _) in &old_fields[f] {
                    if !new.contains(term.as_str()) {
                        let edit = edits.entry((f, term.clone())).or_default();
                        edit.remove.insert(change.num);
                        if f == Field::Content.index() {
                            moved.insert(term.clone());
                        }
                    }
                }
            }
            let old_defs: BTreeSet<&String> = change.old.iter().flat_map(|o| &o.definers).collect();
            let new_defs: BTreeSet<&String> = change
                .new
                .iter()
                .flat_map(|b| &b.analysis.definers)
                .collect();
            for term in new_defs.difference(&old_defs) {
                let edit = edits.entry((DEFINERS, (*term).clone())).or_default();
                edit.set.insert(change.num, 1);
                moved.insert((*term).clone());
            }
            for term in old_defs.difference(&new_defs) {
                let edit = edits.entry((DEFINERS, (*term).clone())).or_default();
                edit.remove.insert(change.num);
                moved.insert((*term).clone());
            }
        }
        let mut lists: HashMap<(usize, String), BeforeAfter> = HashMap::new();
        for ((list, term), edit) in edits {
            let old = self.db.list(list, &term)?;
            let mut new: Vec<(u32, u32)> = old
                .iter()
                .copied()
                .filter(|(n, _)| !edit.remove.contains(n) && !edit.set.contains_key(n))
                .collect();
            new.extend(edit.set.iter().map(|(&n, &tf)| (n, tf)));
            new.sort_unstable();
            self.db.write_list(list, &term, &new)?;
            lists.insert((list, term), (old, new));
        }
        for term in &moved {
            let (old_d, new_d) = self.before_after(&lists, DEFINERS, term)?;
            if old_d.is_empty() && new_d.is_empty() {
                continue;
            }
            let (old_u, new_u) = self.before_after(&lists, Field::Content.index(), term)?;
            edges.references(&old_u, &old_d, -1);
            edges.references(&new_u, &new_d, 1);
        }
        Ok(())
    }

    fn before_after(
        &self,
        lists: &HashMap<(usize, String), BeforeAfter>,
        list: usize,
        term: &str,
    ) -> Result<BeforeAfter, IndexError> {
        if let Some((old, new)) = lists.get(&(list, term.to_owned())) {
            return Ok((old.clone(), new.clone()));
        }
        let same = self.db.list(list, term)?;
        Ok((same.clone(), same))
    }

    /// Updates, inserts and deletes the changed documents' rows.
    fn rows(
        &self,
        changes: &[Change<'_>],
        commits: &BTreeMap<String, u32>,
    ) -> Result<(), IndexError> {
        for change in changes {
            let Some(built) = change.new else {
                self.db.delete_doc(change.num)?;
                continue;
            };
            let commits = match &change.old {
                Some(old) => old.commits,
                None => commits.get(change.id).copied().unwrap_or(0),
            };
            self.db.put_doc(
                change.num,
                &NewDoc {
                    id: change.id,
                    version: built.entry.version,
                    file: built.entry.file.trim_end_matches(".json"),
                    fingerprint: None,
                    bytes: built.bytes,
                    commits,
                    analysis: &built.analysis.rest,
                    terms: &built.analysis.terms,
                    lengths: built.analysis.lengths,
                },
            )?;
        }
        Ok(())
    }

    /// The graph: reference edges moved by the postings, import edges of the documents
    /// whose imports changed (or of all, when the tree's files or layout changed).
    fn graph(&self, changes: &[Change<'_>], mut edges: EdgeDelta) -> Result<(), IndexError> {
        let decode = |key: &str| -> Result<Vec<Vec<(u32, u32)>>, IndexError> {
            Graph::decode(&self.db.meta(key)?)
                .map(|g| g.edges)
                .ok_or_else(|| self.damaged(&format!("damaged {key}")))
        };
        let mut total = decode("graph")?;
        let mut imports = decode("import_graph")?;
        let files_changed = changes
            .iter()
            .any(|c| c.old.is_none() || c.new.is_none() || is_layout_file(c.id));
        let mut import_edges = EdgeDelta::default();
        if files_changed {
            let fresh = self.all_import_edges(changes)?;
            let slots = fresh.len().max(imports.len());
            for a in 0..slots {
                let before = imports.get(a).map_or(&[][..], Vec::as_slice);
                let after = fresh.get(a).map_or(&[][..], Vec::as_slice);
                for &(b, w) in before {
                    *import_edges
                        .0
                        .entry((u32::try_from(a).unwrap_or(u32::MAX), b))
                        .or_insert(0) -= i64::from(w);
                }
                for &(b, w) in after {
                    *import_edges
                        .0
                        .entry((u32::try_from(a).unwrap_or(u32::MAX), b))
                        .or_insert(0) += i64::from(w);
                }
            }
        } else {
            self.changed_import_edges(changes, &mut import_edges)?;
        }
        import_edges.apply(&mut imports, self.name)?;
        for (&key, &w) in &import_edges.0 {
            *edges.0.entry(key).or_insert(0) += w;
        }
        edges.apply(&mut total, self.name)?;
        let slots = self.db.next_num()?;
        for lists in [&mut total, &mut imports] {
            if lists.iter().skip(slots as usize).any(|l| !l.is_empty()) {
                return Err(self.damaged("graph edges of a removed document"));
            }
            lists.resize(slots as usize, Vec::new());
        }
        self.db
            .set_meta("graph", Some(&Graph { edges: total }.encode()))?;
        self.db
            .set_meta("import_graph", Some(&Graph { edges: imports }.encode()))
    }

    /// The text of layout file `id`: the changed document's, or the stored one's.
    fn layout_text(&self, changes: &[Change<'_>], id: &str) -> Option<String> {
        if let Some(change) = changes.iter().find(|c| c.id == id) {
            return change.new.and_then(|b| b.layout_text.clone());
        }
        let file = format!("{}.json", document_file_stem(&DocumentId::new(id).ok()?));
        read_document(&self.docs_dir.join(file), self.name)
            .ok()
            .map(|d| d.content().to_owned())
    }

    /// The import edges of the whole tree as it is after the changes.
    fn all_import_edges(&self, changes: &[Change<'_>]) -> Result<Vec<Vec<(u32, u32)>>, IndexError> {
        let ids = self.db.ids()?;
        let slots = ids.iter().map(|(n, _)| *n as usize + 1).max().unwrap_or(0);
        let pairs: Vec<(u32, &str)> = ids.iter().map(|(n, id)| (*n, id.as_str())).collect();
        let rows = self.db.importers()?;
        let mut builder = GraphBuilder::new(slots);
        let visited: Result<(), std::convert::Infallible> = builder.add_imports(
            &pairs,
            |id| self.layout_text(changes, id),
            |visit| {
                for (num, lang, imports) in &rows {
                    if let Some(language) = ctx_code::Language::from_name(lang) {
                        visit(*num, language, imports);
                    }
                }
                Ok(())
            },
        );
        visited.unwrap_or_else(|never| match never {});
        Ok(builder.finish().edges)
    }

    /// Import edges of documents changed in place whose imports changed (the tree's files
    /// and layout are the same, so nothing else resolves differently).
    fn changed_import_edges(
        &self,
        changes: &[Change<'_>],
        delta: &mut EdgeDelta,
    ) -> Result<(), IndexError> {
        let moved: Vec<&Change<'_>> = changes
            .iter()
            .filter(|c| {
                let (Some(old), Some(new)) = (&c.old, c.new) else {
                    return false;
                };
                let lang = new.analysis.rest.language.map(ctx_code::Language::name);
                old.lang.as_deref() != lang || old.imports != new.analysis.rest.imports
            })
            .collect();
        if moved.is_empty() {
            return Ok(());
        }
        let ids = self.db.ids()?;
        let pairs: Vec<(u32, &str)> = ids.iter().map(|(n, id)| (*n, id.as_str())).collect();
        let resolver = ImportResolver::new(&pairs, |id| self.layout_text(changes, id));
        for change in moved {
            let old = change.old.as_ref().expect("filtered");
            let new = change.new.expect("filtered");
            if let Some(language) = old.lang.as_deref().and_then(ctx_code::Language::from_name) {
                resolver.targets(change.num, language, &old.imports, &mut |to| {
                    delta.bump(change.num, to, -i64::from(IMPORT_WEIGHT));
                });
            }
            if let Some(language) = new.analysis.rest.language {
                resolver.targets(
                    change.num,
                    language,
                    &new.analysis.rest.imports,
                    &mut |to| {
                        delta.bump(change.num, to, i64::from(IMPORT_WEIGHT));
                    },
                );
            }
        }
        Ok(())
    }

    /// The totals and averages, the cache version and the root.
    fn meta(
        &self,
        opts: &BuildOptions,
        changes: &[Change<'_>],
        manifest: &CacheManifest,
    ) -> Result<(), IndexError> {
        let (mut count, mut totals) = self.db.totals()?;
        for change in changes {
            if let Some(old) = &change.old {
                count = count
                    .checked_sub(1)
                    .ok_or_else(|| self.damaged("len_totals"))?;
                for (total, len) in totals.iter_mut().zip(old.lengths) {
                    *total = total
                        .checked_sub(u64::from(len))
                        .ok_or_else(|| self.damaged("len_totals"))?;
                }
            }
            if let Some(new) = change.new {
                count += 1;
                for (total, len) in totals.iter_mut().zip(new.analysis.lengths) {
                    *total += u64::from(len);
                }
            }
        }
        self.db.set_totals(count, &totals)?;
        self.db
            .set_meta("cache_version", Some(&manifest.cache_version.to_string()))?;
        let root = opts.root.as_ref().map(|r| r.to_string_lossy().into_owned());
        self.db
            .set_meta("root", root.as_ref().map(|r| r as &dyn rusqlite::ToSql))
    }
}

/// The manifest after the changes (the previous one's entries, sorted by id, edited in
/// place).
fn new_manifest(
    opts: &BuildOptions,
    config: &CacheBuildConfig,
    prev: &Previous,
    changes: &[Change<'_>],
) -> CacheManifest {
    let mut documents = prev.manifest.documents.clone();
    for change in changes {
        let at = documents.binary_search_by(|e| e.id.as_str().cmp(change.id));
        match (at, change.new) {
            (Ok(i), Some(built)) => documents[i] = built.entry.clone(),
            (Err(i), Some(built)) => documents.insert(i, built.entry.clone()),
            (Ok(i), None) => {
                documents.remove(i);
            }
            (Err(_), None) => {}
        }
    }
    CacheManifest {
        format_version: FORMAT_VERSION,
        cache_version: cache_version(config, &documents),
        created_at: opts.created_at.clone(),
        config: config.clone(),
        documents,
    }
}

/// The file of an update's journal, in the index directory.
const JOURNAL_FILE: &str = ".update.json";
/// Where an update writes its new files until its database commits.
const STAGING_DIR: &str = ".staged";

/// What an update changes besides `search.db`, written before the database commits.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// The cache version the database holds once the update committed.
    cache_version: ContentHash,
    /// Document files written (in the staging directory until they are moved in place).
    write: Vec<String>,
    /// Document files removed.
    remove: Vec<String>,
}

/// Writes the journal, then the new document files, manifest and `index.json` into the
/// staging directory (readers see none of it: they read `documents/`, the manifest and the
/// database).
fn stage(
    final_dir: &Path,
    journal: &Journal,
    now: &[Now],
    manifest: &CacheManifest,
) -> Result<(), IndexError> {
    let staging = final_dir.join(STAGING_DIR);
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| IndexError::io(&staging, e))?;
    }
    fs::create_dir(&staging).map_err(|e| IndexError::io(&staging, e))?;
    write_json(&final_dir.join(JOURNAL_FILE), journal, JOURNAL_FILE)?;
    for item in now {
        if let Now::Doc(built, json) = item {
            let path = staging.join(&built.entry.file);
            fs::write(&path, json).map_err(|e| IndexError::io(&path, e))?;
        }
    }
    write_json(&staging.join(MANIFEST_FILE), manifest, MANIFEST_FILE)?;
    let index = CacheIndex(
        manifest
            .documents
            .iter()
            .map(|e| (e.id.clone(), e.file.clone()))
            .collect(),
    );
    write_json(&staging.join(INDEX_FILE), &index, INDEX_FILE)
}

fn remove_if_there(path: &Path) -> Result<(), IndexError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(IndexError::io(path, e)),
        _ => Ok(()),
    }
}

impl Journal {
    /// After the database committed: removes the files of the documents that went, moves
    /// the staged files in place (the manifest last), then drops the journal.
    fn finish(&self, final_dir: &Path) -> Result<(), IndexError> {
        let docs_dir = final_dir.join(DOCUMENTS_DIR);
        let staging = final_dir.join(STAGING_DIR);
        let kept: HashSet<&str> = self.write.iter().map(String::as_str).collect();
        for file in &self.remove {
            if !kept.contains(file.as_str()) {
                remove_if_there(&docs_dir.join(file))?;
            }
        }
        let moves = self
            .write
            .iter()
            .map(|f| (staging.join(f), docs_dir.join(f)))
            .chain([INDEX_FILE, MANIFEST_FILE].map(|f| (staging.join(f), final_dir.join(f))));
        for (from, to) in moves {
            // Moved already by a finish that was cut short.
            if from.exists() {
                fs::rename(&from, &to).map_err(|e| IndexError::io(&to, e))?;
            }
        }
        self.done(final_dir)
    }

    /// Drops the staging directory and the journal.
    fn done(&self, final_dir: &Path) -> Result<(), IndexError> {
        let staging = final_dir.join(STAGING_DIR);
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(|e| IndexError::io(&staging, e))?;
        }
        remove_if_there(&final_dir.join(JOURNAL_FILE))
    }
}

/// Finishes or undoes an update a killed process left behind in index `name` at `dir`:
/// finished when `search.db` holds the cache version its journal names (the database
/// committed), undone otherwise. Runs under the builder lock, before anything reads the
/// index to update it.
pub(super) fn recover(dir: &Path, name: &str) -> Result<(), IndexError> {
    let path = dir.join(JOURNAL_FILE);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(IndexError::io(&path, e)),
    };
    let Ok(journal) = serde_json::from_slice::<Journal>(&bytes) else {
        // Cut short while it was written: nothing but the staging directory came before.
        let staging = dir.join(STAGING_DIR);
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(|e| IndexError::io(&staging, e))?;
        }
        return fs::remove_file(&path).map_err(|e| IndexError::io(&path, e));
    };
    let db = super::SearchDb::open(&dir.join(SEARCH_DB_FILE), name)?;
    let committed = db.cache_version() == journal.cache_version;
    drop(db);
    let _swap = super::lock(dir.parent().unwrap_or(dir), name, true)?;
    if committed {
        journal.finish(dir)
    } else {
        journal.done(dir)
    }
}

/// What the update did, as a build reports it.
#[allow(clippy::too_many_arguments)]
fn report(
    opts: &BuildOptions,
    final_dir: &Path,
    prev: &Previous,
    changed: &[&SourceEntry],
    gone: &[&str],
    now: &[Now],
    manifest: &CacheManifest,
    removed: usize,
) -> BuildReport {
    let mut skipped: BTreeMap<&str, Option<&str>> = prev
        .sources
        .iter()
        .filter(|(_, s)| s.skipped.is_some())
        .map(|(id, s)| (id.as_str(), s.skipped.as_deref()))
        .collect();
    for (entry, item) in changed.iter().zip(now) {
        let reason = match item {
            Now::Skipped(reason) => Some(reason.as_str()),
            Now::Doc(..) => None,
        };
        skipped.insert(entry.id.as_str(), reason);
    }
    for id in gone {
        skipped.remove(id);
    }
    let read = now.iter().filter(|n| matches!(n, Now::Doc(..))).count();
    let documents = manifest.documents.len();
    BuildReport {
        name: opts.name.clone(),
        path: final_dir.to_owned(),
        cache_version: manifest.cache_version,
        documents,
        read,
        reused: documents - read,
        removed,
        up_to_date: false,
        skipped: skipped
            .into_iter()
            .filter_map(|(id, reason)| reason.map(|r| super::skip_line(id, r)))
            .collect(),
    }
}
