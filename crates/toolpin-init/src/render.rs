//! Writing the servers found as a commented `toolpin.toml`, with every
//! literal secret replaced by a `${VAR}` reference.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

use toolpin_manifest::text::{toml_key as key, toml_string as quote};

use super::clients::{env_name, is_reference, push_note, Found, Parsed, Source};
use super::Client;

/// The servers read from one file.
pub struct FileFinds {
    pub client: Client,
    /// The file as shown to the user (`~/…` or relative to the project).
    pub origin: String,
    pub parsed: Parsed,
}

/// The rendered file and what went into it.
pub struct Rendered {
    pub text: String,
    /// Servers written as `[servers.NAME]` tables.
    pub servers: usize,
    /// Servers that could only be described in a comment.
    pub skipped: usize,
    /// Literal secrets replaced by references.
    pub secrets: usize,
    /// Variables toolpin reads when it loads the file.
    pub exports: Vec<String>,
}

/// Prefixes of well-known credential formats, caught whatever their key.
const TOKEN_PREFIXES: [&str; 14] = [
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "sk-",
    "sk_live_",
    "rk_live_",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
    "ya29.",
];

/// The same test the lockfile's redaction uses.
pub fn secret_key(key: &str) -> bool {
    toolpin_config::secret_looking(key)
}

fn token_like(value: &str) -> bool {
    value.len() >= 16
        && !value.contains(char::is_whitespace)
        && TOKEN_PREFIXES.iter().any(|p| value.starts_with(p))
}

/// A command-line flag that takes a secret (`--api-key`, `--token=`), but not
/// one that names where a secret is (`--token-file`, `--api-key-env`).
fn secret_flag(flag: &str) -> bool {
    let upper = flag.trim_start_matches('-').to_ascii_uppercase();
    let words: Vec<&str> = upper.split(['-', '_', '.']).collect();
    let secret = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|w| upper.contains(w));
    let pointer = ["FILE", "PATH", "DIR", "ENV", "VAR", "NAME", "HEADER", "URL"]
        .iter()
        .any(|w| words.contains(w));
    secret && !pointer
}

fn literal(value: &str) -> bool {
    !value.contains("${")
}

/// Names given to replaced secrets; one name per distinct value.
#[derive(Default)]
struct Vars {
    taken: BTreeMap<String, u64>,
}

impl Vars {
    /// The first of `candidates` not holding a different value, or the last
    /// one numbered.
    fn name(&mut self, candidates: &[String], value: &str) -> String {
        let mut h = DefaultHasher::new();
        value.hash(&mut h);
        let hash = h.finish();
        let fits = |taken: &BTreeMap<String, u64>, n: &str| taken.get(n).is_none_or(|&v| v == hash);
        let chosen = candidates
            .iter()
            .find(|c| fits(&self.taken, c))
            .cloned()
            .unwrap_or_else(|| {
                let base = candidates
                    .last()
                    .cloned()
                    .unwrap_or_else(|| "SECRET".into());
                (2..)
                    .map(|i| format!("{base}_{i}"))
                    .find(|c| fits(&self.taken, c))
                    .unwrap_or(base)
            });
        self.taken.insert(chosen.clone(), hash);
        chosen
    }
}

/// One server's table, ready to write.
struct Table<'a> {
    key: String,
    found: &'a Found,
    origin: &'a str,
    notes: Vec<String>,
    enabled: bool,
    source: Source,
    /// Comment lines for individual env or header keys.
    key_notes: BTreeMap<String, Vec<String>>,
}

pub fn render(files: &[FileFinds], searched_summary: &str) -> Rendered {
    let mut vars = Vars::default();
    let mut tables: Vec<Table> = Vec::new();
    let mut secrets = 0;
    let mut skipped = 0;
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    // The body, in the order found; the header is written last, as it lists
    // the variables to export.
    let mut body = String::new();
    for file in files {
        for (i, found) in file.parsed.servers.iter().enumerate() {
            body.push('\n');
            if i == 0 {
                for note in &file.parsed.notes {
                    for line in wrap(&format!("{}: {note}", file.origin), 76) {
                        comment(&mut body, &line);
                    }
                }
            }
            comment(
                &mut body,
                &format!("{}: {}", found.client.title(), file.origin),
            );
            let source = match &found.source {
                Ok(s) => s.clone(),
                Err(why) => {
                    skipped += 1;
                    not_written(&mut body, found, why);
                    continue;
                }
            };
            let mut notes = found.notes.clone();
            let mut enabled = found.enabled;
            let base = table_key(&found.name);
            if base != found.name {
                notes.insert(
                    0,
                    format!("Named {:?} in {}.", found.name, found.client.title()),
                );
            }
            let key = match names.get(&base) {
                None => base,
                Some(&first) => {
                    let other = &tables[first];
                    let key = unique_key(&base, found.client, &names);
                    enabled &= !also_named(
                        &mut notes,
                        found,
                        other,
                        (base.as_str(), key.as_str()),
                        &source,
                    );
                    key
                }
            };
            names.insert(key.clone(), tables.len());
            let mut table = Table {
                key,
                found,
                origin: &file.origin,
                notes,
                enabled,
                source,
                key_notes: BTreeMap::new(),
            };
            secrets += redact(&mut table, &mut vars);
            write_table(&mut body, &table);
            tables.push(table);
        }
    }

    let exports = exports(&tables);
    Rendered {
        text: header(searched_summary, &exports) + &body,
        servers: tables.len(),
        skipped,
        secrets,
        exports,
    }
}

/// The comment in place of a server that cannot be written, and how to
/// add it by hand.
fn not_written(body: &mut String, found: &Found, why: &str) {
    let text = format!(
        "Not written: {:?}, because {why}. To pin it, add it by hand, e.g.:",
        found.name
    );
    for line in wrap(&text, 76) {
        comment(body, &line);
    }
    comment(body, &format!("[servers.{}]", table_key(&found.name)));
    comment(body, "command = [\"program\", \"arg\"]");
}

/// The notes of a server named as `other` already is (`servers.BASE`),
/// written as `servers.KEY`; whether it is disabled, as it runs the same
/// server.
fn also_named(
    notes: &mut Vec<String>,
    found: &Found,
    other: &Table,
    (base, key): (&str, &str),
    source: &Source,
) -> bool {
    notes.push(format!(
        "Also named {:?} in {} ({}): that is servers.{base}, so this one is servers.{key}.",
        found.name,
        other.found.client.title(),
        other.origin,
    ));
    if other.found.source.as_ref().ok() == Some(source) {
        notes.push(format!(
            "It runs the same server as servers.{base}, so it is disabled: \
             two servers listing the same tools would fail `toolpin lock`."
        ));
        true
    } else {
        notes.push(
            "If both list the same tool names, `toolpin lock` fails: give one a \
             `prefix` or set `enabled = false`."
                .into(),
        );
        false
    }
}

/// The variables the written tables reference, to export.
fn exports(tables: &[Table]) -> Vec<String> {
    let mut exports = BTreeSet::new();
    for t in tables {
        match &t.source {
            Source::Command { env, .. } => {
                env.iter().for_each(|(_, v)| references(v, &mut exports));
            }
            Source::Url {
                url,
                headers,
                bearer_token_env,
                ..
            } => {
                references(url, &mut exports);
                headers
                    .iter()
                    .for_each(|(_, v)| references(v, &mut exports));
                exports.extend(bearer_token_env.iter().cloned());
            }
        }
    }
    exports.into_iter().collect()
}

fn header(searched_summary: &str, exports: &[String]) -> String {
    let mut out = String::new();
    for line in [
        "toolpin.toml: the MCP servers whose tool definitions toolpin pins.",
        "",
        "Written by `toolpin init` from the MCP client configuration it found:",
    ] {
        comment(&mut out, line);
    }
    for line in wrap(searched_summary, 76) {
        comment(&mut out, &format!("  {line}"));
    }
    for line in [
        "",
        "Review it: remove the servers your agent does not use, and read the notes",
        "above each server.",
        "",
        "Secrets are never written here. ${VAR} and ${VAR:-default} are read from the",
        "environment when toolpin runs, in memory only, and never reach the lockfile.",
    ] {
        comment(&mut out, line);
    }
    if !exports.is_empty() {
        comment(&mut out, "Export these before running toolpin:");
        for line in wrap(&exports.join(" "), 76) {
            comment(&mut out, &format!("  {line}"));
        }
    }
    for line in [
        "",
        "Next: `toolpin lock` starts every server, captures the tools it lists and",
        "writes them to toolpin.lock. Commit both files and run `toolpin check` in CI",
        "to fail when the tools drift.",
    ] {
        comment(&mut out, line);
    }
    out
}

fn write_table(out: &mut String, t: &Table) {
    for note in &t.notes {
        if note.starts_with("command = ") {
            // A line to copy: keep it whole.
            comment(out, note);
        } else {
            for line in wrap(note, 76) {
                comment(out, &line);
            }
        }
    }
    let _ = writeln!(out, "[servers.{}]", t.key);
    let sub: Option<(&str, &Vec<(String, String)>)> = match &t.source {
        Source::Command { argv, env, cwd } => {
            let _ = writeln!(out, "command = {}", array(argv));
            if let Some(cwd) = cwd {
                let _ = writeln!(out, "cwd = {}", quote(cwd));
            }
            Some(("env", env))
        }
        Source::Url {
            url,
            headers,
            sse,
            bearer_token_env,
        } => {
            let _ = writeln!(out, "url = {}", quote(url));
            if *sse {
                let _ = writeln!(out, "transport = \"sse\"");
            }
            if let Some(var) = bearer_token_env {
                let _ = writeln!(out, "bearer_token_env = {}", quote(var));
            }
            Some(("headers", headers))
        }
    };
    let globs = |names: &[String]| names.iter().map(|n| glob_escape(n)).collect::<Vec<_>>();
    if !t.found.include.is_empty() {
        let _ = writeln!(out, "include = {}", array(&globs(&t.found.include)));
    }
    if !t.found.exclude.is_empty() {
        let _ = writeln!(out, "exclude = {}", array(&globs(&t.found.exclude)));
    }
    if let Some(ms) = t.found.init_timeout_ms {
        if ms > 0 && ms <= 86_400_000 {
            let text = if ms % 1000 == 0 {
                format!("{}s", ms / 1000)
            } else {
                format!("{ms}ms")
            };
            let _ = writeln!(out, "init_timeout = {}", quote(&text));
        } else {
            comment(
                out,
                &format!("{}'s timeout of {ms} ms is not copied: toolpin's init_timeout must be 1 ms to 24 hours.", t.found.client.title()),
            );
        }
    }
    if !t.enabled {
        let _ = writeln!(out, "enabled = false");
    }
    if let Some((name, pairs)) = sub.filter(|(_, p)| !p.is_empty()) {
        let _ = writeln!(out, "\n[servers.{}.{name}]", t.key);
        for (k, v) in pairs {
            for note in t.key_notes.get(k).into_iter().flatten() {
                for line in wrap(note, 76) {
                    comment(out, &line);
                }
            }
            let _ = writeln!(out, "{} = {}", key(k), quote(v));
        }
    }
}

/// Replaces the literal secrets of a table by references, with notes.
/// Returns how many it replaced.
fn redact(t: &mut Table, vars: &mut Vars) -> usize {
    // Variables are named after the server as the client names it.
    let server = env_name(&t.found.name);
    let origin = t.origin.to_string();
    let mut count = 0;
    let mut key_notes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut notes = Vec::new();
    match &mut t.source {
        Source::Command { argv, env, .. } => {
            for (k, v) in env.iter_mut() {
                let is_var =
                    k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && is_reference(k);
                let own = if is_var { k.clone() } else { env_name(k) };
                if let Some((new, var)) =
                    redact_value(k, v, &[own.clone(), format!("{server}_{own}")], vars)
                {
                    *v = new;
                    count += 1;
                    key_notes.entry(k.clone()).or_default().push(format!(
                        "Secret not copied: export {var} (its value is in {origin})."
                    ));
                }
            }
            count += redact_args(argv, &server, &origin, vars, &mut notes);
            let refs = argv.iter().skip(1).any(|a| !literal(a));
            if refs {
                notes.push(
                    "toolpin runs `command` as written: it expands ${VAR} only in env, headers \
                     and url. If the server needs those values, let a shell expand them:"
                        .into(),
                );
                notes.push(format!(
                    "command = {}",
                    array(&[
                        "sh".into(),
                        "-c".into(),
                        format!(
                            "exec {}",
                            argv.iter()
                                .map(|a| sh_quote(a))
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    ])
                ));
            }
        }
        Source::Url { url, headers, .. } => {
            let (new, n) = redact_url(url, &server, &origin, vars, &mut notes);
            *url = new;
            count += n;
            for (k, v) in headers.iter_mut() {
                let mut name = env_name(k);
                if let Some(rest) = name.strip_prefix("X_") {
                    name = rest.to_string();
                }
                let bearer = scheme(v).is_some_and(|s| s.eq_ignore_ascii_case("bearer"));
                if name == "AUTHORIZATION" && bearer {
                    name = "TOKEN".into();
                }
                let var = if name.starts_with(&format!("{server}_")) {
                    name
                } else {
                    format!("{server}_{name}")
                };
                let candidates = [var];
                if let Some((new, var)) = redact_value(k, v, &candidates, vars) {
                    *v = new;
                    count += 1;
                    key_notes.entry(k.clone()).or_default().push(format!(
                        "Secret not copied: export {var} (its value is in {origin})."
                    ));
                }
            }
        }
    }
    for note in notes {
        push_note(&mut t.notes, note);
    }
    t.key_notes = key_notes;
    count
}

/// `value` with its secret replaced, and the variable now holding it; `None`
/// when it holds no literal secret.
fn redact_value(
    key: &str,
    value: &str,
    candidates: &[String],
    vars: &mut Vars,
) -> Option<(String, String)> {
    if !literal(value) {
        return None;
    }
    if secret_key(key) || token_like(value) {
        let var = vars.name(candidates, value);
        // Keep an auth scheme: "Bearer ${VAR}".
        let new = match scheme(value) {
            Some(s) => format!("{s} ${{{var}}}"),
            None => format!("${{{var}}}"),
        };
        return Some((new, var));
    }
    if value.contains("://") {
        let mut notes = Vec::new();
        let (new, n) = redact_url(value, &env_name(key), "", vars, &mut notes);
        if n > 0 {
            let var = new
                .split("${")
                .nth(1)
                .and_then(|r| r.split('}').next())
                .unwrap_or_default()
                .to_string();
            return Some((new, var));
        }
    }
    None
}

/// The auth scheme of a header value such as `Bearer abc`.
fn scheme(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    let known = ["Bearer", "Basic", "Token", "Bot", "ApiKey"];
    (known.iter().any(|k| k.eq_ignore_ascii_case(scheme)) && !rest.trim().is_empty())
        .then_some(scheme)
}

/// Replaces a password in the user info and secret query parameters of a
/// URL.
fn redact_url(
    url: &str,
    server: &str,
    origin: &str,
    vars: &mut Vars,
    notes: &mut Vec<String>,
) -> (String, usize) {
    let mut count = 0;
    let mut note = |var: &str, what: &str| {
        if !origin.is_empty() {
            notes.push(format!(
                "Secret not copied: export {var} (the {what} in the URL in {origin})."
            ));
        }
    };
    let (head, fragment) = match url.split_once('#') {
        Some((h, f)) => (h, Some(f)),
        None => (url, None),
    };
    let (base, query) = match head.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (head, None),
    };
    let mut out = base.to_string();
    if let Some(scheme_end) = base.find("://") {
        let authority_start = scheme_end + 3;
        let authority_end = base[authority_start..]
            .find('/')
            .map_or(base.len(), |i| authority_start + i);
        let authority = &base[authority_start..authority_end];
        if let Some((userinfo, host)) = authority.rsplit_once('@') {
            if let Some((user, password)) = userinfo.split_once(':') {
                if literal(password) && !password.is_empty() {
                    let var = vars.name(&[format!("{server}_PASSWORD")], password);
                    note(&var, "password");
                    count += 1;
                    out = format!(
                        "{}{user}:${{{var}}}@{host}{}",
                        &base[..authority_start],
                        &base[authority_end..]
                    );
                }
            }
        }
    }
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((k, v)) if secret_key(k) && literal(v) && !v.is_empty() => {
                    let var = vars.name(&[format!("{server}_{}", env_name(k))], v);
                    note(&var, &format!("{k} parameter"));
                    count += 1;
                    format!("{k}=${{{var}}}")
                }
                _ => param.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    (out, count)
}

/// Replaces secrets passed as arguments: the value of a secret flag, a
/// token-shaped argument, or a secret in a URL argument.
fn redact_args(
    argv: &mut [String],
    server: &str,
    origin: &str,
    vars: &mut Vars,
    notes: &mut Vec<String>,
) -> usize {
    let mut count = 0;
    let mut i = 1;
    while i < argv.len() {
        let arg = argv[i].clone();
        let flag_var = |flag: &str| format!("{server}_{}", env_name(flag));
        if !literal(&arg) {
            i += 1;
            continue;
        }
        if let Some((flag, value)) = arg.split_once('=').filter(|(f, _)| f.starts_with('-')) {
            if secret_flag(flag) && !value.is_empty() && literal(value) {
                let var = vars.name(&[flag_var(flag)], value);
                notes.push(format!(
                    "Secret not copied: export {var} (the {flag} argument in {origin})."
                ));
                argv[i] = format!("{flag}=${{{var}}}");
                count += 1;
            }
        } else if arg.starts_with('-') && secret_flag(&arg) {
            if let Some(value) = argv.get(i + 1).cloned() {
                if !value.starts_with('-') && literal(&value) {
                    let var = vars.name(&[flag_var(&arg)], &value);
                    notes.push(format!(
                        "Secret not copied: export {var} (the {arg} argument in {origin})."
                    ));
                    argv[i + 1] = format!("${{{var}}}");
                    count += 1;
                    i += 1;
                }
            }
        } else if token_like(&arg) {
            let var = vars.name(&[format!("{server}_TOKEN")], &arg);
            notes.push(format!(
                "Secret not copied: export {var} (a token argument in {origin})."
            ));
            argv[i] = format!("${{{var}}}");
            count += 1;
        } else if arg.contains("://") {
            let (new, n) = redact_url(&arg, server, origin, vars, notes);
            argv[i] = new;
            count += n;
        }
        i += 1;
    }
    count
}

/// Adds the variables that `value` references without a default.
fn references(value: &str, out: &mut BTreeSet<String>) {
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { return };
        let inner = &after[..end];
        if is_reference(inner) && !inner.contains(":-") {
            out.insert(inner.to_string());
        }
        rest = &after[end + 1..];
    }
}

/// A server name as a bare TOML key that toolpin accepts.
pub fn table_key(name: &str) -> String {
    let mut key = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            key.push(c);
        } else if !key.is_empty() && !key.ends_with('_') {
            key.push('_');
        }
    }
    let key = key.trim_matches(['_', '-']).to_string();
    if key.is_empty() {
        "server".into()
    } else {
        key
    }
}

fn unique_key(base: &str, client: Client, names: &BTreeMap<String, usize>) -> String {
    let with_client = format!("{base}-{}", client.id());
    std::iter::once(with_client.clone())
        .chain((2..).map(|i| format!("{with_client}-{i}")))
        .find(|k| !names.contains_key(k))
        .unwrap_or(with_client)
}

/// A tool name as a glob matching only itself.
fn glob_escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| quote(s)).collect();
    format!("[{}]", items.join(", "))
}

fn comment(out: &mut String, line: &str) {
    if line.is_empty() {
        out.push_str("#\n");
    } else {
        // A comment ends at a line break; keep it one line.
        let line: String = line
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let _ = writeln!(out, "# {line}");
    }
}

/// Splits `text` into lines of at most `width` characters at spaces (a
/// longer word gets a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// An argument quoted for `sh`, with `${VAR}` references left for the shell
/// to expand.
fn sh_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        return arg.to_string();
    }
    if literal(arg) {
        return format!("'{}'", arg.replace('\'', "'\\''"));
    }
    let mut out = String::from("\"");
    let mut rest = arg;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("${") {
            if let Some(end) = rest.find('}') {
                if is_reference(&rest[2..end]) {
                    out.push_str(&rest[..=end]);
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        }
        if matches!(c, '"' | '\\' | '`' | '$') {
            out.push('\\');
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.push('"');
    out
}
