//! What the proxy writes down beyond its event log: the drift it sees at
//! run time, per tool, and the calls it refuses because of that drift.
//! `toolpin proxy` records them in the drift ledger; the proxy itself keeps
//! no store and knows no ledger (a hook keeps this crate free of SQL).

use toolpin_drift::Finding;

/// A tool whose live definition differs from its pin, seen at run time.
#[derive(Debug)]
pub struct RuntimeDrift<'a> {
    /// The pin's environment.
    pub environment: &'a str,
    pub server: &'a str,
    /// The namespaced tool; `""` for the server's own members.
    pub tool: &'a str,
    /// The pinned and live fingerprints (64 hex); `None` for a tool added
    /// (not pinned) or removed (not live).
    pub pinned: Option<&'a str>,
    pub live: Option<&'a str>,
    /// The tool's findings, every severity (the ledger keeps the worst).
    pub findings: Vec<&'a Finding>,
    /// `serverInfo.version`, live and as pinned.
    pub server_version: Option<&'a str>,
    pub pinned_version: Option<&'a str>,
}

/// A call refused because its tool changed upstream.
#[derive(Debug)]
pub struct RuntimeRefusal<'a> {
    pub environment: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
    /// The pinned fingerprint, and the live one that blocks the tool.
    pub pinned: &'a str,
    pub live: Option<&'a str>,
    /// The rule of the change that blocks it, and its message.
    pub rule: &'a str,
    pub severity: toolpin_drift::Severity,
    pub message: &'a str,
}

/// Where run-time drift and refusals go. Called on the proxy's threads,
/// some of them serving calls: an implementation must not block (the
/// CLI's hands each to a writer thread). Every text given has had the
/// upstreams' secrets redacted.
pub trait Record: Send + Sync {
    fn drift(&self, drift: &RuntimeDrift<'_>);
    fn refused(&self, refusal: &RuntimeRefusal<'_>);
}
