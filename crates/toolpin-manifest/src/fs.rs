//! Atomic file replacement: a temporary file in the same directory, written,
//! flushed to disk, then renamed over the target. Readers see the old file or
//! the new one, never a mix; a failure leaves the old file byte-identical.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Replaces `path` with `bytes` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, mut file) = create_temp(&dir, path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // Make the rename itself durable; not every platform can open a
    // directory, so this is best effort.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
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
    fn missing_directory_is_an_error() {
        let path = Path::new("/nonexistent-toolpin-dir/x.lock");
        assert!(write_atomic(path, b"x").is_err());
    }
}
