//! Atomic file replacement: a temporary file in the same directory, written,
//! flushed to disk, then renamed over the target. Readers see the old file or
//! the new one, never a mix; a failure leaves the old file byte-identical.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What [`replace_with`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replaced {
    /// The file now holds the new content.
    Written,
    /// The file already held exactly the new content and was left alone
    /// (its modification time too).
    Unchanged,
}

/// Replaces `path` with `bytes` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(path, |w| w.write_all(bytes)).map(|_| ())
}

/// Replaces `path` atomically with what `write` produces, streamed to the
/// temporary file so that a large document is never held in memory whole.
/// A file that already has the same bytes is not touched.
pub fn replace_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<Replaced> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, file) = create_temp(&dir, path)?;
    let mut out = BufWriter::with_capacity(256 << 10, file);
    let written = write(&mut out)
        .and_then(|()| out.into_inner().map_err(|e| e.into_error()))
        .and_then(|file| file.sync_all());
    let outcome = written.and_then(|()| {
        if same_content(&tmp, path)? {
            fs::remove_file(&tmp)?;
            Ok(Replaced::Unchanged)
        } else {
            fs::rename(&tmp, path)?;
            Ok(Replaced::Written)
        }
    });
    match outcome {
        Ok(Replaced::Written) => {
            // Make the rename itself durable; not every platform can open a
            // directory, so this is best effort.
            if let Ok(d) = File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(Replaced::Written)
        }
        Ok(Replaced::Unchanged) => Ok(Replaced::Unchanged),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Whether two files hold the same bytes (a missing `b` differs).
fn same_content(a: &Path, b: &Path) -> io::Result<bool> {
    let (Ok(ma), Ok(mb)) = (fs::metadata(a), fs::metadata(b)) else {
        return Ok(false);
    };
    if ma.len() != mb.len() || !mb.is_file() {
        return Ok(false);
    }
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let n = read_full(&mut fa, &mut ba)?;
        let m = read_full(&mut fb, &mut bb)?;
        if n != m || ba[..n] != bb[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match f.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn create_temp(dir: &Path, target: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let stem = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("toolpin");
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{stem}.{}.{nanos}.{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("toolpin-fs-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("a.lock");
        write_atomic(&path, b"one").expect("write");
        write_atomic(&path, b"two").expect("write");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        let entries = fs::read_dir(&dir).expect("list").count();
        assert_eq!(entries, 1);
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn identical_content_is_left_alone() {
        let dir = std::env::temp_dir().join(format!("toolpin-fs-same-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("a.lock");
        assert_eq!(
            replace_with(&path, |w| w.write_all(b"x")).expect("write"),
            Replaced::Written
        );
        assert_eq!(
            replace_with(&path, |w| w.write_all(b"x")).expect("write"),
            Replaced::Unchanged
        );
        assert_eq!(
            replace_with(&path, |w| w.write_all(b"y")).expect("write"),
            Replaced::Written
        );
        let failed = replace_with(&path, |_| Err(io::Error::other("boom")));
        assert!(failed.is_err());
        assert_eq!(fs::read(&path).expect("read"), b"y");
        assert_eq!(fs::read_dir(&dir).expect("list").count(), 1);
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn missing_directory_is_an_error() {
        let path = Path::new("/nonexistent-toolpin-dir/x.lock");
        assert!(write_atomic(path, b"x").is_err());
    }
}
