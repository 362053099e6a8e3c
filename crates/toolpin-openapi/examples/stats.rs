//! Converts a JSON OpenAPI document with the default settings and prints
//! what came out: operations, tools, the total and largest compact size,
//! the most values in one tool and the deepest nesting. For sizing the
//! inlining budgets against real documents (docs/openapi.md).
//!
//! ```text
//! cargo run --release -p toolpin-openapi --example stats -- api.github.com.json
//! ```

use std::time::Instant;

use serde_json::Value;

fn depth(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn values(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(values).sum::<usize>(),
        Value::Array(a) => 1 + a.iter().map(values).sum::<usize>(),
        _ => 1,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: stats FILE.json")?;
    let start = Instant::now();
    let doc: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    let parsed = start.elapsed();
    let mut bytes = 0usize;
    let mut all_values = 0usize;
    let mut largest = (0usize, String::new());
    let mut deepest = (0usize, String::new());
    let mut with_defs = 0usize;
    let options = toolpin_openapi::Options::default();
    let converted = toolpin_openapi::convert(&doc, &options, &mut |tool| {
        let name = tool["name"].as_str().unwrap_or_default().to_string();
        let text = serde_json::to_string(&tool).unwrap_or_default();
        bytes += text.len();
        let n = values(&tool);
        all_values += n;
        if n > largest.0 {
            largest = (n, name.clone());
        }
        let d = depth(&tool);
        if d > deepest.0 {
            deepest = (d, name);
        }
        if tool.pointer("/inputSchema/$defs").is_some()
            || tool.pointer("/outputSchema/$defs").is_some()
        {
            with_defs += 1;
        }
        Ok(())
    })?;
    println!(
        "parsed in {parsed:?}, converted and measured in {:?}",
        start.elapsed() - parsed
    );
    println!(
        "{} operations, {} tools ({with_defs} with $defs), {bytes} bytes compact, {all_values} values",
        converted.operations, converted.tools
    );
    println!(
        "most values in one tool: {} ({}); deepest: {} ({})",
        largest.0, largest.1, deepest.0, deepest.1
    );
    for w in &converted.warnings {
        println!("warning: {w}");
    }
    Ok(())
}
