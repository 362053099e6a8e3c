//! Names as the aggregates hold them: one shared copy of each ([`Names`])
//! and small maps keyed by them ([`NameMap`]). A key's tables are small
//! (an error class or two, one tool fingerprint, a few parameters with a
//! few dozen values at most) and their names repeat across every key: 90
//! days × 50 tools × 20 tenants are 90,000 keys, each with one `status`
//! parameter taking the same four values. Held as a sorted vector of
//! shared names, a key's table is one allocation; held as a map of its
//! own strings it was one per name and one or more per table, and reading
//! a store back was mostly allocating and freeing them.

use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::ops::Index;
use std::sync::Arc;

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// One step of the names' hash (FxHash-style: a rotate, xor and multiply).
pub(crate) fn mix(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(K)
}

/// `bytes` mixed into `h` eight at a time, then their length (so that
/// ("ab", "c") and ("a", "bc") differ when names are hashed in a row).
pub(crate) fn mix_bytes(mut h: u64, bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix(h, u64::from_le_bytes(word::<8>(c)));
    }
    // The last 1 to 7 bytes in one word, read in place (copying them into
    // a zeroed word first stalled the load that followed): each byte is
    // in it, so with the length, different tails give different words.
    let rest = chunks.remainder();
    let n = rest.len();
    let tail = match n {
        0 => 0,
        1..=3 => u64::from(rest[0]) | u64::from(rest[n / 2]) << 8 | u64::from(rest[n - 1]) << 16,
        _ => {
            let low = u32::from_le_bytes(word::<4>(&rest[..4]));
            let high = u32::from_le_bytes(word::<4>(&rest[n - 4..]));
            u64::from(low) | u64::from(high) << 32
        }
    };
    mix(mix(h, tail), bytes.len() as u64)
}

/// The first `N` bytes of `bytes` (which holds at least `N`).
fn word<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut word = [0u8; N];
    word.copy_from_slice(&bytes[..N]);
    word
}

/// A seed for the names' hash, random per process and table, so that
/// crafted names cannot be made to collide ahead of time.
pub(crate) fn seed() -> u64 {
    RandomState::new().hash_one(0x0074_6f6f_6c70_696e_u64)
}

/// The hasher of [`Names`]: [`mix_bytes`] from a random seed.
#[derive(Clone, Debug)]
pub(crate) struct Seeded(u64);

impl Default for Seeded {
    fn default() -> Self {
        Self(seed())
    }
}

impl BuildHasher for Seeded {
    type Hasher = SeededHasher;
    fn build_hasher(&self) -> SeededHasher {
        SeededHasher(self.0)
    }
}

pub(crate) struct SeededHasher(u64);

impl Hasher for SeededHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = mix_bytes(self.0, bytes);
    }
    fn write_u8(&mut self, byte: u8) {
        self.0 = mix(self.0, u64::from(byte));
    }
}

/// One copy of each name the aggregates hold: key parts, error classes,
/// tool fingerprints, parameter names and values.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names(HashSet<Arc<str>, Seeded>);

impl Names {
    /// The shared copy of `name`, made if it is the first.
    pub fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(held) = self.0.get(name) {
            return Arc::clone(held);
        }
        let held: Arc<str> = Arc::from(name);
        self.0.insert(Arc::clone(&held));
        held
    }
}

/// A small map from names to values, in name order: a key's error
/// classes, tool fingerprints and parameters, and a parameter's values.
/// Looked up by `&str` like the `BTreeMap` it replaces; its names are
/// shared with every other table that holds them (see the module).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NameMap<V> {
    /// In increasing order of name, each name once.
    entries: Vec<Slot<V>>,
}

/// One name and its value, with the name's first bytes beside it: a
/// search compares those without reaching the shared name (a free-text
/// parameter's 32 values are 32 names scattered among thousands, and
/// reaching each was a cache miss).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Slot<V> {
    prefix: u64,
    name: Arc<str>,
    value: V,
}

/// The first 8 bytes of `name`, big-endian, zero-padded: ordered as the
/// names are where they differ (a shorter name is padded with the
/// smallest byte), equal when the names agree in their first 8 bytes.
fn prefix(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut word = [0u8; 8];
    let n = bytes.len().min(8);
    word[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(word)
}

impl<V> Slot<V> {
    fn new(name: Arc<str>, value: V) -> Self {
        Self {
            prefix: prefix(&name),
            name,
            value,
        }
    }
}

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<V: fmt::Debug> fmt::Debug for NameMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V> NameMap<V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where `name` is, or where it would go.
    pub(crate) fn find(&self, name: &str) -> Result<usize, usize> {
        let p = prefix(name);
        self.entries
            .binary_search_by(|e| e.prefix.cmp(&p).then_with(|| (*e.name).cmp(name)))
    }

    pub fn get(&self, name: &str) -> Option<&V> {
        let i = self.find(name).ok()?;
        Some(&self.entries[i].value)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        let i = self.find(name).ok()?;
        Some(&mut self.entries[i].value)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name`'s value, returning the one it replaces.
    pub fn insert(&mut self, name: impl Into<Arc<str>>, value: V) -> Option<V> {
        let slot = Slot::new(name.into(), value);
        // Tables are read back in name order: then this is a push.
        let last = self.entries.last();
        if last.is_none_or(|l| (l.prefix, &*l.name) < (slot.prefix, &*slot.name)) {
            self.entries.push(slot);
            return None;
        }
        match self.find(&slot.name) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].value, slot.value)),
            Err(i) => {
                self.entries.insert(i, slot);
                None
            }
        }
    }

    /// Puts `name` (absent: the `Err` of [`NameMap::find`]) at `at`.
    pub(crate) fn insert_at(&mut self, at: usize, name: Arc<str>, value: V) -> &mut V {
        self.entries.insert(at, Slot::new(name, value));
        &mut self.entries[at].value
    }

    /// The value at `at` (the `Ok` of [`NameMap::find`]).
    pub(crate) fn at_mut(&mut self, at: usize) -> &mut V {
        &mut self.entries[at].value
    }

    /// The names and values, in name order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter(self.entries.iter())
    }

    /// The shared names and their values, in name order.
    pub(crate) fn shared(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.entries.iter().map(|e| (&e.name, &e.value))
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.entries.iter().map(|e| &*e.name)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.entries.iter().map(|e| &e.value)
    }

    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator {
        self.entries.iter_mut().map(|e| &mut e.value)
    }
}

impl<V> Index<&str> for NameMap<V> {
    type Output = V;

    /// The value of `name`; panics when there is none (as `BTreeMap`'s).
    fn index(&self, name: &str) -> &V {
        match self.get(name) {
            Some(v) => v,
            None => panic!("no entry {name:?} in the map"),
        }
    }
}

/// [`NameMap::iter`]: names and values, in name order.
pub struct Iter<'a, V>(std::slice::Iter<'a, Slot<V>>);

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a str, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|e| (&*e.name, &e.value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<V> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|e| (&*e.name, &e.value))
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}

/// A map in name order (as the store encodes a key's tables).
impl<V: serde::Serialize> serde::Serialize for NameMap<V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'a, V> IntoIterator for &'a NameMap<V> {
    type Item = (&'a str, &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

impl<N: Into<Arc<str>>, V> FromIterator<(N, V)> for NameMap<V> {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(iter: I) -> Self {
        let mut map = Self::new();
        for (name, value) in iter {
            map.insert(name, value);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_map_keeps_its_names_in_order_once() {
        let mut m: NameMap<u64> = NameMap::new();
        for (name, n) in [("b", 1), ("a", 2), ("c", 3), ("b", 4), ("", 5)] {
            m.insert(name, n);
        }
        let all: Vec<(&str, u64)> = m.iter().map(|(k, v)| (k, *v)).collect();
        assert_eq!(all, [("", 5), ("a", 2), ("b", 4), ("c", 3)]);
        // Name order, where names agree in their first 8 bytes or one is
        // a prefix of another (NUL bytes included) too.
        let mut names = vec![
            "ord_12345",
            "ord_1234",
            "ord_12346",
            "ab",
            "ab\0",
            "ab\0x",
            "a",
            "",
            "\u{e9}t\u{e9}",
            "ord_1234\0",
            "zz",
        ];
        let map: NameMap<usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        names.sort_unstable();
        assert!(map.keys().eq(names.iter().copied()));
        for (i, n) in names.iter().enumerate() {
            assert_eq!(map.find(n), Ok(i), "{n:?}");
        }
        assert_eq!(
            map.find("ord_12345x"),
            Err(names.iter().position(|n| *n == "ord_12346").unwrap_or(0))
        );
        assert_eq!((m["a"], m.get("d"), m.contains_key("")), (2, None, true));
        assert_eq!(format!("{m:?}"), r#"{"": 5, "a": 2, "b": 4, "c": 3}"#);
        // Equal maps are equal whatever order they were filled in.
        let other: NameMap<u64> = [("c", 3), ("", 5), ("b", 4), ("a", 2)]
            .into_iter()
            .collect();
        assert_eq!(m, other);
    }

    #[test]
    fn names_are_shared() {
        let mut names = Names::default();
        let a = names.get("status");
        let b = names.get(&String::from("status"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &names.get("statu")));
    }
}
