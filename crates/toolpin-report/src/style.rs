//! Terminal colour: on for a terminal unless `NO_COLOR` is set, or as forced
//! by `--color`.

use std::io::IsTerminal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Whether to colour output written to stdout.
pub fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}

/// ANSI styling that is a no-op when colour is off.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
}

impl Style {
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    pub fn bold(&self, t: &str) -> String {
        self.wrap("1", t)
    }
    pub fn red(&self, t: &str) -> String {
        self.wrap("31", t)
    }
    pub fn green(&self, t: &str) -> String {
        self.wrap("32", t)
    }
    pub fn yellow(&self, t: &str) -> String {
        self.wrap("33", t)
    }
    pub fn dim(&self, t: &str) -> String {
        self.wrap("2", t)
    }
}

/// Makes text from a server safe to print: control characters (other than
/// tab, and newline when `keep_newlines`), C1 controls and bidirectional
/// overrides are shown as `\u{…}` escapes, so a tool definition can neither
/// move the cursor, hide text, forge report lines nor reorder what a
/// reviewer sees.
pub fn printable(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\t' && !(keep_newlines && c == '\n'))
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
    };
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn escapes_what_a_terminal_would_act_on() {
        assert_eq!(printable("plain text", false), "plain text");
        assert_eq!(printable("a\u{1b}[2Kb\rc", false), "a\\u{1b}[2Kb\\u{d}c");
        assert_eq!(printable("line\nnext", true), "line\nnext");
        assert_eq!(printable("line\nnext", false), "line\\u{a}next");
        assert_eq!(printable("x\u{202e}y\u{9b}", true), "x\\u{202e}y\\u{9b}");
    }
}
