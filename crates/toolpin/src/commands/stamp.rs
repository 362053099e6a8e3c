//! `toolpin stamp`: the release record.

use serde_json::{json, Value};

use super::{print, Outcome};
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn run(config: &ConfigArgs, json: bool) -> Result<Outcome, CliError> {
    let project = config.resolve()?;
    let (cfg, catalog) = (&project.config, project.read_lockfile()?);
    let tools = catalog.fingerprint().to_hex()[..12].to_string();
    let text = if json {
        let mut doc = serde_json::Map::new();
        doc.insert("tools".into(), json!(tools));
        doc.insert("catalog".into(), json!(catalog.fingerprint().to_hex()));
        doc.insert("environment".into(), json!(catalog.environment));
        if let Some(m) = &cfg.release.model {
            doc.insert("model".into(), json!(m));
        }
        if let Some(p) = &cfg.release.prompt {
            doc.insert("prompt".into(), json!(p));
        }
        serde_json::to_string_pretty(&Value::Object(doc)).unwrap_or_default() + "\n"
    } else {
        let mut lines = String::new();
        if let Some(m) = &cfg.release.model {
            lines += &format!("model {m}\n");
        }
        if let Some(p) = &cfg.release.prompt {
            lines += &format!("prompt {p}\n");
        }
        lines + &format!("tools {tools}\n")
    };
    print(&text)?;
    Ok(Outcome::Clean)
}
