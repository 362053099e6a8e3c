//! The lockfile's pretty layout written straight from compact JSON text,
//! without building a `Value` tree: the bytes `serde_json`'s pretty
//! printer would write for the same document (2-space indent, `": "`,
//! `{}` and `[]` when empty), at a given nesting level.
//!
//! The text a pinned tool keeps (canonical JSON, or compact `serde_json`)
//! already has its object keys in the order a `Value` map sorts them, and
//! escapes strings as `serde_json` does, with one exception handled by the
//! caller: canonical JSON sorts keys by UTF-16 code units, which differs
//! from a `Value` map's order only for keys holding characters at or above
//! U+E000 ([`sorts_like_a_map`]). Numbers are copied when `serde_json`
//! would print them with the same digits (integers that fit 64 bits), and
//! otherwise parsed and printed by `serde_json`.

/// Whether keys in `text` sort the same by UTF-16 code units (canonical
/// JSON) as by bytes (a `Value` map): true unless the text holds a
/// character at or above U+E000, whose UTF-8 encoding starts with a byte
/// of 0xEE or more.
pub fn sorts_like_a_map(text: &str) -> bool {
    !text.bytes().any(|b| b >= 0xEE)
}

const SPACES: &[u8] = &[b' '; 256];

/// A line break and `level` steps of indentation.
pub fn newline(out: &mut Vec<u8>, level: usize) {
    out.push(b'\n');
    let mut n = level * 2;
    while n > 0 {
        let k = n.min(SPACES.len());
        out.extend_from_slice(&SPACES[..k]);
        n -= k;
    }
}

/// Appends `compact` (one valid JSON value without white space between
/// tokens) to `out` in the pretty layout, as a value nested `level` deep:
/// its inner lines are indented by `level + 1` steps, its closing bracket
/// by `level`.
pub fn write(compact: &str, level: usize, out: &mut Vec<u8>) {
    let bytes = compact.as_bytes();
    out.reserve(bytes.len() * 2);
    let mut level = level;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                if bytes.get(i + 1) == Some(&close) {
                    out.push(open);
                    out.push(close);
                    i += 2;
                    continue;
                }
                out.push(open);
                level += 1;
                newline(out, level);
                i += 1;
            }
            close @ (b'}' | b']') => {
                level = level.saturating_sub(1);
                newline(out, level);
                out.push(close);
                i += 1;
            }
            b',' => {
                out.push(b',');
                newline(out, level);
                i += 1;
            }
            b':' => {
                out.extend_from_slice(b": ");
                i += 1;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() {
                    match bytes[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
                out.extend_from_slice(&bytes[start..i.min(bytes.len())]);
            }
            b' ' | b'\n' | b'\r' | b'\t' => i += 1,
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                number(&compact[start..i], out);
            }
            _ => {
                // true, false, null (anything else cannot occur in JSON;
                // it is copied, one byte at a time, so the loop ends).
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                    i += 1;
                }
                if i == start {
                    i += 1;
                }
                out.extend_from_slice(&bytes[start..i]);
            }
        }
    }
}

/// A number token as `serde_json` prints the value it parses to.
fn number(token: &str, out: &mut Vec<u8>) {
    let integer = token
        .bytes()
        .skip(usize::from(token.starts_with('-')))
        .all(|b| b.is_ascii_digit());
    if integer && (token.parse::<u64>().is_ok() || token.parse::<i64>().is_ok()) {
        out.extend_from_slice(token.as_bytes());
        return;
    }
    match serde_json::from_str::<serde_json::Number>(token) {
        // Writing a number to memory cannot fail.
        Ok(n) => {
            let _ = serde_json::to_writer(&mut *out, &n);
        }
        Err(_) => out.extend_from_slice(token.as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// What serde_json's pretty printer writes for `v` nested `level`
    /// deep (the oracle): its own pretty text, every line after the first
    /// indented by `level` more steps (strings hold no raw line breaks).
    fn oracle(v: &Value, level: usize) -> String {
        let text = serde_json::to_string_pretty(v).expect("pretty");
        text.replace('\n', &format!("\n{}", "  ".repeat(level)))
    }

    fn transcode(text: &str, level: usize) -> String {
        let mut out = Vec::new();
        write(text, level, &mut out);
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn matches_serde_json_pretty_output() {
        let cases = [
            json!({}),
            json!([]),
            json!({"a": {}, "b": [], "c": [{}], "d": [[], [1, [2, {}]]]}),
            json!({"s": "quote \" backslash \\ nl \n tab \t ctl \u{1} del \u{7f} é 中 /", "e": ""}),
            json!({"emoji 😀": "😀", "\u{e000}": 1}),
            json!({"n": [0, -0.0, 1, -1, 1.5, 0.1, 1e21, 1e-7, 123456789012345680000.0, 1.0, -2.5e-300]}),
            json!({"big": [9007199254740993u64, 18446744073709551615u64, -9223372036854775808i64]}),
            json!({"t": true, "f": false, "z": null, "nested": {"deep": {"deeper": [true, null]}}}),
            json!("just a string"),
            json!(42),
        ];
        for v in &cases {
            // What a pinned tool keeps: canonical text when it is exact,
            // else compact serde_json; the writer it replaces printed the
            // Value parsed back from that text.
            let mut buf = Vec::new();
            let exact = crate::jcs::write_canonical_exact(v, &mut buf);
            let kept = if exact {
                String::from_utf8(buf).expect("utf-8")
            } else {
                serde_json::to_string(v).expect("compact")
            };
            let parsed: Value = serde_json::from_str(&kept).expect("parses");
            for level in [0, 1, 5] {
                if sorts_like_a_map(&kept) {
                    assert_eq!(
                        transcode(&kept, level),
                        oracle(&parsed, level),
                        "level {level}: {kept}"
                    );
                }
                let compact = serde_json::to_string(v).expect("compact");
                assert_eq!(
                    transcode(&compact, level),
                    oracle(v, level),
                    "compact, level {level}: {v}"
                );
            }
        }
    }

    #[test]
    fn text_that_is_not_json_still_ends() {
        let mut out = Vec::new();
        write("{\"a\":\u{e9}x}", 0, &mut out);
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "{\n  \"a\": \u{e9}x\n}"
        );
    }

    #[test]
    fn keys_beyond_u_e000_are_flagged() {
        // UTF-16 order puts U+10000 (a surrogate pair) before U+E000; a
        // map's byte order puts it after.
        let v = json!({"\u{e000}": 1, "\u{10000}": 2});
        let mut buf = Vec::new();
        crate::jcs::write_canonical_exact(&v, &mut buf);
        let text = String::from_utf8(buf).expect("utf-8");
        assert!(!sorts_like_a_map(&text));
        assert!(sorts_like_a_map("{\"a\":\"é 中\"}"));
    }
}
