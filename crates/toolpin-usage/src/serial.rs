//! A key's statistics as stored: compact JSON with a version member, so
//! that a store written by one build is read, or refused with a reason, by
//! another. The latency sketch is stored sparse (offset and count of each
//! used bucket): a tool's calls spread over a few hundred buckets, most of
//! them empty. Decoding reads into borrowing structs (no JSON tree), checks
//! everything (the sketch's parts, every count's type) and never panics: a
//! row that does not decode is an error the store reports with its key.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::aggregate::{LatencySketch, ParamStats, ToolStats};

/// The encoding's version.
pub const VERSION: u64 = 1;

/// `stats` as one line of JSON.
pub fn encode(stats: &ToolStats) -> String {
    let (count, sum, min, max, base, counts) = stats.latency.parts();
    let mut sparse: Vec<u64> = Vec::new();
    for (i, n) in counts.iter().enumerate() {
        if *n > 0 {
            sparse.push(i as u64);
            sparse.push(*n);
        }
    }
    let params: Map<String, Value> = stats
        .params
        .iter()
        .map(|(name, p)| {
            // Sorted, so that equal statistics encode to equal text.
            let values: BTreeMap<&String, &u64> = p.values.iter().collect();
            (
                name.clone(),
                json!({
                    "supplied": p.supplied,
                    "values": values,
                    "other": p.other_values,
                    "non_string": p.non_string,
                }),
            )
        })
        .collect();
    json!({
        "v": VERSION,
        "calls": stats.calls,
        "errors": stats.errors,
        // The sum can pass 2^64 ns (584 years of calls): a string. The
        // buckets: [offset from base, count, …] for each used one.
        "latency": [count, sum.to_string(), min, max, base, sparse],
        "with_arguments": stats.with_arguments,
        "params": params,
        "params_over_cap": stats.params_over_cap,
        "fingerprints": stats.tool_fingerprints,
        "fingerprints_other": stats.fingerprints_other,
    })
    .to_string()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored<'a> {
    #[allow(dead_code)]
    v: u64,
    calls: u64,
    #[serde(borrow)]
    errors: BTreeMap<Cow<'a, str>, u64>,
    #[serde(borrow)]
    latency: (u64, Cow<'a, str>, u64, u64, u16, Vec<u64>),
    with_arguments: u64,
    #[serde(borrow)]
    params: BTreeMap<Cow<'a, str>, StoredParam<'a>>,
    params_over_cap: u64,
    #[serde(borrow)]
    fingerprints: BTreeMap<Cow<'a, str>, u64>,
    fingerprints_other: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredParam<'a> {
    supplied: u64,
    #[serde(borrow)]
    values: HashMap<Cow<'a, str>, u64>,
    other: u64,
    non_string: u64,
}

#[derive(Deserialize)]
struct Version {
    v: Option<u64>,
}

/// The statistics `text` encodes; the error says what is wrong with it.
pub fn decode(text: &str) -> Result<ToolStats, String> {
    let stored: Stored<'_> = match serde_json::from_str(text) {
        Ok(s) => s,
        Err(e) => {
            // Say "another version" rather than which member it lacks.
            return Err(match serde_json::from_str::<Version>(text) {
                Ok(Version { v: Some(v) }) if v != VERSION => format!(
                    "encoding version {v} is not one this toolpin reads ({VERSION}); upgrade toolpin"
                ),
                Ok(Version { v: None }) => "no encoding version".to_string(),
                _ => format!("not a stored statistics record: {e}"),
            });
        }
    };
    if stored.v != VERSION {
        return Err(format!(
            "encoding version {} is not one this toolpin reads ({VERSION}); upgrade toolpin",
            stored.v
        ));
    }
    let (count, sum, min, max, base, sparse) = stored.latency;
    let sum: u128 = sum
        .parse()
        .map_err(|_| "latency sum is not a number".to_string())?;
    if sparse.len() % 2 != 0 {
        return Err("latency buckets are not offset and count pairs".into());
    }
    let mut counts: Vec<u64> = Vec::new();
    let mut last: Option<u64> = None;
    for pair in sparse.chunks_exact(2) {
        let (offset, n) = (pair[0], pair[1]);
        if last.is_some_and(|l| offset <= l) || offset > u64::from(u16::MAX) {
            return Err("latency bucket offsets are not increasing".into());
        }
        last = Some(offset);
        counts.resize(offset as usize, 0);
        counts.push(n);
    }
    let latency = LatencySketch::from_parts(count, sum, min, max, base, counts)
        .map_err(|e| format!("latency: {e}"))?;
    let params = stored
        .params
        .into_iter()
        .map(|(name, p)| {
            (
                name.into_owned(),
                ParamStats {
                    supplied: p.supplied,
                    values: p
                        .values
                        .into_iter()
                        .map(|(k, n)| (k.into_owned(), n))
                        .collect(),
                    other_values: p.other,
                    non_string: p.non_string,
                },
            )
        })
        .collect();
    let owned = |m: BTreeMap<Cow<'_, str>, u64>| -> BTreeMap<String, u64> {
        m.into_iter().map(|(k, n)| (k.into_owned(), n)).collect()
    };
    let stats = ToolStats {
        calls: stored.calls,
        errors: owned(stored.errors),
        latency,
        with_arguments: stored.with_arguments,
        params,
        params_over_cap: stored.params_over_cap,
        tool_fingerprints: owned(stored.fingerprints),
        fingerprints_other: stored.fingerprints_other,
    };
    if stats.latency.count() != stats.calls {
        return Err(format!(
            "{} calls but {} latencies",
            stats.calls,
            stats.latency.count()
        ));
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{Aggregates, ArgValue, Call, Limits};
    use std::borrow::Cow;

    fn sample() -> ToolStats {
        let mut agg = Aggregates::new(Limits::default());
        let args = [
            (
                Cow::Borrowed("status"),
                ArgValue::Str(Cow::Borrowed("open")),
            ),
            (Cow::Borrowed("page"), ArgValue::Other),
        ];
        for i in 0..50u64 {
            agg.record_call(&Call {
                start_nanos: 1_000_000 + i,
                duration_nanos: 1_000 + i * i * 997,
                environment: "prod",
                tenant: "t",
                agent: "a",
                catalog: "c",
                tool: "search",
                tool_fingerprint: if i % 2 == 0 { "f1" } else { "f2" },
                error: (i % 5 == 0).then_some("timeout"),
                arguments: (i % 3 != 0).then_some(&args[..]),
            });
        }
        let calls = agg.calls();
        calls[0].1.clone()
    }

    #[test]
    fn statistics_survive_the_round_trip() {
        let stats = sample();
        let text = encode(&stats);
        assert_eq!(decode(&text), Ok(stats.clone()));
        // Equal statistics, equal text.
        assert_eq!(encode(&decode(&text).expect("decodes")), text);
        let empty = ToolStats::default();
        assert_eq!(decode(&encode(&empty)), Ok(empty));
    }

    #[test]
    fn damaged_rows_say_what_is_wrong() {
        let good: Value = serde_json::from_str(&encode(&sample())).expect("json");
        let damaged = |f: &dyn Fn(&mut Value)| {
            let mut v = good.clone();
            f(&mut v);
            decode(&v.to_string()).expect_err("damaged")
        };
        assert!(decode("{")
            .expect_err("not json")
            .starts_with("not a stored statistics record"));
        assert!(damaged(&|v| v["v"] = json!(2)).contains("version 2"));
        assert!(damaged(&|v| {
            v["v"] = json!(2);
            v["new_member"] = json!(1);
        })
        .contains("version 2"));
        let no_version = damaged(&|v| {
            if let Some(o) = v.as_object_mut() {
                o.remove("v");
            }
        });
        assert_eq!(no_version, "no encoding version");
        assert!(damaged(&|v| v["calls"] = json!(-1)).contains("invalid value"));
        assert!(damaged(&|v| v["calls"] = json!(49)).contains("49 calls but 50 latencies"));
        assert!(damaged(&|v| v["latency"][0] = json!(51)).contains("add up to 50, not 51"));
        assert!(damaged(&|v| v["latency"][4] = json!(70000)).contains("u16"));
        assert!(damaged(&|v| v["latency"][1] = json!("5")).contains("sum"));
        assert!(
            damaged(&|v| v["params"]["status"]["values"]["open"] = json!("x"))
                .contains("invalid type")
        );
        let e = damaged(&|v| v["latency"][4] = json!(v["latency"][4].as_u64().expect("base") - 1));
        assert!(e.contains("latency: min and max"), "{e}");
        let e = damaged(&|v| v["latency"][5].as_array_mut().expect("pairs").swap(0, 2));
        assert!(e.contains("offsets are not increasing"), "{e}");
        let e = damaged(&|v| {
            v["latency"][5]
                .as_array_mut()
                .expect("pairs")
                .push(json!(1))
        });
        assert!(e.contains("pairs"), "{e}");
    }
}
