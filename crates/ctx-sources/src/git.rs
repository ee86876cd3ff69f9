//! `git:diff` sources through libgit2: one unit per changed file, in path order.

use std::path::Path;

use git2::{Diff, DiffOptions, Repository};

use crate::SourceError;
use crate::expand::{ExpandOptions, Skip, Unit};

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
