//! `toolpin init`: write a toolpin.toml from the MCP servers the clients
//! on this machine already use (discovery and rendering: `toolpin-init`).

use super::{print, Outcome};
use crate::cli::InitArgs;
use crate::error::CliError;

/// Runs `toolpin init`.
pub fn run(args: &InitArgs, quiet: bool) -> Result<Outcome, CliError> {
    if !args.print && args.output.exists() && !args.force {
        return Err(CliError::new(format!(
            "{} already exists; pass --force to overwrite it, or --print to see what init would write",
            args.output.display()
        )));
    }
    let project = std::env::current_dir()
        .map_err(|e| CliError::new(format!("cannot read the current directory: {e}")))?;
    let project = std::fs::canonicalize(&project).unwrap_or(project);
    let home = toolpin_init::home_dir().map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    let output_dir = if args.print {
        Some(project.clone())
    } else {
        let abs = project.join(&args.output);
        abs.parent()
            .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()))
    };
    let workspace = if output_dir.as_deref() == Some(project.as_path()) {
        ".".to_string()
    } else {
        project.display().to_string()
    };
    let ctx = toolpin_init::Context {
        home,
        dirs: toolpin_init::config_dirs(),
        project,
        workspace,
    };
    let toolpin_init::Generated {
        rendered,
        summary,
        warnings,
    } = toolpin_init::generate(&ctx, args.from.as_deref(), args.client)?;
    if !quiet {
        for w in &warnings {
            eprintln!("warning: {w}");
        }
    }
    let exports = match rendered.exports.len() {
        0 => String::new(),
        1..=4 => format!(
            "; export {} before `toolpin lock`",
            rendered.exports.join(", ")
        ),
        n => format!(
            "; export the {n} variables listed at the top of the file before `toolpin lock`"
        ),
    };
    if args.print {
        print(&rendered.text)?;
        if !quiet {
            eprintln!("{summary}{exports}");
        }
    } else {
        toolpin_manifest::fs::write_atomic(&args.output, rendered.text.as_bytes())
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", args.output.display())))?;
        if !quiet {
            eprintln!("{summary}; wrote {}{exports}", args.output.display());
        }
    }
    Ok(Outcome::Clean)
}
