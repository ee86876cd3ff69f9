//! The run-record use cases of [`Workspace`], and `fs_read`.

use std::path::Path;
use std::sync::Arc;

use ctx_core::ContentHash;
use ctx_fs::read::{FsReadInput, FsReadOutput, ReadOptions};
use ctx_runs::provenance::{
    self, Attachment, KeyRing, ProvenanceError, RunFacts, RunLookup, VerifyOptions, VerifyReport,
};
use ctx_runs::{
    ImportOptions, ImportOutcome, Run, RunDiff, RunError, RunFormat, RunId, RunSummary, RunTree,
};

use super::Workspace;
use crate::error::CtxError;

impl Workspace {
    /// Imports an agent transcript (format detected unless named) as a run.
    pub fn run_import(
        &self,
        path: &Path,
        format: Option<RunFormat>,
    ) -> Result<ImportOutcome, CtxError> {
        self.run_import_with(
            &RunInput::File(path),
            &ImportOptions::from_format(format),
            None,
        )
    }

    /// Imports a transcript as a run and tags it. Bad input (a tag, a file that is not
    /// there) is refused before the store is opened, so it leaves no store behind where there
    /// was none; a lossy import stores nothing ([`RunError::Lossy`]) unless asked to.
    pub fn run_import_with(
        &self,
        input: &RunInput<'_>,
        options: &ImportOptions,
        tag: Option<&str>,
    ) -> Result<ImportOutcome, CtxError> {
        if let Some(tag) = tag {
            ctx_runs::check_tag(tag)?;
        }
        if let RunInput::File(path) = input {
            crate::runs::check_importable(&self.cwd.join(path))?;
        }
        let store = self.store()?;
        let outcome = match input {
            RunInput::File(path) => ctx_runs::import_path(store, &self.cwd.join(path), options)?,
            RunInput::Bytes { name, bytes } => {
                ctx_runs::import_bytes_with(store, Path::new(name), bytes, options)?
            }
        };
        if let Some(tag) = tag {
            ctx_runs::tag_run(store, tag, &outcome.run)?;
        }
        Ok(outcome)
    }

    /// Replays run `run`'s steps through `executor` (a server answering as it did when the
    /// run was recorded) and compares each answer with the recorded one.
    pub fn run_replay(
        &self,
        run: &Run,
        executor: &dyn ctx_runs::replay::StepExecutor,
    ) -> Result<ctx_runs::replay::ReplayReport, CtxError> {
        let steps: Vec<ctx_runs::replay::ReplayStep> = run
            .steps
            .iter()
            .map(ctx_runs::replay::ReplayStep::from)
            .collect();
        Ok(ctx_runs::replay::replay(
            run.id,
            &steps,
            executor,
            self.store()?.objects(),
        ))
    }

    /// The workspace store's signing and trusted keys.
    pub fn run_keys(&self) -> Result<KeyRing, CtxError> {
        Ok(KeyRing::for_store(self.store()?.dir()))
    }

    /// Writes the provenance sidecar of `artifact` (taken from [`Workspace::cwd`]) made by
    /// run `reference`, signed with the store's key `key` (its default when `None`) when
    /// `sign`. The attachment names the artifact and its sidecar as the caller named them.
    pub fn run_attach(
        &self,
        reference: &str,
        artifact: &Path,
        sign: bool,
        key: Option<&str>,
    ) -> Result<Attachment, CtxError> {
        let store = self.store()?;
        let run = ctx_runs::load_run(store, reference)?;
        let signer = if sign {
            Some(self.run_keys()?.signing_key(key)?)
        } else {
            None
        };
        let mut attachment = provenance::attach(
            store,
            &RunFacts::of(&run),
            &self.cwd.join(artifact),
            signer.as_ref(),
        )?;
        attachment.artifact = artifact.display().to_string();
        attachment.sidecar = provenance::sidecar_path(artifact);
        Ok(attachment)
    }

    /// Checks `artifact`'s provenance sidecar (`sidecar`, else the one beside it) against
    /// the artifact, the run records and the trusted keys (the store's, and `trusted` given
    /// as `ed25519:…` texts). The report names both files as the caller named them.
    pub fn run_verify(
        &self,
        artifact: &Path,
        sidecar: Option<&Path>,
        trusted: &[String],
        require_signature: bool,
    ) -> Result<VerifyReport, CtxError> {
        let options = VerifyOptions {
            extra_trusted: trusted
                .iter()
                .map(|text| provenance::parse_public_key(text))
                .collect::<Result<_, _>>()?,
            require_signature,
        };
        let mut report = provenance::verify(
            self.store()?,
            self,
            &self.cwd.join(artifact),
            sidecar.map(|s| self.cwd.join(s)).as_deref(),
            &options,
        )?;
        report.artifact = artifact.display().to_string();
        report.sidecar = sidecar
            .map_or_else(|| provenance::sidecar_path(artifact), Path::to_path_buf)
            .display()
            .to_string();
        Ok(report)
    }

    /// A run and every run it spawned, as a tree.
    pub fn run_tree(&self, id: &RunId) -> Result<RunTree, CtxError> {
        Ok(ctx_runs::load_run_tree(self.store()?, id)?)
    }

    /// Names run `reference` (an id, a unique prefix, a ref) `tag`; returns its id.
    pub fn run_tag(&self, reference: &str, tag: &str) -> Result<RunId, CtxError> {
        let store = self.store()?;
        let id = ctx_runs::resolve_run(store, reference)?;
        ctx_runs::tag_run(store, tag, &id)?;
        Ok(id)
    }

    /// A new run made of run `reference`'s first `at` steps (all when `None`), tagged when
    /// asked; returns the parent's id and the new run.
    pub fn run_fork(
        &self,
        reference: &str,
        at: Option<usize>,
        tag: Option<&str>,
    ) -> Result<(RunId, Run), CtxError> {
        let store = self.store()?;
        let parent = ctx_runs::resolve_run(store, reference)?;
        let id = ctx_runs::fork_run(store, &parent.to_string(), at)?;
        if let Some(tag) = tag {
            ctx_runs::tag_run(store, tag, &id)?;
        }
        Ok((parent, ctx_runs::load_run_by_id(store, &id)?))
    }

    /// Run `reference` exported as `format`.
    pub fn run_export(
        &self,
        reference: &str,
        format: RunExport,
    ) -> Result<serde_json::Value, CtxError> {
        let store = self.store()?;
        let run = ctx_runs::load_run(store, reference)?;
        Ok(match format {
            RunExport::Otel => {
                ctx_runs::export_otel_tree(&ctx_runs::load_run_tree(store, &run.id)?)
            }
            RunExport::InToto => ctx_runs::export_in_toto(&run),
            RunExport::Ctx => serde_json::to_value(ctx_runs::export_ctx(store, &run)?)
                .expect("exports are plain JSON"),
        })
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

    /// The answer `run show` gives for `run` (with `refs`): its header and steps; with
    /// `content`, the prompts' texts and those of the steps in `window`, each cut after that
    /// many bytes.
    pub fn run_show_answer(
        &self,
        run: &Run,
        refs: Vec<String>,
        content: Option<usize>,
        window: &std::ops::Range<usize>,
    ) -> Result<crate::answers::RunShowAnswer, CtxError> {
        crate::answers::RunShowAnswer::new(run, refs, content, window, &|hash| self.run_blob(hash))
    }

    /// A stored object of a run (a prompt, an input, an output), by its hash.
    pub fn run_blob(&self, hash: &ContentHash) -> Result<Vec<u8>, CtxError> {
        Ok(ctx_runs::read_blob(self.store()?, hash)?)
    }

    /// What changed from run `a` to run `b`, step by step.
    pub fn run_diff(&self, a: &str, b: &str) -> Result<RunDiff, CtxError> {
        let a = ctx_runs::load_run(self.store()?, a)?;
        let b = ctx_runs::load_run(self.store()?, b)?;
        Ok(ctx_runs::diff_runs(&a, &b))
    }

    /// Finishes the recordings that dead processes left in this workspace's store (a crash
    /// during `ctx mcp --record`); `pid` is the caller, whose own journal is left alone.
    pub fn recover_recordings(
        &self,
        pid: u32,
    ) -> Result<Vec<crate::recording::Recovered>, CtxError> {
        let alive = |p: u32| p == pid || crate::recording::process_alive(p);
        crate::recording::recover_recordings(self.store()?, &alive)
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
        self.recover_recordings(pid)?;
        let redactor = self.settings()?.redactor.clone();
        let store = self.store_handle()?;
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

/// Where [`Workspace::run_import_with`] reads a transcript from.
#[derive(Debug, Clone, Copy)]
pub enum RunInput<'a> {
    /// A file, taken from [`Workspace::cwd`].
    File(&'a Path),
    /// Bytes already read (stdin), shown as `name` in messages.
    Bytes { name: &'a str, bytes: &'a [u8] },
}

/// The formats [`Workspace::run_export`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunExport {
    /// ctx's own: the manifest, steps and objects, re-importable.
    #[default]
    Ctx,
    /// OpenTelemetry spans (OTLP JSON), one trace per run tree.
    Otel,
    /// in-toto statements with the SLSA provenance predicate.
    InToto,
}

/// Provenance checks look runs up in the workspace's store.
impl RunLookup for Workspace {
    fn run_facts(&self, id: &ContentHash) -> Result<Option<RunFacts>, ProvenanceError> {
        let failed = |message: String| ProvenanceError::Run {
            run: id.to_string(),
            message,
        };
        let store = self.store().map_err(|err| failed(err.to_string()))?;
        match ctx_runs::resolve_run(store, &id.to_string()) {
            Ok(found) if found == *id => {}
            Ok(_) | Err(RunError::NoSuchRun { .. }) => return Ok(None),
            Err(err) => return Err(failed(err.to_string())),
        }
        let run = ctx_runs::load_run_by_id(store, id).map_err(|err| failed(err.to_string()))?;
        Ok(Some(RunFacts::of(&run)))
    }
}
