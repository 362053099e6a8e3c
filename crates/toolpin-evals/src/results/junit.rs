//! JUnit XML (pytest `--junitxml`, and the common schema most runners
//! write): one case run per `<testcase>`, under a `<testsuites>` or
//! `<testsuite>` root.
//!
//! - case id: `classname::name`, or `name` when there is no classname.
//!   pytest's classname is the dotted module path (`test_agent.TestMemory`),
//!   so the id is `test_agent.TestMemory::test_remembers`, not pytest's node
//!   id: a JUnit side pairs with a JUnit side, not with pytest-json-report.
//! - passed: no `<failure>` and no `<error>` child. `<error>` also sets the
//!   run's error (its `message`, first line).
//! - `<skipped>` cases did not run and are left out, except pytest's
//!   `<skipped type="pytest.xfail">`: a known failure, read as a failed run
//!   as pytest.rs reads `xfailed` (the reason is there).
//! - `<properties><property name=".." value=".."/>` inside the testcase
//!   (pytest's `record_property`) give `tool_calls`, `turns`, `score`,
//!   `cost` and `repeat`, as pytest.rs reads them. pytest writes each value
//!   as Python's `str()` of it (`['a', 'b']`, `{'usd': 0.1}`), so a value is
//!   read as JSON or, failing that, as a Python literal.
//!
//! Errors name the file and the line of the offending byte.

use std::path::Path;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use serde_json::Value;

use super::pytest::{apply_properties, first_line};
use super::{CaseRun, Error, Names};

/// Content that starts (after a BOM and whitespace, which mod.rs skipped)
/// with an XML declaration, comments, then a `<testsuites>` or
/// `<testsuite>` root.
pub(super) fn detect(head: &[u8]) -> bool {
    let mut rest = head;
    loop {
        rest = trim_start(rest);
        if rest.starts_with(b"<?") {
            match find(rest, b"?>") {
                Some(i) => rest = &rest[i + 2..],
                None => return false,
            }
        } else if rest.starts_with(b"<!--") {
            match find(rest, b"-->") {
                Some(i) => rest = &rest[i + 3..],
                None => return false,
            }
        } else {
            break;
        }
    }
    for root in [&b"<testsuites"[..], b"<testsuite"] {
        if let Some(after) = rest.strip_prefix(root) {
            return matches!(
                after.first(),
                Some(b' ' | b'>' | b'/' | b'\t' | b'\n' | b'\r')
            );
        }
    }
    false
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let n = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &bytes[n..]
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The testcase being read.
struct Open {
    run: CaseRun,
    skipped: bool,
    props: Vec<(String, String)>,
}

/// Line numbers for byte offsets that only move forward: each byte is
/// counted once over the whole file. (Counting from the start of the file
/// for every XML event was quadratic: 40,000 testcases took 47 s.)
struct Lines<'a> {
    bytes: &'a [u8],
    /// Counted up to here, and the line there (1-based).
    at: usize,
    line: usize,
    /// Bytes looked at, for the test that keeps this linear.
    scanned: usize,
}

impl<'a> Lines<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Lines {
            bytes,
            at: 0,
            line: 1,
            scanned: 0,
        }
    }

    /// The line of byte `pos`. An offset behind the last one asked for
    /// (only an error's, which ends the read) is counted from the start.
    fn line_of(&mut self, pos: u64) -> usize {
        let pos = usize::try_from(pos)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        if pos < self.at {
            self.at = 0;
            self.line = 1;
        }
        let span = &self.bytes[self.at..pos];
        self.scanned += span.len();
        self.line += span.iter().filter(|b| **b == b'\n').count();
        self.at = pos;
        self.line
    }
}

pub(super) fn read(path: &Path, bytes: &[u8], names: &mut Names) -> Result<Vec<CaseRun>, Error> {
    read_counting(path, bytes, names).map(|(runs, _)| runs)
}

/// `read`, and how many bytes the line numbering looked at.
fn read_counting(
    path: &Path,
    bytes: &[u8],
    names: &mut Names,
) -> Result<(Vec<CaseRun>, usize), Error> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut lines = Lines::new(bytes);
    let mut reader = Reader::from_reader(bytes);
    let mut runs = Vec::new();
    let mut depth = 0usize;
    let mut saw_root = false;
    let mut open: Option<Open> = None;
    let mut open_depth = 0usize;
    loop {
        let start = reader.buffer_position();
        let event = match reader.read_event() {
            Ok(event) => event,
            Err(e) => {
                return Err(Error::at_line(
                    path,
                    lines.line_of(reader.error_position()),
                    format!("not JUnit XML: {e}"),
                ))
            }
        };
        let here = lines.line_of(start);
        let xml_err = |message: String| Error::at_line(path, here, message);
        match event {
            Event::Start(_) | Event::Empty(_) if depth == 0 && saw_root => {
                return Err(xml_err("not JUnit XML: a second root element".into()));
            }
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let name = e.local_name();
                let name = name.as_ref();
                if depth == 0 {
                    if name != b"testsuites" && name != b"testsuite" {
                        return Err(xml_err(format!(
                            "not JUnit XML: the root element is <{}>, not <testsuites> or <testsuite>",
                            String::from_utf8_lossy(name)
                        )));
                    }
                    saw_root = true;
                }
                match name {
                    b"testcase" if open.is_none() => {
                        let id = case_id(e).map_err(&xml_err)?;
                        let mut run = CaseRun::new(id, true);
                        run.line = Some(here);
                        let case = Open {
                            run,
                            skipped: false,
                            props: Vec::new(),
                        };
                        if empty {
                            runs.push(case.run);
                        } else {
                            open = Some(case);
                            open_depth = depth;
                        }
                    }
                    b"failure" | b"error" | b"skipped" | b"property" => {
                        if let Some(case) = open.as_mut() {
                            child(case, name, e).map_err(&xml_err)?;
                        }
                    }
                    _ => {}
                }
                if !empty {
                    depth += 1;
                }
            }
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                if e.local_name().as_ref() == b"testcase" && depth == open_depth {
                    if let Some(case) = open.take() {
                        if let Some(run) = finish(case, names).map_err(&xml_err)? {
                            runs.push(run);
                        }
                    }
                }
            }
            Event::Eof => {
                if depth > 0 {
                    return Err(xml_err(
                        "not JUnit XML: the file ends inside an element (truncated?)".into(),
                    ));
                }
                if !saw_root {
                    return Err(xml_err("not JUnit XML: no root element".into()));
                }
                break;
            }
            _ => {}
        }
    }
    Ok((runs, lines.scanned))
}

fn attr(e: &BytesStart, key: &[u8]) -> Result<Option<String>, String> {
    for a in e.attributes() {
        let a = a.map_err(|err| format!("not JUnit XML: {err}"))?;
        if a.key.local_name().as_ref() == key {
            let value = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(|err| format!("not JUnit XML: {err}"))?;
            return Ok(Some(value.into_owned()));
        }
    }
    Ok(None)
}

fn case_id(e: &BytesStart) -> Result<String, String> {
    let name = attr(e, b"name")?.unwrap_or_default();
    if name.is_empty() {
        return Err("a <testcase> without a name".into());
    }
    Ok(match attr(e, b"classname")? {
        Some(class) if !class.is_empty() => format!("{class}::{name}"),
        _ => name,
    })
}

fn child(case: &mut Open, name: &[u8], e: &BytesStart) -> Result<(), String> {
    match name {
        b"failure" => case.run.passed = false,
        b"error" => {
            case.run.passed = false;
            let message = attr(e, b"message")?.map(|m| first_line(&m));
            case.run.error = Some(
                message
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| "error".into()),
            );
        }
        b"skipped" => {
            if attr(e, b"type")?.as_deref() == Some("pytest.xfail") {
                case.run.passed = false;
            } else {
                case.skipped = true;
            }
        }
        b"property" => {
            if let (Some(k), Some(v)) = (attr(e, b"name")?, attr(e, b"value")?) {
                case.props.push((k, v));
            }
        }
        _ => {}
    }
    Ok(())
}

fn finish(case: Open, names: &mut Names) -> Result<Option<CaseRun>, String> {
    if case.skipped {
        return Ok(None);
    }
    let mut run = case.run;
    let mut values = Vec::new();
    for (key, text) in &case.props {
        if matches!(
            key.as_str(),
            "tool_calls" | "turns" | "score" | "cost" | "repeat"
        ) {
            let value = property_value(text).ok_or_else(|| {
                format!(
                    "case {}: the `{key}` property is neither JSON nor a Python literal",
                    run.case
                )
            })?;
            values.push((key.as_str(), value));
        }
    }
    let pairs: Vec<(&str, &Value)> = values.iter().map(|(k, v)| (*k, v)).collect();
    apply_properties(&mut run, &pairs, names).map_err(|e| format!("case {}: {e}", run.case))?;
    Ok(Some(run))
}

/// A property's text as a value: JSON, else a Python literal (what pytest's
/// `str()` of a list, dict, number or string gives).
fn property_value(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    let mut p = PyLiteral {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.space();
    (p.i == p.s.len()).then_some(v)
}

/// A small parser of Python literals: strings, numbers, True, False, None,
/// lists, tuples and dicts.
struct PyLiteral<'a> {
    s: &'a [u8],
    i: usize,
}

impl PyLiteral<'_> {
    fn space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > 64 {
            return None;
        }
        self.space();
        match self.peek()? {
            b'\'' | b'"' => self.string().map(Value::String),
            b'[' => self.seq(b']', depth).map(Value::Array),
            b'(' => self.seq(b')', depth).map(Value::Array),
            b'{' => self.dict(depth),
            _ => self.word(),
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> Option<Vec<Value>> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.space();
            if self.peek()? == close {
                self.i += 1;
                return Some(items);
            }
            items.push(self.value(depth + 1)?);
            self.space();
            match self.peek()? {
                b',' => self.i += 1,
                c if c == close => {}
                _ => return None,
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Option<Value> {
        self.i += 1;
        let mut map = serde_json::Map::new();
        loop {
            self.space();
            if self.peek()? == b'}' {
                self.i += 1;
                return Some(Value::Object(map));
            }
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            self.space();
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            let value = self.value(depth + 1)?;
            map.insert(key, value);
            self.space();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let quote = self.peek()?;
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            if c == quote {
                break;
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let e = self.peek()?;
            self.i += 1;
            let push_char = |out: &mut Vec<u8>, ch: char| {
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            };
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'0' => out.push(0),
                b'x' | b'u' | b'U' => {
                    let len = match e {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let hex = self.s.get(self.i..self.i + len)?;
                    let code = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                    self.i += len;
                    push_char(&mut out, char::from_u32(code)?);
                }
                other => out.push(other),
            }
        }
        String::from_utf8(out).ok()
    }

    fn word(&mut self) -> Option<Value> {
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || b"+-._".contains(&self.s[self.i]))
        {
            self.i += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        match word {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "None" => Some(Value::Null),
            _ => {
                let w = word.replace('_', "");
                if let Ok(n) = w.parse::<u64>() {
                    Some(Value::from(n))
                } else if let Ok(n) = w.parse::<i64>() {
                    Some(Value::from(n))
                } else {
                    let f = w.parse::<f64>().ok().filter(|f| f.is_finite())?;
                    serde_json::Number::from_f64(f).map(Value::Number)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str, names: &mut Names) -> Result<Vec<CaseRun>, Error> {
        read(Path::new("junit.xml"), text.as_bytes(), names)
    }

    #[test]
    fn cases_outcomes_and_properties() {
        let mut names = Names::default();
        let text = r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="s">
  <testcase classname="m.C" name="ok"><properties><property name="tool_calls" value="[{'name': 'a__b', 'arguments': {'x': &quot;it's&quot;}}, 'c']"/><property name="turns" value="3"/><property name="cost" value="{'input_tokens': 5, 'usd': 0.5}"/><property name="note" value="&lt;anything"/></properties></testcase>
  <testcase classname="m" name="bad"><failure message="no">trace</failure></testcase>
  <testcase name="boom"><error message="RuntimeError: x&#10;more"/></testcase>
  <testcase classname="m" name="skip"><skipped message="later"/></testcase>
  <testcase classname="m" name="xf"><skipped type="pytest.xfail" message="known"/></testcase>
  <testcase classname="m" name="json"><properties><property name="tool_calls" value='["d"]'/></properties></testcase>
  <testcase classname="m" name="empty"/>
</testsuite></testsuites>"#;
        let runs = read_str(text, &mut names).unwrap();
        let got: Vec<(&str, bool)> = runs.iter().map(|r| (r.case.as_str(), r.passed)).collect();
        assert_eq!(
            got,
            [
                ("m.C::ok", true),
                ("m::bad", false),
                ("boom", false),
                ("m::xf", false),
                ("m::json", true),
                ("m::empty", true)
            ]
        );
        let calls: Vec<&str> = runs[0]
            .tool_calls
            .as_ref()
            .unwrap()
            .iter()
            .map(|i| names.name(*i))
            .collect();
        assert_eq!(calls, ["a__b", "c"]);
        assert_eq!(runs[0].turns, Some(3));
        assert_eq!(runs[0].cost.unwrap().usd, Some(0.5));
        assert_eq!(runs[2].error.as_deref(), Some("RuntimeError: x"));
        assert_eq!(runs[1].error, None);
        assert_eq!(runs[0].line, Some(3));
    }

    #[test]
    fn bad_xml_names_the_line() {
        let mut names = Names::default();
        let err = read_str(
            "<testsuites>\n<testcase name=\"a\">\n</testsuite>",
            &mut names,
        )
        .unwrap_err();
        assert!(
            err.message().starts_with("junit.xml:3: not JUnit XML"),
            "{err}"
        );
        let err = read_str("<testsuites>\n<testcase name=\"a\">", &mut names).unwrap_err();
        assert!(err.message().contains("truncated"), "{err}");
        let err = read_str("<html></html>", &mut names).unwrap_err();
        assert!(
            err.message().contains("the root element is <html>"),
            "{err}"
        );
        let err = read_str(
            "<testsuite><testcase name=\"a\"><properties><property name=\"turns\" value=\"many\"/></properties></testcase></testsuite>",
            &mut names,
        )
        .unwrap_err();
        assert!(
            err.message().contains("neither JSON nor a Python literal"),
            "{err}"
        );
    }

    #[test]
    fn line_numbers_look_at_each_byte_once() {
        // 20,000 testcases, a failure every 1,000th: the numbering scans
        // the file once (it scanned from the start for every event, about
        // 60,000 times the file), and the lines are still right.
        let mut text =
            String::from("<?xml version=\"1.0\"?>\n<testsuites>\n<testsuite name=\"s\">\n");
        for i in 0..20_000 {
            if i % 1000 == 999 {
                text.push_str(&format!(
                    "<testcase classname=\"m\" name=\"t{i}\">\n<failure message=\"x\"/>\n</testcase>\n"
                ));
            } else {
                text.push_str(&format!("<testcase classname=\"m\" name=\"t{i}\"/>\n"));
            }
        }
        text.push_str("</testsuite>\n</testsuites>\n");
        let mut names = Names::default();
        let (runs, scanned) =
            read_counting(Path::new("junit.xml"), text.as_bytes(), &mut names).unwrap();
        assert_eq!(runs.len(), 20_000);
        assert!(
            scanned <= text.len(),
            "{scanned} bytes scanned for {}",
            text.len()
        );
        // Line 4 is the first testcase; each failing one takes three lines.
        assert_eq!(runs[0].line, Some(4));
        assert_eq!(runs[999].line, Some(4 + 999));
        assert!(!runs[999].passed);
        assert_eq!(runs[1000].line, Some(4 + 999 + 3));
        assert_eq!(runs[19_999].line, Some(4 + 19_999 + 2 * 19));
        // An error after the numbering moved on still names its line.
        let bad = format!("{}<oops></testsuites>", &text[..text.len() - 14]);
        let err = read_str(&bad, &mut names).unwrap_err();
        let lines = text.lines().count();
        assert!(
            err.message()
                .starts_with(&format!("junit.xml:{lines}: not JUnit XML")),
            "{err}"
        );
    }

    #[test]
    fn detected_by_the_root() {
        assert!(detect(b"<?xml version=\"1.0\"?><testsuites name=\"x\">"));
        assert!(detect(b"<!-- c --><testsuite>"));
        assert!(!detect(b"<testsuitex>"));
        assert!(!detect(b"<html>"));
    }

    #[test]
    fn python_literals() {
        assert_eq!(
            property_value("[('a', 1), {'k': None, 2: True}, -1.5e3]"),
            Some(serde_json::json!([["a", 1], {"k": null, "2": true}, -1500.0]))
        );
        assert_eq!(
            property_value("'\\u00e9\\n'"),
            Some(Value::String("é\n".into()))
        );
        assert_eq!(property_value("[1, 2"), None);
        assert_eq!(property_value("nan"), None);
    }
}
