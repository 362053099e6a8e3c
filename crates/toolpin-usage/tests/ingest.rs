//! Ingesting OTLP/JSON span files and the proxy's event log, with the
//! fixtures written here as the Collector's file exporter and the proxy
//! write them: exact aggregates, every bad input counted, shards merged.

use std::io::{self, BufRead, Read};

use serde_json::{json, Value};
use toolpin_usage::{
    ingest, Aggregates, EventKey, Format, IngestReport, Input, Key, Limits, Options, Problem,
    Timestamp,
};

/// 2026-12-03T14:00:00Z, in unix seconds.
const T0: u64 = 1_796_306_400;
const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
const HOUR: u64 = T0 / 3_600;

fn options() -> Options {
    Options {
        now: Timestamp::from_unix_nanos((T0 + 86_400) * S),
        ..Options::default()
    }
}

fn s(k: &str, v: &str) -> Value {
    json!({"key": k, "value": {"stringValue": v}})
}

/// OTLP/JSON writes 64-bit integers as strings.
fn i(k: &str, v: &str) -> Value {
    json!({"key": k, "value": {"intValue": v}})
}

fn span(id: &str, attrs: Vec<Value>, start: u64, end: u64, status: Value) -> Value {
    json!({
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": id,
        "parentSpanId": "eee19b7ec3c1b173",
        "name": "execute_tool",
        "kind": 3,
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": end.to_string(),
        "attributes": attrs,
        "events": [{"timeUnixNano": start.to_string(), "name": "x", "attributes": [i("n", "1")]}],
        "status": status,
    })
}

fn call(id: &str, tool: &str, catalog: &str, extra: Vec<Value>, start: u64, ms: u64) -> Value {
    let mut attrs = vec![
        s("gen_ai.operation.name", "execute_tool"),
        s("gen_ai.tool.name", tool),
        s("toolpin.catalog.fingerprint", catalog),
        s("toolpin.tool.fingerprint", &format!("fp-{tool}")),
    ];
    attrs.extend(extra);
    span(id, attrs, start, start + ms * MS, json!({}))
}

fn resource(attrs: Vec<Value>, spans: Vec<Value>) -> Value {
    json!({
        "resource": {"attributes": attrs, "droppedAttributesCount": 0},
        "scopeSpans": [{
            "scope": {"name": "agent-sdk", "version": "1.2.0"},
            "spans": spans,
        }],
        "schemaUrl": "https://opentelemetry.io/schemas/1.26.0",
    })
}

fn request(resources: Vec<Value>) -> String {
    json!({ "resourceSpans": resources }).to_string()
}

fn key(hour: u64, env: &str, tenant: &str, agent: &str, catalog: &str, tool: &str) -> Key {
    Key {
        hour,
        environment: env.into(),
        tenant: tenant.into(),
        agent: agent.into(),
        catalog: catalog.into(),
        tool: tool.into(),
    }
}

fn run(format: Format, text: &str, options: &Options) -> (Aggregates, IngestReport) {
    ingest(
        [Input::new(
            "input",
            format,
            io::Cursor::new(text.to_string()),
        )],
        options,
    )
}

/// The first request: two resources, tool calls and a chat span.
fn first_request() -> String {
    let t = T0 * S;
    request(vec![
        resource(
            vec![
                s("service.name", "support-bot"),
                s("deployment.environment.name", "prod"),
                i("tenant.id", "42"),
            ],
            vec![
                call(
                    "s1",
                    "refund",
                    "cat1",
                    vec![s(
                        "gen_ai.tool.call.arguments",
                        r#"{"reason":"damaged","amount":12,"note":null}"#,
                    )],
                    t + 10 * S,
                    100,
                ),
                call(
                    "s2",
                    "refund",
                    "cat1",
                    vec![
                        s("error.type", "timeout"),
                        s("gen_ai.tool.call.arguments", r#"{"reason":"late"}"#),
                    ],
                    t + 20 * S,
                    300,
                ),
                span(
                    "s3",
                    vec![s("gen_ai.operation.name", "chat")],
                    t,
                    t + S,
                    json!({}),
                ),
            ],
        ),
        resource(
            vec![
                s("service.name", "batch"),
                s("deployment.environment", "staging"),
            ],
            vec![
                span(
                    "s4",
                    vec![
                        s("mcp.method.name", "tools/call"),
                        s("gen_ai.tool.name", "lookup"),
                        s("gen_ai.agent.name", "planner"),
                        s("toolpin.catalog.fingerprint", "cat1"),
                    ],
                    t + 30 * S,
                    t + 30 * S + 7 * MS,
                    json!({"code": 2, "message": "upstream said no"}),
                ),
                span(
                    "s5",
                    vec![s("gen_ai.operation.name", "execute_tool")],
                    t,
                    t + MS,
                    json!({}),
                ),
            ],
        ),
    ])
}

/// The second request: clock skew, the future, missing times, and a call
/// without a catalog whose arguments are not JSON.
fn second_request() -> String {
    let t = T0 * S;
    let mut missing = call("s8", "refund", "cat1", vec![], t, 1);
    missing["startTimeUnixNano"] = json!(null);
    request(vec![resource(
        vec![s("service.name", "support-bot")],
        vec![
            call("s6", "refund", "cat1", vec![], t + 5 * S, 0),
            call("s7", "refund", "cat1", vec![], t + 30 * 86_400 * S, 5),
            missing,
            {
                let mut c = call(
                    "s9",
                    "refund",
                    "",
                    vec![
                        json!({"key": "tenant.id", "value": {"intValue": 7}}),
                        s("gen_ai.tool.call.arguments", "{not json"),
                    ],
                    t + 3_700 * S,
                    50,
                );
                c["attributes"]
                    .as_array_mut()
                    .expect("attributes")
                    .retain(|a| a["key"] != "toolpin.catalog.fingerprint");
                c
            },
        ],
    )])
}

fn skewed(mut text: String) -> String {
    // s6 ends a second before it starts: move its end back.
    let start = (T0 + 5) * S;
    text = text.replace(
        &format!("\"endTimeUnixNano\":\"{start}\""),
        &format!("\"endTimeUnixNano\":\"{}\"", start - S),
    );
    text
}

#[test]
fn collector_lines_give_exact_aggregates_and_every_problem_is_counted() {
    let first = first_request();
    let truncated = &first[..first.len() / 2];
    let text = format!(
        "{first}\nnot json at all\n\n{{\"resourceSpans\": 5}}\n{}\n{truncated}",
        skewed(second_request())
    );
    let (agg, report) = run(Format::OtlpJson, &text, &options());

    assert_eq!(report.lines, 6);
    assert_eq!(report.blank_lines, 1);
    assert_eq!(report.requests, 2);
    assert_eq!(report.spans_seen, 9);
    assert_eq!(report.spans_other, 1);
    assert_eq!(report.spans_used, 4);
    assert_eq!(report.spans_rejected, 4);
    assert_eq!(
        report.spans_seen,
        report.spans_other + report.spans_used + report.spans_rejected
    );
    let counts: Vec<(Problem, u64)> = report.problems.iter().map(|(p, o)| (*p, o.count)).collect();
    assert_eq!(
        counts,
        vec![
            (Problem::MalformedLine, 1),
            (Problem::TruncatedLine, 1),
            (Problem::WrongShape, 1),
            (Problem::MissingToolName, 1),
            (Problem::MissingTime, 1),
            (Problem::EndBeforeStart, 1),
            (Problem::FutureTimestamp, 1),
            (Problem::BadArguments, 1),
            (Problem::MissingFingerprint, 1),
        ]
    );
    let example = |p| report.problems[&p].examples[0].clone();
    assert!(
        example(Problem::MalformedLine).starts_with("input:2: "),
        "{report}"
    );
    assert!(example(Problem::TruncatedLine).starts_with("input:6: "));
    assert!(example(Problem::WrongShape).starts_with("input:4: "));
    assert_eq!(
        example(Problem::EndBeforeStart),
        "input:5: span s6 (refund) ends 1000000000 ns before it starts"
    );
    assert_eq!(
        example(Problem::MissingToolName),
        "input:1: span s5 has no gen_ai.tool.name"
    );
    assert!(example(Problem::FutureTimestamp).contains("span s7 (refund) starts 2505600 s"));

    assert_eq!(agg.len(), 3);
    assert_eq!(agg.total_calls(), 4);
    let refund = agg
        .get(&key(HOUR, "prod", "42", "support-bot", "cat1", "refund"))
        .expect("refund in prod");
    assert_eq!(refund.calls, 2);
    assert_eq!(refund.errors_total(), 1);
    assert_eq!(refund.errors["timeout"], 1);
    assert_eq!(refund.with_arguments, 2);
    assert_eq!(refund.params["reason"].supplied, 2);
    assert_eq!(refund.params["reason"].values["damaged"], 1);
    assert_eq!(refund.params["reason"].values["late"], 1);
    assert_eq!(refund.params["amount"].supplied, 1);
    assert_eq!(refund.params["amount"].non_string, 1);
    assert!(refund.params["amount"].values.is_empty());
    assert!(!refund.params.contains_key("note"), "null is not supplied");
    assert_eq!(refund.tool_fingerprints["fp-refund"], 2);
    assert_eq!(refund.latency.min(), Some(100 * MS));
    assert_eq!(refund.latency.max(), Some(300 * MS));
    let p50 = refund.latency.p50().unwrap_or(0);
    assert!(p50.abs_diff(100 * MS) * 100 < 100 * MS, "{p50}");
    assert_eq!(refund.latency.p99(), Some(300 * MS));

    let lookup = agg
        .get(&key(HOUR, "staging", "", "planner", "cat1", "lookup"))
        .expect("lookup: agent from gen_ai.agent.name, old environment key");
    assert_eq!(lookup.calls, 1);
    assert_eq!(lookup.errors["error"], 1);
    assert_eq!(lookup.with_arguments, 0);
    assert_eq!(lookup.tool_fingerprints[""], 1);

    let later = agg
        .get(&key(HOUR + 1, "", "7", "support-bot", "", "refund"))
        .expect("the next hour, tenant from a numeric intValue, no catalog");
    assert_eq!(later.calls, 1);
    assert_eq!(
        later.with_arguments, 0,
        "unreadable arguments are not counted"
    );
    assert!(later.errors.is_empty());
}

#[test]
fn a_pretty_printed_request_reads_like_one_line() {
    let first = first_request();
    let value: Value = serde_json::from_str(&first).expect("json");
    let pretty = serde_json::to_string_pretty(&value).expect("pretty");
    assert!(pretty.lines().count() > 50);
    let (one_line, r1) = run(Format::OtlpJson, &first, &options());
    let (pretty_agg, r2) = run(Format::OtlpJson, &pretty, &options());
    assert_eq!(one_line, pretty_agg);
    assert_eq!(r2.requests, 1);
    assert_eq!(r2.spans_used, r1.spans_used);
    assert_eq!(r2.problems, r1.problems);

    // Two pretty-printed requests, one after the other, and a cut-off one.
    let cut = &pretty[..pretty.len() - 40];
    let (agg, r) = run(
        Format::OtlpJson,
        &format!("{pretty}\n{pretty}\n{cut}"),
        &options(),
    );
    assert_eq!(r.requests, 2);
    assert_eq!(agg.total_calls(), 2 * one_line.total_calls());
    assert_eq!(r.count(Problem::TruncatedLine), 1, "{r}");
}

#[test]
fn the_proxys_event_log_is_counted_by_kind() {
    let now = options();
    let lines = [
        r#"{"time":"2026-12-03T14:05:00.001Z","event":"refused","rule":"runtime.unknown-tool","tool":"nope","message":"unknown tool","catalog":"cat1"}"#,
        r#"{"time":"2026-12-03T14:06:00.000Z","event":"refused","rule":"runtime.unknown-tool","tool":"nope","message":"again","catalog":"cat1"}"#,
        r#"{"time":"2026-12-03T14:07:00.000Z","event":"drift","server":"orders","tool":"refund","rule":"schema.enum-removed","severity":"breaking","kind":"breaking","pointer":"/x","message":"m","catalog":"cat1"}"#,
        r#"{"time":"2026-12-03T15:00:00.000Z","event":"finding","rule":"result.unknown-enum-value","where":"arguments","server":"orders","tool":"refund","pointer":"/r","message":"m","catalog":"cat1"}"#,
        r#"{"time":"2026-12-03T15:01:00.000Z","event":"refused-host","host":null,"origin":"http://evil"}"#,
        r#"{"time":"2026-12-03T15:02:00.000Z","event":"upstream-closed","server":"orders","reason":"exit","in_flight":3}"#,
        r#"{"time":"2026-12-03T15:03:00.000Z","event":"from-the-future-version","tool":5}"#,
        "",
        "garbage",
        r#"{"event":"drift"}"#,
        r#"{"time":"yesterday","event":"drift"}"#,
        r#"{"time":"2027-12-03T15:03:00.000Z","event":"drift"}"#,
        r#"{"time":"2026-12-03T15:04:00.000Z"}"#,
        r#"[1,2]"#,
        r#"{"time":"2026-12-03T15:05:00.000Z","event":"tool-withdrawn","tool":"refund","reason":"r"}"#,
        r#"{"time":"2026-12-03T15:06:00.000Z","event":"refu"#,
    ];
    let (agg, report) = run(Format::Events, &lines.join("\n"), &now);
    assert_eq!(report.lines, 16);
    assert_eq!(report.blank_lines, 1);
    assert_eq!(report.events_seen, 12);
    assert_eq!(report.events_used, 8);
    assert_eq!(report.events_rejected, 4);
    for (p, n) in [
        (Problem::MalformedLine, 1),
        (Problem::TruncatedLine, 1),
        (Problem::WrongShape, 1),
        (Problem::MissingTime, 1),
        (Problem::BadTime, 1),
        (Problem::FutureTimestamp, 1),
        (Problem::MissingEventName, 1),
    ] {
        assert_eq!(report.count(p), n, "{p:?}: {report}");
    }
    assert_eq!(report.event_kinds["drift"], 4);
    assert_eq!(report.event_kinds["from-the-future-version"], 1);

    let ev = |hour, event: &str, server: &str, tool: &str, rule: &str, catalog: &str| EventKey {
        hour,
        environment: String::new(),
        event: event.into(),
        server: server.into(),
        tool: tool.into(),
        rule: rule.into(),
        catalog: catalog.into(),
    };
    let events = agg.events();
    assert_eq!(events.len(), 7);
    assert_eq!(
        events[&ev(HOUR, "refused", "", "nope", "runtime.unknown-tool", "cat1")],
        2
    );
    assert_eq!(
        events[&ev(
            HOUR,
            "drift",
            "orders",
            "refund",
            "schema.enum-removed",
            "cat1"
        )],
        1
    );
    assert_eq!(
        events[&ev(
            HOUR + 1,
            "finding",
            "orders",
            "refund",
            "result.unknown-enum-value",
            "cat1"
        )],
        1
    );
    assert_eq!(events[&ev(HOUR + 1, "refused-host", "", "", "", "")], 1);
    assert_eq!(
        events[&ev(HOUR + 1, "from-the-future-version", "", "5", "", "")],
        1
    );
    assert_eq!(agg.total_calls(), 0, "the proxy logs no event per call");
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// `lines` requests of up to 20 spans each, over a few keys and hours,
/// with some bad spans and garbage lines among them.
fn random_lines(seed: u64, lines: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    for n in 0..lines {
        if n % 17 == 5 {
            out.push("{\"resourceSpans\": [".to_string());
            continue;
        }
        let mut spans = Vec::new();
        for _ in 0..rng.next() % 20 {
            let tool = rng.pick(&["refund", "lookup", "cancel"]);
            let catalog = rng.pick(&["cat1", "cat2"]);
            let start = T0 * S + rng.next() % (3 * 3_600 * S);
            let ms = rng.next() % 5_000;
            let mut args = json!({
                "reason": rng.pick(&["damaged", "late", "wrong", "other"]),
                "amount": rng.next() % 100,
            });
            args[rng.pick(&["note", "memo"])] = json!("free text");
            let mut extra = vec![s("gen_ai.tool.call.arguments", &args.to_string())];
            if rng.next() % 5 == 0 {
                extra.push(s("error.type", rng.pick(&["timeout", "upstream"])));
            }
            if rng.next() % 11 == 0 {
                extra.push(i("tenant.id", rng.pick(&["1", "2"])));
            }
            let mut c = call("id", tool, catalog, extra, start, ms);
            if rng.next() % 13 == 0 {
                c["endTimeUnixNano"] = json!((start - 1).to_string());
            }
            spans.push(c);
        }
        let env = rng.pick(&["prod", "staging"]);
        out.push(request(vec![
            resource(
                vec![
                    s("service.name", rng.pick(&["a", "b"])),
                    s("deployment.environment.name", env),
                ],
                spans,
            ),
            resource(vec![], vec![]),
        ]));
    }
    out
}

#[test]
fn merging_shards_equals_ingesting_everything_at_once() {
    let options = options();
    for seed in [1, 7, 42, 1234] {
        let lines = random_lines(seed, 120);
        // Every line ends with a newline, so that no shard ends in a
        // line that reads as cut off.
        let whole = lines.join("\n") + "\n";
        let (all, all_report) = run(Format::OtlpJson, &whole, &options);
        assert!(all.total_calls() > 500, "{}", all.total_calls());
        assert!(all_report.count(Problem::EndBeforeStart) > 0);

        // As separate inputs in one call, and as shards merged afterwards.
        let shards: Vec<String> = (0..4)
            .map(|k| {
                lines
                    .iter()
                    .skip(k)
                    .step_by(4)
                    .cloned()
                    .map(|l| l + "\n")
                    .collect::<String>()
            })
            .collect();
        let (together, _) = ingest(
            shards.iter().enumerate().map(|(k, t)| {
                Input::new(
                    format!("shard{k}"),
                    Format::OtlpJson,
                    io::Cursor::new(t.clone()),
                )
            }),
            &options,
        );
        assert_eq!(together, all);
        let mut merged = Aggregates::new(options.limits);
        let mut report = IngestReport::new(options.examples);
        for shard in shards.iter().rev() {
            let (a, r) = run(Format::OtlpJson, shard, &options);
            merged.merge(&a);
            report.merge(&r);
        }
        assert_eq!(merged, all, "seed {seed}");
        assert_eq!(report.spans_used, all_report.spans_used);
        assert_eq!(report.spans_rejected, all_report.spans_rejected);
        for (p, o) in &all_report.problems {
            assert_eq!(report.count(*p), o.count, "{p:?}");
        }
    }
}

#[test]
fn tables_stop_growing_at_their_caps() {
    let limits = Limits {
        values_per_param: 3,
        value_len: 8,
        params: 2,
        fingerprints: 1,
        ..Limits::default()
    };
    let options = Options {
        limits,
        ..options()
    };
    let mut spans = Vec::new();
    for n in 0..50u64 {
        let args = json!({"a": format!("v{}", n % 5), "b": "x".repeat(9), "c": 1});
        spans.push(call(
            &format!("s{n}"),
            "refund",
            "cat1",
            vec![
                s("gen_ai.tool.call.arguments", &args.to_string()),
                s("toolpin.tool.fingerprint", &format!("fp{}", n % 2)),
            ],
            T0 * S + n,
            1,
        ));
    }
    let line = request(vec![resource(vec![], spans)]);
    let (agg, report) = run(Format::OtlpJson, &line, &options);
    assert_eq!(report.spans_used, 50);
    let (_, stats) = agg.calls()[0];
    assert_eq!(stats.params.len(), 2);
    assert_eq!(stats.params_over_cap, 50, "c was never tracked");
    let a = &stats.params["a"];
    assert_eq!(a.values.len(), 3);
    assert_eq!(a.values.values().sum::<u64>() + a.other_values, 50);
    assert_eq!(stats.params["b"].other_values, 50, "too long to be an enum");
    assert_eq!(stats.tool_fingerprints.len(), 1);
    assert_eq!(stats.fingerprints_other, 25);
}

#[test]
fn overlong_lines_and_read_errors_are_reported_not_fatal() {
    let options = Options {
        max_line_bytes: 64,
        ..options()
    };
    let text = format!("{}\n{{}}\n", first_request());
    let (_, report) = run(Format::OtlpJson, &text, &options);
    assert_eq!(report.count(Problem::LineTooLong), 1);

    // An absurd tool name is not quoted whole in the report.
    let huge = "é".repeat(100_000);
    let mut c = call("s1", &huge, "cat1", vec![], T0 * S + 1, 1);
    c["endTimeUnixNano"] = json!((T0 * S).to_string());
    let (_, r) = run(
        Format::OtlpJson,
        &request(vec![resource(vec![], vec![c])]),
        &Options::default(),
    );
    let example = &r.problems[&Problem::EndBeforeStart].examples[0];
    assert!(
        example.len() <= 303 && example.ends_with("..."),
        "{}",
        example.len()
    );
    assert_eq!(report.requests, 1, "{{}} is an empty request");

    /// Fails after its first line.
    struct Failing(bool);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 {
                return Err(io::Error::other("disk on fire"));
            }
            self.0 = true;
            let line = b"{}\n";
            buf[..line.len()].copy_from_slice(line);
            Ok(line.len())
        }
    }
    let reader: Box<dyn BufRead> = Box::new(io::BufReader::new(Failing(false)));
    let (_, report) = ingest(
        [Input {
            name: "broken".into(),
            format: Format::OtlpJson,
            reader,
        }],
        &Options::default(),
    );
    assert_eq!(report.requests, 1);
    assert_eq!(
        report.problems[&Problem::ReadError].examples,
        vec!["broken: disk on fire".to_string()]
    );
}

#[test]
fn files_are_read_from_disk() {
    let dir = std::env::temp_dir().join(format!("toolpin-usage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("traces.jsonl");
    std::fs::write(&path, format!("{}\n", first_request())).expect("write");
    let input = Input::file(&path, Format::OtlpJson).expect("open");
    let (agg, report) = ingest([input], &options());
    assert_eq!(report.spans_used, 3);
    assert_eq!(agg.total_calls(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}
