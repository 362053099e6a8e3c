//! Writing a catalog back out in a format an agent harness reads: an MCP
//! `tools/list` result, an OpenAI Chat Completions `tools` array, or an
//! Anthropic Messages `tools` array (docs/evals.md). The inverse of the
//! readers in toolpin-capture, from the normalized (MCP-shaped) tools the
//! lockfile holds. The formats are [`ToolFormat`], the one list both
//! share; those written here are [`ToolFormat::WRITE`].
//!
//! Tools come out in the catalog's namespaced-name order, with their
//! namespaced names (the names the runtime hands the model), so the output
//! is deterministic.

use serde_json::{json, Map, Value};

use crate::{Catalog, ToolFormat};

/// One normalized tool in `format`'s per-tool shape. For `mcp` it is the
/// tool itself, and so it is for a format not in [`ToolFormat::WRITE`]
/// (nothing asks for one: `manifest = "…"` accepts only those).
///
/// - `openai-chat`: `name`, `description` (when present), `parameters` (the
///   `inputSchema`, when present) and `strict` (when present), inside
///   `{"type": "function", "function": …}`. Other members are not part of
///   the Chat Completions format and are left out.
/// - `anthropic`: `name`, `description` (when present) and `input_schema`
///   (the `inputSchema`; `{"type": "object"}` when the tool has none, since
///   the Messages API requires one). A tool that has a string `type` and no
///   input schema is an Anthropic server tool (`web_search_20250305`, …) and
///   is written exactly as pinned.
pub fn tool(format: ToolFormat, tool: &Value) -> Value {
    let Some(map) = tool.as_object() else {
        return tool.clone();
    };
    let pick = |keys: &[(&str, &str)]| -> Map<String, Value> {
        keys.iter()
            .filter_map(|(from, to)| map.get(*from).map(|v| (to.to_string(), v.clone())))
            .collect()
    };
    match format {
        ToolFormat::Mcp
        | ToolFormat::OpenAiResponses
        | ToolFormat::Gemini
        | ToolFormat::OpenApi => tool.clone(),
        ToolFormat::OpenAiChat => {
            let function = pick(&[
                ("name", "name"),
                ("description", "description"),
                ("inputSchema", "parameters"),
                ("strict", "strict"),
            ]);
            json!({"type": "function", "function": function})
        }
        ToolFormat::Anthropic => {
            let server_tool =
                map.get("type").is_some_and(Value::is_string) && !map.contains_key("inputSchema");
            if server_tool {
                return tool.clone();
            }
            let mut out = pick(&[
                ("name", "name"),
                ("description", "description"),
                ("inputSchema", "input_schema"),
            ]);
            out.entry("input_schema")
                .or_insert_with(|| json!({"type": "object"}));
            Value::Object(out)
        }
    }
}

/// Every tool of every server, in namespaced-name order, as one document.
pub fn catalog(catalog: &Catalog, format: ToolFormat) -> Value {
    let tools: Vec<Value> = catalog
        .tools()
        .map(|(_, _, pinned)| self::tool(format, &pinned.value()))
        .collect();
    match format {
        ToolFormat::OpenAiChat | ToolFormat::Anthropic => Value::Array(tools),
        _ => json!({ "tools": tools }),
    }
}

/// [`catalog`] as pretty JSON with a trailing newline.
pub fn to_text(catalog: &Catalog, format: ToolFormat) -> String {
    // Serializing a Value cannot fail.
    let mut text =
        serde_json::to_string_pretty(&self::catalog(catalog, format)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerPin;
    use std::collections::BTreeMap;

    fn full_tool() -> Value {
        json!({
            "name": "orders__search_orders",
            "description": "Search orders.",
            "inputSchema": {"type": "object", "properties": {"page_size": {"type": "integer", "default": 50}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true},
            "_meta": {"team": "orders"},
            "x-vendor": [1, 2],
        })
    }

    #[test]
    fn mcp_keeps_every_member() {
        assert_eq!(tool(ToolFormat::Mcp, &full_tool()), full_tool());
    }

    #[test]
    fn openai_wraps_name_description_parameters_and_strict() {
        assert_eq!(
            tool(ToolFormat::OpenAiChat, &full_tool()),
            json!({"type": "function", "function": {
                "name": "orders__search_orders",
                "description": "Search orders.",
                "parameters": {"type": "object", "properties": {"page_size": {"type": "integer", "default": 50}}},
            }})
        );
        let strict = json!({"name": "f", "inputSchema": {"type": "object"}, "strict": true});
        assert_eq!(
            tool(ToolFormat::OpenAiChat, &strict),
            json!({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": true}})
        );
        // No schema: no `parameters` (OpenAI reads that as no arguments).
        assert_eq!(
            tool(ToolFormat::OpenAiChat, &json!({"name": "ping"})),
            json!({"type": "function", "function": {"name": "ping"}})
        );
    }

    #[test]
    fn anthropic_renames_the_schema_and_always_has_one() {
        assert_eq!(
            tool(ToolFormat::Anthropic, &full_tool()),
            json!({
                "name": "orders__search_orders",
                "description": "Search orders.",
                "input_schema": {"type": "object", "properties": {"page_size": {"type": "integer", "default": 50}}},
            })
        );
        assert_eq!(
            tool(
                ToolFormat::Anthropic,
                &json!({"name": "ping", "description": "Ping."})
            ),
            json!({"name": "ping", "description": "Ping.", "input_schema": {"type": "object"}})
        );
        let server_tool =
            json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5});
        assert_eq!(tool(ToolFormat::Anthropic, &server_tool), server_tool);
    }

    #[test]
    fn catalog_documents_follow_namespaced_name_order_across_servers() {
        let pin = |server: &str, tools: Vec<Value>| {
            ServerPin::new(server, json!({}), "mcp", tools).expect("pin")
        };
        let cat = Catalog::new(
            "default",
            BTreeMap::from([
                (
                    "a".to_string(),
                    pin("a", vec![json!({"name": "zeta"}), json!({"name": "alpha"})]),
                ),
                (
                    "b".to_string(),
                    pin(
                        "b",
                        vec![json!({"name": "mid", "inputSchema": {"type": "object"}})],
                    ),
                ),
            ]),
        )
        .expect("catalog");
        assert_eq!(
            catalog(&cat, ToolFormat::Mcp),
            json!({"tools": [
                {"name": "alpha"},
                {"name": "mid", "inputSchema": {"type": "object"}},
                {"name": "zeta"},
            ]})
        );
        assert_eq!(
            catalog(&cat, ToolFormat::Anthropic),
            json!([
                {"name": "alpha", "input_schema": {"type": "object"}},
                {"name": "mid", "input_schema": {"type": "object"}},
                {"name": "zeta", "input_schema": {"type": "object"}},
            ])
        );
        assert_eq!(
            to_text(&cat, ToolFormat::OpenAiChat),
            "[\n  {\n    \"function\": {\n      \"name\": \"alpha\"\n    },\n    \"type\": \"function\"\n  },\n  \
             {\n    \"function\": {\n      \"name\": \"mid\",\n      \"parameters\": {\n        \"type\": \"object\"\n      }\n    },\n    \"type\": \"function\"\n  },\n  \
             {\n    \"function\": {\n      \"name\": \"zeta\"\n    },\n    \"type\": \"function\"\n  }\n]\n"
        );
    }

    #[test]
    fn names_parse_back() {
        for f in ToolFormat::WRITE {
            let parsed: ToolFormat =
                serde_json::from_value(json!(f.name())).expect("a format name");
            assert_eq!(parsed, f);
        }
    }
}
