//! Reading JSON documents with errors a person can act on: where (file,
//! line, column) and what, in one line.

use serde_json::Value;

use crate::diagnostic::line_column as line_col;

/// Why bytes are not a usable JSON document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}:{column}: {message}")]
pub struct JsonError {
    pub origin: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Maximum nesting serde_json accepts; deeper documents are refused with a
/// clear message rather than risking the stack.
pub const MAX_JSON_DEPTH: usize = 128;

/// Checks `bytes` are UTF-8 (a leading BOM is skipped) and returns the text.
pub fn as_text<'a>(bytes: &'a [u8], origin: &str) -> Result<&'a str, JsonError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_col(bytes, e.valid_up_to());
        JsonError {
            origin: origin.to_string(),
            line,
            column,
            message: format!("not UTF-8 (invalid byte at offset {})", e.valid_up_to()),
        }
    })
}

/// Parses a whole JSON document.
pub fn parse(bytes: &[u8], origin: &str) -> Result<Value, JsonError> {
    let text = as_text(bytes, origin)?;
    if text.trim().is_empty() {
        return Err(JsonError {
            origin: origin.to_string(),
            line: 1,
            column: 1,
            message: "empty document, expected JSON".into(),
        });
    }
    serde_json::from_str(text).map_err(|e| from_serde(&e, origin))
}

/// Converts a serde_json error into a located one-line error.
pub fn from_serde(e: &serde_json::Error, origin: &str) -> JsonError {
    let full = e.to_string();
    let bare = match full.rfind(" at line ") {
        Some(i) => &full[..i],
        None => &full,
    };
    let message = if bare == "recursion limit exceeded" {
        format!("nested deeper than {MAX_JSON_DEPTH} levels")
    } else if e.is_syntax() || e.is_eof() {
        format!("invalid JSON: {bare}")
    } else {
        bare.to_string()
    };
    // serde_json reports column 0 for an error found at a line break, and
    // line 0 for one raised about the document as a whole (no position):
    // that is the document's start.
    let (line, column) = match e.line() {
        0 => (1, 1),
        line => (line, e.column().max(1)),
    };
    JsonError {
        origin: origin.to_string(),
        line,
        column,
        message,
    }
}

/// Refuses a member name given twice in one object, anywhere in the
/// document (serde_json keeps the last silently, so a hand-merged file
/// could mean one thing to a reader and another to toolpin). Names are
/// compared as decoded (`"a"` and `"\u0061"` are the same). The error is
/// at the second occurrence and names the first. `text` is expected to be
/// JSON; a syntax error is left for the parser to report.
pub fn reject_duplicate_keys(text: &str, origin: &str) -> Result<(), JsonError> {
    use std::collections::HashMap;
    let bytes = text.as_bytes();
    // One frame per open container: `Some(names → offset)` for an object.
    let mut frames: Vec<Option<HashMap<std::borrow::Cow<'_, str>, usize>>> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                frames.push(Some(HashMap::new()));
                expect_key = true;
            }
            b'[' => {
                frames.push(None);
                expect_key = false;
            }
            b'}' | b']' => {
                frames.pop();
                expect_key = false;
            }
            b',' => expect_key = matches!(frames.last(), Some(Some(_))),
            b':' => expect_key = false,
            b'"' => {
                let start = i;
                i += 1;
                let mut escaped = false;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        escaped = true;
                        i += 1;
                    }
                    i += 1;
                }
                let end = (i + 1).min(bytes.len());
                if expect_key {
                    if let Some(Some(names)) = frames.last_mut() {
                        let raw = &text[start..end];
                        let name = if escaped {
                            match serde_json::from_str::<String>(raw) {
                                Ok(n) => std::borrow::Cow::Owned(n),
                                // Not a string: the parser will say so.
                                Err(_) => return Ok(()),
                            }
                        } else {
                            std::borrow::Cow::Borrowed(
                                &text[start + 1..end.saturating_sub(1).max(start + 1)],
                            )
                        };
                        if let Some(&first) = names.get(&name) {
                            let (line, column) = line_col(bytes, start);
                            let (first_line, first_column) = line_col(bytes, first);
                            return Err(JsonError {
                                origin: origin.to_string(),
                                line,
                                column,
                                message: format!(
                                    "duplicate key {raw} (first at line {first_line}, column {first_column}); every name in an object must be unique"
                                ),
                            });
                        }
                        names.insert(name, start);
                    }
                }
                expect_key = false;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_syntax_errors() {
        let err = parse(b"{\n  \"a\": 1,\n  \"b\": 2,,\n}", "t.json").expect_err("invalid");
        assert_eq!((err.line, err.column), (3, 10));
        assert!(
            err.to_string().starts_with("t.json:3:10: invalid JSON: "),
            "{err}"
        );
    }

    #[test]
    fn locates_non_utf8() {
        let err = parse(b"[\n\"ok\",\n\"\xff\"]", "t.json").expect_err("invalid");
        assert_eq!((err.line, err.column), (3, 2));
        assert!(err.message.contains("not UTF-8"));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let doc = "[".repeat(10_000) + &"]".repeat(10_000);
        let err = parse(doc.as_bytes(), "deep.json").expect_err("too deep");
        assert!(
            err.message.contains("nested deeper than 128 levels"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_keys_are_located_at_every_level() {
        let err = |text: &str| {
            reject_duplicate_keys(text, "d.json")
                .expect_err("duplicate")
                .to_string()
        };
        assert_eq!(
            err("{\n  \"a\": 1,\n  \"b\": {\"x\": [1, {\"y\": 1, \"y\": 2}]},\n  \"a\": 3\n}"),
            "d.json:3:27: duplicate key \"y\" (first at line 3, column 19); every name in an object must be unique"
        );
        assert_eq!(
            err("{\"a\": 1, \"b\": 2, \"a\": 3}"),
            "d.json:1:18: duplicate key \"a\" (first at line 1, column 2); every name in an object must be unique"
        );
        // Compared decoded; values and names of other objects do not count.
        assert_eq!(
            err("{\"a\": 1, \"\\u0061\": 2}"),
            "d.json:1:10: duplicate key \"\\u0061\" (first at line 1, column 2); every name in an object must be unique"
        );
        let ok = [
            "{\"a\": \"a\", \"b\": {\"a\": [\"a\", {\"a\": 1}]}}",
            "[{\"a\": 1}, {\"a\": 2}]",
            "{\"a\\\"\": 1, \"a\": 2, \"\\\\\": 3}",
            "{\"k\": \"}\", \"l\": \"{\\\"k\\\": 1}\", \"m\": 1}",
        ];
        for text in ok {
            assert_eq!(reject_duplicate_keys(text, "d.json"), Ok(()), "{text}");
        }
    }

    #[test]
    fn an_error_without_a_position_is_at_the_start() {
        let e = serde_json::from_str::<u8>("300").expect_err("out of range");
        let located = from_serde(&e, "n.json");
        assert!((located.line, located.column) >= (1, 1), "{located}");
        let e = <serde_json::Error as serde::de::Error>::custom("no position");
        assert_eq!(
            from_serde(&e, "n.json").to_string(),
            "n.json:1:1: no position"
        );
    }

    #[test]
    fn empty_is_an_error() {
        assert!(parse(b"  \n", "e.json")
            .expect_err("empty")
            .message
            .contains("empty"));
    }
}
