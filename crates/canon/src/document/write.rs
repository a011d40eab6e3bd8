//! The canonical bytes of a [`Document`]: one loop over its entries, with an explicit stack
//! of the containers open around the entry being written.
//!
//! Why a loop rather than the tree writer's recursion: most entries of a state are short
//! tokens whose canonical text is a copy of their text (keys, printable strings, numbers
//! already canonical, and in profile python the strings `json.dump` escaped), so what a
//! token costs is the walk around it. Here the staging buffer's room is checked once per
//! entry, and the separator, a key with its quotes and colon, and a short value are copied
//! into it with fixed-size moves. Only escapes to write and numbers to format go through the
//! tree writer's functions, so the bytes are theirs by construction.
//!
//! A value without a canonical form ends the walk: the first one in canonical order, as the
//! tree writer's walk meets it, with its JSON Pointer read off the stack (each level knows
//! its container's current key or index).

use crate::escape::{jcs_string, python_string};
use crate::sink::Sink;
use crate::writer::{cmp_utf16, jcs_number, python_number, too_deep, under, Walked};
use crate::{Profile, MAX_WRITE_DEPTH};

use super::{Document, Entry, Tag, ASTRAL_KEYS, DECODED, IN_ORDER, PRINTABLE, PY_RAW};

/// A token up to this long is copied with one fixed-size move of this many bytes.
const SHORT: usize = 32;

/// Room taken once per entry: a `,`, a short key's token and `:`, then a short value's
/// token or a container's opening bracket.
const ROOM: usize = 1 + SHORT + 1 + SHORT + 1;

/// Where an open container's next key or element comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Its entries, in the text's order (arrays; objects whose keys came in order).
    Walked,
    /// The document's `orders`: the object's key entries in key order.
    Listed,
    /// [`Walk::sorted`]: an object's key entries in UTF-16 order (profile jcs, astral keys).
    Sorted,
}

#[derive(Clone, Copy)]
struct Level {
    object: bool,
    from: Next,
    /// Elements or members not written yet.
    left: u32,
    /// [`Next::Walked`]: the entry of the next element or key. Otherwise where the next key
    /// entry is in its list.
    next: u32,
    /// Elements or members started: the index after the one being written.
    started: u32,
    /// An object's member being written: its key entry.
    key: u32,
}

struct Walk<'d, 't> {
    doc: &'d Document<'t>,
    jcs: bool,
    allow_nan: bool,
    stack: Vec<Level>,
    /// Key entries of the open objects written in UTF-16 order, innermost last.
    sorted: Vec<u32>,
}

/// Writes the document's canonical bytes in `profile` into `sink`.
pub(super) fn walk<W: std::io::Write>(
    doc: &Document<'_>,
    profile: Profile,
    sink: &mut Sink<'_, W>,
) -> Walked {
    if doc.entries.is_empty() {
        return Ok(());
    }
    let mut w = Walk {
        doc,
        jcs: profile == Profile::Jcs,
        allow_nan: profile == Profile::Python,
        stack: Vec::new(),
        sorted: Vec::new(),
    };
    w.run(sink).map_err(|e| w.pointed(e))
}

impl Walk<'_, '_> {
    fn run<W: std::io::Write>(&mut self, sink: &mut Sink<'_, W>) -> Walked {
        let entries = &self.doc.entries[..];
        // The innermost open container; the ones around it are on the stack.
        let Some(mut top) = self.write_value(0, entries[0], 0, 0, sink)? else {
            return Ok(());
        };
        loop {
            if top.left == 0 {
                if top.from == Next::Sorted {
                    self.sorted
                        .truncate(self.sorted.len() - top.started as usize);
                }
                sink.byte(if top.object { b'}' } else { b']' });
                match self.stack.pop() {
                    Some(parent) => top = parent,
                    None => return Ok(()),
                }
                continue;
            }
            top.left -= 1;
            let room = sink.room::<ROOM>();
            let mut at = 0;
            if top.started > 0 {
                room[0] = b',';
                at = 1;
            }
            top.started += 1;
            let index = if top.object {
                let key = match top.from {
                    Next::Walked => top.next,
                    Next::Listed => self.doc.orders[top.next as usize],
                    Next::Sorted => self.sorted[top.next as usize],
                };
                top.key = key;
                let e = entries[key as usize];
                match copied(self.jcs, e) {
                    Some((start, len)) if len <= SHORT => {
                        at += copy_short(self.doc.text, start, len, &mut room[at..]);
                        room[at] = b':';
                        at += 1;
                    }
                    _ => {
                        sink.advance(at);
                        self.string(e, sink);
                        sink.byte(b':');
                        at = 0;
                    }
                }
                key + 1
            } else {
                top.next
            };
            let e = entries[index as usize];
            top.next = match top.from {
                Next::Walked => match e.tag {
                    Tag::Array | Tag::Object => e.a,
                    _ => index + 1,
                },
                Next::Listed | Next::Sorted => top.next + 1,
            };
            // The containers around this value: `top` and the stack.
            let depth = self.stack.len() + 1;
            match self.write_value(index, e, at, depth, sink) {
                Ok(None) => {}
                Ok(Some(child)) => {
                    self.stack.push(top);
                    top = child;
                }
                Err(err) => {
                    // Where it stopped, for the pointer.
                    self.stack.push(top);
                    return Err(err);
                }
            }
        }
    }

    /// The value `e` (entry `index`) after the `at` bytes of the sink's room that are its
    /// separator and key (the same room: nothing was kept since): copied or opened there, or
    /// written by the tree writer's functions. A container with contents returns its level.
    #[inline(always)]
    fn write_value<W: std::io::Write>(
        &mut self,
        index: u32,
        e: Entry,
        at: usize,
        depth: usize,
        sink: &mut Sink<'_, W>,
    ) -> Result<Option<Level>, Box<crate::WriteError>> {
        match self.value(index, e, sink.room::<ROOM>(), at, depth) {
            Ok((end, level)) => {
                sink.advance(end);
                Ok(level)
            }
            Err(Slow) => {
                sink.advance(at);
                self.slow_value(e, sink)?;
                Ok(None)
            }
        }
    }

    /// The value `e` (entry `index`, inside `depth` containers) written into `room` from
    /// `at`: a token copied, or a container opened (with its level when it has contents).
    /// Returns where the room's bytes end; `Err` for a value that takes the tree writer's
    /// functions ([`Walk::slow_value`]).
    #[inline(always)]
    fn value(
        &mut self,
        index: u32,
        e: Entry,
        room: &mut [u8; ROOM],
        at: usize,
        depth: usize,
    ) -> Result<(usize, Option<Level>), Slow> {
        let word: &[u8; 8] = match e.tag {
            Tag::Null => b"null    ",
            Tag::True => b"true    ",
            Tag::False => b"false   ",
            Tag::Array | Tag::Object => return self.open(index, e, room, at, depth),
            _ => match copied(self.jcs, e) {
                Some((start, len)) if len <= SHORT => {
                    let end = at + copy_short(self.doc.text, start, len, &mut room[at..]);
                    return Ok((end, None));
                }
                _ => return Err(Slow),
            },
        };
        room[at..at + 8].copy_from_slice(word);
        Ok((at + if e.tag == Tag::False { 5 } else { 4 }, None))
    }

    /// A container: `[]` or `{}` when empty, else its bracket, and a level for its contents.
    #[inline(always)]
    fn open(
        &mut self,
        index: u32,
        e: Entry,
        room: &mut [u8; ROOM],
        at: usize,
        depth: usize,
    ) -> Result<(usize, Option<Level>), Slow> {
        if depth >= MAX_WRITE_DEPTH {
            return Err(Slow);
        }
        let object = e.tag == Tag::Object;
        room[at] = if object { b'{' } else { b'[' };
        if e.len == 0 {
            room[at + 1] = if object { b'}' } else { b']' };
            return Ok((at + 2, None));
        }
        let (from, next) = if !object || e.b == IN_ORDER && !self.utf16_order(e) {
            (Next::Walked, index + 1)
        } else if self.utf16_order(e) {
            let start = self.sorted.len();
            let keys = self.doc.keys_in_order(index);
            self.sorted.extend(keys);
            let doc = self.doc;
            self.sorted[start..].sort_by(|&x, &y| {
                cmp_utf16(
                    doc.str_of(doc.entries[x as usize]),
                    doc.str_of(doc.entries[y as usize]),
                )
            });
            (Next::Sorted, start as u32)
        } else {
            (Next::Listed, e.b)
        };
        let level = Level {
            object,
            from,
            left: e.len,
            next,
            started: 0,
            key: 0,
        };
        Ok((at + 1, Some(level)))
    }

    /// An object whose keys are written in UTF-16 order, not byte order.
    #[inline(always)]
    fn utf16_order(&self, e: Entry) -> bool {
        self.jcs && e.flags & ASTRAL_KEYS != 0
    }

    /// A string or key through the profile's escaping, or copied when it is long.
    #[cold]
    fn string<W: std::io::Write>(&self, e: Entry, sink: &mut Sink<'_, W>) {
        if let Some((start, len)) = copied(self.jcs, e) {
            sink.put(&self.doc.text[start..start + len]);
        } else if self.jcs {
            jcs_string(self.doc.str_of(e), sink);
        } else {
            python_string(self.doc.str_of(e), sink);
        }
    }

    /// A value [`Walk::value`] left: a string to escape or a long one, a number to format, a
    /// container too deep to write.
    #[cold]
    fn slow_value<W: std::io::Write>(&mut self, e: Entry, sink: &mut Sink<'_, W>) -> Walked {
        match e.tag {
            Tag::String => self.string(e, sink),
            Tag::Array | Tag::Object => return Err(too_deep()),
            Tag::NumberText => {
                sink.put(&self.doc.text[e.a as usize..(e.a + e.len) as usize]);
            }
            _ => {
                let num = self.doc.num(e);
                if self.jcs {
                    jcs_number(num, sink)?;
                } else {
                    python_number(num, self.allow_nan, sink)?;
                }
            }
        }
        Ok(())
    }

    /// A refusal with the JSON Pointer of where the walk stopped: the member or element
    /// being written in each open container, innermost first onto the pointer.
    #[cold]
    fn pointed(&self, mut e: Box<crate::WriteError>) -> Box<crate::WriteError> {
        let doc = self.doc;
        for level in self.stack.iter().rev() {
            e = if level.object {
                under(|| doc.str_of(doc.entries[level.key as usize]).to_owned(), e)
            } else {
                under(|| (level.started - 1).to_string(), e)
            };
        }
        e
    }
}

/// A value that [`Walk::value`] does not write itself.
struct Slow;

/// Where the canonical text of a string, key or number is a span of the text, as is:
/// `(start, length)`.
#[inline(always)]
fn copied(jcs: bool, e: Entry) -> Option<(usize, usize)> {
    match e.tag {
        Tag::NumberText => Some((e.a as usize, e.len as usize)),
        Tag::String | Tag::Key => {
            // A raw string (no escape) has no `"`, `\` or control: jcs escapes nothing in
            // it, python nothing if it is printable ASCII.
            if e.flags & PRINTABLE != 0 || (jcs && e.flags & DECODED == 0) {
                Some((e.b as usize, e.len as usize + 2))
            } else if !jcs && e.flags & PY_RAW != 0 {
                Some((e.b as usize, usize::from(e.raw)))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Copies `text[start..start + len]` (`len` at most [`SHORT`]) into `dst`: one move of
/// [`SHORT`] bytes when the text goes on that far (the bytes beyond `len` are overwritten
/// later or never kept), else the exact bytes. Returns `len`.
#[inline(always)]
fn copy_short(text: &[u8], start: usize, len: usize, dst: &mut [u8]) -> usize {
    debug_assert!(len <= SHORT);
    // Arrays, not slices: a move of a known size, where a slice's copy calls `memcpy`.
    let whole: Option<&[u8; SHORT]> = text
        .get(start..start + SHORT)
        .and_then(|c| c.try_into().ok());
    let room: Option<&mut [u8; SHORT]> = dst.get_mut(..SHORT).and_then(|d| d.try_into().ok());
    match (whole, room) {
        (Some(whole), Some(room)) => *room = *whole,
        _ => dst[..len].copy_from_slice(&text[start..start + len]),
    }
    len
}
