//! Writing to the drift ledger from an operation: opened from `[ledger]`,
//! and when it cannot be written the command warns and goes on, unless
//! `[ledger] required = true` makes that an error (exit 2).

use crate::settings as config;
use toolpin_ledger::Ledger;

use crate::Error;

pub struct Recorder {
    ledger: Option<Ledger>,
    required: bool,
    /// Whether a ledger that cannot be opened or written is worth a
    /// warning: not for the embedded default of a command that records on
    /// the side (a read-only checkout has none).
    warn: bool,
    secrets: Vec<(String, String)>,
    quiet: bool,
}

impl Recorder {
    /// Opens the ledger `cfg` names (nothing when it is turned off), for a
    /// command that records on the side: the embedded default that cannot
    /// be opened is no warning.
    pub fn open(cfg: &config::Config, quiet: bool) -> Result<Self, Error> {
        Self::open_as(cfg, quiet, cfg.ledger.configured)
    }

    /// Opens the ledger for `watch`, whose job recording is: a ledger that
    /// cannot be opened is always worth a warning.
    pub fn open_for_watch(cfg: &config::Config, quiet: bool) -> Result<Self, Error> {
        Self::open_as(cfg, quiet, true)
    }

    fn open_as(cfg: &config::Config, quiet: bool, warn: bool) -> Result<Self, Error> {
        let mut recorder = Self {
            ledger: None,
            required: cfg.ledger.required,
            warn,
            secrets: cfg.ledger.secrets.clone(),
            quiet,
        };
        match crate::open::open(&cfg.ledger) {
            Ok(ledger) => recorder.ledger = ledger,
            Err(e) => recorder.unavailable(&e)?,
        }
        Ok(recorder)
    }

    /// Runs `write` on the ledger, if there is one; a failure is an error
    /// when the ledger is required, a warning otherwise (and the ledger is
    /// not tried again by this command).
    pub fn write<T>(
        &mut self,
        write: impl FnOnce(&mut Ledger) -> Result<T, toolpin_ledger::Error>,
    ) -> Result<Option<T>, Error> {
        let Some(ledger) = self.ledger.as_mut() else {
            return Ok(None);
        };
        match write(ledger) {
            Ok(v) => Ok(Some(v)),
            Err(e) => {
                self.ledger = None;
                let line = toolpin_manifest::Redactor::new(&self.secrets).redact(&e.to_string());
                self.unavailable(&line)?;
                Ok(None)
            }
        }
    }

    /// Delivers what is due to `sender`'s sinks now, and says what was sent
    /// (failures always, the counts unless quiet).
    pub fn deliver_due(&mut self, sender: &crate::deliver::NotifySender) -> Result<(), Error> {
        let names = sender.names();
        let quiet = self.quiet;
        let done = self.write(|ledger| {
            crate::deliver::deliver_due(ledger, sender, Some(&names), &crate::now)
        })?;
        if let Some(done) = done {
            for e in &done.errors {
                eprintln!("warning: {e}");
            }
            if !quiet && (done.delivered + done.retrying + done.given_up) > 0 {
                eprintln!(
                    "notified: {} sent, {} to retry, {} given up",
                    done.delivered, done.retrying, done.given_up
                );
            }
        }
        Ok(())
    }

    fn unavailable(&self, why: &str) -> Result<(), Error> {
        if self.required {
            return Err(Error::new(format!("ledger: {why}")));
        }
        if self.warn && !self.quiet {
            eprintln!("warning: ledger: {why}; nothing recorded ([ledger] required = true makes this an error)");
        }
        Ok(())
    }
}
