//! Making a contract's planned calls: servers at once on a pool of
//! threads, each server's calls in plan order over one session, each
//! answer observed (and judged, when it can be) as it arrives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::settings::{Config, Server};
use toolpin_capture::call;
use toolpin_contract::behaviour::{Class, Outcome as CallOutcome};
use toolpin_contract::run::{CallJudgement, Gate, Planned, Refusal, Seen};

/// What the live servers did, aligned with the plan (`None`: the call's
/// server could not be reached, or its tool was refused), the servers that
/// could not be reached and the tools that were not called.
pub struct Observed {
    pub seen: Vec<Option<Seen>>,
    /// Calls judged as they arrived (`None`: not yet; judged at the end).
    pub judged: Vec<Option<CallJudgement>>,
    /// `server "x": why`, one per server that could not be reached.
    pub unavailable: Vec<String>,
    /// The tools the [`Gate`] refused on their session, by `server/tool`.
    pub refused: Vec<Refusal>,
}

/// Makes the planned calls. Servers are called at once, at most
/// `concurrency` of them; each server's calls go in plan order over one
/// session, so that one call's latency never includes another's queueing
/// and a stateful server sees the calls in the order the file gives.
/// What to make of a call as soon as it is seen: a judgement, or `None`
/// to leave it for later.
pub type OnSeen<'a> = dyn Fn(&Planned, &Seen) -> Option<CallJudgement> + Sync + 'a;

/// Each session lists its tools first; `gate` decides from that list which
/// tools are called (docs/contracts.md, "Safety rules").
/// `keep_payloads`: whether each call's first result is kept for a
/// judgement `on_seen` did not make (`run`'s, when its snapshot was not
/// read yet); `record` judges nothing.
pub fn observe_all(
    cfg: &Config,
    planned: &[Planned],
    concurrency: u64,
    gate: &Gate,
    keep_payloads: bool,
    on_seen: &OnSeen,
) -> Observed {
    let servers: Vec<&Server> = cfg
        .servers
        .iter()
        .filter(|s| planned.iter().any(|p| p.server == s.name))
        .collect();
    let seen = Mutex::new((
        (0..planned.len())
            .map(|_| None)
            .collect::<Vec<Option<Seen>>>(),
        (0..planned.len())
            .map(|_| None)
            .collect::<Vec<Option<CallJudgement>>>(),
    ));
    let unavailable = Mutex::new(Vec::new());
    let refused = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    let workers = (concurrency.max(1) as usize).min(servers.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(server) = servers.get(next.fetch_add(1, Ordering::Relaxed)) {
                    match observe_server(server, planned, gate, &refused, keep_payloads, on_seen) {
                        Ok(mine) => {
                            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
                            for (i, s, j) in mine {
                                seen.0[i] = Some(s);
                                seen.1[i] = j;
                            }
                        }
                        Err(why) => unavailable
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(format!("server {:?}: {why}", server.name)),
                    }
                }
            });
        }
    });
    let mut unavailable = unavailable.into_inner().unwrap_or_else(|e| e.into_inner());
    unavailable.sort();
    let mut refused: Vec<Refusal> = refused.into_inner().unwrap_or_else(|e| e.into_inner());
    refused.sort_by(|a, b| a.tool_key.cmp(&b.tool_key));
    let (seen, judged) = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    Observed {
        seen,
        judged,
        unavailable,
        refused,
    }
}

/// One server's planned calls, each observed over its repeats, by plan
/// index.
fn observe_server(
    server: &Server,
    planned: &[Planned],
    gate: &Gate,
    refused: &Mutex<Vec<Refusal>>,
    keep_payloads: bool,
    on_seen: &OnSeen,
) -> Result<Vec<(usize, Seen, Option<CallJudgement>)>, String> {
    let mine: Vec<(usize, &Planned)> = planned
        .iter()
        .enumerate()
        .filter(|(_, p)| p.server == server.name)
        .collect();
    let prefix = server.transform.prefix.as_str();
    let mut requests = Vec::new();
    for (_, p) in &mine {
        let tool = p.tool.strip_prefix(prefix).unwrap_or(&p.tool).to_string();
        for _ in 0..p.repeats {
            requests.push(call::Request {
                tool: tool.clone(),
                arguments: p.arguments.clone(),
                timeout: Duration::from_millis(p.timeout_ms),
            });
        }
    }
    // Each answer is observed on a second thread while the server works
    // on the next call, so observing adds little to the session's wall.
    let (tx, rx) = std::sync::mpsc::channel::<call::Answer>();
    std::thread::scope(|scope| {
        let observer = scope.spawn(move || {
            let mut answers = rx.into_iter();
            let mut out = Vec::with_capacity(mine.len());
            for (i, p) in mine {
                let answers: Vec<call::Answer> =
                    answers.by_ref().take(p.repeats as usize).collect();
                if answers.len() < p.repeats as usize {
                    // The session ended early: the server is unavailable.
                    break;
                }
                if answers
                    .iter()
                    .any(|a| matches!(a.result, Err(call::Failure::NotCalled(_))))
                {
                    // Refused by the gate: nothing was seen.
                    continue;
                }
                let outcomes: Vec<(CallOutcome, f64)> = answers
                    .into_iter()
                    .map(|a| (outcome(a.result), a.latency.as_secs_f64() * 1000.0))
                    .collect();
                let mut seen = toolpin_contract::run::seen(p, outcomes);
                let judged = on_seen(p, &seen);
                if judged.is_some() || !keep_payloads {
                    // Judged, or never to be: the result is no longer
                    // needed, and freeing it here overlaps with the
                    // session, not the exit (nor do the results of many
                    // calls pile up until it).
                    seen.payload = None;
                }
                out.push((i, seen, judged));
            }
            out
        });
        // What the session lists decides what is called: a refusal is
        // kept with its reason, and the call module answers the tool's
        // requests with it, unsent.
        let admit = |tool: &str, live: Option<&toolpin_manifest::PinnedTool>| {
            gate.admit(&server.name, tool, live).map_err(|refusal| {
                let reason = refusal.reason.clone();
                refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(refusal);
                reason
            })
        };
        let called = call::call_server_each(server, &requests, &admit, &mut |a| {
            let _ = tx.send(a);
        });
        drop(tx);
        let seen = observer
            .join()
            .map_err(|_| "observing the answers failed".to_string())?;
        called.map(|()| seen)
    })
}

fn outcome(result: Result<serde_json::Value, call::Failure>) -> CallOutcome {
    match result {
        Ok(v) => CallOutcome::Result(v),
        Err(call::Failure::Rpc { code, message }) => {
            CallOutcome::Error(Class::of_error(Some(code), None, &message))
        }
        Err(call::Failure::Http { status, message }) => {
            CallOutcome::Error(Class::of_error(None, Some(status), &message))
        }
        Err(call::Failure::Timeout) => CallOutcome::Error(Class::Timeout),
        Err(call::Failure::Transport(m)) => CallOutcome::Error(Class::of_error(None, None, &m)),
        Err(call::Failure::TooLarge(limit)) => CallOutcome::TooLarge(limit),
        // Never observed: `observe_server` leaves refused calls unseen.
        Err(call::Failure::NotCalled(_)) => CallOutcome::Error(Class::Other),
    }
}
