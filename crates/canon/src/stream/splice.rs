//! Canonical text that is not in `buf` in its final order: a large object's members put in
//! key order by reference rather than by copy, and the helper's parts kept in the buffers
//! they were written to (`stream/split.rs`).
//!
//! Why: a page of memory touched for the first time costs the kernel's fault and zeroing,
//! about 0.4 ms per MB on the machines we measure, some thirty times a copy between warm
//! pages. Moving a 4 MB object's members into order through a copy aside touched 4 MB of
//! fresh pages for the copy, and taking the helper's part by appending it to `buf` touched
//! the part's size again: together more than the canonical text itself. A splice says
//! instead "these bytes of `buf`, read as these pieces": the bytes stay where they were
//! written and go out in order when they are handed to the writer.
//!
//! An offset says which buffer it is in: `buf`, or the `k`th part taken ([`in_part`]). A
//! splice stands for `start..end` of one buffer: an object
//! its first member to its last, or, with `start == end`, an insertion where a `}` or `]`
//! follows. Its pieces are ranges of either buffer, each preceded by a comma or not, and may
//! hold splices of their own (an object inside a member). A range handed over holds a splice
//! whole or not at all. The one splice that starts where one of its pieces does is the
//! splice itself (its first member in the text): a splice inside a piece starts after the
//! piece's first byte (a member's key, or a part's first member or element), so a piece
//! looks only after its first byte. Splices of one buffer never overlap
//! but by nesting, and are kept in order of `start` (a splice is made when its object
//! closes, after those inside it, and goes before them).

use std::io;

use super::emit;
use crate::writer::prefetch;

/// How many pieces ahead of the one handed over the next one's first bytes are asked for.
/// A large object's members go out in key order, scattered over the text they were read
/// in order of (a glossary of 20,000 keys: a cache miss each, on the core that did not write
/// them); asked for together, the misses overlap.
const PREFETCH_AHEAD: usize = 8;

/// Where an offset's buffer is said: the bits from here up (0: `buf`).
const SOURCE_SHIFT: u32 = 48;
const POSITION: usize = (1 << SOURCE_SHIFT) - 1;

/// `at` in the buffer of the `k`th part taken (from 1).
#[inline]
pub(super) fn in_part(k: usize, at: usize) -> usize {
    debug_assert!(at <= POSITION && k < 1 << (usize::BITS - SOURCE_SHIFT));
    k << SOURCE_SHIFT | at
}

/// `at`, an offset of a part's reader (in its `buf`, or in a part it took in turn), as an
/// offset of the reader that takes that part: its `buf` becomes source `base`, and the
/// parts it took the sources after it.
#[inline]
pub(super) fn rebased(base: usize, at: usize) -> usize {
    in_part(base + (at >> SOURCE_SHIFT), at & POSITION)
}

/// Whether an offset is in a part's buffer rather than in `buf`.
#[inline]
pub(super) fn is_in_part(at: usize) -> bool {
    at > POSITION
}

/// A range of one buffer read as a list of pieces (see the module's documentation).
#[derive(Clone, Copy, Debug)]
pub(super) struct Splice {
    /// What it stands for, in its buffer (a position only: the list it is in says which).
    pub(super) start: usize,
    pub(super) end: usize,
    /// Its pieces: `pieces[first..last]`.
    pub(super) first: usize,
    pub(super) last: usize,
}

/// A range of canonical text, in the buffer its offsets say.
#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    pub(super) start: usize,
    pub(super) end: usize,
    /// A comma goes before it.
    pub(super) comma: bool,
}

/// A part's canonical text where the helper wrote it, with the splices in it.
pub(super) struct PartText {
    pub(super) buf: Vec<u8>,
    pub(super) splices: Vec<Splice>,
}

/// Everything splices point into, for handing canonical text to a writer.
pub(super) struct Rope<'c> {
    pub(super) buf: &'c [u8],
    pub(super) splices: &'c [Splice],
    pub(super) parts: &'c [PartText],
    pub(super) pieces: &'c [Piece],
}

impl Rope<'_> {
    /// Where offset `at` is in memory (for a prefetch: a dangling address is harmless there).
    #[inline]
    fn address(&self, at: usize) -> *const u8 {
        let buffer = match (at >> SOURCE_SHIFT).checked_sub(1) {
            None => self.buf,
            Some(k) => self.parts.get(k).map_or(&[][..], |p| &p.buf[..]),
        };
        buffer.as_ptr().wrapping_add(at & POSITION)
    }

    /// Hands `start..end` (two offsets in one buffer) to `out`, each splice in it as its
    /// pieces.
    pub(super) fn emit<W: io::Write>(
        &self,
        start: usize,
        end: usize,
        io_error: &mut Option<io::Error>,
        out: &mut W,
    ) {
        self.emit_from(start, end, true, io_error, out);
    }

    /// As [`Rope::emit`]; a splice at `start` is in the range if `at_start` (else the range
    /// is that splice's piece).
    fn emit_from<W: io::Write>(
        &self,
        start: usize,
        end: usize,
        at_start: bool,
        io_error: &mut Option<io::Error>,
        out: &mut W,
    ) {
        debug_assert_eq!(start >> SOURCE_SHIFT, end >> SOURCE_SHIFT);
        let (bytes, splices) = match (start >> SOURCE_SHIFT).checked_sub(1) {
            None => (self.buf, self.splices),
            Some(k) => (&self.parts[k].buf[..], &self.parts[k].splices[..]),
        };
        let (start, end) = (start & POSITION, end & POSITION);
        let mut i = splices.partition_point(|s| s.start < start || (!at_start && s.start == start));
        let mut at = start;
        while let Some(s) = splices.get(i).filter(|s| s.start < end) {
            debug_assert!(s.end <= end, "a range ends inside a splice");
            emit(io_error, &bytes[at..s.start], out);
            let pieces = &self.pieces[s.first..s.last];
            for (k, piece) in pieces.iter().enumerate() {
                if let Some(ahead) = pieces.get(k + PREFETCH_AHEAD) {
                    prefetch(self.address(ahead.start));
                }
                if piece.comma {
                    emit(io_error, b",", out);
                }
                self.emit_from(piece.start, piece.end, false, io_error, out);
            }
            at = s.end;
            // The splices inside this one were handed over with its pieces.
            i += 1;
            while splices.get(i).is_some_and(|inner| inner.start < s.end) {
                i += 1;
            }
        }
        emit(io_error, &bytes[at..end], out);
    }
}

/// Puts `splice` among `splices`, which stay in order of `start`: before those inside it
/// (made earlier, when their objects closed).
pub(super) fn insert(splices: &mut Vec<Splice>, splice: Splice) {
    let at = splices.partition_point(|s| s.start < splice.start);
    splices.insert(at, splice);
}
