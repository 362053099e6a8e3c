//! Runs the whole pinning pipeline once on a `tools/list` file, for
//! measuring peak memory and per-step time:
//!
//! ```text
//! cargo run --release -p toolpin-manifest --example gen_catalog -- 12000 target/catalog.json
//! cargo build --release -p toolpin-manifest --example pipeline_rss
//! /usr/bin/time -v target/release/examples/pipeline_rss target/catalog.json
//! ```
//!
//! read → `json::parse` → `Transform::apply` → `ServerPin::new` →
//! `Catalog::new` → `lockfile::to_string`. Prints the tool count on stdout
//! and the time and resident memory after each step on stderr.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{json, Value};
use toolpin_manifest::{json as tjson, lockfile, Catalog, ServerPin, Transform};

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: pipeline_rss TOOLS_LIST.json");
        return ExitCode::from(2);
    };
    match run(&path) {
        Ok(count) => {
            println!("{count}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pipeline_rss: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(path: &str) -> Result<usize, Box<dyn std::error::Error>> {
    let mut clock = Clock(Instant::now());
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    clock.step("read", bytes.len());

    let doc = tjson::parse(&bytes, path)?;
    clock.step("json::parse", bytes.len());
    let tools = match doc {
        Value::Object(mut doc) => match doc.remove("tools") {
            Some(Value::Array(tools)) => tools,
            _ => return Err(format!("{path}: no \"tools\" array").into()),
        },
        _ => return Err(format!("{path}: not a tools/list result").into()),
    };

    let tools = Transform::default().apply(tools)?;
    clock.step("Transform::apply", bytes.len());
    let pin = ServerPin::new("server", json!({"file": path}), "mcp", tools)?;
    clock.step("ServerPin::new", bytes.len());
    let catalog = Catalog::new("default", BTreeMap::from([("server".to_string(), pin)]))?;
    clock.step("Catalog::new", bytes.len());
    let text = lockfile::to_string(&catalog);
    clock.step("lockfile::to_string", bytes.len());
    eprintln!("lockfile: {} bytes", text.len());

    let count = catalog.tool_count();
    drop(text);
    drop(catalog);
    clock.step("drop", bytes.len());
    Ok(count)
}

/// Current and peak resident set size, where `/proc` tells them.
fn rss() -> String {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return "n/a".into();
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            // `kB` in /proc is KiB; print decimal MB like the MB/s figures.
            .map_or_else(
                || "?".to_string(),
                |kib| format!("{:.1} MB", kib as f64 * 1.024 / 1e3),
            )
    };
    format!("{} (peak {})", field("VmRSS:"), field("VmHWM:"))
}

struct Clock(Instant);

impl Clock {
    fn step(&mut self, what: &str, input_len: usize) {
        let now = Instant::now();
        let secs = now.duration_since(self.0).as_secs_f64();
        eprintln!(
            "{what:>20}: {:8.1} ms  ({:7.1} MB/s of input)  rss {}",
            secs * 1e3,
            input_len as f64 / 1e6 / secs,
            rss()
        );
        self.0 = now;
    }
}
