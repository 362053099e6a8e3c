//! An incremental Server-Sent Events parser (the WHATWG event-stream
//! format): fed bytes as they arrive, it yields complete events.

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `message` unless the stream named another type.
    pub event: String,
    pub data: String,
    pub id: Option<String>,
}

/// Parser state between chunks.
#[derive(Default)]
pub struct Parser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
    /// Bytes buffered for one line beyond which the stream is refused.
    pub max_line: usize,
}

impl Parser {
    pub fn new(max_line: usize) -> Self {
        Self {
            max_line,
            ..Self::default()
        }
    }

    /// Feeds a chunk; returns the events it completes. An error means a line
    /// grew past `max_line`.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, String> {
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b == b'\n' || b == b'\r' {
                // A CR at the very end may be the first half of CRLF.
                if b == b'\r' && i + 1 == self.buf.len() {
                    break;
                }
                let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
                self.line(&line, &mut events);
                if b == b'\r' && self.buf.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buf.drain(..start);
        // An event's data lines add up: bounded as one line is.
        if self.buf.len() > self.max_line || self.data.len() > self.max_line {
            return Err(format!(
                "an event-stream line exceeds {} bytes",
                self.max_line
            ));
        }
        Ok(events)
    }

    fn line(&mut self, line: &str, events: &mut Vec<Event>) {
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                if data.ends_with('\n') {
                    data.pop();
                }
                let event = std::mem::take(&mut self.event);
                events.push(Event {
                    event: if event.is_empty() {
                        "message".into()
                    } else {
                        event
                    },
                    data,
                    id: self.id.clone(),
                });
            }
            self.has_data = false;
            self.data.clear();
            self.event.clear();
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event = value.to_string(),
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_across_chunks() {
        let mut p = Parser::new(1 << 20);
        let mut all = Vec::new();
        for chunk in [
            "event: endpoint\r\ndata: /messages?s",
            "ession=1\r\n\r\n: ping\n\nda",
            "ta: {\"a\":1}\nid: 7\n\n",
        ] {
            all.extend(p.feed(chunk.as_bytes()).expect("feeds"));
        }
        assert_eq!(
            all,
            vec![
                Event {
                    event: "endpoint".into(),
                    data: "/messages?session=1".into(),
                    id: None
                },
                Event {
                    event: "message".into(),
                    data: "{\"a\":1}".into(),
                    id: Some("7".into())
                },
            ]
        );
    }

    #[test]
    fn joins_multiline_data_and_skips_empty_events() {
        let mut p = Parser::new(1 << 20);
        let events = p.feed(b"event: x\n\ndata: a\ndata:b\n\n").expect("feeds");
        assert_eq!(
            events,
            vec![Event {
                event: "message".into(),
                data: "a\nb".into(),
                id: None
            }]
        );
    }

    #[test]
    fn cr_split_from_lf_is_one_line_end() {
        let mut p = Parser::new(1 << 20);
        assert!(p.feed(b"data: x\r").expect("feeds").is_empty());
        assert_eq!(p.feed(b"\n\r\n").expect("feeds").len(), 1);
    }

    #[test]
    fn refuses_endless_lines() {
        let mut p = Parser::new(8);
        assert!(p.feed(b"data: 0123456789").is_err());
    }
}
