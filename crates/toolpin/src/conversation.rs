//! The questions `toolpin review` asks about each change, and the answers.
//!
//! The conversation reads whole lines, so it works on any terminal and
//! through a pseudo-terminal in tests; it decides nothing itself: the
//! answers go back to `commands::review`, which records them.

use std::io::{self, BufRead, Write};
use std::path::Path;

use toolpin_drift::policy::Verdict;
use toolpin_drift::Comparison;
use toolpin_ops::approve::sub_comparison;
use toolpin_report::text::{render_findings, Sides, TextOptions};
use toolpin_report::Style;

use crate::approve::{earlier_rejections, Change, Evidence};

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
