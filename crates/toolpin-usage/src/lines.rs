//! Lines of a file, one at a time into one reused buffer, each capped:
//! memory stays bounded by the longest line allowed, not the file.

use std::io::{self, BufRead};

/// One line as read.
pub(crate) struct Line<'b> {
    /// 1-based.
    pub number: u64,
    /// Without the newline (and without a `\r` before it).
    pub bytes: &'b [u8],
    /// The line ended with a newline (a last line without one may have
    /// been cut off by a writer that died).
    pub terminated: bool,
    /// Bytes beyond the cap that were skipped; `bytes` is then partial.
    pub skipped: u64,
}

pub(crate) struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    number: u64,
    max: usize,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            number: 0,
            max,
        }
    }

    /// The next line, `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buf.clear();
        let mut skipped = 0u64;
        let mut terminated = false;
        let mut any = false;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            let room = self.max.saturating_sub(self.buf.len());
            let kept = take.min(room);
            self.buf.extend_from_slice(&chunk[..kept]);
            skipped += (take - kept) as u64;
            self.reader.consume(take + usize::from(done));
            if done {
                terminated = true;
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        if terminated && self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(Line {
            number: self.number,
            bytes: &self.buf,
            terminated,
            skipped,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_capped_and_numbered() {
        let input: &[u8] = b"ab\r\n\nlong line here\nlast";
        let mut lines = Lines::new(io::BufReader::with_capacity(3, input), 4);
        let mut got = Vec::new();
        while let Ok(Some(l)) = lines.next_line() {
            got.push((
                l.number,
                String::from_utf8_lossy(l.bytes).into_owned(),
                l.terminated,
                l.skipped,
            ));
        }
        assert_eq!(
            got,
            vec![
                (1, "ab".into(), true, 0),
                (2, "".into(), true, 0),
                (3, "long".into(), true, 10),
                (4, "last".into(), false, 0),
            ]
        );
    }
}
