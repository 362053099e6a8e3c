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

impl std::error::Error for CliError {}

impl From<toolpin_config::Error> for CliError {
    fn from(e: toolpin_config::Error) -> Self {
        Self::new(e.message())
    }
}

impl From<toolpin_evals::Error> for CliError {
    fn from(e: toolpin_evals::Error) -> Self {
        Self::new(e.message())
    }
}

impl From<toolpin_approve::Error> for CliError {
    fn from(e: toolpin_approve::Error) -> Self {
        Self::new(e.message())
    }
}

impl From<toolpin_init::Error> for CliError {
    fn from(e: toolpin_init::Error) -> Self {
        Self::new(e.message())
    }
}
