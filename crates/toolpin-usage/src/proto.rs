//! OTLP/protobuf `ExportTraceServiceRequest` bodies (what the SDKs'
//! `otlp-proto-http` exporters send), read span by span into the same
//! [`Sink`] as the OTLP/JSON reader, so that both encodings go through one
//! set of span rules ([`crate::span`]).
//!
//! Hand-written rather than generated with prost: only eleven fields of
//! seven messages are read, strings are borrowed from the body instead of
//! copied into owned structs, and no build step or proc macro is added to
//! the tree. Unknown fields are skipped by wire type, as protobuf requires;
//! a body that does not parse is an error, never a panic (a proptest feeds
//! it random bytes).
//!
//! Field numbers, from opentelemetry-proto (trace/v1, common/v1,
//! resource/v1, collector/trace/v1):
//! ExportTraceServiceRequest.resource_spans = 1; ResourceSpans.resource = 1,
//! .scope_spans = 2; Resource.attributes = 1; ScopeSpans.spans = 2;
//! Span.span_id = 2, .name = 5, .start_time_unix_nano = 7 (fixed64),
//! .end_time_unix_nano = 8 (fixed64), .attributes = 9, .status = 15;
//! Status.code = 3; KeyValue.key = 1, .value = 2; AnyValue.string_value = 1,
//! .bool_value = 2, .int_value = 3, .double_value = 4 (others skipped).

use std::borrow::Cow;

use toolpin_manifest::text::hex;

use crate::ingest::Options;
use crate::span::{AnyValue, KeyValue, Loose, Scope, Sink, SpanAttrs, SpanRead, Stop, Str};

/// Why a body is not a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

type Result<T> = std::result::Result<T, DecodeError>;

fn err<T>(what: &str) -> Result<T> {
    Err(DecodeError(what.to_string()))
}

/// A field's payload.
enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32,
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64> {
        let mut out = 0u64;
        for i in 0..10 {
            let Some((&b, rest)) = self.buf.split_first() else {
                return err("a varint runs past the end");
            };
            self.buf = rest;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        err("a varint longer than ten bytes")
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.buf.len() {
            return err("a field runs past the end");
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next (field number, value), or `None` at the end.
    fn field(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 {
            return err("field number 0");
        }
        let value = match tag & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| DecodeError("a length too large".into()))?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Value::Fixed32
            }
            w => {
                return Err(DecodeError(format!(
                    "wire type {w} (groups are not used by OTLP)"
                )))
            }
        };
        Ok(Some((number, value)))
    }
}

/// Each field of a message, in order.
fn fields<'a>(buf: &'a [u8], mut each: impl FnMut(u64, Value<'a>) -> Result<()>) -> Result<()> {
    let mut r = Reader { buf };
    while let Some((n, v)) = r.field()? {
        each(n, v)?;
    }
    Ok(())
}

fn text(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_err(|_| DecodeError("a string that is not UTF-8".into()))
}

/// Reads an `ExportTraceServiceRequest` into `sink`, one span at a time:
/// nothing is collected but the calls the sink keeps (a 2-byte empty span
/// used to become a hundred-byte struct in a vector of millions).
pub(crate) fn decode<'a>(body: &'a [u8], sink: &mut Sink<'a, '_>) -> Result<()> {
    fields(body, |n, v| {
        if let (1, Value::Bytes(b)) = (n, v) {
            resource_spans(b, sink)?;
        }
        Ok(())
    })
}

/// The sink's bound was passed: stop reading.
fn stopped(stop: Stop) -> DecodeError {
    DecodeError(stop.to_string())
}

fn resource_spans<'a>(buf: &'a [u8], sink: &mut Sink<'a, '_>) -> Result<()> {
    let options = sink.options;
    // The resource first, wherever it stands among the fields: its
    // attributes apply to every span.
    let mut scope = Scope::default();
    fields(buf, |n, v| {
        if let (1, Value::Bytes(b)) = (n, v) {
            fields(b, |n, v| {
                if let (1, Value::Bytes(b)) = (n, v) {
                    scope.add(key_value(b)?, options);
                }
                Ok(())
            })?;
        }
        Ok(())
    })?;
    fields(buf, |n, v| {
        if let (2, Value::Bytes(b)) = (n, v) {
            fields(b, |n, v| {
                if let (2, Value::Bytes(b)) = (n, v) {
                    let span = span(b, options)?;
                    sink.span(span, &scope).map_err(stopped)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    })
}

fn span<'a>(buf: &'a [u8], options: &Options) -> Result<SpanRead<'a>> {
    let mut out = SpanRead {
        span_id: None,
        attrs: SpanAttrs::default(),
        start: None,
        end: None,
        failed: false,
    };
    fields(buf, |n, v| {
        match (n, v) {
            (2, Value::Bytes(b)) => out.span_id = Some(Cow::Owned(hex(b))),
            (7, Value::Fixed64(t)) => out.start = Some(t),
            (8, Value::Fixed64(t)) => out.end = Some(t),
            (9, Value::Bytes(b)) => out.attrs.add(key_value(b)?, options),
            (15, Value::Bytes(b)) => {
                let mut code = false;
                fields(b, |n, v| {
                    if let (3, Value::Varint(c)) = (n, v) {
                        code = c == 2;
                    }
                    Ok(())
                })?;
                out.failed = code;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(out)
}

fn key_value(buf: &[u8]) -> Result<KeyValue<'_>> {
    let mut out = KeyValue {
        key: None,
        value: None,
    };
    fields(buf, |n, v| {
        match (n, v) {
            (1, Value::Bytes(b)) => out.key = Some(Str(Cow::Borrowed(text(b)?))),
            (2, Value::Bytes(b)) => out.value = Some(any_value(b)?),
            _ => {}
        }
        Ok(())
    })?;
    Ok(out)
}

fn any_value(buf: &[u8]) -> Result<AnyValue<'_>> {
    let mut out = AnyValue {
        string_value: None,
        int_value: None,
        bool_value: None,
        double_value: None,
    };
    fields(buf, |n, v| {
        match (n, v) {
            (1, Value::Bytes(b)) => out.string_value = Some(Str(Cow::Borrowed(text(b)?))),
            (2, Value::Varint(x)) => out.bool_value = Some(x != 0),
            (3, Value::Varint(x)) => {
                out.int_value = Some(Loose(Some(Cow::Owned((x as i64).to_string()))))
            }
            (4, Value::Fixed64(x)) => out.double_value = Some(f64::from_bits(x)),
            _ => {}
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::span::{read_body, BodyError, Encoding};
    use crate::{Aggregates, IngestReport, Problem};

    /// A protobuf writer for tests: enough to build requests by hand.
    #[derive(Default)]
    pub(crate) struct W(pub Vec<u8>);

    impl W {
        fn varint(&mut self, mut v: u64) {
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.0.push(b);
                    return;
                }
                self.0.push(b | 0x80);
            }
        }
        pub(crate) fn bytes(mut self, n: u64, b: &[u8]) -> Self {
            self.varint(n << 3 | 2);
            self.varint(b.len() as u64);
            self.0.extend_from_slice(b);
            self
        }
        pub(crate) fn msg(self, n: u64, m: W) -> Self {
            self.bytes(n, &m.0)
        }
        pub(crate) fn fixed64(mut self, n: u64, v: u64) -> Self {
            self.varint(n << 3 | 1);
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        pub(crate) fn uint(mut self, n: u64, v: u64) -> Self {
            self.varint(n << 3);
            self.varint(v);
            self
        }
    }

    pub(crate) fn kv(key: &str, value: &str) -> W {
        W::default()
            .bytes(1, key.as_bytes())
            .msg(2, W::default().bytes(1, value.as_bytes()))
    }

    fn decode_body(
        body: &[u8],
        options: &Options,
    ) -> (std::result::Result<Aggregates, BodyError>, IngestReport) {
        let mut report = IngestReport::new(5);
        let read = read_body(body, Encoding::Protobuf, "t", options, &mut report);
        (read, report)
    }

    fn call_span(tool: &str) -> W {
        W::default()
            .bytes(2, &[0x01, 0xff])
            .fixed64(7, 1_000)
            .fixed64(8, 3_500)
            .msg(9, kv("gen_ai.operation.name", "execute_tool"))
            .msg(9, kv("gen_ai.tool.name", tool))
    }

    #[test]
    fn fields_are_read_and_unknown_ones_skipped() {
        let span = call_span("search")
            .bytes(1, &[0xab; 16])
            .bytes(5, b"execute_tool search")
            .uint(6, 3) // kind: skipped
            .msg(
                9,
                W::default()
                    .bytes(1, b"tenant.id")
                    .msg(2, W::default().uint(3, u64::MAX)),
            )
            .msg(15, W::default().uint(3, 2))
            .bytes(99, b"a field from the future");
        // The resource after the spans still applies to them.
        let body = W::default().msg(
            1,
            W::default()
                .msg(2, W::default().msg(1, W::default()).msg(2, span))
                .msg(1, W::default().msg(1, kv("service.name", "agent"))),
        );
        let (read, report) = decode_body(&body.0, &Options::default());
        let agg = read.expect("decodes");
        let calls = agg.calls();
        assert_eq!(calls.len(), 1);
        let (key, stats) = calls[0];
        assert_eq!(
            (&*key.agent, &*key.tenant, &*key.tool),
            ("agent", "-1", "search")
        );
        assert_eq!(stats.errors.get("error"), Some(&1), "status ERROR");
        assert_eq!(stats.latency.min(), Some(2_500));
        let example = &report.problems[&Problem::MissingFingerprint].examples[0];
        assert!(example.contains("span 01ff (search)"), "{example}");
        assert_eq!((report.requests, report.spans_used), (1, 1));
    }

    #[test]
    fn broken_bodies_are_errors_and_keep_nothing() {
        for (body, why) in [
            (vec![0x0a, 0x05, 0x01], "runs past the end"),
            (
                vec![
                    0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                ],
                "varint",
            ),
            (vec![0x0b], "wire type 3"),
            (vec![0x00, 0x00], "field number 0"),
        ] {
            let e = decode_body(&body, &Options::default())
                .0
                .expect_err("an error");
            assert!(e.to_string().contains(why), "{body:?}: {e:?}");
        }
        let (empty, report) = decode_body(&[], &Options::default());
        assert_eq!(empty.map(|a| a.len()), Ok(0));
        assert_eq!(report.requests, 1);
        // A call, then a broken span: the call is not kept.
        let good = W::default().msg(2, call_span("search"));
        let mut body = W::default().msg(1, W::default().msg(2, good)).0;
        body.extend_from_slice(&[0x0a, 0x05, 0x01]);
        let (read, report) = decode_body(&body, &Options::default());
        assert!(read.is_err());
        assert_eq!((report.spans_seen, report.spans_used), (0, 0), "{report}");
    }

    #[test]
    fn what_a_body_takes_is_its_calls_not_its_spans() {
        // 200,000 empty spans (2 bytes each) and no call: nothing held.
        let mut scope = W::default();
        for _ in 0..200_000 {
            scope = scope.bytes(2, &[]);
        }
        let body = W::default().msg(1, W::default().msg(2, scope));
        let options = Options {
            max_decoded_bytes: 4096,
            ..Options::default()
        };
        let (read, report) = decode_body(&body.0, &options);
        assert_eq!(read.map(|a| a.len()), Ok(0));
        assert_eq!((report.spans_seen, report.spans_other), (200_000, 200_000));
        // Calls count against the bound: a body of more is refused whole.
        let mut scope = W::default();
        for i in 0..100 {
            scope = scope.msg(2, call_span(&format!("tool-{i}")));
        }
        let body = W::default().msg(1, W::default().msg(2, scope));
        let (read, report) = decode_body(&body.0, &options);
        assert_eq!(read.err(), Some(BodyError::TooLarge));
        assert_eq!(report.count(Problem::RequestTooLarge), 1, "{report}");
        assert_eq!(report.spans_used, 0, "{report}");
        let (read, _) = decode_body(&body.0, &Options::default());
        assert_eq!(read.map(|a| a.len()), Ok(100));
    }
}
