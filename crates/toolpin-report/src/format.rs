//! The output formats, as one table ([`TABLE`]): each [`Format`]'s name on
//! the command line, its file extension and media type, its description,
//! and which reports offer it ([`Report::formats`]). Every command's
//! `--format` is parsed through it ([`Report::parse`], [`Target::parse_for`]).
//! The drift report's renderers are [`FORMATS`], one [`ReportFormat`] per
//! format from the one input every renderer shares ([`Input`]); the golden
//! tests (`crates/toolpin/tests/golden.rs`) iterate over [`FORMATS`], so a
//! format added there without a snapshot fails them.

use std::fmt;
use std::path::PathBuf;

use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;

use crate::context::Context;
use crate::style::Style;
use crate::text::Sides;
use crate::{csv, github, json, junit, markdown, sarif, text};

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

/// One output format: a row of [`TABLE`].
#[derive(Debug)]
pub struct Format {
    /// The name on the command line: `--format NAME` or `--format NAME=PATH`.
    pub name: &'static str,
    /// The usual file extension, without the dot.
    pub extension: &'static str,
    /// The media type of what is written.
    pub media_type: &'static str,
    /// What it is, in a few words (help text, errors).
    pub description: &'static str,
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl Format {
    /// The reports that offer this format, in [`Report::ALL`]'s order.
    pub fn reports(&'static self) -> impl Iterator<Item = Report> {
        Report::ALL.into_iter().filter(move |r| r.offers(self))
    }
}

/// Every output format, in the order `--help` and errors list them.
pub static TABLE: [Format; 7] = [
    Format {
        name: "text",
        extension: "txt",
        media_type: "text/plain",
        description: "the human report",
    },
    Format {
        name: "json",
        extension: "json",
        media_type: "application/json",
        description: "the machine-readable document",
    },
    Format {
        name: "markdown",
        extension: "md",
        media_type: "text/markdown",
        description: "a pull-request comment",
    },
    Format {
        name: "sarif",
        extension: "sarif",
        media_type: "application/sarif+json",
        description: "SARIF 2.1.0 for code scanning",
    },
    Format {
        name: "junit",
        extension: "xml",
        media_type: "application/xml",
        description: "JUnit XML for test dashboards",
    },
    Format {
        name: "github",
        extension: "txt",
        media_type: "text/plain",
        description: "GitHub Actions annotations",
    },
    Format {
        name: "csv",
        extension: "csv",
        media_type: "text/csv",
        description: "RFC 4180 comma-separated values with a header row",
    },
];

/// The default format of every report, and the one `--plan` renders as text.
pub const TEXT: &Format = &TABLE[0];
/// The machine-readable document, also the other form `--plan` has.
pub const JSON: &Format = &TABLE[1];
pub const MARKDOWN: &Format = &TABLE[2];
pub const SARIF: &Format = &TABLE[3];
pub const JUNIT: &Format = &TABLE[4];
pub const GITHUB: &Format = &TABLE[5];
pub const CSV: &Format = &TABLE[6];

/// A report a command writes, and so a set of formats it offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Drift findings: `check`, `diff`, `contract run` (rendered by [`FORMATS`]).
    Drift,
    /// The eval plan: `check --plan`, `diff --plan`, `contract run --plan`.
    Plan,
    /// Two sets of eval runs: `compare` (`toolpin_evals::compare`).
    Comparison,
    /// The ledger's history: `history` (`toolpin_ops::history`).
    History,
    /// The usage change-point report: `usage report` (`toolpin_usage::report`).
    Usage,
}

impl Report {
    pub const ALL: [Report; 5] = [
        Report::Drift,
        Report::Plan,
        Report::Comparison,
        Report::History,
        Report::Usage,
    ];

    /// The formats this report is written in; the first is the default.
    pub fn formats(self) -> &'static [&'static Format] {
        match self {
            Report::Drift => &[TEXT, JSON, MARKDOWN, SARIF, JUNIT, GITHUB, CSV],
            Report::Plan => &[TEXT, JSON],
            Report::Comparison | Report::Usage => &[TEXT, JSON, MARKDOWN],
            Report::History => &[TEXT, JSON, CSV, MARKDOWN],
        }
    }

    /// Whether this report is written in `format`.
    pub fn offers(self, format: &Format) -> bool {
        self.formats().contains(&format)
    }

    /// The names of [`Report::formats`], in order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        self.formats().iter().map(|f| f.name)
    }

    /// The names as a sentence: `text, json or markdown`.
    pub fn list(self) -> String {
        let names: Vec<&str> = self.names().collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The format of this report called `name`, if it offers one.
    pub fn parse(self, name: &str) -> Result<&'static Format, String> {
        self.formats()
            .iter()
            .copied()
            .find(|f| f.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.names().collect();
                format!("unknown report format {name:?} ({})", names.join(", "))
            })
    }
}

/// The drift report in one format: a [`Format`] of [`Report::Drift`] and
/// its renderer.
#[derive(Clone, Copy)]
pub struct ReportFormat {
    pub format: &'static Format,
    render: fn(&Input<'_>) -> String,
}

impl ReportFormat {
    /// The report, as the bytes written to stdout or the file.
    pub fn render(&self, input: &Input<'_>) -> String {
        (self.render)(input)
    }

    /// The renderer of `format`, if the drift report offers it.
    pub fn of(format: &Format) -> Option<&'static ReportFormat> {
        FORMATS.iter().find(|f| f.format == format)
    }
}

impl std::ops::Deref for ReportFormat {
    type Target = Format;

    fn deref(&self) -> &Format {
        self.format
    }
}

/// The drift report's renderers, in [`Report::Drift`]'s order.
pub static FORMATS: &[ReportFormat] = &[
    ReportFormat {
        format: TEXT,
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
        format: JSON,
        render: |i| json::render(i.comparison, i.verdict),
    },
    ReportFormat {
        format: MARKDOWN,
        render: |i| markdown::render_sides(i.comparison, i.verdict, i.rules_doc, i.sides),
    },
    ReportFormat {
        format: SARIF,
        render: |i| sarif::render(i.comparison, i.verdict, i.context),
    },
    ReportFormat {
        format: JUNIT,
        render: |i| junit::render(i.comparison, i.verdict),
    },
    ReportFormat {
        format: GITHUB,
        render: |i| github::render(i.comparison, i.verdict, i.context),
    },
    ReportFormat {
        format: CSV,
        render: |i| csv::render(i.comparison, i.verdict, i.context),
    },
];

/// What `choices` pairs with `format` (a report's renderer for each of its
/// formats); `None` when it names no such format.
pub fn pick<T: Copy>(format: &Format, choices: &[(&Format, T)]) -> Option<T> {
    choices.iter().find(|(f, _)| *f == format).map(|(_, t)| *t)
}

/// The drift report in `format`; `None` when it has no such form.
pub fn render(format: &Format, input: &Input<'_>) -> Option<String> {
    ReportFormat::of(format).map(|f| f.render(input))
}

/// Where one report goes: `NAME` (stdout) or `NAME=PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub format: &'static Format,
    /// `None`: stdout.
    pub path: Option<PathBuf>,
}

impl Target {
    /// Parses a drift report's `NAME` or `NAME=PATH` (the `--format` value).
    pub fn parse(s: &str) -> Result<Target, String> {
        Target::parse_for(Report::Drift, s)
    }

    /// Parses `NAME` or `NAME=PATH` for `report`.
    pub fn parse_for(report: Report, s: &str) -> Result<Target, String> {
        let (name, path) = match s.split_once('=') {
            Some((n, p)) if !p.is_empty() => (n, Some(PathBuf::from(p))),
            Some(_) => return Err(format!("{s:?}: a path is needed after '='")),
            None => (s, None),
        };
        let format = report.parse(name)?;
        Ok(Target { format, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_parse_back() {
        for (i, f) in TABLE.iter().enumerate() {
            assert!(TABLE[..i].iter().all(|g| g.name != f.name), "{f}");
            for report in f.reports() {
                assert_eq!(report.parse(f.name), Ok(f));
            }
        }
        for report in Report::ALL {
            assert_eq!(report.formats()[0], TEXT, "{report:?} defaults to text");
        }
        assert_eq!(TEXT.name, "text");
        assert_eq!(JSON.name, "json");
        assert_eq!(Report::Comparison.list(), "text, json or markdown");
    }

    /// The drift renderers are exactly the formats the drift report offers.
    #[test]
    fn every_drift_format_has_one_renderer() {
        let rendered: Vec<&Format> = FORMATS.iter().map(|f| f.format).collect();
        assert_eq!(rendered, Report::Drift.formats());
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
            "unknown report format \"yaml\" (text, json, markdown, sarif, junit, github, csv)"
        );
    }
}
