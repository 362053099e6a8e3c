//! The call keys' table. A span's key parts are borrowed from its line;
//! `HashMap<Key, _>` would need an owned `Key` (five `String`s) for every
//! lookup, which was a fifth of the ingest time. This table hashes the
//! borrowed parts itself and copies them only when a key is new.
//!
//! The hash is FxHash-style (a multiply and rotate per 8 bytes), seeded
//! per table from `RandomState`, so that crafted names cannot be made to
//! collide ahead of time; colliding keys share a short chain.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::aggregate::{Key, ToolStats};
use crate::names::{mix, mix_bytes, Names};

/// A key's parts, borrowed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    pub hour: u64,
    pub strings: [&'a str; 5],
}

impl<'a> Parts<'a> {
    pub fn of(key: &'a Key) -> Self {
        Parts {
            hour: key.hour,
            strings: [
                &key.environment,
                &key.tenant,
                &key.agent,
                &key.catalog,
                &key.tool,
            ],
        }
    }
}

/// The key of `parts`, its names shared through `names`; a part equal to
/// the same part of `last` (the key made before: a store is read in key
/// order, so consecutive keys share most parts) is taken from it without
/// a lookup.
fn key(names: &mut Names, last: Option<&Key>, parts: &Parts<'_>) -> Key {
    let last = last.map(|k| [&k.environment, &k.tenant, &k.agent, &k.catalog, &k.tool]);
    let mut i = 0;
    let [environment, tenant, agent, catalog, tool] = parts.strings.map(|s| {
        let same = last.map(|l| l[i]).filter(|l| ***l == *s);
        i += 1;
        match same {
            Some(shared) => Arc::clone(shared),
            None => names.get(s),
        }
    });
    Key {
        hour: parts.hour,
        environment,
        tenant,
        agent,
        catalog,
        tool,
    }
}

/// The hash is already a hash: the index map uses it as it is.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = mix(self.0, u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One key and its statistics. A lookup is confirmed against the key's
/// own names: they are shared by every key of the table ([`Names`]), so
/// there is no per-key copy to allocate, and the few distinct names stay
/// in cache.
#[derive(Clone, Debug)]
struct Entry {
    hash: u64,
    /// The next entry with the same hash, or `NONE`.
    next: u32,
    key: Key,
    stats: ToolStats,
}

const NONE: u32 = u32::MAX;

/// What one key costs beside its statistics' tables: the entry (with its
/// `ToolStats` inline), its slot in the index, and its names (which keys
/// share: counted for each key as if it were the only one, an upper
/// bound).
pub(crate) fn key_bytes(parts: &Parts<'_>) -> usize {
    let strings: usize = parts.strings.iter().map(|s| s.len()).sum();
    std::mem::size_of::<Entry>() + 16 + strings
}

impl Entry {
    fn matches(&self, hash: u64, parts: &Parts<'_>) -> bool {
        self.hash == hash && Parts::of(&self.key) == *parts
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Table {
    seed: u64,
    /// Hash → the first entry with it.
    index: HashMap<u64, u32, BuildHasherDefault<Identity>>,
    entries: Vec<Entry>,
    /// The names the entries' keys and statistics share.
    names: Names,
}

impl Default for Table {
    fn default() -> Self {
        Self {
            seed: crate::names::seed(),
            index: HashMap::default(),
            entries: Vec::new(),
            names: Names::default(),
        }
    }
}

impl Table {
    fn hash(&self, parts: &Parts<'_>) -> u64 {
        let mut h = mix(self.seed, parts.hour);
        for s in parts.strings {
            // The length ends each part: ("ab", "c") and ("a", "bc") differ.
            h = mix_bytes(h, s.as_bytes());
        }
        h
    }

    fn find(&self, hash: u64, parts: &Parts<'_>) -> Option<usize> {
        let mut i = *self.index.get(&hash)?;
        while i != NONE {
            let e = &self.entries[i as usize];
            if e.matches(hash, parts) {
                return Some(i as usize);
            }
            i = e.next;
        }
        None
    }

    pub fn get(&self, parts: &Parts<'_>) -> Option<&ToolStats> {
        let i = self.find(self.hash(parts), parts)?;
        Some(&self.entries[i].stats)
    }

    /// The statistics of `parts`, created empty if new, and the bytes a
    /// new key took (0 for a key already there; see [`key_bytes`]); with
    /// the names the table shares, for the statistics' tables.
    pub fn entry(&mut self, parts: &Parts<'_>) -> (&mut ToolStats, &mut Names, usize) {
        let hash = self.hash(parts);
        let (i, added) = self.entry_hashed(hash, parts);
        (&mut self.entries[i].stats, &mut self.names, added)
    }

    /// The names the table shares.
    pub fn names(&mut self) -> &mut Names {
        &mut self.names
    }

    fn entry_hashed(&mut self, hash: u64, parts: &Parts<'_>) -> (usize, usize) {
        let mut added = 0;
        let i = match self.find(hash, parts) {
            Some(i) => i,
            None => {
                added = key_bytes(parts);
                let i = self.entries.len() as u32;
                let next = self.index.insert(hash, i).unwrap_or(NONE);
                self.entries.push(Entry {
                    hash,
                    next,
                    key: key(&mut self.names, self.entries.last().map(|e| &e.key), parts),
                    stats: ToolStats::default(),
                });
                i as usize
            }
        };
        (i, added)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &ToolStats)> {
        self.entries.iter().map(|e| (&e.key, &e.stats))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(k, s)| other.get(&Parts::of(k)) == Some(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(tool: &str) -> Parts<'_> {
        Parts {
            hour: 1,
            strings: ["prod", "", "agent", "cat", tool],
        }
    }

    #[test]
    fn colliding_keys_are_chained_apart() {
        let mut t = Table::default();
        for (n, tool) in ["a", "b", "c"].into_iter().enumerate() {
            let i = t.entry_hashed(7, &parts(tool)).0;
            t.entries[i].stats.calls = n as u64 + 1;
        }
        let i = t.entry_hashed(7, &parts("b")).0;
        t.entries[i].stats.calls += 10;
        assert_eq!(t.len(), 3);
        let calls = |tool| t.find(7, &parts(tool)).map(|i| t.entries[i].stats.calls);
        assert_eq!(
            (calls("a"), calls("b"), calls("c")),
            (Some(1), Some(12), Some(3))
        );
        assert_eq!(calls("d"), None);
        // Parts are told apart by their lengths, not just their bytes.
        let shifted = Parts {
            hour: 1,
            strings: ["pro", "d", "agent", "cat", "a"],
        };
        assert_eq!(t.find(7, &shifted), None);
    }
}
