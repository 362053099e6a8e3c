//! `${VAR}` and `${VAR:-default}` in env values, headers and URLs, expanded
//! in memory only. The expanded values are remembered as secrets so that no
//! message can print them.

/// A string with its references expanded, and the values that came from the
/// environment.
#[derive(Debug)]
pub struct Expanded {
    pub value: String,
    pub secrets: Vec<(String, String)>,
}

/// Expands references in `text` using `lookup`.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Expanded, String> {
    let mut value = String::with_capacity(text.len());
    let mut secrets = Vec::new();
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
                secrets.push((format!("${{{name}}}"), v.clone()));
                value.push_str(&v);
            }
            (_, Some(d)) => value.push_str(d),
            (None, None) => return Err(format!("environment variable {name} is not set")),
            (Some(v), None) => value.push_str(&v),
        }
        rest = &after[end + 1..];
    }
    value.push_str(rest);
    Ok(Expanded { value, secrets })
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
    fn redacts_secret_values() {
        let s = vec![("${TOKEN}".to_string(), "s3cret-value".to_string())];
        assert_eq!(redact("401 for s3cret-value", &s), "401 for ${TOKEN}");
    }
}
