//! Reading JSON documents with errors a person can act on: where (file,
//! line, column) and what, in one line.

use serde_json::Value;

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
    // serde_json reports column 0 for an error found at a line break.
    JsonError {
        origin: origin.to_string(),
        line: e.line(),
        column: e.column().max(1),
        message,
    }
}

fn line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (line, offset - start + 1)
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
    fn empty_is_an_error() {
        assert!(parse(b"  \n", "e.json")
            .expect_err("empty")
            .message
            .contains("empty"));
    }
}
