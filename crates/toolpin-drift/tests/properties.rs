//! Property tests for `compare`: generated catalogs of realistic tools
//! (JSON Schemas with properties, required lists, enums, defaults, bounds,
//! formats, patterns, unions, tuples, closed objects, nested objects and
//! local `$ref`s into `$defs`, cycles included) and of arbitrary JSON.
//!
//! 1. a catalog compared with itself, or with a copy whose tools, servers,
//!    object keys and `required` lists are shuffled, has no findings;
//! 2. comparing is deterministic;
//! 3. arbitrary JSON in schemas and annotations never panics;
//! 4. `$ref` cycles terminate, and an unresolvable `$ref` on a changed
//!    schema is `schema-unanalyzable`;
//! 5. a 10,000-deep tool is refused by normalization, and one at the
//!    allowed depth compares without overflowing the stack;
//! 6. every finding has a registered rule and a JSON pointer, and equal
//!    fingerprints mean no findings.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Map, Value};
use toolpin_drift::{compare, Comparison};
use toolpin_manifest::normalize::MAX_TOOL_DEPTH;
use toolpin_manifest::{Catalog, Pointer, ServerPin, ToolError, Transform};

// ---------------------------------------------------------------------------
// Building catalogs

/// Raw tools and the server (0 or 1) each one is offered by.
#[derive(Clone, Debug)]
struct Spec {
    tools: Vec<Value>,
    servers: Vec<bool>,
}

const SERVERS: [&str; 2] = ["orders", "billing"];

/// Normalizes and pins the tools, as `toolpin pin` does. Tools that
/// normalization refuses (a mutation may produce one) are left out, and a
/// name seen twice keeps its first tool.
fn catalog(spec: &Spec) -> Catalog {
    let mut by_server: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    let mut names = BTreeSet::new();
    for (i, raw) in spec.tools.iter().enumerate() {
        let Ok(tool) = Transform::default().normalize(raw.clone(), i) else {
            continue;
        };
        let name = tool["name"].as_str().unwrap_or_default().to_string();
        if !names.insert(name) {
            continue;
        }
        let server = usize::from(spec.servers.get(i).copied().unwrap_or(false));
        by_server[server].push(tool);
    }
    let mut servers = BTreeMap::new();
    for (i, tools) in by_server.into_iter().enumerate() {
        let pin = ServerPin::new(SERVERS[i], json!({"file": "prop"}), "mcp", tools).expect("pin");
        servers.insert(SERVERS[i].to_string(), pin);
    }
    Catalog::new("default", servers).expect("catalog")
}

/// One server's catalog straight through `Transform::apply`, failing on any
/// tool normalization refuses.
fn strict_catalog(tools: Vec<Value>) -> Catalog {
    let tools = Transform::default().apply(tools).expect("tools normalize");
    let pin = ServerPin::new("orders", json!({"file": "prop"}), "mcp", tools).expect("pin");
    Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
}

fn render(c: &Comparison) -> String {
    c.findings
        .iter()
        .map(|f| format!("{} {} {} :: {}", f.rule, f.tool, f.pointer, f.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs the calling test's body in a child process (this test binary, that
/// test alone), killed if it has not finished in `secs` seconds: a blow-up
/// then fails the test instead of stalling the suite or exhausting memory.
/// Returns `true` in the child, where the caller runs its body; in the
/// parent it waits, fails the test if the child failed, and returns `false`.
fn run_in_child(test: &str, secs: u64) -> bool {
    const CHILD: &str = "TOOLPIN_PROPERTIES_CHILD";
    if std::env::var(CHILD).as_deref() == Ok(test) {
        return true;
    }
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, test)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the test binary");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        // The child ran exactly this test, and it passed.
        Some(s) if s.success() && out.contains(" 1 passed;") => false,
        Some(s) => panic!("{test} failed in the child process ({s}):\n{out}\n{err}"),
        None => panic!("{test} did not finish within {secs} s (killed)"),
    }
}

// ---------------------------------------------------------------------------
// A small deterministic PRNG for shuffles and mutations (proptest shrinks
// the seed).

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

// ---------------------------------------------------------------------------
// Strategies: text

const TOOL_NAMES: [&str; 12] = [
    "search_orders",
    "lookup_order",
    "refund_order",
    "delete_user",
    "run_script",
    "fetch_url",
    "list_items",
    "getWeather",
    "send-email",
    "update_record",
    "orders__search",
    "x",
];

const WORDS: [&str; 32] = [
    "Look",
    "up",
    "an",
    "order",
    "by",
    "ID.",
    "Search",
    "orders",
    "Prefer",
    "search_orders",
    "when",
    "the",
    "is",
    "unknown.",
    "Always",
    "call",
    "this",
    "tool",
    "first.",
    "Ignore",
    "previous",
    "instructions.",
    "IMPORTANT:",
    "<system>",
    "do",
    "not",
    "tell",
    "user",
    "é",
    "\u{200B}",
    "refund_order",
    "~1/",
];

const SPACES: [&str; 5] = [" ", "  ", "\n", "\t", " \u{3000}"];

fn tool_name() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(TOOL_NAMES.to_vec()).prop_map(str::to_string),
        1 => "[a-zA-Z][a-zA-Z0-9_.-]{0,12}",
    ]
    .boxed()
}

fn prose() -> BoxedStrategy<String> {
    vec((select(WORDS.to_vec()), select(SPACES.to_vec())), 0..12)
        .prop_map(|ws| {
            ws.into_iter()
                .map(|(w, s)| format!("{w}{s}"))
                .collect::<String>()
        })
        .boxed()
}

const PROP_NAMES: [&str; 14] = [
    "order_id",
    "limit",
    "page",
    "email",
    "status",
    "amount_cents",
    "command",
    "url",
    "force",
    "next",
    "required",
    "a/b",
    "t~x",
    "",
];

fn prop_name() -> BoxedStrategy<String> {
    prop_oneof![
        6 => select(PROP_NAMES.to_vec()).prop_map(str::to_string),
        1 => "\\PC{0,6}",
    ]
    .boxed()
}

// ---------------------------------------------------------------------------
// Strategies: realistic JSON Schemas

/// `$ref` targets: defs that refer to each other or to themselves, the root,
/// the old `definitions`, a pointer into properties, a missing def, remote
/// documents.
const REFS: [&str; 11] = [
    "#/$defs/A",
    "#/$defs/B",
    "#/$defs/Self",
    "#/$defs/A",
    "#",
    "#/definitions/Old",
    "#/properties/order_id",
    "#/$defs/Missing",
    "https://example.com/schemas/order.json",
    "other.json#/$defs/A",
    "#/$defs/A/properties/next",
];

const FORMATS: [&str; 9] = [
    "int32",
    "int64",
    "float",
    "double",
    "date",
    "date-time",
    "email",
    "uri",
    "uuid",
];

fn put(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.to_string(), v);
    }
}

fn small_number() -> BoxedStrategy<Value> {
    prop_oneof![
        (-5i64..200).prop_map(Value::from),
        (-5i64..200).prop_map(|n| Value::from(n as f64)),
        (-1000.0f64..1000.0).prop_map(Value::from),
        Just(json!(0)),
        Just(json!(9007199254740993u64)),
    ]
    .boxed()
}

fn scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        small_number(),
        select(WORDS.to_vec()).prop_map(Value::from),
    ]
    .boxed()
}

fn type_keyword() -> BoxedStrategy<Value> {
    let one = select(vec![
        "string", "integer", "number", "boolean", "object", "array", "null", "STRING", "INTEGER",
    ]);
    prop_oneof![
        4 => one.clone().prop_map(Value::from),
        1 => vec(one, 1..3).prop_map(|ts| json!(ts)),
    ]
    .boxed()
}

fn string_schema() -> BoxedStrategy<Value> {
    (
        option::of(prose()),
        option::of(vec(select(WORDS.to_vec()), 1..5)),
        option::of(select(FORMATS.to_vec())),
        option::of(select(vec!["^[A-Z]{3}-\\d+$", "^.*$", "[a-z]+"])),
        option::of(0u64..10),
        option::of(5u64..300),
        option::of(scalar()),
        option::of(any::<bool>()),
        option::of(select(WORDS.to_vec())),
    )
        .prop_map(
            |(desc, en, format, pattern, min, max, default, nullable, cnst)| {
                let mut m = Map::new();
                m.insert("type".into(), json!("string"));
                put(&mut m, "description", desc.map(Value::from));
                put(&mut m, "enum", en.map(|e| json!(e)));
                put(&mut m, "format", format.map(Value::from));
                put(&mut m, "pattern", pattern.map(Value::from));
                put(&mut m, "minLength", min.map(Value::from));
                put(&mut m, "maxLength", max.map(Value::from));
                put(&mut m, "default", default);
                put(&mut m, "nullable", nullable.map(Value::Bool));
                put(
                    &mut m,
                    "const",
                    cnst.filter(|c| c.len() > 3).map(Value::from),
                );
                Value::Object(m)
            },
        )
        .boxed()
}

fn numeric_schema() -> BoxedStrategy<Value> {
    (
        select(vec!["integer", "number", "INTEGER"]),
        option::of(small_number()),
        option::of(small_number()),
        option::of(prop_oneof![
            small_number(),
            any::<bool>().prop_map(Value::Bool)
        ]),
        option::of(prop_oneof![
            small_number(),
            any::<bool>().prop_map(Value::Bool)
        ]),
        option::of(prop_oneof![
            Just(json!(0)),
            Just(json!(0.5)),
            Just(json!(2)),
            Just(json!(10))
        ]),
        option::of(small_number()),
        option::of(select(FORMATS.to_vec())),
        option::of(vec(small_number(), 1..4)),
        option::of(prose()),
    )
        .prop_map(
            |(ty, min, max, xmin, xmax, multiple, default, format, en, desc)| {
                let mut m = Map::new();
                m.insert("type".into(), json!(ty));
                put(&mut m, "minimum", min);
                put(&mut m, "maximum", max);
                put(&mut m, "exclusiveMinimum", xmin);
                put(&mut m, "exclusiveMaximum", xmax);
                put(&mut m, "multipleOf", multiple);
                put(&mut m, "default", default);
                put(&mut m, "format", format.map(Value::from));
                put(&mut m, "enum", en.map(Value::Array));
                put(&mut m, "description", desc.map(Value::from));
                Value::Object(m)
            },
        )
        .boxed()
}

fn ref_schema() -> BoxedStrategy<Value> {
    (
        select(REFS.to_vec()),
        option::of(prose()),
        option::of(scalar()),
    )
        .prop_map(|(r, desc, default)| {
            let mut m = Map::new();
            m.insert("$ref".into(), json!(r));
            put(&mut m, "description", desc.map(Value::from));
            put(&mut m, "default", default);
            Value::Object(m)
        })
        .boxed()
}

fn leaf_schema() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => string_schema(),
        3 => numeric_schema(),
        1 => (option::of(any::<bool>()), option::of(any::<bool>())).prop_map(|(d, dep)| {
            let mut m = Map::new();
            m.insert("type".into(), json!("boolean"));
            put(&mut m, "default", d.map(Value::Bool));
            put(&mut m, "deprecated", dep.map(Value::Bool));
            Value::Object(m)
        }),
        3 => ref_schema(),
        1 => Just(json!(true)),
        1 => Just(json!(false)),
        1 => Just(json!({})),
        1 => Just(json!({"type": "null"})),
        1 => type_keyword().prop_map(|t| json!({"type": t})),
        1 => (vec(scalar(), 0..4)).prop_map(|e| json!({"enum": e})),
        1 => scalar().prop_map(|c| json!({"const": c})),
        // Keywords the engine does not judge.
        1 => (select(vec!["not", "if", "then", "else", "contains", "propertyNames"]), select(vec![json!({"type": "string"}), json!({"minLength": 2}), json!(true)]))
            .prop_map(|(k, v)| json!({ k: v })),
    ]
    .boxed()
}

fn object_schema(inner: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    (
        btree_map(prop_name(), inner.clone(), 0..5),
        vec(prop_name(), 0..4),
        option::of(prop_oneof![
            2 => any::<bool>().prop_map(Value::Bool),
            1 => Just(json!({})),
            1 => inner.clone(),
        ]),
        option::of(prose()),
        any::<bool>(),
        option::of(0u64..4),
        option::of(any::<bool>()),
        option::of(btree_map("[a-z^$.*]{1,4}", inner, 1..2)),
    )
        .prop_map(
            |(props, mut required, additional, desc, typed, min_props, deprecated, patterns)| {
                let mut m = Map::new();
                if typed {
                    m.insert("type".into(), json!("object"));
                }
                // Mostly names that are properties, sometimes not.
                let names: Vec<&String> = props.keys().collect();
                for (i, r) in required.iter_mut().enumerate() {
                    if !names.is_empty() && i % 3 != 2 {
                        *r = names[i % names.len()].clone();
                    }
                }
                m.insert("properties".into(), json!(props));
                if !required.is_empty() {
                    m.insert("required".into(), json!(required));
                }
                put(&mut m, "additionalProperties", additional);
                put(&mut m, "description", desc.map(Value::from));
                put(&mut m, "minProperties", min_props.map(Value::from));
                put(&mut m, "deprecated", deprecated.map(Value::Bool));
                put(&mut m, "patternProperties", patterns.map(|p| json!(p)));
                Value::Object(m)
            },
        )
        .boxed()
}

fn array_schema(inner: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    (
        prop_oneof![
            3 => inner.clone().prop_map(|i| ("items", i)),
            1 => vec(inner.clone(), 0..4).prop_map(|t| ("prefixItems", Value::Array(t))),
            1 => vec(inner.clone(), 0..3).prop_map(|t| ("items", Value::Array(t))),
        ],
        option::of(0u64..3),
        option::of(3u64..20),
        option::of(prop_oneof![any::<bool>().prop_map(Value::Bool), inner]),
        option::of(prose()),
    )
        .prop_map(|((key, items), min, max, additional, desc)| {
            let mut m = Map::new();
            m.insert("type".into(), json!("array"));
            m.insert(key.into(), items);
            put(&mut m, "minItems", min.map(Value::from));
            put(&mut m, "maxItems", max.map(Value::from));
            put(&mut m, "additionalItems", additional);
            put(&mut m, "description", desc.map(Value::from));
            Value::Object(m)
        })
        .boxed()
}

fn union_schema(inner: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    (
        select(vec!["anyOf", "oneOf", "allOf"]),
        vec(inner, 1..4),
        option::of(type_keyword()),
    )
        .prop_map(|(key, branches, ty)| {
            let mut m = Map::new();
            m.insert(key.into(), Value::Array(branches));
            put(&mut m, "type", ty);
            Value::Object(m)
        })
        .boxed()
}

/// Any subschema, nested up to 4 levels.
fn schema() -> BoxedStrategy<Value> {
    leaf_schema()
        .prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                3 => object_schema(inner.clone()),
                2 => array_schema(inner.clone()),
                2 => union_schema(inner),
            ]
        })
        .boxed()
}

/// A tool's root schema: an object with properties and, often, `$defs`
/// whose members refer to each other (`A` → `B` → `A`, `Self` → `Self`).
fn root_schema() -> BoxedStrategy<Value> {
    (
        object_schema(schema()),
        option::of(btree_map(
            select(vec!["A", "B", "Self", "Node"]).prop_map(str::to_string),
            schema(),
            1..4,
        )),
        option::of(schema()),
        option::of(select(vec![
            "https://json-schema.org/draft/2020-12/schema",
            "http://json-schema.org/draft-07/schema#",
        ])),
    )
        .prop_map(|(root, defs, old, dialect)| {
            let mut root = root;
            let m = root.as_object_mut().expect("object schema");
            m.insert("type".into(), json!("object"));
            put(m, "$defs", defs.map(|d| json!(d)));
            put(m, "definitions", old.map(|o| json!({ "Old": o })));
            put(m, "$schema", dialect.map(Value::from));
            root
        })
        .boxed()
}

fn annotations() -> BoxedStrategy<Value> {
    let hint = prop_oneof![
        4 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
        1 => Just(json!("yes")),
        1 => Just(json!(1)),
    ];
    (
        option::of(hint.clone()),
        option::of(hint.clone()),
        option::of(hint.clone()),
        option::of(hint),
        option::of(prose()),
    )
        .prop_map(|(ro, de, id, ow, title)| {
            let mut m = Map::new();
            put(&mut m, "readOnlyHint", ro);
            put(&mut m, "destructiveHint", de);
            put(&mut m, "idempotentHint", id);
            put(&mut m, "openWorldHint", ow);
            put(&mut m, "title", title.map(Value::from));
            Value::Object(m)
        })
        .boxed()
}

/// A realistic tool; the input schema under any member name normalization
/// unifies.
fn tool() -> BoxedStrategy<Value> {
    (
        tool_name(),
        option::of(prose()),
        option::of(prose()),
        option::of(annotations()),
        select(vec![
            "inputSchema",
            "inputSchema",
            "inputSchema",
            "parameters",
            "input_schema",
        ]),
        root_schema(),
        option::of(root_schema()),
        option::of(btree_map("[a-z_]{1,6}", scalar(), 1..3)),
    )
        .prop_map(|(name, desc, title, ann, member, input, output, meta)| {
            let mut m = Map::new();
            m.insert("name".into(), json!(name));
            put(&mut m, "description", desc.map(Value::from));
            put(&mut m, "title", title.map(Value::from));
            put(&mut m, "annotations", ann);
            m.insert(member.into(), input);
            put(&mut m, "outputSchema", output);
            put(&mut m, "_meta", meta.map(|x| json!(x)));
            Value::Object(m)
        })
        .boxed()
}

fn spec_of(tools: BoxedStrategy<Value>) -> BoxedStrategy<Spec> {
    vec((tools, any::<bool>()), 0..5)
        .prop_map(|pairs| {
            let (tools, servers) = pairs.into_iter().unzip();
            Spec { tools, servers }
        })
        .boxed()
}

// ---------------------------------------------------------------------------
// Strategies: arbitrary JSON

/// Schema keywords, to be given values of any (mostly wrong) type.
const KEYWORDS: [&str; 40] = [
    "type",
    "enum",
    "const",
    "required",
    "properties",
    "items",
    "prefixItems",
    "additionalProperties",
    "additionalItems",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "default",
    "description",
    "title",
    "examples",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "nullable",
    "deprecated",
    "not",
    "if",
    "patternProperties",
    "$schema",
    "readOnlyHint",
    "destructiveHint",
    "openWorldHint",
    "name",
];

fn any_key() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(KEYWORDS.to_vec()).prop_map(str::to_string),
        2 => select(PROP_NAMES.to_vec()).prop_map(str::to_string),
        1 => "\\PC{0,8}",
        1 => "[~/01]{0,4}",
    ]
    .boxed()
}

fn any_scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from), // NaN and infinities become null
        small_number(),
        select(REFS.to_vec()).prop_map(Value::from),
        select(WORDS.to_vec()).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        prose().prop_map(Value::from),
    ]
    .boxed()
}

fn any_json() -> BoxedStrategy<Value> {
    any_scalar()
        .prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                btree_map(any_key(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// A tool whose schemas, annotations and description are arbitrary JSON.
fn junk_tool() -> BoxedStrategy<Value> {
    (
        tool_name(),
        option::of(any_json()),
        option::of(any_json()),
        option::of(any_json()),
        option::of(any_json()),
        option::of(any_json()),
    )
        .prop_map(|(name, input, output, ann, desc, title)| {
            let mut m = Map::new();
            m.insert("name".into(), json!(name));
            put(&mut m, "inputSchema", input);
            put(&mut m, "outputSchema", output);
            put(&mut m, "annotations", ann);
            put(&mut m, "description", desc);
            put(&mut m, "title", title);
            Value::Object(m)
        })
        .boxed()
}

// ---------------------------------------------------------------------------
// Mutations: a second catalog close to the first

/// Edits `spec` with the given seed: a few edits inside tools (replace a
/// node by one of `pool`, drop or add a member, nudge a number, reword a
/// string, flip a bool, respell a number), and sometimes a tool renamed,
/// dropped or added.
fn mutate(spec: &Spec, seed: u64, pool: &[Value]) -> Spec {
    let mut rng = Rng(seed);
    let mut out = spec.clone();
    let edits = 1 + rng.below(4);
    for _ in 0..edits {
        if out.tools.is_empty() || rng.chance(8) {
            let mut t = json!({"name": TOOL_NAMES[rng.below(TOOL_NAMES.len())]});
            if let Some(v) = pool.first() {
                t["inputSchema"] = v.clone();
            }
            out.tools.push(t);
            out.servers.push(rng.chance(2));
            continue;
        }
        let i = rng.below(out.tools.len());
        match rng.below(12) {
            0 => {
                out.tools.remove(i);
                if i < out.servers.len() {
                    out.servers.remove(i);
                }
            }
            1 => {
                let name = out.tools[i]["name"].as_str().unwrap_or("t").to_string();
                out.tools[i]["name"] = json!(format!("{name}_v2"));
            }
            2 => {
                if let Some(s) = out.servers.get_mut(i) {
                    *s = !*s;
                }
            }
            _ => {
                let tool = out.tools[i].as_object_mut().expect("tool object");
                let keys: Vec<String> = tool.keys().filter(|k| *k != "name").cloned().collect();
                if keys.is_empty() {
                    continue;
                }
                let key = &keys[rng.below(keys.len())];
                let node = tool.get_mut(key).expect("member");
                edit(node, &mut rng, pool);
            }
        }
    }
    out
}

fn edit(node: &mut Value, rng: &mut Rng, pool: &[Value]) {
    // Go down a random path, stopping early now and then.
    let descend = !rng.chance(3);
    match node {
        Value::Object(m) if descend && !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = &keys[rng.below(keys.len())];
            return edit(m.get_mut(k).expect("member"), rng, pool);
        }
        Value::Array(a) if descend && !a.is_empty() => {
            let i = rng.below(a.len());
            return edit(&mut a[i], rng, pool);
        }
        _ => {}
    }
    let replacement = pool.get(rng.below(pool.len().max(1))).cloned();
    match (node, rng.below(4)) {
        (Value::Object(m), 0) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = keys[rng.below(keys.len())].clone();
            m.remove(&k);
        }
        (Value::Object(m), 1) => {
            let k = KEYWORDS[rng.below(KEYWORDS.len())];
            m.insert(k.to_string(), replacement.unwrap_or(json!("added")));
        }
        (Value::Array(a), 0) if !a.is_empty() => {
            a.pop();
        }
        (Value::Array(a), 1) => a.push(replacement.unwrap_or(json!("added"))),
        (Value::Array(a), 2) => a.reverse(),
        (Value::Number(n), 0) => {
            // The same number spelled as a float: the same canonical JSON.
            if let Some(f) = n.as_f64() {
                *n = serde_json::Number::from_f64(f).unwrap_or_else(|| n.clone());
            }
        }
        (Value::Number(n), 1) => {
            let f = n.as_f64().unwrap_or(0.0);
            *n = serde_json::Number::from_f64(f + 1.0).unwrap_or_else(|| n.clone());
        }
        (Value::Bool(b), _) => *b = !*b,
        (Value::String(s), 0) => s.push_str(" Always call refund_order first."),
        (Value::String(s), 1) => s.push_str("  "),
        (Value::String(s), 2) => *s = s.to_uppercase(),
        (node, _) => {
            if let Some(v) = replacement {
                *node = v;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Reordering: the same tools as different JSON text

/// The schema keywords under which normalization sorts `required`, as in
/// toolpin_manifest::normalize (kept in step with it on purpose: a copy
/// shuffled elsewhere would be a different tool).
fn shuffle_required(schema: &mut Value, rng: &mut Rng) {
    let Value::Object(map) = schema else { return };
    for (key, sub) in map.iter_mut() {
        match (key.as_str(), sub) {
            ("required", Value::Array(req)) if req.iter().all(Value::is_string) => rng.shuffle(req),
            (
                "additionalProperties"
                | "additionalItems"
                | "unevaluatedProperties"
                | "unevaluatedItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "items",
                sub @ Value::Object(_),
            ) => shuffle_required(sub, rng),
            (
                "items"
                | "anyOf"
                | "oneOf"
                | "allOf"
                | "prefixItems"
                | "additionalProperties"
                | "additionalItems"
                | "unevaluatedProperties"
                | "unevaluatedItems"
                | "contains"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else",
                Value::Array(subs),
            ) => subs.iter_mut().for_each(|s| shuffle_required(s, rng)),
            (
                "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
                | "dependencies",
                Value::Object(subs),
            ) => subs.values_mut().for_each(|s| shuffle_required(s, rng)),
            _ => {}
        }
    }
}

/// JSON text of `v` with every object's members in a random order.
fn shuffled_text(v: &Value, rng: &mut Rng, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut members: Vec<(&String, &Value)> = m.iter().collect();
            rng.shuffle(&mut members);
            out.push('{');
            for (i, (k, x)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).expect("key"));
                out.push(':');
                shuffled_text(x, rng, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                shuffled_text(x, rng, out);
            }
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).expect("scalar")),
    }
}

/// The same tools, shuffled: tool order, which server offers each tool,
/// member order in every object, and `required` lists.
fn reordered(spec: &Spec, seed: u64) -> Spec {
    let mut rng = Rng(seed);
    let mut pairs: Vec<(Value, bool)> = spec
        .tools
        .iter()
        .cloned()
        .zip(spec.servers.iter().copied())
        .collect();
    // Keep the first tool of a name first among its namesakes: `catalog`
    // keeps the first one.
    let mut seen = BTreeSet::new();
    pairs.retain(|(t, _)| seen.insert(t["name"].to_string()));
    rng.shuffle(&mut pairs);
    let mut out = Spec {
        tools: Vec::new(),
        servers: Vec::new(),
    };
    for (mut tool, _) in pairs {
        if let Some(m) = tool.as_object_mut() {
            for member in ["inputSchema", "input_schema", "parameters", "outputSchema"] {
                if let Some(s) = m.get_mut(member) {
                    shuffle_required(s, &mut rng);
                }
            }
        }
        let mut text = String::new();
        shuffled_text(&tool, &mut rng, &mut text);
        out.tools
            .push(serde_json::from_str(&text).expect("shuffled text parses"));
        out.servers.push(rng.chance(2));
    }
    out
}

// ---------------------------------------------------------------------------
// Invariants of every comparison

fn check_findings(old: &Catalog, new: &Catalog, c: &Comparison) -> Result<(), TestCaseError> {
    for f in &c.findings {
        prop_assert!(
            toolpin_drift::rule::by_id(f.rule).is_some(),
            "unregistered rule {:?}",
            f.rule
        );
        prop_assert!(
            f.pointer.is_empty() || Pointer::parse(&f.pointer).is_ok(),
            "{} has pointer {:?}, not a JSON pointer",
            f.rule,
            f.pointer
        );
    }
    prop_assert_eq!(c.summary.findings, c.findings.len());
    if old.fingerprint() == new.fingerprint() {
        prop_assert!(
            c.findings.is_empty(),
            "equal fingerprints, yet findings:\n{}",
            render(c)
        );
    }
    Ok(())
}

/// 64 cases a property. Each property runs in a child process, and a case
/// that has not finished in 1 s (ordinary ones take milliseconds) kills it
/// and fails the property, so a hang or a blow-up cannot stall the suite or
/// exhaust the machine. Shrinking is capped by iterations (a time cap would
/// restart with every child process), each costing at most two timeouts.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        timeout: 1_000,
        max_shrink_iters: 6,
        // Nothing written next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// The properties

proptest! {
    #![proptest_config(config())]

    /// 1. A catalog compared with itself, or with the same tools reordered
    /// (tools, servers, object members, `required`), has no findings.
    #[test]
    fn self_compare_is_clean(spec in spec_of(tool()), seed in any::<u64>()) {
        let a = catalog(&spec);
        let c = compare(&a, &a);
        prop_assert!(c.is_clean(), "self-compare:\n{}", render(&c));
        let b = catalog(&reordered(&spec, seed));
        prop_assert_eq!(&a.fingerprint(), &b.fingerprint(), "reordering changed the fingerprint");
        let c = compare(&a, &b);
        prop_assert!(c.is_clean(), "reordered:\n{}", render(&c));
        let c = compare(&b, &a);
        prop_assert!(c.is_clean(), "reordered, reversed:\n{}", render(&c));
        check_findings(&a, &b, &c)?;
    }

    /// 1b. The slow path on identical content: one tool renamed to a fresh
    /// name and nothing else changed is exactly one `tool-renamed`.
    #[test]
    fn renaming_one_tool_is_only_a_rename(spec in spec_of(tool()), pick in any::<prop::sample::Index>()) {
        let a = catalog(&spec);
        let tools: Vec<Value> = a.tools().map(|(_, _, t)| t.value()).collect();
        prop_assume!(!tools.is_empty());
        let i = pick.index(tools.len());
        let mut renamed = tools.clone();
        renamed[i]["name"] = json!("zz_brand_new_name");
        let (old, new) = (strict_catalog(tools), strict_catalog(renamed));
        let c = compare(&old, &new);
        let rules: Vec<&str> = c.findings.iter().map(|f| f.rule).collect();
        prop_assert_eq!(rules, vec!["tool-renamed"], "\n{}", render(&c));
    }

    /// 2 and 6. Comparing twice gives the same findings (as JSON), and every
    /// finding is well formed.
    #[test]
    fn compare_is_deterministic(
        spec in spec_of(tool()),
        seed in any::<u64>(),
        pool in vec(prop_oneof![schema(), any_json(), scalar()], 1..4),
    ) {
        let a = catalog(&spec);
        let b = catalog(&mutate(&spec, seed, &pool));
        let first = compare(&a, &b);
        let second = compare(&a.clone(), &b.clone());
        let (x, y) = (
            serde_json::to_string(&first).expect("serialize"),
            serde_json::to_string(&second).expect("serialize"),
        );
        prop_assert!(x == y, "two runs differ:\n{x}\n{y}");
        check_findings(&a, &b, &first)?;
        // The other way round too.
        let back = compare(&b, &a);
        check_findings(&b, &a, &back)?;
    }

    /// 3. Schemas, annotations, descriptions and titles that are arbitrary
    /// JSON, mostly with keywords given values of the wrong type: compare
    /// returns, on close pairs and on unrelated ones.
    #[test]
    fn arbitrary_json_never_panics(
        spec in spec_of(junk_tool()),
        other in spec_of(junk_tool()),
        seed in any::<u64>(),
        pool in vec(any_json(), 1..4),
    ) {
        let a = catalog(&spec);
        let b = catalog(&mutate(&spec, seed, &pool));
        let c = compare(&a, &b);
        check_findings(&a, &b, &c)?;
        let o = catalog(&other);
        let c = compare(&a, &o);
        check_findings(&a, &o, &c)?;
        prop_assert!(compare(&a, &a).is_clean());
    }

    /// 4. Cycles through `$defs` (`A` → `B` → `A`), self-references, the
    /// root `#`, missing and remote targets: compare returns, both ways and
    /// on close pairs. Editing a `$defs` entry nothing refers to is no
    /// finding. (The generator lets at most two references loop back to one
    /// place, so a case that blows up does so by 2^depth, not worse.)
    #[test]
    fn ref_cycles_terminate(
        spec in spec_of(cyclic_tool()),
        seed in any::<u64>(),
        pool in vec(prop_oneof![loop_ref(), plain_leaf()], 1..4),
    ) {
        let a = catalog(&spec);
        let b = catalog(&mutate(&spec, seed, &pool));
        let c = compare(&a, &b);
        check_findings(&a, &b, &c)?;
        let c = compare(&b, &a);
        check_findings(&b, &a, &c)?;
        let mut touched = spec.clone();
        for tool in &mut touched.tools {
            tool["inputSchema"]["$defs"]["Unused"]["description"] = json!("edited");
        }
        let t = catalog(&touched);
        let c = compare(&a, &t);
        prop_assert!(c.is_clean(), "an unused $defs entry edited:\n{}", render(&c));
    }

    /// 4b. A changed schema holding a reference that cannot be followed
    /// (missing, remote, or a chain that never ends) is `schema-unanalyzable`
    /// at that schema.
    #[test]
    fn unresolvable_ref_on_a_changed_schema_is_unanalyzable(
        root in root_schema(),
        target in select(vec![
            "#/$defs/Missing",
            "#/nowhere/at/all",
            "https://example.com/s.json",
            "other.json#/$defs/A",
            "#/$defs/Loop",
            "#/$defs/Ping",
        ]),
        change in select(vec!["description", "default", "title", "minimum"]),
        output in any::<bool>(),
    ) {
        let mut before = root;
        let m = before.as_object_mut().expect("object schema");
        m.insert("properties".into(), json!({"broken": {"$ref": target}}));
        // Loop → Loop, Ping → Pong → Ping: chains with no end.
        let defs = m.entry("$defs").or_insert_with(|| json!({}));
        defs["Loop"] = json!({"$ref": "#/$defs/Loop"});
        defs["Ping"] = json!({"$ref": "#/$defs/Pong"});
        defs["Pong"] = json!({"$ref": "#/$defs/Ping"});
        m.remove("$ref");
        let mut after = before.clone();
        after["properties"]["broken"][change] = json!(7);
        let member = if output { "outputSchema" } else { "inputSchema" };
        let tool = |s: Value| json!({"name": "lookup_order", member: s});
        let (old, new) = (strict_catalog(vec![tool(before)]), strict_catalog(vec![tool(after)]));
        let c = compare(&old, &new);
        let at = format!("/{member}/properties/broken");
        prop_assert!(
            c.findings.iter().any(|f| f.rule == "schema-unanalyzable" && f.pointer == at),
            "no schema-unanalyzable at {}:\n{}", at, render(&c)
        );
        check_findings(&old, &new, &c)?;
    }
}

// ---------------------------------------------------------------------------
// Strategies: reference cycles

/// References that loop without branching: along any path each is met
/// once per turn of its loop.
const LOOP_REFS: [&str; 8] = [
    "#/$defs/A",
    "#/$defs/B",
    "#/$defs/Self",
    "#/$defs/A/properties/next",
    "#/$defs/Missing",
    "#/definitions/Old",
    "https://example.com/schemas/order.json",
    "other.json#/$defs/A",
];

fn loop_ref() -> BoxedStrategy<Value> {
    (select(LOOP_REFS.to_vec()), option::of(prose()))
        .prop_map(|(r, desc)| {
            let mut m = Map::new();
            m.insert("$ref".into(), json!(r));
            put(&mut m, "description", desc.map(Value::from));
            Value::Object(m)
        })
        .boxed()
}

/// A leaf schema without references.
fn plain_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        string_schema(),
        numeric_schema(),
        Just(json!({"type": "boolean"})),
        Just(json!(true)),
    ]
    .boxed()
}

/// `$defs` built to loop: `A` → `B` → `A`, `Self` → `Self` (directly or
/// through a property), `Node` whose `fanout` children are `Node`s, `Root`
/// → `#`; and `Unused`, which nothing refers to.
fn cyclic_defs(fanout: usize) -> BoxedStrategy<Value> {
    (plain_leaf(), plain_leaf(), any::<bool>()).prop_map(move |(x, y, direct)| {
        let kids: Vec<Value> = (0..fanout)
            .map(|_| json!({"$ref": "#/$defs/Node"}))
            .collect();
        let me = if direct {
            json!({"$ref": "#/$defs/Self"})
        } else {
            json!({"properties": {"me": {"$ref": "#/$defs/Self"}}})
        };
        json!({
            "A": {"type": "object", "properties": {"next": {"$ref": "#/$defs/B"}, "v": x}},
            "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}, y]},
            "Self": me,
            "Node": {"type": "object", "properties": {"children": {"type": "array", "prefixItems": kids}}},
            "Root": {"$ref": "#"},
            "Unused": {"type": "string"},
        })
    })
    .boxed()
}

/// A tool whose input schema refers into looping `$defs`, plus one of:
/// nothing more, one or two properties referring to the root `#`, one to
/// `Root` (→ `#`), or one to `Node` (whose children are one or two
/// `Node`s).
fn cyclic_tool() -> BoxedStrategy<Value> {
    (
        tool_name(),
        (0usize..5, 1usize..3).prop_flat_map(|(shape, fanout)| (Just(shape), cyclic_defs(fanout))),
        btree_map(
            prop_name(),
            prop_oneof![3 => loop_ref(), 1 => plain_leaf()],
            1..4,
        ),
        option::of(prose()),
    )
        .prop_map(|(name, (shape, defs), mut props, desc)| {
            let back: &[(&str, &str)] = match shape {
                0 => &[],
                1 => &[("r1", "#")],
                2 => &[("r1", "#"), ("r2", "#")],
                3 => &[("root", "#/$defs/Root")],
                _ => &[("tree", "#/$defs/Node")],
            };
            for (k, r) in back {
                props.insert(k.to_string(), json!({"$ref": r}));
            }
            let mut m = Map::new();
            m.insert("name".into(), json!(name));
            put(&mut m, "description", desc.map(Value::from));
            m.insert(
                "inputSchema".into(),
                json!({"type": "object", "properties": props, "$defs": defs}),
            );
            Value::Object(m)
        })
        .boxed()
}

// ---------------------------------------------------------------------------
// 5. Depth

/// `levels` schemas nested through `properties.a`, the innermost `leaf`.
/// Built from the inside out, without recursion.
/// (`json!` is not used to wrap: it serializes a value it is handed, which
/// recurses and copies.)
fn nested_properties(levels: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for _ in 1..levels {
        v = object([
            ("type", json!("object")),
            ("properties", object([("a", v)])),
        ]);
    }
    v
}

fn nested_items(levels: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for _ in 1..levels {
        v = object([("type", json!("array")), ("items", v)]);
    }
    v
}

fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn deep_tool(schema: Value) -> Value {
    object([("name", json!("deep")), ("inputSchema", schema)])
}

/// Takes a deep value apart level by level, so that dropping it does not
/// recurse (the test's own clean-up must not be what overflows).
fn dismantle(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, x)| x)),
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
}

fn pointer_down(root: &str, step: &str, levels: usize, last: &str) -> String {
    format!("{root}{}{last}", step.repeat(levels - 1))
}

/// Three ways to nest 10,000 levels: schemas through `properties`,
/// schemas through `items`, plain arrays in a `default`.
fn ten_thousand_levels() -> [(&'static str, Value); 3] {
    [
        (
            "properties",
            nested_properties(10_000, json!({"type": "string"})),
        ),
        ("items", nested_items(10_000, json!({"type": "string"}))),
        ("arrays in a default", {
            let mut v = json!(1);
            for _ in 0..10_000 {
                v = Value::Array(vec![v]);
            }
            object([("type", json!("array")), ("default", v)])
        }),
    ]
}

fn assert_too_deep(what: &str, schema: Value) {
    match Transform::default().apply(vec![deep_tool(schema)]) {
        Err(ToolError::TooDeep { name }) => assert_eq!(name, "deep", "{what}"),
        Err(e) => panic!("{what}: {e}"),
        Ok(tools) => {
            dismantle(Value::Array(tools));
            panic!("{what}: a tool nested past {MAX_TOOL_DEPTH} levels was accepted");
        }
    }
}

/// 5a. A 10,000-deep tool is refused (`TooDeep`), not a crash.
///
/// A `serde_json::Value` nested 10,000 objects deep cannot even be dropped
/// on a 2 MiB test thread (its `Drop` recurses: about 1,250 levels of
/// `properties` fit in 2 MiB, 5,000 in 8 MiB, in a debug build), and
/// `Transform::apply` consumes and drops what it refuses. So this runs on a
/// thread with room for the value itself: what is checked is that
/// normalization answers with an error, not that it survives a stack the
/// value could not live on anyway.
#[test]
fn ten_thousand_levels_are_refused_not_a_crash() {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| {
            for (what, schema) in ten_thousand_levels() {
                assert_too_deep(what, schema);
            }
        })
        .expect("spawn")
        .join()
        .expect("refused without a panic");
}

/// 5a'. The same on the default test stack, at a depth that stack can hold
/// as a value: 1,000 levels.
#[test]
fn a_thousand_levels_are_refused_on_the_default_stack() {
    assert_too_deep(
        "properties",
        nested_properties(1_000, json!({"type": "string"})),
    );
    assert_too_deep("items", nested_items(1_000, json!({"type": "string"})));
}

/// The deepest tool normalization accepts, for a schema nested by `nest`.
fn deepest_accepted(nest: fn(usize, Value) -> Value) -> usize {
    let accepted = |levels: usize| {
        let tool = deep_tool(nest(levels, json!({"type": "string"})));
        Transform::default().apply(vec![tool]).is_ok()
    };
    let mut levels = 1;
    while accepted(levels + 1) {
        levels += 1;
        assert!(levels <= MAX_TOOL_DEPTH, "no depth limit");
    }
    levels
}

#[test]
fn properties_nested_to_the_limit_compare_to_the_bottom() {
    // Each level of properties nesting is two JSON levels (the schema and
    // its `properties`), so the 100-level tool limit allows 49.
    let levels = deepest_accepted(nested_properties);
    assert!(levels >= 45, "only {levels} levels accepted");
    let before = deep_tool(nested_properties(levels, json!({"type": "string"})));
    let after = deep_tool(nested_properties(levels, json!({"type": "integer"})));
    let too_deep = deep_tool(nested_properties(levels + 1, json!({"type": "string"})));
    assert!(Transform::default().apply(vec![too_deep]).is_err());
    let c = compare(&strict_catalog(vec![before]), &strict_catalog(vec![after]));
    let at = pointer_down("/inputSchema", "/properties/a", levels, "/type");
    assert!(
        c.findings
            .iter()
            .any(|f| f.rule == "input-type-changed" && f.pointer == at),
        "want input-type-changed at {at}:\n{}",
        render(&c)
    );
}

#[test]
fn items_nested_to_the_limit_compare_without_overflow() {
    // ~98 levels of `items`: deeper than the walker's 64, so the difference
    // at the bottom is reported as unanalyzable, not dropped.
    let levels = deepest_accepted(nested_items);
    assert!(levels >= 90, "only {levels} levels accepted");
    let before = deep_tool(nested_items(levels, json!({"type": "string"})));
    let after = deep_tool(nested_items(levels, json!({"type": "integer"})));
    let c = compare(&strict_catalog(vec![before]), &strict_catalog(vec![after]));
    assert!(
        !c.findings.is_empty(),
        "no finding for a change at the bottom"
    );
    assert!(
        c.findings.iter().any(|f| f.rule == "schema-unanalyzable"),
        "{}",
        render(&c)
    );
}

// ---------------------------------------------------------------------------
// Regressions: minimized inputs of failures the properties found

/// Found by `ref_cycles_terminate` (and `renaming_one_tool_is_only_a_rename`),
/// minimized by hand. Properties refer to the root and a `$defs` entry
/// nothing refers to is edited. No rule fires, so compare.rs `compare_tool`
/// asks `dereferenced` whether the tool was rewritten, and its `inline`
/// expands every local `$ref` up to 16 levels deep without remembering what
/// it already expanded: each copy of the root holds k more copies, k^16 in
/// all. With one such property this takes under a millisecond, with two
/// (2^16 copies) about 2 s in a debug build, with three (3^16) minutes and
/// gigabytes; it should take milliseconds and report nothing.
#[test]
fn refs_to_the_root_and_an_unused_def_edited() {
    if !run_in_child("refs_to_the_root_and_an_unused_def_edited", 2) {
        return;
    }
    let tool = |unused: u64| {
        json!({
            "name": "t",
            "inputSchema": {
                "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#"}, "c": {"$ref": "#"}},
                "$defs": {"unused": unused},
            },
        })
    };
    let c = compare(
        &strict_catalog(vec![tool(1)]),
        &strict_catalog(vec![tool(2)]),
    );
    assert!(c.is_clean(), "{}", render(&c));
}

// ---------------------------------------------------------------------------
// `$ref` graphs and union rewrappings (issue 13): a schema whose nested
// models live in `$defs` (as Pydantic, zod and the SDKs write them) against
// the same schema with every reference inlined.

const LEAF_TYPES: [&str; 4] = ["string", "integer", "boolean", "array"];

/// A leaf the mutation can change: `{"type": T}` (an array of strings for
/// "array").
fn typed_leaf(t: &str) -> Value {
    if t == "array" {
        json!({"type": "array", "items": {"type": "string"}})
    } else {
        json!({"type": t})
    }
}

/// An acyclic `$defs` graph and a root that refers into it: definition `i`
/// may refer to definitions after it only; a reference is bare, wrapped in
/// an array's `items`, or one branch of an `anyOf` with `null`.
fn ref_graph(seed: u64) -> Value {
    let mut rng = Rng(seed);
    let n_defs = 1 + rng.below(4);
    let reference = |rng: &mut Rng, target: usize| -> Value {
        let r = json!({"$ref": format!("#/$defs/D{target}")});
        match rng.below(3) {
            0 => r,
            1 => json!({"type": "array", "items": r}),
            _ => json!({"anyOf": [r, {"type": "null"}]}),
        }
    };
    let mut defs = Map::new();
    for i in 0..n_defs {
        let mut props = Map::new();
        for k in 0..1 + rng.below(3) {
            let v = if i + 1 < n_defs && rng.chance(3) {
                let target = i + 1 + rng.below(n_defs - i - 1);
                reference(&mut rng, target)
            } else {
                typed_leaf(LEAF_TYPES[rng.below(LEAF_TYPES.len())])
            };
            props.insert(format!("f{k}"), v);
        }
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": props}),
        );
    }
    let mut props = Map::new();
    for k in 0..1 + rng.below(3) {
        let v = if rng.chance(4) {
            typed_leaf(LEAF_TYPES[rng.below(LEAF_TYPES.len())])
        } else {
            let target = rng.below(n_defs);
            reference(&mut rng, target)
        };
        props.insert(format!("p{k}"), v);
    }
    json!({"type": "object", "properties": props, "$defs": defs})
}

/// `schema` with every `#/$defs/…` reference replaced by its definition,
/// and no `$defs` left (the graph is acyclic).
fn inlined(schema: &Value) -> Value {
    fn go(v: &Value, defs: &Map<String, Value>) -> Value {
        match v {
            Value::Object(o) => {
                if let Some(name) = o
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    return go(&defs[name], defs);
                }
                Value::Object(
                    o.iter()
                        .filter(|(k, _)| k.as_str() != "$defs")
                        .map(|(k, v)| (k.clone(), go(v, defs)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(|x| go(x, defs)).collect()),
            other => other.clone(),
        }
    }
    let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
    go(schema, &defs)
}

/// The same graph with one definition's leaf given a type disjoint from
/// its own; `None` when the graph has no leaf in a definition.
fn with_a_definition_leaf_changed(schema: &Value, seed: u64) -> Option<Value> {
    let mut rng = Rng(seed);
    let mut leaves = Vec::new();
    for (d, def) in schema["$defs"].as_object()? {
        for (f, v) in def["properties"].as_object()? {
            if let Some(t) = v["type"].as_str().filter(|_| v.get("$ref").is_none()) {
                if v.get("anyOf").is_none() && (t != "array" || v["items"].get("$ref").is_none()) {
                    leaves.push((d.clone(), f.clone(), t.to_string()));
                }
            }
        }
    }
    if leaves.is_empty() {
        return None;
    }
    let (d, f, t) = leaves[rng.below(leaves.len())].clone();
    let others: Vec<&str> = LEAF_TYPES.iter().copied().filter(|x| *x != t).collect();
    let mut out = schema.clone();
    out["$defs"][&d]["properties"][&f] = typed_leaf(others[rng.below(others.len())]);
    Some(out)
}

fn schema_tool(schema: Value) -> Value {
    json!({"name": "t", "description": "d", "inputSchema": schema})
}

fn schema_out_tool(schema: Value) -> Value {
    json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "outputSchema": schema})
}

/// (rule, pointer, severity) of every finding, sorted: what must agree
/// between a change behind a reference and the same change inline
/// (messages differ: behind a reference they name the definition).
fn finding_keys(c: &Comparison) -> Vec<(String, String, String)> {
    let mut keys: Vec<_> = c
        .findings
        .iter()
        .map(|f| {
            (
                f.rule.to_string(),
                f.pointer.clone(),
                f.severity.name().to_string(),
            )
        })
        .collect();
    keys.sort();
    keys
}

proptest! {
    #![proptest_config(config())]

    /// Inlining every `$ref` (or moving every nested model into `$defs`)
    /// changes nothing the model can send or read: at most
    /// `equivalent-rewrite`s, in both directions.
    #[test]
    fn inlining_every_ref_is_an_equivalent_rewrite(seed in any::<u64>()) {
        let graph = ref_graph(seed);
        let flat = inlined(&graph);
        for make in [schema_tool, schema_out_tool] {
            for (b, a) in [(&graph, &flat), (&flat, &graph)] {
                let c = compare(
                    &strict_catalog(vec![make(b.clone())]),
                    &strict_catalog(vec![make(a.clone())]),
                );
                prop_assert!(
                    c.findings.iter().all(|f| f.rule == "equivalent-rewrite"),
                    "{graph}\n{}",
                    render(&c)
                );
            }
        }
    }

    /// Changing a leaf of a definition gives the same findings, at the same
    /// pointers, as changing it in the inlined schema: once per place that
    /// refers to it, in both directions.
    #[test]
    fn a_change_behind_a_ref_is_found_as_it_is_inline(seed in any::<u64>(), pick in any::<u64>()) {
        let graph = ref_graph(seed);
        let Some(changed) = with_a_definition_leaf_changed(&graph, pick) else {
            return Ok(());
        };
        for make in [schema_tool, schema_out_tool] {
            let by_ref = compare(
                &strict_catalog(vec![make(graph.clone())]),
                &strict_catalog(vec![make(changed.clone())]),
            );
            let inline = compare(
                &strict_catalog(vec![make(inlined(&graph))]),
                &strict_catalog(vec![make(inlined(&changed))]),
            );
            prop_assert_eq!(
                finding_keys(&by_ref),
                finding_keys(&inline),
                "{}\nby ref:\n{}\ninline:\n{}",
                graph,
                render(&by_ref),
                render(&inline)
            );
        }
    }
}

/// `schema` wrapped into `anyOf` with `extra` as a second branch, as a
/// vendor rewrites a parameter into a union: what stays beside the branches
/// (prose, `default`, `deprecated`) stays outside.
fn wrapped_in_union(schema: &Value, extra: Value) -> Option<Value> {
    let o = schema.as_object()?;
    if o.is_empty()
        || ["anyOf", "oneOf", "allOf", "$ref"]
            .iter()
            .any(|k| o.contains_key(*k))
    {
        return None;
    }
    let outside = |k: &str| {
        matches!(
            k,
            "description"
                | "title"
                | "examples"
                | "$comment"
                | "default"
                | "deprecated"
                | "$schema"
        )
    };
    let (mut kept, branch): (Map<String, Value>, Map<String, Value>) =
        o.clone().into_iter().partition(|(k, _)| outside(k));
    if branch.is_empty() {
        return None;
    }
    kept.insert("anyOf".into(), json!([Value::Object(branch), extra]));
    Some(Value::Object(kept))
}

proptest! {
    #![proptest_config(config())]

    /// Wrapping a parameter's schema into a union with one new branch is
    /// exactly one added branch (the argument may now also be that), and
    /// unwrapping it exactly one removed branch: never its properties,
    /// enum values or type read as deleted.
    #[test]
    fn wrapping_a_schema_into_a_union_is_one_branch(
        inner in object_schema(leaf_schema()),
        extra in select(vec![json!({"type": "string", "format": "uuid"}), json!({"type": "null"}), json!({"type": "array", "items": {"type": "integer"}})]),
    ) {
        // A `$ref` to the root would meet the wrapping again inside itself
        // (a recursive structure gains the branch at each level it is read).
        prop_assume!(!inner.to_string().contains("$ref"));
        let Some(wrapped) = wrapped_in_union(&inner, extra) else {
            return Ok(());
        };
        let tool = |s: &Value| json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"p": s}}});
        let c = compare(&strict_catalog(vec![tool(&inner)]), &strict_catalog(vec![tool(&wrapped)]));
        prop_assert_eq!(ids_of(&c), vec!["input-union-branch-added"], "{}\n{}", wrapped, render(&c));
        let c = compare(&strict_catalog(vec![tool(&wrapped)]), &strict_catalog(vec![tool(&inner)]));
        prop_assert_eq!(ids_of(&c), vec!["input-union-branch-removed"], "{}\n{}", wrapped, render(&c));
    }
}

proptest! {
    #![proptest_config(config())]

    /// Issue 34, class 1: a union collapsing to its surviving branch while
    /// that branch changes (a member added) reports the union's change once
    /// and the member at its pointer inside, in both directions and on both
    /// sides (input and output); never a blanket removal of the branch.
    #[test]
    fn a_union_collapsing_to_a_changed_branch_reports_both(
        inner in object_schema(leaf_schema()),
        extra in select(vec![json!({"type": "array", "items": {"type": "string"}}), json!({"type": "null"})]),
    ) {
        prop_assume!(!inner.to_string().contains("$ref"));
        let Some(wrapped) = wrapped_in_union(&inner, extra) else {
            return Ok(());
        };
        let Some(props) = inner.get("properties").and_then(Value::as_object) else {
            return Ok(());
        };
        prop_assume!(!props.contains_key("zz_added"));
        let mut changed = inner.clone();
        changed["properties"]["zz_added"] = json!({"type": "boolean"});
        // A member gone from a closed object is rejected, from an open one
        // ignored.
        let gone = if inner.get("additionalProperties") == Some(&json!(false)) {
            "input-property-removed"
        } else {
            "input-property-silently-ignored"
        };
        let input = |s: &Value| json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"p": s}}});
        let output = |s: &Value| json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "properties": {"p": s}}});
        let cases = [
            (input(&wrapped), input(&changed), vec!["input-optional-property-added", "input-union-branch-removed"]),
            (input(&changed), input(&wrapped), vec![gone, "input-union-branch-added"]),
            (output(&wrapped), output(&changed), vec!["field-changed", "output-property-added"]),
            (output(&changed), output(&wrapped), vec!["output-optional-property-removed", "output-union-branch-added"]),
        ];
        for (before, after, want) in cases {
            let c = compare(&strict_catalog(vec![before.clone()]), &strict_catalog(vec![after.clone()]));
            let mut want = want;
            want.sort_unstable();
            prop_assert_eq!(ids_of(&c), want, "{}\n{}\n{}", before, after, render(&c));
            let added = c.findings.iter().find(|f| f.pointer.ends_with("/zz_added"));
            prop_assert!(added.is_some(), "the member is named at its pointer: {}", render(&c));
        }
    }

    /// Issue 34, class 4: the branches of a union regrouped into a nested
    /// union of the same kind (behind a `$ref` into `$defs` or inline) and
    /// reordered accept the same arguments: no finding but the rewrite.
    #[test]
    fn regrouping_union_branches_is_an_equivalent_rewrite(
        branches in vec(object_schema(leaf_schema()), 2..4),
        behind_ref in any::<bool>(),
    ) {
        prop_assume!(!branches.iter().any(|b| b.to_string().contains("$ref")));
        let distinct: BTreeSet<String> = branches.iter().map(Value::to_string).collect();
        prop_assume!(distinct.len() == branches.len());
        let mut reordered = branches.clone();
        reordered.reverse();
        let before = json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"p": {"anyOf": branches}}}});
        let nested = json!({"anyOf": reordered});
        let after = if behind_ref {
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "$defs": {"Group": nested}, "properties": {"p": {"anyOf": [{"$ref": "#/$defs/Group"}]}}}})
        } else {
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"p": {"anyOf": [nested]}}}})
        };
        let c = compare(&strict_catalog(vec![before.clone()]), &strict_catalog(vec![after.clone()]));
        prop_assert!(ids_of(&c).iter().all(|id| *id == "equivalent-rewrite"), "{}\n{}\n{}", before, after, render(&c));
    }
}

fn ids_of(c: &Comparison) -> Vec<&'static str> {
    let mut ids: Vec<&str> = c.findings.iter().map(|f| f.rule).collect();
    ids.sort_unstable();
    ids
}

// ---------------------------------------------------------------------------
// Issue 34, class 2: tools renamed and changed in one release

const RENAME_VERBS: [&str; 6] = ["search", "list", "get", "fetch", "find", "query"];
const RENAME_NOUNS: [&str; 6] = ["issues", "orders", "users", "files", "tickets", "reports"];
const KEPT_NAMES: [&str; 9] = [
    "q", "sort", "order", "per_page", "state", "labels", "since", "owner", "assignee",
];

/// An argument schema a renamed tool keeps as it was.
fn kept_argument() -> BoxedStrategy<Value> {
    prop_oneof![
        prose().prop_map(|d| json!({"type": "string", "description": d})),
        (0i64..50, 50i64..500)
            .prop_map(|(lo, hi)| json!({"type": "integer", "minimum": lo, "maximum": hi})),
        proptest::sample::subsequence(vec!["open", "closed", "all", "draft", "merged"], 1..4)
            .prop_map(|e| json!({"type": "string", "enum": e})),
        Just(json!({"type": "boolean", "default": false})),
    ]
    .boxed()
}

/// What else the release does to the renamed-and-changed tool: `Nothing`
/// leaves a rename; each other value breaks one thing the kept arguments
/// need to tie the pair (then a removal and an addition).
#[derive(Clone, Copy, Debug)]
enum Break {
    Nothing,
    Hints,
    NewRequired,
    RequiredDropped,
}

/// The choices behind one generated rename (see [`renamed_and_changed`]).
#[derive(Clone, Debug)]
struct RenameCase {
    verb: usize,
    noun: usize,
    /// How far along the list the replaced verb or noun moves (never 0).
    shift: usize,
    /// The noun stays and the verb moves, or the other way round.
    keep_noun: bool,
    names: Vec<&'static str>,
    schemas: Vec<Value>,
    /// How many of the leading arguments are required (at least one).
    required: prop::sample::Index,
    /// The last required argument becomes optional.
    relax: bool,
    /// New optional arguments.
    added: usize,
    read_only: bool,
    open_world: bool,
    /// Unchanged tools taking the same arguments: only removed and added
    /// tools count when deciding which arguments tie a pair.
    bystanders: usize,
    brk: Break,
}

fn rename_case() -> BoxedStrategy<RenameCase> {
    let breaks = vec![
        Break::Nothing,
        Break::Nothing,
        Break::Hints,
        Break::NewRequired,
        Break::RequiredDropped,
    ];
    (
        (
            0..RENAME_VERBS.len(),
            0..RENAME_NOUNS.len(),
            1..RENAME_VERBS.len(),
            any::<bool>(),
        ),
        proptest::sample::subsequence(KEPT_NAMES.to_vec(), 3..=6),
        vec(kept_argument(), 6),
        (any::<prop::sample::Index>(), any::<bool>(), 0..=2usize),
        (any::<bool>(), any::<bool>(), 0..3usize),
        select(breaks),
    )
        .prop_map(
            |(
                (verb, noun, shift, keep_noun),
                names,
                schemas,
                (required, relax, added),
                flags,
                brk,
            )| {
                let (read_only, open_world, bystanders) = flags;
                RenameCase {
                    verb,
                    noun,
                    shift,
                    keep_noun,
                    names,
                    schemas,
                    required,
                    relax,
                    added,
                    read_only,
                    open_world,
                    bystanders,
                    brk,
                }
            },
        )
        .boxed()
}

fn rename_tool(
    name: &str,
    description: &str,
    title: &str,
    props: &Map<String, Value>,
    required: &[&str],
    hints: &Value,
) -> Value {
    let mut annotations = hints.clone();
    annotations["title"] = json!(title);
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props, "required": required},
        "annotations": annotations,
    })
}

/// The tools before and after the release, and the rules (sorted) the
/// comparison must yield.
fn renamed_and_changed(case: &RenameCase) -> (Vec<Value>, Vec<Value>, Vec<&'static str>) {
    let (v, n) = (case.verb, case.noun);
    let old_name = format!("{}_{}", RENAME_VERBS[v], RENAME_NOUNS[n]);
    let new_name = if case.keep_noun {
        let moved = RENAME_VERBS[(v + case.shift) % RENAME_VERBS.len()];
        format!("{moved}_{}", RENAME_NOUNS[n])
    } else {
        let moved = RENAME_NOUNS[(n + case.shift) % RENAME_NOUNS.len()];
        format!("{}_{moved}", RENAME_VERBS[v])
    };
    let mut props = Map::new();
    for (name, schema) in case.names.iter().zip(&case.schemas) {
        props.insert(name.to_string(), schema.clone());
    }
    let required: Vec<&str> = case.names[..1 + case.required.index(case.names.len())].to_vec();
    let mut new_required = required.clone();
    let relaxed = case.relax && case.brk.is_nothing();
    if relaxed {
        new_required.pop();
    }
    let mut new_props = props.clone();
    for k in 0..case.added {
        new_props.insert(
            format!("extra_{k}"),
            json!({"type": "string", "description": "Added in this release"}),
        );
    }
    let hints = json!({"readOnlyHint": case.read_only, "openWorldHint": case.open_world});
    let mut new_hints = hints.clone();
    match case.brk {
        Break::Nothing => {}
        Break::Hints => new_hints["readOnlyHint"] = json!(!case.read_only),
        Break::NewRequired => {
            new_props.insert("extra_req".into(), json!({"type": "string"}));
            new_required.push("extra_req");
        }
        Break::RequiredDropped => {
            new_props.remove(required[0]);
            new_required.remove(0);
        }
    }
    let before = rename_tool(
        &old_name,
        "Search records in the workspace matching the filters.",
        "Old title",
        &props,
        &required,
        &hints,
    );
    let after = rename_tool(
        &new_name,
        "Find entries across projects by query, paged.",
        "New title",
        &new_props,
        &new_required,
        &new_hints,
    );
    let mut old: Vec<Value> = (0..case.bystanders)
        .map(|i| {
            let name = format!("bystander_{i}");
            rename_tool(&name, "Unchanged.", "Same", &props, &required, &hints)
        })
        .collect();
    let mut new = old.clone();
    old.push(before);
    new.push(after);
    let mut want = if case.brk.is_nothing() {
        let mut w = vec!["tool-renamed", "description-changed", "title-changed"];
        w.extend(std::iter::repeat_n(
            "input-optional-property-added",
            case.added,
        ));
        if relaxed {
            w.push("input-property-became-optional");
        }
        w
    } else {
        vec!["tool-removed", "tool-added"]
    };
    want.sort_unstable();
    (old, new, want)
}

impl Break {
    fn is_nothing(self) -> bool {
        matches!(self, Break::Nothing)
    }
}

proptest! {
    #![proptest_config(config())]

    /// A tool renamed (its verb or its noun replaced) and changed in the
    /// same release (description and title rewritten, an argument made
    /// optional, optional arguments added) is one `tool-renamed` and each
    /// change under it: the kept arguments tie it although neither its name
    /// nor its description does. Breaking one tie (the hints, a new
    /// required argument, an old required argument dropped) leaves a
    /// removal and an addition.
    #[test]
    fn renamed_and_changed_tools_pair_by_what_stayed(case in rename_case()) {
        let (old, new, want) = renamed_and_changed(&case);
        let (old, new) = (strict_catalog(old), strict_catalog(new));
        let c = compare(&old, &new);
        prop_assert_eq!(ids_of(&c), want, "{:?}\n{}", case.brk, render(&c));
        check_findings(&old, &new, &c)?;
    }
}
