//! Drift events, refusals and result checks as JSON lines: the record an
//! on-call engineer greps, and what a log pipeline ships.

use std::io::Write;
use std::sync::Mutex;

use serde_json::{json, Map, Value};
use toolpin_manifest::{wire, Redactor};

/// Longest string kept in an event, in bytes: the log keeps the detail the
/// metrics drop (a whole made-up tool name), but one absurd name cannot make
/// every line that quotes it megabytes long.
pub const MAX_EVENT_STRING: usize = 4096;

/// Where events go.
pub enum Sink {
    /// Nowhere (tests, or `--events off`).
    Off,
    /// Standard error (the default: stdout carries the protocol in stdio
    /// mode).
    Stderr,
    /// Appended to a file.
    File(Mutex<std::fs::File>),
    /// Kept in memory, for tests.
    Memory(Mutex<Vec<Value>>),
}

impl Sink {
    /// Opens `path` for appending.
    pub fn file(path: &std::path::Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Sink::File(Mutex::new(file)))
    }

    /// Writes one event: `event` (what happened), the fields given, and the
    /// time.
    pub fn emit(&self, event: &str, fields: Value) {
        if matches!(self, Sink::Off) {
            return;
        }
        let mut record = Map::new();
        record.insert(
            wire::event::TIME.into(),
            json!(toolpin_manifest::time::now_utc_millis()),
        );
        record.insert(wire::event::EVENT.into(), json!(event));
        if let Value::Object(f) = fields {
            record.extend(f);
        }
        for value in record.values_mut() {
            cap_strings(value);
        }
        let record = Value::Object(record);
        // One write(2) per line: processes appending to one log (O_APPEND)
        // never interleave inside a line.
        let mut line = record.to_string();
        line.push('\n');
        match self {
            Sink::Off => {}
            Sink::Stderr => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(line.as_bytes());
            }
            Sink::File(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = f.write_all(line.as_bytes());
                }
            }
            Sink::Memory(m) => {
                if let Ok(mut m) = m.lock() {
                    m.push(record);
                }
            }
        }
    }

    /// Events kept by a memory sink.
    pub fn recorded(&self) -> Vec<Value> {
        match self {
            Sink::Memory(m) => m.lock().map(|m| m.clone()).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// The proxy's event log: a sink, and the upstreams' secrets, which no
/// event may carry (an upstream's error text can quote its credentials).
pub struct Log {
    sink: Sink,
    redactor: Redactor,
}

impl Log {
    pub fn new(sink: Sink, redactor: Redactor) -> Self {
        Self { sink, redactor }
    }

    /// Writes one event, every secret in its fields redacted.
    pub fn emit(&self, event: &str, mut fields: Value) {
        self.redactor.redact_value(&mut fields);
        self.sink.emit(event, fields);
    }

    /// Events kept by a memory sink.
    pub fn recorded(&self) -> Vec<Value> {
        self.sink.recorded()
    }
}

/// Cuts every string in `value` longer than [`MAX_EVENT_STRING`] bytes, at
/// a character boundary, and says so in the string.
fn cap_strings(value: &mut Value) {
    match value {
        Value::String(s) if s.len() > MAX_EVENT_STRING => {
            let total = s.len();
            let mut end = MAX_EVENT_STRING;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            s.push_str(&format!("... (truncated: {total} bytes)"));
        }
        Value::Array(items) => items.iter_mut().for_each(cap_strings),
        Value::Object(members) => members.values_mut().for_each(cap_strings),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_strings_are_cut_and_say_so() {
        let sink = Sink::Memory(Mutex::new(Vec::new()));
        let name = "n".repeat(10 << 20);
        sink.emit(
            "refused",
            json!({"tool": name, "nested": {"list": ["short", "é".repeat(3000)]}}),
        );
        let events = sink.recorded();
        let e = &events[0];
        assert_eq!(
            e["tool"],
            format!(
                "{}... (truncated: 10485760 bytes)",
                "n".repeat(MAX_EVENT_STRING)
            )
        );
        assert_eq!(e["nested"]["list"][0], "short");
        assert_eq!(
            e["nested"]["list"][1],
            format!("{}... (truncated: 6000 bytes)", "é".repeat(2048))
        );
        assert_eq!(e["event"], "refused");
    }
}
