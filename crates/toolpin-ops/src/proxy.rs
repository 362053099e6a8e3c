//! The proxy's run-time drift and refusals in the ledger: `proxy-drift`
//! and `proxy-refusal` events, written by a thread of their own so that a
//! call being refused never waits on a disk or a database.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;

use toolpin_ledger::{EventKind, FindingRecord, Ledger, Sighting};
use toolpin_manifest::Catalog;
use toolpin_proxy::record::{Record, RuntimeDrift, RuntimeRefusal};

use crate::record::{finding_record, server_info};

pub mod serve;

/// Sightings queued for the writer before new ones are dropped (a flood
/// of refused calls to one tool is one event anyway; its count then
/// undercounts, which the warning says).
pub const QUEUE: usize = 4096;

/// Records the proxy's drift and refusals in a ledger, on a writer thread.
/// Dropping it waits for the queued sightings to be written.
pub struct ProxyRecorder {
    queue: Mutex<Option<SyncSender<Sighting>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Vendors by server: configured, else the pinned serverInfo.name.
    vendors: BTreeMap<String, String>,
    warn: std::sync::Arc<dyn Fn(&str) + Send + Sync>,
    dropped_warned: std::sync::atomic::AtomicBool,
}

impl ProxyRecorder {
    /// Starts the writer over `ledger`. `warn` is told, once per distinct
    /// failure, when a sighting cannot be written (never with a secret in
    /// it: `secrets` are redacted from the ledger's errors).
    pub fn start(
        mut ledger: Ledger,
        pinned: &Catalog,
        configured_vendors: &BTreeMap<String, String>,
        secrets: Vec<(String, String)>,
        warn: std::sync::Arc<dyn Fn(&str) + Send + Sync>,
    ) -> Self {
        let (tx, rx) = mpsc::sync_channel::<Sighting>(QUEUE);
        let writer_warn = std::sync::Arc::clone(&warn);
        let writer = std::thread::Builder::new()
            .name("toolpin-ledger".into())
            .spawn(move || {
                let mut last_error = String::new();
                while let Ok(first) = rx.recv() {
                    // What has queued up meanwhile goes in one transaction.
                    let mut batch = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        batch.push(more);
                        if batch.len() >= 256 {
                            break;
                        }
                    }
                    if let Err(e) = ledger.record_batch(&batch, |_| Vec::new()) {
                        let line = toolpin_manifest::Redactor::new(&secrets).redact(&e.to_string());
                        if line != last_error {
                            writer_warn(&format!("ledger: {line}; run-time drift not recorded"));
                            last_error = line;
                        }
                    } else {
                        last_error.clear();
                    }
                }
            });
        let writer = match writer {
            Ok(handle) => Some(handle),
            Err(e) => {
                warn(&format!("ledger: cannot start its writer: {e}"));
                None
            }
        };
        let mut vendors = configured_vendors.clone();
        for server in pinned.servers.keys() {
            if !vendors.contains_key(server) {
                if let Some(name) = server_info(pinned, server, "name") {
                    vendors.insert(server.clone(), name);
                }
            }
        }
        Self {
            queue: Mutex::new(writer.as_ref().map(|_| tx)),
            writer: Mutex::new(writer),
            vendors,
            warn,
            dropped_warned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn send(&self, mut sighting: Sighting) {
        if let Some(vendor) = self.vendors.get(&sighting.server) {
            sighting.vendor = Some(vendor.clone());
        }
        let Ok(queue) = self.queue.lock() else {
            return;
        };
        let Some(tx) = queue.as_ref() else {
            return;
        };
        match tx.try_send(sighting) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                if !self
                    .dropped_warned
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    (self.warn)(
                        "ledger: the writer is behind; some run-time sightings were not counted",
                    );
                }
            }
        }
    }

    /// Writes what is queued and stops the writer.
    pub fn finish(&self) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.take();
        }
        if let Some(handle) = self.writer.lock().ok().and_then(|mut w| w.take()) {
            let _ = handle.join();
        }
    }
}

impl Drop for ProxyRecorder {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Record for ProxyRecorder {
    fn drift(&self, drift: &RuntimeDrift<'_>) {
        let findings: Vec<FindingRecord> =
            drift.findings.iter().map(|f| finding_record(f)).collect();
        let mut s = Sighting::new(
            EventKind::ProxyDrift,
            drift.environment,
            drift.server,
            drift.tool,
            crate::now(),
        )
        .fingerprints(drift.pinned, drift.live)
        .findings(findings);
        s.server_version = drift.server_version.map(str::to_string);
        s.pinned_version = drift.pinned_version.map(str::to_string);
        self.send(s);
    }

    fn refused(&self, refusal: &RuntimeRefusal<'_>) {
        let s = Sighting::new(
            EventKind::ProxyRefusal,
            refusal.environment,
            refusal.server,
            refusal.tool,
            crate::now(),
        )
        .fingerprints(Some(refusal.pinned), refusal.live);
        // One finding: the change that blocks the tool, and the refusal
        // as its message.
        let s = s.findings(vec![FindingRecord {
            rule: refusal.rule.to_string(),
            pointer: String::new(),
            severity: refusal.severity,
            kind: "structural".into(),
            message: refusal.message.to_string(),
            detail: None,
        }]);
        self.send(s);
    }
}
