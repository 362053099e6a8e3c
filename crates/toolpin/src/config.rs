//! Reading the configuration: the toolpin.toml format, its diagnostics and
//! `${VAR}` expansion live in `toolpin-config`; a `config::Error` becomes a
//! `CliError` (exit code 2) through `?`.

pub use toolpin_config::*;
// The configuration in capture, drift, proxy and usage types.
pub use toolpin_ops::settings::load_policy_and_evals;
