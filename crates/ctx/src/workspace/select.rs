//! The selection and index use cases of [`Workspace`].

use std::path::PathBuf;

use ctx_core::{NoProgress, Progress};
use ctx_select::{BuildReport, IndexInspection, Query, SelectOptions, VerifyReport};

use super::Workspace;
use crate::answers::{SelectAnswer, SelectShow};
use crate::error::CtxError;
use crate::select::{self, IndexSummary, SelectContext, SelectOutcome};

impl Workspace {
    /// What selection needs, with `progress` told how index builds advance.
    pub(crate) fn select_context<'a>(
        &'a self,
        progress: &'a dyn Progress,
    ) -> Result<SelectContext<'a>, CtxError> {
        let mut cx = SelectContext {
            store: self.store()?,
            root: self.index_root.clone(),
            default_index: self.default_index.clone(),
            tokenizer: self.layers.tokenizer()?,
            max_file_bytes: self.layers.count("max_file_bytes")?,
            redactor: self.settings()?.redactor.clone(),
            now: self.now(),
            progress,
            keeper: None,
        };
        cx.keeper = self.index_keeper(&cx)?;
        Ok(cx)
    }

    /// The tree the workspace index covers (document ids are relative to it).
    pub fn index_root(&self) -> &std::path::Path {
        &self.index_root
    }

    /// The name of the workspace index (`default` in a project store; made from the tree's
    /// path in a shared store).
    pub fn default_index(&self) -> &str {
        &self.default_index
    }

    /// The files most relevant to `query` within `budget` tokens, with why each was chosen
    /// and their text; builds or updates the workspace index first (the same ranking and
    /// answer as `ctx select --json --explain`).
    pub fn select(
        &self,
        query: &str,
        budget: u64,
        index: Option<&str>,
    ) -> Result<SelectAnswer, CtxError> {
        let outcome =
            self.select_with(query, index, &select::prompt_options(budget), &NoProgress)?;
        let show = SelectShow {
            explain: true,
            content: true,
        };
        Ok(SelectAnswer::new(outcome, None, show))
    }

    /// [`Workspace::select`] with the options named. The query is parsed first: one without
    /// search terms is refused before the store is opened or an index is built.
    pub fn select_with(
        &self,
        query: &str,
        index: Option<&str>,
        options: &SelectOptions,
        progress: &dyn Progress,
    ) -> Result<SelectOutcome, CtxError> {
        let query = Query::parse(query)?;
        select::select(&self.select_context(progress)?, index, &query, options)
    }

    /// A selection and its rendered text, which holds at most `budget` tokens with its paths
    /// and fences (what `ctx_select` answers).
    pub fn select_payload(
        &self,
        query: &str,
        index: Option<&str>,
        budget: u64,
        progress: &dyn Progress,
    ) -> Result<(SelectOutcome, String), CtxError> {
        let query = Query::parse(query)?;
        select::select_payload(&self.select_context(progress)?, index, &query, budget)
    }

    /// Builds (incrementally unless `force`) index `name` (the workspace index when `None`)
    /// over `paths`, taken from [`Workspace::cwd`] (the whole tree when empty).
    pub fn index_build(
        &self,
        name: Option<&str>,
        paths: &[PathBuf],
        force: bool,
        progress: &dyn Progress,
    ) -> Result<BuildReport, CtxError> {
        select::build(
            &self.select_context(progress)?,
            name,
            &self.cwd,
            paths,
            force,
        )
    }

    /// Starts keeping the workspace index current (`ctx index watch`): a file watcher
    /// records what changes and a worker updates the index in place a moment later. Brings
    /// the index up to date first (a walk of the tree) and returns that update; each later
    /// update that changes the index is sent to `updates`. Dropping the keeper stops it.
    pub fn watch_index(
        &self,
        updates: std::sync::mpsc::Sender<BuildReport>,
    ) -> Result<(crate::IndexKeeper, BuildReport), CtxError> {
        let mut cx = self.select_context(&NoProgress)?;
        cx.keeper = None;
        let mut setup = select::keeper_setup(&cx, std::sync::Arc::clone(&self.clock))?;
        let sender = std::sync::Mutex::new(updates);
        setup.on_update = Some(Box::new(move |report: &BuildReport| {
            let _ = sender
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .send(report.clone());
        }));
        let keeper = crate::IndexKeeper::start(setup);
        let first = keeper.update()?;
        Ok((keeper, first))
    }

    /// Every check on index `name` (the workspace index when `None`).
    pub fn index_verify(&self, name: Option<&str>) -> Result<VerifyReport, CtxError> {
        select::verify(self.store()?, name.unwrap_or(&self.default_index))
    }

    /// What index `name` holds (the workspace index when `None`).
    pub fn index_inspect(&self, name: Option<&str>) -> Result<IndexInspection, CtxError> {
        select::inspect(self.store()?, name.unwrap_or(&self.default_index))
    }

    /// Every index in the store this workspace sees.
    pub fn index_list(&self) -> Result<Vec<IndexSummary>, CtxError> {
        select::list(self.store()?)
    }
}
