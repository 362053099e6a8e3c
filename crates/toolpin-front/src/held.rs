//! The connections held, for the cap and for eviction, and the pause
//! between failed accepts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::watch::Watch;

/// How long the accept loop waits after a failed accept: 10 ms, doubling
/// to 1 s while accepts keep failing.
#[derive(Default)]
pub(crate) struct Backoff {
    failures: u32,
}

impl Backoff {
    /// Records a failure and returns the pause before the next accept.
    pub(crate) fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let shift = self.failures.saturating_sub(1).min(7);
        Duration::from_millis(10u64 << shift).min(Duration::from_secs(1))
    }
}

/// The connections held.
#[derive(Default)]
pub(crate) struct Connections {
    open: Mutex<HashMap<u64, Arc<Watch>>>,
    next: AtomicU64,
    /// Woken when a connection ends.
    ended: Notify,
}

/// A connection's place in [`Connections`], given up when dropped.
pub(crate) struct Slot {
    connections: Arc<Connections>,
    id: u64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.connections.open.lock() {
            open.remove(&self.id);
        }
        self.connections.ended.notify_waiters();
    }
}

impl Connections {
    pub(crate) fn len(&self) -> usize {
        self.open.lock().map_or(0, |o| o.len())
    }

    /// Registers a new connection.
    pub(crate) fn add(self: &Arc<Self>, watch: Arc<Watch>) -> Slot {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut open) = self.open.lock() {
            open.insert(id, watch);
        }
        Slot {
            connections: Arc::clone(self),
            id,
        }
    }

    /// Closes the connection that has had nothing in flight the longest,
    /// of those that may be evicted now (see `Watch::evictable_since`);
    /// false when there is none.
    pub(crate) fn evict_idle(&self) -> bool {
        let now = Instant::now();
        let oldest = {
            let Ok(open) = self.open.lock() else {
                return false;
            };
            let mut idle: Vec<(Instant, Arc<Watch>)> = open
                .values()
                .filter_map(|w| w.evictable_since(now).map(|t| (t, Arc::clone(w))))
                .collect();
            idle.sort_by_key(|(t, _)| *t);
            idle
        };
        oldest.iter().any(|(_, w)| w.evict(now))
    }

    /// Resolves when a connection ends (`enable` it before the event it
    /// waits for).
    pub(crate) fn one_ended(&self) -> tokio::sync::futures::Notified<'_> {
        self.ended.notified()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::InFlight;
    use crate::{Closed, EVICT_AFTER};

    #[test]
    fn backoff_doubles_to_a_second() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..10).map(|_| b.failed().as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
    }

    fn watch() -> Arc<Watch> {
        Arc::new(Watch::new(Duration::from_secs(10), Duration::from_secs(60)))
    }

    #[test]
    fn the_connection_idle_longest_is_evicted_never_one_in_flight() {
        let connections = Arc::new(Connections::default());
        let (old, busy, young) = (watch(), watch(), watch());
        let _slots = [&busy, &old, &young].map(|w| connections.add(Arc::clone(w)));
        // `busy` is older still, but has a request in flight.
        busy.quiet_for(Duration::from_secs(9));
        let _request = InFlight::start(Arc::clone(&busy));
        old.quiet_for(Duration::from_secs(5));
        young.quiet_for(EVICT_AFTER + Duration::from_millis(100));
        assert!(connections.evict_idle());
        assert_eq!(old.closing(), Some(Closed::Evicted));
        assert_eq!(young.closing(), Some(Closed::Idle));
        assert!(connections.evict_idle(), "then the younger idle one");
        assert_eq!(young.closing(), Some(Closed::Evicted));
        assert!(!connections.evict_idle(), "never the one in flight");
        assert_eq!(busy.closing(), None);
    }

    /// A connection gets EVICT_AFTER to send its first request, and one
    /// already due to close by its own timeout closes for that reason.
    #[test]
    fn new_connections_and_those_closing_anyway_are_not_evicted() {
        let connections = Arc::new(Connections::default());
        let fresh = watch();
        let due = Arc::new(Watch::new(Duration::from_secs(10), Duration::from_secs(2)));
        let _slots = [&fresh, &due].map(|w| connections.add(Arc::clone(w)));
        due.quiet_for(Duration::from_secs(3));
        assert!(!connections.evict_idle());
        assert_eq!(fresh.closing(), Some(Closed::Idle));
        assert_eq!(due.closing(), Some(Closed::Idle));
        fresh.quiet_for(EVICT_AFTER);
        assert!(connections.evict_idle());
        assert_eq!(fresh.closing(), Some(Closed::Evicted));
    }
}
