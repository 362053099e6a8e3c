//! Errors to violations: each crate error becomes toolpin's own
//! [`Violation`]s, messages excerpted.

use super::*;

/// Where one crate error stands: in the value and in the schema.
pub(super) struct At<'e> {
    /// The failing keyword's location in the schema as given.
    schema_pointer: String,
    /// Its last token.
    last: String,
    /// The keyword as given, when normalising renamed it.
    renamed: Option<&'static str>,
    /// The failing value's location.
    pointer: &'e str,
    /// The keyword's location in the normalised copy, and its schema's.
    sp: &'e str,
    parent_sp: &'e str,
    inst: &'e Value,
}

impl At<'_> {
    /// A [`ViolationKind::Nonconformant`] violation here.
    pub(super) fn v(&self, keyword: &'static str, message: String) -> Violation {
        Violation {
            pointer: self.pointer.to_string(),
            schema_pointer: self.schema_pointer.clone(),
            keyword,
            message,
            kind: ViolationKind::Nonconformant,
        }
    }

    /// One violation per property `keyword` (false) refuses, at the
    /// property, up to [`MAX_VIOLATIONS`] in `out`.
    pub(super) fn not_allowed<'n>(
        &self,
        keyword: &'static str,
        names: impl Iterator<Item = &'n str>,
        out: &mut Vec<Violation>,
    ) {
        for name in names {
            if out.len() >= MAX_VIOLATIONS {
                break;
            }
            out.push(Violation {
                pointer: format!("{}/{}", self.pointer, escape_token(name)),
                ..self.v(
                    keyword,
                    format!(
                        "property {} is not allowed ({keyword} is false)",
                        excerpt(name, MESSAGE_EXCERPT)
                    ),
                )
            });
        }
    }
}

impl Validator {
    /// The schema pointer as given, for one in the normalised copy.
    pub(super) fn given_pointer(&self, sp: &str) -> (String, Option<&'static str>) {
        if self.renames.is_empty() {
            return (sp.to_string(), None);
        }
        let mut new = String::new();
        let mut old = String::new();
        let mut renamed = None;
        for tok in sp.split('/').skip(1) {
            new.push('/');
            new.push_str(tok);
            old.push('/');
            match self.renames.get(&new) {
                Some(k) => {
                    old.push_str(k);
                    renamed = Some(*k);
                }
                None => {
                    old.push_str(tok);
                    renamed = None;
                }
            }
        }
        (old, renamed)
    }

    pub(super) fn at_schema(&self, sp: &str) -> Option<&Value> {
        lookup(&self.schema, sp)
    }

    /// The violations one crate error stands for (appended to `out`).
    pub(super) fn map(&self, e: &ValidationError<'_>, root: &Value, out: &mut Vec<Violation>) {
        let (kind, inst) = (e.kind(), e.instance());
        let (pointer, sp) = (e.instance_path().as_str(), e.schema_path().as_str());
        use ValidationErrorKind as K;
        let (schema_pointer, renamed) = self.given_pointer(sp);
        let at = At {
            last: schema_pointer
                .rsplit_once('/')
                .map_or("", |x| x.1)
                .to_string(),
            schema_pointer,
            renamed,
            pointer,
            sp,
            parent_sp: parent(sp),
            inst,
        };
        let violation = match kind {
            K::Enum { .. } | K::Constant { .. } => self.enum_failure(&at, kind),
            K::Required { property } => self.required(&at, property),
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                let keyword = if matches!(kind, K::AdditionalProperties { .. }) {
                    "additionalProperties"
                } else {
                    "unevaluatedProperties"
                };
                let names = unexpected.iter().map(String::as_str);
                return at.not_allowed(keyword, names, out);
            }
            K::FalseSchema => return self.false_schema(&at, root, out),
            K::AnyOf { context } | K::OneOfNotValid { context } => {
                let keyword = if matches!(kind, K::AnyOf { .. }) {
                    "anyOf"
                } else {
                    "oneOf"
                };
                let base = at.v(keyword, String::new());
                return self.alternatives(keyword, context, base, root, out);
            }
            K::PropertyNames { error } => {
                let mut inner = Vec::new();
                self.map(error, root, &mut inner);
                for mut x in inner {
                    x.pointer = pointer.to_string();
                    out.push(x);
                }
                return;
            }
            _ => self.bound(&at, kind),
        };
        out.push(violation);
    }

    /// An `enum` or `const` mismatch (a `const` the normaliser turned into
    /// an `enum` reported as the `const`).
    pub(super) fn enum_failure(&self, at: &At<'_>, kind: &ValidationErrorKind) -> Violation {
        let shown = excerpt(at.inst, MESSAGE_EXCERPT);
        let constant = |c: &Value| {
            at.v(
                "const",
                format!(
                    "value {shown} is not the pinned constant {}",
                    excerpt(c, MESSAGE_EXCERPT)
                ),
            )
        };
        match kind {
            ValidationErrorKind::Enum { options } if at.renamed == Some("const") => {
                let c = options
                    .as_array()
                    .and_then(|a| a.first())
                    .unwrap_or(&Value::Null);
                self.enum_violation(constant(c), at.inst, at.parent_sp, std::slice::from_ref(c))
            }
            ValidationErrorKind::Enum { options } => {
                let values = options.as_array().map_or(&[][..], Vec::as_slice);
                let message = format!(
                    "value {shown} is not one of the pinned values {}",
                    excerpt(&**options, LIST_EXCERPT)
                );
                self.enum_violation(at.v("enum", message), at.inst, at.parent_sp, values)
            }
            ValidationErrorKind::Constant { expected_value } => self.enum_violation(
                constant(expected_value),
                at.inst,
                at.parent_sp,
                std::slice::from_ref(&**expected_value),
            ),
            _ => at.v("enum", String::new()),
        }
    }

    /// A missing property: required, or required by another's presence.
    pub(super) fn required(&self, at: &At<'_>, property: &Value) -> Violation {
        let name = excerpt(property, MESSAGE_EXCERPT);
        let keyword = match at.last.as_str() {
            "dependencies" => "dependencies",
            "dependentRequired" => "dependentRequired",
            _ => return at.v("required", format!("missing required property {name}")),
        };
        let trigger = self
            .at_schema(at.sp)
            .and_then(Value::as_object)
            .and_then(|deps| {
                deps.iter().find(|(k, req)| {
                    at.inst.get(k.as_str()).is_some()
                        && req.as_array().is_some_and(|r| r.contains(property))
                })
            })
            .map_or_else(String::new, |(k, _)| excerpt(k, MESSAGE_EXCERPT));
        at.v(
            keyword,
            format!("property {trigger} requires property {name}, which is missing"),
        )
    }

    /// A false schema: extra items of a tuple (one violation for the
    /// array), properties `additionalProperties: false` refuses (named,
    /// as the crate does not), or any value.
    pub(super) fn false_schema(&self, at: &At<'_>, root: &Value, out: &mut Vec<Violation>) {
        let (last, parent_sp) = (at.last.as_str(), at.parent_sp);
        let tuple = matches!(at.renamed, Some("additionalItems" | "items"))
            || (last == "items"
                && self
                    .at_schema(parent_sp)
                    .is_some_and(|p| p.get("prefixItems").is_some()));
        if tuple {
            let array = parent(at.pointer);
            if out
                .iter()
                .any(|x| x.pointer == array && x.schema_pointer == at.schema_pointer)
            {
                return;
            }
            let allowed = self
                .at_schema(parent_sp)
                .and_then(|p| p.get("prefixItems"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let count = at
                .pointer
                .rsplit_once('/')
                .and_then(|x| x.1.parse::<usize>().ok())
                .map_or(0, |i| i + 1);
            let keyword = at.renamed.unwrap_or("items");
            let least = if count > allowed + 1 { "at least " } else { "" };
            out.push(Violation {
                pointer: array.to_string(),
                ..at.v(
                    keyword,
                    format!("array has {least}{count} items, at most {allowed} allowed ({keyword} is false)"),
                )
            });
            return;
        }
        if last != "additionalProperties" {
            let message = "no value is allowed here (the schema is false)";
            return out.push(at.v("false", message.to_string()));
        }
        // The crate names no property when the schema has only
        // additionalProperties (and quotes a property's value).
        let parent = self.at_schema(parent_sp);
        let object = root.pointer(at.pointer).unwrap_or(&Value::Null);
        let names: Vec<&str> = match (parent, object) {
            (Some(p), Value::Object(m)) if p.get("patternProperties").is_none() => {
                let declared = p.get("properties").and_then(Value::as_object);
                m.keys()
                    .filter(|k| !declared.is_some_and(|d| d.contains_key(*k)))
                    .map(String::as_str)
                    .collect()
            }
            _ => Vec::new(),
        };
        if names.is_empty() {
            let message = "a property is not allowed (additionalProperties is false)";
            return out.push(at.v("additionalProperties", message.to_string()));
        }
        at.not_allowed("additionalProperties", names.into_iter(), out);
    }

    /// The failures of one keyword on one value: counts, bounds, strings,
    /// formats and the rest.
    pub(super) fn bound(&self, at: &At<'_>, kind: &ValidationErrorKind) -> Violation {
        use ValidationErrorKind as K;
        let inst = at.inst;
        let limit = || {
            self.at_schema(at.sp)
                .map_or_else(String::new, |l| excerpt(l, MESSAGE_EXCERPT))
        };
        let len = match inst {
            Value::Array(a) => a.len(),
            Value::Object(m) => m.len(),
            _ => 0,
        };
        let count = |what: &str, of: &str, bound: &str, limit: &u64, verb: &str| {
            format!("{what} has {len} {of}, {bound} {limit} {verb}")
        };
        if let Some(v) = self.value_bound(at, kind) {
            return v;
        }
        let (keyword, message) = match kind {
            K::Type { kind } => {
                // The crate's order is the reverse of the message's.
                let mut types: Vec<&str> = match kind {
                    TypeKind::Single(t) => vec![t.as_str()],
                    TypeKind::Multiple(set) => set.iter().map(JsonType::as_str).collect(),
                };
                types.reverse();
                let (types, got) = (types.join(" or "), type_name(inst));
                ("type", format!("expected {types}, got {got}"))
            }
            K::UnevaluatedItems { unexpected } => (
                "unevaluatedItems",
                format!(
                    "array has {} items not allowed by unevaluatedItems",
                    unexpected.len()
                ),
            ),
            K::AdditionalItems { limit } => (
                "additionalItems",
                format!(
                    "array has {len} items, at most {limit} allowed (additionalItems is false)"
                ),
            ),
            K::MinItems { limit } => (
                "minItems",
                count("array", "items", "at least", limit, "required"),
            ),
            K::MaxItems { limit } => (
                "maxItems",
                count("array", "items", "at most", limit, "allowed"),
            ),
            K::MinProperties { limit } => (
                "minProperties",
                count("object", "properties", "at least", limit, "required"),
            ),
            K::MaxProperties { limit } => (
                "maxProperties",
                count("object", "properties", "at most", limit, "allowed"),
            ),
            K::UniqueItems => (
                "uniqueItems",
                match inst.as_array().and_then(|a| first_duplicate(a)) {
                    Some((i, j)) => format!("items {i} and {j} are equal; items must be unique"),
                    None => "items must be unique".to_string(),
                },
            ),
            K::Contains => match at.last.as_str() {
                "minContains" => (
                    "minContains",
                    format!("array has fewer than {} items matching contains", limit()),
                ),
                "maxContains" => (
                    "maxContains",
                    format!("array has more than {} items matching contains", limit()),
                ),
                _ => (
                    "contains",
                    "array has 0 items matching contains, at least 1 required".to_string(),
                ),
            },
            K::Not { .. } => ("not", "value matches the schema under not".to_string()),
            K::OneOfMultipleValid { context } => {
                let mut valid = context.iter().enumerate().filter(|(_, c)| c.is_empty());
                let a = valid.next().map_or(0, |x| x.0);
                let b = valid.next().map_or(1, |x| x.0);
                (
                    "oneOf",
                    format!(
                        "value matches alternatives {a} and {b} of oneOf; exactly one must match"
                    ),
                )
            }
            K::Referencing(_) => ("$ref", "a $ref could not be resolved".to_string()),
            K::Custom { message, .. } => ("custom", clip(message.clone(), 200)),
            _ => ("custom", "the value fails the schema".to_string()),
        };
        at.v(keyword, message)
    }

    /// The failures of a number or string bound, pattern or format.
    fn value_bound(&self, at: &At<'_>, kind: &ValidationErrorKind) -> Option<Violation> {
        use ValidationErrorKind as K;
        let inst = at.inst;
        let limit = || {
            self.at_schema(at.sp)
                .map_or_else(String::new, |l| excerpt(l, MESSAGE_EXCERPT))
        };
        let shown = || excerpt(inst, MESSAGE_EXCERPT);
        let (keyword, message) = match kind {
            K::Minimum { .. } => (
                "minimum",
                format!("{} is not at least {}", shown(), limit()),
            ),
            K::Maximum { .. } => ("maximum", format!("{} is not at most {}", shown(), limit())),
            K::ExclusiveMinimum { .. } => (
                "exclusiveMinimum",
                format!("{} is not greater than {}", shown(), limit()),
            ),
            K::ExclusiveMaximum { .. } => (
                "exclusiveMaximum",
                format!("{} is not less than {}", shown(), limit()),
            ),
            K::MultipleOf { .. } => (
                "multipleOf",
                format!("{} is not a multiple of {}", shown(), limit()),
            ),
            K::MinLength { .. } => (
                "minLength",
                format!("string {} is shorter than {} characters", shown(), limit()),
            ),
            K::MaxLength { .. } => {
                let chars = inst.as_str().map_or(0, |s| s.chars().count());
                (
                    "maxLength",
                    format!(
                        "string of {chars} characters is longer than {}: {}",
                        limit(),
                        shown()
                    ),
                )
            }
            K::Pattern { pattern } => (
                "pattern",
                format!(
                    "string {} does not match pattern {}",
                    shown(),
                    excerpt(pattern, MESSAGE_EXCERPT)
                ),
            ),
            K::BacktrackLimitExceeded { .. } | K::RegexEngineFailure { .. } => {
                return Some(Violation {
                    kind: ViolationKind::LimitExceeded,
                    ..at.v(
                        "pattern",
                        format!("pattern {} could not be evaluated on {}", limit(), shown()),
                    )
                })
            }
            K::Format { format } => (
                "format",
                format!(
                    "string {} is not a valid {}",
                    shown(),
                    clip(format.clone(), MESSAGE_EXCERPT)
                ),
            ),
            K::ContentEncoding { .. } | K::FromUtf8 { .. } => (
                "contentEncoding",
                format!(
                    "string {} does not match contentEncoding {}",
                    shown(),
                    limit()
                ),
            ),
            K::ContentMediaType { .. } => (
                "contentMediaType",
                format!("string {} is not of contentMediaType {}", shown(), limit()),
            ),
            _ => return None,
        };
        Some(at.v(keyword, message))
    }

    /// A mismatch with enum `values`: an unknown enum value when the value's
    /// JSON type is accepted (by the schema object at `parent_sp`) and held
    /// by other values.
    pub(super) fn enum_violation(
        &self,
        mut v: Violation,
        inst: &Value,
        parent_sp: &str,
        values: &[Value],
    ) -> Violation {
        let type_ok = match self.at_schema(parent_sp).and_then(|s| s.get("type")) {
            Some(t) => accepts(t, inst),
            None => true,
        };
        if type_ok && values.iter().any(|x| same_kind(x, inst)) {
            v.kind = ViolationKind::UnknownEnumValue {
                value: excerpt(inst, VALUE_EXCERPT),
            };
        }
        v
    }

    /// No alternative matched: the unknown enum values of the closest one
    /// failing only on those, or else one violation naming the closest
    /// failure.
    pub(super) fn alternatives(
        &self,
        keyword: &'static str,
        context: &[Vec<ValidationError<'static>>],
        mut base: Violation,
        root: &Value,
        out: &mut Vec<Violation>,
    ) {
        let mut enum_only: Option<Vec<Violation>> = None;
        let mut closest: Option<(usize, Violation, usize)> = None;
        for (i, errors) in context.iter().enumerate() {
            let mut sub = Vec::new();
            for e in errors {
                if sub.len() >= MAX_VIOLATIONS {
                    break;
                }
                self.map(e, root, &mut sub);
            }
            drop_enums_under_type_failures(&mut sub);
            let n = sub.len();
            if n == 0 {
                continue;
            }
            if sub
                .iter()
                .all(|v| matches!(v.kind, ViolationKind::UnknownEnumValue { .. }))
            {
                if enum_only.as_ref().is_none_or(|e| n < e.len()) {
                    enum_only = Some(sub);
                }
            } else if closest.as_ref().is_none_or(|c| n < c.2) {
                closest = sub.into_iter().next().map(|v| (i, v, n));
            }
        }
        if let Some(vs) = enum_only {
            out.extend(vs);
            return;
        }
        let hint = match closest {
            Some((i, v, _)) => {
                let at = if v.pointer.is_empty() {
                    "(root)".to_string()
                } else {
                    clip(v.pointer.clone(), MESSAGE_EXCERPT)
                };
                clip(
                    format!("; alternative {i} fails at {at}: {}", v.message),
                    240,
                )
            }
            None => String::new(),
        };
        base.message = format!(
            "value matches none of the {} alternatives of {keyword}{hint}",
            context.len()
        );
        out.push(base);
    }
}

/// No `enum`/`const` violation where `type` failed on the same value and
/// schema object.
pub(super) fn drop_enums_under_type_failures(out: &mut Vec<Violation>) {
    if !out.iter().any(|v| v.keyword == "type") || out.len() < 2 {
        return;
    }
    let failed: HashSet<(String, String)> = out
        .iter()
        .filter(|v| v.keyword == "type")
        .map(|v| (v.pointer.clone(), parent(&v.schema_pointer).to_string()))
        .collect();
    out.retain(|v| {
        !(matches!(v.keyword, "enum" | "const")
            && failed.contains(&(v.pointer.clone(), parent(&v.schema_pointer).to_string())))
    });
}

/// RFC 6901 pointers in document order (array indexes numerically).
pub(super) fn cmp_pointers(a: &str, b: &str) -> Ordering {
    let mut x = a.split('/');
    let mut y = b.split('/');
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(s), Some(t)) => {
                let o = match (s.parse::<u64>(), t.parse::<u64>()) {
                    (Ok(i), Ok(j)) => i.cmp(&j),
                    _ => s.cmp(t),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

pub(super) fn parent(ptr: &str) -> &str {
    ptr.rsplit_once('/').map_or("", |x| x.0)
}

/// Whether a (normalised) `type` value accepts `v`.
pub(super) fn accepts(t: &Value, v: &Value) -> bool {
    let ok = |name: &str| match (name, v) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    };
    match t {
        Value::String(s) => ok(s),
        Value::Array(a) => a.iter().filter_map(Value::as_str).any(ok),
        _ => true,
    }
}
