//! Findings and the findings document (`--format json`), whose JSON Schema
//! is docs/findings.schema.json. Later versions add fields, never rename.

use serde::Serialize;
use serde_json::Value;

use crate::rule::{Kind, Rule, Severity};

/// One difference between the pinned and the live catalog.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub server: String,
    pub tool: String,
    /// JSON pointer into the tool (empty for the whole tool).
    pub pointer: String,
    pub severity: Severity,
    pub kind: Kind,
    pub message: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// Whether it widens what the agent can be talked into.
    pub security: bool,
    /// Re-run tags: the evals this finding asks for.
    pub rerun: &'static [&'static str],
    /// Whether the change is in what the model is handed (name,
    /// description, title, inputSchema, annotations, server instructions)
    /// rather than what only the runtime sees (outputSchema, `_meta`, the
    /// session, the source). See [`MODEL_READS`].
    pub model_reads: bool,
    /// Steering cues were found in text only the runtime reads, so they did
    /// not raise the finding; a policy that counts that member as read by
    /// the model raises it (`[policy] model-reads`).
    #[serde(skip)]
    pub steering: bool,
    /// The severity the finding has where the model reads its member, when
    /// it was lowered because the model does not (prose in an
    /// outputSchema); a policy that counts the member as read restores it.
    #[serde(skip)]
    pub read_severity: Option<Severity>,
    /// For a finding of `toolpin contract run`: the golden call that showed
    /// it (`default`, `status_open`, `probe:page_size`); the pointer is then
    /// into that call's result. `None` for a declaration finding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
}

/// The top-level members of a tool (and `instructions` of a server) whose
/// content reaches the model: the MCP, OpenAI, Anthropic and Gemini
/// function formats all carry them. An outputSchema is not among them: the
/// function formats have no place for it, and MCP clients validate results
/// with it rather than forward it.
pub const MODEL_READS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "annotations",
    "instructions",
];

/// The pointer's first member (`inputSchema` for
/// `/inputSchema/properties/x`), `""` for a whole tool.
pub fn top_member(pointer: &str) -> &str {
    pointer
        .strip_prefix('/')
        .map_or("", |rest| rest.split('/').next().unwrap_or(""))
}

/// Whether a finding at `pointer` touches what the model reads by default
/// (a whole tool does: its name and description).
pub fn model_reads(pointer: &str) -> bool {
    pointer.is_empty() || MODEL_READS.contains(&top_member(pointer))
}

impl Finding {
    pub fn new(rule: &'static Rule, server: &str, tool: &str, pointer: String) -> Self {
        Self {
            rule: rule.id,
            server: server.to_string(),
            tool: tool.to_string(),
            model_reads: model_reads(&pointer),
            pointer,
            severity: rule.severity,
            kind: rule.kind,
            message: String::new(),
            before: None,
            after: None,
            security: rule.security,
            rerun: rule.rerun,
            steering: false,
            read_severity: None,
            call: None,
        }
    }

    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    pub fn values(mut self, before: Option<&Value>, after: Option<&Value>) -> Self {
        self.before = before.cloned();
        self.after = after.cloned();
        self
    }

    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// Names the golden call a behavioural finding comes from.
    pub fn call(mut self, call: impl Into<String>) -> Self {
        self.call = Some(call.into());
        self
    }

    pub fn security(mut self, security: bool) -> Self {
        self.security = self.security || security;
        self
    }
}

/// Counts over a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub tools_added: usize,
    pub tools_removed: usize,
    pub tools_changed: usize,
    pub tools_unchanged: usize,
    pub findings: usize,
    /// Findings per severity, every severity present (0 when none).
    pub by_severity: std::collections::BTreeMap<&'static str, usize>,
}

/// Catalog fingerprints on either side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fingerprints {
    pub before: String,
    pub after: String,
}

/// One tool whose definition differs, with its fingerprints: what a
/// reviewer accepts (`toolpin accept --tool server/tool@FINGERPRINT`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolChange {
    /// The server offering it (the pinned one for a removal).
    pub server: String,
    /// The namespaced name (the new one for a rename).
    pub tool: String,
    /// `added`, `removed`, `changed` or `renamed`.
    pub change: &'static str,
    /// For a rename: the pinned name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Tool fingerprints (64 hex); `None` for an added tool's before and a
    /// removed tool's after.
    pub before: Option<String>,
    pub after: Option<String>,
}

/// The result of comparing two catalogs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub findings: Vec<Finding>,
    pub summary: Summary,
    pub fingerprints: Fingerprints,
    /// Every tool that differs, in namespaced-name order.
    pub tools: Vec<ToolChange>,
}

impl Comparison {
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Whether any finding fails the check. Behavioural findings (a server
    /// version moved) are reported but never fail it: the manifest is what
    /// is pinned.
    pub fn fails(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.kind != crate::rule::Kind::Behavioural)
    }
}
