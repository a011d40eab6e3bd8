//! The streaming canonicaliser: JSON text in, canonical bytes out, without building a
//! [`Value`](crate::Value).
//!
//! Why: parsing into the tree costs an allocation per string, key, array and object, and
//! freeing them again; for a fingerprint of a file that is most of the time and most of the
//! memory (a 32-byte `Value` for every number of a large array). Here the text is read once
//! and the canonical bytes are written as it goes. Only object members have to wait: each
//! member's canonical text goes into one buffer, and when the object closes its members are
//! put in the profile's key order, which is free when the input's keys were already in order.
//! Outside any object (a top-level array) the bytes go straight on to the caller's writer.
//!
//! The common tokens take a short way: a string of printable ASCII, a literal, a number whose
//! text is already canonical (and, in profile python, a string whose escapes are the ones
//! `json.dumps` writes) are copied from the input as they are; anything else, and every error,
//! is read again from its first byte by the parser's own code.
//!
//! A large text can be read on two threads: `stream/split.rs`.
//!
//! The result is exactly `parse_with` then `write_value`, bytes and errors alike: the lexing
//! is the parser's own code ([`Parser`]), the structure below mirrors
//! [`Parser::parse_document`], the tokens are written by the writer's own functions, a parse
//! error anywhere wins over a value error, and of several values without a canonical form the
//! one the writer's walk meets first (canonical order) is named. Tested against the two-step
//! path on generated and mutated documents (`tests/stream_differential.rs`).

mod duplicates;
mod early;
mod escape_window;
mod order;
mod splice;
mod split;
mod tokens;

use std::cmp::Ordering;
use std::io;

use crate::escape::{jcs_string, python_key_of_token, python_string};
use crate::parser::{Parser, StringToken};
use crate::scan::ascii_escaped_string;
use crate::sink::Out;
use crate::writer::cmp_utf16;
use crate::{ParseError, ParseOptions, Profile, WriteError, MAX_WRITE_DEPTH};
use early::{Early, HeadTaken, NoRestart};
pub use early::{EarlyWrite, Head};
#[doc(hidden)]
pub use order::MOVED_MAX;
use splice::{is_in_part, PartText, Piece, Rope, Splice};
use split::Taken;
pub use split::{
    canonicalize_early_parallel, canonicalize_parallel, canonicalize_parallel_headed,
    reads_in_parallel,
};
#[doc(hidden)]
pub use split::{canonicalize_split_from, PartsTaken, Plan};
use tokens::{copy_token, quoted};
pub(crate) use tokens::{python_verbatim_end, verbatim_number};

/// Why [`canonicalize`] stopped: the text is not JSON (first), a value has no canonical form
/// in the profile, or the writer failed.
#[derive(Debug, thiserror::Error)]
pub enum CanonError {
    #[error("invalid JSON: {0}")]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Value(#[from] WriteError),
    #[error("writing canonical bytes failed: {0}")]
    Io(#[from] io::Error),
}

/// Writes the canonical bytes, in `profile`, of the JSON `text` to `out`: the same bytes and
/// the same errors as [`parse_with`](crate::parse_with) followed by
/// [`write_value`](crate::write_value), in one pass and without the tree.
///
/// Memory: the input, plus the canonical text of the outermost open object (its members
/// wait there to be put in order); a top-level array streams in 64 KiB pieces. On an
/// error `out` may have received a prefix of the document; discard it.
pub fn canonicalize<W: io::Write>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
) -> Result<(), CanonError> {
    run(text, options, profile, &mut NoRestart(out), false)
}

/// As [`canonicalize`], but hands `out` canonical bytes before the document ends when the
/// root is an object, so that a writer hashing on another thread works while the text is
/// still being read (see `stream/early.rs`). Those bytes are a guess; when it fails, `out`
/// is told to [`restart`](EarlyWrite::restart) and given the document again. When this
/// returns `Ok`, what `out` holds since its last restart is exactly the canonical bytes.
pub fn canonicalize_early<W: EarlyWrite>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
) -> Result<(), CanonError> {
    run(text, options, profile, out, true)
}

fn run<W: EarlyWrite>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
    early: bool,
) -> Result<(), CanonError> {
    if let Some(result) = beyond_the_writers_depth(text, options, profile, out) {
        return result;
    }
    Canon::new(text, *options, profile, early).finish(out)
}

/// Nesting allowed deeper than the writer goes: the two-step path words that error.
fn beyond_the_writers_depth<W: io::Write>(
    text: &[u8],
    options: &ParseOptions,
    profile: Profile,
    out: &mut W,
) -> Option<Result<(), CanonError>> {
    if options.max_depth <= MAX_WRITE_DEPTH {
        return None;
    }
    Some(match crate::parse_with(text, options) {
        Err(e) => Err(e.into()),
        Ok(value) => crate::write_value(&value, profile, out).map_err(|e| match e {
            crate::Error::Value(e) => CanonError::Value(e),
            crate::Error::Io(e) => CanonError::Io(e),
        }),
    })
}

/// Pending bytes are handed to the writer in pieces of about this size, when no object is
/// open.
const FLUSH_BYTES: usize = 64 * 1024;

/// Where a key's decoded UTF-8 is: in the input itself when the key had no escape (nothing
/// is copied), else in `keys` (`start` then has [`DECODED`] set). Plain words only: members
/// are built and read on the hot path, where a flag byte beside them would cost more than
/// the bit.
#[derive(Clone, Copy)]
struct KeyRef {
    start: usize,
    end: usize,
}

const DECODED: usize = 1 << (usize::BITS - 1);

impl KeyRef {
    #[inline]
    fn bytes<'k>(self, input: &'k [u8], keys: &'k [u8]) -> &'k [u8] {
        if self.start & DECODED != 0 {
            &keys[self.start & !DECODED..self.end]
        } else {
            &input[self.start..self.end]
        }
    }
}

/// One member of an open object: its key and its canonical text `"key":value` (in `buf`).
/// Recorded when its key is read, so the member awaiting its value is always the last one
/// (its object's members come after those of the objects around it, and the members of an
/// object inside its value are gone when that object closes).
#[derive(Clone, Copy)]
struct Member {
    /// The key's first 8 bytes, big-endian, zero-padded: orders most keys in one compare.
    prefix: u64,
    key: KeyRef,
    /// Where the key starts in the input (a duplicate is reported there).
    at: usize,
    text_start: usize,
    /// Set when the value is complete.
    text_end: usize,
}

struct Obj {
    /// Offset in `buf` just after the `{`.
    start: usize,
    first_member: usize,
    keys_start: usize,
    /// Every key so far came in the profile's order (so none repeats and nothing moves).
    sorted: bool,
    /// A key has an astral char, whose UTF-16 order (profile jcs) is not its byte order.
    astral: bool,
}

enum Frame {
    /// An array and the index of the element being read.
    Array(usize),
    Object(Obj),
}

/// A step of the JSON Pointer of a value without a canonical form.
enum Seg {
    Key(String),
    Index(usize),
}

struct Canon<'a> {
    p: Parser<'a>,
    profile: Profile,
    jcs: bool,
    allow_nan: bool,
    /// Canonical bytes not yet handed to the writer, in the order they were written: the
    /// ranges `splices` name go out as their pieces (`stream/splice.rs`).
    buf: Vec<u8>,
    splices: Vec<Splice>,
    /// The helper's parts once taken: their canonical text stays in the buffers the helper
    /// wrote, which offsets made by `splice::in_part` point into.
    parts: Vec<PartText>,
    /// The pieces of every buffer's splices.
    pieces: Vec<Piece>,
    /// Decoded keys (those with escapes) of the open objects' members.
    keys: Vec<u8>,
    members: Vec<Member>,
    frames: Vec<Frame>,
    open_objects: usize,
    /// A decoded string (one with escapes).
    scratch: String,
    /// The key order of the object being reordered (indices of its members), and the last
    /// order found for each number of members (below `order::ORDERS_KEPT`).
    order: Vec<u32>,
    /// Scratch of the sort of a large object (`order::sort_by_prefix`).
    by_prefix: Vec<(u64, u32)>,
    orders: Vec<Vec<u32>>,
    /// The members of an object being reordered, copied aside.
    aside: Vec<u8>,
    /// Objects up to this size are reordered by moving their text (`order::MOVED_MAX`).
    moved_max: usize,
    early: Early,
    /// The helper's head of the document, with the part taken into the root that brought it
    /// (`stream/early.rs`, [`Head`]).
    head: Option<HeadTaken>,
    /// The value error first in canonical order so far, with its path.
    error: Option<(Vec<Seg>, Box<WriteError>)>,
    io_error: Option<io::Error>,
    /// The main reader, when a helper reads a part of the text on another thread.
    main: Option<split::Main<'a>>,
    /// The helper: its outermost container is a guess, and it stops where that ends.
    part: Option<split::Helper<'a>>,
    /// The sources (`splice::in_part`) of the last part taken: its own buffer, and the
    /// buffer whose text follows it, if any (`stream/split.rs`).
    part_taken: (usize, Option<usize>),
    /// For the helper: counts the parts it takes from the main reader.
    stolen_count: Option<&'a std::sync::atomic::AtomicUsize>,
    /// The most containers open at once (with the helper's guessed one).
    deepest: usize,
}

impl<'a> Canon<'a> {
    fn new(text: &'a [u8], options: ParseOptions, profile: Profile, early: bool) -> Self {
        // Room for the whole document at once: the outermost object's members wait here,
        // and growing a buffer of hundreds of MB by doubling copies it, and holds the old
        // and the new one together, under an allocator that does not remap. Pages never
        // written (a top-level array flushes every 64 KiB) are never resident. No more than
        // that for a short text: 128 KiB is where `lockstep`'s allocator gives a block a
        // huge page of its own, whose first write zeroes 2 MiB (0.1-0.2 ms, 5-9% of a whole
        // `lockstep fingerprint` of a small file).
        Self::with_buffer(text, options, profile, early, text.len() + 64)
    }

    fn with_buffer(
        text: &'a [u8],
        options: ParseOptions,
        profile: Profile,
        early: bool,
        buffer: usize,
    ) -> Self {
        Canon {
            p: Parser::new(text, options),
            profile,
            jcs: profile == Profile::Jcs,
            allow_nan: profile == Profile::Python,
            buf: Vec::with_capacity(buffer),
            splices: Vec::new(),
            parts: Vec::new(),
            pieces: Vec::new(),
            keys: Vec::new(),
            members: Vec::new(),
            frames: Vec::new(),
            open_objects: 0,
            scratch: String::new(),
            order: Vec::new(),
            by_prefix: Vec::new(),
            orders: Vec::new(),
            aside: Vec::new(),
            moved_max: order::MOVED_MAX,
            early: Early::new(early),
            head: None,
            error: None,
            io_error: None,
            main: None,
            part: None,
            part_taken: (0, None),
            stolen_count: None,
            deepest: 0,
        }
    }

    /// The whole document to `out`: its canonical bytes, or why not.
    fn finish<W: EarlyWrite>(&mut self, out: &mut W) -> Result<(), CanonError> {
        self.document(out)?;
        if let Some((path, mut e)) = self.error.take() {
            e.pointer = pointer_of(&path);
            return Err(CanonError::Value(*e));
        }
        self.flush(out);
        match self.io_error.take() {
            Some(e) => Err(CanonError::Io(e)),
            None => Ok(()),
        }
    }
}

impl Canon<'_> {
    /// As [`Parser::parse_document`].
    fn document<W: EarlyWrite>(&mut self, out: &mut W) -> Result<(), ParseError> {
        if self.p.bytes.starts_with(b"\xef\xbb\xbf") {
            return Err(self.p.error("byte order mark is not allowed"));
        }
        if let Err(e) = self.value(out) {
            // A duplicate key not checked yet came before this error.
            return Err(self.earliest_duplicate().unwrap_or(e));
        }
        self.p.skip_whitespace();
        if self.p.pos < self.p.bytes.len() {
            return Err(self.p.error("trailing characters after the JSON value"));
        }
        Ok(())
    }

    fn flush<W: io::Write>(&mut self, out: &mut W) {
        self.emit_range(0, self.buf.len(), out);
        self.clear_buf();
    }

    /// Hands `start..end` of `buf` (or of a part's buffer, by the offsets) to `out`, the
    /// splices in it as their pieces.
    #[inline]
    fn emit_range<W: io::Write>(&mut self, start: usize, end: usize, out: &mut W) {
        if self.splices.is_empty() && !is_in_part(start) {
            emit(&mut self.io_error, &self.buf[start..end], out);
            return;
        }
        let rope = Rope {
            buf: &self.buf,
            splices: &self.splices,
            parts: &self.parts,
            pieces: &self.pieces,
        };
        rope.emit(start, end, &mut self.io_error, out);
    }

    /// Everything in `buf` went out: it starts again empty, with nothing spliced.
    fn clear_buf(&mut self) {
        self.buf.clear();
        self.splices.clear();
        self.pieces.clear();
        self.parts.clear();
    }

    /// As the parser's `parse_value`, writing instead of building.
    fn value<W: EarlyWrite>(&mut self, out: &mut W) -> Result<(), ParseError> {
        loop {
            self.p.skip_whitespace();
            match self.p.peek() {
                Some(b'[' | b'{') => {
                    let open = self.p.open(self.frames.len())?;
                    // Containers open with this one, empty or not (see `stream/split.rs`).
                    self.deepest = self.deepest.max(self.frames.len() + 1);
                    if open == b'[' {
                        if self.p.peek() == Some(b']') {
                            self.p.pos += 1;
                            self.buf.put(b"[]");
                        } else {
                            self.buf.byte(b'[');
                            self.frames.push(Frame::Array(0));
                            continue;
                        }
                    } else if self.p.peek() == Some(b'}') {
                        self.p.pos += 1;
                        self.buf.put(b"{}");
                    } else {
                        self.buf.byte(b'{');
                        let start = self.buf.len();
                        self.open_objects += 1;
                        self.frames.push(Frame::Object(Obj {
                            start,
                            first_member: self.members.len(),
                            keys_start: self.keys.len(),
                            sorted: true,
                            astral: false,
                        }));
                        self.key(start)?;
                        if self.early.on && self.frames.len() == 1 {
                            self.early_root_key(out);
                        }
                        continue;
                    }
                }
                _ => self.scalar()?,
            }
            // Hand the finished value to enclosing containers, closing those that end here.
            loop {
                if self.buf.len() >= self.early.next_at {
                    self.early_send(out);
                }
                self.p.skip_whitespace();
                match self.frames.last_mut() {
                    None => return Ok(()),
                    Some(Frame::Array(_)) => match self.p.peek() {
                        Some(b',') => {
                            match self.split_at_comma(out)? {
                                Taken::No => {}
                                Taken::Yes => continue,
                                Taken::Ends => return Ok(()),
                            }
                            self.p.pos += 1;
                            if let Some(Frame::Array(index)) = self.frames.last_mut() {
                                *index += 1;
                            }
                            self.buf.byte(b',');
                            if self.open_objects == 0 && self.buf.len() >= FLUSH_BYTES {
                                self.flush(out);
                            }
                            break;
                        }
                        Some(b']') => {
                            if self.ends_the_part() {
                                return Ok(());
                            }
                            self.p.pos += 1;
                            self.frames.pop();
                            self.buf.byte(b']');
                        }
                        _ => return Err(self.p.expected("',' or ']' in an array")),
                    },
                    Some(Frame::Object(_)) => {
                        self.member_done();
                        if self.early.on && self.part.is_some() && self.frames.len() == 1 {
                            self.early_member_done(out);
                        }
                        match self.p.peek() {
                            Some(b',') => {
                                match self.split_at_comma(out)? {
                                    Taken::No => {}
                                    Taken::Yes => continue,
                                    Taken::Ends => return Ok(()),
                                }
                                self.p.pos += 1;
                                self.p.skip_whitespace();
                                self.buf.byte(b',');
                                self.key(self.buf.len())?;
                                if self.early.on && self.frames.len() == 1 {
                                    self.early_root_key(out);
                                }
                                break;
                            }
                            Some(b'}') => {
                                if self.ends_the_part() {
                                    return Ok(());
                                }
                                self.p.pos += 1;
                                self.close_object(out)?;
                            }
                            _ => return Err(self.p.expected("',' or '}' in an object")),
                        }
                    }
                }
            }
        }
    }

    /// A key and its `:` (whitespace before it already skipped), as the parser's
    /// `parse_key`, for the innermost open object: writes `"key":` to `buf` (the member's
    /// text starts at `text_start`), keeps the decoded key in `keys` if it had escapes, and
    /// records the member.
    fn key(&mut self, text_start: usize) -> Result<(), ParseError> {
        if self.p.peek() != Some(b'"') {
            return Err(self.p.expected("a string key"));
        }
        let at = self.p.pos;
        let (key, prefix, astral) = if let Some(text) = self.p.printable_string() {
            copy_token(&mut self.buf, self.p.bytes, at, self.p.pos);
            let start = at + 1;
            let prefix = prefix_in(self.p.bytes, start, text.len());
            let key = KeyRef {
                start,
                end: start + text.len(),
            };
            (key, prefix, false)
        } else {
            self.key_token(at)?
        };
        self.p.skip_whitespace();
        if self.p.peek() != Some(b':') {
            return Err(self.p.expected("':' after an object key"));
        }
        self.p.pos += 1;
        self.buf.byte(b':');
        if astral {
            if let Some(Frame::Object(obj)) = self.frames.last_mut() {
                obj.astral = true;
            }
        }
        self.members.push(Member {
            prefix,
            key,
            at,
            text_start,
            text_end: text_start,
        });
        Ok(())
    }

    /// A key that is not one printable run, at `at`: its canonical text in `buf`; where it
    /// is, its prefix, and whether it has an astral char.
    #[inline(never)]
    fn key_token(&mut self, at: usize) -> Result<(KeyRef, u64, bool), ParseError> {
        // A key as `json.dump` writes a non-ASCII one: decoded (its order is its chars') in
        // the same scan that tells whether its token is already its python text.
        if let Some((end, verbatim)) =
            ascii_escaped_string(self.p.bytes, at, self.p.options, &mut self.scratch)
        {
            self.p.pos = end;
            if verbatim && !self.jcs {
                self.buf.put(&self.p.bytes[at..end]);
            } else if self.jcs {
                jcs_string(&self.scratch, &mut self.buf);
            } else {
                python_string(&self.scratch, &mut self.buf);
            }
            return Ok(self.decoded_key());
        }
        // A key of raw UTF-8 (a state file written without `ensure_ascii`): escaped and
        // decoded in one scan, as the string values of such a file are.
        if !self.jcs {
            let start = self.keys.len();
            if let Some(end) = python_key_of_token(self.p.bytes, at, &mut self.buf, &mut self.keys)
            {
                self.p.pos = end;
                let key = KeyRef {
                    start: start | DECODED,
                    end: self.keys.len(),
                };
                return Ok((key, prefix_in(&self.keys, start, key.end - start), false));
            }
        }
        Ok(match self.p.string_token(&mut self.scratch)? {
            StringToken::Raw { text, printable } => {
                let key = KeyRef {
                    start: at + 1,
                    end: at + 1 + text.len(),
                };
                if printable || self.jcs {
                    quoted(&mut self.buf, text.as_bytes());
                } else {
                    python_string(text, &mut self.buf);
                }
                let astral = self.jcs && !printable && has_astral(text.as_bytes());
                (key, prefix_in(self.p.bytes, key.start, text.len()), astral)
            }
            StringToken::Decoded => {
                if self.jcs {
                    jcs_string(&self.scratch, &mut self.buf);
                } else {
                    python_string(&self.scratch, &mut self.buf);
                }
                self.decoded_key()
            }
        })
    }

    /// The key decoded into `scratch`, kept in `keys`: where it is, its prefix, and whether
    /// it has an astral char.
    fn decoded_key(&mut self) -> (KeyRef, u64, bool) {
        let start = self.keys.len();
        self.keys.extend_from_slice(self.scratch.as_bytes());
        let key = KeyRef {
            start: start | DECODED,
            end: self.keys.len(),
        };
        let astral = self.jcs && has_astral(self.scratch.as_bytes());
        (key, prefix_in(&self.keys, start, key.end - start), astral)
    }

    /// The profile's key order.
    fn key_cmp(jcs: bool, a: &[u8], b: &[u8]) -> Ordering {
        // UTF-8 byte order is UTF-16 order unless an astral char (lead byte 0xF0..) is
        // involved; see writer::utf8_order_is_utf16_order.
        if jcs && (a.iter().any(|&x| x >= 0xf0) || b.iter().any(|&x| x >= 0xf0)) {
            // Both are slices of valid UTF-8 (whole decoded keys).
            let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
            cmp_utf16(&a, &b)
        } else {
            a.cmp(b)
        }
    }

    /// [`Canon::key_cmp`] of two members: by their prefixes first, where byte order is the
    /// profile's order (no astral key in the object, or profile python).
    #[inline(always)]
    fn member_cmp(by_bytes: bool, input: &[u8], keys: &[u8], a: &Member, b: &Member) -> Ordering {
        if by_bytes && a.prefix != b.prefix {
            return a.prefix.cmp(&b.prefix);
        }
        Self::member_cmp_keys(by_bytes, input, keys, a, b)
    }

    /// [`Canon::member_cmp`] when the prefixes do not decide.
    #[inline(never)]
    fn member_cmp_keys(
        by_bytes: bool,
        input: &[u8],
        keys: &[u8],
        a: &Member,
        b: &Member,
    ) -> Ordering {
        Self::key_cmp(
            !by_bytes,
            a.key.bytes(input, keys),
            b.key.bytes(input, keys),
        )
    }

    /// The value of the pending member (the last one) is complete: note whether its key
    /// keeps the object in order. An object out of order is checked for a duplicate key when
    /// it closes, or when an error ends the document first (see `stream/duplicates.rs`).
    fn member_done(&mut self) {
        let inside_root = self.frames.len() > 1;
        let Some(Frame::Object(obj)) = self.frames.last_mut() else {
            return;
        };
        let end = self.buf.len();
        let Some((member, earlier)) = self.members[obj.first_member..].split_last_mut() else {
            return;
        };
        member.text_end = end;
        let member = &*member;
        if obj.sorted {
            if let Some(last) = earlier.last() {
                let by_bytes = !obj.astral;
                let input = self.p.bytes;
                if Self::member_cmp(by_bytes, input, &self.keys, last, member) != Ordering::Less {
                    obj.sorted = false;
                    if inside_root {
                        self.early.unsorted(obj.start);
                    }
                }
            }
        }
    }

    /// `}`: puts the members in key order if they did not come so, and forgets them; refuses
    /// a duplicate key not refused yet.
    fn close_object<W: EarlyWrite>(&mut self, out: &mut W) -> Result<(), ParseError> {
        let Some(Frame::Object(obj)) = self.frames.last() else {
            return Ok(());
        };
        if !obj.sorted {
            let (first, by_bytes) = (obj.first_member, !obj.astral);
            if self.find_order(first, by_bytes) {
                return Err(self
                    .earliest_duplicate()
                    .unwrap_or_else(|| self.p.error("duplicate key")));
            }
        }
        let Some(Frame::Object(obj)) = self.frames.pop() else {
            return Ok(());
        };
        self.open_objects -= 1;
        if self.frames.is_empty() {
            out.ending();
        }
        // A part of the helper's was taken into this object: its members come last.
        let with_part = self.members[obj.first_member..]
            .last()
            .is_some_and(|m| is_in_part(m.text_start));
        let root_done_early = self.frames.is_empty()
            && if self.early.on {
                self.early_close_root(obj.sorted, out)
            } else {
                self.close_root_after_head(obj.sorted, out)
            };
        if root_done_early {
        } else if obj.sorted {
            if with_part {
                self.insert_part();
            }
        } else {
            // Bytes in it go out as pieces: they cannot be moved.
            let spliced = with_part || self.splices.last().is_some_and(|s| s.start >= obj.start);
            if self.open_objects == 0 && (spliced || self.buf.len() - obj.start >= FLUSH_BYTES) {
                self.write_in_order(obj.start, obj.first_member, out);
            } else {
                self.put_in_order(obj.start, obj.first_member, spliced);
            }
        }
        self.members.truncate(obj.first_member);
        self.keys.truncate(obj.keys_start);
        self.buf.byte(b'}');
        Ok(())
    }

    /// A value without a canonical form at the current path: kept if the writer's walk
    /// (members in key order) would meet it before the one kept so far.
    #[cold]
    fn refused(&mut self, e: Box<WriteError>) {
        // An object's pending member is the one just before the next object's first member,
        // or the last member when no object is open inside it.
        let mut pending = vec![0; self.frames.len()];
        let mut next_first = self.members.len();
        for (slot, f) in pending.iter_mut().zip(&self.frames).rev() {
            if let Frame::Object(obj) = f {
                *slot = next_first - 1;
                next_first = obj.first_member;
            }
        }
        let path: Vec<Seg> = self
            .frames
            .iter()
            .zip(pending)
            .map(|(f, pending)| match f {
                Frame::Array(i) => Seg::Index(*i),
                Frame::Object(_) => Seg::Key(
                    String::from_utf8_lossy(
                        self.members[pending].key.bytes(self.p.bytes, &self.keys),
                    )
                    .into_owned(),
                ),
            })
            .collect();
        let earlier = match &self.error {
            None => true,
            Some((best, _)) => path_cmp(self.jcs, &path, best) == Ordering::Less,
        };
        if earlier {
            self.error = Some((path, e));
        }
    }
}

/// `bytes` to the writer, unless an earlier write failed (that error is the one reported).
fn emit<W: io::Write>(io_error: &mut Option<io::Error>, bytes: &[u8], out: &mut W) {
    if io_error.is_none() {
        if let Err(e) = out.write_all(bytes) {
            *io_error = Some(e);
        }
    }
}

fn has_astral(key: &[u8]) -> bool {
    key.iter().any(|&b| b >= 0xf0)
}

/// The first 8 bytes of `bytes[start..start + len]`, big-endian, zero-padded.
#[inline]
fn prefix_in(bytes: &[u8], start: usize, len: usize) -> u64 {
    if let Some(chunk) = bytes.get(start..start + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_be_bytes(word);
        if len >= 8 {
            w
        } else {
            // Keep the key's `len` leading bytes (none when `len` is 0).
            w & !(u64::MAX >> (8 * len))
        }
    } else {
        let key = &bytes[start..start + len];
        let mut head = [0u8; 8];
        let n = len.min(8);
        head[..n].copy_from_slice(&key[..n]);
        u64::from_be_bytes(head)
    }
}

/// Canonical walk order of two paths (both end at a scalar, so neither is a prefix of the
/// other; two paths first differ inside the same container).
fn path_cmp(jcs: bool, a: &[Seg], b: &[Seg]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Seg::Index(x), Seg::Index(y)) => x.cmp(y),
            (Seg::Key(x), Seg::Key(y)) => Canon::key_cmp(jcs, x.as_bytes(), y.as_bytes()),
            _ => Ordering::Equal,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// RFC 6901, as the writer builds it.
fn pointer_of(path: &[Seg]) -> String {
    let mut p = String::new();
    for seg in path {
        let s = match seg {
            Seg::Key(k) => k.clone(),
            Seg::Index(i) => i.to_string(),
        };
        p.push('/');
        p.push_str(&s.replace('~', "~0").replace('/', "~1"));
    }
    p
}
