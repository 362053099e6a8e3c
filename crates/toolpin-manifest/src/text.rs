//! Small text helpers every crate's messages use, once: counts with their
//! noun, one-line text, hexadecimal, TOML and JSON string literals, and
//! the tail of a process's standard error.

use std::fmt::{self, Write};

/// `1 change`, `2 changes`: `n` and `word`, with an `s` unless `n` is 1.
pub fn plural<N: fmt::Display + PartialEq + From<u8>>(n: N, word: &str) -> String {
    let s = if n == N::from(1) { "" } else { "s" };
    format!("{n} {word}{s}")
}

/// `1 entry`, `2 entries`: `n` and the form of the noun for it.
pub fn plural_of<N: fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    format!("{n} {}", if n == N::from(1) { one } else { many })
}

/// `""` for 1, `"s"` otherwise: for `"{n} server{}"`.
pub fn plural_s<N: PartialEq + From<u8>>(n: N) -> &'static str {
    if n == N::from(1) {
        ""
    } else {
        "s"
    }
}

/// Words separated by single spaces: newlines, tabs and runs of
/// A path as messages show it: without a leading `./`.
pub fn shown_path(path: &std::path::Path) -> String {
    path.strip_prefix("./")
        .unwrap_or(path)
        .display()
        .to_string()
}

/// whitespace are gone (for a message that must stay on one line).
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Control characters (a newline would end a comment) as spaces, the
/// rest as it is.
pub fn controls_as_spaces(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Lowercase hexadecimal, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// A TOML basic string: `"…"` with `"`, `\` and control characters
/// escaped.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare when it can be, else a basic string.
pub fn toml_key(k: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !k.is_empty() && k.chars().all(bare) {
        k.to_string()
    } else {
        toml_string(k)
    }
}

/// A JSON string literal, as RFC 8785 writes it ([`crate::jcs`]).
pub fn json_string(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    crate::jcs::write_string(s, &mut out);
    // write_string writes UTF-8 from a `&str` and ASCII escapes.
    String::from_utf8(out).unwrap_or_default()
}

/// What a process said last on standard error, for a one-line message:
/// its last three non-blank lines, each on one line ([`one_line`]) and
/// cut at 300 characters (then `…`), joined by ` | `.
pub fn stderr_tail<S: AsRef<str>>(lines: &[S]) -> String {
    let lines: Vec<String> = lines
        .iter()
        .map(|l| one_line(l.as_ref()))
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(3)..]
        .iter()
        .map(|l| match l.char_indices().nth(300) {
            Some((cut, _)) => format!("{}…", &l[..cut]),
            None => l.clone(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(plural(1usize, "change"), "1 change");
        assert_eq!(plural(0u64, "change"), "0 changes");
        assert_eq!(plural_of(2u64, "entry", "entries"), "2 entries");
        assert_eq!(plural_of(1usize, "entry", "entries"), "1 entry");
        assert_eq!(plural_s(1usize), "");
        assert_eq!(plural_s(3usize), "s");
    }

    #[test]
    fn lines_and_literals() {
        assert_eq!(one_line(" a\n\tb  c "), "a b c");
        assert_eq!(controls_as_spaces("a\nb\tc"), "a b c");
        assert_eq!(hex(&[0, 0xab, 0x7f]), "00ab7f");
        assert_eq!(toml_string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(toml_key("a-b_1"), "a-b_1");
        assert_eq!(toml_key("a.b"), "\"a.b\"");
        assert_eq!(toml_key(""), "\"\"");
        assert_eq!(json_string("a\"\n\u{1}é"), "\"a\\\"\\n\\u0001é\"");
        let long = "é".repeat(301);
        assert_eq!(
            stderr_tail(&["one", "", " two  words ", "three", &long]),
            format!("two words | three | {}…", "é".repeat(300))
        );
        assert_eq!(stderr_tail::<&str>(&[]), "");
    }
}
