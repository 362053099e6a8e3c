//! docs/rules.md is generated from the registry; this fails when it is
//! stale. `TOOLPIN_BLESS=1 cargo test -p toolpin-drift --test docs` rewrites it.

use std::path::Path;

#[test]
fn rules_md_is_generated_from_the_registry() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/rules.md");
    let want = toolpin_drift::rule::markdown();
    if std::env::var_os("TOOLPIN_BLESS").is_some() {
        std::fs::write(&path, &want).expect("write docs/rules.md");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/rules.md is stale: run `TOOLPIN_BLESS=1 cargo test -p toolpin-drift --test docs`"
    );
}

#[test]
fn every_rule_is_documented_and_covered() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rules");
    let mut seen = std::collections::HashSet::new();
    for rule in toolpin_drift::rule::all() {
        assert!(seen.insert(rule.id), "duplicate id {}", rule.id);
        assert!(
            rule.id
                .split('-')
                .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase())),
            "{} is not kebab-case",
            rule.id
        );
        assert!(
            !rule.summary.is_empty() && !rule.breaks.is_empty() && !rule.example.is_empty(),
            "{}",
            rule.id
        );
    }
    assert!(fixtures.is_dir());
}
