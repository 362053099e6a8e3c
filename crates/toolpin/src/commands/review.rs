//! `toolpin review`: the changes one at a time, each shown with its
//! classified diff, then accept (with a reason), reject or skip.
//!
//! The conversation reads whole lines, so it works on any terminal and
//! through a pseudo-terminal in tests; nothing is written until the end.

use std::io::{self, BufRead, Write};
use std::path::Path;

use serde_json::Value;
use toolpin_drift::policy::Verdict;
use toolpin_drift::{Comparison, Finding};
use toolpin_report::text::{render_findings, Sides, TextOptions};
use toolpin_report::Style;

use super::pending::Pending;
use super::{display, plural, print, Outcome};
use crate::approve::{self, earlier_rejections, Change, Evidence};
use crate::cli::ConfigArgs;
use crate::error::CliError;

pub fn run(
    args: &ConfigArgs,
    verbose: bool,
    style: Style,
    quiet: bool,
) -> Result<Outcome, CliError> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(CliError::new(
            "toolpin review asks questions and needs a terminal; in scripts use `toolpin accept --tool SERVER/TOOL --reason ...`",
        ));
    }
    let pending = Pending::capture(args, quiet)?;
    if pending.changes.is_empty() {
        print(&format!(
            "ok: the catalog matches {}; nothing to review\n",
            display(&pending.lockfile)
        ))?;
        return Ok(Outcome::Clean);
    }
    let session = Review {
        comparison: &pending.comparison,
        verdict: &pending.verdict,
        changes: &pending.changes,
        lockfile: &pending.lockfile,
        style,
        verbose,
    };
    let answers = {
        let mut input = std::io::stdin().lock();
        let mut out = std::io::stdout().lock();
        session
            .run(&mut input, &mut out)
            .map_err(|e| CliError::new(format!("review: {e}")))?
    };
    let accepted: Vec<&approve::Change> = answers
        .iter()
        .filter(|a| a.accepted)
        .map(|a| &pending.changes[a.change])
        .collect();
    let updated = approve::apply(&pending.pinned, &pending.live, &accepted)?;
    let stamp = pending.stamp(&updated);
    let records: Vec<Value> = answers
        .iter()
        .map(|a| {
            let decision = approve::Decision {
                change: &pending.changes[a.change],
                accepted: a.accepted,
                reason: a.reason.clone(),
                evidence: a.evidence.clone(),
            };
            approve::record(&decision, &pending.comparison, &stamp)
        })
        .collect();
    approve::commit(
        &pending.lockfile,
        (!accepted.is_empty()).then_some(&updated),
        &records,
    )?;
    let decisions: Vec<(&approve::Change, bool)> = answers
        .iter()
        .map(|a| (&pending.changes[a.change], a.accepted))
        .collect();
    pending.record_decisions(&decisions, quiet)?;
    let rejected = answers.len() - accepted.len();
    let skipped = pending.changes.len() - answers.len();
    let mut summary = format!(
        "\n{} accepted, {} rejected, {} skipped",
        accepted.len(),
        rejected,
        skipped
    );
    if !accepted.is_empty() {
        summary += &format!(
            "; {} is now {}",
            display(&pending.lockfile),
            updated.fingerprint().release_line()
        );
    }
    if !records.is_empty() {
        summary += &format!(
            "; {} in {}",
            plural(records.len(), "record"),
            display(&approve::log_path(&pending.lockfile))
        );
    }
    print(&(summary + "\n"))?;
    Ok(Outcome::Clean)
}

/// What was decided for one change.
pub struct Answer {
    pub change: usize,
    pub accepted: bool,
    pub reason: Option<String>,
    pub evidence: Vec<Evidence>,
}

/// Everything a review shows.
pub struct Review<'a> {
    pub comparison: &'a Comparison,
    pub verdict: &'a Verdict,
    pub changes: &'a [Change],
    pub lockfile: &'a Path,
    pub style: Style,
    pub verbose: bool,
}

const HELP: &str = "  a  accept: pin the new definition (asks why, and for evidence files)
  r  reject: keep the pinned definition (a facade keeps serving it)
  s  skip: decide later; it stays drift
  q  quit: keep the decisions made so far and stop
";

impl Review<'_> {
    /// Asks about each change in turn. End of input is a quit.
    pub fn run(&self, input: &mut dyn BufRead, out: &mut dyn Write) -> io::Result<Vec<Answer>> {
        let mut answers = Vec::new();
        let total = self.changes.len();
        for (i, change) in self.changes.iter().enumerate() {
            self.show(out, i, total, change)?;
            loop {
                let Some(reply) = ask(
                    input,
                    out,
                    &format!(
                        "{} accept, {} reject, {} skip, {} quit, {} help: ",
                        self.style.bold("[a]"),
                        self.style.bold("[r]"),
                        self.style.bold("[s]"),
                        self.style.bold("[q]"),
                        self.style.bold("[?]")
                    ),
                )?
                else {
                    return Ok(answers);
                };
                match reply.to_ascii_lowercase().as_str() {
                    "a" | "accept" => {
                        let Some(reason) = self.reason(input, out)? else {
                            return Ok(answers);
                        };
                        let Some(evidence) = self.evidence(input, out)? else {
                            return Ok(answers);
                        };
                        answers.push(Answer {
                            change: i,
                            accepted: true,
                            reason: Some(reason),
                            evidence,
                        });
                        break;
                    }
                    "r" | "reject" => {
                        let Some(reason) =
                            ask(input, out, "Why reject it? (Enter to leave blank): ")?
                        else {
                            return Ok(answers);
                        };
                        answers.push(Answer {
                            change: i,
                            accepted: false,
                            reason: (!reason.is_empty()).then_some(reason),
                            evidence: Vec::new(),
                        });
                        break;
                    }
                    "s" | "skip" => break,
                    "q" | "quit" => return Ok(answers),
                    _ => write!(out, "{HELP}")?,
                }
            }
        }
        Ok(answers)
    }

    fn show(&self, out: &mut dyn Write, i: usize, total: usize, ch: &Change) -> io::Result<()> {
        let s = self.style;
        let findings = match ch.findings.len() {
            0 => "no findings under the policy".to_string(),
            1 => "1 finding".to_string(),
            n => format!("{n} findings"),
        };
        let from = match &ch.from {
            Some((server, tool)) => format!(" from {server}/{tool}"),
            None => String::new(),
        };
        writeln!(
            out,
            "\n{} {}  {}{from}, {findings}",
            s.dim(&format!("[{}/{total}]", i + 1)),
            s.bold(&toolpin_report::style::printable(&ch.address(), false)),
            ch.kind.name(),
        )?;
        let fp =
            |f: Option<toolpin_manifest::Fingerprint>| f.map_or("(none)".into(), |f| f.short());
        writeln!(out, "fingerprint {} → {}", fp(ch.before), fp(ch.after))?;
        let (sub, verdict) = self.sub_comparison(ch);
        let opts = TextOptions {
            style: s,
            sides: Sides::LockfileAndLive,
            verbose: self.verbose,
        };
        write!(out, "{}", render_findings(&sub, &verdict, opts))?;
        for (author, time, reason) in earlier_rejections(self.lockfile, ch) {
            let why = if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            };
            writeln!(
                out,
                "{}",
                s.yellow(&toolpin_report::style::printable(
                    &format!("note: this exact definition was rejected by {author} at {time}{why}"),
                    false
                ))
            )?;
        }
        writeln!(out)
    }

    /// The change's findings as a comparison of their own, with what the
    /// policy made of each.
    fn sub_comparison(&self, ch: &Change) -> (Comparison, Verdict) {
        let c = self.comparison;
        let findings: Vec<Finding> = ch
            .findings
            .iter()
            .filter_map(|i| c.findings.get(*i).cloned())
            .collect();
        let mut verdict = Verdict {
            fails: false,
            preset: self.verdict.preset,
            fail_on: self.verdict.fail_on,
            ..Verdict::default()
        };
        for (j, i) in ch.findings.iter().enumerate() {
            if self.verdict.failing.contains(i) {
                verdict.failing.push(j);
            }
            if let Some((_, reason)) = self.verdict.ignored.iter().find(|(k, _)| k == i) {
                verdict.ignored.push((j, reason.clone()));
            }
        }
        verdict.fails = !verdict.failing.is_empty();
        let sub = Comparison {
            findings,
            summary: c.summary.clone(),
            fingerprints: c.fingerprints.clone(),
            tools: Vec::new(),
        };
        (sub, verdict)
    }

    fn reason(&self, input: &mut dyn BufRead, out: &mut dyn Write) -> io::Result<Option<String>> {
        loop {
            let Some(reason) = ask(input, out, "Why is this change acceptable? ")? else {
                return Ok(None);
            };
            if !reason.is_empty() {
                return Ok(Some(reason));
            }
            writeln!(out, "A reason is required: it goes into the approvals log.")?;
        }
    }

    fn evidence(
        &self,
        input: &mut dyn BufRead,
        out: &mut dyn Write,
    ) -> io::Result<Option<Vec<Evidence>>> {
        'again: loop {
            let Some(line) = ask(
                input,
                out,
                "Evidence files, separated by spaces (Enter for none): ",
            )?
            else {
                return Ok(None);
            };
            let mut files = Vec::new();
            for path in line.split_whitespace() {
                match Evidence::read(Path::new(path), self.lockfile) {
                    Ok(e) => files.push(e),
                    Err(e) => {
                        writeln!(out, "{e}")?;
                        continue 'again;
                    }
                }
            }
            return Ok(Some(files));
        }
    }
}

/// Prints `prompt` and reads one trimmed line; `None` at end of input.
fn ask(input: &mut dyn BufRead, out: &mut dyn Write, prompt: &str) -> io::Result<Option<String>> {
    write!(out, "{prompt}")?;
    out.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        writeln!(out)?;
        return Ok(None);
    }
    Ok(Some(line.trim().to_string()))
}
