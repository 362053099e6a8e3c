//! JSON helpers of the layer: type names, duplicates, excerpts.

use super::*;

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
    }
}

/// Same JSON type (all numbers alike).
pub(super) fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The first pair of equal items by index, equal as the crate compares
/// them (`1` and `1.0` alike). Equal items have equal canonical forms, so
/// only items of one form are compared.
pub(super) fn first_duplicate(a: &[Value]) -> Option<(usize, usize)> {
    let mut seen: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
    for (j, y) in a.iter().enumerate() {
        let same_form = seen.entry(to_canonical_vec(y)).or_default();
        if let Some(&i) = same_form
            .iter()
            .find(|&&i| a.get(i).is_some_and(|x| equal(x, y)))
        {
            return Some((i, j));
        }
        same_form.push(j);
    }
    None
}

/// Compact JSON of `value`, cut after `limit` bytes (at a character
/// boundary, then `…`); serializing stops there, so a huge value costs
/// nothing more.
pub(super) fn excerpt<T: Serialize + ?Sized>(value: &T, limit: usize) -> String {
    /// Keeps the first `.1` bytes written, then fails the writer.
    struct Bounded(Vec<u8>, usize);
    impl io::Write for Bounded {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let room = self.1.saturating_sub(self.0.len());
            self.0.extend_from_slice(data.get(..room).unwrap_or(data));
            if data.len() > room {
                return Err(io::Error::other("excerpt full"));
            }
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut w = Bounded(Vec::new(), limit);
    let cut = serde_json::to_writer(&mut w, value).is_err();
    // A character the cut split is dropped.
    let text = w.0.utf8_chunks().next().map_or("", |c| c.valid());
    if cut {
        format!("{text}…")
    } else {
        text.to_string()
    }
}

/// `s` cut to at most `max` bytes at a character boundary (then `…`).
pub(super) fn clip(mut s: String, max: usize) -> String {
    if s.len() > max {
        let end = (0..=max).rev().find(|&i| s.is_char_boundary(i));
        s.truncate(end.unwrap_or(0));
        s.push('…');
    }
    s
}
