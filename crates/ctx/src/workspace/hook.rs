//! The prompt-context use cases of [`Workspace`]: `inject`, and the agent hooks with the
//! background build that keeps their index warm.

use std::path::PathBuf;

use ctx_core::{NoProgress, Progress};
use ctx_select::BuildReport;

use super::Workspace;
use crate::error::CtxError;
use crate::hooks::HookInput;
use crate::select::{
    self, HookCommands, HookInstall, HookLimits, IndexReadiness, IndexUpdate, Injection, TreeSize,
};

impl Workspace {
    /// The context for `prompt` within `budget` tokens and the prompt with it in front (none
    /// when the prompt has no code subject or nothing is relevant enough).
    pub fn inject(
        &self,
        prompt: &str,
        index: Option<&str>,
        budget: u64,
        progress: &dyn Progress,
    ) -> Result<Injection, CtxError> {
        select::inject(&self.select_context(progress)?, index, prompt, budget)
    }

    /// Whether the workspace index can answer a hook at once.
    pub fn hook_readiness(&self) -> Result<IndexReadiness, CtxError> {
        select::index_readiness(self.store()?, &self.default_index)
    }

    /// The hook's answer to `input`, from the workspace index brought up to date first or
    /// not (`update`).
    pub fn hook_answer(
        &self,
        input: &HookInput,
        limits: HookLimits,
        update: IndexUpdate,
    ) -> Result<serde_json::Value, CtxError> {
        select::hook_answer(&self.select_context(&NoProgress)?, input, limits, update)
    }

    /// The hook's answer without the index: a session start's project lines, nothing for a
    /// prompt.
    pub fn hook_answer_without_index(
        &self,
        input: &HookInput,
        limits: HookLimits,
    ) -> Result<serde_json::Value, CtxError> {
        Ok(select::hook_answer_without_index(
            &self.select_context(&NoProgress)?,
            input,
            limits,
        ))
    }

    /// Where the hook's background build of the workspace index writes its log.
    pub fn hook_log(&self) -> Result<PathBuf, CtxError> {
        Ok(select::indexes_dir(self.store()?)
            .join(format!(".{}.background.log", self.default_index)))
    }

    /// The lock of a background build of the workspace index, unless another holds it.
    pub fn claim_background_build(&self) -> Result<Option<std::fs::File>, CtxError> {
        select::claim_background_build(self.store()?, &self.default_index)
    }

    /// Files and bytes under the index's tree, counted up to the bounds.
    pub fn tree_size(&self, max_files: u64, max_bytes: u64) -> Result<TreeSize, CtxError> {
        select::bounded_tree_size(&self.index_root, max_files, max_bytes)
    }

    /// Brings the workspace index up to date (built if missing, else incrementally).
    pub fn index_update(&self, progress: &dyn Progress) -> Result<BuildReport, CtxError> {
        let cx = self.select_context(progress)?;
        select::ensure_index(&cx, &self.default_index)
    }

    /// Installs the hooks (and, unless `local`, the MCP server) for Claude Code in the
    /// workspace's project.
    pub fn install_claude_code(
        &self,
        commands: &HookCommands,
        local: bool,
    ) -> Result<HookInstall, CtxError> {
        select::install_claude_code(&self.index_root, commands, local)
    }

    /// Removes what [`Workspace::install_claude_code`] wrote, keeping every other entry.
    pub fn uninstall_claude_code(
        &self,
        commands: &HookCommands,
    ) -> Result<Vec<(PathBuf, bool)>, CtxError> {
        select::uninstall_claude_code(&self.index_root, commands)
    }
}
