//! The rule registry, one file per family. Ids are a public contract
//! (docs/rules.md, generated from here): users write policy against them, so
//! an id never changes meaning once released.
//!
//! A family file holds a family's rule records (the `crate::rules!` block:
//! id, since, summary, severity, …), the check code that decides them, and
//! so the list of rules it can emit. The tool, annotation, source and
//! runtime families (and server) push through [`crate::rule::Family::push`]; the schema
//! families (object, types, enums, bounds, default, unions, property,
//! unanalyzable) are `impl Walker` blocks the schema walk (schema.rs) calls
//! keyword by keyword, and push through `Walker::push`, naming their
//! family. Both assert in debug builds that the rule is the family's own
//! (or one of the tool family's generic [`tool::FALLBACKS`]); the tests
//! below check that each rule is in one list and named by one file.

pub mod annotation;
pub mod bounds;
pub mod default;
pub mod enums;
pub mod object;
pub mod property;
pub mod runtime;
pub mod server;
pub mod source;
pub mod tool;
pub mod types;
pub mod unanalyzable;
pub mod unions;

pub use annotation::*;
pub use bounds::*;
pub use default::*;
pub use enums::*;
pub use object::*;
pub use property::*;
pub use runtime::*;
pub use server::*;
pub use source::*;
pub use tool::*;
pub use types::*;
pub use unanalyzable::*;
pub use unions::*;

/// Every family, in the order the docs list them: the one list (the docs,
/// [`crate::rule::all`] and the family tests read it). A family file that
/// is not listed here fails `rules::tests::every_family_file_is_registered`.
pub const FAMILIES: &[&crate::rule::Family] = &[
    &TOOL_FAMILY,
    &ANNOTATION_FAMILY,
    &OBJECT_FAMILY,
    &TYPES_FAMILY,
    &ENUMS_FAMILY,
    &BOUNDS_FAMILY,
    &DEFAULT_FAMILY,
    &UNIONS_FAMILY,
    &PROPERTY_FAMILY,
    &UNANALYZABLE_FAMILY,
    &SERVER_FAMILY,
    &SOURCE_FAMILY,
    &RUNTIME_FAMILY,
];

#[cfg(test)]
mod tests {
    use super::FAMILIES;

    /// Every `rules/<family>.rs` that declares a family is in [`FAMILIES`]
    /// under its file name, so none can vanish from docs/rules.md.
    #[test]
    fn every_family_file_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("src/rules")
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(e.path()).ok()?;
                let stem = name.strip_suffix(".rs")?.to_string();
                (stem != "mod" && text.contains("crate::rules! {")).then_some(stem)
            })
            .collect();
        files.sort();
        let mut listed: Vec<String> = FAMILIES.iter().map(|f| f.name.to_string()).collect();
        listed.sort();
        assert_eq!(files, listed, "src/rules/*.rs and rules::FAMILIES differ");
    }

    /// Each rule id is in exactly one family's list.
    #[test]
    fn every_rule_is_in_exactly_one_family() {
        let mut owner = std::collections::BTreeMap::new();
        for family in FAMILIES {
            for rule in family.rules {
                if let Some(other) = owner.insert(rule.id, family.name) {
                    panic!("{} is in both {other} and {}", rule.id, family.name);
                }
            }
        }
        assert_eq!(owner.len(), crate::rule::all().count());
    }

    /// Where a rule may be named outside its family's file, besides the
    /// tool family's [`super::tool::FALLBACKS`] (named by every family that
    /// falls back to them): compare.rs's member loop decides the tool's own
    /// members (and folds renames), and an annotation `title` is the tool's
    /// title.
    const ALSO_NAMED_IN: &[(&str, &str)] = &[
        ("tool-renamed", "compare.rs"),
        ("title-changed", "compare.rs"),
        ("title-changed", "rules/annotation.rs"),
        ("output-schema-added", "compare.rs"),
        ("output-schema-removed", "compare.rs"),
    ];

    /// Each rule is emitted by exactly one family: its record's constant is
    /// named (pushed, or chosen for a push) only in its family's file, apart
    /// from the fallbacks and [`ALSO_NAMED_IN`]. Together with the debug
    /// assertion at every push (`Family::push`, `Walker::push`: the family
    /// named lists the rule), a rule's decision lives beside its record.
    #[test]
    fn every_rule_is_decided_in_its_family_file() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        let mut dirs = vec![src.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("src").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let rel = path.strip_prefix(&src).unwrap().to_string_lossy();
                    let rel = rel.replace('\\', "/");
                    if rel != "rules/mod.rs" {
                        files.push((rel, std::fs::read_to_string(&path).expect("read")));
                    }
                }
            }
        }
        // Whether `text` names `name` as a whole identifier.
        let names = |text: &str, name: &str| {
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
            text.match_indices(name).any(|(i, _)| {
                !text[..i].ends_with(ident) && !text[i + name.len()..].starts_with(ident)
            })
        };
        let fallback = |id: &str| super::tool::FALLBACKS.iter().any(|r| r.id == id);
        let mut stray = Vec::new();
        for family in FAMILIES {
            let own = format!("rules/{}.rs", family.name);
            for rule in family.rules {
                let name = rule.id.to_ascii_uppercase().replace('-', "_");
                let home = files.iter().find(|(f, _)| *f == own).map(|(_, t)| t);
                assert!(
                    home.is_some_and(|t| t.contains(&format!("    {name} {{\n"))),
                    "{}: no record {name} in {own}",
                    rule.id
                );
                for (file, text) in &files {
                    let allowed = *file == own
                        || fallback(rule.id)
                        || ALSO_NAMED_IN.contains(&(rule.id, file.as_str()));
                    if !allowed && names(text, &name) {
                        stray.push(format!("{} ({}) is named in {file}", rule.id, family.name));
                    }
                }
            }
        }
        assert!(
            stray.is_empty(),
            "rules decided outside their family file:\n{}",
            stray.join("\n")
        );
    }
}
