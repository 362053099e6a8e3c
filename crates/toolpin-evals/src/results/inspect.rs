//! Inspect AI logs (inspect-ai 0.3.285): the `.eval` archive (a zip whose
//! members are `header.json`, `samples/<id>_epoch_<n>.json`,
//! `summaries.json` and `_journal/…`, zstd-compressed by current Inspect and
//! deflated by older ones) and the `.json` log (one document with `eval`,
//! `samples`, …). One case run per sample:
//!
//! - case id: the sample's `id`, a string as it is, a number as its JSON
//!   text (`2`).
//! - repeat: when the eval ran more than one epoch (`eval.config.epochs`
//!   above 1, or a sample with `epoch` above 1), `epoch - 1`; otherwise
//!   unset, and the file is one repeat.
//! - passed: every scorer's value is full credit under Inspect's
//!   `value_to_float` (`"C"`, `true`, `"yes"`, `1`, `1.0` → 1; `"P"` → 0.5;
//!   `"I"`, `"N"`, `false`, `"no"` → 0; numbers and numeric strings as
//!   themselves). Partial credit is not a pass: a pass is what Inspect's
//!   accuracy counts as 1, and `score` keeps the fraction. A sample with no
//!   scores (it errored, or was not scored) did not pass.
//! - score: the mean of the scorers' values as floats (a list or dict value
//!   counts its elements).
//! - tool calls: the `function` of every `tool_calls` entry of the
//!   assistant messages in `messages`, in order; turns: the number of
//!   assistant messages.
//! - cost: `model_usage` summed over the models: input tokens are
//!   `input_tokens` plus the cache reads and writes (Inspect counts those
//!   apart), output tokens `output_tokens`, USD `total_cost` when Inspect
//!   priced it.
//! - error: `error.message`.
//!
//! The zip reader is our own and small (stored, deflate and zstd members,
//! each checked against its CRC-32; Zip64 sizes and offsets): the `zip`
//! crate reads zstd only through the C library.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::pytest::json_error;
use super::{CaseRun, Cost, Error, Names};

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    eval: Option<Value>,
    #[serde(default)]
    samples: Option<Vec<Sample>>,
}

#[derive(Deserialize)]
struct Sample {
    id: Value,
    #[serde(default)]
    epoch: Option<u32>,
    #[serde(default)]
    scores: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default)]
    model_usage: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Deserialize)]
struct ToolCall {
    function: String,
}

/// A zip archive with an Inspect member: `header.json` or
/// `_journal/start.json`.
pub(super) fn detect_zip(bytes: &[u8]) -> bool {
    match Zip::open(bytes) {
        Ok(zip) => zip
            .entries
            .iter()
            .any(|e| e.name == "header.json" || e.name == "_journal/start.json"),
        Err(_) => false,
    }
}

/// An object whose `eval` is an object naming the task, beside `version`
/// or `status`.
pub(super) fn detect_json(doc: &serde_json::Map<String, Value>) -> bool {
    let eval = doc.get("eval").and_then(Value::as_object);
    eval.is_some_and(|e| e.contains_key("task") || e.contains_key("eval_id"))
        && (doc.contains_key("version") || doc.contains_key("status"))
}

pub(super) fn read(path: &Path, bytes: &[u8], names: &mut Names) -> Result<Vec<CaseRun>, Error> {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    if bytes[start..].starts_with(b"PK") {
        return read_zip(path, bytes, names);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let log: Log =
        serde_json::from_slice(bytes).map_err(|e| json_error(path, &e, "not an Inspect AI log"))?;
    let epochs = epochs(log.eval.as_ref());
    let samples = log.samples.unwrap_or_default();
    runs(path, &samples, epochs, names, |i| format!("samples[{i}]"))
}

/// The members `read_zip` inflates.
fn wanted(name: &str) -> bool {
    name == "header.json"
        || name == "_journal/start.json"
        || (name.starts_with("samples/") && name.ends_with(".json"))
}

fn read_zip(path: &Path, bytes: &[u8], names: &mut Names) -> Result<Vec<CaseRun>, Error> {
    let zip = Zip::open(bytes)
        .map_err(|e| Error::at(path, format!("not an Inspect AI .eval archive: {e}")))?;
    // Before anything is inflated: no two entries share bytes, and what
    // would be inflated stays within the bounds.
    zip.check(wanted).map_err(|e| Error::at(path, e))?;
    let member = |name: &str| -> Result<Option<Value>, Error> {
        let Some(entry) = zip.entries.iter().find(|e| e.name == name) else {
            return Ok(None);
        };
        let data = zip
            .read(entry)
            .map_err(|e| Error::at(path, format!("{name}: {e}")))?;
        let value: Value = serde_json::from_slice(&data)
            .map_err(|e| Error::at(path, format!("{name}: not JSON: {}", strip_position(&e))))?;
        Ok(Some(value))
    };
    let header = match member("header.json")? {
        Some(h) => Some(h),
        None => member("_journal/start.json")?,
    };
    if header.is_none() {
        return Err(Error::at(
            path,
            "not an Inspect AI .eval archive: no header.json or _journal/start.json",
        ));
    }
    let epochs = epochs(header.as_ref().and_then(|h| h.get("eval")));
    let mut samples = Vec::new();
    let mut names_of = Vec::new();
    for entry in &zip.entries {
        if !(entry.name.starts_with("samples/") && wanted(&entry.name)) {
            continue;
        }
        let data = zip
            .read(entry)
            .map_err(|e| Error::at(path, format!("{}: {e}", entry.name)))?;
        let sample: Sample = serde_json::from_slice(&data).map_err(|e| {
            Error::at(
                path,
                format!(
                    "{}: not an Inspect AI sample: {}",
                    entry.name,
                    strip_position(&e)
                ),
            )
        })?;
        samples.push(sample);
        names_of.push(entry.name.clone());
    }
    runs(path, &samples, epochs, names, |i| {
        names_of.get(i).cloned().unwrap_or_default()
    })
}

fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => format!("{} (line {}, column {})", &text[..i], e.line(), e.column()),
        None => text,
    }
}

fn epochs(eval: Option<&Value>) -> u64 {
    eval.and_then(|e| e.get("config"))
        .and_then(|c| c.get("epochs"))
        .and_then(Value::as_u64)
        .unwrap_or(1)
}

fn runs(
    path: &Path,
    samples: &[Sample],
    epochs: u64,
    names: &mut Names,
    what: impl Fn(usize) -> String,
) -> Result<Vec<CaseRun>, Error> {
    let repeated = epochs > 1 || samples.iter().any(|s| s.epoch.unwrap_or(1) > 1);
    let mut out = Vec::with_capacity(samples.len());
    for (i, sample) in samples.iter().enumerate() {
        let at = |m: &str| Error::at(path, format!("{}: {m}", what(i)));
        let case = match &sample.id {
            Value::String(s) if !s.is_empty() => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err(at("the sample `id` is not a string or a number")),
        };
        let (passed, score) = judge(sample.scores.as_ref());
        let mut run = CaseRun::new(case, passed);
        run.score = score;
        if repeated {
            run.repeat = Some(sample.epoch.unwrap_or(1).saturating_sub(1));
        }
        if let Some(messages) = &sample.messages {
            let assistant: Vec<&Message> = messages
                .iter()
                .filter(|m| m.role.as_deref() == Some("assistant"))
                .collect();
            run.turns = Some(assistant.len() as u32);
            run.tool_calls = Some(
                assistant
                    .iter()
                    .flat_map(|m| m.tool_calls.iter().flatten())
                    .map(|c| names.id(&c.function))
                    .collect(),
            );
        }
        run.cost = sample.model_usage.as_ref().and_then(usage);
        run.error = match &sample.error {
            None | Some(Value::Null) => None,
            Some(e) => Some(match e.get("message").and_then(Value::as_str) {
                Some(m) if !m.is_empty() => m.to_string(),
                _ => e.to_string(),
            }),
        };
        out.push(run);
    }
    Ok(out)
}

/// Inspect's `value_to_float` with the default C/I/P/N values.
fn value_to_float(v: &Value) -> Vec<f64> {
    let one = match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "C" => Some(1.0),
            "P" => Some(0.5),
            "I" | "N" => Some(0.0),
            _ => {
                let lower = s.to_lowercase();
                match lower.as_str() {
                    "yes" | "true" => Some(1.0),
                    "no" | "false" => Some(0.0),
                    _ => Some(
                        lower
                            .trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|f| f.is_finite())
                            .unwrap_or(0.0),
                    ),
                }
            }
        },
        Value::Array(items) => return items.iter().flat_map(value_to_float).collect(),
        Value::Object(map) => return map.values().flat_map(value_to_float).collect(),
        Value::Null => None,
    };
    one.into_iter().collect()
}

fn judge(scores: Option<&serde_json::Map<String, Value>>) -> (bool, Option<f64>) {
    let mut values = Vec::new();
    for score in scores.into_iter().flat_map(|s| s.values()) {
        if let Some(v) = score.get("value") {
            values.extend(value_to_float(v));
        }
    }
    if values.is_empty() {
        return (false, None);
    }
    let passed = values.iter().all(|v| *v >= 1.0);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (passed, mean.is_finite().then_some(mean))
}

fn usage(models: &serde_json::Map<String, Value>) -> Option<Cost> {
    if models.is_empty() {
        return None;
    }
    let sum = |keys: &[&str]| -> Option<u64> {
        let mut total = None;
        for usage in models.values() {
            for key in keys {
                if let Some(n) = usage.get(*key).and_then(Value::as_u64) {
                    total = Some(total.unwrap_or(0u64).saturating_add(n));
                }
            }
        }
        total
    };
    let mut usd = None;
    for usage in models.values() {
        if let Some(c) = usage.get("total_cost").and_then(Value::as_f64) {
            if c.is_finite() && c >= 0.0 {
                usd = Some(usd.unwrap_or(0.0) + c);
            }
        }
    }
    Some(Cost {
        input_tokens: sum(&[
            "input_tokens",
            "input_tokens_cache_read",
            "input_tokens_cache_write",
        ]),
        output_tokens: sum(&["output_tokens"]),
        usd,
    })
}

/// A zip archive in memory: its central directory.
struct Zip<'a> {
    bytes: &'a [u8],
    entries: Vec<Entry>,
    /// Where the central directory starts: every member lies before it.
    cd_offset: u64,
}

struct Entry {
    name: String,
    method: u16,
    flags: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    offset: u64,
}

/// A member that would inflate past this is refused rather than inflated
/// (it was 4 GiB: a 1 MB deflated member took 1 GB of memory).
pub const MAX_MEMBER: u64 = 256 << 20;

/// The most one archive's members may inflate to in all: with no total, a
/// central directory pointing thousands of entries at one member inflated
/// each of them (a 264 KB file took 66 s).
pub const MAX_TOTAL: u64 = 1 << 30;

/// Bytes for people: 1 GiB, 257 MiB, 1.07 GiB, 12.5 MiB, 1234 bytes.
fn size_text(n: u64) -> String {
    let (unit, name) = match n {
        _ if n >= 1 << 30 => (1u64 << 30, "GiB"),
        _ if n >= 1 << 20 => (1 << 20, "MiB"),
        _ => return format!("{n} bytes"),
    };
    if n % unit == 0 {
        format!("{} {name}", n / unit)
    } else {
        format!("{:.2} {name}", n as f64 / unit as f64)
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl<'a> Zip<'a> {
    fn open(bytes: &'a [u8]) -> Result<Zip<'a>, String> {
        const TRUNCATED: &str = "the archive is truncated or damaged (no end of central directory)";
        // The end-of-central-directory record, searched back from the end
        // (it can be followed by a comment of up to 64 KiB).
        let low = bytes.len().saturating_sub(22 + 65_535);
        let eocd = (low..bytes.len().saturating_sub(21))
            .rev()
            .find(|i| bytes[*i..].starts_with(b"PK\x05\x06"))
            .ok_or(TRUNCATED)?;
        let bad = || "the central directory is damaged".to_string();
        let mut count = u64::from(u16_at(bytes, eocd + 10).ok_or_else(bad)?);
        let mut cd_size = u64::from(u32_at(bytes, eocd + 12).ok_or_else(bad)?);
        let mut cd_offset = u64::from(u32_at(bytes, eocd + 16).ok_or_else(bad)?);
        if count == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_offset == 0xFFFF_FFFF {
            // Zip64: the locator sits just before the record.
            let locator = eocd.checked_sub(20).ok_or_else(bad)?;
            if !bytes[locator..].starts_with(b"PK\x06\x07") {
                return Err(bad());
            }
            let at =
                usize::try_from(u64_at(bytes, locator + 8).ok_or_else(bad)?).map_err(|_| bad())?;
            if !bytes
                .get(at..)
                .is_some_and(|b| b.starts_with(b"PK\x06\x06"))
            {
                return Err(bad());
            }
            count = u64_at(bytes, at + 32).ok_or_else(bad)?;
            cd_size = u64_at(bytes, at + 40).ok_or_else(bad)?;
            cd_offset = u64_at(bytes, at + 48).ok_or_else(bad)?;
        }
        let start = usize::try_from(cd_offset).map_err(|_| bad())?;
        let end = start
            .checked_add(usize::try_from(cd_size).map_err(|_| bad())?)
            .filter(|e| *e <= bytes.len())
            .ok_or_else(bad)?;
        let cd = &bytes[start..end];
        let mut entries = Vec::new();
        let mut at = 0usize;
        for _ in 0..count {
            if !cd.get(at..).is_some_and(|b| b.starts_with(b"PK\x01\x02")) {
                return Err(bad());
            }
            let flags = u16_at(cd, at + 8).ok_or_else(bad)?;
            let method = u16_at(cd, at + 10).ok_or_else(bad)?;
            let crc = u32_at(cd, at + 16).ok_or_else(bad)?;
            let mut compressed = u64::from(u32_at(cd, at + 20).ok_or_else(bad)?);
            let mut size = u64::from(u32_at(cd, at + 24).ok_or_else(bad)?);
            let name_len = usize::from(u16_at(cd, at + 28).ok_or_else(bad)?);
            let extra_len = usize::from(u16_at(cd, at + 30).ok_or_else(bad)?);
            let comment_len = usize::from(u16_at(cd, at + 32).ok_or_else(bad)?);
            let mut offset = u64::from(u32_at(cd, at + 42).ok_or_else(bad)?);
            let name = cd.get(at + 46..at + 46 + name_len).ok_or_else(bad)?;
            let name = String::from_utf8_lossy(name).into_owned();
            let extra = cd
                .get(at + 46 + name_len..at + 46 + name_len + extra_len)
                .ok_or_else(bad)?;
            // The Zip64 extra field holds, in this order, the values whose
            // 32-bit fields are all ones.
            let mut e = 0usize;
            while e + 4 <= extra.len() {
                let id = u16_at(extra, e).ok_or_else(bad)?;
                let len = usize::from(u16_at(extra, e + 2).ok_or_else(bad)?);
                if id == 1 {
                    let mut p = e + 4;
                    for field in [&mut size, &mut compressed, &mut offset] {
                        if *field == 0xFFFF_FFFF {
                            *field = u64_at(extra, p).ok_or_else(bad)?;
                            p += 8;
                        }
                    }
                }
                e += 4 + len;
            }
            entries.push(Entry {
                name,
                method,
                flags,
                crc,
                compressed,
                size,
                offset,
            });
            at += 46 + name_len + extra_len + comment_len;
        }
        Ok(Zip {
            bytes,
            entries,
            cd_offset,
        })
    }

    /// Where an entry's bytes are: its local header, its data, the end of
    /// its data.
    fn span(&self, entry: &Entry) -> Result<(usize, usize, usize), String> {
        let bad = || "the member is truncated or damaged".to_string();
        let at = usize::try_from(entry.offset).map_err(|_| bad())?;
        if !self
            .bytes
            .get(at..)
            .is_some_and(|b| b.starts_with(b"PK\x03\x04"))
        {
            return Err(bad());
        }
        let name_len = usize::from(u16_at(self.bytes, at + 26).ok_or_else(bad)?);
        let extra_len = usize::from(u16_at(self.bytes, at + 28).ok_or_else(bad)?);
        let data = at + 30 + name_len + extra_len;
        let end = usize::try_from(entry.compressed)
            .ok()
            .and_then(|n| data.checked_add(n))
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(bad)?;
        Ok((at, data, end))
    }

    /// Refuses, before anything is inflated, an archive whose entries share
    /// bytes (no zip writer does that; a bomb points many entries at one
    /// member so that it is inflated many times), a member that would
    /// inflate past `MAX_MEMBER`, or members to be read (`wanted`) that
    /// would inflate past `MAX_TOTAL` in all. The decoders never produce
    /// more than a member declares, so the declared sizes bound the work.
    /// The message is whole: `not an Inspect AI .eval archive: …` for a
    /// damaged one, `refused: …` for one built to be inflated.
    fn check(&self, wanted: impl Fn(&str) -> bool) -> Result<(), String> {
        let mut spans: Vec<(usize, usize, &str)> = Vec::with_capacity(self.entries.len());
        for entry in &self.entries {
            let (start, _, end) = self
                .span(entry)
                .map_err(|e| format!("not an Inspect AI .eval archive: {}: {e}", entry.name))?;
            spans.push((start, end, &entry.name));
        }
        spans.sort_unstable();
        for pair in spans.windows(2) {
            let ((_, end, first), (start, _, second)) = (pair[0], pair[1]);
            if start < end {
                return Err(format!(
                    "refused: the entries {first} and {second} overlap (one member's bytes named twice, as zip bombs do)"
                ));
            }
        }
        if let Some((_, end, name)) = spans.last() {
            if *end as u64 > self.cd_offset {
                return Err(format!(
                    "not an Inspect AI .eval archive: {name}: the member runs into the central directory"
                ));
            }
        }
        let mut total = 0u64;
        for entry in self.entries.iter().filter(|e| wanted(&e.name)) {
            if entry.size > MAX_MEMBER {
                return Err(format!(
                    "refused: {} would inflate to {}, more than the {} toolpin inflates for one member (a zip bomb, or a log too large to compare)",
                    entry.name,
                    size_text(entry.size),
                    size_text(MAX_MEMBER)
                ));
            }
            total = total.saturating_add(entry.size);
        }
        if total > MAX_TOTAL {
            return Err(format!(
                "refused: the members would inflate to {} in all, more than the {} toolpin inflates for one archive (a zip bomb, or a log too large to compare: split the eval into smaller logs)",
                size_text(total),
                size_text(MAX_TOTAL)
            ));
        }
        Ok(())
    }

    fn read(&self, entry: &Entry) -> Result<Vec<u8>, String> {
        let bad = || "the member is truncated or damaged".to_string();
        if entry.flags & 1 != 0 {
            return Err("the member is encrypted".into());
        }
        // `check` refused what is larger before anything was read.
        if entry.size > MAX_MEMBER {
            return Err(format!("the member is too large ({} bytes)", entry.size));
        }
        let (_, data_start, data_end) = self.span(entry)?;
        let data = self.bytes.get(data_start..data_end).ok_or_else(bad)?;
        let size = usize::try_from(entry.size).map_err(|_| bad())?;
        let out = match entry.method {
            0 => data.to_vec(),
            8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, size)
                .map_err(|e| format!("cannot inflate: {e}"))?,
            93 => {
                let mut source = data;
                let decoder = ruzstd::decoding::StreamingDecoder::new(&mut source)
                    .map_err(|e| format!("cannot decompress (zstd): {e}"))?;
                let mut out = Vec::with_capacity(size);
                decoder
                    .take(entry.size.saturating_add(1))
                    .read_to_end(&mut out)
                    .map_err(|e| format!("cannot decompress (zstd): {e}"))?;
                out
            }
            other => return Err(format!("compression method {other} is not supported")),
        };
        if out.len() != size || crc32(&out) != entry.crc {
            return Err(bad());
        }
        Ok(out)
    }
}

/// CRC-32 (IEEE), as zip members carry it.
fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table = [0u32; 256];
        for (n, slot) in table.iter_mut().enumerate() {
            let mut c = n as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        table
    });
    let mut crc = !0u32;
    for b in data {
        crc = table[((crc ^ u32::from(*b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored-only zip, as Python's zipfile writes it.
    fn stored_zip(members: &[(&str, &str)]) -> Vec<u8> {
        let members: Vec<Member> = members
            .iter()
            .map(|(name, data)| Member {
                name: name.to_string(),
                method: 0,
                size: data.len() as u64,
                crc: crc32(data.as_bytes()),
                data: data.as_bytes().to_vec(),
            })
            .collect();
        zip_bytes(&members, &[])
    }

    /// A member as written: its bytes as stored (compressed or not), with
    /// the size and CRC its headers declare.
    struct Member {
        name: String,
        method: u16,
        size: u64,
        crc: u32,
        data: Vec<u8>,
    }

    /// An archive of `members`, plus central-directory entries named
    /// `aliases.0` that point at member `aliases.1`, as a bomb does.
    fn zip_bytes(members: &[Member], aliases: &[(String, usize)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut cd = Vec::new();
        let mut offsets = Vec::new();
        let header = |buf: &mut Vec<u8>, m: &Member, name: &str, central: Option<u32>| {
            buf.extend_from_slice(if central.is_some() {
                b"PK\x01\x02"
            } else {
                b"PK\x03\x04"
            });
            if central.is_some() {
                buf.extend_from_slice(&20u16.to_le_bytes());
            }
            buf.extend_from_slice(&20u16.to_le_bytes()); // version needed
            buf.extend_from_slice(&0u16.to_le_bytes()); // flags
            buf.extend_from_slice(&m.method.to_le_bytes());
            buf.extend_from_slice(&[0; 4]); // time, date
            buf.extend_from_slice(&m.crc.to_le_bytes());
            buf.extend_from_slice(&(m.data.len() as u32).to_le_bytes());
            buf.extend_from_slice(&(m.size as u32).to_le_bytes());
            buf.extend_from_slice(&(name.len() as u16).to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes());
            if let Some(offset) = central {
                buf.extend_from_slice(&[0; 6]); // comment, disk, internal attrs
                buf.extend_from_slice(&[0; 4]);
                buf.extend_from_slice(&offset.to_le_bytes());
            }
            buf.extend_from_slice(name.as_bytes());
        };
        for m in members {
            offsets.push(out.len() as u32);
            header(&mut out, m, &m.name, None);
            out.extend_from_slice(&m.data);
        }
        for (m, offset) in members.iter().zip(&offsets) {
            header(&mut cd, m, &m.name, Some(*offset));
        }
        for (name, target) in aliases {
            header(&mut cd, &members[*target], name, Some(offsets[*target]));
        }
        let count = (members.len() + aliases.len()) as u16;
        let cd_offset = out.len() as u32;
        out.extend_from_slice(&cd);
        out.extend_from_slice(b"PK\x05\x06");
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&(cd.len() as u32).to_le_bytes());
        out.extend_from_slice(&cd_offset.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }

    /// A raw deflate stream (one fixed-Huffman block) of `prefix` and then
    /// spaces up to `size` bytes in all, written as 258-byte copies of the
    /// byte before: about 1,000 times smaller than what it inflates to,
    /// built in a moment whatever `size` is. `prefix` ends with a space.
    fn deflated_spaces(prefix: &[u8], size: u64) -> Vec<u8> {
        struct Bits {
            out: Vec<u8>,
            acc: u64,
            n: u32,
        }
        impl Bits {
            fn put(&mut self, value: u32, bits: u32) {
                self.acc |= u64::from(value) << self.n;
                self.n += bits;
                while self.n >= 8 {
                    self.out.push(self.acc as u8);
                    self.acc >>= 8;
                    self.n -= 8;
                }
            }
            /// A Huffman code, most significant bit first.
            fn code(&mut self, code: u32, len: u32) {
                let reversed = code.reverse_bits() >> (32 - len);
                self.put(reversed, len);
            }
            fn literal(&mut self, b: u8) {
                match b {
                    0..=143 => self.code(0x30 + u32::from(b), 8),
                    _ => self.code(0x190 + u32::from(b) - 144, 9),
                }
            }
        }
        assert!(prefix.ends_with(b" "));
        let mut bits = Bits {
            out: Vec::new(),
            acc: 0,
            n: 0,
        };
        bits.put(1, 1); // the last block
        bits.put(1, 2); // fixed Huffman codes
        for b in prefix {
            bits.literal(*b);
        }
        let mut left = size - prefix.len() as u64;
        while left >= 258 {
            bits.code(0xC5, 8); // length 258 (code 285)
            bits.code(0, 5); // distance 1
            left -= 258;
        }
        for _ in 0..left {
            bits.literal(b' ');
        }
        bits.code(0, 7); // end of block
        if bits.n > 0 {
            bits.put(0, 8 - bits.n);
        }
        bits.out
    }

    const SAMPLE: &[u8] =
        b"{\"id\": \"a\", \"epoch\": 1, \"scores\": {\"s\": {\"value\": \"C\"}}} ";
    const HEADER: &str = r#"{"eval": {"task": "t", "config": {"epochs": 1}}}"#;

    fn header_member() -> Member {
        Member {
            name: "header.json".into(),
            method: 0,
            size: HEADER.len() as u64,
            crc: crc32(HEADER.as_bytes()),
            data: HEADER.as_bytes().to_vec(),
        }
    }

    /// A deflated sample padded with spaces to `size` bytes. `honest_crc`:
    /// the CRC of what it inflates to; without it, zero, which only tells
    /// once the whole member was inflated.
    fn padded_sample(name: &str, size: u64, honest_crc: bool) -> Member {
        let data = deflated_spaces(SAMPLE, size);
        let crc = if honest_crc {
            let mut raw = SAMPLE.to_vec();
            raw.resize(size as usize, b' ');
            crc32(&raw)
        } else {
            0
        };
        Member {
            name: name.into(),
            method: 8,
            size,
            crc,
            data,
        }
    }

    #[test]
    fn the_test_deflater_inflates_to_what_it_says() {
        let m = padded_sample("samples/a_epoch_1.json", 100_000, true);
        let zip = zip_bytes(&[header_member(), m], &[]);
        let runs = read(Path::new("x.eval"), &zip, &mut Names::default()).unwrap();
        assert_eq!(runs.len(), 1);
        assert!(runs[0].passed);
    }

    #[test]
    fn entries_pointing_at_one_member_are_refused_before_inflating() {
        // Two hundred central-directory entries name the bytes of one
        // 64 KiB sample: each was inflated and read (a 264 KB archive built
        // this way took 66 s).
        let sample = padded_sample("samples/a_epoch_1.json", 64 << 10, true);
        let aliases: Vec<(String, usize)> = (0..200)
            .map(|i| (format!("samples/a{i:03}_epoch_1.json"), 1))
            .collect();
        let zip = zip_bytes(&[header_member(), sample], &aliases);
        assert!(
            detect_zip(&zip),
            "still detected, so that the error is this one"
        );
        let err = match read(Path::new("bomb.eval"), &zip, &mut Names::default()) {
            Ok(runs) => panic!(
                "read {} samples instead of refusing the archive",
                runs.len()
            ),
            Err(e) => e,
        };
        assert!(
            err.message().starts_with(
                "bomb.eval: refused: the entries samples/a000_epoch_1.json and samples/a001_epoch_1.json overlap"
            ),
            "{err}"
        );
        // A member whose bytes run into the next one's is refused too.
        let second = padded_sample("samples/b_epoch_1.json", 1000, true);
        let mut zip = zip_bytes(
            &[
                header_member(),
                padded_sample("samples/a_epoch_1.json", 1000, true),
                second,
            ],
            &[],
        );
        let cd = find_bytes(&zip, b"PK\x01\x02").unwrap();
        // The central entry of samples/a: its compressed size, one byte more.
        let at = find_bytes(&zip[cd..], b"samples/a_epoch_1.json").unwrap() + cd - 46 + 20;
        let n = u32::from_le_bytes(zip[at..at + 4].try_into().unwrap());
        zip[at..at + 4].copy_from_slice(&(n + 40).to_le_bytes());
        let err = read(Path::new("x.eval"), &zip, &mut Names::default()).unwrap_err();
        assert!(err.message().contains("overlap"), "{err}");
    }

    #[test]
    fn what_an_archive_inflates_to_is_bounded_before_inflating() {
        // Five members of 220 MiB: each within the member bound, 1.1 GiB in
        // all. Built in a moment (1.5 MB each); nothing is inflated.
        // (Their CRCs are wrong: the reader before the bound inflated the
        // first whole, 220 MiB, before its CRC could tell.)
        let members: Vec<Member> = std::iter::once(header_member())
            .chain(
                (0..5)
                    .map(|i| padded_sample(&format!("samples/{i}_epoch_1.json"), 220 << 20, false)),
            )
            .collect();
        let zip = zip_bytes(&members, &[]);
        assert!(zip.len() < 8 << 20, "{}", zip.len());
        let err = read(Path::new("big.eval"), &zip, &mut Names::default()).unwrap_err();
        assert_eq!(
            err.message(),
            "big.eval: refused: the members would inflate to 1.07 GiB in all, more than the 1 GiB toolpin inflates for one archive (a zip bomb, or a log too large to compare: split the eval into smaller logs)"
        );
        // One member past 256 MiB (it was 4 GiB: a 1 MB member took 1 GB).
        let zip = zip_bytes(
            &[
                header_member(),
                padded_sample("samples/a_epoch_1.json", MAX_MEMBER + (1 << 20), false),
            ],
            &[],
        );
        let err = read(Path::new("big.eval"), &zip, &mut Names::default()).unwrap_err();
        assert_eq!(
            err.message(),
            "big.eval: refused: samples/a_epoch_1.json would inflate to 257 MiB, more than the 256 MiB toolpin inflates for one member (a zip bomb, or a log too large to compare)"
        );
        // Members that are not read count toward nothing.
        let zip = zip_bytes(
            &[
                header_member(),
                padded_sample("summaries.json", MAX_MEMBER + 1, false),
                padded_sample("samples/a_epoch_1.json", 1000, true),
            ],
            &[],
        );
        assert_eq!(
            read(Path::new("ok.eval"), &zip, &mut Names::default())
                .unwrap()
                .len(),
            1
        );
    }

    fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
        hay.windows(needle.len()).position(|w| w == needle)
    }

    #[test]
    fn reads_a_stored_archive() {
        let zip = stored_zip(&[
            (
                "header.json",
                r#"{"eval": {"task": "t", "config": {"epochs": 1}}}"#,
            ),
            (
                "samples/a_epoch_1.json",
                r#"{"id": "a", "epoch": 1, "scores": {"s": {"value": "C"}, "t": {"value": 1.0}}, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "1", "function": "f", "arguments": {}}]}, {"role": "tool"}, {"role": "assistant", "content": "y"}], "model_usage": {"m": {"input_tokens": 5, "output_tokens": 2, "input_tokens_cache_read": 1}}}"#,
            ),
            (
                "samples/7_epoch_1.json",
                r#"{"id": 7, "epoch": 1, "scores": {"s": {"value": "P"}}, "error": {"message": "boom", "traceback": "..."}}"#,
            ),
        ]);
        assert!(detect_zip(&zip));
        let mut names = Names::default();
        let runs = read(Path::new("x.eval"), &zip, &mut names).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(
            (runs[0].case.as_str(), runs[0].passed, runs[0].repeat),
            ("a", true, None)
        );
        assert_eq!(runs[0].turns, Some(2));
        assert_eq!(names.name(runs[0].tool_calls.as_ref().unwrap()[0]), "f");
        assert_eq!(runs[0].cost.unwrap().input_tokens, Some(6));
        assert_eq!(
            (runs[1].case.as_str(), runs[1].passed, runs[1].score),
            ("7", false, Some(0.5))
        );
        assert_eq!(runs[1].error.as_deref(), Some("boom"));
        assert_eq!(runs[1].tool_calls, None);
        // Cut short: one line naming the file.
        let err = read(Path::new("x.eval"), &zip[..zip.len() - 30], &mut names).unwrap_err();
        assert!(
            err.message()
                .starts_with("x.eval: not an Inspect AI .eval archive"),
            "{err}"
        );
        assert!(!detect_zip(&zip[..zip.len() - 30]));
        assert!(!detect_zip(&stored_zip(&[("other.txt", "x")])));
        // A member whose bytes changed: its CRC says so.
        let mut bad = zip.clone();
        let at = find_bytes(&bad, b"\"epoch\": 1, \"scores\"").expect("member");
        bad[at + 10] = b'2';
        let err = read(Path::new("x.eval"), &bad, &mut names).unwrap_err();
        assert!(err.message().contains("truncated or damaged"), "{err}");
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn value_to_float_follows_inspect() {
        let f = |v: Value| value_to_float(&v);
        assert_eq!(f(Value::from("C")), [1.0]);
        assert_eq!(f(Value::from("I")), [0.0]);
        assert_eq!(f(Value::from("P")), [0.5]);
        assert_eq!(f(Value::from("N")), [0.0]);
        assert_eq!(f(Value::from("Yes")), [1.0]);
        assert_eq!(f(Value::from("0.25")), [0.25]);
        assert_eq!(f(Value::from(true)), [1.0]);
        assert_eq!(f(serde_json::json!({"a": 1, "b": "I"})), [1.0, 0.0]);
        assert_eq!(judge(None), (false, None));
    }

    #[test]
    fn json_log_with_epochs() {
        let text = r#"{"version": 2, "status": "success", "eval": {"task": "t", "config": {"epochs": 2}}, "samples": [
            {"id": "a", "epoch": 1, "scores": {"s": {"value": 1}}, "messages": []},
            {"id": "a", "epoch": 2, "scores": {"s": {"value": 0}}, "messages": []}]}"#;
        let doc: serde_json::Map<String, Value> = serde_json::from_str(text).unwrap();
        assert!(detect_json(&doc));
        let runs = read(Path::new("l.json"), text.as_bytes(), &mut Names::default()).unwrap();
        let got: Vec<(Option<u32>, bool)> = runs.iter().map(|r| (r.repeat, r.passed)).collect();
        assert_eq!(got, [(Some(0), true), (Some(1), false)]);
        assert_eq!(runs[0].tool_calls, Some(vec![]));
        let err = read(
            Path::new("l.json"),
            &text.as_bytes()[..60],
            &mut Names::default(),
        )
        .unwrap_err();
        assert!(
            err.message().starts_with("l.json:1: not an Inspect AI log"),
            "{err}"
        );
    }
}
