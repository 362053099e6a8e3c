//! `toolpin --version --json`: exactly which build is running, for a bug
//! report or a record of what wrote a lockfile. The facts come from
//! build.rs; the executable's SHA-256 is taken when asked.

use std::ffi::OsString;

use serde_json::json;

/// Whether the arguments are `--version --json` (either order, `-V` for
/// `--version`), which clap's own version flag does not take.
pub fn asked(args: &[OsString]) -> bool {
    let mut version = false;
    let mut json = false;
    for a in args {
        match a.to_str() {
            Some("--version" | "-V") => version = true,
            Some("--json") => json = true,
            _ => return false,
        }
    }
    version && json
}

/// The document, one line.
pub fn document() -> String {
    let executable = std::env::current_exe()
        .and_then(std::fs::read)
        .map(|bytes| toolpin_manifest::Fingerprint::of_bytes(&bytes).to_hex())
        .ok();
    json!({
        "name": "toolpin",
        "version": env!("CARGO_PKG_VERSION"),
        "commit": env!("TOOLPIN_COMMIT"),
        "target": env!("TOOLPIN_TARGET"),
        "profile": env!("TOOLPIN_PROFILE"),
        "executable_sha256": executable,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn only_version_with_json_is_taken() {
        assert!(asked(&args(&["--version", "--json"])));
        assert!(asked(&args(&["--json", "-V"])));
        assert!(!asked(&args(&["--version"])));
        assert!(!asked(&args(&["--json"])));
        assert!(!asked(&args(&["stamp", "--json"])));
        assert!(!asked(&args(&["--version", "--json", "lock"])));
    }
}
