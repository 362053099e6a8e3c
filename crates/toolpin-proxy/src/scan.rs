//! One pass over a JSON-RPC message that checks it is JSON and notes
//! where the members the relay looks at sit.
//!
//! The relay reads a call's `id`, `method`, `params.name` and
//! `params.arguments`, and an answer's `id`, `result.isError`,
//! `result.structuredContent`, `result.content` and `error`, then splices
//! the id. serde_json's derive can find these too (borrowed `RawValue`
//! members), but it scans a nested part once more for every level it is
//! read at; this scanner walks each byte once.
//!
//! It is never more lenient than serde_json: when in doubt (a member it
//! looks at written twice, a lone surrogate, a number past f64, nesting
//! past serde's limit) it says `None`, and the message takes the parsed
//! path, which decides.

use std::ops::Range;

/// The deepest nesting serde_json reads (its recursion limit is 128, and
/// it refuses the container that reaches it).
const MAX_DEPTH: usize = 127;

/// Where the members of interest sit (byte ranges of their values).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Spans {
    pub id: Option<Range<usize>>,
    pub method: Option<Range<usize>>,
    pub params: Option<Range<usize>>,
    pub result: Option<Range<usize>>,
    pub error: Option<Range<usize>>,
    pub params_name: Option<Range<usize>>,
    pub params_arguments: Option<Range<usize>>,
    pub params_meta: Option<Range<usize>>,
    pub result_is_error: Option<Range<usize>>,
    pub result_structured: Option<Range<usize>>,
    pub result_content: Option<Range<usize>>,
}

/// Which members an object's keys are looked up in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Message,
    Params,
    Result,
    Other,
}

/// The spans of a message that is a JSON object; `None` for anything
/// else (see the module's notes).
pub fn scan(text: &str) -> Option<Spans> {
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
        spans: Spans::default(),
    };
    s.ws();
    if s.peek()? != b'{' {
        return None;
    }
    s.value(Role::Message, 0)?;
    s.ws();
    (s.i == s.b.len()).then_some(s.spans)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    spans: Spans,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// One value; `role` says what an object here holds.
    fn value(&mut self, role: Role, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(role, depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(|_| ()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            self.value(Role::Other, depth)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, role: Role, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            let (key, escaped) = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let start = self.i;
            // A key written with escapes (rare) is read for what it says.
            let unescaped;
            let key: &[u8] = if escaped && role != Role::Other {
                let quoted = &self.b[key.start - 1..key.end + 1];
                unescaped = serde_json::from_slice::<String>(quoted).ok()?;
                unescaped.as_bytes()
            } else {
                &self.b[key]
            };
            let inner = match (role, key) {
                (Role::Message, b"params") => Role::Params,
                (Role::Message, b"result") => Role::Result,
                _ => Role::Other,
            };
            self.value(inner, depth)?;
            let slot = match (role, key) {
                (Role::Message, b"id") => &mut self.spans.id,
                (Role::Message, b"method") => &mut self.spans.method,
                (Role::Message, b"params") => &mut self.spans.params,
                (Role::Message, b"result") => &mut self.spans.result,
                (Role::Message, b"error") => &mut self.spans.error,
                (Role::Params, b"name") => &mut self.spans.params_name,
                (Role::Params, b"arguments") => &mut self.spans.params_arguments,
                (Role::Params, b"_meta") => &mut self.spans.params_meta,
                (Role::Result, b"isError") => &mut self.spans.result_is_error,
                (Role::Result, b"structuredContent") => &mut self.spans.result_structured,
                (Role::Result, b"content") => &mut self.spans.result_content,
                _ => &mut None,
            };
            // Written twice: which one counts is the parser's call.
            if slot.replace(start..self.i).is_some() {
                return None;
            }
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string; the range of its contents (between the quotes) and
    /// whether it holds an escape.
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            // Runs of plain characters in one sweep.
            let plain = self.b[self.i..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
            self.i += plain;
            match self.peek()? {
                b'"' => {
                    let contents = start..self.i;
                    self.i += 1;
                    return Some((contents, escaped));
                }
                b'\\' => {
                    escaped = true;
                    self.i += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            self.i += 1;
                            let unit = self.hex4()?;
                            if (0xD800..0xDC00).contains(&unit) {
                                // A high surrogate must be followed by a
                                // low one.
                                self.eat(b'\\')?;
                                self.eat(b'u')?;
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return None;
                                }
                            } else if (0xDC00..0xE000).contains(&unit) {
                                return None;
                            }
                        }
                        _ => return None,
                    }
                }
                // Control characters must be escaped.
                _ => return None,
            }
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let mut n = 0u16;
        for d in digits {
            n = n * 16 + u16::from((*d as char).to_digit(16)? as u8);
        }
        self.i += 4;
        Some(n)
    }

    fn digits(&mut self) -> usize {
        let n = self.b[self.i..]
            .iter()
            .position(|c| !c.is_ascii_digit())
            .unwrap_or(self.b.len() - self.i);
        self.i += n;
        n
    }

    /// A number by RFC 8259, within f64 (serde_json refuses larger ones).
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        let _ = self.eat(b'-');
        let whole = match self.peek()? {
            b'0' => {
                self.i += 1;
                1
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        };
        if self.eat(b'.').is_some() && self.digits() == 0 {
            return None;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'-' | b'+') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        } else if whole < 16 {
            return Some(());
        }
        // Large or with an exponent: it must not overflow f64.
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        (text.len() <= 1000 && text.parse::<f64>().ok()?.is_finite()).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn at<'a>(text: &'a str, r: &Option<Range<usize>>) -> Option<&'a str> {
        r.clone().map(|r| &text[r])
    }

    #[test]
    fn a_call() {
        let t = r#" {"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"_meta":{"name":1},"name":"echo","arguments":{"x":[1,{"name":2}],"y":-0.5}}} "#;
        let s = scan(t).expect("spans");
        assert_eq!(at(t, &s.id), Some(r#""a\"b""#));
        assert_eq!(at(t, &s.method), Some(r#""tools/call""#));
        assert_eq!(at(t, &s.params_name), Some(r#""echo""#));
        assert_eq!(
            at(t, &s.params_arguments),
            Some(r#"{"x":[1,{"name":2}],"y":-0.5}"#)
        );
        assert_eq!(s.result, None);
    }

    #[test]
    fn an_answer() {
        let t = "{\"result\" :\t{\"isError\":false,\"content\":[],\"structuredContent\":{\"isError\":1}},\r\n\"id\":3}";
        let s = scan(t).expect("spans");
        assert_eq!(at(t, &s.id), Some("3"));
        assert_eq!(at(t, &s.result_is_error), Some("false"));
        assert_eq!(at(t, &s.result_content), Some("[]"));
        assert_eq!(at(t, &s.result_structured), Some(r#"{"isError":1}"#));
        assert_eq!(s.params_name, None);
    }

    #[test]
    fn refusals() {
        for bad in [
            "",
            "[]",
            "1",
            r#"{"a":1}x"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":.5}"#,
            r#"{"a":1e}"#,
            r#"{"a":1e+}"#,
            r#"{"a":1e999}"#,
            r#"{"a":2e308}"#,
            r#"{"a":NaN}"#,
            r#"{"a":tru}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\udc00"}"#,
            r#"{"a":"\ud800\u0041"}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"id":1,"id":2}"#,
            r#"{"\u0069d":1,"id":2}"#,
            r#"{"params":{"name":"a","name":"b"}}"#,
            r#"{"a":[1,]}"#,
        ] {
            assert_eq!(scan(bad), None, "{bad}");
        }
        // Nesting: exactly as deep as serde_json goes, and no deeper.
        for levels in [120, 126, 127, 128, 129, 200] {
            let deep = format!("{{\"a\":{}{}}}", "[".repeat(levels), "]".repeat(levels));
            assert_eq!(
                scan(&deep).is_some(),
                serde_json::from_str::<Value>(&deep).is_ok(),
                "{levels} levels"
            );
        }
        for ok in [
            r#"{"a":1e5}"#,
            r#"{"a":-2.5E-300}"#,
            r#"{"a":1e+299}"#,
            r#"{"a":0.1e-7}"#,
            r#"{"a":1.7e308}"#,
            r#"{"a":1e-400}"#,
            r#"{"a":1e0001}"#,
            r#"{"a":123456789012345678901234567890}"#,
        ] {
            assert!(scan(ok).is_some(), "{ok}");
            assert!(serde_json::from_str::<Value>(ok).is_ok(), "{ok}");
        }
        // A key with an escape is read for what it says.
        let t = r#"{"\u0069d":7,"res\u0075lt":{"is\u0045rror":true}}"#;
        let s = scan(t).expect("spans");
        assert_eq!(at(t, &s.id), Some("7"));
        assert_eq!(at(t, &s.result_is_error), Some("true"));
        // Escapes are fine where nothing is looked up.
        assert!(scan(r#"{"x":{"\u0069d":"\ud83d\ude00"}}"#).is_some());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
            ".{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("id".to_string()),
                        Just("params".to_string()),
                        Just("name".to_string()),
                        Just("result".to_string()),
                        ".{0,4}"
                    ],
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever it accepts, serde_json accepts, and its spans hold
        /// the very values serde_json reads there.
        #[test]
        fn never_more_lenient_than_serde(text in "[{}\\[\\]\",:0-9a-z\\\\ .eE+-]{0,40}") {
            if scan(&text).is_some() {
                prop_assert!(serde_json::from_str::<Value>(&text).is_ok(), "{}", text);
            }
        }

        /// Valid messages with one byte changed, dropped or added: the
        /// near misses a sloppy scanner would let through.
        #[test]
        fn near_misses_are_never_let_through(
            v in json_value(),
            at in any::<prop::sample::Index>(),
            edit in 0..3u8,
            c in prop::sample::select(vec!['{', '}', '[', ']', '"', ',', ':', '\\', '-', '.', 'e', '0', '1', ' ', '\t', '\u{1}', 'u', 'n']),
        ) {
            let text = json!({"jsonrpc": "2.0", "id": 1, "result": v}).to_string();
            let mut chars: Vec<char> = text.chars().collect();
            let i = at.index(chars.len());
            match edit {
                0 => chars[i] = c,
                1 => { chars.remove(i); }
                _ => chars.insert(i, c),
            }
            let changed: String = chars.into_iter().collect();
            if scan(&changed).is_some() {
                prop_assert!(serde_json::from_str::<Value>(&changed).is_ok(), "{}", changed);
            }
        }

        #[test]
        fn spans_match_what_serde_reads(v in json_value(), id in json_value(), pretty in any::<bool>()) {
            let mut message = json!({"jsonrpc": "2.0", "id": id, "params": v.clone(), "result": v});
            if let Some(p) = message.get_mut("params").and_then(Value::as_object_mut) {
                p.insert("name".into(), json!("n"));
            }
            let text = if pretty {
                serde_json::to_string_pretty(&message).expect("JSON")
            } else {
                message.to_string()
            };
            let s = scan(&text).expect("spans");
            let read = |r: &Option<Range<usize>>| -> Option<Value> {
                r.clone().map(|r| serde_json::from_str(&text[r]).expect("a value"))
            };
            prop_assert_eq!(read(&s.id), message.get("id").cloned());
            prop_assert_eq!(read(&s.params), message.get("params").cloned());
            prop_assert_eq!(read(&s.params_name), message.pointer("/params/name").cloned());
            prop_assert_eq!(read(&s.params_arguments), message.pointer("/params/arguments").cloned());
            prop_assert_eq!(read(&s.params_meta), message.pointer("/params/_meta").cloned());
            prop_assert_eq!(read(&s.result_content), message.pointer("/result/content").cloned());
        }
    }
}
