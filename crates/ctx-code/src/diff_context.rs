//! `diff-context`: a diff whose hunks are widened to their enclosing function or class, so a
//! reviewer (or an agent) sees whole definitions instead of three lines of context.

use std::path::Path;

use git2::{Delta, DiffOptions, Patch, Repository};
use serde::Serialize;

use crate::error::CodeError;
use crate::git::resolve_tree;
use crate::lang::Language;
use crate::symbols::{Symbol, extract};

/// Definitions longer than this are not used to widen a hunk (the hunk keeps git's context
/// and still names its scope).
pub const MAX_WIDEN_LINES: usize = 400;

/// The definition a hunk sits in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HunkScope {
    pub name: String,
    pub kind: String,
    pub start_line: usize,
    pub end_line: usize,
}

/// One widened hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    pub old_start: usize,
    pub old_lines: usize,
    pub new_start: usize,
    pub new_lines: usize,
    /// The innermost function or class containing the change, in the new file.
    pub scope: Option<HunkScope>,
    /// Unified-diff body lines, each starting with ` `, `+` or `-`.
    pub lines: Vec<String>,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// `added`, `deleted`, `modified`, `renamed`, `typechange`.
    pub status: String,
    pub binary: bool,
    pub insertions: usize,
    pub deletions: usize,
    pub hunks: Vec<Hunk>,
}

/// The whole widened diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffContext {
    pub base: String,
    /// A revision, or `working tree` (staged and unstaged changes).
    pub head: String,
    pub files: Vec<FileDiff>,
    pub insertions: usize,
    pub deletions: usize,
}

/// Reads a working-tree file by its repository-relative path; `None` when it cannot be read
/// (refused by a sandbox, gone).
pub type WorkdirReader<'a> = &'a (dyn Fn(&str) -> Option<Vec<u8>> + Sync);

/// The diff of `head` (or the working tree with the index when `None`) against `base`
/// (default `HEAD`), widened.
///
/// With `reader`, every working-tree file is read through it (a server's sandbox), and a
/// file whose patch shows a line the reader's content does not hold (a symlink swapped in
/// while libgit2 read the tree by path, a file it refuses) is left out: nothing libgit2 read
/// by path reaches the answer unless the sandbox read the same bytes.
pub fn diff_context(
    repo: &Repository,
    base: Option<&str>,
    head: Option<&str>,
    reader: Option<WorkdirReader<'_>>,
) -> Result<DiffContext, CodeError> {
    let base_rev = base.unwrap_or("HEAD");
    let base_tree = if base.is_none() && repo.head().is_err() {
        None // unborn branch: everything is new
    } else {
        Some(resolve_tree(repo, base_rev)?)
    };
    let mut opts = DiffOptions::new();
    opts.context_lines(3).include_untracked(false);
    let (diff, head_label, head_tree) = if let Some(rev) = head {
        let tree = resolve_tree(repo, rev)?;
        let diff = repo.diff_tree_to_tree(base_tree.as_ref(), Some(&tree), Some(&mut opts))?;
        (diff, rev.to_owned(), Some(tree))
    } else {
        let diff = repo.diff_tree_to_workdir_with_index(base_tree.as_ref(), Some(&mut opts))?;
        (diff, "working tree".to_owned(), None)
    };
    let workdir = crate::git::workdir(repo);
    let mut files = Vec::new();
    let (mut insertions, mut deletions) = (0, 0);
    for index in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(index) else {
            continue;
        };
        let new_path = delta
            .new_file()
            .path()
            .and_then(Path::to_str)
            .unwrap_or("")
            .to_owned();
        let old_path = delta
            .old_file()
            .path()
            .and_then(Path::to_str)
            .unwrap_or("")
            .to_owned();
        let status = match delta.status() {
            Delta::Added | Delta::Untracked => "added",
            Delta::Deleted => "deleted",
            Delta::Renamed => "renamed",
            Delta::Copied => "copied",
            Delta::Typechange => "typechange",
            _ => "modified",
        };
        let patch = Patch::from_diff(&diff, index)?;
        let binary = delta.flags().is_binary() || patch.is_none();
        let from_workdir = head_tree.is_none() && status != "deleted";
        // The working-tree text: through the reader when there is one.
        let workdir_text = match (from_workdir, reader) {
            (false, _) => None,
            (true, Some(read)) => read(&new_path),
            (true, None) => std::fs::read(workdir.join(&new_path)).ok(),
        };
        if from_workdir
            && reader.is_some()
            && let Some(patch) = &patch
            && !workdir_text
                .as_deref()
                .is_some_and(|text| new_side_matches(patch, text))
        {
            continue;
        }
        let mut file = FileDiff {
            path: if status == "deleted" {
                old_path.clone()
            } else {
                new_path.clone()
            },
            old_path: (status == "renamed" || status == "copied").then(|| old_path.clone()),
            status: status.to_owned(),
            binary,
            insertions: 0,
            deletions: 0,
            hunks: Vec::new(),
        };
        if let Some(patch) = patch {
            let (_, added, removed) = patch.line_stats()?;
            file.insertions = added;
            file.deletions = removed;
            insertions += added;
            deletions += removed;
            if !binary {
                let new_text = if status == "deleted" {
                    None
                } else {
                    match &head_tree {
                        Some(tree) => tree
                            .get_path(Path::new(&new_path))
                            .ok()
                            .and_then(|e| repo.find_blob(e.id()).ok())
                            .map(|b| b.content().to_vec()),
                        None => workdir_text,
                    }
                };
                file.hunks = widen_patch(&patch, &new_path, new_text.as_deref())?;
            }
        }
        files.push(file);
    }
    files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok(DiffContext {
        base: base_rev.to_owned(),
        head: head_label,
        files,
        insertions,
        deletions,
    })
}

/// Whether every new-side line of `patch` (context and additions) is, at its line number,
/// the same bytes in `text`.
fn new_side_matches(patch: &Patch<'_>, text: &[u8]) -> bool {
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    for h in 0..patch.num_hunks() {
        let Ok(count) = patch.num_lines_in_hunk(h) else {
            return false;
        };
        for l in 0..count {
            let Ok(line) = patch.line_in_hunk(h, l) else {
                return false;
            };
            if !matches!(line.origin(), ' ' | '+') {
                continue;
            }
            let Some(number) = line.new_lineno() else {
                return false;
            };
            let content = line.content();
            let content = content.strip_suffix(b"\n").unwrap_or(content);
            let at = usize::try_from(number).unwrap_or(usize::MAX);
            if at == 0 || lines.get(at - 1) != Some(&content) {
                return false;
            }
        }
    }
    true
}

/// A hunk with the new-file range it is widened to.
struct Widened {
    first: usize,
    last: usize,
    scope: Option<HunkScope>,
    hunk: RawHunk,
}

struct RawHunk {
    old_start: usize,
    new_start: usize,
    /// (origin, text, new line number if any)
    lines: Vec<(char, String)>,
    /// New-file lines covered (first, last), or the insertion point for pure deletions.
    new_first: usize,
    new_last: usize,
    /// The changed lines' range in the new file (for finding the scope).
    change_first: usize,
    change_last: usize,
}

fn widen_patch(
    patch: &Patch<'_>,
    file_path: &str,
    new_text: Option<&[u8]>,
) -> Result<Vec<Hunk>, CodeError> {
    let mut raw = Vec::new();
    for h in 0..patch.num_hunks() {
        let (hunk, count) = patch.hunk(h)?;
        let mut lines = Vec::with_capacity(count);
        let (mut change_first, mut change_last) = (usize::MAX, 0);
        // The new-file line a deleted line sits before.
        let mut next_new = hunk.new_start() as usize;
        for l in 0..count {
            let line = patch.line_in_hunk(h, l)?;
            let origin = line.origin();
            if !matches!(origin, ' ' | '+' | '-') {
                continue; // "\ No newline at end of file" markers
            }
            let text = String::from_utf8_lossy(line.content());
            let text = text.trim_end_matches(['\n', '\r']).to_owned();
            let anchor = match (origin, line.new_lineno()) {
                ('+', Some(n)) => {
                    next_new = n as usize + 1;
                    Some(n as usize)
                }
                ('-', _) => Some(next_new.max(1)),
                (_, Some(n)) => {
                    next_new = n as usize + 1;
                    None
                }
                _ => None,
            };
            if let Some(n) = anchor {
                change_first = change_first.min(n);
                change_last = change_last.max(n);
            }
            lines.push((origin, text));
        }
        let new_start = hunk.new_start() as usize;
        let new_lines = hunk.new_lines() as usize;
        raw.push(RawHunk {
            old_start: hunk.old_start() as usize,
            new_start,
            lines,
            new_first: new_start,
            new_last: (new_start + new_lines).saturating_sub(1),
            change_first: if change_first == usize::MAX {
                new_start
            } else {
                change_first
            },
            change_last: change_last.max(new_start),
        });
    }
    let symbols: Vec<Symbol> = match (Language::from_path(Path::new(file_path)), new_text) {
        (Some(lang), Some(text)) => extract(lang, text).symbols,
        _ => Vec::new(),
    };
    let new_lines: Vec<String> = new_text
        .map(|t| {
            String::from_utf8_lossy(t)
                .split('\n')
                .map(|l| l.trim_end_matches('\r').to_owned())
                .collect()
        })
        .unwrap_or_default();

    // Widen each hunk to its scope, then merge hunks whose widened ranges touch.
    let mut widened: Vec<Widened> = raw
        .into_iter()
        .map(|hunk| {
            let scope = enclosing(&symbols, hunk.change_first, hunk.change_last);
            let (mut first, mut last) = (hunk.new_first, hunk.new_last);
            if let Some(s) = &scope
                && s.end_line - s.start_line < MAX_WIDEN_LINES
            {
                first = first.min(s.start_line);
                last = last.max(s.end_line.min(new_lines.len()));
            }
            Widened {
                first,
                last,
                scope,
                hunk,
            }
        })
        .collect();
    widened.sort_by_key(|w| w.hunk.new_start);

    let mut out: Vec<Hunk> = Vec::new();
    let mut i = 0;
    while i < widened.len() {
        let mut j = i;
        let mut last = widened[i].last;
        while j + 1 < widened.len() && widened[j + 1].first <= last + 1 {
            j += 1;
            last = last.max(widened[j].last);
        }
        let group = &widened[i..=j];
        let first = group[0].first;
        let context = |from: usize, to: usize| -> Vec<(char, String)> {
            (from..=to)
                .filter(|&n| n >= 1 && n <= new_lines.len())
                .map(|n| (' ', new_lines[n - 1].clone()))
                .collect()
        };
        let mut lines: Vec<(char, String)> = Vec::new();
        let lead = if group[0].hunk.new_first > first {
            context(first, group[0].hunk.new_first - 1)
        } else {
            Vec::new()
        };
        let lead_len = lead.len();
        lines.extend(lead);
        let mut cursor = group[0].hunk.new_first;
        for (k, w) in group.iter().enumerate() {
            if k > 0 && w.hunk.new_first > cursor {
                lines.extend(context(cursor, w.hunk.new_first - 1));
            }
            lines.extend(w.hunk.lines.iter().cloned());
            cursor = cursor.max(w.hunk.new_last + 1);
        }
        if last >= cursor {
            lines.extend(context(cursor, last));
        }
        let old_lines = lines.iter().filter(|(o, _)| *o != '+').count();
        let new_count = lines.iter().filter(|(o, _)| *o != '-').count();
        let old_start = group[0]
            .hunk
            .old_start
            .saturating_sub(lead_len)
            .max(usize::from(old_lines > 0));
        let new_start = if new_count == 0 {
            group[0].hunk.new_start
        } else {
            first.max(1)
        };
        out.push(Hunk {
            old_start,
            old_lines,
            new_start,
            new_lines: new_count,
            scope: group.iter().find_map(|w| w.scope.clone()),
            lines: lines.into_iter().map(|(o, t)| format!("{o}{t}")).collect(),
        });
        i = j + 1;
    }
    Ok(out)
}

/// The innermost function, or else class-like definition, containing lines `first..=last`.
fn enclosing(symbols: &[Symbol], first: usize, last: usize) -> Option<HunkScope> {
    let contains = |s: &&Symbol| s.line <= first && s.end_line >= last;
    let innermost = |callable: bool| {
        symbols
            .iter()
            .filter(contains)
            .filter(|s| {
                if callable {
                    s.kind.is_callable()
                } else {
                    s.kind.is_container()
                }
            })
            .min_by_key(|s| s.end_line - s.line)
    };
    innermost(true)
        .or_else(|| innermost(false))
        .map(|s| HunkScope {
            name: match &s.parent {
                Some(p) => format!("{p}::{}", s.name),
                None => s.name.clone(),
            },
            kind: s.kind.name().to_owned(),
            start_line: s.line,
            end_line: s.end_line,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::tests::repo_with;

    #[test]
    fn a_reader_whose_bytes_differ_from_what_git_read_leaves_the_file_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = repo_with(
            dir.path(),
            &[("one", &[("a.txt", "one\ntwo\n"), ("b.txt", "x\n")])],
        );
        std::fs::write(dir.path().join("a.txt"), "one\nthree\n").expect("edit");
        std::fs::write(dir.path().join("b.txt"), "y\n").expect("edit");
        // The reader sees a.txt as git does, and b.txt as something else (a file swapped
        // between git's read and the sandbox's).
        let read = |path: &str| -> Option<Vec<u8>> {
            match path {
                "a.txt" => Some(b"one\nthree\n".to_vec()),
                "b.txt" => Some(b"outside\n".to_vec()),
                _ => None,
            }
        };
        let got = diff_context(&repo, None, None, Some(&read)).expect("diff");
        let paths: Vec<&str> = got.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.txt"]);
        assert_eq!((got.insertions, got.deletions), (1, 1));
        let refused = |_: &str| -> Option<Vec<u8>> { None };
        let none = diff_context(&repo, None, None, Some(&refused)).expect("diff");
        assert!(none.files.is_empty(), "nothing the reader refused is shown");
        let all = diff_context(&repo, None, None, None).expect("diff");
        assert_eq!(all.files.len(), 2);
    }

    #[test]
    fn hunks_widen_to_the_enclosing_function() {
        let dir = tempfile::tempdir().expect("tempdir");
        let body = "fn a() {\n    let x = 1;\n    let y = 2;\n    let z = 3;\n    let w = 4;\n    println!(\"{x}\");\n}\n\nfn b() {}\n";
        let repo = repo_with(dir.path(), &[("one", &[("src/lib.rs", body)])]);
        std::fs::write(
            dir.path().join("src/lib.rs"),
            body.replace("let w = 4", "let w = 5"),
        )
        .expect("edit");
        let got = diff_context(&repo, None, None, None).expect("diff");
        assert_eq!(got.files.len(), 1);
        let hunk = &got.files[0].hunks[0];
        assert_eq!(hunk.scope.as_ref().map(|s| s.name.as_str()), Some("a"));
        assert_eq!(hunk.lines.first().map(String::as_str), Some(" fn a() {"));
        assert_eq!(hunk.lines[7], " }");
        assert_eq!(
            hunk.lines[8], " ",
            "git's own context line after the function stays"
        );
        assert_eq!(
            (
                hunk.new_start,
                hunk.new_lines,
                hunk.old_start,
                hunk.old_lines
            ),
            (1, 8, 1, 8)
        );
        assert_eq!((got.insertions, got.deletions), (1, 1));
        assert!(matches!(
            diff_context(&repo, Some("nope"), None, None),
            Err(CodeError::UnknownRevision { .. })
        ));
    }
}
