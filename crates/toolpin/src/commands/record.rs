//! `toolpin record -- CMD…`: run an agent against the recording endpoint
//! and print the tools its framework sent (toolpin_capture::record).

use std::collections::BTreeMap;

use toolpin_capture::record::{self, output, RecordSpec};

use super::{print, Outcome};
use crate::cli::RecordArgs;
use crate::error::CliError;

pub fn run(args: &RecordArgs, quiet: bool) -> Result<Outcome, CliError> {
    if args.name.is_empty() || args.name.contains('/') {
        return Err(CliError::new(
            "--name must be non-empty and hold no '/' (it names a server)",
        ));
    }
    let spec = RecordSpec {
        argv: args.command.clone(),
        env: BTreeMap::new(),
        cwd: None,
        timeout: args.timeout,
        merge: args.merge,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let recording = runtime.block_on(record::record(&spec))?;
    let catalogs = record::catalogs(&recording, args.merge)?;
    let document =
        output::document(&recording, &catalogs, args.format, &args.name).map_err(CliError::new)?;
    if !quiet {
        eprintln!(
            "{}",
            toolpin_report::style::printable(
                &output::summary(&recording, &catalogs, &args.name),
                false
            )
        );
        for c in &catalogs {
            for w in &c.warnings {
                eprintln!("warning: {}", toolpin_report::style::printable(w, false));
            }
        }
    }
    match &args.output {
        Some(path) => toolpin_manifest::fs::write_atomic(path, document.as_bytes())
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", path.display())))?,
        None => print(&document)?,
    }
    Ok(Outcome::Clean)
}
