//! `toolpin rules`: list the drift rules, or explain one.

use super::{print, Outcome};
use crate::error::CliError;

pub fn run(id: Option<&str>, markdown: bool) -> Result<Outcome, CliError> {
    let text = match (id, markdown) {
        (_, true) => toolpin_drift::rule::markdown(),
        (Some(id), _) => match toolpin_drift::rule::by_id(id) {
            Some(rule) => rule.explain(),
            None => {
                return Err(CliError::new(format!(
                    "no rule {id:?}; `toolpin rules` lists them"
                )))
            }
        },
        (None, false) => rules_table(),
    };
    print(&text)?;
    Ok(Outcome::Clean)
}

/// `toolpin rules`: one line per rule.
fn rules_table() -> String {
    let width = toolpin_drift::rule::all()
        .map(|r| r.id.len())
        .max()
        .unwrap_or(0);
    toolpin_drift::rule::all()
        .map(|r| {
            format!(
                "{:<width$}  {:<11} {:<8} {}{}\n",
                r.id,
                r.kind.name(),
                r.severity.name(),
                r.summary,
                if r.security { " [security]" } else { "" }
            )
        })
        .collect()
}
