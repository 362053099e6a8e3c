//! The `[ledger]` table of toolpin.toml: where the drift ledger lives
//! (a SQLite file in `.toolpin/` beside the configuration by default, or
//! a PostgreSQL URL) and whether a command fails when it cannot be written.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolpin_manifest::SafeUrl;

use crate::expand::expand_url;

/// The ledger's file when nothing else is said, relative to the
/// configuration's directory: inside toolpin's state directory, which
/// ignores itself in git, so that nobody commits it by accident.
pub const DEFAULT_FILE: &str = ".toolpin/ledger.db";

/// Where releases before 0.2 kept the default ledger. When that file
/// exists and `[ledger]` names no other, it stays the ledger, so that no
/// history is lost.
pub const LEGACY_FILE: &str = "toolpin.ledger.db";

/// `[ledger]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerFileConfig {
    path: Option<String>,
    url: Option<String>,
    required: Option<bool>,
    enabled: Option<bool>,
}

/// Where the ledger is, from the configuration (or `--store`) to the
/// error message: its `Display` and `Debug` hide a URL's password
/// (`postgres://toolpin:***@db/toolpin`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LedgerLocation {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://` or `postgresql://`), `${VAR}`
    /// references expanded: it may hold a password, which only its
    /// `Deref` (for connecting) gives.
    Postgres(SafeUrl),
}

impl LedgerLocation {
    /// A PostgreSQL URL (by its scheme, `postgres://` or `postgresql://`,
    /// in any case), or else the path of a SQLite file.
    pub fn parse(text: &str) -> Self {
        if is_postgres_url(text) {
            // A scheme is case-insensitive (RFC 3986), the driver's parser
            // is not: it is handed in lower case.
            let (scheme, rest) = text.split_once("://").unwrap_or((text, ""));
            let url = format!("{}://{rest}", scheme.to_ascii_lowercase());
            LedgerLocation::Postgres(SafeUrl::new(&url))
        } else {
            LedgerLocation::Sqlite(PathBuf::from(text))
        }
    }
}

impl std::fmt::Display for LedgerLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LedgerLocation::Sqlite(path) => write!(f, "{}", path.display()),
            LedgerLocation::Postgres(url) => write!(f, "{url}"),
        }
    }
}

/// Whether `text` is a PostgreSQL URL (`postgres://` or `postgresql://`,
/// the scheme in any case).
pub fn is_postgres_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")
    })
}

/// The resolved `[ledger]` table. Its `Debug` shows no secret value.
#[derive(Clone, PartialEq, Eq)]
pub struct LedgerConfig {
    /// `None` when `enabled = false`: nothing is recorded.
    pub location: Option<LedgerLocation>,
    /// Whether a command fails (exit 2) when the ledger cannot be written;
    /// otherwise it warns and goes on.
    pub required: bool,
    /// Whether toolpin.toml has a `[ledger]` table. The embedded default
    /// is best effort: when nobody asked for a ledger, one that cannot be
    /// opened (a read-only checkout) is no warning.
    pub configured: bool,
    /// The location as written (`${VAR}` unexpanded): what messages show.
    pub shown: String,
    /// Values expanded from the environment, never to be printed.
    pub secrets: Vec<(String, String)>,
}

impl std::fmt::Debug for LedgerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.secrets.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("LedgerConfig")
            .field("location", &self.location)
            .field("required", &self.required)
            .field("configured", &self.configured)
            .field("shown", &self.shown)
            .field("secrets", &names)
            .finish()
    }
}

impl LedgerConfig {
    /// The default: a SQLite file in `.toolpin/` beside the configuration
    /// (or the file earlier releases made beside it, when it exists), not
    /// required and not configured.
    pub fn beside(dir: &Path) -> Self {
        let legacy = dir.join(LEGACY_FILE);
        let path = if legacy.is_file() {
            legacy
        } else {
            dir.join(DEFAULT_FILE)
        };
        Self {
            shown: path.display().to_string(),
            location: Some(LedgerLocation::Sqlite(path)),
            required: false,
            configured: false,
            secrets: Vec::new(),
        }
    }

    /// Whether the ledger is the embedded default in toolpin's state
    /// directory, which the opener creates (with its `.gitignore`).
    pub fn in_state_dir(&self) -> bool {
        !self.configured
            && matches!(&self.location, Some(LedgerLocation::Sqlite(p)) if p.ends_with(DEFAULT_FILE))
    }

    /// Resolves `[ledger]` (`None`: toolpin.toml has no such table) against
    /// the configuration's directory and the environment.
    pub fn resolve(
        file: Option<LedgerFileConfig>,
        dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let Some(file) = file else {
            return Ok(Self::beside(dir));
        };
        let required = file.required.unwrap_or(false);
        if file.enabled == Some(false) {
            if file.path.is_some() || file.url.is_some() || required {
                return Err(
                    "ledger: `enabled = false` turns the ledger off; leave out `path`, `url` and `required`"
                        .into(),
                );
            }
            return Ok(Self {
                location: None,
                required: false,
                configured: true,
                shown: String::new(),
                secrets: Vec::new(),
            });
        }
        match (file.path, file.url) {
            (Some(_), Some(_)) => {
                Err("ledger: set `path` (a SQLite file) or `url` (PostgreSQL), not both".into())
            }
            (Some(path), None) => {
                if path.trim().is_empty() {
                    return Err("ledger.path: must name a file".into());
                }
                let path = dir.join(path);
                Ok(Self {
                    shown: path.display().to_string(),
                    location: Some(LedgerLocation::Sqlite(path)),
                    required,
                    configured: true,
                    secrets: Vec::new(),
                })
            }
            (None, Some(url)) => {
                if !is_postgres_url(&url) {
                    return Err(format!(
                        "ledger.url: {url:?} is not a postgres:// URL (a SQLite ledger is set with `path`)"
                    ));
                }
                let expanded = expand_url(&url, lookup).map_err(|m| format!("ledger.url: {m}"))?;
                Ok(Self {
                    location: Some(LedgerLocation::Postgres(SafeUrl::new(expanded.value))),
                    required,
                    configured: true,
                    shown: url,
                    secrets: expanded.secrets,
                })
            }
            (None, None) => {
                let mut config = Self::beside(dir);
                config.required = required;
                config.configured = true;
                Ok(config)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, env: &[(&str, &str)]) -> Result<LedgerConfig, String> {
        let file: LedgerFileConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        let file = Some(file);
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LedgerConfig::resolve(file, Path::new("/repo"), &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_default_is_a_sqlite_file_in_the_state_directory() {
        let c = parse("", &[]).unwrap();
        assert_eq!(
            c.location,
            Some(LedgerLocation::Sqlite(PathBuf::from(
                "/repo/.toolpin/ledger.db"
            )))
        );
        assert!(!c.required);
        assert!(c.configured, "an empty [ledger] table is configured");
        let none = LedgerConfig::resolve(None, Path::new("/repo"), &|_| None).unwrap();
        assert!(!none.configured && !none.required);
        assert!(none.in_state_dir());
        assert_eq!(none.location, c.location);
    }

    #[test]
    fn a_ledger_left_by_an_earlier_release_is_still_the_default() {
        let dir =
            std::env::temp_dir().join(format!("toolpin-ledger-legacy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(LEGACY_FILE), b"").unwrap();
        let c = LedgerConfig::resolve(None, &dir, &|_| None).unwrap();
        assert_eq!(
            c.location,
            Some(LedgerLocation::Sqlite(dir.join(LEGACY_FILE)))
        );
        assert!(!c.in_state_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_is_relative_to_the_configuration() {
        let c = parse("path = \"state/drift.db\"\nrequired = true\n", &[]).unwrap();
        assert_eq!(
            c.location,
            Some(LedgerLocation::Sqlite(PathBuf::from(
                "/repo/state/drift.db"
            )))
        );
        assert!(c.required);
    }

    #[test]
    fn a_postgres_url_expands_its_password_and_remembers_it_as_a_secret() {
        let c = parse(
            "url = \"postgres://toolpin@db/toolpin?password=${LEDGER_PASSWORD}\"\n",
            &[("LEDGER_PASSWORD", "s3cr&t")],
        )
        .unwrap();
        assert_eq!(
            c.location,
            Some(LedgerLocation::Postgres(
                "postgres://toolpin@db/toolpin?password=s3cr%26t".into()
            ))
        );
        assert_eq!(
            c.shown,
            "postgres://toolpin@db/toolpin?password=${LEDGER_PASSWORD}"
        );
        assert_eq!(c.secrets.len(), 1);
        assert!(!format!("{c:?}").contains("s3cr"), "{c:?}");
    }

    #[test]
    fn urls_are_recognized_by_their_scheme() {
        assert!(is_postgres_url("postgres://db/x"));
        assert!(is_postgres_url("PostgreSQL://db/x"));
        assert!(!is_postgres_url("toolpin.ledger.db"));
        assert!(!is_postgres_url("/var/lib/toolpin/postgres://x"));
        assert!(!is_postgres_url("é"));
        assert!(matches!(
            LedgerLocation::parse("postgresql://u:pw@db/x"),
            LedgerLocation::Postgres(_)
        ));
        assert_eq!(
            LedgerLocation::parse("state/ledger.db"),
            LedgerLocation::Sqlite(PathBuf::from("state/ledger.db"))
        );
    }

    #[test]
    fn a_location_shows_and_debugs_without_its_password() {
        let l = LedgerLocation::parse("postgres://toolpin:p%40ss@db/toolpin?password=hunter22");
        assert_eq!(
            l.to_string(),
            "postgres://toolpin:***@db/toolpin?password=***"
        );
        let debug = format!("{l:?}");
        for secret in ["p%40ss", "p@ss", "hunter22"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }

    #[test]
    fn mistakes_are_one_line_errors() {
        for (text, want) in [
            ("path = \"a\"\nurl = \"postgres://x/y\"\n", "not both"),
            ("url = \"mysql://x/y\"\n", "not a postgres:// URL"),
            ("url = \"postgres://x/${NOPE}\"\n", "NOPE"),
            ("enabled = false\npath = \"a\"\n", "turns the ledger off"),
            ("path = \" \"\n", "must name a file"),
            ("where = 1\n", "unknown field"),
        ] {
            let err = parse(text, &[]).expect_err(text);
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn enabled_false_records_nothing() {
        assert_eq!(parse("enabled = false\n", &[]).unwrap().location, None);
    }
}
