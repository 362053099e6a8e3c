//! Tool-usage aggregates (issue 19, point 2), first slice: streaming
//! readers of OTLP/JSON span files ([`span`]) and of the proxy's event log
//! ([`events`]), folded by [`ingest()`] into [`Aggregates`] (per hour,
//! environment, tenant, agent, catalog fingerprint and tool: calls, error
//! classes, a latency sketch, argument statistics) with an
//! [`IngestReport`] that accounts for every line, span and event. No
//! storage, no CLI, no network: docs/usage.md says what is still to come.

pub mod aggregate;
pub mod detect;
pub mod events;
pub mod ingest;
mod lines;
pub mod names;
mod proto;
pub mod report;
pub mod serial;
pub mod span;
mod table;

pub use aggregate::{
    Aggregates, ArgValue, Call, EventKey, Key, LatencySketch, Limits, ParamStats, ToolStats,
    KEY_PARTS, OTHER,
};
pub use ingest::{ingest, ingest_one, Format, IngestReport, Input, Occurrences, Options, Problem};
pub use names::NameMap;
pub use span::{read_body, BodyError, Encoding};
/// Instants, as every reader here takes them (`Options::now`).
pub use toolpin_manifest::time::Timestamp;
