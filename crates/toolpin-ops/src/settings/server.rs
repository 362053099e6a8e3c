//! A configured server ([`toolpin_config::Server`], plain data) turned into
//! the capture crate's [`Server`]: what only the capture and OpenAPI
//! crates can spell (protocol revisions, output formats, merges, body
//! modes, path patterns) is checked here, with errors in the
//! configuration's form (`` `key`: why ``).

use serde_json::{json, Map, Value};
use toolpin_capture::mcp::{self, HttpMode, HttpSpec, SessionOptions, StdioSpec, VersionChoice};
use toolpin_capture::openapi::DEFAULT_FETCH_TIMEOUT;
use toolpin_capture::record::{Merge, RecordSpec};
use toolpin_capture::{DocumentLocation, Endpoint, Format, OpenApiSpec, Server, Source};
use toolpin_config::server as config;
use toolpin_manifest::Glob;

/// The capture crate's server for `server`; the error names the key.
pub fn server(server: config::Server) -> Result<Server, String> {
    let mut record = server.record;
    let source = source(server.source, &mut record)?;
    let format = match &server.format {
        None => None,
        Some(f) => Some(f.parse::<Format>().map_err(|e| format!("`format`: {e}"))?),
    };
    Ok(Server {
        name: server.name,
        source,
        format,
        transform: server.transform,
        record: Value::Object(record),
        secrets: server.secrets,
        credentials: server.credentials,
    })
}

/// The capture crate's source; `record` gains what only that crate
/// spells (a merge's name, an OpenAPI conversion's record).
fn source(source: config::Source, record: &mut Map<String, Value>) -> Result<Source, String> {
    Ok(match source {
        config::Source::File { path } => Source::File { path },
        config::Source::Exec {
            argv,
            env,
            cwd,
            timeout,
        } => Source::Exec {
            argv,
            env,
            cwd,
            timeout,
        },
        config::Source::Mcp { endpoint, session } => Source::Mcp {
            session: session_options(session)?,
            endpoint: match endpoint {
                config::Endpoint::Stdio { command, env, cwd } => Endpoint::Stdio(StdioSpec {
                    command,
                    env,
                    cwd,
                    reader: None,
                }),
                config::Endpoint::Http {
                    url,
                    headers,
                    transport,
                } => Endpoint::Http(HttpSpec {
                    url,
                    headers,
                    mode: match transport {
                        config::Transport::Auto => HttpMode::Auto,
                        config::Transport::Streamable => HttpMode::Streamable,
                        config::Transport::Sse => HttpMode::Sse,
                    },
                }),
            },
        },
        config::Source::OpenApi {
            location,
            timeout,
            conversion,
        } => {
            let options = openapi_options(&conversion)?;
            record.insert("conversion".into(), options.record());
            Source::OpenApi(OpenApiSpec {
                location: match location {
                    config::Location::File(path) => DocumentLocation::File(path),
                    config::Location::Url { url, headers } => {
                        DocumentLocation::Url { url, headers }
                    }
                },
                options,
                timeout: timeout.unwrap_or(DEFAULT_FETCH_TIMEOUT),
            })
        }
        config::Source::Record {
            argv,
            env,
            cwd,
            timeout,
            merge,
        } => {
            let merge = match merge {
                None => Merge::default(),
                Some(m) => {
                    let merge = Merge::parse(&m).map_err(|e| format!("`merge`: {e}"))?;
                    record.insert("merge".into(), json!(merge.name()));
                    merge
                }
            };
            Source::Record(RecordSpec {
                argv,
                env,
                cwd,
                timeout,
                merge,
            })
        }
    })
}

/// An MCP source's session settings over the capture crate's defaults;
/// `protocol_version` must be a revision toolpin speaks.
fn session_options(session: config::Session) -> Result<SessionOptions, String> {
    let mut opts = SessionOptions::default();
    if let Some(v) = session.protocol_version {
        let known = v == mcp::STATELESS_VERSION || mcp::HANDSHAKE_VERSIONS.contains(&v.as_str());
        if !known {
            return Err(format!(
                "`protocol_version`: {v:?} is not a protocol revision toolpin speaks ({}, {})",
                mcp::STATELESS_VERSION,
                mcp::HANDSHAKE_VERSIONS.join(", ")
            ));
        }
        opts.version = VersionChoice::Pinned(v);
    }
    if let Some(caps) = session.client_capabilities {
        opts.client_capabilities = caps;
    }
    if let Some(info) = session.client_info {
        opts.client_info = info;
    }
    if let Some(t) = session.connect_timeout {
        opts.timeouts.connect = t;
    }
    if let Some(t) = session.init_timeout {
        opts.timeouts.initialize = t;
    }
    if let Some(t) = session.page_timeout {
        opts.timeouts.page = t;
    }
    if let Some(n) = session.max_pages {
        opts.max_pages = n;
    }
    Ok(opts)
}

/// How an OpenAPI document's operations become tools.
fn openapi_options(c: &config::Conversion) -> Result<toolpin_openapi::Options, String> {
    let mut options = toolpin_openapi::Options::default();
    if let Some(body) = &c.body {
        options.body =
            toolpin_openapi::BodyMode::parse(body).map_err(|e| format!("`body`: {e}"))?;
    }
    if let Some(b) = c.output_schema {
        options.output_schema = b;
    }
    if let Some(b) = c.allow_remote_refs {
        options.allow_remote_refs = b;
    }
    let globs = |key: &str, list: &[String]| {
        list.iter()
            .map(|g| Glob::new(g).map_err(|e| format!("`{key}`: {e}")))
            .collect::<Result<Vec<_>, _>>()
    };
    let paths = |key: &str, list: &[String]| {
        list.iter()
            .map(|p| toolpin_openapi::PathPattern::parse(p).map_err(|e| format!("`{key}`: {e}")))
            .collect::<Result<Vec<_>, _>>()
    };
    options.selection = toolpin_openapi::Selection {
        include_operations: globs("include_operations", &c.include_operations)?,
        exclude_operations: globs("exclude_operations", &c.exclude_operations)?,
        include_tags: globs("include_tags", &c.include_tags)?,
        exclude_tags: globs("exclude_tags", &c.exclude_tags)?,
        include_paths: paths("include_paths", &c.include_paths)?,
        exclude_paths: paths("exclude_paths", &c.exclude_paths)?,
    };
    Ok(options)
}
