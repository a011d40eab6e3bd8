//! Canonical bytes handed over before the document ends, so a hasher on another thread can
//! work while the text is still being read.
//!
//! Why: a state file is one object, and an object's members wait for its `}` to be put in
//! key order, so without this every canonical byte reaches the writer at the very end and
//! SHA-256 (a fifth of the one pass) runs after everything else. What the writer gets early
//! is a guess: the root member being read, if its key is the smallest so far, will be the
//! first member of the output, and the objects inside it whose keys came in order so far
//! will stay so. Its text is handed over as far as that guess covers it: up to the first
//! open object inside it that may still move: one whose keys came out of order, or a short
//! one in order so far (fewer than `TRUSTED_IN_ORDER` keys). A longer one in order so far is
//! handed over up to the member it is reading (whose key is not checked yet). A guess that fails (a smaller root key comes later, or an object some of
//! whose bytes went out meets a key out of order) costs one [`EarlyWrite::restart`] and the
//! bytes sent so far, never a wrong byte: the root's `}` then hands over what remains, or
//! everything again.

use std::any::Any;
use std::io;

use super::{emit, Canon, Frame, FLUSH_BYTES};

/// A destination for [`canonicalize_early`](crate::canonicalize_early): a writer that can
/// forget what it was given.
pub trait EarlyWrite: io::Write {
    /// Forget every byte written so far: what comes next is the document from its start.
    fn restart(&mut self) -> io::Result<()>;

    /// The root object closed: what is written from now on comes at once, with nothing
    /// left to read (a restart may still come first). A writer that hashes on another
    /// thread can hash the rest itself, without copying it across.
    fn ending(&mut self) {}

    /// An empty writer of the same kind, for the helper of
    /// [`canonicalize_parallel_headed`](crate::canonicalize_parallel_headed) to write the
    /// document's first bytes to while the text is still read (see [`Head`]); `None`, the
    /// default, where there is no such writer.
    fn head(&self) -> Option<Box<dyn Head>> {
        None
    }

    /// Nothing was written here yet: go on as if `head` (made by [`EarlyWrite::head`]) had
    /// been written here. `false` (and nothing changed) where that cannot be done, and the
    /// document is then written here from its start.
    fn resume(&mut self, head: Box<dyn Head>) -> bool {
        drop(head);
        false
    }
}

/// The beginning of a document, written on the helper's thread.
///
/// Why: on two cores both read the text, and SHA-256 of the canonical bytes can start only
/// when the root object closes (its first member in key order is known only then), so it
/// runs after the reading, on one core, while the other idles: 2.8 ms of the 5 MB of the
/// `escapes` shape of scripts/bench-fingerprint. The root's first member in key order is
/// often one the helper read whole (that shape's glossary): the helper guesses so, as the
/// early writes guess on the main reader (the smallest key of its container so far), and
/// hands `{` and that member's text to a head as soon as it is final, while the main reader
/// still reads. The main reader, slower to reach the end by what the helper spent (it
/// steals more of the helper's text, by the rates), goes on from that head at the root's
/// `}` when the guess held, and writes everything itself when it did not.
pub trait Head: io::Write + Send {
    /// Forget every byte written so far.
    fn restart(&mut self);

    /// An empty head of the same kind.
    fn fresh(&self) -> Box<dyn Head>;

    /// Itself, for the writer that made it to take it back ([`EarlyWrite::resume`]).
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// The helper's writer: its head, if the writer it reads for has one, or nowhere.
pub(super) struct HeadOut(pub(super) Option<Box<dyn Head>>);

impl io::Write for HeadOut {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            Some(head) => head.write(bytes),
            None => Ok(bytes.len()),
        }
    }
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.0 {
            Some(head) => head.write_all(bytes),
            None => Ok(()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl EarlyWrite for HeadOut {
    fn restart(&mut self) -> io::Result<()> {
        if let Some(head) = &mut self.0 {
            head.restart();
        }
        Ok(())
    }
}

/// A head taken with a part of the helper's into the root object: it holds `{` and the text
/// of root member `member` up to `sent` (offsets as the main reader's).
pub(super) struct HeadTaken {
    pub(super) head: Box<dyn Head>,
    pub(super) member: usize,
    pub(super) sent: usize,
}

/// The writer of [`canonicalize`](crate::canonicalize), which never guesses: a restart would
/// be a bug, reported as an I/O error rather than as wrong bytes.
pub(super) struct NoRestart<'w, W>(pub(super) &'w mut W);

impl<W: io::Write> io::Write for NoRestart<'_, W> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes)
    }
    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.write_all(bytes)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<W: io::Write> EarlyWrite for NoRestart<'_, W> {
    fn restart(&mut self) -> io::Result<()> {
        Err(io::Error::other(
            "canonicalize restarted a writer it never guessed for",
        ))
    }
}

/// An object inside the guessed member is trusted to stay in key order once this many of
/// its keys came in order: a record of a few members whose first keys happen to be in order
/// is held back (it is short), a large map in order (a state's hosts) goes out.
const TRUSTED_IN_ORDER: usize = 16;

/// The guess being followed.
pub(super) struct Guess {
    /// The root member guessed to come first (its index in `members`).
    member: usize,
    /// Where in `buf` the bytes handed over end: the root's `{`, then that member's text up
    /// to here. 0 while nothing went out (a guess waits for a whole piece first, so the
    /// small members before the one that matters cost no restart).
    sent: usize,
}

/// Early output of one document: off for [`canonicalize`](crate::canonicalize).
pub(super) struct Early {
    pub(super) on: bool,
    /// The root member with the smallest key so far.
    smallest: Option<usize>,
    guess: Option<Guess>,
    /// A guess failed: the writer has to restart before it gets anything else.
    failed: bool,
    /// When `buf` reaches this length, more may be handed over (`usize::MAX`: nothing to
    /// hand over until the root's `}`). Checked on the hot path, so one compare.
    pub(super) next_at: usize,
}

impl Early {
    pub(super) fn new(on: bool) -> Self {
        Early {
            on,
            smallest: None,
            guess: None,
            failed: false,
            next_at: usize::MAX,
        }
    }

    /// For the helper at the end of its part: the member whose text went out and where in
    /// `buf` what went out ends; `None` if nothing went out or the guess failed.
    pub(super) fn sent(&self) -> Option<(usize, usize)> {
        if self.failed {
            return None;
        }
        self.guess
            .as_ref()
            .filter(|g| g.sent > 0)
            .map(|g| (g.member, g.sent))
    }

    /// An object inside the root, at `start` in `buf`, met a key out of order: its members
    /// will move, so if any of its bytes went out, the guess has failed.
    #[inline]
    pub(super) fn unsorted(&mut self, start: usize) {
        if let Some(guess) = &self.guess {
            if start < guess.sent {
                self.failed = true;
                self.next_at = 0;
            }
        }
    }
}

impl Canon<'_> {
    /// A key of the root object was just read (its member is the last one): if it is the
    /// smallest so far, its member is the new guess.
    #[cold]
    pub(super) fn early_root_key<W: EarlyWrite>(&mut self, out: &mut W) {
        self.early_root_member(self.members.len() - 1, out);
    }

    /// Root member `new` (the last read, or one of a part taken whole, `stream/split.rs`):
    /// if its key is the smallest so far, it is the new guess.
    pub(super) fn early_root_member<W: EarlyWrite>(&mut self, new: usize, out: &mut W) {
        let Some(Frame::Object(root)) = self.frames.first() else {
            return;
        };
        if let Some(smallest) = self.early.smallest {
            let (a, b) = (&self.members[new], &self.members[smallest]);
            if Self::member_cmp(!root.astral, self.p.bytes, &self.keys, a, b).is_ge() {
                return;
            }
        }
        self.early.smallest = Some(new);
        // What went out, if anything, was for another member.
        let sent = self.early.guess.as_ref().is_some_and(|g| g.sent > 0);
        if (sent || self.early.failed) && !self.restart(out) {
            return;
        }
        self.early.guess = Some(Guess {
            member: new,
            sent: 0,
        });
        // The helper hands over a member it guesses only once it is whole
        // (`early_member_done`), so that what it spends on it is known to the steal.
        self.early.next_at = if self.part.is_some() {
            usize::MAX
        } else {
            self.buf.len() + FLUSH_BYTES
        };
    }

    /// `buf` reached `next_at`: hands over what the guess covers now.
    #[cold]
    pub(super) fn early_send<W: EarlyWrite>(&mut self, out: &mut W) {
        if self.early.failed {
            self.restart(out);
            return;
        }
        let Some(guess) = &self.early.guess else {
            self.early.next_at = usize::MAX;
            return;
        };
        let (member, sent) = (self.members[guess.member], guess.sent);
        // A member's text is never empty once its value is complete (it has its key).
        let complete = member.text_end > member.text_start;
        let upto = if complete {
            member.text_end
        } else {
            self.early_frontier()
        };
        let from = if sent == 0 {
            // The first piece: the root's `{`, then the member (the root's earlier members
            // come after it).
            let Some(Frame::Object(root)) = self.frames.first() else {
                return;
            };
            let root_start = root.start;
            if self.part.is_some() {
                // The helper's container opened before its text: its `{` is not in `buf`.
                emit(&mut self.io_error, b"{", out);
            } else {
                self.emit_range(0, root_start, out);
            }
            member.text_start
        } else {
            sent
        };
        if upto > from {
            self.emit_range(from, upto, out);
        }
        if let Some(guess) = &mut self.early.guess {
            guess.sent = upto.max(from);
        }
        self.early.next_at = if complete {
            usize::MAX
        } else {
            self.buf.len() + FLUSH_BYTES
        };
    }

    /// The helper finished a member of its container: if it is the guess, its text goes to
    /// the head now, while the main reader still reads, not a piece's length later (the
    /// text after it may be read by the main reader, which steals the end).
    #[cold]
    pub(super) fn early_member_done<W: EarlyWrite>(&mut self, out: &mut W) {
        let Some(done) = self.members.len().checked_sub(1) else {
            return;
        };
        if self.early.guess.as_ref().map(|g| g.member) != Some(done) {
            return;
        }
        let member = self.members[done];
        let signal = self.part.as_ref().and_then(|h| h.signal);
        if let Some(signal) = signal {
            if !signal.begin(member.text_end.saturating_sub(member.text_start)) {
                // Too late to count on: the guess is dropped, and nothing more goes out.
                self.early.failed = true;
                self.early.next_at = usize::MAX;
                return;
            }
        }
        self.early_send(out);
        if let Some(signal) = signal {
            signal.end();
        }
    }

    /// How far the guessed member's text (the root's pending member) is final if the guess
    /// holds: all of it written so far, but for the first object open inside it that may
    /// still move bytes.
    fn early_frontier(&self) -> usize {
        let mut objects = self.frames[1..].iter().filter_map(|f| match f {
            Frame::Object(obj) => Some(obj),
            Frame::Array(_) => None,
        });
        let Some(first) = objects.next() else {
            return self.buf.len();
        };
        // Its members read so far are the ones before the next object's.
        let next_first = objects
            .next()
            .map_or(self.members.len(), |o| o.first_member);
        if !first.sorted || next_first - first.first_member < TRUSTED_IN_ORDER {
            return first.start;
        }
        // In order so far, and long: its complete members stay where they are (a failed
        // guess otherwise); the one it is reading is the last, its key not checked yet.
        self.members[next_first - 1].text_start
    }

    /// The root's `}` (its members in `order` when it was not sorted): hands over the rest
    /// of the guessed member, then every other member in key order, and empties `buf`.
    /// Returns `false` when there is no guess to finish (nothing went out, or the writer
    /// restarted), and the usual close follows.
    pub(super) fn early_close_root<W: EarlyWrite>(&mut self, sorted: bool, out: &mut W) -> bool {
        if self.early.failed {
            self.restart(out);
            return false;
        }
        let Some(guess) = self.early.guess.take().filter(|g| g.sent > 0) else {
            return false;
        };
        if !sorted {
            if self.order.first() != Some(&(guess.member as u32)) {
                // Cannot happen (the guess is always the smallest key so far), but if it did,
                // start over rather than hash the wrong bytes.
                debug_assert!(false, "early guess is not the root's first member");
                self.early.failed = true;
                self.restart(out);
                return false;
            }
        } else {
            // In order: the root's first member is the smallest key, the guess.
            debug_assert_eq!(guess.member, 0);
            self.order.clear();
            self.order.extend(0..self.members.len() as u32);
        }
        let guessed_end = self.members[guess.member].text_end;
        self.emit_range(guess.sent, guessed_end, out);
        for k in 1..self.order.len() {
            let m = self.members[self.order[k] as usize];
            emit(&mut self.io_error, b",", out);
            self.emit_range(m.text_start, m.text_end, out);
        }
        self.clear_buf();
        true
    }

    /// The root's `}` (its members in `order` when it was not sorted) when a part of the
    /// helper's brought a head: if the head's member is the root's first, the writer goes on
    /// from the head and the rest goes out as [`Canon::early_close_root`] sends it. Returns
    /// `false` when the head is not used, and the usual close follows.
    pub(super) fn close_root_after_head<W: EarlyWrite>(
        &mut self,
        sorted: bool,
        out: &mut W,
    ) -> bool {
        let Some(taken) = self.head.take() else {
            return false;
        };
        let first = if sorted {
            Some(0)
        } else {
            self.order.first().map(|&m| m as usize)
        };
        if first != Some(taken.member) || self.io_error.is_some() || !out.resume(taken.head) {
            return false;
        }
        self.early.guess = Some(Guess {
            member: taken.member,
            sent: taken.sent,
        });
        self.early_close_root(sorted, out)
    }

    /// The writer forgets what it got; returns whether it could.
    fn restart<W: EarlyWrite>(&mut self, out: &mut W) -> bool {
        self.early.guess = None;
        self.early.failed = false;
        self.early.next_at = usize::MAX;
        if self.io_error.is_some() {
            return false;
        }
        match out.restart() {
            Ok(()) => true,
            Err(e) => {
                self.io_error = Some(e);
                false
            }
        }
    }
}
