//! Eval result files, read into one shape: a case run (did case X pass, which
//! tools did the agent call, how many turns, what did it cost). `toolpin
//! compare` and `toolpin evals run` read every side through here.
//!
//! Each reader lives in its own module and is detected by content
//! (`detect`), never by file name alone; `--input-format` overrides the
//! detection. docs/compare.md lists what each reader takes from its format.

mod inspect;
mod junit;
mod promptfoo;
mod pytest;
pub mod records;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A result file that cannot be read: the crate's one-line error, naming
/// the file (and the line, for JSON lines) with [`Error::at`] and
/// [`Error::at_line`].
pub use crate::Error;

/// Tool names, interned: a suite of 10,000 cases × 5 repeats calls the same
/// few dozen tools millions of times, and the comparison groups by name.
#[derive(Debug, Default, Clone)]
pub struct Names {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Names {
    /// The id of `name`, added when new.
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    /// The id of `name`, if it was ever seen.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map(|n| &**n).unwrap_or("")
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// What a run cost, as far as the harness said.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Cost {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub usd: Option<f64>,
}

/// One run of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRun {
    /// The case id, as the harness names it (a test node id, a sample id…).
    pub case: String,
    pub passed: bool,
    pub score: Option<f64>,
    /// The repeat the harness says this run belongs to; `None` when the file
    /// does not say (the file is then one repeat).
    pub repeat: Option<u32>,
    /// The tools the agent called, in order, as ids into `Names`; `None`
    /// when the format or the harness did not record them (which is not the
    /// same as an agent that called nothing).
    pub tool_calls: Option<Vec<u32>>,
    pub turns: Option<u32>,
    pub cost: Option<Cost>,
    pub error: Option<String>,
    /// Where in the file the run was (1-based line), for messages.
    pub line: Option<usize>,
}

impl CaseRun {
    pub fn new(case: impl Into<String>, passed: bool) -> Self {
        CaseRun {
            case: case.into(),
            passed,
            score: None,
            repeat: None,
            tool_calls: None,
            turns: None,
            cost: None,
            error: None,
            line: None,
        }
    }
}

/// The result formats toolpin reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    /// toolpin's own case records: JSON lines (docs/compare.md).
    Records,
    /// pytest-json-report's `--json-report-file`.
    PytestJson,
    /// JUnit XML (pytest `--junitxml`, and most test runners).
    Junit,
    /// `promptfoo eval -o results.json`.
    Promptfoo,
    /// Inspect AI logs, `.eval` (zip) or `.json`.
    Inspect,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Records,
        Format::PytestJson,
        Format::Junit,
        Format::Promptfoo,
        Format::Inspect,
    ];

    /// The `--input-format` value.
    pub fn name(self) -> &'static str {
        match self {
            Format::Records => "records",
            Format::PytestJson => "pytest-json",
            Format::Junit => "junit",
            Format::Promptfoo => "promptfoo",
            Format::Inspect => "inspect",
        }
    }

    pub fn parse(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                format!("unknown input format {s:?} (expected {})", names.join(", "))
            })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The format of a file's content, if it is one toolpin reads. Only the
/// first bytes are looked at (plus the top-level keys of a JSON document).
pub fn detect(bytes: &[u8]) -> Option<Format> {
    let start = skip_space(bytes);
    let head = &bytes[start..];
    if head.starts_with(b"PK\x03\x04") {
        return inspect::detect_zip(bytes).then_some(Format::Inspect);
    }
    if head.starts_with(b"<") {
        return junit::detect(head).then_some(Format::Junit);
    }
    if !head.starts_with(b"{") {
        return None;
    }
    // One object per line whose first member set includes "case": records.
    // A whole-file JSON document is one of the others.
    if records::detect(head) {
        return Some(Format::Records);
    }
    let doc: serde_json::Value = serde_json::from_slice(head).ok()?;
    let obj = doc.as_object()?;
    if pytest::detect(obj) {
        Some(Format::PytestJson)
    } else if promptfoo::detect(obj) {
        Some(Format::Promptfoo)
    } else if inspect::detect_json(obj) {
        Some(Format::Inspect)
    } else {
        None
    }
}

fn skip_space(bytes: &[u8]) -> usize {
    // A UTF-8 byte order mark, then whitespace.
    let mut i = if bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Reads one result file in a known format.
pub fn read_as(
    path: &Path,
    bytes: &[u8],
    format: Format,
    names: &mut Names,
) -> Result<Vec<CaseRun>, Error> {
    match format {
        Format::Records => records::read(path, bytes, names),
        Format::PytestJson => pytest::read(path, bytes, names),
        Format::Junit => junit::read(path, bytes, names),
        Format::Promptfoo => promptfoo::read(path, bytes, names),
        Format::Inspect => inspect::read(path, bytes, names),
    }
}

/// One run of the whole suite.
#[derive(Debug, Clone, Default)]
pub struct Repeat {
    /// The files it came from, as given.
    pub sources: Vec<PathBuf>,
    pub cases: Vec<CaseRun>,
}

/// What `visit_results` calls per file: its path, format and bytes.
pub type Visit<'a> = dyn FnMut(&Path, Format, &[u8]) -> Result<(), Error> + 'a;

/// Calls `visit` with each result file a path stands for, read once: the
/// file itself, or every file under a directory (sorted, recursively) whose
/// content is a known format (or the `--input-format`). Files in no known
/// format are skipped inside a directory and refused when named directly.
/// Each file's bytes are dropped before the next is read, so a directory of
/// repeats never sits in memory whole.
pub fn visit_results(path: &Path, format: Option<Format>, visit: &mut Visit) -> Result<(), Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::at(path, io_reason(&e)))?;
    if !meta.is_dir() {
        let bytes = std::fs::read(path).map_err(|e| Error::at(path, io_reason(&e)))?;
        let found = match format {
            Some(f) => f,
            None => detect(&bytes).ok_or_else(|| Error::at(
                path,
                "not a result file toolpin reads (case records, pytest-json-report, JUnit XML, promptfoo or Inspect AI); name one with --input-format",
            ))?,
        };
        return visit(path, found, &bytes);
    }
    let found = visit_dir(path, format, visit)?;
    if found == 0 {
        return Err(Error::at(
            path,
            match format {
                Some(f) => format!("no {f} result files in this directory"),
                None => "no result files in this directory (case records, pytest-json-report, JUnit XML, promptfoo or Inspect AI)".to_string(),
            },
        ));
    }
    Ok(())
}

/// The result files under a directory, as `visit_results` visits them;
/// returns how many there were (none is not an error here).
pub fn visit_dir(path: &Path, format: Option<Format>, visit: &mut Visit) -> Result<usize, Error> {
    let mut files = Vec::new();
    walk(path, &mut files)?;
    files.sort();
    let mut found = 0usize;
    for file in files {
        let bytes = std::fs::read(&file).map_err(|e| Error::at(&file, io_reason(&e)))?;
        let f = match (format, detect(&bytes)) {
            (Some(want), Some(f)) if f == want => f,
            (None, Some(f)) => f,
            _ => continue,
        };
        found += 1;
        visit(&file, f, &bytes)?;
    }
    Ok(found)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::at(dir, io_reason(&e)))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::at(dir, io_reason(&e)))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| Error::at(&path, io_reason(&e)))?;
        if kind.is_dir() {
            walk(&path, out)?;
        } else if kind.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// An I/O error without the "(os error N)" tail.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => {
            let text = e.to_string();
            match text.find(" (os error") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        }
    }
}

/// Reads the result files of one side into its repeats. Each file is one
/// repeat, unless its runs carry a `repeat` number of their own: case
/// records that name repeat K, from whichever file, make up repeat K; the
/// repeats (or epochs) of a promptfoo or Inspect file are that file's own. A case id twice in
/// one repeat is an error; so is a side with no cases at all.
pub fn read_side(
    what: &str,
    paths: &[PathBuf],
    format: Option<Format>,
    names: &mut Names,
) -> Result<Vec<Repeat>, Error> {
    let mut unnumbered: Vec<Repeat> = Vec::new();
    // Case records number their repeats for the whole side (a harness may
    // write one file per repeat, or one file for all); promptfoo's and
    // Inspect's numbers (rows of --repeat, epochs) count within one file.
    let mut numbered: std::collections::BTreeMap<(usize, u32), Repeat> = Default::default();
    let mut file_index = 0usize;
    for path in paths {
        visit_results(path, format, &mut |file, format, bytes| {
            let runs = read_as(file, bytes, format, names)?;
            file_index += 1;
            let scope = if format == Format::Records {
                0
            } else {
                file_index
            };
            let mut own = Repeat {
                sources: vec![file.to_path_buf()],
                cases: Vec::new(),
            };
            for run in runs {
                match run.repeat {
                    None => own.cases.push(run),
                    Some(k) => {
                        let r = numbered.entry((scope, k)).or_default();
                        if r.sources.last().map(PathBuf::as_path) != Some(file) {
                            r.sources.push(file.to_path_buf());
                        }
                        r.cases.push(run);
                    }
                }
            }
            if !own.cases.is_empty() {
                unnumbered.push(own);
            }
            Ok(())
        })?;
    }
    let repeats: Vec<Repeat> = numbered.into_values().chain(unnumbered).collect();
    if repeats.iter().all(|r| r.cases.is_empty()) {
        let shown: Vec<String> = paths
            .iter()
            .map(|p| toolpin_manifest::text::shown_path(p))
            .collect();
        return Err(Error::new(format!(
            "{what}: no case runs in {}",
            shown.join(", ")
        )));
    }
    for repeat in &repeats {
        check_unique(repeat)?;
    }
    Ok(repeats)
}

/// A case id at most once per repeat.
pub fn check_unique(repeat: &Repeat) -> Result<(), Error> {
    let mut seen: HashMap<&str, &CaseRun> = HashMap::with_capacity(repeat.cases.len());
    for run in &repeat.cases {
        if let Some(first) = seen.insert(&run.case, run) {
            let file = repeat.sources.first().cloned().unwrap_or_default();
            let message = format!(
                "case {:?} appears twice in one repeat{}",
                run.case,
                match (first.line, run.repeat) {
                    (Some(l), Some(k)) => format!(" (repeat {k}; first on line {l})"),
                    (Some(l), None) => format!(" (first on line {l})"),
                    (None, Some(k)) => format!(" (repeat {k})"),
                    (None, None) => String::new(),
                }
            );
            return Err(match run.line {
                Some(line) => Error::at_line(&file, line, message),
                None => Error::at(&file, message),
            });
        }
    }
    Ok(())
}
