//! Reviewed updates of the lockfile: the changes between the pin and a live
//! capture, applying the accepted ones (the rest stay pinned), and the
//! approvals log that records every decision beside the lockfile.
//!
//! `toolpin accept` and `toolpin review` both end here; docs/approvals.md
//! describes the log.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolpin_drift::Comparison;
use toolpin_manifest::{Catalog, Fingerprint, Glob, PinnedTool, ServerPin};

/// A change that cannot be accepted, or an approvals log that cannot be
/// read or written: one line for the user.
pub use toolpin_manifest::diagnostic::Message as Error;

/// Version of the approvals record layout (the `version` member).
pub const RECORD_VERSION: u64 = 1;

/// What happened to one tool, or to a server's own record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
    Renamed,
    /// The server's session, source or format (e.g. its serverInfo version),
    /// or a server that is new or gone with no tools.
    Server,
}

impl ChangeKind {
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
            ChangeKind::Renamed => "renamed",
            ChangeKind::Server => "server",
        }
    }
}

/// One reviewable change, accepted or rejected as a whole.
#[derive(Clone, Debug)]
pub struct Change {
    pub kind: ChangeKind,
    /// The server offering the tool live (the pinned one for a removal).
    pub server: String,
    /// The tool's namespaced name; empty for a server's own record.
    pub tool: String,
    /// Where the tool was pinned, when that is another name or server.
    pub from: Option<(String, String)>,
    pub before: Option<Fingerprint>,
    pub after: Option<Fingerprint>,
    /// Indices of the comparison's findings about this change.
    pub findings: Vec<usize>,
}

impl Change {
    /// `server/tool`, or `server` for a server's own record.
    pub fn address(&self) -> String {
        if self.tool.is_empty() {
            self.server.clone()
        } else {
            format!("{}/{}", self.server, self.tool)
        }
    }

    /// The rule ids of its findings, sorted and once each.
    pub fn rules(&self, c: &Comparison) -> Vec<&'static str> {
        let set: BTreeSet<&'static str> = self
            .findings
            .iter()
            .filter_map(|i| c.findings.get(*i))
            .map(|f| f.rule)
            .collect();
        set.into_iter().collect()
    }
}

/// Every difference between the pin and the live catalog, by address.
/// Changes come from the tools themselves (fingerprints and names), so a
/// change whose findings a policy turned off is still listed; findings are
/// attached to the change they are about.
pub fn changes(pinned: &Catalog, live: &Catalog, c: &Comparison) -> Vec<Change> {
    let mut out = tool_changes(pinned, live, c);
    out.extend(server_changes(pinned, live));
    out.sort_by_key(Change::address);
    attach_findings(&mut out, c);
    out
}

/// A change of `kind` at `server`/`tool`, before its fingerprints and
/// findings are known.
fn change(kind: ChangeKind, server: &str, tool: &str) -> Change {
    Change {
        kind,
        server: server.to_string(),
        tool: tool.to_string(),
        from: None,
        before: None,
        after: None,
        findings: Vec::new(),
    }
}

/// The tools added, changed (or moved to another server), renamed and
/// removed, by fingerprint and name. Renames are the comparison's: a
/// removed and an added tool it paired (new → old).
fn tool_changes(pinned: &Catalog, live: &Catalog, c: &Comparison) -> Vec<Change> {
    let old: BTreeMap<&str, (&str, &PinnedTool)> =
        pinned.tools().map(|(n, s, t)| (n, (s, t))).collect();
    let new: BTreeMap<&str, (&str, &PinnedTool)> =
        live.tools().map(|(n, s, t)| (n, (s, t))).collect();
    let renamed: BTreeMap<&str, &str> = c
        .findings
        .iter()
        .filter(|f| f.rule == "tool-renamed")
        .filter_map(|f| Some((f.tool.as_str(), f.before.as_ref()?.as_str()?)))
        .filter(|(n, o)| new.contains_key(n) && old.contains_key(o) && !new.contains_key(o))
        .collect();
    let renamed_from: BTreeSet<&str> = renamed.values().copied().collect();
    let mut out = Vec::new();
    for (&name, &(server, tool)) in &new {
        let mut ch = match old.get(name) {
            Some(&(old_server, old_tool)) => {
                if old_server == server && old_tool.fingerprint == tool.fingerprint {
                    continue;
                }
                let mut ch = change(ChangeKind::Changed, server, name);
                ch.before = Some(old_tool.fingerprint);
                if old_server != server {
                    ch.from = Some((old_server.to_string(), name.to_string()));
                }
                ch
            }
            None => match renamed.get(name).and_then(|o| Some((*o, old.get(o)?))) {
                Some((old_name, &(old_server, old_tool))) => {
                    let mut ch = change(ChangeKind::Renamed, server, name);
                    ch.before = Some(old_tool.fingerprint);
                    ch.from = Some((old_server.to_string(), old_name.to_string()));
                    ch
                }
                None => change(ChangeKind::Added, server, name),
            },
        };
        ch.after = Some(tool.fingerprint);
        out.push(ch);
    }
    for (&name, &(server, tool)) in &old {
        if !new.contains_key(name) && !renamed_from.contains(name) {
            let mut ch = change(ChangeKind::Removed, server, name);
            ch.before = Some(tool.fingerprint);
            out.push(ch);
        }
    }
    out
}

/// The servers whose own record differs (format, source, session,
/// instructions), and the servers without tools that came or went.
fn server_changes<'c>(pinned: &'c Catalog, live: &'c Catalog) -> impl Iterator<Item = Change> + 'c {
    let names: BTreeSet<&String> = pinned.servers.keys().chain(live.servers.keys()).collect();
    names.into_iter().filter_map(|name| {
        let differs = match (pinned.servers.get(name), live.servers.get(name)) {
            (Some(a), Some(b)) => {
                a.format != b.format
                    || a.source != b.source
                    || a.session != b.session
                    || a.instructions != b.instructions
            }
            // A server with tools comes and goes with its tools' changes.
            (Some(only), None) | (None, Some(only)) => only.tools.is_empty(),
            (None, None) => false,
        };
        differs.then(|| change(ChangeKind::Server, name, ""))
    })
}

/// Attaches the findings: a tool finding to its tool's change (renames and
/// removals are named by the tool the finding is about), a server finding
/// to the server's record.
fn attach_findings(out: &mut [Change], c: &Comparison) {
    let by_name: BTreeMap<(&str, &str), usize> = out
        .iter()
        .enumerate()
        .map(|(i, ch)| ((ch.server.as_str(), ch.tool.as_str()), i))
        .collect();
    let by_tool: BTreeMap<&str, usize> = out
        .iter()
        .enumerate()
        .filter(|(_, ch)| !ch.tool.is_empty())
        .map(|(i, ch)| (ch.tool.as_str(), i))
        .collect();
    let mut attach: Vec<(usize, usize)> = Vec::new();
    for (fi, f) in c.findings.iter().enumerate() {
        let target = if f.tool.is_empty() {
            by_name.get(&(f.server.as_str(), "")).copied()
        } else {
            by_tool.get(f.tool.as_str()).copied()
        };
        if let Some(ci) = target {
            attach.push((ci, fi));
        }
    }
    for (ci, fi) in attach {
        out[ci].findings.push(fi);
    }
}

/// The pin with the accepted changes applied: accepted tools take their
/// live definition, everything else stays exactly as pinned. Accepting
/// every change gives the live catalog.
pub fn apply(pinned: &Catalog, live: &Catalog, accepted: &[&Change]) -> Result<Catalog, Error> {
    let mut servers = pinned.servers.clone();
    let empty_like = |pin: &ServerPin| {
        let mut empty = pin.clone();
        empty.tools.clear();
        empty
    };
    let mut emptied: BTreeSet<String> = BTreeSet::new();
    for ch in accepted {
        if ch.kind == ChangeKind::Server {
            match live.servers.get(&ch.server) {
                Some(l) => {
                    let entry = servers
                        .entry(ch.server.clone())
                        .or_insert_with(|| empty_like(l));
                    entry.format.clone_from(&l.format);
                    entry.source.clone_from(&l.source);
                    entry.session.clone_from(&l.session);
                    entry.instructions.clone_from(&l.instructions);
                    entry.redacted.clone_from(&l.redacted);
                }
                None => {
                    if servers.get(&ch.server).is_some_and(|p| p.tools.is_empty()) {
                        servers.remove(&ch.server);
                    }
                }
            }
            continue;
        }
        if ch.before.is_some() {
            let (server, tool) = ch
                .from
                .clone()
                .unwrap_or_else(|| (ch.server.clone(), ch.tool.clone()));
            if let Some(pin) = servers.get_mut(&server) {
                pin.tools.remove(&tool);
                if pin.tools.is_empty() {
                    emptied.insert(server);
                }
            }
        }
        if ch.after.is_some() {
            let pin = live.servers.get(&ch.server);
            let tool = pin.and_then(|p| p.tools.get(&ch.tool));
            let (Some(pin), Some(tool)) = (pin, tool) else {
                return Err(Error::new(format!(
                    "{} is not in the live catalog",
                    ch.address()
                )));
            };
            servers
                .entry(ch.server.clone())
                .or_insert_with(|| empty_like(pin))
                .tools
                .insert(ch.tool.clone(), tool.clone());
        }
    }
    // A server whose last tools were accepted as removed, and which is gone
    // upstream too, leaves the lockfile.
    for name in emptied {
        if !live.servers.contains_key(&name)
            && servers.get(&name).is_some_and(|p| p.tools.is_empty())
        {
            servers.remove(&name);
        }
    }
    // Catalog::new fingerprints each server from what it now holds.
    Catalog::new(pinned.environment.clone(), servers).map_err(|e| Error::new(e.to_string()))
}

/// `--tool PATTERN[@FINGERPRINT]`: which changes to accept, optionally only
/// at the exact definition that was reviewed.
#[derive(Clone, Debug)]
pub struct Selector {
    text: String,
    glob: Glob,
    /// A hex prefix (at least 8 digits) of the new fingerprint.
    fingerprint: Option<String>,
}

/// Shortest fingerprint prefix `--tool NAME@FP` takes.
const MIN_FINGERPRINT_PREFIX: usize = 8;

impl Selector {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (pattern, fingerprint) = match text.rsplit_once('@') {
            Some((p, fp))
                if fp.len() >= MIN_FINGERPRINT_PREFIX
                    && fp.len() <= 64
                    && fp.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                (p, Some(fp.to_ascii_lowercase()))
            }
            _ => (text, None),
        };
        if pattern.is_empty() {
            return Err(format!("{text:?}: a tool is needed, as server/tool"));
        }
        Ok(Self {
            text: text.to_string(),
            glob: Glob::new(pattern)?,
            fingerprint,
        })
    }

    fn matches(&self, ch: &Change) -> bool {
        self.glob.is_match(&ch.address())
    }
}

/// The changes `selectors` pick (all of them when there are none). Every
/// selector must pick something, and a fingerprint must be the live one.
pub fn select<'a>(changes: &'a [Change], selectors: &[Selector]) -> Result<Vec<&'a Change>, Error> {
    if selectors.is_empty() {
        return Ok(changes.iter().collect());
    }
    let mut picked = BTreeSet::new();
    for sel in selectors {
        let matched: Vec<usize> = (0..changes.len())
            .filter(|i| sel.matches(&changes[*i]))
            .collect();
        if matched.is_empty() {
            let all: Vec<String> = changes.iter().map(Change::address).collect();
            return Err(Error::new(format!(
                "--tool {}: no such change (changed: {})",
                sel.text,
                all.join(", ")
            )));
        }
        if let Some(fp) = &sel.fingerprint {
            for &i in &matched {
                let ch = &changes[i];
                let live = ch.after.map(|f| f.to_hex());
                if !live.as_deref().is_some_and(|l| l.starts_with(fp.as_str())) {
                    return Err(Error::new(format!(
                        "--tool {}: {} is now {}, not the definition that was reviewed; review it again",
                        sel.text,
                        ch.address(),
                        live.map_or_else(|| "removed".to_string(), |l| l[..16].to_string())
                    )));
                }
            }
        }
        picked.extend(matched);
    }
    Ok(picked.into_iter().map(|i| &changes[i]).collect())
}

/// A file attached to an approval as evidence (an eval report, a ticket).
#[derive(Clone, Debug)]
pub struct Evidence {
    /// As recorded: relative to the lockfile's directory when inside it.
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

impl Evidence {
    /// Reads `path` (relative to the working directory) and digests it.
    pub fn read(path: &Path, lockfile: &Path) -> Result<Self, Error> {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::new(format!("evidence {}: {e}", path.display())))?;
        let base = lockfile_dir(lockfile);
        let recorded = match (path.canonicalize(), base.canonicalize()) {
            (Ok(p), Ok(b)) => p
                .strip_prefix(&b)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| path.to_path_buf()),
            _ => path.to_path_buf(),
        };
        Ok(Self {
            path: recorded.to_string_lossy().into_owned(),
            sha256: Fingerprint::of_bytes(&bytes).to_hex(),
            bytes: bytes.len() as u64,
        })
    }
}

/// One decision, as a line of the approvals log.
pub struct Decision<'a> {
    pub change: &'a Change,
    pub accepted: bool,
    pub reason: Option<String>,
    pub evidence: Vec<Evidence>,
}

/// Who and when, shared by the records of one run.
pub struct Stamp {
    pub author: String,
    pub time: String,
    pub environment: String,
    pub catalog_before: Fingerprint,
    pub catalog_after: Fingerprint,
}

/// The JSON line for one decision (keys sorted, as serde_json writes them).
pub fn record(d: &Decision, c: &Comparison, stamp: &Stamp) -> Value {
    let ch = d.change;
    let hex = |f: Option<Fingerprint>| f.map_or(Value::Null, |f| json!(f.to_hex()));
    let mut rec = json!({
        "version": RECORD_VERSION,
        "time": stamp.time,
        "author": stamp.author,
        "decision": if d.accepted { "accepted" } else { "rejected" },
        "environment": stamp.environment,
        "server": ch.server,
        "tool": ch.tool,
        "change": ch.kind.name(),
        "rules": ch.rules(c),
        "fingerprint": {"before": hex(ch.before), "after": hex(ch.after)},
        "catalog": {
            "before": stamp.catalog_before.to_hex(),
            "after": stamp.catalog_after.to_hex(),
        },
        "reason": d.reason,
        "evidence": d.evidence.iter().map(|e| json!({
            "path": e.path, "sha256": e.sha256, "bytes": e.bytes,
        })).collect::<Vec<_>>(),
    });
    if let (Some((server, tool)), Some(obj)) = (&ch.from, rec.as_object_mut()) {
        obj.insert("from".into(), json!(format!("{server}/{tool}")));
    }
    rec
}

/// The JSON line acknowledging a tool name the agent emitted that no earlier
/// run had (`toolpin accept --seen-tool`): change `seen-tool`, no server,
/// no rules, no fingerprints; the catalog is the lockfile's, unchanged.
pub fn seen_tool_record(name: &str, reason: &str, evidence: &[Evidence], stamp: &Stamp) -> Value {
    json!({
        "version": RECORD_VERSION,
        "time": stamp.time,
        "author": stamp.author,
        "decision": "accepted",
        "environment": stamp.environment,
        "server": "",
        "tool": name,
        "change": "seen-tool",
        "rules": [],
        "fingerprint": {"before": null, "after": null},
        "catalog": {
            "before": stamp.catalog_before.to_hex(),
            "after": stamp.catalog_after.to_hex(),
        },
        "reason": reason,
        "evidence": evidence.iter().map(|e| json!({
            "path": e.path, "sha256": e.sha256, "bytes": e.bytes,
        })).collect::<Vec<_>>(),
    })
}

/// The approvals log beside `lockfile`: `toolpin.lock` →
/// `toolpin.approvals.jsonl`, `toolpin.staging.lock` →
/// `toolpin.staging.approvals.jsonl`.
pub fn log_path(lockfile: &Path) -> PathBuf {
    toolpin_manifest::lockfile::sibling(lockfile, "approvals.jsonl")
}

fn lockfile_dir(lockfile: &Path) -> PathBuf {
    match lockfile.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes the decisions: the log first, then the lockfile (only when
/// something was accepted). If the lockfile cannot be written, the log is
/// put back as it was, so the two never disagree.
pub fn commit(lockfile: &Path, updated: Option<&Catalog>, records: &[Value]) -> Result<(), Error> {
    let log = log_path(lockfile);
    let previous = match std::fs::read(&log) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::new(format!("cannot read {}: {e}", log.display()))),
    };
    if !records.is_empty() {
        let mut text = previous.clone().unwrap_or_default();
        if !text.is_empty() && !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        for r in records {
            text.extend_from_slice(r.to_string().as_bytes());
            text.push(b'\n');
        }
        toolpin_manifest::fs::write_atomic(&log, &text)
            .map_err(|e| Error::new(format!("cannot write {}: {e}", log.display())))?;
    }
    if let Some(catalog) = updated {
        if let Err(e) = toolpin_manifest::lockfile::write(catalog, lockfile) {
            let restored = match &previous {
                Some(bytes) => toolpin_manifest::fs::write_atomic(&log, bytes),
                None => std::fs::remove_file(&log),
            };
            let note = match restored {
                Ok(()) => String::new(),
                Err(r) => format!(" (and {} could not be restored: {r})", log.display()),
            };
            return Err(Error::new(format!("{e}{note}")));
        }
    }
    Ok(())
}

/// Earlier rejections of exactly this definition, from the log: (author,
/// time, reason). Unreadable lines are skipped; the log is for people.
pub fn earlier_rejections(lockfile: &Path, ch: &Change) -> Vec<(String, String, String)> {
    let Ok(text) = std::fs::read_to_string(log_path(lockfile)) else {
        return Vec::new();
    };
    let after = ch.after.map(|f| f.to_hex());
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| {
            r["decision"] == "rejected"
                && r["server"] == ch.server.as_str()
                && r["tool"] == ch.tool.as_str()
                && r.pointer("/fingerprint/after").and_then(Value::as_str) == after.as_deref()
        })
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            (s("author"), s("time"), s("reason"))
        })
        .collect()
}

/// Who is deciding: `TOOLPIN_AUTHOR`, else git's `user.name <user.email>`
/// as seen from the lockfile's directory, else the login name.
pub fn author(lockfile: &Path) -> String {
    if let Ok(a) = std::env::var("TOOLPIN_AUTHOR") {
        if !a.trim().is_empty() {
            return a.trim().to_string();
        }
    }
    let dir = lockfile_dir(lockfile);
    let git = |key: &str| {
        std::process::Command::new("git")
            .args(["config", "--get", key])
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    match (git("user.name"), git("user.email")) {
        (Some(name), Some(email)) => format!("{name} <{email}>"),
        (Some(name), None) => name,
        (None, Some(email)) => format!("<{email}>"),
        (None, None) => std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .unwrap_or_else(|_| "unknown".into()),
    }
}

/// Now, as RFC 3339 UTC to the second.
pub fn now_utc() -> String {
    toolpin_manifest::time::now_utc()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(servers: &[(&str, Vec<Value>)]) -> Catalog {
        let map = servers
            .iter()
            .map(|(name, tools)| {
                let pin =
                    ServerPin::new(name, json!({"file": "x"}), "mcp", tools.clone()).expect("pin");
                (name.to_string(), pin)
            })
            .collect();
        Catalog::new("default", map).expect("catalog")
    }

    fn tool(name: &str, description: &str) -> Value {
        json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
    }

    #[test]
    fn log_beside_the_lockfile() {
        assert_eq!(
            log_path(Path::new("toolpin.lock")),
            PathBuf::from("toolpin.approvals.jsonl")
        );
        assert_eq!(
            log_path(Path::new("a/toolpin.staging.lock")),
            PathBuf::from("a/toolpin.staging.approvals.jsonl")
        );
        assert_eq!(
            log_path(Path::new("pins.json")),
            PathBuf::from("pins.json.approvals.jsonl")
        );
    }

    #[test]
    fn changes_and_partial_apply() {
        let pinned = catalog(&[
            (
                "a",
                vec![tool("keep", "k"), tool("edit", "old"), tool("gone", "g")],
            ),
            ("b", vec![tool("only", "o")]),
        ]);
        let live = catalog(&[
            (
                "a",
                vec![tool("keep", "k"), tool("edit", "new"), tool("fresh", "f")],
            ),
            ("c", vec![tool("only", "o")]),
        ]);
        let c = toolpin_drift::compare(&pinned, &live);
        let all = changes(&pinned, &live, &c);
        let summary: Vec<(String, &str)> = all
            .iter()
            .map(|ch| (ch.address(), ch.kind.name()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a/edit".to_string(), "changed"),
                ("a/fresh".to_string(), "added"),
                ("a/gone".to_string(), "removed"),
                ("c/only".to_string(), "changed"),
            ]
        );
        assert_eq!(all[3].from, Some(("b".to_string(), "only".to_string())));
        assert!(all[0].rules(&c).contains(&"description-changed"));

        // Accepting one change moves exactly that tool.
        let sel = [Selector::parse("a/edit").expect("selector")];
        let picked = select(&all, &sel).expect("select");
        let updated = apply(&pinned, &live, &picked).expect("apply");
        assert_eq!(
            updated.servers["a"].tools["edit"],
            live.servers["a"].tools["edit"]
        );
        assert!(updated.servers["a"].tools.contains_key("gone"));
        assert!(!updated.servers["a"].tools.contains_key("fresh"));
        assert!(updated.servers.contains_key("b"));
        assert_ne!(updated.fingerprint(), pinned.fingerprint());

        // Accepting everything is the live catalog.
        let everything: Vec<&Change> = all.iter().collect();
        let whole = apply(&pinned, &live, &everything).expect("apply");
        assert_eq!(whole, live);
    }

    /// Every catalog `apply` returns is one the lockfile reader accepts,
    /// for servers with instructions too (their fingerprint covers them),
    /// and a change of instructions alone is a server change to accept.
    #[test]
    fn applied_catalogs_with_instructions_read_back() {
        let with = |c: Catalog, said: &str| {
            let servers = c
                .servers
                .into_iter()
                .map(|(n, p)| (n, p.with_instructions(Some(said.to_string()))))
                .collect();
            Catalog::new("default", servers).expect("catalog")
        };
        let pinned = with(
            catalog(&[("s", vec![tool("lookup", "old"), tool("search", "s")])]),
            "Use lookup first.",
        );
        let live = with(
            catalog(&[("s", vec![tool("lookup", "new"), tool("search", "s2")])]),
            "Use search first.",
        );
        let c = toolpin_drift::compare(&pinned, &live);
        let all = changes(&pinned, &live, &c);
        let summary: Vec<(String, &str)> = all
            .iter()
            .map(|ch| (ch.address(), ch.kind.name()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("s".to_string(), "server"),
                ("s/lookup".to_string(), "changed"),
                ("s/search".to_string(), "changed"),
            ]
        );
        assert_eq!(all[0].rules(&c), vec!["server-instructions-changed"]);
        let read_back = |cat: &Catalog| {
            let text = toolpin_manifest::lockfile::to_string(cat);
            toolpin_manifest::lockfile::parse(text.as_bytes(), "toolpin.lock")
                .unwrap_or_else(|e| panic!("{e}"))
        };
        // Each subset of the changes, applied, reads back as written.
        for mask in 0..(1u32 << all.len()) {
            let picked: Vec<&Change> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, ch)| ch)
                .collect();
            let updated = apply(&pinned, &live, &picked).expect("apply");
            assert_eq!(read_back(&updated), updated, "subset {mask:b}");
            let said = updated.servers["s"].instructions.as_deref();
            let want = if mask & 1 != 0 {
                "Use search first."
            } else {
                "Use lookup first."
            };
            assert_eq!(said, Some(want), "subset {mask:b}");
        }
    }

    #[test]
    fn renames_are_one_change() {
        let long = "Look up one order by its identifier and return its status, items and totals.";
        let pinned = catalog(&[("a", vec![tool("get_order", long)])]);
        let live = catalog(&[("a", vec![tool("fetch_order", long)])]);
        let c = toolpin_drift::compare(&pinned, &live);
        let all = changes(&pinned, &live, &c);
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].kind, ChangeKind::Renamed);
        assert_eq!(
            all[0].from,
            Some(("a".to_string(), "get_order".to_string()))
        );
        let whole = apply(&pinned, &live, &[&all[0]]).expect("apply");
        assert_eq!(whole, live);
    }

    #[test]
    fn selectors() {
        let pinned = catalog(&[("a", vec![tool("x", "1"), tool("y", "1")])]);
        let live = catalog(&[("a", vec![tool("x", "2"), tool("y", "2")])]);
        let c = toolpin_drift::compare(&pinned, &live);
        let all = changes(&pinned, &live, &c);
        let fp = all[0].after.expect("after").to_hex();
        let pick = |s: &str| select(&all, &[Selector::parse(s).expect("parse")]);
        assert_eq!(pick("a/*").expect("glob").len(), 2);
        assert_eq!(pick(&format!("a/x@{}", &fp[..12])).expect("fp").len(), 1);
        let stale = pick("a/x@00000000").expect_err("stale");
        assert!(
            stale
                .to_string()
                .contains("not the definition that was reviewed"),
            "{stale}"
        );
        let none = pick("b/*").expect_err("none");
        assert_eq!(
            none.to_string(),
            "--tool b/*: no such change (changed: a/x, a/y)"
        );
        assert!(Selector::parse("@deadbeef").is_err());
    }
}
