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
//! The result is exactly `parse_with` then `write_value`, bytes and errors alike: the lexing
//! is the parser's own code ([`Parser`]), the structure below mirrors
//! [`Parser::parse_document`], the tokens are written by the writer's own functions, a parse
//! error anywhere wins over a value error, and of several values without a canonical form the
//! one the writer's walk meets first (canonical order) is named. Tested against the two-step
//! path on generated and mutated documents (`tests/stream_differential.rs`).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::io;

use crate::escape::{jcs_string, python_string};
use crate::parser::{NumberShape, Parser};
use crate::sink::Out;
use crate::writer::{cmp_utf16, jcs_number, python_number, Num};
use crate::{ParseError, ParseOptions, Profile, Value, WriteError, MAX_WRITE_DEPTH};

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
    if options.max_depth > MAX_WRITE_DEPTH {
        // Deeper than the writer goes: let the two-step path word that error.
        let value = crate::parse_with(text, options)?;
        return crate::write_value(&value, profile, out).map_err(|e| match e {
            crate::Error::Value(e) => CanonError::Value(e),
            crate::Error::Io(e) => CanonError::Io(e),
        });
    }
    let mut c = Canon {
        p: Parser::new(text, *options),
        jcs: profile == Profile::Jcs,
        allow_nan: profile == Profile::Python,
        // Room for the whole document at once: the outermost object's members wait here, and
        // growing a buffer of hundreds of MB by doubling copies it, and holds the old and the
        // new one together, under an allocator that does not remap. Pages never written (a
        // top-level array flushes every 64 KiB) are never resident.
        buf: Vec::with_capacity(text.len().max(FLUSH_BYTES * 2)),
        keys: Vec::new(),
        members: Vec::new(),
        frames: Vec::new(),
        open_objects: 0,
        scratch: String::new(),
        order: Vec::new(),
        targets: Vec::new(),
        aside: Vec::new(),
        error: None,
        io_error: None,
    };
    c.document(out)?;
    if let Some((path, mut e)) = c.error.take() {
        e.pointer = pointer_of(&path);
        return Err(CanonError::Value(*e));
    }
    c.flush(out);
    match c.io_error {
        Some(e) => Err(CanonError::Io(e)),
        None => Ok(()),
    }
}

/// Pending bytes are handed to the writer in pieces of about this size, when no object is
/// open.
const FLUSH_BYTES: usize = 64 * 1024;

/// Up to this many members, a key out of order is checked for duplicates by a scan of the
/// object's earlier keys; beyond it, by a hash set (membership only: its order reaches
/// nothing).
const SCAN_MEMBERS: usize = 32;

/// One member of an open object: its key (raw UTF-8, in `keys`) and its canonical text
/// `"key":value` (in `buf`).
struct Member {
    /// The key's first 8 bytes, big-endian, zero-padded: orders most keys in one compare.
    prefix: u64,
    key_start: usize,
    key_end: usize,
    text_start: usize,
    text_end: usize,
}

struct Obj {
    /// Offset in `buf` just after the `{`.
    start: usize,
    first_member: usize,
    keys_start: usize,
    /// The key awaiting its value (in `keys`), where it starts in the input, and where its
    /// member's text starts in `buf`.
    key_start: usize,
    key_end: usize,
    key_at: usize,
    text_start: usize,
    /// Every key so far came in the profile's order (so none repeats and nothing moves).
    sorted: bool,
    /// A key has an astral char, whose UTF-16 order (profile jcs) is not its byte order.
    astral: bool,
    seen: Option<HashSet<Box<[u8]>>>,
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
    jcs: bool,
    allow_nan: bool,
    /// Canonical bytes not yet handed to the writer.
    buf: Vec<u8>,
    /// Raw keys of the open objects' members.
    keys: Vec<u8>,
    members: Vec<Member>,
    frames: Vec<Frame>,
    open_objects: usize,
    /// A decoded string (one with escapes).
    scratch: String,
    order: Vec<usize>,
    /// Where each member of an object being reordered goes, and the members copied aside.
    targets: Vec<usize>,
    aside: Vec<u8>,
    /// The value error first in canonical order so far, with its path.
    error: Option<(Vec<Seg>, Box<WriteError>)>,
    io_error: Option<io::Error>,
}

impl Canon<'_> {
    /// As [`Parser::parse_document`].
    fn document<W: io::Write>(&mut self, out: &mut W) -> Result<(), ParseError> {
        if self.p.bytes.starts_with(b"\xef\xbb\xbf") {
            return Err(self.p.error("byte order mark is not allowed"));
        }
        self.value(out)?;
        self.p.skip_whitespace();
        if self.p.pos < self.p.bytes.len() {
            return Err(self.p.error("trailing characters after the JSON value"));
        }
        Ok(())
    }

    fn flush<W: io::Write>(&mut self, out: &mut W) {
        if self.io_error.is_none() {
            if let Err(e) = out.write_all(&self.buf) {
                self.io_error = Some(e);
            }
        }
        self.buf.clear();
    }

    /// As the parser's `parse_value`, writing instead of building.
    fn value<W: io::Write>(&mut self, out: &mut W) -> Result<(), ParseError> {
        loop {
            self.p.skip_whitespace();
            match self.p.peek() {
                Some(open @ (b'[' | b'{')) => {
                    if self.frames.len() >= self.p.options.max_depth {
                        return Err(self.p.error(format!(
                            "nesting deeper than {} levels",
                            self.p.options.max_depth
                        )));
                    }
                    self.p.pos += 1;
                    self.p.skip_whitespace();
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
                        let keys_start = self.keys.len();
                        let (key_start, key_end, key_at) = self.key()?;
                        self.open_objects += 1;
                        self.frames.push(Frame::Object(Obj {
                            start,
                            first_member: self.members.len(),
                            keys_start,
                            key_start,
                            key_end,
                            key_at,
                            text_start: start,
                            sorted: true,
                            astral: false,
                            seen: None,
                        }));
                        continue;
                    }
                }
                _ => self.scalar()?,
            }
            // Hand the finished value to enclosing containers, closing those that end here.
            loop {
                self.p.skip_whitespace();
                match self.frames.last_mut() {
                    None => return Ok(()),
                    Some(Frame::Array(index)) => match self.p.peek() {
                        Some(b',') => {
                            self.p.pos += 1;
                            *index += 1;
                            self.buf.byte(b',');
                            if self.open_objects == 0 && self.buf.len() >= FLUSH_BYTES {
                                self.flush(out);
                            }
                            break;
                        }
                        Some(b']') => {
                            self.p.pos += 1;
                            self.frames.pop();
                            self.buf.byte(b']');
                        }
                        _ => return Err(self.p.expected("',' or ']' in an array")),
                    },
                    Some(Frame::Object(_)) => {
                        self.member_done()?;
                        match self.p.peek() {
                            Some(b',') => {
                                self.p.pos += 1;
                                self.p.skip_whitespace();
                                self.buf.byte(b',');
                                let text_start = self.buf.len();
                                let (key_start, key_end, key_at) = self.key()?;
                                if let Some(Frame::Object(obj)) = self.frames.last_mut() {
                                    obj.key_start = key_start;
                                    obj.key_end = key_end;
                                    obj.key_at = key_at;
                                    obj.text_start = text_start;
                                }
                                break;
                            }
                            Some(b'}') => {
                                self.p.pos += 1;
                                self.close_object();
                            }
                            _ => return Err(self.p.expected("',' or '}' in an object")),
                        }
                    }
                }
            }
        }
    }

    /// A key and its `:` (whitespace before it already skipped), as the parser's
    /// `parse_key`; keeps the raw key in `keys` and writes `"key":` to `buf`. Returns where
    /// the key is in `keys` and where it started in the input.
    fn key(&mut self) -> Result<(usize, usize, usize), ParseError> {
        if self.p.peek() != Some(b'"') {
            return Err(self.p.expected("a string key"));
        }
        let at = self.p.pos;
        let key_start = self.keys.len();
        let key: &str = match self.p.string_token(&mut self.scratch)? {
            Some(raw) => raw,
            None => &self.scratch,
        };
        self.keys.extend_from_slice(key.as_bytes());
        if self.jcs {
            jcs_string(key, &mut self.buf);
        } else {
            python_string(key, &mut self.buf);
        }
        self.p.skip_whitespace();
        if self.p.peek() != Some(b':') {
            return Err(self.p.expected("':' after an object key"));
        }
        self.p.pos += 1;
        self.buf.byte(b':');
        Ok((key_start, self.keys.len(), at))
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
    fn member_cmp(by_bytes: bool, keys: &[u8], a: &Member, b: &Member) -> Ordering {
        if by_bytes {
            let o = a.prefix.cmp(&b.prefix);
            if o != Ordering::Equal {
                return o;
            }
        }
        Self::key_cmp(
            !by_bytes,
            &keys[a.key_start..a.key_end],
            &keys[b.key_start..b.key_end],
        )
    }

    /// The value of the pending member is complete: refuse a duplicate key (at the key's
    /// position, as the parser does when it inserts the member) and record the member.
    fn member_done(&mut self) -> Result<(), ParseError> {
        let Some(Frame::Object(obj)) = self.frames.last_mut() else {
            return Ok(());
        };
        let key = &self.keys[obj.key_start..obj.key_end];
        let mut head = [0u8; 8];
        let n = key.len().min(8);
        head[..n].copy_from_slice(&key[..n]);
        let member = Member {
            prefix: u64::from_be_bytes(head),
            key_start: obj.key_start,
            key_end: obj.key_end,
            text_start: obj.text_start,
            text_end: self.buf.len(),
        };
        if self.jcs && !obj.astral && key.iter().any(|&b| b >= 0xf0) {
            obj.astral = true;
        }
        let earlier = &self.members[obj.first_member..];
        if obj.sorted {
            if let Some(last) = earlier.last() {
                let by_bytes = !obj.astral;
                if Self::member_cmp(by_bytes, &self.keys, last, &member) != Ordering::Less {
                    obj.sorted = false;
                }
            }
        }
        if !obj.sorted {
            let duplicate = if obj.seen.is_none() && earlier.len() <= SCAN_MEMBERS {
                earlier
                    .iter()
                    .any(|m| m.prefix == member.prefix && &self.keys[m.key_start..m.key_end] == key)
            } else {
                let keys = &self.keys;
                let seen = obj.seen.get_or_insert_with(|| {
                    earlier
                        .iter()
                        .map(|m| keys[m.key_start..m.key_end].into())
                        .collect()
                });
                !seen.insert(key.into())
            };
            if duplicate {
                let at = obj.key_at;
                let message = format!("duplicate key {:?}", String::from_utf8_lossy(key));
                return Err(self.p.error_at(at, message));
            }
        }
        self.members.push(member);
        Ok(())
    }

    /// `}`: puts the members in key order if they did not come so, and forgets them.
    fn close_object(&mut self) {
        let Some(Frame::Object(obj)) = self.frames.pop() else {
            return;
        };
        let members = &self.members[obj.first_member..];
        if !obj.sorted {
            let keys = &self.keys;
            let by_bytes = !obj.astral;
            self.order.clear();
            self.order.extend(0..members.len());
            self.order.sort_unstable_by(|&a, &b| {
                Self::member_cmp(by_bytes, keys, &members[a], &members[b])
            });
            // Same members, same number of commas: the object keeps its length. The largest
            // member moves within the buffer (memmove); only the others are copied aside
            // first, so a huge member (a large array) is never held twice.
            let largest = (0..members.len())
                .max_by_key(|&i| members[i].text_end - members[i].text_start)
                .unwrap_or(0);
            self.aside.clear();
            for (i, m) in members.iter().enumerate() {
                if i != largest {
                    self.aside
                        .extend_from_slice(&self.buf[m.text_start..m.text_end]);
                }
            }
            // Where each member goes, in key order.
            self.targets.clear();
            self.targets.resize(members.len(), 0);
            let mut at = obj.start;
            for &m in &self.order {
                self.targets[m] = at;
                at += members[m].text_end - members[m].text_start + 1;
            }
            let big = &members[largest];
            self.buf
                .copy_within(big.text_start..big.text_end, self.targets[largest]);
            let mut from = 0;
            for (i, m) in members.iter().enumerate() {
                let len = m.text_end - m.text_start;
                if i != largest {
                    let to = self.targets[i];
                    self.buf[to..to + len].copy_from_slice(&self.aside[from..from + len]);
                    from += len;
                }
                let after = self.targets[i] + len;
                if after < self.buf.len() {
                    // A comma after every member but the last in key order (that position
                    // is the object's end, where `}` goes next).
                    self.buf[after] = b',';
                }
            }
        }
        self.members.truncate(obj.first_member);
        self.keys.truncate(obj.keys_start);
        self.open_objects -= 1;
        self.buf.byte(b'}');
    }

    /// As the parser's `parse_scalar`, writing the token.
    fn scalar(&mut self) -> Result<(), ParseError> {
        let num = match self.p.peek() {
            Some(b'"') => {
                let s: &str = match self.p.string_token(&mut self.scratch)? {
                    Some(raw) => raw,
                    None => &self.scratch,
                };
                if self.jcs {
                    jcs_string(s, &mut self.buf);
                } else {
                    python_string(s, &mut self.buf);
                }
                return Ok(());
            }
            Some(b't') => {
                self.p.literal(b"true", Value::Null)?;
                self.buf.put(b"true");
                return Ok(());
            }
            Some(b'f') => {
                self.p.literal(b"false", Value::Null)?;
                self.buf.put(b"false");
                return Ok(());
            }
            Some(b'n') => {
                self.p.literal(b"null", Value::Null)?;
                self.buf.put(b"null");
                return Ok(());
            }
            Some(b'N') => self.non_finite(b"NaN", f64::NAN)?,
            Some(b'I') => self.non_finite(b"Infinity", f64::INFINITY)?,
            Some(b'-') if self.p.bytes.get(self.p.pos + 1) == Some(&b'I') => {
                self.non_finite(b"-Infinity", f64::NEG_INFINITY)?
            }
            Some(b'-' | b'0'..=b'9') => {
                let shape = self.p.number_shape()?;
                if verbatim_number(self.p.bytes, &shape, self.jcs) {
                    self.buf.put(&self.p.bytes[shape.start..shape.end]);
                    return Ok(());
                }
                self.p.number_value(&shape)?
            }
            _ => return Err(self.p.unexpected()),
        };
        let written = if self.jcs {
            jcs_number(num, &mut self.buf)
        } else {
            python_number(num, self.allow_nan, &mut self.buf)
        };
        if let Err(e) = written {
            self.refused(e);
        }
        Ok(())
    }

    fn non_finite(&mut self, word: &[u8], f: f64) -> Result<Num<'static>, ParseError> {
        self.p.non_finite(word, f)?;
        Ok(Num::Float(f))
    }

    /// A value without a canonical form at the current path: kept if the writer's walk
    /// (members in key order) would meet it before the one kept so far.
    #[cold]
    fn refused(&mut self, e: Box<WriteError>) {
        let path: Vec<Seg> = self
            .frames
            .iter()
            .map(|f| match f {
                Frame::Array(i) => Seg::Index(*i),
                Frame::Object(obj) => Seg::Key(
                    String::from_utf8_lossy(&self.keys[obj.key_start..obj.key_end]).into_owned(),
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

/// Whether a number's own text is already its canonical text in the profile, so that
/// converting it to binary and back can be skipped:
///
/// - an integer of at most 18 digits (python; it fits `i64`, which the writer prints as
///   itself) or 15 digits (jcs; below 2^53), except `-0` (written `0`);
/// - a decimal without exponent of at most 15 digits whose last fraction digit is not `0`,
///   at least 1e-4 in magnitude: both profiles write it in fixed notation with the
///   shortest digits that round-trip, and those are its own digits (any decimal of at most
///   15 significant digits is recovered from its nearest double, so no shorter or other
///   string of as many digits maps to that double);
/// - in python only, a whole decimal `D.0` of at most 15 digits (`-0.0` included), which
///   Python's `repr` writes as itself.
///
/// Everything else goes the long way. Tested against it (`tests/stream_differential.rs`).
fn verbatim_number(bytes: &[u8], n: &NumberShape, jcs: bool) -> bool {
    if n.exponent {
        return false;
    }
    let int = &bytes[n.int_start..n.int_end];
    let negative = n.start != n.int_start;
    if n.fraction_end == n.int_end {
        let max = if jcs { 15 } else { 18 };
        return int.len() <= max && !(negative && int == b"0");
    }
    let fraction = &bytes[n.int_end + 1..n.fraction_end];
    if int.len() + fraction.len() > 15 {
        return false;
    }
    if fraction == b"0" {
        return !jcs;
    }
    if fraction.last() == Some(&b'0') {
        return false;
    }
    int != b"0" || fraction.iter().take_while(|&&d| d == b'0').count() <= 3
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
