//! Replay (seed 004 §5): re-execute a run's deterministic steps and compare output hashes.
//!
//! The crate cannot run tools itself (the tools live in ctx-mcp, above it in the dependency
//! rule), so the caller supplies a [`StepExecutor`]: tool name + parameters -> output bytes
//! or an error. The CLI implements it with the MCP server's own dispatch, so a replayed
//! output is produced by exactly the code that produced the recorded one.
//!
//! Each step ends as one of:
//!
//! - `exact`: re-executed, same output hash (an error step that fails again the same way
//!   counts too);
//! - `diverged`: re-executed, different output (downgrades the run to `degraded`);
//! - `failed`: the tool now errors where it succeeded (a file the run read was deleted):
//!   the run is `failed`;
//! - `not_replayable`: deterministic, but ctx cannot re-run it (a tool ctx does not have, such
//!   as an imported Claude Code `Read`, or a command without `--allow-commands`);
//! - `skipped`: not meant to replay (a model turn, a step that is not deterministic).
//!
//! The run's fidelity is the worst of its steps: `failed`, then `degraded`, then
//! `not_replayable` (some step that should replay could not be re-run, or no step was re-run
//! at all: nothing was checked), and `exact` only when every step that should replay did, and
//! gave its recorded output.

use std::fmt::Write as _;

use ctx_core::ContentHash;
use ctx_store::Objects;
use serde::Serialize;
use serde_json::Value;

/// The most lines of unified diff a report carries for the first divergence.
pub const MAX_DIFF_LINES: usize = 400;

/// One step as replay sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayStep {
    /// Position in the run.
    pub index: u64,
    /// The tool, for tool calls (`None` for model turns).
    pub tool: Option<String>,
    /// The call's arguments.
    pub parameters: Value,
    /// The recorded output blob.
    pub output: Option<ContentHash>,
    /// Whether the recorded call ended in an error (its output is the error text).
    pub recorded_error: bool,
    /// Whether the step must give the same output again.
    pub deterministic: bool,
}

impl From<&crate::model::Step> for ReplayStep {
    fn from(step: &crate::model::Step) -> Self {
        Self {
            index: step.index,
            tool: match step.kind {
                crate::model::StepKind::ToolCall => step.tool.clone(),
                crate::model::StepKind::ModelCall => None,
            },
            parameters: step.parameters.clone(),
            output: step.output_ref,
            recorded_error: step.status == crate::model::StepStatus::Error,
            deterministic: step.deterministic,
        }
    }
}

/// What an executor did with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Execution {
    /// The tool answered: these are its output bytes, in the recorded form.
    Output(Vec<u8>),
    /// The tool failed: this is its error text (in the recorded form of an error output).
    Error(Vec<u8>),
    /// The executor will not run this call; the reason says why (unknown tool, commands not
    /// allowed).
    Skip(String),
}

/// Runs tools for replay.
pub trait StepExecutor {
    /// Runs `tool` with `parameters`.
    fn execute(&self, tool: &str, parameters: &Value) -> Execution;
}

/// How faithfully a run replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// Every replayed step gave its recorded output.
    Exact,
    /// A step that should replay could not be re-run by ctx, or no step was re-run at all:
    /// nothing diverged, but the run is not shown to replay.
    NotReplayable,
    /// Every step ran, some gave different output.
    Degraded,
    /// A step could not run.
    Failed,
}

impl Fidelity {
    /// The word printed for it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::NotReplayable => "not replayable",
            Self::Degraded => "degraded",
            Self::Failed => "failed",
        }
    }
}

/// How one step replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    Exact,
    Diverged,
    Failed,
    /// Deterministic, but ctx cannot re-run it.
    NotReplayable,
    /// Not meant to replay (a model turn, a step that is not deterministic).
    Skipped,
}

impl StepOutcome {
    /// The word printed for it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Diverged => "diverged",
            Self::Failed => "failed",
            Self::NotReplayable => "not replayable",
            Self::Skipped => "skipped",
        }
    }
}

/// One step's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepResult {
    pub index: u64,
    /// The tool, or `chat` for a model turn.
    pub tool: String,
    pub outcome: StepOutcome,
    /// The recorded output's hash.
    pub recorded: Option<ContentHash>,
    /// The replayed output's hash (also for an error: the hash of its text).
    pub replayed: Option<ContentHash>,
    /// Why it was skipped, or the error it failed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The first step that did not replay exactly, with a diff of its output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    pub index: u64,
    pub tool: String,
    /// `diverged` or `failed`.
    pub outcome: StepOutcome,
    pub recorded: Option<ContentHash>,
    pub replayed: Option<ContentHash>,
    /// The error, for a failed step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Unified diff from the recorded output to the replayed one (at most [`MAX_DIFF_LINES`]);
    /// JSON outputs are compared flattened ([`flatten_json`]).
    pub diff: String,
}

/// What a replay found.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub run: ContentHash,
    pub fidelity: Fidelity,
    /// Steps in the run.
    pub steps: usize,
    pub exact: usize,
    pub diverged: usize,
    pub failed: usize,
    /// Steps that should replay but ctx cannot re-run.
    pub not_replayable: usize,
    pub skipped: usize,
    pub first_divergence: Option<Divergence>,
    pub results: Vec<StepResult>,
}

/// Replays `steps` of run `run` with `executor`; recorded outputs (for the diff) come from
/// `objects`.
pub fn replay(
    run: ContentHash,
    steps: &[ReplayStep],
    executor: &dyn StepExecutor,
    objects: &dyn Objects,
) -> ReplayReport {
    let mut results = Vec::with_capacity(steps.len());
    let mut first_divergence = None;
    for step in steps {
        let (result, replayed_bytes) = replay_step(step, executor);
        if first_divergence.is_none()
            && matches!(result.outcome, StepOutcome::Diverged | StepOutcome::Failed)
        {
            let recorded_bytes = step.output.map(|hash| objects.get(&hash));
            let recorded_text = match recorded_bytes {
                Some(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                Some(Err(err)) => format!("(the recorded output cannot be read: {err})\n"),
                None => String::new(),
            };
            let replayed_text = String::from_utf8_lossy(&replayed_bytes).into_owned();
            let (recorded_text, replayed_text) = diffable(recorded_text, replayed_text);
            first_divergence = Some(Divergence {
                index: result.index,
                tool: result.tool.clone(),
                outcome: result.outcome,
                recorded: result.recorded,
                replayed: result.replayed,
                error: match result.outcome {
                    StepOutcome::Failed => result.reason.clone(),
                    _ => None,
                },
                diff: unified_diff(&recorded_text, &replayed_text),
            });
        }
        results.push(result);
    }
    let count = |o: StepOutcome| results.iter().filter(|r| r.outcome == o).count();
    let (exact, diverged, failed, not_replayable, skipped) = (
        count(StepOutcome::Exact),
        count(StepOutcome::Diverged),
        count(StepOutcome::Failed),
        count(StepOutcome::NotReplayable),
        count(StepOutcome::Skipped),
    );
    let fidelity = if failed > 0 {
        Fidelity::Failed
    } else if diverged > 0 {
        Fidelity::Degraded
    } else if not_replayable > 0 || exact == 0 {
        Fidelity::NotReplayable
    } else {
        Fidelity::Exact
    };
    ReplayReport {
        run,
        fidelity,
        steps: steps.len(),
        exact,
        diverged,
        failed,
        not_replayable,
        skipped,
        first_divergence,
        results,
    }
}

fn replay_step(step: &ReplayStep, executor: &dyn StepExecutor) -> (StepResult, Vec<u8>) {
    let mut result = StepResult {
        index: step.index,
        tool: step.tool.clone().unwrap_or_else(|| "chat".to_owned()),
        outcome: StepOutcome::Skipped,
        recorded: step.output,
        replayed: None,
        reason: None,
    };
    let Some(tool) = &step.tool else {
        result.reason = Some("a model turn is not re-executed".to_owned());
        return (result, Vec::new());
    };
    if !step.deterministic {
        result.reason = Some("the step is not deterministic".to_owned());
        return (result, Vec::new());
    }
    match executor.execute(tool, &step.parameters) {
        Execution::Skip(reason) => {
            result.outcome = StepOutcome::NotReplayable;
            result.reason = Some(reason);
            (result, Vec::new())
        }
        Execution::Output(bytes) => {
            let hash = ContentHash::of(&bytes);
            result.replayed = Some(hash);
            result.outcome = if step.output == Some(hash) && !step.recorded_error {
                StepOutcome::Exact
            } else {
                StepOutcome::Diverged
            };
            (result, bytes)
        }
        Execution::Error(bytes) => {
            let hash = ContentHash::of(&bytes);
            result.replayed = Some(hash);
            if step.recorded_error {
                // It failed when recorded too: the same failure is a faithful replay.
                result.outcome = if step.output == Some(hash) {
                    StepOutcome::Exact
                } else {
                    StepOutcome::Diverged
                };
            } else {
                result.outcome = StepOutcome::Failed;
                result.reason = Some(String::from_utf8_lossy(&bytes).trim_end().to_owned());
            }
            (result, bytes)
        }
    }
}

/// When both outputs are JSON, their flattened forms ([`flatten_json`]), so that a changed line
/// inside a string (a file's content) shows as that line; otherwise the texts as they are.
fn diffable(recorded: String, replayed: String) -> (String, String) {
    match (
        serde_json::from_str::<Value>(&recorded),
        serde_json::from_str::<Value>(&replayed),
    ) {
        (Ok(a), Ok(b)) => (flatten_json(&a), flatten_json(&b)),
        _ => (recorded, replayed),
    }
}

/// One line per JSON leaf, `path: value`, in document order; a string with newlines is
/// written as `path: |` followed by its lines, each indented by two spaces.
pub fn flatten_json(value: &Value) -> String {
    fn walk(value: &Value, path: &str, out: &mut String) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, item) in map {
                    let next = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(item, &next, out);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{path}[{i}]"), out);
                }
            }
            Value::String(text) if text.contains('\n') => {
                let _ = writeln!(out, "{path}: |");
                for line in text.lines() {
                    let _ = writeln!(out, "  {line}");
                }
            }
            leaf => {
                let _ = writeln!(out, "{path}: {leaf}");
            }
        }
    }
    let mut out = String::new();
    walk(value, "", &mut out);
    out
}

/// A unified diff from `recorded` to `replayed`, cut at [`MAX_DIFF_LINES`] lines.
pub fn unified_diff(recorded: &str, replayed: &str) -> String {
    let diff = similar::TextDiff::from_lines(recorded, replayed);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header("recorded", "replayed")
        .to_string();
    let total = text.lines().count();
    if total <= MAX_DIFF_LINES {
        return text;
    }
    let mut cut: String = text
        .split_inclusive('\n')
        .take(MAX_DIFF_LINES)
        .collect::<String>();
    let _ = writeln!(cut, "... ({} more diff lines)", total - MAX_DIFF_LINES);
    cut
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Answers from a table: tool -> outcome.
    struct Table(BTreeMap<&'static str, Execution>);

    impl StepExecutor for Table {
        fn execute(&self, tool: &str, _parameters: &Value) -> Execution {
            self.0
                .get(tool)
                .cloned()
                .unwrap_or_else(|| Execution::Skip(format!("ctx cannot run `{tool}`")))
        }
    }

    fn step(index: u64, tool: &str, output: &[u8], objects: &dyn Objects) -> ReplayStep {
        ReplayStep {
            index,
            tool: Some(tool.to_owned()),
            parameters: Value::Null,
            output: Some(objects.put(output).expect("put")),
            recorded_error: false,
            deterministic: true,
        }
    }

    fn objects() -> (tempfile::TempDir, ctx_store::LocalObjects) {
        let dir = tempfile::tempdir().expect("tempdir");
        let objects =
            ctx_store::LocalObjects::new(dir.path().join("objects"), dir.path().join("tmp"));
        std::fs::create_dir_all(dir.path().join("objects")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("tmp")).expect("mkdir");
        (dir, objects)
    }

    #[test]
    fn fidelity_follows_the_worst_step_and_names_the_first_divergence() {
        let (_dir, objects) = objects();
        let steps = vec![
            step(0, "same", b"a\nb\n", &objects),
            step(1, "changed", b"a\nb\n", &objects),
            step(2, "Edit", b"x", &objects),
            step(3, "gone", b"a\n", &objects),
        ];
        let run = ContentHash::of(b"run");
        let mut table = BTreeMap::from([
            ("same", Execution::Output(b"a\nb\n".to_vec())),
            ("changed", Execution::Output(b"a\nc\n".to_vec())),
        ]);
        let report = replay(run, &steps[..3], &Table(table.clone()), &objects);
        assert_eq!(report.fidelity, Fidelity::Degraded);
        assert_eq!(
            (report.exact, report.diverged, report.not_replayable),
            (1, 1, 1)
        );
        let first = report.first_divergence.expect("diverged");
        assert_eq!((first.index, first.tool.as_str()), (1, "changed"));
        assert!(first.diff.contains("-b\n+c\n"), "{}", first.diff);

        // JSON outputs are diffed flattened, a string's lines one by one.
        let a = serde_json::json!({"r": [{"content": "x\ny\nz", "n": 1}]});
        let b = serde_json::json!({"r": [{"content": "x\nY\nz", "n": 1}]});
        assert_eq!(
            flatten_json(&a),
            "r[0].content: |\n  x\n  y\n  z\nr[0].n: 1\n"
        );
        let (old, new) = diffable(a.to_string(), b.to_string());
        assert!(unified_diff(&old, &new).contains("-  y\n+  Y\n"));

        table.insert("gone", Execution::Error(b"not found".to_vec()));
        let report = replay(run, &steps, &Table(table), &objects);
        assert_eq!(report.fidelity, Fidelity::Failed);
        assert_eq!(report.results[3].outcome, StepOutcome::Failed);
        assert_eq!(report.results[3].reason.as_deref(), Some("not found"));
    }

    #[test]
    fn non_deterministic_steps_and_repeated_errors_do_not_downgrade() {
        let (_dir, objects) = objects();
        let mut random = step(0, "changed", b"1", &objects);
        random.deterministic = false;
        let mut error = step(1, "gone", b"not found", &objects);
        error.recorded_error = true;
        let table = Table(BTreeMap::from([
            ("changed", Execution::Output(b"2".to_vec())),
            ("gone", Execution::Error(b"not found".to_vec())),
        ]));
        let report = replay(ContentHash::of(b"r"), &[random, error], &table, &objects);
        assert_eq!(report.fidelity, Fidelity::Exact);
        assert_eq!(report.results[0].outcome, StepOutcome::Skipped);
        assert_eq!(report.results[1].outcome, StepOutcome::Exact);
    }

    #[test]
    fn steps_ctx_cannot_rerun_are_not_replayable_never_exact() {
        let (_dir, objects) = objects();
        let table = Table(BTreeMap::from([("same", Execution::Output(b"a".to_vec()))]));
        // A deterministic step of a tool ctx does not have, beside one that replays.
        let steps = [
            step(0, "same", b"a", &objects),
            step(1, "Read", b"x", &objects),
        ];
        let report = replay(ContentHash::of(b"r"), &steps, &table, &objects);
        assert_eq!(report.fidelity, Fidelity::NotReplayable);
        assert_eq!((report.exact, report.not_replayable), (1, 1));
        assert_eq!(report.results[1].outcome, StepOutcome::NotReplayable);
        // Nothing re-run at all (only model turns and steps that are not deterministic):
        // nothing was checked, so not exact either.
        let mut random = step(0, "same", b"a", &objects);
        random.deterministic = false;
        let report = replay(ContentHash::of(b"r"), &[random], &table, &objects);
        assert_eq!(report.fidelity, Fidelity::NotReplayable);
        assert_eq!(report.skipped, 1);
    }

    #[test]
    fn long_diffs_are_cut() {
        let old = (0..1000).fold(String::new(), |mut s, i| {
            let _ = writeln!(s, "{i}");
            s
        });
        let diff = unified_diff(&old, "");
        assert!(diff.lines().count() <= MAX_DIFF_LINES + 1);
        assert!(diff.ends_with("more diff lines)\n"));
    }
}
