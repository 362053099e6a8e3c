//! What `toolpin record -- CMD…` prints: the recorded tools as a document,
//! either exactly as sent (`native`) or in a format the exports write.
//!
//! One catalog (a single distinct array, or the union) is the tools
//! document itself, usable as a `file` source. Several are a JSON array of
//! `{"server", "api", "model", "request", "tools"}` entries, one per
//! array, `server` being the name the lockfile gives it.

use serde_json::{json, Value};
use toolpin_manifest::{export, Transform};

use super::{read_array, Api, RecordedCatalog, RecordedTool, Recording};
use crate::Format;

/// How the recorded tools are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The `tools` member byte for byte as the client sent it (for a union,
    /// each tool in its API's envelope, members as sent).
    Native,
    /// Normalized and written as `toolpin_manifest::export` writes
    /// `format`, in the order sent.
    Export(Format),
}

/// The document for `catalogs`, which [`super::catalogs`] made from
/// `recording`; `server` names the entries when there are several.
pub fn document(
    recording: &Recording,
    catalogs: &[RecordedCatalog],
    output: Output,
    server: &str,
) -> Result<String, String> {
    let union = catalogs.len() == 1 && catalogs[0].session["recorded"]["merge"] == "union";
    // One entry per recorded array (not a union, not the empty catalog of
    // a recording without tools).
    let per_array = !union && recording.arrays.len() == catalogs.len();
    // What an entry shows: its array's tools as sent (the array's catalog
    // leaves out tools an earlier array already pinned), or the union's.
    let tools_of = |index: usize, catalog: &RecordedCatalog| -> Result<Vec<Value>, String> {
        let tools = if per_array {
            read_array(&recording.arrays[index])
                .map_err(|e| e.to_string())?
                .0
        } else {
            catalog.tools.clone()
        };
        Ok(tools.iter().map(RecordedTool::value).collect())
    };
    let tools_text = |index: usize, catalog: &RecordedCatalog| -> Result<String, String> {
        match output {
            Output::Native if per_array => Ok(recording.arrays[index].raw.clone()),
            Output::Native => {
                let api = recording.first_api.unwrap_or(Api::OpenAiChat);
                Ok(wrap(api, &tools_of(index, catalog)?).to_string())
            }
            Output::Export(format) => {
                let tools = tools_of(index, catalog)?;
                let mut out = Vec::with_capacity(tools.len());
                for (i, tool) in tools.into_iter().enumerate() {
                    let normalized = Transform::default()
                        .normalize(tool, i)
                        .map_err(|e| e.to_string())?;
                    out.push(export::tool(format, &normalized));
                }
                Ok(match format {
                    Format::OpenAiChat | Format::Anthropic => Value::Array(out).to_string(),
                    _ => json!({ "tools": out }).to_string(),
                })
            }
        }
    };
    if catalogs.len() == 1 {
        return Ok(tools_text(0, &catalogs[0])? + "\n");
    }
    // Several arrays: the entries are written around each array's text so
    // that a native array keeps its bytes.
    let mut out = String::from("[\n");
    for (i, (catalog, array)) in catalogs.iter().zip(&recording.arrays).enumerate() {
        let name = format!("{server}{}", catalog.label.as_deref().unwrap_or(""));
        let head = json!({
            "server": name,
            "api": array.api.name(),
            "model": array.model,
            "request": array.first_request,
        })
        .to_string();
        // `{"api":…,"request":N,"server":…}` opened up to take `tools`.
        out.push_str("  ");
        out.push_str(&head[..head.len() - 1]);
        out.push_str(",\"tools\":");
        out.push_str(&tools_text(i, catalog)?);
        out.push('}');
        out.push_str(if i + 1 < catalogs.len() { ",\n" } else { "\n" });
    }
    out.push_str("]\n");
    Ok(out)
}

/// The line `toolpin record` prints on stderr: how many model requests
/// came, and each catalog with its API, model and tool count.
pub fn summary(recording: &Recording, catalogs: &[RecordedCatalog], server: &str) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let parts: Vec<String> = catalogs
        .iter()
        .map(|c| {
            // A label already names the model.
            let model = match (&c.label, c.session["recorded"]["model"].as_str()) {
                (None, Some(m)) => format!("{m}, "),
                _ => String::new(),
            };
            format!(
                "{server}{} ({}, {model}{})",
                c.label.as_deref().unwrap_or(""),
                c.format.name(),
                plural(c.tools.len(), "tool")
            )
        })
        .collect();
    format!(
        "recorded {}: {}",
        plural(recording.requests, "model request"),
        parts.join(", ")
    )
}

/// Tools (envelopes removed) back in their API's envelope.
fn wrap(api: Api, tools: &[Value]) -> Value {
    match api {
        Api::OpenAiChat => tools
            .iter()
            .map(|t| json!({"type": "function", "function": t}))
            .collect(),
        Api::OpenAiResponses => tools
            .iter()
            .map(|t| {
                let mut t = t.clone();
                if let Value::Object(map) = &mut t {
                    map.insert("type".into(), json!("function"));
                }
                t
            })
            .collect(),
        Api::Anthropic => Value::Array(tools.to_vec()),
        Api::Gemini => json!([{ "functionDeclarations": tools }]),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{catalogs, Merge, RecordedArray};
    use super::*;

    fn recording(arrays: &[(&str, &str)]) -> Recording {
        Recording {
            first_api: Some(Api::OpenAiChat),
            requests: arrays.len(),
            arrays: arrays
                .iter()
                .enumerate()
                .map(|(i, (model, raw))| RecordedArray {
                    api: Api::OpenAiChat,
                    model: (*model).into(),
                    path: "/v1/chat/completions".into(),
                    first_request: i + 1,
                    requests: 1,
                    raw: (*raw).into(),
                    digest: toolpin_manifest::Fingerprint::of_tool(
                        &serde_json::from_str(raw).expect("json"),
                        &mut Vec::new(),
                    ),
                })
                .collect(),
        }
    }

    const A: &str = r#"[ {"type": "function", "function": {"strict": true, "name": "a", "parameters": {"type": "object"}}} ]"#;
    const B: &str = r#"[{"type":"function","function":{"name":"b"}}]"#;

    #[test]
    fn one_array_prints_its_bytes_as_sent() {
        let rec = recording(&[("m", A)]);
        let cats = catalogs(&rec, Merge::Distinct).expect("catalogs");
        assert_eq!(
            document(&rec, &cats, Output::Native, "agent").expect("doc"),
            format!("{A}\n")
        );
        let mcp = document(&rec, &cats, Output::Export(Format::Mcp), "agent").expect("doc");
        assert_eq!(
            serde_json::from_str::<Value>(&mcp).expect("json"),
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "strict": true}]})
        );
    }

    #[test]
    fn several_arrays_are_entries_that_keep_each_arrays_bytes() {
        let rec = recording(&[("m1", A), ("m2", B)]);
        let cats = catalogs(&rec, Merge::Distinct).expect("catalogs");
        let doc = document(&rec, &cats, Output::Native, "agent").expect("doc");
        assert!(doc.contains(&format!("\"tools\":{A}}}")), "{doc}");
        let v: Value = serde_json::from_str(&doc).expect("json");
        assert_eq!(v[1]["server"], "agent#2:m2");
        assert_eq!(v[1]["request"], 2);
        let union = catalogs(&rec, Merge::Union).expect("union");
        let doc = document(&rec, &union, Output::Native, "agent").expect("doc");
        let v: Value = serde_json::from_str(&doc).expect("json");
        assert_eq!(v[0]["function"]["name"], "a");
        assert_eq!(v[1]["function"]["name"], "b");
        assert_eq!(
            summary(&rec, &cats, "agent"),
            "recorded 2 model requests: agent#1:m1 (openai-chat, 1 tool), agent#2:m2 (openai-chat, 1 tool)"
        );
    }

    /// A tool two arrays share is pinned once, but each entry shows its
    /// array's tools as the model saw them.
    #[test]
    fn each_entry_shows_every_tool_of_its_array() {
        let shared = r#"[{"type":"function","function":{"strict":true,"name":"a","parameters":{"type":"object"}}},{"type":"function","function":{"name":"b"}}]"#;
        let rec = recording(&[("m1", A), ("m2", shared)]);
        let cats = catalogs(&rec, Merge::Distinct).expect("catalogs");
        assert_eq!(cats[1].tools.len(), 1, "`a` is pinned with the first array");
        let doc = document(&rec, &cats, Output::Export(Format::Mcp), "agent").expect("doc");
        let v: Value = serde_json::from_str(&doc).expect("json");
        let names: Vec<&str> = v[1]["tools"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, vec!["a", "b"]);
    }
}
