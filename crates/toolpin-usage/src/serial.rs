//! A key's statistics as stored: compact JSON with a version member, so
//! that a store written by one build is read, or refused with a reason, by
//! another. Decoding checks everything (the latency sketch's parts, the
//! counts' types) and never panics: a row that does not decode is an
//! error the store reports with its key.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use crate::aggregate::{LatencySketch, ParamStats, ToolStats};

/// The encoding's version.
pub const VERSION: u64 = 1;

/// `stats` as one line of JSON.
pub fn encode(stats: &ToolStats) -> String {
    let (count, sum, min, max, base, counts) = stats.latency.parts();
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
        // The sum can pass 2^64 ns (584 years of calls): a string.
        "latency": [count, sum.to_string(), min, max, base, counts],
        "with_arguments": stats.with_arguments,
        "params": params,
        "params_over_cap": stats.params_over_cap,
        "fingerprints": stats.tool_fingerprints,
        "fingerprints_other": stats.fingerprints_other,
    })
    .to_string()
}

fn u64_of(v: Option<&Value>, what: &str) -> Result<u64, String> {
    v.and_then(Value::as_u64)
        .ok_or_else(|| format!("{what} is not a count"))
}

fn counts_of(v: Option<&Value>, what: &str) -> Result<Vec<(String, u64)>, String> {
    let Some(map) = v.and_then(Value::as_object) else {
        return Err(format!("{what} is not an object of counts"));
    };
    map.iter()
        .map(|(k, n)| Ok((k.clone(), u64_of(Some(n), &format!("{what}.{k}"))?)))
        .collect()
}

/// The statistics `text` encodes; the error says what is wrong with it.
pub fn decode(text: &str) -> Result<ToolStats, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let version = value.get("v").and_then(Value::as_u64);
    if version != Some(VERSION) {
        return Err(match version {
            Some(v) => format!(
                "encoding version {v} is not one this toolpin reads ({VERSION}); upgrade toolpin"
            ),
            None => "no encoding version".into(),
        });
    }
    let latency = value
        .get("latency")
        .and_then(Value::as_array)
        .filter(|a| a.len() == 6)
        .ok_or("latency is not [count, sum, min, max, base, counts]")?;
    let sum: u128 = latency[1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or("latency sum is not a number in a string")?;
    let base = u16::try_from(u64_of(latency.get(4), "latency base")?)
        .map_err(|_| "latency base is out of range")?;
    let buckets = latency[5]
        .as_array()
        .ok_or("latency counts are not an array")?
        .iter()
        .map(|n| n.as_u64().ok_or("a latency bucket is not a count"))
        .collect::<Result<Vec<u64>, _>>()?;
    let latency = LatencySketch::from_parts(
        u64_of(latency.first(), "latency count")?,
        sum,
        u64_of(latency.get(2), "latency min")?,
        u64_of(latency.get(3), "latency max")?,
        base,
        buckets,
    )
    .map_err(|e| format!("latency: {e}"))?;
    let mut params = BTreeMap::new();
    let Some(stored) = value.get("params").and_then(Value::as_object) else {
        return Err("params is not an object".into());
    };
    for (name, p) in stored {
        let values: HashMap<String, u64> =
            counts_of(p.get("values"), &format!("params.{name}.values"))?
                .into_iter()
                .collect();
        params.insert(
            name.clone(),
            ParamStats {
                supplied: u64_of(p.get("supplied"), &format!("params.{name}.supplied"))?,
                values,
                other_values: u64_of(p.get("other"), &format!("params.{name}.other"))?,
                non_string: u64_of(p.get("non_string"), &format!("params.{name}.non_string"))?,
            },
        );
    }
    let stats = ToolStats {
        calls: u64_of(value.get("calls"), "calls")?,
        errors: counts_of(value.get("errors"), "errors")?
            .into_iter()
            .collect(),
        latency,
        with_arguments: u64_of(value.get("with_arguments"), "with_arguments")?,
        params,
        params_over_cap: u64_of(value.get("params_over_cap"), "params_over_cap")?,
        tool_fingerprints: counts_of(value.get("fingerprints"), "fingerprints")?
            .into_iter()
            .collect(),
        fingerprints_other: u64_of(value.get("fingerprints_other"), "fingerprints_other")?,
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
        assert!(decode("{").expect_err("not json").starts_with("not JSON"));
        assert!(damaged(&|v| v["v"] = json!(2)).contains("version 2"));
        assert!(damaged(&|v| v["calls"] = json!(-1)).contains("calls"));
        assert!(damaged(&|v| v["calls"] = json!(49)).contains("49 calls but 50 latencies"));
        assert!(damaged(&|v| v["latency"][0] = json!(51)).contains("add up to 50, not 51"));
        assert!(damaged(&|v| v["latency"][4] = json!(70000)).contains("base"));
        assert!(damaged(&|v| v["latency"][1] = json!(5)).contains("sum"));
        assert!(
            damaged(&|v| v["params"]["status"]["values"]["open"] = json!("x"))
                .contains("params.status.values.open")
        );
        let e = damaged(&|v| {
            let counts = v["latency"][5].as_array_mut().expect("counts");
            counts.insert(0, json!(0));
            v["latency"][4] = json!(v["latency"][4].as_u64().expect("base") - 1);
        });
        assert!(e.contains("latency"), "{e}");
    }
}
