//! `toolpin proxy`: serve the pinned catalog to an agent.

use super::Outcome;
use crate::cli::ProxyArgs;
use crate::error::CliError;
use crate::{config, proxy};

pub fn run(args: &ProxyArgs) -> Result<Outcome, CliError> {
    let cfg = config::load(&args.config.config, args.config.env.as_deref())?;
    let lockfile = args
        .config
        .lockfile
        .clone()
        .unwrap_or_else(|| cfg.default_lockfile());
    proxy::run(proxy::ProxyRun {
        config: &cfg,
        lockfile,
        servers: &args.servers,
        listen: args.listen.clone(),
        metrics_listen: args.metrics_listen.clone(),
        allow_hosts: &args.allow_hosts,
        allow_origins: &args.allow_origins,
        events: args.events.clone(),
        max_sessions: args
            .max_sessions
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        start_check: !args.no_start_check,
        // Progress spinners would draw on the agent's terminal.
        capture: args.config.capture_options(true),
    })
    .map(|()| Outcome::Clean)
}
