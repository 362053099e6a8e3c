//! The rule registry, one file per family. Ids are a public contract
//! (docs/rules.md, generated from here): users write policy against them, so
//! an id never changes meaning once released.

pub mod annotation;
pub mod input;
pub mod output;
pub mod property;
pub mod runtime;
pub mod source;
pub mod tool;

pub use annotation::*;
pub use input::*;
pub use output::*;
pub use property::*;
pub use runtime::*;
pub use source::*;
pub use tool::*;

/// Every family, in the order the docs list them.
pub const FAMILIES: &[&[&crate::rule::Rule]] = &[
    TOOL_RULES,
    ANNOTATION_RULES,
    INPUT_RULES,
    OUTPUT_RULES,
    PROPERTY_RULES,
    SOURCE_RULES,
    RUNTIME_RULES,
];
