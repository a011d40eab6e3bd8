//! Putting an object's members in key order when it closes: finding the order (the one
//! last found for as many members first) and moving the members' canonical text there.

use std::cmp::Ordering;
use std::io;

use super::{emit, Canon, Member};

/// An object whose canonical text is at most this long is reordered through one copy of all
/// of it; a larger one keeps its largest member in place (see [`Canon::reorder`]).
const SMALL_OBJECT: usize = 4096;

/// Objects with fewer members than this remember the key order last found for their member
/// count (see [`Canon::find_order`]).
const ORDERS_KEPT: usize = 64;

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
    /// `members[first..]`), within `buf`. Same members, same number of commas: the
    /// object keeps its length. The largest member moves within the buffer (memmove); only
    /// the text before and after it is copied aside first (two copies), so a huge member (a
    /// large array) is never held twice.
    pub(super) fn reorder(&mut self, start: usize, first: usize) {
        let members = &self.members[first..];
        let len = |m: &Member| m.text_end - m.text_start;
        let end = self.buf.len();
        if end - start <= SMALL_OBJECT {
            // A small object (most are): all of it aside in one copy, then each member back.
            self.aside.clear();
            self.aside.extend_from_slice(&self.buf[start..end]);
            let mut to = start;
            for &i in &self.order {
                let m = &members[i as usize];
                let (from, n) = (m.text_start - start, len(m));
                copy_short(&mut self.buf[to..to + n], &self.aside[from..from + n]);
                to += n;
                if to < end {
                    self.buf[to] = b',';
                }
                to += 1;
            }
            return;
        }
        // The largest member, by its place in `order`.
        let mut largest = 0;
        for (k, &i) in self.order.iter().enumerate() {
            if len(&members[i as usize]) > len(&members[self.order[largest] as usize]) {
                largest = k;
            }
        }
        let big = &members[self.order[largest] as usize];
        let (big_start, big_end) = (big.text_start, big.text_end);
        self.aside.clear();
        self.aside.extend_from_slice(&self.buf[start..big_start]);
        self.aside.extend_from_slice(&self.buf[big_end..end]);
        // Where a member's text is in `aside`.
        let aside_at = |m: &Member| {
            if m.text_start < big_start {
                m.text_start - start
            } else {
                m.text_start - big_end + (big_start - start)
            }
        };
        let mut largest_to = start;
        for &i in &self.order[..largest] {
            largest_to += len(&members[i as usize]) + 1;
        }
        self.buf.copy_within(big_start..big_end, largest_to);
        let mut to = start;
        for (k, &i) in self.order.iter().enumerate() {
            let m = &members[i as usize];
            let n = len(m);
            if k != largest {
                let from = aside_at(m);
                copy_short(&mut self.buf[to..to + n], &self.aside[from..from + n]);
            }
            to += n;
            if to < end {
                // A comma after every member but the last (whose end is the object's end,
                // where `}` goes next).
                self.buf[to] = b',';
            }
            to += 1;
        }
    }

    /// The outermost open object closes, large: instead of moving its members within `buf`,
    /// hands everything before them, then each member of `members[first..]`
    /// in `order`, to the writer, and empties `buf`.
    pub(super) fn write_in_order<W: io::Write>(&mut self, start: usize, first: usize, out: &mut W) {
        emit(&mut self.io_error, &self.buf[..start], out);
        let members = &self.members[first..];
        for (k, &i) in self.order.iter().enumerate() {
            if k > 0 {
                emit(&mut self.io_error, b",", out);
            }
            let m = &members[i as usize];
            emit(&mut self.io_error, &self.buf[m.text_start..m.text_end], out);
        }
        self.buf.clear();
    }
}
