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

/// A URL whose `Display` and `Debug` hide its secrets: the password of
/// its user part and the values of query parameters that look secret
/// (`password=`, `token=`, `api_key=`, …), each shown as `***`
/// (`postgres://toolpin:***@db/toolpin?sslmode=disable`). uv's
/// `DisplaySafeUrl` is the model: the type carries the URL from the
/// configuration to the error message, and printing it is always safe.
///
/// It derefs to the URL as written, secrets and all, for the client that
/// connects with it: never print that. Text that may echo a secret (a
/// driver's error) goes through [`SafeUrl::redact`].
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SafeUrl(String);

/// What stands in for a hidden value.
const HIDDEN: &str = "***";

impl SafeUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// The URL's scheme (before `://`), as written.
    pub fn scheme(&self) -> Option<&str> {
        self.0.split_once("://").map(|(scheme, _)| scheme)
    }

    /// The value of query parameter `name`, percent-decoded.
    pub fn query_value(&self, name: &str) -> Option<String> {
        let (_, query) = self.0.split_once('?')?;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == name).then(|| decoded(v))
        })
    }

    /// The secret values the URL holds (the password, the secret-looking
    /// query values), as written and percent-decoded.
    pub fn secrets(&self) -> Vec<String> {
        let (user, after) = split_user(&self.0);
        let mut found: Vec<String> = Vec::new();
        if let Some((_, Some(password))) = user {
            found.push(password.to_string());
        }
        if let Some((_, query)) = after.split_once('?') {
            for pair in query.split('&') {
                if let Some((k, v)) = pair.split_once('=') {
                    if looks_secret(k) {
                        found.push(v.to_string());
                    }
                }
            }
        }
        let decoded: Vec<String> = found.iter().map(|v| decoded(v)).collect();
        found.extend(decoded);
        found.retain(|v| !v.is_empty());
        found.sort();
        found.dedup();
        found
    }

    /// `text` with the URL's secrets replaced by `***`, in every form the
    /// [`Redactor`] knows (as written, decoded, JSON-escaped,
    /// percent-encoded).
    pub fn redact(&self, text: &str) -> String {
        let pairs: Vec<(String, String)> = self
            .secrets()
            .into_iter()
            .map(|v| (HIDDEN.to_string(), v))
            .collect();
        Redactor::new(&pairs).redact(text)
    }
}

impl std::ops::Deref for SafeUrl {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for SafeUrl {
    fn from(url: String) -> Self {
        Self(url)
    }
}

impl From<&str> for SafeUrl {
    fn from(url: &str) -> Self {
        Self(url.to_string())
    }
}

impl std::fmt::Display for SafeUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (user, after) = split_user(&self.0);
        if let Some((head, password)) = user {
            f.write_str(head)?;
            if password.is_some() {
                write!(f, ":{HIDDEN}")?;
            }
            f.write_str("@")?;
        }
        match after.split_once('?') {
            Some((path, query)) => {
                write!(f, "{path}?")?;
                for (i, pair) in query.split('&').enumerate() {
                    if i > 0 {
                        f.write_str("&")?;
                    }
                    match pair.split_once('=') {
                        Some((k, _)) if looks_secret(k) => write!(f, "{k}={HIDDEN}")?,
                        _ => f.write_str(pair)?,
                    }
                }
                Ok(())
            }
            None => f.write_str(after),
        }
    }
}

impl std::fmt::Debug for SafeUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SafeUrl").field(&self.to_string()).finish()
    }
}

/// The URL split at its user part: `(scheme://user, password)` and what
/// follows the `@`, or no user part and the whole URL. The user part ends
/// at the last `@`, so a password holding `/`, `?` or `@` unencoded is
/// still all of it (at worst more than the password is hidden, never less).
#[allow(clippy::type_complexity)]
fn split_user(url: &str) -> (Option<(&str, Option<&str>)>, &str) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (None, url);
    };
    let Some((user_info, after)) = rest.rsplit_once('@') else {
        return (None, url);
    };
    let head_len = scheme.len() + 3;
    match user_info.split_once(':') {
        Some((user, password)) => (Some((&url[..head_len + user.len()], Some(password))), after),
        None => (Some((&url[..head_len + user_info.len()], None)), after),
    }
}

/// Whether a query parameter's name says its value is a secret.
fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "key",
        "sig",
        "auth",
        "credential",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// Percent-decoded (a malformed escape kept as it is, invalid UTF-8 lossy).
fn decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
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

    #[test]
    fn a_password_in_the_user_part_or_a_parameter_is_redacted() {
        let shown = |url: &str| SafeUrl::new(url).to_string();
        assert_eq!(
            shown("postgres://toolpin:s3cret@db/toolpin"),
            "postgres://toolpin:***@db/toolpin"
        );
        assert_eq!(
            shown("postgresql://toolpin:p%40ss@db:5433,db2/toolpin?sslmode=disable"),
            "postgresql://toolpin:***@db:5433,db2/toolpin?sslmode=disable"
        );
        assert_eq!(
            shown("postgres://toolpin@/toolpin?host=/run/postgresql&password=hunter2"),
            "postgres://toolpin@/toolpin?host=/run/postgresql&password=***"
        );
        assert_eq!(shown("postgres://db/toolpin"), "postgres://db/toolpin");
        // An `@`, `/` or `?` in the password (unencoded) still hides all
        // of it.
        assert_eq!(shown("postgres://u:a@b@db/x"), "postgres://u:***@db/x");
        assert_eq!(shown("postgres://u:a/b?c@db/x"), "postgres://u:***@db/x");
        assert_eq!(
            SafeUrl::new("postgres://u:a/b?c@db/x").secrets(),
            vec!["a/b?c".to_string()]
        );
        // Secret-looking parameters of any URL.
        assert_eq!(
            shown("https://h/x?api_key=k3y-value&page=2&access_token=t0ken"),
            "https://h/x?api_key=***&page=2&access_token=***"
        );
        let url = SafeUrl::new("postgres://u:s3cret@db/x");
        assert_eq!(format!("{url:?}"), "SafeUrl(\"postgres://u:***@db/x\")");
        assert_eq!(&*url, "postgres://u:s3cret@db/x");
    }

    #[test]
    fn secrets_are_found_raw_and_decoded_and_scrubbed() {
        let url = SafeUrl::new("postgres://u:p%40ss@db/x?password=other");
        let s = url.secrets();
        assert!(s.contains(&"p%40ss".to_string()));
        assert!(s.contains(&"p@ss".to_string()));
        assert!(s.contains(&"other".to_string()));
        assert_eq!(
            url.redact("auth failed for p@ss and p%40ss (\"p@ss\")"),
            "auth failed for *** and *** (\"***\")"
        );
    }

    #[test]
    fn percent_decoding_leaves_broken_escapes_alone() {
        assert_eq!(decoded("a%20b"), "a b");
        assert_eq!(decoded("100%"), "100%");
        assert_eq!(decoded("%4"), "%4");
        assert_eq!(decoded("%zz"), "%zz");
        let url = SafeUrl::new("postgres://db/x?sslmode=disable&application_name=a%20b");
        assert_eq!(url.query_value("application_name").as_deref(), Some("a b"));
        assert_eq!(url.query_value("sslmode").as_deref(), Some("disable"));
        assert_eq!(url.scheme(), Some("postgres"));
    }
}
