//! Running a command that prints tool definitions, with a deadline.
//!
//! The command runs in its own process group so that a timeout kills
//! everything it started (a shell's children included). Both output pipes
//! are read by one loop (`poll(2)`), so a chatty stderr never blocks
//! stdout, and reading stops when the command exits or times out: what it
//! wrote is in the pipes by then and is read without waiting; a process it
//! left behind outside its group (a daemon started with `setsid` or
//! `start_new_session=True`, which holds the pipes open) is not waited for.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread;
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
    let mut out = Pipe::new(
        child.stdout.take().map(OwnedFd::from),
        Keep::Head(MAX_OUTPUT),
    );
    let mut err = Pipe::new(
        child.stderr.take().map(OwnedFd::from),
        Keep::Tail(STDERR_TAIL),
    );

    let deadline = Instant::now() + spec.timeout;
    let outcome = pump(&mut child, &mut out, &mut err, deadline);
    // Whatever the command left running in its group goes too.
    kill_group(&child);
    let _ = child.wait();
    // What the command wrote before it ended is in the pipes: read it, but
    // wait for no one else (a detached process may hold them open).
    out.drain();
    err.drain();

    let err_tail = last_lines(&err.buf);
    match outcome {
        Pumped::TimedOut => Err(ExecError::Timeout {
            command,
            timeout: spec.timeout,
            stderr: err_tail,
        }),
        Pumped::Overflow => Err(ExecError::TooMuchOutput { command }),
        Pumped::Exited(_) if out.overflow => Err(ExecError::TooMuchOutput { command }),
        Pumped::Exited(status) if status.success() => Ok(out.buf),
        Pumped::Exited(status) => Err(ExecError::Failed {
            command,
            status: describe(status),
            stderr: err_tail,
        }),
    }
}

/// How [`pump`] ended.
enum Pumped {
    Exited(ExitStatus),
    TimedOut,
    /// stdout passed [`MAX_OUTPUT`].
    Overflow,
}

/// Reads both pipes as data arrives until the command exits, the deadline
/// passes or stdout overflows; never waits for a pipe to close.
fn pump(child: &mut Child, out: &mut Pipe, err: &mut Pipe, deadline: Instant) -> Pumped {
    let mut pause = Duration::from_micros(200);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Pumped::Exited(status),
            Ok(None) => {}
            Err(_) => {
                return match child.wait() {
                    Ok(status) => Pumped::Exited(status),
                    Err(_) => Pumped::TimedOut,
                }
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return Pumped::TimedOut;
        }
        let wait = pause.min(deadline - now);
        let mut fds: Vec<libc::pollfd> = [&*out, &*err]
            .iter()
            .filter_map(|p| p.fd())
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if fds.is_empty() {
            thread::sleep(wait);
        } else {
            let ms = libc::c_int::try_from(wait.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs
            // for the duration of the call.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if ready > 0 {
                out.drain();
                err.drain();
                if out.overflow {
                    return Pumped::Overflow;
                }
                // Data came: the command is busy, look again soon.
                pause = Duration::from_micros(200);
                continue;
            }
        }
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// What of a pipe's bytes is kept.
#[derive(Clone, Copy)]
enum Keep {
    /// Everything, up to this many bytes (then the pipe is overflowing).
    Head(usize),
    /// Only the last this many bytes.
    Tail(usize),
}

/// One of the command's output pipes, read without blocking.
struct Pipe {
    /// `None` once it closed (or when there is no pipe).
    file: Option<File>,
    buf: Vec<u8>,
    keep: Keep,
    overflow: bool,
}

impl Pipe {
    fn new(fd: Option<OwnedFd>, keep: Keep) -> Self {
        let file = fd.map(File::from);
        if let Some(f) = &file {
            let fd = f.as_raw_fd();
            // SAFETY: fcntl on a descriptor this `File` owns; only the
            // status flags change.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
                }
            }
        }
        Self {
            file,
            buf: Vec::new(),
            keep,
            overflow: false,
        }
    }

    fn fd(&self) -> Option<libc::c_int> {
        self.file.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Reads what the pipe holds now; closes it at its end (or on an
    /// error, or once it overflows).
    fn drain(&mut self) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut chunk = [0u8; 64 << 10];
        loop {
            match file.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => match self.keep {
                    Keep::Head(cap) if self.buf.len() + n > cap => {
                        self.overflow = true;
                        break;
                    }
                    Keep::Head(_) => self.buf.extend_from_slice(&chunk[..n]),
                    Keep::Tail(keep) => {
                        self.buf.extend_from_slice(&chunk[..n]);
                        if self.buf.len() > 2 * keep {
                            self.buf.drain(..self.buf.len() - keep);
                        }
                    }
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        self.file = None;
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

    /// Runs `sh -c` with a detached child first (`setsid -f`: a new
    /// session, outside the command's process group) that inherits both
    /// pipes and sleeps 30 s, then `script`; returns what `run` gave and
    /// how long it took, and kills the detached child.
    fn with_detached_child(
        script: &str,
        timeout_ms: u64,
    ) -> (Result<Vec<u8>, ExecError>, Duration) {
        let pidfile = std::env::temp_dir().join(format!(
            "toolpin-exec-detached-{}-{}",
            std::process::id(),
            script.len()
        ));
        let _ = std::fs::remove_file(&pidfile);
        let detach = format!(
            "setsid -f sh -c 'echo $$ > {}; exec sleep 30'",
            pidfile.display()
        );
        let start = Instant::now();
        let result = sh(&format!("{detach}; {script}"), timeout_ms);
        let took = start.elapsed();
        // No one's to wait for, but the test's to end.
        for _ in 0..500 {
            let pid = std::fs::read_to_string(&pidfile).ok();
            if let Some(pid) = pid.and_then(|p| p.trim().parse::<i32>().ok()) {
                // SAFETY: kill(2) on the pid the test's own child wrote.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_file(&pidfile);
        (result, took)
    }

    #[test]
    fn a_detached_child_holding_the_pipes_is_not_waited_for() {
        // The command exits at once: what it wrote is read, and its
        // detached child, which holds the pipes for 30 s, is not waited for.
        let (result, took) = with_detached_child("echo '[]'; echo bye >&2", 20_000);
        assert_eq!(result.expect("runs"), b"[]\n");
        assert!(took < Duration::from_secs(5), "{took:?}");
        // A failure still shows the end of stderr.
        let (result, took) = with_detached_child("echo 'it broke' >&2; exit 3", 20_000);
        let message = result.expect_err("fails").to_string();
        assert!(
            message.ends_with("exited with status 3; stderr: it broke"),
            "{message}"
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_timeout_is_not_extended_by_a_detached_child() {
        let (result, took) = with_detached_child("echo waiting >&2; sleep 30", 500);
        let message = result.expect_err("times out").to_string();
        assert!(
            message.ends_with("did not finish within 500ms and was killed; stderr: waiting"),
            "{message}"
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn output_past_the_limit_stops_the_command() {
        let start = Instant::now();
        // `yes` would print forever.
        let err = sh("yes", 60_000).expect_err("too much");
        assert!(matches!(err, ExecError::TooMuchOutput { .. }), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );
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
