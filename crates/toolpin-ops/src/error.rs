//! The operations' error: one line for the user (the CLI exits 2 on it).

/// What stopped an operation, said in one line with no secret in it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl Error {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// The errors of the crates an operation drives, each already one line.
macro_rules! from_errors {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Self(e.to_string())
            }
        }
    )*};
}

from_errors!(
    // The configuration's, the contracts file's and the evals' error.
    toolpin_manifest::diagnostic::Error,
    toolpin_manifest::lockfile::LockfileError,
    toolpin_manifest::CatalogError,
    toolpin_capture::servers::Failures,
    toolpin_capture::file::FileError,
    toolpin_approve::Error,
    std::io::Error,
);
