//! Tool-definition formats: the one list of the formats toolpin reads
//! (toolpin-capture detects them and removes their envelopes) and writes
//! ([`crate::export`], for eval harnesses), each with one canonical name.
//!
//! The canonical name is what lockfiles record (`"format": "openai-chat"`),
//! what errors and `--help` list, and what `format = "…"`,
//! `--input-format` and `manifest = "…"` accept. Older spellings stay
//! accepted as aliases ([`ToolFormat::aliases`]): before issue 14 the writer
//! had its own enum, and `manifest = "openai"` meant OpenAI Chat. Eval
//! manifests keep that spelling in what they write
//! ([`ToolFormat::manifest_name`]) so scripts reading them do not change.

use std::fmt;
use std::str::FromStr;

/// A tool-definition format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ToolFormat {
    /// MCP `tools/list`: a result `{"tools": […]}` (or a JSON-RPC response
    /// holding one), a list of such pages, or a bare array of tools.
    /// Written as `{"tools": [tool, …]}` with every member kept.
    Mcp,
    /// OpenAI Chat Completions: `[{"type": "function", "function": {…}}]`.
    OpenAiChat,
    /// OpenAI Responses: `[{"type": "function", "name": …, "parameters": …}]`.
    OpenAiResponses,
    /// Anthropic Messages: `[{"name", "description", "input_schema"}]`.
    Anthropic,
    /// Gemini: `{"functionDeclarations": […]}` or a list of such tool objects.
    Gemini,
    /// Tools converted from an OpenAPI document (an `openapi` source), not
    /// read in a tool format: never detected, never forced, and not in
    /// [`ToolFormat::ALL`].
    OpenApi,
}

impl ToolFormat {
    /// The formats a tool file can be in, in detection preference order
    /// (the first that fits a document wins).
    pub const ALL: [ToolFormat; 5] = [
        ToolFormat::Mcp,
        ToolFormat::OpenAiChat,
        ToolFormat::OpenAiResponses,
        ToolFormat::Anthropic,
        ToolFormat::Gemini,
    ];

    /// The formats a catalog can be written in (`manifest = "…"`).
    pub const WRITE: [ToolFormat; 3] = [
        ToolFormat::Mcp,
        ToolFormat::OpenAiChat,
        ToolFormat::Anthropic,
    ];

    /// The canonical name: kebab-case and stable, written to lockfiles.
    pub fn name(self) -> &'static str {
        match self {
            ToolFormat::Mcp => "mcp",
            ToolFormat::OpenAiChat => "openai-chat",
            ToolFormat::OpenAiResponses => "openai-responses",
            ToolFormat::Anthropic => "anthropic",
            ToolFormat::Gemini => "gemini",
            ToolFormat::OpenApi => "openapi",
        }
    }

    /// Other spellings accepted wherever the name is, for backward
    /// compatibility. Never written to a lockfile.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            // The eval manifest's name before the formats were one list.
            ToolFormat::OpenAiChat => &["openai"],
            _ => &[],
        }
    }

    /// The name eval manifests use in what they write: the file name
    /// (`live.openai.json`), `TOOLPIN_MANIFEST_FORMAT` and summary.json's
    /// `manifest`. Frozen at the spelling those always had (`openai`), so
    /// harness scripts keep working; the canonical name for everything else.
    pub fn manifest_name(self) -> &'static str {
        match self {
            ToolFormat::OpenAiChat => "openai",
            other => other.name(),
        }
    }

    /// The format for a name or alias, among `among`.
    pub fn find(name: &str, among: &[ToolFormat]) -> Option<ToolFormat> {
        among
            .iter()
            .copied()
            .find(|f| f.name() == name || f.aliases().contains(&name))
    }

    /// "an OpenAI Chat Completions tool", for errors.
    pub fn describe(self) -> &'static str {
        match self {
            ToolFormat::Mcp => "an MCP tool",
            ToolFormat::OpenAiChat => "an OpenAI Chat Completions tool",
            ToolFormat::OpenAiResponses => "an OpenAI Responses function tool",
            ToolFormat::Anthropic => "an Anthropic tool",
            ToolFormat::Gemini => "a Gemini tool",
            ToolFormat::OpenApi => "a tool converted from an OpenAPI operation",
        }
    }

    /// Whether [`crate::export`] can write it (in [`ToolFormat::WRITE`]).
    pub fn writable(self) -> bool {
        ToolFormat::WRITE.contains(&self)
    }
}

impl fmt::Display for ToolFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format a tool file can be read in ([`ToolFormat::ALL`]), by name or
/// alias (`format = "…"`, `--input-format`).
impl FromStr for ToolFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ToolFormat::find(s, &ToolFormat::ALL).ok_or_else(|| {
            let names: Vec<&str> = ToolFormat::ALL.iter().map(|f| f.name()).collect();
            format!(
                "unknown format {s:?}; expected one of: {}",
                names.join(", ")
            )
        })
    }
}

/// A format a catalog can be written in ([`ToolFormat::WRITE`]), by name or
/// alias: the `manifest` key of `[evals.*]`. The error lists the names eval
/// manifests have always been asked for by (`mcp`, `openai`, `anthropic`).
impl<'de> serde::Deserialize<'de> for ToolFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const EXPECTED: [&str; 3] = ["mcp", "openai", "anthropic"];
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        ToolFormat::find(&s, &ToolFormat::WRITE)
            .ok_or_else(|| serde::de::Error::unknown_variant(&s, &EXPECTED))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_aliases_are_unique_and_parse_back() {
        let every = [
            ToolFormat::Mcp,
            ToolFormat::OpenAiChat,
            ToolFormat::OpenAiResponses,
            ToolFormat::Anthropic,
            ToolFormat::Gemini,
            ToolFormat::OpenApi,
        ];
        let mut seen = Vec::new();
        for f in every {
            for n in std::iter::once(f.name()).chain(f.aliases().iter().copied()) {
                assert!(!seen.contains(&n), "{n} names two formats");
                seen.push(n);
                assert_eq!(ToolFormat::find(n, &every), Some(f));
            }
        }
        for f in ToolFormat::ALL {
            assert_eq!(f.name().parse::<ToolFormat>(), Ok(f));
        }
        assert_eq!("openai".parse::<ToolFormat>(), Ok(ToolFormat::OpenAiChat));
        assert!("openapi".parse::<ToolFormat>().is_err());
    }

    #[test]
    fn written_formats_deserialize_by_name_and_alias() {
        for f in ToolFormat::WRITE {
            for n in [f.name(), f.manifest_name()] {
                let parsed: ToolFormat = serde_json::from_value(json!(n)).expect(n);
                assert_eq!(parsed, f);
            }
        }
        let err = serde_json::from_value::<ToolFormat>(json!("gemini")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown variant `gemini`, expected one of `mcp`, `openai`, `anthropic`"
        );
        // The error's list is WRITE's manifest names: a writer added to
        // WRITE must be added to `EXPECTED` too.
        let names: Vec<String> = ToolFormat::WRITE
            .iter()
            .map(|f| format!("`{}`", f.manifest_name()))
            .collect();
        let err = serde_json::from_value::<ToolFormat>(json!("xml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unknown variant `xml`, expected one of {}",
                names.join(", ")
            )
        );
    }
}
