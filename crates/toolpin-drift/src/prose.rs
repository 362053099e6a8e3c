//! Prose the model reads (tool and schema descriptions, titles, examples):
//! the word diff shown in messages and the steering cues an edit added.

use serde_json::Value;

use crate::text;

fn text_of(v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
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

/// The steering cues in the text an edit inserted (text that was already
/// there is not reported again).
pub fn cues_for(
    before: Option<&Value>,
    after: Option<&Value>,
    other_tools: &[&str],
) -> Vec<String> {
    let inserted = match (text_of(before), text_of(after)) {
        (Some(b), Some(a)) => text::word_diff(&b, &a).inserted(),
        (None, Some(a)) => a,
        _ => return Vec::new(),
    };
    text::steering_cues(&inserted, other_tools)
        .iter()
        .map(ToString::to_string)
        .collect()
}
