//! The run record format (seed 004 §2): a manifest, a chain of step objects, and blobs.
//!
//! Everything here is plain data. Each type is stored as the RFC 8785 canonical JSON of its
//! serde form, so a value's hash is the hash of the object holding it. Field names that
//! describe a tool or model call use the OpenTelemetry GenAI semantic conventions
//! (`gen_ai.tool.name`, `gen_ai.request.model`, …), so an OTLP export carries them unchanged.

use std::collections::BTreeMap;

use ctx_core::ContentHash;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `version` every manifest written by this crate carries.
pub const RUN_FORMAT_VERSION: &str = "ctx.run/0.1";

/// A run's id: the hash of its manifest's canonical JSON (which is also the manifest object).
pub type RunId = ContentHash;

/// The manifest of a run: everything about it, with contents referenced by hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunManifest {
    /// Format version, [`RUN_FORMAT_VERSION`].
    pub version: String,
    /// Where the run came from: `claude-code`, `openhands`, `swe-agent`, `mcp`, `ctx`, `fork`.
    pub source: String,
    /// The agent's own id for the session (`gen_ai.conversation.id`), when it has one.
    #[serde(
        rename = "gen_ai.conversation.id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub conversation_id: Option<String>,
    /// When the run started, as recorded by the agent (RFC 3339); never the import time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// The model the run used, and its parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelInfo>,
    /// The system prompt blob (`gen_ai.system_instructions` in OTel terms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<ContentHash>,
    /// User (and other non-step) prompts, in order.
    #[serde(default)]
    pub prompts: Vec<PromptRef>,
    /// Files and other inputs the run was given.
    #[serde(default)]
    pub inputs: Vec<ContentRef>,
    /// The step objects, in order; each step also names its predecessor (`prev`).
    pub steps: Vec<ContentHash>,
    /// What the run produced.
    #[serde(default)]
    pub outputs: Vec<ContentRef>,
    /// Where it ran.
    #[serde(default)]
    pub environment: Environment,
    /// The run this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<RunId>,
    /// Runs nested in this one: the sub-agents it started (each linked to the tool call that
    /// started it) and the agents that compacted its context. Each is a stored run of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildRun>,
}

/// A run nested in another: a sub-agent a tool call started, or the agent that summarized the
/// conversation at a compaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildRun {
    /// The nested run.
    pub run: RunId,
    /// What it is: [`ChildRun::SUBAGENT`] or [`ChildRun::COMPACTION`].
    pub kind: String,
    /// The parent's step that started it (a `Task`/`Agent` tool call), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// That tool call's id (`gen_ai.tool.call.id`).
    #[serde(
        rename = "gen_ai.tool.call.id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub call_id: Option<String>,
    /// The agent's own id (`gen_ai.agent.id`), as the transcript names it.
    #[serde(
        rename = "gen_ai.agent.id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_id: Option<String>,
    /// The agent's kind (`gen_ai.agent.name`: `Explore`, `general-purpose`, …), when recorded.
    #[serde(
        rename = "gen_ai.agent.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub agent_name: Option<String>,
}

impl ChildRun {
    /// A sub-agent started by a tool call.
    pub const SUBAGENT: &'static str = "subagent";
    /// The agent that wrote a compaction summary.
    pub const COMPACTION: &'static str = "compaction";
}

/// Tokens a model call used, as recorded (OTel `gen_ai.usage.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenUsage {
    /// Input tokens, cached ones included (`gen_ai.usage.input_tokens`).
    #[serde(rename = "gen_ai.usage.input_tokens")]
    pub input_tokens: u64,
    /// Output tokens (`gen_ai.usage.output_tokens`).
    #[serde(rename = "gen_ai.usage.output_tokens")]
    pub output_tokens: u64,
    /// Input tokens served from the provider's cache (`gen_ai.usage.cache_read.input_tokens`).
    #[serde(
        rename = "gen_ai.usage.cache_read.input_tokens",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the provider's cache
    /// (`gen_ai.usage.cache_creation.input_tokens`).
    #[serde(
        rename = "gen_ai.usage.cache_creation.input_tokens",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_creation_input_tokens: Option<u64>,
}

/// The model of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    /// The model name as requested (`gen_ai.request.model`).
    #[serde(rename = "gen_ai.request.model")]
    pub identifier: String,
    /// The provider (`gen_ai.provider.name`: `anthropic`, `openai`, …).
    #[serde(
        rename = "gen_ai.provider.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub provider: Option<String>,
    /// Request parameters (`temperature`, `max_tokens`, …), by name.
    #[serde(default)]
    pub parameters: BTreeMap<String, Value>,
}

/// A prompt: its role and its text blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptRef {
    /// `user`, `system`, `developer`, ….
    pub role: String,
    /// The prompt text.
    pub content_ref: ContentHash,
}

/// A named blob: an input or an output of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentRef {
    /// A name (usually a workspace-relative path).
    pub name: String,
    /// The content.
    pub content_ref: ContentHash,
    /// Its length in bytes.
    pub size: u64,
}

/// Where a run ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Operating system, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// Agent runtime (`claude-code`, `openhands`, `swe-agent`, `ctx-mcp`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Versions of the tools involved, by name.
    #[serde(default)]
    pub tool_versions: BTreeMap<String, String>,
}

/// What kind of step this is (OTel `gen_ai.operation.name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A tool call (`execute_tool`): tool name, arguments, result.
    #[serde(rename = "execute_tool")]
    ToolCall,
    /// A model turn (`chat`): the model's message is the output, its thinking the reasoning.
    #[serde(rename = "chat")]
    ModelCall,
}

impl StepKind {
    /// The OTel operation name.
    pub fn operation_name(self) -> &'static str {
        match self {
            Self::ToolCall => "execute_tool",
            Self::ModelCall => "chat",
        }
    }
}

/// Whether a step succeeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// It returned normally.
    #[default]
    Ok,
    /// It reported an error (the output holds the error text).
    Error,
}

impl StepStatus {
    #[expect(
        clippy::trivially_copy_pass_by_ref,
        reason = "serde's skip_serializing_if passes a reference"
    )]
    fn is_ok(&self) -> bool {
        *self == Self::Ok
    }
}

/// One step of a run, stored as its own object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Position in the run, from 0.
    pub index: u64,
    /// The previous step's object (`None` for step 0): editing any step changes every later
    /// step's hash, and so the run id.
    pub prev: Option<ContentHash>,
    /// Tool call or model turn (`gen_ai.operation.name`).
    #[serde(rename = "gen_ai.operation.name")]
    pub kind: StepKind,
    /// The tool's name (`gen_ai.tool.name`), for tool calls.
    #[serde(
        rename = "gen_ai.tool.name",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tool: Option<String>,
    /// The agent's id for this call (`gen_ai.tool.call.id`).
    #[serde(
        rename = "gen_ai.tool.call.id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub call_id: Option<String>,
    /// The model of a model turn (`gen_ai.request.model`).
    #[serde(
        rename = "gen_ai.request.model",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<String>,
    /// The call's arguments (`gen_ai.tool.call.arguments`), a JSON object.
    #[serde(rename = "gen_ai.tool.call.arguments", default)]
    pub parameters: Value,
    /// The tool's result or the model's message, as a blob (exported to OTel as the
    /// `ctx.step.output_ref` hash, not as content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_ref: Option<ContentHash>,
    /// The agent's stated reasoning before this step, as a blob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_ref: Option<ContentHash>,
    /// Whether re-running the step must give the same output (replay compares it).
    pub deterministic: bool,
    /// Whether the step succeeded.
    #[serde(default, skip_serializing_if = "StepStatus::is_ok")]
    pub status: StepStatus,
    /// When it started (RFC 3339), as recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// How long it took, in milliseconds, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The tokens of the model call that made this step, on the first step that call made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

impl Step {
    /// The step's object hash.
    pub fn hash(&self) -> ContentHash {
        ctx_core::canonical::hash(self).expect("steps serialize")
    }

    /// A short label: the tool name, or `chat <model>`.
    pub fn label(&self) -> String {
        match (self.kind, &self.tool, &self.model) {
            (StepKind::ToolCall, Some(tool), _) => tool.clone(),
            (StepKind::ToolCall, None, _) => "tool".to_owned(),
            (StepKind::ModelCall, _, Some(model)) => format!("chat {model}"),
            (StepKind::ModelCall, _, None) => "chat".to_owned(),
        }
    }
}

impl RunManifest {
    /// The run id: the hash of the manifest's canonical JSON.
    pub fn id(&self) -> RunId {
        ctx_core::canonical::hash(self).expect("manifests serialize")
    }

    /// The manifest's canonical JSON bytes (the manifest object).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        ctx_core::canonical::to_vec(self).expect("manifests serialize")
    }

    /// The nested run started by step `index`, if any.
    pub fn child_of_step(&self, index: u64) -> Option<&ChildRun> {
        self.children.iter().find(|c| c.step == Some(index))
    }

    /// Every blob the manifest references directly (not steps), in manifest order.
    pub fn blob_refs(&self) -> Vec<ContentHash> {
        let mut out = Vec::new();
        out.extend(self.system_prompt);
        out.extend(self.prompts.iter().map(|p| p.content_ref));
        out.extend(self.inputs.iter().map(|c| c.content_ref));
        out.extend(self.outputs.iter().map(|c| c.content_ref));
        out
    }
}
