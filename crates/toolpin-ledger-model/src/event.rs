//! What a caller records: sightings, their findings, and the outcome.

use toolpin_drift::finding::Finding;
use toolpin_manifest::Severity;

/// The kind of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A failing check found the tool changed.
    Drift,
    /// A reviewer accepted a live fingerprint (`toolpin accept`, `review`).
    Approved,
    /// A reviewer rejected it.
    Rejected,
    /// The tool was withdrawn from the served catalog.
    Withdrawn,
    /// A withdrawn tool was restored.
    Restored,
    /// The proxy saw the live catalog drift at run time.
    ProxyDrift,
    /// The proxy refused a call because of drift.
    ProxyRefusal,
    /// A contract run failed.
    ContractFailed,
    /// `toolpin usage report` saw the calls of a tool shift at a catalog
    /// change (or day over day), or a tool or enum value that is not
    /// pinned.
    UsageShift,
}

impl EventKind {
    pub const ALL: [EventKind; 9] = [
        EventKind::Drift,
        EventKind::Approved,
        EventKind::Rejected,
        EventKind::Withdrawn,
        EventKind::Restored,
        EventKind::ProxyDrift,
        EventKind::ProxyRefusal,
        EventKind::ContractFailed,
        EventKind::UsageShift,
    ];

    /// The name stored in the ledger.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Drift => "drift",
            EventKind::Approved => "approved",
            EventKind::Rejected => "rejected",
            EventKind::Withdrawn => "withdrawn",
            EventKind::Restored => "restored",
            EventKind::ProxyDrift => "proxy-drift",
            EventKind::ProxyRefusal => "proxy-refusal",
            EventKind::ContractFailed => "contract-failed",
            EventKind::UsageShift => "usage-shift",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether events of this kind are open until resolved (drift seen by a
    /// check or the proxy, a refusal, a failed contract) rather than a record
    /// of a decision (approved, rejected, withdrawn, restored).
    pub fn is_resolvable(self) -> bool {
        matches!(
            self,
            EventKind::Drift
                | EventKind::ProxyDrift
                | EventKind::ProxyRefusal
                | EventKind::ContractFailed
        )
    }

    /// Whether a change of the tool's definition is what the event is
    /// about, so that an acceptance or upstream going back resolves it.
    pub fn resolved_by_fingerprint(self) -> bool {
        matches!(
            self,
            EventKind::Drift | EventKind::ProxyDrift | EventKind::ProxyRefusal
        )
    }
}

/// The parts of a finding the ledger keeps: never its before and after
/// values (whole tool definitions, for an added or removed tool).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FindingRecord {
    pub rule: String,
    pub pointer: String,
    pub severity: Severity,
    /// `structural`, `semantic`, `description` or `behavioural`.
    pub kind: String,
    /// The one line for people, as the caller gives it (redacted).
    pub message: String,
    /// More for people where there is more: a description's word diff, an
    /// enum's added values (redacted by the caller; the ledger keeps at
    /// most `toolpin_ledger::MAX_DETAIL` bytes).
    pub detail: Option<String>,
}

impl From<&Finding> for FindingRecord {
    fn from(f: &Finding) -> Self {
        Self {
            rule: f.rule.to_string(),
            pointer: f.pointer.clone(),
            severity: f.severity,
            kind: f.kind.name().to_string(),
            message: f.message.clone(),
            detail: None,
        }
    }
}

/// The worst (most severe) severity among `findings`.
fn worst(findings: &[FindingRecord]) -> Option<Severity> {
    findings.iter().map(|f| f.severity).min()
}

/// One sighting of an event, as a caller records it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sighting {
    pub kind: EventKind,
    pub environment: String,
    pub server: String,
    /// The namespaced tool; `""` for an event about the server itself.
    pub tool: String,
    /// The pinned tool fingerprint (`None`: not pinned, an added tool).
    pub pinned: Option<String>,
    /// The live tool fingerprint (`None`: gone upstream, a removed tool).
    pub live: Option<String>,
    pub findings: Vec<FindingRecord>,
    pub vendor: Option<String>,
    /// The server's reported version (`serverInfo.version`) live.
    pub server_version: Option<String>,
    /// The server's version in the lockfile: the same version with changed
    /// tools is silent drift.
    pub pinned_version: Option<String>,
    /// How many evals the plan asks to re-run for this sighting's findings.
    pub reruns: i64,
    /// When it was seen, in unix seconds.
    pub at: i64,
}

impl Sighting {
    pub fn new(kind: EventKind, environment: &str, server: &str, tool: &str, at: i64) -> Self {
        Self {
            kind,
            environment: environment.to_string(),
            server: server.to_string(),
            tool: tool.to_string(),
            pinned: None,
            live: None,
            findings: Vec::new(),
            vendor: None,
            server_version: None,
            pinned_version: None,
            reruns: 0,
            at,
        }
    }

    /// A `drift` sighting of `tool` going from `pinned` to `live`.
    pub fn drift(
        environment: &str,
        server: &str,
        tool: &str,
        pinned: Option<&str>,
        live: Option<&str>,
        at: i64,
    ) -> Self {
        Self::new(EventKind::Drift, environment, server, tool, at).fingerprints(pinned, live)
    }

    pub fn fingerprints(mut self, pinned: Option<&str>, live: Option<&str>) -> Self {
        self.pinned = pinned.map(str::to_string);
        self.live = live.map(str::to_string);
        self
    }

    pub fn findings(mut self, findings: Vec<FindingRecord>) -> Self {
        self.findings = findings;
        self
    }

    pub fn vendor(mut self, vendor: &str) -> Self {
        self.vendor = Some(vendor.to_string());
        self
    }

    pub fn server_version(mut self, version: &str) -> Self {
        self.server_version = Some(version.to_string());
        self
    }

    pub fn pinned_version(mut self, version: &str) -> Self {
        self.pinned_version = Some(version.to_string());
        self
    }

    pub fn reruns(mut self, reruns: i64) -> Self {
        self.reruns = reruns;
        self
    }

    /// The worst severity among its findings.
    pub fn severity(&self) -> Option<Severity> {
        worst(&self.findings)
    }
}

/// What recording a sighting did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordOutcome {
    /// A new event: notify.
    New,
    /// One more sighting of an open event, no more severe: stay quiet.
    Seen,
    /// One more sighting, more severe than the event was: notify again.
    MoreSevere,
}

/// The event a sighting was recorded in, and what recording it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub event: i64,
    pub outcome: RecordOutcome,
}

/// How an event was resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// A reviewer accepted this live fingerprint.
    Accepted { live: String },
    /// Upstream went back to the pinned fingerprint.
    Reverted,
}

impl Resolution {
    /// The reason stored: `accepted` or `reverted`.
    pub fn reason(&self) -> &'static str {
        match self {
            Resolution::Accepted { .. } => "accepted",
            Resolution::Reverted => "reverted",
        }
    }
}

/// Which events to list; `None` matches any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub environment: Option<String>,
    pub server: Option<String>,
    pub tool: Option<String>,
}

impl EventFilter {
    pub fn tool(environment: &str, server: &str, tool: &str) -> Self {
        Self {
            environment: Some(environment.to_string()),
            server: Some(server.to_string()),
            tool: Some(tool.to_string()),
        }
    }
}
