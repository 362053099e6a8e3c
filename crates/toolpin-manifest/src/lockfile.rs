//! The lockfile (`toolpin.lock`): the catalog as pretty JSON with sorted keys,
//! one tool per block, so that `git diff` of two lockfiles reads like the
//! change itself. Format: docs/lockfile.md and docs/lockfile.schema.json.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::catalog::{catalog_fingerprint, server_fingerprint, Catalog, ServerPin};
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
    #[error("{origin}: {what} does not match its content (edited by hand?); restore it from version control, or run `toolpin lock` to re-pin every tool (earlier accept and review decisions are not kept)")]
    Tampered { origin: String, what: String },
    #[error("{origin} not found; run `toolpin lock` to create it")]
    NotFound { origin: String },
    #[error("cannot read {origin}: {source}")]
    Read {
        origin: String,
        source: std::io::Error,
    },
    #[error("cannot write {origin}: {source}")]
    Write {
        origin: String,
        source: std::io::Error,
    },
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
    // A leading BOM is skipped, as every reader of a lockfile skips it.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let starts_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    starts_object && serde_json::from_slice::<Probe>(bytes).is_ok_and(|p| p.toolpin.is_some())
}

/// Whether a parsed JSON document looks like a toolpin lockfile.
pub fn is_lockfile(doc: &serde_json::Value) -> bool {
    doc.get("toolpin").is_some_and(serde_json::Value::is_u64)
}

/// Writes the lockfile text for `catalog`: 2-space indent, keys sorted,
/// trailing newline; the bytes `serde_json`'s pretty printer writes for
/// the document, produced without a `Value` tree per tool: each tool's
/// kept JSON text is laid out as it is copied ([`crate::pretty`]).
pub fn write_to(catalog: &Catalog, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    buf.push(b'{');
    member(&mut buf, 1, "environment", true);
    string(&mut buf, &catalog.environment);
    member(&mut buf, 1, "fingerprint", false);
    string(&mut buf, &catalog.fingerprint.to_hex());
    member(&mut buf, 1, "servers", false);
    if catalog.servers.is_empty() {
        buf.extend_from_slice(b"{}");
    } else {
        buf.push(b'{');
        for (i, (name, pin)) in catalog.servers.iter().enumerate() {
            member(&mut buf, 2, name, i == 0);
            write_server(pin, &mut buf, out)?;
        }
        crate::pretty::newline(&mut buf, 1);
        buf.push(b'}');
    }
    member(&mut buf, 1, "toolpin", false);
    buf.extend_from_slice(LOCKFILE_VERSION.to_string().as_bytes());
    buf.extend_from_slice(b"\n}\n");
    out.write_all(&buf)
}

/// One server's entry, nested 2 deep; flushes `buf` into `out` as it grows.
fn write_server(
    pin: &ServerPin,
    buf: &mut Vec<u8>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    buf.push(b'{');
    member(buf, 3, "fingerprint", true);
    string(buf, &pin.fingerprint.to_hex());
    member(buf, 3, "format", false);
    string(buf, &pin.format);
    if let Some(instructions) = &pin.instructions {
        member(buf, 3, "instructions", false);
        string(buf, instructions);
    }
    if !pin.redacted.is_empty() {
        member(buf, 3, "redacted", false);
        value(buf, &serde_json::json!(pin.redacted), 3);
    }
    if let Some(session) = &pin.session {
        member(buf, 3, "session", false);
        value(buf, session, 3);
    }
    member(buf, 3, "source", false);
    value(buf, &pin.source, 3);
    member(buf, 3, "tools", false);
    if pin.tools.is_empty() {
        buf.extend_from_slice(b"{}");
    } else {
        buf.push(b'{');
        for (i, (name, tool)) in pin.tools.iter().enumerate() {
            member(buf, 4, name, i == 0);
            buf.push(b'{');
            member(buf, 5, "fingerprint", true);
            string(buf, &tool.fingerprint.to_hex());
            if !tool.redacted().is_empty() {
                member(buf, 5, "redacted", false);
                value(buf, &serde_json::json!(tool.redacted()), 5);
            }
            member(buf, 5, "tool", false);
            if crate::pretty::sorts_like_a_map(tool.json()) {
                crate::pretty::write(tool.json(), 5, buf);
            } else {
                // Canonical order is not a map's here: lay out what the
                // map would serialize.
                value(buf, &tool.value(), 5);
            }
            crate::pretty::newline(buf, 4);
            buf.push(b'}');
            if buf.len() > 1 << 18 {
                out.write_all(buf)?;
                buf.clear();
            }
        }
        crate::pretty::newline(buf, 3);
        buf.push(b'}');
    }
    crate::pretty::newline(buf, 2);
    buf.push(b'}');
    Ok(())
}

/// `,` (unless first), a new line at `level`, the key and `": "`.
fn member(buf: &mut Vec<u8>, level: usize, key: &str, first: bool) {
    if !first {
        buf.push(b',');
    }
    crate::pretty::newline(buf, level);
    string(buf, key);
    buf.extend_from_slice(b": ");
}

fn string(buf: &mut Vec<u8>, s: &str) {
    // Writing a string to memory cannot fail.
    let _ = serde_json::to_writer(&mut *buf, s);
}

fn value(buf: &mut Vec<u8>, v: &serde_json::Value, level: usize) {
    // Serializing a Value with string keys to memory cannot fail.
    let compact = serde_json::to_string(v).unwrap_or_default();
    crate::pretty::write(&compact, level, buf);
}

/// The lockfile text for `catalog`.
pub fn to_string(catalog: &Catalog) -> String {
    let mut buf = Vec::new();
    // Writing plain data with string keys to memory cannot fail.
    let _ = write_to(catalog, &mut buf);
    String::from_utf8(buf).unwrap_or_default()
}

/// A file kept beside a lockfile, named after it: `toolpin.lock` with
/// suffix `approvals.jsonl` is `toolpin.approvals.jsonl`, and
/// `toolpin.staging.lock` gives `toolpin.staging.approvals.jsonl`.
pub fn sibling(lockfile: &Path, suffix: &str) -> std::path::PathBuf {
    let name = lockfile
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "toolpin.lock".into());
    let stem = name.strip_suffix(".lock").unwrap_or(&name);
    lockfile.with_file_name(format!("{stem}.{suffix}"))
}

/// Writes `catalog` to `path` atomically, streaming; a lockfile that
/// already says the same is left untouched.
pub fn write(catalog: &Catalog, path: &Path) -> Result<Replaced, LockfileError> {
    crate::fs::replace_with(path, |w| write_to(catalog, w)).map_err(|source| LockfileError::Write {
        origin: path.display().to_string(),
        source,
    })
}

/// Reads and verifies the lockfile at `path`; an absent one says how to
/// create it.
pub fn read(path: &std::path::Path) -> Result<Catalog, LockfileError> {
    read_keeping(path).map(|(catalog, _)| catalog)
}

/// [`read`], keeping the bytes read (a report locates its findings in
/// them): the lockfile is read once.
pub fn read_keeping(path: &std::path::Path) -> Result<(Catalog, Vec<u8>), LockfileError> {
    let origin = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LockfileError::NotFound { origin })
        }
        Err(source) => return Err(LockfileError::Read { origin, source }),
    };
    parse(&bytes, &origin).map(|catalog| (catalog, bytes))
}

/// Parses and verifies a lockfile: every fingerprint must match the content
/// it covers, so a hand edit is caught rather than trusted.
pub fn parse(bytes: &[u8], origin: &str) -> Result<Catalog, LockfileError> {
    let text = json::as_text(bytes, origin)?;
    let parsed = serde_json::from_str::<LockfileIn>(text);
    // Two entries for one tool (or server, or member): serde would keep the
    // last without a word. A syntax error is reported as such instead.
    if !matches!(&parsed, Err(e) if e.is_syntax() || e.is_eof()) {
        json::reject_duplicate_keys(text, origin)?;
    }
    let doc: LockfileIn = match parsed {
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
        if server_fingerprint(&pin.tools, pin.instructions.as_deref()) != pin.fingerprint {
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

    /// The writer `write_to` replaced: serde_json's pretty printer over
    /// the whole document, each tool parsed back into a `Value`.
    fn serde_text(catalog: &Catalog) -> String {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            environment: &'a str,
            fingerprint: &'a Fingerprint,
            servers: &'a BTreeMap<String, ServerPin>,
            toolpin: u64,
        }
        let doc = Out {
            environment: &catalog.environment,
            fingerprint: &catalog.fingerprint,
            servers: &catalog.servers,
            toolpin: LOCKFILE_VERSION,
        };
        serde_json::to_string_pretty(&doc).expect("serializes") + "\n"
    }

    #[test]
    fn writes_what_serde_json_pretty_printing_writes() {
        let tricky = ServerPin::new(
            "tricky",
            json!({"file": "t.json", "ignore": ["/a~1b"], "conversion": {"body": "merge", "n": 1.5}}),
            "mcp",
            vec![
                json!({"name": "empty", "inputSchema": {}, "a": [], "b": [{}], "c": [[], [1]]}),
                json!({"name": "numbers", "n": [0, -1, 1.5, 1e21, 1e-7, 1.0, 9007199254740993u64, 18446744073709551615u64, -9223372036854775808i64]}),
                json!({"name": "strings", "s": "\" \\ \n \t \u{1} é 中 😀", "k\u{e000}": 1, "k\u{10000}": 2}),
                json!({"name": "\u{e000}-named", "description": "d"}),
            ],
        )
        .expect("pin");
        let session = ServerPin::new("live", json!({"url": "http://x"}), "mcp", vec![])
            .expect("pin")
            .with_session(Some(json!({"protocol_version": "2025-11-25", "server_info": null, "client_capabilities": {}, "client_info": {"name": "t", "version": "1"}})));
        let catalog = Catalog::new(
            "staging",
            BTreeMap::from([
                ("orders".to_string(), sample().servers["orders"].clone()),
                ("tricky".to_string(), tricky),
                ("live".to_string(), session),
            ]),
        )
        .expect("catalog");
        for cat in [
            sample(),
            catalog,
            Catalog::new("default", BTreeMap::new()).expect("empty"),
        ] {
            assert_eq!(to_string(&cat), serde_text(&cat));
        }
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
