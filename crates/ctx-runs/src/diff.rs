//! `run diff`: typed drift between two runs (seed 004 §7).
//!
//! Runs are compared section by section. Prompts, system prompt and inputs give
//! `prompt_drift`; the model and its parameters, and a step's arguments, `param_drift`; a
//! different tool (or model) at a step, or a step present on one side only, `tool_drift`; a
//! step's output or reasoning, `reasoning_drift`; the run's outputs, `output_drift`. Each
//! entry names the step (when there is one), the field, and both sides' hashes.

use std::collections::BTreeMap;
use std::fmt;

use ctx_core::ContentHash;
use serde::Serialize;

use crate::model::{ContentRef, RunId, Step};
use crate::store::Run;

/// The kind of a drift entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftKind {
    PromptDrift,
    ToolDrift,
    ParamDrift,
    ReasoningDrift,
    OutputDrift,
}

impl DriftKind {
    /// The snake_case name used in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::PromptDrift => "prompt_drift",
            Self::ToolDrift => "tool_drift",
            Self::ParamDrift => "param_drift",
            Self::ReasoningDrift => "reasoning_drift",
            Self::OutputDrift => "output_drift",
        }
    }
}

impl fmt::Display for DriftKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One difference between two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    #[serde(rename = "type")]
    pub kind: DriftKind,
    /// The step index, for step-level drift.
    pub step: Option<u64>,
    /// What differs: `system_prompt`, `prompts[0]`, `inputs/src/a.rs`, `model`,
    /// `gen_ai.tool.name`, `gen_ai.tool.call.arguments`, `output_ref`, `reasoning_ref`,
    /// `outputs/result.md`, `step`.
    pub field: String,
    /// The hash on side A (`null` when A has nothing there).
    pub a: Option<ContentHash>,
    /// The hash on side B.
    pub b: Option<ContentHash>,
    /// A readable one-line description.
    pub detail: String,
}

/// The result of comparing two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunDiff {
    pub a: RunId,
    pub b: RunId,
    /// Drift entries by section, then step.
    pub drift: Vec<Drift>,
    /// Entries per kind (every kind present, zero included).
    pub counts: BTreeMap<DriftKind, u64>,
}

impl RunDiff {
    /// Whether the runs differ in any tracked way.
    pub fn differs(&self) -> bool {
        !self.drift.is_empty()
    }
}

/// Compares run `a` with run `b`.
pub fn diff_runs(a: &Run, b: &Run) -> RunDiff {
    let mut drift = Vec::new();
    prompts(a, b, &mut drift);
    model(a, b, &mut drift);
    steps(a, b, &mut drift);
    named(
        &a.manifest.outputs,
        &b.manifest.outputs,
        DriftKind::OutputDrift,
        "outputs",
        &mut drift,
    );
    let mut counts: BTreeMap<DriftKind, u64> = [
        DriftKind::PromptDrift,
        DriftKind::ToolDrift,
        DriftKind::ParamDrift,
        DriftKind::ReasoningDrift,
        DriftKind::OutputDrift,
    ]
    .into_iter()
    .map(|k| (k, 0))
    .collect();
    for d in &drift {
        *counts.entry(d.kind).or_default() += 1;
    }
    RunDiff {
        a: a.id,
        b: b.id,
        drift,
        counts,
    }
}

fn entry(
    kind: DriftKind,
    step: Option<u64>,
    field: &str,
    a: Option<ContentHash>,
    b: Option<ContentHash>,
    detail: String,
) -> Drift {
    Drift {
        kind,
        step,
        field: field.to_owned(),
        a,
        b,
        detail,
    }
}

fn prompts(a: &Run, b: &Run, out: &mut Vec<Drift>) {
    let (sa, sb) = (a.manifest.system_prompt, b.manifest.system_prompt);
    if sa != sb {
        out.push(entry(
            DriftKind::PromptDrift,
            None,
            "system_prompt",
            sa,
            sb,
            "the system prompt differs".to_owned(),
        ));
    }
    let (pa, pb) = (&a.manifest.prompts, &b.manifest.prompts);
    for i in 0..pa.len().max(pb.len()) {
        let (x, y) = (pa.get(i), pb.get(i));
        if x == y {
            continue;
        }
        let detail = match (x, y) {
            (Some(x), Some(y)) if x.role != y.role => {
                format!("prompt {i} is from `{}` in A, `{}` in B", x.role, y.role)
            }
            (Some(_), Some(_)) => format!("prompt {i} differs"),
            (Some(_), None) => format!("prompt {i} is only in A"),
            (None, _) => format!("prompt {i} is only in B"),
        };
        out.push(entry(
            DriftKind::PromptDrift,
            None,
            &format!("prompts[{i}]"),
            x.map(|p| p.content_ref),
            y.map(|p| p.content_ref),
            detail,
        ));
    }
    named(
        &a.manifest.inputs,
        &b.manifest.inputs,
        DriftKind::PromptDrift,
        "inputs",
        out,
    );
}

fn model(a: &Run, b: &Run, out: &mut Vec<Drift>) {
    let (ma, mb) = (&a.manifest.model, &b.manifest.model);
    if ma == mb {
        return;
    }
    let hash = |m: &Option<crate::model::ModelInfo>| {
        m.as_ref()
            .map(|m| ctx_core::canonical::hash(m).expect("models serialize"))
    };
    let name = |m: &Option<crate::model::ModelInfo>| {
        m.as_ref()
            .map_or_else(|| "none".to_owned(), |m| m.identifier.clone())
    };
    let detail = if name(ma) == name(mb) {
        format!("model `{}` runs with different parameters", name(ma))
    } else {
        format!("model `{}` in A, `{}` in B", name(ma), name(mb))
    };
    out.push(entry(
        DriftKind::ParamDrift,
        None,
        "model",
        hash(ma),
        hash(mb),
        detail,
    ));
}

fn steps(run_a: &Run, run_b: &Run, out: &mut Vec<Drift>) {
    let count = run_a.steps.len().max(run_b.steps.len());
    for i in 0..count {
        let index = Some(i as u64);
        let (hash_a, hash_b) = (run_a.manifest.steps.get(i), run_b.manifest.steps.get(i));
        match (run_a.steps.get(i), run_b.steps.get(i)) {
            (Some(step_a), Some(step_b)) => {
                if hash_a != hash_b {
                    step_pair(i as u64, step_a, step_b, out);
                }
            }
            (Some(step_a), None) => out.push(entry(
                DriftKind::ToolDrift,
                index,
                "step",
                hash_a.copied(),
                None,
                format!("step {i} (`{}`) is only in A", step_a.label()),
            )),
            (None, Some(step_b)) => out.push(entry(
                DriftKind::ToolDrift,
                index,
                "step",
                None,
                hash_b.copied(),
                format!("step {i} (`{}`) is only in B", step_b.label()),
            )),
            (None, None) => {}
        }
    }
}

fn step_pair(i: u64, x: &Step, y: &Step, out: &mut Vec<Drift>) {
    if x.kind != y.kind || x.tool != y.tool || x.model != y.model {
        out.push(entry(
            DriftKind::ToolDrift,
            Some(i),
            "gen_ai.tool.name",
            Some(x.hash()),
            Some(y.hash()),
            format!("step {i} calls `{}` in A, `{}` in B", x.label(), y.label()),
        ));
        return;
    }
    if x.parameters != y.parameters {
        let hash = |v: &serde_json::Value| ctx_core::canonical::hash(v).expect("JSON serializes");
        out.push(entry(
            DriftKind::ParamDrift,
            Some(i),
            "gen_ai.tool.call.arguments",
            Some(hash(&x.parameters)),
            Some(hash(&y.parameters)),
            format!(
                "step {i} (`{}`) has different arguments{}",
                x.label(),
                changed_keys(&x.parameters, &y.parameters)
            ),
        ));
    }
    if x.reasoning_ref != y.reasoning_ref {
        out.push(entry(
            DriftKind::ReasoningDrift,
            Some(i),
            "reasoning_ref",
            x.reasoning_ref,
            y.reasoning_ref,
            format!("the reasoning before step {i} (`{}`) differs", x.label()),
        ));
    }
    if x.output_ref != y.output_ref {
        out.push(entry(
            DriftKind::ReasoningDrift,
            Some(i),
            "output_ref",
            x.output_ref,
            y.output_ref,
            format!("step {i} (`{}`) produced a different output", x.label()),
        ));
    }
}

/// ` (keys: a, b)` listing the top-level argument keys whose values differ.
fn changed_keys(x: &serde_json::Value, y: &serde_json::Value) -> String {
    let (Some(x), Some(y)) = (x.as_object(), y.as_object()) else {
        return String::new();
    };
    let mut keys: Vec<&str> = x
        .keys()
        .chain(y.keys())
        .filter(|k| x.get(*k) != y.get(*k))
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        String::new()
    } else {
        format!(" (keys: {})", keys.join(", "))
    }
}

fn named(a: &[ContentRef], b: &[ContentRef], kind: DriftKind, section: &str, out: &mut Vec<Drift>) {
    let map = |refs: &[ContentRef]| -> BTreeMap<String, ContentHash> {
        refs.iter()
            .map(|r| (r.name.clone(), r.content_ref))
            .collect()
    };
    let (ma, mb) = (map(a), map(b));
    let mut names: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let (x, y) = (ma.get(name).copied(), mb.get(name).copied());
        if x == y {
            continue;
        }
        let what = &section[..section.len() - 1];
        let detail = match (x, y) {
            (Some(_), Some(_)) => format!("{what} `{name}` differs"),
            (Some(_), None) => format!("{what} `{name}` is only in A"),
            _ => format!("{what} `{name}` is only in B"),
        };
        out.push(entry(
            kind,
            None,
            &format!("{section}/{name}"),
            x,
            y,
            detail,
        ));
    }
}
