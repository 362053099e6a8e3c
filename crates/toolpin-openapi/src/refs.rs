//! `$ref` resolution over the document `Value`: local JSON pointers
//! (`#/components/schemas/User`, `#/definitions/User`, any `#/…`), with
//! RFC 6901 escapes and percent-encoding. Parameters, request bodies,
//! responses and path items are inlined; schemas are inlined too, except
//! that a recursive schema becomes `{"$ref": "#/$defs/Name"}` with `Name`
//! in the root's `$defs`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use toolpin_manifest::pointer::{escape_token, unescape_token};
use toolpin_manifest::schema;

/// Schema nesting (counted from the tool object) past which a `$ref` is
/// kept as a reference into `$defs` instead of being inlined, so that no
/// tool nests deeper than normalization allows.
pub const MAX_INLINE_DEPTH: usize = 48;

/// Values one operation's input or output schema may expand to by
/// inlining before its references are kept in `$defs` instead (a `$ref`
/// fan-out would otherwise grow exponentially). GitHub's largest tool
/// has about 19,000.
pub const INLINE_BUDGET: usize = 250_000;

/// References followed one after another (each target only another
/// `$ref`) before the chain is refused.
pub const MAX_REF_CHAIN: usize = 1_000;

/// Schemas inlined one inside another (each through a `$ref`) past which
/// a further `$ref` is kept as a reference into `$defs`: bounds the work
/// and the recursion whatever the document.
pub const MAX_REF_NESTING: usize = 64;

/// Keywords whose value is data, never a schema: copied as written.
const DATA_KEYWORDS: [&str; 5] = ["default", "enum", "const", "example", "examples"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is an object that holds no schema.
const OPAQUE_OBJECTS: [&str; 3] = ["discriminator", "xml", "externalDocs"];

/// The document and how references leaving it are treated.
pub struct Doc<'a> {
    pub root: &'a Value,
    pub allow_remote_refs: bool,
}

/// Where a reference leads.
pub enum Target<'a> {
    /// A value in this document, with its pointer (`/components/…`).
    Local(&'a Value, String),
    /// Another document (`other.yaml#/…`, `https://…`).
    Remote,
}

impl<'a> Doc<'a> {
    /// Looks up a `$ref` string.
    pub fn lookup(&self, reference: &str) -> Result<Target<'a>, String> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Ok(Target::Remote);
        };
        // Decoded and looked up by the shared schema model
        // (toolpin_manifest::schema), as the drift engine reads it.
        let pointer = schema::percent_decode(fragment)
            .ok_or_else(|| format!("$ref {reference:?} has an invalid percent-encoding"))?
            .into_owned();
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(format!(
                "$ref {reference:?} names an anchor; only JSON pointers (#/…) are supported"
            ));
        }
        match schema::lookup(self.root, &pointer) {
            Some(v) => Ok(Target::Local(v, pointer)),
            None => Err(format!("$ref {reference:?} points to nothing")),
        }
    }

    /// Follows a chain of `$ref`s from a parameter, request body, response
    /// or path item to the object it names. `summary` and `description`
    /// beside a reference (OpenAPI 3.1) override the target's; the
    /// reference nearest the use wins.
    pub fn deref(&self, value: &'a Value, at: &str) -> Result<Resolved<'a>, String> {
        let mut cur = value;
        let mut cur_at = at.to_string();
        let mut seen: Vec<String> = Vec::new();
        let mut overrides: Vec<(&'a str, &'a Value)> = Vec::new();
        while let Some(Value::String(reference)) = cur.get("$ref") {
            for key in ["summary", "description"] {
                if let Some(v) = cur.get(key) {
                    if !overrides.iter().any(|(k, _)| *k == key) {
                        overrides.push((key, v));
                    }
                }
            }
            match self.lookup(reference).map_err(|e| format!("{e} (at #{cur_at})"))? {
                Target::Remote => {
                    return Err(format!(
                        "$ref {reference:?} at #{cur_at} leaves the document; only schemas may (allow_remote_refs), not parameters, request bodies, responses or path items"
                    ))
                }
                Target::Local(target, pointer) => {
                    if seen.len() >= MAX_REF_CHAIN {
                        return Err(format!(
                            "a chain of more than {MAX_REF_CHAIN} $refs (at #{at})"
                        ));
                    }
                    if seen.contains(&pointer) {
                        seen.push(pointer);
                        let chain: Vec<String> = seen.iter().map(|p| format!("#{p}")).collect();
                        return Err(format!(
                            "$ref cycle: {} never reaches an object (at #{at})",
                            chain.join(" → ")
                        ));
                    }
                    seen.push(pointer.clone());
                    cur = target;
                    cur_at = pointer;
                }
            }
        }
        Ok(Resolved {
            value: cur,
            at: cur_at,
            overrides,
        })
    }
}

/// A parameter, request body, response or path item with its references
/// followed.
pub struct Resolved<'a> {
    pub value: &'a Value,
    /// Where the object is in the document (a pointer).
    pub at: String,
    overrides: Vec<(&'a str, &'a Value)>,
}

impl<'a> Resolved<'a> {
    /// A member, with the overrides of the references that led here.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.overrides
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .or_else(|| self.value.get(key))
    }
}

/// How schema references are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Inline every reference, except recursive ones (and ones past
    /// [`MAX_INLINE_DEPTH`]), which point into `$defs`.
    Inline,
    /// Every reference points into `$defs`, each definition written once:
    /// the fallback when inlining would exceed [`INLINE_BUDGET`].
    Defs,
}

/// Why a schema could not be built.
pub enum SchemaError {
    /// Inlining went past the budget; retry in [`Mode::Defs`].
    Budget,
    /// A located, one-line message.
    Invalid(String),
}

/// One step of the location of the value being copied, for messages.
enum Loc<'a> {
    /// A pointer into the document (where a walk starts, or a `$ref`'s
    /// target).
    Base(String),
    Key(&'a str),
    Index(usize),
}

/// Builds the schemas of one root (an inputSchema or an outputSchema),
/// collecting the definitions that recursion needs into its `$defs`.
pub struct Inliner<'d, 'a> {
    doc: &'d Doc<'a>,
    mode: Mode,
    /// The schemas being inlined (their pointers), innermost last.
    stack: Vec<String>,
    /// Pointer → its name in `$defs`.
    names: BTreeMap<String, String>,
    taken: BTreeSet<String>,
    /// Definitions named but not built yet.
    pending: Vec<String>,
    defs: Map<String, Value>,
    /// Values written so far.
    spent: usize,
    loc: Vec<Loc<'a>>,
}

impl<'d, 'a> Inliner<'d, 'a> {
    pub fn new(doc: &'d Doc<'a>, mode: Mode) -> Self {
        Self {
            doc,
            mode,
            stack: Vec::new(),
            names: BTreeMap::new(),
            taken: BTreeSet::new(),
            pending: Vec::new(),
            defs: Map::new(),
            spent: 0,
            loc: Vec::new(),
        }
    }

    /// Copies the schema found at `at` (a document pointer), resolving
    /// its references; `depth` is its nesting in the tool.
    pub fn schema(
        &mut self,
        value: &'a Value,
        at: &str,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        self.loc.push(Loc::Base(at.to_string()));
        let out = self.walk_schema(value, depth);
        self.loc.pop();
        out
    }

    /// Keeps `names` out of the `$defs` names this inliner gives: the root
    /// schema defines them itself.
    pub fn reserve<'n>(&mut self, names: impl IntoIterator<Item = &'n String>) {
        self.taken.extend(names.into_iter().cloned());
    }

    /// The `$defs` a schema defines at its root, following references at
    /// the root as [`Inliner::schema`] inlines them.
    pub fn root_defs(&self, mut value: &'a Value) -> Option<&'a Map<String, Value>> {
        for _ in 0..MAX_REF_CHAIN {
            match value.get("$ref").and_then(Value::as_str) {
                Some(r) => match self.doc.lookup(r) {
                    Ok(Target::Local(target, _)) => value = target,
                    _ => return None,
                },
                None => return value.get("$defs").and_then(Value::as_object),
            }
        }
        None
    }

    /// Copies one member of a schema-like object found at `at` (a Swagger
    /// 2.0 parameter's `type`, `items`, `enum`, …) as a schema keyword.
    pub fn member(
        &mut self,
        key: &'a str,
        value: &'a Value,
        at: &str,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        self.loc.push(Loc::Base(at.to_string()));
        self.loc.push(Loc::Key(key));
        let out = self.keyword(key, value, depth);
        self.loc.pop();
        self.loc.pop();
        out
    }

    /// The `$defs` that the schemas built so far refer to, each built in
    /// turn (a definition may need others).
    pub fn finish(&mut self) -> Result<Map<String, Value>, SchemaError> {
        while let Some(pointer) = self.pending.pop() {
            let Ok(Target::Local(target, _)) = self.doc.lookup(&format!("#{pointer}")) else {
                continue;
            };
            let name = self.names.get(&pointer).cloned().unwrap_or_default();
            self.stack.push(pointer.clone());
            self.loc.push(Loc::Base(pointer.clone()));
            let built = self.walk_schema(target, 3);
            self.loc.pop();
            self.stack.pop();
            self.defs.insert(name, built?);
        }
        Ok(std::mem::take(&mut self.defs))
    }

    /// Values written so far.
    pub fn spent(&self) -> usize {
        self.spent
    }

    fn spend(&mut self) -> Result<(), SchemaError> {
        self.spent += 1;
        if self.mode == Mode::Inline && self.spent > INLINE_BUDGET {
            return Err(SchemaError::Budget);
        }
        Ok(())
    }

    fn location(&self) -> String {
        let start = self
            .loc
            .iter()
            .rposition(|l| matches!(l, Loc::Base(_)))
            .unwrap_or(0);
        let mut out = String::new();
        for l in &self.loc[start..] {
            match l {
                Loc::Base(p) => out = format!("#{p}"),
                Loc::Key(k) => {
                    out.push('/');
                    out.push_str(&escape_token(k));
                }
                Loc::Index(i) => {
                    out.push('/');
                    out.push_str(&i.to_string());
                }
            }
        }
        if out.is_empty() {
            "#".into()
        } else {
            out
        }
    }

    /// A schema position: an object may be a reference.
    fn walk_schema(&mut self, value: &'a Value, depth: usize) -> Result<Value, SchemaError> {
        self.spend()?;
        let Value::Object(map) = value else {
            return self.walk_any(value, depth);
        };
        if let Some(Value::String(reference)) = map.get("$ref") {
            return self.reference(reference, map, depth);
        }
        self.walk_object(map, depth)
    }

    /// A schema object's members, by keyword.
    fn walk_object(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        let mut out = Map::new();
        for (key, value) in map {
            self.loc.push(Loc::Key(key));
            let built = self.keyword(key, value, depth + 1);
            self.loc.pop();
            out.insert(key.clone(), built?);
        }
        Ok(Value::Object(out))
    }

    fn keyword(
        &mut self,
        key: &'a str,
        value: &'a Value,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        if DATA_KEYWORDS.contains(&key) || key.starts_with("x-") || OPAQUE_OBJECTS.contains(&key) {
            self.spend()?;
            return Ok(value.clone());
        }
        if SCHEMA_MAPS.contains(&key) {
            if let Value::Object(entries) = value {
                self.spend()?;
                let mut out = Map::new();
                for (name, schema) in entries {
                    self.loc.push(Loc::Key(name));
                    let built = self.walk_schema(schema, depth + 1);
                    self.loc.pop();
                    out.insert(name.clone(), built?);
                }
                return Ok(Value::Object(out));
            }
        }
        self.walk_any(value, depth)
    }

    /// Any other keyword value: objects in it are schemas (`items`,
    /// `not`, the elements of `allOf`, …); scalars are copied.
    fn walk_any(&mut self, value: &'a Value, depth: usize) -> Result<Value, SchemaError> {
        match value {
            Value::Object(_) => self.walk_schema(value, depth),
            Value::Array(items) => {
                self.spend()?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.loc.push(Loc::Index(i));
                    let built = self.walk_any(item, depth + 1);
                    self.loc.pop();
                    out.push(built?);
                }
                Ok(Value::Array(out))
            }
            other => Ok(other.clone()),
        }
    }

    fn reference(
        &mut self,
        reference: &'a str,
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        // Follow aliases (targets that are only another `$ref`) in a loop:
        // they are never inlined or defined themselves, and a chain of
        // them that comes back on itself never reaches a schema.
        let mut current = reference;
        let mut chain: Vec<String> = Vec::new();
        let (target, pointer) = loop {
            let at = match chain.last() {
                None => self.location(),
                Some(p) => format!("#{p}"),
            };
            let found = self
                .doc
                .lookup(current)
                .map_err(|e| SchemaError::Invalid(format!("{e} (at {at})")))?;
            let (target, pointer) = match found {
                Target::Remote if self.doc.allow_remote_refs => {
                    // Kept exactly as written: the drift engine reports
                    // what it cannot follow as schema-unanalyzable.
                    let mut out = Map::new();
                    out.insert("$ref".into(), Value::String(current.to_string()));
                    self.siblings(map, depth, &mut out)?;
                    return Ok(Value::Object(out));
                }
                Target::Remote => {
                    return Err(SchemaError::Invalid(format!(
                        "$ref {current:?} at {at} leaves the document; set allow_remote_refs = true to keep such references as written"
                    )))
                }
                Target::Local(target, pointer) => (target, pointer),
            };
            if chain.contains(&pointer) {
                chain.push(pointer);
                let shown: Vec<String> = chain.iter().map(|p| format!("#{p}")).collect();
                return Err(SchemaError::Invalid(format!(
                    "$ref cycle: {} never reaches a schema (at {at})",
                    shown.join(" → ")
                )));
            }
            chain.push(pointer.clone());
            if chain.len() > MAX_REF_CHAIN {
                return Err(SchemaError::Invalid(format!(
                    "a chain of more than {MAX_REF_CHAIN} $refs that are only references (at {})",
                    self.location()
                )));
            }
            match alias_of(target) {
                Some(next) => current = next,
                None => break (target, pointer),
            }
        };
        let recursive = self.stack.contains(&pointer);
        // The root of a schema is always inlined, in either mode.
        let by_mode = self.mode == Mode::Defs && !self.stack.is_empty();
        if recursive || by_mode || depth > MAX_INLINE_DEPTH || self.stack.len() >= MAX_REF_NESTING {
            let name = self.def_name(&pointer);
            let mut out = Map::new();
            out.insert(
                "$ref".into(),
                Value::String(format!("#/$defs/{}", escape_token(&name))),
            );
            self.siblings(map, depth, &mut out)?;
            return Ok(Value::Object(out));
        }
        self.stack.push(pointer.clone());
        self.loc.push(Loc::Base(pointer));
        let inlined = self.walk_schema(target, depth);
        self.loc.pop();
        self.stack.pop();
        let inlined = inlined?;
        if map.len() == 1 {
            return Ok(inlined);
        }
        // Members beside the `$ref` (a description, a default) override
        // the target's, as OpenAPI 3.1 reads them.
        let mut out = match inlined {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("allOf".into(), Value::Array(vec![other]));
                m
            }
        };
        self.siblings(map, depth, &mut out)?;
        Ok(Value::Object(out))
    }

    /// The members beside a `$ref`, built as keywords into `out`.
    fn siblings(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
        out: &mut Map<String, Value>,
    ) -> Result<(), SchemaError> {
        for (key, value) in map.iter().filter(|(k, _)| *k != "$ref") {
            self.loc.push(Loc::Key(key));
            let built = self.keyword(key, value, depth + 1);
            self.loc.pop();
            out.insert(key.clone(), built?);
        }
        Ok(())
    }

    /// The `$defs` name for a pointer: its last token, numbered when two
    /// pointers end alike. Schedules the definition to be built.
    fn def_name(&mut self, pointer: &str) -> String {
        if let Some(name) = self.names.get(pointer) {
            return name.clone();
        }
        let last = pointer.rsplit('/').next().unwrap_or_default();
        let base = unescape_token(last).map_or_else(|| last.to_string(), |t| t.into_owned());
        let base = if base.is_empty() {
            "schema".into()
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        self.names.insert(pointer.to_string(), name.clone());
        self.pending.push(pointer.to_string());
        name
    }
}

/// The reference a target that is only another reference
/// (`{"$ref": "…"}`) stands for.
fn alias_of(target: &Value) -> Option<&str> {
    match target {
        Value::Object(m) if m.len() == 1 => m.get("$ref").and_then(Value::as_str),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(root: &Value) -> Doc<'_> {
        Doc {
            root,
            allow_remote_refs: false,
        }
    }

    #[test]
    fn pointers_with_escapes_and_percent_encoding() {
        let root = json!({"paths": {"/a/{id}": {"get": {"x": 1}}}, "c": {"a~b": 2, "sp ace": 3}});
        let d = doc(&root);
        let hit = |r: &str| match d.lookup(r) {
            Ok(Target::Local(v, _)) => Some(v.clone()),
            _ => None,
        };
        assert_eq!(hit("#/paths/~1a~1{id}/get/x"), Some(json!(1)));
        assert_eq!(hit("#/paths/~1a~1%7Bid%7D/get/x"), Some(json!(1)));
        assert_eq!(hit("#/c/a~0b"), Some(json!(2)));
        assert_eq!(hit("#/c/sp%20ace"), Some(json!(3)));
        assert!(matches!(d.lookup("other.yaml#/x"), Ok(Target::Remote)));
        assert!(matches!(d.lookup("https://x/y.json"), Ok(Target::Remote)));
        let err = d.lookup("#/c/nope").err().expect("missing");
        assert!(err.contains("points to nothing"), "{err}");
        assert!(d.lookup("#/c/%zz").is_err());
        assert!(d.lookup("#anchor").is_err());
    }

    #[test]
    fn deref_follows_chains_and_refuses_cycles() {
        let root = json!({"p": {"a": {"$ref": "#/p/b", "description": "outer"}, "b": {"$ref": "#/p/c"}, "c": {"name": "x", "description": "inner"},
                          "l1": {"$ref": "#/p/l2"}, "l2": {"$ref": "#/p/l1"}}});
        let d = doc(&root);
        let r = d.deref(&root["p"]["a"], "/p/a").expect("resolves");
        assert_eq!(r.get("name"), Some(&json!("x")));
        assert_eq!(r.get("description"), Some(&json!("outer")));
        assert_eq!(r.at, "/p/c");
        let err = d.deref(&root["p"]["l1"], "/p/l1").err().expect("cycle");
        assert!(
            err.starts_with("$ref cycle: #/p/l2 → #/p/l1 → #/p/l2 never reaches an object"),
            "{err}"
        );
    }
}
