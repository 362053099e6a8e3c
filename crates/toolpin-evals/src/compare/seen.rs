//! The tool names the agent has emitted across the suite, committed beside
//! the lockfile (`toolpin.lock` → `toolpin.seen-tools.json`). A run that
//! emits a name not in it fails until `toolpin accept --seen-tool NAME`
//! adds it; nothing else writes the file.
//!
//! One name per line, sorted, so that a review sees exactly which name was
//! added:
//!
//! ```json
//! {
//!   "version": 1,
//!   "tools": [
//!     "orders__lookup_order",
//!     "orders__search_orders"
//!   ]
//! }
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::results::io_reason;
use crate::Error;

pub const VERSION: u64 = 1;

/// The seen-tools file beside a lockfile.
pub fn path_for(lockfile: &Path) -> PathBuf {
    toolpin_manifest::lockfile::sibling(lockfile, "seen-tools.json")
}

/// The names in the file; `None` when there is no file yet.
pub fn read(path: &Path) -> Result<Option<BTreeSet<String>>, Error> {
    let shown = toolpin_manifest::text::shown_path(path);
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::new(format!("{shown}: {}", io_reason(&e)))),
    };
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(format!(
            "{shown}:{}: not a seen-tools file: {}",
            e.line(),
            strip_position(&e.to_string())
        ))
    })?;
    let bad = |what: &str| Error::new(format!("{shown}: not a seen-tools file: {what}"));
    let obj = doc.as_object().ok_or_else(|| bad("expected an object"))?;
    match obj.get("version").and_then(Value::as_u64) {
        Some(VERSION) => {}
        Some(v) => {
            return Err(bad(&format!(
                "version {v} is newer than this toolpin reads ({VERSION})"
            )))
        }
        None => return Err(bad("`version` is missing")),
    }
    let tools = obj
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("`tools` must be an array of names"))?;
    let mut names = BTreeSet::new();
    for t in tools {
        let name = t
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("`tools` must hold non-empty strings"))?;
        names.insert(name.to_string());
    }
    Ok(Some(names))
}

fn strip_position(text: &str) -> &str {
    match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// The file's text for a set of names.
pub fn render(names: &BTreeSet<String>) -> String {
    let mut text = format!("{{\n  \"version\": {VERSION},\n  \"tools\": [");
    for (i, name) in names.iter().enumerate() {
        text.push_str(if i == 0 { "\n    " } else { ",\n    " });
        text.push_str(&Value::String(name.clone()).to_string());
    }
    text.push_str(if names.is_empty() {
        "]\n}\n"
    } else {
        "\n  ]\n}\n"
    });
    text
}

/// Adds names to the file (created when missing), atomically. Returns the
/// names that were new.
pub fn add(path: &Path, new: &[String]) -> Result<Vec<String>, Error> {
    let mut names = read(path)?.unwrap_or_default();
    let added: Vec<String> = new
        .iter()
        .filter(|n| names.insert((*n).clone()))
        .cloned()
        .collect();
    if !added.is_empty() {
        toolpin_manifest::fs::write_atomic(path, render(&names).as_bytes()).map_err(|e| {
            Error::new(format!(
                "cannot write {}: {e}",
                toolpin_manifest::text::shown_path(path)
            ))
        })?;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_sorted_one_per_line() {
        let dir = std::env::temp_dir().join(format!("toolpin-seen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("toolpin.seen-tools.json");
        let _ = std::fs::remove_file(&path);
        assert_eq!(read(&path).unwrap(), None);
        let added = add(&path, &["b".into(), "a\"x".into()]).unwrap();
        assert_eq!(added, vec!["b".to_string(), "a\"x".to_string()]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "{\n  \"version\": 1,\n  \"tools\": [\n    \"a\\\"x\",\n    \"b\"\n  ]\n}\n"
        );
        assert!(add(&path, &["b".into()]).unwrap().is_empty());
        let names = read(&path).unwrap().unwrap();
        assert_eq!(names.len(), 2);
        assert_eq!(
            render(&BTreeSet::new()),
            "{\n  \"version\": 1,\n  \"tools\": []\n}\n"
        );
        std::fs::write(&path, "{\"version\":1,\"tools\":[3]}").unwrap();
        let err = read(&path).unwrap_err();
        assert!(
            err.message()
                .ends_with("not a seen-tools file: `tools` must hold non-empty strings"),
            "{err}"
        );
        std::fs::write(&path, "{\"version\":1,\n\"tools\":[").unwrap();
        assert!(read(&path)
            .unwrap_err()
            .message()
            .contains(":2: not a seen-tools file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sits_beside_the_lockfile() {
        assert_eq!(
            path_for(Path::new("a/toolpin.lock")),
            Path::new("a/toolpin.seen-tools.json")
        );
    }
}
