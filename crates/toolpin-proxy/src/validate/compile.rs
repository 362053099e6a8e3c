//! Compiling: what the crate rejects is removed from the copy (each
//! noted) until it compiles; decided by the error's kind, never its text.

use super::*;

/// Compile `schema`, removing what the crate rejects (each noted) until it
/// compiles; `None` (everything accepted) when that does not settle.
pub(super) fn build(schema: &mut Value, notes: &mut Notes) -> Option<jsonschema::Validator> {
    for _ in 0..MAX_ATTEMPTS {
        // `offline`: a `$ref` the layer missed still never fetches.
        let options = jsonschema::options().should_validate_formats(true);
        let e = match options.offline().build(schema) {
            Ok(v) => return Some(v),
            Err(e) => e,
        };
        let at = e.instance_path().as_str();
        let fixed = match e.kind() {
            ValidationErrorKind::Referencing(r) => remove_refs_named(schema, r, notes),
            kind => !at.is_empty() && neutralise_keyword(schema, at, kind.keyword(), notes),
        };
        if !fixed {
            break;
        }
    }
    notes.note("", "the schema does not compile; treated as always valid");
    None
}

/// Remove the `$ref`s a resolution error names (see [`names_ref`]).
fn remove_refs_named(schema: &mut Value, error: &ReferencingError, notes: &mut Notes) -> bool {
    let keywords = subschema_pointers(schema)
        .into_iter()
        .flat_map(|ptr| REFS.map(|k| format!("{ptr}/{k}")));
    let refs: Vec<(String, String)> = keywords
        .filter_map(|p| match lookup(schema, &p) {
            Some(Value::String(r)) if names_ref(error, r) => Some((p, r.clone())),
            _ => None,
        })
        .collect();
    let mut any = false;
    for (p, r) in refs {
        if remove_at(schema, &p) {
            notes.note(&p, unresolved(&r));
            any = true;
        }
    }
    any
}

/// Whether the crate's resolution `error` is about `reference`, decided by
/// the error's kind and the part it names: the pointer or anchor of a
/// fragment (as written or percent-decoded), or the document it could not
/// retrieve (the crate names it as an absolute URI).
fn names_ref(error: &ReferencingError, reference: &str) -> bool {
    use ReferencingError as E;
    let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    let fragment_is = |named: &str| {
        !named.is_empty()
            && (fragment == named || schema::percent_decode(fragment).as_deref() == Some(named))
    };
    match error {
        E::PointerToNowhere { pointer }
        | E::InvalidPercentEncoding { pointer, .. }
        | E::InvalidArrayIndex { pointer, .. } => fragment_is(pointer),
        E::NoSuchAnchor { anchor } | E::InvalidAnchor { anchor } => fragment_is(anchor),
        E::Unretrievable { uri, .. } => {
            let uri = uri.strip_suffix('#').unwrap_or(uri);
            !base.is_empty()
                && (uri == base
                    || uri
                        .strip_suffix(base)
                        .is_some_and(|head| head.ends_with('/')))
        }
        _ => false,
    }
}

/// Remove what an error at `at` (a pointer into the schema, from checking
/// it against its meta-schema) is about: the keyword holding `at`, or the
/// subschema at `at`.
fn neutralise_keyword(schema: &mut Value, at: &str, check: &str, notes: &mut Notes) -> bool {
    // The deepest subschema holding `at`, and the keyword under it.
    let positions = subschema_pointers(schema);
    let (mut ptr, mut kw_ptr) = (at, None);
    while !positions.iter().any(|p| p == ptr) {
        let Some((parent, _)) = ptr.rsplit_once('/') else {
            return false;
        };
        (ptr, kw_ptr) = (parent, Some(ptr));
    }
    if let Some(kw_ptr) = kw_ptr {
        // The keyword's own value is at fault.
        let kw = kw_ptr.rsplit_once('/').map_or("", |x| x.1);
        let pattern = lookup(schema, kw_ptr).and_then(Value::as_str);
        let pattern = pattern.filter(|_| kw == "pattern").map(str::to_string);
        if !remove_at(schema, kw_ptr) {
            return false;
        }
        match pattern {
            Some(p) => note_pattern(notes, kw_ptr, &p),
            None => notes.note(
                kw_ptr,
                format_args!("malformed value (fails the meta-schema's {check}); ignored"),
            ),
        }
        if kw_ptr.contains("/patternProperties/") || kw == "patternProperties" {
            additional_off(schema, ptr, notes);
        }
        return true;
    }
    // The subschema itself is at fault.
    let Some(v) = lookup_mut(schema, ptr) else {
        return false;
    };
    *v = Value::Bool(true);
    let Some((parent, pat)) = ptr.rsplit_once("/patternProperties/") else {
        let why = format!(
            "not a valid schema (fails the meta-schema's {check}); treated as always valid"
        );
        notes.note(ptr, why);
        return true;
    };
    note_pattern(notes, ptr, &unescape_token(pat).unwrap_or_default());
    // Which names the entry matched is unknown.
    let name = ptr.rsplit_once('/').map(|x| x.1).and_then(unescape_token);
    let entries = lookup_mut(schema, &format!("{parent}/patternProperties"));
    if let (Some(Value::Object(entries)), Some(name)) = (entries, name) {
        entries.remove(name.as_ref());
    }
    additional_off(schema, parent, notes);
    true
}

/// `additionalProperties` of the schema at `ptr` is not judged (a
/// `patternProperties` entry was dropped).
fn additional_off(schema: &mut Value, ptr: &str, notes: &mut Notes) {
    let kp = format!("{ptr}/additionalProperties");
    if remove_at(schema, &kp) {
        notes.note(&kp, "ignored: a patternProperties pattern is not supported");
    }
}

/// The pointer of every subschema in `root` (itself included), in
/// document order.
pub(super) fn subschema_pointers(root: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(ptr) = stack.pop() {
        if let Some(Value::Object(m)) = lookup(root, &ptr) {
            for (k, v) in m.iter().rev() {
                let kp = format!("{ptr}/{}", escape_token(k));
                let subs = subschemas(k, v).into_iter().rev();
                stack.extend(subs.map(|p| format!("{kp}{p}")));
            }
        }
        out.push(ptr);
    }
    out
}

/// Remove the keyword at `ptr` (its parent must be an object).
pub(super) fn remove_at(schema: &mut Value, ptr: &str) -> bool {
    let Some((parent, last)) = ptr.rsplit_once('/') else {
        return false;
    };
    match (lookup_mut(schema, parent), unescape_token(last)) {
        (Some(Value::Object(m)), Some(key)) => m.remove(key.as_ref()).is_some(),
        _ => false,
    }
}

/// The note for a `pattern` that is not a regular expression.
fn note_pattern(notes: &mut Notes, ptr: &str, pattern: &str) {
    let p = excerpt(pattern, MESSAGE_EXCERPT);
    let why = format!("pattern {p} is not supported (not a valid regular expression); ignored");
    notes.note(ptr, why);
}
