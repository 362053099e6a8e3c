//! The stdio transport: newline-delimited JSON-RPC on the child's stdin and
//! stdout. stderr is kept apart (its tail explains failures) and never mixed
//! into data. The child runs in its own process group and is always reaped.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use super::client::{invalid_json, Frame, Incoming};
use super::{excerpt, McpError, Phase};

/// Longest line accepted from a server (a whole tools/list page is one line).
pub const MAX_LINE: usize = 256 << 20;
/// stderr lines kept for error messages.
const STDERR_LINES: usize = 20;

/// How to start a stdio server.
#[derive(Clone, Debug, Default)]
pub struct StdioSpec {
    pub command: Vec<String>,
    /// Added to the inherited environment (values already expanded).
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    /// The runtime that reads the server's stdout, when not the current
    /// one: a relay reads answers on a thread of their own.
    pub reader: Option<tokio::runtime::Handle>,
}

pub struct StdioTransport {
    child: Child,
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Lines go out as text, unparsed (a relay reads them).
    as_text: Arc<AtomicBool>,
}

impl StdioTransport {
    pub async fn spawn(
        spec: &StdioSpec,
        tx: mpsc::UnboundedSender<Incoming>,
    ) -> Result<Self, McpError> {
        let Some((program, args)) = spec.command.split_first() else {
            return Err(McpError::new(Phase::Connect, "the command is empty"));
        };
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(&spec.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = &spec.cwd {
            cmd.current_dir(cwd);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| McpError::new(Phase::Connect, format!("cannot start `{program}`: {e}")))?;
        let stdin = child.stdin.take();
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_LINES)));
        let as_text = Arc::new(AtomicBool::new(false));
        if let Some(out) = child.stdout.take() {
            let flag = Arc::clone(&as_text);
            match &spec.reader {
                // The pipe is registered with the reader's runtime, so
                // that its readiness wakes that thread, not this one.
                Some(runtime) => {
                    let pipe = out.into_owned_fd().and_then(|fd| {
                        let _context = runtime.enter();
                        tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
                    });
                    let pipe = pipe.map_err(|e| {
                        McpError::new(
                            Phase::Connect,
                            format!("cannot read `{program}`'s stdout: {e}"),
                        )
                    })?;
                    runtime.spawn(read_stdout(pipe, tx, flag));
                }
                None => {
                    tokio::spawn(read_stdout(out, tx, flag));
                }
            }
        }
        let stderr_reader = child
            .stderr
            .take()
            .map(|err| tokio::spawn(read_stderr(err, Arc::clone(&stderr))));
        Ok(Self {
            stderr_reader,
            child,
            stdin,
            stderr,
            as_text,
        })
    }

    /// From now on, lines are handed over as [`Incoming::Text`].
    pub fn relay_text(&self) {
        self.as_text.store(true, Ordering::Relaxed);
    }

    /// Sends several messages in one write (one line each).
    pub async fn send_all(&mut self, messages: &[Frame]) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("the server's stdin is closed".into());
        };
        let mut buf = Vec::with_capacity(512 * messages.len());
        for m in messages {
            match m {
                Frame::Json(v) => serde_json::to_writer(&mut buf, v).map_err(|e| e.to_string())?,
                Frame::Text(t) => buf.extend_from_slice(t.as_bytes()),
            }
            buf.push(b'\n');
        }
        stdin
            .write_all(&buf)
            .await
            .map_err(|e| format!("cannot write to the server: {e}"))?;
        stdin
            .flush()
            .await
            .map_err(|e| format!("cannot write to the server: {e}"))
    }

    pub async fn send(&mut self, message: &Value) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("the server's stdin is closed".into());
        };
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        stdin
            .write_all(&line)
            .await
            .map_err(|e| format!("cannot write to the server: {e}"))?;
        stdin
            .flush()
            .await
            .map_err(|e| format!("cannot write to the server: {e}"))
    }

    /// The server's process id (its process group leader), while it runs.
    pub fn process_id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The last lines of stderr, joined for a one-line message.
    pub fn stderr_tail(&self) -> String {
        let lines = self
            .stderr
            .lock()
            .map(|l| l.iter().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        let tail = &lines[lines.len().saturating_sub(3)..];
        tail.iter()
            .map(|l| excerpt(l, 300))
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// How the process ended, waiting up to `patience` for it: a server's
    /// stdout closes (or its stdin breaks) a moment before the process is
    /// gone. Also lets the stderr reader catch up, so the tail holds the
    /// last words.
    pub async fn exit_status(&mut self, patience: Duration) -> Option<String> {
        let status = match tokio::time::timeout(patience, self.child.wait()).await {
            Ok(Ok(status)) => status,
            _ => return None,
        };
        if let Some(mut reader) = self.stderr_reader.take() {
            // A finished reader is dropped: its handle must not be polled
            // again.
            if tokio::time::timeout(patience, &mut reader).await.is_err() {
                self.stderr_reader = Some(reader);
            }
        }
        Some(match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => "was killed by a signal".to_string(),
        })
    }

    /// Closes stdin (the polite way to end a stdio server), waits briefly,
    /// then kills the process group; the child is always reaped.
    pub async fn close(&mut self, grace: Duration) {
        self.stdin.take();
        // Taken now: once the child is reaped, `id()` is None, and the
        // group it led (process_group(0)) must still be taken down. Its
        // id is not reused while any member is alive.
        let group = self.child.id().and_then(|p| i32::try_from(p).ok());
        let exited = tokio::time::timeout(grace, self.child.wait()).await.is_ok();
        if let Some(pid) = group {
            // SAFETY: kill(2) has no memory effects; the negative pid is
            // the group the child leads. After a clean exit this takes
            // down anything the server left in it (a shell's background
            // job); after the grace period, the server too.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        if !exited {
            let _ = self.child.wait().await;
        }
    }
}

impl Drop for StdioTransport {
    /// A capture abandoned midway (another server failed, a deadline
    /// passed) still takes the server and everything it started down;
    /// tokio reaps the child.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
                // SAFETY: as in `close`.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
        }
    }
}

async fn read_stdout(
    out: impl tokio::io::AsyncRead + Unpin,
    tx: mpsc::UnboundedSender<Incoming>,
    as_text: Arc<AtomicBool>,
) {
    let mut reader = BufReader::with_capacity(64 << 10, out);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => {
                let _ = tx.send(Incoming::Closed("the server closed its stdout".into()));
                return;
            }
            Ok(_) if line.len() > MAX_LINE => {
                let _ = tx.send(Incoming::Closed(format!(
                    "the server sent a line longer than {MAX_LINE} bytes"
                )));
                return;
            }
            Ok(_) => {
                let text = trim_line(&line);
                if text.is_empty() {
                    continue;
                }
                let parsed = if as_text.load(Ordering::Relaxed) {
                    match std::str::from_utf8(text) {
                        Ok(t) => Ok(Incoming::Text(t.to_string())),
                        // The parser words a bad byte the same way.
                        Err(_) => serde_json::from_slice::<Value>(text).map(Incoming::Message),
                    }
                } else {
                    serde_json::from_slice::<Value>(text).map(Incoming::Message)
                };
                match parsed {
                    Ok(message) => {
                        if tx.send(message).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Incoming::Closed(invalid_json(text, &e)));
                        return;
                    }
                }
            }
            Err(e) => {
                let _ = tx.send(Incoming::Closed(format!(
                    "cannot read the server's stdout: {e}"
                )));
                return;
            }
        }
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    let mut start = 0;
    while start < end && matches!(line[start], b' ' | b'\t') {
        start += 1;
    }
    &line[start..end]
}

async fn read_stderr(err: tokio::process::ChildStderr, keep: Arc<Mutex<VecDeque<String>>>) {
    // Bytes, not `lines()`: a non-UTF-8 line must not stop the draining, or
    // the server would block writing to a full pipe.
    let mut reader = BufReader::new(err);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(64 << 10)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let line = String::from_utf8_lossy(&buf).trim().to_string();
        if line.is_empty() {
            continue;
        }
        if let Ok(mut keep) = keep.lock() {
            if keep.len() == STDERR_LINES {
                keep.pop_front();
            }
            keep.push_back(line);
        }
    }
}
