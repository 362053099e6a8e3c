//! Exhaustive comparison of two catalogs: every tool added, removed or
//! changed, and for a changed tool every member that differs, down to the
//! deepest JSON pointer where the two sides part.

use serde_json::Value;
use toolpin_manifest::pointer::escape_token;
use toolpin_manifest::{Catalog, PinnedTool};

use crate::budget::{Budget, Exceeded, MAX_FINDINGS};
use crate::finding::{Comparison, Finding, Fingerprints, Summary, ToolChange};
use crate::prose::ToolNames;
use crate::rename::{match_renames, similarity_parts, Candidate, TOOL_RENAME_THRESHOLD};
use crate::rule::{self, Severity};
use crate::rules::{self, tool};
use crate::schema::{self, Direction};

pub use crate::rules::runtime::SERVER_VERSION_POINTER;
pub use crate::rules::source::CONVERSION_POINTER;

/// Compares the pinned catalog `old` with `new`. Tools are matched by the
/// namespaced name the model sees, whichever server offers them; removed and
/// added tools are then paired as renames where they match closely.
pub fn compare(old: &Catalog, new: &Catalog) -> Comparison {
    let mut findings = Vec::new();
    let mut summary = Summary::default();
    let names = ToolNames::new(new.tools().map(|(n, _, _)| n));
    let Paired {
        removed,
        added,
        mut tools,
    } = pair_tools(old, new, &names, &mut summary, &mut findings);
    renames_and_the_rest(removed, added, &names, &mut summary, &mut findings);
    fold_renames(&mut tools, &findings);
    crate::rules::runtime::check_server_versions(old, new, &mut findings);
    crate::rules::source::check_conversions(old, new, &mut findings);
    crate::rules::server::check_instructions(old, new, &names, &mut findings);
    findings.sort_by(|a, b| {
        a.tool
            .cmp(&b.tool)
            .then(a.pointer.cmp(&b.pointer))
            .then(a.rule.cmp(b.rule))
    });
    summary.findings = findings.len();
    for sev in Severity::ALL {
        summary.by_severity.insert(
            sev.name(),
            findings.iter().filter(|f| f.severity == sev).count(),
        );
    }
    Comparison {
        findings,
        summary,
        fingerprints: Fingerprints {
            before: old.fingerprint().to_hex(),
            after: new.fingerprint().to_hex(),
        },
        tools,
    }
}

/// A tool only one side has: (name, server, definition).
type OneSided<'c> = (&'c str, &'c str, Value);

/// The two catalogs' tools walked side by side by name.
struct Paired<'c> {
    /// Tools only the old catalog has, for rename matching.
    removed: Vec<OneSided<'c>>,
    /// Tools only the new catalog has, for rename matching.
    added: Vec<OneSided<'c>>,
    /// Every tool that is not identical, in name order.
    tools: Vec<ToolChange>,
}

/// Walks both catalogs' tools in name order: a tool on one side only is set
/// aside for rename matching, a tool on both is compared unless the
/// fingerprints say it is identical.
fn pair_tools<'c>(
    old: &'c Catalog,
    new: &'c Catalog,
    names: &ToolNames,
    summary: &mut Summary,
    findings: &mut Vec<Finding>,
) -> Paired<'c> {
    let mut paired = Paired {
        removed: Vec::new(),
        added: Vec::new(),
        tools: Vec::new(),
    };
    let mut old_tools = old.tools().peekable();
    let mut new_tools = new.tools().peekable();
    loop {
        let order = match (old_tools.peek(), new_tools.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(o), Some(n)) => o.0.cmp(n.0),
        };
        let (old_tool, new_tool) = match order {
            std::cmp::Ordering::Less => (old_tools.next(), None),
            std::cmp::Ordering::Greater => (None, new_tools.next()),
            std::cmp::Ordering::Equal => (old_tools.next(), new_tools.next()),
        };
        let hex = |t: &PinnedTool| Some(t.fingerprint.to_hex());
        let change = |server: &str, tool: &str, change, before, after| ToolChange {
            server: server.to_string(),
            tool: tool.to_string(),
            change,
            from: None,
            before,
            after,
        };
        match (old_tool, new_tool) {
            (Some((name, server, tool)), None) => {
                paired.removed.push((name, server, tool.value()));
                paired
                    .tools
                    .push(change(server, name, "removed", hex(tool), None));
            }
            (None, Some((name, server, tool))) => {
                paired.added.push((name, server, tool.value()));
                paired
                    .tools
                    .push(change(server, name, "added", None, hex(tool)));
            }
            // Identical tools short-circuit on their fingerprints.
            (Some((_, _, before)), Some((_, _, after)))
                if before.fingerprint == after.fingerprint =>
            {
                summary.tools_unchanged += 1;
            }
            (Some((name, _, before)), Some((_, server, after))) => {
                summary.tools_changed += 1;
                paired
                    .tools
                    .push(change(server, name, "changed", hex(before), hex(after)));
                let ctx = ToolContext {
                    server,
                    name,
                    names,
                };
                compare_tool(&ctx, &before.value(), &after.value(), findings);
            }
            (None, None) => break,
        }
    }
    paired
}

/// Turns each removed + added pair the rename matcher paired into one
/// `renamed` entry under the new name.
fn fold_renames(tools: &mut Vec<ToolChange>, findings: &[Finding]) {
    for f in findings.iter().filter(|f| f.rule == rule::TOOL_RENAMED.id) {
        let Some(old_name) = f.before.as_ref().and_then(Value::as_str) else {
            continue;
        };
        let old = tools
            .iter()
            .position(|t| t.change == "removed" && t.tool == old_name);
        let new = tools
            .iter()
            .position(|t| t.change == "added" && t.tool == f.tool);
        if let (Some(old), Some(new)) = (old, new) {
            let before = tools[old].before.take();
            let entry = &mut tools[new];
            entry.change = "renamed";
            entry.from = Some(old_name.to_string());
            entry.before = before;
            tools.remove(old);
        }
    }
}

/// Pairs removed × added tools as renames (tool-renamed, then the diff of
/// the pair); the rest are tool-removed and tool-added.
fn renames_and_the_rest(
    removed: Vec<(&str, &str, Value)>,
    added: Vec<(&str, &str, Value)>,
    names: &ToolNames,
    summary: &mut Summary,
    findings: &mut Vec<Finding>,
) {
    let rb: Vec<Candidate> = removed
        .iter()
        .map(|(n, _, v)| Candidate { name: n, value: v })
        .collect();
    let ab: Vec<Candidate> = added
        .iter()
        .map(|(n, _, v)| Candidate { name: n, value: v })
        .collect();
    let pairs = match_renames(&rb, &ab, TOOL_RENAME_THRESHOLD);
    let mut renamed_b = vec![false; removed.len()];
    let mut renamed_a = vec![false; added.len()];
    for (i, j, score) in pairs {
        renamed_b[i] = true;
        renamed_a[j] = true;
        summary.tools_changed += 1;
        let (old_name, _, before) = &removed[i];
        let (new_name, server, after) = &added[j];
        // The parts, so whoever reads the finding can judge the pairing.
        let p = similarity_parts(&rb[i], &ab[j]);
        tool::renamed(server, old_name, new_name, score, &p, findings);
        let mut before = before.clone();
        before["name"] = Value::String(new_name.to_string());
        let ctx = ToolContext {
            server,
            name: new_name,
            names,
        };
        compare_tool(&ctx, &before, after, findings);
    }
    for (i, (name, server, tool)) in removed.iter().enumerate() {
        if renamed_b[i] {
            continue;
        }
        summary.tools_removed += 1;
        tool::removed(server, name, tool, findings);
    }
    for (j, (name, server, tool)) in added.iter().enumerate() {
        if renamed_a[j] {
            continue;
        }
        summary.tools_added += 1;
        tool::added(server, name, tool, findings);
    }
}

/// Who a tool is, for messages and prose cues.
pub(crate) struct ToolContext<'a> {
    pub(crate) server: &'a str,
    pub(crate) name: &'a str,
    pub(crate) names: &'a ToolNames,
}

/// Spec defaults of the MCP annotation hints.
pub(crate) const HINT_DEFAULTS: [(&str, bool); 4] = [
    ("readOnlyHint", false),
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
];

fn hint(tool: &Value, key: &str) -> Option<bool> {
    let default = HINT_DEFAULTS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, d)| *d);
    match tool.pointer(&format!("/annotations/{key}")) {
        None | Some(Value::Null) => default,
        Some(Value::Bool(b)) => Some(*b),
        // An unexpected type: no effective value to compare.
        Some(_) => None,
    }
}

/// `execution` absent, or holding only the spec default.
fn is_default_execution(v: Option<&Value>) -> bool {
    match v {
        None => true,
        Some(Value::Object(m)) => m
            .iter()
            .all(|(k, v)| k == "taskSupport" && v == "forbidden"),
        _ => false,
    }
}

/// The effective value of each hint, in `HINT_DEFAULTS` order. The spec
/// makes destructiveHint meaningful only when readOnlyHint is false: a
/// read-only tool destroys nothing.
pub(crate) fn effective_hints(tool: &Value) -> [Option<bool>; 4] {
    let read_only = hint(tool, "readOnlyHint");
    let destructive = match read_only {
        Some(true) => Some(false),
        _ => hint(tool, "destructiveHint"),
    };
    [
        read_only,
        destructive,
        hint(tool, "idempotentHint"),
        hint(tool, "openWorldHint"),
    ]
}

/// Compares two versions of one tool; every difference becomes a finding,
/// and a tool whose text changed without any rule firing is reported as
/// an equivalent rewrite. A tool whose comparison exceeds the engine's
/// budget (budget.rs) gets one `schema-unanalyzable` finding instead.
fn compare_tool(ctx: &ToolContext, before: &Value, after: &Value, out: &mut Vec<Finding>) {
    let start = out.len();
    let mut budget = Budget::default();
    compare_members(ctx, before, after, &mut budget, out);
    if out.len() - start > MAX_FINDINGS {
        budget.exceed(Exceeded::Findings);
    }
    if let Some(why) = budget.exceeded() {
        // Critical and security (unanalyzable.rs says why).
        out.truncate(start);
        rules::unanalyzable::over_budget(ctx.server, ctx.name, why.describe(), out);
        return;
    }
    // No rule fired. A subschema moved into or out of `$defs` is no finding
    // at all; any other rewrite is reported, without failing by default.
    if out.len() == start && dereferenced(before) != dereferenced(after) {
        rules::TOOL_FAMILY.push(
            out,
            Finding::new(
                &rule::EQUIVALENT_REWRITE,
                ctx.server,
                ctx.name,
                String::new(),
            )
            .message(format!(
                "{}: rewritten without a change in what it accepts or means",
                ctx.name
            ))
            .values(Some(before), Some(after)),
        );
    }
}

/// The findings of [`compare_tool`], member by member.
fn compare_members(
    ctx: &ToolContext,
    before: &Value,
    after: &Value,
    budget: &mut Budget,
    out: &mut Vec<Finding>,
) {
    let writes =
        Capabilities::of(after).writes_anything() || Capabilities::of(before).writes_anything();
    let (server, tool) = (ctx.server, ctx.name);
    let empty = serde_json::Map::new();
    let (mb, ma) = (
        before.as_object().unwrap_or(&empty),
        after.as_object().unwrap_or(&empty),
    );
    let keys: std::collections::BTreeSet<&String> = mb.keys().chain(ma.keys()).collect();
    for key in keys {
        let (vb, va) = (mb.get(key.as_str()), ma.get(key.as_str()));
        if vb == va {
            continue;
        }
        let at = format!("/{}", escape_token(key));
        match key.as_str() {
            "description" => tool::description_changed(ctx, &at, vb, va, out),
            "title" => rules::TOOL_FAMILY.push(
                out,
                Finding::new(&rule::TITLE_CHANGED, server, tool, at.clone())
                    .message(format!("{tool}: title{}", scalar_change(vb, va)))
                    .values(vb, va),
            ),
            "annotations" => crate::rules::annotation::check_annotations(ctx, before, after, out),
            // Spelling out the spec default (`taskSupport: "forbidden"`)
            // changes nothing a client does.
            "execution" if is_default_execution(vb) && is_default_execution(va) => {
                rules::TOOL_FAMILY.push(
                    out,
                    Finding::new(&rule::EQUIVALENT_REWRITE, server, tool, at.clone())
                        .message(format!(
                            "{tool}: execution spelled out with its spec default"
                        ))
                        .values(vb, va),
                )
            }
            "inputSchema" | "outputSchema" => {
                compare_schemas(ctx, key, &at, (vb, va), writes, budget, out)
            }
            _ => member_changed(ctx, &at, vb, va, out),
        }
    }
}

/// `inputSchema` or `outputSchema`: an outputSchema that appeared or went
/// is the tool family's; otherwise the schema walk compares the two (an
/// absent schema as `{}`), judging by the direction the values flow.
fn compare_schemas(
    ctx: &ToolContext,
    key: &str,
    at: &str,
    (vb, va): (Option<&Value>, Option<&Value>),
    writes: bool,
    budget: &mut Budget,
    out: &mut Vec<Finding>,
) {
    let (server, tool) = (ctx.server, ctx.name);
    let direction = if key == "inputSchema" {
        Direction::Input
    } else {
        Direction::Output
    };
    match (vb, va) {
        (None, Some(_)) if key == "outputSchema" => rules::TOOL_FAMILY.push(
            out,
            Finding::new(&rule::OUTPUT_SCHEMA_ADDED, server, tool, at.to_string())
                .message(format!("{tool}: outputSchema added"))
                .values(None, va),
        ),
        (Some(_), None) if key == "outputSchema" => rules::TOOL_FAMILY.push(
            out,
            Finding::new(&rule::OUTPUT_SCHEMA_REMOVED, server, tool, at.to_string())
                .message(format!("{tool}: outputSchema removed"))
                .values(vb, None),
        ),
        _ => {
            let empty_schema = Value::Object(serde_json::Map::new());
            let sctx = schema::Context {
                server,
                tool,
                writes,
                names: ctx.names,
            };
            schema::diff(
                &sctx,
                direction,
                at,
                vb.unwrap_or(&empty_schema),
                va.unwrap_or(&empty_schema),
                budget,
                out,
            );
        }
    }
}

/// A member no rule claims: a field change at each pointer where the two
/// values part.
fn member_changed(
    ctx: &ToolContext,
    at: &str,
    vb: Option<&Value>,
    va: Option<&Value>,
    out: &mut Vec<Finding>,
) {
    let tool = ctx.name;
    let mut diffs = Vec::new();
    diff_values(&mut at.to_string(), vb, va, &mut diffs);
    for (pointer, b, a) in diffs {
        let what = match (b, a) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        };
        rules::TOOL_FAMILY.push(
            out,
            Finding::new(&rule::FIELD_CHANGED, ctx.server, tool, pointer.clone())
                .message(format!("{tool}: {pointer} {what}{}", scalar_change(b, a)))
                .values(b, a),
        );
    }
}

/// The tool with every local `$ref` in its schemas inlined and the
/// definition containers dropped, for telling a `$defs` move from a real
/// rewrite. A reference already being expanded on the current path stays a
/// `$ref` (cycles), and the whole expansion has a size budget: past it the
/// tool is compared as written.
fn dereferenced(tool: &Value) -> Vec<u8> {
    /// Values created by expansion before giving up.
    const BUDGET: usize = 100_000;

    fn inline(
        v: &Value,
        root: &Value,
        stack: &mut Vec<String>,
        budget: &mut usize,
    ) -> Option<Value> {
        *budget = budget.checked_sub(1)?;
        Some(match v {
            Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    if !stack.iter().any(|s| s == r) {
                        if let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p)) {
                            stack.push(r.to_string());
                            let expanded = inline(target, root, stack, budget);
                            stack.pop();
                            let mut merged = match expanded? {
                                Value::Object(t) => t,
                                other => return Some(other),
                            };
                            for (k, x) in m.iter().filter(|(k, _)| k.as_str() != "$ref") {
                                merged.insert(k.clone(), inline(x, root, stack, budget)?);
                            }
                            return Some(Value::Object(merged));
                        }
                    }
                }
                let mut out = serde_json::Map::new();
                for (k, x) in m
                    .iter()
                    .filter(|(k, _)| k.as_str() != "$defs" && k.as_str() != "definitions")
                {
                    out.insert(k.clone(), inline(x, root, stack, budget)?);
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for x in items {
                    out.push(inline(x, root, stack, budget)?);
                }
                Value::Array(out)
            }
            other => other.clone(),
        })
    }
    let mut t = tool.clone();
    let mut budget = BUDGET;
    for key in ["inputSchema", "outputSchema"] {
        if let Some(schema) = tool.get(key) {
            match inline(schema, schema, &mut Vec::new(), &mut budget) {
                Some(expanded) => t[key] = expanded,
                None => return toolpin_manifest::jcs::to_canonical_vec(tool),
            }
        }
    }
    toolpin_manifest::jcs::to_canonical_vec(&t)
}

/// What a tool can do, inferred from its annotations (with spec defaults)
/// and its name and parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    pub write: bool,
    pub delete: bool,
    pub execute: bool,
    pub network: bool,
    pub read_only: bool,
    pub open_world: bool,
}

/// Name words that say a tool writes, deletes, executes or reaches out.
const WRITE_WORDS: [&str; 12] = [
    "write", "create", "update", "set", "put", "post", "send", "edit", "insert", "upload", "move",
    "rename",
];
const DELETE_WORDS: [&str; 5] = ["delete", "remove", "drop", "destroy", "purge"];
const EXECUTE_WORDS: [&str; 7] = [
    "exec", "execute", "run", "shell", "eval", "command", "script",
];
const NETWORK_WORDS: [&str; 6] = ["fetch", "http", "url", "download", "request", "browse"];
/// Parameter names that give a tool reach.
const EXECUTE_PARAMS: [&str; 5] = ["command", "cmd", "script", "code", "sql"];
const NETWORK_PARAMS: [&str; 4] = ["url", "uri", "endpoint", "host"];

impl Capabilities {
    pub fn of(tool: &Value) -> Self {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        let words: Vec<String> = split_words(name);
        let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
        let params: Vec<String> = tool
            .pointer("/inputSchema/properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(|k| k.to_ascii_lowercase()).collect())
            .unwrap_or_default();
        let param = |list: &[&str]| params.iter().any(|p| list.contains(&p.as_str()));
        let read_only = hint(tool, "readOnlyHint") == Some(true);
        let destructive = hint(tool, "destructiveHint") != Some(false);
        let open_world = hint(tool, "openWorldHint") != Some(false);
        let annotated = tool.get("annotations").is_some_and(Value::is_object);
        Self {
            write: !read_only && (has(&WRITE_WORDS) || annotated),
            delete: !read_only && (has(&DELETE_WORDS) || (annotated && destructive && !read_only)),
            execute: has(&EXECUTE_WORDS) || param(&EXECUTE_PARAMS),
            network: has(&NETWORK_WORDS)
                || param(&NETWORK_PARAMS)
                || (annotated && open_world && !read_only),
            read_only,
            open_world,
        }
    }

    pub fn writes_anything(&self) -> bool {
        self.write || self.delete || self.execute
    }

    pub fn any(&self) -> bool {
        self.writes_anything() || self.network
    }

    /// "write, delete and reach the network".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.write {
            parts.push("write");
        }
        if self.delete {
            parts.push("delete");
        }
        if self.execute {
            parts.push("execute");
        }
        if self.network {
            parts.push("reach the network");
        }
        match parts.len() {
            0 => String::new(),
            1 => parts[0].to_string(),
            n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
        }
    }
}

/// Splits snake_case, kebab-case and camelCase into lower-case words.
pub fn split_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

type Diff<'a> = (String, Option<&'a Value>, Option<&'a Value>);

/// Collects the pointers where `a` and `b` differ: objects member by member,
/// arrays of equal length element by element, anything else as a whole.
fn diff_values<'a>(
    path: &mut String,
    a: Option<&'a Value>,
    b: Option<&'a Value>,
    out: &mut Vec<Diff<'a>>,
) {
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_token(key));
                diff_values(path, x.get(key), y.get(key), out);
                path.truncate(len);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (xi, yi)) in x.iter().zip(y).enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                diff_values(path, Some(xi), Some(yi), out);
                path.truncate(len);
            }
        }
        // Numbers compare as the doubles canonical JSON prints, so `1.0`
        // and `1` are the same value here as in the fingerprint.
        (Some(Value::Number(x)), Some(Value::Number(y))) if same_number(x, y) => {}
        (x, y) if x != y => out.push((path.clone(), x, y)),
        _ => {}
    }
}

fn same_number(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    x == y || matches!((x.as_f64(), y.as_f64()), (Some(a), Some(b)) if a == b)
}

/// ` from 50 to 20` when both sides are short scalars, else nothing (the
/// report shows full values).
pub(crate) fn scalar_change(before: Option<&Value>, after: Option<&Value>) -> String {
    let short = |v: Option<&Value>| -> Option<String> {
        match v {
            None => Some(String::new()),
            Some(Value::Array(_) | Value::Object(_)) => None,
            Some(v) => {
                let s = v.to_string();
                (s.chars().count() <= 60).then_some(s)
            }
        }
    };
    match (before, after, short(before), short(after)) {
        (Some(_), Some(_), Some(b), Some(a)) => format!(" from {b} to {a}"),
        (None, Some(_), _, Some(a)) => format!(": {a}"),
        (Some(_), None, Some(b), _) => format!(" (was {b})"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;
    use toolpin_manifest::ServerPin;

    fn catalog(tools: Vec<Value>) -> Catalog {
        let pin = ServerPin::new("s", json!({}), "mcp", tools).expect("pin");
        Catalog::new("default", BTreeMap::from([("s".to_string(), pin)])).expect("catalog")
    }

    fn rules(c: &Comparison) -> Vec<(&str, &str, &str)> {
        c.findings
            .iter()
            .map(|f| (f.rule, f.tool.as_str(), f.pointer.as_str()))
            .collect()
    }

    #[test]
    fn identical_catalogs_are_clean() {
        let a = catalog(vec![json!({"name": "a", "description": "x"})]);
        let c = compare(&a, &a.clone());
        assert!(c.is_clean());
        assert_eq!(c.summary.tools_unchanged, 1);
    }

    #[test]
    fn added_removed_changed() {
        let old = catalog(vec![
            json!({"name": "lookup_order", "description": "Look up an order by ID."}),
            json!({"name": "gone"}),
            json!({"name": "list", "inputSchema": {"properties": {"limit": {"default": 50}}}}),
        ]);
        let new = catalog(vec![
            json!({"name": "lookup_order", "description": "Look up an order by ID. Prefer search_orders when the ID is unknown."}),
            json!({"name": "new_one"}),
            json!({"name": "list", "inputSchema": {"properties": {"limit": {"default": 20}}}, "outputSchema": {}}),
        ]);
        let c = compare(&old, &new);
        assert_eq!(
            rules(&c),
            vec![
                ("tool-removed", "gone", ""),
                (
                    "input-default-changed",
                    "list",
                    "/inputSchema/properties/limit/default"
                ),
                ("output-schema-added", "list", "/outputSchema"),
                ("description-changed", "lookup_order", "/description"),
                ("tool-added", "new_one", ""),
            ]
        );
        assert_eq!(
            c.findings[1].message,
            "list: /inputSchema/properties/limit default 50 → 20"
        );
        assert_eq!(
            (
                c.summary.tools_added,
                c.summary.tools_removed,
                c.summary.tools_changed
            ),
            (1, 1, 2)
        );
        // tool-removed, and the description edit with an imperative.
        assert_eq!(c.summary.by_severity["critical"], 2);
    }

    #[test]
    fn whitespace_only_description_is_low() {
        let old = catalog(vec![json!({"name": "a", "description": "one two"})]);
        let new = catalog(vec![json!({"name": "a", "description": "one  two"})]);
        let c = compare(&old, &new);
        assert_eq!(c.findings[0].severity, Severity::Low);
        assert!(c.findings[0].message.contains("white space only"));
    }

    #[test]
    fn enum_growth_is_one_finding_with_the_whole_list() {
        let old = catalog(vec![
            json!({"name": "a", "inputSchema": {"enum": ["x", "y"]}}),
        ]);
        let new = catalog(vec![
            json!({"name": "a", "inputSchema": {"enum": ["x", "y", "z"]}}),
        ]);
        let c = compare(&old, &new);
        assert_eq!(
            rules(&c),
            vec![("input-enum-value-added", "a", "/inputSchema/enum")]
        );
        assert_eq!(c.findings[0].after, Some(json!(["x", "y", "z"])));
    }

    #[test]
    fn equal_numbers_spelled_differently_are_no_finding() {
        let old = catalog(vec![json!({"name": "a", "x": 1, "d": "one"})]);
        let new = catalog(vec![json!({"name": "a", "x": 1.0, "d": "two"})]);
        assert_eq!(
            rules(&compare(&old, &new)),
            vec![("field-changed", "a", "/d")]
        );
    }

    #[test]
    fn server_version_change_is_reported_not_failed() {
        let with_version = |v: &str| {
            let pin = ServerPin::new("s", json!({}), "mcp", vec![json!({"name": "a"})])
                .expect("pin")
                .with_session(Some(json!({"server_info": {"name": "x", "version": v}})));
            Catalog::new("default", BTreeMap::from([("s".to_string(), pin)])).expect("catalog")
        };
        let c = compare(&with_version("1.0.0"), &with_version("1.1.0"));
        assert_eq!(
            rules(&c),
            vec![("server-version-changed", "", SERVER_VERSION_POINTER)]
        );
        assert_eq!(
            c.findings[0].message,
            "server s: version \"1.0.0\" → \"1.1.0\""
        );
        assert!(!c.fails());
        assert!(!compare(&with_version("1.0.0"), &with_version("1.0.0")).fails());
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        let old = catalog(vec![json!({"name": "a", "_meta": {"a/b": 1}})]);
        let new = catalog(vec![json!({"name": "a", "_meta": {"a/b": 2}})]);
        assert_eq!(
            rules(&compare(&old, &new)),
            vec![("field-changed", "a", "/_meta/a~1b")]
        );
    }
}
