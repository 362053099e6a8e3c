//! Renderers for drift findings. Each format is one module with a `render`
//! function from a [`toolpin_drift::Comparison`] to text.

pub mod json;
pub mod style;
pub mod text;

pub use style::{use_color, ColorChoice, Style};
