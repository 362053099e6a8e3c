//! Running a command that prints tool definitions, with a deadline.
//!
//! The command runs in its own process group so that a timeout kills
//! everything it started (a shell's children included) and nothing is left
//! holding the output pipes. Output is read on threads so a chatty stderr
//! never blocks stdout.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Largest stdout accepted from a command.
pub const MAX_OUTPUT: usize = 512 << 20;
/// How much of stderr is kept (the end of it).
const STDERR_TAIL: usize = 64 << 10;

/// A command to run.
#[derive(Clone, Debug)]
pub struct ExecSpec {
    pub argv: Vec<String>,
    /// Added to the inherited environment (values already expanded).
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub timeout: Duration,
}

/// Why a command did not produce output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    #[error("the command is empty")]
    Empty,
    #[error("cannot run `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    #[error("`{command}` {status}{}", stderr_suffix(.stderr))]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("`{command}` did not finish within {timeout:?} and was killed{}", stderr_suffix(.stderr))]
    Timeout {
        command: String,
        timeout: Duration,
        stderr: String,
    },
    #[error("`{command}` printed more than {MAX_OUTPUT} bytes and was killed")]
    TooMuchOutput { command: String },
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; stderr: {stderr}")
    }
}

/// The command as a person would type it.
pub fn display_command(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs the command and returns its stdout.
pub fn run(spec: &ExecSpec) -> Result<Vec<u8>, ExecError> {
    run_keeping(spec, true)
}

/// Runs the command with its stdout discarded (a recorded agent's own
/// output is nobody's business), keeping stderr's tail for a failure.
pub fn run_quiet(spec: &ExecSpec) -> Result<(), ExecError> {
    run_keeping(spec, false).map(drop)
}

fn run_keeping(spec: &ExecSpec, keep_stdout: bool) -> Result<Vec<u8>, ExecError> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(ExecError::Empty);
    };
    let command = display_command(&spec.argv);
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(&spec.env)
        .stdin(Stdio::null())
        .stdout(if keep_stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().map_err(|e| ExecError::Spawn {
        command: command.clone(),
        reason: e.to_string(),
    })?;
    let stdout = child.stdout.take().map(|out| read_capped(out, MAX_OUTPUT));
    let stderr = child.stderr.take().map(|err| read_tail(err, STDERR_TAIL));

    let deadline = Instant::now() + spec.timeout;
    let outcome = wait_until(&mut child, deadline);
    // Whatever the command left running in its group goes too, so the pipes
    // close and the readers finish.
    kill_group(&child);
    let _ = child.wait();

    let (out, overflow) = stdout.map(join).unwrap_or_default();
    let err_tail = stderr.map(|h| last_lines(&join(h).0)).unwrap_or_default();
    match outcome {
        None => Err(ExecError::Timeout {
            command,
            timeout: spec.timeout,
            stderr: err_tail,
        }),
        Some(_) if overflow => Err(ExecError::TooMuchOutput { command }),
        Some(status) if status.success() => Ok(out),
        Some(status) => Err(ExecError::Failed {
            command,
            status: describe(status),
            stderr: err_tail,
        }),
    }
}

/// How [`run_to`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The command exited (or was killed by a signal from elsewhere).
    Exited(ExitStatus),
    /// The deadline passed; the command and its process group were killed.
    TimedOut,
}

/// The process group of the command [`run_to`] is waiting for (0: none),
/// for a signal handler that must end it when toolpin itself is stopped:
/// the command runs in its own group, so a Ctrl-C on the terminal does not
/// reach it.
pub static RUNNING_GROUP: AtomicI32 = AtomicI32::new(0);

/// Runs the command with its output going to `stdout` and `stderr` (files,
/// typically) instead of being captured, in its own process group, with
/// stdin closed. A timeout of `Duration::MAX` (or any deadline too far to
/// represent) waits without limit. Whatever the command leaves running in
/// its process group is killed when it exits or times out.
pub fn run_to(spec: &ExecSpec, stdout: Stdio, stderr: Stdio) -> Result<Ended, ExecError> {
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(ExecError::Empty);
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(&spec.env)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().map_err(|e| ExecError::Spawn {
        command: display_command(&spec.argv),
        reason: e.to_string(),
    })?;
    RUNNING_GROUP.store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
    let outcome = match Instant::now().checked_add(spec.timeout) {
        Some(deadline) => wait_until(&mut child, deadline),
        None => child.wait().ok(),
    };
    kill_group(&child);
    RUNNING_GROUP.store(0, Ordering::SeqCst);
    let _ = child.wait();
    Ok(match outcome {
        Some(status) => Ended::Exited(status),
        None => Ended::TimedOut,
    })
}

fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_micros(200);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => return child.wait().ok(),
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

fn kill_group(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) has no memory effects; a negative pid names the
        // process group the child leads (process_group(0) above).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "failed".to_string(),
    }
}

type Reader = JoinHandle<(Vec<u8>, bool)>;

fn join(handle: Reader) -> (Vec<u8>, bool) {
    handle.join().unwrap_or_default()
}

/// Reads everything up to `cap` bytes; the flag says the cap was passed.
fn read_capped(mut src: impl Read + Send + 'static, cap: usize) -> Reader {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            match src.read(&mut chunk) {
                Ok(0) | Err(_) => return (buf, false),
                Ok(n) if buf.len() + n > cap => return (buf, true),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    })
}

/// Reads everything, keeping only the last `keep` bytes.
fn read_tail(mut src: impl Read + Send + 'static, keep: usize) -> Reader {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 8 << 10];
        loop {
            match src.read(&mut chunk) {
                Ok(0) | Err(_) => return (buf, false),
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() > 2 * keep {
                        buf.drain(..buf.len() - keep);
                    }
                }
            }
        }
    })
}

/// The last few non-empty lines of stderr, on one line.
fn last_lines(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    tail.iter()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> Result<Vec<u8>, ExecError> {
        run(&ExecSpec {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: BTreeMap::new(),
            cwd: None,
            timeout: Duration::from_millis(timeout_ms),
        })
    }

    #[test]
    fn captures_stdout() {
        assert_eq!(
            sh("echo '[]'; echo noise >&2", 5000).expect("runs"),
            b"[]\n"
        );
    }

    #[test]
    fn failure_shows_status_and_stderr() {
        let err = sh("echo one >&2; echo two >&2; exit 3", 5000).expect_err("fails");
        assert_eq!(
            err.to_string(),
            "`sh -c 'echo one >&2; echo two >&2; exit 3'` exited with status 3; stderr: one | two"
        );
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let start = Instant::now();
        let err = sh("sleep 30 & sleep 30; echo late", 300).expect_err("times out");
        assert!(matches!(err, ExecError::Timeout { .. }), "{err}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn background_children_do_not_hold_the_pipe() {
        let start = Instant::now();
        let out = sh("sleep 30 & echo '[]'", 10_000).expect("runs");
        assert_eq!(out, b"[]\n");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn env_is_added_to_the_environment() {
        let out = run(&ExecSpec {
            argv: vec![
                "sh".into(),
                "-c".into(),
                r#"printf '%s %s' "$TOOLPIN_EXEC_PROBE" "${PATH:+path}""#.into(),
            ],
            env: BTreeMap::from([("TOOLPIN_EXEC_PROBE".into(), "probe value".into())]),
            cwd: None,
            timeout: Duration::from_secs(5),
        })
        .expect("runs");
        assert_eq!(out, b"probe value path");
    }

    #[test]
    fn run_to_writes_output_where_told_and_keeps_the_status() {
        let dir = std::env::temp_dir().join(format!("toolpin-exec-run-to-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let out = std::fs::File::create(dir.join("out")).expect("out");
        let err = std::fs::File::create(dir.join("err")).expect("err");
        let ended = run_to(
            &ExecSpec {
                argv: vec![
                    "sh".into(),
                    "-c".into(),
                    "echo to-out; echo to-err >&2; exit 4".into(),
                ],
                env: BTreeMap::new(),
                cwd: None,
                timeout: Duration::MAX,
            },
            out.into(),
            err.into(),
        )
        .expect("runs");
        let Ended::Exited(status) = ended else {
            panic!("did not exit: {ended:?}");
        };
        assert_eq!(status.code(), Some(4));
        assert_eq!(std::fs::read(dir.join("out")).expect("out"), b"to-out\n");
        assert_eq!(std::fs::read(dir.join("err")).expect("err"), b"to-err\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn run_to_times_out_and_kills_the_group() {
        let start = Instant::now();
        let ended = run_to(
            &ExecSpec {
                argv: vec!["sh".into(), "-c".into(), "sleep 30 & sleep 30".into()],
                env: BTreeMap::new(),
                cwd: None,
                timeout: Duration::from_millis(300),
            },
            Stdio::null(),
            Stdio::null(),
        )
        .expect("runs");
        assert_eq!(ended, Ended::TimedOut);
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn missing_program() {
        let err = run(&ExecSpec {
            argv: vec!["/nonexistent/toolpin-printer".into()],
            env: BTreeMap::new(),
            cwd: None,
            timeout: Duration::from_secs(1),
        })
        .expect_err("missing");
        assert!(
            err.to_string()
                .starts_with("cannot run `/nonexistent/toolpin-printer`: "),
            "{err}"
        );
    }
}
