//! `ingest`: inputs in, aggregates and a report of what was read out.
//! Every line, span and event is accounted for: used, not a tool call, or
//! a counted problem with an example. Nothing panics on bad input.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

use toolpin_manifest::time::{self, Timestamp};

use crate::aggregate::{Aggregates, Limits};
use crate::lines::Lines;

/// What an input holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OTLP/JSON trace requests, one per line as the Collector's `file`
    /// exporter writes them (or one pretty-printed request).
    OtlpJson,
    /// The proxy's JSON-lines event log.
    Events,
}

/// One input: a name for the report's examples, its format and a reader.
pub struct Input<'a> {
    pub name: String,
    pub format: Format,
    pub reader: Box<dyn BufRead + 'a>,
}

impl<'a> Input<'a> {
    pub fn new(name: impl Into<String>, format: Format, reader: impl BufRead + 'a) -> Self {
        Self {
            name: name.into(),
            format,
            reader: Box::new(reader),
        }
    }

    /// Opens a file. Reading is buffered; the file is never loaded whole.
    pub fn file(path: &Path, format: Format) -> std::io::Result<Input<'static>> {
        let file = std::fs::File::open(path)?;
        Ok(Input {
            name: path.display().to_string(),
            format,
            reader: Box::new(std::io::BufReader::with_capacity(1 << 16, file)),
        })
    }
}

/// How to read.
#[derive(Clone, Debug)]
pub struct Options {
    /// The span or resource attribute naming the tenant.
    pub tenant_key: String,
    /// The environment of inputs that do not say (the proxy's event log
    /// never does; spans without `deployment.environment[.name]`).
    pub environment: String,
    /// "Now": spans and events later than `now + max_future` are clock
    /// errors, not calls.
    pub now: Timestamp,
    pub max_future: Duration,
    /// The catalog fingerprints known to the caller (the ledger's, later).
    /// When given, calls naming another one are still counted but
    /// reported as `unknown-fingerprint`.
    pub known_catalogs: Option<HashSet<String>>,
    pub limits: Limits,
    /// Longest line read, in bytes (a Collector line holds one export
    /// batch); longer lines are reported, not read.
    pub max_line_bytes: usize,
    /// Longest pretty-printed request read, in bytes.
    pub max_document_bytes: usize,
    /// Most bytes one request may take once decoded: its tool calls while
    /// it is read, and (for an export body, `read_body`) the aggregates
    /// they make. Past it the request is left out as `request-too-large`.
    /// Spans that are not tool calls cost nothing to hold whatever their
    /// number. Unlimited by default; `usage serve` bounds it by its body
    /// limit.
    pub max_decoded_bytes: usize,
    /// Examples kept per kind of problem.
    pub examples: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            tenant_key: toolpin_manifest::wire::resource::TENANT_ID.into(),
            environment: String::new(),
            now: Timestamp::now(),
            max_future: time::HOUR,
            known_catalogs: None,
            limits: Limits::default(),
            max_line_bytes: 64 << 20,
            max_document_bytes: 256 << 20,
            max_decoded_bytes: usize::MAX,
            examples: 5,
        }
    }
}

/// Kinds of bad input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Problem {
    /// A line that is not JSON.
    MalformedLine,
    /// A last line without a newline that is incomplete JSON: the writer
    /// was cut off.
    TruncatedLine,
    /// A line (or pretty-printed request) longer than the limit.
    LineTooLong,
    /// A request whose tool calls would take more than
    /// [`Options::max_decoded_bytes`] to hold.
    RequestTooLarge,
    /// JSON, but not an OTLP trace request (or, in an event log, not an
    /// event object).
    WrongShape,
    /// An `execute_tool` span without `gen_ai.tool.name`.
    MissingToolName,
    /// A span without a start or end time, or an event without `time`.
    MissingTime,
    /// A span that ends before it starts (clock skew between hosts).
    EndBeforeStart,
    /// A span or event later than `now + max_future`.
    FutureTimestamp,
    /// `gen_ai.tool.call.arguments` that is not a JSON object: the call is
    /// counted, its arguments are not.
    BadArguments,
    /// A call without `toolpin.catalog.fingerprint` (counted under `""`).
    MissingFingerprint,
    /// A call whose catalog fingerprint is not among the known ones
    /// (counted under it).
    UnknownFingerprint,
    /// An event without `event`.
    MissingEventName,
    /// An event whose `time` is not RFC 3339.
    BadTime,
    /// The input could not be read further.
    ReadError,
}

impl Problem {
    pub fn name(self) -> &'static str {
        match self {
            Problem::MalformedLine => "malformed-line",
            Problem::TruncatedLine => "truncated-line",
            Problem::LineTooLong => "line-too-long",
            Problem::RequestTooLarge => "request-too-large",
            Problem::WrongShape => "wrong-shape",
            Problem::MissingToolName => "missing-tool-name",
            Problem::MissingTime => "missing-time",
            Problem::EndBeforeStart => "end-before-start",
            Problem::FutureTimestamp => "future-timestamp",
            Problem::BadArguments => "bad-arguments",
            Problem::MissingFingerprint => "missing-fingerprint",
            Problem::UnknownFingerprint => "unknown-fingerprint",
            Problem::MissingEventName => "missing-event-name",
            Problem::BadTime => "bad-time",
            Problem::ReadError => "read-error",
        }
    }

    /// Whether the span, event or line was left out of the aggregates
    /// (the others are counted, with a remark).
    pub fn rejects(self) -> bool {
        !matches!(
            self,
            Problem::BadArguments | Problem::MissingFingerprint | Problem::UnknownFingerprint
        )
    }
}

/// How often one problem occurred, with the first few examples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Occurrences {
    pub count: u64,
    pub examples: Vec<String>,
}

/// What ingesting read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestReport {
    pub inputs: u64,
    /// Lines read over all inputs, blank ones included.
    pub lines: u64,
    pub blank_lines: u64,
    /// OTLP requests parsed.
    pub requests: u64,
    /// Spans parsed, of any kind.
    pub spans_seen: u64,
    /// Spans that are not tool executions (other operations).
    pub spans_other: u64,
    /// Tool-execution spans counted in the aggregates.
    pub spans_used: u64,
    /// Tool-execution spans left out, each under a rejecting problem.
    pub spans_rejected: u64,
    pub events_seen: u64,
    pub events_used: u64,
    pub events_rejected: u64,
    /// Events by name, as seen (the proxy's log also carries kinds this
    /// version does not know).
    pub event_kinds: BTreeMap<String, u64>,
    pub problems: BTreeMap<Problem, Occurrences>,
    /// Examples kept per problem.
    pub max_examples: usize,
}

impl IngestReport {
    pub fn new(max_examples: usize) -> Self {
        Self {
            max_examples,
            ..Self::default()
        }
    }

    /// Counts one problem; `example` is only built while examples are
    /// still wanted (it formats, and bad input can be most of a file).
    pub fn note(&mut self, problem: Problem, example: impl FnOnce() -> String) {
        let max = self.max_examples;
        let o = self.problems.entry(problem).or_default();
        o.count += 1;
        if o.examples.len() < max {
            o.examples.push(capped(example()));
        }
    }

    pub fn count(&self, problem: Problem) -> u64 {
        self.problems.get(&problem).map_or(0, |o| o.count)
    }

    pub fn merge(&mut self, other: &IngestReport) {
        self.inputs += other.inputs;
        self.lines += other.lines;
        self.blank_lines += other.blank_lines;
        self.requests += other.requests;
        self.spans_seen += other.spans_seen;
        self.spans_other += other.spans_other;
        self.spans_used += other.spans_used;
        self.spans_rejected += other.spans_rejected;
        self.events_seen += other.events_seen;
        self.events_used += other.events_used;
        self.events_rejected += other.events_rejected;
        for (k, n) in &other.event_kinds {
            *self.event_kinds.entry(k.clone()).or_insert(0) += n;
        }
        let max = self.max_examples.max(other.max_examples);
        self.max_examples = max;
        for (p, o) in &other.problems {
            let mine = self.problems.entry(*p).or_default();
            mine.count += o.count;
            for e in &o.examples {
                if mine.examples.len() < max {
                    mine.examples.push(e.clone());
                }
            }
        }
    }
}

impl fmt::Display for IngestReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} inputs, {} lines ({} blank), {} requests",
            self.inputs, self.lines, self.blank_lines, self.requests
        )?;
        writeln!(
            f,
            "spans: {} seen, {} tool calls used, {} rejected, {} other operations",
            self.spans_seen, self.spans_used, self.spans_rejected, self.spans_other
        )?;
        writeln!(
            f,
            "events: {} seen, {} used, {} rejected",
            self.events_seen, self.events_used, self.events_rejected
        )?;
        for (p, o) in &self.problems {
            let effect = if p.rejects() { "left out" } else { "counted" };
            writeln!(f, "{}: {} ({effect})", p.name(), o.count)?;
            for e in &o.examples {
                writeln!(f, "  {e}")?;
            }
        }
        Ok(())
    }
}

/// Longest example kept, in bytes: an example quotes a tool name or a
/// parser message, and one absurd name must not make the report huge.
pub const MAX_EXAMPLE: usize = 300;

fn capped(mut s: String) -> String {
    if s.len() > MAX_EXAMPLE {
        let mut end = MAX_EXAMPLE;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("...");
    }
    s
}

/// Reads every input into one set of aggregates.
pub fn ingest<'a>(
    inputs: impl IntoIterator<Item = Input<'a>>,
    options: &Options,
) -> (Aggregates, IngestReport) {
    let mut aggregates = Aggregates::new(options.limits);
    let mut report = IngestReport::new(options.examples);
    for input in inputs {
        ingest_one(input, options, &mut aggregates, &mut report);
    }
    (aggregates, report)
}

/// Reads one input into existing aggregates and report.
pub fn ingest_one(
    input: Input<'_>,
    options: &Options,
    aggregates: &mut Aggregates,
    report: &mut IngestReport,
) {
    report.inputs += 1;
    let mut lines = Lines::new(input.reader, options.max_line_bytes);
    let result = match input.format {
        Format::OtlpJson => crate::span::read(&mut lines, &input.name, options, aggregates, report),
        Format::Events => crate::events::read(&mut lines, &input.name, options, aggregates, report),
    };
    if let Err(e) = result {
        let name = &input.name;
        report.note(Problem::ReadError, || format!("{name}: {e}"));
    }
}
