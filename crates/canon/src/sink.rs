//! A fixed-size staging buffer between the writer and the caller's `io::Write`.
//!
//! The writer emits many tiny tokens (`,`, `:`, a key, a number); one `write_all` each would
//! cost more than the bytes themselves on a hasher or a `Vec`. The sink gathers them in an
//! 8 KiB array and hands the sink's owner whole chunks: bounded memory, never the whole
//! document. An I/O error is kept and reported once at the end, which keeps every `put` on
//! the hot path free of error handling.

use std::io;

const CAPACITY: usize = 8 * 1024;

/// Copies up to 16 bytes with fixed-size moves (two overlapping ones), where a `memcpy` call
/// would cost more than the copy: most tokens are a few bytes long.
#[inline(always)]
fn small_copy(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..n].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..n].copy_from_slice(&src[n - 4..]);
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

/// Where the canonical writers put their tokens: the staging [`Sink`] in front of an
/// `io::Write`, or a `Vec` the streaming canonicaliser keeps until an object's members can be
/// put in order.
pub(crate) trait Out {
    fn put(&mut self, bytes: &[u8]);
    fn byte(&mut self, b: u8);
    /// `"` + `bytes` + `"`: a string that needs no escaping, in one bounds check where the
    /// output allows it (most keys and short strings of a state are such strings).
    #[inline]
    fn quoted(&mut self, bytes: &[u8]) {
        self.byte(b'"');
        self.put(bytes);
        self.byte(b'"');
    }
}

impl Out for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    #[inline]
    fn byte(&mut self, b: u8) {
        self.push(b);
    }
    #[inline]
    fn quoted(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len() + 2);
        self.push(b'"');
        self.extend_from_slice(bytes);
        self.push(b'"');
    }
}

impl<W: io::Write> Out for Sink<'_, W> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        Sink::put(self, bytes);
    }
    #[inline]
    fn byte(&mut self, b: u8) {
        Sink::byte(self, b);
    }
    #[inline]
    fn quoted(&mut self, bytes: &[u8]) {
        Sink::quoted(self, bytes);
    }
}

pub(crate) struct Sink<'a, W: io::Write> {
    out: &'a mut W,
    buf: [u8; CAPACITY],
    len: usize,
    error: Option<io::Error>,
}

impl<'a, W: io::Write> Sink<'a, W> {
    pub(crate) fn new(out: &'a mut W) -> Self {
        Sink {
            out,
            buf: [0; CAPACITY],
            len: 0,
            error: None,
        }
    }

    #[inline]
    pub(crate) fn put(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        if n <= CAPACITY - self.len {
            let dst = &mut self.buf[self.len..];
            if n <= 16 && dst.len() >= 16 {
                small_copy(dst, bytes);
            } else {
                dst[..n].copy_from_slice(bytes);
            }
            self.len += n;
        } else {
            self.spill(bytes);
        }
    }

    /// As [`Out::quoted`]: one room check for a short string and its quotes (with the 16
    /// bytes `small_copy` may touch), else the general path.
    #[inline]
    pub(crate) fn quoted(&mut self, bytes: &[u8]) {
        const ROOM: usize = 2 + 16 + 16;
        let n = bytes.len();
        if n <= 16 && self.len <= CAPACITY - ROOM {
            let dst: &mut [u8; ROOM] = (&mut self.buf[self.len..self.len + ROOM])
                .try_into()
                .expect("ROOM bytes");
            dst[0] = b'"';
            small_copy(&mut dst[1..], bytes);
            dst[n + 1] = b'"';
            self.len += n + 2;
        } else {
            self.byte(b'"');
            self.put(bytes);
            self.byte(b'"');
        }
    }

    /// `N` bytes of room at the end of what is staged, for a writer that puts several tokens
    /// with one check (`N` is at most a few hundred); [`Sink::advance`] then keeps what it
    /// wrote. Anything written past that is overwritten by what comes next. Asked again
    /// before anything is kept, it is the same room with what was written into it.
    #[inline(always)]
    pub(crate) fn room<const N: usize>(&mut self) -> &mut [u8; N] {
        if self.len > CAPACITY - N {
            self.flush_buf();
        }
        (&mut self.buf[self.len..self.len + N])
            .try_into()
            .expect("N bytes of room")
    }

    /// Keeps `n` bytes written into the last [`Sink::room`].
    #[inline(always)]
    pub(crate) fn advance(&mut self, n: usize) {
        debug_assert!(self.len + n <= CAPACITY);
        self.len += n;
    }

    #[inline]
    pub(crate) fn byte(&mut self, b: u8) {
        if self.len == CAPACITY {
            self.flush_buf();
        }
        self.buf[self.len] = b;
        self.len += 1;
    }

    #[cold]
    fn spill(&mut self, bytes: &[u8]) {
        self.flush_buf();
        if bytes.len() >= CAPACITY {
            if self.error.is_none() {
                if let Err(e) = self.out.write_all(bytes) {
                    self.error = Some(e);
                }
            }
        } else {
            self.buf[..bytes.len()].copy_from_slice(bytes);
            self.len = bytes.len();
        }
    }

    fn flush_buf(&mut self) {
        if self.error.is_none() && self.len > 0 {
            if let Err(e) = self.out.write_all(&self.buf[..self.len]) {
                self.error = Some(e);
            }
        }
        self.len = 0;
    }

    /// Hands over what is left and reports the first I/O error, if any.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.flush_buf();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Failing(usize);

    impl io::Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("disk full"));
            }
            self.0 -= 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn chunks_reach_the_writer_in_order() {
        let mut out = Vec::new();
        let mut sink = Sink::new(&mut out);
        let mut want = Vec::new();
        for i in 0..5000u32 {
            let piece = i.to_string().repeat((i % 9) as usize);
            sink.put(piece.as_bytes());
            sink.byte(b',');
            want.extend_from_slice(piece.as_bytes());
            want.push(b',');
        }
        let big = vec![b'x'; 3 * CAPACITY];
        sink.put(&big);
        want.extend_from_slice(&big);
        sink.finish().unwrap();
        assert_eq!(out, want);
    }

    #[test]
    fn io_errors_are_reported_at_the_end() {
        let mut out = Failing(1);
        let mut sink = Sink::new(&mut out);
        for _ in 0..3 {
            sink.put(&[b'a'; CAPACITY]);
        }
        assert_eq!(sink.finish().unwrap_err().to_string(), "disk full");
    }
}
