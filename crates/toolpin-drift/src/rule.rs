//! Rule declarations. Every finding carries one of these ids; they are a
//! public contract (docs/rules.md, ../TAXONOMY in the design notes), so an id
//! never changes meaning once released.

use serde::Serialize;

/// How a change reaches the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Loud: calls error or schema validation fails.
    Structural,
    /// The shape still validates but the meaning moved.
    Semantic,
    /// Prose the model reads changed.
    Description,
    /// The declaration is stable, the service is not.
    Behavioural,
}

/// How bad a finding is, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    pub const ALL: [Severity; 5] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Structural => "structural",
            Kind::Semantic => "semantic",
            Kind::Description => "description",
            Kind::Behavioural => "behavioural",
        }
    }
}

/// One rule: its id, what it means, and what it asks to re-run.
#[derive(Debug)]
pub struct Rule {
    pub id: &'static str,
    pub summary: &'static str,
    /// What an unreviewed change of this kind can break.
    pub breaks: &'static str,
    pub kind: Kind,
    pub severity: Severity,
    /// Re-run tags (trajectory, tool-cases, selection, …).
    pub rerun: &'static [&'static str],
}

macro_rules! rules {
    ($($name:ident { id: $id:literal, summary: $summary:literal, breaks: $breaks:literal,
        kind: $kind:ident, severity: $sev:ident, rerun: [$($tag:literal),*] $(,)? })*) => {
        $(pub const $name: Rule = Rule {
            id: $id, summary: $summary, breaks: $breaks,
            kind: Kind::$kind, severity: Severity::$sev, rerun: &[$($tag),*],
        };)*
        /// Every rule this build reports.
        pub const ALL: &[&Rule] = &[$(&$name),*];
    };
}

rules! {
    TOOL_ADDED {
        id: "tool-added",
        summary: "a tool name that is not in the pin",
        breaks: "A new tool competes for selection with the ones the agent was evaluated with, and is new attack surface.",
        kind: Structural, severity: High, rerun: ["trajectory", "red-team", "authz"],
    }
    TOOL_REMOVED {
        id: "tool-removed",
        summary: "a pinned tool is gone",
        breaks: "Calls to it fail; the agent improvises with the wrong tool.",
        kind: Structural, severity: Critical, rerun: ["trajectory", "fallback"],
    }
    DESCRIPTION_CHANGED {
        id: "description-changed",
        summary: "the tool description text differs",
        breaks: "The description is prompt text: an edit moves tool selection, ordering and turn count. Whitespace-only edits are reported at low.",
        kind: Description, severity: Medium, rerun: ["trajectory", "selection", "budget"],
    }
    TITLE_CHANGED {
        id: "title-changed",
        summary: "`title` or `annotations.title` differs",
        breaks: "Clients show the title and some pass it to the model; selection can move.",
        kind: Description, severity: Low, rerun: ["selection"],
    }
    OUTPUT_SCHEMA_ADDED {
        id: "output-schema-added",
        summary: "the tool now declares an outputSchema",
        breaks: "Structured results now reach the context window in a declared shape.",
        kind: Structural, severity: Info, rerun: ["consumers"],
    }
    OUTPUT_SCHEMA_REMOVED {
        id: "output-schema-removed",
        summary: "the tool no longer declares an outputSchema",
        breaks: "Consumers of structured results lose their contract.",
        kind: Structural, severity: High, rerun: ["consumers"],
    }
    SERVER_VERSION_CHANGED {
        id: "server-version-changed",
        summary: "the server's serverInfo.version moved",
        breaks: "The declaration may be unchanged while the service behind it changed: results, latency, validation. Reported, never failed: it asks for contract tests, not a re-pin.",
        kind: Behavioural, severity: Info, rerun: ["tool-cases"],
    }
    FIELD_CHANGED {
        id: "field-changed",
        summary: "any other member of the tool object differs",
        breaks: "Members such as `_meta`, `icons`, `execution`, annotations or schema keywords can change what clients do or what the model reads. Until the schema-aware rules land, every schema and annotation change is reported here with its exact pointer.",
        kind: Semantic, severity: Low, rerun: ["tool-cases"],
    }
}

/// Looks a rule up by id.
pub fn by_id(id: &str) -> Option<&'static Rule> {
    ALL.iter().copied().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for rule in ALL {
            assert!(seen.insert(rule.id), "duplicate id {}", rule.id);
            assert!(
                rule.id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{}",
                rule.id
            );
            assert!(
                !rule.summary.is_empty() && !rule.breaks.is_empty(),
                "{}",
                rule.id
            );
            assert_eq!(by_id(rule.id).map(|r| r.id), Some(rule.id));
        }
    }
}
