//! Runs the published fingerprint test vectors (docs/fingerprint-vectors.json,
//! specified in docs/fingerprint.md) through the real pipeline: Transform,
//! ServerPin, Catalog. Every case is checked and every mismatch reported.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use toolpin_manifest::{
    jcs, Catalog, Fingerprint, Glob, PinBuilder, Pointer, ServerPin, Transform,
};

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/fingerprint-vectors.json"
);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// Prose for readers of the file; not checked.
    #[allow(dead_code)]
    note: Option<String>,
    transform: TransformSpec,
    input: Vec<Value>,
    normalized: Vec<Value>,
    tool_fingerprints: BTreeMap<String, String>,
    /// A live server's instructions, pinned with its tools.
    #[serde(default)]
    instructions: Option<String>,
    server_fingerprint: String,
    catalog_fingerprint: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TransformSpec {
    prefix: String,
    include: Vec<String>,
    exclude: Vec<String>,
    ignore: Vec<String>,
}

fn load() -> Vec<Case> {
    let text = std::fs::read_to_string(VECTORS).unwrap_or_else(|e| panic!("{VECTORS}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{VECTORS}: {e}"))
}

fn hex(s: &str, what: &str) -> Result<Fingerprint, String> {
    Fingerprint::from_hex(s).ok_or_else(|| format!("{what} {s:?} is not 64 lowercase hex digits"))
}

fn transform(spec: &TransformSpec) -> Result<Transform, String> {
    Ok(Transform {
        prefix: spec.prefix.clone(),
        include: spec
            .include
            .iter()
            .map(|g| Glob::new(g))
            .collect::<Result<_, _>>()?,
        exclude: spec
            .exclude
            .iter()
            .map(|g| Glob::new(g))
            .collect::<Result<_, _>>()?,
        ignore: spec
            .ignore
            .iter()
            .map(|p| Pointer::parse(p))
            .collect::<Result<_, _>>()?,
    })
}

fn name_of(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or_default()
}

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Checks one case; returns every mismatch found.
fn check(case: &Case) -> Vec<String> {
    let mut errs = Vec::new();
    let tr = match transform(&case.transform) {
        Ok(tr) => tr,
        Err(e) => return vec![format!("bad transform: {e}")],
    };
    let mut tools = match tr.apply(case.input.clone()) {
        Ok(tools) => tools,
        Err(e) => return vec![format!("Transform::apply failed: {e}")],
    };
    tools.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    if tools != case.normalized {
        errs.push(format!(
            "normalized differs\n  expected: {}\n  actual:   {}",
            pretty(&case.normalized),
            pretty(&tools)
        ));
    }

    let pin = match ServerPin::new(&case.name, Value::Null, "mcp", tools.clone()) {
        Ok(pin) => pin.with_instructions(case.instructions.clone()),
        Err(e) => return vec![format!("ServerPin::new failed: {e}")],
    };
    // Pinned tools are held as canonical text, so compare canonical forms
    // (`1.0` and `1` are one number there, as in the fingerprint).
    let canon = |v: &Value| String::from_utf8(jcs::to_canonical_vec(v)).unwrap_or_default();
    let pinned: Vec<String> = pin.tools.values().map(|t| canon(&t.value())).collect();
    if pinned != case.normalized.iter().map(canon).collect::<Vec<_>>() {
        errs.push("ServerPin's tools, in name order, differ from normalized".into());
    }
    // The streaming builder pins the same as apply-then-new.
    let mut builder = PinBuilder::new(tr.clone());
    let streamed = case.input.iter().try_for_each(|t| builder.push(t.clone()));
    match streamed {
        Ok(()) => {
            let built = builder
                .finish(Value::Null, "mcp", None)
                .with_instructions(case.instructions.clone());
            if built.tools != pin.tools || built.fingerprint() != pin.fingerprint() {
                errs.push("PinBuilder differs from Transform::apply + ServerPin::new".into());
            }
        }
        Err(e) => errs.push(format!("PinBuilder failed: {e}")),
    }

    let mut expected_tools = BTreeMap::new();
    for (name, fp) in &case.tool_fingerprints {
        match hex(fp, &format!("tool_fingerprints[{name:?}]")) {
            Ok(fp) => {
                expected_tools.insert(name.clone(), fp);
            }
            Err(e) => errs.push(e),
        }
    }
    let actual_tools: BTreeMap<String, Fingerprint> = pin
        .tools
        .iter()
        .map(|(n, t)| (n.clone(), t.fingerprint))
        .collect();
    if actual_tools != expected_tools {
        let show = |m: &BTreeMap<String, Fingerprint>| {
            m.iter()
                .map(|(n, f)| format!("{n:?}: {}", f.to_hex()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        errs.push(format!(
            "tool fingerprints differ\n  expected: {}\n  actual:   {}",
            show(&expected_tools),
            show(&actual_tools)
        ));
    }
    // The file's own normalized tools must hash to the file's fingerprints.
    let mut scratch = Vec::new();
    for tool in &case.normalized {
        let fp = Fingerprint::of_tool(tool, &mut scratch);
        if expected_tools.get(name_of(tool)) != Some(&fp) {
            errs.push(format!(
                "normalized tool {:?} hashes to {}, not to its tool_fingerprints entry",
                name_of(tool),
                fp.to_hex()
            ));
        }
    }

    match hex(&case.server_fingerprint, "server_fingerprint") {
        Ok(want) if want != pin.fingerprint() => errs.push(format!(
            "server fingerprint: expected {}, got {}",
            want.to_hex(),
            pin.fingerprint().to_hex()
        )),
        Ok(_) => {}
        Err(e) => errs.push(e),
    }

    let catalog = match Catalog::new(
        "default",
        BTreeMap::from([(case.name.clone(), pin.clone())]),
    ) {
        Ok(c) => c,
        Err(e) => return [errs, vec![format!("Catalog::new failed: {e}")]].concat(),
    };
    let want_catalog = match hex(&case.catalog_fingerprint, "catalog_fingerprint") {
        Ok(want) => want,
        Err(e) => return [errs, vec![e]].concat(),
    };
    if catalog.fingerprint() != want_catalog {
        errs.push(format!(
            "catalog fingerprint: expected {}, got {}",
            want_catalog.to_hex(),
            catalog.fingerprint().to_hex()
        ));
    }

    // Properties docs/fingerprint.md promises, checked on every case:
    // the catalog fingerprint does not depend on how tools are grouped into
    // servers (here: one server per tool) ...
    let mut split = BTreeMap::new();
    for (i, tool) in tools.iter().enumerate() {
        let server = format!("s{i:03}");
        match ServerPin::new(&server, Value::Null, "mcp", vec![tool.clone()]) {
            Ok(p) => {
                // The instructions go with one of them.
                let said = if i == 0 {
                    case.instructions.clone()
                } else {
                    None
                };
                split.insert(server, p.with_instructions(said));
            }
            Err(e) => errs.push(format!("ServerPin::new (split) failed: {e}")),
        }
    }
    match Catalog::new("default", split) {
        Ok(c) if c.fingerprint() != want_catalog => errs.push(format!(
            "catalog fingerprint depends on grouping: one server per tool gives {}",
            c.fingerprint().to_hex()
        )),
        Ok(_) => {}
        Err(e) => errs.push(format!("Catalog::new (split) failed: {e}")),
    }
    // ... nor on the order the server lists its tools in.
    let reversed: Vec<Value> = case.input.iter().rev().cloned().collect();
    match tr
        .apply(reversed)
        .map_err(|e| e.to_string())
        .and_then(|t| ServerPin::new("r", Value::Null, "mcp", t).map_err(|e| e.to_string()))
        .map(|p| p.with_instructions(case.instructions.clone()))
    {
        Ok(p) if p.fingerprint() != pin.fingerprint() => {
            errs.push("server fingerprint depends on tool order".into())
        }
        Ok(_) => {}
        Err(e) => errs.push(format!("reversed input failed: {e}")),
    }
    errs
}

#[test]
fn fingerprint_vectors() {
    let cases = load();
    assert!(cases.len() >= 10, "{VECTORS}: only {} cases", cases.len());
    let mut names = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for case in &cases {
        if !names.insert(case.name.as_str()) {
            failures.push(format!("duplicate case name {:?}", case.name));
        }
        for e in check(case) {
            failures.push(format!("case {:?}: {e}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s) in the {} vectors of {VECTORS}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// docs/fingerprint.md shows docs/fingerprint.py inline; keep them the same.
#[test]
fn python_snippet_is_shown_in_the_spec() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/");
    let read = |f: &str| {
        std::fs::read_to_string(format!("{dir}{f}")).unwrap_or_else(|e| panic!("{dir}{f}: {e}"))
    };
    let (spec, snippet) = (read("fingerprint.md"), read("fingerprint.py"));
    assert!(
        snippet.lines().count() <= 12,
        "docs/fingerprint.py is meant to stay a short snippet"
    );
    assert!(
        spec.contains(&format!("```python\n{snippet}```\n")),
        "docs/fingerprint.md must show docs/fingerprint.py verbatim in a ```python block"
    );
}
