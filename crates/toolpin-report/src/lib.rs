//! Renderers for drift findings. Each format is one module with a `render`
//! function from a [`toolpin_drift::Comparison`] to text.

pub mod context;
pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;
pub mod style;
pub mod text;

pub use style::{use_color, ColorChoice, Style};
