//! Text into a [`Document`]: the parser's own lexing, its structure mirrored
//! (`Parser::parse_value`), one entry pushed per value.
//!
//! What differs from building the tree is when keys are checked. The tree finds a duplicate
//! when it inserts a member, after reading its value. Here a key is only compared with the
//! one before it; while keys come in byte order none can repeat. An object whose keys did
//! not is sorted when it closes (its key order is kept anyway), and a duplicate shows as two
//! equal neighbours. Which error the tree would have met first is then found again
//! ([`Builder::earliest_duplicate`]): on any error, the open objects out of order are
//! searched, outermost first, for a complete member that repeats an earlier key. An outer
//! object's complete members all ended before anything inside its open member began, so
//! that is the order the tree would have met them in.

use crate::parser::{Parser, StringToken};
use crate::stream::{python_verbatim_end, verbatim_number};
use crate::writer::Num;
use crate::{ParseError, ParseOptions, Value};

use super::{Document, Entry, Tag, ASTRAL_KEYS, DECODED, IN_ORDER, PRINTABLE, PY_RAW};

/// An object whose keys came in order is walked for its key order up to this many members;
/// a larger one gets its key entries listed as well, for [`Node::get`](super::Node::get)'s
/// binary search (4 bytes a member).
const WALKED_MEMBERS: usize = 16;

/// The key orders last found, by member count, are tried first at the next object of that
/// size: a state's records mostly bring their keys in one order.
const ORDERS_KEPT: usize = 64;

struct Frame {
    entry: u32,
    object: bool,
    count: u32,
    /// Where this object's key entries start in `Builder::keys`.
    keys_start: usize,
    /// Every key so far came in byte order (so none repeats).
    in_order: bool,
    astral: bool,
}

struct Builder<'t> {
    p: Parser<'t>,
    doc: Document<'t>,
    frames: Vec<Frame>,
    /// The key entries of the open objects, innermost last.
    keys: Vec<u32>,
    scratch: String,
    last_orders: Vec<Vec<u32>>,
}

pub(super) fn build<'t>(
    text: &'t [u8],
    options: &ParseOptions,
) -> Result<Document<'t>, ParseError> {
    let mut b = Builder {
        p: Parser::new(text, *options),
        doc: Document {
            text,
            entries: Vec::with_capacity(text.len() / 16),
            decoded: String::new(),
            orders: Vec::new(),
            options: *options,
        },
        frames: Vec::new(),
        keys: Vec::new(),
        scratch: String::new(),
        last_orders: vec![Vec::new(); ORDERS_KEPT],
    };
    if u32::try_from(text.len()).is_err() {
        return Err(b.p.error_at(
            0,
            "a Document holds texts below 4 GiB (32-bit offsets); canonicalize reads larger ones",
        ));
    }
    if text.starts_with(b"\xef\xbb\xbf") {
        return Err(b.p.error("byte order mark is not allowed"));
    }
    if let Err(e) = b.value() {
        // A duplicate key not checked yet came before this error.
        return Err(b.earliest_duplicate().unwrap_or(e));
    }
    b.p.skip_whitespace();
    if b.p.pos < text.len() {
        return Err(b.p.error("trailing characters after the JSON value"));
    }
    Ok(b.doc)
}

impl<'t> Builder<'t> {
    fn push(&mut self, entry: Entry) -> u32 {
        let index = self.doc.entries.len() as u32;
        self.doc.entries.push(entry);
        index
    }

    fn value(&mut self) -> Result<(), ParseError> {
        loop {
            self.p.skip_whitespace();
            match self.p.peek() {
                Some(b'[' | b'{') => {
                    let open = self.p.open(self.frames.len())?;
                    let object = open == b'{';
                    let index = self.push(Entry {
                        tag: if object { Tag::Object } else { Tag::Array },
                        flags: 0,
                        raw: 0,
                        len: 0,
                        a: 0,
                        b: IN_ORDER,
                    });
                    let close = if object { b'}' } else { b']' };
                    if self.p.peek() == Some(close) {
                        self.p.pos += 1;
                        self.doc.entries[index as usize].a = index + 1;
                    } else {
                        self.frames.push(Frame {
                            entry: index,
                            object,
                            count: 0,
                            keys_start: self.keys.len(),
                            in_order: true,
                            astral: false,
                        });
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                _ => self.scalar()?,
            }
            // A value is complete: hand it to the open containers, closing those that end.
            loop {
                let Some(frame) = self.frames.last_mut() else {
                    return Ok(());
                };
                frame.count += 1;
                let object = frame.object;
                self.p.skip_whitespace();
                match (self.p.peek(), object) {
                    (Some(b','), _) => {
                        self.p.pos += 1;
                        if object {
                            self.p.skip_whitespace();
                            self.key()?;
                        }
                        break;
                    }
                    (Some(b']'), false) => {
                        self.p.pos += 1;
                        self.close()?;
                    }
                    (Some(b'}'), true) => {
                        self.p.pos += 1;
                        self.close()?;
                    }
                    (_, false) => return Err(self.p.expected("',' or ']' in an array")),
                    (_, true) => return Err(self.p.expected("',' or '}' in an object")),
                }
            }
        }
    }

    /// The innermost container has closed: its entry gets its count and extent, an object
    /// its key order (and a duplicate key its error).
    fn close(&mut self) -> Result<(), ParseError> {
        let Some(frame) = self.frames.last() else {
            return Ok(());
        };
        let (entry, count, keys_start) = (frame.entry, frame.count, frame.keys_start);
        let end = self.doc.entries.len() as u32;
        let mut order = IN_ORDER;
        let mut flags = 0;
        if frame.object {
            if frame.astral {
                flags |= ASTRAL_KEYS;
            }
            if !frame.in_order {
                order = self.doc.orders.len() as u32;
                if !self.put_order(keys_start) {
                    let found = self.earliest_duplicate();
                    debug_assert!(found.is_some(), "the closing object is searched");
                    return Err(found
                        .unwrap_or_else(|| self.p.error("internal error: lost a duplicate key")));
                }
            } else if count as usize > WALKED_MEMBERS {
                // In order already; listed so that `Node::get` can search it.
                order = self.doc.orders.len() as u32;
                self.doc.orders.extend_from_slice(&self.keys[keys_start..]);
            }
            self.keys.truncate(keys_start);
        }
        self.frames.pop();
        let entry = &mut self.doc.entries[entry as usize];
        entry.len = count;
        entry.a = end;
        entry.b = order;
        entry.flags = flags;
        Ok(())
    }

    /// Appends to `orders` the key entries `keys[start..]` in byte order of their keys;
    /// `false` if two are equal.
    fn put_order(&mut self, start: usize) -> bool {
        let Document {
            text,
            entries,
            decoded,
            orders,
            ..
        } = &mut self.doc;
        let keys = &self.keys[start..];
        let n = keys.len();
        let key = |k: u32| key_bytes(entries, decoded, text, k);
        // The order of the last object of this size, as positions among its members: if
        // the keys strictly increase in it, it is their order, and none repeats.
        if let Some(last) = self.last_orders.get(n).filter(|o| o.len() == n) {
            let holds = last
                .windows(2)
                .all(|w| cmp_keys(key(keys[w[0] as usize]), key(keys[w[1] as usize])).is_lt());
            if holds {
                orders.extend(last.iter().map(|&i| keys[i as usize]));
                return true;
            }
        }
        let mut positions: Vec<u32> = (0..n as u32).collect();
        positions.sort_unstable_by(|&x, &y| cmp_keys(key(keys[x as usize]), key(keys[y as usize])));
        if positions
            .windows(2)
            .any(|w| key(keys[w[0] as usize]) == key(keys[w[1] as usize]))
        {
            return false;
        }
        orders.extend(positions.iter().map(|&i| keys[i as usize]));
        if let Some(slot) = self.last_orders.get_mut(n) {
            *slot = positions;
        }
        true
    }

    /// The duplicate key the tree would have reported first, if the open objects hold one
    /// (see the module doc): in the outermost object out of order that has one among its
    /// complete members (its first `count` keys), the member that first repeats an
    /// earlier key.
    fn earliest_duplicate(&self) -> Option<ParseError> {
        let doc = &self.doc;
        self.frames
            .iter()
            .filter(|f| f.object && !f.in_order)
            .find_map(|f| {
                let complete = &self.keys[f.keys_start..f.keys_start + f.count as usize];
                let mut sorted: Vec<(&[u8], u32)> = complete
                    .iter()
                    .map(|&k| (doc.bytes_of(doc.entries[k as usize]), k))
                    .collect();
                // Equal keys side by side, each run in the text's order.
                sorted.sort_unstable();
                let (_, key) = sorted
                    .windows(2)
                    .filter(|w| w[0].0 == w[1].0)
                    .map(|w| w[1])
                    .min_by_key(|&(_, k)| k)?;
                let e = doc.entries[key as usize];
                let message = format!("duplicate key {:?}", doc.str_of(e));
                Some(self.p.error_at(e.b as usize, message))
            })
    }

    /// A key and its `:` (whitespace before it skipped), checked against the object's
    /// earlier keys.
    fn key(&mut self) -> Result<(), ParseError> {
        if self.p.peek() != Some(b'"') {
            return Err(self.p.expected("a string key"));
        }
        let at = self.p.pos;
        let key = self.string(Tag::Key)?;
        self.p.skip_whitespace();
        if self.p.peek() != Some(b':') {
            return Err(self.p.expected("':' after an object key"));
        }
        self.p.pos += 1;
        let doc = &self.doc;
        let Some(frame) = self.frames.last_mut() else {
            return Ok(());
        };
        let entry = doc.entries[key as usize];
        let bytes = doc.bytes_of(entry);
        if entry.flags & PRINTABLE == 0 && bytes.iter().any(|&b| b >= 0xf0) {
            frame.astral = true;
        }
        if frame.in_order {
            if let Some(&last) = self.keys[frame.keys_start..].last() {
                if cmp_keys(doc.bytes_of(doc.entries[last as usize]), bytes).is_ge() {
                    frame.in_order = false;
                }
            }
        }
        // A key entry's `b` is where its token starts, for a duplicate's error.
        self.doc.entries[key as usize].b = at as u32;
        self.keys.push(key);
        Ok(())
    }

    /// A string token at `pos`, pushed as an entry with `tag` (string or key).
    #[inline]
    fn string(&mut self, tag: Tag) -> Result<u32, ParseError> {
        let at = self.p.pos;
        if self.p.printable_string().is_some() {
            // Most strings: one printable run, its bytes between the quotes.
            return Ok(self.push(Entry {
                tag,
                flags: PRINTABLE,
                raw: 0,
                len: (self.p.pos - at - 2) as u32,
                a: at as u32 + 1,
                b: at as u32,
            }));
        }
        self.other_string(tag)
    }

    /// [`Builder::string`] for the rest: non-ASCII, escapes, errors.
    #[inline(never)]
    fn other_string(&mut self, tag: Tag) -> Result<u32, ParseError> {
        let base = self.p.bytes.as_ptr() as usize;
        let at = self.p.pos;
        // `string` found no printable run here, so straight to the general reading.
        let entry = match self.p.string_token_slow(&mut self.scratch)? {
            StringToken::Raw { text, printable } => Entry {
                tag,
                flags: if printable { PRINTABLE } else { 0 },
                raw: 0,
                len: text.len() as u32,
                a: (text.as_ptr() as usize - base) as u32,
                b: at as u32,
            },
            StringToken::Decoded => {
                let start = self.doc.decoded.len() as u32;
                self.doc.decoded.push_str(&self.scratch);
                let token = &self.p.bytes[at..self.p.pos];
                let raw = u16::try_from(token.len())
                    .ok()
                    .filter(|_| python_verbatim_end(token, 0) == Some(token.len()));
                Entry {
                    tag,
                    flags: DECODED | if raw.is_some() { PY_RAW } else { 0 },
                    raw: raw.unwrap_or(0),
                    len: self.scratch.len() as u32,
                    a: start,
                    b: at as u32,
                }
            }
        };
        Ok(self.push(entry))
    }

    /// As the parser's `parse_scalar`, pushing the entry.
    fn scalar(&mut self) -> Result<(), ParseError> {
        let p = &mut self.p;
        let tag = match p.peek() {
            Some(b'"') => return self.string(Tag::String).map(drop),
            Some(b't') => {
                p.literal(b"true", Value::Null)?;
                Tag::True
            }
            Some(b'f') => {
                p.literal(b"false", Value::Null)?;
                Tag::False
            }
            Some(b'n') => {
                p.literal(b"null", Value::Null)?;
                Tag::Null
            }
            Some(b'N') => return self.non_finite(b"NaN", f64::NAN),
            Some(b'I') => return self.non_finite(b"Infinity", f64::INFINITY),
            Some(b'-') if p.bytes.get(p.pos + 1) == Some(&b'I') => {
                return self.non_finite(b"-Infinity", f64::NEG_INFINITY)
            }
            Some(b'-' | b'0'..=b'9') => return self.number(),
            _ => return Err(p.unexpected()),
        };
        self.push(Entry {
            tag,
            flags: 0,
            raw: 0,
            len: 0,
            a: 0,
            b: 0,
        });
        Ok(())
    }

    fn non_finite(&mut self, word: &[u8], f: f64) -> Result<(), ParseError> {
        self.p.non_finite(word, f)?;
        self.push(bits_entry(Tag::Float, f.to_bits()));
        Ok(())
    }

    fn number(&mut self) -> Result<(), ParseError> {
        let shape = self.p.number_shape()?;
        let bytes = self.p.bytes;
        // A text canonical in jcs is canonical in python too (python's rule only adds
        // integers of 16 to 18 digits and whole decimals `D.0`).
        let entry = if verbatim_number(bytes, &shape, true) {
            Entry {
                tag: Tag::NumberText,
                flags: 0,
                raw: 0,
                len: (shape.end - shape.start) as u32,
                a: shape.start as u32,
                b: 0,
            }
        } else {
            match self.p.number_value(&shape)? {
                Num::Int(i) => bits_entry(Tag::Int, i as u64),
                Num::Float(f) => bits_entry(Tag::Float, f.to_bits()),
                Num::Big(digits) => Entry {
                    tag: Tag::BigInt,
                    flags: 0,
                    raw: 0,
                    len: digits.len() as u32,
                    a: shape.start as u32,
                    b: 0,
                },
            }
        };
        self.push(entry);
        Ok(())
    }
}

/// Byte order of two keys, decided by the first byte when it differs (most keys of a
/// record do), which spares a `memcmp` call.
#[inline]
fn cmp_keys(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    match (a.first(), b.first()) {
        (Some(x), Some(y)) if x != y => x.cmp(y),
        _ => a.cmp(b),
    }
}

/// The UTF-8 of key entry `k`, with the lifetime of the buffers (not of the document).
fn key_bytes<'a>(entries: &[Entry], decoded: &'a str, text: &'a [u8], k: u32) -> &'a [u8] {
    let e = entries[k as usize];
    let (start, end) = (e.a as usize, (e.a + e.len) as usize);
    if e.flags & DECODED != 0 {
        &decoded.as_bytes()[start..end]
    } else {
        &text[start..end]
    }
}

fn bits_entry(tag: Tag, bits: u64) -> Entry {
    Entry {
        tag,
        flags: 0,
        raw: 0,
        len: 0,
        a: bits as u32,
        b: (bits >> 32) as u32,
    }
}
