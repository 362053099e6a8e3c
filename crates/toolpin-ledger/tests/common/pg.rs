//! A throwaway PostgreSQL cluster for the tests: created with the Debian
//! packages' `initdb` in a temporary directory, listening on a unix socket
//! in that directory only (no TCP), one per test binary (started by the
//! first test that needs it), a fresh database per test.
//!
//! It is stopped when the test binary exits (an `atexit` hook runs
//! `pg_ctl stop -m immediate` and removes the directory), and a watchdog
//! shell stops it too should the test process die without exiting (killed):
//! no postgres process outlives the tests.
//!
//! As root (CI), initdb and postgres refuse to run: they are run as the
//! `postgres` user (the Debian packages create it) through `setpriv`, and
//! the directory is handed to that user.
//!
//! `TOOLPIN_SKIP_POSTGRES=1` skips the PostgreSQL variants of the tests
//! (with a note); otherwise a missing PostgreSQL is a test failure.
//! `TOOLPIN_PG_BINDIR` names the directory of initdb and pg_ctl when they
//! are not where the Debian packages put them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Cluster {
    /// The cluster's directory (data, socket, log).
    pub dir: PathBuf,
    bin: PathBuf,
    /// `Some((uid, gid))` when the cluster's programs run as another user.
    run_as: Option<(u32, u32)>,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The superuser initdb creates (trust authentication on the socket).
pub const USER: &str = "toolpin";

pub fn skipped() -> bool {
    std::env::var("TOOLPIN_SKIP_POSTGRES").is_ok_and(|v| v == "1")
}

/// Says that a PostgreSQL variant was skipped: straight to stderr, past the
/// test harness's capture (a skipped variant passes, so its captured output
/// would never be shown).
pub fn note_skipped(name: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "note: {name}::postgres skipped (TOOLPIN_SKIP_POSTGRES=1)"
    );
}

/// The shared cluster, started on first use. Panics (a test failure) with
/// a one-line reason when PostgreSQL is missing or does not start.
pub fn cluster() -> &'static Cluster {
    match CLUSTER.get_or_init(start) {
        Ok(cluster) => cluster,
        Err(reason) => panic!(
            "PostgreSQL: {reason} (scripts/setup installs it; TOOLPIN_SKIP_POSTGRES=1 skips the PostgreSQL tests)"
        ),
    }
}

impl Cluster {
    /// The URL of `database` on the socket, as `user` with `password`
    /// (which trust authentication ignores).
    pub fn url_for(&self, database: &str, password: Option<&str>) -> String {
        let user = match password {
            Some(p) => format!("{USER}:{p}"),
            None => USER.to_string(),
        };
        format!(
            "postgres://{user}@/{database}?host={}&sslmode=disable",
            self.dir.display()
        )
    }

    /// A connection to the maintenance database.
    pub fn admin(&self) -> postgres::Client {
        postgres::Client::connect(&self.url_for("postgres", None), postgres::NoTls)
            .unwrap_or_else(|e| panic!("PostgreSQL: cannot connect to the test cluster: {e}"))
    }

    /// A new, empty database; its name.
    pub fn database(&self, label: &str) -> String {
        let n = DATABASES.fetch_add(1, Ordering::SeqCst);
        let clean: String = label
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(40)
            .collect();
        let name = format!("t{n}_{clean}").to_ascii_lowercase();
        self.admin()
            .batch_execute(&format!("CREATE DATABASE \"{name}\" STRATEGY FILE_COPY"))
            .unwrap_or_else(|e| panic!("PostgreSQL: cannot create database {name}: {e}"));
        name
    }

    fn command(&self, program: &str) -> Command {
        command(&self.bin, program, self.run_as)
    }
}

fn command(bin: &Path, program: &str, run_as: Option<(u32, u32)>) -> Command {
    let path = bin.join(program);
    match run_as {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .arg("--")
                .arg(path);
            c
        }
        None => Command::new(path),
    }
}

/// Where initdb is: `TOOLPIN_PG_BINDIR` when set (and then only there),
/// else `pg_config --bindir`, the Debian packages' versioned directories
/// (newest first), then PATH.
fn find_bin() -> Option<PathBuf> {
    let has_initdb = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("TOOLPIN_PG_BINDIR") {
        let dir = PathBuf::from(dir);
        return has_initdb(&dir).then_some(dir);
    }
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stderr(Stdio::null())
        .output()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_initdb(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let dir = e.path().join("bin");
            has_initdb(&dir).then_some((version, dir))
        })
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.pop() {
        return Some(dir);
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).find(|dir| has_initdb(dir)))
}

fn id_of(flag: &str, user: &str) -> Result<u32, String> {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .map_err(|e| format!("cannot run id: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("running as root and there is no {user:?} user to run PostgreSQL as"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn run(mut c: Command, what: &str, log: Option<&Path>) -> Result<(), String> {
    let out = c
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    if let Some(log) = log {
        text.push_str(&std::fs::read_to_string(log).unwrap_or_default());
    }
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    Err(format!("{what} failed ({}): {last}", out.status))
}

fn start() -> Result<Cluster, String> {
    let started = Instant::now();
    let bin = find_bin().ok_or(
        "not installed: no initdb and pg_ctl in $TOOLPIN_PG_BINDIR, `pg_config --bindir`, /usr/lib/postgresql/*/bin or PATH",
    )?;
    let run_as = if is_root() {
        Some((id_of("-u", "postgres")?, id_of("-g", "postgres")?))
    } else {
        None
    };
    let dir = std::env::temp_dir().join(format!("toolpin-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some((uid, gid)) = run_as {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            .map_err(|e| format!("cannot give {} to the postgres user: {e}", dir.display()))?;
    }
    let cluster = Cluster {
        dir: dir.clone(),
        bin,
        run_as,
    };
    let data = dir.join("data");
    let log = dir.join("log");

    let mut initdb = cluster.command("initdb");
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", USER, "-A", "trust", "-E", "UTF8", "--locale=C"])
        .args(["--no-sync", "--no-instructions"]);
    run(initdb, "initdb", None)?;

    // Stop it when this process exits, however it exits.
    register_stop(&cluster);
    spawn_watchdog(&cluster);

    // Durability off (a throwaway cluster), and minimal WAL, which makes
    // CREATE DATABASE … STRATEGY FILE_COPY (one per test) a few times
    // faster.
    let options = format!(
        "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off \
         -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 \
         -c wal_level=minimal -c max_wal_senders=0",
        dir.display()
    );
    let mut pg_ctl = cluster.command("pg_ctl");
    pg_ctl
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(&log)
        .args(["-w", "-t", "60", "-o", &options, "start"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    run(pg_ctl, "pg_ctl start", Some(&log))?;
    eprintln!(
        "note: throwaway PostgreSQL ({}) started in {} in {:.1} s",
        cluster.bin.display(),
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(cluster)
}

/// What the atexit hook stops: set once, read at exit.
static TO_STOP: OnceLock<Cluster> = OnceLock::new();

extern "C" fn stop_at_exit() {
    if let Some(cluster) = TO_STOP.get() {
        let mut c = cluster.command("pg_ctl");
        let _ = c
            .arg("-D")
            .arg(cluster.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&cluster.dir);
    }
}

fn register_stop(cluster: &Cluster) {
    let _ = TO_STOP.set(cluster.clone());
    extern "C" {
        fn atexit(f: extern "C" fn()) -> i32;
    }
    // SAFETY: `stop_at_exit` is a plain function that touches only a
    // `OnceLock` set before this call.
    unsafe {
        atexit(stop_at_exit);
    }
}

/// A shell, as the cluster's user, that waits for this process to go and
/// then stops the cluster and removes its directory: the fallback for a
/// test process killed before its atexit hook could run.
fn spawn_watchdog(cluster: &Cluster) {
    let pg_ctl = cluster.bin.join("pg_ctl");
    let script = format!(
        "while [ -d /proc/{pid} ]; do sleep 0.2; done; \
         '{pg_ctl}' -D '{dir}/data' -m immediate -w stop >/dev/null 2>&1; rm -rf '{dir}'",
        pid = std::process::id(),
        pg_ctl = pg_ctl.display(),
        dir = cluster.dir.display()
    );
    let mut c = match cluster.run_as {
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .args(["--", "sh", "-c", &script]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", &script]);
            c
        }
    };
    let _ = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// Waits until `f` holds or `timeout` passes.
pub fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + timeout;
    while Instant::now() < until {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}
