//! A large document on two threads: while this thread canonicalises the text from its first
//! byte, a second one canonicalises the rest of the container around the middle, from a
//! separator found there to that container's end; when the first thread reaches that
//! separator it takes the second one's bytes instead of reading the text again.
//!
//! Why it is exact: from a separator on, the canonical text of the members (or elements)
//! that follow depends only on the text, never on what came before, so the tail's bytes
//! are the ones this thread would have written. What the second thread cannot know, it
//! only guesses, and the first thread checks before it takes anything:
//! - that the separator is one: it takes the tail only on reaching that very byte offset as
//!   the separator of an open container of the tail's kind (a comma inside a string, or in
//!   a container the tail mistook, is never reached as such, and its work is dropped);
//! - that the key order holds across the cut: an object is taken only when its keys came in
//!   order on both sides and at the cut, so no member moves and no key repeats;
//! - the depth: the tail allows `MAX_DEPTH_AT_SPLIT - 1` levels fewer than the options do,
//!   and is taken only at most that deep;
//! - errors: a tail that met any error, or a value without a canonical form, is dropped, and
//!   this thread reads that text itself, so errors are found and worded as without a split.
//!
//! A dropped tail costs nothing but the second core's time.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{Canon, CanonError, Frame, Member, Obj, DECODED};
use crate::{ParseOptions, Profile};

/// Documents from this size on are split: below it, starting a thread costs more than it
/// saves.
pub const SPLIT_MIN: usize = 1 << 20;

/// Documents above this size are not split: while the tail is appended, its buffer and the
/// first thread's are both held, about 1.5 times the canonical text of the outermost
/// object; without a split, a large document stays within about twice its size in memory.
const SPLIT_MAX: usize = 64 << 20;

/// The tail is taken only in a container at most this deep (1: the document's own).
const MAX_DEPTH_AT_SPLIT: usize = 4;

/// How long the first thread waits, at the tail's start, for the second to hand over what
/// it has: a running second thread does so within its current member (microseconds); one
/// that is not running is not waited for.
const CLAIM_WAIT: std::time::Duration = std::time::Duration::from_micros(200);

/// Candidate separators the second thread tries before it gives up.
const ATTEMPTS: usize = 32;

/// Whether a document of `len` bytes is split on two threads: when it is large enough and
/// a core is free for the second thread now. On a busy machine the two threads would share
/// one core, and the tail's own buffer and its copy would make the document slower.
pub(super) fn worth_splitting(len: usize, min_len: usize) -> bool {
    (min_len..=SPLIT_MAX).contains(&len)
        && std::thread::available_parallelism()
            .is_ok_and(|cores| running_threads().is_none_or(|running| running < cores.get()))
}

/// Threads running or ready to run on the machine now, this one included (Linux:
/// `/proc/loadavg`'s fourth field, `running/total`); `None` where that cannot be read.
fn running_threads() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let (running, _total) = text.split_whitespace().nth(3)?.split_once('/')?;
    running.parse().ok()
}

/// What the second thread found: the canonical text of the members (or elements) from the
/// separator before `start` to `end`: the container's end (its `}` or `]`, not read), or,
/// when the first thread came for it early, one of the container's separators (not read).
pub(super) struct Tail {
    start: usize,
    end: usize,
    kind: TailKind,
    buf: Vec<u8>,
    /// The object's members, their text in `buf`, their decoded keys in `keys`.
    members: Vec<Member>,
    keys: Vec<u8>,
}

#[derive(Clone, Copy)]
enum TailKind {
    /// `sorted`: every key came in the profile's order.
    Object { sorted: bool, astral: bool },
    /// `last`: the index of the last element, counted from the first after the separator.
    Array { last: usize },
}

/// The two threads' meeting point.
pub(super) struct Link {
    /// The byte after the separator the second thread reads from now (`usize::MAX`: none).
    /// Read at every separator by the first thread; written under `exchange`'s lock.
    published: AtomicUsize,
    /// The first thread is done: the second stops at its next separator.
    cancel: AtomicBool,
    /// The first thread waits at the tail's start: the second hands over what it has at its
    /// container's next separator.
    hurry: AtomicBool,
    /// The first thread took a tail.
    taken: AtomicBool,
    exchange: Mutex<Exchange>,
    delivered: Condvar,
}

#[derive(Default)]
struct Exchange {
    /// The first thread reached the start last published and waits for its tail.
    claimed: bool,
    /// The tail handed over, and the start it was read from (`None`: none, for that start).
    tail: Option<(usize, Option<Tail>)>,
    /// The second thread has stopped.
    finished: bool,
}

impl Link {
    fn new() -> Self {
        Link {
            published: AtomicUsize::new(usize::MAX),
            cancel: AtomicBool::new(false),
            hurry: AtomicBool::new(false),
            taken: AtomicBool::new(false),
            exchange: Mutex::new(Exchange::default()),
            delivered: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Exchange> {
        // Nothing in the exchange is left half-written by a panic.
        self.exchange.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[inline(always)]
    fn published(&self) -> usize {
        self.published.load(AtomicOrdering::Relaxed)
    }

    #[inline(always)]
    fn cancelled(&self) -> bool {
        self.cancel.load(AtomicOrdering::Relaxed)
    }

    /// The first thread is at `start`: waits for the tail read from there, if the second
    /// thread still reads from there.
    fn claim(&self, start: usize) -> Option<Tail> {
        let mut ex = self.lock();
        if ex.tail.is_none() {
            if ex.finished || self.published() != start {
                return None;
            }
            ex.claimed = true;
            self.hurry.store(true, AtomicOrdering::Relaxed);
            ex = self
                .delivered
                .wait_timeout_while(ex, CLAIM_WAIT, |ex| ex.tail.is_none() && !ex.finished)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        match ex.tail.take() {
            Some((from, tail)) if from == start => tail,
            _ => {
                // Waited in vain (the second thread is not running: the machine is busy),
                // or it had moved on: this thread reads on alone.
                self.cancel.store(true, AtomicOrdering::Relaxed);
                None
            }
        }
    }
}

/// Marks the second thread finished however it ends, so that the first never waits for it
/// in vain.
struct Finish<'l>(&'l Link);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let mut ex = self.0.lock();
        ex.finished = true;
        if ex.tail.is_none() {
            self.0.published.store(usize::MAX, AtomicOrdering::Relaxed);
        }
        drop(ex);
        self.0.delivered.notify_all();
    }
}

/// [`super::canonicalize_split_from`] with a second thread: says whether its tail was used.
/// If the thread cannot be started, the document is read by this one alone.
pub(super) fn canonicalize_on_two_threads<W: io::Write>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
) -> Result<bool, CanonError> {
    let link = Link::new();
    std::thread::scope(|scope| {
        let second = std::thread::Builder::new()
            .name("canon-tail".into())
            .spawn_scoped(scope, || read_tails(text, options, profile, &link));
        let mut first = Canon::new(text, options, profile, second.is_ok().then_some(&link));
        let result = first.document(out);
        link.cancel.store(true, AtomicOrdering::Relaxed);
        result?;
        first.finish(out)?;
        Ok(link.taken.load(AtomicOrdering::Relaxed))
    })
}

/// The second thread: from the middle of the text, reads tails until one is claimed or
/// large enough to be worth handing over.
fn read_tails(text: &[u8], options: &ParseOptions, profile: Profile, link: &Link) {
    let _finish = Finish(link);
    let mut from = text.len() / 2;
    let mut attempts = 0;
    let mut ex = link.lock();
    loop {
        let Some(comma) = text[from..].iter().position(|&b| b == b',') else {
            return;
        };
        let start = from + comma + 1;
        link.published.store(start, AtomicOrdering::Relaxed);
        drop(ex);
        let tail = read_tail(text, options, profile, start, link);
        ex = link.lock();
        let claimed = ex.claimed;
        let big = tail
            .as_ref()
            .is_some_and(|t| t.end - t.start >= text.len() / 8);
        if claimed || big {
            // A claim is for the start last published (see `Link::claim`): this one.
            ex.tail = Some((start, tail));
            drop(ex);
            link.delivered.notify_all();
            return;
        }
        attempts += 1;
        if attempts == ATTEMPTS || link.cancelled() {
            return;
        }
        // A short tail was an inner container: go on after its end, where the next comma
        // separates the containers around it (only closing brackets come between). A tail
        // that failed began at no separator: try the next comma.
        from = tail.map_or(start, |t| t.end);
    }
}

/// The members (or elements) from the separator before `start` to their container's end, or
/// `None` if that text has an error, a value without a canonical form, or is not read as
/// members or elements of one container.
fn read_tail(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    start: usize,
    link: &Link,
) -> Option<Tail> {
    let options = ParseOptions {
        max_depth: options.max_depth.checked_sub(MAX_DEPTH_AT_SPLIT - 1)?,
        ..*options
    };
    let member = |t: &mut Canon| {
        t.frames.push(Frame::Object(Obj {
            start: 0,
            first_member: 0,
            keys_start: 0,
            sorted: true,
            astral: false,
            seen: None,
        }));
        t.p.skip_whitespace();
        t.key(0)
    };
    let element = |t: &mut Canon| {
        t.frames.push(Frame::Array(0));
        Ok(())
    };
    for open in [member, element] {
        let mut t = Canon::new(text, &options, profile, Some(link));
        t.buf = Vec::with_capacity(text.len() - start);
        t.tail = true;
        t.base = 1;
        // Its container counts as open: nothing is flushed, and its objects are put in
        // order in the buffer.
        t.open_objects = 1;
        t.p.pos = start;
        if open(&mut t).is_err() {
            continue;
        }
        if (t.value(&mut io::sink()).is_err() && !t.stopped) || t.error.is_some() {
            return None;
        }
        let kind = match t.frames.last() {
            Some(Frame::Object(obj)) => TailKind::Object {
                sorted: obj.sorted,
                astral: obj.astral,
            },
            Some(Frame::Array(last)) => TailKind::Array { last: *last },
            None => return None,
        };
        return Some(Tail {
            start,
            end: t.p.pos,
            kind,
            buf: t.buf,
            members: t.members,
            keys: t.keys,
        });
    }
    None
}

/// The split without a second thread, for tests, which need the same split every time
/// whatever the timing: the tail is read first, then the document up to it and on from its
/// end. `early`: as if the first thread had come for the first tail as soon as it was
/// published (the tail then stops after its first member or element).
pub(super) fn canonicalize_tail_first<W: io::Write>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
    early: bool,
) -> Result<bool, CanonError> {
    let link = Link::new();
    if early {
        link.lock().claimed = true;
        link.hurry.store(true, AtomicOrdering::Relaxed);
    }
    read_tails(text, options, profile, &link);
    Canon::new(text, options, profile, Some(&link)).run(out)?;
    Ok(link.taken.load(AtomicOrdering::Relaxed))
}

impl Canon<'_> {
    /// At a separator (its byte read, `pos` just after it): the first thread takes the tail
    /// that starts here, if there is one and it fits (true: `pos` is now at the container's
    /// end); the second thread stops if the first is done.
    #[inline(always)]
    pub(super) fn at_separator(&mut self) -> Result<bool, crate::ParseError> {
        let Some(link) = self.link else {
            return Ok(false);
        };
        if self.tail {
            if link.cancelled() {
                return Err(self.p.error("cancelled"));
            }
            if link.hurry.load(AtomicOrdering::Relaxed) && self.frames.len() == self.base {
                // Hand over the members (elements) so far: back before this separator.
                self.p.pos -= 1;
                self.buf.pop();
                if let Some(Frame::Array(index)) = self.frames.last_mut() {
                    *index -= 1;
                }
                self.stopped = true;
                return Err(self.p.error("stopped"));
            }
            return Ok(false);
        }
        Ok(self.p.pos == link.published() && self.take_tail(link))
    }

    #[cold]
    #[inline(never)]
    fn take_tail(&mut self, link: &Link) -> bool {
        // One split per document: taken or not, this thread reads on alone.
        self.link = None;
        let Some(tail) = link.claim(self.p.pos) else {
            return false;
        };
        if self.frames.len() > MAX_DEPTH_AT_SPLIT {
            return false;
        }
        let input = self.p.bytes;
        match (self.frames.last_mut(), tail.kind) {
            (Some(Frame::Object(obj)), TailKind::Object { sorted, astral }) => {
                let (Some(last), Some(first)) = (self.members.last(), tail.members.first()) else {
                    return false;
                };
                let by_bytes = !(obj.astral || astral);
                let in_order = Canon::key_cmp(
                    !by_bytes,
                    last.key.bytes(input, &self.keys),
                    first.key.bytes(input, &tail.keys),
                ) == std::cmp::Ordering::Less;
                if !(obj.sorted && sorted && in_order) {
                    return false;
                }
                obj.astral |= astral;
                let (text_shift, key_shift) = (self.buf.len(), self.keys.len());
                self.members.extend(tail.members.into_iter().map(|mut m| {
                    m.text_start += text_shift;
                    m.text_end += text_shift;
                    if m.key.start & DECODED != 0 {
                        m.key.start += key_shift;
                        m.key.end += key_shift;
                    }
                    m
                }));
                self.keys.extend_from_slice(&tail.keys);
            }
            (Some(Frame::Array(index)), TailKind::Array { last }) => *index += last,
            _ => return false,
        }
        self.buf.extend_from_slice(&tail.buf);
        self.p.pos = tail.end;
        link.taken.store(true, AtomicOrdering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests;
