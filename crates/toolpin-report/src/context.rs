//! Where findings point: the lockfile, as a path relative to the repository,
//! and its text, to find the line of each tool's entry. Used by the SARIF
//! and GitHub Actions renderers.

/// The lockfile the findings are about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// The lockfile path relative to the repository root, with `/`
    /// separators (`toolpin.lock`, `agents/refund/toolpin.lock`).
    pub lockfile_uri: String,
    /// The lockfile text as written by `toolpin lock` (pretty JSON, 2-space
    /// indent); `None` when it cannot be read, and every line is then 1.
    pub lockfile_text: Option<String>,
}

/// Indent of a server's key (`servers` → server) in the pretty lockfile.
const SERVER_INDENT: usize = 4;
/// Indent of a tool's key (`servers` → server → `tools` → tool).
const TOOL_INDENT: usize = 8;

impl Context {
    pub fn new(lockfile_uri: impl Into<String>, lockfile_text: Option<String>) -> Self {
        Self {
            lockfile_uri: lockfile_uri.into(),
            lockfile_text,
        }
    }

    /// The 1-based line of `"<tool>": {` in the `"<server>": {` entry of the
    /// lockfile. A tool the lockfile does not hold (an added tool) gets its
    /// server's line; an unknown server, or no lockfile text, gets 1.
    pub fn tool_line(&self, server: &str, tool: &str) -> usize {
        self.find_tool(server, tool)
            .or_else(|| self.server_line(server))
            .unwrap_or(1)
    }

    /// The 1-based line of the tool's entry, `None` when not there.
    pub fn find_tool(&self, server: &str, tool: &str) -> Option<usize> {
        let text = self.lockfile_text.as_deref()?;
        let start = self.server_line(server)?;
        let server_close = format!("{}}}", " ".repeat(SERVER_INDENT));
        let tool_key = key_line(TOOL_INDENT, tool);
        // Lines after the server's key, up to its closing brace.
        for (i, line) in text.lines().enumerate().skip(start) {
            if line.starts_with(&server_close) {
                return None;
            }
            if line == tool_key {
                return Some(i + 1);
            }
        }
        None
    }

    /// The 1-based line of the server's entry, `None` when not there.
    pub fn server_line(&self, server: &str) -> Option<usize> {
        let text = self.lockfile_text.as_deref()?;
        let key = key_line(SERVER_INDENT, server);
        let mut in_servers = false;
        for (i, line) in text.lines().enumerate() {
            if line == "  \"servers\": {" {
                in_servers = true;
            } else if in_servers && line.starts_with("  }") {
                return None;
            } else if in_servers && line == key {
                return Some(i + 1);
            }
        }
        None
    }
}

/// The line opening an object member `name` at `indent`, as serde_json's
/// pretty printer writes it (the key escaped the same way).
fn key_line(indent: usize, name: &str) -> String {
    let key = serde_json::to_string(name).unwrap_or_default();
    format!("{}{key}: {{", " ".repeat(indent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;
    use toolpin_manifest::{Catalog, ServerPin};

    fn lockfile() -> String {
        let tool = |name: &str| {
            json!({
                "name": name,
                "description": format!("The {name} tool."),
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            })
        };
        let pin = |tools: Vec<serde_json::Value>| {
            ServerPin::new("s", json!({"file": "tools.json"}), "mcp", tools).expect("pin")
        };
        let catalog = Catalog::new(
            "default",
            BTreeMap::from([
                (
                    "billing".to_string(),
                    pin(vec![tool("get_invoice"), tool("orders")]),
                ),
                (
                    "orders".to_string(),
                    pin(vec![tool("lookup_order"), tool("refund \"x\"")]),
                ),
            ]),
        )
        .expect("catalog");
        toolpin_manifest::lockfile::to_string(&catalog)
    }

    fn line_of(text: &str, needle: &str, nth: usize) -> usize {
        text.lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with(needle))
            .nth(nth)
            .map(|(i, _)| i + 1)
            .unwrap_or_else(|| panic!("{needle} not in lockfile:\n{text}"))
    }

    #[test]
    fn finds_each_tool_under_its_server() {
        let text = lockfile();
        let ctx = Context::new("toolpin.lock", Some(text.clone()));
        let invoice = line_of(&text, "\"get_invoice\": {", 0);
        let lookup = line_of(&text, "\"lookup_order\": {", 0);
        assert_eq!(ctx.tool_line("billing", "get_invoice"), invoice);
        assert_eq!(ctx.tool_line("orders", "lookup_order"), lookup);
        assert!(lookup > invoice);
        assert!(text
            .lines()
            .nth(lookup - 1)
            .unwrap()
            .contains("lookup_order"));
        // A tool key that needs escaping.
        let refund = line_of(&text, "\"refund \\\"x\\\"\": {", 0);
        assert_eq!(ctx.tool_line("orders", "refund \"x\""), refund);
    }

    #[test]
    fn a_tool_named_like_a_server_is_found_under_its_own_server() {
        let text = lockfile();
        let ctx = Context::new("toolpin.lock", Some(text.clone()));
        // billing has a tool called "orders"; orders is also a server.
        let tool = ctx.tool_line("billing", "orders");
        let server = ctx.server_line("orders").expect("server");
        assert_ne!(tool, server);
        assert!(text
            .lines()
            .nth(tool - 1)
            .unwrap()
            .starts_with("        \"orders\""));
        assert!(text
            .lines()
            .nth(server - 1)
            .unwrap()
            .starts_with("    \"orders\""));
        // orders has no tool called get_invoice: it is not taken from billing.
        assert_eq!(ctx.find_tool("orders", "get_invoice"), None);
    }

    #[test]
    fn unknown_tools_fall_back_to_the_server_then_to_1() {
        let text = lockfile();
        let ctx = Context::new("toolpin.lock", Some(text.clone()));
        let server = text
            .lines()
            .position(|l| l == "    \"orders\": {")
            .expect("server entry")
            + 1;
        assert_eq!(ctx.server_line("orders"), Some(server));
        assert_eq!(ctx.tool_line("orders", "search_orders"), server);
        assert_eq!(ctx.tool_line("crm", "lookup_order"), 1);
        let none = Context::new("toolpin.lock", None);
        assert_eq!(none.tool_line("orders", "lookup_order"), 1);
    }
}
