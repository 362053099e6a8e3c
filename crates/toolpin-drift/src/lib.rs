//! Drift: what differs between a pinned catalog and a live one, each
//! difference a [`Finding`] with a rule id from [`rule::ALL`].

pub mod compare;
pub mod finding;
pub mod rule;

pub use compare::compare;
pub use finding::{Comparison, Finding, Summary};
pub use rule::{Kind, Rule, Severity};
