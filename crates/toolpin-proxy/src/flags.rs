//! The flags file: tools withdrawn from the served catalog without a
//! deploy. `toolpin withdraw` and `toolpin restore` edit it; the proxy
//! reloads it when it changes on disk and on SIGHUP.
//!
//! ```toml
//! [withdrawn."orders/orders__refund_order"]
//! reason = "refunds paused during incident 4312"
//! by = "Ada Reviewer <ada@example.com>"
//! at = "2026-11-29T23:59:00Z"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One withdrawn tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Withdrawal {
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flags {
    /// By `server/tool` (pinned names).
    #[serde(default)]
    pub withdrawn: BTreeMap<String, Withdrawal>,
}

const HEADER: &str = "# Tools withdrawn from `toolpin proxy` without a deploy.\n\
# Edit with `toolpin withdraw SERVER/TOOL --reason ...` and `toolpin restore SERVER/TOOL`;\n\
# a running proxy reloads this file when it changes, and on SIGHUP.\n\n";

/// The flags file beside `lockfile`: `toolpin.lock` → `toolpin.flags.toml`.
pub fn path_for(lockfile: &Path) -> PathBuf {
    toolpin_manifest::lockfile::sibling(lockfile, "flags.toml")
}

impl Flags {
    /// Reads `path`; a missing file is no flags.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        toml::from_str(&text).map_err(|e| {
            format!(
                "{}: {}",
                path.display(),
                e.message().trim().replace('\n', " ")
            )
        })
    }

    /// Writes `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let body = toml::to_string(self).map_err(|e| e.to_string())?;
        toolpin_manifest::fs::write_atomic(path, format!("{HEADER}{body}").as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// `server/tool` → reason.
    pub fn reasons(&self) -> BTreeMap<String, String> {
        self.withdrawn
            .iter()
            .map(|(k, w)| (k.clone(), w.reason.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_path() {
        assert_eq!(
            path_for(Path::new("a/toolpin.staging.lock")),
            PathBuf::from("a/toolpin.staging.flags.toml")
        );
        let dir = std::env::temp_dir().join(format!("toolpin-flags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("toolpin.flags.toml");
        assert_eq!(
            Flags::read(&path).expect("missing is empty"),
            Flags::default()
        );
        let mut flags = Flags::default();
        flags.withdrawn.insert(
            "orders/refund".into(),
            Withdrawal {
                reason: "incident 4312".into(),
                by: Some("Ada".into()),
                at: None,
            },
        );
        flags.write(&path).expect("write");
        assert_eq!(Flags::read(&path).expect("read"), flags);
        std::fs::write(&path, "[withdrawn.x]\nreason = 1\n").expect("write");
        assert!(Flags::read(&path)
            .expect_err("bad")
            .contains("toolpin.flags.toml"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
