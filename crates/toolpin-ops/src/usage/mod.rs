//! What `toolpin usage` needs around the usage crate: the catalogs that
//! were pinned, read from the lockfiles and their git history, with the
//! one-line change between two of them ([`pinned`]).

pub mod pinned;
pub mod record;
pub mod render;
pub mod serve;
pub mod store;
mod workflow;

pub use workflow::{compact, read_files, report, ReportRequest, Reported};
