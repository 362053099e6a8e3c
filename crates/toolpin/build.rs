//! Build facts for `toolpin --version --json`: the git commit (from
//! TOOLPIN_GIT_COMMIT when a packager sets it, else `git rev-parse HEAD`,
//! else "unknown" for a build from a source archive), the target triple and
//! the build profile.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=TOOLPIN_GIT_COMMIT");
    let commit = match std::env::var("TOOLPIN_GIT_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            // Rebuild when HEAD moves: the HEAD file, the branch it names,
            // and the packed refs (where a branch may live instead).
            for path in ["HEAD", "packed-refs"] {
                if let Some(p) = git(&["rev-parse", "--git-path", path]) {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                if let Some(p) = git(&["rev-parse", "--git-path", &branch]) {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
            git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    println!("cargo:rustc-env=TOOLPIN_COMMIT={commit}");
    for (var, name) in [("TARGET", "TOOLPIN_TARGET"), ("PROFILE", "TOOLPIN_PROFILE")] {
        let value = std::env::var(var).unwrap_or_else(|_| "unknown".into());
        println!("cargo:rustc-env={name}={value}");
    }
}
