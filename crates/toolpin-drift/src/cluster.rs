//! Clusters: one change repeated across findings, reported once.
//!
//! OpenAPI conversion inlines shared components, so one component that
//! changed upstream (GitHub's `repository` gaining three
//! `secret_scanning_*` fields) comes back as the same finding in every
//! operation that returns it: dozens of findings that are one change. Two
//! findings are the same change when they have the same rule, the same
//! before and after values, and the same *anchor*: the end of the pointer
//! from the second-to-last named property on (`…/license/properties/url/type`),
//! so the change to one field of one named object is one cluster wherever
//! that object is embedded. A pointer through fewer than two named
//! properties is its own anchor (`/inputSchema/properties/limit/default`):
//! those cluster only at the very same place. Severity plays no part (a
//! tool that writes raises some), so a cluster's severity is its most
//! severe member's.
//!
//! Clusters are a pure function of the findings, computed when a report is
//! rendered (after the policy has set levels and dropped rules), so they
//! are never out of step with what is shown. A cluster's id is a digest of
//! what makes it one change: the same change has the same id in every run
//! and every report.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use serde::Serialize;
use serde_json::Value;
use toolpin_manifest::{jcs, Fingerprint};

use crate::finding::Finding;
use crate::rule::Severity;

/// Hex digits of a cluster id after its `c` (48 bits: unique among the
/// clusters of any real report).
const ID_LEN: usize = 12;

/// Keywords whose next pointer token is a name chosen by the schema's
/// author, not a keyword.
const NAMING_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// One change repeated in two or more findings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cluster<'c> {
    /// `c` and 12 hex digits, stable across runs.
    pub id: String,
    pub rule: &'static str,
    /// The anchor all members share: `…/` and the pointer's end, or a whole
    /// pointer.
    pub pointer: String,
    /// The most severe member's.
    pub severity: Severity,
    pub before: Option<&'c Value>,
    pub after: Option<&'c Value>,
    /// Members, as indices into the comparison's findings, in order.
    pub findings: Vec<usize>,
    /// Distinct tools (server and tool) among the members.
    pub tools: usize,
}

/// The clusters among `findings`, most severe first, then largest, then by
/// id. A finding is in at most one cluster.
pub fn clusters(findings: &[Finding]) -> Vec<Cluster<'_>> {
    // Grouped by a hash of (rule, anchor, before, after), each bucket split
    // into classes by real equality, so a collision never merges two
    // changes. Hashing the values in place is what keeps this within 20 %
    // of the diff itself (issue 15); serializing every value canonically
    // first cost 28 % on the 12,000-tool bench.
    let mut buckets: HashMap<u64, Vec<Vec<usize>>> = HashMap::new();
    let state = std::collections::hash_map::RandomState::new();
    for (i, f) in findings.iter().enumerate() {
        // A contract finding without values (a failed assertion) says what
        // changed only in its message: two of them are not known to be
        // the same change.
        if f.call.is_some() && f.before.is_none() && f.after.is_none() {
            continue;
        }
        let anchor_of = anchor(&f.pointer);
        let mut h = state.build_hasher();
        f.rule.hash(&mut h);
        anchor_of.hash(&mut h);
        for side in [&f.before, &f.after] {
            match side {
                Some(v) => hash_value(v, &mut h),
                None => h.write_u8(0xFF),
            }
        }
        let classes = buckets.entry(h.finish()).or_default();
        let same = |other: &Finding| {
            other.rule == f.rule
                && anchor(&other.pointer) == anchor_of
                && other.before == f.before
                && other.after == f.after
        };
        match classes.iter_mut().find(|c| same(&findings[c[0]])) {
            Some(class) => class.push(i),
            None => classes.push(vec![i]),
        }
    }
    let mut key = Vec::with_capacity(256);
    let mut out: Vec<Cluster> = buckets
        .into_values()
        .flatten()
        .filter(|members| members.len() > 1)
        .map(|members| {
            let first = &findings[members[0]];
            let mut tools: Vec<(&str, &str)> = members
                .iter()
                .map(|&i| (findings[i].server.as_str(), findings[i].tool.as_str()))
                .collect();
            tools.sort_unstable();
            tools.dedup();
            let pointer = anchor(&first.pointer);
            let pointer = if pointer.len() == first.pointer.len() {
                pointer.to_string()
            } else {
                format!("…/{pointer}")
            };
            // The id: a digest of rule, anchor and canonical values, each
            // ended by a byte that cannot occur inside (0xFF is never in
            // UTF-8), so it is the same in every run.
            key.clear();
            key.extend_from_slice(first.rule.as_bytes());
            key.push(0xFF);
            key.extend_from_slice(anchor(&first.pointer).as_bytes());
            key.push(0xFF);
            for side in [&first.before, &first.after] {
                if let Some(v) = side {
                    jcs::write_canonical(v, &mut key);
                }
                key.push(0xFF);
            }
            Cluster {
                id: format!("c{}", &Fingerprint::of_bytes(&key).to_hex()[..ID_LEN]),
                rule: first.rule,
                pointer,
                severity: members
                    .iter()
                    .map(|&i| findings[i].severity)
                    .min()
                    .unwrap_or(first.severity),
                before: first.before.as_ref(),
                after: first.after.as_ref(),
                tools: tools.len(),
                findings: members,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(b.findings.len().cmp(&a.findings.len()))
            .then(a.id.cmp(&b.id))
    });
    out
}

/// Feeds a JSON value to `h`, tagged by type, objects in their (sorted)
/// key order: equal values hash equally.
fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => {
            h.write_u8(1);
            b.hash(h);
        }
        Value::Number(n) => {
            h.write_u8(2);
            if let Some(i) = n.as_i64() {
                i.hash(h);
            } else if let Some(u) = n.as_u64() {
                u.hash(h);
            } else if let Some(f) = n.as_f64() {
                f.to_bits().hash(h);
            }
        }
        Value::String(s) => {
            h.write_u8(3);
            s.hash(h);
        }
        Value::Array(items) => {
            h.write_u8(4);
            h.write_usize(items.len());
            for item in items {
                hash_value(item, h);
            }
        }
        Value::Object(members) => {
            h.write_u8(5);
            h.write_usize(members.len());
            for (k, item) in members {
                k.hash(h);
                hash_value(item, h);
            }
        }
    }
}

/// For each finding, the index of its cluster in `clusters` (`None` when
/// it is in none).
pub fn membership(findings: usize, clusters: &[Cluster]) -> Vec<Option<usize>> {
    let mut of = vec![None; findings];
    for (c, cluster) in clusters.iter().enumerate() {
        for &i in &cluster.findings {
            if let Some(slot) = of.get_mut(i) {
                *slot = Some(c);
            }
        }
    }
    of
}

/// The end of `pointer` from its second-to-last named property on (a
/// suffix of `pointer`, without the leading `/`), or all of it when it
/// passes through fewer than two.
pub fn anchor(pointer: &str) -> &str {
    // One pass, no allocation: where the last two named tokens start.
    let (mut second_to_last, mut last) = (None, None);
    let mut expect_name = false;
    let mut offset = 0;
    for (n, token) in pointer.split('/').enumerate() {
        let start = offset;
        offset += token.len() + 1;
        if n == 0 {
            continue; // what precedes the leading `/`
        }
        if expect_name {
            second_to_last = last;
            last = Some(start);
            expect_name = false;
        } else if NAMING_KEYWORDS.contains(&token) {
            expect_name = true;
        }
    }
    match second_to_last {
        Some(start) => &pointer[start..],
        None => pointer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Rules by id: a rule's constant is named only in its family's file.
    const WIDENED: &str = "output-type-widened";
    const ADDED: &str = "output-property-added";
    const DEFAULT: &str = "input-default-changed";

    fn finding(rule: &str, tool: &str, pointer: &str, after: Value) -> Finding {
        let rule = crate::rule::by_id(rule).expect("a registered rule");
        Finding::new(rule, "gh", tool, pointer.to_string()).values(None, Some(&after))
    }

    #[test]
    fn anchors_start_at_the_second_to_last_named_property() {
        assert_eq!(
            anchor("/outputSchema/properties/repository/properties/license/properties/url/type"),
            "license/properties/url/type"
        );
        assert_eq!(
            anchor("/outputSchema/properties/result/items/properties/payload/oneOf/3/properties/issue/properties/type/description"),
            "issue/properties/type/description"
        );
        // A property named like a keyword is a name.
        assert_eq!(
            anchor("/inputSchema/properties/properties/properties/items"),
            "properties/properties/items"
        );
        for whole in ["", "/description", "/inputSchema/properties/limit/default"] {
            assert_eq!(anchor(whole), whole);
        }
    }

    #[test]
    fn the_same_change_in_many_tools_is_one_cluster() {
        let widened = json!(["string", "null"]);
        let findings = vec![
            finding(
                WIDENED,
                "a",
                "/outputSchema/properties/license/properties/url/type",
                widened.clone(),
            ),
            finding(ADDED, "a", "/outputSchema/properties/x", json!({})),
            finding(
                WIDENED,
                "b",
                "/outputSchema/properties/repo/properties/license/properties/url/type",
                widened.clone(),
            ),
            // Same place, another change: not a member.
            finding(
                WIDENED,
                "c",
                "/outputSchema/properties/license/properties/url/type",
                json!(["string", "integer"]),
            ),
            finding(
                WIDENED,
                "d",
                "/outputSchema/items/properties/license/properties/url/type",
                widened,
            ),
        ];
        let found = clusters(&findings);
        assert_eq!(found.len(), 1);
        let c = &found[0];
        assert_eq!(c.findings, vec![0, 2, 4]);
        assert_eq!(c.tools, 3);
        assert_eq!(c.pointer, "…/license/properties/url/type");
        assert!(c.id.starts_with('c') && c.id.len() == 1 + ID_LEN);
        assert_eq!(
            membership(findings.len(), &found),
            vec![Some(0), None, Some(0), None, Some(0)]
        );
        // The id depends on the change, not on which tools show it.
        assert_eq!(clusters(&findings[2..]).first().map(|c| &c.id), Some(&c.id));
    }

    #[test]
    fn shallow_pointers_cluster_only_at_the_same_place() {
        let findings = vec![
            finding(
                DEFAULT,
                "a",
                "/inputSchema/properties/limit/default",
                json!(20),
            ),
            finding(
                DEFAULT,
                "b",
                "/inputSchema/properties/page_size/default",
                json!(20),
            ),
            finding(
                DEFAULT,
                "c",
                "/inputSchema/properties/limit/default",
                json!(20),
            ),
        ];
        let found = clusters(&findings);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].findings, vec![0, 2]);
        assert_eq!(found[0].pointer, "/inputSchema/properties/limit/default");
    }

    #[test]
    fn severity_is_the_worst_members_and_orders_clusters() {
        let mut findings = vec![
            finding(ADDED, "a", "/outputSchema/properties/x", json!({})),
            finding(ADDED, "b", "/outputSchema/properties/x", json!({})),
            finding(ADDED, "c", "/outputSchema/properties/x", json!({})),
            finding(WIDENED, "a", "/outputSchema/properties/y/type", json!("x")),
            finding(WIDENED, "b", "/outputSchema/properties/y/type", json!("x")),
        ];
        findings[1] = findings[1].clone().severity(Severity::Critical);
        let found = clusters(&findings);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].severity, Severity::Critical);
        assert_eq!(found[0].findings, vec![0, 1, 2]);
    }
}
