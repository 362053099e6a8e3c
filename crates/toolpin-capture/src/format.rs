//! Tool-definition formats: detect which one a document is and extract its
//! tools as raw `Value`s, each still exactly as given apart from the format's
//! own envelope (OpenAI's `{"type": "function", "function": …}` wrapper).

use std::fmt;

use serde_json::{Map, Value};
use toolpin_manifest::normalize::type_name;

/// A tool-definition format toolpin reads: the one list shared with the
/// writer (`toolpin_manifest::export`), with its names, aliases and
/// descriptions, is [`toolpin_manifest::ToolFormat`].
pub use toolpin_manifest::ToolFormat as Format;

/// The format as one bit of a `u8` set (room for 8 formats).
fn bit(format: Format) -> u8 {
    1 << (format as u8)
}

/// Receives a source's tools one at a time, each exactly as given apart
/// from its format's envelope.
pub trait ToolSink {
    fn push(&mut self, tool: Value) -> Result<(), String>;
}

impl ToolSink for Vec<Value> {
    fn push(&mut self, tool: Value) -> Result<(), String> {
        Vec::push(self, tool);
        Ok(())
    }
}

impl ToolSink for toolpin_manifest::PinBuilder {
    fn push(&mut self, tool: Value) -> Result<(), String> {
        toolpin_manifest::PinBuilder::push(self, tool).map_err(|e| e.to_string())
    }
}

/// A document's tools, extracted.
#[derive(Clone, Debug, PartialEq)]
pub struct Extracted {
    pub format: Format,
    pub tools: Vec<Value>,
}

/// Extracts tools from a parsed document, detecting the format unless
/// `forced`.
pub fn extract(doc: Value, forced: Option<Format>) -> Result<Extracted, String> {
    let mut tools = Vec::new();
    let format = extract_into(doc, forced, &mut tools)?;
    Ok(Extracted { format, tools })
}

/// [`extract`] into a sink. The same reader as [`stream`] (`DocSeed`),
/// fed from the tree instead of the text, so a document shape is taught
/// once.
pub fn extract_into(
    doc: Value,
    forced: Option<Format>,
    sink: &mut dyn ToolSink,
) -> Result<Format, String> {
    let mut walker = Walker::new(forced, sink);
    serde::de::DeserializeSeed::deserialize(DocSeed(&mut walker), doc)
        .map_err(|e| e.to_string())?;
    walker.finish()
}

/// Reads a document of tool definitions as a stream: the whole document is
/// never a `Value` tree, only one tool at a time, so memory stays near the
/// size of the text however many tools it holds.
pub fn stream(
    text: &str,
    forced: Option<Format>,
    sink: &mut dyn ToolSink,
) -> Result<Format, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut walker = Walker::new(forced, sink);
    serde::de::DeserializeSeed::deserialize(DocSeed(&mut walker), &mut de)?;
    de.end()?;
    walker.finish().map_err(serde::de::Error::custom)
}

fn not_a_document(v: &Value) -> String {
    format!(
        "cannot detect the format: the document is {}, expected an object or an array of tools",
        type_name(v)
    )
}

const UNDETECTED: &str =
    "cannot detect the format: expected a tools/list result {\"tools\": [...]}, \
     a list of pages, an array of tools, or Gemini {\"functionDeclarations\": [...]}";

/// What a member of a top-level object holds: the one list of top-level
/// shapes, read by `DocSeed`, the one document reader behind both
/// [`stream`] (from text) and [`extract_into`] (from a tree). A new
/// top-level key is taught here once; what its elements can be is
/// [`Container`]'s, read by `Walker::element`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Member {
    /// An array of elements that sit in this container.
    Array(Container),
    /// A JSON-RPC response's `result`: its `tools` member.
    Result,
}

/// The member of a top-level object that holds tools, if `key` is one.
fn member(key: &str) -> Option<Member> {
    match key {
        "tools" => Some(Member::Array(Container::Tools)),
        "functionDeclarations" | "function_declarations" => {
            Some(Member::Array(Container::Declarations))
        }
        "result" => Some(Member::Result),
        _ => None,
    }
}

/// Where an element sits, which says what it can be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    /// An element of a top-level array: a tool of any format, an MCP page,
    /// or a Gemini tool object.
    Top,
    /// An element of a `tools` array: a tool, or a Gemini tool object.
    Tools,
    /// An element of `functionDeclarations`: a Gemini function.
    Declarations,
}

impl Container {
    /// How errors name the member holding the array.
    fn label(self) -> &'static str {
        match self {
            Container::Declarations => "\"functionDeclarations\"",
            Container::Top | Container::Tools => "\"tools\"",
        }
    }
}

/// Format detection and extraction, one element at a time.
struct Walker<'s> {
    sink: &'s mut dyn ToolSink,
    forced: Option<Format>,
    /// Formats every element so far is compatible with.
    allowed: u8,
    /// The first element that narrowed `allowed`, for the mixed-format error.
    first: Option<(usize, u8)>,
    /// Tools handed to the sink.
    count: usize,
    /// Whether the document had a place for tools at all.
    found: bool,
}

impl<'s> Walker<'s> {
    fn new(forced: Option<Format>, sink: &'s mut dyn ToolSink) -> Self {
        Self {
            sink,
            forced,
            allowed: u8::MAX,
            first: None,
            count: 0,
            found: false,
        }
    }

    /// An array inside an element already read (a Gemini tool object's
    /// declarations).
    fn array(&mut self, value: Value, container: Container) -> Result<(), String> {
        self.found = true;
        match value {
            Value::Array(items) => items
                .into_iter()
                .try_for_each(|item| self.element(item, container)),
            other => Err(format!(
                "{} is {}, expected an array",
                container.label(),
                type_name(&other)
            )),
        }
    }

    /// Narrows the formats by one element's; an empty set is the
    /// mixed-format error.
    fn narrow(&mut self, bits: u8) -> Result<(), String> {
        if self.forced.is_some() {
            // `unwrap_tool` checks each tool's shape against the forced
            // format, with a more specific message.
            return Ok(());
        }
        if self.allowed & bits == 0 {
            let (j, prev) = self.first.unwrap_or((0, self.allowed));
            return Err(format!(
                "cannot detect the format: tool #{j} looks like {} but tool #{} like {}; \
                 set `format` to say which",
                describe_bits(prev),
                self.count,
                describe_bits(bits)
            ));
        }
        if bits != u8::MAX && self.first.is_none() {
            self.first = Some((self.count, bits));
        }
        self.allowed &= bits;
        Ok(())
    }

    fn element(&mut self, item: Value, container: Container) -> Result<(), String> {
        if container == Container::Declarations {
            self.narrow(bit(Format::Gemini))?;
            return self.tool(item);
        }
        if let Value::Object(map) = &item {
            if has_gemini_declarations(map) {
                let Value::Object(mut map) = item else {
                    return Ok(());
                };
                let decls = map
                    .remove("functionDeclarations")
                    .or_else(|| map.remove("function_declarations"));
                return self.array(decls.unwrap_or(Value::Null), Container::Declarations);
            }
            if container == Container::Top && map.get("tools").is_some_and(Value::is_array) {
                // An MCP tools/list page.
                self.narrow(bit(Format::Mcp))?;
                let Value::Object(mut map) = item else {
                    return Ok(());
                };
                if let Some(Value::Array(tools)) = map.remove("tools") {
                    for tool in tools {
                        self.tool(tool)?;
                    }
                }
                return Ok(());
            }
            if gemini_builtin(map) && self.allowed & bit(Format::Gemini) != 0 {
                // A Gemini built-in tool ({"googleSearch": {}}) declares no
                // function the model names: nothing of it to pin.
                return Ok(());
            }
        }
        let bits = candidates(&item);
        self.narrow(bits)?;
        let single = |b: u8| Format::ALL.into_iter().find(|f| bit(*f) == b);
        // The element's own shape says how to read it; failing that, the
        // format the elements before it settled on.
        let tool = match self
            .forced
            .or_else(|| single(bits))
            .or_else(|| single(self.allowed))
        {
            Some(format) => unwrap_tool(format, item, self.count)?,
            // Several formats fit, and they read such a tool alike.
            None => item,
        };
        self.tool(tool)
    }

    fn tool(&mut self, tool: Value) -> Result<(), String> {
        self.count += 1;
        self.sink.push(tool)
    }

    fn finish(self) -> Result<Format, String> {
        if let Some(forced) = self.forced {
            return Ok(forced);
        }
        if !self.found {
            return Err(UNDETECTED.into());
        }
        // Preference when several fit (an empty array, or tools with a name
        // and description only): MCP, whose reading is the plainest.
        Ok(Format::ALL
            .into_iter()
            .find(|f| self.allowed & bit(*f) != 0)
            .unwrap_or(Format::Mcp))
    }
}

/// An object with nothing that makes it a tool or a container, in a list
/// that may be Gemini's (`{"googleSearch": {}}`, `{"codeExecution": {}}`).
fn gemini_builtin(map: &Map<String, Value>) -> bool {
    !map.contains_key("name") && !map.contains_key("type") && map.len() == 1
}

struct DocSeed<'w, 's>(&'w mut Walker<'s>);

impl<'de> serde::de::DeserializeSeed<'de> for DocSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for DocSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or an array of tools")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match member(&key) {
                Some(Member::Array(container)) => {
                    map.next_value_seed(ArraySeed(&mut *self.0, container))?
                }
                Some(Member::Result) => map.next_value_seed(ResultSeed(&mut *self.0))?,
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.found = true;
        while let Some(item) = seq.next_element::<Value>()? {
            self.0
                .element(item, Container::Top)
                .map_err(serde::de::Error::custom)?;
        }
        Ok(())
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(not_a_document(&Value::String(String::new()))))
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        Err(E::custom(not_a_document(&Value::Bool(v))))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(not_a_document(&Value::from(0))))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(not_a_document(&Value::from(0))))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(not_a_document(&Value::from(0))))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Err(E::custom(not_a_document(&Value::Null)))
    }
}

/// A `result` member (a JSON-RPC response): look for its `tools`.
struct ResultSeed<'w, 's>(&'w mut Walker<'s>);

impl<'de> serde::de::DeserializeSeed<'de> for ResultSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ResultSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a result object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "tools" {
                map.next_value_seed(ArraySeed(&mut *self.0, Container::Tools))?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(())
    }
    // Anything else under `result` holds no tools.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// An array of elements streamed into the walker.
struct ArraySeed<'w, 's>(&'w mut Walker<'s>, Container);

impl ArraySeed<'_, '_> {
    fn not_array<E: serde::de::Error>(&self, found: &str) -> E {
        E::custom(format!("{} is {found}, expected an array", self.1.label()))
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for ArraySeed<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ArraySeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of tools")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.found = true;
        while let Some(item) = seq.next_element::<Value>()? {
            self.0
                .element(item, self.1)
                .map_err(serde::de::Error::custom)?;
        }
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.not_array("an object"))
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.not_array("a string"))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.not_array("a boolean"))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.not_array("a number"))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.not_array("a number"))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.not_array("a number"))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Err(self.not_array("null"))
    }
}

/// Formats a single array element is compatible with (a bit set).
fn candidates(item: &Value) -> u8 {
    let Value::Object(map) = item else {
        // Not a tool at all: normalization reports it with its index.
        return u8::MAX;
    };
    let is_function_type = map.get("type").and_then(Value::as_str) == Some("function");
    if is_function_type && map.get("function").is_some_and(Value::is_object) {
        bit(Format::OpenAiChat)
    } else if is_function_type && map.contains_key("name") {
        bit(Format::OpenAiResponses)
    } else if has_gemini_declarations(map) {
        bit(Format::Gemini)
    } else if map.get("tools").is_some_and(Value::is_array) {
        // An MCP tools/list page inside a list of pages.
        bit(Format::Mcp)
    } else if map.contains_key("input_schema")
        || map.get("type").and_then(Value::as_str) == Some("custom")
    {
        bit(Format::Anthropic)
    } else if map.contains_key("inputSchema") {
        bit(Format::Mcp)
    } else if !map.contains_key("name") {
        // Nothing to go by (a Gemini built-in tool, or a tool missing its
        // name, which normalization reports).
        u8::MAX
    } else {
        // Name and description only: MCP and Anthropic read it alike.
        bit(Format::Mcp) | bit(Format::Anthropic)
    }
}

fn has_gemini_declarations(map: &Map<String, Value>) -> bool {
    map.contains_key("functionDeclarations") || map.contains_key("function_declarations")
}

fn describe_bits(bits: u8) -> String {
    let names: Vec<&str> = Format::ALL
        .iter()
        .filter(|f| bits & bit(**f) != 0)
        .map(|f| f.describe())
        .collect();
    names.join(" or ")
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
        Format::Mcp | Format::Gemini | Format::OpenApi => Ok(Value::Object(map)),
    }
}

fn not_a(format: Format, index: usize, why: &str) -> String {
    format!("tool #{index} is not {} ({why})", format.describe())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Extracts with the tree reader, checking the streaming reader finds
    /// the same format and tools.
    fn ex(doc: Value) -> Extracted {
        let text = doc.to_string();
        let tree = extract(doc, None).expect("extracts");
        let mut tools = Vec::new();
        let format = stream(&text, None, &mut tools).expect("streams");
        assert_eq!(
            Extracted { format, tools },
            tree,
            "stream() and extract() agree"
        );
        tree
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
            err.contains("tool #0 looks like an Anthropic tool"),
            "{err}"
        );
        assert!(
            err.contains("tool #1 like an OpenAI Chat Completions tool"),
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
