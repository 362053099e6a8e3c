//! toolpin: pin the tool definitions an agent is handed.
//!
//! Exit codes: 0 clean, 1 drift, 2 error (one line on stderr).
//!
//! `main` parses the arguments (`cli.rs`) and hands them to
//! `commands::run`, which dispatches to one module per command.

use toolpin_approve as approve;
mod cli;
mod commands;
mod config;
mod conversation;
mod error;
use toolpin_evals as evals;

use std::process::ExitCode;

use clap::Parser;

use crate::commands::Outcome;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if commands::version::asked(&args) {
        println!("{}", commands::version::document());
        return ExitCode::SUCCESS;
    }
    let cli = cli::Cli::parse();
    let code = match commands::run(&cli) {
        Ok(Outcome::Clean) => ExitCode::SUCCESS,
        Ok(Outcome::Drift) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    };
    if std::env::var_os("TOOLPIN_RUSAGE").is_some() {
        report_own_usage();
    }
    code
}

/// For benchmarks (docs/performance.md): toolpin's own CPU time and peak
/// RSS, without the servers it started.
fn report_own_usage() {
    // SAFETY: getrusage fills the struct it is given; zeroed is a valid
    // starting value for this plain C struct.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return;
        }
        usage
    };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    eprintln!(
        "rusage: user_ms={:.1} sys_ms={:.1} max_rss_kib={}",
        ms(usage.ru_utime),
        ms(usage.ru_stime),
        usage.ru_maxrss
    );
}
