//! OTLP/protobuf `ExportTraceServiceRequest` bodies (what the SDKs'
//! `otlp-proto-http` exporters send), decoded into the same borrowed
//! request the OTLP/JSON reader builds, so that both encodings go through
//! one set of span rules ([`crate::span`]).
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

use crate::span::{
    AnyValue, KeyValue, Loose, Nanos, Request, Resource, ResourceSpans, ScopeSpans, Span, Status,
    StatusCode, Str,
};

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

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Decodes an `ExportTraceServiceRequest`.
pub(crate) fn decode(body: &[u8]) -> Result<Request<'_>> {
    let mut request = Request {
        resource_spans: Vec::new(),
    };
    fields(body, |n, v| {
        if let (1, Value::Bytes(b)) = (n, v) {
            request.resource_spans.push(resource_spans(b)?);
        }
        Ok(())
    })?;
    Ok(request)
}

fn resource_spans(buf: &[u8]) -> Result<ResourceSpans<'_>> {
    let mut out = ResourceSpans {
        resource: None,
        scope_spans: Vec::new(),
    };
    fields(buf, |n, v| {
        match (n, v) {
            (1, Value::Bytes(b)) => {
                let mut attributes = Vec::new();
                fields(b, |n, v| {
                    if let (1, Value::Bytes(b)) = (n, v) {
                        attributes.push(key_value(b)?);
                    }
                    Ok(())
                })?;
                out.resource = Some(Resource { attributes });
            }
            (2, Value::Bytes(b)) => {
                let mut spans = Vec::new();
                fields(b, |n, v| {
                    if let (2, Value::Bytes(b)) = (n, v) {
                        spans.push(span(b)?);
                    }
                    Ok(())
                })?;
                out.scope_spans.push(ScopeSpans { spans });
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(out)
}

fn span(buf: &[u8]) -> Result<Span<'_>> {
    let mut out = Span {
        span_id: None,
        attributes: Vec::new(),
        start_time_unix_nano: None,
        end_time_unix_nano: None,
        status: None,
    };
    fields(buf, |n, v| {
        match (n, v) {
            (2, Value::Bytes(b)) => out.span_id = Some(Str(Cow::Owned(hex(b)))),
            (7, Value::Fixed64(t)) => out.start_time_unix_nano = Some(Nanos(Some(t))),
            (8, Value::Fixed64(t)) => out.end_time_unix_nano = Some(Nanos(Some(t))),
            (9, Value::Bytes(b)) => out.attributes.push(key_value(b)?),
            (15, Value::Bytes(b)) => {
                let mut code = false;
                fields(b, |n, v| {
                    if let (3, Value::Varint(c)) = (n, v) {
                        code = c == 2;
                    }
                    Ok(())
                })?;
                out.status = Some(Status {
                    code: Some(StatusCode(code)),
                });
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

    #[test]
    fn fields_are_read_and_unknown_ones_skipped() {
        let span = W::default()
            .bytes(1, &[0xab; 16])
            .bytes(2, &[0x01, 0xff])
            .bytes(5, b"execute_tool search")
            .uint(6, 3) // kind: skipped
            .fixed64(7, 1_000)
            .fixed64(8, 3_500)
            .msg(9, kv("gen_ai.tool.name", "search"))
            .msg(
                9,
                W::default()
                    .bytes(1, b"n")
                    .msg(2, W::default().uint(3, u64::MAX)),
            )
            .msg(15, W::default().uint(3, 2))
            .bytes(99, b"a field from the future");
        let body = W::default().msg(
            1,
            W::default()
                .msg(1, W::default().msg(1, kv("service.name", "agent")))
                .msg(2, W::default().msg(1, W::default()).msg(2, span)),
        );
        let request = decode(&body.0).expect("decodes");
        let rs = &request.resource_spans[0];
        let resource = rs.resource.as_ref().expect("resource");
        assert_eq!(
            resource.attributes[0].key.as_ref().map(|k| k.0.as_ref()),
            Some("service.name")
        );
        let span = &rs.scope_spans[0].spans[0];
        assert_eq!(span.span_id.as_ref().map(|s| s.0.as_ref()), Some("01ff"));
        assert_eq!(
            span.start_time_unix_nano.as_ref().and_then(|n| n.0),
            Some(1_000)
        );
        assert_eq!(
            span.end_time_unix_nano.as_ref().and_then(|n| n.0),
            Some(3_500)
        );
        assert!(span
            .status
            .as_ref()
            .and_then(|s| s.code.as_ref())
            .is_some_and(|c| c.0));
        let n = span.attributes[1]
            .value
            .as_ref()
            .and_then(|v| v.int_value.as_ref());
        assert_eq!(n.and_then(|l| l.0.as_deref()), Some("-1"));
    }

    #[test]
    fn broken_bodies_are_errors() {
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
            let e = decode(&body).err().expect("an error");
            assert!(e.0.contains(why), "{body:?}: {e:?}");
        }
        assert_eq!(decode(&[]).map(|r| r.resource_spans.len()), Ok(0));
    }
}
