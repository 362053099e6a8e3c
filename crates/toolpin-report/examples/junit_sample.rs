//! Prints the JUnit report for two tool files (`{"tools": [...]}`), as one
//! server `orders`, under the default policy. Used by scripts/check-junit.
//!
//! cargo run -p toolpin-report --example junit_sample -- BEFORE.json AFTER.json

use std::collections::BTreeMap;

use serde_json::{json, Value};
use toolpin_drift::policy::Policy;
use toolpin_manifest::{Catalog, ServerPin, Transform};

fn catalog(path: &str) -> Result<Catalog, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let tools = doc["tools"].as_array().cloned().unwrap_or_default();
    let tools = Transform::default()
        .apply(tools)
        .map_err(|e| format!("{path}: {e:?}"))?;
    let pin = ServerPin::new("orders", json!({"file": path}), "mcp", tools)
        .map_err(|e| format!("{path}: {e:?}"))?;
    Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)]))
        .map_err(|e| format!("{path}: {e:?}"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 2 {
        eprintln!("usage: junit_sample BEFORE.json AFTER.json");
        std::process::exit(2);
    }
    let run = || -> Result<String, String> {
        let mut c = toolpin_drift::compare(&catalog(&args[0])?, &catalog(&args[1])?);
        let verdict = Policy::default().apply(&mut c);
        Ok(toolpin_report::junit::render(&c, &verdict))
    };
    match run() {
        Ok(xml) => print!("{xml}"),
        Err(e) => {
            eprintln!("junit_sample: {e}");
            std::process::exit(2);
        }
    }
}
