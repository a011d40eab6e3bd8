//! Scalars: the common tokens copied from the input as they are, the rest through the
//! parser's own code and the writer's number functions.

use crate::escape::{jcs_string, python_string};
use crate::parser::{NumberShape, StringToken};
use crate::scan::{digits_end, printable_run_end};
use crate::sink::Out;
use crate::writer::{jcs_number, python_number, Num};
use crate::{ParseError, Value};

use super::Canon;

impl Canon<'_> {
    /// As the parser's `parse_scalar`, writing the token. The common tokens (a printable
    /// string, a literal, a number whose text is canonical) are written here; the rest and
    /// every error go through the parser's own code.
    #[inline(always)]
    pub(super) fn scalar(&mut self) -> Result<(), ParseError> {
        let written = match self.p.peek() {
            Some(b'"') => {
                let at = self.p.pos;
                if self.p.printable_string().is_some() {
                    copy_token(&mut self.buf, self.p.bytes, at, self.p.pos);
                    true
                } else {
                    !self.jcs && self.python_verbatim_string()
                }
            }
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            Some(b'-' | b'0'..=b'9') => self.verbatim_number(),
            _ => false,
        };
        if written {
            return Ok(());
        }
        self.scalar_token()
    }

    /// The literal `word` at `pos`, written, if it is there.
    #[inline]
    fn word(&mut self, word: &[u8]) -> bool {
        if self.p.bytes[self.p.pos..].starts_with(word) {
            self.p.pos += word.len();
            self.buf.put(word);
            true
        } else {
            false
        }
    }

    /// Profile python: a string token at `pos` that is already its canonical text
    /// ([`python_verbatim_end`]), copied. Otherwise `false`, and `pos` has not moved (the
    /// parser reads the string again, errors included).
    #[inline(never)]
    fn python_verbatim_string(&mut self) -> bool {
        let start = self.p.pos;
        match python_verbatim_end(self.p.bytes, start) {
            Some(end) => {
                self.p.pos = end;
                self.buf.put(&self.p.bytes[start..end]);
                true
            }
            None => false,
        }
    }

    /// A number at `pos` whose text is its canonical text ([`verbatim_number`]), copied;
    /// otherwise `false`, and `pos` has not moved (the parser reads it again, errors
    /// included).
    #[inline]
    fn verbatim_number(&mut self) -> bool {
        let bytes = self.p.bytes;
        let start = self.p.pos;
        let digits = |i: usize| digits_end(bytes, i);
        let int_start = start + usize::from(bytes.get(start) == Some(&b'-'));
        let int_end = match bytes.get(int_start) {
            Some(b'0') => int_start + 1,
            Some(b'1'..=b'9') => digits(int_start + 1),
            _ => return false,
        };
        let mut end = int_end;
        match bytes.get(end) {
            Some(b'0'..=b'9' | b'e' | b'E') => return false,
            Some(b'.') => {
                end = digits(end + 1);
                if end == int_end + 1 || matches!(bytes.get(end), Some(b'e' | b'E')) {
                    return false;
                }
            }
            _ => {}
        }
        let shape = NumberShape {
            start,
            int_start,
            int_end,
            fraction_end: end,
            exponent: false,
            end,
        };
        if !verbatim_number(bytes, &shape, self.jcs) {
            return false;
        }
        self.buf.put(&bytes[start..end]);
        self.p.pos = end;
        true
    }

    /// [`Canon::scalar`] for everything else.
    #[inline(never)]
    fn scalar_token(&mut self) -> Result<(), ParseError> {
        let num = match self.p.peek() {
            Some(b'"') => {
                match self.p.string_token(&mut self.scratch)? {
                    StringToken::Raw { text, printable } => {
                        if printable || self.jcs {
                            // Nothing to escape (a raw string has no `"`, `\` or control).
                            quoted(&mut self.buf, text.as_bytes());
                        } else {
                            python_string(text, &mut self.buf);
                        }
                    }
                    StringToken::Decoded => {
                        if self.jcs {
                            jcs_string(&self.scratch, &mut self.buf);
                        } else {
                            python_string(&self.scratch, &mut self.buf);
                        }
                    }
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
}

/// Profile python: where the string token at `start` (its opening quote) ends, if the token
/// is already its canonical text: ASCII only, with escapes only of the forms `json.dumps`
/// writes itself (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, and a lowercase `\u` of a
/// control without a short form or of 0x7F and up, not a surrogate). That is how Python's
/// `json.dump` writes every non-ASCII char of a state file. `None` for anything else, errors
/// included (the caller reads such a string the general way).
pub(crate) fn python_verbatim_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        let i = printable_run_end(bytes, at)?;
        match bytes.get(i) {
            Some(b'"') => return Some(i + 1),
            Some(b'\\') => match bytes.get(i + 1) {
                Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f') => at = i + 2,
                Some(b'u') => match bytes.get(i + 2..i + 6).and_then(lowercase_hex4) {
                    Some(0x08 | 0x09 | 0x0a | 0x0c | 0x0d) => return None,
                    Some(0x00..=0x1f) => at = i + 6,
                    Some(0xd800..=0xdfff) => return None,
                    Some(0x7f..) => at = i + 6,
                    _ => return None,
                },
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// The value of four lowercase hex digits.
fn lowercase_hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |v, &d| {
        let d = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        Some(v * 16 + u32::from(d))
    })
}

/// `"text"`, for a string with nothing to escape.
#[inline]
pub(super) fn quoted(buf: &mut Vec<u8>, text: &[u8]) {
    buf.reserve(text.len() + 2);
    buf.push(b'"');
    buf.extend_from_slice(text);
    buf.push(b'"');
}

/// The token `input[at..end]` (a printable string with its quotes: its own canonical
/// text), copied. Short ones with one fixed-size move when the input goes on long enough
/// (the bytes beyond the token are cut off again).
#[inline]
pub(super) fn copy_token(buf: &mut Vec<u8>, input: &[u8], at: usize, end: usize) {
    let len = buf.len();
    match input.get(at..at + 32) {
        Some(chunk) if end - at <= 32 => {
            let mut word = [0u8; 32];
            word.copy_from_slice(chunk);
            buf.extend_from_slice(&word);
            buf.truncate(len + end - at);
        }
        _ => buf.extend_from_slice(&input[at..end]),
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
#[inline]
pub(crate) fn verbatim_number(bytes: &[u8], n: &NumberShape, jcs: bool) -> bool {
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
