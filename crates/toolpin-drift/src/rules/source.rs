//! Source rules: the settings that turn a server's source into tools,
//! recorded in the lockfile's `source`, changed between the two sides.

use serde_json::Value;
use toolpin_manifest::pointer::escape_token;
use toolpin_manifest::Catalog;

use crate::finding::Finding;

crate::rules! {
    family SOURCE_RULES, SOURCE_FAMILY: "source", "Source rules";
    intro: "How the tools were made rather than what they say: a setting of the conversion that turned an OpenAPI source into MCP tools changed, which can change every tool of the server at once.";
    CONVERSION_CHANGED {
        id: "conversion-changed",
        since: "0.1.0",
        summary: "a conversion setting of an OpenAPI source changed (its `source.conversion` in the lockfile: body layout, outputSchema, operation pickers, remote references, converter version)",
        breaks: "Every tool of the server can change at once for a reason no upstream edit explains: merging the body moves every argument, dropping outputSchema takes away what consumers validate against, a picker adds or removes whole groups of operations. The tool findings beside it say what moved; this one says why, so the change is reviewed as a change to the catalog.",
        kind: Semantic, severity: Medium,
        rerun: ["trajectory", "tool-cases"],
        example: "`body` \"property\" → \"merge\", or `include_tags` [\"repos\"] → [\"repos\", \"issues\"], on an openapi server",
    }
}

// The check: the only code that emits this family's rules.

/// The pointer of an OpenAPI source's conversion settings inside its
/// lockfile entry.
pub const CONVERSION_POINTER: &str = "/source/conversion";

/// A server present on both sides, converted from OpenAPI on both, whose
/// conversion settings differ: one finding per setting.
pub(crate) fn check_conversions(old: &Catalog, new: &Catalog, out: &mut Vec<Finding>) {
    for (name, before) in &old.servers {
        let Some(after) = new.servers.get(name) else {
            continue;
        };
        let (Some(Value::Object(b)), Some(Value::Object(a))) = (
            before.source.get("conversion"),
            after.source.get("conversion"),
        ) else {
            continue;
        };
        let keys: std::collections::BTreeSet<&String> = b.keys().chain(a.keys()).collect();
        for key in keys {
            let (was, now) = (b.get(key), a.get(key));
            if was == now {
                continue;
            }
            let show = |v: Option<&Value>| v.map_or_else(|| "unset".to_string(), Value::to_string);
            let mut f = Finding::new(
                &CONVERSION_CHANGED,
                name,
                "",
                format!("{CONVERSION_POINTER}/{}", escape_token(key)),
            );
            f.message = format!(
                "server {name}: OpenAPI conversion `{key}` {} → {}",
                show(was),
                show(now)
            );
            f.before = was.cloned();
            f.after = now.cloned();
            SOURCE_FAMILY.push(out, f);
        }
    }
}
