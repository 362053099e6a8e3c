//! `${VAR}` and `${VAR:-default}` in env values, headers and URLs, expanded
//! in memory only. The expanded values are remembered as secrets so that no
//! message can print them.

/// A string with its references expanded, and the values that came from the
/// environment.
#[derive(Debug)]
pub struct Expanded {
    pub value: String,
    pub secrets: Vec<(String, String)>,
    /// The secrets that are credentials by what they are (see
    /// `Secrets`): a variable with a secret-looking name, or a
    /// URL's userinfo, query or fragment.
    pub credentials: Vec<(String, String)>,
}

/// Expands references in `text` using `lookup`.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Expanded, String> {
    expand_with(text, lookup, &|_, v, _| (v.to_string(), false))
}

/// Expands references in a URL: a value from the environment is
/// percent-encoded into the component it stands in (userinfo, path, query
/// or fragment), so that an `&` in it cannot add a query parameter nor a
/// `/` a path segment. A reference that starts the URL or stands in its
/// host or port is taken as written (it is URL text: `${BASE_URL}/mcp`,
/// `http://${HOST}:${PORT}`). Defaults are URL text as written too.
pub fn expand_url(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Expanded, String> {
    expand_with(text, lookup, &|before, v, after| {
        if url_component_is_text(before, after) {
            (v.to_string(), false)
        } else {
            // Userinfo, query and fragment carry credentials (`?key=`);
            // a path segment is a name unless its variable says otherwise.
            let credential = before.contains(['?', '#'])
                || after
                    .split(['/', '?', '#'])
                    .next()
                    .is_some_and(|r| r.contains('@'));
            (
                toolpin_manifest::redact::percent_encoded(v, false),
                credential,
            )
        }
    })
}

/// Whether a reference between `before` (expanded so far) and `after` (as
/// written) stands in URL text itself: the scheme, the whole URL, the host
/// or the port. Anything else is inside one component.
fn url_component_is_text(before: &str, after: &str) -> bool {
    if before.contains(['?', '#']) {
        return false;
    }
    let Some((_, authority)) = before.split_once("://") else {
        return true;
    };
    if authority.contains('/') {
        return false;
    }
    if authority.contains('@') {
        // Past the userinfo: the host or the port.
        return true;
    }
    // Userinfo when an `@` follows before the authority ends.
    let rest = after.split(['/', '?', '#']).next().unwrap_or("");
    !rest.contains('@')
}

/// Expands references, each value from the environment passed through
/// `encode(expanded so far, value, the rest as written)`, which also says
/// whether its place makes it a credential.
fn expand_with(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    encode: &dyn Fn(&str, &str, &str) -> (String, bool),
) -> Result<Expanded, String> {
    let mut value = String::with_capacity(text.len());
    let mut secrets = Vec::new();
    let mut credentials = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        value.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed `${{` in {text:?}"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`${{{inner}}}` is not a variable reference (use ${{NAME}} or ${{NAME:-default}})"
            ));
        }
        match (lookup(name), default) {
            (Some(v), _) if !v.is_empty() || default.is_none() => {
                let (encoded, by_place) = encode(&value, &v, &after[end + 1..]);
                value.push_str(&encoded);
                if by_place || crate::secret_looking(name) {
                    credentials.push((format!("${{{name}}}"), v.clone()));
                }
                secrets.push((format!("${{{name}}}"), v));
            }
            (_, Some(d)) => value.push_str(d),
            (None, None) => return Err(format!("environment variable {name} is not set")),
            (Some(v), None) => value.push_str(&v),
        }
        rest = &after[end + 1..];
    }
    value.push_str(rest);
    Ok(Expanded {
        value,
        secrets,
        credentials,
    })
}

/// Replaces every secret value in `text` with its stand-in (`${NAME}` for a
/// value from the environment, `<redacted>` for a literal), in every form
/// a server may echo it: as is, JSON-escaped or percent-encoded.
pub fn redact(text: &str, secrets: &[(String, String)]) -> String {
    toolpin_manifest::Redactor::new(secrets).redact(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret-value".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_references_and_defaults() {
        let e = expand("Bearer ${TOKEN}", &env).expect("expands");
        assert_eq!(e.value, "Bearer s3cret-value");
        assert_eq!(e.secrets, vec![("${TOKEN}".into(), "s3cret-value".into())]);
        assert_eq!(
            expand("${MISSING:-dflt}/x", &env).expect("default").value,
            "dflt/x"
        );
        assert_eq!(
            expand("${EMPTY:-dflt}", &env).expect("default").value,
            "dflt"
        );
        assert_eq!(
            expand("plain $HOME", &env).expect("plain").value,
            "plain $HOME"
        );
    }

    #[test]
    fn refuses_bad_references() {
        assert!(expand("${MISSING}", &env)
            .expect_err("unset")
            .contains("MISSING is not set"));
        assert!(expand("${TOKEN", &env)
            .expect_err("unclosed")
            .contains("unclosed"));
        assert!(expand("${a b}", &env)
            .expect_err("bad")
            .contains("not a variable reference"));
    }

    #[test]
    fn url_references_are_encoded_into_their_component() {
        let env = |name: &str| match name {
            "Q" => Some("a&b=c#d".to_string()),
            "SEG" => Some("x/../y?z".to_string()),
            "PASS" => Some("p@ss:w/rd".to_string()),
            "HOST" => Some("127.0.0.1:8080".to_string()),
            "BASE" => Some("http://127.0.0.1:9/mcp".to_string()),
            _ => None,
        };
        let url = |t: &str| expand_url(t, &env).expect("expands").value;
        assert_eq!(
            url("http://h/mcp?key=${Q}&v=1"),
            "http://h/mcp?key=a%26b%3Dc%23d&v=1"
        );
        assert_eq!(
            url("http://h/api/${SEG}/mcp"),
            "http://h/api/x%2F..%2Fy%3Fz/mcp"
        );
        assert_eq!(
            url("http://u:${PASS}@h/mcp"),
            "http://u:p%40ss%3Aw%2Frd@h/mcp"
        );
        assert_eq!(
            url("http://${HOST}/mcp#${SEG}"),
            "http://127.0.0.1:8080/mcp#x%2F..%2Fy%3Fz"
        );
        assert_eq!(
            url("${BASE}?t=${Q}"),
            "http://127.0.0.1:9/mcp?t=a%26b%3Dc%23d"
        );
        assert_eq!(url("http://h/${MISSING:-a/b}"), "http://h/a/b");
        let e = expand_url("http://h/?k=${Q}", &env).expect("expands");
        assert_eq!(e.secrets, vec![("${Q}".into(), "a&b=c#d".into())]);
    }

    #[test]
    fn credentials_are_told_by_name_and_by_place_in_a_url() {
        let lookup = |k: &str| {
            Some(
                match k {
                    "API_TOKEN" => "t0ken-value",
                    "REGION" => "us-east-1",
                    "USER_PASS" => "p4ss",
                    "TENANT" => "acme",
                    _ => "other-value",
                }
                .to_string(),
            )
        };
        let names = |e: &Expanded| -> Vec<String> {
            e.credentials.iter().map(|(n, _)| n.clone()).collect()
        };
        let e = expand("${REGION} ${API_TOKEN}", &lookup).unwrap();
        assert_eq!(e.secrets.len(), 2);
        assert_eq!(names(&e), ["${API_TOKEN}"]);
        let e = expand_url(
            "https://bot:${USER_PASS}@${REGION}.example/${TENANT}/mcp?k=${NAME}#${FRAG}",
            &lookup,
        )
        .unwrap();
        assert_eq!(names(&e), ["${USER_PASS}", "${NAME}", "${FRAG}"]);
        assert_eq!(e.secrets.len(), 5);
    }

    #[test]
    fn redacts_secret_values() {
        let s = vec![("${TOKEN}".to_string(), "s3cret-value".to_string())];
        assert_eq!(redact("401 for s3cret-value", &s), "401 for ${TOKEN}");
        let s = vec![("${TOKEN}".to_string(), "tok\"x\\y&z".to_string())];
        assert_eq!(
            redact(
                r#"401 {"got":"tok\"x\\y&z"} ?t=tok%22x%5Cy%26z tok"x\y&z"#,
                &s
            ),
            r#"401 {"got":"${TOKEN}"} ?t=${TOKEN} ${TOKEN}"#
        );
    }
}
