//! Git facts for selection: the checked-out commit, how often each file changed recently
//! (seed 001's recent-activity signal), and the most recently changed files (`[RECENT: …]`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ctx_code::git2::Repository;

/// How many recent commits count as "recent activity".
pub const ACTIVITY_WINDOW: usize = 50;

/// Commits changing more files than this are not activity of any one of them.
pub const MAX_ACTIVITY_FILES: usize = 100;

/// The repository containing `root`, with `root`'s path inside it (`""` at the top).
pub struct RepoAt {
    repo: Repository,
    prefix: String,
}

impl RepoAt {
    /// Opens the repository containing `root`; `None` outside one.
    pub fn discover(root: &Path) -> Option<Self> {
        let repo = ctx_code::git::open_repository(root).ok()?;
        let workdir = ctx_code::git::workdir(&repo);
        let workdir = workdir.canonicalize().unwrap_or(workdir);
        let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
        let prefix = root
            .strip_prefix(&workdir)
            .ok()
            .map(|p| {
                p.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default();
        Some(Self { repo, prefix })
    }

    /// The commit HEAD points at (`None` on an unborn branch).
    pub fn head(&self) -> Option<String> {
        self.repo.head().ok()?.target().map(|oid| oid.to_string())
    }

    /// The branch name (or a detached-HEAD description).
    pub fn branch(&self) -> String {
        ctx_code::git::branch_name(&self.repo)
    }

    fn to_id(&self, path: &str) -> Option<String> {
        if self.prefix.is_empty() {
            Some(path.to_owned())
        } else {
            path.strip_prefix(&self.prefix)?
                .strip_prefix('/')
                .map(str::to_owned)
        }
    }

    /// Document id → how many of the last `window` commits changed it.
    ///
    /// Only history says anything here: a root commit (the import of a tree) and commits
    /// that change more than [`MAX_ACTIVITY_FILES`] files (vendoring, reformatting, renames)
    /// count for nothing, so a repository with a single commit has no recent activity.
    pub fn activity(&self, window: usize) -> BTreeMap<String, u32> {
        let mut counts = BTreeMap::new();
        let Ok(commits) = ctx_code::git::recent_commits(&self.repo, window) else {
            return counts;
        };
        for commit in &commits {
            if commit.parent_count() == 0 {
                continue;
            }
            let Ok(paths) = ctx_code::git::changed_paths(&self.repo, commit) else {
                continue;
            };
            if paths.len() > MAX_ACTIVITY_FILES {
                continue;
            }
            for path in paths {
                if let Some(id) = self.to_id(&path) {
                    *counts.entry(id).or_insert(0) += 1;
                }
            }
        }
        counts
    }

    /// Files changed by the newest commits, newest first: (id, commit time in Unix seconds),
    /// at most `limit`, each once. As in [`RepoAt::activity`], a commit that says nothing
    /// about what is being worked on is passed over: a root commit (the import of a tree: a
    /// one-commit clone has nothing else) and one of more than [`MAX_ACTIVITY_FILES`] files
    /// (an import, a reformat, a vendored update).
    pub fn recent_files(&self, limit: usize) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = Vec::new();
        let Ok(commits) = ctx_code::git::recent_commits(&self.repo, 20) else {
            return out;
        };
        for commit in &commits {
            if commit.parent_count() == 0 {
                continue;
            }
            let Ok(paths) = ctx_code::git::changed_paths(&self.repo, commit) else {
                continue;
            };
            if paths.len() > MAX_ACTIVITY_FILES {
                continue;
            }
            for path in paths {
                if let Some(id) = self.to_id(&path)
                    && !out.iter().any(|(p, _)| *p == id)
                {
                    out.push((id, commit.time().seconds()));
                    if out.len() >= limit {
                        return out;
                    }
                }
            }
        }
        out
    }

    /// The newest commits: (short id, subject, Unix seconds), at most `limit`.
    pub fn recent_commits(&self, limit: usize) -> Vec<(String, String, i64)> {
        ctx_code::git::recent_commits(&self.repo, limit)
            .unwrap_or_default()
            .iter()
            .map(|c| {
                let mut id = c.id().to_string();
                id.truncate(7);
                (
                    id,
                    c.summary().ok().flatten().unwrap_or("").to_owned(),
                    c.time().seconds(),
                )
            })
            .collect()
    }

    /// The repository's working directory.
    pub fn workdir(&self) -> PathBuf {
        ctx_code::git::workdir(&self.repo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(status.status.success(), "{status:?}");
    }

    #[test]
    fn a_single_commit_is_no_activity_and_a_later_one_is() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("a.py"), "x = 1\n").expect("write");
        std::fs::write(dir.path().join("b.py"), "y = 1\n").expect("write");
        git(dir.path(), &["init", "-q"]);
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-qm", "import"]);
        let repo = RepoAt::discover(dir.path()).expect("repo");
        assert!(repo.activity(ACTIVITY_WINDOW).is_empty());
        std::fs::write(dir.path().join("a.py"), "x = 2\n").expect("write");
        git(dir.path(), &["commit", "-qam", "change a"]);
        let activity = repo.activity(ACTIVITY_WINDOW);
        assert_eq!(activity.get("a.py"), Some(&1));
        assert_eq!(activity.get("b.py"), None);
    }

    #[test]
    fn recent_files_pass_over_root_and_bulk_commits() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join(".editorconfig"), "root = true\n").expect("write");
        std::fs::write(dir.path().join("a.py"), "x = 1\n").expect("write");
        git(dir.path(), &["init", "-q"]);
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-qm", "import"]);
        let repo = RepoAt::discover(dir.path()).expect("repo");
        // One commit: no signal, no recent files.
        assert_eq!(repo.recent_files(3), Vec::new());
        // A bulk commit (more than MAX_ACTIVITY_FILES files) says nothing either.
        for i in 0..=MAX_ACTIVITY_FILES {
            std::fs::write(dir.path().join(format!("gen{i}.py")), "z = 1\n").expect("write");
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-qm", "vendor"]);
        assert_eq!(repo.recent_files(3), Vec::new());
        // A real change does.
        std::fs::write(dir.path().join("a.py"), "x = 2\n").expect("write");
        git(dir.path(), &["commit", "-qam", "change a"]);
        let recent: Vec<String> = repo.recent_files(3).into_iter().map(|(p, _)| p).collect();
        assert_eq!(recent, ["a.py"]);
    }
}
