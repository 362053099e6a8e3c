//! `toolpin usage report` in one of [`Report::Usage`]'s formats: the usage
//! crate's renderers (`toolpin_usage::report`, which depends on no toolpin
//! crate) picked from the one format table.

use toolpin_report::format::{pick, Format, JSON, MARKDOWN, TEXT};
use toolpin_usage::report::{render_json, render_markdown, render_text, UsageReport};

#[cfg(doc)]
use toolpin_report::Report;

/// The report in `format`; `None` for a format it is not written in.
pub fn render(report: &UsageReport, format: &Format) -> Option<String> {
    type Write = fn(&UsageReport) -> String;
    let write: Write = pick(
        format,
        &[
            (TEXT, render_text as Write),
            (JSON, render_json),
            (MARKDOWN, render_markdown),
        ],
    )?;
    Some(write(report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolpin_report::Report;

    #[test]
    fn every_usage_format_renders() {
        let report = toolpin_usage::report::report(
            &toolpin_usage::Aggregates::default(),
            &toolpin_usage::report::Catalogs::default(),
            &toolpin_usage::report::Thresholds::default(),
            1,
        );
        for format in Report::Usage.formats() {
            assert!(render(&report, format).is_some(), "{format}");
        }
        assert_eq!(render(&report, toolpin_report::format::CSV), None);
    }
}
