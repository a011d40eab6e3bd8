//! Putting an object's members in key order when it closes: finding the order (the one
//! last found for as many members first) and moving the members' canonical text there, or,
//! for a large object, splicing it (`stream/splice.rs`).

use std::cmp::Ordering;
use std::io;

use super::splice::{self, in_part, Piece, Splice};
use super::{emit, Canon};

/// An object whose canonical text is at most this long is put in order through one copy of
/// all of it (see [`Canon::reorder`]); a larger one is spliced, so that `aside` never takes
/// more fresh pages than this.
#[doc(hidden)]
pub const MOVED_MAX: usize = 256 * 1024;

/// Objects with fewer members than this remember the key order last found for their member
/// count (see [`Canon::find_order`]).
const ORDERS_KEPT: usize = 64;

/// Objects of at least this many members are sorted by [`sort_by_prefix`] where byte order
/// is the profile's order; smaller ones by comparisons, their order kept for the next object
/// of as many members.
const BY_PREFIX_MIN: usize = ORDERS_KEPT;

/// Sets `order` to the indices of `members` in key order, where byte order is the
/// profile's, and says whether two keys are equal.
///
/// Why not one `sort_unstable_by` of the indices: a large object (a glossary of 20,000 keys,
/// a map of hosts) is sorted with about 15 comparisons a member, each reaching into two
/// random members of `members` (a member is 48 bytes, so 20,000 are a megabyte, beyond the
/// first cache levels). Here each member is its key's first 8 bytes and its index, radix
/// sorted by those bytes in a sequential array (by the bytes that differ between keys only);
/// only members whose first 8 bytes are the same (rare but for keys of a common stem) are
/// then compared by their whole keys. A duplicate key can only be among those.
fn sort_by_prefix(
    members: &[super::Member],
    by_prefix: &mut Vec<(u64, u32)>,
    order: &mut Vec<u32>,
    cmp: impl Fn(u32, u32) -> Ordering,
) -> bool {
    by_prefix.clear();
    by_prefix.extend(
        members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.prefix, i as u32)),
    );
    radsort::sort_by_key(by_prefix, |&(prefix, _)| prefix);
    order.clear();
    order.extend(by_prefix.iter().map(|&(_, i)| i));
    let mut duplicate = false;
    let mut start = 0;
    while start < by_prefix.len() {
        let prefix = by_prefix[start].0;
        let end = start
            + by_prefix[start..]
                .iter()
                .take_while(|&&(p, _)| p == prefix)
                .count();
        if end - start > 1 {
            let run = &mut order[start..end];
            run.sort_unstable_by(|&a, &b| cmp(a, b));
            duplicate |= run.windows(2).any(|w| cmp(w[0], w[1]) == Ordering::Equal);
        }
        start = end;
    }
    duplicate
}

/// `dst.copy_from_slice(src)`, with fixed-size moves (two overlapping ones) for the short
/// texts most members are, where a `memcpy` call would cost more than the copy.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if (16..=32).contains(&n) {
        dst[..16].copy_from_slice(&src[..16]);
        dst[n - 16..].copy_from_slice(&src[n - 16..]);
    } else if (8..16).contains(&n) {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..].copy_from_slice(&src[n - 8..]);
    } else {
        dst.copy_from_slice(src);
    }
}

impl Canon<'_> {
    /// Sets `order` to the members of `members[first..]` in key order (indices into it).
    ///
    /// Records of one shape (the hosts of a state, the rows of a table) tend to bring their
    /// keys in the same order, so the order last found for as many members is tried first:
    /// if the keys are strictly increasing in it, it is the key order (there is only one),
    /// found in `n - 1` comparisons instead of a sort.
    ///
    /// Returns whether two keys compared equal (a duplicate key): never in the order tried
    /// first, which holds only if the keys are strictly increasing in it.
    pub(super) fn find_order(&mut self, first: usize, by_bytes: bool) -> bool {
        let members = &self.members[first..];
        let (input, keys) = (self.p.bytes, &self.keys[..]);
        let cmp = |a: u32, b: u32| {
            Self::member_cmp(
                by_bytes,
                input,
                keys,
                &members[a as usize],
                &members[b as usize],
            )
        };
        let n = members.len();
        self.order.clear();
        match self.orders.get(n) {
            Some(known)
                if known.len() == n
                    && known.windows(2).all(|w| cmp(w[0], w[1]) == Ordering::Less) =>
            {
                self.order.extend_from_slice(known);
                false
            }
            _ if by_bytes && n >= BY_PREFIX_MIN => {
                sort_by_prefix(members, &mut self.by_prefix, &mut self.order, cmp)
            }
            _ => {
                self.order.extend(0..n as u32);
                self.order.sort_unstable_by(|&a, &b| cmp(a, b));
                let duplicate = self
                    .order
                    .windows(2)
                    .any(|w| cmp(w[0], w[1]) == Ordering::Equal);
                if n < ORDERS_KEPT && !duplicate {
                    if self.orders.len() <= n {
                        self.orders.resize_with(n + 1, Vec::new);
                    }
                    self.orders[n].clone_from(&self.order);
                }
                duplicate
            }
        }
    }

    /// Puts the members of the object whose text starts at `start` in `order` (of
    /// `members[first..]`): moved within `buf` when the object is small and holds nothing
    /// spliced, else spliced (`stream/splice.rs`): a large object's members stay where they
    /// are, and go out in order as pieces.
    pub(super) fn put_in_order(&mut self, start: usize, first: usize, spliced: bool) {
        if !spliced && self.buf.len() - start <= self.moved_max {
            self.reorder(start, first);
        } else {
            self.splice_in_order(start, first);
        }
    }

    /// Moves the members into `order` within `buf` through one copy of all of them aside.
    /// Same members, same number of commas: the object keeps its length. `aside` is kept
    /// from object to object, so its pages are fresh only once.
    fn reorder(&mut self, start: usize, first: usize) {
        let members = &self.members[first..];
        let end = self.buf.len();
        self.aside.clear();
        self.aside.extend_from_slice(&self.buf[start..end]);
        let mut to = start;
        for &i in &self.order {
            let m = &members[i as usize];
            let (from, n) = (m.text_start - start, m.text_end - m.text_start);
            copy_short(&mut self.buf[to..to + n], &self.aside[from..from + n]);
            to += n;
            if to < end {
                // A comma after every member but the last (whose end is the object's end,
                // where `}` goes next).
                self.buf[to] = b',';
            }
            to += 1;
        }
    }

    /// The object's text, from `start` to the end of `buf`, is its members in `order`.
    fn splice_in_order(&mut self, start: usize, first: usize) {
        let from = self.pieces.len();
        let members = &self.members[first..];
        self.pieces.reserve_exact(self.order.len());
        self.pieces
            .extend(self.order.iter().enumerate().map(|(k, &i)| {
                let m = &members[i as usize];
                Piece {
                    start: m.text_start,
                    end: m.text_end,
                    comma: k > 0,
                }
            }));
        let splice = Splice {
            start,
            end: self.buf.len(),
            first: from,
            last: self.pieces.len(),
        };
        splice::insert(&mut self.splices, splice);
    }

    /// The part just taken, into an object that stays in key order or into an array: its
    /// members or elements go where the `}` or `]` is about to be written, after a comma
    /// (`stream/split.rs`).
    pub(super) fn insert_part(&mut self) {
        let from = self.pieces.len();
        let (source, tail) = self.part_taken;
        for source in std::iter::once(source).chain(tail) {
            let len = self.parts[source - 1].buf.len();
            self.pieces.push(Piece {
                start: in_part(source, 0),
                end: in_part(source, len),
                comma: true,
            });
        }
        let at = self.buf.len();
        self.splices.push(Splice {
            start: at,
            end: at,
            first: from,
            last: self.pieces.len(),
        });
    }

    /// The outermost open object closes, large: instead of moving its members within `buf`,
    /// hands everything before them, then each member of `members[first..]`
    /// in `order`, to the writer, and empties `buf`.
    pub(super) fn write_in_order<W: io::Write>(&mut self, start: usize, first: usize, out: &mut W) {
        self.emit_range(0, start, out);
        for k in 0..self.order.len() {
            if k > 0 {
                emit(&mut self.io_error, b",", out);
            }
            let m = self.members[first + self.order[k] as usize];
            self.emit_range(m.text_start, m.text_end, out);
        }
        self.clear_buf();
    }
}
