//! The CLI's error: one line for the user, exit code 2.

use std::fmt;

#[derive(Debug)]
pub struct CliError {
    message: String,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line, whatever the source said, and nothing a terminal
        // would act on.
        let line: String = self
            .message
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        f.write_str(&toolpin_report::style::printable(&line, false))
    }
}

// Deliberately not `std::error::Error` (anyhow's trick): that is what lets
// every library error turn into a `CliError` through `?` with one impl.
impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> Self {
        Self::new(e.to_string())
    }
}
