//! The rule registry, one file per family. Ids are a public contract
//! (docs/rules.md, generated from here): users write policy against them, so
//! an id never changes meaning once released.

pub mod annotation;
pub mod input;
pub mod output;
pub mod property;
pub mod runtime;
pub mod server;
pub mod source;
pub mod tool;

pub use annotation::*;
pub use input::*;
pub use output::*;
pub use property::*;
pub use runtime::*;
pub use server::*;
pub use source::*;
pub use tool::*;

/// Every family, in the order the docs list them: the one list (the docs,
/// [`crate::rule::all`] and the family tests read it). A family file that
/// is not listed here fails `rules::tests::every_family_file_is_registered`.
pub const FAMILIES: &[&crate::rule::Family] = &[
    &TOOL_FAMILY,
    &ANNOTATION_FAMILY,
    &INPUT_FAMILY,
    &OUTPUT_FAMILY,
    &PROPERTY_FAMILY,
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
}
