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

use super::client::{invalid_json, limit_of, too_large, Frame, Incoming, Limit};
use super::{McpError, Phase};

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
    /// Starts the server; its stdout is read into `tx`, each line at most
    /// `limit` bytes (and never more than [`MAX_LINE`]).
    pub async fn spawn(
        spec: &StdioSpec,
        tx: mpsc::UnboundedSender<Incoming>,
        limit: Limit,
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
                    runtime.spawn(read_stdout(pipe, tx, flag, limit));
                }
                None => {
                    tokio::spawn(read_stdout(out, tx, flag, limit));
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
        let mut buf = Vec::with_capacity(512 * messages.len());
        for m in messages {
            match m {
                Frame::Json(v) => serde_json::to_writer(&mut buf, v).map_err(|e| e.to_string())?,
                Frame::Text(t) => buf.extend_from_slice(t.as_bytes()),
            }
            buf.push(b'\n');
        }
        self.write(&buf).await
    }

    pub async fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.write(&line).await
    }

    /// Writes whole lines to the server's stdin and flushes it.
    async fn write(&mut self, lines: &[u8]) -> Result<(), String> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("the server's stdin is closed".into());
        };
        stdin
            .write_all(lines)
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
        toolpin_manifest::text::stderr_tail(&lines)
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
    limit: Limit,
) {
    let mut reader = BufReader::with_capacity(64 << 10, out);
    let mut line = Vec::new();
    loop {
        match next_line(&mut reader, &mut line, &limit).await {
            Ok(Line::End) => {
                let _ = tx.send(Incoming::Closed("the server closed its stdout".into()));
                return;
            }
            Ok(Line::TooLong) => {
                let _ = tx.send(Incoming::Closed(format!(
                    "the server sent a line longer than {MAX_LINE} bytes"
                )));
                return;
            }
            // Over the client's limit: skipped unread (the memory it took
            // is the limit, whatever the server sent), and the request it
            // answers told so.
            Ok(Line::Skipped { cap, id }) => {
                if tx.send(Incoming::Message(too_large(id, cap))).is_err() {
                    return;
                }
            }
            Ok(Line::Read) => {
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

/// What [`next_line`] read.
enum Line {
    /// A line (its newline included, when it had one).
    Read,
    /// The end of the stream, nothing before it.
    End,
    /// A line longer than [`MAX_LINE`].
    TooLong,
    /// A line longer than the client's limit `cap`, read and dropped as it
    /// arrived; `id` is that of the answer it held, or `null`.
    Skipped { cap: usize, id: Value },
}

/// How much of a skipped line's start and end is kept to find its id.
const ID_WINDOW: usize = 512;

/// Reads the next line into `line`, chunk by chunk as the buffer fills,
/// checking it against the client's limit as it grows: the limit in force
/// when the line arrives counts, not the one when the read began (the
/// reader waits for a call's answer before the call is made). A line over
/// it is dropped as it arrives, keeping only its start and end to find the
/// id of the answer it held: at the top level of its start
/// (`{"jsonrpc":"2.0","id":7,"result":…`, as most servers write), or of its
/// end (`…,"jsonrpc":"2.0","id":7}`).
async fn next_line<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
    limit: &Limit,
) -> std::io::Result<Line> {
    line.clear();
    // A large line's buffer is not kept for the next, small ones.
    if line.capacity() > 1 << 20 {
        line.shrink_to(64 << 10);
    }
    // Start and end of a line being skipped.
    let mut skipping: Option<(Vec<u8>, Vec<u8>, usize)> = None;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match skipping {
                Some((head, tail, cap)) => Line::Skipped {
                    cap,
                    id: answer_id(&head, &tail),
                },
                None if line.is_empty() => Line::End,
                None => Line::Read,
            });
        }
        let (taken, ended) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        match &mut skipping {
            Some((_, tail, _)) => {
                tail.extend_from_slice(&buf[taken.saturating_sub(ID_WINDOW)..taken]);
                tail.drain(..tail.len().saturating_sub(ID_WINDOW));
            }
            None => line.extend_from_slice(&buf[..taken]),
        }
        reader.consume(taken);
        if skipping.is_none() {
            let cap = limit_of(limit, MAX_LINE);
            if line.len() - usize::from(line.ends_with(b"\n")) > cap {
                if cap >= MAX_LINE {
                    return Ok(Line::TooLong);
                }
                let head = line[..line.len().min(ID_WINDOW)].to_vec();
                let tail = line[line.len().saturating_sub(ID_WINDOW)..].to_vec();
                line.clear();
                line.shrink_to(64 << 10);
                skipping = Some((head, tail, cap));
            }
        }
        if ended {
            return Ok(match skipping {
                Some((head, tail, cap)) => Line::Skipped {
                    cap,
                    id: answer_id(&head, &tail),
                },
                None => Line::Read,
            });
        }
    }
}

/// The id of the answer a skipped line held, from its start and end.
fn answer_id(head: &[u8], tail: &[u8]) -> Value {
    leading_id(head)
        .or_else(|| trailing_id(tail))
        .unwrap_or(Value::Null)
}

/// The id member at the top level of the start of a JSON object.
fn leading_id(text: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                let key = text.get(start..i)?;
                i += 1;
                if depth == 1 && key == b"id" {
                    let rest = text.get(i..)?.trim_ascii_start();
                    if let Some(value) = rest.strip_prefix(b":") {
                        return scalar(value).map(|(v, _)| v);
                    }
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The id member that ends a JSON object (`…,"id":7}`).
fn trailing_id(text: &[u8]) -> Option<Value> {
    let text = text.trim_ascii_end().strip_suffix(b"}")?;
    let at = text.windows(4).rposition(|w| w == b"\"id\"")?;
    let before = text[..at].trim_ascii_end();
    if !(before.ends_with(b",") || before.ends_with(b"{")) {
        return None;
    }
    let rest = text[at + 4..].trim_ascii_start().strip_prefix(b":")?;
    let (id, used) = scalar(rest)?;
    rest[used..].trim_ascii().is_empty().then_some(id)
}

/// A number or string at the start of `text`, and the bytes it took.
fn scalar(text: &[u8]) -> Option<(Value, usize)> {
    let text_start = text.len() - text.trim_ascii_start().len();
    let mut values = serde_json::Deserializer::from_slice(&text[text_start..]).into_iter::<Value>();
    let value = values.next()?.ok()?;
    let used = text_start + values.byte_offset();
    matches!(value, Value::Number(_) | Value::String(_)).then_some((value, used))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn the_id_of_a_skipped_answer_is_read_from_its_start_or_its_end() {
        // At the top level of its start, as the Python SDK writes it.
        let head = br#"{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{"id":"ord-1""#;
        assert_eq!(leading_id(head), Some(Value::from(7)));
        // A nested "id" first, the answer's own after it.
        let head = br#"{"result":{"structuredContent":{"id":"ord-1","n":[{"id":2}]}},"id":"a\"b","#;
        assert_eq!(leading_id(head), Some(Value::from("a\"b")));
        // Nothing at the top level yet: from its end, as a TypeScript
        // server writes it.
        let head = br#"{"result":{"content":[{"type":"text","text":"{\"id\":3"#;
        assert_eq!(leading_id(head), None);
        assert_eq!(
            trailing_id(br#"x"}]},"jsonrpc":"2.0","id":12}"#),
            Some(Value::from(12))
        );
        assert_eq!(
            trailing_id(b"\"n\":1},\"id\" : 4 }\r\n"),
            Some(Value::from(4))
        );
        // A nested object that ends with an id is not the answer's.
        assert_eq!(trailing_id(br#"{"id":5}}"#), None);
        assert_eq!(trailing_id(br#"...,"jsonrpc":"2.0"}"#), None);
        assert_eq!(answer_id(b"{\"result\":", b"}"), Value::Null);
    }

    /// Lines through [`next_line`] with the limit `limit` in force.
    async fn lines(input: &[u8], limit: usize) -> Vec<String> {
        let limit = Limit::new(AtomicUsize::new(limit));
        let mut reader = BufReader::with_capacity(16, input);
        let mut line = Vec::new();
        let mut out = Vec::new();
        loop {
            match next_line(&mut reader, &mut line, &limit)
                .await
                .expect("read")
            {
                Line::End => return out,
                Line::Read => out.push(String::from_utf8_lossy(&line).into_owned()),
                Line::TooLong => out.push("too long".into()),
                Line::Skipped { cap, id } => out.push(format!("skipped over {cap}: {id}")),
            }
        }
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_and_the_next_one_read() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{\"pad\":\"{}\"}}}}\n",
            "x".repeat(1000)
        );
        let tail_id = format!("{{\"result\":\"{}\",\"id\":4}}\n", "y".repeat(1000));
        let input = format!("{{\"id\":1}}\n{big}{tail_id}{{\"id\":5}}\nlast");
        assert_eq!(
            lines(input.as_bytes(), 100).await,
            [
                "{\"id\":1}\n",
                "skipped over 100: 3",
                "skipped over 100: 4",
                "{\"id\":5}\n",
                "last"
            ]
        );
        // A line of exactly the limit, newline aside, is read.
        assert_eq!(lines(b"0123456789\n", 10).await, ["0123456789\n"]);
        assert_eq!(lines(b"0123456789A\n", 10).await, ["skipped over 10: null"]);
        // A line cut off by the end of the stream while skipped.
        assert_eq!(
            lines(format!("{{\"id\":9,{}", "z".repeat(300)).as_bytes(), 100).await,
            ["skipped over 100: 9"]
        );
        // Without a limit of its own, the transport's cap stands.
        assert_eq!(lines(big.as_bytes(), usize::MAX).await, [big]);
    }
}
