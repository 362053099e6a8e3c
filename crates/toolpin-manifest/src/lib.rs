//! toolpin's data model: normalized tools, canonical JSON, fingerprints and
//! the lockfile. Pure: no network, no terminal, no processes.
//!
//! Tools stay `serde_json::Value` throughout; nothing a server sent is
//! dropped except what normalization (docs/fingerprint.md) says.

pub mod catalog;
pub mod diagnostic;
pub mod export;
pub mod fingerprint;
pub mod format;
pub mod fs;
pub mod glob;
pub mod jcs;
pub mod json;
pub mod lockfile;
pub mod normalize;
pub mod pointer;
pub mod pretty;
pub mod redact;
pub mod schema;
pub mod severity;
pub mod text;
pub mod time;
pub mod wire;

pub use catalog::{Catalog, CatalogError, PinBuilder, PinnedTool, ServerPin};
pub use fingerprint::Fingerprint;
pub use format::ToolFormat;
pub use glob::Glob;
pub use normalize::{ToolError, Transform};
pub use pointer::Pointer;
pub use redact::{Redactor, SafeUrl};
pub use severity::Severity;
