//! `toolpin review`: the changes one at a time, each shown with its
//! classified diff, then accept (with a reason), reject or skip.
//!
//! The conversation reads whole lines, so it works on any terminal and
//! through a pseudo-terminal in tests; nothing is written until the end.

use std::io::{self, BufRead, Write};
use std::path::Path;

use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;
use toolpin_ops::approve::{sub_comparison, Pending};
use toolpin_report::text::{render_findings, Sides, TextOptions};
use toolpin_report::Style;

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
    let pending = Pending::capture(args.resolve()?, args.capture_options(quiet))?;
    let lockfile = pending.lockfile();
    if pending.changes.is_empty() {
        let shown = display(lockfile);
        print(&format!(
            "ok: the catalog matches {shown}; nothing to review\n"
        ))?;
        return Ok(Outcome::Clean);
    }
    let session = Review {
        comparison: &pending.checked.comparison,
        verdict: &pending.checked.verdict,
        changes: &pending.changes,
        lockfile,
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
    let decisions: Vec<approve::Decision> = answers
        .into_iter()
        .map(|a| approve::Decision {
            change: &pending.changes[a.change],
            accepted: a.accepted,
            reason: a.reason,
            evidence: a.evidence,
        })
        .collect();
    let done = pending.decide(&decisions, quiet)?;
    let accepted = done.accepted.len();
    let rejected = decisions.len() - accepted;
    let skipped = pending.changes.len() - decisions.len();
    let mut summary = format!("\n{accepted} accepted, {rejected} rejected, {skipped} skipped");
    if accepted > 0 {
        let release = done.updated.fingerprint().release_line();
        summary += &format!("; {} is now {release}", display(lockfile));
    }
    if done.records > 0 {
        summary += &format!(
            "; {} in {}",
            plural(done.records, "record"),
            display(&approve::log_path(lockfile))
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
        let (sub, verdict) = sub_comparison(self.comparison, self.verdict, ch);
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
