//! A large document on two threads: while the first thread canonicalises the text from its
//! first byte, a second one canonicalises the rest of the container around the middle, from
//! a separator found there to that container's end; when the first thread reaches that part
//! it takes the second one's bytes instead of reading the text again.
//!
//! Why it is exact: from a separator on, the canonical text of the members (or elements)
//! that follow depends only on the text, never on what came before, so the second thread's
//! bytes are the ones the first would have written. What the second thread cannot know, it
//! only guesses, and the first checks before it takes anything:
//! - that the separator is one: bytes are taken only at a byte offset the first thread
//!   reaches as a separator of an open container of the kind the second read (a comma inside
//!   a string, or in a container the second mistook, is never reached as such);
//! - that the key order holds across the cut: an object's members are taken only when its
//!   keys came in order on both sides and at the cut, so no member moves and no key repeats;
//! - the depth: the second thread allows `MAX_DEPTH_AT_SPLIT - 1` levels fewer than the
//!   options do, and its part is taken only at most that deep;
//! - errors: a part that met any error, or a value without a canonical form, is dropped, and
//!   the first thread reads that text itself, so errors are found and worded as without a
//!   split.
//!
//! Timing only decides how much is taken. When the first thread reaches the second's start,
//! it asks the second to stop at its container's next separator and hand over what it has,
//! and waits for that a little (`HANDOVER_YIELDS`); a second thread that is not running then
//! (a busy machine) is not waited for: the first reads on, and takes the handed-over part
//! later, from the separator it has reached, if it is still inside that part. It records
//! where each of its container's separators is for that (`Cut`).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Mutex, MutexGuard};

use super::{Canon, CanonError, Frame, Member, Obj, DECODED};
use crate::{ParseError, ParseOptions, Profile};

/// Documents from this size on may be split: below it, starting a thread costs more than it
/// saves.
pub const SPLIT_MIN: usize = 1 << 20;

/// Documents above this size are not split: while the second part is appended, its buffer
/// and the first thread's are both held, about 1.5 times the canonical text of the
/// outermost object; without a split, a large document stays within about twice its size.
const SPLIT_MAX: usize = 64 << 20;

/// The second part is taken only in a container at most this deep (1: the document's own).
const MAX_DEPTH_AT_SPLIT: usize = 4;

/// Candidate separators the second thread tries before it gives up.
const ATTEMPTS: usize = 32;

/// How long the first thread waits, at the second's start, for it to hand over what it has,
/// in yields of its core (each well under a microsecond when no other thread wants it): a
/// running second thread does so within its current member (microseconds).
const HANDOVER_YIELDS: usize = 200;

/// Whether a document of `len` bytes is split on two threads: when it is large enough and
/// a core is free for the second thread now. On a busy machine the two threads would share
/// one core, and the second part's own buffer and its copy would make the document slower.
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

/// A thread's part in a split document.
pub(super) enum Role<'a> {
    /// No split.
    Alone,
    /// The first thread. `watch`: 0 until it passes the second's start without its part;
    /// then the depth of that container, whose separators are where the part can still be
    /// taken.
    First { link: &'a Link, watch: usize },
    /// The second thread, reading one container from a separator on.
    Second {
        link: &'a Link,
        /// Its container's separators so far.
        cuts: Vec<Cut>,
        /// It stopped at one of them, for the first thread.
        stopped: bool,
    },
}

impl Role<'_> {
    #[inline(always)]
    pub(super) fn is_linked(&self) -> bool {
        !matches!(self, Role::Alone)
    }
}

/// A separator of the second thread's container: the byte after it, and what the second
/// thread had written by then (its buffer's length, its members; an array's element index).
#[derive(Clone, Copy)]
pub(super) struct Cut {
    at: usize,
    buf: usize,
    members: usize,
    index: usize,
}

/// What the second thread read: the canonical text of the members (or elements) from the
/// separator before `start` to `end`: the container's end (its `}` or `]`, not read), or,
/// when the first thread asked for it, one of the container's separators (not read).
pub(super) struct Tail {
    start: usize,
    end: usize,
    kind: TailKind,
    buf: Vec<u8>,
    /// The object's members, their text in `buf`, their decoded keys in `keys`.
    members: Vec<Member>,
    keys: Vec<u8>,
    cuts: Vec<Cut>,
}

#[derive(Clone, Copy)]
enum TailKind {
    /// `sorted`: every key came in the profile's order.
    Object { sorted: bool, astral: bool },
    /// `last`: the index of the last element, counted from the first after `start`.
    Array { last: usize },
}

/// The two threads' meeting point.
pub(super) struct Link {
    /// The byte after the separator the second thread reads from now (`usize::MAX`: none).
    /// Read at every separator by the first thread; written under `exchange`'s lock.
    published: AtomicUsize,
    /// The first thread is done: the second stops at its next separator.
    cancel: AtomicBool,
    /// The first thread reached the second's start: the second hands over what it has at
    /// its container's next separator.
    hurry: AtomicBool,
    /// A part (or the news that there is none) is in `exchange`.
    ready: AtomicBool,
    /// The first thread took a part.
    taken: AtomicBool,
    /// Tests ([`TailFirst::Late`]): the part is never taken at its start.
    late: AtomicBool,
    exchange: Mutex<Exchange>,
}

#[derive(Default)]
struct Exchange {
    /// The first thread reached the start last published and asked for its part.
    claimed: bool,
    /// The part handed over, or `None`: there is none.
    tail: Option<Tail>,
    /// The second thread has stopped.
    finished: bool,
}

/// What the first thread learns at the second's start.
enum Handover {
    Now(Tail),
    /// Not yet: look again at the container's later separators.
    Later,
    Never,
}

impl Link {
    fn new() -> Self {
        Link {
            published: AtomicUsize::new(usize::MAX),
            cancel: AtomicBool::new(false),
            hurry: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            taken: AtomicBool::new(false),
            late: AtomicBool::new(false),
            exchange: Mutex::new(Exchange::default()),
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
    fn ready(&self) -> bool {
        self.ready.load(AtomicOrdering::Acquire)
    }

    /// The first thread is at `start`, the second's start: asks for its part and waits a
    /// little for it.
    fn claim(&self, start: usize) -> Handover {
        if !self.ready() {
            let mut ex = self.lock();
            if ex.finished || self.published() != start {
                return Handover::Never;
            }
            ex.claimed = true;
            self.hurry.store(true, AtomicOrdering::Relaxed);
            drop(ex);
            // Not asleep: a running second thread answers within microseconds, and a woken
            // first thread can wait for a core far longer than that. Yielding gives this
            // core to the second thread if it is ready to run but has none.
            for _ in 0..HANDOVER_YIELDS {
                if self.ready() || self.published() != start {
                    break;
                }
                std::thread::yield_now();
            }
            if !self.ready() {
                return if self.published() == start {
                    Handover::Later
                } else {
                    Handover::Never
                };
            }
        }
        let mut ex = self.lock();
        match ex.tail.take() {
            Some(tail) if tail.start == start && !self.late.load(AtomicOrdering::Relaxed) => {
                Handover::Now(tail)
            }
            Some(tail) => {
                // A part read from elsewhere (a large one, handed over unasked), or a test's
                // late one: it may still be taken later.
                ex.tail = Some(tail);
                Handover::Later
            }
            None => Handover::Never,
        }
    }

    /// The part handed over, once `ready` (the first thread takes it once).
    fn take(&self) -> Option<Tail> {
        self.lock().tail.take()
    }

    /// The second thread hands over `tail` (or says there is none) and stops.
    fn deliver(&self, mut ex: MutexGuard<'_, Exchange>, tail: Option<Tail>) {
        ex.tail = tail;
        self.ready.store(true, AtomicOrdering::Release);
    }
}

/// Marks the second thread finished however it ends, so that the first never waits for it
/// in vain.
struct Finish<'l>(&'l Link);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let mut ex = self.0.lock();
        ex.finished = true;
        if !self.0.ready() {
            self.0.published.store(usize::MAX, AtomicOrdering::Relaxed);
        }
    }
}

/// [`super::canonicalize_split_from`] with a second thread: says whether its part was used.
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
            .name("canon-second".into())
            .spawn_scoped(scope, || read_tails(text, options, profile, &link));
        let role = match second {
            Ok(_) => Role::First {
                link: &link,
                watch: 0,
            },
            Err(_) => Role::Alone,
        };
        let mut first = Canon::new(text, options, profile, role);
        let result = first.document(out);
        link.cancel.store(true, AtomicOrdering::Relaxed);
        result?;
        first.finish(out)?;
        Ok(link.taken.load(AtomicOrdering::Relaxed))
    })
}

/// How [`canonicalize_tail_first`] hands the second part over.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailFirst {
    /// Whole, when the first thread reaches its start.
    Whole,
    /// As if the first thread had asked for it as soon as it was published: it stops at its
    /// container's first separator.
    Early,
    /// As if it had come too late at its start: the first thread takes it from its
    /// container's next separator on.
    Late,
}

/// The split without a second thread, for tests, which need the same split every time
/// whatever the timing: the second part is read first, then the document up to it and on
/// from there.
pub(super) fn canonicalize_tail_first<W: io::Write>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
    how: TailFirst,
) -> Result<bool, CanonError> {
    let link = Link::new();
    if how == TailFirst::Early {
        link.lock().claimed = true;
        link.hurry.store(true, AtomicOrdering::Relaxed);
    }
    link.late
        .store(how == TailFirst::Late, AtomicOrdering::Relaxed);
    read_tails(text, options, profile, &link);
    let role = Role::First {
        link: &link,
        watch: 0,
    };
    Canon::new(text, options, profile, role).run(out)?;
    Ok(link.taken.load(AtomicOrdering::Relaxed))
}

/// The second thread: from the middle of the text, reads parts until one is asked for or
/// large enough to be worth handing over unasked.
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
        let big = tail
            .as_ref()
            .is_some_and(|t| t.end - t.start >= text.len() / 8);
        if ex.claimed || big {
            // A claim is for the start last published (see `Link::claim`): this one.
            link.deliver(ex, tail);
            return;
        }
        attempts += 1;
        if attempts == ATTEMPTS || link.cancel.load(AtomicOrdering::Relaxed) {
            return;
        }
        // A short part was an inner container: go on after its end, where the next comma
        // separates the containers around it (only closing brackets come between). A part
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
        let role = Role::Second {
            link,
            cuts: Vec::new(),
            stopped: false,
        };
        let mut t = Canon::new(text, &options, profile, role);
        t.buf = Vec::with_capacity(text.len() - start);
        t.base = 1;
        // Its container counts as open: nothing is flushed, and its objects are put in
        // order in the buffer.
        t.open_objects = 1;
        t.p.pos = start;
        if open(&mut t).is_err() {
            continue;
        }
        let read = t.value(&mut io::sink());
        let Role::Second { cuts, stopped, .. } = std::mem::replace(&mut t.split, Role::Alone)
        else {
            return None;
        };
        if (read.is_err() && !stopped) || t.error.is_some() {
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
            cuts,
        });
    }
    None
}

impl Canon<'_> {
    /// At a separator (its byte read and written, `pos` just after it). The first thread
    /// takes the second's part if it starts or continues here and fits (true: `pos` is now
    /// at the part's end); the second records the separator, or stops.
    #[inline(always)]
    pub(super) fn at_separator(&mut self) -> Result<bool, ParseError> {
        match &mut self.split {
            Role::Alone => Ok(false),
            &mut Role::First { link, watch } => {
                if watch == 0 {
                    Ok(self.p.pos == link.published() && self.at_second_start(link))
                } else {
                    Ok(self.frames.len() == watch && link.ready() && self.take_late(link))
                }
            }
            Role::Second { .. } => self.second_at_separator(),
        }
    }

    #[cold]
    #[inline(never)]
    fn at_second_start(&mut self, link: &Link) -> bool {
        match link.claim(self.p.pos) {
            Handover::Now(tail) => {
                self.split = Role::Alone;
                self.take(tail, link)
            }
            Handover::Later if self.frames.len() <= MAX_DEPTH_AT_SPLIT => {
                if let Role::First { watch, .. } = &mut self.split {
                    *watch = self.frames.len();
                }
                false
            }
            Handover::Later | Handover::Never => {
                self.split = Role::Alone;
                false
            }
        }
    }

    /// The part was handed over after this thread passed its start.
    #[cold]
    #[inline(never)]
    fn take_late(&mut self, link: &Link) -> bool {
        self.split = Role::Alone;
        link.take().is_some_and(|tail| self.take(tail, link))
    }

    fn second_at_separator(&mut self) -> Result<bool, ParseError> {
        let base = self.frames.len() == self.base;
        let index = match self.frames.last() {
            Some(Frame::Array(index)) => *index,
            _ => 0,
        };
        let Role::Second {
            link,
            cuts,
            stopped,
        } = &mut self.split
        else {
            return Ok(false);
        };
        if link.cancel.load(AtomicOrdering::Relaxed) {
            return Err(self.p.error("cancelled"));
        }
        if !base {
            return Ok(false);
        }
        if link.hurry.load(AtomicOrdering::Relaxed) {
            // Hand over the members (elements) so far: back before this separator.
            *stopped = true;
            self.p.pos -= 1;
            self.buf.pop();
            if let Some(Frame::Array(index)) = self.frames.last_mut() {
                *index -= 1;
            }
            return Err(self.p.error("stopped"));
        }
        cuts.push(Cut {
            at: self.p.pos,
            buf: self.buf.len(),
            members: self.members.len(),
            index,
        });
        Ok(false)
    }

    /// Takes the second thread's part from here (the byte after a separator of the open
    /// container), if it continues here and fits.
    fn take(&mut self, tail: Tail, link: &Link) -> bool {
        let pos = self.p.pos;
        let cut = if pos == tail.start {
            Cut {
                at: pos,
                buf: 0,
                members: 0,
                index: 0,
            }
        } else {
            match tail.cuts.binary_search_by_key(&pos, |c| c.at) {
                Ok(i) => tail.cuts[i],
                Err(_) => return false,
            }
        };
        if self.frames.len() > MAX_DEPTH_AT_SPLIT {
            return false;
        }
        let input = self.p.bytes;
        match (self.frames.last_mut(), tail.kind) {
            (Some(Frame::Object(obj)), TailKind::Object { sorted, astral }) => {
                let (Some(last), Some(first)) =
                    (self.members.last(), tail.members.get(cut.members))
                else {
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
                let key_shift = self.keys.len();
                let text_at = self.buf.len();
                self.members
                    .extend(tail.members[cut.members..].iter().map(|m| {
                        let mut m = Member { ..*m };
                        m.text_start = m.text_start - cut.buf + text_at;
                        m.text_end = m.text_end - cut.buf + text_at;
                        if m.key.start & DECODED != 0 {
                            m.key.start += key_shift;
                            m.key.end += key_shift;
                        }
                        m
                    }));
                self.keys.extend_from_slice(&tail.keys);
            }
            (Some(Frame::Array(index)), TailKind::Array { last }) => *index += last - cut.index,
            _ => return false,
        }
        self.buf.extend_from_slice(&tail.buf[cut.buf..]);
        self.p.pos = tail.end;
        link.taken.store(true, AtomicOrdering::Relaxed);
        true
    }
}

#[cfg(test)]
mod tests;
