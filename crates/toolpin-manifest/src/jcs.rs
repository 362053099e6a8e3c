//! RFC 8785 JSON Canonicalization Scheme (JCS) over `serde_json::Value`.
//!
//! Canonical bytes are what every fingerprint hashes, so this must match
//! other JCS implementations byte for byte: object members sorted by their
//! UTF-16 code units, no whitespace, minimal string escaping, and numbers
//! printed the way ECMAScript's `Number.prototype.toString` prints a double.

use serde_json::{Map, Number, Value};

/// Appends the canonical form of `value` to `out`.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out, &mut true);
}

/// Like [`write_canonical`], and says whether the canonical text parses back
/// to the very same `Value`: false when an integer beyond 2^53 had to be
/// rounded through a double, as JCS prescribes, or when a float with an
/// integral value (`2.0`) is written as an integer (`2`).
pub fn write_canonical_exact(value: &Value, out: &mut Vec<u8>) -> bool {
    let mut exact = true;
    write_value(value, out, &mut exact);
    exact
}

fn write_value(value: &Value, out: &mut Vec<u8>, exact: &mut bool) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out, exact),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out, exact);
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(map, out, exact),
    }
}

/// The canonical form of `value` as a new buffer.
pub fn to_canonical_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    out
}

fn write_object(map: &Map<String, Value>, out: &mut Vec<u8>, exact: &mut bool) {
    out.push(b'{');
    // serde_json's map iterates in UTF-8 byte order, which is code point
    // order; UTF-16 order differs only for keys holding a character at or
    // above U+E000 (UTF-8 lead byte >= 0xEE).
    if !iterates_in_utf16_order(map) {
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
        write_members(entries.into_iter(), out, exact);
    } else {
        write_members(map.iter(), out, exact);
    }
    out.push(b'}');
}

fn iterates_in_utf16_order(map: &Map<String, Value>) -> bool {
    // serde_json's map is sorted by bytes (the test
    // `serde_json_maps_iterate_sorted` fails the build if a feature such as
    // `preserve_order` changes that); only high code points need a look.
    !map.keys().any(|k| k.bytes().any(|b| b >= 0xEE))
}

fn write_members<'a>(
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    out: &mut Vec<u8>,
    exact: &mut bool,
) {
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(key, out);
        out.push(b':');
        write_value(value, out, exact);
    }
}

/// Integers whose magnitude fits in a double's 53-bit mantissa print as
/// themselves; anything else goes through the double, as JCS requires.
const MAX_EXACT: u64 = 1 << 53;

fn write_number(n: &Number, out: &mut Vec<u8>, exact: &mut bool) {
    if let Some(u) = n.as_u64() {
        if u <= MAX_EXACT {
            out.extend_from_slice(itoa_u64(u, &mut [0u8; 20]));
            return;
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= MAX_EXACT {
            out.push(b'-');
            out.extend_from_slice(itoa_u64(i.unsigned_abs(), &mut [0u8; 20]));
            return;
        }
    }
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() != 0.0 => {}
        _ => *exact = false,
    }
    // serde_json never holds NaN or infinities, so every f64 here is finite.
    let f = n.as_f64().unwrap_or(0.0);
    let mut buf = ryu_js::Buffer::new();
    out.extend_from_slice(buf.format_finite(f).as_bytes());
}

fn itoa_u64(mut u: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Appends `s` as a JSON string: `"` and `\` escaped, control characters as
/// the short escapes where JSON has one and `\u00xx` otherwise, everything
/// else (including non-ASCII) as raw UTF-8.
pub fn write_string(s: &str, out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // Fast path: nearly every byte is copied as it is.
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: &Value) -> String {
        String::from_utf8(to_canonical_vec(v)).expect("utf-8")
    }

    #[test]
    fn sorts_keys_and_drops_whitespace() {
        let v: Value =
            serde_json::from_str(r#"{ "b": [1, 2], "a": {"d": null, "c": true} }"#).expect("parse");
        assert_eq!(canon(&v), r#"{"a":{"c":true,"d":null},"b":[1,2]}"#);
    }

    #[test]
    fn numbers_follow_ecmascript() {
        let cases = [
            ("1.0", "1"),
            ("-0.0", "0"),
            ("1e21", "1e+21"),
            ("1e-7", "1e-7"),
            ("0.000001", "0.000001"),
            ("123456789012345678901234", "1.2345678901234569e+23"),
            ("9007199254740993", "9007199254740992"),
            ("-9007199254740992", "-9007199254740992"),
            ("4.5", "4.5"),
            ("333333333.33333329", "333333333.3333333"),
        ];
        for (input, want) in cases {
            let v: Value = serde_json::from_str(input).expect("parse");
            assert_eq!(canon(&v), want, "input {input}");
        }
    }

    #[test]
    fn escapes_only_what_json_requires() {
        let v = json!("a\"b\\c\n\u{1}\u{7f}é€😀\u{2028}");
        assert_eq!(canon(&v), "\"a\\\"b\\\\c\\n\\u0001\u{7f}é€😀\u{2028}\"");
    }

    #[test]
    fn utf16_key_order() {
        // U+1F600 is a surrogate pair (0xD83D …) in UTF-16, so it sorts
        // before U+FB01 there, though after it in code point order.
        let v = json!({"\u{1F600}": 1, "\u{FB01}": 2, "a": 3});
        assert_eq!(canon(&v), "{\"a\":3,\"\u{1F600}\":1,\"\u{FB01}\":2}");
    }

    #[test]
    fn serde_json_maps_iterate_sorted() {
        // Canonical output relies on it; serde_json's `preserve_order`
        // feature (enabled by any crate in the build) would break it.
        let v: Value = serde_json::from_str(r#"{"b": 1, "a": 2, "c": 3}"#).expect("parse");
        let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["a", "b", "c"]);
    }

    #[test]
    fn reports_rounded_integers() {
        let mut out = Vec::new();
        assert!(write_canonical_exact(
            &json!({"a": 9007199254740992_u64, "b": 0.1}),
            &mut out
        ));
        out.clear();
        assert!(!write_canonical_exact(
            &json!([9007199254740993_u64]),
            &mut out
        ));
        out.clear();
        assert!(!write_canonical_exact(
            &json!([-9007199254740993_i64]),
            &mut out
        ));
    }

    #[test]
    fn rfc8785_sample() {
        // The example from RFC 8785 section 3.2.2.
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        let v: Value = serde_json::from_str(input).expect("parse");
        assert_eq!(
            canon(&v),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"€$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
        );
    }
}
