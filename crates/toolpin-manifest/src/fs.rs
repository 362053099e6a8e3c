//! Atomic file replacement: a temporary file in the same directory, written,
//! flushed to disk, then renamed over the target (through symbolic links). Readers see the old file or
//! the new one, never a mix; a failure leaves the old file byte-identical.
//!
//! A target that exists and is not a regular file (`/dev/null`, a FIFO,
//! `/dev/stdout`, a shell's `>(jq .)`) is written in place, as `cp` and a
//! shell's `>` do: renaming over it would replace a device every process
//! shares with a regular file, and there is no old content to keep.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// toolpin's state directory beside toolpin.toml: what a run keeps for
/// itself (the default ledger), never meant for version control.
pub const STATE_DIR: &str = ".toolpin";

/// Creates toolpin's state directory `dir` (and its parents) when missing,
/// with a `.gitignore` that ignores everything in it, so that `git add .`
/// never picks up a ledger. An existing `.gitignore` is left alone.
pub fn ensure_state_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        write_atomic(
            &ignore,
            b"# Created by toolpin: its local state, not for version control.\n*\n",
        )?;
    }
    Ok(())
}

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
///
/// A file that already has the same bytes is not touched, and nothing is
/// written to find that out: the new content is compared with the old as
/// it is produced, so an unchanged file on a read-only or full disk is no
/// error. When `path` is a symbolic link, the file it points to is
/// replaced (the temporary file goes in that file's directory), and the
/// link stays.
pub fn replace_with(
    path: &Path,
    mut write: impl FnMut(&mut dyn Write) -> io::Result<()>,
) -> io::Result<Replaced> {
    // The kernel follows every link here, including /proc's magic ones
    // (`/dev/stdout` -> `/proc/self/fd/1` -> `pipe:[…]`) that no path names.
    if fs::metadata(path).is_ok_and(|meta| !meta.is_file() && !meta.is_dir()) {
        return write_in_place(path, &mut write);
    }
    let target = through_links(path)?;
    if holds_already(&target, &mut write) {
        return Ok(Replaced::Unchanged);
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, file) = create_temp(&dir, &target)?;
    let mut out = BufWriter::with_capacity(256 << 10, file);
    let written = write(&mut out)
        .and_then(|()| out.into_inner().map_err(|e| e.into_error()))
        .and_then(|file| file.sync_all())
        .and_then(|()| fs::rename(&tmp, &target));
    match written {
        Ok(()) => {
            // Make the rename itself durable; not every platform can open a
            // directory, so this is best effort.
            if let Ok(d) = File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(Replaced::Written)
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes into a device, FIFO or socket that already exists: opened for
/// writing (blocking until a FIFO has a reader, as a shell does), never
/// created, never renamed over.
fn write_in_place(
    path: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
) -> io::Result<Replaced> {
    let file = OpenOptions::new().write(true).truncate(true).open(path)?;
    let mut out = BufWriter::with_capacity(64 << 10, file);
    write(&mut out)?;
    out.flush()?;
    Ok(Replaced::Written)
}

/// How many symbolic links are followed before giving up (Linux's limit).
const MAX_LINKS: usize = 40;

/// The file `path` names once every symbolic link is followed (the last
/// one may dangle: the file it names is then created).
fn through_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow"
    )))
}

/// Whether the regular file `target` already holds exactly what `write`
/// produces; reads only, and stops producing at the first difference.
fn holds_already(target: &Path, write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>) -> bool {
    let Ok(meta) = fs::metadata(target) else {
        return false;
    };
    let Ok(file) = File::open(target) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let mut cmp = Compare {
        old: io::BufReader::with_capacity(64 << 10, file),
        buf: vec![0u8; 64 << 10],
    };
    // A difference ends `write` early with an error; so does a failed read.
    if write(&mut cmp).is_err() {
        return false;
    }
    // Equal so far: the old file must end here too.
    matches!(cmp.old.read(&mut [0u8; 1]), Ok(0))
}

/// A writer that compares what it is given with a file's next bytes.
struct Compare {
    old: io::BufReader<File>,
    buf: Vec<u8>,
}

impl Write for Compare {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let n = bytes.len().min(self.buf.len());
        self.old.read_exact(&mut self.buf[..n])?;
        if self.buf[..n] != bytes[..n] {
            return Err(io::Error::other("differs"));
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn create_temp(dir: &Path, target: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let stem = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("toolpin");
    let nanos = crate::time::Timestamp::now().since_epoch().subsec_nanos();
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
    fn writes_through_symbolic_links_into_the_targets_directory() {
        let dir = std::env::temp_dir().join(format!("toolpin-fs-link-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("real")).expect("dir");
        fs::create_dir_all(dir.join("work")).expect("dir");
        fs::write(dir.join("real/a.lock"), b"old").expect("write");
        // work/a.lock -> b.lock -> ../real/a.lock (relative links, chained)
        std::os::unix::fs::symlink("../real/a.lock", dir.join("work/b.lock")).expect("link");
        std::os::unix::fs::symlink("b.lock", dir.join("work/a.lock")).expect("link");
        let link = dir.join("work/a.lock");
        assert_eq!(write_atomic_replaced(&link, b"new"), Replaced::Written);
        assert!(fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(dir.join("real/a.lock")).expect("read"), b"new");
        assert_eq!(write_atomic_replaced(&link, b"new"), Replaced::Unchanged);
        let names = |d: &str| {
            let mut n: Vec<String> = fs::read_dir(dir.join(d))
                .expect("list")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names("work"), vec!["a.lock", "b.lock"]);
        assert_eq!(names("real"), vec!["a.lock"]);
        // A link loop is an error, not a hang.
        std::os::unix::fs::symlink("loop", dir.join("work/loop")).expect("link");
        let err = write_atomic(&dir.join("work/loop"), b"x").expect_err("loop");
        assert_eq!(err.to_string(), "more than 40 symbolic links to follow");
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    fn write_atomic_replaced(path: &Path, bytes: &[u8]) -> Replaced {
        replace_with(path, |w| w.write_all(bytes)).expect("write")
    }

    #[test]
    fn a_longer_or_shorter_old_file_differs() {
        let dir = std::env::temp_dir().join(format!("toolpin-fs-len-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("a.lock");
        fs::write(&path, b"abc").expect("write");
        assert_eq!(write_atomic_replaced(&path, b"ab"), Replaced::Written);
        assert_eq!(write_atomic_replaced(&path, b"abc"), Replaced::Written);
        assert_eq!(write_atomic_replaced(&path, b"abc"), Replaced::Unchanged);
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(write_atomic_replaced(&path, &big), Replaced::Written);
        assert_eq!(write_atomic_replaced(&path, &big), Replaced::Unchanged);
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn a_device_or_fifo_is_written_in_place_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        // /dev/null stays a character device (as root, a rename would have
        // replaced it for every process on the machine).
        write_atomic(Path::new("/dev/null"), b"discarded").expect("write /dev/null");
        let meta = fs::metadata("/dev/null").expect("meta");
        assert!(meta.file_type().is_char_device());

        let dir = std::env::temp_dir().join(format!("toolpin-fs-fifo-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("dir");
        let fifo = dir.join("out.fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(&fifo).expect("read fifo"))
        };
        write_atomic(&fifo, b"through the pipe").expect("write fifo");
        assert_eq!(reader.join().expect("reader"), b"through the pipe");
        assert!(fs::symlink_metadata(&fifo)
            .expect("meta")
            .file_type()
            .is_fifo());
        // A link to the FIFO is followed and kept.
        let link = dir.join("link");
        std::os::unix::fs::symlink(&fifo, &link).expect("link");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(&fifo).expect("read fifo"))
        };
        write_atomic(&link, b"again").expect("write link");
        assert_eq!(reader.join().expect("reader"), b"again");
        assert!(fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_dir(&dir).expect("list").count(), 2);
        fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn missing_directory_is_an_error() {
        let path = Path::new("/nonexistent-toolpin-dir/x.lock");
        assert!(write_atomic(path, b"x").is_err());
    }
}
