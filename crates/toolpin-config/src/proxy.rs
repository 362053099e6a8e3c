//! The `[proxy]` and `[facade."server/tool"]` tables of toolpin.toml as
//! written. Validation modes, drift actions, connection limits and facade
//! entries are the proxy's own types: the operations layer reads these
//! tables into them (`toolpin_ops::settings::proxy`), so that an edit to
//! the proxy does not rebuild the configuration.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::timeout::TimeoutValue;

/// `[proxy]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyFileConfig {
    pub validation: Option<String>,
    pub call_timeout: Option<TimeoutValue>,
    pub page_size: Option<usize>,
    pub events: Option<String>,
    pub otlp_endpoint: Option<String>,
    pub session_idle: Option<TimeoutValue>,
    pub max_sessions: Option<usize>,
    pub max_connections: Option<usize>,
    pub header_read_timeout: Option<TimeoutValue>,
    pub body_timeout: Option<TimeoutValue>,
    pub connection_idle: Option<TimeoutValue>,
    /// Severity → what the proxy does when a tool drifts that badly.
    #[serde(default)]
    pub on_drift: BTreeMap<String, String>,
}

/// `[facade."server/tool"]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FacadeFileConfig {
    pub name: Option<String>,
    pub description: Option<String>,
    pub parameters: Option<Vec<String>>,
    #[serde(default)]
    pub fixed: BTreeMap<String, toml::Value>,
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
}
