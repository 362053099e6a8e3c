//! Union pairing: which branch of a changed `anyOf`/`oneOf`/`allOf` is
//! which, by what it means rather than by its index. The unions family
//! (rules/unions.rs) walks the pairs and judges what is left unpaired.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;
use toolpin_manifest::jcs;

use super::types;
use crate::budget::MAX_BRANCH_PAIRS;

/// Pairs union branches by best match, not by index: identical branches
/// first (each with the first unused identical one after), then by a
/// structural distance, greedily in a deterministic order. `None` when the
/// branches left unpaired are too many to compare pairwise
/// ([`MAX_BRANCH_PAIRS`]).
pub(crate) fn pair_branches(b: &[&Value], a: &[&Value]) -> Option<Vec<(usize, usize)>> {
    let mut pairs = Vec::new();
    let mut used_a = vec![false; a.len()];
    let mut used_b = vec![false; b.len()];
    // Identical means the same canonical text (what `same` compares), so
    // they are found through a map, not by comparing every pair.
    let mut identical: HashMap<Vec<u8>, std::collections::VecDeque<usize>> = HashMap::new();
    for (j, y) in a.iter().enumerate() {
        identical
            .entry(jcs::to_canonical_vec(y))
            .or_default()
            .push_back(j);
    }
    for (i, x) in b.iter().enumerate() {
        if let Some(j) = identical
            .get_mut(&jcs::to_canonical_vec(x))
            .and_then(|js| js.pop_front())
        {
            used_a[j] = true;
            used_b[i] = true;
            pairs.push((i, j));
        }
    }
    let left_b = used_b.iter().filter(|u| !**u).count();
    let left_a = used_a.iter().filter(|u| !**u).count();
    if left_b.saturating_mul(left_a) > MAX_BRANCH_PAIRS {
        return None;
    }
    // By discriminator first (a property whose one allowed value names
    // the branch: `type: {const: "merge_queue"}`), then by title, then by
    // structure; branches whose discriminators or titles differ are not
    // the same branch, whatever else they share.
    let (disc_b, disc_a): (Vec<_>, Vec<_>) = (
        b.iter().map(|x| discriminators(x)).collect(),
        a.iter().map(|y| discriminators(y)).collect(),
    );
    // One side a single branch (a plain schema read as a one-branch union:
    // a union collapsed to it, or it wrapped into one): it is one of the
    // other side's branches changed, so the closest one with a compatible
    // type is it even when every member moved.
    let lone = b.len() == 1 || a.len() == 1;
    let mut candidates: Vec<(u8, usize, usize, usize)> = Vec::new();
    for (i, x) in b.iter().enumerate().filter(|(i, _)| !used_b[*i]) {
        for (j, y) in a.iter().enumerate().filter(|(j, _)| !used_a[*j]) {
            let (db, da) = (&disc_b[i], &disc_a[j]);
            let shared: Vec<&String> = db.keys().filter(|k| da.contains_key(*k)).collect();
            let rank = if !shared.is_empty() {
                if shared.iter().any(|k| db[*k] != da[*k]) {
                    continue;
                }
                0
            } else {
                match (title(x), title(y)) {
                    (Some(tx), Some(ty)) if tx != ty => continue,
                    (Some(_), Some(_)) => 1,
                    _ => 2,
                }
            };
            if let Some(d) = distance(x, y, lone) {
                candidates.push((rank, d, i, j));
            }
        }
    }
    candidates.sort();
    for (_, _, i, j) in candidates {
        if !used_b[i] && !used_a[j] {
            used_b[i] = true;
            used_a[j] = true;
            pairs.push((i, j));
        }
    }
    pairs.sort();
    Some(pairs)
}

/// The properties of a branch that each allow one value (`const`, or an
/// `enum` of one): what tells the branches of a tagged union apart.
fn discriminators(branch: &Value) -> BTreeMap<String, Value> {
    let Some(props) = branch.get("properties").and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    props
        .iter()
        .filter_map(|(k, v)| {
            let one = v.get("const").cloned().or_else(|| {
                v.get("enum")
                    .and_then(Value::as_array)
                    .filter(|e| e.len() == 1)
                    .map(|e| e[0].clone())
            })?;
            Some((k.clone(), one))
        })
        .collect()
}

fn title(branch: &Value) -> Option<&str> {
    branch.get("title").and_then(Value::as_str)
}

/// Members that differ between two branch schemas; `None` when they cannot
/// be the same branch (types that share none, or nothing in common unless
/// `lone`: one side's only branch). Types that overlap can be one branch
/// that gained or lost a type (a nullable object that became a union's
/// non-null branch).
fn distance(x: &Value, y: &Value, lone: bool) -> Option<usize> {
    let (Some(mx), Some(my)) = (x.as_object(), y.as_object()) else {
        return None;
    };
    if let (Some(tx), Some(ty)) = (types(mx), types(my)) {
        if tx.is_disjoint(&ty) {
            return None;
        }
    }
    let keys: BTreeSet<&String> = mx.keys().chain(my.keys()).collect();
    let differing = keys
        .iter()
        .filter(|k| mx.get(k.as_str()) != my.get(k.as_str()))
        .count();
    (differing < keys.len() || keys.is_empty() || lone).then_some(differing)
}
