//! `run diff`: typed drift between two runs (seed 004 §7).
//!
//! Runs are compared section by section. Prompts, system prompt and inputs give
//! `prompt_drift`; the model and its parameters, and a step's arguments, `param_drift`; a
//! different tool (or model) at a step, or a step present on one side only, `tool_drift`; the
//! model's own text (its reasoning, a model turn's message), `reasoning_drift`; what a tool
//! gave back (a tool step's output or status), the runs nested in a run, and the run's
//! outputs, `output_drift`.
//! Each entry names the step (its index in A and in B), the field, and both sides' hashes.
//!
//! Steps are aligned before they are compared (a longest common subsequence on kind, tool,
//! model and arguments), so one inserted step is reported once instead of shifting the rest.

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
    /// The step's index in A, for step-level drift; for a step only in B, the index in A it
    /// was inserted before.
    pub step: Option<u64>,
    /// The step's index in B; for a step only in A, the index in B it was deleted before.
    /// Steps are aligned, so it differs from `step` after an inserted or deleted step.
    pub step_b: Option<u64>,
    /// What differs: `system_prompt`, `prompts[0]`, `inputs/src/a.rs`, `model`,
    /// `gen_ai.tool.name`, `gen_ai.tool.call.arguments`, `output_ref`, `reasoning_ref`,
    /// `status`, `outputs/result.md`, `children[0]` (a nested run), `step`.
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
    children(a, b, &mut drift);
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
        step_b: None,
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
    let key = |step: &Step| {
        ctx_core::canonical::hash(&serde_json::json!([
            step.kind.operation_name(),
            step.tool,
            step.model,
            step.parameters,
        ]))
        .expect("JSON serializes")
    };
    let keys_a: Vec<ContentHash> = run_a.steps.iter().map(key).collect();
    let keys_b: Vec<ContentHash> = run_b.steps.iter().map(key).collect();
    // Where the next step of each side is: an inserted step's position on the other side.
    let (mut next_a, mut next_b) = (0, 0);
    for pair in align(&keys_a, &keys_b) {
        if let Some(i) = pair.0 {
            next_a = i + 1;
        }
        if let Some(j) = pair.1 {
            next_b = j + 1;
        }
        match pair {
            (Some(i), Some(j)) => {
                if run_a.manifest.steps[i] != run_b.manifest.steps[j] {
                    step_pair(i as u64, j as u64, &run_a.steps[i], &run_b.steps[j], out);
                }
            }
            (Some(i), None) => {
                let mut d = entry(
                    DriftKind::ToolDrift,
                    Some(i as u64),
                    "step",
                    Some(run_a.manifest.steps[i]),
                    None,
                    format!(
                        "step {i} (`{}`) is only in A (deleted before step {next_b} of B)",
                        run_a.steps[i].label()
                    ),
                );
                d.step_b = Some(next_b as u64);
                out.push(d);
            }
            (None, Some(j)) => {
                let mut d = entry(
                    DriftKind::ToolDrift,
                    Some(next_a as u64),
                    "step",
                    None,
                    Some(run_b.manifest.steps[j]),
                    format!(
                        "step {j} of B (`{}`) is only in B (inserted before step {next_a} of A)",
                        run_b.steps[j].label()
                    ),
                );
                d.step_b = Some(j as u64);
                out.push(d);
            }
            (None, None) => {}
        }
    }
}

/// The largest middle section (steps left after the common prefix and suffix, A × B) aligned
/// with a longest common subsequence; larger ones are paired by position.
const MAX_ALIGN_CELLS: usize = 16 << 20;

/// Pairs the steps of A and B in order: steps with the same key (kind, tool, model,
/// arguments) are matched along a longest common subsequence, so an inserted or deleted step
/// does not shift every later one. Between two matches, the unmatched steps are paired by
/// position and the rest are on one side only.
fn align(a: &[ContentHash], b: &[ContentHash]) -> Vec<(Option<usize>, Option<usize>)> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut anchors: Vec<(usize, usize)> = (0..prefix).map(|i| (i, i)).collect();
    if mid_a.len().saturating_mul(mid_b.len()) <= MAX_ALIGN_CELLS {
        anchors.extend(
            lcs(mid_a, mid_b)
                .into_iter()
                .map(|(i, j)| (prefix + i, prefix + j)),
        );
    }
    anchors.extend((0..suffix).map(|k| (a.len() - suffix + k, b.len() - suffix + k)));
    let mut pairs = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    for (ai, bj) in anchors
        .into_iter()
        .chain(std::iter::once((a.len(), b.len())))
    {
        while i < ai && j < bj {
            pairs.push((Some(i), Some(j)));
            i += 1;
            j += 1;
        }
        pairs.extend((i..ai).map(|x| (Some(x), None)));
        pairs.extend((j..bj).map(|y| (None, Some(y))));
        if ai < a.len() {
            pairs.push((Some(ai), Some(bj)));
        }
        (i, j) = (ai + 1, bj + 1);
    }
    pairs
}

/// Index pairs of a longest common subsequence of `a` and `b`, in order.
fn lcs(a: &[ContentHash], b: &[ContentHash]) -> Vec<(usize, usize)> {
    let width = b.len() + 1;
    // table[i * width + j]: LCS length of a[i..] and b[j..].
    let mut table = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i * width + j] = if a[i] == b[j] {
                table[(i + 1) * width + j + 1] + 1
            } else {
                table[(i + 1) * width + j].max(table[i * width + j + 1])
            };
        }
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if table[(i + 1) * width + j] >= table[i * width + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

fn step_pair(i: u64, j: u64, x: &Step, y: &Step, out: &mut Vec<Drift>) {
    let at = if i == j {
        format!("step {i}")
    } else {
        format!("step {i} (step {j} in B)")
    };
    let mut push = |mut d: Drift| {
        d.step_b = Some(j);
        out.push(d);
    };
    if x.kind != y.kind || x.tool != y.tool || x.model != y.model {
        push(entry(
            DriftKind::ToolDrift,
            Some(i),
            "gen_ai.tool.name",
            Some(x.hash()),
            Some(y.hash()),
            format!("{at} calls `{}` in A, `{}` in B", x.label(), y.label()),
        ));
        return;
    }
    if x.parameters != y.parameters {
        let hash = |v: &serde_json::Value| ctx_core::canonical::hash(v).expect("JSON serializes");
        push(entry(
            DriftKind::ParamDrift,
            Some(i),
            "gen_ai.tool.call.arguments",
            Some(hash(&x.parameters)),
            Some(hash(&y.parameters)),
            format!(
                "{at} (`{}`) has different arguments{}",
                x.label(),
                changed_keys(&x.parameters, &y.parameters)
            ),
        ));
    }
    if x.reasoning_ref != y.reasoning_ref {
        push(entry(
            DriftKind::ReasoningDrift,
            Some(i),
            "reasoning_ref",
            x.reasoning_ref,
            y.reasoning_ref,
            format!("the reasoning before {at} (`{}`) differs", x.label()),
        ));
    }
    // A model turn's output is the model's own text; a tool's is what the tool gave back.
    let output_kind = match x.kind {
        crate::model::StepKind::ModelCall => DriftKind::ReasoningDrift,
        crate::model::StepKind::ToolCall => DriftKind::OutputDrift,
    };
    if x.output_ref != y.output_ref {
        push(entry(
            output_kind,
            Some(i),
            "output_ref",
            x.output_ref,
            y.output_ref,
            format!("{at} (`{}`) produced a different output", x.label()),
        ));
    }
    if x.status != y.status {
        let name = |s: crate::model::StepStatus| match s {
            crate::model::StepStatus::Ok => "ok",
            crate::model::StepStatus::Error => "error",
        };
        push(entry(
            output_kind,
            Some(i),
            "status",
            Some(x.hash()),
            Some(y.hash()),
            format!(
                "{at} (`{}`) is {} in A, {} in B",
                x.label(),
                name(x.status),
                name(y.status)
            ),
        ));
    }
}

/// Nested runs (sub-agents, compactions) that differ, paired by the step that started them
/// (then by order).
fn children(run_a: &Run, run_b: &Run, out: &mut Vec<Drift>) {
    let key = |c: &crate::model::ChildRun| (c.step, c.kind.clone(), c.call_id.clone());
    let mut left: Vec<&crate::model::ChildRun> = run_a.manifest.children.iter().collect();
    let mut right: Vec<&crate::model::ChildRun> = run_b.manifest.children.iter().collect();
    left.sort_by_key(|c| key(c));
    right.sort_by_key(|c| key(c));
    for i in 0..left.len().max(right.len()) {
        let (in_a, in_b) = (left.get(i), right.get(i));
        if in_a.map(|c| c.run) == in_b.map(|c| c.run) {
            continue;
        }
        let which = in_a.or(in_b).expect("one side has it");
        let what = match which.step {
            Some(step) => format!("the {} run started by step {step}", which.kind),
            None => format!("{} run {i}", which.kind),
        };
        let detail = match (in_a, in_b) {
            (Some(_), Some(_)) => format!("{what} differs"),
            (Some(_), None) => format!("{what} is only in A"),
            (None, _) => format!("{what} is only in B"),
        };
        let mut drift = entry(
            DriftKind::OutputDrift,
            which.step,
            &format!("children[{i}]"),
            in_a.map(|c| c.run),
            in_b.map(|c| c.run),
            detail,
        );
        drift.step_b = in_b.and_then(|c| c.step);
        out.push(drift);
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
