//! Reading each MCP client's configuration into servers, with the client's
//! variable syntax turned into toolpin's `${VAR}` references.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};
use toolpin_manifest::text::plural_s;

use super::{jsonc, Client, Context};

/// How toolpin reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Command {
        argv: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    Url {
        url: String,
        headers: Vec<(String, String)>,
        /// The client speaks legacy SSE to it.
        sse: bool,
        bearer_token_env: Option<String>,
    },
}

/// One server found in a client's file.
#[derive(Debug, Clone)]
pub struct Found {
    pub client: Client,
    /// Its name in the client's file.
    pub name: String,
    /// Why it cannot be written as a toolpin source, when it cannot.
    pub source: Result<Source, String>,
    /// Tool names (not globs) the client keeps or drops.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub init_timeout_ms: Option<u64>,
    pub enabled: bool,
    /// Comment lines for the server's table.
    pub notes: Vec<String>,
}

impl Found {
    /// A server named `name` in `client`'s file, enabled, with nothing
    /// read yet.
    fn new(client: Client, name: &str) -> Self {
        Found {
            client,
            name: name.to_string(),
            source: Err(String::new()),
            include: Vec::new(),
            exclude: Vec::new(),
            init_timeout_ms: None,
            enabled: true,
            notes: Vec::new(),
        }
    }
}

/// What one file held.
#[derive(Debug, Default)]
pub struct Parsed {
    pub servers: Vec<Found>,
    /// Comment lines about the file as a whole.
    pub notes: Vec<String>,
}

/// Reads `text`, written by `client`.
pub fn parse(client: Client, text: &str, ctx: &Context) -> Result<Parsed, String> {
    if client == Client::Codex {
        return codex(text, ctx);
    }
    let doc = jsonc::parse(text).map_err(|e| format!("not valid JSON: {e}"))?;
    if !doc.is_object() {
        return Err("not a JSON object".into());
    }
    let interp = Interp::new(client, ctx, &doc);
    let mut parsed = Parsed::default();
    match client {
        Client::Vscode => {
            // `.vscode/mcp.json` has `servers`; user settings have `mcp.servers`.
            let servers = doc
                .get("servers")
                .or_else(|| doc.get("mcp").and_then(|m| m.get("servers")));
            entries(servers, &interp, &mut parsed.servers);
        }
        Client::Zed => entries(doc.get("context_servers"), &interp, &mut parsed.servers),
        Client::ClaudeCode => {
            entries(doc.get("mcpServers"), &interp, &mut parsed.servers);
            if let Some(projects) = doc.get("projects").and_then(Value::as_object) {
                let mut others = 0;
                for (path, project) in projects {
                    let servers = project.get("mcpServers");
                    let count = servers.and_then(Value::as_object).map_or(0, Map::len);
                    if !same_path(Path::new(path), &ctx.project) {
                        others += count;
                        continue;
                    }
                    let start = parsed.servers.len();
                    entries(servers, &interp, &mut parsed.servers);
                    for found in &mut parsed.servers[start..] {
                        found
                            .notes
                            .push("Claude Code local scope: listed for this project only.".into());
                    }
                }
                if others > 0 {
                    parsed.notes.push(format!(
                        "{others} server{} listed there for other projects {} not included.",
                        plural_s(others),
                        if others == 1 { "is" } else { "are" }
                    ));
                }
            }
        }
        Client::Gemini => {
            entries(doc.get("mcpServers"), &interp, &mut parsed.servers);
            // `mcp.excluded` turns servers off by name.
            let excluded = strings(doc.get("mcp").and_then(|m| m.get("excluded")));
            for found in &mut parsed.servers {
                if excluded.contains(&found.name) {
                    found.enabled = false;
                    found
                        .notes
                        .push("Disabled: listed in Gemini CLI's mcp.excluded.".into());
                }
            }
        }
        Client::ClaudeDesktop | Client::Cursor | Client::Windsurf | Client::Codex => {
            entries(doc.get("mcpServers"), &interp, &mut parsed.servers);
        }
    }
    Ok(parsed)
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b || std::fs::canonicalize(a).is_ok_and(|a| a == b)
}

fn entries(servers: Option<&Value>, interp: &Interp, out: &mut Vec<Found>) {
    let Some(servers) = servers.and_then(Value::as_object) else {
        return;
    };
    for (name, entry) in servers {
        out.push(json_entry(name, entry, interp));
    }
}

/// A JSON server entry. Every client's keys are read whatever the client, as
/// they do not clash; only their meaning can depend on the client.
fn json_entry(name: &str, entry: &Value, interp: &Interp) -> Found {
    let client = interp.client;
    let mut found = Found::new(client, name);
    let Some(e) = entry.as_object() else {
        found.source = Err("its entry is not an object".into());
        return found;
    };
    let notes = &mut found.notes;
    let str_of = |key: &str| e.get(key).and_then(Value::as_str);
    if e.get("disabled").and_then(Value::as_bool) == Some(true)
        || e.get("enabled").and_then(Value::as_bool) == Some(false)
    {
        found.enabled = false;
        notes.push(format!("Disabled in {}.", client.title()));
    }
    found.include = strings(e.get("includeTools"));
    found.exclude = strings(e.get("excludeTools"));
    found.exclude.extend(strings(e.get("disabledTools")));
    if let Some(ms) = e.get("timeout").and_then(Value::as_u64) {
        found.init_timeout_ms = Some(ms);
    }
    for key in ["envFile", "env_file"] {
        if let Some(f) = str_of(key) {
            notes.push(format!(
                "{} also loads environment variables from {f:?}; toolpin does not: export them.",
                client.title()
            ));
        }
    }
    if str_of("headersHelper").is_some() {
        notes.push(
            "Claude Code gets more headers from a headersHelper command; add them under headers."
                .into(),
        );
    }
    let kind = str_of("type").unwrap_or("");
    // Zed's older form nests the command: {"command": {"path", "args", "env"}}.
    let (command, args, env) = match e.get("command") {
        Some(Value::Object(c)) => (
            c.get("path").and_then(Value::as_str),
            c.get("args"),
            c.get("env"),
        ),
        Some(Value::String(c)) => (Some(c.as_str()), e.get("args"), e.get("env")),
        _ => (None, e.get("args"), e.get("env")),
    };
    let url = ["url", "serverUrl", "httpUrl"]
        .into_iter()
        .find_map(|k| str_of(k).map(|u| (k, u)));
    found.source = if let Some(command) = command.filter(|c| !c.is_empty()) {
        let mut argv = vec![interp.value(command, notes)];
        argv.extend(strings(args).iter().map(|a| interp.value(a, notes)));
        Ok(Source::Command {
            argv,
            env: interp.pairs(string_map(env), notes),
            cwd: str_of("cwd").map(|c| interp.value(c, notes)),
        })
    } else if let Some((key, url)) = url {
        // Gemini: `url` is SSE and `httpUrl` Streamable HTTP, unless `type` says.
        let sse = kind == "sse" || (client == Client::Gemini && key == "url" && kind != "http");
        Ok(Source::Url {
            url: interp.expanded(url, notes),
            headers: interp.pairs(string_map(e.get("headers")), notes),
            sse,
            bearer_token_env: None,
        })
    } else if str_of("source") == Some("extension") {
        Err("a Zed extension provides its command".into())
    } else {
        Err("it has neither a command nor a url".into())
    };
    found
}

/// `~/.codex/config.toml`: `[mcp_servers.NAME]` tables.
fn codex(text: &str, ctx: &Context) -> Result<Parsed, String> {
    let doc: toml::Table = toml::from_str(text)
        .map_err(|e| format!("not valid TOML: {}", e.message().trim().replace('\n', " ")))?;
    let doc = serde_json::to_value(doc).map_err(|e| format!("unreadable TOML: {e}"))?;
    let interp = Interp::new(Client::Codex, ctx, &doc);
    let mut parsed = Parsed::default();
    let Some(servers) = doc.get("mcp_servers").and_then(Value::as_object) else {
        return Ok(parsed);
    };
    for (name, entry) in servers {
        let mut found = Found::new(Client::Codex, name);
        let Some(e) = entry.as_object() else {
            found.source = Err("its entry is not a table".into());
            parsed.servers.push(found);
            continue;
        };
        let notes = &mut found.notes;
        let str_of = |key: &str| e.get(key).and_then(Value::as_str);
        if e.get("enabled").and_then(Value::as_bool) == Some(false) {
            found.enabled = false;
            notes.push("Disabled in Codex (enabled = false).".into());
        }
        found.include = strings(e.get("enabled_tools"));
        found.exclude = strings(e.get("disabled_tools"));
        found.init_timeout_ms = match (
            e.get("startup_timeout_sec").and_then(Value::as_f64),
            e.get("startup_timeout_ms").and_then(Value::as_u64),
        ) {
            (Some(s), _) if s.is_finite() && s > 0.0 => Some((s * 1000.0).round() as u64),
            (_, ms) => ms,
        };
        found.source = if let Some(command) = str_of("command").filter(|c| !c.is_empty()) {
            let mut argv = vec![interp.value(command, notes)];
            argv.extend(
                strings(e.get("args"))
                    .iter()
                    .map(|a| interp.value(a, notes)),
            );
            Ok(Source::Command {
                argv,
                env: interp.pairs(string_map(e.get("env")), notes),
                cwd: str_of("cwd").map(|c| interp.value(c, notes)),
            })
        } else if let Some(url) = str_of("url") {
            let mut headers = interp.pairs(string_map(e.get("http_headers")), notes);
            // env_http_headers: header name -> the variable holding its value.
            for (header, var) in string_map(e.get("env_http_headers")) {
                headers.push((header, format!("${{{}}}", var_name(&var))));
            }
            let mut bearer = str_of("bearer_token_env_var").map(var_name);
            if str_of("bearer_token").is_some() && bearer.is_none() {
                let var = format!("{}_TOKEN", env_name(name));
                notes.push(format!(
                    "Secret not copied: Codex's bearer_token is read from {var}; export it."
                ));
                bearer = Some(var);
            }
            Ok(Source::Url {
                url: interp.expanded(url, notes),
                headers,
                sse: false,
                bearer_token_env: bearer,
            })
        } else {
            Err("it has neither a command nor a url".into())
        };
        parsed.servers.push(found);
    }
    Ok(parsed)
}

/// An array of strings; numbers and booleans are written as text.
fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(scalar).collect())
        .unwrap_or_default()
}

/// An object of strings; numbers and booleans are written as text.
fn string_map(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), scalar(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// An environment variable name made from any text: upper case, with runs of
/// anything but letters and digits as one `_`.
pub fn env_name(text: &str) -> String {
    let mut name = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_uppercase());
        } else if !name.is_empty() && !name.ends_with('_') {
            name.push('_');
        }
    }
    while name.ends_with('_') {
        name.pop();
    }
    if name.is_empty() {
        "VALUE".into()
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("V_{name}")
    } else {
        name
    }
}

/// `var` itself when it is a usable variable name, else one made from it.
pub fn var_name(var: &str) -> String {
    if is_reference(var) && !var.contains(":-") {
        var.to_string()
    } else {
        env_name(var)
    }
}

/// Whether `inner` (between `${` and `}`) is a toolpin reference:
/// `NAME` or `NAME:-default`.
pub fn is_reference(inner: &str) -> bool {
    let name = inner.split_once(":-").map_or(inner, |(n, _)| n);
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Turns a client's variable syntax into toolpin's.
pub struct Interp<'a> {
    pub client: Client,
    ctx: &'a Context,
    /// VS Code `inputs`: id -> description.
    inputs: BTreeMap<String, String>,
}

impl<'a> Interp<'a> {
    fn new(client: Client, ctx: &'a Context, doc: &Value) -> Self {
        let mut inputs = BTreeMap::new();
        for input in doc
            .get("inputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = input.get("id").and_then(Value::as_str) {
                let description = input
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                inputs.insert(id.to_string(), description.to_string());
            }
        }
        Interp {
            client,
            ctx,
            inputs,
        }
    }

    fn pairs(
        &self,
        pairs: Vec<(String, String)>,
        notes: &mut Vec<String>,
    ) -> Vec<(String, String)> {
        pairs
            .into_iter()
            .map(|(k, v)| {
                let v = self.expanded(&v, notes);
                (k, v)
            })
            .collect()
    }

    /// A value toolpin uses as written (`command`, `cwd`): see [`Self::convert`].
    pub fn value(&self, text: &str, notes: &mut Vec<String>) -> String {
        self.convert(text, false, notes)
    }

    /// A value toolpin expands (env, headers, url): see [`Self::convert`].
    pub fn expanded(&self, text: &str, notes: &mut Vec<String>) -> String {
        self.convert(text, true, notes)
    }

    /// `text` with the client's variables replaced: environment variables
    /// become `${NAME}`, editor paths are filled in (the home directory as
    /// `${HOME}` where toolpin expands it, so no home path is written), and
    /// anything toolpin cannot resolve becomes a variable to export, with a
    /// note.
    fn convert(&self, text: &str, expanded: bool, notes: &mut Vec<String>) -> String {
        let title = self.client.title();
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find('$') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            // Gemini CLI also reads bare $NAME.
            if self.client == Client::Gemini && !after.starts_with('{') {
                let len = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                let name = &after[..len];
                if name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                    out.push_str(&format!("${{{name}}}"));
                    rest = &after[len..];
                    continue;
                }
            }
            let Some(inner_end) = after.strip_prefix('{').and_then(|a| a.find('}')) else {
                out.push('$');
                rest = after;
                continue;
            };
            let inner = &after[1..=inner_end];
            rest = &after[inner_end + 2..];
            let editor = matches!(self.client, Client::Vscode | Client::Cursor);
            let replacement = match inner.split_once(':') {
                Some(("env", var)) if is_reference(var) && !var.contains(":-") => {
                    format!("${{{var}}}")
                }
                Some(("input", id)) if self.client == Client::Vscode => {
                    let var = env_name(id);
                    let description = self.inputs.get(id).map(String::as_str).unwrap_or("");
                    let about = if description.is_empty() {
                        String::new()
                    } else {
                        format!(" ({description:?})")
                    };
                    push_note(
                        notes,
                        format!(
                            "VS Code prompts for input {id:?}{about}; toolpin reads it from \
                             the environment: export {var}."
                        ),
                    );
                    format!("${{{var}}}")
                }
                _ if editor && inner == "workspaceFolder" => self.ctx.workspace.clone(),
                _ if editor && inner == "workspaceFolderBasename" => self
                    .ctx
                    .project
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                _ if editor && inner == "userHome" => match &self.ctx.home {
                    Some(h) if !expanded => h.display().to_string(),
                    _ => "${HOME}".to_string(),
                },
                _ if editor && (inner == "pathSeparator" || inner == "/") => {
                    std::path::MAIN_SEPARATOR.to_string()
                }
                _ if is_reference(inner) => format!("${{{inner}}}"),
                _ => {
                    let var = env_name(inner);
                    push_note(
                        notes,
                        format!(
                            "`${{{inner}}}` is a {title} variable toolpin cannot resolve; it \
                             became ${{{var}}}: export {var} with its value."
                        ),
                    );
                    format!("${{{var}}}")
                }
            };
            out.push_str(&replacement);
        }
        out.push_str(rest);
        out
    }
}

/// Adds a note once.
pub fn push_note(notes: &mut Vec<String>, note: String) {
    if !notes.contains(&note) {
        notes.push(note);
    }
}
