//! Capture → transform → normalize → fingerprint: from configured servers
//! (or one file) to a [`Catalog`].

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use toolpin_capture::{source, Format};
use toolpin_manifest::{lockfile, Catalog, PinBuilder, ServerPin, Transform};

use crate::config::{Config, Server};
use crate::error::CliError;

/// Captures every configured server; the first failure stops the run.
pub fn capture_config(config: &Config) -> Result<Catalog, CliError> {
    let mut servers = BTreeMap::new();
    for server in &config.servers {
        let pin = capture_server(server)
            .map_err(|e| CliError::new(format!("server {:?}: {e}", server.name)))?;
        servers.insert(server.name.clone(), pin);
    }
    Catalog::new(config.environment.clone(), servers).map_err(|e| CliError::new(e.to_string()))
}

fn capture_server(server: &Server) -> Result<ServerPin, String> {
    let mut builder = PinBuilder::new(server.transform.clone());
    let format = server
        .source
        .capture(server.format, &mut builder)
        .map_err(|e| e.to_string())?;
    Ok(builder.finish(server.record.clone(), format.name(), None))
}

/// Reads a lockfile or a tool-definition file (detected by content) as a
/// catalog. A tool file becomes one server named after the file's stem.
pub fn catalog_from_path(path: &Path, forced: Option<Format>) -> Result<Catalog, CliError> {
    let origin = path.display().to_string();
    let bytes = source::read_file(path).map_err(|e| CliError::new(e.to_string()))?;
    if forced.is_none() && lockfile::looks_like_lockfile(&bytes) {
        return lockfile::parse(&bytes, &origin).map_err(|e| CliError::new(e.to_string()));
    }
    let mut builder = PinBuilder::new(Transform::default());
    let format = source::parse_tools(&bytes, &origin, forced, &mut builder)
        .map_err(|e| CliError::new(e.to_string()))?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("file")
        .replace('/', "_");
    let pin = builder.finish(json!({ "file": origin }), format.name(), None);
    Catalog::new("default", BTreeMap::from([(name, pin)])).map_err(|e| CliError::new(e.to_string()))
}

/// Reads the lockfile at `path`, with a pointer to `toolpin lock` when absent.
pub fn read_lockfile(path: &Path) -> Result<Catalog, CliError> {
    let origin = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::new(format!(
                "{origin} not found; run `toolpin lock` to create it"
            )))
        }
        Err(e) => return Err(CliError::new(format!("cannot read {origin}: {e}"))),
    };
    lockfile::parse(&bytes, &origin).map_err(|e| CliError::new(e.to_string()))
}
