//! A key's statistics as stored: compact JSON with a version member, so
//! that a store written by one build is read, or refused with a reason, by
//! another. The latency sketch is stored sparse (offset and count of each
//! used bucket): a tool's calls spread over a few hundred buckets, most of
//! them empty. Decoding reads into borrowing structs (no JSON tree), checks
//! everything (the sketch's parts, every count's type) and never panics: a
//! row that does not decode is an error the store reports with its key.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Map, Value};

use crate::aggregate::{LatencySketch, ParamStats, ToolStats};
use crate::names::{NameMap, Names};

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
    // Every table is in name order, so that equal statistics encode to
    // equal text.
    let params: Map<String, Value> = stats
        .params
        .iter()
        .map(|(name, p)| {
            (
                name.to_string(),
                json!({
                    "supplied": p.supplied,
                    "values": p.values,
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

/// The statistics `text` encodes; the error says what is wrong with it.
pub fn decode(text: &str) -> Result<ToolStats, String> {
    decode_with(text, &mut Names::default())
}

/// [`decode`], the names of its tables shared through `names` (a table's
/// names, when the statistics go into it).
pub(crate) fn decode_with(text: &str, names: &mut Names) -> Result<ToolStats, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let read = Record { names }
        .deserialize(&mut de)
        .and_then(|stored| de.end().map(|()| stored));
    let stored = match read {
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
    let (count, Sum(sum), min, max, base, sparse) = stored.latency;
    let sum = sum.ok_or_else(|| "latency sum is not a number".to_string())?;
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
    let stats = ToolStats {
        calls: stored.calls,
        errors: stored.errors,
        latency,
        with_arguments: stored.with_arguments,
        params: stored.params,
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

/// A stored record as read: its tables straight into the maps
/// [`ToolStats`] holds, their names shared through [`Names`] (a name
/// the table already holds is not copied), the rest into plain values.
/// No JSON tree, and nothing allocated that the statistics do not keep.
struct Stored {
    v: u64,
    calls: u64,
    errors: NameMap<u64>,
    latency: (u64, Sum, u64, u64, u16, Pairs),
    with_arguments: u64,
    params: NameMap<ParamStats>,
    params_over_cap: u64,
    fingerprints: NameMap<u64>,
    fingerprints_other: u64,
}

/// The members of a stored record.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Member {
    V,
    Calls,
    Errors,
    Latency,
    WithArguments,
    Params,
    ParamsOverCap,
    Fingerprints,
    FingerprintsOther,
}

const MEMBERS: &[&str] = &[
    "v",
    "calls",
    "errors",
    "latency",
    "with_arguments",
    "params",
    "params_over_cap",
    "fingerprints",
    "fingerprints_other",
];

/// Reads a stored record, sharing its names through `names`.
struct Record<'n> {
    names: &'n mut Names,
}

/// `value` into `slot`, unless the member was given already.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, member: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(member));
    }
    *slot = Some(value);
    Ok(())
}

fn given<T, E: de::Error>(slot: Option<T>, member: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(member))
}

impl<'de> DeserializeSeed<'de> for Record<'_> {
    type Value = Stored;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Stored, D::Error> {
        d.deserialize_struct("Stored", MEMBERS, self)
    }
}

impl<'de> Visitor<'de> for Record<'_> {
    type Value = Stored;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct Stored")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Stored, A::Error> {
        let names = self.names;
        let (mut v, mut calls, mut errors, mut latency, mut with_arguments) =
            (None, None, None, None, None);
        let (mut params, mut params_over_cap, mut fingerprints, mut fingerprints_other) =
            (None, None, None, None);
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::V => once(&mut v, map.next_value()?, "v")?,
                Member::Calls => once(&mut calls, map.next_value()?, "calls")?,
                Member::Errors => {
                    let table = map.next_value_seed(Counts { names: &mut *names })?;
                    once(&mut errors, table, "errors")?;
                }
                Member::Latency => once(&mut latency, map.next_value()?, "latency")?,
                Member::WithArguments => {
                    once(&mut with_arguments, map.next_value()?, "with_arguments")?;
                }
                Member::Params => {
                    let table = map.next_value_seed(Params { names: &mut *names })?;
                    once(&mut params, table, "params")?;
                }
                Member::ParamsOverCap => {
                    once(&mut params_over_cap, map.next_value()?, "params_over_cap")?;
                }
                Member::Fingerprints => {
                    let table = map.next_value_seed(Counts { names: &mut *names })?;
                    once(&mut fingerprints, table, "fingerprints")?;
                }
                Member::FingerprintsOther => {
                    once(
                        &mut fingerprints_other,
                        map.next_value()?,
                        "fingerprints_other",
                    )?;
                }
            }
        }
        Ok(Stored {
            v: given(v, "v")?,
            calls: given(calls, "calls")?,
            errors: given(errors, "errors")?,
            latency: given(latency, "latency")?,
            with_arguments: given(with_arguments, "with_arguments")?,
            params: given(params, "params")?,
            params_over_cap: given(params_over_cap, "params_over_cap")?,
            fingerprints: given(fingerprints, "fingerprints")?,
            fingerprints_other: given(fingerprints_other, "fingerprints_other")?,
        })
    }
}

/// A name as read: borrowed from the text unless it holds an escape.
struct Name<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(s)))
            }
        }
        d.deserialize_str(Text)
    }
}

/// A table of counts by name (error classes, fingerprints, a parameter's
/// values).
struct Counts<'n> {
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for Counts<'_> {
    type Value = NameMap<u64>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<NameMap<u64>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Counts<'_> {
    type Value = NameMap<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NameMap<u64>, A::Error> {
        let mut out = NameMap::new();
        while let Some(Name(name)) = map.next_key()? {
            let n: u64 = map.next_value()?;
            out.insert(self.names.get(&name), n);
        }
        Ok(out)
    }
}

/// The parameters' table.
struct Params<'n> {
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for Params<'_> {
    type Value = NameMap<ParamStats>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<NameMap<ParamStats>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Params<'_> {
    type Value = NameMap<ParamStats>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NameMap<ParamStats>, A::Error> {
        let mut out = NameMap::new();
        while let Some(Name(name)) = map.next_key()? {
            let param = map.next_value_seed(Param {
                names: &mut *self.names,
            })?;
            out.insert(self.names.get(&name), param);
        }
        Ok(out)
    }
}

/// The members of a stored parameter.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ParamMember {
    Supplied,
    Values,
    Other,
    NonString,
}

const PARAM_MEMBERS: &[&str] = &["supplied", "values", "other", "non_string"];

/// One parameter's statistics.
struct Param<'n> {
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for Param<'_> {
    type Value = ParamStats;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ParamStats, D::Error> {
        d.deserialize_struct("StoredParam", PARAM_MEMBERS, self)
    }
}

impl<'de> Visitor<'de> for Param<'_> {
    type Value = ParamStats;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct StoredParam")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamStats, A::Error> {
        let (mut supplied, mut values, mut other, mut non_string) = (None, None, None, None);
        while let Some(member) = map.next_key::<ParamMember>()? {
            match member {
                ParamMember::Supplied => once(&mut supplied, map.next_value()?, "supplied")?,
                ParamMember::Values => {
                    let table = map.next_value_seed(Counts {
                        names: &mut *self.names,
                    })?;
                    once(&mut values, table, "values")?;
                }
                ParamMember::Other => once(&mut other, map.next_value()?, "other")?,
                ParamMember::NonString => once(&mut non_string, map.next_value()?, "non_string")?,
            }
        }
        Ok(ParamStats {
            supplied: given(supplied, "supplied")?,
            values: given(values, "values")?,
            other_values: given(other, "other")?,
            non_string: given(non_string, "non_string")?,
        })
    }
}

/// The latency sum, stored as a decimal string; `None` when it is not
/// one (said after the record is read, as for its other parts).
struct Sum(Option<u128>);

impl<'de> Deserialize<'de> for Sum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = Sum;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Sum, E> {
                Ok(Sum(s.parse().ok()))
            }
        }
        d.deserialize_str(Text)
    }
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
