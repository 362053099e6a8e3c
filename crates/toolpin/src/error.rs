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
        // Keep it to one line whatever the source said.
        f.write_str(&self.message.replace('\n', " "))
    }
}

impl std::error::Error for CliError {}
