//! Scalars: the common tokens copied from the input as they are, the rest through the
//! parser's own code and the writer's number functions.

use crate::escape::{jcs_string, python_string, python_string_of_token};
use crate::parser::{NumberShape, StringToken};
use crate::scan::{digits_end, printable_run_end};
use crate::sink::Out;
use crate::writer::{jcs_number, python_number, Num};
use crate::{ParseError, Value};

use super::escape_window::{self, window, Window};
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
            Some(b'-' | b'0'..=b'9') => self.number()?,
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
    /// ([`python_verbatim_end`]), copied; else one of raw UTF-8 and any escapes, escaped as
    /// it is read ([`python_string_of_token`]). Otherwise `false`, and `pos` has not moved
    /// (the parser reads the string again, errors included).
    #[inline(never)]
    fn python_verbatim_string(&mut self) -> bool {
        let start = self.p.pos;
        let end = match python_verbatim_end(self.p.bytes, start) {
            Some(end) => {
                self.buf.put(&self.p.bytes[start..end]);
                end
            }
            None => match python_string_of_token(self.p.bytes, start, &mut self.buf) {
                Some(end) => end,
                None => return false,
            },
        };
        self.p.pos = end;
        true
    }

    /// A number at `pos`, lexed once: copied when its text is its canonical text
    /// ([`verbatim_number`]), else converted and written. `Ok(false)`, with `pos` not moved,
    /// for a token that is not a number's (the parser reads it again and words the error).
    #[inline]
    fn number(&mut self) -> Result<bool, ParseError> {
        let bytes = self.p.bytes;
        let start = self.p.pos;
        let digits = |i: usize| digits_end(bytes, i);
        let int_start = start + usize::from(bytes.get(start) == Some(&b'-'));
        let int_end = match bytes.get(int_start) {
            Some(b'0') => int_start + 1,
            Some(b'1'..=b'9') => digits(int_start + 1),
            _ => return Ok(false),
        };
        let mut fraction_end = int_end;
        match bytes.get(int_end) {
            // A leading zero.
            Some(b'0'..=b'9') => return Ok(false),
            Some(b'.') => {
                fraction_end = digits(int_end + 1);
                if fraction_end == int_end + 1 {
                    return Ok(false);
                }
            }
            _ => {}
        }
        let mut end = fraction_end;
        let exponent = matches!(bytes.get(end), Some(b'e' | b'E'));
        if exponent {
            let signed = end + 1 + usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
            end = digits(signed);
            if end == signed {
                return Ok(false);
            }
        }
        // The parser's `number_shape` of the same token.
        let shape = NumberShape {
            start,
            int_start,
            int_end,
            fraction_end,
            exponent,
            end,
        };
        // Where the parser stands after the token, errors of its value included.
        self.p.pos = end;
        if verbatim_number(bytes, &shape, self.jcs) {
            self.buf.put(&bytes[start..end]);
        } else {
            self.convert_number(&shape)?;
        }
        Ok(true)
    }

    /// A number whose text is not its canonical text: converted, written, or refused.
    #[inline(never)]
    fn convert_number(&mut self, shape: &NumberShape) -> Result<(), ParseError> {
        let num = self.p.number_value(shape)?;
        self.write_number(num);
        Ok(())
    }

    fn write_number(&mut self, num: Num<'_>) {
        let written = if self.jcs {
            jcs_number(num, &mut self.buf)
        } else {
            python_number(num, self.allow_nan, &mut self.buf)
        };
        if let Err(e) = written {
            self.refused(e);
        }
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
        self.write_number(num);
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
/// control without a short form or of 0x7F and up, not a surrogate unless a lowercase pair of
/// one high and one low, which is how Python writes an astral char). That is how Python's
/// `json.dump` writes every non-ASCII char of a state file. `None` for anything else, errors
/// included (the caller reads such a string the general way).
///
/// From its first escape on, 32 to 48 bytes at a time where a window of them decides
/// (`stream/escape_window.rs`, on a CPU with AVX-512BW), byte by byte through the 16 bytes of
/// a window that does not, and everywhere else.
pub(crate) fn python_verbatim_end(bytes: &[u8], start: usize) -> Option<usize> {
    verbatim_end(bytes, start, escape_window::available())
}

/// [`python_verbatim_end`] byte by byte only: the reference the windows are tested against.
#[cfg(test)]
pub(super) fn python_verbatim_end_bytewise(bytes: &[u8], start: usize) -> Option<usize> {
    verbatim_end(bytes, start, false)
}

#[inline(always)]
fn verbatim_end(bytes: &[u8], start: usize, windows: bool) -> Option<usize> {
    let mut i = start + 1;
    // Byte by byte up to here (a window did not decide its 16 bytes).
    let mut bytewise_until = if windows { i } else { usize::MAX };
    loop {
        // A window where an escape starts: a token of printable ASCII alone is one run.
        if i >= bytewise_until && bytes.get(i) == Some(&b'\\') {
            match window(bytes, i) {
                Window::End(n) => return Some(i + n),
                Window::Verbatim(n) => {
                    i += n;
                    continue;
                }
                Window::NotVerbatim => return None,
                Window::Unsure => bytewise_until = i + 16,
            }
        }
        // Escapes often come one after another (every char of a non-Latin word): a byte
        // test first, the word scan of a run only where one starts.
        match *bytes.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => {
                // The common escape, `\u` of one char that is not a surrogate, decided from
                // one word with no branch on its digits (they are random in non-Latin text).
                if let Some(word) = bytes.get(i..i + 8) {
                    let w = u64::from_le_bytes(<[u8; 8]>::try_from(word).ok()?);
                    if (w >> 8) as u8 == b'u' && python_u_escape_of_one_char((w >> 16) as u32) {
                        i += 6;
                        continue;
                    }
                }
            }
            0x20..=0x7e => {
                i = printable_run_end(bytes, i)?;
                continue;
            }
            _ => return None,
        }
        i += match *bytes.get(i + 1)? {
            b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => 2,
            b'u' => match lowercase_hex4(bytes.get(i + 2..i + 6)?)? {
                0x08 | 0x09 | 0x0a | 0x0c | 0x0d => return None,
                0x00..=0x1f => 6,
                // An astral char: Python writes the pair, lowercase, as it reads it.
                0xd800..=0xdbff => match bytes.get(i + 6..i + 12)? {
                    [b'\\', b'u', low @ ..]
                        if matches!(lowercase_hex4(low), Some(0xdc00..=0xdfff)) =>
                    {
                        12
                    }
                    _ => return None,
                },
                0xdc00..=0xdfff => return None,
                0x7f.. => 6,
                _ => return None,
            },
            _ => return None,
        };
    }
}

/// Whether the four bytes of `digits` (little-endian: the first digit in the low byte) are
/// lowercase hex digits of a unit `json.dumps` writes as `\u` of one char: a control without
/// a short escape, or 0x7F and up but not a surrogate. Lane arithmetic on one word; every
/// lane is below 0x80 when the first test passes, so no carry crosses a lane.
#[inline(always)]
fn python_u_escape_of_one_char(digits: u32) -> bool {
    const ONES: u32 = 0x0101_0101;
    const HIGHS: u32 = 0x8080_8080;
    let x = digits;
    let at_least = |b: u32| x.wrapping_add(ONES * (0x80 - b)) & HIGHS;
    let digit = at_least(0x30) & !at_least(0x3a);
    let letter = at_least(0x61) & !at_least(0x67);
    if x & HIGHS != 0 || (digit | letter) != HIGHS {
        return false;
    }
    // Each lane's value: its low nibble, plus 9 for a letter.
    let v = (x & 0x0f0f_0f0f) + (letter >> 7) * 9;
    let pairs = (v & 0x00ff_00ff) << 4 | (v >> 8) & 0x00ff_00ff;
    let unit = (pairs & 0xff) << 8 | (pairs >> 16) & 0xff;
    let control = unit < 0x20 && (0x3700 >> unit) & 1 == 0;
    let wide = unit >= 0x7f && unit & 0xf800 != 0xd800;
    control | wide
}

/// The value of each lowercase hex digit; 0xFF for any other byte.
static LOWERCASE_HEX: [u8; 256] = {
    let mut t = [0xff; 256];
    let mut d = 0;
    while d < 16 {
        t[b"0123456789abcdef"[d] as usize] = d as u8;
        d += 1;
    }
    t
};

/// The value of four lowercase hex digits.
#[inline(always)]
fn lowercase_hex4(digits: &[u8]) -> Option<u32> {
    let [a, b, c, d] = <[u8; 4]>::try_from(digits)
        .ok()?
        .map(|x| LOWERCASE_HEX[x as usize]);
    if (a | b | c | d) & 0xf0 != 0 {
        return None;
    }
    Some(u32::from(a) << 12 | u32::from(b) << 8 | u32::from(c) << 4 | u32::from(d))
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
/// - in python only, the exponent form Python's `repr` writes (`1e-05`, `2.5e+16`,
///   `1.2345e-300`: one digit 1-9, a fraction not ending in `0`, `e`, a sign, at least two
///   digits) of at most 15 significant digits with an exponent from -307 to -5 or 16 to 307:
///   where `repr` takes the exponent form, and within the normal doubles, whose 53 bits hold
///   any 15 digits (below, the subnormals hold fewer).
///
/// Everything else goes the long way. Tested against it (`tests/stream_differential.rs`).
#[inline]
pub(crate) fn verbatim_number(bytes: &[u8], n: &NumberShape, jcs: bool) -> bool {
    if n.exponent {
        return !jcs && python_exponent_form(bytes, n);
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

/// [`verbatim_number`]'s rule for a number with an exponent, in profile python.
#[inline(never)]
fn python_exponent_form(bytes: &[u8], n: &NumberShape) -> bool {
    let int = &bytes[n.int_start..n.int_end];
    if int.len() != 1 || int[0] == b'0' {
        return false;
    }
    if n.fraction_end > n.int_end {
        let fraction = &bytes[n.int_end + 1..n.fraction_end];
        if fraction.len() > 14 || fraction.last() == Some(&b'0') {
            return false;
        }
    }
    let (negative, digits) = match &bytes[n.fraction_end..n.end] {
        [b'e', b'-', digits @ ..] => (true, digits),
        [b'e', b'+', digits @ ..] => (false, digits),
        _ => return false,
    };
    let exponent = match digits {
        [a, b] => u32::from(a - b'0') * 10 + u32::from(b - b'0'),
        [b'1'..=b'9', b, c] => {
            u32::from(digits[0] - b'0') * 100 + u32::from(b - b'0') * 10 + u32::from(c - b'0')
        }
        _ => return false,
    };
    exponent <= 307
        && if negative {
            exponent >= 5
        } else {
            exponent >= 16
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule of `python_verbatim_end` for one `\u` escape, digit by digit.
    fn reference(digits: [u8; 4]) -> bool {
        matches!(
            lowercase_hex4(&digits),
            Some(0x00..=0x07 | 0x0b | 0x0e..=0x1f | 0x7f..=0xd7ff | 0xe000..=0xffff)
        )
    }

    /// The word test against the digit-by-digit rule: every unit in lowercase and in
    /// uppercase, and every byte value in every position among digits.
    #[test]
    fn u_escape_word_test_matches_the_rule() {
        for unit in 0..=0xffffu32 {
            for text in [format!("{unit:04x}"), format!("{unit:04X}")] {
                let digits: [u8; 4] = text.as_bytes().try_into().unwrap();
                assert_eq!(
                    python_u_escape_of_one_char(u32::from_le_bytes(digits)),
                    reference(digits),
                    "{text}"
                );
            }
        }
        for lane in 0..4 {
            for b in 0..=255u8 {
                for filler in [b'0', b'7', b'f', b'a'] {
                    let mut digits = [filler; 4];
                    digits[lane] = b;
                    assert_eq!(
                        python_u_escape_of_one_char(u32::from_le_bytes(digits)),
                        reference(digits),
                        "{digits:?}"
                    );
                }
            }
        }
    }
}
