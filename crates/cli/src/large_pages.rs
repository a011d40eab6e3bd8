//! The allocator of the `lockstep` binary (and of the Python package's extension, which links
//! the same CLI): the system's, except that a block of [`LARGE`] bytes or more is a region of
//! its own, mapped at a 2 MiB boundary and advised `MADV_HUGEPAGE`.
//!
//! Why: the large buffers of a fingerprint (each reader's canonical text, a few MB) are
//! written once, so every 4 KiB page of them is a page fault on first touch: 2,550 faults
//! for a 3 MB state, about a third of `lockstep fingerprint`'s CPU time in the kernel. In
//! 2 MiB pages (transparent huge pages; the kernel's default mode "madvise" gives them to
//! regions that ask) the same buffers take a few dozen faults; wall time measured 5-12% lower
//! on five of the six shapes of scripts/bench-fingerprint (docs/canonical-json.md, twelfth
//! round). Where the kernel has no huge pages the advice is refused and ignored.
//!
//! A region freed is kept (up to [`KEPT`] of them, of at most [`KEPT_MAX`] each) and handed out
//! again, trimmed to size, to the next large block that fits: a buffer taken and freed in a
//! loop costs no fresh, zeroed 2 MiB page each time (glibc's malloc, which this replaces for
//! these sizes, keeps such blocks in its heap too). A block that has to be zeroed always gets
//! a fresh region, which the kernel zeroes.
//!
//! Growing a region moves its pages (`mremap`), never its bytes: in place when the address
//! space after it is free, else into a new aligned region.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks from this size (and of an alignment up to [`HUGE`]) are mapped here. Not only the
/// readers' texts: a fingerprint's vectors of members, pieces and sort keys grow by doubling
/// through 128 KiB to a few MB, and in the system's heap each doubling touched fresh 4 KiB
/// pages (`utf8`: 1,123 page faults; from 128 KiB rather than 1 MiB, 330 and 6% less wall
/// time, docs/canonical-json.md, fifteenth round). In a region they grow in place.
pub(crate) const LARGE: usize = 128 << 10;

/// The huge page size, and the granularity of every region here.
const HUGE: usize = 2 << 20;

/// Freed regions kept for reuse, at most this many ...
const KEPT: usize = 4;
/// ... each at most this long: at most 64 MiB held unused by a long-lived process.
const KEPT_MAX: usize = 16 << 20;

/// The system allocator, with large blocks in huge pages (see the module's text).
pub struct LargePages;

#[inline]
fn is_large(size: usize, align: usize) -> bool {
    size >= LARGE && align <= HUGE
}

/// The length of the region of a block of `size` bytes: whole huge pages.
#[inline]
fn region_len(size: usize) -> Option<usize> {
    size.checked_add(HUGE - 1).map(|n| n & !(HUGE - 1))
}

unsafe impl GlobalAlloc for LargePages {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !is_large(layout.size(), layout.align()) {
            return System.alloc(layout);
        }
        region_len(layout.size()).map_or(std::ptr::null_mut(), |len| {
            kept::take(len).unwrap_or_else(|| region::map(len))
        })
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !is_large(layout.size(), layout.align()) {
            return System.alloc_zeroed(layout);
        }
        region_len(layout.size()).map_or(std::ptr::null_mut(), |len| region::map(len))
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !is_large(layout.size(), layout.align()) {
            return System.dealloc(ptr, layout);
        }
        if let Some(len) = region_len(layout.size()) {
            if !kept::keep(ptr, len) {
                region::unmap(ptr, len);
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        match (is_large(layout.size(), align), is_large(new_size, align)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => match (region_len(layout.size()), region_len(new_size)) {
                (Some(old), Some(new)) => region::resize(ptr, old, new),
                _ => std::ptr::null_mut(),
            },
            // From the system's heap to a region or back: a copy, as malloc would make.
            _ => {
                let new_layout = Layout::from_size_align_unchecked(new_size, align);
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

/// Regions: mapped, unmapped, resized, all in whole huge pages at huge-page boundaries.
mod region {
    use super::HUGE;

    /// A fresh region of `len` bytes (a multiple of [`HUGE`]) at a [`HUGE`] boundary,
    /// advised to be backed by huge pages; null if the system has no room.
    pub(super) unsafe fn map(len: usize) -> *mut u8 {
        let Some(padded) = len.checked_add(HUGE) else {
            return std::ptr::null_mut();
        };
        let raw = libc::mmap(
            std::ptr::null_mut(),
            padded,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if raw == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        // Keep the aligned `len` bytes inside the padded mapping; give back the rest.
        let raw = raw as usize;
        let start = (raw + HUGE - 1) & !(HUGE - 1);
        if start > raw {
            libc::munmap(raw as *mut libc::c_void, start - raw);
        }
        let tail = raw + padded - (start + len);
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
        // Refused where the kernel has no transparent huge pages: 4 KiB pages, as before.
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        start as *mut u8
    }

    pub(super) unsafe fn unmap(ptr: *mut u8, len: usize) {
        libc::munmap(ptr.cast(), len);
    }

    /// The region at `ptr`, `old` bytes long, made `new` bytes long with its contents: the
    /// tail given back, or the pages moved, never copied. Null (the region untouched) if the
    /// system has no room.
    pub(super) unsafe fn resize(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
        if new <= old {
            if new < old {
                unmap(ptr.add(new), old - new);
            }
            return ptr;
        }
        // In place, where nothing is mapped after the region.
        let grown = libc::mremap(ptr.cast(), old, new, 0);
        if grown != libc::MAP_FAILED {
            libc::madvise(ptr.add(old).cast(), new - old, libc::MADV_HUGEPAGE);
            return ptr;
        }
        // Else a new region, with the old pages moved over its first `old` bytes.
        let to = map(new);
        if to.is_null() {
            return to;
        }
        let moved = libc::mremap(
            ptr.cast(),
            old,
            old,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            to.cast::<libc::c_void>(),
        );
        if moved == libc::MAP_FAILED {
            std::ptr::copy_nonoverlapping(ptr, to, old);
            unmap(ptr, old);
        }
        to
    }
}

/// Freed regions kept for the next large block (see the module's text). Lock-free: a
/// process that forks (the checks' forked workers) while another thread frees a region must
/// not leave the child a lock it can never take.
mod kept {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{region, HUGE, KEPT, KEPT_MAX};

    /// Each kept region as one word: its start (a multiple of [`HUGE`]) plus its length in
    /// huge pages, in the start's low bits, which are zero; 0 for an empty slot.
    static SLOTS: [AtomicUsize; KEPT] = [const { AtomicUsize::new(0) }; KEPT];

    fn length(word: usize) -> usize {
        (word & (HUGE - 1)) * HUGE
    }

    /// A kept region of at least `len` bytes (the first found), trimmed to `len`.
    pub(super) fn take(len: usize) -> Option<*mut u8> {
        for slot in &SLOTS {
            let word = slot.load(Ordering::Acquire);
            if word != 0
                && length(word) >= len
                && slot
                    .compare_exchange(word, 0, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                let start = (word & !(HUGE - 1)) as *mut u8;
                if length(word) > len {
                    // SAFETY: the tail beyond `len` is whole huge pages of this region,
                    // which is ours again and unused.
                    unsafe { region::unmap(start.add(len), length(word) - len) };
                }
                return Some(start);
            }
        }
        None
    }

    /// Keeps the freed region at `ptr` (`len` bytes) if it is small enough and a slot is
    /// free; `false` if the caller unmaps it.
    pub(super) fn keep(ptr: *mut u8, len: usize) -> bool {
        if len > KEPT_MAX {
            return false;
        }
        let word = ptr as usize | (len / HUGE);
        SLOTS.iter().any(|slot| {
            slot.compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// The kept regions' (start, length) as they are (tests).
    #[cfg(test)]
    pub(super) fn snapshot() -> Vec<(usize, usize)> {
        SLOTS
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .filter(|&word| word != 0)
            .map(|word| (word & !(HUGE - 1), length(word)))
            .collect()
    }

    /// Unmaps every kept region (tests: a known empty state).
    #[cfg(test)]
    pub(super) fn clear() {
        for slot in &SLOTS {
            let word = slot.swap(0, Ordering::AcqRel);
            if word != 0 {
                // SAFETY: a kept region is ours and unused.
                unsafe { region::unmap((word & !(HUGE - 1)) as *mut u8, length(word)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The global allocator of this test binary is `LargePages` too (lib.rs): every test of
    // the binary runs on it. These call it directly, to see its regions.

    fn fill(ptr: *mut u8, len: usize, seed: u8) {
        for k in (0..len).step_by(4093) {
            // SAFETY: within the block.
            unsafe { *ptr.add(k) = seed.wrapping_add((k / 4093) as u8) };
        }
    }

    fn holds(ptr: *const u8, len: usize, seed: u8) -> bool {
        // SAFETY: within the block.
        (0..len)
            .step_by(4093)
            .all(|k| unsafe { *ptr.add(k) } == seed.wrapping_add((k / 4093) as u8))
    }

    /// Large blocks sit at huge-page boundaries; small ones are the system's.
    #[test]
    fn large_blocks_are_regions_at_huge_page_boundaries() {
        for size in [LARGE, LARGE + 1, 3 << 20, 5 << 20] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            let ptr = unsafe { LargePages.alloc(layout) };
            assert!(!ptr.is_null());
            assert_eq!(ptr as usize % HUGE, 0, "{size}");
            fill(ptr, size, 3);
            assert!(holds(ptr, size, 3));
            unsafe { LargePages.dealloc(ptr, layout) };
        }
        let small = Layout::from_size_align(LARGE - 1, 8).unwrap();
        let ptr = unsafe { LargePages.alloc(small) };
        assert!(!ptr.is_null());
        unsafe { LargePages.dealloc(ptr, small) };
    }

    /// Growing and shrinking keeps the contents, across the system's heap and regions, in
    /// place and moved (a region mapped right after the first forces the move).
    #[test]
    fn realloc_keeps_the_contents() {
        let sizes = [
            4096,
            LARGE,
            3 << 20,
            9 << 20,
            2 << 20,
            LARGE / 2 + 12_345,
            7 << 20,
            100,
        ];
        let mut layout = Layout::from_size_align(sizes[0], 16).unwrap();
        let mut ptr = unsafe { LargePages.alloc(layout) };
        fill(ptr, layout.size(), 9);
        for &size in &sizes[1..] {
            // A neighbour region that may sit where an in-place growth would go.
            let neighbour = Layout::from_size_align(LARGE, 8).unwrap();
            let other = unsafe { LargePages.alloc(neighbour) };
            let kept = layout.size().min(size);
            ptr = unsafe { LargePages.realloc(ptr, layout, size) };
            assert!(!ptr.is_null());
            assert!(holds(ptr, kept, 9), "{} -> {size}", layout.size());
            layout = Layout::from_size_align(size, 16).unwrap();
            fill(ptr, size, 9);
            unsafe { LargePages.dealloc(other, neighbour) };
        }
        unsafe { LargePages.dealloc(ptr, layout) };
    }

    /// A freed region comes back for the next block that fits (trimmed), and a zeroed block
    /// never gets a kept region's old bytes.
    #[test]
    fn freed_regions_are_reused_but_zeroed_blocks_are_fresh() {
        // Other tests of this binary allocate concurrently and may take the kept region
        // first; the reuse is checked over a few tries, the zeroing every time.
        let layout = Layout::from_size_align(6 << 20, 8).unwrap();
        let smaller = Layout::from_size_align(3 << 20, 8).unwrap();
        let mut reused = false;
        for _ in 0..20 {
            kept::clear();
            let first = unsafe { LargePages.alloc(layout) };
            fill(first, layout.size(), 0xa5);
            unsafe { LargePages.dealloc(first, layout) };
            let again = unsafe { LargePages.alloc(smaller) };
            reused |= again == first;
            unsafe { LargePages.dealloc(again, smaller) };
            // The size the kept region would fit.
            let zeroed = unsafe { LargePages.alloc_zeroed(smaller) };
            assert!(
                (0..smaller.size())
                    .step_by(4093)
                    .all(|k| unsafe { *zeroed.add(k) } == 0),
                "a zeroed block had old bytes"
            );
            unsafe { LargePages.dealloc(zeroed, smaller) };
            if reused {
                break;
            }
        }
        assert!(reused, "no freed region was handed out again");
        kept::clear();
    }

    /// What is kept stays within its bounds: at most KEPT regions, none above KEPT_MAX.
    #[test]
    fn kept_regions_are_bounded() {
        kept::clear();
        for size in [30 << 20, 4 << 20] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            let blocks: Vec<_> = (0..6)
                .map(|_| unsafe { LargePages.alloc(layout) })
                .collect();
            for &b in &blocks {
                unsafe { LargePages.dealloc(b, layout) };
            }
            let regions = kept::snapshot();
            assert!(regions.len() <= KEPT, "{regions:?}");
            assert!(
                regions.iter().all(|&(_, len)| len <= KEPT_MAX),
                "{regions:?}"
            );
        }
        kept::clear();
    }
}
