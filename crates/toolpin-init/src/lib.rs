//! What `toolpin init` does: find the MCP servers configured for the agents on this
//! machine (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Zed,
//! Codex, Gemini CLI) and write them as a commented `toolpin.toml`.
//!
//! Files are read from the project (the current directory) and from the
//! home directory. Secrets are never copied: literal values become `${VAR}`
//! references, with a note saying what to export.

mod clients;
mod jsonc;
mod render;

use std::path::{Path, PathBuf};

use clients::Parsed;
use render::FileFinds;
pub use render::Rendered;

/// A client file that cannot be read or understood: one line for the user.
pub use toolpin_manifest::diagnostic::Message as Error;

/// The MCP clients whose configuration `init` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
    Zed,
    Codex,
    Gemini,
}

impl Client {
    /// The name people know it by.
    pub fn title(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::Zed => "Zed",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
        }
    }

    /// The `--client` value, also used to tell same-named servers apart.
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
            Client::Zed => "zed",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }
}

/// Where `init` runs.
#[derive(Debug, Clone)]
pub struct Context {
    pub home: Option<PathBuf>,
    /// The directories environment variables name for client files
    /// ([`config_dirs`]), searched after the home directory.
    pub dirs: Vec<(ConfigDir, PathBuf)>,
    /// The project: the current directory, absolute.
    pub project: PathBuf,
    /// What an editor's `${workspaceFolder}` becomes: `.` when the output
    /// is written in the project (toolpin resolves paths from there), else
    /// the project's path.
    pub workspace: String,
}

/// Where a client keeps its servers.
struct Place {
    client: Client,
    path: PathBuf,
    /// The path as shown: relative to the project, or `~/…`.
    shown: String,
}

const PROJECT_FILES: [(Client, &str); 6] = [
    (Client::ClaudeCode, ".mcp.json"),
    (Client::Cursor, ".cursor/mcp.json"),
    (Client::Vscode, ".vscode/mcp.json"),
    (Client::Zed, ".zed/settings.json"),
    (Client::Gemini, ".gemini/settings.json"),
    (Client::Codex, ".codex/config.toml"),
];

const HOME_FILES: [(Client, &str); 10] = [
    (
        Client::ClaudeDesktop,
        ".config/Claude/claude_desktop_config.json",
    ),
    (
        Client::ClaudeDesktop,
        "Library/Application Support/Claude/claude_desktop_config.json",
    ),
    (Client::ClaudeCode, ".claude.json"),
    (Client::Cursor, ".cursor/mcp.json"),
    (Client::Vscode, ".config/Code/User/mcp.json"),
    (
        Client::Vscode,
        "Library/Application Support/Code/User/mcp.json",
    ),
    (Client::Windsurf, ".codeium/windsurf/mcp_config.json"),
    (Client::Zed, ".config/zed/settings.json"),
    (Client::Codex, ".codex/config.toml"),
    (Client::Gemini, ".gemini/settings.json"),
];

/// A directory an environment variable names, where clients keep their
/// files when it is set: the XDG base directory on Linux, the roaming
/// application data on Windows (searched wherever it is set, so a
/// Windows-style layout is read on any system), and Codex's home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigDir {
    XdgConfigHome,
    AppData,
    CodexHome,
}

impl ConfigDir {
    pub const ALL: [ConfigDir; 3] = [
        ConfigDir::XdgConfigHome,
        ConfigDir::AppData,
        ConfigDir::CodexHome,
    ];

    /// The variable that names it.
    pub fn variable(self) -> &'static str {
        match self {
            ConfigDir::XdgConfigHome => "XDG_CONFIG_HOME",
            ConfigDir::AppData => "APPDATA",
            ConfigDir::CodexHome => "CODEX_HOME",
        }
    }

    /// A file in it as shown in messages and comments, by the variable
    /// (`$XDG_CONFIG_HOME/zed/settings.json`, `%APPDATA%\Claude\…`), so
    /// that no machine's path is written into a file meant to be committed.
    fn show(self, rel: &str) -> String {
        match self {
            ConfigDir::AppData => format!("%APPDATA%\\{}", rel.replace('/', "\\")),
            other => format!("${}/{rel}", other.variable()),
        }
    }
}

/// Files clients keep in the directories of [`ConfigDir`], as documented
/// by each client.
const DIR_FILES: [(ConfigDir, Client, &str); 7] = [
    (
        ConfigDir::XdgConfigHome,
        Client::ClaudeDesktop,
        "Claude/claude_desktop_config.json",
    ),
    (
        ConfigDir::XdgConfigHome,
        Client::Vscode,
        "Code/User/mcp.json",
    ),
    (ConfigDir::XdgConfigHome, Client::Zed, "zed/settings.json"),
    (
        ConfigDir::AppData,
        Client::ClaudeDesktop,
        "Claude/claude_desktop_config.json",
    ),
    (ConfigDir::AppData, Client::Vscode, "Code/User/mcp.json"),
    (ConfigDir::AppData, Client::Zed, "Zed/settings.json"),
    (ConfigDir::CodexHome, Client::Codex, "config.toml"),
];

/// The directories of [`ConfigDir`] this process's environment names
/// (set and not empty).
pub fn config_dirs() -> Vec<(ConfigDir, PathBuf)> {
    ConfigDir::ALL
        .into_iter()
        .filter_map(|d| {
            std::env::var_os(d.variable())
                .filter(|v| !v.is_empty())
                .map(|v| (d, PathBuf::from(v)))
        })
        .collect()
}

/// Every place searched, project first, then the home directory, then the
/// variables' directories, each file once.
fn places(ctx: &Context, only: Option<Client>) -> Vec<Place> {
    let mut out: Vec<Place> = Vec::new();
    let project = PROJECT_FILES
        .iter()
        .map(|(c, rel)| (*c, ctx.project.join(rel), None));
    let home = ctx.home.iter().flat_map(|h| {
        HOME_FILES
            .iter()
            .map(move |(c, rel)| (*c, h.join(rel), None))
    });
    let dirs = ctx.dirs.iter().flat_map(|(dir, base)| {
        DIR_FILES
            .iter()
            .filter(move |(d, _, _)| d == dir)
            .map(move |(d, c, rel)| (*c, base.join(rel), Some(d.show(rel))))
    });
    for (client, path, by_variable) in project.chain(home).chain(dirs) {
        if only.is_some_and(|o| o != client) || out.iter().any(|p| p.path == path) {
            continue;
        }
        // A variable's directory inside the project or the home directory
        // is shown as such; elsewhere by the variable.
        let plain = shown(ctx, &path);
        let shown = match by_variable {
            Some(v) if plain == path.display().to_string() => v,
            _ => plain,
        };
        out.push(Place {
            client,
            shown,
            path,
        });
    }
    out
}

/// A path as shown in comments and messages: relative to the project when in
/// it, `~/…` when in the home directory, else as it is. Home paths are not
/// written out, as the file is meant to be committed.
fn shown(ctx: &Context, path: &Path) -> String {
    if let Ok(rel) = path.strip_prefix(&ctx.project) {
        if !rel.as_os_str().is_empty() {
            return rel.display().to_string();
        }
    }
    if let Some(rel) = ctx.home.as_ref().and_then(|h| path.strip_prefix(h).ok()) {
        return format!("~/{}", rel.display());
    }
    path.display().to_string()
}

/// Which client wrote `path`, from its name and then its content.
fn detect(path: &Path, text: &str) -> Option<Client> {
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .map(|p| p.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let by_path = match (name.as_str(), parent.as_str()) {
        ("claude_desktop_config.json", _) => Some(Client::ClaudeDesktop),
        (".mcp.json" | ".claude.json", _) => Some(Client::ClaudeCode),
        ("mcp_config.json", _) => Some(Client::Windsurf),
        (_, ".cursor") => Some(Client::Cursor),
        (_, ".vscode") => Some(Client::Vscode),
        ("mcp.json", "user") => Some(Client::Vscode),
        (_, ".zed" | "zed") => Some(Client::Zed),
        (_, ".gemini") => Some(Client::Gemini),
        (_, ".codex") => Some(Client::Codex),
        _ => None,
    };
    if by_path.is_some() {
        return by_path;
    }
    let Ok(doc) = jsonc::parse(text) else {
        let toml = toml::from_str::<toml::Table>(text).ok()?;
        return toml.contains_key("mcp_servers").then_some(Client::Codex);
    };
    if doc.get("context_servers").is_some() {
        return Some(Client::Zed);
    }
    if doc.get("servers").is_some() || doc.pointer("/mcp/servers").is_some() {
        return Some(Client::Vscode);
    }
    if doc.get("projects").is_some() {
        return Some(Client::ClaudeCode);
    }
    let entries = doc.get("mcpServers")?.as_object()?;
    let any = |keys: &[&str]| {
        entries
            .values()
            .any(|e| keys.iter().any(|k| e.get(k).is_some()))
    };
    Some(if any(&["serverUrl", "disabledTools"]) {
        Client::Windsurf
    } else if any(&["httpUrl", "includeTools", "excludeTools", "trust"]) {
        Client::Gemini
    } else if any(&["type"]) {
        Client::ClaudeCode
    } else {
        Client::ClaudeDesktop
    })
}

/// What a search found.
struct Search {
    files: Vec<FileFinds>,
    searched: Vec<String>,
    /// Files present but holding no servers.
    empty: Vec<String>,
    /// Files that could not be read, with why.
    unreadable: Vec<String>,
}

fn search(ctx: &Context, only: Option<Client>) -> Search {
    let mut s = Search {
        files: Vec::new(),
        searched: Vec::new(),
        empty: Vec::new(),
        unreadable: Vec::new(),
    };
    for place in places(ctx, only) {
        s.searched.push(place.shown.clone());
        let text = match std::fs::read_to_string(&place.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                s.unreadable.push(format!("{}: {e}", place.shown));
                continue;
            }
        };
        match clients::parse(place.client, &text, ctx) {
            Ok(parsed) if parsed.servers.is_empty() => s.empty.push(place.shown),
            Ok(parsed) => s.files.push(FileFinds {
                client: place.client,
                origin: place.shown,
                parsed,
            }),
            Err(e) => s.unreadable.push(format!("{}: {e}", place.shown)),
        }
    }
    s
}

/// Reads one file named by `--from`.
fn read_from(ctx: &Context, path: &Path, client: Option<Client>) -> Result<FileFinds, Error> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.project.join(path)
    };
    let origin = shown(ctx, &abs);
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
    let client = client.or_else(|| detect(path, &text)).ok_or_else(|| {
        Error::new(format!(
            "{}: cannot tell which MCP client wrote it; pass --client (one of: {})",
            path.display(),
            client_ids()
        ))
    })?;
    let parsed: Parsed = clients::parse(client, &text, ctx)
        .map_err(|e| Error::new(format!("{} ({}): {e}", path.display(), client.title())))?;
    if parsed.servers.is_empty() {
        return Err(Error::new(format!(
            "{}: no MCP servers in it (read as a {} configuration; pass --client if it is another client's)",
            path.display(),
            client.title()
        )));
    }
    Ok(FileFinds {
        client,
        origin,
        parsed,
    })
}

fn client_ids() -> String {
    use clap::ValueEnum;
    Client::value_variants()
        .iter()
        .map(|c| c.id())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `name 2` for each file.
fn found_summary(files: &[FileFinds]) -> String {
    files
        .iter()
        .map(|f| {
            format!(
                "{} {} ({} server{})",
                f.client.title(),
                f.origin,
                f.parsed.servers.len(),
                if f.parsed.servers.len() == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `generate` made.
pub struct Generated {
    pub rendered: Rendered,
    /// The one-line summary for stderr (without where the file went).
    pub summary: String,
    /// Files skipped, one line each, for stderr.
    pub warnings: Vec<String>,
}

/// The generated file, and the one-line summary for stderr (without where it
/// went).
pub fn generate(
    ctx: &Context,
    from: Option<&Path>,
    client: Option<Client>,
) -> Result<Generated, Error> {
    let mut warnings = Vec::new();
    let files = match from {
        Some(path) => vec![read_from(ctx, path, client)?],
        None => {
            let s = search(ctx, client);
            for u in &s.unreadable {
                warnings.push(format!("skipped {u}"));
            }
            if s.files.is_empty() {
                let mut message =
                    format!("no MCP servers found; searched {}", s.searched.join(", "));
                if ctx.home.is_none() {
                    message.push_str(" (HOME is not set, so no home directory files)");
                }
                if !s.empty.is_empty() {
                    message.push_str(&format!("; no servers in {}", s.empty.join(", ")));
                }
                if !s.unreadable.is_empty() {
                    message.push_str(&format!("; could not read {}", s.unreadable.join("; ")));
                }
                message.push_str("; use --from FILE to read another client configuration");
                return Err(Error::new(message));
            }
            s.files
        }
    };
    let summary = found_summary(&files);
    let rendered = render::render(&files, &summary);
    if rendered.servers == 0 {
        return Err(Error::new(format!(
            "found no server toolpin can run: {summary}; each needs a command or a url"
        )));
    }
    let mut line = format!(
        "Found {} MCP server{} in {summary}",
        rendered.servers,
        if rendered.servers == 1 { "" } else { "s" }
    );
    if rendered.skipped > 0 {
        line.push_str(&format!(
            "; {} left as comments (no command or url)",
            rendered.skipped
        ));
    }
    if rendered.secrets > 0 {
        line.push_str(&format!(
            "; {} literal secret{} replaced by ${{VAR}} references",
            rendered.secrets,
            if rendered.secrets == 1 { "" } else { "s" }
        ));
    }
    Ok(Generated {
        rendered,
        summary: line,
        warnings,
    })
}

pub fn home_dir() -> Option<PathBuf> {
    ["HOME", "USERPROFILE"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|h| !h.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const DESKTOP: &str =
        include_str!("../../toolpin/tests/fixtures/clients/claude_desktop_config.json");
    const CODE_PROJECT: &str =
        include_str!("../../toolpin/tests/fixtures/clients/claude-code.mcp.json");
    const CODE_USER: &str =
        include_str!("../../toolpin/tests/fixtures/clients/claude-code.claude.json");
    const CURSOR: &str = include_str!("../../toolpin/tests/fixtures/clients/cursor.mcp.json");
    const VSCODE: &str = include_str!("../../toolpin/tests/fixtures/clients/vscode.mcp.json");
    const WINDSURF: &str =
        include_str!("../../toolpin/tests/fixtures/clients/windsurf.mcp_config.json");
    const ZED: &str = include_str!("../../toolpin/tests/fixtures/clients/zed.settings.json");
    const CODEX: &str = include_str!("../../toolpin/tests/fixtures/clients/codex.config.toml");
    const GEMINI: &str = include_str!("../../toolpin/tests/fixtures/clients/gemini.settings.json");

    /// Literal secrets in the fixtures, none of which may be written.
    const SECRETS: [&str; 12] = [
        "ghp_EXAMPLEexampleEXAMPLEexample000000",
        "BSAexampleBraveKey0123456789",
        "hunter2",
        "correct-horse-battery-staple",
        "ctx7sk-example-0000-1111-2222",
        "figd_EXAMPLEexampleEXAMPLEexample",
        "kagi-EXAMPLE-example-0000",
        "docs-example-key-1234",
        "acme_live_EXAMPLEexample0000",
        "abc123secret",
        "ghp_ZEDexampleEXAMPLEexample000000000",
        "T0-example-secret",
    ];

    fn ctx() -> Context {
        Context {
            home: Some("/home/alex".into()),
            dirs: Vec::new(),
            project: "/work/app".into(),
            workspace: ".".into(),
        }
    }

    fn render_one(client: Client, origin: &str, text: &str) -> render::Rendered {
        let parsed = clients::parse(client, text, &ctx()).expect("parses");
        let files = [FileFinds {
            client,
            origin: origin.into(),
            parsed,
        }];
        let rendered = render::render(&files, &found_summary(&files));
        assert_no_secrets(&rendered.text);
        assert_loads(&rendered);
        rendered
    }

    fn assert_no_secrets(text: &str) {
        for s in SECRETS {
            assert!(!text.contains(s), "secret {s} written:\n{text}");
        }
    }

    fn temp_dir() -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "toolpin-init-unit-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    /// The generated file loads with toolpin's own loader, every enabled
    /// server with it, once the variables it names are set.
    fn assert_loads(rendered: &render::Rendered) {
        for var in &rendered.exports {
            if std::env::var_os(var).is_none() {
                std::env::set_var(var, "test-value");
            }
        }
        let doc: toml::Table =
            toml::from_str(&rendered.text).unwrap_or_else(|e| panic!("{e}\n{}", rendered.text));
        let enabled = doc
            .get("servers")
            .and_then(toml::Value::as_table)
            .expect("servers")
            .values()
            .filter(|s| s.get("enabled") != Some(&toml::Value::Boolean(false)))
            .count();
        let dir = temp_dir();
        let path = dir.join("toolpin.toml");
        std::fs::write(&path, &rendered.text).expect("write");
        let loaded = toolpin_config::load(&path, None);
        let _ = std::fs::remove_dir_all(dir);
        match loaded {
            Ok(config) => assert_eq!(config.servers.len(), enabled),
            Err(e) => panic!("does not load: {e}\n{}", rendered.text),
        }
    }

    /// The block of `[servers.NAME]`: the comments above it, its keys and
    /// its sub-tables.
    fn table<'a>(text: &'a str, name: &str) -> &'a str {
        let at = text
            .find(&format!("\n[servers.{name}]\n"))
            .unwrap_or_else(|| panic!("no servers.{name} in\n{text}"));
        let start = text[..at].rfind("\n\n").map_or(0, |i| i + 2);
        let mut end = at + 1;
        loop {
            match text[end..].find("\n\n") {
                None => return &text[start..],
                Some(i) => {
                    end += i + 2;
                    if !text[end..].starts_with(&format!("[servers.{name}.")) {
                        return &text[start..end];
                    }
                }
            }
        }
    }

    /// `text` with wrapped comments joined into one line each.
    fn flat(text: &str) -> String {
        text.replace("\n# ", " ")
    }

    #[test]
    fn claude_desktop() {
        let r = render_one(
            Client::ClaudeDesktop,
            "~/.config/Claude/claude_desktop_config.json",
            DESKTOP,
        );
        let t = &r.text;
        assert!(
            t.contains(
                "# Claude Desktop: ~/.config/Claude/claude_desktop_config.json\n[servers.github]\n"
            ),
            "{t}"
        );
        let github = table(t, "github");
        assert!(
            github.contains("command = [\"npx\", \"-y\", \"@modelcontextprotocol/server-github\"]")
        );
        assert!(
            github.contains("[servers.github.env]\n# Secret not copied: "),
            "{github}"
        );
        assert!(
            flat(github).contains(
                "Secret not copied: export GITHUB_PERSONAL_ACCESS_TOKEN (its value is in \
                 ~/.config/Claude/claude_desktop_config.json).\n\
                 GITHUB_PERSONAL_ACCESS_TOKEN = \"${GITHUB_PERSONAL_ACCESS_TOKEN}\"\n"
            ),
            "{github}"
        );
        assert!(table(t, "brave-search").contains("BRAVE_API_KEY = \"${BRAVE_API_KEY}\""));
        // A password in a connection-string argument.
        let pg = table(t, "postgres");
        assert!(
            pg.contains("\"postgresql://app:${POSTGRES_PASSWORD}@localhost:5432/orders\""),
            "{pg}"
        );
        assert!(pg.contains("# command = [\"sh\", \"-c\", \"exec npx -y @modelcontextprotocol/server-postgres \\\"postgresql://app:${POSTGRES_PASSWORD}@localhost:5432/orders\\\"\"]"), "{pg}");
        assert_eq!(r.servers, 4);
        assert_eq!(r.secrets, 3);
        assert_eq!(r.exports, ["BRAVE_API_KEY", "GITHUB_PERSONAL_ACCESS_TOKEN"]);
        assert!(t.starts_with("# toolpin.toml: the MCP servers"));
        assert!(t.contains("`toolpin lock`"));
    }

    #[test]
    fn claude_code_project_and_user() {
        let r = render_one(Client::ClaudeCode, ".mcp.json", CODE_PROJECT);
        let t = &r.text;
        let orders = table(t, "orders");
        // References are kept as written, defaults included.
        assert!(orders.contains("command = [\"python3\", \"-m\", \"orders_mcp\", \"--db\", \"${ORDERS_DB:-orders.sqlite}\"]"), "{orders}");
        assert!(orders.contains("ORDERS_API_TOKEN = \"${ORDERS_API_TOKEN}\""));
        assert!(orders.contains("LOG_LEVEL = \"info\""));
        assert!(
            flat(orders).contains("toolpin runs `command` as written"),
            "{orders}"
        );
        let sentry = table(t, "sentry");
        assert!(sentry.contains("url = \"https://mcp.sentry.dev/mcp\"\n"));
        assert!(!sentry.contains("transport"));
        assert!(sentry.contains("Authorization = \"Bearer ${SENTRY_TOKEN}\""));
        assert!(table(t, "linear").contains("transport = \"sse\""));

        let user = CODE_USER.replace("@PROJECT@", "/work/app");
        let r = render_one(Client::ClaudeCode, "~/.claude.json", &user);
        let t = &r.text;
        assert!(
            table(t, "context7").contains("command = [\"npx\", \"-y\", \"@upstash/context7-mcp\"]")
        );
        let db = table(t, "staging-db");
        assert!(flat(db).contains("Claude Code local scope"), "{db}");
        assert!(db.contains("DB_PASSWORD = \"${DB_PASSWORD}\""));
        assert!(!t.contains("other-project-server"));
        assert!(
            t.contains(
                "# ~/.claude.json: 1 server listed there for other projects is not included."
            ),
            "{t}"
        );
        assert_eq!(r.servers, 2);
    }

    #[test]
    fn cursor() {
        let r = render_one(Client::Cursor, "~/.cursor/mcp.json", CURSOR);
        let t = &r.text;
        let c7 = table(t, "context7");
        assert!(c7.contains("url = \"https://mcp.context7.com/mcp\""));
        assert!(
            c7.contains("CONTEXT7_API_KEY = \"${CONTEXT7_API_KEY}\""),
            "{c7}"
        );
        let notes = table(t, "notes");
        assert!(
            notes.contains("command = [\"node\", \"./tools/notes-mcp.js\"]"),
            "{notes}"
        );
        assert!(notes.contains("NOTES_DIR = \"${HOME}/notes\""));
        assert!(notes.contains("OPENAI_API_KEY = \"${OPENAI_API_KEY}\""));
        assert!(flat(notes)
            .contains("Cursor also loads environment variables from \"${workspaceFolder}/.env\""));
        assert!(table(t, "playwright").contains("command = [\"npx\", \"@playwright/mcp@latest\"]"));
    }

    #[test]
    fn vscode_inputs_env_and_workspace() {
        let r = render_one(Client::Vscode, ".vscode/mcp.json", VSCODE);
        let t = &r.text;
        let p = table(t, "perplexity");
        assert!(
            p.contains("PERPLEXITY_API_KEY = \"${PERPLEXITY_KEY}\""),
            "{p}"
        );
        assert!(flat(p).contains("VS Code prompts for input \"perplexity-key\" (\"Perplexity API Key\"); toolpin reads it from the environment: export PERPLEXITY_KEY."), "{p}");
        assert!(table(t, "local-docs").contains("\"./scripts/docs-server.js\""));
        assert!(table(t, "github").contains("Authorization = \"Bearer ${GITHUB_PAT}\""));
        assert!(table(t, "fetch").contains("command = [\"uvx\", \"mcp-server-fetch\"]"));
        assert!(r.exports.contains(&"PERPLEXITY_KEY".to_string()));
    }

    #[test]
    fn windsurf() {
        let r = render_one(
            Client::Windsurf,
            "~/.codeium/windsurf/mcp_config.json",
            WINDSURF,
        );
        let t = &r.text;
        let figma = table(t, "figma");
        assert!(figma.contains("url = \"https://mcp.figma.com/mcp\""));
        assert!(
            figma.contains("Authorization = \"Bearer ${FIGMA_TOKEN}\""),
            "{figma}"
        );
        let git = table(t, "git");
        assert!(git.contains("enabled = false"));
        assert!(git.contains("# Disabled in Windsurf."));
        let slack = table(t, "slack");
        assert!(slack.contains("SLACK_BOT_TOKEN = \"${SLACK_BOT_TOKEN}\""));
        assert!(slack.contains("SLACK_TEAM_ID = \"T01234567\""));
        assert!(slack.contains("exclude = [\"slack_post_message\"]"));
    }

    #[test]
    fn zed_with_comments_and_trailing_commas() {
        let r = render_one(Client::Zed, "~/.config/zed/settings.json", ZED);
        let t = &r.text;
        assert!(table(t, "sqlite").contains(
            "command = [\"uvx\", \"mcp-server-sqlite\", \"--db-path\", \"/home/alex/data.db\"]"
        ));
        let kagi = table(t, "kagi");
        assert!(kagi.contains("command = [\"uvx\", \"kagimcp\"]"));
        assert!(kagi.contains("KAGI_API_KEY = \"${KAGI_API_KEY}\""));
        assert!(kagi.contains("KAGI_SUMMARIZER_ENGINE = \"cecil\""));
        let docs = table(t, "remote-docs");
        assert!(
            docs.contains("X-Api-Key = \"${REMOTE_DOCS_API_KEY}\""),
            "{docs}"
        );
        // An extension's server has no command to copy.
        assert!(
            flat(t).contains(
                "Not written: \"mcp-server-github\", because a Zed extension provides its command."
            ),
            "{t}"
        );
        assert_eq!((r.servers, r.skipped), (3, 1));
    }

    #[test]
    fn codex() {
        let r = render_one(Client::Codex, "~/.codex/config.toml", CODEX);
        let t = &r.text;
        let docs = table(t, "docs");
        assert!(docs.contains("command = [\"npx\", \"-y\", \"@acme/docs-mcp\"]"));
        assert!(docs.contains("include = [\"search_docs\", \"get_page\"]"));
        assert!(docs.contains("init_timeout = \"20s\""));
        assert!(docs.contains("DOCS_API_KEY = \"${DOCS_API_KEY}\""));
        assert!(docs.contains("DOCS_REGION = \"eu\""));
        let figma = table(t, "figma");
        assert!(figma.contains("bearer_token_env = \"FIGMA_OAUTH_TOKEN\""));
        assert!(figma.contains("X-Figma-Region = \"us-east-1\""));
        assert!(figma.contains("X-Org-Id = \"${FIGMA_ORG_ID}\""));
        assert!(figma.contains("exclude = [\"create_design_system_rules\"]"));
        assert!(table(t, "old").contains("enabled = false"));
        assert_eq!(
            r.exports,
            [
                "DOCS_API_KEY",
                "FIGMA_OAUTH_TOKEN",
                "FIGMA_ORG_ID",
                "LEGACY_REMOTE_TOKEN"
            ]
        );
        let legacy = table(t, "legacy-remote");
        assert!(
            legacy.contains("bearer_token_env = \"LEGACY_REMOTE_TOKEN\""),
            "{legacy}"
        );
    }

    #[test]
    fn gemini() {
        let r = render_one(Client::Gemini, "~/.gemini/settings.json", GEMINI);
        let t = &r.text;
        let py = table(t, "pythonTools");
        assert!(py.contains("cwd = \"./mcp-servers/python\""));
        assert!(py.contains("init_timeout = \"15s\""));
        assert!(
            py.contains("DATABASE_URL = \"${DB_CONNECTION_STRING}\""),
            "{py}"
        );
        assert!(py.contains("API_KEY = \"${EXTERNAL_API_KEY}\""));
        let http = table(t, "httpServer");
        assert!(http.contains("url = \"http://localhost:3000/mcp\""));
        assert!(!http.contains("transport"));
        assert!(http.contains("init_timeout = \"5s\""));
        let sse = table(t, "sseServer");
        assert!(sse.contains("transport = \"sse\""));
        assert!(
            sse.contains("url = \"https://mcp.example.com/sse?api_key=${SSESERVER_API_KEY}\""),
            "{sse}"
        );
        assert!(sse.contains("Authorization = \"Bearer ${MCP_TOKEN}\""));
        assert!(sse.contains("include = [\"search\", \"fetch_page\"]"));
        let exp = table(t, "experimental");
        assert!(exp.contains("enabled = false"));
        assert!(exp.contains("# Disabled: listed in Gemini CLI's mcp.excluded."));
        assert!(exp.contains("exclude = [\"rm_rf\"]"));
    }

    #[test]
    fn same_name_from_two_files() {
        let parse = |c, text: &str| clients::parse(c, text, &ctx()).expect("parses");
        let files = [
            FileFinds {
                client: Client::ClaudeCode,
                origin: ".mcp.json".into(),
                parsed: parse(Client::ClaudeCode, CODE_PROJECT),
            },
            FileFinds {
                client: Client::Vscode,
                origin: ".vscode/mcp.json".into(),
                parsed: parse(Client::Vscode, VSCODE),
            },
            FileFinds {
                client: Client::ClaudeDesktop,
                origin: "~/.config/Claude/claude_desktop_config.json".into(),
                parsed: parse(Client::ClaudeDesktop, DESKTOP),
            },
        ];
        let r = render::render(&files, &found_summary(&files));
        assert_no_secrets(&r.text);
        assert_loads(&r);
        let t = &r.text;
        // The same server in VS Code: renamed and disabled.
        let vs = table(t, "github-vscode");
        assert!(flat(vs).contains("Also named \"github\" in Claude Code (.mcp.json): that is servers.github, so this one is servers.github-vscode."), "{vs}");
        assert!(vs.contains("enabled = false"));
        // A different server of that name: renamed, enabled.
        let desk = table(t, "github-claude-desktop");
        assert!(flat(desk).contains("give one a `prefix`"), "{desk}");
        assert!(!desk.contains("\nenabled = false"));
    }

    #[test]
    fn names_become_keys() {
        assert_eq!(render::table_key("github"), "github");
        assert_eq!(render::table_key("@scope/server.name"), "scope_server_name");
        assert_eq!(render::table_key("My Server"), "My_Server");
        assert_eq!(render::table_key("..."), "server");
        let text = r#"{"mcpServers": {"acme.tools/v2": {"command": "acme"}}}"#;
        let r = render_one(Client::ClaudeDesktop, "x.json", text);
        assert!(
            r.text.contains(
                "# Named \"acme.tools/v2\" in Claude Desktop.\n[servers.acme_tools_v2]\n"
            ),
            "{}",
            r.text
        );
    }

    #[test]
    fn secret_detection() {
        let text = r#"{"mcpServers": {
            "a": {"command": "srv", "args": ["--api-key", "plainvalue1", "--token=tok_zzz", "--token-file", "/run/token", "ghp_EXAMPLEexampleEXAMPLEexample000000"],
                  "env": {"SESSION_COOKIE": "c=1", "MODE": "fast", "PASSWORD": ""}},
            "b": {"type": "http", "url": "https://u:hunter2@h.example/mcp?token=t0k&x=1", "headers": {"Cookie": "sid=1", "Authorization": "Basic dXNlcjpw", "Accept": "text/plain"}}
        }}"#;
        let r = render_one(Client::ClaudeCode, ".mcp.json", text);
        let t = &r.text;
        let a = table(t, "a");
        assert!(a.contains("\"--api-key\", \"${A_API_KEY}\", \"--token=${A_TOKEN}\", \"--token-file\", \"/run/token\", \"${A_TOKEN_2}\""), "{a}");
        assert!(a.contains("SESSION_COOKIE = \"${SESSION_COOKIE}\""));
        assert!(a.contains("MODE = \"fast\""));
        assert!(a.contains("PASSWORD = \"${PASSWORD}\""));
        let b = table(t, "b");
        assert!(
            b.contains("url = \"https://u:${B_PASSWORD}@h.example/mcp?token=${B_TOKEN}&x=1\""),
            "{b}"
        );
        assert!(b.contains("Cookie = \"${B_COOKIE}\""));
        assert!(b.contains("Authorization = \"Basic ${B_AUTHORIZATION}\""));
        assert!(b.contains("Accept = \"text/plain\""));
        for literal in ["plainvalue1", "tok_zzz", "t0k", "dXNlcjpw", "sid=1"] {
            assert!(!t.contains(literal), "{literal} written");
        }
    }

    #[test]
    fn same_secret_name_for_different_values() {
        let text = r#"{"mcpServers": {
            "a": {"command": "a", "env": {"API_KEY": "one-value"}},
            "b": {"command": "b", "env": {"API_KEY": "two-value"}},
            "c": {"command": "c", "env": {"API_KEY": "one-value"}}
        }}"#;
        let r = render_one(Client::ClaudeDesktop, "x.json", text);
        assert!(table(&r.text, "a").contains("API_KEY = \"${API_KEY}\""));
        assert!(table(&r.text, "b").contains("API_KEY = \"${B_API_KEY}\""));
        assert!(table(&r.text, "c").contains("API_KEY = \"${API_KEY}\""));
    }

    #[test]
    fn unresolvable_variables_become_exports() {
        let text = r#"{"mcpServers": {"w": {"serverUrl": "https://x.example/mcp",
            "headers": {"X-Token": "${file:/home/alex/.token}"}}}}"#;
        let r = render_one(Client::Windsurf, "w.json", text);
        assert!(
            r.text.contains("X-Token = \"${FILE_HOME_ALEX_TOKEN}\""),
            "{}",
            r.text
        );
        assert!(flat(&r.text).contains("is a Windsurf variable toolpin cannot resolve"));
    }

    #[test]
    fn detects_clients() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            detect(&p("/h/.config/Claude/claude_desktop_config.json"), "{}"),
            Some(Client::ClaudeDesktop)
        );
        assert_eq!(detect(&p("/w/.mcp.json"), "{}"), Some(Client::ClaudeCode));
        assert_eq!(
            detect(&p("/h/.cursor/mcp.json"), "{}"),
            Some(Client::Cursor)
        );
        assert_eq!(
            detect(&p("/w/.vscode/mcp.json"), "{}"),
            Some(Client::Vscode)
        );
        assert_eq!(
            detect(&p("/h/.codeium/windsurf/mcp_config.json"), "{}"),
            Some(Client::Windsurf)
        );
        assert_eq!(
            detect(&p("/h/.config/zed/settings.json"), "{}"),
            Some(Client::Zed)
        );
        assert_eq!(detect(&p("/h/.codex/config.toml"), ""), Some(Client::Codex));
        assert_eq!(
            detect(&p("/h/.gemini/settings.json"), "{}"),
            Some(Client::Gemini)
        );
        // By content, under names that say nothing.
        let c = |text: &str| detect(&p("/tmp/x.json"), text);
        assert_eq!(c(ZED), Some(Client::Zed));
        assert_eq!(c(VSCODE), Some(Client::Vscode));
        assert_eq!(c(WINDSURF), Some(Client::Windsurf));
        assert_eq!(c(GEMINI), Some(Client::Gemini));
        assert_eq!(c(CODE_PROJECT), Some(Client::ClaudeCode));
        assert_eq!(c(CODE_USER), Some(Client::ClaudeCode));
        assert_eq!(c(DESKTOP), Some(Client::ClaudeDesktop));
        assert_eq!(detect(&p("/tmp/x.toml"), CODEX), Some(Client::Codex));
        assert_eq!(c("{\"theme\": 1}"), None);
    }

    #[test]
    fn shows_paths_without_the_home_directory() {
        let c = ctx();
        assert_eq!(shown(&c, Path::new("/work/app/.mcp.json")), ".mcp.json");
        assert_eq!(
            shown(&c, Path::new("/home/alex/.claude.json")),
            "~/.claude.json"
        );
        assert_eq!(shown(&c, Path::new("/etc/x.json")), "/etc/x.json");
        let both = Context {
            home: Some("/work/app".into()),
            ..ctx()
        };
        // When the project is the home directory, each file is read once.
        let all = places(&both, None);
        let cursor: Vec<_> = all
            .iter()
            .filter(|p| p.shown == ".cursor/mcp.json")
            .collect();
        assert_eq!(cursor.len(), 1);
    }

    #[test]
    fn the_variables_directories_are_searched_and_shown_by_name() {
        let root = temp_dir();
        let (xdg, appdata, codex) = (root.join("xdg"), root.join("roaming"), root.join("codex"));
        let write = |path: PathBuf, text: &str| {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
            std::fs::write(path, text).expect("write");
        };
        write(xdg.join("zed/settings.json"), ZED);
        write(appdata.join("Claude/claude_desktop_config.json"), DESKTOP);
        write(codex.join("config.toml"), CODEX);
        let c = Context {
            home: Some(root.join("home")),
            dirs: vec![
                (ConfigDir::XdgConfigHome, xdg.clone()),
                (ConfigDir::AppData, appdata),
                (ConfigDir::CodexHome, codex),
            ],
            project: root.join("project"),
            workspace: ".".into(),
        };
        let generated = generate(&c, None, None).expect("found");
        let _ = std::fs::remove_dir_all(&root);
        for (client, shown) in [
            ("Zed", "$XDG_CONFIG_HOME/zed/settings.json"),
            (
                "Claude Desktop",
                "%APPDATA%\\Claude\\claude_desktop_config.json",
            ),
            ("Codex", "$CODEX_HOME/config.toml"),
        ] {
            let origin = format!("{client} {shown}");
            assert!(
                generated.summary.contains(&origin),
                "{origin}: {}",
                generated.summary
            );
            assert!(
                generated.rendered.text.contains(shown),
                "{shown} in the file"
            );
        }
        assert!(!generated
            .rendered
            .text
            .contains(&root.display().to_string()));
        assert_no_secrets(&generated.rendered.text);
        // The variable's directory inside the home directory is shown from
        // there, and read once.
        let home = Context {
            dirs: vec![(ConfigDir::XdgConfigHome, "/home/alex/.config".into())],
            ..ctx()
        };
        let zed: Vec<String> = places(&home, Some(Client::Zed))
            .into_iter()
            .map(|p| p.shown)
            .collect();
        assert_eq!(
            zed,
            vec![".zed/settings.json", "~/.config/zed/settings.json"]
        );
    }

    #[test]
    fn glob_characters_in_tool_names_are_escaped() {
        let text = r#"{"mcpServers": {"g": {"command": "g", "includeTools": ["a*b", "c?"]}}}"#;
        let r = render_one(Client::Gemini, "g.json", text);
        assert!(
            r.text.contains(r#"include = ["a\\*b", "c\\?"]"#),
            "{}",
            r.text
        );
    }
}
