//! The one pass on two threads: a helper reads the second half of a large text while the
//! main reader reads the first, and the main reader takes the helper's canonical text, part
//! by part, when it arrives where each part starts.
//!
//! Why: on a machine with a second core, reading the text is the whole cost of a
//! fingerprint once SHA-256 runs beside it (`lockstep::background_hash`), and halving it is
//! what a second core can give.
//!
//! How the helper starts without knowing where it is: from the middle of the text it takes
//! the first `,` and guesses that it separates two members of an object (a key and `:`
//! follow it) or two elements of an array (anything else follows). It publishes that comma
//! as its candidate, and reads on from it as the one pass would read inside that container,
//! until the container's closing bracket: that is a part (its members' or elements'
//! canonical text, its keys, whether they came in order, how deep it went). Then it climbs:
//! the first comma after that container is in the container around it, where it guesses
//! again, and so on to the end of the text, so that the helper reads all of the second half
//! however the containers nest (a part that ends soon, a short record, is dropped: the main
//! reader reads it, which costs less than taking it). A guess that meets an error (the comma
//! was inside a string, say) is dropped too, and the helper tries the next comma. The main
//! reader takes the parts in order: each time it finishes a container a part ended in, the
//! next part starts at the next comma.
//!
//! Why the bytes cannot move: the main reader takes a part only where it stands at that
//! very comma after a complete member or element of a container of the guessed kind, so the
//! comma is structural and the helper's reading of what follows is the main reader's own
//! (the same lexer from the same byte). What depends on what came before is checked when
//! the part is taken: the nesting depth and the key order across the seam. A duplicate key
//! anywhere among the object's members is found when it closes, right after, as for any
//! object out of order. A part with an error or a value without a canonical form is not
//! taken: the main reader reads on itself and meets them as it always does. The members of
//! a part taken into the root object of [`canonicalize_early`](crate::canonicalize_early)
//! are shown to the early writes one by one, as if read.
//!
//! The cost is the parts' canonical text held until it is taken, so a text is split only up
//! to `SPLIT_MAX` bytes. A part taken stays in the buffer the helper wrote it to
//! (`stream/splice.rs`).
//!
//! The halves of a text seldom cost the same: a glossary of 20,000 escaped keys costs
//! twice as much a byte as an array of records. When the main reader arrives at the
//! helper's first comma and the helper is not done, it steals: it reads on from a comma in
//! what the helper has left, exactly as the helper reads (guessing at a comma, climbing
//! to the end of the text), and the helper takes those parts from it as the main reader
//! takes the helper's, at that comma. Where: so that both would end together at the rates
//! they read at so far ([`stolen_share`]: the helper, slower at the end, reads less than
//! half of what was left). The helper then hands over a part that holds parts of the main
//! reader's: their buffers go along, and their offsets are rebased (`splice::rebased`). A
//! stolen part the helper went past unread costs only the time the main reader would have
//! waited.
//!
//! The helper may also write the document's beginning ([`Head`], `stream/early.rs`): where
//! the writer can make one ([`canonicalize_parallel_headed`]), the helper guesses that its
//! container is the root and that the member of the smallest key it read is the root's
//! first, and writes `{` and that member to the head as soon as the member is whole, before
//! the main reader's steal is decided ([`HeadSignal`]: the steal then counts the helper's
//! time on it). The head goes with the part; the main reader goes on from it at the root's
//! `}` if that member is the root's first in key order, and writes everything itself if not.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as Atomic};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::OnceLock;
use std::thread;
use std::time::Instant;

use super::early::{Head, HeadOut, HeadTaken};
use super::order::MOVED_MAX;
use super::splice::{rebased, PartText, Piece, Splice};
use super::{
    beyond_the_writers_depth, early::NoRestart, Canon, CanonError, EarlyWrite, Frame, Member, Obj,
    DECODED,
};
use crate::{ParseError, ParseOptions, Profile};

/// Texts from this size are read on two threads by [`canonicalize_early_parallel`]: below
/// it, starting a thread costs more than it can save.
const SPLIT_MIN: usize = 1 << 20;

/// Texts above this size are read on one thread: the helper's part waits in memory until
/// it is taken, which would add half the text's size to the one pass's memory.
const SPLIT_MAX: usize = 64 << 20;

/// How many guesses the helper makes (parts taken, and guesses that failed) before it stops.
const GUESSES: usize = 256;

/// Parts shorter than this are read by the main reader: taking one costs more.
const MIN_PART: usize = 16 * 1024;

/// A part's buffer to begin with (see [`read_part`]).
const PART_BUFFER: usize = 64 * 1024;

/// The main reader steals from the helper only when the helper has at least this much
/// text left: its share of it ([`stolen_share`]) is then worth a second reading's start.
const STEAL_MIN: usize = 256 * 1024;

/// As [`canonicalize_early`](crate::canonicalize_early), with a helper thread reading the
/// second half of a text of 1 MiB to 64 MiB: the same bytes, the same errors, and the same
/// early writes, in about half the time on a machine with a core to spare. Smaller and
/// larger texts are read on this thread.
pub fn canonicalize_early_parallel<W: EarlyWrite>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
) -> Result<(), CanonError> {
    in_halves(text, options, profile, out, true)
}

/// Whether [`canonicalize_early_parallel`] and [`canonicalize_parallel`] read a text of `len`
/// bytes on two threads (from 1 MiB to 64 MiB); other texts are read on the caller's.
pub fn reads_in_parallel(len: usize) -> bool {
    (SPLIT_MIN..=SPLIT_MAX).contains(&len)
}

/// As [`canonicalize`](crate::canonicalize), with the helper of
/// [`canonicalize_early_parallel`] reading the second half of a text of 1 MiB to 64 MiB, and
/// no early writes: `out` gets every byte once the root closes, on this thread. For a writer
/// with no core of its own (a hasher on a machine of two cores, both reading): handing it
/// bytes early would only take the readers' time.
pub fn canonicalize_parallel<W: io::Write>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
) -> Result<(), CanonError> {
    in_halves(text, options, profile, &mut NoRestart(out), false)
}

/// As [`canonicalize_parallel`], for a writer that can give the helper a [`Head`]
/// ([`EarlyWrite::head`]): the helper writes the document's beginning to it when it guesses
/// that the root's first member in key order is one it read (`stream/early.rs`), and the
/// main reader goes on from there when the guess held. The same bytes reach `out` in the end
/// either way.
pub fn canonicalize_parallel_headed<W: EarlyWrite>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
) -> Result<(), CanonError> {
    in_halves(text, options, profile, out, false)
}

/// The library's two-thread passes: a text of 1 MiB to 64 MiB split in halves, any other
/// read on this thread, with early writes or without.
fn in_halves<W: EarlyWrite>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
    early: bool,
) -> Result<(), CanonError> {
    if !reads_in_parallel(text.len()) {
        return super::run(text, options, profile, out, early);
    }
    canonicalize_split_from(text, options, profile, out, early, Plan::halves(text)).map(drop)
}

/// The time, for the threads' rates only ([`stolen_share`]): it decides where the work
/// splits, never what is written.
#[allow(clippy::disallowed_methods)]
fn now() -> Instant {
    Instant::now()
}

/// Starts a thread that ends at once, just before the helper starts.
///
/// Why: measured on the 2-vCPU test machine (a virtual machine), the first thread a process
/// starts either shares its parent's core, until the scheduler's next balancing (a tick, up
/// to 4 ms), or waits that long for the other core to wake; a thread started right after
/// another gets the other core within about 0.1 ms. A helper that starts late leaves the main
/// reader waiting at the middle of the text: `lockstep fingerprint` of the `deep` shape of
/// scripts/bench-fingerprint took 15.4 ms (median of 100) without this and 11.8 ms with it,
/// the same as with a hashing thread started first (docs/canonical-json.md, fourteenth
/// round). It costs one thread start (about 20 µs) where the helper would get its core
/// anyway.
fn wake_a_second_core() {
    // A system that cannot start it starts the helper all the same.
    let _ = thread::Builder::new()
        .name("canon-wake".into())
        .spawn(|| {});
}

/// Where and how the helper reads.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Its first guess is at the first comma from here.
    pub from: usize,
    /// Its parts are at least this many bytes of text (shorter ones are dropped).
    pub min_part: usize,
    /// It makes all its guesses before the main reader starts, on the same thread: a run
    /// whose outcome does not depend on how the threads are scheduled (for tests).
    pub helper_first: bool,
    /// Objects up to this size are put in key order by moving their text, larger ones are
    /// spliced (`stream/splice.rs`); [`MOVED_MAX`] but in tests, which splice small ones.
    pub moved_max: usize,
    /// With `helper_first`: the main reader steals from the first comma from here (as it
    /// does from the middle of what the helper has left, when it waits for the helper), and
    /// all of that is read before the helper starts. Ignored on two threads.
    pub steal_from: Option<usize>,
}

impl Plan {
    /// The plan of the library's two-thread passes: the helper from the middle of `text`,
    /// on its own thread.
    fn halves(text: &[u8]) -> Plan {
        Plan {
            from: text.len() / 2,
            min_part: MIN_PART,
            helper_first: false,
            moved_max: MOVED_MAX,
            steal_from: None,
        }
    }
}

/// How many parts were taken: by the main reader, and by the helper from the main reader's
/// stealing.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartsTaken {
    pub parts: usize,
    pub stolen: usize,
}

/// The split one pass as [`Plan`] says; returns how many parts were taken. For tests,
/// which split every document at every place.
#[doc(hidden)]
pub fn canonicalize_split_from<W: EarlyWrite>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
    early: bool,
    plan: Plan,
) -> Result<PartsTaken, CanonError> {
    if let Some(result) = beyond_the_writers_depth(text, options, profile, out) {
        return result.map(|()| PartsTaken::default());
    }
    let shared = Shared {
        forward: Lane::new(),
        back: Lane::new(),
        helper_at: AtomicUsize::new(0),
        stolen: AtomicUsize::new(0),
        started: now(),
        helper_started: OnceLock::new(),
        head: HeadSignal {
            pending: AtomicUsize::new(0),
            decided: AtomicBool::new(false),
        },
    };
    let (send, outcomes) = mpsc::channel();
    let (send_back, outcomes_back) = mpsc::channel();
    let options = *options;
    // Early writes guess on the main reader already; the head is for a writer that gets
    // nothing before the root closes.
    let head = if early { None } else { out.head() };
    thread::scope(|s| {
        let shared = &shared;
        let mut steal = Some(Steal {
            shared,
            send: send_back,
            plan,
        });
        let back = Main::new(&shared.back, outcomes_back, None);
        let helper = move || {
            let _ = shared.helper_started.set(now());
            let at = Some(&shared.helper_at);
            let stolen = Some(&shared.stolen);
            help(
                text,
                options,
                profile,
                &shared.forward,
                send,
                plan,
                at,
                Some(back),
                stolen,
                head,
                Some(&shared.head),
            );
            // Nothing stolen is taken any more.
            shared.back.cancel.store(true, Atomic::Relaxed);
        };
        let helping = if plan.helper_first {
            if let (Some(from), Some(steal)) = (plan.steal_from, steal.take()) {
                steal.run(text, options, profile, from);
            }
            helper();
            true
        } else {
            wake_a_second_core();
            thread::Builder::new()
                .name("canon-part".into())
                .spawn_scoped(s, helper)
                .is_ok()
        };
        let mut c = Canon::new(text, options, profile, early);
        c.moved_max = plan.moved_max;
        if helping {
            c.main = Some(Main::new(&shared.forward, outcomes, steal));
        }
        let result = c.finish(out);
        // The helper may still be guessing: it stops at its next comma.
        shared.forward.cancel.store(true, Atomic::Relaxed);
        let parts = c.main.as_ref().map_or(0, |m| m.taken);
        let stolen = shared.stolen.load(Atomic::Relaxed);
        result.map(|()| PartsTaken { parts, stolen })
    })
}

/// One way parts go: the commas the reader of the later text guesses at, for the reader of
/// the text before them.
struct Lane {
    /// The commas the guesses start after, in the order they were made (each one after the
    /// last): `usize::MAX` for a guess not made yet.
    candidates: Box<[AtomicUsize]>,
    /// The reader before no longer needs these parts.
    cancel: AtomicBool,
}

impl Lane {
    fn new() -> Self {
        Lane {
            candidates: (0..GUESSES).map(|_| AtomicUsize::new(usize::MAX)).collect(),
            cancel: AtomicBool::new(false),
        }
    }
}

/// What the two threads share.
struct Shared {
    /// The helper's parts, for the main reader.
    forward: Lane,
    /// The parts the main reader steals, for the helper.
    back: Lane,
    /// Where the helper reads (its last comma).
    helper_at: AtomicUsize,
    /// Parts the helper took from the main reader.
    stolen: AtomicUsize,
    /// When the main reader and the helper started reading: their rates so far decide how
    /// much the main reader steals ([`stolen_share`]).
    started: Instant,
    helper_started: OnceLock<Instant>,
    /// What the helper's head costs it, for the steal.
    head: HeadSignal,
}

/// Between the helper writing its head and the main reader's steal (`stream/early.rs`,
/// [`Head`]): the helper's time spent on its head is time it does not read, so the main
/// reader steals more when the helper is writing one; and a head the steal did not count
/// on would keep the main reader waiting, so the helper writes none once the steal is
/// decided.
pub(super) struct HeadSignal {
    /// Bytes of text the helper is writing to its head (0: none).
    pending: AtomicUsize,
    /// The main reader decided its steal (or that it steals nothing).
    decided: AtomicBool,
}

impl HeadSignal {
    /// The helper is about to write `bytes` of text to its head: `false` if the steal was
    /// decided without it (then it writes none).
    pub(super) fn begin(&self, bytes: usize) -> bool {
        self.pending.store(bytes, Atomic::SeqCst);
        if self.decided.load(Atomic::SeqCst) {
            self.pending.store(0, Atomic::SeqCst);
            return false;
        }
        true
    }

    pub(super) fn end(&self) {
        self.pending.store(0, Atomic::SeqCst);
    }
}

/// How many of the `left` bytes the helper has not read yet the main reader steals (it reads
/// the last ones): as many as make both end together if each reads on at its rate so far
/// (`main_read` bytes in `main_secs`, `helper_read` in `helper_secs`) and the helper also
/// writes `head` bytes to its head ([`HeadSignal`], at [`HEAD_BYTES_PER_SEC`]); never less
/// than a quarter or more than three quarters of them (seven eighths with a head); half
/// when a rate is unknown.
///
/// Why not half: the helper is the slower of the two at the end. Its last quarter holds what
/// closes its containers (a large object's sort), and its core is the one that was idle when
/// the process started: timers on the `escapes` shape of scripts/bench-fingerprint showed the
/// main reader, after stealing half, waiting 0.4 ms for the helper back to back and 1.4 ms
/// after 110 ms of one busy core, the helper reading at 0.72 and 0.45 of the main reader's
/// rate (docs/canonical-json.md, fifteenth round). Where the steal lands changes no byte: a
/// part is taken or read again, with the same text.
fn stolen_share(
    left: usize,
    head: usize,
    main_read: usize,
    main_secs: f64,
    helper_read: usize,
    helper_secs: f64,
) -> usize {
    let main_rate = main_read as f64 / main_secs;
    let helper_rate = helper_read as f64 / helper_secs;
    // Both end together when `share * left / main_rate` equals
    // `(1 - share) * left / helper_rate + head / HEAD_BYTES_PER_SEC`.
    let head_as_read = head as f64 * helper_rate / HEAD_BYTES_PER_SEC / left as f64;
    let share = main_rate * (1.0 + head_as_read) / (main_rate + helper_rate);
    let most = if head > 0 { 0.875 } else { 0.75 };
    let share = if share.is_finite() {
        share.clamp(0.25, most)
    } else {
        0.5
    };
    (left as f64 * share) as usize
}

/// How fast the helper writes text to its head: SHA-256 of a large object's canonical
/// text, its members in key order scattered over the buffers they were read into (1.5 MB
/// of the `escapes` glossary in 1.4-1.5 ms on the 2-vCPU test machine).
const HEAD_BYTES_PER_SEC: f64 = 1.0e9;

/// What the main reader needs to steal.
struct Steal<'a> {
    shared: &'a Shared,
    send: Sender<Outcome>,
    plan: Plan,
}

impl Steal<'_> {
    /// [`stolen_share`] of the `left` bytes after `at`, the main reader standing at `comma`.
    fn share(&self, left: usize, comma: usize, at: usize) -> usize {
        let shared = self.shared;
        let now = now();
        let helper_secs = shared
            .helper_started
            .get()
            .map_or(0.0, |&t| (now - t).as_secs_f64());
        stolen_share(
            left,
            shared.head.pending.load(Atomic::SeqCst),
            comma,
            (now - shared.started).as_secs_f64(),
            at.saturating_sub(self.plan.from),
            helper_secs,
        )
    }

    /// Reads from the first comma at or after `from` to the end of the text as the helper
    /// reads, for the helper.
    fn run(self, text: &[u8], options: ParseOptions, profile: Profile, from: usize) {
        let plan = Plan { from, ..self.plan };
        let back = &self.shared.back;
        help(
            text, options, profile, back, self.send, plan, None, None, None, None, None,
        );
    }
}

/// The taking side of a lane.
pub(super) struct Main<'a> {
    lane: &'a Lane,
    /// One per candidate published, in that order.
    outcomes: Receiver<Outcome>,
    /// The first candidate not passed yet.
    next: usize,
    /// Parts taken.
    taken: usize,
    /// The main reader's way to steal, until it does.
    steal: Option<Steal<'a>>,
}

impl<'a> Main<'a> {
    fn new(lane: &'a Lane, outcomes: Receiver<Outcome>, steal: Option<Steal<'a>>) -> Self {
        Main {
            lane,
            outcomes,
            next: 0,
            taken: 0,
            steal,
        }
    }

    /// What was found after `comma`, waiting for it if need be; the main reader steals
    /// first when it would wait.
    fn outcome_at(
        &mut self,
        comma: usize,
        text: &[u8],
        options: ParseOptions,
        profile: Profile,
    ) -> Option<Part> {
        loop {
            let outcome = match self.outcomes.try_recv() {
                Ok(outcome) => outcome,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return None,
            };
            if outcome.comma == comma {
                return outcome.part;
            }
        }
        if let Some(steal) = self.steal.take() {
            steal.shared.head.decided.store(true, Atomic::SeqCst);
            let at = steal.shared.helper_at.load(Atomic::Relaxed).max(comma);
            let left = text.len().saturating_sub(at);
            if left >= STEAL_MIN {
                let stolen = steal.share(left, comma, at);
                steal.run(text, options, profile, at + left - stolen);
            }
        }
        loop {
            match self.outcomes.recv() {
                Ok(outcome) if outcome.comma == comma => return outcome.part,
                // An earlier guess.
                Ok(_) => continue,
                // The helper stopped (it gave up, or could not start).
                Err(_) => return None,
            }
        }
    }
}

/// The helper's side, in its [`Canon`].
pub(super) struct Helper<'a> {
    lane: &'a Lane,
    /// Where its guessed container's closing bracket is, once read.
    end: Option<usize>,
    /// Where it says it reads, for a main reader that may steal.
    at: Option<&'a AtomicUsize>,
    /// The source of a part it took into its guessed container, whose text follows its own.
    tail: Option<usize>,
    /// Its head's cost, for the main reader's steal.
    pub(super) signal: Option<&'a HeadSignal>,
}

/// What a comma of the innermost container did.
pub(super) enum Taken {
    No,
    /// A part was taken there, and the container closed.
    Yes,
    /// A part was taken into the helper's guessed container: the helper's reading ends.
    Ends,
}

/// What the helper found after a candidate comma: a part, or nothing to take.
struct Outcome {
    comma: usize,
    part: Option<Part>,
}

/// The members (or elements) of a container from just after a comma to its end, as the one
/// pass writes them.
struct Part {
    object: bool,
    /// Their canonical text, with the commas between them, and the splices in it.
    buf: Vec<u8>,
    splices: Vec<Splice>,
    pieces: Vec<Piece>,
    /// The parts its reader took in turn (offsets in `buf`, `pieces` and `members` say so),
    /// and which of them follows `buf` (a part taken into the guessed container itself).
    parts: Vec<PartText>,
    tail: Option<usize>,
    /// An object's members (keys, and where each one's text is in `buf`).
    members: Vec<Member>,
    /// The decoded keys that members' keys point into.
    keys: Vec<u8>,
    /// Its keys came in the profile's order; an astral key came.
    sorted: bool,
    astral: bool,
    /// Where the closing bracket is.
    end: usize,
    /// The most containers open at once, the guessed one counted.
    deepest: usize,
    /// The head the helper wrote `{` and a member's text to (that member, and where in
    /// `buf` what went out ends), if it did.
    head: Option<(Box<dyn Head>, usize, usize)>,
}

impl Canon<'_> {
    /// At a `,` of the innermost container: whether a part was taken there (and that
    /// container closed); for the helper, also whether to give up.
    #[inline(always)]
    pub(super) fn split_at_comma<W: EarlyWrite>(
        &mut self,
        out: &mut W,
    ) -> Result<Taken, ParseError> {
        if self.part.is_some() {
            self.helper_comma()?;
        }
        if let Some(main) = &mut self.main {
            let pos = self.p.pos;
            // Candidates come in order: those behind this comma were passed (they were not
            // where a member or element ends, or came too late).
            while let Some(candidate) = main.lane.candidates.get(main.next) {
                let candidate = candidate.load(Atomic::Acquire);
                if candidate > pos {
                    break;
                }
                main.next += 1;
                if candidate == pos {
                    return self.take_part(out);
                }
            }
        }
        Ok(Taken::No)
    }

    /// The helper at any comma: says where it is, and stops when not needed (the main
    /// reader met an error, say), so that it does not finish a large value that nobody will
    /// take.
    #[cold]
    fn helper_comma(&self) -> Result<(), ParseError> {
        let Some(part) = &self.part else {
            return Ok(());
        };
        if let Some(at) = part.at {
            at.store(self.p.pos, Atomic::Relaxed);
        }
        if part.lane.cancel.load(Atomic::Relaxed) {
            return Err(ParseError {
                line: 0,
                column: 0,
                message: "no longer needed".into(),
            });
        }
        Ok(())
    }

    /// At a closing bracket: whether it ends the helper's guessed container (then the
    /// helper's reading is done).
    #[inline(always)]
    pub(super) fn ends_the_part(&mut self) -> bool {
        match &mut self.part {
            Some(part) if self.frames.len() == 1 => {
                part.end = Some(self.p.pos);
                true
            }
            _ => false,
        }
    }

    /// At a candidate comma of the reader after this one: waits for what it found there,
    /// and takes the part if it fits here: then the container is closed and `pos` is after
    /// it. The helper keeps its guessed container open: a part taken there ends its reading.
    #[cold]
    #[inline(never)]
    fn take_part<W: EarlyWrite>(&mut self, out: &mut W) -> Result<Taken, ParseError> {
        let comma = self.p.pos;
        let (text, options, profile) = (self.p.bytes, self.p.options, self.profile);
        let Some(main) = &mut self.main else {
            return Ok(Taken::No);
        };
        let Some(mut part) = main.outcome_at(comma, text, options, profile) else {
            return Ok(Taken::No);
        };
        let object = match self.frames.last() {
            Some(Frame::Object(_)) => true,
            Some(Frame::Array(_)) => false,
            None => return Ok(Taken::No),
        };
        if part.object != object {
            return Ok(Taken::No);
        }
        // The part's containers sit under this one's: a container opened in the part with
        // `k` of its own open around it is `frames.len() - 1 + k` deep here. The helper
        // does not know how deep its own containers are: the main reader checks.
        let deepest = self.frames.len() - 1 + part.deepest;
        if self.part.is_some() {
            self.deepest = self.deepest.max(deepest);
        } else if deepest > self.p.options.max_depth {
            return Ok(Taken::No);
        }
        let guessed = self.part.is_some() && self.frames.len() == 1;
        // The part's buffer is the next source of canonical text (`stream/splice.rs`).
        let source = self.parts.len() + 1;
        if object {
            let seam = self.members.len();
            if !self.take_members(&part, source) {
                return Ok(Taken::No);
            }
            let head = part.head.take();
            self.keep_part(part, source);
            if let Some((head, member, sent)) = head {
                // A head is of use where the part is the root's, on the main reader.
                if self.frames.len() == 1 && self.part.is_none() && !self.early.on {
                    self.head = Some(HeadTaken {
                        head,
                        member: seam + member,
                        sent: rebased(source, sent),
                    });
                }
            }
            if self.early.on && self.frames.len() == 1 {
                // The root's members, which the early writes follow one by one: the part's
                // may hold a smaller key than the guess.
                for new in seam..self.members.len() {
                    self.early_root_member(new, out);
                }
            }
        } else {
            self.keep_part(part, source);
        }
        self.count_taken();
        if guessed {
            // The helper's guessed container ends where the part does: the part's text
            // follows the helper's, for a reader that takes them whole.
            if let Some(helper) = &mut self.part {
                helper.end = Some(self.p.pos - 1);
                helper.tail = Some(source);
            }
            return Ok(Taken::Ends);
        }
        if object {
            self.close_object(out)?;
        } else {
            // The array closes right here, so its element index is not needed again: the
            // part's elements go after a comma, before its `]`.
            self.frames.pop();
            self.insert_part();
            self.buf.push(b']');
        }
        Ok(Taken::Yes)
    }

    fn count_taken(&mut self) {
        if let Some(main) = &mut self.main {
            main.taken += 1;
            if self.part.is_some() {
                if let Some(steal_count) = self.stolen_count {
                    steal_count.fetch_add(1, Atomic::Relaxed);
                }
            }
        }
    }

    /// Appends a part's members to the innermost object's, which is then in order if both
    /// sides are and the seam is; `false` (and everything as it was) if they cannot be. Their
    /// text stays in the part's buffer, `source` ([`Canon::keep_part`]).
    fn take_members(&mut self, part: &Part, source: usize) -> bool {
        let (members_len, keys_len) = (self.members.len(), self.keys.len());
        self.keys.extend_from_slice(&part.keys);
        self.members.extend(part.members.iter().map(|m| {
            let mut m = *m;
            m.text_start = rebased(source, m.text_start);
            m.text_end = rebased(source, m.text_end);
            if m.key.start & DECODED != 0 {
                m.key.start += keys_len;
                m.key.end += keys_len;
            }
            m
        }));
        if self.settle_members(members_len, part) {
            return true;
        }
        self.members.truncate(members_len);
        self.keys.truncate(keys_len);
        false
    }

    /// Keeps a taken part's canonical text where the helper wrote it, as `source`, with its
    /// splices (and the parts it took in turn, as the sources after it), and moves the
    /// reading past its closing bracket.
    fn keep_part(&mut self, part: Part, source: usize) {
        debug_assert_eq!(source, self.parts.len() + 1);
        let base = self.pieces.len();
        self.pieces.extend(part.pieces.iter().map(|p| Piece {
            start: rebased(source, p.start),
            end: rebased(source, p.end),
            comma: p.comma,
        }));
        let splices = |splices: &[Splice]| {
            splices
                .iter()
                .map(|s| Splice {
                    first: s.first + base,
                    last: s.last + base,
                    ..*s
                })
                .collect()
        };
        self.parts.push(PartText {
            splices: splices(&part.splices),
            buf: part.buf,
        });
        for taken in part.parts {
            self.parts.push(PartText {
                splices: splices(&taken.splices),
                buf: taken.buf,
            });
        }
        self.part_taken = (source, part.tail.map(|tail| source + tail));
        self.p.pos = part.end + 1;
    }

    /// The innermost object's key order with the part's members (from `seam` on) appended;
    /// `false` when there is no member on either side of the seam (which a comma between
    /// two members rules out). A duplicate key is found when the object closes, right after,
    /// as for any object out of order.
    fn settle_members(&mut self, seam: usize, part: &Part) -> bool {
        let inside_root = self.frames.len() > 1;
        let Some(Frame::Object(obj)) = self.frames.last_mut() else {
            return false;
        };
        let (input, keys, members) = (self.p.bytes, &self.keys[..], &self.members[..]);
        if seam <= obj.first_member || seam >= members.len() {
            return false;
        }
        let astral = obj.astral || part.astral;
        let across = Self::member_cmp(!astral, input, keys, &members[seam - 1], &members[seam]);
        let sorted = obj.sorted && part.sorted && across.is_lt();
        if obj.sorted && !sorted && inside_root {
            self.early.unsorted(obj.start);
        }
        obj.sorted = sorted;
        obj.astral = astral;
        true
    }
}

/// The helper: guesses from the first comma at or after `plan.from` until it reads a part
/// of at least `plan.min_part` bytes of text, and reports each guess's outcome. With `back`,
/// it takes the parts the main reader steals from it; with `at`, it says where it reads.
#[allow(clippy::too_many_arguments)]
fn help<'a>(
    text: &'a [u8],
    options: ParseOptions,
    profile: Profile,
    lane: &'a Lane,
    outcomes: Sender<Outcome>,
    plan: Plan,
    at: Option<&'a AtomicUsize>,
    mut back: Option<Main<'a>>,
    stolen: Option<&'a AtomicUsize>,
    mut head: Option<Box<dyn Head>>,
    signal: Option<&'a HeadSignal>,
) {
    let mut from = plan.from;
    for slot in &lane.candidates[..] {
        if lane.cancel.load(Atomic::Relaxed) {
            return;
        }
        let Some(comma) = text
            .get(from..)
            .and_then(|rest| rest.iter().position(|&b| b == b','))
            .map(|k| from + k)
        else {
            return;
        };
        slot.store(comma, Atomic::Release);
        let helper = Helper {
            lane,
            end: None,
            at,
            tail: None,
            signal,
        };
        let reader = Reader {
            options,
            profile,
            moved_max: plan.moved_max,
            stolen,
        };
        let part = read_part(text, reader, helper, comma, &mut back, &mut head);
        // After a container, the first comma is in the one around it: the helper goes on
        // there, so that it reads to the end of the text while the main reader reads to
        // its first candidate.
        let (next, part) = match part {
            Some(part) if part.end - comma >= plan.min_part => (part.end + 1, Some(part)),
            Some(part) => (part.end + 1, None),
            None => (comma + 1, None),
        };
        if outcomes.send(Outcome { comma, part }).is_err() {
            return;
        }
        from = next;
    }
}

/// How a part is read.
struct Reader<'a> {
    options: ParseOptions,
    profile: Profile,
    moved_max: usize,
    /// Counts the parts taken from the main reader.
    stolen: Option<&'a AtomicUsize>,
}

/// Reads on from `comma` as the one pass reads inside the container the comma is guessed
/// to be in, to that container's end; `None` when the guess meets anything it cannot
/// take: an error, a value without a canonical form, the end of the text.
fn read_part<'a>(
    text: &'a [u8],
    reader: Reader<'a>,
    helper: Helper<'a>,
    comma: usize,
    back: &mut Option<Main<'a>>,
    head: &mut Option<Box<dyn Head>>,
) -> Option<Part> {
    let object = member_follows(text, comma);
    // Room for a short part only: most parts are (a record, a container the helper climbs
    // out of), and a large buffer's first write takes a whole 2 MiB page under the binary's
    // allocator (`crates/cli/src/large_pages.rs`). A long part grows, its pages moved, not
    // copied, once past the first few hundred KiB (there, and under glibc's `realloc`).
    // With a head, the part's container is guessed to be the root (`stream/early.rs`,
    // [`Head`]): the early writes follow its members as they follow the root's.
    let mut c = Canon::with_buffer(
        text,
        reader.options,
        reader.profile,
        head.is_some(),
        (text.len() - comma).min(PART_BUFFER),
    );
    c.moved_max = reader.moved_max;
    c.p.pos = comma + 1;
    c.part = Some(helper);
    c.main = back.take();
    c.stolen_count = reader.stolen;
    // Nothing is handed to a writer: it all waits for the main reader.
    c.open_objects = 1;
    c.frames.push(if object {
        Frame::Object(Obj {
            start: 0,
            first_member: 0,
            keys_start: 0,
            sorted: true,
            astral: false,
        })
    } else {
        Frame::Array(0)
    });
    c.deepest = 1;
    // Nothing else is handed to a writer: it all waits for the main reader.
    let mut out = HeadOut(head.take());
    if let Some(h) = &mut out.0 {
        h.restart();
    }
    let read = if object {
        c.p.skip_whitespace();
        c.key(0).and_then(|()| {
            if c.early.on {
                c.early_root_key(&mut out);
            }
            c.value(&mut out)
        })
    } else {
        c.value(&mut out)
    };
    *back = c.main.take();
    // The head goes with the part if it holds the part's text, and the next guess gets a
    // fresh one.
    let sent = c.early.sent().filter(|_| c.io_error.is_none());
    let (part_head, kept) = match (out.0.take(), sent) {
        (Some(h), Some((member, sent))) => {
            let fresh = h.fresh();
            (Some((h, member, sent)), Some(fresh))
        }
        (h, _) => (None, h),
    };
    *head = kept;
    let (end, tail) = c.part.as_ref().map_or((None, None), |h| (h.end, h.tail));
    if read.is_err() || c.error.is_some() {
        return None;
    }
    let end = end?;
    let (sorted, astral) = match c.frames.first() {
        Some(Frame::Object(obj)) => (obj.sorted, obj.astral),
        Some(Frame::Array(_)) => (true, false),
        None => return None,
    };
    Some(Part {
        object,
        buf: c.buf,
        splices: c.splices,
        pieces: c.pieces,
        parts: c.parts,
        tail,
        members: c.members,
        keys: c.keys,
        sorted,
        astral,
        end,
        deepest: c.deepest,
        head: part_head,
    })
}

/// Whether what follows the `,` at `comma` reads as an object member: a string, then `:`.
/// (After a comma that separates values, only an object's key is followed by `:`.)
fn member_follows(text: &[u8], comma: usize) -> bool {
    let ws = |i: usize| {
        let mut i = i;
        while matches!(text.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        i
    };
    let mut i = ws(comma + 1);
    if text.get(i) != Some(&b'"') {
        return false;
    }
    i += 1;
    while let Some(&b) = text.get(i) {
        match b {
            b'"' => return text.get(ws(i + 1)) == Some(&b':'),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_reader_steals_by_the_rates_so_far_within_bounds() {
        let left = 1_000_000;
        // Equal rates: half, as the earlier rule took.
        assert_eq!(stolen_share(left, 0, 2_000, 1.0, 1_000, 0.5), 500_000);
        // The helper at 0.72 of the main reader's rate: both end together at 1 / 1.72.
        let share = stolen_share(left, 0, 1_000, 1.0, 720, 1.0);
        assert!((581_000..=581_500).contains(&share), "{share}");
        // Bounds: a helper that read nothing yet, one far faster.
        assert_eq!(stolen_share(left, 0, 1_000, 1.0, 0, 1.0), 750_000);
        assert_eq!(stolen_share(left, 0, 1_000, 1.0, 100_000, 1.0), 250_000);
        // A rate that cannot be known: half.
        assert_eq!(stolen_share(left, 0, 1_000, 1.0, 0, 0.0), 500_000);
        assert_eq!(stolen_share(left, 0, 0, 0.0, 1_000, 1.0), 500_000);
        assert_eq!(stolen_share(0, 0, 1_000, 1.0, 1_000, 1.0), 0);
    }

    #[test]
    fn a_head_being_written_makes_the_main_reader_steal_more() {
        // Equal rates of 1 MB/s, a million bytes left, and half a second of head on the
        // helper: both end together when the main reader reads 250,000 bytes more than half.
        let left = 1_000_000;
        let head = (HEAD_BYTES_PER_SEC * 0.5) as usize;
        let share = stolen_share(left, head, 1_000_000, 1.0, 1_000_000, 1.0);
        assert!((749_000..=751_000).contains(&share), "{share}");
        // More than three quarters only with a head, and never more than seven eighths.
        let share = stolen_share(left, head * 2, 1_000_000, 1.0, 1_000_000, 1.0);
        assert_eq!(share, 875_000);
        assert_eq!(stolen_share(left, 0, 1_000, 1.0, 1, 1.0), 750_000);
    }

    #[test]
    fn the_helper_writes_no_head_once_the_steal_is_decided() {
        let signal = HeadSignal {
            pending: AtomicUsize::new(0),
            decided: AtomicBool::new(false),
        };
        assert!(signal.begin(1_000));
        assert_eq!(signal.pending.load(Atomic::SeqCst), 1_000);
        signal.end();
        assert_eq!(signal.pending.load(Atomic::SeqCst), 0);
        signal.decided.store(true, Atomic::SeqCst);
        assert!(!signal.begin(1_000));
        assert_eq!(signal.pending.load(Atomic::SeqCst), 0);
    }
}
