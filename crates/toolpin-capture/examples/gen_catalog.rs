//! Writes a large, realistic, deterministic MCP `tools/list` result.
//!
//! ```text
//! cargo run --release -p toolpin-capture --example gen_catalog -- [N] [PATH]
//! ```
//!
//! `N` defaults to 12,000 tools (about 17 MB); `PATH` defaults to
//! `target/catalog-N.json`. The generator is shared with the `catalog` bench.

use std::process::ExitCode;

#[path = "../benches/support/gen.rs"]
mod gen;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let n = match args.next() {
        None => gen::DEFAULT_TOOLS,
        Some(a) => match a.replace('_', "").parse::<usize>() {
            Ok(n) => n,
            Err(_) => {
                eprintln!("gen_catalog: tool count {a:?} is not a number");
                eprintln!("usage: gen_catalog [N] [PATH]");
                return ExitCode::from(2);
            }
        },
    };
    let path = args
        .next()
        .unwrap_or_else(|| format!("target/catalog-{n}.json"));
    let bytes = gen::tools_list_json(n);
    if let Err(e) = std::fs::write(&path, &bytes) {
        eprintln!("gen_catalog: cannot write {path}: {e}");
        return ExitCode::FAILURE;
    }
    println!("{path}: {n} tools, {} bytes", bytes.len());
    ExitCode::SUCCESS
}
