//! Located diagnostics: a configuration file's text kept beside its tables,
//! so that whoever reads a table (here, or the operations layer converting
//! it) can name the file, line, column and key.

use serde::de::DeserializeOwned;

/// The one place a byte offset becomes a line and a column.
pub use toolpin_manifest::diagnostic::line_column;
use toolpin_manifest::diagnostic::{Diagnostic, Kind, Location};

use crate::Error;

/// A configuration file as read: where it came from (for messages) and
/// its text (for lines and columns).
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// The path as shown in messages.
    pub origin: String,
    pub text: String,
}

impl Document {
    pub fn new(origin: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            origin: origin.into(),
            text: text.into(),
        }
    }

    /// An error at byte `offset`: `origin:line:column: message`.
    pub fn error_at(&self, offset: usize, message: impl std::fmt::Display) -> Error {
        Diagnostic::schema(&self.origin, &self.text, offset, message).into()
    }

    /// An error about the file as a whole: `origin: message`.
    pub fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::new(format!("{}: {message}", self.origin))
    }

    /// The text read as `T` (a view of some of its tables), with toml's
    /// errors located like every other configuration error.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Error> {
        toml::from_str(&self.text).map_err(|e| self.toml_error(&e))
    }

    /// A toml error located: the line and column, and the key for a type
    /// error, whose message only names the value.
    pub fn toml_error(&self, e: &toml::de::Error) -> Error {
        let text = &self.text;
        let message = e.message().trim().replace('\n', " ");
        let Some(span) = e.span() else {
            return self.error(message);
        };
        let line_start = text
            .get(..span.start.min(text.len()))
            .and_then(|before| before.rfind('\n'))
            .map_or(0, |i| i + 1);
        let line = text[line_start..].lines().next().unwrap_or("");
        let key = line
            .split_once('=')
            .map(|(k, _)| k.trim())
            .filter(|k| !k.is_empty() && !k.starts_with('['));
        let named = match key {
            Some(k) if !message.contains(&format!("`{k}`")) => format!("key `{k}`: {message}"),
            _ => message,
        };
        Diagnostic::new(
            Kind::Syntax,
            Location::in_text(&self.origin, text, span.start),
            named,
        )
        .into()
    }
}
