//! Property tests for the shared `$ref` resolver (`toolpin_manifest::schema`).

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use toolpin_manifest::schema::{
    escape_token, lookup, percent_decode, unescape_token, RefError, Resolver, Target,
};

/// Keys with the characters references must escape: `/`, `~`, `%`, space,
/// braces, non-ASCII.
fn key() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('/'),
            Just('~'),
            Just('%'),
            Just(' '),
            Just('{'),
            Just('#'),
            Just('é'),
            proptest::char::range('a', 'e'),
            proptest::char::range('0', '2'),
        ],
        0..6,
    )
    .prop_map(|cs| cs.into_iter().collect())
}

/// Percent-encodes every byte that is not an unreserved ASCII letter or
/// digit, or (when `all`) every byte.
fn percent_encode(text: &str, all: bool) -> String {
    text.bytes()
        .map(|b| {
            if !all && (b.is_ascii_alphanumeric() || b == b'/') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

proptest! {
    #[test]
    fn escape_round_trips(k in key()) {
        let escaped = escape_token(&k);
        prop_assert!(!escaped.contains('/'));
        let back = unescape_token(&escaped);
        prop_assert_eq!(back.as_deref(), Some(k.as_str()));
    }

    #[test]
    fn percent_decoding_inverts_encoding(k in key(), all in any::<bool>()) {
        let encoded = percent_encode(&k, all);
        let decoded = percent_decode(&encoded);
        prop_assert_eq!(decoded.as_deref(), Some(k.as_str()));
    }

    /// A value nested under arbitrary keys is found by its escaped pointer,
    /// as written, percent-encoded, or with every byte encoded.
    #[test]
    fn nested_keys_resolve(keys in proptest::collection::vec(key(), 1..4), leaf in any::<i64>()) {
        let mut root = json!(leaf);
        for k in keys.iter().rev() {
            let mut m = Map::new();
            m.insert(k.clone(), root);
            root = Value::Object(m);
        }
        let pointer: String = keys.iter().map(|k| format!("/{}", escape_token(k))).collect();
        prop_assert_eq!(lookup(&root, &pointer), Some(&json!(leaf)));
        let r = Resolver::new(&root);
        let written = format!("#{}", percent_encode(&pointer, false));
        let everything = format!("#{}", percent_encode(&pointer, true));
        for reference in [written, everything] {
            match r.target(&reference) {
                Ok(Target::Local { value, pointer: p }) => {
                    prop_assert_eq!(value, &json!(leaf));
                    prop_assert_eq!(&p, &pointer);
                }
                other => prop_assert!(false, "{reference}: {other:?}"),
            }
        }
    }

    /// A ring of n aliases is a cycle, whatever n and wherever it is
    /// entered; a chain of n aliases ending in a schema resolves, and is
    /// refused when the limit is below n.
    #[test]
    fn rings_are_cycles_and_chains_resolve(n in 1usize..20, entry in 0usize..20, limit in 1usize..25) {
        let entry = entry % n;
        let mut ring = Map::new();
        let mut chain = Map::new();
        for i in 0..n {
            ring.insert(format!("r{i}"), json!({"$ref": format!("#/$defs/r{}", (i + 1) % n)}));
            let next = if i + 1 == n { json!({"type": "string"}) } else { json!({"$ref": format!("#/$defs/c{}", i + 1)}) };
            chain.insert(format!("c{i}"), next);
        }
        ring.extend(chain);
        let root = json!({"$defs": ring});
        let r = Resolver::new(&root);
        let start = json!({"$ref": format!("#/$defs/r{entry}")});
        match r.resolve(&start, 1_000) {
            Err(RefError::Cycle(seen)) => {
                prop_assert_eq!(seen.len(), n + 1);
                prop_assert_eq!(seen.first(), seen.last());
            }
            other => prop_assert!(false, "{other:?}"),
        }
        let start = json!({"$ref": "#/$defs/c0"});
        // c0 … c(n-2) are aliases, c(n-1) is the schema: n references.
        let got = r.resolve(&start, limit);
        if limit >= n {
            let got = got.expect("resolves");
            prop_assert_eq!(got.value, &json!({"type": "string"}));
            let last = format!("/$defs/c{}", n - 1);
            prop_assert_eq!(got.pointer.as_deref(), Some(last.as_str()));
        } else {
            prop_assert_eq!(got, Err(RefError::TooLong(limit)));
        }
    }

    /// `$anchor` names resolve to the anchored subschema wherever it sits.
    #[test]
    fn anchors_resolve(name in "[a-z][a-z0-9_-]{0,8}", keys in proptest::collection::vec(key(), 1..3)) {
        let mut root = json!({"$anchor": name, "type": "string"});
        for k in keys.iter().rev() {
            let mut m = Map::new();
            m.insert(k.clone(), root);
            root = Value::Object(m);
        }
        let r = Resolver::new(&root);
        let pointer: String = keys.iter().map(|k| format!("/{}", escape_token(k))).collect();
        prop_assert_eq!(r.anchor(&name), Some(pointer.as_str()));
        let start = json!({"$ref": format!("#{name}")});
        let got = r.resolve(&start, 4).expect("local");
        prop_assert_eq!(got.value.get("type"), Some(&json!("string")));
    }
}
