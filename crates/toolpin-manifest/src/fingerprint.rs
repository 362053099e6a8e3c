//! Fingerprints: SHA-256 over canonical (RFC 8785) JSON.
//!
//! - tool:    sha256(JCS(normalized tool))
//! - server:  sha256(JCS([[name, tool hex], …])) sorted by name
//! - catalog: the same over every tool of every server, by namespaced name
//!
//! The full 64-hex digest is stored; people are shown the first 16.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::jcs;

/// A SHA-256 digest identifying a tool, a server's tool set or a catalog.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

/// Hex digits shown to people (`toolpin fingerprint`).
pub const SHORT_LEN: usize = 16;
/// Hex digits of the release-record line `tools <12 hex>`.
pub const RELEASE_LEN: usize = 12;

impl Fingerprint {
    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Fingerprint of one normalized tool. `scratch` is reused between calls
    /// so that fingerprinting a large catalog allocates once.
    pub fn of_tool(tool: &Value, scratch: &mut Vec<u8>) -> Self {
        scratch.clear();
        jcs::write_canonical(tool, scratch);
        Self::of_bytes(scratch)
    }

    /// Fingerprint of a set of named tools: the JCS array of
    /// `[name, tool fingerprint hex]` pairs in name order (code point order,
    /// which the caller's iterator must already follow).
    pub fn of_named<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a Fingerprint)>) -> Self {
        let mut out = Vec::with_capacity(4096);
        out.push(b'[');
        for (i, (name, fp)) in pairs.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            jcs::write_string(name, &mut out);
            out.extend_from_slice(b",\"");
            out.extend_from_slice(fp.to_hex().as_bytes());
            out.extend_from_slice(b"\"]");
        }
        out.push(b']');
        Self::of_bytes(&out)
    }

    pub fn to_hex(&self) -> String {
        crate::text::hex(&self.0)
    }

    /// The first [`SHORT_LEN`] hex digits.
    pub fn short(&self) -> String {
        self.to_hex()[..SHORT_LEN].to_string()
    }

    /// The release-record line, e.g. `tools 9f2a1c4b7e03`.
    pub fn release_line(&self) -> String {
        format!("tools {}", &self.to_hex()[..RELEASE_LEN])
    }

    /// Parses 64 lowercase hex digits.
    pub fn from_hex(s: &str) -> Option<Self> {
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let hi = hex_val(pair[0])?;
            let lo = hex_val(pair[1])?;
            out[i] = (hi << 4) | lo;
        }
        Some(Self(out))
    }
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", self.short())
    }
}

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Fingerprint::from_hex(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid fingerprint {s:?}: expected 64 lowercase hex digits"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let fp = Fingerprint::of_bytes(b"abc");
        assert_eq!(
            fp.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Fingerprint::from_hex(&fp.to_hex()), Some(fp));
        assert_eq!(fp.short(), "ba7816bf8f01cfea");
        assert_eq!(fp.release_line(), "tools ba7816bf8f01");
        assert!(Fingerprint::from_hex("BA7816").is_none());
        assert!(Fingerprint::from_hex(&"G".repeat(64)).is_none());
    }

    #[test]
    fn named_set_is_a_jcs_array_of_pairs() {
        let a = Fingerprint::of_bytes(b"a");
        let direct = Fingerprint::of_named([("x\"y", &a)]);
        let via_json =
            Fingerprint::of_bytes(format!("[[\"x\\\"y\",\"{}\"]]", a.to_hex()).as_bytes());
        assert_eq!(direct, via_json);
    }
}
