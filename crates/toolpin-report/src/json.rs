//! The findings document (docs/findings.schema.json).

use toolpin_drift::Comparison;

pub fn render(c: &Comparison) -> String {
    let mut text = serde_json::to_string_pretty(c).unwrap_or_default();
    text.push('\n');
    text
}
