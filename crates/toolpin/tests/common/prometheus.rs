//! A real Prometheus (Debian's `prometheus` package, which scripts/setup
//! installs) for the tests: started on a free loopback port with a scrape
//! of 1 s, the rules of deploy/prometheus with the test windows of
//! deploy/prometheus/test-windows.txt, and a data directory of its own;
//! killed when dropped.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn repo() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    repo.canonicalize().unwrap_or(repo)
}

/// deploy/prometheus/toolpin.rules.yml with the test windows.
pub fn test_rules() -> String {
    let rules =
        std::fs::read_to_string(repo().join("deploy/prometheus/toolpin.rules.yml")).expect("rules");
    let windows = std::fs::read_to_string(repo().join("deploy/prometheus/test-windows.txt"))
        .expect("windows");
    let mut out = rules;
    for line in windows.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split(' ').collect();
        let (from, to) = words.split_at(words.len() / 2);
        let (from, to) = (from.join(" "), to.join(" "));
        assert!(
            out.contains(&from),
            "test-windows.txt: {from:?} is not in the rules"
        );
        out = out.replace(&from, &to);
    }
    out
}

pub struct Prometheus {
    child: Child,
    pub url: String,
    dir: PathBuf,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

impl Prometheus {
    /// Scrapes each of `targets` (`host:port`, path /metrics) every second
    /// as job `proxy`, with the test rules, from `dir` (created).
    pub fn start(dir: &Path, targets: &[String]) -> Self {
        let bin = "/usr/bin/prometheus";
        assert!(
            Path::new(bin).exists(),
            "{bin} is missing: run scripts/setup (Debian package prometheus)"
        );
        std::fs::create_dir_all(dir).expect("dir");
        std::fs::write(dir.join("toolpin.rules.yml"), test_rules()).expect("rules");
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            dir.join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files: ['toolpin.rules.yml']\n\
                 scrape_configs:\n  - job_name: proxy\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .expect("config");
        let port = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("log");
        let child = Command::new(bin)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let p = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir: dir.to_path_buf(),
        };
        let start = Instant::now();
        loop {
            if let Ok(r) = reqwest::blocking::get(format!("{}/-/ready", p.url)) {
                if r.status().is_success() {
                    break;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "prometheus not ready: {}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    fn get(&self, path: &str, query: &[(&str, &str)]) -> Value {
        let r = reqwest::blocking::Client::new()
            .get(format!("{}{path}", self.url))
            .query(query)
            .send()
            .expect("prometheus request");
        let body: Value = r.json().expect("prometheus JSON");
        assert_eq!(body["status"], "success", "{path} {query:?}: {body}");
        body["data"].clone()
    }

    /// An instant query's result vector.
    pub fn query(&self, expr: &str) -> Vec<Value> {
        self.get("/api/v1/query", &[("query", expr)])["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The alerts pending or firing now, as the labels of their `ALERTS`
    /// series (`alertname`, `alertstate` and the alert's own).
    pub fn alerts(&self) -> Vec<Value> {
        self.query("ALERTS")
            .into_iter()
            .map(|s| s["metric"].clone())
            .collect()
    }

    /// The names of the alerts firing now.
    pub fn firing(&self) -> Vec<String> {
        self.alerts()
            .iter()
            .filter(|a| a["alertstate"] == "firing")
            .filter_map(|a| a["alertname"].as_str().map(str::to_string))
            .collect()
    }

    /// Every rule's health (`ok`, `err`, `unknown`) with its name and error.
    pub fn rules(&self) -> Vec<(String, String, String)> {
        let data = self.get("/api/v1/rules", &[]);
        let mut out = Vec::new();
        for g in data["groups"].as_array().into_iter().flatten() {
            for r in g["rules"].as_array().into_iter().flatten() {
                out.push((
                    r["name"].as_str().unwrap_or("").to_string(),
                    r["health"].as_str().unwrap_or("").to_string(),
                    r["lastError"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
        out
    }

    /// Waits until `check` holds, polling every 250 ms, at most `limit`.
    pub fn wait_for(&self, what: &str, limit: Duration, check: impl Fn(&Self) -> bool) {
        let start = Instant::now();
        while !check(self) {
            assert!(
                start.elapsed() < limit,
                "{what} did not happen within {limit:?}; alerts: {:#?}\nrules: {:?}\n{}",
                self.alerts(),
                self.rules(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
