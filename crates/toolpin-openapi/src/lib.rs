//! OpenAPI documents as a tool source: Swagger 2.0, OpenAPI 3.0 and 3.1,
//! converted into one tool per operation the way agent runtimes convert
//! them on boot (docs/openapi.md states every rule).
//!
//! Pure: a parsed document `Value` and [`Options`] in, tools out (one at a
//! time, into a sink) with warnings such as renamed duplicates. No network,
//! no files, no terminal. The document is walked as a `serde_json::Value`:
//! schemas are copied member by member, so `x-` extensions and members no
//! OpenAPI version defines reach the tool exactly as written.

pub mod naming;
mod refs;
pub mod select;

use std::collections::HashMap;

use serde_json::{json, Map, Value};
use toolpin_manifest::normalize::type_name;
use toolpin_manifest::pointer::escape_token;

pub use naming::MAX_NAME_LEN;
pub use refs::{INLINE_BUDGET, MAX_INLINE_DEPTH};

/// Values all tools of one document may hold in all. Past it the
/// conversion stops with an error rather than exhaust memory: GitHub's
/// description (1,223 operations) converts to about 490,000.
pub const TOTAL_BUDGET: usize = 10_000_000;
pub use select::{Candidate, PathPattern, Selection};

use refs::{Doc, Inliner, Mode, Resolved, SchemaError};

/// The version of these conversion rules, recorded in the lockfile: a
/// toolpin whose rules convert differently records another number.
pub const CONVERTER_VERSION: u64 = 1;

/// HTTP methods that hold operations in a Path Item, in the order the
/// specification lists them (the order duplicates are named in).
pub const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The `_meta` member under which each tool records its operation.
pub const META_KEY: &str = "toolpin/openapi";

/// Where the JSON request body goes in the inputSchema.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BodyMode {
    /// Under one `body` property.
    #[default]
    Property,
    /// Its properties merged at the top level, beside the parameters, as
    /// FastMCP does.
    Merge,
}

impl BodyMode {
    pub fn name(self) -> &'static str {
        match self {
            BodyMode::Property => "property",
            BodyMode::Merge => "merge",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "property" => Ok(BodyMode::Property),
            "merge" => Ok(BodyMode::Merge),
            other => Err(format!(
                "{other:?} is not a body mode; use \"property\" (the body under one `body` property) or \"merge\" (its properties at the top level)"
            )),
        }
    }
}

/// The conversion settings. They are part of the pin: the lockfile records
/// them ([`Options::record`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub body: BodyMode,
    /// Whether to give tools an outputSchema from the 2xx JSON response.
    pub output_schema: bool,
    /// Keep `$ref`s to other documents as written instead of failing.
    pub allow_remote_refs: bool,
    /// Which operations become tools.
    pub selection: Selection,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            body: BodyMode::Property,
            output_schema: true,
            allow_remote_refs: false,
            selection: Selection::default(),
        }
    }
}

impl Options {
    /// Every setting, defaults included, with the converter version: what
    /// the lockfile's `source.conversion` holds.
    pub fn record(&self) -> Value {
        let mut out = Map::new();
        out.insert("allow_remote_refs".into(), json!(self.allow_remote_refs));
        out.insert("body".into(), json!(self.body.name()));
        out.insert("output_schema".into(), json!(self.output_schema));
        out.insert("version".into(), json!(CONVERTER_VERSION));
        self.selection.record(&mut out);
        Value::Object(out)
    }
}

/// Why a document cannot be converted: one line, naming the operation and
/// the JSON pointer of what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvertError {
    pub message: String,
}

impl std::fmt::Display for ConvertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConvertError {}

fn fail(message: impl Into<String>) -> ConvertError {
    ConvertError {
        message: message.into(),
    }
}

/// What a conversion did besides producing tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Converted {
    /// Operations in the document.
    pub operations: usize,
    /// Tools produced (operations the pickers kept).
    pub tools: usize,
    /// Things worth knowing, one line each: renamed duplicates, a body
    /// that could not be merged, skipped parameters.
    pub warnings: Vec<String>,
}

/// Whether a parsed document is an OpenAPI or Swagger document.
pub fn is_openapi(doc: &Value) -> bool {
    doc.get("openapi").is_some_and(Value::is_string)
        || doc.get("swagger").is_some_and(Value::is_string)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    Swagger2,
    OpenApi3,
}

fn dialect(doc: &Value) -> Result<Dialect, ConvertError> {
    if !doc.is_object() {
        return Err(fail(format!(
            "not an OpenAPI document: it is {}, expected an object",
            type_name(doc)
        )));
    }
    if let Some(v) = doc.get("swagger") {
        return match v.as_str() {
            Some(s) if s == "2.0" || s.starts_with("2.0.") => Ok(Dialect::Swagger2),
            _ => Err(fail(format!(
                "unsupported Swagger version {v} at #/swagger; toolpin reads 2.0"
            ))),
        };
    }
    match doc.get("openapi") {
        Some(Value::String(s)) if s.starts_with("3.") => Ok(Dialect::OpenApi3),
        Some(v) => Err(fail(format!(
            "unsupported OpenAPI version {v} at #/openapi; toolpin reads 3.0 and 3.1 (and Swagger 2.0)"
        ))),
        None => Err(fail(
            "not an OpenAPI document: it has no `openapi` or `swagger` member",
        )),
    }
}

/// One operation, located.
struct OpInfo<'a> {
    item: usize,
    method: &'static str,
    op: &'a Map<String, Value>,
    at: String,
    id: Option<&'a str>,
    name: String,
}

impl OpInfo<'_> {
    fn describe(&self, path: &str) -> String {
        let mut out = format!("{} {path}", self.method.to_ascii_uppercase());
        if let Some(id) = self.id {
            out += &format!(" (operationId {id:?})");
        }
        out
    }
}

/// A tool's description: the operation's description, else its summary,
/// else the method and path.
fn description(info: &OpInfo, path: &str) -> String {
    let text = |key: &str| {
        info.op
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    text("description")
        .or_else(|| text("summary"))
        .map(str::to_string)
        .unwrap_or_else(|| format!("Executes {} {path}", info.method.to_ascii_uppercase()))
}

/// Converts every selected operation of `doc` into a tool and hands each
/// to `sink` as soon as it is built, so only one converted tool exists at
/// a time. An error from the sink stops the conversion, naming the
/// operation.
pub fn convert(
    doc: &Value,
    options: &Options,
    sink: &mut dyn FnMut(Value) -> Result<(), String>,
) -> Result<Converted, ConvertError> {
    let dialect = dialect(doc)?;
    let d = Doc {
        root: doc,
        allow_remote_refs: options.allow_remote_refs,
    };
    let items = path_items(&d)?;
    let named = name_operations(&items)?;
    let ops = &named.ops;
    let keep: Vec<bool> = ops
        .iter()
        .map(|info| {
            let tags: Vec<&str> = match info.op.get("tags") {
                Some(Value::Array(tags)) => tags.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            options.selection.keeps(&Candidate {
                id: info.id.unwrap_or(&info.name),
                tags: &tags,
                method: info.method,
                path: items[info.item].0,
            })
        })
        .collect();
    let mut warnings = named.warnings(&items, &keep);
    let ctx = Ctx {
        doc: &d,
        dialect,
        options,
    };
    let mut converted = Converted {
        operations: ops.len(),
        ..Converted::default()
    };
    let mut spent = 0usize;
    for (info, _) in ops.iter().zip(&keep).filter(|(_, keep)| **keep) {
        let (path, item) = &items[info.item];
        let what = info.describe(path);
        if spent > TOTAL_BUDGET {
            return Err(fail(format!(
                "the converted tools hold more than {TOTAL_BUDGET} schema values in all (stopped before operation {what}); pick fewer operations with include_tags, include_operations or include_paths"
            )));
        }
        let (tool, notes) = ctx
            .tool_within_budget(info, path, item, &mut spent)
            .map_err(|m| fail(format!("operation {what}: {m}")))?;
        warnings.extend(notes.into_iter().map(|n| format!("operation {what}: {n}")));
        sink(tool).map_err(|e| fail(format!("operation {what}: tool {:?}: {e}", info.name)))?;
        converted.tools += 1;
    }
    converted.warnings = warnings;
    Ok(converted)
}

/// The document's path items after references, `x-` members left out.
fn path_items<'a>(d: &Doc<'a>) -> Result<Vec<(&'a str, Resolved<'a>)>, ConvertError> {
    let paths = match d.root.get("paths") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            return Err(fail(format!(
                "#/paths is {}, expected an object",
                type_name(other)
            )))
        }
    };
    let mut items = Vec::new();
    for (path, item) in paths.into_iter().flatten() {
        if path.starts_with("x-") {
            continue;
        }
        let at = format!("/paths/{}", escape_token(path));
        let resolved = d
            .deref(item, &at)
            .map_err(|e| fail(format!("path {path}: {e}")))?;
        if !resolved.value.is_object() {
            return Err(fail(format!(
                "path {path}: the path item at #{} is {}, expected an object",
                resolved.at,
                type_name(resolved.value)
            )));
        }
        items.push((path.as_str(), resolved));
    }
    Ok(items)
}

/// Every operation with its tool name, and which names were taken.
struct Named<'a> {
    ops: Vec<OpInfo<'a>>,
    /// The operation holding each name it claimed first.
    holders: HashMap<String, usize>,
    /// Operations named otherwise than their base name: (index, base).
    renamed: Vec<(usize, String)>,
}

/// Names first, over every operation in a fixed order, so that a tool's
/// name does not depend on which operations the pickers keep.
fn name_operations<'a>(items: &[(&str, Resolved<'a>)]) -> Result<Named<'a>, ConvertError> {
    let mut namer = naming::Namer::default();
    let mut named = Named {
        ops: Vec::new(),
        holders: HashMap::new(),
        renamed: Vec::new(),
    };
    for (i, (path, item)) in items.iter().enumerate() {
        for method in METHODS {
            let Some(op) = item.value.get(method) else {
                continue;
            };
            let at = format!("{}/{method}", item.at);
            let Value::Object(op) = op else {
                return Err(fail(format!(
                    "{} {path}: the operation at #{at} is {}, expected an object",
                    method.to_ascii_uppercase(),
                    type_name(op)
                )));
            };
            let id = op
                .get("operationId")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let base = naming::base_name(id, method, path);
            let (name, was_renamed) = namer.claim(&base);
            let index = named.ops.len();
            if was_renamed {
                named.renamed.push((index, base));
            } else {
                named.holders.insert(name.clone(), index);
            }
            named.ops.push(OpInfo {
                item: i,
                method,
                op,
                at,
                id,
                name,
            });
        }
    }
    Ok(named)
}

impl Named<'_> {
    /// A warning for each kept operation whose base name another held.
    fn warnings(&self, items: &[(&str, Resolved)], keep: &[bool]) -> Vec<String> {
        let ops = &self.ops;
        let mut warnings = Vec::new();
        for (index, base) in &self.renamed {
            if !keep[*index] {
                continue;
            }
            let info = &ops[*index];
            let first = self
                .holders
                .get(base)
                .map(|&h| ops[h].describe(items[ops[h].item].0))
                .unwrap_or_else(|| "another operation".into());
            warnings.push(format!(
                "operation {}: the tool name {base:?} is taken by {first}; named {:?}",
                info.describe(items[info.item].0),
                info.name
            ));
        }
        warnings
    }
}

/// [`convert`] into a list, for tests and small documents.
pub fn convert_all(
    doc: &Value,
    options: &Options,
) -> Result<(Vec<Value>, Converted), ConvertError> {
    let mut tools = Vec::new();
    let converted = convert(doc, options, &mut |tool| {
        tools.push(tool);
        Ok(())
    })?;
    Ok((tools, converted))
}

struct Ctx<'d, 'a> {
    doc: &'d Doc<'a>,
    dialect: Dialect,
    options: &'d Options,
}

/// A parameter after references, with the property name it gets.
struct Param<'a> {
    name: &'a str,
    location: &'a str,
    resolved: Resolved<'a>,
}

/// The request body: its schema (built) and what the inputSchema needs.
struct Body {
    schema: Value,
    description: Option<Value>,
    required: bool,
}

/// Header parameters OpenAPI 3 says to ignore.
const IGNORED_HEADERS: [&str; 3] = ["accept", "content-type", "authorization"];

/// Members of a Swagger 2.0 parameter that are not part of its schema.
const SWAGGER2_PARAM_MEMBERS: [&str; 6] = [
    "name",
    "in",
    "description",
    "required",
    "allowEmptyValue",
    "collectionFormat",
];

impl<'a> Ctx<'_, 'a> {
    /// One operation as a tool with its schemas inlined, or, when they
    /// would inline past [`INLINE_BUDGET`], with every `$ref` kept in
    /// `$defs`; with its notes. The error is the message, without the
    /// operation.
    fn tool_within_budget(
        &self,
        info: &OpInfo<'a>,
        path: &str,
        item: &Resolved<'a>,
        spent: &mut usize,
    ) -> Result<(Value, Vec<String>), String> {
        let mut notes = Vec::new();
        let tool = match self.tool(info, path, item, Mode::Inline, &mut notes, spent) {
            Ok(tool) => tool,
            Err(SchemaError::Budget) => {
                notes.clear();
                let tool = self
                    .tool(info, path, item, Mode::Defs, &mut notes, spent)
                    .map_err(|e| match e {
                        SchemaError::Invalid(m) => m,
                        SchemaError::Budget => "too large".to_string(),
                    })?;
                notes.push(format!(
                    "its schemas would inline to more than {INLINE_BUDGET} values; every $ref is kept in $defs instead"
                ));
                tool
            }
            Err(SchemaError::Invalid(m)) => return Err(m),
        };
        Ok((tool, notes))
    }

    /// One operation as a tool: its description, the inputSchema from its
    /// parameters and body, the outputSchema from its 2xx JSON response,
    /// and where it came from under `_meta`.
    fn tool(
        &self,
        info: &OpInfo<'a>,
        path: &str,
        item: &Resolved<'a>,
        mode: Mode,
        notes: &mut Vec<String>,
        spent: &mut usize,
    ) -> Result<Value, SchemaError> {
        let mut input = Inliner::new(self.doc, mode);
        let params = self.parameters(info, item, notes)?;
        let (plain, mut body) = self.sort_parameters(&params, &mut input, notes)?;
        if self.dialect == Dialect::OpenApi3 {
            body = self.request_body(info, &mut input)?;
        }
        let input_schema = self.input_schema(&plain, body, &mut input, notes)?;
        *spent += input.spent();

        let mut tool = Map::new();
        tool.insert("name".into(), json!(info.name));
        tool.insert("description".into(), json!(description(info, path)));
        tool.insert("inputSchema".into(), Value::Object(input_schema));
        if self.options.output_schema {
            if let Some(out) = self.output_schema(info, mode, spent)? {
                tool.insert("outputSchema".into(), out);
            }
        }
        let mut meta = Map::new();
        meta.insert("method".into(), json!(info.method.to_ascii_uppercase()));
        meta.insert("path".into(), json!(path));
        if let Some(id) = info.id {
            meta.insert("operationId".into(), json!(id));
        }
        tool.insert("_meta".into(), json!({ META_KEY: meta }));
        Ok(Value::Object(tool))
    }

    /// The parameters by where they go: path, query, header and cookie
    /// parameters each become a property; a Swagger 2.0 body parameter, or
    /// else its formData parameters, become the body; any other location is
    /// skipped with a note.
    fn sort_parameters<'p>(
        &self,
        params: &'p [Param<'a>],
        input: &mut Inliner<'_, 'a>,
        notes: &mut Vec<String>,
    ) -> Result<(Vec<&'p Param<'a>>, Option<Body>), SchemaError> {
        let mut body: Option<Body> = None;
        let mut form: Vec<&Param> = Vec::new();
        let mut plain: Vec<&Param> = Vec::new();
        for p in params {
            match p.location {
                "path" | "query" | "header" | "cookie" => plain.push(p),
                "body" if self.dialect == Dialect::Swagger2 => {
                    let schema = match p.resolved.get("schema") {
                        Some(s) => input.schema(s, &format!("{}/schema", p.resolved.at), 3)?,
                        None => json!({}),
                    };
                    body = Some(Body {
                        schema,
                        description: p.resolved.get("description").cloned(),
                        required: p.resolved.get("required") == Some(&Value::Bool(true)),
                    });
                }
                "formData" if self.dialect == Dialect::Swagger2 => form.push(p),
                other => notes.push(format!(
                    "parameter {:?} at #{} is in {other:?}, which toolpin does not convert; skipped",
                    p.name, p.resolved.at
                )),
            }
        }
        if !form.is_empty() {
            if body.is_some() {
                notes.push(
                    "both a body parameter and formData parameters; the body parameter is used"
                        .into(),
                );
            } else {
                body = Some(self.form_body(input, &form)?);
            }
        }
        Ok((plain, body))
    }

    /// Swagger 2.0 formData parameters as one object body.
    fn form_body(
        &self,
        input: &mut Inliner<'_, 'a>,
        form: &[&Param<'a>],
    ) -> Result<Body, SchemaError> {
        let mut fprops = Map::new();
        let mut freq = Vec::new();
        for p in form {
            fprops.insert(p.name.to_string(), self.param_schema(input, p)?);
            if p.resolved.get("required") == Some(&Value::Bool(true)) {
                freq.push(json!(p.name));
            }
        }
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(fprops));
        if !freq.is_empty() {
            schema.insert("required".into(), Value::Array(freq.clone()));
        }
        Ok(Body {
            schema: Value::Object(schema),
            description: None,
            required: !freq.is_empty(),
        })
    }

    /// The inputSchema: a property per parameter (suffixed with its
    /// location where two share a name or one meets a body property), then
    /// the body, merged or under `body`; the first of two inputs of one
    /// name kept; `$defs` from the inliner.
    fn input_schema(
        &self,
        plain: &[&Param<'a>],
        body: Option<Body>,
        input: &mut Inliner<'_, 'a>,
        notes: &mut Vec<String>,
    ) -> Result<Map<String, Value>, SchemaError> {
        let mut props: Vec<(String, Value)> = Vec::new();
        let mut required: Vec<String> = Vec::new();
        let merged = body.as_ref().and_then(|b| self.merged_body(b, notes));
        let taken: Vec<&str> = match (&merged, &body) {
            (Some((m, _)), _) => m.keys().map(String::as_str).collect(),
            (None, Some(_)) => vec!["body"],
            (None, None) => Vec::new(),
        };
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for p in plain {
            *counts.entry(p.name).or_default() += 1;
        }
        for p in plain {
            let clash = counts.get(p.name).copied().unwrap_or(0) > 1 || taken.contains(&p.name);
            let key = if clash {
                format!("{}__{}", p.name, p.location)
            } else {
                p.name.to_string()
            };
            let schema = self.param_schema(input, p)?;
            if p.location == "path" || p.resolved.get("required") == Some(&Value::Bool(true)) {
                required.push(key.clone());
            }
            props.push((key, schema));
        }
        match (merged, body) {
            (Some((m, merged_required)), _) => {
                props.extend(m);
                required.extend(
                    merged_required
                        .iter()
                        .filter_map(Value::as_str)
                        .map(String::from),
                );
            }
            (None, Some(b)) => {
                let schema = match b.description {
                    Some(d) => with_member(b.schema, "description", d),
                    None => b.schema,
                };
                props.push(("body".into(), schema));
                if b.required {
                    required.push("body".into());
                }
            }
            (None, None) => {}
        }
        let mut properties = Map::new();
        for (k, v) in props {
            if properties.contains_key(&k) {
                notes.push(format!(
                    "two inputs are both named {k:?}; the first is kept"
                ));
                continue;
            }
            properties.insert(k, v);
        }
        required.sort();
        required.dedup();
        let mut input_schema = Map::new();
        input_schema.insert("type".into(), json!("object"));
        input_schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            input_schema.insert("required".into(), json!(required));
        }
        let defs = input.finish()?;
        if !defs.is_empty() {
            input_schema.insert("$defs".into(), Value::Object(defs));
        }
        Ok(input_schema)
    }

    /// In merge mode, the body's properties and (when the body is
    /// required) its required keys, to stand at the top level; `None` in
    /// property mode, or with a note when the body is not an object schema
    /// with properties.
    fn merged_body(
        &self,
        body: &Body,
        notes: &mut Vec<String>,
    ) -> Option<(Map<String, Value>, Vec<Value>)> {
        if self.options.body != BodyMode::Merge {
            return None;
        }
        let Some((properties, req)) = mergeable(&body.schema) else {
            notes.push(
                "the request body is not an object schema with properties; kept under `body` instead of merged"
                    .into(),
            );
            return None;
        };
        let required = if body.required {
            req.to_vec()
        } else {
            Vec::new()
        };
        Some((properties.clone(), required))
    }

    /// The path item's parameters, then the operation's, which replace a
    /// path-level parameter of the same name and location.
    fn parameters(
        &self,
        info: &OpInfo<'a>,
        item: &Resolved<'a>,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Param<'a>>, SchemaError> {
        let invalid = SchemaError::Invalid;
        let mut out: Vec<Param<'a>> = Vec::new();
        let levels = [
            (
                item.value.get("parameters"),
                format!("{}/parameters", item.at),
            ),
            (info.op.get("parameters"), format!("{}/parameters", info.at)),
        ];
        for (list, at) in levels {
            let list = match list {
                None | Some(Value::Null) => continue,
                Some(Value::Array(list)) => list,
                Some(other) => {
                    return Err(invalid(format!(
                        "#{at} is {}, expected an array",
                        type_name(other)
                    )))
                }
            };
            for (i, p) in list.iter().enumerate() {
                let p_at = format!("{at}/{i}");
                let resolved = self.doc.deref(p, &p_at).map_err(invalid)?;
                let field = |key: &str| match resolved.get(key) {
                    Some(Value::String(s)) if !s.is_empty() => Ok(s.as_str()),
                    _ => Err(invalid(format!(
                        "the parameter at #{} has no string `{key}`",
                        resolved.at
                    ))),
                };
                let name = field("name")?;
                let location = field("in")?;
                if location == "header"
                    && self.dialect == Dialect::OpenApi3
                    && IGNORED_HEADERS.contains(&name.to_ascii_lowercase().as_str())
                {
                    notes.push(format!(
                        "header parameter {name:?} at #{} is ignored, as OpenAPI 3 specifies",
                        resolved.at
                    ));
                    continue;
                }
                let param = Param {
                    name,
                    location,
                    resolved,
                };
                match out
                    .iter_mut()
                    .find(|q| q.name == name && q.location == location)
                {
                    Some(slot) => *slot = param,
                    None => out.push(param),
                }
            }
        }
        Ok(out)
    }

    /// A parameter's property schema: its schema (OpenAPI 3: `schema`, or
    /// the schema of its one `content` entry; Swagger 2.0: the parameter's
    /// own type keywords), with the parameter's description and
    /// deprecation.
    fn param_schema(
        &self,
        input: &mut Inliner<'_, 'a>,
        p: &Param<'a>,
    ) -> Result<Value, SchemaError> {
        let at = &p.resolved.at;
        let mut schema = match self.dialect {
            Dialect::OpenApi3 => match (p.resolved.get("schema"), p.resolved.get("content")) {
                (Some(s), _) => input.schema(s, &format!("{at}/schema"), 3)?,
                (None, Some(Value::Object(content))) => {
                    match content
                        .iter()
                        .find_map(|(mt, m)| Some((mt, m.get("schema")?)))
                    {
                        Some((mt, s)) => input.schema(
                            s,
                            &format!("{at}/content/{}/schema", escape_token(mt)),
                            3,
                        )?,
                        None => json!({}),
                    }
                }
                _ => json!({}),
            },
            Dialect::Swagger2 => {
                let Value::Object(map) = p.resolved.value else {
                    return Ok(json!({}));
                };
                let mut out = Map::new();
                for (k, v) in map {
                    if SWAGGER2_PARAM_MEMBERS.contains(&k.as_str()) {
                        continue;
                    }
                    out.insert(k.clone(), input.member(k, v, at, 4)?);
                }
                Value::Object(out)
            }
        };
        if let Some(d) = p.resolved.get("description") {
            schema = with_member(schema, "description", d.clone());
        }
        if p.resolved.get("deprecated") == Some(&Value::Bool(true)) {
            schema = with_member(schema, "deprecated", Value::Bool(true));
        }
        Ok(schema)
    }

    /// OpenAPI 3's requestBody: the JSON media type's schema (or, for a
    /// body with no JSON media type, the first media type that has one).
    fn request_body(
        &self,
        info: &OpInfo<'a>,
        input: &mut Inliner<'_, 'a>,
    ) -> Result<Option<Body>, SchemaError> {
        let Some(rb) = info.op.get("requestBody") else {
            return Ok(None);
        };
        let rb = self
            .doc
            .deref(rb, &format!("{}/requestBody", info.at))
            .map_err(SchemaError::Invalid)?;
        let schema = match rb.get("content") {
            Some(Value::Object(content)) => match pick_media(content, true) {
                Some((mt, s)) => input.schema(
                    s,
                    &format!("{}/content/{}/schema", rb.at, escape_token(mt)),
                    3,
                )?,
                None => json!({}),
            },
            _ => json!({}),
        };
        Ok(Some(Body {
            schema,
            description: rb.get("description").cloned(),
            required: rb.get("required") == Some(&Value::Bool(true)),
        }))
    }

    /// The schema of the first 2xx response (200, 201, …, then 2XX) with
    /// a JSON body; a schema that is not an object is wrapped as
    /// `{"result": …}`, since MCP requires an object.
    fn output_schema(
        &self,
        info: &OpInfo<'a>,
        mode: Mode,
        spent: &mut usize,
    ) -> Result<Option<Value>, SchemaError> {
        let responses = match info.op.get("responses") {
            Some(Value::Object(r)) => r,
            _ => return Ok(None),
        };
        let mut codes: Vec<(u32, &String, &'a Value)> = responses
            .iter()
            .filter_map(|(code, r)| {
                let rank = match code.as_str() {
                    "2XX" | "2xx" => 300,
                    c if c.len() == 3 && c.starts_with('2') => c.parse().ok()?,
                    _ => return None,
                };
                Some((rank, code, r))
            })
            .collect();
        codes.sort_by_key(|(rank, _, _)| *rank);
        for (_, code, response) in codes {
            let at = format!("{}/responses/{}", info.at, escape_token(code));
            let r = self
                .doc
                .deref(response, &at)
                .map_err(SchemaError::Invalid)?;
            let found = match self.dialect {
                Dialect::Swagger2 => r.get("schema").map(|s| (format!("{}/schema", r.at), s)),
                Dialect::OpenApi3 => match r.get("content") {
                    Some(Value::Object(content)) => pick_media(content, false).map(|(mt, s)| {
                        (format!("{}/content/{}/schema", r.at, escape_token(mt)), s)
                    }),
                    _ => None,
                },
            };
            let Some((s_at, schema)) = found else {
                continue;
            };
            let mut output = Inliner::new(self.doc, mode);
            // Definitions the response schema makes itself keep their names.
            if let Some(own) = output.root_defs(schema) {
                output.reserve(own.keys());
            }
            let built = output.schema(schema, &s_at, 1)?;
            let mut root = if is_object_schema(&built) {
                match built {
                    Value::Object(m) => m,
                    _ => Map::new(),
                }
            } else {
                let mut m = Map::new();
                m.insert("type".into(), json!("object"));
                m.insert("properties".into(), json!({ "result": built }));
                m.insert("required".into(), json!(["result"]));
                m
            };
            let defs = output.finish()?;
            *spent += output.spent();
            if !defs.is_empty() {
                match root.get_mut("$defs") {
                    // Names were kept apart (`reserve`), so none is lost.
                    Some(Value::Object(existing)) => existing.extend(defs),
                    _ => {
                        root.insert("$defs".into(), Value::Object(defs));
                    }
                }
            }
            return Ok(Some(Value::Object(root)));
        }
        Ok(None)
    }
}

fn is_json_media(mt: &str) -> bool {
    let essence = mt.split(';').next().unwrap_or_default().trim();
    essence == "application/json" || essence.ends_with("+json") || essence.ends_with("/json")
}

/// The media type whose schema to use: `application/json`, else the first
/// other JSON type in code-point order, else (`any`) the first type with a
/// schema.
fn pick_media<'a>(content: &'a Map<String, Value>, any: bool) -> Option<(&'a str, &'a Value)> {
    let with_schema = |mt: &'a String, m: &'a Value| Some((mt.as_str(), m.get("schema")?));
    content
        .iter()
        .filter(|(mt, _)| mt.split(';').next().unwrap_or_default().trim() == "application/json")
        .chain(content.iter().filter(|(mt, _)| is_json_media(mt)))
        .chain(content.iter().filter(|_| any))
        .find_map(|(mt, m)| with_schema(mt, m))
}

/// Whether a schema is an object schema (`type: "object"`, or
/// `properties` with no type).
fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        None => schema.get("properties").is_some() && schema.get("$ref").is_none(),
        _ => false,
    }
}

/// The properties (and `required`) of a body schema that can be merged at
/// the top level: an object schema with properties and no composition.
fn mergeable(schema: &Value) -> Option<(&Map<String, Value>, &[Value])> {
    if !is_object_schema(schema)
        || ["allOf", "anyOf", "oneOf", "$ref"]
            .iter()
            .any(|k| schema.get(k).is_some())
    {
        return None;
    }
    let properties = schema.get("properties")?.as_object()?;
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    Some((properties, required))
}

/// Sets one member of a schema; a schema that is not an object (`true`)
/// is wrapped in `allOf` first.
fn with_member(schema: Value, key: &str, value: Value) -> Value {
    let mut map = match schema {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("allOf".into(), Value::Array(vec![other]));
            m
        }
    };
    map.insert(key.into(), value);
    Value::Object(map)
}
