//! The catalog the agent is served: the pinned tools, reshaped by the
//! facade, minus withdrawn ones, and for each served name the route back
//! to the upstream tool.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value};
use toolpin_manifest::{Catalog, Fingerprint};

use crate::validate::Validator;

/// `[facade."server/tool"]`: how one pinned tool is shown to the model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FacadeEntry {
    /// The name the model sees.
    pub name: Option<String>,
    /// The description the model reads.
    pub description: Option<String>,
    /// The parameters the model sees (model-side names); `None`: all.
    pub parameters: Option<Vec<String>>,
    /// Hidden parameters and the values sent upstream for them
    /// (upstream names).
    pub fixed: BTreeMap<String, Value>,
    /// Model-side name → upstream name.
    pub rename: BTreeMap<String, String>,
}

/// Why a pinned tool cannot be called right now, although it is listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub rule: String,
    pub message: String,
    /// The change's severity, and its live fingerprint (what a refusal is
    /// keyed by in the ledger).
    pub severity: toolpin_drift::Severity,
    pub live: Option<String>,
}

/// How a served tool reaches its upstream.
#[derive(Debug)]
pub struct Route {
    pub server: String,
    /// The pinned (namespaced) name, as in the lockfile.
    pub pinned_name: String,
    /// The name the upstream knows (the namespace prefix removed).
    pub upstream_name: String,
    pub fingerprint: Fingerprint,
    /// Model-side name → upstream name.
    pub rename: BTreeMap<String, String>,
    pub fixed: BTreeMap<String, Value>,
    /// Parameters the model may pass (model-side names); `None`: any the
    /// pinned schema allows.
    pub visible: Option<BTreeSet<String>>,
    /// The pinned inputSchema, and compiled.
    pub input_schema: Value,
    pub input: Validator,
    /// The pinned outputSchema, compiled, when there is one.
    pub output: Option<Validator>,
    /// Set when upstream drift makes calls fail loudly instead.
    pub blocked: Option<Blocked>,
}

impl Route {
    /// Whether the facade changes the arguments on their way upstream.
    pub fn reshapes(&self) -> bool {
        self.visible.is_some() || !self.rename.is_empty() || !self.fixed.is_empty()
    }

    /// The model's arguments in the upstream's shape: renamed, with fixed
    /// values added. Arguments the facade hides are refused.
    pub fn to_upstream(&self, args: Value) -> Result<Value, String> {
        let given = match args {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return Err(format!(
                    "arguments must be an object, not {}",
                    toolpin_manifest::normalize::type_name(&other)
                ))
            }
        };
        // No facade: the arguments go as they are.
        if !self.reshapes() {
            return Ok(Value::Object(given));
        }
        let mut out = Map::new();
        for (key, value) in given {
            if let Some(visible) = &self.visible {
                if !visible.contains(&key) {
                    return Err(format!("unknown argument {key:?}"));
                }
            }
            let upstream = self
                .rename
                .get(&key)
                .cloned()
                .unwrap_or_else(|| key.clone());
            if self.fixed.contains_key(&upstream) {
                return Err(format!("unknown argument {key:?}"));
            }
            out.insert(upstream, value);
        }
        for (key, value) in &self.fixed {
            out.insert(key.clone(), value.clone());
        }
        Ok(Value::Object(out))
    }
}

/// One served tool.
#[derive(Debug)]
pub struct ServedTool {
    /// The tool as the model sees it.
    pub tool: Value,
    pub route: Arc<Route>,
}

/// The served catalog at one moment; swapped whole when it changes.
#[derive(Debug, Default)]
pub struct Served {
    /// By served name, in name order (the `tools/list` order).
    pub tools: BTreeMap<String, ServedTool>,
    /// Withdrawn pinned tools (`server/tool`) and why.
    pub withdrawn: BTreeMap<String, String>,
    /// Served names of withdrawn tools, for a precise refusal.
    pub withdrawn_names: BTreeMap<String, String>,
    pub catalog_fingerprint: Option<Fingerprint>,
}

impl Served {
    /// Builds the view. `facade` is keyed by `server/tool` (pinned names);
    /// `withdrawn` maps `server/tool` to a reason; `blocked` likewise names
    /// tools whose calls must fail; `prefixes` gives each server's
    /// namespace prefix.
    pub fn build(
        catalog: &Catalog,
        prefixes: &BTreeMap<String, String>,
        facade: &BTreeMap<String, FacadeEntry>,
        withdrawn: &BTreeMap<String, String>,
        blocked: &BTreeMap<String, Blocked>,
    ) -> Result<Self, String> {
        let mut served = Served {
            withdrawn: withdrawn.clone(),
            catalog_fingerprint: Some(catalog.fingerprint()),
            ..Served::default()
        };
        for (server, pin) in &catalog.servers {
            let prefix = prefixes.get(server).map(String::as_str).unwrap_or("");
            for (name, pinned) in &pin.tools {
                let address = format!("{server}/{name}");
                let entry = facade.get(&address).cloned().unwrap_or_default();
                let model_name = entry.name.clone().unwrap_or_else(|| name.clone());
                if let Some(reason) = withdrawn.get(&address) {
                    served
                        .withdrawn_names
                        .insert(model_name, format!("{address}: {reason}"));
                    continue;
                }
                let tool = pinned.value();
                let (shown, route) = reshape(&tool, &entry, &address).map(|(shown, visible)| {
                    let route = Route {
                        server: server.clone(),
                        pinned_name: name.clone(),
                        upstream_name: name.strip_prefix(prefix).unwrap_or(name).to_string(),
                        fingerprint: pinned.fingerprint,
                        rename: entry.rename.clone(),
                        fixed: entry.fixed.clone(),
                        visible,
                        input_schema: tool
                            .get("inputSchema")
                            .cloned()
                            .unwrap_or(Value::Bool(true)),
                        input: Validator::new(
                            tool.get("inputSchema").unwrap_or(&Value::Bool(true)),
                        ),
                        output: tool.get("outputSchema").map(Validator::new),
                        blocked: blocked.get(&address).cloned(),
                    };
                    (shown, route)
                })?;
                if served.tools.contains_key(&model_name) {
                    return Err(format!(
                        "two tools would be served as {model_name:?}; give one a facade name"
                    ));
                }
                served.tools.insert(
                    model_name,
                    ServedTool {
                        tool: shown,
                        route: Arc::new(route),
                    },
                );
            }
        }
        for address in facade.keys() {
            let known = address
                .split_once('/')
                .and_then(|(s, t)| catalog.servers.get(s)?.tools.get(t))
                .is_some();
            if !known {
                return Err(format!(
                    "facade.\"{address}\": no such pinned tool (use server/tool as in the lockfile)"
                ));
            }
        }
        Ok(served)
    }

    /// A page of `tools/list`: up to `page` tools after `cursor`.
    pub fn page(
        &self,
        cursor: Option<&str>,
        page: usize,
    ) -> Result<(Vec<Value>, Option<String>), String> {
        let start = match cursor {
            None => 0,
            Some(c) => c
                .strip_prefix("toolpin:")
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| format!("invalid cursor {c:?}"))?,
        };
        let tools: Vec<Value> = self
            .tools
            .values()
            .skip(start)
            .take(page)
            .map(|t| t.tool.clone())
            .collect();
        let next = (start + tools.len() < self.tools.len())
            .then(|| format!("toolpin:{}", start + tools.len()));
        Ok((tools, next))
    }
}

/// The tool as the model sees it under `entry`, and the model-side
/// parameter names it may pass (`None`: no restriction beyond the schema).
fn reshape(
    tool: &Value,
    entry: &FacadeEntry,
    address: &str,
) -> Result<(Value, Option<BTreeSet<String>>), String> {
    let mut shown = tool.clone();
    // Pinned tools are objects (normalization refuses anything else).
    if let Some(obj) = shown.as_object_mut() {
        if let Some(name) = &entry.name {
            obj.insert("name".into(), Value::String(name.clone()));
        }
        if let Some(description) = &entry.description {
            obj.insert("description".into(), Value::String(description.clone()));
        }
    }
    if entry.parameters.is_none() && entry.fixed.is_empty() && entry.rename.is_empty() {
        return Ok((shown, None));
    }
    let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let to_model = renames(entry, &properties, address)?;
    let visible = visible_parameters(entry, &properties, &required, &to_model, address)?;
    let model = |name: &str| to_model.get(name).map_or(name, |m| m).to_string();
    let mut new_props = Map::new();
    for (key, value) in &properties {
        if !entry.fixed.contains_key(key) && visible.contains(&model(key)) {
            new_props.insert(model(key), value.clone());
        }
    }
    let new_required: Vec<Value> = required
        .iter()
        .filter(|r| !entry.fixed.contains_key(*r))
        .map(|r| model(r))
        .filter(|m| visible.contains(m))
        .map(Value::String)
        .collect();
    if let Some(obj) = shown.get_mut("inputSchema").and_then(Value::as_object_mut) {
        obj.insert("properties".into(), Value::Object(new_props));
        if new_required.is_empty() {
            obj.remove("required");
        } else {
            obj.insert("required".into(), Value::Array(new_required));
        }
    }
    Ok((shown, Some(visible)))
}

/// Upstream parameter name → model name, from the entry's renames; every
/// renamed and fixed parameter must exist.
fn renames<'e>(
    entry: &'e FacadeEntry,
    properties: &Map<String, Value>,
    address: &str,
) -> Result<BTreeMap<&'e str, &'e str>, String> {
    let mut to_model: BTreeMap<&str, &str> = BTreeMap::new();
    for (model, upstream) in &entry.rename {
        if !properties.contains_key(upstream) {
            return Err(format!(
                "facade.\"{address}\".rename: the tool has no parameter {upstream:?}"
            ));
        }
        to_model.insert(upstream, model);
    }
    for key in entry.fixed.keys() {
        if !properties.contains_key(key) {
            return Err(format!(
                "facade.\"{address}\".fixed: the tool has no parameter {key:?}"
            ));
        }
    }
    Ok(to_model)
}

/// The model-side names the model may pass: the entry's `parameters`, or
/// every parameter without a fixed value; each required parameter must
/// stay visible or get a fixed value.
fn visible_parameters(
    entry: &FacadeEntry,
    properties: &Map<String, Value>,
    required: &[String],
    to_model: &BTreeMap<&str, &str>,
    address: &str,
) -> Result<BTreeSet<String>, String> {
    let model_names: BTreeSet<String> = properties
        .keys()
        .filter(|k| !entry.fixed.contains_key(*k))
        .map(|k| {
            to_model
                .get(k.as_str())
                .map_or_else(|| k.clone(), |m| m.to_string())
        })
        .collect();
    let visible: BTreeSet<String> = match &entry.parameters {
        Some(list) => {
            for p in list {
                if !model_names.contains(p) {
                    return Err(format!("facade.\"{address}\".parameters: the tool has no parameter {p:?} (after renames and fixed values)"));
                }
            }
            list.iter().cloned().collect()
        }
        None => model_names,
    };
    for r in required {
        let model = to_model.get(r.as_str()).map_or(r.as_str(), |m| m);
        if !entry.fixed.contains_key(r) && !visible.contains(model) {
            return Err(format!(
                "facade.\"{address}\": required parameter {r:?} is hidden without a fixed value"
            ));
        }
    }
    Ok(visible)
}
