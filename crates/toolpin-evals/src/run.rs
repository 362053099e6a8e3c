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

use crate::verdict::Outcome;
use crate::Error;
use toolpin_config::expand::{expand, redact};
use toolpin_config::Eval;

/// The two catalogs, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Pinned,
    Live,
    /// The pinned catalog again: the A/A baseline (`--aa`).
    Aa,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::Pinned, Side::Live];

    pub fn name(self) -> &'static str {
        match self {
            Side::Pinned => "pinned",
            Side::Live => "live",
            Side::Aa => "aa",
        }
    }

    /// The catalog it runs: the A/A runs use the pinned one.
    fn catalog(self) -> Side {
        match self {
            Side::Aa => Side::Pinned,
            s => s,
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
    /// Runs per side, interleaved (pinned, live, pinned, live, …).
    pub repeats: u32,
    /// Also run the pinned catalog against itself (the A/A baseline).
    pub aa: bool,
    /// Passed to the harness as TOOLPIN_SEED (plus the repeat), and seeds
    /// the comparison's bootstrap.
    pub seed: u64,
    /// The seen-tools file: tool names already acknowledged.
    pub seen: Option<&'a BTreeSet<String>>,
}

/// Every run of one eval, by side, in repeat order.
#[derive(Clone, Debug, Default)]
pub struct EvalRuns {
    pub pinned: Vec<RunResult>,
    pub live: Vec<RunResult>,
    pub aa: Vec<RunResult>,
    /// The per-case comparison, when the harness wrote result files.
    pub comparison: Option<crate::compare::Report>,
    /// Why there is none: no result files, or files that could not be read.
    pub no_comparison: Option<String>,
}

impl EvalRuns {
    fn side(&self, side: Side) -> &[RunResult] {
        match side {
            Side::Pinned => &self.pinned,
            Side::Live => &self.live,
            Side::Aa => &self.aa,
        }
    }

    /// The eval's outcome, from every piece of evidence its runs left:
    /// the per-case comparison when there is one, and the exit codes.
    pub fn outcome(&self) -> crate::verdict::Outcome {
        crate::verdict::decide(
            self.comparison.as_ref(),
            Some(crate::verdict::Exits {
                pinned: &self.pinned,
                live: &self.live,
            }),
        )
    }
}

/// Runs the evals and returns the side-by-side table and whether any eval
/// regressed ([`crate::verdict::decide`]).
pub fn run(req: &Request, style: Style) -> Result<(String, bool), Error> {
    let shown_out = req.out.clone();
    let out = std::path::absolute(&req.out)
        .map_err(|e| Error::new(format!("cannot resolve {}: {e}", req.out.display())))?;
    let manifests_dir = out.join("manifests");
    create_dir(&manifests_dir)?;
    // A summary from an earlier run must not describe this one if it fails.
    let summary_path = out.join("summary.json");
    remove_stale(&summary_path)?;

    // Every eval's environment and working directory are settled before
    // anything runs.
    let mut envs = Vec::new();
    for eval in &req.evals {
        envs.push(eval_env(eval)?);
        working_dir(eval)?;
    }

    let manifests = write_manifests(req, &manifests_dir)?;

    end_running_eval_on_signals();
    let runner = Runner {
        req,
        out: &out,
        manifests: &manifests,
        progress: req.progress && std::io::stderr().is_terminal(),
        numbered: req.repeats > 1 || req.aa,
    };
    let mut results: Vec<EvalRuns> = Vec::new();
    for (eval, env) in req.evals.iter().zip(&envs) {
        results.push(runner.eval(eval, env)?);
    }

    // One verdict per eval, from all of its evidence (crate::verdict).
    let outcomes: Vec<Outcome> = results.iter().map(EvalRuns::outcome).collect();
    let regressed: Vec<&str> = req
        .evals
        .iter()
        .zip(&outcomes)
        .filter(|(_, outcome)| outcome.regressed())
        .map(|(e, _)| e.name.as_str())
        .collect();
    let summary = summary_json(req, &results, &outcomes, &manifests, &out, &regressed);
    // Serializing a Value cannot fail.
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default() + "\n";
    toolpin_manifest::fs::write_atomic(&summary_path, text.as_bytes())
        .map_err(|e| Error::new(format!("cannot write {}: {e}", summary_path.display())))?;

    let table = render_table(req, &results, &outcomes, &shown_out, style);
    Ok((table, !regressed.is_empty()))
}

/// What every eval's runs share.
struct Runner<'r, 'a> {
    req: &'r Request<'a>,
    /// The output directory, absolute.
    out: &'r Path,
    manifests: &'r Manifests<'r>,
    progress: bool,
    /// Runs numbered within their side's directory.
    numbered: bool,
}

impl Runner<'_, '_> {
    /// One eval's runs, interleaved, and their comparison.
    fn eval(&self, eval: &Eval, (env, secrets): &EvalEnv) -> Result<EvalRuns, Error> {
        let req = self.req;
        let run_side = |side: Side, repeat: u32| -> Result<RunResult, Error> {
            let manifest = self
                .manifests
                .get(&(side.catalog().name(), eval.manifest))
                .cloned()
                .ok_or_else(|| {
                    Error::new(format!(
                        "internal error: no {} manifest was written for the {} catalog",
                        eval.manifest,
                        side.name()
                    ))
                })?;
            let dir = run_dir(self.out, &eval.name, side, repeat, self.numbered);
            let what = run_label(side, repeat, req.repeats);
            if self.progress {
                eprintln!("{} on {what}…", eval.name);
            }
            let seed = match side {
                // The A/A runs draw their own randomness: they measure how
                // much a run moves when nothing but chance changes.
                Side::Aa => req
                    .seed
                    .wrapping_add(u64::from(req.repeats) + u64::from(repeat)),
                _ => req.seed.wrapping_add(u64::from(repeat)),
            };
            let result = run_one(
                eval,
                (side, repeat, seed),
                &what,
                &dir,
                &manifest,
                catalog_of(req, side.catalog()),
                env,
            )
            .map_err(|e| Error::new(redact(&e, secrets)))?;
            if self.progress {
                eprintln!(
                    "{} on {what}: {} in {}",
                    eval.name,
                    result.status.label(),
                    seconds(result.duration)
                );
            }
            Ok(result)
        };
        // Interleaved, so that a slow hour does not land on one side.
        let mut runs = EvalRuns::default();
        for repeat in 0..req.repeats {
            runs.pinned.push(run_side(Side::Pinned, repeat)?);
            runs.live.push(run_side(Side::Live, repeat)?);
            if req.aa {
                runs.aa.push(run_side(Side::Aa, repeat)?);
            }
        }
        match compare_runs(req, self.out, &eval.name, self.numbered) {
            Ok(Some(report)) => runs.comparison = Some(report),
            Ok(None) => {
                runs.no_comparison = Some(
                    "the harness wrote no result files into TOOLPIN_OUTPUT_DIR: compared by exit code only"
                        .to_string(),
                )
            }
            Err(e) => return Err(Error::new(format!("eval {}: {e}", eval.name))),
        }
        Ok(runs)
    }
}

/// The catalogs written for the harnesses, by side and tool format.
type Manifests<'a> = BTreeMap<(&'a str, ToolFormat), PathBuf>;

/// The catalogs, once per format in use.
fn write_manifests(req: &Request, dir: &Path) -> Result<Manifests<'static>, Error> {
    let formats: BTreeSet<ToolFormat> = req.evals.iter().map(|e| e.manifest).collect();
    let mut manifests = Manifests::new();
    for format in formats {
        for side in Side::BOTH {
            let catalog = catalog_of(req, side);
            let path = dir.join(format!("{}.{}.json", side.name(), format.manifest_name()));
            toolpin_manifest::fs::write_atomic(&path, export::to_text(catalog, format).as_bytes())
                .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
            manifests.insert((side.name(), format), path);
        }
    }
    Ok(manifests)
}

/// Removes `path`, if it is there.
fn remove_stale(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::new(format!("cannot remove {}: {e}", path.display()))),
    }
}

/// A run's output directory: `EVAL/SIDE` for one run per side, else
/// `EVAL/SIDE/REPEAT`.
fn run_dir(out: &Path, eval: &str, side: Side, repeat: u32, numbered: bool) -> PathBuf {
    let dir = out.join(eval).join(side.name());
    if numbered {
        dir.join(repeat.to_string())
    } else {
        dir
    }
}

fn run_label(side: Side, repeat: u32, repeats: u32) -> String {
    let catalog = match side {
        Side::Aa => "the pinned catalog (A/A)".to_string(),
        s => format!("the {} catalog", s.name()),
    };
    if repeats > 1 {
        format!("{catalog}, repeat {}/{repeats}", repeat + 1)
    } else {
        catalog
    }
}

/// Reads what the harness wrote in each run's directory and compares the
/// live runs with the pinned ones. `None` when no run wrote a result file.
fn compare_runs(
    req: &Request,
    out: &Path,
    eval: &str,
    numbered: bool,
) -> Result<Option<crate::compare::Report>, crate::results::Error> {
    use crate::results::{self, Names, Repeat};
    let mut names = Names::default();
    let mut sides: Vec<Vec<Repeat>> = Vec::new();
    let mut any = false;
    let wanted: &[Side] = if req.aa {
        &[Side::Pinned, Side::Live, Side::Aa]
    } else {
        &[Side::Pinned, Side::Live]
    };
    for side in wanted {
        let mut repeats = Vec::new();
        for repeat in 0..req.repeats {
            let dir = run_dir(out, eval, *side, repeat, numbered);
            // Every result file of one run is that run's repeat. A run
            // that wrote none is left out (and reported below).
            let mut merged = Repeat::default();
            if !dir.is_dir() {
                continue;
            }
            let found = results::visit_dir(&dir, None, &mut |file, format, bytes| {
                let mut runs = results::read_as(file, bytes, format, &mut names)?;
                // The run's directory says which repeat it was.
                runs.iter_mut().for_each(|r| r.repeat = None);
                merged.sources.push(file.to_path_buf());
                merged.cases.extend(runs);
                Ok(())
            });
            if found? == 0 {
                continue;
            }
            any = true;
            results::check_unique(&merged)?;
            repeats.push(merged);
        }
        sides.push(repeats);
    }
    if !any {
        return Ok(None);
    }
    for (side, repeats) in wanted.iter().zip(&sides) {
        if repeats.is_empty() {
            return Err(results::Error::new(format!(
                "the {} runs wrote no result files, the others did",
                side.name()
            )));
        }
    }
    let ctx = crate::compare::context(Some((req.pinned, req.live)), req.seen);
    let options = crate::compare::Options {
        seed: req.seed,
        resamples: crate::compare::stats::RESAMPLES,
    };
    let aa = sides.get(2).map(Vec::as_slice);
    Ok(Some(crate::compare::compare(
        &sides[0], &sides[1], aa, names, &ctx, options,
    )))
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
        Side::Pinned | Side::Aa => req.pinned,
        Side::Live => req.live,
    }
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
    (side, repeat, seed): (Side, u32, u64),
    label: &str,
    dir: &Path,
    manifest: &Path,
    catalog: &Catalog,
    env: &BTreeMap<String, String>,
) -> Result<RunResult, String> {
    let what = format!("eval {} on {label}", eval.name);
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
        ("TOOLPIN_SIDE", side.catalog().name().to_string()),
        ("TOOLPIN_RUN", side.name().to_string()),
        ("TOOLPIN_REPEAT", repeat.to_string()),
        ("TOOLPIN_SEED", seed.to_string()),
        (
            "TOOLPIN_CATALOG_FINGERPRINT",
            catalog.fingerprint().to_hex(),
        ),
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
    toolpin_manifest::text::stderr_tail(&text.lines().collect::<Vec<_>>())
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
    results: &[EvalRuns],
    outcomes: &[Outcome],
    manifests: &BTreeMap<(&str, ToolFormat), PathBuf>,
    out: &Path,
    regressed: &[&str],
) -> Value {
    let catalog =
        |c: &Catalog| json!({"fingerprint": c.fingerprint().to_hex(), "tools": c.tool_count()});
    let numbered = req.repeats > 1 || req.aa;
    let run_doc = |eval: &Eval, side: Side, repeat: u32, result: &RunResult| {
        let (exit_code, signal) = match result.status {
            Status::Exit(c) => (Some(c), None),
            Status::Signal(s) => (None, Some(s)),
            Status::Timeout => (None, None),
        };
        let dir = run_dir(Path::new(""), &eval.name, side, repeat, numbered);
        json!({
            "status": match result.status {
                Status::Exit(_) => "exit",
                Status::Signal(_) => "signal",
                Status::Timeout => "timeout",
            },
            "exit_code": exit_code,
            "signal": signal,
            "passed": result.status.passed(),
            "duration_ms": result.duration.as_millis() as u64,
            "fingerprint": catalog_of(req, side).fingerprint().to_hex(),
            "manifest": manifests.get(&(side.catalog().name(), eval.manifest)).map(|p| relative(p, out)),
            "dir": dir.display().to_string(),
            "repeat": repeat,
        })
    };
    let evals: Vec<Value> = req
        .evals
        .iter()
        .zip(results)
        .zip(outcomes)
        .map(|((eval, runs), outcome)| {
            let mut doc = json!({
                "eval": eval.name,
                "run": eval.run,
                "manifest": eval.manifest.manifest_name(),
                "timeout_ms": eval.timeout.map(|t| t.as_millis() as u64),
                "regressed": outcome.regressed(),
                "outcome": crate::verdict::json(outcome),
                "repeats": req.repeats,
            });
            // `pinned` and `live` are the first repeat, as before repeats.
            for side in Side::BOTH {
                if let Some(first) = runs.side(side).first() {
                    doc[side.name()] = run_doc(eval, side, 0, first);
                }
            }
            let mut all = serde_json::Map::new();
            for side in [Side::Pinned, Side::Live, Side::Aa] {
                let list: Vec<Value> = runs
                    .side(side)
                    .iter()
                    .enumerate()
                    .map(|(k, r)| run_doc(eval, side, k as u32, r))
                    .collect();
                if !list.is_empty() {
                    all.insert(side.name().to_string(), Value::Array(list));
                }
            }
            doc["runs"] = Value::Object(all);
            doc["comparison"] = match &runs.comparison {
                Some(report) => crate::compare::json::render(report, outcome),
                None => Value::Null,
            };
            doc
        })
        .collect();
    let mut doc = json!({
        "version": 1,
        "config": req.config,
        "environment": req.live.environment,
        "selected": req.selected,
        "repeats": req.repeats,
        "aa": req.aa,
        "seed": req.seed,
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

fn pass_count(runs: &[RunResult]) -> String {
    let passed = runs.iter().filter(|r| r.status.passed()).count();
    format!("{passed}/{} passed", runs.len())
}

fn render_table(
    req: &Request,
    results: &[EvalRuns],
    outcomes: &[Outcome],
    out: &Path,
    s: Style,
) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "catalog {} (pinned) → {} (live){}\n",
        req.pinned.fingerprint().short(),
        req.live.fingerprint().short(),
        if req.repeats > 1 {
            format!(
                ", {} runs per side interleaved, seed {}",
                req.repeats, req.seed
            )
        } else {
            String::new()
        }
    );
    table(&mut text, req, results, outcomes, out, s);
    for ((eval, runs), outcome) in req.evals.iter().zip(results).zip(outcomes) {
        match (&runs.comparison, &runs.no_comparison) {
            (Some(report), _) => {
                let _ = writeln!(text, "\n{} {}", s.bold("eval"), s.bold(&eval.name));
                text.push_str(&crate::compare::text::render(report, outcome, s));
            }
            (None, Some(why)) if req.repeats > 1 || req.aa => {
                let _ = writeln!(text, "\neval {}: {why}", eval.name);
            }
            _ => {}
        }
    }
    let _ = writeln!(text);
    let reasons: Vec<String> = req
        .evals
        .iter()
        .zip(outcomes)
        .filter(|(_, outcome)| outcome.regressed())
        .map(|(e, outcome)| format!("{} ({})", e.name, outcome.reason))
        .collect();
    if reasons.is_empty() {
        let _ = writeln!(
            text,
            "no regressions: every eval did as well on the live catalog as on the pinned one"
        );
    } else {
        let _ = writeln!(
            text,
            "{} {}",
            s.bold(&s.red("regressed:")),
            reasons.join(", ")
        );
    }
    let _ = writeln!(
        text,
        "summary: {}",
        printable(
            &toolpin_manifest::text::shown_path(&out.join("summary.json")),
            false
        )
    );
    text
}

/// The side-by-side table: a row per eval, its runs on each side and its
/// output directory, regressed rows marked.
fn table(
    text: &mut String,
    req: &Request,
    results: &[EvalRuns],
    outcomes: &[Outcome],
    out: &Path,
    s: Style,
) {
    let cell = |runs: &[RunResult]| match runs {
        [one] => format!("{:<7} {:>6}", one.status.label(), seconds(one.duration)),
        many => {
            let total: Duration = many.iter().map(|r| r.duration).sum();
            format!("{} {:>7}", pass_count(many), seconds(total))
        }
    };
    let mut header = vec!["eval".to_string(), "pinned".to_string(), "live".to_string()];
    if req.aa {
        header.push("A/A".to_string());
    }
    header.push("output".to_string());
    let mut rows: Vec<Vec<String>> = vec![header];
    let mut regressed_rows = Vec::new();
    for ((eval, runs), outcome) in req.evals.iter().zip(results).zip(outcomes) {
        let mut row = vec![eval.name.clone(), cell(&runs.pinned), cell(&runs.live)];
        if req.aa {
            row.push(cell(&runs.aa));
        }
        row.push(toolpin_manifest::text::shown_path(&out.join(&eval.name)));
        regressed_rows.push(outcome.regressed());
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for (n, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let cell = if i == columns - 1 {
                printable(cell, false).into_owned()
            } else {
                cell.clone()
            };
            let _ = write!(line, "{:<w$}  ", cell, w = widths[i]);
        }
        let mut line = line.trim_end().to_string();
        if n == 0 {
            line = s.bold(&line);
        } else if regressed_rows[n - 1] {
            line += &format!("  {}", s.red("regressed"));
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
}
