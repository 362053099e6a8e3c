//! Prints, for every tool removed between two catalogs, the added tools it
//! scores best against, with the parts of the score: the data behind the
//! rename threshold (see `rename.rs` and docs/renames.md).
//!
//! `cargo run --release -p toolpin-drift --example rename_scores -- OLD NEW [TOP]`
//! where OLD and NEW are lockfiles or `{"tools": [...]}` files.

use std::collections::BTreeMap;

use serde_json::Value;
use toolpin_drift::rename::{similarity, similarity_parts, Candidate};

fn tools(path: &str) -> Result<BTreeMap<String, Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut out = BTreeMap::new();
    if let Some(list) = doc["tools"].as_array() {
        for t in list {
            if let Some(name) = t["name"].as_str() {
                out.insert(name.to_string(), t.clone());
            }
        }
    } else if let Some(servers) = doc["servers"].as_object() {
        for server in servers.values() {
            for (name, entry) in server["tools"].as_object().into_iter().flatten() {
                out.insert(name.clone(), entry["tool"].clone());
            }
        }
    } else {
        return Err(format!(
            "{path}: neither a lockfile nor {{\"tools\": [...]}}"
        ));
    }
    Ok(out)
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [old, new, rest @ ..] = args.as_slice() else {
        return Err("usage: rename_scores OLD NEW [TOP]".into());
    };
    let top: usize = rest.first().and_then(|t| t.parse().ok()).unwrap_or(3);
    let (before, after) = (tools(old)?, tools(new)?);
    let removed: Vec<_> = before
        .iter()
        .filter(|(n, _)| !after.contains_key(*n))
        .collect();
    let added: Vec<_> = after
        .iter()
        .filter(|(n, _)| !before.contains_key(*n))
        .collect();
    println!("removed {} added {}", removed.len(), added.len());
    println!("total  schema desc   name   annot  removed -> added");
    for (rn, rv) in &removed {
        let r = Candidate {
            name: rn,
            value: rv,
        };
        let mut scored: Vec<_> = added
            .iter()
            .map(|(an, av)| {
                let a = Candidate {
                    name: an,
                    value: av,
                };
                (similarity(&r, &a), similarity_parts(&r, &a), an.as_str())
            })
            .collect();
        scored.sort_by(|x, y| y.0.total_cmp(&x.0));
        for (total, p, an) in scored.into_iter().take(top) {
            println!(
                "{total:.3}  {:.3}  {:.3}  {:.3}  {:.0}      {rn} -> {an}",
                p.schema, p.description, p.name, p.annotations
            );
        }
    }
    Ok(())
}
