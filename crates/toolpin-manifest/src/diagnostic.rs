//! Errors a person acts on, in one line: [`Diagnostic`] is one located in
//! a file (`{kind, message, at}`, shown `origin:line:column: message`),
//! [`Message`] one whose text is the whole point. [`line_column`] is the
//! one place a byte offset becomes a line and a column.

use std::fmt;

/// What a diagnostic is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The text is not the format: not UTF-8, not TOML, not JSON.
    Syntax,
    /// Well-formed, but not what the schema allows: an unknown key, a
    /// value of the wrong type or out of range, a duplicate, a name that
    /// refers to nothing.
    Schema,
    /// A file toolpin reads but does not define (eval results, an MCP
    /// client's configuration): unreadable, or not what it should hold.
    Input,
}

/// Where a diagnostic points: a file as shown to the user and, where
/// known, a 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    pub origin: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
}

impl Location {
    /// The whole file.
    pub fn file(origin: impl Into<String>) -> Self {
        Location {
            origin: origin.into(),
            line: None,
            column: None,
        }
    }

    /// A line of the file.
    pub fn line(origin: impl Into<String>, line: usize) -> Self {
        Location {
            line: Some(line),
            ..Location::file(origin)
        }
    }

    /// Byte `offset` of `text`, the file's contents.
    pub fn in_text(origin: impl Into<String>, text: impl AsRef<[u8]>, offset: usize) -> Self {
        let (line, column) = line_column(text, offset);
        Location {
            origin: origin.into(),
            line: Some(line),
            column: Some(column),
        }
    }
}

impl fmt::Display for Location {
    /// `origin`, `origin:line` or `origin:line:column`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// A located error: `origin:line:column: message`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{at}: {message}")]
pub struct Diagnostic {
    pub kind: Kind,
    pub message: String,
    pub at: Location,
}

impl Diagnostic {
    pub fn new(kind: Kind, at: Location, message: impl Into<String>) -> Self {
        Diagnostic {
            kind,
            message: message.into(),
            at,
        }
    }

    /// A [`Kind::Schema`] diagnostic at byte `offset` of `text`.
    pub fn schema(origin: &str, text: &str, offset: usize, message: impl fmt::Display) -> Self {
        Self::new(
            Kind::Schema,
            Location::in_text(origin, text, offset),
            message.to_string(),
        )
    }
}

/// An error whose message is the point: one line for the user, naming
/// the cause and the fix, shown exactly as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{message}")]
pub struct Message {
    message: String,
}

impl Message {
    pub fn new(message: impl Into<String>) -> Self {
        Message {
            message: message.into(),
        }
    }

    /// The message as written.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// An error a person acts on, either located in a file or a message that
/// stands alone: what a configuration, contracts or results file reader
/// returns. Shown as its variant is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// At a place in a file: `origin:line:column: message`.
    #[error(transparent)]
    At(#[from] Diagnostic),
    /// About a file as a whole or what it names, as written.
    #[error(transparent)]
    Other(#[from] Message),
}

impl Error {
    /// A message as written.
    pub fn new(message: impl Into<String>) -> Self {
        Error::Other(Message::new(message))
    }

    /// An [`Kind::Input`] error about the file at `path`: `PATH: message`.
    pub fn at(path: &std::path::Path, message: impl fmt::Display) -> Self {
        Diagnostic::new(
            Kind::Input,
            Location::file(crate::text::shown_path(path)),
            message.to_string(),
        )
        .into()
    }

    /// An [`Kind::Input`] error at a line of `path`: `PATH:LINE: message`.
    pub fn at_line(path: &std::path::Path, line: usize, message: impl fmt::Display) -> Self {
        let at = Location::line(crate::text::shown_path(path), line);
        Diagnostic::new(Kind::Input, at, message.to_string()).into()
    }

    /// The message as shown.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// 1-based line and column of byte `offset` in `text`; the column counts
/// characters (UTF-8 continuation bytes are not counted; an offset inside
/// a character is that character's). An offset past the end is the end.
pub fn line_column(text: impl AsRef<[u8]>, offset: usize) -> (usize, usize) {
    let text = text.as_ref();
    let continuation = |b: u8| b & 0xC0 == 0x80;
    let mut start = offset.min(text.len());
    while start > 0 && start < text.len() && continuation(text[start]) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = before[line_start..]
        .iter()
        .filter(|&&b| !continuation(b))
        .count();
    (line, column + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncé = 1", 6), (2, 3));
        assert_eq!(line_column("x", 99), (1, 2));
        assert_eq!(line_column("", 0), (1, 1));
        // Inside a character: that character.
        assert_eq!(line_column("é", 1), (1, 1));
        assert_eq!(line_column("aé\nb", 4), (2, 1));
        // Bytes that are not UTF-8 count as characters.
        assert_eq!(line_column(b"[\n\"ok\",\n\"\xff\"]", 9), (3, 2));
    }

    #[test]
    fn shown_as_origin_line_column() {
        let text = "[a]\nkey = 1\n";
        let d = Diagnostic::schema("t.toml", text, 10, "key `key`: expected a string");
        assert_eq!(d.to_string(), "t.toml:2:7: key `key`: expected a string");
        assert_eq!(d.kind, Kind::Schema);
        let d = Diagnostic::new(Kind::Syntax, Location::line("r.jsonl", 3), "not JSON");
        assert_eq!(d.to_string(), "r.jsonl:3: not JSON");
        let d = Diagnostic::new(Kind::Syntax, Location::file("r.jsonl"), "empty");
        assert_eq!(d.to_string(), "r.jsonl: empty");
        assert_eq!(Message::new("as written").to_string(), "as written");
    }
}
