//! `git:diff` sources through libgit2: one unit per changed file, in path order.

use std::path::Path;

use git2::{Diff, DiffOptions, Repository};

use crate::SourceError;
use crate::expand::{ExpandOptions, Skip, Unit, UnitKind};

fn open(root: &Path) -> Result<Repository, String> {
    Repository::discover(root).map_err(|e| {
        if e.code() == git2::ErrorCode::NotFound {
            format!("{} is not inside a git repository", root.display())
        } else {
            e.message().to_owned()
        }
    })
}

fn tree<'r>(repo: &'r Repository, rev: &str) -> Result<git2::Tree<'r>, String> {
    repo.revparse_single(rev)
        .and_then(|obj| obj.peel_to_tree())
        .map_err(|_| format!("unknown revision `{rev}`; check it with `git rev-parse {rev}`"))
}

fn diff<'r>(
    repo: &'r Repository,
    base: Option<&str>,
    head: Option<&str>,
) -> Result<Diff<'r>, String> {
    let mut opts = DiffOptions::new();
    opts.context_lines(3);
    let result = match (base, head) {
        (Some(b), Some(h)) => repo.diff_tree_to_tree(
            Some(&tree(repo, b)?),
            Some(&tree(repo, h)?),
            Some(&mut opts),
        ),
        (Some(b), None) => {
            repo.diff_tree_to_workdir_with_index(Some(&tree(repo, b)?), Some(&mut opts))
        }
        (None, _) => {
            // The working tree (staged and unstaged) against HEAD; an unborn HEAD diffs against nothing.
            let head_tree = match repo.head() {
                Ok(reference) => Some(
                    reference
                        .peel_to_tree()
                        .map_err(|e| e.message().to_owned())?,
                ),
                Err(_) => None,
            };
            repo.diff_tree_to_workdir_with_index(head_tree.as_ref(), Some(&mut opts))
        }
    };
    result.map_err(|e| e.message().to_owned())
}

/// Checks at `pack add` time that the repository and revisions exist.
pub fn check(
    uri: &str,
    root: &Path,
    base: Option<&str>,
    head: Option<&str>,
) -> Result<(), SourceError> {
    let git = |message: String| SourceError::Git {
        uri: uri.to_owned(),
        message,
    };
    let repo = open(root).map_err(git)?;
    for rev in [base, head].into_iter().flatten() {
        tree(&repo, rev).map_err(git)?;
    }
    Ok(())
}

/// The diff as one unit per changed file.
pub(crate) fn diff_units(
    root: &Path,
    base: Option<&str>,
    head: Option<&str>,
    allow_sensitive: bool,
    options: &ExpandOptions<'_>,
) -> Vec<Unit> {
    let failed = |error: String| {
        vec![Unit {
            key: "git:diff".into(),
            kind: UnitKind::Diff,
            label: "git diff".into(),
            lines: None,
            lang: "diff",
            body: Err(Skip::Git { error }),
            notes: Vec::new(),
        }]
    };
    let repo = match open(root) {
        Ok(repo) => repo,
        Err(e) => return failed(e),
    };
    let diff = match diff(&repo, base, head) {
        Ok(diff) => diff,
        Err(e) => return failed(e),
    };
    let workdir = repo.workdir().map(Path::to_path_buf);
    let mut units = Vec::new();
    for index in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(index) else {
            continue;
        };
        let repo_path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        // Labels are relative to the workspace root, like every other path.
        let label = workdir
            .as_ref()
            .and_then(|w| ctx_core::DocumentId::from_path(root, &w.join(&repo_path)).ok())
            .map_or_else(|| repo_path.clone(), |id| id.as_str().to_owned());
        let key = format!("git:diff:{label}");
        let body = if let Some(pattern) = options
            .sensitive
            .matches(&label)
            .filter(|_| !allow_sensitive)
        {
            Err(Skip::Sensitive {
                pattern: pattern.to_owned(),
            })
        } else if delta.flags().is_binary()
            || delta.new_file().is_binary()
            || delta.old_file().is_binary()
        {
            Err(Skip::Binary)
        } else {
            patch_text(&diff, index)
        };
        let body = body.and_then(|text| {
            if text.len() as u64 > options.max_file_bytes {
                Err(Skip::TooLarge {
                    bytes: text.len() as u64,
                    limit: options.max_file_bytes,
                })
            } else {
                Ok(text)
            }
        });
        units.push(Unit {
            key,
            kind: UnitKind::Diff,
            label,
            lines: None,
            lang: "diff",
            body,
            notes: Vec::new(),
        });
    }
    units.sort_by(|a, b| a.key.cmp(&b.key));
    units
}

fn patch_text(diff: &Diff<'_>, index: usize) -> Result<String, Skip> {
    let git = |e: git2::Error| Skip::Git {
        error: e.message().to_owned(),
    };
    let Some(mut patch) = git2::Patch::from_diff(diff, index).map_err(git)? else {
        return Err(Skip::Binary);
    };
    let buf = patch.to_buf().map_err(git)?;
    String::from_utf8(buf.to_vec()).map_err(|e| Skip::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })
}

/// The last `count` commits reachable from HEAD, newest first, as one unit: id, author, date
/// (UTC), message, and the files each commit changed against its first parent.
pub(crate) fn log_unit(root: &Path, dir: &str, count: u64) -> Unit {
    let label = if dir.is_empty() {
        "git log".to_owned()
    } else {
        format!("git log of {dir}")
    };
    Unit {
        key: format!("git:log:{dir}"),
        kind: UnitKind::Log,
        label,
        lines: None,
        lang: "",
        body: log_text(root, count).map_err(|error| Skip::Git { error }),
        notes: Vec::new(),
    }
}

fn log_text(root: &Path, count: u64) -> Result<String, String> {
    use std::fmt::Write as _;
    let repo = open(root)?;
    let message = |e: git2::Error| e.message().to_owned();
    let mut walk = repo.revwalk().map_err(message)?;
    if walk.push_head().is_err() {
        return Ok("(no commits yet)\n".to_owned());
    }
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .map_err(message)?;
    let mut text = String::new();
    for oid in walk.take(usize::try_from(count).unwrap_or(usize::MAX)) {
        let commit = repo.find_commit(oid.map_err(message)?).map_err(message)?;
        let author = commit.author();
        let id = commit.id().to_string();
        let _ = writeln!(text, "commit {}", &id[..12]);
        let _ = writeln!(
            text,
            "Author: {} <{}>",
            author.name().unwrap_or("?"),
            author.email().unwrap_or("?")
        );
        let _ = writeln!(text, "Date:   {}", utc_date(commit.time().seconds()));
        text.push('\n');
        for line in String::from_utf8_lossy(commit.message_bytes())
            .trim_end()
            .lines()
        {
            let _ = writeln!(text, "    {line}");
        }
        let parent = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let tree = commit.tree().map_err(message)?;
        let diff = repo
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), None)
            .map_err(message)?;
        if diff.deltas().len() > 0 {
            text.push('\n');
        }
        for delta in diff.deltas() {
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let status = match delta.status() {
                git2::Delta::Added => 'A',
                git2::Delta::Deleted => 'D',
                git2::Delta::Renamed => 'R',
                git2::Delta::Copied => 'C',
                git2::Delta::Typechange => 'T',
                _ => 'M',
            };
            let _ = writeln!(text, " {status} {path}");
        }
        text.push('\n');
    }
    Ok(text)
}

/// `2026-01-31 12:00:00 UTC` for seconds since the Unix epoch (proleptic Gregorian).
fn utc_date(seconds: i64) -> String {
    ctx_core::time::utc_seconds(seconds)
}

#[cfg(test)]
mod tests {
    use super::utc_date;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc_date(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc_date(-1), "1969-12-31 23:59:59 UTC");
    }
}
