//! `toolpin init` end to end: the built binary, run in a temporary project
//! with HOME set to a temporary home holding sample client configurations.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/clients");

/// Literal secrets in the sample files; none may reach the output.
const SECRETS: [&str; 8] = [
    "ghp_EXAMPLEexampleEXAMPLEexample000000",
    "hunter2",
    "correct-horse-battery-staple",
    "ctx7sk-example-0000-1111-2222",
    "figd_EXAMPLEexampleEXAMPLEexample",
    "kagi-EXAMPLE-example-0000",
    "acme_live_EXAMPLEexample0000",
    "abc123secret",
];

/// A temporary home and project, removed when dropped.
struct Sandbox {
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "toolpin-init-it-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        let project = root.join("project");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&project).expect("project");
        // The binary sees the canonical path of its working directory.
        let project = std::fs::canonicalize(&project).expect("canonical");
        Sandbox {
            root,
            home,
            project,
        }
    }

    /// Every sample file where its client keeps it.
    fn with_all_clients() -> Sandbox {
        let s = Sandbox::new();
        let project = s.project.display().to_string();
        for (fixture, dir, name) in [
            ("claude-code.mcp.json", &s.project, ".mcp.json"),
            ("vscode.mcp.json", &s.project, ".vscode/mcp.json"),
            (
                "claude_desktop_config.json",
                &s.home,
                ".config/Claude/claude_desktop_config.json",
            ),
            ("claude-code.claude.json", &s.home, ".claude.json"),
            ("cursor.mcp.json", &s.home, ".cursor/mcp.json"),
            (
                "windsurf.mcp_config.json",
                &s.home,
                ".codeium/windsurf/mcp_config.json",
            ),
            ("zed.settings.json", &s.home, ".config/zed/settings.json"),
            ("codex.config.toml", &s.home, ".codex/config.toml"),
            ("gemini.settings.json", &s.home, ".gemini/settings.json"),
        ] {
            let text = fixture_text(fixture).replace("@PROJECT@", &project);
            write(&dir.join(name), &text);
        }
        s
    }

    fn toolpin(&self, args: &[&str]) -> Output {
        self.toolpin_env(args, &[])
    }

    /// With the variables that name client directories cleared (so the
    /// machine's own files are never read), then `env` set.
    fn toolpin_env(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolpin"));
        cmd.args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env_remove("USERPROFILE")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("APPDATA")
            .env_remove("CODEX_HOME")
            .env("NO_COLOR", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("runs toolpin")
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.project.join(name)).expect("output written")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(Path::new(FIXTURES).join(name)).expect("fixture")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_no_secrets(text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "secret {s} written:\n{text}");
    }
}

#[test]
fn finds_servers_in_the_project_and_home() {
    let s = Sandbox::with_all_clients();
    let out = s.toolpin(&["init"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = s.read("toolpin.toml");
    assert_no_secrets(&text);
    assert_no_secrets(&stderr(&out));
    assert!(text.starts_with("# toolpin.toml"));
    assert!(text.contains("`toolpin lock`"));
    // A comment names the client and file of each server.
    for origin in [
        "# Claude Code: .mcp.json\n[servers.sentry]\n",
        "# VS Code: .vscode/mcp.json\n[servers.fetch]\n",
        "# Claude Desktop: ~/.config/Claude/claude_desktop_config.json\n[servers.filesystem]\n",
        "# Claude Code: ~/.claude.json\n# Claude Code local scope: listed for this project only.\n[servers.staging-db]\n",
        "# Cursor: ~/.cursor/mcp.json\n[servers.playwright]\n",
        "# Windsurf: ~/.codeium/windsurf/mcp_config.json\n[servers.slack]\n",
        "# Zed: ~/.config/zed/settings.json\n[servers.sqlite]\n",
        "# Codex: ~/.codex/config.toml\n[servers.docs]\n",
        "# Gemini CLI: ~/.gemini/settings.json\n[servers.httpServer]\n",
    ] {
        assert!(text.contains(origin), "no {origin:?} in\n{text}");
    }
    // Project files come first, so their server keeps the plain name.
    assert!(text.contains("[servers.github]\nurl = \"https://api.githubcopilot.com/mcp/\"\n"));
    assert!(text.contains("[servers.github-claude-desktop]\n"));
    assert!(text.contains("[servers.context7-cursor]\n"));
    // The home path is never written.
    assert!(!text.contains(&s.home.display().to_string()), "{text}");
    assert!(!text.contains("other-project-server"));
    // Secrets are references.
    assert!(text.contains("GITHUB_PERSONAL_ACCESS_TOKEN = \"${GITHUB_PERSONAL_ACCESS_TOKEN}\""));
    assert!(text.contains("PERPLEXITY_API_KEY = \"${PERPLEXITY_KEY}\""));
    // One summary line on stderr.
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("Found 31 MCP servers in Claude Code .mcp.json (4 servers)"),
        "{err}"
    );
    assert!(err.contains("; wrote toolpin.toml"), "{err}");
    // It parses as TOML, with one table per server found.
    let doc: toml::Table = toml::from_str(&text).expect("valid TOML");
    let servers = doc["servers"].as_table().expect("servers");
    assert_eq!(servers.len(), 31);
}

#[test]
fn refuses_to_overwrite_without_force() {
    let s = Sandbox::with_all_clients();
    write(&s.project.join("toolpin.toml"), "# mine\n");
    let out = s.toolpin(&["init"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(
        err.trim_end(),
        "error: toolpin.toml already exists; pass --force to overwrite it, or --print to see what init would write"
    );
    assert_eq!(s.read("toolpin.toml"), "# mine\n");

    let out = s.toolpin(&["init", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(s.read("toolpin.toml").contains("[servers.orders]"));
}

#[test]
fn print_writes_to_stdout_only() {
    let s = Sandbox::with_all_clients();
    write(&s.project.join("toolpin.toml"), "# mine\n");
    let out = s.toolpin(&["init", "--print"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("# toolpin.toml"));
    assert!(text.contains("[servers.orders]"));
    assert_no_secrets(&text);
    assert_eq!(s.read("toolpin.toml"), "# mine\n");
    assert!(!stderr(&out).contains("wrote"), "{}", stderr(&out));
}

#[test]
fn from_reads_one_file() {
    let s = Sandbox::with_all_clients();
    // Detected from its path.
    let zed = s.home.join(".config/zed/settings.json");
    let out = s.toolpin(&["init", "--print", "--from", zed.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let doc: toml::Table = toml::from_str(&text).expect("valid TOML");
    let names: Vec<&String> = doc["servers"].as_table().expect("servers").keys().collect();
    assert_eq!(names, ["kagi", "remote-docs", "sqlite"]);
    assert!(
        text.contains("# Zed: ~/.config/zed/settings.json\n"),
        "{text}"
    );
    assert!(stderr(&out).starts_with("Found 3 MCP servers in Zed ~/.config/zed/settings.json (4 servers); 1 left as comments"), "{}", stderr(&out));

    // Detected from its content, under a name that says nothing.
    write(
        &s.project.join("servers.json"),
        &fixture_text("gemini.settings.json"),
    );
    let out = s.toolpin(&[
        "init",
        "--from",
        "servers.json",
        "--output",
        "pins/toolpin.toml",
    ]);
    assert!(!out.status.success(), "the directory does not exist");
    assert!(
        stderr(&out).starts_with("error: cannot write pins/toolpin.toml"),
        "{}",
        stderr(&out)
    );
    std::fs::create_dir_all(s.project.join("pins")).expect("mkdir");
    let out = s.toolpin(&[
        "init",
        "--from",
        "servers.json",
        "--output",
        "pins/toolpin.toml",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = s.read("pins/toolpin.toml");
    assert!(
        text.contains("# Gemini CLI: servers.json\n[servers.httpServer]\n"),
        "{text}"
    );
    assert!(!text.contains("Claude"));

    // Or named with --client.
    write(
        &s.project.join("odd.json"),
        r#"{"mcpServers": {"a": {"url": "https://a.example/sse"}}}"#,
    );
    let out = s.toolpin(&[
        "init", "--print", "--from", "odd.json", "--client", "gemini",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("url = \"https://a.example/sse\"\ntransport = \"sse\"\n"));
    let out = s.toolpin(&["init", "--print", "--from", "odd.json"]);
    assert!(
        stdout(&out).contains("# Claude Desktop: odd.json\n"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("transport"));
}

#[test]
fn from_errors_are_one_line() {
    let s = Sandbox::new();
    write(&s.project.join("broken.json"), "{\"mcpServers\": {");
    write(&s.project.join("other.json"), "{\"theme\": \"dark\"}");
    for (args, want) in [
        (
            vec!["init", "--from", "missing.json"],
            "error: cannot read missing.json: ",
        ),
        (
            vec!["init", "--from", "broken.json", "--client", "cursor"],
            "error: broken.json (Cursor): not valid JSON: ",
        ),
        (
            vec!["init", "--from", "other.json"],
            "error: other.json: cannot tell which MCP client wrote it; pass --client (one of: claude-desktop, claude-code, cursor, vscode, windsurf, zed, codex, gemini)",
        ),
        (
            vec!["init", "--from", "other.json", "--client", "zed"],
            "error: other.json: no MCP servers in it (read as a Zed configuration",
        ),
    ] {
        let out = s.toolpin(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn nothing_found_lists_the_places_searched() {
    let s = Sandbox::new();
    write(&s.home.join(".cursor/mcp.json"), "{\"mcpServers\": {}}");
    let out = s.toolpin(&["init"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "error: no MCP servers found; searched .mcp.json, .cursor/mcp.json, .vscode/mcp.json, "
        ),
        "{err}"
    );
    for place in [
        "~/.claude.json",
        "~/.config/Claude/claude_desktop_config.json",
        "~/Library/Application Support/Claude/claude_desktop_config.json",
        "~/.codeium/windsurf/mcp_config.json",
        "~/.config/zed/settings.json",
        "~/.codex/config.toml",
        "~/.gemini/settings.json",
        "; no servers in ~/.cursor/mcp.json",
        "use --from FILE",
    ] {
        assert!(err.contains(place), "{place} not in {err}");
    }
    assert!(!s.project.join("toolpin.toml").exists());

    // --client narrows the search.
    let out = s.toolpin(&["init", "--client", "codex"]);
    assert_eq!(
        stderr(&out).trim_end(),
        "error: no MCP servers found; searched .codex/config.toml, ~/.codex/config.toml; use --from FILE to read another client configuration"
    );
}

#[test]
fn an_unreadable_file_is_skipped_with_a_warning() {
    let s = Sandbox::new();
    write(&s.project.join(".mcp.json"), "{ not json");
    write(
        &s.project.join(".cursor/mcp.json"),
        &fixture_text("cursor.mcp.json"),
    );
    let out = s.toolpin(&["init", "--print"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("warning: skipped .mcp.json: not valid JSON"),
        "{err}"
    );
    assert!(stdout(&out).contains("[servers.playwright]"));
    // ${workspaceFolder} is the project, where the file is written.
    assert!(stdout(&out).contains("command = [\"node\", \"./tools/notes-mcp.js\"]"));
}

/// Clients that keep their files where XDG_CONFIG_HOME, APPDATA (a
/// Windows layout, read wherever the variable is set) or CODEX_HOME say
/// are found there and shown by the variable; `-q` leaves stderr empty.
#[test]
fn the_directories_variables_name_are_searched_and_quiet_is_quiet() {
    let s = Sandbox::new();
    let (xdg, appdata, codex) = (
        s.root.join("xdg"),
        s.root.join("AppData/Roaming"),
        s.root.join("codex-home"),
    );
    write(
        &xdg.join("Code/User/mcp.json"),
        &fixture_text("vscode.mcp.json"),
    );
    write(
        &appdata.join("Claude/claude_desktop_config.json"),
        &fixture_text("claude_desktop_config.json"),
    );
    write(
        &codex.join("config.toml"),
        &fixture_text("codex.config.toml"),
    );
    let env: [(&str, &Path); 3] = [
        ("XDG_CONFIG_HOME", &xdg),
        ("APPDATA", &appdata),
        ("CODEX_HOME", &codex),
    ];
    let out = s.toolpin_env(&["init"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for shown in [
        "VS Code $XDG_CONFIG_HOME/Code/User/mcp.json",
        "Claude Desktop %APPDATA%\\Claude\\claude_desktop_config.json",
        "Codex $CODEX_HOME/config.toml",
    ] {
        assert!(err.contains(shown), "{shown} not in {err}");
    }
    let written = s.read("toolpin.toml");
    assert!(
        !written.contains(&s.root.display().to_string()),
        "{written}"
    );
    assert_no_secrets(&written);

    // Nothing on stderr with -q, the same file written.
    let out = s.toolpin_env(&["-q", "init", "--force"], &env);
    assert!(out.status.success());
    assert_eq!(stderr(&out), "");
    assert_eq!(s.read("toolpin.toml"), written);
    let out = s.toolpin_env(&["init", "--print", "-q"], &env);
    assert_eq!(stderr(&out), "");
    assert_eq!(stdout(&out), written);

    // The searched list names them when nothing is found.
    let empty = Sandbox::new();
    let out = empty.toolpin_env(
        &["init", "--client", "codex"],
        &[("CODEX_HOME", &empty.root)],
    );
    assert!(
        stderr(&out).contains(
            "searched .codex/config.toml, ~/.codex/config.toml, $CODEX_HOME/config.toml;"
        ),
        "{}",
        stderr(&out)
    );
}
