//! One file as a catalog, whatever it holds: a lockfile, a tool-definition
//! file in any [`Format`], or an OpenAPI document (detected by content).
//! `toolpin diff OLD NEW` and `toolpin fingerprint FILE` read through here.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use toolpin_manifest::catalog::CatalogError;
use toolpin_manifest::lockfile::{self, LockfileError};
use toolpin_manifest::{Catalog, PinBuilder, Transform};

use crate::{openapi, source, CaptureError, Format};

/// Why a file cannot be read as a catalog.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{0}")]
    Capture(#[from] CaptureError),
    #[error("{0}")]
    Lockfile(#[from] LockfileError),
    #[error("{0}")]
    Catalog(#[from] CatalogError),
}

/// A file read as a catalog, and what converting it warned about.
#[derive(Debug)]
pub struct FileCatalog {
    pub catalog: Catalog,
    pub warnings: Vec<String>,
}

/// Reads `path` as a catalog. A tool file or OpenAPI document becomes one
/// server named after the file's stem (environment `default`); a document
/// is converted with the default settings. `forced` skips detection and
/// reads the file as tool definitions in that format.
pub fn catalog_from_path(path: &Path, forced: Option<Format>) -> Result<FileCatalog, FileError> {
    let origin = path.display().to_string();
    let bytes = source::read_file(path)?;
    if forced.is_none() && lockfile::looks_like_lockfile(&bytes) {
        let catalog = lockfile::parse(&bytes, &origin)?;
        return Ok(FileCatalog {
            catalog,
            warnings: Vec::new(),
        });
    }
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("file")
        .replace('/', "_");
    let mut builder = PinBuilder::new(Transform::default());
    let format = match source::parse_tools(&bytes, &origin, forced, &mut builder) {
        Ok(format) => format,
        // Not tool definitions: perhaps an OpenAPI document. Tool files
        // pay nothing for the check.
        Err(e) if forced.is_none() => {
            return match openapi_catalog(path, &bytes, &origin, name)? {
                Some(found) => Ok(found),
                None => Err(e.into()),
            }
        }
        Err(e) => return Err(e.into()),
    };
    let pin = builder.finish(json!({ "file": origin }), format.name(), None);
    let catalog = Catalog::new("default", BTreeMap::from([(name, pin)]))?;
    Ok(FileCatalog {
        catalog,
        warnings: Vec::new(),
    })
}

/// The catalog of an OpenAPI document (JSON with an `openapi` or
/// `swagger` member, or YAML with one at the start of a line), converted
/// with the default settings; `None` if the file is not one.
fn openapi_catalog(
    path: &Path,
    bytes: &[u8],
    origin: &str,
    name: String,
) -> Result<Option<FileCatalog>, FileError> {
    let text = String::from_utf8_lossy(bytes);
    let doc = match text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .next()
    {
        Some('{') => match toolpin_manifest::json::parse(bytes, origin) {
            Ok(doc) if toolpin_openapi::is_openapi(&doc) => doc,
            _ => return Ok(None),
        },
        Some('[') | None => return Ok(None),
        Some(_) => {
            let yaml_openapi = text.lines().any(|l| {
                let l = l.trim_start_matches('\u{feff}');
                [
                    "openapi:",
                    "swagger:",
                    "\"openapi\":",
                    "\"swagger\":",
                    "'openapi':",
                    "'swagger':",
                ]
                .iter()
                .any(|p| l.starts_with(p))
            });
            if !yaml_openapi {
                return Ok(None);
            }
            openapi::parse_document(bytes, origin)?
        }
    };
    if bytes.len() as u64 > openapi::MAX_DOCUMENT_BYTES {
        // The document reader's message states the limit.
        openapi::read_document(path)?;
    }
    let options = toolpin_openapi::Options::default();
    let mut builder = PinBuilder::new(Transform::default());
    let warnings = openapi::convert_into(&doc, &options, origin, &mut builder)?;
    drop(doc);
    let source = json!({ "openapi": origin, "conversion": options.record() });
    let pin = builder.finish(source, Format::OpenApi.name(), None);
    let catalog = Catalog::new("default", BTreeMap::from([(name, pin)]))?;
    Ok(Some(FileCatalog { catalog, warnings }))
}
