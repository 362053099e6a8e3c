//! `toolpin ls`: capture every configured server and list its tools,
//! without writing anything.

use serde_json::Value;
use toolpin_manifest::Catalog;
use toolpin_report::Style;

use super::{print, Outcome};
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn run(args: &ConfigArgs, quiet: bool, style: Style) -> Result<Outcome, CliError> {
    let project = args.resolve()?;
    let catalog = super::capture_config(&project.config, args.capture_options(quiet))?;
    print(&list_tools(&catalog, style))?;
    Ok(Outcome::Clean)
}

/// `toolpin ls`: each server, then each tool with the first line of its
/// description.
fn list_tools(catalog: &Catalog, style: Style) -> String {
    use std::fmt::Write;
    use toolpin_report::style::printable;
    let mut out = String::new();
    for (name, pin) in &catalog.servers {
        let session = pin.session.as_ref();
        let recorded = session.and_then(|s| s.get("recorded"));
        let about = match (session, recorded) {
            // A record source: the API and the request it came from.
            (_, Some(r)) => match (r.get("model").and_then(Value::as_str), r.get("request")) {
                (Some(model), Some(n)) => format!(", {}, {model}, request {n}", pin.format),
                _ => format!(", {}, recorded", pin.format),
            },
            (Some(s), None) => format!(
                ", {} {}, protocol {}",
                s.pointer("/server_info/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                s.pointer("/server_info/version")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                s.get("protocol_version")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
            ),
            (None, None) => format!(", {}", pin.format),
        };
        let count = pin.tools.len();
        let heading = format!(
            "{name} ({count} tool{}{about})",
            if count == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "{}", style.bold(&printable(&heading, false)));
        let width = pin
            .tools
            .keys()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(0);
        for (tool_name, tool) in &pin.tools {
            let tool = tool.value();
            let first_line = tool
                .get("description")
                .and_then(Value::as_str)
                .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
                .unwrap_or("");
            let _ = writeln!(
                out,
                "  {:<width$}  {}",
                printable(tool_name, false),
                style.dim(&printable(first_line, false))
            );
        }
    }
    out
}
