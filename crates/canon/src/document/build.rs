//! Text into a [`Document`]: one pass over the text, one entry pushed per value.
//!
//! The builder does not word errors. At anything that is not JSON it stops, and the error is
//! the tree parser's for the same text ([`crate::parse_with`]): a `Document` accepts exactly
//! the texts the tree accepts, with the same errors, and wording them in one place keeps
//! that true by construction (which duplicate key the tree meets first, say, depends on
//! when it inserts members). A text that is not JSON is read twice; the hot loop carries no
//! error values, only [`Stop`].
//!
//! Keys: each is compared only with the one before it in its object, by its first 8 bytes
//! first; while keys come in byte order none can repeat. An object whose keys did not is
//! sorted when it closes (its key order is kept anyway), and a duplicate shows as two equal
//! neighbours.

use crate::parser::{NumberShape, Parser, StringToken};
use crate::scan::{ascii_escaped_string, digits_end, printable_string_end};
use crate::stream::{python_verbatim_end, verbatim_number};
use crate::writer::Num;
use crate::{ParseError, ParseOptions};

use super::{Document, Entry, Tag, ASTRAL_KEYS, DECODED, IN_ORDER, PRINTABLE, PY_RAW};

/// An object whose keys came in order is walked for its key order up to this many members;
/// a larger one gets its key entries listed as well, for [`Node::get`](super::Node::get)'s
/// binary search (4 bytes a member).
const WALKED_MEMBERS: usize = 16;

/// The key orders last found, by member count, are tried first at the next object of that
/// size: a state's records mostly bring their keys in one order.
const ORDERS_KEPT: usize = 64;

/// The text is not JSON (or not JSON this builder takes: deeper than the limit, say); the
/// tree parser words why.
struct Stop;

struct Frame {
    entry: u32,
    object: bool,
    count: u32,
    /// Where this object's keys start in `Builder::keys`.
    keys_start: usize,
    /// Every key so far came in byte order (so none repeats).
    in_order: bool,
    astral: bool,
}

/// A key of an open object: its entry, and its first 8 bytes (big-endian, zero-padded),
/// which order most pairs of keys in one compare.
#[derive(Clone, Copy)]
struct Key {
    prefix: u64,
    entry: u32,
}

struct Builder<'t> {
    text: &'t [u8],
    options: ParseOptions,
    entries: Vec<Entry>,
    decoded: String,
    orders: Vec<u32>,
    frames: Vec<Frame>,
    /// The keys of the open objects, innermost last.
    keys: Vec<Key>,
    scratch: String,
    last_orders: Vec<Vec<u32>>,
}

pub(super) fn build<'t>(
    text: &'t [u8],
    options: &ParseOptions,
) -> Result<Document<'t>, ParseError> {
    if u32::try_from(text.len()).is_err() {
        return Err(Parser::new(text, *options).error_at(
            0,
            "a Document holds texts below 4 GiB (32-bit offsets); canonicalize reads larger ones",
        ));
    }
    let mut b = Builder {
        text,
        options: *options,
        entries: Vec::with_capacity(text.len() / 16),
        decoded: String::new(),
        orders: Vec::new(),
        frames: Vec::new(),
        keys: Vec::new(),
        scratch: String::new(),
        last_orders: vec![Vec::new(); ORDERS_KEPT],
    };
    match b.document() {
        Ok(()) => Ok(Document {
            text,
            entries: b.entries,
            decoded: b.decoded,
            orders: b.orders,
            options: *options,
        }),
        Err(Stop) => Err(the_parsers_error(text, options)),
    }
}

/// Why the tree parser refuses `text`, which the builder stopped at.
#[cold]
fn the_parsers_error(text: &[u8], options: &ParseOptions) -> ParseError {
    match crate::parse_with(text, options) {
        Err(e) => e,
        Ok(_) => {
            debug_assert!(false, "the builder stopped at a text the parser takes");
            Parser::new(text, *options).error_at(
                0,
                "internal error: the document builder refused a text the parser accepts",
            )
        }
    }
}

impl Builder<'_> {
    #[inline(always)]
    fn push(&mut self, entry: Entry) -> u32 {
        let index = self.entries.len() as u32;
        self.entries.push(entry);
        index
    }

    fn document(&mut self) -> Result<(), Stop> {
        let text = self.text;
        if text.starts_with(b"\xef\xbb\xbf") {
            return Err(Stop);
        }
        let mut i = 0;
        'value: loop {
            i = skip_whitespace(text, i);
            let Some(&c) = text.get(i) else {
                return Err(Stop);
            };
            match c {
                b'"' => i = self.string(i, Tag::String)?,
                b'[' | b'{' => {
                    if self.frames.len() >= self.options.max_depth {
                        return Err(Stop);
                    }
                    let object = c == b'{';
                    let index = self.push(Entry {
                        tag: if object { Tag::Object } else { Tag::Array },
                        flags: 0,
                        raw: 0,
                        len: 0,
                        a: 0,
                        b: IN_ORDER,
                    });
                    i = skip_whitespace(text, i + 1);
                    let close = if object { b'}' } else { b']' };
                    if text.get(i) == Some(&close) {
                        i += 1;
                        self.entries[index as usize].a = index + 1;
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
                            i = self.key(i)?;
                        }
                        continue;
                    }
                }
                b'-' | b'0'..=b'9' => i = self.number(i)?,
                b't' => i = self.literal(i, b"true", Tag::True)?,
                b'f' => i = self.literal(i, b"false", Tag::False)?,
                b'n' => i = self.literal(i, b"null", Tag::Null)?,
                b'N' => i = self.non_finite(i, b"NaN", f64::NAN)?,
                b'I' => i = self.non_finite(i, b"Infinity", f64::INFINITY)?,
                _ => return Err(Stop),
            }
            // A value is complete: hand it to the open containers, closing those that end.
            loop {
                let Some(frame) = self.frames.last_mut() else {
                    break 'value;
                };
                frame.count += 1;
                let object = frame.object;
                i = skip_whitespace(text, i);
                match (text.get(i), object) {
                    (Some(b','), _) => {
                        i += 1;
                        if object {
                            i = skip_whitespace(text, i);
                            i = self.key(i)?;
                        }
                        continue 'value;
                    }
                    (Some(b']'), false) | (Some(b'}'), true) => {
                        i += 1;
                        self.close()?;
                    }
                    _ => return Err(Stop),
                }
            }
        }
        if skip_whitespace(text, i) == text.len() {
            Ok(())
        } else {
            Err(Stop)
        }
    }

    /// The innermost container has closed: its entry gets its count and extent, an object
    /// its key order.
    fn close(&mut self) -> Result<(), Stop> {
        let Some(frame) = self.frames.pop() else {
            return Err(Stop);
        };
        let end = self.entries.len() as u32;
        let mut order = IN_ORDER;
        let mut flags = 0;
        if frame.object {
            if frame.astral {
                flags |= ASTRAL_KEYS;
            }
            if !frame.in_order {
                order = self.orders.len() as u32;
                self.put_order(frame.keys_start)?;
            } else if frame.count as usize > WALKED_MEMBERS {
                // In order already; listed so that `Node::get` can search it.
                order = self.orders.len() as u32;
                let keys = &self.keys[frame.keys_start..];
                self.orders.extend(keys.iter().map(|k| k.entry));
            }
            self.keys.truncate(frame.keys_start);
        }
        let entry = &mut self.entries[frame.entry as usize];
        entry.len = frame.count;
        entry.a = end;
        entry.b = order;
        entry.flags = flags;
        Ok(())
    }

    /// Appends to `orders` the key entries `keys[start..]` in byte order of their keys;
    /// stops at two equal keys.
    fn put_order(&mut self, start: usize) -> Result<(), Stop> {
        let keys = &self.keys[start..];
        let n = keys.len();
        let (entries, decoded, text) = (&self.entries[..], &self.decoded, self.text);
        let less = |x: Key, y: Key| cmp_keys(entries, decoded, text, x, y).is_lt();
        // The order of the last object of this size, as positions among its members: if
        // the keys strictly increase in it, it is their order, and none repeats.
        if let Some(last) = self.last_orders.get(n).filter(|o| o.len() == n) {
            if last
                .windows(2)
                .all(|w| less(keys[w[0] as usize], keys[w[1] as usize]))
            {
                self.orders
                    .extend(last.iter().map(|&p| keys[p as usize].entry));
                return Ok(());
            }
        }
        let mut positions: Vec<u32> = (0..n as u32).collect();
        positions.sort_unstable_by(|&x, &y| {
            cmp_keys(entries, decoded, text, keys[x as usize], keys[y as usize])
        });
        if !positions
            .windows(2)
            .all(|w| less(keys[w[0] as usize], keys[w[1] as usize]))
        {
            return Err(Stop);
        }
        self.orders
            .extend(positions.iter().map(|&p| keys[p as usize].entry));
        if let Some(slot) = self.last_orders.get_mut(n) {
            *slot = positions;
        }
        Ok(())
    }

    /// A key at `i` (whitespace before it skipped) and its `:`, noted in its object. Returns
    /// where the text goes on after the `:`.
    #[inline(always)]
    fn key(&mut self, i: usize) -> Result<usize, Stop> {
        let text = self.text;
        if text.get(i) != Some(&b'"') {
            return Err(Stop);
        }
        let entry = self.entries.len() as u32;
        let mut j = self.string(i, Tag::Key)?;
        j = skip_whitespace(text, j);
        if text.get(j) != Some(&b':') {
            return Err(Stop);
        }
        let e = self.entries[entry as usize];
        let bytes = key_bytes(&self.decoded, text, e);
        let prefix = match text.get(e.a as usize..e.a as usize + 8) {
            Some(word) if e.flags & DECODED == 0 => prefix_of_word(word, bytes.len()),
            _ => prefix_of(bytes),
        };
        let key = Key { prefix, entry };
        let Some(frame) = self.frames.last_mut() else {
            return Err(Stop);
        };
        if e.flags & PRINTABLE == 0 && bytes.iter().any(|&b| b >= 0xf0) {
            frame.astral = true;
        }
        if frame.in_order {
            if let Some(&last) = self.keys[frame.keys_start..].last() {
                let (entries, decoded) = (&self.entries[..], &self.decoded);
                if !cmp_keys(entries, decoded, text, last, key).is_lt() {
                    frame.in_order = false;
                }
            }
        }
        self.keys.push(key);
        Ok(j + 1)
    }

    /// A string token at `i`, pushed as an entry with `tag` (string or key). Returns where
    /// the text goes on after it.
    #[inline(always)]
    fn string(&mut self, i: usize, tag: Tag) -> Result<usize, Stop> {
        if let Some(end) = printable_string_end(self.text, i + 1) {
            // Most strings: one printable run, its bytes between the quotes.
            self.push(Entry {
                tag,
                flags: PRINTABLE,
                raw: 0,
                len: (end - i - 1) as u32,
                a: i as u32 + 1,
                b: i as u32,
            });
            return Ok(end + 1);
        }
        self.other_string(i, tag)
    }

    /// [`Builder::string`] for the rest: non-ASCII, escapes, errors.
    #[inline(never)]
    fn other_string(&mut self, i: usize, tag: Tag) -> Result<usize, Stop> {
        let text = self.text;
        if let Some((end, verbatim)) =
            ascii_escaped_string(text, i, self.options, &mut self.scratch)
        {
            let entry = self.decoded_entry(tag, i, end, verbatim);
            self.push(entry);
            return Ok(end);
        }
        let mut p = Parser::new(text, self.options);
        p.pos = i;
        let entry = match p.string_token_slow(&mut self.scratch).map_err(|_| Stop)? {
            StringToken::Raw { text: s, printable } => Entry {
                tag,
                flags: if printable { PRINTABLE } else { 0 },
                raw: 0,
                len: s.len() as u32,
                a: i as u32 + 1,
                b: i as u32,
            },
            StringToken::Decoded => {
                let verbatim = python_verbatim_end(text, i) == Some(p.pos);
                self.decoded_entry(tag, i, p.pos, verbatim)
            }
        };
        self.push(entry);
        Ok(p.pos)
    }

    /// The entry of the string decoded into `scratch` from the token `i..end`: its UTF-8
    /// appended to `decoded`, flagged [`PY_RAW`] when `verbatim` (the token is its python
    /// canonical text) and short enough for `raw`.
    fn decoded_entry(&mut self, tag: Tag, i: usize, end: usize, verbatim: bool) -> Entry {
        // Decoding never lengthens a token (an escape of 2 to 12 bytes becomes 1 to 4), so
        // `decoded` stays shorter than the text, which is below 4 GiB: its offsets fit.
        debug_assert!(self.decoded.len() + self.scratch.len() <= self.text.len());
        let start = self.decoded.len() as u32;
        self.decoded.push_str(&self.scratch);
        let raw = u16::try_from(end - i).ok().filter(|_| verbatim);
        Entry {
            tag,
            flags: DECODED | if raw.is_some() { PY_RAW } else { 0 },
            raw: raw.unwrap_or(0),
            len: self.scratch.len() as u32,
            a: start,
            b: i as u32,
        }
    }

    /// The literal `word` at `i`.
    #[inline(always)]
    fn literal(&mut self, i: usize, word: &[u8], tag: Tag) -> Result<usize, Stop> {
        if !self.text[i..].starts_with(word) {
            return Err(Stop);
        }
        self.push(Entry {
            tag,
            flags: 0,
            raw: 0,
            len: 0,
            a: 0,
            b: 0,
        });
        Ok(i + word.len())
    }

    /// `NaN`, `Infinity` or `-Infinity` at `i`, when the options take them.
    #[cold]
    fn non_finite(&mut self, i: usize, word: &[u8], f: f64) -> Result<usize, Stop> {
        if !self.options.allow_nan || !self.text[i..].starts_with(word) {
            return Err(Stop);
        }
        self.push(bits_entry(Tag::Float, f.to_bits()));
        Ok(i + word.len())
    }

    /// A number at `i` (a `-` or a digit), checked as the parser's `number_shape` checks it:
    /// its text when that is canonical in every profile, else its value.
    #[inline(always)]
    fn number(&mut self, i: usize) -> Result<usize, Stop> {
        let text = self.text;
        let mut j = i;
        if text[j] == b'-' {
            j += 1;
            if text.get(j) == Some(&b'I') {
                return self.non_finite(i, b"-Infinity", f64::NEG_INFINITY);
            }
        }
        let int_start = j;
        match text.get(j) {
            Some(b'0') => {
                j += 1;
                if matches!(text.get(j), Some(b'0'..=b'9')) {
                    return Err(Stop);
                }
            }
            Some(b'1'..=b'9') => j = digits_end(text, j + 1),
            _ => return Err(Stop),
        }
        let int_end = j;
        let mut fraction_end = j;
        if text.get(j) == Some(&b'.') {
            j = digits_end(text, j + 1);
            if j == int_end + 1 {
                return Err(Stop);
            }
            fraction_end = j;
        }
        let mut exponent = false;
        if matches!(text.get(j), Some(b'e' | b'E')) {
            j += 1;
            if matches!(text.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            let digits = j;
            j = digits_end(text, j);
            if j == digits {
                return Err(Stop);
            }
            exponent = true;
        }
        let shape = NumberShape {
            start: i,
            int_start,
            int_end,
            fraction_end,
            exponent,
            end: j,
        };
        // A text canonical in jcs is canonical in python too (python's rule only adds
        // integers of 16 to 18 digits and whole decimals `D.0`).
        let entry = if verbatim_number(text, &shape, true) {
            Entry {
                tag: Tag::NumberText,
                flags: 0,
                raw: 0,
                len: (j - i) as u32,
                a: i as u32,
                b: 0,
            }
        } else {
            self.number_value(&shape)?
        };
        self.push(entry);
        Ok(j)
    }

    /// A number whose text is not canonical, read by the parser's own code.
    #[inline(never)]
    fn number_value(&self, shape: &NumberShape) -> Result<Entry, Stop> {
        let p = Parser::new(self.text, self.options);
        Ok(match p.number_value(shape).map_err(|_| Stop)? {
            Num::Int(v) => bits_entry(Tag::Int, v as u64),
            Num::Float(f) => bits_entry(Tag::Float, f.to_bits()),
            Num::Big(digits) => Entry {
                tag: Tag::BigInt,
                flags: 0,
                raw: 0,
                len: digits.len() as u32,
                a: shape.start as u32,
                b: 0,
            },
        })
    }
}

/// The first index at or after `i` that is not JSON whitespace.
#[inline(always)]
fn skip_whitespace(text: &[u8], mut i: usize) -> usize {
    while let Some(&b) = text.get(i) {
        if b > b' ' || !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            break;
        }
        i += 1;
    }
    i
}

/// The UTF-8 of string or key entry `e`, with the lifetime of the buffers.
#[inline(always)]
fn key_bytes<'a>(decoded: &'a str, text: &'a [u8], e: Entry) -> &'a [u8] {
    let (start, end) = (e.a as usize, (e.a + e.len) as usize);
    if e.flags & DECODED != 0 {
        &decoded.as_bytes()[start..end]
    } else {
        &text[start..end]
    }
}

/// [`prefix_of`] a key of `len` bytes whose first 8 bytes (or more) are `word`, in one load.
#[inline(always)]
fn prefix_of_word(word: &[u8], len: usize) -> u64 {
    let mut head = [0u8; 8];
    head.copy_from_slice(word);
    let w = u64::from_be_bytes(head);
    if len >= 8 {
        w
    } else {
        // The key's `len` leading bytes (none when `len` is 0).
        w & !(u64::MAX >> (8 * len))
    }
}

/// The first 8 bytes of `bytes`, big-endian, zero-padded: their order is the bytes' order
/// wherever they differ.
#[cold]
fn prefix_of(bytes: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    let n = bytes.len().min(8);
    head[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(head)
}

/// Byte order of two keys: by their prefixes where those differ, else all their bytes.
#[inline(always)]
fn cmp_keys(entries: &[Entry], decoded: &str, text: &[u8], x: Key, y: Key) -> std::cmp::Ordering {
    if x.prefix != y.prefix {
        return x.prefix.cmp(&y.prefix);
    }
    let bytes = |k: Key| key_bytes(decoded, text, entries[k.entry as usize]);
    bytes(x).cmp(bytes(y))
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
