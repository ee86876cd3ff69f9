//! Git through libgit2 (`git2`, vendored): status, recent history, hot directories, co-change
//! counts and tree diffs. Nothing here shells out to `git`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use git2::{Commit, Delta, DiffOptions, ErrorCode, Repository, StatusOptions, Tree};
use serde::Serialize;

use crate::error::CodeError;

/// Opens the repository containing `dir`.
pub fn open_repository(dir: &Path) -> Result<Repository, CodeError> {
    Repository::discover(dir).map_err(|err| match err.code() {
        ErrorCode::NotFound => CodeError::NotARepository {
            path: dir.to_owned(),
        },
        _ => CodeError::Git(err),
    })
}

/// The working tree root of a repository (its parent dir for a bare one).
pub fn workdir(repo: &Repository) -> PathBuf {
    repo.workdir()
        .map_or_else(|| repo.path().to_owned(), Path::to_owned)
}

/// One commit in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitInfo {
    /// Abbreviated id (7 hex).
    pub sha: String,
    /// First line of the message.
    pub message: String,
    pub author: String,
    /// Commit time, RFC 3339 UTC.
    pub time: String,
    /// Relative to the `now` passed in: `2h ago`.
    pub time_ago: String,
}

/// A directory and how many recent commits touched it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HotDirectory {
    pub path: String,
    pub commit_count: usize,
}

/// Git facts for `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitStatus {
    pub branch: String,
    pub is_dirty: bool,
    pub staged_count: usize,
    pub modified_count: usize,
    pub untracked_count: usize,
    pub recent_commits: Vec<CommitInfo>,
    pub hot_directories: Vec<HotDirectory>,
    /// Lines added and removed in the working tree (staged and unstaged) against HEAD.
    pub diff_stats: [usize; 2],
}

/// Reads branch, change counts, recent commits and hot directories. `now` is seconds since
/// the Unix epoch (for `time_ago`).
pub fn status(
    repo: &Repository,
    now: i64,
    recent: usize,
    history: usize,
) -> Result<GitStatus, CodeError> {
    let branch = branch_name(repo);
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    let (mut staged, mut modified, mut untracked) = (0, 0, 0);
    for entry in statuses.iter() {
        let s = entry.status();
        if s.intersects(
            git2::Status::INDEX_NEW
                | git2::Status::INDEX_MODIFIED
                | git2::Status::INDEX_DELETED
                | git2::Status::INDEX_RENAMED
                | git2::Status::INDEX_TYPECHANGE,
        ) {
            staged += 1;
        }
        if s.intersects(
            git2::Status::WT_MODIFIED
                | git2::Status::WT_DELETED
                | git2::Status::WT_RENAMED
                | git2::Status::WT_TYPECHANGE,
        ) {
            modified += 1;
        }
        if s.contains(git2::Status::WT_NEW) {
            untracked += 1;
        }
    }
    let commits = recent_commits(repo, history)?;
    let recent_commits = commits
        .iter()
        .take(recent)
        .map(|c| commit_info(c, now))
        .collect();
    let hot_directories = hot_directories(repo, &commits, 5)?;
    let diff_stats = working_diff_stats(repo)?;
    Ok(GitStatus {
        branch,
        is_dirty: staged + modified + untracked > 0,
        staged_count: staged,
        modified_count: modified,
        untracked_count: untracked,
        recent_commits,
        hot_directories,
        diff_stats,
    })
}

/// The current branch name, `HEAD (detached at abc1234)`, or the unborn branch's name.
pub fn branch_name(repo: &Repository) -> String {
    match repo.head() {
        Ok(head) if head.is_branch() => head.shorthand().unwrap_or("HEAD").to_owned(),
        Ok(head) => head.target().map_or_else(
            || "HEAD".to_owned(),
            |oid| format!("HEAD (detached at {})", short_id(oid)),
        ),
        Err(_) => repo
            .find_reference("HEAD")
            .ok()
            .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_owned))
            .map_or_else(
                || "HEAD".to_owned(),
                |t| t.trim_start_matches("refs/heads/").to_owned(),
            ),
    }
}

fn short_id(oid: git2::Oid) -> String {
    let mut s = oid.to_string();
    s.truncate(7);
    s
}

/// Up to `limit` commits reachable from HEAD, newest first (empty for an unborn branch).
pub fn recent_commits(repo: &Repository, limit: usize) -> Result<Vec<Commit<'_>>, CodeError> {
    if repo.head().is_err() {
        return Ok(Vec::new());
    }
    let mut walk = repo.revwalk()?;
    walk.push_head()?;
    walk.set_sorting(git2::Sort::TIME)?;
    let mut out = Vec::new();
    for oid in walk.take(limit) {
        out.push(repo.find_commit(oid?)?);
    }
    Ok(out)
}

fn commit_info(commit: &Commit<'_>, now: i64) -> CommitInfo {
    let time = commit.time().seconds();
    CommitInfo {
        sha: short_id(commit.id()),
        message: commit.summary().ok().flatten().unwrap_or("").to_owned(),
        author: commit.author().name().unwrap_or("").to_owned(),
        time: crate::time::rfc3339(time),
        time_ago: crate::time::ago(now - time),
    }
}

/// The paths a commit changed against its first parent (every path for a root commit).
pub fn changed_paths(repo: &Repository, commit: &Commit<'_>) -> Result<Vec<String>, CodeError> {
    let tree = commit.tree()?;
    let parent_tree: Option<Tree<'_>> = match commit.parent(0) {
        Ok(parent) => Some(parent.tree()?),
        Err(_) => None,
    };
    let mut opts = DiffOptions::new();
    opts.skip_binary_check(true);
    let diff = repo.diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut opts))?;
    let mut paths = Vec::with_capacity(diff.deltas().len());
    for delta in diff.deltas() {
        let file = if delta.status() == Delta::Deleted {
            delta.old_file()
        } else {
            delta.new_file()
        };
        if let Some(path) = file.path().and_then(Path::to_str) {
            paths.push(path.to_owned());
        }
    }
    Ok(paths)
}

fn hot_directories(
    repo: &Repository,
    commits: &[Commit<'_>],
    top: usize,
) -> Result<Vec<HotDirectory>, CodeError> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for commit in commits {
        let dirs: BTreeSet<String> = changed_paths(repo, commit)?
            .into_iter()
            .map(|p| {
                p.rsplit_once('/')
                    .map_or_else(|| ".".to_owned(), |(d, _)| d.to_owned())
            })
            .collect();
        for dir in dirs {
            *counts.entry(dir).or_default() += 1;
        }
    }
    let mut hot: Vec<HotDirectory> = counts
        .into_iter()
        .map(|(path, commit_count)| HotDirectory { path, commit_count })
        .collect();
    hot.sort_by(|a, b| {
        b.commit_count
            .cmp(&a.commit_count)
            .then_with(|| a.path.cmp(&b.path))
    });
    hot.truncate(top);
    Ok(hot)
}

fn working_diff_stats(repo: &Repository) -> Result<[usize; 2], CodeError> {
    let head_tree = match repo.head() {
        Ok(head) => Some(head.peel_to_tree()?),
        Err(_) => None,
    };
    let diff = repo.diff_tree_to_workdir_with_index(head_tree.as_ref(), None)?;
    let stats = diff.stats()?;
    Ok([stats.insertions(), stats.deletions()])
}

/// Files changed in the same commits as `path` (repository-relative), over the last
/// `history` commits: (path, shared commit count), most shared first, then by path.
pub fn co_changed(
    repo: &Repository,
    path: &str,
    history: usize,
) -> Result<Vec<(String, usize)>, CodeError> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for commit in recent_commits(repo, history)? {
        let paths = changed_paths(repo, &commit)?;
        if !paths.iter().any(|p| p == path) {
            continue;
        }
        for other in paths {
            if other != path {
                *counts.entry(other).or_default() += 1;
            }
        }
    }
    let mut out: Vec<(String, usize)> = counts.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// Resolves a revision (`HEAD~2`, a branch, a tag, a hash) to its tree.
pub fn resolve_tree<'r>(repo: &'r Repository, rev: &str) -> Result<Tree<'r>, CodeError> {
    let object = repo
        .revparse_single(rev)
        .map_err(|err| CodeError::UnknownRevision {
            rev: rev.to_owned(),
            message: err.message().to_owned(),
        })?;
    object
        .peel_to_tree()
        .map_err(|err| CodeError::UnknownRevision {
            rev: rev.to_owned(),
            message: err.message().to_owned(),
        })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a repository with one commit per `(message, files)` step.
    pub(crate) fn repo_with(dir: &Path, steps: &[(&str, &[(&str, &str)])]) -> Repository {
        let repo = Repository::init(dir).expect("init");
        {
            let mut config = repo.config().expect("config");
            config.set_str("user.name", "Test").expect("name");
            config
                .set_str("user.email", "t@example.com")
                .expect("email");
        }
        for (i, (message, files)) in steps.iter().enumerate() {
            for (rel, body) in *files {
                let path = dir.join(rel);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                std::fs::write(&path, body).expect("write");
            }
            let mut index = repo.index().expect("index");
            index
                .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
                .expect("add");
            index.write().expect("write index");
            let tree_id = index.write_tree().expect("tree");
            let tree = repo.find_tree(tree_id).expect("find tree");
            let time = git2::Time::new(1_700_000_000 + i64::try_from(i).expect("small") * 3600, 0);
            let sig = git2::Signature::new("Test", "t@example.com", &time).expect("sig");
            let parents: Vec<Commit<'_>> = repo
                .head()
                .ok()
                .and_then(|h| h.peel_to_commit().ok())
                .into_iter()
                .collect();
            let parent_refs: Vec<&Commit<'_>> = parents.iter().collect();
            repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parent_refs)
                .expect("commit");
        }
        repo
    }

    #[test]
    fn status_counts_history_and_co_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = repo_with(
            dir.path(),
            &[
                ("first", &[("src/a.rs", "a\n"), ("src/b.rs", "b\n")]),
                (
                    "second",
                    &[
                        ("src/a.rs", "a2\n"),
                        ("src/b.rs", "b2\n"),
                        ("docs/x.md", "x\n"),
                    ],
                ),
                ("third", &[("src/a.rs", "a3\n"), ("README", "r\n")]),
            ],
        );
        std::fs::write(dir.path().join("src/b.rs"), "b3\nmore\n").expect("modify");
        std::fs::write(dir.path().join("new.txt"), "n\n").expect("untracked");
        let now = 1_700_000_000 + 2 * 3600 + 90;
        let st = status(&repo, now, 5, 100).expect("status");
        assert_eq!(
            (st.staged_count, st.modified_count, st.untracked_count),
            (0, 1, 1)
        );
        assert!(st.is_dirty);
        assert_eq!(st.recent_commits.len(), 3);
        assert_eq!(st.recent_commits[0].message, "third");
        assert_eq!(st.recent_commits[0].time_ago, "1m ago");
        assert_eq!(st.recent_commits[0].time, "2023-11-15T00:13:20Z");
        assert_eq!(
            st.hot_directories[0],
            HotDirectory {
                path: "src".into(),
                commit_count: 3
            }
        );
        assert_eq!(st.diff_stats, [2, 1]);
        let co = co_changed(&repo, "src/a.rs", 100).expect("co-change");
        assert_eq!(co[0], ("src/b.rs".to_owned(), 2));
        assert!(matches!(
            resolve_tree(&repo, "nope"),
            Err(CodeError::UnknownRevision { .. })
        ));
        assert!(resolve_tree(&repo, "HEAD~1").is_ok());
    }

    #[test]
    fn outside_a_repository_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A temp dir may sit inside a repository on a developer machine; ceiling the search.
        let err =
            Repository::open_ext(dir.path(), git2::RepositoryOpenFlags::empty(), [dir.path()]);
        assert!(err.is_err());
    }
}
