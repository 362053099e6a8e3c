//! Errors to violations: each crate error becomes toolpin's own
//! [`Violation`]s, messages excerpted.

use super::*;
use std::sync::LazyLock;
use ValidationErrorKind as K;

/// The keywords violations are reported under, as `'static` names: the
/// crate's [`ValidationErrorKind::keyword`]s, and those read from the
/// schema pointer (`minContains`, `dependencies`, ...). Any other is
/// `custom`.
static KEYWORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    "$ref additionalItems additionalProperties anyOf const contains contentEncoding \
    contentMediaType dependencies dependentRequired enum exclusiveMaximum exclusiveMinimum format \
    maxContains maxItems maxLength maxProperties maximum minContains minItems minLength \
    minProperties minimum multipleOf not oneOf pattern propertyNames required type \
    unevaluatedItems unevaluatedProperties uniqueItems"
        .split(' ')
        .collect()
});

/// Where one crate error stands: in the value and in the schema.
pub(super) struct At<'e> {
    /// The failing keyword's location in the schema as given.
    schema_pointer: String,
    /// The keyword as given, when normalising renamed it.
    renamed: Option<&'static str>,
    /// The failing value's location.
    pointer: &'e str,
    /// The keyword's location in the normalised copy.
    sp: &'e str,
    inst: &'e Value,
}

impl At<'_> {
    /// The failing keyword as given (the schema pointer's last token).
    fn last(&self) -> &str {
        self.schema_pointer.rsplit_once('/').map_or("", |x| x.1)
    }

    /// A [`ViolationKind::Nonconformant`] violation here.
    fn v(&self, keyword: &'static str, message: String) -> Violation {
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
    fn not_allowed<'n>(
        &self,
        keyword: &'static str,
        names: impl Iterator<Item = &'n str>,
        out: &mut Vec<Violation>,
    ) {
        for name in names.take(MAX_VIOLATIONS.saturating_sub(out.len())) {
            let shown = excerpt(name, MESSAGE_EXCERPT);
            let message = format!("property {shown} is not allowed ({keyword} is false)");
            out.push(Violation {
                pointer: format!("{}/{}", self.pointer, escape_token(name)),
                ..self.v(keyword, message)
            });
        }
    }
}

/// The keyword a crate error is reported under.
fn keyword(at: &At<'_>, kind: &ValidationErrorKind) -> &'static str {
    let name = match (kind, at.last()) {
        (K::Contains, last @ ("minContains" | "maxContains")) => last,
        (K::Required { .. }, last @ ("dependencies" | "dependentRequired")) => last,
        _ => kind.keyword(),
    };
    KEYWORDS.get(name).copied().unwrap_or("custom")
}

/// How a pointer is shown in a message.
pub(super) fn shown_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

impl Validator {
    /// The schema pointer as given, for one in the normalised copy, and
    /// the keyword as given when normalising renamed it.
    fn given_pointer(&self, sp: &str) -> (String, Option<&'static str>) {
        if self.renames.is_empty() {
            return (sp.to_string(), None);
        }
        let (mut new, mut old, mut renamed) = (String::new(), String::new(), None);
        for tok in sp.split('/').skip(1) {
            new = format!("{new}/{tok}");
            renamed = self.renames.get(&new).copied();
            old = format!("{old}/{}", renamed.unwrap_or(tok));
        }
        (old, renamed)
    }

    fn at_schema(&self, sp: &str) -> Option<&Value> {
        lookup(&self.schema, sp)
    }

    /// The violations one crate error stands for (appended to `out`).
    pub(super) fn map(&self, e: &ValidationError<'_>, root: &Value, out: &mut Vec<Violation>) {
        let (kind, sp) = (e.kind(), e.schema_path().as_str());
        let (schema_pointer, renamed) = self.given_pointer(sp);
        let at = At {
            schema_pointer,
            renamed,
            pointer: e.instance_path().as_str(),
            sp,
            inst: e.instance(),
        };
        match kind {
            K::Enum { .. } | K::Constant { .. } => out.push(self.enum_failure(&at, kind)),
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                let names = unexpected.iter().map(String::as_str);
                at.not_allowed(keyword(&at, kind), names, out)
            }
            K::FalseSchema => self.false_schema(&at, root, out),
            K::AnyOf { context } | K::OneOfNotValid { context } => {
                self.alternatives(&at, keyword(&at, kind), context, root, out)
            }
            K::PropertyNames { error } => {
                let mut inner = Vec::new();
                self.map(error, root, &mut inner);
                inner
                    .iter_mut()
                    .for_each(|x| x.pointer = at.pointer.to_string());
                out.append(&mut inner);
            }
            K::BacktrackLimitExceeded { .. } | K::RegexEngineFailure { .. } => {
                out.push(Violation {
                    kind: ViolationKind::LimitExceeded,
                    ..at.v("pattern", self.message(&at, kind))
                })
            }
            _ => out.push(at.v(keyword(&at, kind), self.message(&at, kind))),
        }
    }

    /// An `enum` or `const` mismatch (a `const` the normaliser turned into
    /// an `enum` reported as the `const`): an unknown enum value when the
    /// value's JSON type is accepted (by the schema object holding the
    /// keyword) and held by other values.
    fn enum_failure(&self, at: &At<'_>, kind: &ValidationErrorKind) -> Violation {
        let shown = excerpt(at.inst, MESSAGE_EXCERPT);
        let constant = |c: &Value| {
            let c = excerpt(c, MESSAGE_EXCERPT);
            format!("value {shown} is not the pinned constant {c}")
        };
        let (keyword, message, values) = match kind {
            K::Enum { options } if at.renamed == Some("const") => {
                let c = options.as_array().and_then(|a| a.first());
                let c = c.unwrap_or(&Value::Null);
                ("const", constant(c), std::slice::from_ref(c))
            }
            K::Enum { options } => {
                let list = excerpt(&**options, LIST_EXCERPT);
                let message = format!("value {shown} is not one of the pinned values {list}");
                let values = options.as_array().map_or(&[][..], Vec::as_slice);
                ("enum", message, values)
            }
            K::Constant { expected_value: c } => ("const", constant(c), std::slice::from_ref(&**c)),
            _ => ("enum", String::new(), &[][..]),
        };
        let mut v = at.v(keyword, message);
        let holder = self.at_schema(parent(at.sp));
        let type_ok = holder
            .and_then(|s| s.get("type"))
            .is_none_or(|t| accepts(t, at.inst));
        if type_ok && values.iter().any(|x| same_kind(x, at.inst)) {
            let value = excerpt(at.inst, VALUE_EXCERPT);
            v.kind = ViolationKind::UnknownEnumValue { value };
        }
        v
    }

    /// The message of a failure of one keyword on one value (the ones
    /// [`Validator::map`] does not handle itself).
    fn message(&self, at: &At<'_>, kind: &ValidationErrorKind) -> String {
        let inst = at.inst;
        let limit = || {
            let limit = self.at_schema(at.sp);
            limit.map_or_else(String::new, |l| excerpt(l, MESSAGE_EXCERPT))
        };
        let v = || excerpt(inst, MESSAGE_EXCERPT);
        let len = match inst {
            Value::Array(a) => a.len(),
            Value::Object(m) => m.len(),
            _ => 0,
        };
        match kind {
            K::Type { kind } => {
                // The crate's order is the reverse of the message's.
                let mut types: Vec<&str> = match kind {
                    TypeKind::Single(t) => vec![t.as_str()],
                    TypeKind::Multiple(set) => set.iter().map(JsonType::as_str).collect(),
                };
                types.reverse();
                format!("expected {}, got {}", types.join(" or "), type_name(inst))
            }
            K::Required { property } => self.required(at, property),
            K::UnevaluatedItems { unexpected } => {
                let n = unexpected.len();
                format!("array has {n} items not allowed by unevaluatedItems")
            }
            K::AdditionalItems { limit } => {
                format!("array has {len} items, at most {limit} allowed (additionalItems is false)")
            }
            K::MinItems { limit } => format!("array has {len} items, at least {limit} required"),
            K::MaxItems { limit } => format!("array has {len} items, at most {limit} allowed"),
            K::MinProperties { limit } => {
                format!("object has {len} properties, at least {limit} required")
            }
            K::MaxProperties { limit } => {
                format!("object has {len} properties, at most {limit} allowed")
            }
            K::UniqueItems => match inst.as_array().and_then(|a| first_duplicate(a)) {
                Some((i, j)) => format!("items {i} and {j} are equal; items must be unique"),
                None => "items must be unique".to_string(),
            },
            K::Contains => match at.last() {
                "minContains" => {
                    format!("array has fewer than {} items matching contains", limit())
                }
                "maxContains" => format!("array has more than {} items matching contains", limit()),
                _ => "array has 0 items matching contains, at least 1 required".to_string(),
            },
            K::Not { .. } => "value matches the schema under not".to_string(),
            K::OneOfMultipleValid { context } => {
                let mut valid = context.iter().enumerate().filter(|(_, c)| c.is_empty());
                let a = valid.next().map_or(0, |x| x.0);
                let b = valid.next().map_or(1, |x| x.0);
                format!("value matches alternatives {a} and {b} of oneOf; exactly one must match")
            }
            K::Referencing(_) => "a $ref could not be resolved".to_string(),
            K::Custom { message, .. } => clip(message.clone(), 200),
            K::Minimum { .. } => format!("{} is not at least {}", v(), limit()),
            K::Maximum { .. } => format!("{} is not at most {}", v(), limit()),
            K::ExclusiveMinimum { .. } => format!("{} is not greater than {}", v(), limit()),
            K::ExclusiveMaximum { .. } => format!("{} is not less than {}", v(), limit()),
            K::MultipleOf { .. } => format!("{} is not a multiple of {}", v(), limit()),
            K::MinLength { .. } => {
                format!("string {} is shorter than {} characters", v(), limit())
            }
            K::MaxLength { .. } => {
                let chars = inst.as_str().map_or(0, |s| s.chars().count());
                let limit = limit();
                format!(
                    "string of {chars} characters is longer than {limit}: {}",
                    v()
                )
            }
            K::Pattern { pattern } => {
                let pattern = excerpt(pattern, MESSAGE_EXCERPT);
                format!("string {} does not match pattern {pattern}", v())
            }
            K::BacktrackLimitExceeded { .. } | K::RegexEngineFailure { .. } => {
                format!("pattern {} could not be evaluated on {}", limit(), v())
            }
            K::Format { format } => {
                let format = clip(format.clone(), MESSAGE_EXCERPT);
                format!("string {} is not a valid {format}", v())
            }
            K::ContentEncoding { .. } | K::FromUtf8 { .. } => {
                format!("string {} does not match contentEncoding {}", v(), limit())
            }
            K::ContentMediaType { .. } => {
                format!("string {} is not of contentMediaType {}", v(), limit())
            }
            _ => "the value fails the schema".to_string(),
        }
    }

    /// A missing property: required, or required by another's presence.
    fn required(&self, at: &At<'_>, property: &Value) -> String {
        let name = excerpt(property, MESSAGE_EXCERPT);
        if !matches!(at.last(), "dependencies" | "dependentRequired") {
            return format!("missing required property {name}");
        }
        let deps = self.at_schema(at.sp).and_then(Value::as_object);
        let trigger = deps.and_then(|deps| {
            deps.iter().find(|(k, req)| {
                at.inst.get(k.as_str()).is_some()
                    && req.as_array().is_some_and(|r| r.contains(property))
            })
        });
        let trigger = trigger.map_or_else(String::new, |(k, _)| excerpt(k, MESSAGE_EXCERPT));
        format!("property {trigger} requires property {name}, which is missing")
    }

    /// A false schema: extra items of a tuple (one violation for the
    /// array), properties `additionalProperties: false` refuses (named,
    /// as the crate does not), or any value.
    fn false_schema(&self, at: &At<'_>, root: &Value, out: &mut Vec<Violation>) {
        let holder = self.at_schema(parent(at.sp));
        let prefix = holder.and_then(|p| p.get("prefixItems"));
        let last = at.last();
        if matches!(at.renamed, Some("additionalItems" | "items"))
            || (last == "items" && prefix.is_some())
        {
            let array = parent(at.pointer);
            if out
                .iter()
                .any(|x| x.pointer == array && x.schema_pointer == at.schema_pointer)
            {
                return;
            }
            let allowed = prefix.and_then(Value::as_array).map_or(0, Vec::len);
            let index = at.pointer.rsplit_once('/').and_then(|x| x.1.parse().ok());
            let count = index.map_or(0, |i: usize| i + 1);
            let keyword = at.renamed.unwrap_or("items");
            let least = if count > allowed + 1 { "at least " } else { "" };
            let message = format!(
                "array has {least}{count} items, at most {allowed} allowed ({keyword} is false)"
            );
            let pointer = array.to_string();
            return out.push(Violation {
                pointer,
                ..at.v(keyword, message)
            });
        }
        if last != "additionalProperties" {
            let message = "no value is allowed here (the schema is false)";
            return out.push(at.v("false", message.to_string()));
        }
        // The crate names no property when the schema has only
        // additionalProperties (and quotes a property's value).
        let names: Vec<&str> = match (holder, root.pointer(at.pointer)) {
            (Some(p), Some(Value::Object(m))) if p.get("patternProperties").is_none() => {
                let declared = p.get("properties").and_then(Value::as_object);
                let declared = |k: &&String| declared.is_some_and(|d| d.contains_key(*k));
                m.keys()
                    .filter(|k| !declared(k))
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

    /// No alternative matched: the unknown enum values of the closest one
    /// failing only on those, or else one violation naming the closest
    /// failure.
    fn alternatives(
        &self,
        at: &At<'_>,
        keyword: &'static str,
        context: &[Vec<ValidationError<'static>>],
        root: &Value,
        out: &mut Vec<Violation>,
    ) {
        let mut enum_only: Option<Vec<Violation>> = None;
        let mut closest: Option<(usize, Violation, usize)> = None;
        for (i, errors) in context.iter().enumerate() {
            let mut sub = Vec::new();
            for e in errors {
                if sub.len() < MAX_VIOLATIONS {
                    self.map(e, root, &mut sub);
                }
            }
            drop_enums_under_type_failures(&mut sub);
            let n = sub.len();
            let unknown = |v: &Violation| matches!(v.kind, ViolationKind::UnknownEnumValue { .. });
            if n > 0 && sub.iter().all(unknown) {
                if enum_only.as_ref().is_none_or(|e| n < e.len()) {
                    enum_only = Some(sub);
                }
            } else if n > 0 && closest.as_ref().is_none_or(|c| n < c.2) {
                closest = sub.into_iter().next().map(|v| (i, v, n));
            }
        }
        if let Some(vs) = enum_only {
            return out.extend(vs);
        }
        let hint = closest.map_or_else(String::new, |(i, v, _)| {
            let at = clip(shown_pointer(&v.pointer).to_string(), MESSAGE_EXCERPT);
            clip(
                format!("; alternative {i} fails at {at}: {}", v.message),
                240,
            )
        });
        let n = context.len();
        let message = format!("value matches none of the {n} alternatives of {keyword}{hint}");
        out.push(at.v(keyword, message));
    }
}

/// No `enum`/`const` violation where `type` failed on the same value and
/// schema object.
pub(super) fn drop_enums_under_type_failures(out: &mut Vec<Violation>) {
    let at = |v: &Violation| (v.pointer.clone(), parent(&v.schema_pointer).to_string());
    let failed: HashSet<_> = out.iter().filter(|v| v.keyword == "type").map(at).collect();
    if !failed.is_empty() {
        out.retain(|v| !(matches!(v.keyword, "enum" | "const") && failed.contains(&at(v))));
    }
}

/// RFC 6901 pointers in document order (array indexes numerically).
pub(super) fn cmp_pointers(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.split('/'), b.split('/'));
    loop {
        let (s, t) = (x.next(), y.next());
        let number = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok());
        let o = match (number(s), number(t)) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ if s.is_none() && t.is_none() => return Ordering::Equal,
            _ => s.cmp(&t),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
}

pub(super) fn parent(ptr: &str) -> &str {
    ptr.rsplit_once('/').map_or("", |x| x.0)
}

/// Whether a (normalised) `type` value accepts `v`.
pub(super) fn accepts(t: &Value, v: &Value) -> bool {
    let ok = |name: &str| match name {
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => name == type_name(v),
    };
    match t {
        Value::String(s) => ok(s),
        Value::Array(a) => a.iter().filter_map(Value::as_str).any(ok),
        _ => true,
    }
}
