//! Faults found reading and writing lockfiles: duplicate keys that let the
//! last entry win, `lock` failing on a read-only disk when nothing changed,
//! a UTF-8 BOM refused by `fingerprint` and `diff` with a "line 0" message,
//! and `lock` through a symbolic link replacing the link.

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

const TOOLS: &str = r#"{"tools": [
  {"name": "a", "description": "A", "inputSchema": {"type": "object"}},
  {"name": "b", "description": "B", "inputSchema": {"type": "object"}}
]}"#;

/// A sandbox with a two-tool file server, locked.
fn locked() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("tools.json", TOOLS);
    sb.write("toolpin.toml", one_file_server("s", "tools.json", ""));
    sb.run(&["lock"]).ok();
    sb
}

/// 1-based (line, column) of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = offset - before.rfind('\n').map_or(0, |p| p + 1) + 1;
    (line, column)
}

/// `text` with `insert` placed before the `nth` (0-based) occurrence of
/// `at`; returns the new text and where the inserted text starts.
fn insert_before(text: &str, at: &str, nth: usize, insert: &str) -> (String, usize) {
    let offset = text
        .match_indices(at)
        .nth(nth)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("{at:?} #{nth} not in the lockfile"));
    (
        format!("{}{insert}{}", &text[..offset], &text[offset..]),
        offset,
    )
}

#[test]
fn duplicate_keys_in_a_lockfile_are_refused_at_every_level() {
    let sb = locked();
    let good = sb.read_string("toolpin.lock");
    // (what is given twice, the edit): the first entry is the one that
    // serde would drop; the second is the original, so that every
    // fingerprint still matches and only the duplicate is wrong.
    let cases = [
        // a tool entry of a server
        (
            "\"a\"",
            "\"a\": {",
            "\"a\": {\"fingerprint\": \"0000000000000000000000000000000000000000000000000000000000000000\", \"tool\": {\"name\": \"a\", \"description\": \"EVIL\"}},\n        ",
        ),
        // a member inside a pinned tool
        ("\"description\"", "\"description\": \"A\"", "\"description\": \"EVIL\",\n            "),
        // the top level (serde refused this one already, without the first)
        ("\"environment\"", "\"environment\"", "\"environment\": \"evil\",\n  "),
    ];
    for (key, at, insert) in cases {
        let (text, offset) = insert_before(&good, at, 0, insert);
        sb.write("dup.lock", &text);
        // The error is at the second occurrence: the original, now after
        // the inserted one.
        let second = offset + insert.len();
        let (line, column) = position(&text, second);
        let (first_line, first_column) = position(&text, offset);
        let expected = format!(
            "dup.lock:{line}:{column}: duplicate key {key} (first at line {first_line}, column {first_column}); every name in an object must be unique"
        );
        for args in [
            &["check", "--lockfile", "dup.lock"][..],
            &["fingerprint", "dup.lock"],
            &["diff", "dup.lock", "toolpin.lock"],
            &["diff", "toolpin.lock", "dup.lock"],
        ] {
            let message = sb.run(args).error(&[]);
            assert_eq!(message, expected, "{args:?}");
        }
    }
    // The same document without the duplicate is fine.
    sb.write("dup.lock", &good);
    sb.run(&["check", "--lockfile", "dup.lock"]).ok();
}

#[test]
fn duplicate_keys_in_a_tool_file_are_refused() {
    let sb = Sandbox::new();
    let text = "{\"tools\": [\n  {\"name\": \"a\", \"description\": \"A\",\n   \"inputSchema\": {\"type\": \"object\", \"type\": \"string\"}}\n]}";
    sb.write("tools.json", text);
    let message = sb.run(&["fingerprint", "tools.json"]).error(&[]);
    assert_eq!(
        message,
        "tools.json:3:38: duplicate key \"type\" (first at line 3, column 20); every name in an object must be unique"
    );
}

/// Makes a directory immutable (`chattr +i`: root may write anywhere
/// else) until dropped.
struct Immutable(PathBuf);

impl Immutable {
    fn new(dir: &Path) -> Option<Self> {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Self(dir.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn lock_on_an_unchanged_catalog_succeeds_on_a_read_only_directory() {
    let sb = locked();
    let before = sb.read("toolpin.lock");
    let listing = sb.listing();
    let Some(_ro) = Immutable::new(sb.path()) else {
        eprintln!("skipped: chattr +i is not available here");
        return;
    };
    // Nothing can be created in the directory now.
    assert!(fs::write(sb.join("probe"), b"x").is_err());
    let run = sb.run(&["lock"]);
    run.ok();
    assert!(
        run.stderr
            .starts_with("Unchanged: 2 tools from 1 server in toolpin.lock (tools "),
        "{run:#?}"
    );
    assert_eq!(sb.read("toolpin.lock"), before);
    // A changed catalog cannot be written there: a clear error, the old
    // lockfile intact.
    sb.write("tools.json", TOOLS.replace("\"B\"", "\"B2\""));
    let message = sb.run(&["lock"]).error(&["cannot write toolpin.lock: "]);
    assert!(message.contains("Operation not permitted"), "{message}");
    assert_eq!(sb.read("toolpin.lock"), before);
    assert_eq!(sb.listing(), listing);
}

#[test]
fn a_lockfile_with_a_bom_is_read_the_same_everywhere() {
    let sb = locked();
    let plain = sb.read("toolpin.lock");
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&plain);
    sb.write("bom.lock", &bom);
    let expect = sb.run(&["fingerprint", "toolpin.lock"]);
    expect.ok();
    let got = sb.run(&["fingerprint", "bom.lock"]);
    got.ok();
    assert_eq!(got.stdout, expect.stdout);
    let run = sb.run(&["diff", "bom.lock", "toolpin.lock"]);
    run.ok();
    assert!(
        run.stdout
            .starts_with("ok: the two catalogs match (2 tools"),
        "{run:#?}"
    );
    sb.run(&["diff", "toolpin.lock", "bom.lock"]).ok();
    sb.run(&["check", "--lockfile", "bom.lock"]).ok();

    // An error in a lockfile with a BOM is located where it is.
    let text = String::from_utf8(plain).expect("utf-8");
    let broken = text.replacen("\"fingerprint\": \"", "\"fingerprint\" \"", 1);
    let offset = broken.find("\"fingerprint\" \"").expect("edit") + "\"fingerprint\" ".len();
    let (line, column) = position(&broken, offset);
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(broken.as_bytes());
    sb.write("bom.lock", &bytes);
    for args in [
        &["fingerprint", "bom.lock"][..],
        &["diff", "bom.lock", "toolpin.lock"],
        &["check", "--lockfile", "bom.lock"],
    ] {
        let message = sb.run(args).error(&[]);
        assert_eq!(
            located(&message, "bom.lock"),
            (line, column),
            "{args:?}: {message}"
        );
    }

    // A document that is not tool definitions, with a BOM: located at its
    // start, never at line 0.
    sb.write("other.json", b"\xEF\xBB\xBF{\"foo\": 1}");
    let message = sb
        .run(&["fingerprint", "other.json"])
        .error(&["cannot detect the format"]);
    assert_eq!(located(&message, "other.json"), (1, 1), "{message}");
}

#[test]
fn lock_through_a_symbolic_link_writes_the_target() {
    let sb = Sandbox::new();
    sb.write("tools.json", TOOLS);
    sb.write("toolpin.toml", one_file_server("s", "tools.json", ""));
    fs::create_dir_all(sb.join("pins")).expect("dir");
    sb.run(&["lock", "--lockfile", "pins/real.lock"]).ok();
    symlink("pins/real.lock", sb.join("toolpin.lock")).expect("link");
    let before = sb.read("pins/real.lock");

    sb.write("tools.json", TOOLS.replace("\"B\"", "\"B2\""));
    let run = sb.run(&["lock"]);
    run.ok();
    assert!(
        run.stderr
            .starts_with("Pinned 2 tools from 1 server in toolpin.lock"),
        "{run:#?}"
    );
    let meta = fs::symlink_metadata(sb.join("toolpin.lock")).expect("meta");
    assert!(
        meta.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    assert_eq!(
        fs::read_link(sb.join("toolpin.lock")).expect("link"),
        Path::new("pins/real.lock")
    );
    let after = sb.read("pins/real.lock");
    assert_ne!(after, before, "the target is stale");
    assert!(String::from_utf8_lossy(&after).contains("\"description\": \"B2\""));
    sb.run(&["check"]).ok();
    assert_eq!(sb.temp_files(), Vec::<String>::new());
    // And unchanged through the link.
    let run = sb.run(&["lock"]);
    run.ok();
    assert!(run.stderr.starts_with("Unchanged: "), "{run:#?}");
}

#[test]
fn lock_on_an_unchanged_catalog_succeeds_on_a_full_disk() {
    let sb = locked();
    fs::create_dir_all(sb.join("full")).expect("dir");
    // A 64 KiB tmpfs in a private mount namespace (gone when the shell
    // exits), filled up, holding a copy of the project: lock unchanged,
    // then changed.
    let script = r#"
        set -u
        mount -t tmpfs -o size=64k tmpfs full || exit 90
        cp toolpin.toml tools.json toolpin.lock full/
        dd if=/dev/zero of=full/fill bs=4k 2>/dev/null
        cd full
        "$BIN" lock 2>&1; echo "rc=$?"
        cmp -s toolpin.lock ../toolpin.lock && echo same
        printf '{"tools": [{"name": "a", "description": "A", "inputSchema": {"type": "object"}}, {"name": "b", "description": "B2", "inputSchema": {"type": "object"}}]}' > tools.json
        "$BIN" lock 2>&1; echo "rc=$?"
        cmp -s toolpin.lock ../toolpin.lock && echo same
        ls -a
    "#;
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", script])
        .env("BIN", BIN)
        .current_dir(sb.path())
        .output()
        .expect("run unshare");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.code() == Some(90) || !out.status.success() && text.is_empty() {
        eprintln!(
            "skipped: cannot mount a tmpfs here: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("Unchanged: 2 tools from 1 server in toolpin.lock (tools "),
        "{text}"
    );
    assert_eq!(lines[1..3], ["rc=0", "same"], "{text}");
    assert!(
        lines[3].starts_with("error: cannot write toolpin.lock: No space left on device"),
        "{text}"
    );
    assert_eq!(
        lines[4..],
        [
            "rc=2",
            "same",
            ".",
            "..",
            "fill",
            "toolpin.lock",
            "toolpin.toml",
            "tools.json"
        ],
        "{text}"
    );
}
