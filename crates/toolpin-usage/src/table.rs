//! The call keys' table. A span's key parts are borrowed from its line;
//! `HashMap<Key, _>` would need an owned `Key` (five `String`s) for every
//! lookup, which was a fifth of the ingest time. This table hashes the
//! borrowed parts itself and copies them only when a key is new.
//!
//! The hash is FxHash-style (a multiply and rotate per 8 bytes), seeded
//! per table from `RandomState`, so that crafted names cannot be made to
//! collide ahead of time; colliding keys share a short chain.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::aggregate::{Key, ToolStats};

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

/// One copy of each name the keys hold.
#[derive(Clone, Debug, Default)]
struct Names(HashSet<Arc<str>>);

impl Names {
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(held) = self.0.get(name) {
            return Arc::clone(held);
        }
        let held: Arc<str> = Arc::from(name);
        self.0.insert(Arc::clone(&held));
        held
    }

    fn key(&mut self, parts: &Parts<'_>) -> Key {
        let [environment, tenant, agent, catalog, tool] = parts.strings.map(|s| self.get(s));
        Key {
            hour: parts.hour,
            environment,
            tenant,
            agent,
            catalog,
            tool,
        }
    }
}

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

fn mix(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(K)
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
    /// The names the entries' keys share.
    names: Names,
}

impl Default for Table {
    fn default() -> Self {
        Self {
            seed: RandomState::new().hash_one(0x0074_6f6f_6c70_696e_u64),
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
            let bytes = s.as_bytes();
            let mut chunks = bytes.chunks_exact(8);
            for c in &mut chunks {
                let mut word = [0u8; 8];
                word.copy_from_slice(c);
                h = mix(h, u64::from_le_bytes(word));
            }
            let mut tail = [0u8; 8];
            tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
            // The length ends each part: ("ab", "c") and ("a", "bc") differ.
            h = mix(mix(h, u64::from_le_bytes(tail)), bytes.len() as u64);
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
    /// new key took (0 for a key already there; see [`key_bytes`]).
    pub fn entry(&mut self, parts: &Parts<'_>) -> (&mut ToolStats, usize) {
        let hash = self.hash(parts);
        self.entry_hashed(hash, parts)
    }

    fn entry_hashed(&mut self, hash: u64, parts: &Parts<'_>) -> (&mut ToolStats, usize) {
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
                    key: self.names.key(parts),
                    stats: ToolStats::default(),
                });
                i as usize
            }
        };
        (&mut self.entries[i].stats, added)
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
            t.entry_hashed(7, &parts(tool)).0.calls = n as u64 + 1;
        }
        t.entry_hashed(7, &parts("b")).0.calls += 10;
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
