//! The cheapest stdio relay there is, as a reference row for
//! scripts/bench-proxy: it starts COMMAND and copies bytes both ways with one
//! blocking thread per direction, parsing nothing. Whatever throughput it
//! loses against a direct connection is the cost of one more process and two
//! more pipe hops on the machine, which no MCP proxy can avoid.
//!
//! ```text
//! bare_relay COMMAND ARGS...
//! ```

use std::io::{Read, Write};
use std::process::{Command, Stdio};

fn copy(mut from: impl Read, mut to: impl Write) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return;
                }
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, argv)) = args.split_first() else {
        eprintln!("usage: bare_relay COMMAND ARGS...");
        std::process::exit(2);
    };
    let mut child = match Command::new(program)
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bare_relay: cannot start {program}: {e}");
            std::process::exit(2);
        }
    };
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        std::process::exit(2);
    };
    let up = std::thread::spawn(move || copy(std::io::stdin().lock(), child_in));
    copy(child_out, std::io::stdout().lock());
    let _ = up.join();
    let _ = child.kill();
}
