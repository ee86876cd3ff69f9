//! Claude Code session transcripts: one JSON object per line, from 1.0 to 2.1.
//!
//! `user` and `assistant` lines carry a `message` whose `content` is a string or a list of
//! blocks: `text`, `thinking`, `tool_use` (`id`, `name`, `input`), `tool_result`
//! (`tool_use_id`, `content`, `is_error`), `image`, `document`, and the API's server tools
//! (`server_tool_use` with its `*_tool_result` in the same message). A user prompt is a prompt;
//! each assistant text block a model step; each tool call a tool step, whose output is the
//! result with its `tool_use_id` wherever it is in the file (parallel calls are answered in
//! any order); thinking is the reasoning of the next step. Each step records the model of the
//! message that made it, and the first step of a message carries that message's final token
//! `usage`. A tool step lasts from its call's line to its result's line; a model step from the
//! line it answers to its own.
//!
//! Lines form a forest through `parentUuid`. The session is the chain that leads to its last
//! line, followed back through compactions (a `compact_boundary` with `parentUuid: null`
//! names the line it continues in `logicalParentUuid`; 1.0's compactions start a new tree,
//! continued from the line before it) — a compaction continues the session, and its summary
//! is a `compact_summary` prompt. Lines of the same message and tool results off the chain
//! (where 2.x hangs parallel results and hook `progress` lines) stay in the session. A turn
//! off the chain is a branch the user went back from: it becomes a run of its own, forked
//! from the session after the line it branched at.
//!
//! Sub-agents run in sidechains: `isSidechain` lines in the session file (1.0), or their own
//! files, `agent-<id>.jsonl` next to the session (2.0) or in `<session>/subagents/` (2.1).
//! Each becomes a nested run linked to the `Task`/`Agent` call that started it (by the
//! `agentId` of the call's result, else by its prompt); the compaction agents
//! (`agent-acompact-*`) are nested as compactions.
//!
//! `progress`, `system` (but compaction boundaries), `summary`, `file-history-snapshot`,
//! `queue-operation`, `attachment` and the other bookkeeping lines, and meta user lines
//! (`isMeta`: caveats and reminders Claude Code adds), are known and skipped without a word;
//! lines repeating a `uuid` are copies and skipped too.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{
    ImportOptions, ImportReport, ImportWarning, LogSource, LossKind, ParsedChild, ParsedRun,
    UnknownKinds, is_deterministic_tool, jsonl, list_files, main_model, millis_between, output_of,
    usage_of,
};
use crate::RunError;
use crate::model::{ChildRun, ModelInfo, StepStatus, TokenUsage};
use crate::store::StepDraft;

const FORMAT: &str = "claude-code";

/// Record types Claude Code writes that carry nothing a run keeps.
const BOOKKEEPING: &[&str] = &[
    "summary",
    "system",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "result",
    "attachment",
    "custom-title",
    "tag",
];

/// The tools that start a sub-agent.
const AGENT_TOOLS: &[&str] = &["Task", "Agent"];

/// The sub-agent transcripts that belong with the session file at `path`: every
/// `<session>/subagents/*.jsonl`, and the `agent-<id>.jsonl` next to it for each agent id
/// the session names.
pub(super) fn sidecar_files(path: &Path, bytes: &[u8]) -> Result<Vec<PathBuf>, RunError> {
    let Some(dir) = path.parent() else {
        return Ok(Vec::new());
    };
    let mut files = match path.file_stem() {
        Some(stem) => list_files(&dir.join(stem).join("subagents"), "jsonl")?,
        None => Vec::new(),
    };
    let text = String::from_utf8_lossy(bytes);
    let mut ids = BTreeSet::new();
    for marker in ["\"agentId\":\"", "\"agentId\": \""] {
        for (at, _) in text.match_indices(marker) {
            let rest = &text[at + marker.len()..];
            if let Some(end) = rest.find('"') {
                let id = &rest[..end];
                if !id.is_empty()
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                {
                    ids.insert(id.to_owned());
                }
            }
        }
    }
    for id in ids {
        let file = dir.join(format!("agent-{id}.jsonl"));
        if file != path && file.is_file() && !files.contains(&file) {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

pub(super) fn parse(source: &LogSource, options: &ImportOptions) -> Result<ParsedRun, RunError> {
    let path = source.path.as_path();
    let mut file = parse_file(path, &source.bytes, options, None)?;
    for (sidecar, bytes) in &source.sidecars {
        let name = sidecar
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut child = parse_file(sidecar, bytes, options, Some(&name))?;
        if child.run.steps.is_empty() {
            // Not stored: what it kept is lost (its prompt is still the call's input).
            let kept = std::mem::take(&mut child.report.kept);
            let reason = "they are in a sub-agent transcript without a step, which is not stored";
            child.report.lose(LossKind::Calls, kept.calls, reason);
            child.report.lose(LossKind::Outputs, kept.outputs, reason);
            child.report.lose(LossKind::Messages, kept.messages, reason);
        }
        file.report.merge(&child.report);
        file.warnings.extend(child.warnings);
        let agent_id = child.agent_id.or_else(|| {
            name.strip_prefix("agent-")
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(str::to_owned)
        });
        file.children.push(Unlinked {
            agent_id,
            prompt: child.run.prompts.first().map(|(_, p)| p.clone()),
            compaction: name.starts_with("agent-acompact"),
            run: child.run,
        });
    }
    let mut run = file.run;
    link_children(&mut run, file.children, &file.tasks);
    run.report = file.report;
    run.warnings = file.warnings;
    Ok(run)
}

/// A sub-agent run not yet linked to the call that started it.
struct Unlinked {
    agent_id: Option<String>,
    prompt: Option<String>,
    compaction: bool,
    run: ParsedRun,
}

/// A `Task`/`Agent` call of the main run.
struct TaskCall {
    step: usize,
    call_id: String,
    prompt: Option<String>,
    agent_name: Option<String>,
    agent_id: Option<String>,
}

/// Links each sub-agent to its call: by agent id, else by prompt; compaction agents and
/// sub-agents whose call is not in the file are nested unlinked.
fn link_children(run: &mut ParsedRun, children: Vec<Unlinked>, tasks: &[TaskCall]) {
    let mut taken: HashSet<usize> = HashSet::new();
    for child in children {
        let by_id = child.agent_id.as_deref().and_then(|id| {
            tasks
                .iter()
                .position(|t| t.agent_id.as_deref() == Some(id) && !taken.contains(&t.step))
        });
        let by_prompt = || {
            child.prompt.as_deref().and_then(|p| {
                tasks
                    .iter()
                    .position(|t| t.prompt.as_deref() == Some(p) && !taken.contains(&t.step))
            })
        };
        let task = if child.compaction {
            None
        } else {
            by_id.or_else(by_prompt).map(|i| &tasks[i])
        };
        if let Some(task) = task {
            taken.insert(task.step);
        }
        run.children.push(ParsedChild {
            kind: if child.compaction {
                ChildRun::COMPACTION
            } else {
                ChildRun::SUBAGENT
            },
            step: task.map(|t| t.step),
            call_id: task.map(|t| t.call_id.clone()),
            agent_id: child
                .agent_id
                .or_else(|| task.and_then(|t| t.agent_id.clone())),
            agent_name: task.and_then(|t| t.agent_name.clone()),
            run: child.run,
        });
    }
}

/// One parsed transcript file.
struct ParsedFile {
    run: ParsedRun,
    /// Its inline sidechains, not yet linked.
    children: Vec<Unlinked>,
    tasks: Vec<TaskCall>,
    agent_id: Option<String>,
    report: ImportReport,
    warnings: Vec<ImportWarning>,
}

/// What a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Assistant,
    CompactBoundary,
    /// Known bookkeeping, or a copy of an earlier line.
    Skip,
}

struct Rec {
    line: usize,
    obj: Map<String, Value>,
    kind: Kind,
    sidechain: bool,
}

impl Rec {
    fn str(&self, key: &str) -> Option<&str> {
        self.obj.get(key).and_then(Value::as_str)
    }

    fn message(&self) -> Option<&Map<String, Value>> {
        self.obj.get("message").and_then(Value::as_object)
    }

    fn message_id(&self) -> Option<&str> {
        self.message()
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
    }

    fn content(&self) -> Option<&Value> {
        self.message().and_then(|m| m.get("content"))
    }

    fn is_meta(&self) -> bool {
        self.obj.get("isMeta").and_then(Value::as_bool) == Some(true)
    }

    /// A user or assistant line that is part of the conversation.
    fn is_turn(&self) -> bool {
        matches!(self.kind, Kind::User | Kind::Assistant) && !self.is_meta()
    }

    /// A user line holding only tool results.
    fn is_result_only(&self) -> bool {
        self.kind == Kind::User
            && match self.content() {
                Some(Value::Array(blocks)) => {
                    !blocks.is_empty()
                        && blocks
                            .iter()
                            .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                }
                _ => false,
            }
    }

    fn result_ids(&self) -> Vec<&str> {
        match self.content() {
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn call_ids(&self) -> Vec<&str> {
        match self.content() {
            Some(Value::Array(blocks)) if self.kind == Kind::Assistant => blocks
                .iter()
                .filter(|b| {
                    matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("tool_use" | "server_tool_use")
                    )
                })
                .filter_map(|b| b.get("id").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn parse_file(
    path: &Path,
    bytes: &[u8],
    options: &ImportOptions,
    sidecar: Option<&str>,
) -> Result<ParsedFile, RunError> {
    let mut report = ImportReport::default();
    let mut warnings = Vec::new();
    let lines = jsonl::objects(path, FORMAT, bytes, options, &mut report, &mut warnings)?;
    if let Some(name) = sidecar {
        for w in &mut warnings {
            if let Some(line) = w.line.take() {
                w.item = Some(format!("{name} line {line}"));
            }
        }
    }
    let mut unknown = UnknownKinds::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut recs = Vec::with_capacity(lines.len());
    for (line, obj) in lines {
        let kind = match obj.get("type").and_then(Value::as_str) {
            _ if obj
                .get("uuid")
                .and_then(Value::as_str)
                .is_some_and(|u| !seen.insert(u.to_owned())) =>
            {
                Kind::Skip
            }
            Some("user") if obj.get("message").is_some_and(Value::is_object) => Kind::User,
            Some("assistant") if obj.get("message").is_some_and(Value::is_object) => {
                Kind::Assistant
            }
            Some("user" | "assistant") => {
                unknown.note("`user`/`assistant` without a `message`".to_owned(), line);
                Kind::Skip
            }
            Some("system")
                if obj.get("subtype").and_then(Value::as_str) == Some("compact_boundary") =>
            {
                Kind::CompactBoundary
            }
            Some(known) if BOOKKEEPING.contains(&known) => Kind::Skip,
            Some(other) => {
                unknown.note(format!("`{other}`"), line);
                Kind::Skip
            }
            None => {
                unknown.note("(no `type`)".to_owned(), line);
                Kind::Skip
            }
        };
        let sidechain = obj.get("isSidechain").and_then(Value::as_bool) == Some(true);
        recs.push(Rec {
            line,
            obj,
            kind,
            sidechain,
        });
    }
    for w in unknown.warnings("line(s)", true) {
        warnings.push(match sidecar {
            Some(name) => ImportWarning::at_item(
                format!("{name} line {}", w.line.unwrap_or_default()),
                w.message,
            ),
            None => w,
        });
    }
    // A file of sidechain lines only is a sub-agent's transcript: its lines are its session.
    let whole_file_is_sidechain = recs.iter().filter(|r| r.is_turn()).all(|r| r.sidechain);
    if whole_file_is_sidechain {
        for rec in &mut recs {
            rec.sidechain = false;
        }
    }
    let agent_id = recs
        .iter()
        .find_map(|r| r.str("agentId"))
        .map(str::to_owned);
    count_held(&recs, &mut report);
    let session = Session::new(&recs);
    let main: Vec<usize> = (0..recs.len()).filter(|&i| !recs[i].sidechain).collect();
    let lin = session.linearize(&main);
    let mut ledger = Ledger::default();
    let (mut run, tasks) = build_tree(&session, &lin, &[], &mut ledger, &mut warnings);
    // Inline sidechains (1.0): each tree of sidechain lines is a sub-agent.
    let mut children = Vec::new();
    for group in session.sidechain_groups() {
        let lin = session.linearize(&group);
        let (child, _) = build_tree(&session, &lin, &[], &mut ledger, &mut warnings);
        children.push(Unlinked {
            agent_id: group
                .iter()
                .find_map(|&i| recs[i].str("agentId"))
                .map(str::to_owned),
            prompt: child.prompts.first().map(|(_, p)| p.clone()),
            compaction: false,
            run: child,
        });
    }
    ledger.settle(&mut report);
    if let Some(name) = sidecar {
        for w in &mut warnings {
            if let Some(line) = w.line.take() {
                w.item = Some(format!("{name} line {line}"));
            }
        }
    }
    run.environment.runtime = Some("claude-code".to_owned());
    warnings.sort_by(|a, b| (a.line, &a.item, &a.message).cmp(&(b.line, &b.item, &b.message)));
    warnings.dedup();
    Ok(ParsedFile {
        run,
        children,
        tasks,
        agent_id,
        report,
        warnings,
    })
}

/// Counts what the transcript holds: tool calls, their results, and messages (user prompts,
/// their images and documents, the model's text).
fn count_held(recs: &[Rec], report: &mut ImportReport) {
    for rec in recs.iter().filter(|r| r.is_turn()) {
        match rec.content() {
            Some(Value::String(_)) => report.held.messages += 1,
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    match block_type(block) {
                        "tool_use" | "server_tool_use" if rec.kind == Kind::Assistant => {
                            report.held.calls += 1;
                        }
                        "tool_result" => report.held.outputs += 1,
                        t if t.ends_with("_tool_result") && rec.kind == Kind::Assistant => {
                            report.held.outputs += 1;
                        }
                        "text" => report.held.messages += 1,
                        "image" | "document" if rec.kind == Kind::User => {
                            report.held.messages += 1;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The lines of a transcript as a forest.
struct Session<'a> {
    recs: &'a [Rec],
    /// Each line's parent line (`parentUuid`), when the parent is in the file.
    parent: Vec<Option<usize>>,
    /// Each line's `logicalParentUuid` line (compaction boundaries).
    logical: Vec<Option<usize>>,
    /// The final state of each message, by message id: the last line with it, whose `usage`
    /// is the message's.
    last_line_of_message: HashMap<&'a str, usize>,
}

/// A session laid out: the lines of its chain, in file order, and the branches off it.
struct Lin {
    lines: Vec<usize>,
    /// (the line of the chain the branch starts after, the branch).
    branches: Vec<(Option<usize>, Lin)>,
}

impl<'a> Session<'a> {
    fn new(recs: &'a [Rec]) -> Self {
        let mut by_uuid: HashMap<&str, usize> = HashMap::new();
        for (i, rec) in recs.iter().enumerate() {
            if let Some(uuid) = rec.str("uuid") {
                by_uuid.entry(uuid).or_insert(i);
            }
        }
        let link = |key: &str| -> Vec<Option<usize>> {
            recs.iter()
                .enumerate()
                .map(|(i, r)| {
                    r.str(key)
                        .and_then(|u| by_uuid.get(u).copied())
                        .filter(|&p| p != i)
                })
                .collect()
        };
        let mut last_line_of_message = HashMap::new();
        for (i, rec) in recs.iter().enumerate() {
            if rec.kind == Kind::Assistant
                && let Some(id) = rec.message_id()
            {
                last_line_of_message.insert(id, i);
            }
        }
        Self {
            recs,
            parent: link("parentUuid"),
            logical: link("logicalParentUuid"),
            last_line_of_message,
        }
    }

    /// The sidechain lines, one group per sidechain tree, in file order.
    fn sidechain_groups(&self) -> Vec<Vec<usize>> {
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, rec) in self.recs.iter().enumerate() {
            if !rec.sidechain {
                continue;
            }
            let mut root = i;
            let mut steps = 0;
            while let Some(p) = self.parent[root] {
                if !self.recs[p].sidechain || steps > self.recs.len() {
                    break;
                }
                root = p;
                steps += 1;
            }
            groups.entry(root).or_default().push(i);
        }
        groups.into_values().collect()
    }

    /// Lays out the lines `set` (sorted): the chain to its last turn, followed back through
    /// parents, compactions and new trees, plus the lines that belong with the chain (other
    /// lines of its messages, results of its calls); the turns left are branches.
    fn linearize(&self, set: &[usize]) -> Lin {
        let recs = self.recs;
        let in_set: HashSet<usize> = set.iter().copied().collect();
        let mut on_chain: HashSet<usize> = HashSet::new();
        let turns: Vec<usize> = set.iter().copied().filter(|&i| recs[i].is_turn()).collect();
        let mut cur = turns.last().copied();
        let mut guard = 0;
        while let Some(i) = cur {
            guard += 1;
            if !on_chain.insert(i) || guard > recs.len() * 2 {
                break;
            }
            let next = self.parent[i].filter(|p| in_set.contains(p)).or_else(|| {
                self.logical[i].filter(|p| in_set.contains(p) && !on_chain.contains(p))
            });
            cur = next.or_else(|| {
                // A new tree (a 1.0 compaction, a resumed session): it continues the last
                // turn before it.
                let before = turns.partition_point(|&j| j < i);
                turns[..before]
                    .iter()
                    .rev()
                    .copied()
                    .find(|j| !on_chain.contains(j))
            });
        }
        // The chain's messages hold more lines than the chain runs through (2.x writes each
        // block of a message on a line of its own, parallel calls on side lines), and the
        // results of its calls hang anywhere below them: all of them are the session's.
        let chain_messages: HashSet<&str> = on_chain
            .iter()
            .filter_map(|&i| recs[i].message_id())
            .collect();
        let mut call_line: HashMap<&str, usize> = HashMap::new();
        for &i in set {
            for id in recs[i].call_ids() {
                call_line.entry(id).or_insert(i);
            }
        }
        let mut session = on_chain.clone();
        for &i in set {
            let rec = &recs[i];
            let same_message = rec.kind == Kind::Assistant
                && rec.message_id().is_some_and(|m| chain_messages.contains(m));
            let answers_the_chain = rec.is_result_only()
                && rec
                    .result_ids()
                    .first()
                    .and_then(|id| call_line.get(id))
                    .is_some_and(|c| session.contains(c));
            if same_message || answers_the_chain {
                session.insert(i);
            }
        }
        let roots = self.roots(set, &in_set, &session);
        let root_of = |i: usize| roots.get(&i).copied().flatten();
        let mut lines = Vec::new();
        let mut branch_members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &i in set {
            let rec = &recs[i];
            if session.contains(&i) {
                if rec.is_turn() || rec.kind == Kind::CompactBoundary {
                    lines.push(i);
                }
                continue;
            }
            if rec.is_result_only() {
                // A result goes where its call is.
                let call = rec
                    .result_ids()
                    .first()
                    .and_then(|id| call_line.get(id).copied());
                match call.and_then(root_of) {
                    Some(root) => branch_members.entry(root).or_default().push(i),
                    None => lines.push(i),
                }
                continue;
            }
            if !rec.is_turn() {
                if rec.kind == Kind::CompactBoundary {
                    lines.push(i);
                }
                continue;
            }
            if let Some(root) = root_of(i) {
                branch_members.entry(root).or_default().push(i);
            } else {
                lines.push(i);
            }
        }
        let mut branches = Vec::new();
        for (root, mut members) in branch_members {
            // The branch's lines: its turns, their results, and the lines between them
            // (progress lines the chain runs through).
            let mut subtree: Vec<usize> = set
                .iter()
                .copied()
                .filter(|&j| root_of(j) == Some(root) && !recs[j].is_result_only())
                .collect();
            subtree.append(&mut members);
            subtree.sort_unstable();
            subtree.dedup();
            let fork = self.parent[root].filter(|p| session.contains(p));
            branches.push((fork, self.linearize(&subtree)));
        }
        Lin { lines, branches }
    }

    /// For each line of `set` off the chain: the topmost line above it that is off the chain,
    /// when it hangs from the chain (a branch); `None` for lines on the chain and for trees
    /// that never join it (part of the session, not branches).
    fn roots(
        &self,
        set: &[usize],
        in_set: &HashSet<usize>,
        on_chain: &HashSet<usize>,
    ) -> HashMap<usize, Option<usize>> {
        let mut roots: HashMap<usize, Option<usize>> = HashMap::with_capacity(set.len());
        for &i in set {
            if on_chain.is_empty() || on_chain.contains(&i) {
                roots.insert(i, None);
                continue;
            }
            // Climb to the chain (or to a line already resolved), then resolve the climb.
            let mut climbed = vec![i];
            let mut top = i;
            let found = loop {
                match self.parent[top].filter(|p| in_set.contains(p)) {
                    None => break None,
                    Some(p) if on_chain.contains(&p) => break Some(top),
                    Some(p) => {
                        if let Some(known) = roots.get(&p) {
                            break *known;
                        }
                        if climbed.len() > self.recs.len() {
                            break None;
                        }
                        climbed.push(p);
                        top = p;
                    }
                }
            };
            for line in climbed {
                roots.insert(line, found);
            }
        }
        roots
    }
}

/// What has been kept or lost, by (line, block), so that lines shared by a run and its forks
/// count once.
#[derive(Default)]
struct Ledger {
    kept: BTreeSet<(usize, usize, LossKind)>,
    lost: BTreeMap<(usize, usize, LossKind), &'static str>,
}

impl Ledger {
    fn keep(&mut self, line: usize, block: usize, what: LossKind) {
        self.lost.remove(&(line, block, what));
        self.kept.insert((line, block, what));
    }

    fn lose(&mut self, line: usize, block: usize, what: LossKind, reason: &'static str) {
        if !self.kept.contains(&(line, block, what)) {
            self.lost.insert((line, block, what), reason);
        }
    }

    fn settle(self, report: &mut ImportReport) {
        for (_, _, what) in &self.kept {
            report.kept.bump(*what);
        }
        for ((_, _, what), reason) in self.lost {
            report.lose(what, 1, reason);
        }
    }
}

/// Builds the run of `lin` (after the lines `prefix`, for a fork) and its forks.
fn build_tree(
    session: &Session<'_>,
    lin: &Lin,
    prefix: &[usize],
    ledger: &mut Ledger,
    warnings: &mut Vec<ImportWarning>,
) -> (ParsedRun, Vec<TaskCall>) {
    let mut order: Vec<usize> = prefix.iter().chain(&lin.lines).copied().collect();
    order.sort_unstable();
    order.dedup();
    let mut builder = Builder::new(session, ledger);
    for &i in &order {
        builder.line(i);
    }
    let (mut run, tasks, notes) = builder.finish();
    warnings.extend(notes);
    for (fork_at, branch) in &lin.branches {
        let before: Vec<usize> = match fork_at {
            Some(at) => order.iter().copied().filter(|&i| i <= *at).collect(),
            None => Vec::new(),
        };
        let (fork, _) = build_tree(session, branch, &before, ledger, warnings);
        if fork.steps.len() > before_steps(&run, &fork) {
            run.forks.push(fork);
        }
    }
    (run, tasks)
}

/// How many leading steps `fork` shares with `run`.
fn before_steps(run: &ParsedRun, fork: &ParsedRun) -> usize {
    run.steps
        .iter()
        .zip(&fork.steps)
        .take_while(|(a, b)| a == b)
        .count()
}

/// Turns lines into a run, in the order given.
struct Builder<'s, 'l> {
    session: &'s Session<'s>,
    ledger: &'l mut Ledger,
    run: ParsedRun,
    /// Calls without a result yet: id -> (step, line).
    pending: HashMap<String, (usize, usize)>,
    /// Every call id seen, with its line, to report repeats.
    seen_calls: HashMap<String, usize>,
    /// Thinking not yet attached to a step, with its line.
    reasoning: Option<(String, usize)>,
    /// Messages whose usage a step already carries.
    usage_given: HashSet<String>,
    /// The timestamp of the last user line: when the next model call was asked.
    asked_at: Option<String>,
    models: Vec<String>,
    tasks: Vec<TaskCall>,
    notes: Vec<ImportWarning>,
}

impl<'s, 'l> Builder<'s, 'l> {
    fn new(session: &'s Session<'s>, ledger: &'l mut Ledger) -> Self {
        Self {
            session,
            ledger,
            run: ParsedRun::default(),
            pending: HashMap::new(),
            seen_calls: HashMap::new(),
            reasoning: None,
            usage_given: HashSet::new(),
            asked_at: None,
            models: Vec::new(),
            tasks: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn line(&mut self, i: usize) {
        let session = self.session;
        let rec = &session.recs[i];
        match rec.kind {
            Kind::User if !rec.is_meta() => {
                self.note_session(rec);
                self.user(i);
            }
            Kind::Assistant if !rec.is_meta() => {
                self.note_session(rec);
                self.assistant(i);
            }
            _ => {}
        }
    }

    fn note_session(&mut self, rec: &Rec) {
        if self.run.conversation_id.is_none() {
            self.run.conversation_id = rec.str("sessionId").map(str::to_owned);
        }
        if self.run.created.is_none() {
            self.run.created = rec.str("timestamp").map(str::to_owned);
        }
        if let Some(version) = rec.str("version") {
            self.run
                .environment
                .tool_versions
                .entry("claude-code".to_owned())
                .or_insert_with(|| version.to_owned());
        }
    }

    fn user(&mut self, i: usize) {
        let session = self.session;
        let rec = &session.recs[i];
        let line = rec.line;
        let timestamp = rec.str("timestamp").map(str::to_owned);
        let role = if rec.obj.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            "compact_summary"
        } else {
            "user"
        };
        match rec.content() {
            Some(Value::String(text)) => {
                self.run.prompts.push((role.to_owned(), text.clone()));
                self.ledger.keep(line, 0, LossKind::Messages);
            }
            Some(Value::Array(blocks)) => {
                let agent_id = rec
                    .obj
                    .get("toolUseResult")
                    .and_then(|r| r.get("agentId"))
                    .and_then(Value::as_str);
                for (b, block) in blocks.iter().enumerate() {
                    match block_type(block) {
                        "text" => {
                            let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                            self.run.prompts.push((role.to_owned(), text.to_owned()));
                            self.ledger.keep(line, b, LossKind::Messages);
                        }
                        kind @ ("image" | "document") => {
                            let (name, bytes) = attachment(kind, line, b, block);
                            self.run.inputs.push((name, bytes));
                            self.ledger.keep(line, b, LossKind::Messages);
                        }
                        "tool_result" => {
                            self.result(line, b, block, timestamp.as_deref(), agent_id);
                        }
                        other => self.notes.push(ImportWarning::at_line(
                            line,
                            format!("unknown content block `{other}` skipped"),
                        )),
                    }
                }
            }
            _ => self
                .notes
                .push(ImportWarning::at_line(line, "user message without content")),
        }
        if timestamp.is_some() {
            self.asked_at = timestamp;
        }
    }

    /// Pairs a tool result (a `tool_result` block, or a server tool's result) with its call.
    fn result(
        &mut self,
        line: usize,
        b: usize,
        block: &Value,
        timestamp: Option<&str>,
        agent_id: Option<&str>,
    ) {
        let id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let output = output_of(block.get("content").unwrap_or(&Value::Null));
        let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
        let Some((index, _)) = self.pending.remove(id) else {
            let answered = self.seen_calls.get(id).and_then(|_| {
                self.run
                    .steps
                    .iter()
                    .find(|s| s.call_id.as_deref() == Some(id))
            });
            match answered {
                // A copy of a result already paired (resumed sessions repeat them).
                Some(step) if step.output.as_deref() == Some(&output[..]) => {
                    self.ledger.keep(line, b, LossKind::Outputs);
                }
                Some(_) => self.ledger.lose(
                    line,
                    b,
                    LossKind::Outputs,
                    "a second, different result for a call that already has one",
                ),
                None => self.ledger.lose(
                    line,
                    b,
                    LossKind::Outputs,
                    "they answer tool calls that are not in the file",
                ),
            }
            return;
        };
        let step = &mut self.run.steps[index];
        step.output = Some(output);
        if is_error {
            step.status = StepStatus::Error;
        }
        if let (Some(start), Some(end)) = (step.timestamp.as_deref(), timestamp) {
            step.duration_ms = millis_between(start, end);
        }
        if let Some(agent) = agent_id
            && let Some(task) = self.tasks.iter_mut().find(|t| t.step == index)
        {
            task.agent_id = Some(agent.to_owned());
        }
        self.ledger.keep(line, b, LossKind::Outputs);
    }

    fn assistant(&mut self, i: usize) {
        let session = self.session;
        let rec = &session.recs[i];
        let line = rec.line;
        let Some(message) = rec.message() else {
            return;
        };
        let timestamp = rec.str("timestamp").map(str::to_owned);
        let model = message
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(m) = model.as_deref().filter(|m| *m != "<synthetic>") {
            self.models.push(m.to_owned());
        }
        let message_id = rec.message_id().map(str::to_owned);
        let usage = self.usage_for(i, message_id.as_deref());
        let as_text;
        let blocks: &[Value] = match message.get("content") {
            Some(Value::String(s)) => {
                as_text = [serde_json::json!({"type": "text", "text": s})];
                &as_text
            }
            Some(Value::Array(blocks)) => blocks,
            _ => {
                self.notes.push(ImportWarning::at_line(
                    line,
                    "assistant message without content",
                ));
                return;
            }
        };
        for (b, block) in blocks.iter().enumerate() {
            match block_type(block) {
                "thinking" => {
                    if let Some(t) = block.get("thinking").and_then(Value::as_str) {
                        self.reasoning = Some(match self.reasoning.take() {
                            Some((prev, _)) => (format!("{prev}\n{t}"), line),
                            None => (t.to_owned(), line),
                        });
                    }
                }
                // Encrypted: nothing readable to keep.
                "redacted_thinking" => {}
                "text" => {
                    let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                    let mut step = StepDraft::model_call(model.as_deref(), text);
                    step.reasoning = self.reasoning.take().map(|(t, _)| t);
                    match (self.asked_at.as_deref(), timestamp.as_deref()) {
                        (Some(asked), Some(answered)) => {
                            if let Some(ms) = millis_between(asked, answered) {
                                step.timestamp = Some(asked.to_owned());
                                step.duration_ms = Some(ms);
                            } else {
                                step.timestamp = Some(answered.to_owned());
                            }
                        }
                        (_, answered) => step.timestamp = answered.map(str::to_owned),
                    }
                    step.usage = self.take_usage(message_id.as_deref(), usage);
                    self.run.steps.push(step);
                    self.ledger.keep(line, b, LossKind::Messages);
                }
                "tool_use" | "server_tool_use" => {
                    let (Some(id), Some(name)) = (
                        block.get("id").and_then(Value::as_str),
                        block.get("name").and_then(Value::as_str),
                    ) else {
                        self.ledger.lose(
                            line,
                            b,
                            LossKind::Calls,
                            "a tool call without an `id` or `name`",
                        );
                        continue;
                    };
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    if AGENT_TOOLS.contains(&name) {
                        self.tasks.push(TaskCall {
                            step: self.run.steps.len(),
                            call_id: id.to_owned(),
                            prompt: input
                                .get("prompt")
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                            agent_name: input
                                .get("subagent_type")
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                            agent_id: None,
                        });
                    }
                    let mut step = StepDraft::tool_call(name, input);
                    step.call_id = Some(id.to_owned());
                    step.model.clone_from(&model);
                    step.deterministic = is_deterministic_tool(name);
                    step.reasoning = self.reasoning.take().map(|(t, _)| t);
                    step.timestamp.clone_from(&timestamp);
                    step.usage = self.take_usage(message_id.as_deref(), usage);
                    if let Some(first) = self.seen_calls.insert(id.to_owned(), line) {
                        let lost = if self.pending.contains_key(id) {
                            "; the earlier step, still without a result, gets no output"
                        } else {
                            ""
                        };
                        self.notes.push(ImportWarning::at_line(
                            line,
                            format!(
                                "tool_use id `{id}` repeats the one at line {first}; results go to this step{lost}"
                            ),
                        ));
                    }
                    self.pending
                        .insert(id.to_owned(), (self.run.steps.len(), line));
                    self.run.steps.push(step);
                    self.ledger.keep(line, b, LossKind::Calls);
                }
                t if t.ends_with("_tool_result") => {
                    self.result(line, b, block, timestamp.as_deref(), None);
                }
                other => self.notes.push(ImportWarning::at_line(
                    line,
                    format!("unknown content block `{other}` skipped"),
                )),
            }
        }
    }

    /// The final usage of message `id` (from its last line), or of line `i`.
    fn usage_for(&self, i: usize, id: Option<&str>) -> Option<TokenUsage> {
        let line = id
            .and_then(|id| self.session.last_line_of_message.get(id).copied())
            .unwrap_or(i);
        self.session.recs[line]
            .message()
            .and_then(|m| m.get("usage"))
            .and_then(usage_of)
    }

    /// The usage for the next step of message `id`: only its first step carries it.
    fn take_usage(&mut self, id: Option<&str>, usage: Option<TokenUsage>) -> Option<TokenUsage> {
        match id {
            Some(id) if !self.usage_given.insert(id.to_owned()) => None,
            _ => usage,
        }
    }

    fn finish(mut self) -> (ParsedRun, Vec<TaskCall>, Vec<ImportWarning>) {
        if let Some((thinking, _)) = self.reasoning.take() {
            // The model thought and stopped: a model turn with reasoning and no message.
            let mut step = StepDraft::model_call(self.models.last().map(String::as_str), "");
            step.output = None;
            step.reasoning = Some(thinking);
            self.run.steps.push(step);
        }
        let mut unanswered: Vec<(usize, String)> = self
            .pending
            .iter()
            .map(|(id, (_, line))| (*line, id.clone()))
            .collect();
        unanswered.sort();
        if let Some((line, id)) = unanswered.first() {
            let others = match unanswered.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            self.notes.push(ImportWarning::at_line(
                *line,
                format!(
                    "tool_use `{id}`{others} has no tool_result in the file; its step has no output"
                ),
            ));
        }
        self.notes.sort_by_key(|w| w.line);
        if let Some(model) = main_model(self.models.iter().map(String::as_str)) {
            self.run.model = Some(ModelInfo {
                identifier: model,
                provider: Some("anthropic".to_owned()),
                parameters: BTreeMap::new(),
            });
        }
        (self.run, self.tasks, self.notes)
    }
}

/// An image or document block as an input: its decoded bytes when it holds base64 data,
/// otherwise the block's JSON.
fn attachment(kind: &str, line: usize, block_index: usize, block: &Value) -> (String, Vec<u8>) {
    use base64::Engine as _;
    let source = block.get("source");
    let media = source
        .and_then(|s| s.get("media_type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let ext = match media {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        _ => "json",
    };
    let decoded = (source.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("base64"))
        .then(|| source.and_then(|s| s.get("data")).and_then(Value::as_str))
        .flatten()
        .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok());
    match decoded {
        Some(bytes) if ext != "json" => (format!("{kind}-line{line}-{block_index}.{ext}"), bytes),
        _ => (
            format!("{kind}-line{line}-{block_index}.json"),
            ctx_core::canonical::to_vec(block).expect("JSON values serialize"),
        ),
    }
}
