//! The run-record use cases of [`Workspace`], and `fs_read`.

use std::path::Path;
use std::sync::Arc;

use ctx_core::redact::Redactor;
use ctx_fs::read::{FsReadInput, FsReadOutput, ReadOptions};
use ctx_runs::{ImportOutcome, Run, RunDiff, RunFormat, RunSummary};
use ctx_store::Store;

use super::Workspace;
use crate::error::CtxError;

impl Workspace {
    /// Imports an agent transcript (format detected unless named) as a run.
    pub fn run_import(
        &self,
        path: &Path,
        format: Option<RunFormat>,
    ) -> Result<ImportOutcome, CtxError> {
        Ok(ctx_runs::import_file(
            self.store()?,
            &self.cwd.join(path),
            format,
        )?)
    }

    /// Stored runs, newest first.
    pub fn run_list(&self) -> Result<Vec<RunSummary>, CtxError> {
        Ok(ctx_runs::list_runs(self.store()?)?)
    }

    /// A run by id, unique id prefix or tag, every object re-hashed.
    pub fn run_show(&self, id: &str) -> Result<Run, CtxError> {
        Ok(ctx_runs::load_run(self.store()?, id)?)
    }

    /// A run and the refs that name it (tags, `latest`), as `run show` shows it.
    pub fn run_show_with_refs(&self, id: &str) -> Result<(Run, Vec<String>), CtxError> {
        Ok(crate::runs::load_with_refs(self.store()?, id)?)
    }

    /// A stored object of a run (a prompt, an input, an output), by its hash.
    pub fn run_blob(&self, hash: &ctx_core::ContentHash) -> Result<Vec<u8>, CtxError> {
        Ok(ctx_runs::read_blob(self.store()?, hash)?)
    }

    /// What changed from run `a` to run `b`, step by step.
    pub fn run_diff(&self, a: &str, b: &str) -> Result<RunDiff, CtxError> {
        let a = ctx_runs::load_run(self.store()?, a)?;
        let b = ctx_runs::load_run(self.store()?, b)?;
        Ok(ctx_runs::diff_runs(&a, &b))
    }

    /// Starts recording tool calls as a run named `name` in this workspace's store (see
    /// [`crate::recording`]): the caller records each call it answers and finishes the run.
    /// `deterministic` names the tools whose calls replay can reproduce; `runtime` names the
    /// caller in the run's environment; `pid` is the recording process (its journal is not
    /// recovered while it runs). Recordings a dead process left are finished first.
    pub fn start_recording(
        &self,
        name: &str,
        deterministic: Vec<String>,
        runtime: &str,
        pid: u32,
    ) -> Result<crate::recording::Recording, CtxError> {
        crate::recording::check_record_name(name)?;
        let alive = |p: u32| p == pid || crate::recording::process_alive(p);
        let own = self.store()?;
        crate::recording::recover_recordings(own, &alive)?;
        let redactor = Redactor::with_custom(&self.layers.redaction_rules()?)?;
        let store = Store::open(own.dir())?;
        let store = match own.scope() {
            Some(scope) => store.scoped(Path::new(scope)),
            None => store,
        };
        crate::recording::Recording::start(
            store,
            crate::recording::RecordingOptions {
                name: name.to_owned(),
                workspace_root: self.cwd.clone(),
                started: self.now(),
                deterministic,
                redactor,
                clock: Arc::clone(&self.clock),
                runtime: runtime.to_owned(),
                pid,
            },
        )
    }

    // ----------------------------------------------------------------------------- read

    /// `fs_read` inside the workspace root, through the sandbox.
    pub fn read(
        &self,
        input: &FsReadInput,
        options: &ReadOptions,
    ) -> Result<FsReadOutput, CtxError> {
        Ok(ctx_fs::read::fs_read(self.sandbox()?, input, options))
    }
}
