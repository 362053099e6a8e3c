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

/// How bad a finding is (the vocabulary lives in the manifest crate, so
/// that the configuration can name severities without the engine).
pub use toolpin_manifest::Severity;

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
    /// The toolpin version that first emitted (or reserved) the id.
    pub since: &'static str,
    pub summary: &'static str,
    /// What an unreviewed change of this kind can break.
    pub breaks: &'static str,
    pub kind: Kind,
    pub severity: Severity,
    /// Whether a finding widens what the agent can be talked into (it may be
    /// raised per finding too: steering text, a tool that writes).
    pub security: bool,
    /// Re-run tags (trajectory, tool-cases, selection, …).
    pub rerun: &'static [&'static str],
    /// A change that triggers it, for the docs.
    pub example: &'static str,
    /// Seen only at run time or by contract tests: registered so the id is
    /// reserved, never produced by comparing manifests.
    pub runtime: bool,
}

/// A family of rules: one file under `src/rules/`, listed in
/// [`crate::rules::FAMILIES`].
#[derive(Debug)]
pub struct Family {
    /// The file's name (`tool` for `rules/tool.rs`).
    pub name: &'static str,
    /// Its section title in docs/rules.md.
    pub title: &'static str,
    /// The paragraph under that title: what the family judges.
    pub intro: &'static str,
    /// The rules it can emit, in the order the docs list them.
    pub rules: &'static [&'static Rule],
}

impl Family {
    /// Whether `id` is one of this family's rules.
    pub fn has(&self, id: &str) -> bool {
        self.rules.iter().any(|r| r.id == id)
    }

    /// Appends a finding this family's check code decided. In debug builds
    /// (every test run, over every fixture) it asserts that the rule is in
    /// the family's list: a family emits only its own rules.
    pub(crate) fn push(&self, out: &mut Vec<crate::finding::Finding>, f: crate::finding::Finding) {
        debug_assert!(
            self.has(f.rule),
            "family {} emitted {}, which is not in its list",
            self.name,
            f.rule
        );
        out.push(f);
    }
}

/// Declares a family and its rules: `rules! { family LIST, FAMILY: "name",
/// "Title"; intro: "…"; NAME { id: …, since: …, summary: …, breaks: …, kind: …,
/// severity: …, rerun: [...], example: … } … }`, optionally `security` and
/// `runtime` flags. `LIST` is the family's rules, `FAMILY` its
/// [`Family`] record (add it to [`crate::rules::FAMILIES`]).
#[macro_export]
macro_rules! rules {
    (family $family:ident, $record:ident: $fname:literal, $title:literal;
        intro: $intro:literal;
        $($name:ident { id: $id:literal, since: $since:literal, summary: $summary:literal, breaks: $breaks:literal,
        kind: $kind:ident, severity: $sev:ident, $(security: $sec:literal,)? $(runtime: $rt:literal,)?
        rerun: [$($tag:literal),*], example: $example:literal $(,)? })*) => {
        $(pub const $name: $crate::rule::Rule = $crate::rule::Rule {
            id: $id, since: $since, summary: $summary, breaks: $breaks,
            kind: $crate::rule::Kind::$kind, severity: $crate::rule::Severity::$sev,
            security: false $(|| $sec)?, runtime: false $(|| $rt)?,
            rerun: &[$($tag),*], example: $example,
        };)*
        /// The rules of this family.
        pub const $family: &[&$crate::rule::Rule] = &[$(&$name),*];
        /// This family's record.
        pub const $record: $crate::rule::Family = $crate::rule::Family {
            name: $fname,
            title: $title,
            intro: $intro,
            rules: $family,
        };
    };
}

pub use crate::rules::*;

/// Every rule, family by family.
pub fn all() -> impl Iterator<Item = &'static Rule> {
    crate::rules::FAMILIES
        .iter()
        .flat_map(|f| f.rules.iter().copied())
}

/// Looks a rule up by id.
pub fn by_id(id: &str) -> Option<&'static Rule> {
    all().find(|r| r.id == id)
}

/// The re-run tags and what each asks to re-evaluate.
pub const RERUN_TAGS: [(&str, &str); 10] = [
    ("trajectory", "the full trajectory suite"),
    ("tool-cases", "cases touching that tool"),
    ("assertions", "tool-call assertion cases"),
    ("fault-injection", "fault-injection cases"),
    ("authz", "authorization probes"),
    ("red-team", "the injection / red-team battery"),
    ("selection", "tool-selection and ordering cases"),
    ("budget", "turn-count and tool-budget checks"),
    ("consumers", "cases that consume that output field"),
    ("fallback", "fallback behaviour when a tool is gone"),
];

impl Rule {
    /// The rule's section of docs/rules.md, also `toolpin rules ID` and the
    /// SARIF rule help. `since` is shown in docs/rules.md's table of all
    /// rules, not here.
    pub fn explain(&self) -> String {
        let rerun = if self.rerun.is_empty() {
            "nothing".to_string()
        } else {
            self.rerun
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = format!("### `{}`\n\n{}.\n\n", self.id, capitalize(self.summary));
        out += &format!(
            "- **Kind:** {}{}\n",
            self.kind.name(),
            if self.security { ", security" } else { "" }
        );
        out += &format!("- **Default severity:** {}\n", self.severity.name());
        out += &format!("- **Re-run:** {rerun}\n");
        if self.runtime {
            out += "- **Seen:** at run time (proxy) or by contract tests; reserved, not produced by comparing manifests\n";
        }
        out += &format!("- **Example:** {}\n\n", self.example);
        out += &format!("What it can break: {}\n", self.breaks);
        out
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// docs/rules.md, generated from the registry (a test keeps the file in
/// step with the code).
pub fn markdown() -> String {
    let mut out = String::from(
        "# Drift rules\n\n\
         <!-- Generated from crates/toolpin-drift/src/rules/ by `toolpin rules --markdown`; \
         a test fails when this file is stale. Edit the registry, not this file. -->\n\n\
         Every finding toolpin reports carries one of these ids. They are a public \
         contract: policy (`fail-on`, per-rule levels, `ignore`), eval routing and CI \
         filters are written against them, so an id never changes meaning once released.\n\n\
         One schema diff is judged in two directions. In an **inputSchema** the agent \
         produces arguments, so a change that narrows what is accepted breaks calls. In an \
         **outputSchema** the agent consumes results, so a change that widens what may come \
         back is the dangerous one. Before comparing, local `$ref`s are resolved (moving a \
         subschema into `$defs` is no finding), a `type` array is a union, `const` is a \
         one-value enum, and absent MCP annotations take their spec defaults \
         (readOnlyHint false, destructiveHint true unless read-only, idempotentHint false, \
         openWorldHint true).\n\n\
         Rules come in families, one file each under crates/toolpin-drift/src/rules/ \
         holding the records and the code that decides them. The schema families are \
         named for the keywords they judge, with the inputSchema (`input-…`) and \
         outputSchema (`output-…`) verdicts on a keyword side by side.\n\n\
         Kinds: **structural** (loud: calls error), **semantic** (still validates, meaning \
         moved), **description** (prose the model reads), **behavioural** (the service, not \
         the declaration). **Security** marks a finding that widens what the agent can be \
         talked into.\n\n\
         ## Re-run tags\n\n| tag | re-run |\n|---|---|\n",
    );
    for (tag, what) in RERUN_TAGS {
        out += &format!("| `{tag}` | {what} |\n");
    }
    out += "\n## All rules\n\n| id | kind | severity | security | re-run | since |\n|---|---|---|---|---|---|\n";
    for r in all() {
        out += &format!(
            "| [`{}`](#{}) | {} | {} | {} | {} | {} |\n",
            r.id,
            r.id,
            r.kind.name(),
            r.severity.name(),
            if r.security { "yes" } else { "" },
            r.rerun.join(", "),
            r.since
        );
    }
    for family in crate::rules::FAMILIES {
        let (title, intro, rules) = (family.title, family.intro, family.rules);
        out += &format!("\n## {title}\n\n{intro}\n");
        for r in rules {
            out += "\n";
            out += &r.explain();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_kebab_case_and_documented() {
        let mut seen = std::collections::HashSet::new();
        for rule in all() {
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
