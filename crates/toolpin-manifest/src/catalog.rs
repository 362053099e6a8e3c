//! The pinned catalog: servers, their normalized tools and fingerprints.
//! This is exactly what the lockfile holds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fingerprint::Fingerprint;

/// Every tool the model is handed, grouped by the server it came from.
///
/// Field order is alphabetical so that the serialized lockfile has sorted
/// keys at every level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Which environment was captured (`default`, or the `--env` name).
    pub environment: String,
    /// Catalog fingerprint over every tool by namespaced name.
    pub fingerprint: Fingerprint,
    pub servers: BTreeMap<String, ServerPin>,
}

/// One server's pinned tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerPin {
    pub fingerprint: Fingerprint,
    /// The detected or forced source format (`mcp`, `openai-chat`, …).
    pub format: String,
    /// For a live MCP server: the negotiated protocol version, the server's
    /// serverInfo, and the client capabilities and info toolpin declared.
    /// Not part of any fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Value>,
    /// How the server was reached, as configured (secrets as `${VAR}`).
    pub source: Value,
    /// Tools by namespaced name.
    pub tools: BTreeMap<String, PinnedTool>,
}

/// One normalized tool and its fingerprint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedTool {
    pub fingerprint: Fingerprint,
    pub tool: Value,
}

/// Why tools cannot form one catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("tool {name:?} is offered by both server {first:?} and server {second:?}; give one a prefix")]
    DuplicateAcrossServers {
        name: String,
        first: String,
        second: String,
    },
    #[error("server {server:?}: duplicate tool name {name:?}")]
    DuplicateInServer { server: String, name: String },
}

impl ServerPin {
    /// Pins normalized tools (each must have a string `name`).
    pub fn new(
        server: &str,
        source: Value,
        format: impl Into<String>,
        tools: Vec<Value>,
    ) -> Result<Self, CatalogError> {
        let mut scratch = Vec::with_capacity(4096);
        let mut pinned = BTreeMap::new();
        for tool in tools {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let fingerprint = Fingerprint::of_tool(&tool, &mut scratch);
            if pinned
                .insert(name.clone(), PinnedTool { fingerprint, tool })
                .is_some()
            {
                return Err(CatalogError::DuplicateInServer {
                    server: server.to_string(),
                    name,
                });
            }
        }
        Ok(Self {
            fingerprint: tools_fingerprint(&pinned),
            format: format.into(),
            session: None,
            source,
            tools: pinned,
        })
    }
}

impl ServerPin {
    /// Records the session a live server's tools were captured in.
    pub fn with_session(mut self, session: Option<Value>) -> Self {
        self.session = session;
        self
    }
}

/// The catalog fingerprint: every tool of every server by namespaced name.
/// A name offered by two servers is an error naming both.
pub fn catalog_fingerprint(
    servers: &BTreeMap<String, ServerPin>,
) -> Result<Fingerprint, CatalogError> {
    let mut all: BTreeMap<&str, (&str, &Fingerprint)> = BTreeMap::new();
    for (server, pin) in servers {
        for (name, tool) in &pin.tools {
            if let Some((first, _)) = all.insert(name, (server, &tool.fingerprint)) {
                return Err(CatalogError::DuplicateAcrossServers {
                    name: name.clone(),
                    first: first.to_string(),
                    second: server.clone(),
                });
            }
        }
    }
    Ok(Fingerprint::of_named(
        all.iter().map(|(name, (_, fp))| (*name, *fp)),
    ))
}

/// Fingerprint over `(name, tool fingerprint)` pairs in name order.
pub fn tools_fingerprint(tools: &BTreeMap<String, PinnedTool>) -> Fingerprint {
    Fingerprint::of_named(tools.iter().map(|(n, t)| (n.as_str(), &t.fingerprint)))
}

impl Catalog {
    /// Joins servers into one catalog; a namespaced name offered by two
    /// servers is an error naming both.
    pub fn new(
        environment: impl Into<String>,
        servers: BTreeMap<String, ServerPin>,
    ) -> Result<Self, CatalogError> {
        let fingerprint = catalog_fingerprint(&servers)?;
        Ok(Self {
            environment: environment.into(),
            fingerprint,
            servers,
        })
    }

    /// Every tool with its server, in namespaced-name order.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &str, &PinnedTool)> {
        let mut all: Vec<(&str, &str, &PinnedTool)> = self
            .servers
            .iter()
            .flat_map(|(s, pin)| {
                pin.tools
                    .iter()
                    .map(move |(n, t)| (n.as_str(), s.as_str(), t))
            })
            .collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all.into_iter()
    }

    pub fn tool_count(&self) -> usize {
        self.servers.values().map(|s| s.tools.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pin(server: &str, names: &[&str]) -> ServerPin {
        let tools = names.iter().map(|n| json!({"name": n})).collect();
        ServerPin::new(server, json!({"file": "x.json"}), "mcp", tools).expect("pins")
    }

    #[test]
    fn catalog_fingerprint_ignores_grouping_and_order() {
        let one = Catalog::new(
            "default",
            BTreeMap::from([("a".into(), pin("a", &["x", "y"]))]),
        )
        .expect("catalog");
        let two = Catalog::new(
            "default",
            BTreeMap::from([
                ("a".into(), pin("a", &["y"])),
                ("b".into(), pin("b", &["x"])),
            ]),
        )
        .expect("catalog");
        assert_eq!(one.fingerprint, two.fingerprint);
        assert_ne!(one.servers["a"].fingerprint, two.servers["a"].fingerprint);
    }

    #[test]
    fn duplicate_across_servers_names_both() {
        let err = Catalog::new(
            "default",
            BTreeMap::from([
                ("a".into(), pin("a", &["x"])),
                ("b".into(), pin("b", &["x"])),
            ]),
        )
        .expect_err("duplicate");
        assert_eq!(
            err.to_string(),
            "tool \"x\" is offered by both server \"a\" and server \"b\"; give one a prefix"
        );
    }
}
