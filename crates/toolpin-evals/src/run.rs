//! `toolpin evals run`: each selected eval twice, against the pinned and
//! then the live catalog, with the results side by side (docs/evals.md).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::fs::File;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolpin_capture::exec::{self, Ended, ExecSpec};
use toolpin_manifest::{export, Catalog, ToolFormat};
use toolpin_report::style::printable;
use toolpin_report::Style;

use crate::Error;
use toolpin_config::expand::{expand, redact};
use toolpin_config::Eval;

/// The two catalogs, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Pinned,
    Live,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::Pinned, Side::Live];

    pub fn name(self) -> &'static str {
        match self {
            Side::Pinned => "pinned",
            Side::Live => "live",
        }
    }
}

/// How one run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Exit(i32),
    Signal(i32),
    Timeout,
}

impl Status {
    pub fn passed(self) -> bool {
        self == Status::Exit(0)
    }

    fn label(self) -> String {
        match self {
            Status::Exit(code) => format!("exit {code}"),
            Status::Signal(sig) => format!("signal {sig}"),
            Status::Timeout => "timeout".to_string(),
        }
    }
}

/// One run of one eval.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub status: Status,
    pub duration: Duration,
}

/// What `evals run` was asked to do.
pub struct Request<'a> {
    pub evals: Vec<&'a Eval>,
    pub pinned: &'a Catalog,
    pub live: &'a Catalog,
    /// The output directory as given (or defaulted); shown in the table.
    pub out: PathBuf,
    /// Recorded in summary.json.
    pub config: String,
    /// "all", "names" or "plan".
    pub selected: &'static str,
    /// The plan document, for `--plan`.
    pub plan: Option<Value>,
    /// Show progress on stderr (when it is a terminal).
    pub progress: bool,
}

/// Runs the evals and returns the side-by-side table and whether any eval
/// regressed (passed pinned, failed live).
pub fn run(req: &Request, style: Style) -> Result<(String, bool), Error> {
    let shown_out = req.out.clone();
    let out = std::path::absolute(&req.out)
        .map_err(|e| Error::new(format!("cannot resolve {}: {e}", req.out.display())))?;
    let manifests_dir = out.join("manifests");
    create_dir(&manifests_dir)?;
    // A summary from an earlier run must not describe this one if it fails.
    let summary_path = out.join("summary.json");
    match std::fs::remove_file(&summary_path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::new(format!(
                "cannot remove {}: {e}",
                summary_path.display()
            )))
        }
    }

    // Every eval's environment and working directory are settled before
    // anything runs.
    let mut envs = Vec::new();
    for eval in &req.evals {
        envs.push(eval_env(eval)?);
        working_dir(eval)?;
    }

    // The catalogs, once per format in use.
    let formats: BTreeSet<ToolFormat> = req.evals.iter().map(|e| e.manifest).collect();
    let mut manifests: BTreeMap<(&str, ToolFormat), PathBuf> = BTreeMap::new();
    for format in formats {
        for side in Side::BOTH {
            let catalog = catalog_of(req, side);
            let path =
                manifests_dir.join(format!("{}.{}.json", side.name(), format.manifest_name()));
            toolpin_manifest::fs::write_atomic(&path, export::to_text(catalog, format).as_bytes())
                .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
            manifests.insert((side.name(), format), path);
        }
    }

    end_running_eval_on_signals();
    let progress = req.progress && std::io::stderr().is_terminal();
    let mut results: Vec<[RunResult; 2]> = Vec::new();
    for (eval, (env, secrets)) in req.evals.iter().zip(&envs) {
        let run_side = |side: Side| -> Result<RunResult, Error> {
            let manifest = manifests
                .get(&(side.name(), eval.manifest))
                .cloned()
                .ok_or_else(|| {
                    Error::new(format!(
                        "internal error: no {} manifest was written for the {} catalog",
                        eval.manifest,
                        side.name()
                    ))
                })?;
            let dir = out.join(&eval.name).join(side.name());
            if progress {
                eprintln!("{} on the {} catalog…", eval.name, side.name());
            }
            let result = run_one(eval, side, &dir, &manifest, catalog_of(req, side), env)
                .map_err(|e| Error::new(redact(&e, secrets)))?;
            if progress {
                eprintln!(
                    "{} on the {} catalog: {} in {}",
                    eval.name,
                    side.name(),
                    result.status.label(),
                    seconds(result.duration)
                );
            }
            Ok(result)
        };
        // Pinned first, then live.
        let pinned = run_side(Side::Pinned)?;
        let live = run_side(Side::Live)?;
        results.push([pinned, live]);
    }

    let regressed: Vec<&str> = req
        .evals
        .iter()
        .zip(&results)
        .filter(|(_, [pinned, live])| regression(pinned, live))
        .map(|(e, _)| e.name.as_str())
        .collect();
    let summary = summary_json(req, &results, &manifests, &out, &regressed);
    // Serializing a Value cannot fail.
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default() + "\n";
    toolpin_manifest::fs::write_atomic(&summary_path, text.as_bytes())
        .map_err(|e| Error::new(format!("cannot write {}: {e}", summary_path.display())))?;

    let table = render_table(req, &results, &shown_out, &regressed, style);
    Ok((table, !regressed.is_empty()))
}

/// An eval runs in its own process group (so a timeout can end all of it),
/// which a Ctrl-C on the terminal does not reach. When toolpin is
/// interrupted, terminated or hung up on, it kills that group first, then
/// dies of the same signal.
fn end_running_eval_on_signals() {
    extern "C" fn on_signal(sig: libc::c_int) {
        let group = exec::RUNNING_GROUP.load(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: kill, signal and raise are async-signal-safe, and an
        // atomic load is lock-free.
        unsafe {
            if group > 0 {
                libc::kill(-group, libc::SIGKILL);
            }
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only makes async-signal-safe
        // calls (above).
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

fn catalog_of<'a>(req: &Request<'a>, side: Side) -> &'a Catalog {
    match side {
        Side::Pinned => req.pinned,
        Side::Live => req.live,
    }
}

/// Passed on the pinned catalog and failed on the live one.
pub fn regression(pinned: &RunResult, live: &RunResult) -> bool {
    pinned.status.passed() && !live.status.passed()
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::new(format!("cannot create {}: {e}", dir.display())))
}

/// Where the eval runs, made absolute; it must be a directory.
fn working_dir(eval: &Eval) -> Result<PathBuf, Error> {
    let cwd = std::path::absolute(&eval.cwd).map_err(|e| {
        Error::new(format!(
            "evals.{}: cannot resolve {}: {e}",
            eval.name,
            eval.cwd.display()
        ))
    })?;
    if !cwd.is_dir() {
        return Err(Error::new(format!(
            "evals.{}: the working directory {} is not a directory (check `cwd`)",
            eval.name,
            cwd.display()
        )));
    }
    Ok(cwd)
}

/// The eval's `env`, expanded from toolpin's environment, and the values
/// that came from it (kept out of messages).
type EvalEnv = (BTreeMap<String, String>, Vec<(String, String)>);

fn eval_env(eval: &Eval) -> Result<EvalEnv, Error> {
    let mut env = BTreeMap::new();
    let mut secrets = Vec::new();
    for (key, value) in &eval.env {
        let e = expand(value, &|k| std::env::var(k).ok())
            .map_err(|m| Error::new(format!("evals.{}: `env.{key}`: {m}", eval.name)))?;
        if toolpin_config::secret_looking(key) && !value.contains("${") {
            secrets.push(("<redacted>".to_string(), value.clone()));
        }
        secrets.extend(e.secrets);
        env.insert(key.clone(), e.value);
    }
    Ok((env, secrets))
}

/// One run: a fresh output directory, the harness started with `sh -c` and
/// its output sent to files there.
fn run_one(
    eval: &Eval,
    side: Side,
    dir: &Path,
    manifest: &Path,
    catalog: &Catalog,
    env: &BTreeMap<String, String>,
) -> Result<RunResult, String> {
    let what = format!("eval {} on the {} catalog", eval.name, side.name());
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{what}: cannot clear {}: {e}", dir.display())),
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("{what}: cannot create {}: {e}", dir.display()))?;
    let cwd = working_dir(eval).map_err(|e| e.to_string())?;
    let file = |name: &str| {
        File::create(dir.join(name))
            .map_err(|e| format!("{what}: cannot create {}: {e}", dir.join(name).display()))
    };
    let stdout = file("stdout.txt")?;
    let stderr = file("stderr.txt")?;
    let mut vars = env.clone();
    for (key, value) in [
        ("TOOLPIN_MANIFEST", manifest.display().to_string()),
        (
            "TOOLPIN_MANIFEST_FORMAT",
            eval.manifest.manifest_name().to_string(),
        ),
        ("TOOLPIN_SIDE", side.name().to_string()),
        ("TOOLPIN_CATALOG_FINGERPRINT", catalog.fingerprint.to_hex()),
        ("TOOLPIN_OUTPUT_DIR", dir.display().to_string()),
        ("TOOLPIN_EVAL", eval.name.clone()),
    ] {
        vars.insert(key.to_string(), value);
    }
    let spec = ExecSpec {
        argv: vec!["sh".into(), "-c".into(), eval.run.clone()],
        env: vars,
        cwd: Some(cwd),
        timeout: eval.timeout.unwrap_or(Duration::MAX),
    };
    let start = Instant::now();
    let ended = exec::run_to(&spec, stdout.into(), stderr.into())
        .map_err(|e| format!("{what} could not start: {e}"))?;
    let duration = start.elapsed();
    let status = match ended {
        Ended::TimedOut => Status::Timeout,
        Ended::Exited(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => Status::Exit(code),
                (None, Some(sig)) => Status::Signal(sig),
                (None, None) => Status::Exit(-1),
            }
        }
    };
    // The shell's own codes for a command it could not find or execute.
    if let Status::Exit(code @ (126 | 127)) = status {
        let cause = if code == 127 {
            "command not found"
        } else {
            "not executable"
        };
        let tail = stderr_tail(&dir.join("stderr.txt"));
        return Err(format!(
            "{what} could not start: `sh -c {:?}` exited with status {code} ({cause}){}",
            eval.run,
            if tail.is_empty() {
                String::new()
            } else {
                format!("; stderr: {tail}")
            }
        ));
    }
    Ok(RunResult { status, duration })
}

/// The last few non-empty lines of a stderr file, on one line.
fn stderr_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(3)..]
        .iter()
        .map(|l| {
            if l.chars().count() > 300 {
                l.chars().take(300).collect::<String>() + "…"
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn seconds(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

/// A path relative to the output directory, for summary.json.
fn relative(path: &Path, out: &Path) -> String {
    path.strip_prefix(out).unwrap_or(path).display().to_string()
}

fn summary_json(
    req: &Request,
    results: &[[RunResult; 2]],
    manifests: &BTreeMap<(&str, ToolFormat), PathBuf>,
    out: &Path,
    regressed: &[&str],
) -> Value {
    let catalog =
        |c: &Catalog| json!({"fingerprint": c.fingerprint.to_hex(), "tools": c.tool_count()});
    let evals: Vec<Value> = req
        .evals
        .iter()
        .zip(results)
        .map(|(eval, pair)| {
            let mut doc = json!({
                "eval": eval.name,
                "run": eval.run,
                "manifest": eval.manifest.manifest_name(),
                "timeout_ms": eval.timeout.map(|t| t.as_millis() as u64),
                "regressed": regression(&pair[0], &pair[1]),
            });
            for (side, result) in Side::BOTH.into_iter().zip(pair) {
                let (exit_code, signal) = match result.status {
                    Status::Exit(c) => (Some(c), None),
                    Status::Signal(s) => (None, Some(s)),
                    Status::Timeout => (None, None),
                };
                doc[side.name()] = json!({
                    "status": match result.status {
                        Status::Exit(_) => "exit",
                        Status::Signal(_) => "signal",
                        Status::Timeout => "timeout",
                    },
                    "exit_code": exit_code,
                    "signal": signal,
                    "passed": result.status.passed(),
                    "duration_ms": result.duration.as_millis() as u64,
                    "fingerprint": catalog_of(req, side).fingerprint.to_hex(),
                    "manifest": manifests.get(&(side.name(), eval.manifest)).map(|p| relative(p, out)),
                    "dir": format!("{}/{}", eval.name, side.name()),
                });
            }
            doc
        })
        .collect();
    let mut doc = json!({
        "version": 1,
        "config": req.config,
        "environment": req.live.environment,
        "selected": req.selected,
        "catalogs": {"pinned": catalog(req.pinned), "live": catalog(req.live)},
        "evals": evals,
        "regressed": regressed,
        "exit": if regressed.is_empty() { 0 } else { 1 },
    });
    if let Some(plan) = &req.plan {
        doc["plan"] = plan.clone();
    }
    doc
}

fn render_table(
    req: &Request,
    results: &[[RunResult; 2]],
    out: &Path,
    regressed: &[&str],
    s: Style,
) -> String {
    let cell = |r: &RunResult| format!("{:<7} {:>6}", r.status.label(), seconds(r.duration));
    let mut rows: Vec<[String; 4]> = vec![[
        "eval".to_string(),
        "pinned".to_string(),
        "live".to_string(),
        "output".to_string(),
    ]];
    for (eval, [pinned, live]) in req.evals.iter().zip(results) {
        rows.push([
            eval.name.clone(),
            cell(pinned),
            cell(live),
            crate::display(&out.join(&eval.name)),
        ]);
    }
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths = [width(0), width(1), width(2), width(3)];
    let mut text = String::new();
    let _ = writeln!(
        text,
        "catalog {} (pinned) → {} (live)\n",
        req.pinned.fingerprint.short(),
        req.live.fingerprint.short()
    );
    for (n, row) in rows.iter().enumerate() {
        let mut line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}",
            row[0],
            row[1],
            row[2],
            printable(&row[3], false),
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
        );
        if n == 0 {
            line = s.bold(line.trim_end());
        } else if regressed.contains(&row[0].as_str()) {
            line += &format!("  {}", s.red("regressed"));
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
    let _ = writeln!(text);
    if regressed.is_empty() {
        let _ = writeln!(
            text,
            "no regressions: every eval did as well on the live catalog as on the pinned one"
        );
    } else {
        let _ = writeln!(
            text,
            "{} {} (passed on the pinned catalog, failed on the live one)",
            s.bold(&s.red("regressed:")),
            regressed.join(", ")
        );
    }
    let _ = writeln!(
        text,
        "summary: {}",
        printable(&crate::display(&out.join("summary.json")), false)
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(status: Status) -> RunResult {
        RunResult {
            status,
            duration: Duration::from_millis(10),
        }
    }

    #[test]
    fn only_pass_then_fail_is_a_regression() {
        let cases = [
            (Status::Exit(0), Status::Exit(0), false),
            (Status::Exit(0), Status::Exit(1), true),
            (Status::Exit(0), Status::Timeout, true),
            (Status::Exit(0), Status::Signal(9), true),
            (Status::Exit(1), Status::Exit(0), false),
            (Status::Exit(1), Status::Exit(2), false),
            (Status::Timeout, Status::Timeout, false),
        ];
        for (pinned, live, want) in cases {
            assert_eq!(
                regression(&r(pinned), &r(live)),
                want,
                "{pinned:?} → {live:?}"
            );
        }
    }
}
