//! Pins one large tool file the way `toolpin lock` does and reports the
//! time and peak RSS, for docs/performance.md.
//!
//! ```text
//! cargo run --release -p toolpin-capture --example gen_catalog
//! cargo run --release -p toolpin-capture --example pipeline_rss -- target/catalog-12000.json
//! ```

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use toolpin_capture::source;
use toolpin_manifest::{Catalog, PinBuilder, Transform};

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: pipeline_rss PATH");
        return ExitCode::from(2);
    };
    let start = Instant::now();
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("pipeline_rss: cannot read {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut builder = PinBuilder::new(Transform::default());
    let format = match source::parse_tools(&bytes, &path, None, &mut builder) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pipeline_rss: {e}");
            return ExitCode::FAILURE;
        }
    };
    let pin = builder.finish(json!({"file": path}), format.name(), None);
    let catalog = match Catalog::new("default", BTreeMap::from([("bench".to_string(), pin)])) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pipeline_rss: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{} tools, {} bytes, {:.1} ms, catalog {}",
        catalog.tool_count(),
        bytes.len(),
        start.elapsed().as_secs_f64() * 1000.0,
        catalog.fingerprint().short()
    );
    ExitCode::SUCCESS
}
