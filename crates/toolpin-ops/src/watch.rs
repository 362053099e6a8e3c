//! `toolpin watch --once | --every INTERVAL`: check each environment with
//! the check pipeline, record each in the ledger, deliver the outbox.

use std::path::Path;

use crate::check::Written;
use crate::deliver::NotifySender;
use crate::project::Project;
use crate::recorder::Recorder;
use crate::Error;

/// What `watch` is asked to check.
pub struct Watch<'a> {
    pub config: &'a Path,
    /// The environments (`--env`); none: the configuration's own.
    pub envs: &'a [String],
    /// Servers captured at once.
    pub jobs: usize,
    pub quiet: bool,
}

/// One environment checked and recorded.
pub struct Checked {
    pub environment: String,
    /// Servers captured.
    pub servers: usize,
    pub written: Written,
    /// Whether its drift fails the policy.
    pub fails: bool,
}

/// One run over every environment, each told to `checked` as it is done:
/// an environment that cannot be checked is reported and the others are
/// still checked; the run is then an error. Whether any drift failed.
pub fn once(watch: &Watch, checked: &mut dyn FnMut(&Checked)) -> Result<bool, Error> {
    let envs: Vec<Option<&str>> = if watch.envs.is_empty() {
        vec![None]
    } else {
        watch.envs.iter().map(|e| Some(e.as_str())).collect()
    };
    let mut recorder: Option<Recorder> = None;
    // `[notify]` is not per environment: the first configuration's.
    let mut sender: Option<NotifySender> = None;
    let mut drift = false;
    let mut failed: Option<Error> = None;
    for env in envs {
        match check_environment(watch, env, &mut recorder) {
            Ok((done, project)) => {
                drift |= done.fails;
                checked(&done);
                if sender.is_none() {
                    sender = Some(NotifySender::new(&project.config.notify));
                }
            }
            Err(e) => {
                if let Some(previous) = failed.replace(e) {
                    eprintln!("error: {previous}");
                }
            }
        }
    }
    if let (Some(recorder), Some(sender)) = (recorder.as_mut(), sender.as_ref()) {
        recorder.deliver_due(sender)?;
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(drift),
    }
}

/// Checks one environment and records it.
fn check_environment(
    watch: &Watch,
    env: Option<&str>,
    recorder: &mut Option<Recorder>,
) -> Result<(Checked, Project), Error> {
    let project = Project::load(watch.config, env, None)?;
    let capture = toolpin_capture::servers::Options {
        jobs: watch.jobs,
        keep_going: true,
        progress: false,
    };
    let checked = crate::check::check(&project, capture)?;
    let recorder = match recorder {
        Some(r) => r,
        // One ledger for every environment: [ledger] is not per environment.
        None => recorder.insert(Recorder::open_for_watch(&project.config, watch.quiet)?),
    };
    let written = checked.record(&project, recorder)?;
    let done = Checked {
        environment: project.config.environment.clone(),
        servers: checked.live.servers.len(),
        written,
        fails: checked.verdict.fails,
    };
    Ok((done, project))
}
