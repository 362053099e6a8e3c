//! OTLP/JSON span files, as the OpenTelemetry Collector's `file` exporter
//! writes them: one `ExportTraceServiceRequest` per line
//! (`resourceSpans[].scopeSpans[].spans[]`), or one pretty-printed request.
//! Read a line at a time, and each line span by span: nothing of a
//! request is collected but its tool calls (strings without escapes are
//! borrowed from the line, members and attributes we do not need are
//! skipped without building values). Only tool executions are kept:
//! `gen_ai.operation.name = "execute_tool"` (the GenAI conventions) or
//! `mcp.method.name = "tools/call"` (the MCP ones, which the proxy also
//! sets). The protobuf reader (`proto.rs`) hands its spans to the same
//! [`Sink`], so both encodings go through one set of span rules.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use toolpin_manifest::time::Timestamp;
use toolpin_manifest::wire::{resource, span};

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

/// `status`: only its code is read.
#[derive(Deserialize)]
pub(crate) struct Status {
    #[serde(default)]
    pub(crate) code: Option<StatusCode>,
}

/// One attribute, read on its own: a span's or resource's attributes are
/// folded into what is kept ([`SpanAttrs`], [`Scope`]) one at a time and
/// never collected, so that a million attributes cost what one does.
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
    /// The value as text when it is a string or an integer.
    fn into_text(self) -> Option<Cow<'a, str>> {
        match self.string_value {
            Some(s) => Some(s.0),
            None => self.int_value.and_then(|v| v.0),
        }
    }

    /// The value as text, for keys: strings and integers as written,
    /// booleans and doubles formatted.
    fn into_key_text(self) -> Option<Cow<'a, str>> {
        let (b, d) = (self.bool_value, self.double_value);
        self.into_text()
            .or_else(|| b.map(|b| Cow::Owned(b.to_string())))
            .or_else(|| d.map(|d| Cow::Owned(d.to_string())))
    }
}

/// What a span's attributes say, kept as they are read (for a key given
/// twice, the last value wins).
#[derive(Default)]
pub(crate) struct SpanAttrs<'a> {
    execute: bool,
    tool: Option<Cow<'a, str>>,
    error_type: Option<Cow<'a, str>>,
    catalog: Option<Cow<'a, str>>,
    tool_fingerprint: Option<Cow<'a, str>>,
    agent: Option<Cow<'a, str>>,
    environment: Option<Cow<'a, str>>,
    tenant: Option<Cow<'a, str>>,
    /// `gen_ai.tool.call.arguments`: the string, or `None` when the value
    /// is not a string.
    arguments: Option<Option<Cow<'a, str>>>,
}

impl<'a> SpanAttrs<'a> {
    pub(crate) fn add(&mut self, kv: KeyValue<'a>, options: &Options) {
        let (Some(k), Some(v)) = (kv.key, kv.value) else {
            return;
        };
        match k.0.as_ref() {
            span::GEN_AI_OPERATION_NAME => {
                self.execute |= v.into_text().as_deref() == Some(span::OPERATION_EXECUTE_TOOL)
            }
            span::MCP_METHOD_NAME => {
                self.execute |= v.into_text().as_deref() == Some(span::METHOD_TOOLS_CALL)
            }
            span::GEN_AI_TOOL_NAME => self.tool = v.into_text(),
            span::ERROR_TYPE => self.error_type = v.into_text(),
            span::TOOLPIN_CATALOG_FINGERPRINT => self.catalog = v.into_text(),
            span::TOOLPIN_TOOL_FINGERPRINT => self.tool_fingerprint = v.into_text(),
            span::GEN_AI_AGENT_NAME => self.agent = v.into_key_text(),
            span::GEN_AI_TOOL_CALL_ARGUMENTS => self.arguments = Some(v.string_value.map(|s| s.0)),
            resource::DEPLOYMENT_ENVIRONMENT_NAME | resource::DEPLOYMENT_ENVIRONMENT => {
                self.environment = v.into_key_text()
            }
            k if k == options.tenant_key => self.tenant = v.into_key_text(),
            _ => {}
        }
    }
}

/// What a resource says about its spans, kept as its attributes are read.
#[derive(Default)]
pub(crate) struct Scope<'a> {
    environment_name: Option<Cow<'a, str>>,
    environment: Option<Cow<'a, str>>,
    service: Option<Cow<'a, str>>,
    tenant: Option<Cow<'a, str>>,
}

impl<'a> Scope<'a> {
    pub(crate) fn add(&mut self, kv: KeyValue<'a>, options: &Options) {
        let (Some(k), Some(v)) = (kv.key, kv.value) else {
            return;
        };
        match k.0.as_ref() {
            resource::DEPLOYMENT_ENVIRONMENT_NAME => self.environment_name = v.into_key_text(),
            resource::DEPLOYMENT_ENVIRONMENT => self.environment = v.into_key_text(),
            resource::SERVICE_NAME => self.service = v.into_key_text(),
            k if k == options.tenant_key => self.tenant = v.into_key_text(),
            _ => {}
        }
    }
}

/// One span as read, before it is judged.
pub(crate) struct SpanRead<'a> {
    pub(crate) span_id: Option<Cow<'a, str>>,
    pub(crate) attrs: SpanAttrs<'a>,
    pub(crate) start: Option<u64>,
    pub(crate) end: Option<u64>,
    /// `status.code` is ERROR.
    pub(crate) failed: bool,
}

/// A tool call read from a request, waiting for the request's end: calls
/// are folded into the aggregates only once the whole request has been
/// read, so that a request that turns out cut off or malformed further on
/// leaves nothing behind. Its strings borrow from the request where they
/// can.
struct Pending<'a> {
    span_id: Option<Cow<'a, str>>,
    start: u64,
    end: u64,
    /// `None`: [`Options::environment`].
    environment: Option<Cow<'a, str>>,
    tenant: Option<Cow<'a, str>>,
    agent: Option<Cow<'a, str>>,
    catalog: Option<Cow<'a, str>>,
    tool: Cow<'a, str>,
    tool_fingerprint: Option<Cow<'a, str>>,
    error: Option<Cow<'a, str>>,
    arguments: Option<Option<Cow<'a, str>>>,
}

/// Heap bytes of a string taken from a request: nothing when borrowed.
fn owned(s: Option<&Cow<'_, str>>) -> usize {
    match s {
        Some(Cow::Owned(s)) => s.capacity(),
        _ => 0,
    }
}

impl Pending<'_> {
    /// What holding this call costs.
    fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + owned(self.span_id.as_ref())
            + owned(self.environment.as_ref())
            + owned(self.tenant.as_ref())
            + owned(self.agent.as_ref())
            + owned(self.catalog.as_ref())
            + owned(Some(&self.tool))
            + owned(self.tool_fingerprint.as_ref())
            + owned(self.error.as_ref())
            + owned(self.arguments.as_ref().and_then(Option::as_ref))
    }
}

/// Why a request was not read.
#[derive(Debug)]
pub(crate) enum Stop {
    /// Its calls would take more than [`Options::max_decoded_bytes`].
    TooLarge,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::TooLarge => f.write_str(TOO_LARGE),
        }
    }
}

const TOO_LARGE: &str = "the request's tool calls take more than the limit to hold";

/// One request's spans as they are read (either encoding): each span is
/// judged as it comes, its problems noted in a report of the request's
/// own and its call, if it is one, kept as [`Pending`]. Nothing reaches
/// the caller's aggregates and report until [`Sink::fold`].
pub(crate) struct Sink<'a, 'o> {
    at: &'o At<'o>,
    pub(crate) options: &'o Options,
    report: IngestReport,
    calls: Vec<Pending<'a>>,
    /// Bytes of `calls`.
    bytes: usize,
    /// Set when the calls passed [`Options::max_decoded_bytes`].
    pub(crate) stopped: Option<Stop>,
}

impl<'a, 'o> Sink<'a, 'o> {
    fn new(at: &'o At<'o>, options: &'o Options) -> Self {
        let mut report = IngestReport::new(options.examples);
        report.requests = 1;
        Self {
            at,
            options,
            report,
            calls: Vec::new(),
            bytes: 0,
            stopped: None,
        }
    }

    /// Judges one span: a tool call is kept for [`Sink::fold`], anything
    /// else counted. `Err` once the request holds too much.
    pub(crate) fn span(&mut self, span: SpanRead<'a>, resource: &Scope<'a>) -> Result<(), Stop> {
        self.report.spans_seen += 1;
        let at = self.at;
        let report = &mut self.report;
        let a = span.attrs;
        if !a.execute {
            report.spans_other += 1;
            return Ok(());
        }
        let span_id = span.span_id.as_deref().unwrap_or("?");
        let Some(tool) = a.tool.filter(|t| !t.is_empty()) else {
            report.spans_rejected += 1;
            report.note(Problem::MissingToolName, || {
                format!("{at}: span {span_id} has no gen_ai.tool.name")
            });
            return Ok(());
        };
        let (Some(start), Some(end)) = (span.start.filter(|&s| s > 0), span.end.filter(|&e| e > 0))
        else {
            report.spans_rejected += 1;
            report.note(Problem::MissingTime, || {
                format!("{at}: span {span_id} ({tool}) lacks a start or end time")
            });
            return Ok(());
        };
        if end < start {
            report.spans_rejected += 1;
            report.note(Problem::EndBeforeStart, || {
                format!(
                    "{at}: span {span_id} ({tool}) ends {} ns before it starts",
                    start - end
                )
            });
            return Ok(());
        }
        let options = self.options;
        let started = Timestamp::from_unix_nanos(start);
        if started > options.now.saturating_add(options.max_future) {
            report.spans_rejected += 1;
            report.note(Problem::FutureTimestamp, || {
                format!(
                    "{at}: span {span_id} ({tool}) starts {} s in the future",
                    started.saturating_duration_since(options.now).as_secs()
                )
            });
            return Ok(());
        }
        let catalog = a.catalog.as_deref().unwrap_or("");
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
        let error = a
            .error_type
            .filter(|e| !e.is_empty())
            .or_else(|| span.failed.then_some(Cow::Borrowed("error")));
        let call = Pending {
            span_id: span.span_id,
            start,
            end,
            environment: a
                .environment
                .or_else(|| resource.environment_name.clone())
                .or_else(|| resource.environment.clone()),
            tenant: a.tenant.or_else(|| resource.tenant.clone()),
            agent: a.agent.or_else(|| resource.service.clone()),
            catalog: a.catalog,
            tool,
            tool_fingerprint: a.tool_fingerprint,
            error,
            arguments: a.arguments,
        };
        self.bytes += call.bytes();
        self.calls.push(call);
        self.report.spans_used += 1;
        if self.bytes > options.max_decoded_bytes {
            self.stopped = Some(Stop::TooLarge);
            return Err(Stop::TooLarge);
        }
        Ok(())
    }

    /// Folds the request's calls into `aggregates` and returns its report.
    /// With `budget`, `Err` as soon as the calls and what `aggregates`
    /// gained pass it (the caller then drops `aggregates`).
    fn fold(
        self,
        aggregates: &mut Aggregates,
        budget: Option<usize>,
    ) -> Result<IngestReport, Stop> {
        let Sink {
            at,
            options,
            mut report,
            calls,
            bytes,
            ..
        } = self;
        let base = aggregates.bytes();
        for call in &calls {
            let span_id = call.span_id.as_deref().unwrap_or("?");
            let tool = call.tool.as_ref();
            let parsed = call.arguments.as_ref().map(|v| match v {
                Some(s) => serde_json::from_str::<Args<'_>>(s).map_err(|e| e.to_string()),
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
            aggregates.record_call(&Call {
                start_nanos: call.start,
                duration_nanos: call.end - call.start,
                environment: call.environment.as_deref().unwrap_or(&options.environment),
                tenant: call.tenant.as_deref().unwrap_or(""),
                agent: call.agent.as_deref().unwrap_or(""),
                catalog: call.catalog.as_deref().unwrap_or(""),
                tool,
                tool_fingerprint: call.tool_fingerprint.as_deref().unwrap_or(""),
                error: call.error.as_deref(),
                arguments: members,
            });
            if budget.is_some_and(|b| bytes + aggregates.bytes().saturating_sub(base) > b) {
                return Err(Stop::TooLarge);
            }
        }
        Ok(report)
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

/// One `ExportTraceServiceRequest` line (or pretty-printed document).
fn request(
    bytes: &[u8],
    at: &At<'_>,
    terminated: bool,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) {
    // Only an object is a request (an array would be read as the members
    // in order, were the readers derived).
    if bytes.first() != Some(&b'{') && serde_json::from_slice::<IgnoredAny>(bytes).is_ok() {
        report.note(Problem::WrongShape, || format!("{at}: not a JSON object"));
        return;
    }
    let mut sink = Sink::new(at, options);
    match decode_json(bytes, &mut sink) {
        Ok(()) => {
            // Without a budget, folding cannot stop.
            if let Ok(read) = sink.fold(aggregates, None) {
                report.merge(&read);
            }
        }
        Err(_) if sink.stopped.is_some() => {
            report.note(Problem::RequestTooLarge, || format!("{at}: {TOO_LARGE}"));
        }
        Err(e) => {
            let problem = if e.is_eof() && !terminated {
                Problem::TruncatedLine
            } else if e.is_data() {
                Problem::WrongShape
            } else {
                Problem::MalformedLine
            };
            report.note(problem, || format!("{at}: {e}"));
        }
    }
}

// The OTLP/JSON reader. A request is read member by member with the
// visitors below rather than into a tree of structs: each span is judged
// as soon as it has been read and then dropped, and attributes are folded
// into what is kept one at a time. What a request costs to read is then
// its calls ([`Pending`]), never its element count: `{"spans":[{},{},…]}`
// used to take a hundred bytes for each three it sent.

/// Reads `bytes`, a whole request, into `sink`.
fn decode_json<'a>(bytes: &'a [u8], sink: &mut Sink<'a, '_>) -> Result<(), serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    RequestSeed { sink }.deserialize(&mut de)?;
    de.end()
}

/// Skips a member's value.
fn skip<'de, A: MapAccess<'de>>(m: &mut A) -> Result<(), A::Error> {
    m.next_value::<IgnoredAny>().map(|_| ())
}

/// A JSON array read one element at a time by [`Each::next`].
struct List<'x, E>(&'x mut E);

trait Each<'de> {
    /// Reads the next element; `false` at the end.
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error>;
}

impl<'de, E: Each<'de>> DeserializeSeed<'de> for List<'_, E> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, E: Each<'de>> Visitor<'de> for List<'_, E> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while self.0.next(&mut seq)? {}
        Ok(())
    }
}

/// Attributes, each added to `T` as it is read.
struct Attrs<'x, 'o, T> {
    into: &'x mut T,
    options: &'o Options,
}

impl<'de> Each<'de> for Attrs<'_, '_, SpanAttrs<'de>> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        Ok(match seq.next_element::<KeyValue<'de>>()? {
            Some(kv) => {
                self.into.add(kv, self.options);
                true
            }
            None => false,
        })
    }
}

impl<'de> Each<'de> for Attrs<'_, '_, Scope<'de>> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        Ok(match seq.next_element::<KeyValue<'de>>()? {
            Some(kv) => {
                self.into.add(kv, self.options);
                true
            }
            None => false,
        })
    }
}

/// `ExportTraceServiceRequest`: `resourceSpans`.
struct RequestSeed<'x, 'de, 'o> {
    sink: &'x mut Sink<'de, 'o>,
}

impl<'de> DeserializeSeed<'de> for RequestSeed<'_, 'de, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_, 'de, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an ExportTraceServiceRequest object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = m.next_key::<Str<'de>>()? {
            if key.0 != "resourceSpans" {
                skip(&mut m)?;
                continue;
            }
            if std::mem::replace(&mut seen, true) {
                return Err(de::Error::duplicate_field("resourceSpans"));
            }
            m.next_value_seed(List(&mut EachResourceSpans { sink: self.sink }))?;
        }
        Ok(())
    }
}

struct EachResourceSpans<'x, 'de, 'o> {
    sink: &'x mut Sink<'de, 'o>,
}

impl<'de> Each<'de> for EachResourceSpans<'_, 'de, '_> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        seq.next_element_seed(ResourceSpansSeed { sink: self.sink })
            .map(|e| e.is_some())
    }
}

/// `ResourceSpans`: the resource is read first wherever it stands (its
/// attributes apply to every span), so the spans are kept as raw text
/// until the object ends and read then.
struct ResourceSpansSeed<'x, 'de, 'o> {
    sink: &'x mut Sink<'de, 'o>,
}

impl<'de> DeserializeSeed<'de> for ResourceSpansSeed<'_, 'de, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// `resource`, or `null`.
struct ResourceSeed<'x, 'de, 'o> {
    into: &'x mut Scope<'de>,
    options: &'o Options,
}

impl<'de> DeserializeSeed<'de> for ResourceSeed<'_, 'de, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ResourceSeed<'_, 'de, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a resource object")
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        while let Some(key) = m.next_key::<Str<'de>>()? {
            if key.0 == "attributes" {
                m.next_value_seed(List(&mut Attrs {
                    into: &mut *self.into,
                    options: self.options,
                }))?;
            } else {
                skip(&mut m)?;
            }
        }
        Ok(())
    }
}

impl<'de> Visitor<'de> for ResourceSpansSeed<'_, 'de, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a ResourceSpans object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let options = self.sink.options;
        let mut scope = Scope::default();
        let mut spans: Option<&'de serde_json::value::RawValue> = None;
        let mut resource = false;
        while let Some(key) = m.next_key::<Str<'de>>()? {
            match key.0.as_ref() {
                "resource" => {
                    if std::mem::replace(&mut resource, true) {
                        return Err(de::Error::duplicate_field("resource"));
                    }
                    m.next_value_seed(ResourceSeed {
                        into: &mut scope,
                        options,
                    })?;
                }
                // `instrumentationLibrarySpans` before OTLP 0.15.
                "scopeSpans" | "instrumentationLibrarySpans" => {
                    if spans.is_some() {
                        return Err(de::Error::duplicate_field("scopeSpans"));
                    }
                    spans = Some(m.next_value()?);
                }
                _ => skip(&mut m)?,
            }
        }
        let Some(spans) = spans else {
            return Ok(());
        };
        // The raw text was read whole once already: what can fail now is
        // the shape, or the sink's bound.
        let mut de = serde_json::Deserializer::from_str(spans.get());
        List(&mut EachScopeSpans {
            sink: self.sink,
            scope: &scope,
        })
        .deserialize(&mut de)
        .map_err(de::Error::custom)
    }
}

struct EachScopeSpans<'x, 'de, 'o> {
    sink: &'x mut Sink<'de, 'o>,
    scope: &'x Scope<'de>,
}

impl<'de> Each<'de> for EachScopeSpans<'_, 'de, '_> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        seq.next_element_seed(ScopeSpansSeed {
            sink: self.sink,
            scope: self.scope,
        })
        .map(|e| e.is_some())
    }
}

/// `ScopeSpans`: `spans`.
struct ScopeSpansSeed<'x, 'de, 'o> {
    sink: &'x mut Sink<'de, 'o>,
    scope: &'x Scope<'de>,
}

impl<'de> DeserializeSeed<'de> for ScopeSpansSeed<'_, 'de, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ScopeSpansSeed<'_, 'de, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a ScopeSpans object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        while let Some(key) = m.next_key::<Str<'de>>()? {
            if key.0 == "spans" {
                m.next_value_seed(List(&mut EachSpan {
                    sink: &mut *self.sink,
                    scope: self.scope,
                }))?;
            } else {
                skip(&mut m)?;
            }
        }
        Ok(())
    }
}

struct EachSpan<'x, 'de, 'o> {
    sink: &'x mut Sink<'de, 'o>,
    scope: &'x Scope<'de>,
}

impl<'de> Each<'de> for EachSpan<'_, 'de, '_> {
    fn next<A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<bool, A::Error> {
        let options = self.sink.options;
        let Some(span) = seq.next_element_seed(SpanSeed { options })? else {
            return Ok(false);
        };
        self.sink
            .span(span, self.scope)
            .map_err(de::Error::custom)?;
        Ok(true)
    }
}

/// `Span`: the members read ([`SpanRead`]); the rest is skipped.
struct SpanSeed<'o> {
    options: &'o Options,
}

impl<'de> DeserializeSeed<'de> for SpanSeed<'_> {
    type Value = SpanRead<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<SpanRead<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SpanSeed<'_> {
    type Value = SpanRead<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Span object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<SpanRead<'de>, A::Error> {
        let mut span = SpanRead {
            span_id: None,
            attrs: SpanAttrs::default(),
            start: None,
            end: None,
            failed: false,
        };
        while let Some(key) = m.next_key::<Str<'de>>()? {
            match key.0.as_ref() {
                "spanId" => span.span_id = m.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                "attributes" => m.next_value_seed(List(&mut Attrs {
                    into: &mut span.attrs,
                    options: self.options,
                }))?,
                "startTimeUnixNano" => {
                    span.start = m.next_value::<Option<Nanos>>()?.and_then(|n| n.0)
                }
                "endTimeUnixNano" => span.end = m.next_value::<Option<Nanos>>()?.and_then(|n| n.0),
                "status" => {
                    span.failed = m
                        .next_value::<Option<Status>>()?
                        .and_then(|s| s.code)
                        .is_some_and(|c| c.0)
                }
                _ => skip(&mut m)?,
            }
        }
        Ok(span)
    }
}

/// How an OTLP/HTTP export body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json`: OTLP/JSON.
    Json,
    /// `application/x-protobuf`.
    Protobuf,
}

/// Why an export body was not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// Not a request at all (the reason).
    Malformed(String),
    /// Its tool calls, or the aggregates they add, would take more than
    /// [`Options::max_decoded_bytes`].
    TooLarge,
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::Malformed(why) => f.write_str(why),
            BodyError::TooLarge => f.write_str(TOO_LARGE),
        }
    }
}

/// Reads one OTLP/HTTP export body (a whole `ExportTraceServiceRequest`)
/// by the same rules as span files, into aggregates of its own. What
/// reading it takes is bounded by the body and `options`: spans are read
/// one at a time and never collected, and its tool calls with the
/// aggregates they make may take at most `options.max_decoded_bytes`.
/// Spans left out are counted in `report` and the body is still `Ok`; a
/// body that is not a request, or too large once decoded, is `Err` (also
/// noted in `report`), and nothing of it is kept.
pub fn read_body(
    body: &[u8],
    encoding: Encoding,
    name: &str,
    options: &Options,
    report: &mut IngestReport,
) -> Result<Aggregates, BodyError> {
    let at = At {
        input: name,
        line: 1,
    };
    let mut sink = Sink::new(&at, options);
    let decoded = match encoding {
        Encoding::Json => {
            if body.trim_ascii_start().first() != Some(&b'{') {
                Err("not a JSON object".to_string())
            } else {
                decode_json(body, &mut sink).map_err(|e| e.to_string())
            }
        }
        Encoding::Protobuf => crate::proto::decode(body, &mut sink).map_err(|e| e.0),
    };
    let too_large = |report: &mut IngestReport| {
        report.note(Problem::RequestTooLarge, || format!("{at}: {TOO_LARGE}"));
        Err(BodyError::TooLarge)
    };
    if sink.stopped.is_some() {
        return too_large(report);
    }
    if let Err(e) = decoded {
        report.note(Problem::MalformedLine, || format!("{at}: {e}"));
        return Err(BodyError::Malformed(e));
    }
    let mut aggregates = Aggregates::new(options.limits);
    match sink.fold(&mut aggregates, Some(options.max_decoded_bytes)) {
        Ok(read) => {
            report.merge(&read);
            Ok(aggregates)
        }
        Err(_) => too_large(report),
    }
}
