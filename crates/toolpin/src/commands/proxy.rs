//! `toolpin proxy`: serve the pinned catalog to an agent. The selected
//! servers and the pin become the proxy's settings and the drift check at
//! start runs before the front opens in `toolpin_ops::proxy::serve`;
//! crates/toolpin-proxy does the serving, toolpin-config reads `[proxy]`
//! and `[facade."server/tool"]`.

use toolpin_ops::proxy::serve::{serve, Flags};

use super::Outcome;
use crate::cli::ProxyArgs;
use crate::error::CliError;

pub fn run(args: &ProxyArgs) -> Result<Outcome, CliError> {
    let project = args.config.resolve()?;
    let flags = Flags {
        servers: &args.servers,
        listen: args.listen.clone(),
        metrics_listen: args.metrics_listen.clone(),
        allow_hosts: &args.allow_hosts,
        allow_origins: &args.allow_origins,
        events: args.events.clone(),
        max_sessions: args
            .max_sessions
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        max_connections: args.max_connections,
        body_timeout: args.body_timeout,
        start_check: !args.no_start_check,
        // Progress spinners would draw on the agent's terminal.
        capture: args.config.capture_options(true),
    };
    serve(&project, &flags)?;
    Ok(Outcome::Clean)
}
