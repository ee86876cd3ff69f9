//! The code-intelligence use cases of [`Workspace`]: every path is taken from
//! [`Workspace::cwd`] and read through the workspace's sandbox.

use std::path::Path;

use super::Workspace;
use crate::answers::{
    DiffAnswer, InWorkspace, MapAnswer, RelatedAnswer, SearchAnswer, StatusAnswer, SummarizeAnswer,
};
use crate::code::{self, CodeContext, SearchKind, SummaryPlan, TreeCache};
use crate::error::CtxError;

impl Workspace {
    /// What code intelligence needs; `cache` lends it the store's summary cache (a store
    /// that cannot be opened only disables caching).
    fn code(&self, cache: bool) -> Result<CodeContext<'_>, CtxError> {
        let store = if cache {
            self.store()
                .inspect_err(|err| tracing::debug!("summary cache disabled: {err}"))
                .ok()
        } else {
            None
        };
        Ok(CodeContext {
            cwd: self.cwd.clone(),
            store,
            sandbox: Some(self.sandbox()?),
            clock: &*self.clock,
            cancel: self.cancel.clone(),
        })
    }

    /// Symbols, imports and line counts of a file or a tree (skeletons on request).
    pub fn summarize(
        &self,
        path: &Path,
        depth: Option<usize>,
        skeleton: bool,
    ) -> Result<SummarizeAnswer, CtxError> {
        self.summary_target(path)?;
        let report = code::summarize(&self.code(true)?, path, depth, skeleton)?;
        Ok(SummarizeAnswer::new(self.workspace_relative(path)?, report))
    }

    /// Refuses a path that leaves the workspace, does not exist, or is a single file in a
    /// language ctx does not parse, before anything else is touched.
    pub fn summary_target(&self, path: &Path) -> Result<(), CtxError> {
        Ok(code::check_summary_target(&self.code(false)?, path)?)
    }

    /// [`Workspace::summarize`] as a plan: a file's summary at once, a directory's file by
    /// file as the caller asks (a whole tree's summaries do not fit in memory).
    pub fn summary_plan(
        &self,
        path: &Path,
        depth: Option<usize>,
        skeleton: bool,
    ) -> Result<SummaryPlan<'_>, CtxError> {
        self.summary_target(path)?;
        Ok(code::plan_summary(
            &self.code(true)?,
            path,
            depth,
            skeleton,
        )?)
    }

    /// The tree under `path` with each file's symbols, within `budget` tokens when given;
    /// entries are named from the workspace root.
    pub fn map(
        &self,
        path: &Path,
        depth: Option<usize>,
        budget: Option<usize>,
    ) -> Result<MapAnswer, CtxError> {
        let (map, stats) = code::map(&self.code(true)?, path, depth, budget)?;
        tracing::info!(
            cached = stats.cached,
            parsed = stats.parsed,
            "map summaries"
        );
        Ok(MapAnswer::new(&map, &self.workspace_relative(path)?))
    }

    /// `path` (taken from [`Workspace::cwd`]) relative to the workspace root: `.` for the
    /// root itself.
    fn workspace_relative(&self, path: &Path) -> Result<String, CtxError> {
        let full = self.cwd.join(path);
        self.sandbox()?
            .relative_path(&full.to_string_lossy())
            .map_err(|err| CtxError::InvalidInput(err.to_string()))
    }

    /// Text, symbol or caller search under `path`: the first `max_results` matches (a text
    /// search also stops keeping at its [`crate::code::SearchLimit`]) and the count of all.
    pub fn search(
        &self,
        path: &Path,
        kind: &SearchKind,
        max_results: Option<usize>,
    ) -> Result<SearchAnswer, CtxError> {
        let cache = matches!(kind, SearchKind::Symbol { .. });
        let found = code::search(&self.code(cache)?, path, kind, max_results)?;
        Ok(SearchAnswer::new(kind, found))
    }

    /// [`Workspace::search`] over a server's cached walk of the tree.
    pub fn search_cached(
        &self,
        tree: &TreeCache,
        path: &Path,
        kind: &SearchKind,
        max_results: Option<usize>,
    ) -> Result<SearchAnswer, CtxError> {
        let cache = matches!(kind, SearchKind::Symbol { .. });
        let found = code::search_cached(&self.code(cache)?, tree, path, kind, max_results)?;
        Ok(SearchAnswer::new(kind, found))
    }

    /// The files related to `file`: imports both ways, tests, and files changed with it,
    /// as paths relative to the workspace root.
    pub fn related(
        &self,
        file: &Path,
        history: usize,
        limit: usize,
    ) -> Result<RelatedAnswer, CtxError> {
        let report = code::related(&self.code(true)?, file, history, limit)?;
        Ok(InWorkspace::at(&self.sandbox_root).related(report))
    }

    /// The project at a glance: name, type, branch, recent commits, hot directories.
    pub fn status(&self) -> Result<StatusAnswer, CtxError> {
        let status = code::status(&self.cwd, self.now())?;
        Ok(InWorkspace::at(&self.sandbox_root).status(status))
    }

    /// What changed between `base` and `head` (the work tree against `HEAD` by default),
    /// hunk by hunk with the symbols each touches: the files in the workspace, under `under`
    /// (taken from [`Workspace::cwd`]) when given.
    pub fn diff_context(
        &self,
        base: Option<&str>,
        head: Option<&str>,
        under: Option<&Path>,
    ) -> Result<DiffAnswer, CtxError> {
        let under = under.map(|p| self.workspace_relative(p)).transpose()?;
        let diff = code::diff_context(&self.cwd, base, head, Some(self.sandbox()?))?;
        Ok(InWorkspace::at(&self.sandbox_root).diff(diff, under.as_deref()))
    }
}
