//! Capturing the configured servers, and reading a catalog from a file,
//! with what the sources warned about on stderr.

use std::path::Path;

use crate::settings::{Config, Server};
use toolpin_capture::{servers, Format};
use toolpin_manifest::Catalog;

use crate::Error;

/// Captures `servers` into one catalog. Unless `opts.progress` is off, the
/// sources' warnings are printed; when several servers fail, all but the
/// last are printed and the last is the error.
pub fn capture(
    servers: &[Server],
    environment: &str,
    opts: servers::Options,
) -> Result<Catalog, Error> {
    match servers::capture_servers(servers, environment, opts) {
        Ok(done) => {
            if opts.progress {
                for (who, warnings) in &done.warnings {
                    print_warnings(who, warnings);
                }
            }
            Ok(done.catalog)
        }
        Err(failed) => {
            for f in failed.0.iter().rev().skip(1).rev() {
                eprintln!("error: {f}");
            }
            Err(failed.into())
        }
    }
}

/// Captures every server of a configuration.
pub fn capture_config(cfg: &Config, opts: servers::Options) -> Result<Catalog, Error> {
    capture(&cfg.servers, &cfg.environment, opts)
}

/// A lockfile, tool file or OpenAPI document as a catalog; what converting
/// a document warned about is printed.
pub fn catalog_from_path(path: &Path, forced: Option<Format>) -> Result<Catalog, Error> {
    let read = toolpin_capture::catalog_from_path(path, forced)?;
    print_warnings(&path.display().to_string(), &read.warnings);
    Ok(read.catalog)
}

/// Warnings printed per source; past this, a count.
const MAX_WARNINGS: usize = 20;

/// A source's warnings on stderr after `who` (`server "x"`, or a file), at
/// most [`MAX_WARNINGS`] of them and then how many more there were.
/// (Secrets were redacted where the warnings were collected.)
fn print_warnings(who: &str, warnings: &[String]) {
    for w in warnings.iter().take(MAX_WARNINGS) {
        eprintln!(
            "warning: {who}: {}",
            toolpin_report::style::printable(w, false)
        );
    }
    if warnings.len() > MAX_WARNINGS {
        eprintln!(
            "warning: {who}: {} more warnings not shown",
            warnings.len() - MAX_WARNINGS
        );
    }
}
