//! A key's statistics as stored: compact JSON with a version member, so
//! that a store written by one build is read, or refused with a reason, by
//! another. The latency sketch is stored sparse (offset and count of each
//! used bucket): a tool's calls spread over a few hundred buckets, most of
//! them empty. Decoding reads into borrowing structs (no JSON tree), checks
//! everything (the sketch's parts, every count's type) and never panics: a
//! row that does not decode is an error the store reports with its key.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use std::fmt;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};

use crate::aggregate::{LatencySketch, ParamStats, ToolStats};

/// The encoding's version.
pub const VERSION: u64 = 1;

/// `stats` as one line of JSON.
pub fn encode(stats: &ToolStats) -> String {
    let (count, sum, min, max, buckets) = stats.latency.parts();
    // The first used bucket is the base (0 for an empty sketch).
    let base = buckets.first().map_or(0, |b| b.0);
    let mut sparse: Vec<u64> = Vec::with_capacity(2 * buckets.len());
    for (b, n) in buckets {
        sparse.push(u64::from(b - base));
        sparse.push(*n);
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

/// A stored record as read: the tables straight into the types
/// [`ToolStats`] holds (a string is copied once, into its key).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored<'a> {
    #[allow(dead_code)]
    v: u64,
    calls: u64,
    errors: BTreeMap<String, u64>,
    #[serde(borrow)]
    latency: (u64, Cow<'a, str>, u64, u64, u16, Pairs),
    with_arguments: u64,
    params: BTreeMap<String, StoredParam>,
    params_over_cap: u64,
    fingerprints: BTreeMap<String, u64>,
    fingerprints_other: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredParam {
    supplied: u64,
    values: HashMap<String, u64>,
    other: u64,
    non_string: u64,
}

/// The latency buckets as stored, `[offset, count, …]`, read as pairs
/// (offsets from the base still) into one allocation; what is wrong with
/// them is said after the record is read, as for its other parts.
struct Pairs(Result<Vec<(u16, u64)>, &'static str>);

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of bucket offsets and counts")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Pairs, A::Error> {
                // A key's calls use a few dozen buckets at most, usually.
                let mut pairs = Vec::with_capacity(16);
                let mut fault = None;
                let mut last: Option<u64> = None;
                while let Some(offset) = seq.next_element::<u64>()? {
                    let Some(n) = seq.next_element::<u64>()? else {
                        fault = Some("latency buckets are not offset and count pairs");
                        break;
                    };
                    if last.is_some_and(|l| offset <= l) || offset > u64::from(u16::MAX) {
                        fault.get_or_insert("latency bucket offsets are not increasing");
                    }
                    last = Some(offset);
                    if fault.is_none() {
                        pairs.push((offset as u16, n));
                    }
                }
                Ok(Pairs(fault.map_or(Ok(pairs), Err)))
            }
        }
        d.deserialize_seq(Seq)
    }
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
    let mut buckets = sparse.0.map_err(str::to_string)?;
    // The range starts at its base and ends at a used bucket.
    let first_empty = buckets.first().is_some_and(|(o, n)| *o != 0 || *n == 0);
    if first_empty || buckets.last().is_some_and(|(_, n)| *n == 0) {
        return Err("latency: the bucket range does not start and end at a used bucket".into());
    }
    for (bucket, _) in &mut buckets {
        let offset = *bucket;
        *bucket = base.checked_add(offset).ok_or_else(|| {
            format!("latency: buckets from {base} to {base} + {offset} are out of range")
        })?;
    }
    // A bucket between the first and the last may be stored empty.
    buckets.retain(|(_, n)| *n > 0);
    let latency = LatencySketch::from_parts(count, sum, min, max, buckets)
        .map_err(|e| format!("latency: {e}"))?;
    let params = stored
        .params
        .into_iter()
        .map(|(name, p)| {
            (
                name,
                ParamStats {
                    supplied: p.supplied,
                    values: p.values,
                    other_values: p.other,
                    non_string: p.non_string,
                },
            )
        })
        .collect();
    let stats = ToolStats {
        calls: stored.calls,
        errors: stored.errors,
        latency,
        with_arguments: stored.with_arguments,
        params,
        params_over_cap: stored.params_over_cap,
        tool_fingerprints: stored.fingerprints,
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

    /// Rows as the build before the sparse in-memory sketch wrote them
    /// (read out of a store it wrote): they read back, and encode again
    /// to the same text.
    #[test]
    fn rows_of_earlier_builds_read_the_same() {
        let rows = [
            r#"{"calls":40,"errors":{},"fingerprints":{"":40},"fingerprints_other":0,"latency":[40,"21990000000",10000000,2560000000,1164,[0,5,64,7,128,3,192,3,256,6,320,2,384,5,448,5,512,4]],"params":{"status":{"non_string":0,"other":0,"supplied":40,"values":{"cancelled":6,"open":9,"returned":12,"shipped":13}}},"params_over_cap":0,"v":1,"with_arguments":40}"#,
            r#"{"calls":40,"errors":{"upstream":1},"fingerprints":{"":40},"fingerprints_other":0,"latency":[40,"21255000000",5000000,2560000000,1100,[0,5,64,3,128,6,192,5,256,1,320,2,384,6,448,3,512,5,576,4]],"params":{"status":{"non_string":0,"other":0,"supplied":40,"values":{"cancelled":11,"open":8,"returned":10,"shipped":11}}},"params_over_cap":0,"v":1,"with_arguments":40}"#,
        ];
        for row in rows {
            let stats = decode(row).expect("decodes");
            assert_eq!(encode(&stats), row);
            assert_eq!(stats.latency.count(), 40);
            assert_eq!(stats.params["status"].supplied, 40);
        }
        let stats = decode(rows[1]).expect("decodes");
        assert_eq!(stats.latency.buckets(), 10);
        assert_eq!(
            (stats.latency.min(), stats.latency.max()),
            (Some(5_000_000), Some(2_560_000_000))
        );
        assert_eq!(stats.errors["upstream"], 1);
        // A bucket stored empty between the first and the last is not held.
        let gap = rows[1].replace("[0,5,64,3,", "[0,5,32,0,64,3,");
        assert_eq!(decode(&gap).expect("decodes"), stats);
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
