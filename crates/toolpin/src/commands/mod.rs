//! One module per command. `run` dispatches; each command is one function,
//! `commands::<name>::run`, which returns what it concluded.

pub mod accept;
pub mod check;
pub mod compare;
pub mod contract;
pub mod diff;
pub mod evals;
pub mod fingerprint;
pub mod history;
pub mod init;
pub mod lock;
pub mod ls;
pub mod proxy;
pub mod record;
pub mod report_target;
pub mod review;
pub mod rules;
pub mod stamp;
pub mod usage;
pub mod version;
pub mod watch;
pub mod withdraw;

use std::io::Write;
use std::path::{Path, PathBuf};

use toolpin_manifest::text::plural;
use toolpin_manifest::{lockfile, Catalog};
use toolpin_ops::project::Project;
use toolpin_report::{ColorChoice, Style};

use crate::cli::{Cli, ColorArg, Command, ConfigArgs};
use crate::error::CliError;

/// What a command concluded.
pub enum Outcome {
    Clean,
    Drift,
}

/// Runs the command the arguments name.
pub fn run(cli: &Cli) -> Result<Outcome, CliError> {
    let color = match cli.color {
        ColorArg::Auto => ColorChoice::Auto,
        ColorArg::Always => ColorChoice::Always,
        ColorArg::Never => ColorChoice::Never,
    };
    let style = Style {
        color: toolpin_report::use_color(color),
    };
    let quiet = cli.quiet;
    match &cli.command {
        Command::Init(args) => init::run(args, quiet),
        Command::Lock { config } => lock::run(config, quiet),
        Command::Ls { config } => ls::run(config, quiet, style),
        Command::Check { config, report } => check::run(config, report, quiet, style),
        Command::Accept {
            tools,
            seen_tools,
            reason,
            evidence,
            config,
        } => {
            if seen_tools.is_empty() {
                accept::run(config, tools, reason, evidence, quiet)
            } else {
                accept::seen_tools(config, seen_tools, reason, evidence, quiet)
            }
        }
        Command::Compare(args) => compare::run(args, style),
        Command::Review { verbose, config } => review::run(config, *verbose, style, quiet),
        Command::Proxy(args) => proxy::run(args),
        Command::Withdraw {
            tool,
            reason,
            config,
        } => withdraw::withdraw(config, tool, reason, quiet),
        Command::Restore { tool, config } => withdraw::restore(config, tool, quiet),
        Command::Diff {
            old,
            new,
            input_format,
            config,
            report,
        } => diff::run(old, new, *input_format, config.as_deref(), report, style),
        Command::Stamp { json, config } => stamp::run(config, *json),
        Command::Record(args) => record::run(args, quiet),
        Command::Evals { command } => evals::run(command, quiet, style),
        Command::Watch(args) => watch::run(args, quiet),
        Command::History(args) => history::run(args),
        Command::Usage { command } => usage::run(command, quiet),
        Command::Contract { command } => contract::run(command, quiet, style),
        Command::Rules { id, markdown } => rules::run(id.as_deref(), *markdown),
        Command::Fingerprint {
            path,
            json,
            release,
            input_format,
            config,
        } => fingerprint::run(path.as_deref(), *json, *release, *input_format, config),
    }
}

pub(crate) use toolpin_ops::capture::{capture_config, catalog_from_path};

/// The lockfile at `path` (an absent one says to run `toolpin lock`).
pub(crate) fn read_lockfile(path: &Path) -> Result<Catalog, CliError> {
    Ok(lockfile::read(path)?)
}

impl ConfigArgs {
    /// The command's settings, resolved once: the configuration (with
    /// `--env`'s overrides) and the lockfile (`--lockfile`, else the
    /// configured one).
    pub fn resolve(&self) -> Result<Project, CliError> {
        Ok(Project::load(
            &self.config,
            self.env.as_deref(),
            self.lockfile.as_deref(),
        )?)
    }

    /// The lockfile alone: `--lockfile` (no configuration is read), else
    /// the configured one.
    pub fn lockfile_path(&self) -> Result<PathBuf, CliError> {
        Ok(toolpin_ops::project::lockfile_path(
            &self.config,
            self.env.as_deref(),
            self.lockfile.as_deref(),
        )?)
    }
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a message.
pub(crate) fn print(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::new(format!("cannot write to stdout: {e}"))),
    }
}

/// The lockfile as code scanning and workflow annotations name it: relative
/// to the root of the git repository that holds it (found by its `.git`),
/// whatever directory toolpin runs in; outside a repository, as given.
fn repository_path(path: &Path) -> String {
    let Ok(absolute) = path.canonicalize() else {
        return display(path);
    };
    for dir in absolute.ancestors().skip(1) {
        if dir.join(".git").exists() {
            if let Ok(relative) = absolute.strip_prefix(dir) {
                return relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
            }
        }
    }
    display(path)
}

pub(crate) use toolpin_manifest::text::shown_path as display;
