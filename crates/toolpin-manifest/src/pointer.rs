//! RFC 6901 JSON pointers, as used by `ignore = [...]` and in findings.

use std::borrow::Cow;

use serde_json::Value;

/// A parsed JSON pointer (`/a/b~1c` → `["a", "b/c"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pointer {
    text: String,
    tokens: Vec<String>,
}

impl Pointer {
    /// Parses `text`; the empty pointer (the whole document) is rejected
    /// because no caller may remove a whole tool.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("an empty pointer names the whole tool".into());
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!(
                "{text:?} is not a JSON pointer: it must start with '/'"
            ));
        };
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            tokens.push(unescape_token(raw).map(Cow::into_owned).ok_or_else(|| {
                format!("{text:?} is not a JSON pointer: '~' must be followed by 0 or 1")
            })?);
        }
        Ok(Self {
            text: text.to_string(),
            tokens,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// Removes the member or element this pointer names, if present.
    /// Returns whether something was removed.
    pub fn remove(&self, root: &mut Value) -> bool {
        let Some((last, parents)) = self.tokens.split_last() else {
            return false;
        };
        let mut cur = root;
        for token in parents {
            cur = match cur {
                Value::Object(map) => match map.get_mut(token) {
                    Some(v) => v,
                    None => return false,
                },
                Value::Array(items) => match index(token).and_then(|i| items.get_mut(i)) {
                    Some(v) => v,
                    None => return false,
                },
                _ => return false,
            };
        }
        match cur {
            Value::Object(map) => map.remove(last).is_some(),
            Value::Array(items) => match index(last) {
                Some(i) if i < items.len() => {
                    items.remove(i);
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

impl std::fmt::Display for Pointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// An RFC 6901 array index: `0` or digits without a leading zero, no sign.
pub(crate) fn index(token: &str) -> Option<usize> {
    // RFC 6901: "0" or digits without a leading zero; no sign.
    if token.is_empty()
        || !token.bytes().all(|b| b.is_ascii_digit())
        || (token.len() > 1 && token.starts_with('0'))
    {
        return None;
    }
    token.parse().ok()
}

/// Unescapes one reference token (`~1` → `/`, `~0` → `~`); `None` when a
/// `~` is not followed by `0` or `1`. Borrows when there is no `~`. The
/// one place toolpin unescapes pointer tokens (see [`crate::schema`]).
pub fn unescape_token(raw: &str) -> Option<Cow<'_, str>> {
    if !raw.contains('~') {
        return Some(Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(Cow::Owned(out))
}

/// Escapes one reference token (`~` → `~0`, `/` → `~1`); the inverse of
/// [`unescape_token`]. The one place toolpin escapes pointer tokens.
pub fn escape_token(token: &str) -> Cow<'_, str> {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_removes() {
        let p = Pointer::parse("/_meta/a~1b").expect("valid");
        assert_eq!(p.tokens(), ["_meta", "a/b"]);
        let mut v = json!({"_meta": {"a/b": 1, "c": 2}});
        assert!(p.remove(&mut v));
        assert_eq!(v, json!({"_meta": {"c": 2}}));
        assert!(!p.remove(&mut v));
        let p = Pointer::parse("/xs/1").expect("valid");
        let mut v = json!({"xs": [0, 1, 2]});
        assert!(p.remove(&mut v));
        assert_eq!(v, json!({"xs": [0, 2]}));
        for bad in ["/xs/+1", "/xs/01", "/xs/-"] {
            assert!(!Pointer::parse(bad).expect("valid").remove(&mut v), "{bad}");
        }
    }

    #[test]
    fn rejects_malformed() {
        assert!(Pointer::parse("").is_err());
        assert!(Pointer::parse("name").is_err());
        assert!(Pointer::parse("/a~2").is_err());
        assert_eq!(escape_token("a/b~c"), "a~1b~0c");
        assert_eq!(unescape_token("a~1b~0c").as_deref(), Some("a/b~c"));
        assert_eq!(unescape_token("~01").as_deref(), Some("~1"));
        assert_eq!(unescape_token("a~"), None);
    }
}
