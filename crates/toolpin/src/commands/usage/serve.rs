//! `toolpin usage serve`: the OTLP receiver flushing into the store until
//! stopped, and what it says on stderr as it runs.

use toolpin_manifest::text::plural_of;
use toolpin_ops::usage::serve::{serve_until_stopped, ServeEvents, ServeSettings};
use toolpin_ops::usage::store::open_store;
use toolpin_usage::{Aggregates, IngestReport};

use super::{optional_config, options, Outcome};
use crate::cli::UsageServeArgs;
use crate::error::CliError;

/// What `usage serve` says on stderr as it runs.
struct Printer {
    quiet: bool,
    shown: String,
    max_names: usize,
}

impl ServeEvents for Printer {
    fn listening(&self, addr: std::net::SocketAddr) {
        // Always printed: with port 0 it is how the caller learns it.
        eprintln!(
            "usage serve: listening on http://{addr} (POST /v1/traces), storing in {}",
            self.shown
        );
    }
    fn stored(&self, calls: u64, keys: usize, folded: &[u64; 5]) {
        if !self.quiet {
            eprintln!(
                "usage serve: stored {} under {}",
                plural_of(calls, "call", "calls"),
                plural_of(keys as u64, "key", "keys")
            );
        }
        // Always printed: calls under "(other)" are news.
        let parts: Vec<String> = toolpin_usage::KEY_PARTS
            .iter()
            .zip(folded)
            .filter(|(_, n)| **n > 0)
            .map(|(part, n)| format!("{part} {n}"))
            .collect();
        if !parts.is_empty() {
            eprintln!(
                "warning: usage serve: calls naming more than {} distinct values of a key part since the last flush were counted under {:?} ({}); raise --max-names if these are real",
                self.max_names,
                toolpin_usage::OTHER,
                parts.join(", ")
            );
        }
    }
    fn store_failed(&self, error: &str, buffered: usize, held: usize) {
        eprintln!(
            "warning: usage serve: {error}; {buffered} keys ({} MiB) kept for the next flush",
            held >> 20
        );
    }
    fn bad_input(&self, report: &IngestReport) {
        eprint!("{report}");
    }
    fn refused(&self, n: &toolpin_ops::usage::serve::Notices) {
        let mut what = Vec::new();
        if n.busy > 0 {
            what.push(format!(
                "{} answered 503 (the buffer was full: see --max-buffer)",
                plural_of(n.busy, "export", "exports")
            ));
        }
        if n.too_large > 0 {
            what.push(format!(
                "{} answered 413 (see --max-body)",
                plural_of(n.too_large, "export", "exports")
            ));
        }
        if n.body_timeouts > 0 {
            what.push(format!(
                "{} not received within --body-timeout (408)",
                plural_of(n.body_timeouts, "body", "bodies")
            ));
        }
        if !n.closed.is_empty() {
            let closed: Vec<String> = n
                .closed
                .iter()
                .map(|(why, k)| format!("{} {k}", why.name()))
                .collect();
            what.push(format!("connections closed: {}", closed.join(", ")));
        }
        if n.accept_failures > 0 {
            what.push(format!(
                "{} failed ({}); retried with a pause",
                plural_of(n.accept_failures, "accept", "accepts"),
                n.accept_error.as_deref().unwrap_or("")
            ));
        }
        if !what.is_empty() {
            eprintln!("warning: usage serve: {}", what.join("; "));
        }
    }
}

/// `toolpin usage serve`: the OTLP receiver (`toolpin_ops::usage::serve`)
/// flushing into the store until stopped.
pub fn run(args: &UsageServeArgs, quiet: bool) -> Result<Outcome, CliError> {
    let project = optional_config(&args.store.config)?;
    let cfg = project.as_ref().map(|p| &p.config);
    let mut store = open_store(args.store.store.as_deref(), cfg, false)?;
    let mut settings = ServeSettings::new(&args.listen, args.flush_every, options(&args.read));
    // The flags given override the receiver's defaults.
    let receiver = &mut settings.receiver;
    let set = |slot: &mut usize, flag: Option<usize>| *slot = flag.unwrap_or(*slot);
    set(&mut receiver.max_body_bytes, args.max_body);
    set(&mut receiver.max_buffer_bytes, args.max_buffer);
    set(&mut receiver.max_names, args.max_names);
    set(&mut receiver.max_connections, args.max_connections);
    receiver.body_timeout = args.body_timeout.unwrap_or(receiver.body_timeout);
    receiver.connection_idle = args.connection_idle.unwrap_or(receiver.connection_idle);
    let printer = Printer {
        quiet,
        shown: store.shown.clone(),
        max_names: receiver.max_names,
    };
    let mut write = |aggregates: &Aggregates| -> Result<(), String> {
        store
            .ledger
            .usage_merge(aggregates)
            .map(|_| ())
            .map_err(|e| store.err(e).to_string())
    };
    serve_until_stopped(&settings, &mut write, &printer).map_err(CliError::new)?;
    Ok(Outcome::Clean)
}
