//! Renderers for drift findings. Each format is one module with a `render`
//! function from a [`toolpin_drift::Comparison`] to text, and one entry in
//! [`format::FORMATS`], the table the CLI parses `--format` through and
//! renders with (one [`format::Input`] for every format).

pub mod context;
pub mod csv;
pub mod format;
pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;
pub mod style;
pub mod summary;
pub mod text;

pub use format::{Format, Input, Report, ReportFormat, Target, FORMATS};
pub use style::{use_color, ColorChoice, Style};
