//! The one schema model the other crates share: following `$ref`s, reading
//! a `type` set, and the JSON-pointer and URI escapes a reference is written
//! in. The drift engine, the OpenAPI converter and the proxy's validator
//! (its budget's schema graph) read a reference the same way through
//! [`Resolver`], so they never disagree about what one `$ref` points to:
//! with a duplicate `$anchor` all follow the first in document order, and
//! none finds an anchor inside data (`const`, `enum`, `examples`, ...).
//!
//! What a reference may be, as [`Resolver::target`] reads it:
//!
//! - `#` (the root) or `#/a/b~1c` — a JSON pointer (RFC 6901) in a URI
//!   fragment: `%XX` escapes are decoded first (RFC 3986), then `~1` is `/`
//!   and `~0` is `~` in each token;
//! - `#name` — a plain-name fragment: the subschema whose `$anchor` is
//!   `name` (or, draft-07 style, whose `$id` is `#name`);
//! - `BASE#…` where `BASE` is the root's `$id` (with or without a trailing
//!   empty fragment): the same as `#…`, the root names itself;
//! - anything else (`other.json#/x`, `https://…`) leaves the document:
//!   [`Target::Remote`], never fetched.
//!
//! [`Resolver::resolve`] follows a chain of references (a target that is
//! itself a `$ref`) with a cycle guard and a length limit.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

pub use crate::pointer::{escape_token, unescape_token};

/// Decodes `%XX` escapes (a `$ref` is a URI reference). `None` when an
/// escape is not `%` followed by two hex digits or the decoded bytes are
/// not UTF-8. Borrows when there is nothing to decode.
pub fn percent_decode(text: &str) -> Option<Cow<'_, str>> {
    // The crate passes a malformed escape through as text; a `$ref` with
    // one names nothing, so it is refused here first.
    let bytes = text.as_bytes();
    let malformed = bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if malformed {
        return None;
    }
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
}

/// The value an (escaped) JSON pointer names in `root`: `""` is the root,
/// every other pointer starts with `/`; an array index is `0` or digits
/// without a leading zero. `None` when the pointer is malformed (a `~` not
/// followed by `0` or `1`) or names nothing.
pub fn lookup<'v>(root: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(root);
    }
    let rest = pointer.strip_prefix('/')?;
    let mut cur = root;
    for raw in rest.split('/') {
        let token = unescape_token(raw)?;
        cur = match cur {
            Value::Object(m) => m.get(token.as_ref())?,
            Value::Array(items) => items.get(crate::pointer::index(&token)?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The value an (escaped) JSON pointer names in `root`, mutably; the same
/// reading as [`lookup`].
pub fn lookup_mut<'v>(root: &'v mut Value, pointer: &str) -> Option<&'v mut Value> {
    if pointer.is_empty() {
        return Some(root);
    }
    let rest = pointer.strip_prefix('/')?;
    let mut cur = root;
    for raw in rest.split('/') {
        let token = unescape_token(raw)?;
        cur = match cur {
            Value::Object(m) => m.get_mut(token.as_ref())?,
            Value::Array(items) => items.get_mut(crate::pointer::index(&token)?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Where a reference leads.
#[derive(Clone, Debug, PartialEq)]
pub enum Target<'v> {
    /// A value in this document and its (escaped) JSON pointer.
    Local { value: &'v Value, pointer: String },
    /// Another document: not followed.
    Remote,
}

/// Why a reference cannot be followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefError {
    /// The fragment holds a malformed `%` escape or is not UTF-8.
    Encoding(String),
    /// The pointer or anchor names nothing in the document.
    NotFound(String),
    /// The chain comes back to a target it passed: the pointers of the
    /// targets in order, the repeated one last.
    Cycle(Vec<String>),
    /// The chain is longer than the limit given to [`Resolver::resolve`].
    TooLong(usize),
    /// The reference leaves the document (only from [`Resolver::resolve`];
    /// [`Resolver::target`] answers [`Target::Remote`]).
    Remote(String),
}

impl std::fmt::Display for RefError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefError::Encoding(r) => write!(f, "$ref {r:?} has an invalid percent-encoding"),
            RefError::NotFound(r) => write!(f, "$ref {r:?} points to nothing"),
            RefError::Cycle(chain) => {
                let shown: Vec<String> = chain.iter().map(|p| format!("#{p}")).collect();
                write!(f, "$ref cycle: {}", shown.join(" → "))
            }
            RefError::TooLong(max) => write!(f, "a $ref chain longer than {max}"),
            RefError::Remote(r) => write!(f, "$ref {r:?} leaves the document"),
        }
    }
}

impl std::error::Error for RefError {}

/// A schema with its references followed.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved<'v> {
    /// The schema reached (the one given when it holds no `$ref`).
    pub value: &'v Value,
    /// Its (escaped) pointer in the document, when a reference led there.
    pub pointer: Option<String>,
    /// The last reference followed, as written.
    pub via: Option<&'v str>,
}

/// Follows references within one document (a tool's inputSchema, an
/// OpenAPI document, …). Cheap to make: anchors are collected on the first
/// plain-name reference only.
pub struct Resolver<'v> {
    root: &'v Value,
    base_id: Option<&'v str>,
    anchors: OnceCell<Anchors>,
}

/// The anchors of a document, collected once: plain names (`$anchor`,
/// draft-07 `$id: "#name"`) to the first pointer in document order, and
/// `$dynamicAnchor` names to every pointer holding one, in document order.
#[derive(Default)]
struct Anchors {
    plain: HashMap<String, String>,
    dynamic: HashMap<String, Vec<String>>,
}

/// Keywords whose value is data, not schemas: never searched for anchors.
const DATA_KEYWORDS: [&str; 5] = ["const", "default", "enum", "example", "examples"];

impl<'v> Resolver<'v> {
    /// A resolver for `root`; its `$id` (if a string) is the base a
    /// reference may name the document by.
    pub fn new(root: &'v Value) -> Self {
        Self {
            root,
            base_id: root.get("$id").and_then(Value::as_str),
            anchors: OnceCell::new(),
        }
    }

    /// The document.
    pub fn root(&self) -> &'v Value {
        self.root
    }

    /// The root's `$id`, if any.
    pub fn base_id(&self) -> Option<&'v str> {
        self.base_id
    }

    /// Whether `base` (a reference's part before `#`) names this document.
    fn is_self(&self, base: &str) -> bool {
        if base.is_empty() {
            return true;
        }
        match self.base_id {
            Some(id) => id == base || id.strip_suffix('#') == Some(base),
            None => false,
        }
    }

    /// The pointer of the subschema whose `$anchor` is `name` (or whose
    /// `$id` is `#name`); the first in document order when several are.
    pub fn anchor(&self, name: &str) -> Option<&str> {
        self.anchors().plain.get(name).map(String::as_str)
    }

    fn anchors(&self) -> &Anchors {
        self.anchors.get_or_init(|| collect_anchors(self.root))
    }

    /// The pointers of every subschema whose `$dynamicAnchor` is the
    /// plain-name fragment of `reference` (in document order), when the
    /// reference names this document; empty otherwise. A `$dynamicRef`
    /// may land on any of them, whatever the dynamic scope.
    pub fn dynamic_targets(&self, reference: &str) -> &[String] {
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        if !self.is_self(base) {
            return &[];
        }
        match percent_decode(fragment) {
            Some(name) if !name.is_empty() && !name.starts_with('/') => self
                .anchors()
                .dynamic
                .get(name.as_ref())
                .map_or(&[], Vec::as_slice),
            _ => &[],
        }
    }

    /// One step: where `reference` leads.
    pub fn target(&self, reference: &str) -> Result<Target<'v>, RefError> {
        let (base, fragment) = match reference.split_once('#') {
            Some((base, fragment)) => (base, fragment),
            None => (reference, ""),
        };
        if !self.is_self(base) {
            return Ok(Target::Remote);
        }
        let decoded =
            percent_decode(fragment).ok_or_else(|| RefError::Encoding(reference.to_string()))?;
        let pointer = if decoded.is_empty() || decoded.starts_with('/') {
            decoded.into_owned()
        } else {
            self.anchor(&decoded)
                .ok_or_else(|| RefError::NotFound(reference.to_string()))?
                .to_string()
        };
        match lookup(self.root, &pointer) {
            Some(value) => Ok(Target::Local { value, pointer }),
            None => Err(RefError::NotFound(reference.to_string())),
        }
    }

    /// Follows `schema`'s `$ref` chain (at most `max_chain` references) to
    /// a schema that holds none. A chain that returns to a target it passed
    /// is a [`RefError::Cycle`]; one that leaves the document a
    /// [`RefError::Remote`] (with that reference).
    pub fn resolve(&self, schema: &'v Value, max_chain: usize) -> Result<Resolved<'v>, RefError> {
        let mut out = Resolved {
            value: schema,
            pointer: None,
            via: None,
        };
        let mut seen: Vec<String> = Vec::new();
        while let Some(reference) = out.value.get("$ref").and_then(Value::as_str) {
            if seen.len() >= max_chain {
                return Err(RefError::TooLong(max_chain));
            }
            match self.target(reference)? {
                Target::Remote => return Err(RefError::Remote(reference.to_string())),
                Target::Local { value, pointer } => {
                    let repeated = seen.contains(&pointer);
                    seen.push(pointer.clone());
                    if repeated {
                        return Err(RefError::Cycle(seen));
                    }
                    out = Resolved {
                        value,
                        pointer: Some(pointer),
                        via: Some(reference),
                    };
                }
            }
        }
        Ok(out)
    }
}

/// Every `$anchor` (and draft-07 `$id: "#name"`) in `root`, by name, to
/// its pointer, the first in document order winning; every `$dynamicAnchor`
/// to all its pointers. Data keywords (`enum`, `const`, `default`,
/// `examples`) are not searched.
fn collect_anchors(root: &Value) -> Anchors {
    let mut out = Anchors::default();
    let mut stack = vec![(root, String::new())];
    while let Some((v, ptr)) = stack.pop() {
        match v {
            Value::Object(m) => {
                let named = m.get("$anchor").and_then(Value::as_str).or_else(|| {
                    m.get("$id")
                        .and_then(Value::as_str)
                        .and_then(|id| id.strip_prefix('#'))
                });
                if let Some(name) = named {
                    out.plain
                        .entry(name.to_string())
                        .or_insert_with(|| ptr.clone());
                }
                if let Some(name) = m.get("$dynamicAnchor").and_then(Value::as_str) {
                    out.dynamic
                        .entry(name.to_string())
                        .or_default()
                        .push(ptr.clone());
                }
                // Pushed in reverse so that the stack pops in document order.
                for (k, c) in m.iter().rev() {
                    if (c.is_object() || c.is_array()) && !DATA_KEYWORDS.contains(&k.as_str()) {
                        stack.push((c, format!("{ptr}/{}", escape_token(k))));
                    }
                }
            }
            Value::Array(items) => {
                for (i, c) in items.iter().enumerate().rev() {
                    if c.is_object() || c.is_array() {
                        stack.push((c, format!("{ptr}/{i}")));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The set of JSON types a schema's `type` names, lower-cased (Gemini
/// writes `STRING`, `OBJECT`): a string is a one-type set, an array a union
/// (non-strings in it ignored); OpenAPI 3.0 `nullable: true` adds `null`.
/// `None` when `type` is absent or neither a string nor an array: every
/// type is accepted.
pub fn type_set(schema: &Map<String, Value>) -> Option<BTreeSet<String>> {
    let mut set: BTreeSet<String> = match schema.get("type") {
        Some(Value::String(t)) => [t.to_ascii_lowercase()].into(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_ascii_lowercase)
            .collect(),
        _ => return None,
    };
    if schema.get("nullable") == Some(&Value::Bool(true)) {
        set.insert("null".into());
    }
    Some(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hit<'v>(r: &Resolver<'v>, reference: &str) -> Option<&'v Value> {
        match r.target(reference) {
            Ok(Target::Local { value, .. }) => Some(value),
            _ => None,
        }
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
        assert_eq!(percent_decode("%7Bid%7D").as_deref(), Some("{id}"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        assert!(matches!(
            percent_decode("plain"),
            Some(Cow::Borrowed("plain"))
        ));
        for bad in ["%", "%2", "%zz", "%+1", "%FF", "a%2"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn pointers_escapes_and_percent_encoding() {
        let root = json!({"paths": {"/a/{id}": {"x": 1}}, "c": {"a~b": 2, "sp ace": 3, "%": 4}, "xs": [5, 6]});
        let r = Resolver::new(&root);
        assert_eq!(hit(&r, "#/paths/~1a~1{id}/x"), Some(&json!(1)));
        assert_eq!(hit(&r, "#/paths/~1a~1%7Bid%7D/x"), Some(&json!(1)));
        assert_eq!(hit(&r, "#/paths/%7E1a%7E1%7Bid%7D/x"), Some(&json!(1)));
        assert_eq!(hit(&r, "#/c/a~0b"), Some(&json!(2)));
        assert_eq!(hit(&r, "#/c/sp%20ace"), Some(&json!(3)));
        assert_eq!(hit(&r, "#/c/%25"), Some(&json!(4)));
        assert_eq!(hit(&r, "#/xs/1"), Some(&json!(6)));
        assert_eq!(hit(&r, "#"), Some(&root));
        let mut copy = root.clone();
        if let Some(v) = lookup_mut(&mut copy, "/c/a~0b") {
            *v = json!(7);
        }
        assert_eq!(lookup(&copy, "/c/a~0b"), Some(&json!(7)));
        assert!(lookup_mut(&mut copy, "/xs/01").is_none());
        assert!(lookup_mut(&mut copy, "/nope/x").is_none());
        for missing in [
            "#/xs/01", "#/xs/+1", "#/xs/-", "#/c/a~2b", "#/nope", "#nope",
        ] {
            assert_eq!(
                r.target(missing),
                Err(RefError::NotFound(missing.into())),
                "{missing}"
            );
        }
        assert_eq!(
            r.target("#/c/%zz"),
            Err(RefError::Encoding("#/c/%zz".into()))
        );
        assert_eq!(r.target("other.json#/c"), Ok(Target::Remote));
        assert_eq!(r.target("https://x/y.json"), Ok(Target::Remote));
    }

    #[test]
    fn anchors_and_ids() {
        let root = json!({
            "$id": "https://example.com/tool.json",
            "$defs": {
                "a": {"$anchor": "item", "type": "string"},
                "b": {"$id": "#legacy", "type": "integer"},
                "c": {"enum": [{"$anchor": "data"}]},
            },
        });
        let r = Resolver::new(&root);
        assert_eq!(r.base_id(), Some("https://example.com/tool.json"));
        assert_eq!(r.anchor("item"), Some("/$defs/a"));
        assert_eq!(hit(&r, "#item"), Some(&root["$defs"]["a"]));
        assert_eq!(hit(&r, "#legacy"), Some(&root["$defs"]["b"]));
        assert_eq!(hit(&r, "#data"), None, "data is not searched for anchors");
        assert_eq!(
            hit(&r, "https://example.com/tool.json#/$defs/b"),
            Some(&root["$defs"]["b"])
        );
        assert_eq!(
            hit(&r, "https://example.com/tool.json#item"),
            Some(&root["$defs"]["a"])
        );
        assert_eq!(
            r.target("https://example.com/other.json#/$defs/b"),
            Ok(Target::Remote)
        );
        // The first anchor in document order wins.
        let twice = json!({"x": {"$anchor": "n", "k": 1}, "y": {"$anchor": "n", "k": 2}});
        assert_eq!(Resolver::new(&twice).anchor("n"), Some("/x"));
    }

    #[test]
    fn dynamic_anchors_in_document_order() {
        let root = json!({
            "$id": "https://example.com/t.json",
            "$defs": {
                "a": {"$dynamicAnchor": "node", "type": "object"},
                "b": {"items": {"$dynamicAnchor": "node"}},
                "c": {"examples": [{"$dynamicAnchor": "node"}]},
            },
        });
        let r = Resolver::new(&root);
        let both = ["/$defs/a".to_string(), "/$defs/b/items".to_string()];
        assert_eq!(r.dynamic_targets("#node"), both);
        assert_eq!(r.dynamic_targets("https://example.com/t.json#node"), both);
        assert!(r.dynamic_targets("other.json#node").is_empty());
        assert!(r.dynamic_targets("#/$defs/a").is_empty());
        assert!(r.dynamic_targets("#missing").is_empty());
        // A $dynamicAnchor is not a plain anchor here.
        assert_eq!(r.anchor("node"), None);
    }

    #[test]
    fn chains_cycles_and_limits() {
        let root = json!({"$defs": {
            "a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/%24defs/c"}, "c": {"type": "string"},
            "l1": {"$ref": "#/$defs/l2"}, "l2": {"$ref": "#/$defs/l1"},
            "self": {"$ref": "#/$defs/self"},
            "out": {"$ref": "https://x/y.json"},
        }});
        let r = Resolver::new(&root);
        let got = r.resolve(&root["$defs"]["a"], 32).expect("local");
        assert_eq!(got.value, &json!({"type": "string"}));
        assert_eq!(got.pointer.as_deref(), Some("/$defs/c"));
        assert_eq!(got.via, Some("#/%24defs/c"));
        let plain = json!({"type": "integer"});
        let got = r.resolve(&plain, 32).expect("local");
        assert_eq!((got.value, got.pointer, got.via), (&plain, None, None));
        assert_eq!(
            r.resolve(&root["$defs"]["l1"], 32),
            Err(RefError::Cycle(vec![
                "/$defs/l2".into(),
                "/$defs/l1".into(),
                "/$defs/l2".into()
            ]))
        );
        assert_eq!(
            r.resolve(&root["$defs"]["self"], 32),
            Err(RefError::Cycle(vec![
                "/$defs/self".into(),
                "/$defs/self".into()
            ]))
        );
        assert_eq!(r.resolve(&root["$defs"]["a"], 1), Err(RefError::TooLong(1)));
        assert_eq!(
            r.resolve(&root["$defs"]["out"], 32),
            Err(RefError::Remote("https://x/y.json".into()))
        );
        assert_eq!(
            RefError::Cycle(vec!["/a".into(), "/a".into()]).to_string(),
            "$ref cycle: #/a → #/a"
        );
    }

    #[test]
    fn type_sets() {
        let set = |v: Value| type_set(v.as_object().expect("object"));
        let names = |xs: &[&str]| Some(xs.iter().map(|s| s.to_string()).collect());
        assert_eq!(set(json!({"type": "string"})), names(&["string"]));
        assert_eq!(set(json!({"type": "STRING"})), names(&["string"]));
        assert_eq!(
            set(json!({"type": ["integer", "NULL", 3]})),
            names(&["integer", "null"])
        );
        assert_eq!(
            set(json!({"type": "object", "nullable": true})),
            names(&["null", "object"])
        );
        assert_eq!(
            set(json!({"type": "object", "nullable": false})),
            names(&["object"])
        );
        assert_eq!(set(json!({"nullable": true})), None);
        assert_eq!(set(json!({"type": 3})), None);
    }
}
