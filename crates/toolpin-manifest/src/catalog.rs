//! The pinned catalog: servers, their normalized tools and fingerprints.
//! This is exactly what the lockfile holds.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fingerprint::Fingerprint;
use crate::normalize::{tool_name, ToolError, Transform};
use crate::redact::Redactor;

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
    pub(crate) fingerprint: Fingerprint,
    pub servers: BTreeMap<String, ServerPin>,
}

/// One server's pinned tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerPin {
    pub(crate) fingerprint: Fingerprint,
    /// The detected or forced source format (`mcp`, `openai-chat`, …).
    pub format: String,
    /// For a live MCP server: the negotiated protocol version, the server's
    /// serverInfo, and the client capabilities and info toolpin declared.
    /// Not part of any fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Value>,
    /// The server's `instructions` (the MCP `initialize` result's text,
    /// which clients put into the prompt), exactly as sent. Part of the
    /// server's and the catalog's fingerprints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Where a configured secret the server echoed was replaced by its
    /// stand-in (`${VAR}`), as JSON pointers into this record
    /// (`/instructions`, `/session/serverInfo/name`); the tools' own are
    /// kept with each tool. Not part of any fingerprint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    /// How the server was reached, as configured (secrets as `${VAR}`).
    pub source: Value,
    /// Tools by namespaced name.
    pub tools: BTreeMap<String, PinnedTool>,
}

/// One normalized tool and its fingerprint.
///
/// The tool is held as JSON text, not as a `Value` tree: a tree costs about
/// ten times the text in memory, and a catalog of thousands of tools is
/// read, compared and written without needing more than one tree at a time.
/// The text is the tool's canonical (RFC 8785) form, the bytes its
/// fingerprint hashes, unless the tool holds an integer beyond 2^53, which
/// canonical form would round; then it is compact JSON with the exact
/// number. Either parses back to the normalized tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedTool {
    /// The fingerprint as pinned (for a lockfile: as written in it).
    pub fingerprint: Fingerprint,
    /// The fingerprint of `json`'s content; differs from `fingerprint` only
    /// in a lockfile edited by hand.
    content: Fingerprint,
    /// The tool's `name` member ("" if it has none).
    name: Box<str>,
    json: Box<str>,
    /// JSON pointers into the tool where a configured secret the server
    /// echoed was replaced by its stand-in; usually empty. Not part of the
    /// fingerprint (the tool's text, with the stand-in, is).
    redacted: Box<[Box<str>]>,
}

impl PinnedTool {
    /// Pins one normalized tool; `scratch` is reused between calls.
    pub fn new(tool: &Value, scratch: &mut Vec<u8>) -> Self {
        scratch.clear();
        let exact = crate::jcs::write_canonical_exact(tool, scratch);
        let fingerprint = Fingerprint::of_bytes(scratch);
        let json = if exact {
            // JCS output is UTF-8 by construction; checking is cheap.
            std::str::from_utf8(scratch).unwrap_or_default().into()
        } else {
            serde_json::to_string(tool).unwrap_or_default().into()
        };
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into();
        Self {
            fingerprint,
            content: fingerprint,
            name,
            json,
            redacted: Box::default(),
        }
    }

    /// Where secrets were redacted in this tool (JSON pointers into it).
    pub fn redacted(&self) -> &[Box<str>] {
        &self.redacted
    }

    /// The tool with every configured secret the server echoed in it
    /// replaced by its stand-in, and where that was recorded; `None` when
    /// it holds none.
    fn redacted_by(&self, redactor: &Redactor) -> Option<Self> {
        // The text is JSON: a secret in a string appears there in its
        // JSON-escaped form, one of the forms looked for.
        if !redactor.finds(&self.json) {
            return None;
        }
        let mut tool = self.value();
        let mut at = Vec::new();
        redactor.redact_value_at(&mut tool, "", &mut at);
        if at.is_empty() {
            return None;
        }
        let mut pinned = Self::new(&tool, &mut Vec::new());
        let mut all: Vec<Box<str>> = self.redacted.to_vec();
        all.extend(at.into_iter().map(String::into_boxed_str));
        all.sort_unstable();
        all.dedup();
        pinned.redacted = all.into_boxed_slice();
        Some(pinned)
    }

    /// The tool's `name` member ("" if it has none).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the content hashes to the pinned fingerprint.
    pub fn is_intact(&self) -> bool {
        self.content == self.fingerprint
    }

    /// The normalized tool.
    pub fn value(&self) -> Value {
        // The text was written by `new` or checked on reading a lockfile.
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }

    /// The tool as JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }
}

impl Serialize for PinnedTool {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("PinnedTool", 3)?;
        st.serialize_field("fingerprint", &self.fingerprint)?;
        if !self.redacted.is_empty() {
            st.serialize_field("redacted", &self.redacted)?;
        }
        // One tool's tree at a time, for the pretty lockfile layout.
        st.serialize_field("tool", &self.value())?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for PinnedTool {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Written {
            fingerprint: Fingerprint,
            #[serde(default)]
            redacted: Vec<Box<str>>,
            tool: Value,
        }
        let written = Written::deserialize(d)?;
        let pinned = PinnedTool::new(&written.tool, &mut Vec::new());
        // Keep the fingerprint as written: the lockfile reader checks it
        // against the content's (`is_intact`) and reports a hand edit.
        Ok(Self {
            fingerprint: written.fingerprint,
            redacted: written.redacted.into_boxed_slice(),
            ..pinned
        })
    }
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

/// Pins a server's tools one at a time, as a source yields them: filters,
/// namespaces, normalizes and fingerprints each, so only one tool is ever a
/// `Value` tree.
pub struct PinBuilder {
    transform: Transform,
    tools: BTreeMap<String, PinnedTool>,
    /// Server-side name → index of the tool that had it.
    seen: HashMap<String, usize>,
    index: usize,
    scratch: Vec<u8>,
}

impl PinBuilder {
    pub fn new(transform: Transform) -> Self {
        Self {
            transform,
            tools: BTreeMap::new(),
            seen: HashMap::new(),
            index: 0,
            scratch: Vec::with_capacity(4096),
        }
    }

    /// Takes the next raw tool as the server gave it.
    pub fn push(&mut self, raw: Value) -> Result<(), ToolError> {
        let index = self.index;
        self.index += 1;
        let name = tool_name(&raw, index)?;
        if !self.transform.keeps(name) {
            return Ok(());
        }
        if let Some(&first) = self.seen.get(name) {
            return Err(ToolError::Duplicate {
                name: name.to_string(),
                first,
                second: index,
            });
        }
        self.seen.insert(name.to_string(), index);
        let tool = self.transform.normalize(raw, index)?;
        let pinned = PinnedTool::new(&tool, &mut self.scratch);
        let full_name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        self.tools.insert(full_name.to_string(), pinned);
        Ok(())
    }

    /// How many raw tools were pushed.
    pub fn pushed(&self) -> usize {
        self.index
    }

    /// The pinned server.
    pub fn finish(
        self,
        source: Value,
        format: impl Into<String>,
        session: Option<Value>,
    ) -> ServerPin {
        ServerPin {
            fingerprint: server_fingerprint(&self.tools, None),
            format: format.into(),
            session,
            instructions: None,
            redacted: Vec::new(),
            source,
            tools: self.tools,
        }
    }
}

impl ServerPin {
    /// Pins already normalized tools (each must have a string `name`).
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
            if pinned
                .insert(name.clone(), PinnedTool::new(&tool, &mut scratch))
                .is_some()
            {
                return Err(CatalogError::DuplicateInServer {
                    server: server.to_string(),
                    name,
                });
            }
        }
        Ok(Self {
            fingerprint: server_fingerprint(&pinned, None),
            format: format.into(),
            session: None,
            instructions: None,
            redacted: Vec::new(),
            source,
            tools: pinned,
        })
    }

    /// The server's fingerprint: its tools and instructions, as
    /// [`server_fingerprint`] computes it. Kept current by every
    /// constructor and by [`Catalog::new`]; nothing else sets it.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// Replaces every configured secret the server echoed (in its tools,
    /// instructions and session, in every form [`Redactor`] knows) by its
    /// stand-in, records where, and fingerprints what is left: a secret
    /// never reaches a lockfile, a finding, the ledger or a payload built
    /// from this pin. Returns whether anything was redacted.
    pub fn redact(&mut self, redactor: &Redactor) -> bool {
        if redactor.is_empty() {
            return false;
        }
        let mut tools = false;
        for tool in self.tools.values_mut() {
            if let Some(clean) = tool.redacted_by(redactor) {
                *tool = clean;
                tools = true;
            }
        }
        let mut at = Vec::new();
        if let Some(text) = &mut self.instructions {
            let mut value = Value::String(std::mem::take(text));
            redactor.redact_value_at(&mut value, "/instructions", &mut at);
            *text = match value {
                Value::String(s) => s,
                _ => String::new(),
            };
        }
        if let Some(session) = &mut self.session {
            redactor.redact_value_at(session, "/session", &mut at);
        }
        let server = !at.is_empty();
        self.redacted.extend(at);
        self.redacted.sort_unstable();
        self.redacted.dedup();
        if tools || server {
            self.seal();
        }
        tools || server
    }

    /// Recomputes the fingerprint from the tools and instructions held now.
    fn seal(&mut self) {
        self.fingerprint = server_fingerprint(&self.tools, self.instructions.as_deref());
    }

    /// Records the session a live server's tools were captured in.
    pub fn with_session(mut self, session: Option<Value>) -> Self {
        self.session = session;
        self
    }

    /// Records the server's instructions, and fingerprints them with its
    /// tools.
    pub fn with_instructions(mut self, instructions: Option<String>) -> Self {
        self.instructions = instructions;
        self.seal();
        self
    }
}

/// The fingerprint of a server's instructions: SHA-256 of the JCS string.
pub fn instructions_fingerprint(text: &str) -> Fingerprint {
    Fingerprint::of_tool(&Value::String(text.to_string()), &mut Vec::new())
}

/// A server's fingerprint: its tools' `[name, fingerprint]` pairs, after one
/// `["", instructions fingerprint]` pair when it has instructions (no tool
/// is named `""`, so the pair cannot be confused with one). Without
/// instructions it is the fingerprint of the `[name, fingerprint]` pairs
/// alone, as before instructions were pinned. This is the one computation
/// of a server's fingerprint: the lockfile's reader checks it and every
/// catalog is sealed with it.
pub fn server_fingerprint(
    tools: &BTreeMap<String, PinnedTool>,
    instructions: Option<&str>,
) -> Fingerprint {
    let pseudo = instructions.map(instructions_fingerprint);
    Fingerprint::of_named(
        pseudo
            .iter()
            .map(|fp| ("", fp))
            .chain(tools.iter().map(|(n, t)| (n.as_str(), &t.fingerprint))),
    )
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
    // Each server's instructions as one `["", fingerprint]` pair, in
    // fingerprint order, before the tools (so a catalog of one server has
    // that server's fingerprint, with or without instructions).
    let mut said: Vec<Fingerprint> = servers
        .values()
        .filter_map(|pin| pin.instructions.as_deref().map(instructions_fingerprint))
        .collect();
    said.sort_unstable();
    Ok(Fingerprint::of_named(
        said.iter()
            .map(|fp| ("", fp))
            .chain(all.iter().map(|(name, (_, fp))| (*name, *fp))),
    ))
}

impl Catalog {
    /// Joins servers into one catalog; a namespaced name offered by two
    /// servers is an error naming both. Each server's fingerprint is
    /// recomputed from what it holds, so a catalog assembled from edited
    /// pins (an approval, a review) is always one its reader accepts.
    pub fn new(
        environment: impl Into<String>,
        mut servers: BTreeMap<String, ServerPin>,
    ) -> Result<Self, CatalogError> {
        for pin in servers.values_mut() {
            pin.seal();
        }
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

    /// The catalog fingerprint over every server's tools and instructions.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
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
    fn a_pin_with_an_echoed_secret_is_redacted_where_it_was_and_reads_back() {
        let secret = r#"tok_S"q\w&e/1234"#;
        let escaped = serde_json::to_string(secret).expect("json");
        let escaped = escaped.trim_matches('"');
        let percent = crate::redact::percent_encoded(secret, false);
        let tools = vec![
            json!({"name": "whoami", "description": format!("Debug: {secret} {escaped} {percent}"),
                   "inputSchema": {"type": "object", "properties": {"t": {"default": secret}}}}),
            json!({"name": "clean", "description": "Nothing to hide."}),
        ];
        let mut pin = ServerPin::new("s", json!({"command": ["x"]}), "mcp", tools)
            .expect("pin")
            .with_session(Some(
                json!({"serverInfo": {"name": format!("echo {secret}")}}),
            ))
            .with_instructions(Some(format!("Token {secret}.")));
        let clean_before = pin.tools["clean"].clone();
        let before = pin.fingerprint;
        let redactor = Redactor::new(&[("${API_TOKEN}".to_string(), secret.to_string())]);
        assert!(pin.redact(&redactor));
        assert!(!pin.redact(&redactor), "a second pass finds nothing");
        assert_ne!(pin.fingerprint, before);
        assert_eq!(
            pin.tools["clean"], clean_before,
            "a clean tool is untouched"
        );
        let whoami = &pin.tools["whoami"];
        let redacted: Vec<&str> = whoami.redacted().iter().map(|p| &**p).collect();
        assert_eq!(
            redacted,
            ["/description", "/inputSchema/properties/t/default"]
        );
        assert_eq!(
            whoami.value()["description"],
            "Debug: ${API_TOKEN} ${API_TOKEN} ${API_TOKEN}"
        );
        assert_eq!(pin.redacted, ["/instructions", "/session/serverInfo/name"]);
        assert_eq!(pin.instructions.as_deref(), Some("Token ${API_TOKEN}."));
        let catalog =
            Catalog::new("default", BTreeMap::from([("s".into(), pin)])).expect("catalog");
        let text = crate::lockfile::to_string(&catalog);
        for form in [secret, escaped, percent.as_str(), "tok_S"] {
            assert!(!text.contains(form), "{form:?} in\n{text}");
        }
        let back = crate::lockfile::parse(text.as_bytes(), "toolpin.lock").expect("reads back");
        assert_eq!(back, catalog);
        assert_eq!(back.servers["s"].tools["whoami"].redacted().len(), 2);
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
