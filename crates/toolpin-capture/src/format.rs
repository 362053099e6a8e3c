//! Tool-definition formats: detect which one a document is and extract its
//! tools as raw `Value`s, each still exactly as given apart from the format's
//! own envelope (OpenAI's `{"type": "function", "function": …}` wrapper).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};
use toolpin_manifest::normalize::type_name;

/// A tool-definition format toolpin reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// MCP `tools/list`: a result `{"tools": […]}` (or a JSON-RPC response
    /// holding one), a list of such pages, or a bare array of tools.
    Mcp,
    /// OpenAI Chat Completions: `[{"type": "function", "function": {…}}]`.
    OpenAiChat,
    /// OpenAI Responses: `[{"type": "function", "name": …, "parameters": …}]`.
    OpenAiResponses,
    /// Anthropic Messages: `[{"name", "description", "input_schema"}]`.
    Anthropic,
    /// Gemini: `{"functionDeclarations": […]}` or a list of such tool objects.
    Gemini,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Mcp,
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::Gemini,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Mcp => "mcp",
            Format::OpenAiChat => "openai-chat",
            Format::OpenAiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::Gemini => "gemini",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Format::Mcp => "an MCP tool",
            Format::OpenAiChat => "an OpenAI Chat Completions tool",
            Format::OpenAiResponses => "an OpenAI Responses function tool",
            Format::Anthropic => "an Anthropic tool",
            Format::Gemini => "a Gemini tool",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown format {s:?}; expected one of: {}",
                    names.join(", ")
                )
            })
    }
}

/// A document's tools, extracted.
#[derive(Clone, Debug, PartialEq)]
pub struct Extracted {
    pub format: Format,
    pub tools: Vec<Value>,
}

/// Extracts tools from `doc`, detecting the format unless `forced`.
pub fn extract(doc: Value, forced: Option<Format>) -> Result<Extracted, String> {
    let format = match forced {
        Some(f) => f,
        None => detect(&doc)?,
    };
    let tools = match format {
        Format::Mcp => extract_mcp(doc)?,
        Format::Gemini => extract_gemini(doc)?,
        Format::OpenAiChat | Format::OpenAiResponses | Format::Anthropic => {
            let Value::Array(items) = doc else {
                return Err(format!(
                    "expected an array of tools for format {format}, found {}",
                    type_name(&doc)
                ));
            };
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| unwrap_tool(format, item, i))
                .collect::<Result<_, _>>()?
        }
    };
    Ok(Extracted { format, tools })
}

/// Formats a single array element is compatible with (a bit set).
fn candidates(item: &Value) -> u8 {
    let Value::Object(map) = item else {
        // Not a tool at all: normalization reports it with its index.
        return u8::MAX;
    };
    let is_function_type = map.get("type").and_then(Value::as_str) == Some("function");
    if is_function_type && map.get("function").is_some_and(Value::is_object) {
        Format::OpenAiChat.bit()
    } else if is_function_type && map.contains_key("name") {
        Format::OpenAiResponses.bit()
    } else if has_gemini_declarations(map) {
        Format::Gemini.bit()
    } else if map.get("tools").is_some_and(Value::is_array) {
        // An MCP tools/list page inside a list of pages.
        Format::Mcp.bit()
    } else if map.contains_key("input_schema") {
        Format::Anthropic.bit()
    } else if map.contains_key("inputSchema") {
        Format::Mcp.bit()
    } else if !map.contains_key("name") {
        // Nothing to go by (a Gemini built-in tool, or a tool missing its
        // name, which normalization reports).
        u8::MAX
    } else {
        // Name and description only: MCP and Anthropic read it alike.
        Format::Mcp.bit() | Format::Anthropic.bit()
    }
}

fn has_gemini_declarations(map: &Map<String, Value>) -> bool {
    map.contains_key("functionDeclarations") || map.contains_key("function_declarations")
}

fn detect(doc: &Value) -> Result<Format, String> {
    match doc {
        Value::Object(map) => {
            if has_gemini_declarations(map) {
                return Ok(Format::Gemini);
            }
            let tools = map
                .get("tools")
                .or_else(|| map.get("result").and_then(|r| r.get("tools")));
            match tools {
                Some(Value::Array(items))
                    if items.iter().any(|i| i.as_object().is_some_and(has_gemini_declarations)) =>
                {
                    Ok(Format::Gemini)
                }
                Some(_) => Ok(Format::Mcp),
                None => Err(
                    "cannot detect the format: expected a tools/list result {\"tools\": [...]}, \
                     a list of pages, an array of tools, or Gemini {\"functionDeclarations\": [...]}"
                        .into(),
                ),
            }
        }
        Value::Array(items) => {
            let mut allowed = u8::MAX;
            let mut first_kind: Option<(usize, u8)> = None;
            for (i, item) in items.iter().enumerate() {
                let c = candidates(item);
                if allowed & c == 0 {
                    let (j, prev) = first_kind.unwrap_or((0, allowed));
                    return Err(format!(
                        "cannot detect the format: element #{j} looks like {} but element #{i} like {}; \
                         set `format` to say which",
                        describe_bits(prev),
                        describe_bits(c)
                    ));
                }
                if c != u8::MAX && first_kind.is_none() {
                    first_kind = Some((i, c));
                }
                allowed &= c;
            }
            // Preference when several fit (an empty array, or tools with a
            // name and description only): MCP, whose reading is the plainest.
            Ok(Format::ALL
                .into_iter()
                .find(|f| allowed & f.bit() != 0)
                .unwrap_or(Format::Mcp))
        }
        other => Err(format!(
            "cannot detect the format: the document is {}, expected an object or an array of tools",
            type_name(other)
        )),
    }
}

fn describe_bits(bits: u8) -> String {
    let names: Vec<&str> = Format::ALL
        .iter()
        .filter(|f| bits & f.bit() != 0)
        .map(|f| f.describe())
        .collect();
    names.join(" or ")
}

fn extract_mcp(doc: Value) -> Result<Vec<Value>, String> {
    match doc {
        Value::Object(mut map) => {
            let tools = match map.remove("tools") {
                Some(t) => t,
                None => match map.remove("result") {
                    Some(Value::Object(mut result)) => {
                        result.remove("tools").unwrap_or(Value::Null)
                    }
                    _ => Value::Null,
                },
            };
            match tools {
                Value::Array(items) => Ok(items),
                Value::Null => Err("expected a \"tools\" array (an MCP tools/list result)".into()),
                other => Err(format!(
                    "\"tools\" is {}, expected an array",
                    type_name(&other)
                )),
            }
        }
        Value::Array(items) => {
            let pages = items
                .iter()
                .any(|i| i.get("tools").is_some_and(Value::is_array));
            if !pages {
                return Ok(items);
            }
            let mut tools = Vec::new();
            for (i, page) in items.into_iter().enumerate() {
                match page {
                    Value::Object(mut map) => match map.remove("tools") {
                        Some(Value::Array(t)) => tools.extend(t),
                        _ => return Err(format!("page #{i} has no \"tools\" array")),
                    },
                    other => {
                        return Err(format!(
                            "page #{i} is {}, expected an object",
                            type_name(&other)
                        ))
                    }
                }
            }
            Ok(tools)
        }
        other => Err(format!(
            "expected a tools/list result or an array, found {}",
            type_name(&other)
        )),
    }
}

fn extract_gemini(doc: Value) -> Result<Vec<Value>, String> {
    let groups = match doc {
        Value::Object(mut map) if map.contains_key("tools") && !has_gemini_declarations(&map) => {
            match map.remove("tools") {
                Some(Value::Array(items)) => items,
                _ => return Err("\"tools\" is not an array".into()),
            }
        }
        Value::Object(map) => vec![Value::Object(map)],
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "expected a Gemini tool object, found {}",
                type_name(&other)
            ))
        }
    };
    let mut tools = Vec::new();
    for (i, group) in groups.into_iter().enumerate() {
        let Value::Object(mut map) = group else {
            return Err(format!("element #{i} is not a Gemini tool object"));
        };
        let decls = map
            .remove("functionDeclarations")
            .or_else(|| map.remove("function_declarations"));
        match decls {
            Some(Value::Array(d)) => tools.extend(d),
            Some(other) => {
                return Err(format!(
                    "element #{i}: functionDeclarations is {}, expected an array",
                    type_name(&other)
                ))
            }
            // Gemini's built-in tools ({"googleSearch": {}}) declare no
            // functions the model names; there is nothing of them to pin.
            None => {}
        }
    }
    Ok(tools)
}

/// Removes the format's envelope from one array element.
fn unwrap_tool(format: Format, item: Value, index: usize) -> Result<Value, String> {
    let Value::Object(mut map) = item else {
        // Left for normalization to reject with the tool's index.
        return Ok(item);
    };
    match format {
        Format::OpenAiChat => {
            if map.get("type").and_then(Value::as_str) != Some("function") {
                return Err(not_a(format, index, "no \"type\": \"function\""));
            }
            let Some(Value::Object(mut function)) = map.remove("function") else {
                return Err(not_a(format, index, "no \"function\" object"));
            };
            map.remove("type");
            // Anything beside the wrapper is kept on the tool.
            for (k, v) in map {
                function.entry(k).or_insert(v);
            }
            Ok(Value::Object(function))
        }
        Format::OpenAiResponses => match map.get("type").and_then(Value::as_str) {
            Some("function") => {
                map.remove("type");
                Ok(Value::Object(map))
            }
            Some(other) => Err(format!(
                "tool #{index} has type {other:?}: only function tools have a definition to pin"
            )),
            None => Err(not_a(format, index, "no \"type\": \"function\"")),
        },
        Format::Anthropic => {
            // `"type": "custom"` is the envelope of a user-defined tool;
            // server tools keep their versioned type.
            if map.get("type").and_then(Value::as_str) == Some("custom") {
                map.remove("type");
            }
            Ok(Value::Object(map))
        }
        Format::Mcp | Format::Gemini => Ok(Value::Object(map)),
    }
}

fn not_a(format: Format, index: usize, why: &str) -> String {
    format!("tool #{index} is not {} ({why})", format.describe())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ex(doc: Value) -> Extracted {
        extract(doc, None).expect("extracts")
    }

    #[test]
    fn detects_each_format() {
        let mcp = ex(json!({"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": "x"}));
        assert_eq!((mcp.format, mcp.tools.len()), (Format::Mcp, 1));
        let rpc = ex(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a"}]}}));
        assert_eq!(
            (rpc.format, rpc.tools),
            (Format::Mcp, vec![json!({"name": "a"})])
        );
        let pages =
            ex(json!([{"tools": [{"name": "a"}], "nextCursor": "2"}, {"tools": [{"name": "b"}]}]));
        assert_eq!(
            pages.tools,
            vec![json!({"name": "a"}), json!({"name": "b"})]
        );
        let chat = ex(
            json!([{"type": "function", "function": {"name": "a", "parameters": {}, "strict": true}}]),
        );
        assert_eq!(chat.format, Format::OpenAiChat);
        assert_eq!(
            chat.tools,
            vec![json!({"name": "a", "parameters": {}, "strict": true})]
        );
        let resp = ex(json!([{"type": "function", "name": "a", "parameters": {}}]));
        assert_eq!(
            (resp.format, resp.tools),
            (
                Format::OpenAiResponses,
                vec![json!({"name": "a", "parameters": {}})]
            )
        );
        let anth = ex(json!([{"name": "a", "input_schema": {"type": "object"}}]));
        assert_eq!(anth.format, Format::Anthropic);
        let gem =
            ex(json!({"functionDeclarations": [{"name": "a", "parameters": {"type": "OBJECT"}}]}));
        assert_eq!(gem.format, Format::Gemini);
        assert_eq!(
            gem.tools,
            vec![json!({"name": "a", "parameters": {"type": "OBJECT"}})]
        );
        let gem_list =
            ex(json!([{"function_declarations": [{"name": "a"}]}, {"googleSearch": {}}]));
        assert_eq!((gem_list.format, gem_list.tools.len()), (Format::Gemini, 1));
        let bare = ex(json!([{"name": "a", "description": "d"}]));
        assert_eq!(bare.format, Format::Mcp);
        assert_eq!(ex(json!([])).format, Format::Mcp);
    }

    #[test]
    fn mixed_formats_are_refused() {
        let err = extract(
            json!([{"name": "a", "input_schema": {}}, {"type": "function", "function": {"name": "b"}}]),
            None,
        )
        .expect_err("mixed");
        assert!(
            err.contains("element #0 looks like an Anthropic tool"),
            "{err}"
        );
        assert!(
            err.contains("element #1 like an OpenAI Chat Completions tool"),
            "{err}"
        );
    }

    #[test]
    fn forced_format_checks_the_shape() {
        let err = extract(json!([{"name": "a"}]), Some(Format::OpenAiChat)).expect_err("shape");
        assert!(
            err.contains("tool #0 is not an OpenAI Chat Completions tool"),
            "{err}"
        );
        let err = extract(
            json!([{"type": "web_search"}]),
            Some(Format::OpenAiResponses),
        )
        .expect_err("hosted");
        assert!(err.contains("only function tools"), "{err}");
        assert!("gpt".parse::<Format>().is_err());
        assert_eq!("openai-chat".parse::<Format>(), Ok(Format::OpenAiChat));
    }

    #[test]
    fn undetectable_documents() {
        assert!(extract(json!({"foo": 1}), None)
            .expect_err("none")
            .contains("cannot detect"));
        assert!(extract(json!("x"), None)
            .expect_err("none")
            .contains("a string"));
    }
}
