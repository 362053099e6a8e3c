//! JSON helpers of the layer: pointers, equality and hashing by JSON
//! value, excerpts.

use super::*;

// Pointers and `$ref` fragments are read by the shared schema model
// (toolpin_manifest::schema), as the drift engine reads them.

pub(super) fn escape(token: &str) -> String {
    escape_token(token).into_owned()
}

pub(super) fn unescape(token: &str) -> Option<String> {
    unescape_token(token).map(std::borrow::Cow::into_owned)
}

pub(super) fn percent_decode(s: &str) -> Option<String> {
    schema::percent_decode(s).map(std::borrow::Cow::into_owned)
}

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

pub(super) fn is_integer(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

pub(super) fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

pub(super) fn cmp_num(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => cmp_num(x, y) == Some(Ordering::Equal),
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
            let mut stack = vec![(a, b)];
            while let Some((a, b)) = stack.pop() {
                match (a, b) {
                    (Value::Array(x), Value::Array(y)) => {
                        if x.len() != y.len() {
                            return false;
                        }
                        stack.extend(x.iter().zip(y));
                    }
                    (Value::Object(x), Value::Object(y)) => {
                        if x.len() != y.len() {
                            return false;
                        }
                        for (k, xv) in x {
                            match y.get(k) {
                                Some(yv) => stack.push((xv, yv)),
                                None => return false,
                            }
                        }
                    }
                    _ => {
                        if !json_eq(a, b) {
                            return false;
                        }
                    }
                }
            }
            true
        }
        _ => false,
    }
}

/// A hash consistent with [`json_eq`] (below a depth, containers hash their
/// length only).
pub(super) fn hash_json(v: &Value, h: &mut impl Hasher, depth: u32) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            match (as_i128(n), n.as_f64()) {
                (Some(i), _) => i.hash(h),
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e38 => (f as i128).hash(h),
                (None, Some(f)) => f.to_bits().hash(h),
                (None, None) => {}
            }
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            if depth < 32 {
                for x in a {
                    hash_json(x, h, depth + 1);
                }
            }
        }
        Value::Object(m) => {
            (5u8, m.len()).hash(h);
            if depth < 32 {
                // Independent of member order.
                let mut sum = 0u64;
                for (k, x) in m {
                    let mut mh = DefaultHasher::new();
                    k.hash(&mut mh);
                    hash_json(x, &mut mh, depth + 1);
                    sum = sum.wrapping_add(mh.finish());
                }
                sum.hash(h);
            }
        }
    }
}

/// The first pair of equal items, by index.
pub(super) fn first_duplicate(a: &[Value]) -> Option<(usize, usize)> {
    if a.len() <= 16 {
        for (j, y) in a.iter().enumerate() {
            for (i, x) in a.iter().enumerate().take(j) {
                if json_eq(x, y) {
                    return Some((i, j));
                }
            }
        }
        return None;
    }
    let mut hashed: Vec<(u64, usize)> = a
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut h = DefaultHasher::new();
            hash_json(v, &mut h, 0);
            (h.finish(), i)
        })
        .collect();
    hashed.sort_unstable();
    let mut best: Option<(usize, usize)> = None;
    for run in hashed.chunk_by(|x, y| x.0 == y.0) {
        for (n, &(_, j)) in run.iter().enumerate() {
            for &(_, i) in run.iter().take(n) {
                if best.is_some_and(|(_, bj)| bj <= j) {
                    break;
                }
                if let (Some(x), Some(y)) = (a.get(i), a.get(j)) {
                    if json_eq(x, y) {
                        best = Some((i, j));
                    }
                }
            }
        }
    }
    best
}

/// Compact JSON of `value`, cut after `limit` bytes (at a character
/// boundary, then `…`); serializing stops there, so a huge value costs
/// nothing more.
pub(super) fn excerpt<T: Serialize + ?Sized>(value: &T, limit: usize) -> String {
    struct Bounded {
        buf: Vec<u8>,
        limit: usize,
        cut: bool,
    }
    impl io::Write for Bounded {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let room = self.limit.saturating_sub(self.buf.len());
            if data.len() > room {
                self.buf
                    .extend_from_slice(data.get(..room).unwrap_or_default());
                self.cut = true;
                return Err(io::Error::other("excerpt full"));
            }
            self.buf.extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut w = Bounded {
        buf: Vec::new(),
        limit,
        cut: false,
    };
    let _ = serde_json::to_writer(&mut w, value);
    let text = match std::str::from_utf8(&w.buf) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(w.buf.get(..e.valid_up_to()).unwrap_or_default())
            .unwrap_or_default(),
    };
    let mut out = text.to_string();
    if w.cut {
        out.push('…');
    }
    out
}

/// `s` cut to at most `max` bytes at a character boundary (then `…`).
pub(super) fn clip(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
