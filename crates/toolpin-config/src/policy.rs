//! `[policy]` as written: which findings fail the check. Rule ids,
//! severities and presets are the drift engine's vocabulary, so the
//! operations layer reads this table into the engine's `Policy`
//! (`toolpin_ops::settings::policy`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// `[policy]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    pub preset: Option<String>,
    #[serde(rename = "fail-on")]
    pub fail_on: Option<String>,
    /// Rule id → a severity or `off`.
    #[serde(default)]
    pub rules: BTreeMap<String, String>,
    #[serde(default)]
    pub ignore: Vec<IgnoreConfig>,
    /// `server/tool` globs: when set, only findings on these tools fail.
    #[serde(default)]
    pub watch: Vec<String>,
    /// Tool members this runtime also hands the model (`outputSchema`).
    #[serde(default, rename = "model-reads")]
    pub model_reads: Vec<String>,
}

/// One `[[policy.ignore]]` entry: drift accepted, and why.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoreConfig {
    pub rule: String,
    pub tool: Option<String>,
    pub pointer: Option<String>,
    pub reason: String,
}
