//! Telling an input's format from its first line, so that `toolpin usage`
//! takes span files and event logs alike without a flag.

use std::io::Read;
use std::path::Path;

use crate::ingest::{Format, Input};

/// How much of a file is looked at: a Collector line can be megabytes, and
/// its first member is enough.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// The format of an input whose first bytes are `head`: OTLP/JSON when the
/// first non-blank line is a trace request (`{"resourceSpans"…`) or a lone
/// `{` opening a pretty-printed one; the proxy's event log when it is an
/// object with a string `event` member. `None` when it is neither (an
/// empty input included).
pub fn detect(head: &[u8]) -> Option<Format> {
    let text = String::from_utf8_lossy(head);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if line == "{" {
        return Some(Format::OtlpJson);
    }
    if !line.starts_with('{') {
        return None;
    }
    // The first member's name, without parsing a line that may be cut.
    let first_key = line[1..]
        .trim_start()
        .strip_prefix('"')
        .and_then(|rest| rest.split_once('"'))
        .map(|(key, _)| key);
    match first_key {
        Some("resourceSpans") => return Some(Format::OtlpJson),
        Some("event") => return Some(Format::Events),
        _ => {}
    }
    // A whole line: look at its members.
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let object = value.as_object()?;
    if object.contains_key("resourceSpans") {
        Some(Format::OtlpJson)
    } else if object
        .get("event")
        .is_some_and(serde_json::Value::is_string)
    {
        Some(Format::Events)
    } else {
        None
    }
}

/// Opens `path` as an input of the format its first line shows. The error
/// is one line: the file cannot be read, or it is neither format (with its
/// first line, cut).
pub fn open(path: &Path) -> Result<Input<'static>, String> {
    let shown = path.display();
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(SNIFF_BYTES as u64).read_to_end(&mut head))
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let format = detect(&head).ok_or_else(|| {
        let text = String::from_utf8_lossy(&head);
        let first: String = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .chars()
            .take(60)
            .collect();
        format!("{shown}: neither OTLP/JSON spans nor a proxy event log (first line: {first:?})")
    })?;
    Input::file(path, format).map_err(|e| format!("cannot read {shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_their_first_line() {
        let cases: [(&str, Option<Format>); 9] = [
            (
                "{\"resourceSpans\":[{\"resource\":{}",
                Some(Format::OtlpJson),
            ),
            (
                "\n\n{\n  \"resourceSpans\": []\n}\n",
                Some(Format::OtlpJson),
            ),
            (
                "{\"time\":\"2026-12-01T10:00:00Z\",\"event\":\"refused\",\"tool\":\"x\"}\n",
                Some(Format::Events),
            ),
            (
                "{\"event\":\"drift\",\"time\":\"2026-12-01T10:00:00Z\"",
                Some(Format::Events),
            ),
            (
                "{\"time\":\"x\",\"resourceSpans\":[]}",
                Some(Format::OtlpJson),
            ),
            ("{\"time\":\"x\",\"event\":3}", None),
            ("[1,2,3]", None),
            ("", None),
            ("not json at all", None),
        ];
        for (head, want) in cases {
            assert_eq!(detect(head.as_bytes()), want, "{head:?}");
        }
    }
}
