//! JSON with comments and trailing commas (VS Code's and Zed's settings
//! files), made plain JSON for `serde_json`.

use serde_json::Value;

/// Parses `text` as JSON after removing `//` and `/* */` comments, trailing
/// commas and a byte-order mark. Removed text becomes spaces (newlines are
/// kept), so error positions still point into the original file.
pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(&strip(text.strip_prefix('\u{feff}').unwrap_or(text)))
}

/// `text` with comments and trailing commas blanked out.
pub fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    };
    // The last comma seen outside a string, if only white space and comments
    // have followed it.
    let mut pending_comma: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                pending_comma = None;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = bytes[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = bytes[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
                blank(&mut out, i, end);
                i = end;
            }
            b',' => {
                pending_comma = Some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(c) = pending_comma.take() {
                    out[c] = b' ';
                }
                i += 1;
            }
            b if b.is_ascii_whitespace() => i += 1,
            _ => {
                pending_comma = None;
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced, by ASCII, so the text is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strips_comments_and_trailing_commas() {
        let text = "\u{feff}{\n  // a comment, with a comma,\n  \"a\": \"x // not a comment\", /* block\n */\n  \"b\": [1, 2,],\n  \"c\": \"\\\"/*\\\"\",\n}\n";
        assert_eq!(
            parse(text).expect("parses"),
            json!({"a": "x // not a comment", "b": [1, 2], "c": "\"/*\""})
        );
    }

    #[test]
    fn keeps_positions_for_errors() {
        let err = parse("{\n// c\n\"a\": nope}").expect_err("invalid");
        assert_eq!(err.line(), 3);
    }
}
