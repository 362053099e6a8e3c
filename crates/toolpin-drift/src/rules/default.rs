//! Default rules: an argument's `default` moved. The check is
//! [`Walker::default`]; the property name it is called with raises the
//! severity of defaults that decide what a call does.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::rule::{Family, Severity};
use crate::rules::tool;
use crate::schema::{same, short, Site, Walker};

crate::rules! {
    family DEFAULT_RULES, DEFAULT_FAMILY: "default", "Default rules";
    intro: "The `default` of an argument: what the server does when the agent leaves it out. Nothing in the call changes, so nothing fails; the behaviour does. Booleans, and names containing limit, page, size, count, confirm, force or dry-run, raise it to high.";
    INPUT_DEFAULT_CHANGED {
        id: "input-default-changed",
        since: "0.1.0",
        summary: "`default` added, removed or changed",
        breaks: "Calls that omit the argument behave differently with nothing in the call changing: page size 50 → 20 and the agent sees less data; dry_run true → false and it acts. High for booleans and limit/page/size/confirm/force/dry-run names.",
        kind: Semantic, severity: Medium,
        rerun: ["tool-cases"],
        example: "`page_size` default 50 → 20",
    }
}

// The check, the only code that emits this family's rule (an output's
// `default` is the tool family's `field-changed` fallback).

/// The family this file's pushes are attributed to.
const FAMILY: &Family = &DEFAULT_FAMILY;

/// Argument names whose default decides what a call does.
const DECISIVE_DEFAULT_NAMES: [&str; 7] = [
    "limit", "page", "size", "confirm", "force", "dryrun", "count",
];

impl Walker<'_, '_> {
    /// `default`, with `prop` the name of the property it belongs to.
    pub(crate) fn default(&mut self, site: &Site, handled: &mut BTreeSet<&'static str>) {
        let Site {
            ptr, sb, sa, prop, ..
        } = *site;
        handled.insert("default");
        let (db, da) = (sb.get("default"), sa.get("default"));
        if db.zip(da).is_some_and(|(x, y)| same(x, y)) || (db.is_none() && da.is_none()) {
            return;
        }
        let at = format!("{ptr}/default");
        let show = |v: Option<&Value>| v.map(short).unwrap_or_else(|| "none".into());
        let message = format!("{ptr} default {} → {}", show(db), show(da));
        if self.input() {
            let boolean = db.is_some_and(Value::is_boolean) || da.is_some_and(Value::is_boolean);
            let name = prop
                .unwrap_or("")
                .to_ascii_lowercase()
                .replace(['_', '-'], "");
            let decisive = DECISIVE_DEFAULT_NAMES.iter().any(|n| name.contains(n));
            let sev = if boolean || decisive {
                Severity::High
            } else {
                Severity::Medium
            };
            self.push(FAMILY, &INPUT_DEFAULT_CHANGED, &at, message, db, da)
                .severity = sev;
        } else {
            self.push(FAMILY, &tool::FIELD_CHANGED, &at, message, db, da);
        }
    }
}
