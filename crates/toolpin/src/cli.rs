//! The command line: clap definitions only. `main.rs` parses, and
//! `commands::run` dispatches.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use toolpin_capture::Format;

use crate::approve;
use crate::commands::report_target::ReportTarget;
use toolpin_report::Report;

#[derive(Parser)]
#[command(
    name = "toolpin",
    version,
    about = "Pin the tool definitions your agent is handed, and fail CI when they drift",
    long_about = "toolpin captures the tool definitions an agent receives (live MCP servers, \
OpenAI, Anthropic and Gemini tool arrays, OpenAPI documents, or a command that prints them), \
writes them to a lockfile with fingerprints, reports every unreviewed change, and can serve the \
pinned catalog to the agent (toolpin proxy).\n\n\
Exit codes: 0 no drift, 1 drift, 2 error.",
    after_help = "Start with `toolpin lock`, commit toolpin.lock, and run `toolpin check` in CI.\n\
`toolpin --version --json` prints the version, git commit, target, build profile and the \
SHA-256 of the running executable."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// When to colour output [env: NO_COLOR disables colour in auto mode]
    #[arg(long, global = true, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Print nothing but errors and reports
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args)]
pub struct ConfigArgs {
    /// The configuration file
    #[arg(short, long, default_value = "toolpin.toml", value_name = "PATH")]
    pub config: PathBuf,
    /// Use [env.NAME] overrides and the lockfile toolpin.NAME.lock
    #[arg(long, value_name = "NAME")]
    pub env: Option<String>,
    /// The lockfile to write or check [default: beside the config file]
    #[arg(long, value_name = "PATH")]
    pub lockfile: Option<PathBuf>,
    /// How many servers to capture at once
    #[arg(short, long, default_value_t = 16, value_name = "N", value_parser = parse_jobs)]
    pub jobs: usize,
    /// Capture every server and report every failure instead of stopping at the first
    #[arg(long)]
    pub keep_going: bool,
}

/// `--jobs`: at least one server at a time.
fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("--jobs must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl ConfigArgs {
    pub fn capture_options(&self, quiet: bool) -> toolpin_capture::servers::Options {
        toolpin_capture::servers::Options {
            jobs: self.jobs,
            keep_going: self.keep_going,
            progress: !quiet,
        }
    }
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Report format, optionally written to a file: text, json, markdown,
    /// sarif, junit, github or csv, as FORMAT or FORMAT=PATH; repeatable
    /// (`--format text --format sarif=drift.sarif`). Default: text to stdout
    #[arg(long, value_name = "FORMAT[=PATH]", value_parser = ReportTarget::parse)]
    pub format: Vec<ReportTarget>,
    /// Show whole before/after values in the text report
    #[arg(short, long)]
    pub verbose: bool,
    /// Print the eval plan instead of the report: the evals ([evals] and
    /// [routing] in toolpin.toml) the failing findings ask to re-run, each
    /// with the findings that pull it in. With --format json, the plan
    /// document (docs/evals.md)
    #[arg(long)]
    pub plan: bool,
}

/// `toolpin watch`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["once", "every"])))]
pub struct WatchArgs {
    /// Run once and exit (for cron, a Kubernetes CronJob or a scheduled CI job)
    #[arg(long)]
    pub once: bool,
    /// Run every INTERVAL (90s, 15m, 1h, 1d), moved by up to ±10 % each time, until SIGTERM or SIGINT
    #[arg(long, value_name = "INTERVAL", value_parser = toolpin_ops::schedule::parse_interval)]
    pub every: Option<std::time::Duration>,
    /// The configuration file
    #[arg(short, long, default_value = "toolpin.toml", value_name = "PATH")]
    pub config: PathBuf,
    /// Check this environment ([env.NAME], lockfile toolpin.NAME.lock); repeatable [default: the default environment]
    #[arg(long = "env", value_name = "NAME")]
    pub envs: Vec<String>,
    /// How many servers to capture at once
    #[arg(short, long, default_value_t = 16, value_name = "N", value_parser = parse_jobs)]
    pub jobs: usize,
}

/// `toolpin history`.
#[derive(clap::Args)]
pub struct HistoryArgs {
    /// One row per vendor, server or tool (and period)
    #[arg(long = "by", value_enum, default_value_t = HistoryBy::Vendor)]
    pub by: HistoryBy,
    /// Calendar periods (UTC) of the events' first sighting
    #[arg(long, value_enum, default_value_t = HistoryPeriodArg::Month)]
    pub period: HistoryPeriodArg,
    /// Only this vendor's events (the server's `vendor` key, else its serverInfo.name)
    #[arg(long, value_name = "V")]
    pub vendor: Option<String>,
    /// Only this server's events
    #[arg(long, value_name = "S")]
    pub server: Option<String>,
    /// Only events of tools of this name (as in the lockfile; with --server for one server's)
    #[arg(long, value_name = "T")]
    pub tool: Option<String>,
    /// Only events of this environment (`default` for the default one)
    #[arg(long = "env", value_name = "E")]
    pub env: Option<String>,
    /// Only events first seen on or after this day (UTC)
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub since: Option<String>,
    /// Only events first seen on or before this day (UTC, the whole day)
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub until: Option<String>,
    /// Output format
    #[arg(long, default_value = "text", value_parser = format_of(Report::History))]
    pub format: &'static toolpin_report::Format,
    /// Write to FILE (atomically) instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The configuration file (its [ledger] says where the ledger is)
    #[arg(short, long, default_value = "toolpin.toml", value_name = "PATH")]
    pub config: PathBuf,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum HistoryBy {
    Vendor,
    Server,
    Tool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum HistoryPeriodArg {
    Month,
    Quarter,
}

/// `toolpin usage`.
#[derive(Subcommand)]
pub enum UsageCommand {
    /// Read span files (OTLP/JSON, as the Collector's file exporter writes them) or the proxy's event log into the usage store
    ///
    /// Each file's format is told from its first line. Every file is read
    /// before the store is opened, so a missing file stores nothing. What
    /// could not be used (malformed lines, spans without a tool name, clock
    /// skew, unknown fingerprints) is counted, with examples, on stderr.
    Ingest(UsageIngestArgs),
    /// Receive spans over OTLP/HTTP (POST /v1/traces, protobuf or JSON) and merge them into the usage store
    ///
    /// Point an OpenTelemetry SDK or Collector at http://ADDR (the
    /// OTEL_EXPORTER_OTLP_ENDPOINT). What arrives is merged into the store
    /// every --flush-every; while the store cannot be written it is kept and
    /// retried, up to --max-buffer (past it, exporters are answered 503 and
    /// send again later). Bodies, names and connections are bounded too
    /// (docs/usage.md, "Limits of usage serve"). SIGTERM or SIGINT stores
    /// the rest and exits. No TLS and no authentication: listen on
    /// loopback, or behind a Collector.
    Serve(UsageServeArgs),
    /// Compare tool usage before and after every catalog change, and day over day (exit 1 when an alarm fires)
    ///
    /// Reads the usage store, or FILE… directly (no ingest step: for
    /// one-off analysis in CI). The pinned catalogs come from the lockfile
    /// and its git history, so every alarm names the lockfile change
    /// between its two catalogs. Alarms are recorded in the ledger as
    /// usage-shift events and sent to the [notify.NAME] sinks routing
    /// names (unless --no-record). Thresholds: [usage.report] in
    /// toolpin.toml. Exit codes: 0 no alarm, 1 an alarm fired, 2 an error.
    Report(UsageReportArgs),
    /// Roll hours older than --hourly-days into days, and delete rows older than --retain-days
    Compact(UsageCompactArgs),
}

/// Where the usage store is.
#[derive(clap::Args)]
pub struct UsageStoreArgs {
    /// The configuration file ([ledger] is the default store; [usage.report] holds the thresholds)
    #[arg(short, long, default_value = "toolpin.toml", value_name = "PATH")]
    pub config: PathBuf,
    /// The usage store: a SQLite file or a postgres:// URL [default: the ledger, else toolpin.usage.db beside the configuration]
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<String>,
}

/// How spans are read.
#[derive(clap::Args)]
pub struct UsageReadArgs {
    /// The environment of spans that name none (deployment.environment.name)
    #[arg(long = "env", value_name = "NAME", default_value = "")]
    pub environment: String,
    /// The span or resource attribute that names the tenant
    #[arg(long, value_name = "KEY", default_value = "tenant.id")]
    pub tenant_key: String,
}

/// `toolpin usage ingest`.
#[derive(clap::Args)]
pub struct UsageIngestArgs {
    /// OTLP/JSON span files or proxy event logs
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub read: UsageReadArgs,
    #[command(flatten)]
    pub store: UsageStoreArgs,
}

/// `toolpin usage serve`.
#[derive(clap::Args)]
pub struct UsageServeArgs {
    /// Where to listen, e.g. 127.0.0.1:4318
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// How often what arrived is merged into the store (at least 1s)
    #[arg(long, value_name = "INTERVAL", default_value = "10s", value_parser = parse_flush_interval)]
    pub flush_every: std::time::Duration,
    /// Largest export body, as sent and once decompressed; also the most its tool calls may take once decoded (past either, 413) [default: 16MiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_body: Option<usize>,
    /// Most aggregates held until they are stored (between flushes, and while the store is down); past it exporters get 503 with Retry-After [default: 256MiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_buffer: Option<usize>,
    /// Distinct environments, tenants, agents, catalogs and tools held until stored, each; calls naming more are counted under "(other)" [default: 10000]
    #[arg(long, value_name = "N", value_parser = parse_at_least_one)]
    pub max_names: Option<usize>,
    /// Connections held at once; past it the one idle longest is closed [default: 128]
    #[arg(long, value_name = "N", value_parser = parse_at_least_one)]
    pub max_connections: Option<usize>,
    /// Time for a body to arrive in full after its headers (past it, 408 and the connection is closed) [default: 30s]
    #[arg(long, value_name = "DURATION", value_parser = parse_body_timeout)]
    pub body_timeout: Option<std::time::Duration>,
    /// A connection with no request in flight for this long is closed [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = parse_connection_idle)]
    pub connection_idle: Option<std::time::Duration>,
    #[command(flatten)]
    pub read: UsageReadArgs,
    #[command(flatten)]
    pub store: UsageStoreArgs,
}

/// A size in bytes: a whole number, optionally with `KiB`, `MiB` or `GiB`
/// (`16MiB`), at least 1 KiB.
fn parse_size(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let bad = || format!("{text:?} is not a size; write bytes or KiB, MiB, GiB (\"16MiB\")");
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let n: usize = trimmed[..split].parse().map_err(|_| bad())?;
    let scale: usize = match trimmed[split..].trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(bad()),
    };
    let bytes = n.checked_mul(scale).ok_or_else(bad)?;
    if bytes < 1 << 10 {
        return Err(format!("{text:?} is too small; give at least 1KiB"));
    }
    Ok(bytes)
}

/// A count of at least one.
fn parse_at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{text:?} is not a whole number")),
    }
}

fn parse_body_timeout(text: &str) -> Result<std::time::Duration, String> {
    toolpin_config::parse_timeout(
        "--body-timeout",
        &toolpin_config::TimeoutValue::Text(text.to_string()),
    )
}

fn parse_connection_idle(text: &str) -> Result<std::time::Duration, String> {
    toolpin_config::parse_timeout(
        "--connection-idle",
        &toolpin_config::TimeoutValue::Text(text.to_string()),
    )
}

/// `--flush-every`: whole seconds, minutes or hours (`5s`, `1m`), at
/// least a second (`watch`'s intervals start at 10 s; a flush may be
/// more frequent).
fn parse_flush_interval(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "{text:?} is not an interval; write whole seconds, minutes or hours (\"10s\", \"1m\")"
        )
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let n: u64 = text[..split].parse().map_err(|_| bad())?;
    let seconds = match &text[split..] {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3_600),
        _ => return Err(bad()),
    };
    if seconds == 0 {
        return Err("--flush-every must be at least 1s".into());
    }
    Ok(std::time::Duration::from_secs(seconds))
}

/// `toolpin usage report`.
#[derive(clap::Args)]
pub struct UsageReportArgs {
    /// Read these span or event files instead of the store (nothing is stored)
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A lockfile whose pinned catalogs (and committed versions) judge the calls; repeatable [default: the lockfile of every environment beside the configuration]
    #[arg(long = "lockfile", value_name = "PATH")]
    pub lockfiles: Vec<PathBuf>,
    /// How many committed versions of each lockfile to read from git
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub history: usize,
    /// How many days of usage to read, up to now
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3660))]
    pub days: u64,
    /// Only this environment's calls
    #[arg(long = "only-env", value_name = "NAME")]
    pub only_env: Option<String>,
    /// Output format
    #[arg(long, default_value = "text", value_parser = format_of(Report::Usage))]
    pub format: &'static toolpin_report::Format,
    /// Write to FILE (atomically) instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Record nothing in the ledger and notify nobody
    #[arg(long)]
    pub no_record: bool,
    #[command(flatten)]
    pub read: UsageReadArgs,
    #[command(flatten)]
    pub store: UsageStoreArgs,
}

/// `toolpin usage compact`.
#[derive(clap::Args)]
pub struct UsageCompactArgs {
    /// Keep hourly rows for this many days; older hours become one row per day
    #[arg(long, value_name = "N", default_value_t = 14)]
    pub hourly_days: u64,
    /// Delete rows older than this many days [default: keep everything]
    #[arg(long, value_name = "N")]
    pub retain_days: Option<u64>,
    #[command(flatten)]
    pub store: UsageStoreArgs,
}

/// `toolpin proxy`.
#[derive(clap::Args)]
pub struct ProxyArgs {
    /// Front only this server (repeatable) [default: every MCP server in toolpin.toml]
    #[arg(long = "server", value_name = "NAME")]
    pub servers: Vec<String>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8931)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// In stdio mode, serve Prometheus /metrics on ADDR (with --listen, /metrics is on the listener)
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// A Host header value to accept besides localhost, 127.0.0.1 and [::1] (repeatable)
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// An Origin to accept besides loopback origins (repeatable)
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Where drift events and refusals go, as JSON lines: a file, or - for stderr [default: [proxy] events, else stderr]
    #[arg(long, value_name = "PATH")]
    pub events: Option<String>,
    /// With --listen, the most HTTP sessions open at once; past it initialize gets 503 [default: [proxy] max_sessions, else 32]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: Option<u64>,
    /// With --listen (and --metrics-listen), the most connections held at once; past it the one idle longest is closed [default: [proxy] max_connections, else 512]
    #[arg(long, value_name = "N", value_parser = parse_at_least_one)]
    pub max_connections: Option<usize>,
    /// With --listen, the time for a request's body to arrive in full after its headers (past it, 408 and the connection is closed) [default: [proxy] body_timeout, else 30s]
    #[arg(long, value_name = "DURATION", value_parser = parse_body_timeout)]
    pub body_timeout: Option<std::time::Duration>,
    /// Skip the capture at start that compares upstream with the pin
    #[arg(long)]
    pub no_start_check: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Subcommand)]
pub enum Command {
    /// Write a toolpin.toml from the MCP servers your clients already use
    ///
    /// Reads the MCP configuration of Claude Desktop, Claude Code, Cursor, VS Code,
    /// Windsurf, Zed, Codex and Gemini CLI, in the current directory, in your home
    /// directory and in $XDG_CONFIG_HOME, %APPDATA% and $CODEX_HOME when set, and
    /// writes one commented [servers.NAME] table per server found.
    /// Secrets are never copied: literal values become ${VAR} references to export.
    Init(InitArgs),
    /// Capture every configured server and write the lockfile
    Lock {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Capture every configured server and list its tools, without writing anything
    // `ls` reads and writes no lockfile: --lockfile is accepted but not shown.
    #[command(mut_arg("lockfile", |a| a.hide(true)))]
    Ls {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Capture again and compare with the lockfile (exit 1 on drift)
    Check {
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Pin reviewed changes and record why, leaving every other tool pinned
    ///
    /// Captures again and writes the live definition of each selected change
    /// into the lockfile; every other tool keeps its pinned definition. Each
    /// acceptance appends a record (tool, rule ids, fingerprints before and
    /// after, reason, author, time, evidence digests) to the approvals log
    /// beside the lockfile: toolpin.approvals.jsonl for toolpin.lock.
    /// `toolpin lock` is the blunt tool that re-pins everything unrecorded.
    Accept {
        /// A change to accept, as server/tool (globs allowed), optionally
        /// with at least 8 hex digits of the reviewed fingerprint so that
        /// only that exact definition is accepted (orders/list_orders@9f2a1c4b);
        /// repeatable. Default: every change
        #[arg(long = "tool", value_name = "SERVER/TOOL[@FP]", value_parser = approve::Selector::parse)]
        tools: Vec<approve::Selector>,
        /// Acknowledge a tool name the agent emitted that `toolpin compare`
        /// reported as never seen: it is added to the seen-tools file beside
        /// the lockfile (toolpin.seen-tools.json) and recorded in the
        /// approvals log; nothing is captured. Repeatable
        #[arg(long = "seen-tool", value_name = "NAME", conflicts_with = "tools")]
        seen_tools: Vec<String>,
        /// Why the change is acceptable, for the approvals log
        #[arg(long)]
        reason: String,
        /// A file backing the decision, such as an eval report; its SHA-256
        /// is recorded. Repeatable
        #[arg(long, value_name = "FILE")]
        evidence: Vec<PathBuf>,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Review each change interactively: accept (with a reason), reject or skip
    ///
    /// Shows one changed tool at a time with its classified diff. Accepted
    /// tools are written into the lockfile; rejected ones stay pinned at
    /// their old definition. Every decision is appended to the approvals
    /// log beside the lockfile. In scripts, use `toolpin accept`.
    Review {
        /// Show whole before/after values
        #[arg(short, long)]
        verbose: bool,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Serve the pinned catalog to an agent and relay its calls upstream
    ///
    /// The agent's MCP configuration runs `toolpin proxy --server NAME` as its
    /// server command (stdio), or connects to `--listen ADDR` (Streamable HTTP,
    /// endpoint /mcp). The agent is handed the tools in the lockfile, reshaped
    /// by [facade."server/tool"] and without withdrawn ones; calls to anything
    /// else are refused; arguments are checked against the pinned schema; and
    /// everything else MCP carries is relayed both ways. Upstream drift, found
    /// at start and on tools/list_changed, is handled per severity by
    /// [proxy.on_drift] and never changes what is served.
    Proxy(ProxyArgs),
    /// Withdraw a tool from running proxies without a deploy
    ///
    /// Writes the flags file beside the lockfile (toolpin.flags.toml), which a
    /// running `toolpin proxy` reloads within a second (or on SIGHUP): the tool
    /// leaves tools/list, clients are told the list changed, and calls to it
    /// get a clear error.
    Withdraw {
        /// The pinned tool, as server/tool (the lockfile's names)
        tool: String,
        /// Why, for the flags file and the proxy's refusals
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Put a withdrawn tool back into running proxies
    Restore {
        /// The withdrawn tool, as server/tool
        tool: String,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Compare two lockfiles or tool files (exit 1 when they differ)
    Diff {
        /// The pinned side: a lockfile or a tool-definition file
        old: PathBuf,
        /// The new side: a lockfile or a tool-definition file
        new: PathBuf,
        /// Read both files as this format instead of detecting it
        #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
        input_format: Option<Format>,
        /// Take the [policy] from this configuration file [default: the default policy]
        #[arg(short, long, value_name = "PATH")]
        config: Option<PathBuf>,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Compare two sets of eval runs case by case: flips by tool, tool
    /// calls, new tool names, and whether the change is more than noise
    ///
    /// Each side is a result file or a directory of them: toolpin case
    /// records (JSON lines), pytest-json-report, JUnit XML, promptfoo
    /// output or Inspect AI logs, detected by content. Several files on a
    /// side are repeats. Exit 0 when there is no significant regression and
    /// no unacknowledged tool name, 1 otherwise, 2 on error. See
    /// docs/compare.md.
    Compare(CompareArgs),
    /// List the drift rules, or explain one
    Rules {
        /// A rule id, e.g. input-default-changed
        id: Option<String>,
        /// Print docs/rules.md (generated from the registry)
        #[arg(long, conflicts_with = "id")]
        markdown: bool,
    },
    /// Check on a schedule: record drift in the ledger and notify on-call once
    ///
    /// Each run checks every environment given (--env, repeatable; the
    /// default environment without one), records what drifted in the
    /// ledger ([ledger]), and sends each [notify.NAME] sink what it has not
    /// been sent: a new event, one that got more severe, one resolved.
    /// Undelivered notifications are retried with backoff on later runs.
    /// Exit codes as `check`: 0 clean, 1 drift that fails the policy, 2 an
    /// error. See docs/watch.md.
    Watch(WatchArgs),
    /// Drift history from the ledger: changes, silent drift, time to see and to resolve, review cost
    ///
    /// Reads the ledger ([ledger] in toolpin.toml; `check`, `accept` and
    /// `watch` write it) and counts its events per vendor, server or tool
    /// and per UTC month or quarter of their first sighting: drift by
    /// severity and by finding kind, silent drift (the tools changed while
    /// the server's reported version did not), the median and longest time
    /// from the last clean check to the first sighting and from the first
    /// sighting to resolution, events still open, approvals, rejections and
    /// eval re-runs. As text, JSON (docs/history.schema.json), CSV or
    /// Markdown. Exit codes: 0, or 2 for an error (no ledger yet, a bad
    /// date). See docs/history.md.
    History(HistoryArgs),
    /// Tool usage in production: selection and argument shifts at every catalog change
    ///
    /// `ingest` and `serve` fold tool-call spans (OTLP, the GenAI and MCP
    /// semantic conventions: the proxy's, or any framework's `execute_tool`
    /// spans) into hourly aggregates in the usage store: the ledger
    /// ([ledger]), else toolpin.usage.db beside toolpin.toml, or --store.
    /// `report` compares each agent's calls before and after every catalog
    /// fingerprint change (and day over day), tests selection shares, enum
    /// arguments, how often each parameter is supplied, error rates and p95
    /// latency, and names the lockfile change behind each alarm. See
    /// docs/usage.md.
    Usage {
        #[command(subcommand)]
        command: UsageCommand,
    },
    /// Contract tests: golden calls against the live tools, derived from the pin
    ///
    /// The contracts live in toolpin.contracts.toml beside the lockfile; see
    /// docs/contracts.md. `record` makes the calls and keeps what they did;
    /// `run` makes them again and reports what moved, as `check` reports.
    Contract {
        #[command(subcommand)]
        command: ContractCommand,
    },
    /// Run your evals against the pinned and the live catalog, side by side
    ///
    /// Evals are configured in [evals.NAME] tables of toolpin.toml, and
    /// [routing] maps re-run tags to them; see docs/evals.md.
    Evals {
        #[command(subcommand)]
        command: EvalsCommand,
    },
    /// Run an agent against a local model API and print the tools its framework sends
    ///
    /// Starts an endpoint on 127.0.0.1 that speaks OpenAI Chat Completions
    /// and Responses, Anthropic Messages and Gemini generateContent (with
    /// and without streaming), runs CMD with OPENAI_BASE_URL,
    /// ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL and the like pointed at
    /// it and dummy keys, answers every request with a final message that
    /// calls no tool, and prints the `tools` of the requests. Nothing else
    /// of a request (messages, system prompt, headers) is kept. The same
    /// recording as a `record = [...]` source in toolpin.toml; see
    /// docs/record.md. Exit 0, or 2 when the command fails, times out,
    /// makes no model request or sends one toolpin cannot read.
    Record(RecordArgs),
    /// Print the release record: the tools fingerprint, and the model and
    /// prompt from [release] when set
    Stamp {
        /// Print the record as JSON
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Print the catalog fingerprint of a lockfile or tool file
    Fingerprint {
        /// A lockfile or tool-definition file [default: the configured lockfile]
        path: Option<PathBuf>,
        /// Print catalog, per-server and per-tool fingerprints as JSON
        #[arg(long, conflicts_with = "release")]
        json: bool,
        /// Print the release-record line `tools <12 hex>`
        #[arg(long)]
        release: bool,
        /// Read PATH as this format instead of detecting it
        #[arg(long, value_name = "FORMAT", value_parser = format_parser())]
        input_format: Option<Format>,
        #[command(flatten)]
        config: ConfigArgs,
    },
}

/// `toolpin record`.
#[derive(clap::Args)]
pub struct RecordArgs {
    /// How to print the tools: native (the `tools` member byte for byte as
    /// sent), or normalized as mcp, openai-chat or anthropic
    #[arg(long, value_name = "FORMAT", default_value = "native", value_parser = record_output_parser())]
    pub format: toolpin_capture::record::output::Output,
    /// Several distinct tool arrays: distinct (one entry per array) or
    /// union (one document of all their tools)
    #[arg(long, value_name = "MERGE", default_value = "distinct", value_parser = toolpin_capture::record::Merge::parse)]
    pub merge: toolpin_capture::record::Merge,
    /// Kill the command and its process group after this long ("90s", "5m")
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_record_timeout)]
    pub timeout: std::time::Duration,
    /// The server name the entries of several arrays are labelled with
    /// (NAME#N:model, as a `record` source named NAME pins them)
    #[arg(long, value_name = "NAME", default_value = "agent")]
    pub name: String,
    /// Write the document to PATH (atomically) instead of stdout
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// The agent's command and its arguments, after `--`
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `--format` of `toolpin record`: native, or a format the exports write.
fn record_output_parser(
) -> impl clap::builder::TypedValueParser<Value = toolpin_capture::record::output::Output> {
    use clap::builder::TypedValueParser;
    use toolpin_capture::record::output::Output;
    let mut values = vec![clap::builder::PossibleValue::new("native")];
    values.extend(Format::WRITE.map(|f| clap::builder::PossibleValue::new(f.name())));
    clap::builder::PossibleValuesParser::new(values).try_map(|s| {
        if s == "native" {
            Ok(Output::Native)
        } else {
            s.parse::<Format>().map(Output::Export)
        }
    })
}

/// `--timeout` of `toolpin record`, as `timeout` is written in toolpin.toml.
fn parse_record_timeout(text: &str) -> Result<std::time::Duration, String> {
    toolpin_config::parse_timeout(
        "--timeout",
        &toolpin_config::TimeoutValue::Text(text.to_string()),
    )
}

/// `toolpin compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// The runs before the change (the pinned catalog): a result file or a
    /// directory of them
    #[arg(value_name = "BEFORE")]
    pub before_path: PathBuf,
    /// The runs after the change (the live catalog)
    #[arg(value_name = "AFTER")]
    pub after_path: PathBuf,
    /// More runs before the change: repeats (repeatable)
    #[arg(long, value_name = "PATH")]
    pub before: Vec<PathBuf>,
    /// More runs after the change: repeats (repeatable)
    #[arg(long, value_name = "PATH")]
    pub after: Vec<PathBuf>,
    /// Runs of the unchanged (pinned) catalog again: the A/A baseline of
    /// how much runs move with no change at all (repeatable)
    #[arg(long, value_name = "PATH")]
    pub aa: Vec<PathBuf>,
    /// The two catalogs the runs used (lockfiles or tool files): flips are
    /// joined with the drift between them, and a tool name in neither is
    /// reported as made up
    #[arg(long, num_args = 2, value_names = ["PINNED", "LIVE"])]
    pub catalogs: Vec<PathBuf>,
    /// Read every result file as this format: records, pytest-json, junit,
    /// promptfoo or inspect [default: detected by content]
    #[arg(long, value_name = "FORMAT")]
    pub input_format: Option<String>,
    /// The lockfile whose seen-tools file (toolpin.seen-tools.json beside
    /// it) lists the tool names already acknowledged
    #[arg(long, value_name = "PATH", default_value = "toolpin.lock")]
    pub lockfile: PathBuf,
    /// The seen-tools file itself [default: beside --lockfile]
    #[arg(long, value_name = "PATH")]
    pub seen: Option<PathBuf>,
    /// Seed of the bootstrap, so that a report is reproducible
    #[arg(long, value_name = "N", default_value_t = toolpin_evals::compare::stats::DEFAULT_SEED)]
    pub seed: u64,
    /// Bootstrap resamples
    #[arg(long, value_name = "N", default_value_t = toolpin_evals::compare::stats::RESAMPLES, value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    pub resamples: u32,
    /// Report format, optionally written to a file: text, json or markdown,
    /// as FORMAT or FORMAT=PATH; repeatable. Default: text to stdout
    #[arg(long, value_name = "FORMAT[=PATH]", value_parser = ReportTarget::parse)]
    pub format: Vec<ReportTarget>,
}

/// `toolpin init`.
#[derive(clap::Args)]
pub struct InitArgs {
    /// Read only this MCP client config file instead of searching the project
    /// and home directory
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// The client whose format --from FILE is in [default: detected from its
    /// path and content]; without --from, search only this client's files
    #[arg(long, value_enum, value_name = "NAME")]
    pub client: Option<toolpin_init::Client>,
    /// Overwrite the output file if it exists
    #[arg(long)]
    pub force: bool,
    /// Where to write the configuration
    #[arg(short, long, default_value = "toolpin.toml", value_name = "PATH")]
    pub output: PathBuf,
    /// Write the configuration to stdout instead of a file
    #[arg(long, conflicts_with = "output")]
    pub print: bool,
}

#[derive(Subcommand)]
pub enum ContractCommand {
    /// Write starter contracts from the lockfile: one golden call per
    /// read-only tool, one call per enum value, a default probe per
    /// defaulted parameter; other tools are left commented out
    // Reads the lockfile only: --jobs and --keep-going are accepted but not shown.
    #[command(mut_arg("jobs", |a| a.hide(true)), mut_arg("keep_going", |a| a.hide(true)))]
    Init {
        /// Replace an existing contracts file
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Parse the contracts file and validate it against the lockfile
    /// (exit 2 on the first error)
    // Reads the lockfile only: --jobs and --keep-going are accepted but not shown.
    #[command(mut_arg("jobs", |a| a.hide(true)), mut_arg("keep_going", |a| a.hide(true)))]
    Check {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Make the contracts' calls against the live servers and write what
    /// they did to the behaviour snapshot (toolpin.behaviour.json)
    // Servers are called as the contracts file's `concurrency` says: --jobs
    // and --keep-going are accepted but not shown.
    #[command(mut_arg("jobs", |a| a.hide(true)), mut_arg("keep_going", |a| a.hide(true)))]
    Record {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Make the calls again and compare with the behaviour snapshot and the
    /// contracts' assertions, reported as `check` reports (exit 1 on
    /// findings that fail the policy, 2 when a server is unavailable)
    // As for `record`: --jobs and --keep-going are accepted but not shown.
    #[command(mut_arg("jobs", |a| a.hide(true)), mut_arg("keep_going", |a| a.hide(true)))]
    Run {
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        report: ReportArgs,
    },
}

#[derive(Subcommand)]
pub enum EvalsCommand {
    /// Run evals twice, with TOOLPIN_MANIFEST pointing at the pinned catalog
    /// and then at the live one, and print both results side by side
    ///
    /// When the harness writes result files into TOOLPIN_OUTPUT_DIR (case
    /// records, pytest-json-report, JUnit XML, promptfoo, Inspect AI), the
    /// runs are compared case by case as `toolpin compare` does. Exit 0
    /// when no eval regressed, 1 when one did (a significant drop per case
    /// or a tool name never seen; without result files, passed pinned and
    /// failed live), 2 on error (an eval that cannot start included).
    Run {
        /// Evals to run [default: all of them]
        #[arg(value_name = "NAME", conflicts_with = "plan")]
        names: Vec<String>,
        /// Run only the evals the current drift routes to (as `check --plan`
        /// shows them)
        #[arg(long)]
        plan: bool,
        /// Where the manifests, each run's output and summary.json go
        /// [default: .toolpin/evals beside the config file]
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Runs per side, interleaved (pinned, live, pinned, live, …); the
        /// harness gets TOOLPIN_REPEAT and TOOLPIN_SEED
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: u32,
        /// Also run the pinned catalog against itself, as the baseline of
        /// how much runs move with no change at all
        #[arg(long)]
        aa: bool,
        /// The seed the harness gets (TOOLPIN_SEED is this plus the
        /// repeat) and the comparison's bootstrap uses
        #[arg(long, value_name = "N", default_value_t = toolpin_evals::compare::stats::DEFAULT_SEED)]
        seed: u64,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// List the configured evals and where each re-run tag routes
    List {
        /// The configuration file
        #[arg(short, long, default_value = "toolpin.toml", value_name = "PATH")]
        config: PathBuf,
    },
}

/// `--format NAME` of a report the format table offers, listed in `--help`.
fn format_of(
    report: Report,
) -> impl clap::builder::TypedValueParser<Value = &'static toolpin_report::Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(report.names())
        .try_map(move |s: String| report.parse(&s))
}

/// `--input-format` values, listed in `--help`.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    // Aliases (`openai` for `openai-chat`) are accepted but not listed.
    let values = Format::ALL
        .map(|f| clap::builder::PossibleValue::new(f.name()).aliases(f.aliases().iter().copied()));
    clap::builder::PossibleValuesParser::new(values).try_map(|s| s.parse::<Format>())
}

#[cfg(test)]
mod flush_interval_tests {
    use super::parse_flush_interval;
    use std::time::Duration;

    #[test]
    fn flush_intervals_are_whole_units_of_at_least_a_second() {
        assert_eq!(parse_flush_interval("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_flush_interval(" 2m "), Ok(Duration::from_secs(120)));
        assert_eq!(parse_flush_interval("1h"), Ok(Duration::from_secs(3_600)));
        assert_eq!(
            parse_flush_interval("0s"),
            Err("--flush-every must be at least 1s".to_string())
        );
        for bad in ["", "s", "10", "10ms", "1.5s", "-1s", "1d"] {
            assert!(parse_flush_interval(bad).is_err(), "{bad:?}");
        }
    }
}
