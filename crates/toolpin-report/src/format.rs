//! The report formats, as one table: the name `--format NAME[=PATH]` takes,
//! and one render function from the one input every renderer shares
//! ([`Input`]). The CLI parses `--format` through [`Target::parse`] and
//! renders with [`ReportFormat::render`]; the golden tests
//! (`crates/toolpin/tests/golden.rs`) iterate over [`FORMATS`], so a format
//! added here without a snapshot fails them.

use std::fmt;
use std::path::PathBuf;

use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;

use crate::context::Context;
use crate::style::Style;
use crate::text::Sides;
use crate::{github, json, junit, markdown, sarif, text};

/// Everything a report is rendered from. Each renderer takes what it needs.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    pub comparison: &'a Comparison,
    pub verdict: &'a Verdict,
    /// Where findings point (SARIF, GitHub annotations).
    pub context: &'a Context,
    /// Colour (text only; never on when writing to a file).
    pub style: Style,
    /// What the two sides are (text, markdown).
    pub sides: Sides,
    /// Whole before/after values (text).
    pub verbose: bool,
    /// Where rule ids link to (markdown): [`markdown::RULES_DOC`] or an
    /// absolute URL.
    pub rules_doc: &'a str,
}

/// One report format.
#[derive(Clone, Copy)]
pub struct ReportFormat {
    /// The name on the command line: `--format NAME` or `--format NAME=PATH`.
    pub name: &'static str,
    render: fn(&Input<'_>) -> String,
}

impl ReportFormat {
    /// The report, as the bytes written to stdout or the file.
    pub fn render(&self, input: &Input<'_>) -> String {
        (self.render)(input)
    }

    /// The format called `name`, if any.
    pub fn parse(name: &str) -> Result<&'static ReportFormat, String> {
        FORMATS.iter().find(|f| f.name == name).ok_or_else(|| {
            let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
            format!("unknown report format {name:?} ({})", names.join(", "))
        })
    }
}

impl PartialEq for ReportFormat {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for ReportFormat {}

impl fmt::Debug for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Every report format, in the order `--help` and errors list them.
pub static FORMATS: &[ReportFormat] = &[
    ReportFormat {
        name: "text",
        render: |i| {
            text::render(
                i.comparison,
                i.verdict,
                text::TextOptions {
                    style: i.style,
                    sides: i.sides,
                    verbose: i.verbose,
                },
            )
        },
    },
    ReportFormat {
        name: "json",
        render: |i| json::render(i.comparison, i.verdict),
    },
    ReportFormat {
        name: "markdown",
        render: |i| markdown::render_sides(i.comparison, i.verdict, i.rules_doc, i.sides),
    },
    ReportFormat {
        name: "sarif",
        render: |i| sarif::render(i.comparison, i.verdict, i.context),
    },
    ReportFormat {
        name: "junit",
        render: |i| junit::render(i.comparison, i.verdict),
    },
    ReportFormat {
        name: "github",
        render: |i| github::render(i.comparison, i.verdict, i.context),
    },
];

/// The default format, and the one `--plan` renders as text.
pub const TEXT: &ReportFormat = &FORMATS[0];
/// The machine-readable document, also the other form `--plan` has.
pub const JSON: &ReportFormat = &FORMATS[1];

/// Where one report goes: `NAME` (stdout) or `NAME=PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub format: &'static ReportFormat,
    /// `None`: stdout.
    pub path: Option<PathBuf>,
}

impl Target {
    /// Parses `NAME` or `NAME=PATH` (the `--format` value).
    pub fn parse(s: &str) -> Result<Target, String> {
        let (name, path) = match s.split_once('=') {
            Some((n, p)) if !p.is_empty() => (n, Some(PathBuf::from(p))),
            Some(_) => return Err(format!("{s:?}: a path is needed after '='")),
            None => (s, None),
        };
        let format = ReportFormat::parse(name)?;
        Ok(Target { format, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        for (i, f) in FORMATS.iter().enumerate() {
            assert_eq!(ReportFormat::parse(f.name), Ok(f));
            assert!(FORMATS[..i].iter().all(|g| g.name != f.name), "{f}");
        }
        assert_eq!(TEXT.name, "text");
        assert_eq!(JSON.name, "json");
    }

    #[test]
    fn targets() {
        let t = Target::parse("sarif=out/drift.sarif").unwrap();
        assert_eq!(t.format.name, "sarif");
        assert_eq!(t.path, Some(PathBuf::from("out/drift.sarif")));
        assert_eq!(Target::parse("json").unwrap().path, None);
        assert_eq!(
            Target::parse("json=").unwrap_err(),
            "\"json=\": a path is needed after '='"
        );
        assert_eq!(
            Target::parse("yaml").unwrap_err(),
            "unknown report format \"yaml\" (text, json, markdown, sarif, junit, github)"
        );
    }
}
