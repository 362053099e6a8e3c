//! OTLP/JSON span files, as the OpenTelemetry Collector's `file` exporter
//! writes them: one `ExportTraceServiceRequest` per line
//! (`resourceSpans[].scopeSpans[].spans[]`), or one pretty-printed request.
//! Read a line at a time into typed structs that borrow from the line
//! (strings without escapes are not copied, members we do not need are
//! skipped by serde without building values), and only tool executions
//! are kept: `gen_ai.operation.name = "execute_tool"` (the GenAI
//! conventions) or `mcp.method.name = "tools/call"` (the MCP ones, which
//! the proxy also sets).

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead};

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::aggregate::{Aggregates, ArgValue, Call};
use crate::ingest::{IngestReport, Options, Problem};
use crate::lines::Lines;

/// A string, borrowed from the input when it holds no escapes.
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, kept as text when it is a string or a number (OTLP/JSON
/// writes `intValue` as a string, some exporters as a number; the proxy's
/// event fields are strings, but nothing stops a line holding others).
/// Anything else is skipped and reads as `None`.
pub(crate) struct Loose<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Loose(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Unix nanoseconds, a string in OTLP/JSON (a number is accepted too).
/// Anything unreadable is `None`, reported as a missing time.
pub(crate) struct Nanos(pub Option<u64>);

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Loose::deserialize(d)?;
        Ok(Nanos(text.0.and_then(|t| t.parse::<u64>().ok())))
    }
}

/// `status.code`: 2 is ERROR (`"STATUS_CODE_ERROR"` in older exporters).
pub(crate) struct StatusCode(pub bool);

impl<'de> Deserialize<'de> for StatusCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Loose::deserialize(d)?;
        Ok(StatusCode(matches!(
            text.0.as_deref(),
            Some("2" | "STATUS_CODE_ERROR")
        )))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Request<'a> {
    #[serde(borrow, default)]
    pub(crate) resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceSpans<'a> {
    #[serde(borrow, default)]
    pub(crate) resource: Option<Resource<'a>>,
    /// `instrumentationLibrarySpans` before OTLP 0.15.
    #[serde(borrow, default, alias = "instrumentationLibrarySpans")]
    pub(crate) scope_spans: Vec<ScopeSpans<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct Resource<'a> {
    #[serde(borrow, default)]
    pub(crate) attributes: Vec<KeyValue<'a>>,
}

#[derive(Deserialize)]
pub(crate) struct ScopeSpans<'a> {
    #[serde(borrow, default)]
    pub(crate) spans: Vec<Span<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Span<'a> {
    #[serde(borrow, default)]
    pub(crate) span_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(crate) attributes: Vec<KeyValue<'a>>,
    #[serde(default)]
    pub(crate) start_time_unix_nano: Option<Nanos>,
    #[serde(default)]
    pub(crate) end_time_unix_nano: Option<Nanos>,
    #[serde(default)]
    pub(crate) status: Option<Status>,
}

#[derive(Deserialize)]
pub(crate) struct Status {
    #[serde(default)]
    pub(crate) code: Option<StatusCode>,
}

#[derive(Deserialize)]
pub(crate) struct KeyValue<'a> {
    #[serde(borrow, default)]
    pub(crate) key: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(crate) value: Option<AnyValue<'a>>,
}

/// An attribute value. Arrays, maps and bytes are skipped: no attribute
/// read here has that type.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AnyValue<'a> {
    #[serde(borrow, default)]
    pub(crate) string_value: Option<Str<'a>>,
    #[serde(borrow, default)]
    pub(crate) int_value: Option<Loose<'a>>,
    #[serde(default)]
    pub(crate) bool_value: Option<bool>,
    #[serde(default)]
    pub(crate) double_value: Option<f64>,
}

impl<'a> AnyValue<'a> {
    fn text(&self) -> Option<&str> {
        if let Some(s) = &self.string_value {
            return Some(&s.0);
        }
        self.int_value.as_ref().and_then(|v| v.0.as_deref())
    }

    /// The value as text, for keys: strings and integers as written,
    /// booleans and doubles formatted.
    fn to_text(&self) -> Option<Cow<'_, str>> {
        if let Some(t) = self.text() {
            return Some(Cow::Borrowed(t));
        }
        if let Some(b) = self.bool_value {
            return Some(Cow::Owned(b.to_string()));
        }
        self.double_value.map(|d| Cow::Owned(d.to_string()))
    }
}

/// A call's arguments object: each member's name, and its value as far as
/// the statistics care.
struct Args<'a>(Vec<(Cow<'a, str>, ArgValue<'a>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Args<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Member<'a>(ArgValue<'a>);
        impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Member<'de>;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("any value")
                    }
                    fn visit_borrowed_str<E: de::Error>(
                        self,
                        v: &'de str,
                    ) -> Result<Self::Value, E> {
                        Ok(Member(ArgValue::Str(Cow::Borrowed(v))))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                        Ok(Member(ArgValue::Str(Cow::Owned(v.to_string()))))
                    }
                    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                        Ok(Member(ArgValue::Null))
                    }
                    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                        Ok(Member(ArgValue::Other))
                    }
                    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                        Ok(Member(ArgValue::Other))
                    }
                    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                        Ok(Member(ArgValue::Other))
                    }
                    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                        Ok(Member(ArgValue::Other))
                    }
                    fn visit_seq<A: SeqAccess<'de>>(
                        self,
                        mut s: A,
                    ) -> Result<Self::Value, A::Error> {
                        while s.next_element::<IgnoredAny>()?.is_some() {}
                        Ok(Member(ArgValue::Other))
                    }
                    fn visit_map<A: MapAccess<'de>>(
                        self,
                        mut m: A,
                    ) -> Result<Self::Value, A::Error> {
                        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                        Ok(Member(ArgValue::Other))
                    }
                }
                d.deserialize_any(V)
            }
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Args<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some((k, v)) = m.next_entry::<Str<'de>, Member<'de>>()? {
                    members.push((k.0, v.0));
                }
                Ok(Args(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// Where a line came from, for examples.
struct At<'n> {
    input: &'n str,
    line: u64,
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.input, self.line)
    }
}

/// A pretty-printed request being collected, line by line, until the
/// line that closes it (`}` in the first column, as every pretty-printer
/// writes the closing brace of the top-level object).
struct Document {
    first_line: u64,
    bytes: Vec<u8>,
    too_long: bool,
}

/// Reads one OTLP/JSON input into `aggregates`.
pub(crate) fn read<R: BufRead>(
    lines: &mut Lines<R>,
    input: &str,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) -> io::Result<()> {
    let mut doc: Option<Document> = None;
    while let Some(line) = lines.next_line()? {
        report.lines += 1;
        if let Some(d) = &mut doc {
            if line.skipped > 0 || d.bytes.len() + line.bytes.len() > options.max_document_bytes {
                d.too_long = true;
            }
            if !d.too_long {
                d.bytes.extend_from_slice(line.bytes);
                d.bytes.push(b'\n');
            }
            if line.bytes.first() == Some(&b'}') {
                if let Some(d) = doc.take() {
                    finish_document(d, true, input, options, aggregates, report);
                }
            }
            continue;
        }
        let text = line.bytes.trim_ascii();
        if text.is_empty() && line.skipped == 0 {
            report.blank_lines += 1;
            continue;
        }
        let at = At {
            input,
            line: line.number,
        };
        if line.skipped > 0 {
            let total = line.bytes.len() as u64 + line.skipped;
            report.note(Problem::LineTooLong, || {
                format!("{at}: {total} bytes, more than the limit")
            });
            continue;
        }
        if text == b"{" {
            doc = Some(Document {
                first_line: line.number,
                bytes: b"{\n".to_vec(),
                too_long: false,
            });
            continue;
        }
        request(text, &at, line.terminated, options, aggregates, report);
    }
    if let Some(d) = doc {
        finish_document(d, false, input, options, aggregates, report);
    }
    Ok(())
}

fn finish_document(
    d: Document,
    closed: bool,
    input: &str,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) {
    let at = At {
        input,
        line: d.first_line,
    };
    if d.too_long {
        report.note(Problem::LineTooLong, || {
            format!("{at}: a request longer than the limit")
        });
        return;
    }
    request(&d.bytes, &at, closed, options, aggregates, report);
}

/// One `ExportTraceServiceRequest`.
fn request(
    bytes: &[u8],
    at: &At<'_>,
    terminated: bool,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) {
    // Derived structs also read JSON arrays (as tuples): only an object is
    // a request.
    if bytes.first() != Some(&b'{') && serde_json::from_slice::<IgnoredAny>(bytes).is_ok() {
        report.note(Problem::WrongShape, || format!("{at}: not a JSON object"));
        return;
    }
    let request: Request<'_> = match serde_json::from_slice(bytes) {
        Ok(r) => r,
        Err(e) => {
            let problem = if e.is_eof() && !terminated {
                Problem::TruncatedLine
            } else if e.is_data() {
                Problem::WrongShape
            } else {
                Problem::MalformedLine
            };
            report.note(problem, || format!("{at}: {e}"));
            return;
        }
    };
    spans_of(&request, at, options, aggregates, report);
}

/// Every span of a decoded request (either encoding).
fn spans_of(
    request: &Request<'_>,
    at: &At<'_>,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) {
    report.requests += 1;
    for rs in &request.resource_spans {
        let mut resource = Scope::default();
        if let Some(r) = &rs.resource {
            for kv in &r.attributes {
                let (Some(k), Some(v)) = (&kv.key, &kv.value) else {
                    continue;
                };
                match k.0.as_ref() {
                    "deployment.environment.name" => resource.environment_name = v.to_text(),
                    "deployment.environment" => resource.environment = v.to_text(),
                    "service.name" => resource.service = v.to_text(),
                    k if k == options.tenant_key => resource.tenant = v.to_text(),
                    _ => {}
                }
            }
        }
        for ss in &rs.scope_spans {
            for span in &ss.spans {
                report.spans_seen += 1;
                one_span(span, &resource, at, options, aggregates, report);
            }
        }
    }
}

/// What a resource says about its spans.
#[derive(Default)]
struct Scope<'a> {
    environment_name: Option<Cow<'a, str>>,
    environment: Option<Cow<'a, str>>,
    service: Option<Cow<'a, str>>,
    tenant: Option<Cow<'a, str>>,
}

fn one_span(
    span: &Span<'_>,
    resource: &Scope<'_>,
    at: &At<'_>,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) {
    let mut execute = false;
    let mut tool = None;
    let mut error_type = None;
    let mut catalog = None;
    let mut tool_fingerprint = None;
    let mut agent = None;
    let mut tenant = None;
    let mut environment = None;
    let mut arguments: Option<&AnyValue<'_>> = None;
    for kv in &span.attributes {
        let (Some(k), Some(v)) = (&kv.key, &kv.value) else {
            continue;
        };
        match k.0.as_ref() {
            "gen_ai.operation.name" => execute |= v.text() == Some("execute_tool"),
            "mcp.method.name" => execute |= v.text() == Some("tools/call"),
            "gen_ai.tool.name" => tool = v.text(),
            "error.type" => error_type = v.text(),
            "toolpin.catalog.fingerprint" => catalog = v.text(),
            "toolpin.tool.fingerprint" => tool_fingerprint = v.text(),
            "gen_ai.agent.name" => agent = v.to_text(),
            "gen_ai.tool.call.arguments" => arguments = Some(v),
            "deployment.environment.name" | "deployment.environment" => environment = v.to_text(),
            k if k == options.tenant_key => tenant = v.to_text(),
            _ => {}
        }
    }
    if !execute {
        report.spans_other += 1;
        return;
    }
    let span_id = span.span_id.as_ref().map_or("?", |s| &s.0);
    let Some(tool) = tool.filter(|t| !t.is_empty()) else {
        report.spans_rejected += 1;
        report.note(Problem::MissingToolName, || {
            format!("{at}: span {span_id} has no gen_ai.tool.name")
        });
        return;
    };
    let start = span.start_time_unix_nano.as_ref().and_then(|n| n.0);
    let end = span.end_time_unix_nano.as_ref().and_then(|n| n.0);
    let (Some(start), Some(end)) = (start.filter(|&s| s > 0), end.filter(|&e| e > 0)) else {
        report.spans_rejected += 1;
        report.note(Problem::MissingTime, || {
            format!("{at}: span {span_id} ({tool}) lacks a start or end time")
        });
        return;
    };
    if end < start {
        report.spans_rejected += 1;
        report.note(Problem::EndBeforeStart, || {
            format!(
                "{at}: span {span_id} ({tool}) ends {} ns before it starts",
                start - end
            )
        });
        return;
    }
    if start > options.now_nanos.saturating_add(options.max_future_nanos) {
        report.spans_rejected += 1;
        report.note(Problem::FutureTimestamp, || {
            format!(
                "{at}: span {span_id} ({tool}) starts {} s in the future",
                (start - options.now_nanos) / 1_000_000_000
            )
        });
        return;
    }
    let catalog = catalog.unwrap_or("");
    if catalog.is_empty() {
        report.note(Problem::MissingFingerprint, || {
            format!("{at}: span {span_id} ({tool}) has no toolpin.catalog.fingerprint")
        });
    } else if let Some(known) = &options.known_catalogs {
        if !known.contains(catalog) {
            report.note(Problem::UnknownFingerprint, || {
                format!("{at}: span {span_id} ({tool}) names catalog {catalog}")
            });
        }
    }
    let error = error_type.filter(|e| !e.is_empty()).or_else(|| {
        span.status
            .as_ref()
            .and_then(|s| s.code.as_ref())
            .filter(|c| c.0)
            .map(|_| "error")
    });
    let parsed = arguments.map(|v| match v.string_value.as_ref() {
        Some(s) => serde_json::from_str::<Args<'_>>(&s.0).map_err(|e| e.to_string()),
        None => Err("not a JSON string".to_string()),
    });
    let members = match &parsed {
        Some(Ok(a)) => Some(a.0.as_slice()),
        Some(Err(e)) => {
            report.note(Problem::BadArguments, || {
                format!("{at}: span {span_id} ({tool}): gen_ai.tool.call.arguments: {e}")
            });
            None
        }
        None => None,
    };
    let environment = environment
        .as_deref()
        .or(resource.environment_name.as_deref())
        .or(resource.environment.as_deref())
        .unwrap_or(&options.environment);
    let tenant = tenant
        .as_deref()
        .or(resource.tenant.as_deref())
        .unwrap_or("");
    let agent = agent
        .as_deref()
        .or(resource.service.as_deref())
        .unwrap_or("");
    report.spans_used += 1;
    aggregates.record_call(&Call {
        start_nanos: start,
        duration_nanos: end - start,
        environment,
        tenant,
        agent,
        catalog,
        tool,
        tool_fingerprint: tool_fingerprint.unwrap_or(""),
        error,
        arguments: members,
    });
}

/// How an OTLP/HTTP export body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`: OTLP/JSON.
    Json,
    /// `application/x-protobuf`.
    Protobuf,
}

/// Reads one OTLP/HTTP export body (a whole `ExportTraceServiceRequest`)
/// into `aggregates`, by the same rules as span files. `Err` (with the
/// reason, also counted in `report` as a malformed request) when the body
/// is not a request at all; spans that are left out are counted in
/// `report` and the body is still `Ok`.
pub fn read_body(
    body: &[u8],
    encoding: Encoding,
    name: &str,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) -> Result<(), String> {
    let at = At {
        input: name,
        line: 1,
    };
    let decoded = match encoding {
        Encoding::Json => {
            if body.trim_ascii_start().first() != Some(&b'{') {
                Err("not a JSON object".to_string())
            } else {
                serde_json::from_slice::<Request<'_>>(body).map_err(|e| e.to_string())
            }
        }
        Encoding::Protobuf => crate::proto::decode(body).map_err(|e| e.0),
    };
    match decoded {
        Ok(request) => {
            spans_of(&request, &at, options, aggregates, report);
            Ok(())
        }
        Err(e) => {
            report.note(Problem::MalformedLine, || format!("{at}: {e}"));
            Err(e)
        }
    }
}
