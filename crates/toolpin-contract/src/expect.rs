//! The `expect` assertions of a call, evaluated by `toolpin contract run`
//! on the call's observation and its first successful result: `fields`,
//! `values`, `formats`, `counts`, `order`, `output_schema` and `error`
//! (`latency` is [`crate::behaviour::over_budget`]). Each failure is a
//! `contract-failed` [`Difference`]; `output_schema`'s is
//! `result-nonconformant`.

use serde_json::Value;
use toolpin_manifest::Catalog;

use crate::behaviour::{payload, type_name, Class, Difference};
use crate::file::{Direction, ErrorClass};

/// Validation errors named in an `output_schema` failure.
pub const SHOWN_ERRORS: usize = 3;

/// The values at `pointer` (with `*` for every array item) in `payload`.
/// A leading `/structuredContent` is optional: pointers point into the
/// payload.
pub fn resolve<'a>(payload: &'a Value, pointer: &str) -> Vec<&'a Value> {
    let pointer = pointer
        .strip_prefix("/structuredContent")
        .unwrap_or(pointer);
    let mut at = vec![payload];
    if pointer.is_empty() {
        return at;
    }
    for token in pointer.trim_start_matches('/').split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        let mut next = Vec::new();
        for v in at {
            match (v, token.as_str()) {
                (Value::Array(items), "*") => next.extend(items.iter()),
                (Value::Array(items), t) => {
                    if let Some(item) = t.parse::<usize>().ok().and_then(|i| items.get(i)) {
                        next.push(item);
                    }
                }
                (Value::Object(map), t) => {
                    if let Some(item) = map.get(t) {
                        next.push(item);
                    }
                }
                _ => {}
            }
        }
        at = next;
    }
    at
}

/// The pinned `outputSchema` of the tool `server/tool`, if any.
pub fn output_schema(catalog: &Catalog, tool_key: &str) -> Option<OutputSchema> {
    let (server, tool) = tool_key.split_once('/')?;
    let pinned = catalog.servers.get(server)?.tools.get(tool)?.value();
    pinned.get("outputSchema").map(OutputSchema::compile)
}

/// A pinned outputSchema, compiled once for every call that checks it.
pub struct OutputSchema {
    validator: Result<jsonschema::Validator, String>,
}

impl OutputSchema {
    /// Compiles `schema` offline (no `$ref` is fetched); one that does not
    /// compile fails each check with the reason.
    pub fn compile(schema: &Value) -> OutputSchema {
        OutputSchema {
            validator: jsonschema::options()
                .offline()
                .build(schema)
                .map_err(|e| e.to_string()),
        }
    }
}

fn class_of(e: ErrorClass) -> Class {
    match e {
        ErrorClass::Validation => Class::Validation,
        ErrorClass::Auth => Class::Auth,
        ErrorClass::RateLimit => Class::RateLimit,
        ErrorClass::Timeout => Class::Timeout,
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// The `expect` assertions of the call `key`. `class` is the observed class
/// of the call (`None`: not observed), `result` its first successful
/// `tools/call` result (not an `isError` one), `output_schema` the tool's
/// pinned outputSchema.
///
/// With `error`, the call is a deliberate bad call: only its class is
/// checked, nothing is evaluated against a payload. Without, the
/// assertions are evaluated on `result` and nothing is reported when there
/// is none (the class change is `error-class-changed`).
pub fn check_expect(
    key: &str,
    expect: &crate::Expect,
    class: Option<Class>,
    result: Option<&Value>,
    output_schema: Option<&OutputSchema>,
) -> Vec<Difference> {
    let mut out = Failures {
        call: key,
        found: Vec::new(),
    };
    if let Some(want) = expect.error {
        out.error_class(class_of(want).as_str(), class);
        return out.found;
    }
    let Some(result) = result else {
        return out.found;
    };
    let payload = payload(result);
    let payload = payload.as_ref();
    for field in &expect.fields {
        out.field(payload, field);
    }
    for set in &expect.values {
        out.value_set(payload, set);
    }
    for count in &expect.counts {
        out.count(payload, count);
    }
    for f in &expect.formats {
        out.strings(payload, f);
    }
    for o in &expect.order {
        out.order(payload, o);
    }
    if output_schema.is_some() && expect.output_schema.as_ref().is_some_and(|o| *o.get_ref()) {
        if let Some(d) = conformance(key, result, output_schema) {
            out.found.push(d);
        }
    }
    out.found
}

/// The `contract-failed` differences of one call's assertions.
struct Failures<'a> {
    call: &'a str,
    found: Vec<Difference>,
}

impl Failures<'_> {
    fn fail(&mut self, pointer: &str, message: String) {
        self.found.push(Difference {
            rule: "contract-failed",
            call: self.call.to_string(),
            pointer: Some(pointer.to_string()),
            message,
            ..Difference::default()
        })
    }

    /// `error = "CLASS"`: the call failed with that class.
    fn error_class(&mut self, want: &str, class: Option<Class>) {
        let got = match class {
            None => return,
            Some(c) if c.as_str() == want => return,
            Some(Class::Ok) => "the call answered ok".to_string(),
            Some(Class::Other) => "the call failed with an error of no known class".to_string(),
            Some(c) => format!(
                "the call failed with {} {} error",
                article(c.as_str()),
                c.as_str()
            ),
        };
        self.fail(
            "",
            format!("expected {} {want} error, {got}", article(want)),
        );
    }

    /// `fields`: a value at the pointer, of the type if one is named.
    fn field(&mut self, payload: &Value, field: &crate::file::FieldAssertion) {
        let pointer = field.pointer.get_ref();
        let found = resolve(payload, pointer);
        if found.is_empty() {
            return self.fail(
                pointer,
                format!("expected a value at `{pointer}`, found none"),
            );
        }
        if let Some(t) = field.json_type {
            let want = format!("{t:?}").to_ascii_lowercase();
            if let Some(bad) = found.iter().find(|v| {
                let got = type_name(v);
                !(got == want || (want == "number" && got == "integer"))
            }) {
                self.fail(
                    pointer,
                    format!("expected {want} at `{pointer}`, found {}", type_name(bad)),
                );
            }
        }
    }

    /// `values`: every value at the pointer in the pinned set (and, when
    /// `exact`, every value of the set seen).
    fn value_set(&mut self, payload: &Value, set: &crate::file::ValueSet) {
        let pointer = set.pointer.get_ref();
        let allowed = set.set.get_ref();
        let found = resolve(payload, pointer);
        let mut outside: Vec<String> = found
            .iter()
            .filter(|v| !allowed.contains(v))
            .map(|v| v.to_string())
            .collect();
        outside.dedup();
        if !outside.is_empty() {
            self.fail(
                pointer,
                format!(
                    "values at `{pointer}` outside the pinned set: {}",
                    outside.join(", ")
                ),
            );
        }
        if set.exact {
            let missing: Vec<String> = allowed
                .iter()
                .filter(|v| !found.contains(v))
                .map(|v| v.to_string())
                .collect();
            if !missing.is_empty() {
                self.fail(
                    pointer,
                    format!(
                        "values of the pinned set not seen at `{pointer}`: {}",
                        missing.join(", ")
                    ),
                );
            }
        }
    }

    /// `counts`: how many items the array at the pointer holds.
    fn count(&mut self, payload: &Value, count: &crate::file::Count) {
        let pointer = count.pointer.get_ref();
        let found = resolve(payload, pointer);
        let n = match found.as_slice() {
            [Value::Array(items)] => items.len() as u64,
            _ if pointer.contains('*') => found.len() as u64,
            [] => {
                return self.fail(
                    pointer,
                    format!("expected an array at `{pointer}`, found none"),
                );
            }
            _ => found.len() as u64,
        };
        if count.min.is_some_and(|m| n < m) || count.max.is_some_and(|m| n > m) {
            let range = range(count.min, count.max);
            self.fail(
                pointer,
                format!("`{pointer}` holds {n} items, expected {range}"),
            );
        }
    }

    /// `formats`: the strings at the pointer are of the format, match the
    /// regex and have a length in range.
    fn strings(&mut self, payload: &Value, f: &crate::file::FormatAssertion) {
        let pointer = f.pointer.get_ref();
        let found = resolve(payload, pointer);
        if found.is_empty() {
            return self.fail(
                pointer,
                format!("expected strings at `{pointer}`, found none"),
            );
        }
        if let Some(bad) = found.iter().find(|v| !v.is_string()) {
            return self.fail(
                pointer,
                format!("expected strings at `{pointer}`, found {}", type_name(bad)),
            );
        }
        let strings: Vec<&str> = found.iter().filter_map(|v| v.as_str()).collect();
        let mut check = |what: String, ok: &dyn Fn(&str) -> bool| {
            let bad: Vec<&&str> = strings.iter().filter(|s| !ok(s)).collect();
            if let Some(first) = bad.first() {
                self.fail(
                    pointer,
                    format!(
                        "{} of {} values at `{pointer}` {what}, the first {first:?}",
                        bad.len(),
                        strings.len()
                    ),
                );
            }
        };
        if let Some(format) = f.format {
            check(format!("are not {}", format.as_str()), &|s| format.holds(s));
        }
        if let Some(re) = &f.regex {
            match regex::Regex::new(re.get_ref()) {
                Ok(compiled) => check(format!("do not match the regex {:?}", re.get_ref()), &|s| {
                    compiled.is_match(s)
                }),
                Err(e) => check(
                    format!(
                        "cannot be checked: the regex {:?} does not compile ({e})",
                        re.get_ref()
                    ),
                    &|_| false,
                ),
            }
        }
        if f.min_length.is_some() || f.max_length.is_some() {
            let (lo, hi) = (f.min_length.unwrap_or(0), f.max_length.unwrap_or(u64::MAX));
            check(
                format!(
                    "have a length (in characters) outside {}",
                    range(f.min_length, f.max_length)
                ),
                &|s| (lo..=hi).contains(&(s.chars().count() as u64)),
            );
        }
    }

    /// `order`: each array at the pointer sorted by the key.
    fn order(&mut self, payload: &Value, o: &crate::file::Order) {
        let pointer = o.pointer.get_ref();
        let key_pointer = o.key.get_ref();
        let arrays = resolve(payload, pointer);
        if arrays.is_empty() {
            return self.fail(
                pointer,
                format!("expected an array at `{pointer}`, found none"),
            );
        }
        for array in arrays {
            let Some(items) = array.as_array() else {
                return self.fail(
                    pointer,
                    format!(
                        "expected an array at `{pointer}`, found {}",
                        type_name(array)
                    ),
                );
            };
            if let Err(why) = sorted_by(items, key_pointer, o.direction) {
                return self.fail(
                    pointer,
                    format!(
                        "`{pointer}` is not sorted by `{key_pointer}` {}: {why}",
                        direction(o.direction)
                    ),
                );
            }
        }
    }
}

/// An inclusive range as written in messages: `1..3`, `at least 1`,
/// `at most 3`.
fn range(min: Option<u64>, max: Option<u64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("{a}..{b}"),
        (Some(a), None) => format!("at least {a}"),
        (None, Some(b)) => format!("at most {b}"),
        (None, None) => String::new(),
    }
}

fn direction(d: Direction) -> &'static str {
    match d {
        Direction::Ascending => "ascending",
        Direction::Descending => "descending",
    }
}

/// Whether `items` are sorted by the value at `key` in each, ties allowed:
/// numbers numerically, strings lexically (by code point); anything else,
/// a missing key or a mix of numbers and strings is not sorted.
fn sorted_by(items: &[Value], key: &str, d: Direction) -> Result<(), String> {
    let mut keys = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let k = if key.is_empty() {
            Some(item)
        } else {
            resolve(item, key).into_iter().next()
        };
        match k {
            Some(v @ (Value::Number(_) | Value::String(_))) => keys.push(v),
            Some(v) => return Err(format!("item {i} holds {} there", type_name(v))),
            None => return Err(format!("item {i} has no `{key}`")),
        }
    }
    if !(keys.iter().all(|v| v.is_number()) || keys.iter().all(|v| v.is_string())) {
        return Err("its items mix numbers and strings there".into());
    }
    for (i, pair) in keys.windows(2).enumerate() {
        let ord = compare_scalars(pair[0], pair[1]);
        let wrong = match d {
            Direction::Ascending => ord == std::cmp::Ordering::Greater,
            Direction::Descending => ord == std::cmp::Ordering::Less,
        };
        if wrong {
            return Err(format!(
                "item {} ({}) comes after item {i} ({})",
                i + 1,
                pair[1],
                pair[0]
            ));
        }
    }
    Ok(())
}

/// Numbers numerically, strings by code point; numbers before strings.
pub(crate) fn compare_scalars(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.total_cmp(&y)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Number(_), _) => std::cmp::Ordering::Less,
        _ => std::cmp::Ordering::Greater,
    }
}

/// `output_schema = true`: the result's `structuredContent` against the
/// pinned outputSchema (offline: no `$ref` is fetched).
fn conformance(key: &str, result: &Value, schema: Option<&OutputSchema>) -> Option<Difference> {
    let schema = schema?;
    let diff = |message: String| Difference {
        rule: "result-nonconformant",
        call: key.to_string(),
        pointer: Some("/structuredContent".into()),
        message,
        ..Difference::default()
    };
    let Some(structured) = result.get("structuredContent") else {
        return Some(diff(
            "the result has no structuredContent to check against the pinned outputSchema".into(),
        ));
    };
    let validator = match &schema.validator {
        Ok(v) => v,
        Err(e) => {
            return Some(diff(format!(
                "the pinned outputSchema does not compile, so the result cannot be checked: {e}"
            )))
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| {
            let at = e.instance_path().as_str().to_string();
            let at = if at.is_empty() {
                "(the root)".to_string()
            } else {
                at
            };
            format!("`{at}`: {e}")
        })
        .collect();
    if errors.is_empty() {
        return None;
    }
    let mut message = format!(
        "structuredContent does not conform to the pinned outputSchema: {}",
        errors
            .iter()
            .take(SHOWN_ERRORS)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ")
    );
    if errors.len() > SHOWN_ERRORS {
        message += &format!("; and {} more", errors.len() - SHOWN_ERRORS);
    }
    Some(diff(message))
}

#[cfg(test)]
mod expect_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_wildcards_and_the_structured_content_prefix() {
        let v = json!({"rows": [{"s": "a"}, {"s": "b"}]});
        assert_eq!(
            resolve(&v, "/structuredContent/rows/*/s"),
            vec![&json!("a"), &json!("b")]
        );
        assert_eq!(resolve(&v, "/rows/1/s"), vec![&json!("b")]);
        assert!(resolve(&v, "/nope").is_empty());
    }

    fn expect(toml_expect: &str) -> crate::Expect {
        let text = format!(
            "version = 1\n[tools.\"s/t\"]\n[[tools.\"s/t\".calls]]\nname = \"c\"\n[tools.\"s/t\".calls.expect]\n{toml_expect}\n"
        );
        let mut c = crate::Contracts::parse(&text, "c.toml").expect("parses");
        c.tools.remove(0).calls.remove(0).expect
    }

    fn run(toml_expect: &str, structured: Value) -> Vec<String> {
        let result = json!({"content": [], "structuredContent": structured});
        check_expect(
            "s/t#c",
            &expect(toml_expect),
            Some(Class::Ok),
            Some(&result),
            None,
        )
        .into_iter()
        .map(|d| format!("{}: {}", d.rule, d.message))
        .collect()
    }

    fn rows() -> Value {
        json!({"rows": [
            {"id": "ord-3", "n": 3, "country": "DE", "at": "2026-12-03T10:00:00Z"},
            {"id": "ord-2", "n": 2, "country": "FR", "at": "2026-12-02T10:00:00Z"},
            {"id": "ord-1", "n": 2, "country": "Japan", "at": "2026-12-01T10:00:00+01:00"},
        ]})
    }

    #[test]
    fn formats_regexes_and_lengths() {
        assert!(run(r#"formats = [{ pointer = "/rows/*/at", format = "rfc3339" }, { pointer = "/rows/*/id", regex = "^ord-[0-9]+$", min_length = 5, max_length = 5 }]"#, rows()).is_empty());
        assert_eq!(
            run(r#"formats = [{ pointer = "/rows/*/country", format = "iso-3166-alpha-2" }]"#, rows()),
            ["contract-failed: 1 of 3 values at `/rows/*/country` are not iso-3166-alpha-2, the first \"Japan\""]
        );
        assert_eq!(
            run(r#"formats = [{ pointer = "/rows/*/id", regex = "^ord-[12]$" }]"#, rows()),
            ["contract-failed: 1 of 3 values at `/rows/*/id` do not match the regex \"^ord-[12]$\", the first \"ord-3\""]
        );
        assert_eq!(
            run(r#"formats = [{ pointer = "/rows/*/country", max_length = 2 }]"#, rows()),
            ["contract-failed: 1 of 3 values at `/rows/*/country` have a length (in characters) outside at most 2, the first \"Japan\""]
        );
        assert_eq!(
            run(
                r#"formats = [{ pointer = "/rows/*/n", format = "uuid" }]"#,
                rows()
            ),
            ["contract-failed: expected strings at `/rows/*/n`, found integer"]
        );
        assert_eq!(
            run(
                r#"formats = [{ pointer = "/nope", format = "uuid" }]"#,
                rows()
            ),
            ["contract-failed: expected strings at `/nope`, found none"]
        );
    }

    #[test]
    fn orders() {
        assert!(run(r#"order = [{ pointer = "/rows", key = "/n", direction = "descending" }, { pointer = "/structuredContent/rows", key = "/at", direction = "descending" }]"#, rows()).is_empty());
        assert_eq!(
            run(r#"order = [{ pointer = "/rows", key = "/n" }]"#, rows()),
            ["contract-failed: `/rows` is not sorted by `/n` ascending: item 1 (2) comes after item 0 (3)"]
        );
        let mixed = json!({"rows": [{"k": 1}, {"k": "2"}, {"k": 3}]});
        assert_eq!(
            run(r#"order = [{ pointer = "/rows", key = "/k" }]"#, mixed),
            ["contract-failed: `/rows` is not sorted by `/k` ascending: its items mix numbers and strings there"]
        );
        let missing = json!({"rows": [{"k": 1}, {"j": 2}]});
        assert_eq!(
            run(r#"order = [{ pointer = "/rows", key = "/k" }]"#, missing),
            ["contract-failed: `/rows` is not sorted by `/k` ascending: item 1 has no `/k`"]
        );
        assert_eq!(
            run(r#"order = [{ pointer = "/rows/0", key = "/k" }]"#, rows()),
            ["contract-failed: expected an array at `/rows/0`, found object"]
        );
        // Ties are allowed; an empty array is sorted.
        assert!(run(
            r#"order = [{ pointer = "/rows", key = "/k" }]"#,
            json!({"rows": [{"k": 1}, {"k": 1}]})
        )
        .is_empty());
        assert!(run(
            r#"order = [{ pointer = "/rows", key = "/k" }]"#,
            json!({"rows": []})
        )
        .is_empty());
    }

    #[test]
    fn output_schema_conformance() {
        let schema = json!({
            "type": "object",
            "properties": {"rows": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}}},
            "required": ["rows", "total"]
        });
        let e = expect("output_schema = true");
        let check = |structured: Value| {
            let result = json!({"content": [], "structuredContent": structured});
            check_expect(
                "s/t#c",
                &e,
                Some(Class::Ok),
                Some(&result),
                Some(&OutputSchema::compile(&schema)),
            )
        };
        assert!(check(json!({"rows": [], "total": 1})).is_empty());
        let d = check(rows());
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].rule, "result-nonconformant");
        assert!(
            d[0].message
                .starts_with("structuredContent does not conform to the pinned outputSchema: "),
            "{}",
            d[0].message
        );
        assert!(d[0].message.contains("`/rows/0/n`"), "{}", d[0].message);
        assert!(
            d[0].message
                .contains("`(the root)`: \"total\" is a required property"),
            "{}",
            d[0].message
        );
        assert!(d[0].message.ends_with("; and 1 more"), "{}", d[0].message);
        let none = json!({"content": [{"type": "text", "text": "{}"}]});
        let d = check_expect(
            "s/t#c",
            &e,
            Some(Class::Ok),
            Some(&none),
            Some(&OutputSchema::compile(&schema)),
        );
        assert_eq!(
            d[0].message,
            "the result has no structuredContent to check against the pinned outputSchema"
        );
        // output_schema = false, or not given: nothing.
        let off = expect("output_schema = false");
        let result = json!({"structuredContent": {}});
        assert!(check_expect(
            "s/t#c",
            &off,
            Some(Class::Ok),
            Some(&result),
            Some(&OutputSchema::compile(&schema))
        )
        .is_empty());
    }

    #[test]
    fn error_classes() {
        let e = expect(
            r#"error = "rate-limit"
fields = [{ pointer = "/never" }]"#,
        );
        let msg = |class: Option<Class>| {
            let result = json!({"structuredContent": {}});
            check_expect("s/t#c", &e, class, Some(&result), None)
                .into_iter()
                .map(|d| format!("{}: {}", d.rule, d.message))
                .collect::<Vec<_>>()
        };
        // The class expected: clean, and no payload assertion is made.
        assert!(msg(Some(Class::RateLimit)).is_empty());
        assert_eq!(
            msg(Some(Class::Ok)),
            ["contract-failed: expected a rate-limit error, the call answered ok"]
        );
        assert_eq!(msg(Some(Class::Validation)), ["contract-failed: expected a rate-limit error, the call failed with a validation error"]);
        let v = expect(r#"error = "auth""#);
        let d = check_expect("s/t#c", &v, Some(Class::Other), None, None);
        assert_eq!(
            d[0].message,
            "expected an auth error, the call failed with an error of no known class"
        );
        // Not observed (unavailable): nothing.
        assert!(check_expect("s/t#c", &v, None, None, None).is_empty());
    }

    #[test]
    fn bad_regexes_are_located_parse_errors() {
        let text = "version = 1\n[tools.\"s/t\"]\n[[tools.\"s/t\".calls]]\nname = \"c\"\nexpect = { formats = [{ pointer = \"/a\", regex = \"(\" }] }\n";
        let e = crate::Contracts::parse(text, "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:5:49: tools.\"s/t\": call \"c\": expect.formats: \"(\" is not a valid regex: "), "{e}");
        let text = "version = 1\n[defaults]\nvolatile_patterns = [\"^ord-[0-9]+$\", \"[\"]\n";
        let e = crate::Contracts::parse(text, "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml:3:38: defaults.volatile_patterns: \"[\" is not a valid regex: "),
            "{e}"
        );
        let text = "version = 1\n[tools.\"s/t\"]\nvolatile_patterns = [\"a{2,1}\"]\n";
        let e = crate::Contracts::parse(text, "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "c.toml:3:22: tools.\"s/t\": volatile_patterns: \"a{2,1}\" is not a valid regex: "
            ),
            "{e}"
        );
        let text = "version = 1\n[defaults]\nvolatile_patterns = [\"^ord-\"]\n[tools.\"s/t\"]\nvolatile_patterns = [\"^tmp-\"]\n";
        let c = crate::Contracts::parse(text, "c.toml").unwrap();
        assert_eq!(c.tools[0].volatile_patterns, ["^ord-", "^tmp-"]);
        assert_eq!(c.tools[0].volatile_values().patterns.len(), 2);
    }
}
