//! `toolpin fingerprint`: the catalog fingerprint of a lockfile or tool file.

use std::path::Path;

use serde_json::{json, Map, Value};
use toolpin_capture::Format;
use toolpin_manifest::Catalog;

use super::{print, Outcome};
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn run(
    path: Option<&Path>,
    json: bool,
    release: bool,
    input_format: Option<Format>,
    config: &ConfigArgs,
) -> Result<Outcome, CliError> {
    let catalog = match path {
        Some(p) => super::catalog_from_path(p, input_format)?,
        None => super::read_lockfile(&config.lockfile_path()?)?,
    };
    let text = if json {
        fingerprints_json(&catalog)
    } else if release {
        catalog.fingerprint().release_line() + "\n"
    } else {
        catalog.fingerprint().short() + "\n"
    };
    print(&text)?;
    Ok(Outcome::Clean)
}

fn fingerprints_json(catalog: &Catalog) -> String {
    let mut servers = Map::new();
    for (name, pin) in &catalog.servers {
        let tools: Map<String, Value> = pin
            .tools
            .iter()
            .map(|(n, t)| (n.clone(), json!(t.fingerprint.to_hex())))
            .collect();
        servers.insert(
            name.clone(),
            json!({"fingerprint": pin.fingerprint().to_hex(), "tools": tools}),
        );
    }
    let doc = json!({
        "catalog": catalog.fingerprint().to_hex(),
        "release": catalog.fingerprint().release_line(),
        "servers": servers,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}
