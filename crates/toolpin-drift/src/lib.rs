//! Drift: what differs between a pinned catalog and a live one, each
//! difference a [`Finding`] with a rule id from the registry in [`rules`].

pub mod budget;
pub mod cluster;
pub mod compare;
pub mod finding;
pub mod policy;
pub mod prose;
pub mod rename;
pub mod rule;
pub mod rules;
pub mod schema;
pub mod text;

pub use compare::compare;
pub use finding::{Comparison, Finding, Summary, ToolChange};
pub use rule::{Kind, Rule, Severity};
