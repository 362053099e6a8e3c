//! `toolpin contract init`: the starter contracts file, rendered from the
//! lockfile as commented TOML in a stable order (tools by `server/tool`,
//! arguments and calls by name).

use std::fmt::Write as _;

use serde_json::{Map, Value};
use toolpin_manifest::text::{controls_as_spaces, toml_key as key, toml_string as string};
use toolpin_manifest::Catalog;

use crate::derive::{self, Derived};
use crate::file::{self, DEFAULT_CONCURRENCY, DEFAULT_REPEATS, DEFAULT_TIMEOUT_MS, FORMAT_VERSION};

/// What `init` wrote, for its summary line.
#[derive(Debug, PartialEq, Eq)]
pub struct Starter {
    /// The file's text.
    pub text: String,
    /// Contracts written active (read-only tools).
    pub active: usize,
    /// Tools left as comments (not read-only).
    pub commented: usize,
    /// Calls and default probes in the active contracts.
    pub calls: usize,
    pub probes: usize,
    /// Placeholder arguments to fill in, in the active contracts.
    pub placeholders: usize,
}

/// A JSON value as an inline TOML value; `None` for what TOML cannot hold
/// (null, integers past i64).
pub(crate) fn value(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if n.is_f64() {
                let f = n.as_f64()?;
                if !f.is_finite() {
                    return None;
                }
                // Debug keeps a `.0` or an exponent, as TOML floats need.
                format!("{f:?}")
            } else {
                return None;
            }
        }
        Value::String(s) => string(s),
        Value::Array(items) => {
            let items: Option<Vec<String>> = items.iter().map(value).collect();
            format!("[{}]", items?.join(", "))
        }
        Value::Object(map) => inline(map)?,
    })
}

/// An inline table, `{ a = 1, b = "x" }` (`{}` when empty).
fn inline(map: &Map<String, Value>) -> Option<String> {
    if map.is_empty() {
        return Some("{}".into());
    }
    let parts: Option<Vec<String>> = map
        .iter()
        .map(|(k, v)| Some(format!("{} = {}", key(k), value(v)?)))
        .collect();
    Some(format!("{{ {} }}", parts?.join(", ")))
}

/// One line of a description, printable, at most 100 characters.
fn summary_line(description: Option<&Value>) -> Option<String> {
    let text = description?.as_str()?;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let clean: String = line.chars().filter(|c| !c.is_control()).collect();
    let short: String = clean.chars().take(100).collect();
    Some(if short.len() < clean.len() {
        format!("{short}…")
    } else {
        short
    })
}

/// The calls of one contract, as TOML lines (without comment marks).
fn contract_lines(name: &str, d: &Derived, full: bool, out: &mut Vec<String>) -> (usize, usize) {
    let table = format!("tools.{}", string(name));
    let mut calls = 0;
    let mut probes = 0;
    out.push(format!("[{table}]"));
    if !full {
        out.push("side_effects = \"allowed\"".into());
    }
    if !d.base.is_empty() {
        out.push(String::new());
        out.push(format!("[{table}.arguments]"));
        for (k, v) in &d.base {
            // Derived values are writable by construction.
            if let Some(v) = value(v) {
                out.push(format!("{} = {v}", key(k)));
            }
        }
    }
    out.push(String::new());
    out.push(format!("[[{table}.calls]]"));
    out.push("name = \"golden\"".into());
    calls += 1;
    if !full {
        return (calls, probes);
    }
    // Call names are unique in a contract: `p=1` for both 1 and "1" is not.
    let mut names = std::collections::BTreeSet::from(["golden".to_string()]);
    for e in &d.enums {
        if e.total > e.values.len() {
            out.push(String::new());
            out.push(format!(
                "# {}: {} enum values; calls for the first {} only.",
                controls_as_spaces(&e.name),
                e.total,
                e.values.len()
            ));
        }
        for v in &e.values {
            let Some(rendered) = value(v) else { continue };
            let label = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push(String::new());
            out.push(format!("[[{table}.calls]]"));
            let base = format!("{}={label}", e.name);
            let mut call = base.clone();
            let mut n = 1;
            while !names.insert(call.clone()) {
                n += 1;
                call = format!("{base} ({n})");
            }
            out.push(format!("name = {}", string(&call)));
            out.push(format!("arguments = {{ {} = {rendered} }}", key(&e.name)));
            calls += 1;
        }
    }
    for (param, default) in &d.defaults {
        let Some(rendered) = value(default) else {
            continue;
        };
        out.push(String::new());
        let shown = controls_as_spaces(param);
        out.push(format!(
            "# Without {shown}, and with {shown} = {} passed explicitly: the same result shape and size.",
            controls_as_spaces(&rendered)
        ));
        out.push(format!("[[{table}.default_probes]]"));
        out.push(format!("parameter = {}", string(param)));
        out.push(format!("default = {rendered}"));
        probes += 1;
    }
    (calls, probes)
}

/// The starter contracts for every tool of `catalog`; `lockfile` names it
/// in the header.
pub fn init(catalog: &Catalog, lockfile: &str) -> Starter {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# toolpin contracts: golden calls against the live tools, derived from {lockfile}."
    );
    text.push_str(concat!(
        "#\n",
        "# Written by `toolpin contract init`. Edit it by hand and commit it;\n",
        "# `toolpin contract check` validates it against the lockfile. The format is\n",
        "# in docs/contracts.md.\n",
        "#\n",
        "# `toolpin contract record` makes these calls and keeps what they did in\n",
        "# the behaviour snapshot; `toolpin contract run` makes them again and\n",
        "# reports what moved, and every `expect` assertion that fails.\n",
        "#\n",
        "# Safety: only tools whose pinned annotations say readOnlyHint: true, and\n",
        "# not also destructiveHint: true, get contracts below. Every other tool is\n",
        "# left as a commented-out contract: calling it may change something, so it\n",
        "# needs side_effects = \"allowed\" and arguments you chose (against a\n",
        "# sandbox tenant, through --env).\n",
        "#\n",
        "# Each contract's [arguments] are what every call starts from; a call's own\n",
        "# `arguments` are added on top. Replace each \"<FILL IN: …>\" with a real\n",
        "# value: calls holding one are refused until you do. Assertions go in a\n",
        "# call's `expect` table (docs/contracts.md).\n",
        "\n",
    ));
    let _ = writeln!(text, "version = {FORMAT_VERSION}");
    text.push('\n');
    text.push_str("[defaults]\n");
    let _ = writeln!(text, "timeout_ms = {DEFAULT_TIMEOUT_MS}    # per call");
    let _ = writeln!(
        text,
        "concurrency = {DEFAULT_CONCURRENCY}        # servers called at once"
    );
    let _ = writeln!(
        text,
        "repeats = {DEFAULT_REPEATS}            # times each call is made (latency needs more)"
    );

    let mut starter = Starter {
        text: String::new(),
        active: 0,
        commented: 0,
        calls: 0,
        probes: 0,
        placeholders: 0,
    };
    for (namespaced, server, pinned) in catalog.tools() {
        let name = format!("{server}/{namespaced}");
        let tool = pinned.value();
        let d = derive::derive(tool.get("inputSchema"));
        let full = file::read_only(&tool);
        text.push('\n');
        let shown = controls_as_spaces(&name);
        let _ = writeln!(
            text,
            "# ── {shown} {}",
            "─".repeat(60usize.saturating_sub(shown.chars().count()))
        );
        if let Some(line) = summary_line(tool.get("description")) {
            let _ = writeln!(text, "# {line}");
        }
        for note in &d.notes {
            let _ = writeln!(text, "# Note: {}", controls_as_spaces(note));
        }
        let mut lines = Vec::new();
        let (calls, probes) = contract_lines(&name, &d, full, &mut lines);
        if full {
            starter.active += 1;
            starter.calls += calls;
            starter.probes += probes;
            starter.placeholders += d.placeholders.len();
            for line in lines {
                text.push_str(&line);
                text.push('\n');
            }
        } else {
            starter.commented += 1;
            let why = file::not_read_only(&tool).unwrap_or_default();
            let _ = writeln!(text, "# Not called: {}.", controls_as_spaces(&why));
            text.push_str(concat!(
                "# To call it anyway, uncomment this contract and give the arguments yourself.\n",
                "#\n",
            ));
            for line in lines {
                if line.is_empty() {
                    text.push_str("#\n");
                } else {
                    let _ = writeln!(text, "# {line}");
                }
            }
        }
    }
    starter.text = text;
    starter
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Contracts;
    use std::path::Path;

    fn refund() -> Catalog {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/refund/toolpin.lock");
        toolpin_manifest::lockfile::read(&path).expect("the refund lockfile")
    }

    #[test]
    fn refund_starter_contracts() {
        let catalog = refund();
        let starter = init(&catalog, "toolpin.lock");
        let t = &starter.text;
        assert_eq!(
            (
                starter.active,
                starter.commented,
                starter.calls,
                starter.probes,
                starter.placeholders
            ),
            (2, 2, 6, 1, 1),
            "{t}"
        );
        let search = concat!(
            "[tools.\"orders/orders__search_orders\"]\n",
            "\n",
            "[tools.\"orders/orders__search_orders\".arguments]\n",
            "page_size = 50\n",
            "status = \"open\"\n",
            "\n",
            "[[tools.\"orders/orders__search_orders\".calls]]\n",
            "name = \"golden\"\n",
            "\n",
            "[[tools.\"orders/orders__search_orders\".calls]]\n",
            "name = \"status=open\"\n",
            "arguments = { status = \"open\" }\n",
        );
        assert!(t.contains(search), "{t}");
        for status in ["shipped", "delivered", "refunded"] {
            assert!(
                t.contains(&format!(
                    "name = \"status={status}\"\narguments = {{ status = \"{status}\" }}\n"
                )),
                "{t}"
            );
        }
        assert!(
            t.contains(concat!(
                "[[tools.\"orders/orders__search_orders\".default_probes]]\n",
                "parameter = \"page_size\"\n",
                "default = 50\n"
            )),
            "{t}"
        );
        assert!(
            t.contains(concat!(
                "[tools.\"orders/orders__lookup_order\".arguments]\n",
                "order_id = \"<FILL IN: order_id (string)>\"\n",
            )),
            "{t}"
        );
        // Not read-only: commented out, with side_effects = "allowed".
        assert!(
            t.contains("# [tools.\"orders/orders__refund_order\"]\n# side_effects = \"allowed\"\n"),
            "{t}"
        );
        assert!(t.contains("# [tools.\"billing/get_invoice\"]\n"), "{t}");
        assert!(
            !t.contains("\n[tools.\"orders/orders__refund_order\"]"),
            "{t}"
        );
        assert!(
            !t.contains("reason=damaged"),
            "no enum calls for a tool that is not called: {t}"
        );
        // Stable: the same lockfile gives the same bytes.
        assert_eq!(init(&catalog, "toolpin.lock").text, *t);

        // It parses and validates; the placeholder makes it not ready.
        let parsed = Contracts::parse(t, "toolpin.contracts.toml").expect("parses");
        let summary = parsed.validate(&catalog, "toolpin.lock").expect("valid");
        assert_eq!(
            (summary.contracts, summary.calls, summary.probes),
            (2, 6, 1)
        );
        assert_eq!(
            summary.placeholders,
            vec![(
                "orders/orders__lookup_order".to_string(),
                "order_id".to_string()
            )]
        );
        let err = parsed.check_ready().expect_err("placeholder").to_string();
        let line = t
            .lines()
            .position(|l| l == "[tools.\"orders/orders__lookup_order\".arguments]")
            .expect("table")
            + 2;
        assert!(
            err.starts_with(&format!("toolpin.contracts.toml:{line}:1: tools.\"orders/orders__lookup_order\": argument `order_id` is still a placeholder")),
            "{err}"
        );
        // Filled in, it is ready.
        let filled = t.replace("\"<FILL IN: order_id (string)>\"", "\"ORD-1\"");
        Contracts::parse(&filled, "c.toml")
            .expect("parses")
            .check_ready()
            .expect("ready");
        // The commented-out contracts, uncommented, validate as written.
        let uncommented: String = t
            .lines()
            .map(|l| {
                l.strip_prefix("# ")
                    .filter(|r| {
                        r.starts_with('[')
                            || r.split_once(" = ").is_some_and(|(k, _)| {
                                k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            })
                    })
                    .unwrap_or(l)
            })
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = Contracts::parse(&uncommented, "u.toml").expect("uncommented parses");
        assert_eq!(parsed.tools.len(), 4);
        parsed
            .validate(&catalog, "toolpin.lock")
            .expect("uncommented validates");
    }

    #[test]
    fn any_schema_gives_a_file_that_parses_and_validates() {
        use serde_json::json;
        let schemas = [
            json!({"type": "object", "properties": {"k": {"enum": [1, "1", 1.5, true, [1], {"a b": "c\"d"}, null, "golden"]}}}),
            json!({"type": "object", "properties": {"k": {"enum": ["x", "x"]}, "k=x": {"enum": ["x"]}}}),
            json!({"type": "object", "properties": {"we ird\n\"key": {"default": "a\u{1}b"}}, "required": ["req \"q\""]}),
            json!({"properties": {"a": {"$ref": "#/properties/a"}, "b": {"default": 18446744073709551615u64}}, "required": ["a", "b"]}),
            json!("not a schema"),
            json!({"properties": {"d": {"default": {"nested": [1, {"x": 2.0}]}}}}),
        ];
        let tools: Vec<Value> = schemas
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "name": format!("t{i} odd/\"name\""),
                    "description": "Line one\u{7}\nline two",
                    "inputSchema": s,
                    "annotations": {"readOnlyHint": true}
                })
            })
            .collect();
        let pin = toolpin_manifest::ServerPin::new("srv", json!({}), "mcp", tools).expect("pin");
        let catalog = Catalog::new(
            "default",
            std::collections::BTreeMap::from([("srv".to_string(), pin)]),
        )
        .expect("catalog");
        let starter = init(&catalog, "toolpin.lock");
        let parsed = Contracts::parse(&starter.text, "c.toml")
            .unwrap_or_else(|e| panic!("{e}\n{}", starter.text));
        let summary = parsed
            .validate(&catalog, "toolpin.lock")
            .unwrap_or_else(|e| panic!("{e}\n{}", starter.text));
        assert_eq!(summary.contracts, schemas.len());
        assert_eq!(
            (starter.calls, starter.probes),
            (summary.calls, summary.probes)
        );
        // The first tool: golden and one call per writable enum value,
        // "k=1" twice made unique, the null left out.
        let names: Vec<&str> = parsed.tools[0]
            .calls
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "golden",
                "k=1",
                "k=1 (2)",
                "k=1.5",
                "k=true",
                "k=[1]",
                "k={\"a b\":\"c\\\"d\"}",
                "k=golden"
            ]
        );
        assert_eq!(parsed.tools[0].calls[2].arguments["k"], json!("1"));
        let d = &parsed.tools[5].default_probes[0];
        assert_eq!(d.default, json!({"nested": [1, {"x": 2.0}]}));
    }

    #[test]
    fn values_render_as_toml() {
        use serde_json::json;
        let v = json!({"a b": [1, 2.5, true, "q\"\n"], "n": {"x": 1e100}, "e": {}});
        let text = format!("k = {}", value(&v).expect("writable"));
        let back: toml::Table = toml::from_str(&text).expect("valid TOML");
        let back: Value = serde_json::to_value(&back["k"]).expect("json");
        assert_eq!(back, v);
        assert_eq!(value(&json!(null)), None);
        assert_eq!(value(&json!([1, null])), None);
        assert_eq!(value(&json!(18446744073709551615u64)), None);
        assert_eq!(value(&json!(1.0)), Some("1.0".into()));
    }
}
