//! Which configured values are secrets: kept out of messages, and (the
//! credentials) out of the lockfile and recorded results.

use crate::expand::Expanded;

/// Words that make an env or header name say its value is a secret.
pub const SECRET_WORDS: [&str; 8] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "AUTH",
    "COOKIE",
    "CREDENTIAL",
];

/// Whether an env or header name says its value is a secret.
pub fn secret_looking(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|s| upper.contains(s))
}

/// The secret values of one server, each with its stand-in (`${NAME}`, or
/// `<redacted>` for a literal).
///
/// Every value expanded from the environment is kept out of messages
/// (`all`). Only credentials are also replaced in data, the tool
/// definitions pinned and the results contract tests record, because
/// replacing an ordinary word there (a `${MODE}` of `status`, a `${REGION}`)
/// would change the data itself. A value is a credential by what it is:
/// under an env or header name that says so (`API_KEY`, `Authorization`),
/// from a variable whose name says so (`${GITHUB_TOKEN}`), in a URL's
/// userinfo, query or fragment, named by `bearer_token_env`, or a literal
/// under a secret-looking name.
#[derive(Debug, Default)]
pub(crate) struct Secrets {
    pub(crate) all: Vec<(String, String)>,
    pub(crate) credentials: Vec<(String, String)>,
}

impl Secrets {
    /// The values `e` expanded; all of them are credentials when the key
    /// they are configured under says so.
    pub(crate) fn expanded(&mut self, e: &Expanded, secret_key: bool) {
        let credentials = if secret_key {
            &e.secrets
        } else {
            &e.credentials
        };
        self.credentials.extend(credentials.iter().cloned());
        self.all.extend(e.secrets.iter().cloned());
    }

    pub(crate) fn credential(&mut self, stand_in: String, value: String) {
        self.credentials.push((stand_in.clone(), value.clone()));
        self.all.push((stand_in, value));
    }

    /// A literal secret written straight into toolpin.toml is kept out of
    /// messages too, not only out of the lockfile. The literal parts of a
    /// value that mixes text and references (`Bearer ${TOKEN}`) are not
    /// secret.
    pub(crate) fn literal(&mut self, key: &str, value: &str) {
        if secret_looking(key) && !value.contains("${") {
            self.credential("<redacted>".into(), value.to_string());
            // "Bearer abc…" is also echoed as just the credential.
            if let Some((_, credential)) = value.split_once(' ') {
                self.credential("<redacted>".into(), credential.to_string());
            }
        }
    }
}

/// What the lockfile records for an env or header value: references as
/// written; a literal value of a secret-looking key is redacted.
pub(crate) fn record_value(key: &str, value: &str) -> String {
    if secret_looking(key) && !value.contains("${") {
        "<redacted>".to_string()
    } else {
        value.to_string()
    }
}
