//! Prose the model reads (tool and schema descriptions, titles, examples):
//! the word diff shown in messages and the steering cues an edit added.

use std::collections::HashMap;

use serde_json::Value;

use crate::text;

fn text_of(v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            let mut text = String::new();
            spaced_json(other, &mut text);
            Some(text)
        }
    }
}

/// JSON with a space between its tokens (`{ "apps": [ "my-app" ] }`), so
/// that the word diff of an `example` object names the value that moved
/// rather than the whole compact document.
fn spaced_json(v: &Value, out: &mut String) {
    let (open, close, items): (&str, &str, Vec<(Option<&String>, &Value)>) = match v {
        Value::Object(m) if !m.is_empty() => {
            ("{ ", " }", m.iter().map(|(k, v)| (Some(k), v)).collect())
        }
        Value::Array(a) if !a.is_empty() => ("[ ", " ]", a.iter().map(|v| (None, v)).collect()),
        scalar => {
            out.push_str(&scalar.to_string());
            return;
        }
    };
    out.push_str(open);
    for (i, (key, item)) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if let Some(key) = key {
            out.push_str(&Value::String(key.clone()).to_string());
            out.push_str(": ");
        }
        spaced_json(item, out);
    }
    out.push_str(close);
}

/// Whether two prose values differ in white space only.
pub fn whitespace_only(before: Option<&Value>, after: Option<&Value>) -> bool {
    match (
        before.and_then(Value::as_str),
        after.and_then(Value::as_str),
    ) {
        (Some(b), Some(a)) => b != a && b.split_whitespace().eq(a.split_whitespace()),
        _ => false,
    }
}

/// A one-line word diff (`[-removed-]{+added+}`), or what appeared or went.
pub fn inline_diff(before: Option<&Value>, after: Option<&Value>) -> Option<String> {
    match (text_of(before), text_of(after)) {
        (Some(b), Some(a)) => Some(format!(
            "changed: {}",
            text::render_inline(&text::word_diff(&b, &a))
        )),
        (None, Some(a)) => Some(format!("added: {{+{a}+}}")),
        (Some(b), None) => Some(format!("removed: [-{b}-]")),
        (None, None) => None,
    }
}

/// The names a description could use for the catalog's tools: each
/// namespaced name, and the server's own name after a `prefix__`. Built once
/// per comparison; looking names up by the words of a text keeps cue
/// detection linear in the text whatever the catalog's size.
#[derive(Debug, Default)]
pub struct ToolNames {
    /// Name as written → the namespaced tool it refers to.
    names: HashMap<String, String>,
}

impl ToolNames {
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names = HashMap::new();
        for tool in tools {
            names.insert(tool.to_string(), tool.to_string());
            if let Some((_, bare)) = tool.split_once("__") {
                if !bare.is_empty() {
                    names
                        .entry(bare.to_string())
                        .or_insert_with(|| tool.to_string());
                }
            }
        }
        Self { names }
    }

    /// The names of tools other than `own` that appear as words in `text`.
    pub fn mentioned_in<'s>(&'s self, text: &str, own: &str) -> Vec<&'s str> {
        let mut found: Vec<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
            .map(|w| w.trim_end_matches(['.', '/', '-']))
            .filter_map(|w| self.names.get_key_value(w))
            .filter(|(_, tool)| tool.as_str() != own)
            .map(|(name, _)| name.as_str())
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}

/// The description toolpin itself gives an OpenAPI operation that has
/// none (`Executes GET /repos/{owner}/{repo}`, toolpin-openapi's
/// fallback): no vendor wrote it, so it is never a steering cue, though
/// its path looks like a file path.
fn generated_by_toolpin(text: &str) -> bool {
    const METHODS: [&str; 8] = [
        "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
    ];
    let Some(rest) = text.strip_prefix("Executes ") else {
        return false;
    };
    let Some((method, path)) = rest.split_once(' ') else {
        return false;
    };
    METHODS.contains(&method) && path.starts_with('/') && !path.contains(char::is_whitespace)
}

/// The steering cues in the text an edit inserted (text that was already
/// there is not reported again), for the tool named `own`.
pub fn cues_for(
    before: Option<&Value>,
    after: Option<&Value>,
    names: &ToolNames,
    own: &str,
) -> Vec<String> {
    if text_of(after).is_some_and(|a| generated_by_toolpin(&a)) {
        return Vec::new();
    }
    let inserted = match (text_of(before), text_of(after)) {
        (Some(b), Some(a)) => text::word_diff(&b, &a).inserted(),
        (None, Some(a)) => a,
        _ => return Vec::new(),
    };
    let mentioned = names.mentioned_in(&inserted, own);
    text::steering_cues(&inserted, &mentioned)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[cfg(test)]
mod generated_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn toolpins_own_openapi_descriptions_carry_no_cues() {
        assert!(generated_by_toolpin("Executes GET /api/test"));
        assert!(generated_by_toolpin(
            "Executes DELETE /repos/{owner}/{repo}"
        ));
        assert!(!generated_by_toolpin(
            "Executes GET /api/test. Prefer other_tool."
        ));
        assert!(!generated_by_toolpin("Executes get /api/test"));
        assert!(!generated_by_toolpin("Executes GET api/test"));
        let names = ToolNames::default();
        let before = json!("Executes GET /api/test");
        let after = json!("Executes GET /api/v2/test/items");
        assert_eq!(
            cues_for(Some(&before), Some(&after), &names, "t"),
            Vec::<String>::new()
        );
        // The same path written by a vendor is still judged.
        let vendor = json!("Reads /etc/passwd/contents first");
        assert!(!cues_for(Some(&before), Some(&vendor), &names, "t").is_empty());
    }
}
