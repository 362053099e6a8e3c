//! Keeping secrets out of text: the set of secret values a configuration
//! expanded, and their replacement by stand-ins wherever text is printed,
//! logged or sent to an agent. Shared by the CLI (messages of `check`,
//! `lock`) and the proxy (everything it sends the agent or logs).
//!
//! A secret is looked for in the forms in which a server can echo it: as
//! given, JSON-escaped (once and twice: a JSON text inside a JSON string),
//! and percent-encoded (upper- and lower-case hex, as in a URL).

use serde_json::Value;

/// Values shorter than this are not redacted: they would match ordinary
/// text everywhere, and are no secret worth the name.
pub const MIN_SECRET_LEN: usize = 4;

/// Where an excerpt was cut.
const CUT: char = '…';

/// The secrets of a configuration, each with its stand-in (`${NAME}` for a
/// value from the environment, `<redacted>` for a literal), in every form
/// they are looked for.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// (form, stand-in), longest form first, so that a secret containing
    /// another is replaced whole.
    forms: Vec<(String, String)>,
}

impl Redactor {
    /// From `(stand-in, value)` pairs, as `Server::secrets` holds them.
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a (String, String)>) -> Self {
        let mut forms: Vec<(String, String)> = Vec::new();
        for (stand_in, value) in secrets {
            if value.len() < MIN_SECRET_LEN {
                continue;
            }
            let once = json_escaped(value);
            let twice = json_escaped(&once);
            // Other encoders' JSON: `/` as `\/` (PHP), everything past
            // ASCII as `\uXXXX` (Python's default).
            let slashes = once.replace('/', "\\/");
            let ascii = ascii_escaped(&once);
            let upper = percent_encoded(value, false);
            let lower = percent_encoded(value, true);
            for form in [value.clone(), once, twice, slashes, ascii, upper, lower] {
                if !forms.iter().any(|(f, _)| *f == form) {
                    forms.push((form, stand_in.clone()));
                }
            }
        }
        // Longest first; ties by text, so that the output never depends on
        // the order the secrets were collected in.
        forms.sort_by(|(a, _), (b, _)| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        Self { forms }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// Whether `text` holds any secret in any form.
    pub fn finds(&self, text: &str) -> bool {
        self.forms.iter().any(|(f, _)| text.contains(f.as_str()))
    }

    /// `text` with every form of every secret replaced by its stand-in.
    /// A secret cut short by an excerpt (`tok_SEC…`: the capture layer
    /// shortens what a server said before anyone can redact it) is
    /// replaced too, so that no prefix of it is shown either.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        if self.finds(text) {
            for (form, stand_in) in &self.forms {
                if out.contains(form.as_str()) {
                    out = out.replace(form.as_str(), stand_in);
                }
            }
        }
        if out.contains(CUT) && !self.is_empty() {
            out = self.redact_cuts(&out);
        }
        out
    }

    /// Replaces the start of a secret just before an ellipsis. Over-eager
    /// by design: any text cut there that a secret starts with goes, if it
    /// is 4 characters or more, or starts a word (so that `refus…` stays
    /// when a secret starts with `s`, but `"s…` goes).
    fn redact_cuts(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(CUT) {
            let before = &rest[..at];
            let mut best: Option<(usize, &str)> = None;
            for (form, stand_in) in &self.forms {
                // The longest proper prefix of the form that `before` ends
                // with (the whole form was replaced already).
                let longest = (1..form.len().min(before.len() + 1)).rev().find(|&n| {
                    form.is_char_boundary(n)
                        && before.ends_with(&form[..n])
                        && (n >= MIN_SECRET_LEN || starts_a_word(before, n))
                });
                if let Some(n) = longest {
                    if best.is_none_or(|(b, _)| n > b) {
                        best = Some((n, stand_in.as_str()));
                    }
                }
            }
            match best {
                Some((n, stand_in)) => {
                    out.push_str(&before[..before.len() - n]);
                    out.push_str(stand_in);
                }
                None => out.push_str(before),
            }
            out.push(CUT);
            rest = &rest[at + CUT.len_utf8()..];
        }
        out.push_str(rest);
        out
    }

    /// Redacts every string (and member name) of a JSON value in place;
    /// numbers, booleans and the structure stay. Returns whether anything
    /// changed.
    pub fn redact_value(&self, value: &mut Value) -> bool {
        if self.is_empty() {
            return false;
        }
        match value {
            Value::String(s) => self.redact_string(s),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, v| self.redact_value(v) | changed),
            Value::Object(members) => {
                let renamed = members.keys().any(|k| self.finds(k));
                if renamed {
                    let old = std::mem::take(members);
                    for (k, v) in old {
                        members.insert(self.redact(&k), v);
                    }
                }
                members
                    .values_mut()
                    .fold(renamed, |changed, v| self.redact_value(v) | changed)
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    /// [`Redactor::redact_value`], also saying where: the JSON pointer
    /// (under `at`, itself a pointer) of each string or member name that
    /// changed is pushed to `out`. A renamed member is named by its new
    /// name.
    pub fn redact_value_at(&self, value: &mut Value, at: &str, out: &mut Vec<String>) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if self.redact_string(s) {
                    out.push(at.to_string());
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.redact_value_at(item, &format!("{at}/{i}"), out);
                }
            }
            Value::Object(members) => {
                if members.keys().any(|k| self.finds(k)) {
                    let old = std::mem::take(members);
                    for (k, v) in old {
                        let key = self.redact(&k);
                        if key != k {
                            out.push(format!("{at}/{}", crate::pointer::escape_token(&key)));
                        }
                        members.insert(key, v);
                    }
                }
                for (k, v) in members.iter_mut() {
                    let here = format!("{at}/{}", crate::pointer::escape_token(k));
                    self.redact_value_at(v, &here, out);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Redacts a JSON text (a message on the wire): `None` when no secret
    /// is in it, else the message with its strings redacted, serialized
    /// again. Only strings are touched, so the text stays valid JSON with
    /// the same structure whatever the secret looks like (members come out
    /// sorted by name, as serde_json's map keeps them).
    pub fn redact_json_text(&self, text: &str) -> Option<String> {
        // A string's content appears in the text JSON-escaped, which is one
        // of the forms looked for.
        if self.is_empty() || !self.finds(text) {
            return None;
        }
        let mut value: Value = serde_json::from_str(text).ok()?;
        self.redact_value(&mut value).then(|| value.to_string())
    }

    fn redact_string(&self, s: &mut String) -> bool {
        if !self.finds(s) {
            return false;
        }
        *s = self.redact(s);
        true
    }
}

/// `value` as it appears between the quotes of a JSON string.
fn json_escaped(value: &str) -> String {
    let quoted = Value::String(value.to_string()).to_string();
    // Serializing a string always gives `"…"`.
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_string()
}

/// Whether the last `n` bytes of `text` start a word: nothing, or no
/// letter or digit, comes before them.
fn starts_a_word(text: &str, n: usize) -> bool {
    text[..text.len() - n]
        .chars()
        .next_back()
        .is_none_or(|c| !c.is_alphanumeric())
}

/// JSON string content with every character past ASCII as `\uXXXX` (a
/// surrogate pair past the BMP), as Python's `json.dumps` writes it.
fn ascii_escaped(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// Every byte but RFC 3986's unreserved characters as `%XX`: the form of a
/// value inside one URL component.
pub fn percent_encoded(value: &str, lower: bool) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor() -> Redactor {
        Redactor::new(&[
            ("${TOKEN}".to_string(), "tok_SECRET\"\\1234&x".to_string()),
            ("<redacted>".to_string(), "lit-key-42".to_string()),
            ("${SHORT}".to_string(), "abc".to_string()),
        ])
    }

    #[test]
    fn redacts_plain_escaped_and_percent_forms() {
        let r = redactor();
        assert_eq!(
            r.redact("a tok_SECRET\"\\1234&x b lit-key-42 abc"),
            "a ${TOKEN} b <redacted> abc"
        );
        assert_eq!(
            r.redact(r#"{"m":"tok_SECRET\"\\1234&x"}"#),
            r#"{"m":"${TOKEN}"}"#
        );
        assert_eq!(
            r.redact(r#""{\"m\":\"tok_SECRET\\\"\\\\1234&x\"}""#),
            r#""{\"m\":\"${TOKEN}\"}""#
        );
        assert_eq!(
            r.redact("?t=tok_SECRET%22%5C1234%26x&u=tok_SECRET%22%5c1234%26x"),
            "?t=${TOKEN}&u=${TOKEN}"
        );
    }

    #[test]
    fn redacts_strings_of_a_json_text_and_keeps_its_structure() {
        let r = Redactor::new(&[("${T}".to_string(), "true".to_string())]);
        let text = r#"{"isError":true,"content":[{"type":"text","text":"got true"}],"true":1}"#;
        assert_eq!(
            r.redact_json_text(text).expect("redacted"),
            r#"{"${T}":1,"content":[{"text":"got ${T}","type":"text"}],"isError":true}"#
        );
        assert_eq!(r.redact_json_text(r#"{"a":1}"#), None);
        let mut v = json!({"error": {"message": "bad lit-key-42", "data": ["lit-key-42", 3]}});
        assert!(redactor().redact_value(&mut v));
        assert_eq!(
            v,
            json!({"error": {"message": "bad <redacted>", "data": ["<redacted>", 3]}})
        );
    }

    #[test]
    fn a_secret_cut_by_an_excerpt_is_redacted() {
        let r = redactor();
        assert_eq!(
            r.redact(r#"said: {"got": "tok_SECRET\"\\12…"#),
            r#"said: {"got": "${TOKEN}…"#
        );
        assert_eq!(
            r.redact("key lit-k… and lit-key-42"),
            "key <redacted>… and <redacted>"
        );
        assert_eq!(r.redact("nothing cut here…"), "nothing cut here…");
        // A short start of a secret goes only where a word starts.
        assert_eq!(r.redact("connection refusel…"), "connection refusel…");
        assert_eq!(r.redact("got \"l…"), "got \"<redacted>…");
        assert_eq!(r.redact("gotlit-…"), "got<redacted>…");
    }

    #[test]
    fn other_encoders_json_is_redacted_too() {
        let r = Redactor::new(&[("${K}".to_string(), "a/b-é😀".to_string())]);
        assert_eq!(r.redact(r#"{"k":"a\/b-é😀"}"#), r#"{"k":"${K}"}"#);
        assert_eq!(
            r.redact(r#"{"k":"a/b-\u00e9\ud83d\ude00"}"#),
            r#"{"k":"${K}"}"#
        );
        assert_eq!(r.redact("k=a%2Fb-%C3%A9%F0%9F%98%80"), "k=${K}");
    }

    #[test]
    fn empty_redactor_changes_nothing() {
        let r = Redactor::default();
        assert!(r.is_empty());
        assert_eq!(r.redact("x"), "x");
        assert_eq!(percent_encoded("a/b c", false), "a%2Fb%20c");
    }
}
