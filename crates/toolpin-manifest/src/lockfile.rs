//! The lockfile (`toolpin.lock`): the catalog as pretty JSON with sorted keys,
//! one tool per block, so that `git diff` of two lockfiles reads like the
//! change itself. Format: docs/lockfile.md and docs/lockfile.schema.json.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::catalog::{catalog_fingerprint, tools_fingerprint, Catalog, ServerPin};
use crate::fingerprint::Fingerprint;
use crate::fs::Replaced;
use crate::json::{self, JsonError};

/// The lockfile format version this build reads and writes.
pub const LOCKFILE_VERSION: u64 = 1;

/// Why a lockfile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LockfileError {
    #[error("{0}")]
    Json(#[from] JsonError),
    #[error("{origin}: lockfile format version {found} is not supported by this toolpin (it reads version {LOCKFILE_VERSION})")]
    Version { origin: String, found: u64 },
    #[error("{origin}: {what} does not match its content (edited by hand?); run `toolpin lock` to re-pin")]
    Tampered { origin: String, what: String },
    #[error("cannot write {origin}: {source}")]
    Write {
        origin: String,
        source: std::io::Error,
    },
}

#[derive(Serialize)]
struct LockfileOut<'a> {
    environment: &'a str,
    fingerprint: &'a Fingerprint,
    servers: &'a BTreeMap<String, ServerPin>,
    toolpin: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LockfileIn {
    environment: String,
    fingerprint: Fingerprint,
    servers: BTreeMap<String, ServerPin>,
    toolpin: u64,
}

/// Whether a document is a toolpin lockfile (an object with a top-level
/// `toolpin` member), without building it: the other members are skipped.
pub fn looks_like_lockfile(bytes: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        toolpin: Option<serde::de::IgnoredAny>,
    }
    let starts_object = bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace() && **b != 0xEF && **b != 0xBB && **b != 0xBF)
        == Some(&b'{');
    starts_object && serde_json::from_slice::<Probe>(bytes).is_ok_and(|p| p.toolpin.is_some())
}

/// Whether a parsed JSON document looks like a toolpin lockfile.
pub fn is_lockfile(doc: &serde_json::Value) -> bool {
    doc.get("toolpin").is_some_and(serde_json::Value::is_u64)
}

/// Writes the lockfile text for `catalog`: 2-space indent, keys sorted,
/// trailing newline.
pub fn write_to(catalog: &Catalog, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let doc = LockfileOut {
        environment: &catalog.environment,
        fingerprint: &catalog.fingerprint,
        servers: &catalog.servers,
        toolpin: LOCKFILE_VERSION,
    };
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

/// The lockfile text for `catalog`.
pub fn to_string(catalog: &Catalog) -> String {
    let mut buf = Vec::new();
    // Writing plain data with string keys to memory cannot fail.
    let _ = write_to(catalog, &mut buf);
    String::from_utf8(buf).unwrap_or_default()
}

/// Writes `catalog` to `path` atomically, streaming; a lockfile that
/// already says the same is left untouched.
pub fn write(catalog: &Catalog, path: &Path) -> Result<Replaced, LockfileError> {
    crate::fs::replace_with(path, |w| write_to(catalog, w)).map_err(|source| LockfileError::Write {
        origin: path.display().to_string(),
        source,
    })
}

/// Parses and verifies a lockfile: every fingerprint must match the content
/// it covers, so a hand edit is caught rather than trusted.
pub fn parse(bytes: &[u8], origin: &str) -> Result<Catalog, LockfileError> {
    let text = json::as_text(bytes, origin)?;
    let doc: LockfileIn = match serde_json::from_str(text) {
        Ok(doc) => doc,
        Err(e) => {
            // A lockfile from a newer toolpin fails on its new fields; say
            // that rather than naming the first unknown field.
            #[derive(Deserialize)]
            struct VersionProbe {
                toolpin: u64,
            }
            if let Ok(probe) = serde_json::from_str::<VersionProbe>(text) {
                if probe.toolpin != LOCKFILE_VERSION {
                    return Err(LockfileError::Version {
                        origin: origin.to_string(),
                        found: probe.toolpin,
                    });
                }
            }
            return Err(json::from_serde(&e, origin).into());
        }
    };
    if doc.toolpin != LOCKFILE_VERSION {
        return Err(LockfileError::Version {
            origin: origin.to_string(),
            found: doc.toolpin,
        });
    }
    verify(&doc, origin)?;
    Ok(Catalog {
        environment: doc.environment,
        fingerprint: doc.fingerprint,
        servers: doc.servers,
    })
}

fn verify(doc: &LockfileIn, origin: &str) -> Result<(), LockfileError> {
    let tampered = |what: String| LockfileError::Tampered {
        origin: origin.to_string(),
        what,
    };
    for (server, pin) in &doc.servers {
        for (name, pinned) in &pin.tools {
            if pinned.name() != name {
                return Err(tampered(format!("tool {server}/{name}: the key")));
            }
            if !pinned.is_intact() {
                return Err(tampered(format!("the fingerprint of tool {server}/{name}")));
            }
        }
        if tools_fingerprint(&pin.tools) != pin.fingerprint {
            return Err(tampered(format!("the fingerprint of server {server}")));
        }
    }
    let catalog = catalog_fingerprint(&doc.servers)
        .map_err(|e| tampered(format!("the server list ({e})")))?;
    if catalog != doc.fingerprint {
        return Err(tampered("the catalog fingerprint".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ServerPin;
    use serde_json::json;

    fn sample() -> Catalog {
        let pin = ServerPin::new(
            "orders",
            json!({"file": "orders.json"}),
            "mcp",
            vec![
                json!({"name": "b", "description": "B", "inputSchema": {"type": "object"}}),
                json!({"name": "a", "zeta": 1, "alpha": 2}),
            ],
        )
        .expect("pin");
        Catalog::new("default", BTreeMap::from([("orders".to_string(), pin)])).expect("catalog")
    }

    #[test]
    fn round_trips_with_sorted_keys() {
        let cat = sample();
        let text = to_string(&cat);
        assert_eq!(parse(text.as_bytes(), "t.lock").expect("parses"), cat);
        // Sorted keys and 2-space indent: re-serializing the parsed Value
        // (a sorted map) reproduces the text exactly.
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            serde_json::to_string_pretty(&v).expect("pretty") + "\n",
            text
        );
        assert!(text.contains("\n  \"toolpin\": 1\n}"));
    }

    #[test]
    fn hand_edit_is_detected() {
        let text = to_string(&sample()).replace("\"B\"", "\"B!\"");
        let err = parse(text.as_bytes(), "t.lock").expect_err("tampered");
        assert!(
            err.to_string().contains("fingerprint of tool orders/b"),
            "{err}"
        );
    }

    #[test]
    fn invalid_lockfile_has_line_and_column() {
        let text = to_string(&sample()).replacen("\"format\": \"mcp\"", "\"format\": 7", 1);
        let err = parse(text.as_bytes(), "t.lock").expect_err("invalid");
        let msg = err.to_string();
        assert!(msg.starts_with("t.lock:"), "{msg}");
        assert!(
            msg.contains("invalid type: integer `7`, expected a string"),
            "{msg}"
        );
    }

    #[test]
    fn newer_version_is_named() {
        let err = parse(br#"{"toolpin": 2, "new": true}"#, "t.lock").expect_err("version");
        assert!(
            err.to_string().contains("version 2 is not supported"),
            "{err}"
        );
    }
}
