//! toolpin: pin the tool definitions an agent is handed.
//!
//! Exit codes: 0 clean, 1 drift, 2 error (one line on stderr).

mod approve;
mod config;
mod error;
mod evals;
mod expand;
mod init;
mod pin;
mod proxy;
mod review;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::{json, Map, Value};
use toolpin_capture::Format;
use toolpin_drift::policy::Policy;
use toolpin_manifest::{lockfile, Catalog};
use toolpin_report::text::Sides;
use toolpin_report::{ColorChoice, Style};

use crate::error::CliError;

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
    after_help = "Start with `toolpin lock`, commit toolpin.lock, and run `toolpin check` in CI."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// When to colour output [env: NO_COLOR disables colour in auto mode]
    #[arg(long, global = true, value_enum, default_value_t = ColorArg::Auto)]
    color: ColorArg,
    /// Print nothing but errors and reports
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args)]
struct ConfigArgs {
    /// The configuration file
    #[arg(short, long, default_value = "toolpin.toml", value_name = "PATH")]
    config: PathBuf,
    /// Use [env.NAME] overrides and the lockfile toolpin.NAME.lock
    #[arg(long, value_name = "NAME")]
    env: Option<String>,
    /// The lockfile to write or check [default: beside the config file]
    #[arg(long, value_name = "PATH")]
    lockfile: Option<PathBuf>,
    /// How many servers to capture at once
    #[arg(short, long, default_value_t = 16, value_name = "N", value_parser = parse_jobs)]
    jobs: usize,
    /// Capture every server and report every failure instead of stopping at the first
    #[arg(long)]
    keep_going: bool,
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
    fn capture_options(&self, quiet: bool) -> pin::CaptureOptions {
        pin::CaptureOptions {
            jobs: self.jobs,
            keep_going: self.keep_going,
            progress: !quiet,
        }
    }
}

/// Where one report goes: the report crate's format table parses `--format`.
type ReportTarget = toolpin_report::Target;

#[derive(clap::Args)]
struct ReportArgs {
    /// Report format, optionally written to a file: text, json, markdown,
    /// sarif, junit or github, as FORMAT or FORMAT=PATH; repeatable
    /// (`--format text --format sarif=drift.sarif`). Default: text to stdout
    #[arg(long, value_name = "FORMAT[=PATH]", value_parser = ReportTarget::parse)]
    format: Vec<ReportTarget>,
    /// Show whole before/after values in the text report
    #[arg(short, long)]
    verbose: bool,
    /// Print the eval plan instead of the report: the evals ([evals] and
    /// [routing] in toolpin.toml) the failing findings ask to re-run, each
    /// with the findings that pull it in. With --format json, the plan
    /// document (docs/evals.md)
    #[arg(long)]
    plan: bool,
}

/// `toolpin proxy`.
#[derive(clap::Args)]
struct ProxyArgs {
    /// Front only this server (repeatable) [default: every MCP server in toolpin.toml]
    #[arg(long = "server", value_name = "NAME")]
    servers: Vec<String>,
    /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8931)
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// In stdio mode, serve Prometheus /metrics on ADDR (with --listen, /metrics is on the listener)
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// A Host header value to accept besides localhost, 127.0.0.1 and [::1] (repeatable)
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// An Origin to accept besides loopback origins (repeatable)
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Where drift events and refusals go, as JSON lines: a file, or - for stderr [default: [proxy] events, else stderr]
    #[arg(long, value_name = "PATH")]
    events: Option<String>,
    /// With --listen, the most HTTP sessions open at once; past it initialize gets 503 [default: [proxy] max_sessions, else 32]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions: Option<u64>,
    /// Skip the capture at start that compares upstream with the pin
    #[arg(long)]
    no_start_check: bool,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Write a toolpin.toml from the MCP servers your clients already use
    ///
    /// Reads the MCP configuration of Claude Desktop, Claude Code, Cursor, VS Code,
    /// Windsurf, Zed, Codex and Gemini CLI, in the current directory and in your home
    /// directory, and writes one commented [servers.NAME] table per server found.
    /// Secrets are never copied: literal values become ${VAR} references to export.
    Init(init::InitArgs),
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
    /// List the drift rules, or explain one
    Rules {
        /// A rule id, e.g. input-default-changed
        id: Option<String>,
        /// Print docs/rules.md (generated from the registry)
        #[arg(long, conflicts_with = "id")]
        markdown: bool,
    },
    /// Run your evals against the pinned and the live catalog, side by side
    ///
    /// Evals are configured in [evals.NAME] tables of toolpin.toml, and
    /// [routing] maps re-run tags to them; see docs/evals.md.
    Evals {
        #[command(subcommand)]
        command: EvalsCommand,
    },
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

#[derive(Subcommand)]
enum EvalsCommand {
    /// Run evals twice, with TOOLPIN_MANIFEST pointing at the pinned catalog
    /// and then at the live one, and print both results side by side
    ///
    /// Exit 0 when every eval did as well on the live catalog as on the
    /// pinned one, 1 when some eval passed pinned and failed live, 2 on error
    /// (an eval that cannot start included).
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

/// `--input-format` values, listed in `--help`.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = Format> {
    use clap::builder::TypedValueParser;
    // Aliases (`openai` for `openai-chat`) are accepted but not listed.
    let values = Format::ALL
        .map(|f| clap::builder::PossibleValue::new(f.name()).aliases(f.aliases().iter().copied()));
    clap::builder::PossibleValuesParser::new(values).try_map(|s| s.parse::<Format>())
}

/// What a command concluded.
enum Outcome {
    Clean,
    Drift,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match run(&cli) {
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

fn run(cli: &Cli) -> Result<Outcome, CliError> {
    let color = match cli.color {
        ColorArg::Auto => ColorChoice::Auto,
        ColorArg::Always => ColorChoice::Always,
        ColorArg::Never => ColorChoice::Never,
    };
    let style = Style {
        color: toolpin_report::use_color(color),
    };
    match &cli.command {
        Command::Init(args) => init::run(args).map(|()| Outcome::Clean),
        Command::Lock { config } => lock(config, cli.quiet),
        Command::Ls { config } => {
            let cfg = config::load(&config.config, config.env.as_deref())?;
            let catalog = pin::capture_config(&cfg, config.capture_options(cli.quiet))?;
            print(&list_tools(&catalog, style))?;
            Ok(Outcome::Clean)
        }
        Command::Check { config, report } => {
            check_plan_formats(report)?;
            let cfg = config::load(&config.config, config.env.as_deref())?;
            let path = config
                .lockfile
                .clone()
                .unwrap_or_else(|| cfg.default_lockfile());
            let pinned = pin::read_lockfile(&path)?;
            let live = pin::capture_config(&cfg, config.capture_options(cli.quiet))?;
            let context = toolpin_report::context::Context::new(
                repository_path(&path),
                std::fs::read_to_string(&path).ok(),
            );
            report_comparison(
                Sides::LockfileAndLive,
                &pinned,
                &live,
                (&cfg.policy, &cfg.evals),
                &context,
                report,
                style,
            )
        }
        Command::Accept {
            tools,
            reason,
            evidence,
            config,
        } => accept(config, tools, reason, evidence, cli.quiet),
        Command::Review { verbose, config } => review(config, *verbose, style, cli.quiet),
        Command::Proxy(args) => {
            let cfg = config::load(&args.config.config, args.config.env.as_deref())?;
            let lockfile = args
                .config
                .lockfile
                .clone()
                .unwrap_or_else(|| cfg.default_lockfile());
            proxy::run(proxy::ProxyRun {
                config: &cfg,
                lockfile,
                servers: &args.servers,
                listen: args.listen.clone(),
                metrics_listen: args.metrics_listen.clone(),
                allow_hosts: &args.allow_hosts,
                allow_origins: &args.allow_origins,
                events: args.events.clone(),
                max_sessions: args
                    .max_sessions
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                start_check: !args.no_start_check,
                // Progress spinners would draw on the agent's terminal.
                capture: args.config.capture_options(true),
            })
            .map(|()| Outcome::Clean)
        }
        Command::Withdraw {
            tool,
            reason,
            config,
        } => {
            let lockfile = lockfile_path(config)?;
            let flags =
                proxy::set_withdrawn(&lockfile, tool, Some(reason), approve::author(&lockfile))?;
            if !cli.quiet {
                eprintln!("Withdrew {tool} ({flags}); running proxies drop it within a second, or on SIGHUP");
            }
            Ok(Outcome::Clean)
        }
        Command::Restore { tool, config } => {
            let lockfile = lockfile_path(config)?;
            let flags = proxy::set_withdrawn(&lockfile, tool, None, String::new())?;
            if !cli.quiet {
                eprintln!(
                    "Restored {tool} ({flags}); running proxies serve it again within a second"
                );
            }
            Ok(Outcome::Clean)
        }
        Command::Diff {
            old,
            new,
            input_format,
            config,
            report,
        } => {
            check_plan_formats(report)?;
            let (policy, evals) = match config {
                Some(path) => config::load_policy_and_evals(path)?,
                None => (Policy::default(), config::Evals::default()),
            };
            let old_path = old;
            let old = pin::catalog_from_path(old, *input_format)?;
            let new = pin::catalog_from_path(new, *input_format)?;
            let context = toolpin_report::context::Context::new(
                repository_path(old_path),
                lockfile::looks_like_lockfile(&std::fs::read(old_path).unwrap_or_default())
                    .then(|| std::fs::read_to_string(old_path).ok())
                    .flatten(),
            );
            report_comparison(
                Sides::TwoCatalogs,
                &old,
                &new,
                (&policy, &evals),
                &context,
                report,
                style,
            )
        }
        Command::Stamp { json, config } => {
            let cfg = config::load(&config.config, config.env.as_deref())?;
            let path = config
                .lockfile
                .clone()
                .unwrap_or_else(|| cfg.default_lockfile());
            let catalog = pin::read_lockfile(&path)?;
            let tools = catalog.fingerprint.to_hex()[..12].to_string();
            let text = if *json {
                let mut doc = serde_json::Map::new();
                doc.insert("tools".into(), json!(tools));
                doc.insert("catalog".into(), json!(catalog.fingerprint.to_hex()));
                doc.insert("environment".into(), json!(catalog.environment));
                if let Some(m) = &cfg.release.model {
                    doc.insert("model".into(), json!(m));
                }
                if let Some(p) = &cfg.release.prompt {
                    doc.insert("prompt".into(), json!(p));
                }
                serde_json::to_string_pretty(&Value::Object(doc)).unwrap_or_default() + "\n"
            } else {
                let mut lines = String::new();
                if let Some(m) = &cfg.release.model {
                    lines += &format!("model {m}\n");
                }
                if let Some(p) = &cfg.release.prompt {
                    lines += &format!("prompt {p}\n");
                }
                lines + &format!("tools {tools}\n")
            };
            print(&text)?;
            Ok(Outcome::Clean)
        }
        Command::Evals { command } => run_evals(command, cli.quiet, style),
        Command::Rules { id, markdown } => {
            let text = match (id, markdown) {
                (_, true) => toolpin_drift::rule::markdown(),
                (Some(id), _) => match toolpin_drift::rule::by_id(id) {
                    Some(rule) => rule.explain(),
                    None => {
                        return Err(CliError::new(format!(
                            "no rule {id:?}; `toolpin rules` lists them"
                        )))
                    }
                },
                (None, false) => rules_table(),
            };
            print(&text)?;
            Ok(Outcome::Clean)
        }
        Command::Fingerprint {
            path,
            json,
            release,
            input_format,
            config,
        } => {
            let catalog = match path {
                Some(p) => pin::catalog_from_path(p, *input_format)?,
                None => {
                    let lock = match &config.lockfile {
                        Some(p) => p.clone(),
                        None => {
                            config::load(&config.config, config.env.as_deref())?.default_lockfile()
                        }
                    };
                    pin::read_lockfile(&lock)?
                }
            };
            let text = if *json {
                fingerprints_json(&catalog)
            } else if *release {
                catalog.fingerprint.release_line() + "\n"
            } else {
                catalog.fingerprint.short() + "\n"
            };
            print(&text)?;
            Ok(Outcome::Clean)
        }
    }
}

fn lock(args: &ConfigArgs, quiet: bool) -> Result<Outcome, CliError> {
    let cfg = config::load(&args.config, args.env.as_deref())?;
    let path = args
        .lockfile
        .clone()
        .unwrap_or_else(|| cfg.default_lockfile());
    let catalog = pin::capture_config(&cfg, args.capture_options(quiet))?;
    let unchanged = lockfile::write(&catalog, &path).map_err(|e| CliError::new(e.to_string()))?
        == toolpin_manifest::fs::Replaced::Unchanged;
    if !quiet {
        eprintln!(
            "{} {} tool{} from {} server{} in {} ({})",
            if unchanged { "Unchanged:" } else { "Pinned" },
            catalog.tool_count(),
            if catalog.tool_count() == 1 { "" } else { "s" },
            catalog.servers.len(),
            if catalog.servers.len() == 1 { "" } else { "s" },
            display(&path),
            catalog.fingerprint.release_line(),
        );
    }
    Ok(Outcome::Clean)
}

/// The pin, a fresh capture, and the changes between them: what `accept`
/// and `review` decide on.
struct Pending {
    lockfile: PathBuf,
    pinned: Catalog,
    live: Catalog,
    comparison: toolpin_drift::Comparison,
    verdict: toolpin_drift::policy::Verdict,
    changes: Vec<approve::Change>,
}

impl Pending {
    fn capture(args: &ConfigArgs, quiet: bool) -> Result<Self, CliError> {
        let cfg = config::load(&args.config, args.env.as_deref())?;
        let lockfile = args
            .lockfile
            .clone()
            .unwrap_or_else(|| cfg.default_lockfile());
        let pinned = pin::read_lockfile(&lockfile)?;
        let live = pin::capture_config(&cfg, args.capture_options(quiet))?;
        let mut comparison = toolpin_drift::compare(&pinned, &live);
        let verdict = cfg.policy.apply(&mut comparison);
        let changes = approve::changes(&pinned, &live, &comparison);
        Ok(Self {
            lockfile,
            pinned,
            live,
            comparison,
            verdict,
            changes,
        })
    }

    fn stamp(&self, after: &Catalog) -> approve::Stamp {
        approve::Stamp {
            author: approve::author(&self.lockfile),
            time: approve::now_utc(),
            environment: self.pinned.environment.clone(),
            catalog_before: self.pinned.fingerprint,
            catalog_after: after.fingerprint,
        }
    }
}

fn accept(
    args: &ConfigArgs,
    selectors: &[approve::Selector],
    reason: &str,
    evidence: &[PathBuf],
    quiet: bool,
) -> Result<Outcome, CliError> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(CliError::new(
            "--reason must say why the change is acceptable",
        ));
    }
    let pending = Pending::capture(args, quiet)?;
    if pending.changes.is_empty() {
        if !quiet {
            eprintln!(
                "ok: the catalog matches {}; nothing to accept",
                display(&pending.lockfile)
            );
        }
        return Ok(Outcome::Clean);
    }
    let picked = approve::select(&pending.changes, selectors)?;
    let evidence = evidence
        .iter()
        .map(|p| approve::Evidence::read(p, &pending.lockfile))
        .collect::<Result<Vec<_>, _>>()?;
    let updated = approve::apply(&pending.pinned, &pending.live, &picked)?;
    let stamp = pending.stamp(&updated);
    let records: Vec<Value> = picked
        .iter()
        .map(|change| {
            let decision = approve::Decision {
                change,
                accepted: true,
                reason: Some(reason.to_string()),
                evidence: evidence.clone(),
            };
            approve::record(&decision, &pending.comparison, &stamp)
        })
        .collect();
    approve::commit(&pending.lockfile, Some(&updated), &records)?;
    if !quiet {
        let names: Vec<String> = picked.iter().map(|c| c.address()).collect();
        let left = pending.changes.len() - picked.len();
        eprintln!(
            "Accepted {} ({}); {} is now {}, recorded in {}{}",
            plural(picked.len(), "change"),
            toolpin_report::style::printable(&names.join(", "), false),
            display(&pending.lockfile),
            updated.fingerprint.release_line(),
            display(&approve::log_path(&pending.lockfile)),
            if left == 0 {
                String::new()
            } else {
                format!(
                    "; {} still differ{} from the pin",
                    plural(left, "change"),
                    if left == 1 { "s" } else { "" }
                )
            }
        );
    }
    Ok(Outcome::Clean)
}

fn review(
    args: &ConfigArgs,
    verbose: bool,
    style: Style,
    quiet: bool,
) -> Result<Outcome, CliError> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(CliError::new(
            "toolpin review asks questions and needs a terminal; in scripts use `toolpin accept --tool SERVER/TOOL --reason ...`",
        ));
    }
    let pending = Pending::capture(args, quiet)?;
    if pending.changes.is_empty() {
        print(&format!(
            "ok: the catalog matches {}; nothing to review\n",
            display(&pending.lockfile)
        ))?;
        return Ok(Outcome::Clean);
    }
    let session = review::Review {
        comparison: &pending.comparison,
        verdict: &pending.verdict,
        changes: &pending.changes,
        lockfile: &pending.lockfile,
        style,
        verbose,
    };
    let answers = {
        let mut input = std::io::stdin().lock();
        let mut out = std::io::stdout().lock();
        session
            .run(&mut input, &mut out)
            .map_err(|e| CliError::new(format!("review: {e}")))?
    };
    let accepted: Vec<&approve::Change> = answers
        .iter()
        .filter(|a| a.accepted)
        .map(|a| &pending.changes[a.change])
        .collect();
    let updated = approve::apply(&pending.pinned, &pending.live, &accepted)?;
    let stamp = pending.stamp(&updated);
    let records: Vec<Value> = answers
        .iter()
        .map(|a| {
            let decision = approve::Decision {
                change: &pending.changes[a.change],
                accepted: a.accepted,
                reason: a.reason.clone(),
                evidence: a.evidence.clone(),
            };
            approve::record(&decision, &pending.comparison, &stamp)
        })
        .collect();
    approve::commit(
        &pending.lockfile,
        (!accepted.is_empty()).then_some(&updated),
        &records,
    )?;
    let rejected = answers.len() - accepted.len();
    let skipped = pending.changes.len() - answers.len();
    let mut summary = format!(
        "\n{} accepted, {} rejected, {} skipped",
        accepted.len(),
        rejected,
        skipped
    );
    if !accepted.is_empty() {
        summary += &format!(
            "; {} is now {}",
            display(&pending.lockfile),
            updated.fingerprint.release_line()
        );
    }
    if !records.is_empty() {
        summary += &format!(
            "; {} in {}",
            plural(records.len(), "record"),
            display(&approve::log_path(&pending.lockfile))
        );
    }
    print(&(summary + "\n"))?;
    Ok(Outcome::Clean)
}

/// The lockfile a command reads: `--lockfile`, else the configured one.
fn lockfile_path(args: &ConfigArgs) -> Result<PathBuf, CliError> {
    match &args.lockfile {
        Some(p) => Ok(p.clone()),
        None => Ok(config::load(&args.config, args.env.as_deref())?.default_lockfile()),
    }
}

/// `1 change`, `2 changes`.
fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn report_comparison(
    sides: Sides,
    old: &Catalog,
    new: &Catalog,
    (policy, evals): (&Policy, &config::Evals),
    context: &toolpin_report::context::Context,
    args: &ReportArgs,
    style: Style,
) -> Result<Outcome, CliError> {
    let targets = if args.format.is_empty() {
        vec![ReportTarget {
            format: toolpin_report::format::TEXT,
            path: None,
        }]
    } else {
        args.format.clone()
    };
    if targets.iter().filter(|t| t.path.is_none()).count() > 1 {
        return Err(CliError::new(
            "only one --format may write to stdout; give the others a path (FORMAT=PATH)",
        ));
    }
    check_plan_formats(args)?;
    let mut comparison = toolpin_drift::compare(old, new);
    let verdict = policy.apply(&mut comparison);
    let plan = args.plan.then(|| evals::Plan::new(&verdict, evals));
    for target in &targets {
        // Colour only on the terminal, never into a file.
        let target_style = if target.path.is_some() {
            Style { color: false }
        } else {
            style
        };
        if let Some(plan) = &plan {
            let text = if target.format == toolpin_report::format::JSON {
                let doc = evals::plan_json(plan, evals, &comparison, &verdict);
                // Serializing a Value cannot fail.
                serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
            } else {
                evals::render_text(plan, evals, &comparison, &verdict, target_style)
            };
            write_report(target, &text)?;
            continue;
        }
        let text = target.format.render(&toolpin_report::Input {
            comparison: &comparison,
            verdict: &verdict,
            context,
            style: target_style,
            sides,
            verbose: args.verbose,
            rules_doc: RULES_URL,
        });
        write_report(target, &text)?;
    }
    Ok(if verdict.fails {
        Outcome::Drift
    } else {
        Outcome::Clean
    })
}

/// `--plan` replaces the report with the plan, which has a text and a JSON
/// form only. Checked before anything is captured.
fn check_plan_formats(args: &ReportArgs) -> Result<(), CliError> {
    match args
        .format
        .iter()
        .find(|t| ![toolpin_report::format::TEXT, toolpin_report::format::JSON].contains(&t.format))
    {
        Some(t) if args.plan => Err(CliError::new(format!(
            "--plan prints the plan as text or json, not {}; run without --plan for that report",
            t.format.name
        ))),
        _ => Ok(()),
    }
}

/// Prints a report, or writes it to its file (creating missing directories).
fn write_report(target: &ReportTarget, text: &str) -> Result<(), CliError> {
    let Some(path) = &target.path else {
        return print(text);
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    toolpin_manifest::fs::write_atomic(path, text.as_bytes())
        .map_err(|e| CliError::new(format!("cannot write {}: {e}", path.display())))
}

/// `toolpin evals run` and `toolpin evals list`.
fn run_evals(command: &EvalsCommand, quiet: bool, style: Style) -> Result<Outcome, CliError> {
    match command {
        EvalsCommand::List { config } => {
            let (_, evals) = config::load_policy_and_evals(config)?;
            print(&evals::render_list(&evals, style))?;
            Ok(Outcome::Clean)
        }
        EvalsCommand::Run {
            names,
            plan,
            out,
            config,
        } => {
            let cfg = config::load(&config.config, config.env.as_deref())?;
            if cfg.evals.evals.is_empty() {
                return Err(CliError::new(format!(
                    "{} defines no evals; add an [evals.NAME] table with `run = \"…\"` (see docs/evals.md)",
                    config.config.display()
                )));
            }
            for name in names {
                if !cfg.evals.evals.contains_key(name) {
                    return Err(CliError::new(format!(
                        "no eval named {name:?} in {} (defined: {})",
                        config.config.display(),
                        cfg.evals.names()
                    )));
                }
            }
            let path = config
                .lockfile
                .clone()
                .unwrap_or_else(|| cfg.default_lockfile());
            let pinned = pin::read_lockfile(&path)?;
            let live = pin::capture_config(&cfg, config.capture_options(quiet))?;
            let (selected, plan_doc, how) = if *plan {
                let mut comparison = toolpin_drift::compare(&pinned, &live);
                let verdict = cfg.policy.apply(&mut comparison);
                let plan = evals::Plan::new(&verdict, &cfg.evals);
                if plan.evals.is_empty() {
                    let why = if verdict.plan.is_empty() {
                        "no finding fails the policy".to_string()
                    } else {
                        format!(
                            "the drift routes to no eval (not routed: {}; see `toolpin check --plan`)",
                            plan.unrouted.keys().copied().collect::<Vec<_>>().join(", ")
                        )
                    };
                    print(&format!("nothing to run: {why}\n"))?;
                    return Ok(Outcome::Clean);
                }
                let doc = evals::plan_json(&plan, &cfg.evals, &comparison, &verdict);
                let selected: Vec<&config::Eval> = cfg
                    .evals
                    .evals
                    .values()
                    .filter(|e| plan.evals.contains_key(&e.name))
                    .collect();
                (selected, Some(doc), "plan")
            } else if names.is_empty() {
                (cfg.evals.evals.values().collect(), None, "all")
            } else {
                let selected: Vec<&config::Eval> = cfg
                    .evals
                    .evals
                    .values()
                    .filter(|e| names.contains(&e.name))
                    .collect();
                (selected, None, "names")
            };
            let out = out.clone().unwrap_or_else(|| {
                cfg.path
                    .parent()
                    .unwrap_or(Path::new(""))
                    .join(".toolpin")
                    .join("evals")
            });
            let request = evals::run::Request {
                evals: selected,
                pinned: &pinned,
                live: &live,
                out,
                config: display(&cfg.path),
                selected: how,
                plan: plan_doc,
                progress: !quiet,
            };
            let (table, regressed) = evals::run::run(&request, style)?;
            print(&table)?;
            Ok(if regressed {
                Outcome::Drift
            } else {
                Outcome::Clean
            })
        }
    }
}

/// `toolpin rules`: one line per rule.
fn rules_table() -> String {
    let width = toolpin_drift::rule::all()
        .map(|r| r.id.len())
        .max()
        .unwrap_or(0);
    toolpin_drift::rule::all()
        .map(|r| {
            format!(
                "{:<width$}  {:<11} {:<8} {}{}\n",
                r.id,
                r.kind.name(),
                r.severity.name(),
                r.summary,
                if r.security { " [security]" } else { "" }
            )
        })
        .collect()
}

/// `toolpin ls`: each server, then each tool with the first line of its
/// description.
fn list_tools(catalog: &Catalog, style: Style) -> String {
    use std::fmt::Write;
    use toolpin_report::style::printable;
    let mut out = String::new();
    for (name, pin) in &catalog.servers {
        let session = pin.session.as_ref();
        let about = match session {
            Some(s) => format!(
                ", {} {}, protocol {}",
                s.pointer("/server_info/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                s.pointer("/server_info/version")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                s.get("protocol_version")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
            ),
            None => format!(", {}", pin.format),
        };
        let count = pin.tools.len();
        let heading = format!(
            "{name} ({count} tool{}{about})",
            if count == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "{}", style.bold(&printable(&heading, false)));
        let width = pin
            .tools
            .keys()
            .map(|n| n.chars().count())
            .max()
            .unwrap_or(0);
        for (tool_name, tool) in &pin.tools {
            let tool = tool.value();
            let first_line = tool
                .get("description")
                .and_then(Value::as_str)
                .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
                .unwrap_or("");
            let _ = writeln!(
                out,
                "  {:<width$}  {}",
                printable(tool_name, false),
                style.dim(&printable(first_line, false))
            );
        }
    }
    out
}

fn fingerprints_json(catalog: &Catalog) -> String {
    let mut servers = Map::new();
    for (name, pin) in &catalog.servers {
        let tools: Map<String, Value> = pin
            .tools
            .iter()
            .map(|(n, t)| (n.clone(), json!(t.fingerprint.to_hex())))
            .collect();
        servers.insert(
            name.clone(),
            json!({"fingerprint": pin.fingerprint.to_hex(), "tools": tools}),
        );
    }
    let doc = json!({
        "catalog": catalog.fingerprint.to_hex(),
        "release": catalog.fingerprint.release_line(),
        "servers": servers,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a message.
fn print(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::new(format!("cannot write to stdout: {e}"))),
    }
}

/// Where rule ids in a pull-request comment link: relative links there
/// resolve against the pull request, not the repository.
const RULES_URL: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/rules.md");

/// The lockfile as code scanning and workflow annotations name it: relative
/// to the root of the git repository that holds it (found by its `.git`),
/// whatever directory toolpin runs in; outside a repository, as given.
fn repository_path(path: &Path) -> String {
    let Ok(absolute) = path.canonicalize() else {
        return display(path);
    };
    for dir in absolute.ancestors().skip(1) {
        if dir.join(".git").exists() {
            if let Ok(relative) = absolute.strip_prefix(dir) {
                return relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
            }
        }
    }
    display(path)
}

fn display(path: &Path) -> String {
    path.strip_prefix("./")
        .unwrap_or(path)
        .display()
        .to_string()
}
