//! The strict RFC 8259 parser.
//!
//! Strict because a fingerprint must not depend on which of two readings of ambiguous text a
//! parser picked: duplicate keys, lone surrogates, non-UTF-8 bytes, leading zeros and trailing
//! garbage are errors, not guesses. Iterative (an explicit stack, bounded by
//! [`ParseOptions::max_depth`]), so hostile input cannot overflow the call stack.

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::scan::sse2_run_lanes;
use crate::scan::{digits_end, printable_string_end};
use crate::writer::Num;
use crate::{Map, Number, ParseError, Value};

/// Knobs of [`parse_with`](crate::parse_with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    /// Deepest nesting of arrays and objects accepted (default 256).
    pub max_depth: usize,
    /// Accept the literals `NaN`, `Infinity` and `-Infinity` that Python's `json.dumps` writes
    /// by default, and numbers too large for a double (which become infinities, as in Python).
    /// Off by default: they are not JSON.
    pub allow_nan: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            max_depth: 256,
            allow_nan: false,
        }
    }
}

/// Byte offsets of a number token's parts: `-`? int (`.` fraction)? (`e` exponent)?.
pub(crate) struct NumberShape {
    pub(crate) start: usize,
    pub(crate) int_start: usize,
    pub(crate) int_end: usize,
    /// `int_end` when there is no fraction; else the end of its digits.
    pub(crate) fraction_end: usize,
    pub(crate) exponent: bool,
    pub(crate) end: usize,
}

/// A string token as the input spells it.
pub(crate) enum StringToken<'a> {
    /// No escape: the input's own bytes. `printable`: all of them printable ASCII (0x20 to
    /// 0x7E, and neither `"` nor `\\`), which neither profile escapes, so the canonical string
    /// is these bytes between quotes.
    Raw { text: &'a str, printable: bool },
    /// It had escapes and was decoded into the caller's buffer.
    Decoded,
}

enum Frame {
    Array(Vec<Value>),
    /// An object, the key awaiting its value, and where that key started (for duplicates).
    Object(Map, String, usize),
}

pub(crate) struct Parser<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) options: ParseOptions,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(bytes: &'a [u8], options: ParseOptions) -> Self {
        Parser {
            bytes,
            pos: 0,
            options,
        }
    }

    /// Builds the error for byte offset `at`: 1-based line, and 1-based column counted in
    /// characters (every byte that does not continue a UTF-8 sequence starts one).
    pub(crate) fn error_at(&self, at: usize, message: impl Into<String>) -> ParseError {
        let at = at.min(self.bytes.len());
        let before = &self.bytes[..at];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        let column = 1 + before[line_start..]
            .iter()
            .filter(|&&b| !(0x80..0xc0).contains(&b))
            .count();
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.pos, message)
    }

    pub(crate) fn unexpected(&self) -> ParseError {
        match self.bytes.get(self.pos) {
            None => self.error("unexpected end of input"),
            Some(&b) if (0x20..0x7f).contains(&b) => {
                self.error(format!("unexpected character '{}'", b as char))
            }
            Some(&b) => self.error(format!("unexpected byte 0x{b:02x}")),
        }
    }

    pub(crate) fn skip_whitespace(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(crate) fn parse_document(mut self) -> Result<Value, ParseError> {
        if self.bytes.starts_with(b"\xef\xbb\xbf") {
            return Err(self.error("byte order mark is not allowed"));
        }
        let value = self.parse_value()?;
        self.skip_whitespace();
        if self.pos < self.bytes.len() {
            return Err(self.error("trailing characters after the JSON value"));
        }
        Ok(value)
    }

    fn parse_value(&mut self) -> Result<Value, ParseError> {
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            // Parse one value start: a scalar, or the opening of a container.
            self.skip_whitespace();
            let mut value = match self.peek() {
                Some(b'[') | Some(b'{') => {
                    let open = self.open(stack.len())?;
                    if open == b'[' {
                        if self.peek() == Some(b']') {
                            self.pos += 1;
                            Value::Array(Vec::new())
                        } else {
                            stack.push(Frame::Array(Vec::new()));
                            continue;
                        }
                    } else if self.peek() == Some(b'}') {
                        self.pos += 1;
                        Value::Object(Map::new())
                    } else {
                        let (key, at) = self.parse_key()?;
                        stack.push(Frame::Object(Map::new(), key, at));
                        continue;
                    }
                }
                _ => self.parse_scalar()?,
            };
            // Hand the finished value to enclosing containers, closing those that end here.
            loop {
                let Some(frame) = stack.last_mut() else {
                    return Ok(value);
                };
                self.skip_whitespace();
                match frame {
                    Frame::Array(items) => {
                        items.push(value);
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                break;
                            }
                            Some(b']') => {
                                self.pos += 1;
                                value = match stack.pop() {
                                    Some(Frame::Array(items)) => Value::Array(items),
                                    _ => return Err(self.error("internal error: lost an array")),
                                };
                            }
                            _ => return Err(self.expected("',' or ']' in an array")),
                        }
                    }
                    Frame::Object(map, pending, at) => {
                        let key = std::mem::take(pending);
                        match map.entry(key) {
                            std::collections::btree_map::Entry::Vacant(slot) => {
                                slot.insert(value);
                            }
                            std::collections::btree_map::Entry::Occupied(slot) => {
                                return Err(
                                    self.error_at(*at, format!("duplicate key {:?}", slot.key()))
                                );
                            }
                        }
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                self.skip_whitespace();
                                let (next, next_at) = self.parse_key()?;
                                *pending = next;
                                *at = next_at;
                                break;
                            }
                            Some(b'}') => {
                                self.pos += 1;
                                value = match stack.pop() {
                                    Some(Frame::Object(map, _, _)) => Value::Object(map),
                                    _ => return Err(self.error("internal error: lost an object")),
                                };
                            }
                            _ => return Err(self.expected("',' or '}' in an object")),
                        }
                    }
                }
            }
        }
    }

    /// The `[` or `{` at `pos`, opening a container inside `depth` open ones: refused
    /// beyond [`ParseOptions::max_depth`], else consumed with the whitespace after it.
    #[inline]
    pub(crate) fn open(&mut self, depth: usize) -> Result<u8, ParseError> {
        if depth >= self.options.max_depth {
            return Err(self.error(format!(
                "nesting deeper than {} levels",
                self.options.max_depth
            )));
        }
        let open = self.bytes[self.pos];
        self.pos += 1;
        self.skip_whitespace();
        Ok(open)
    }

    pub(crate) fn expected(&self, what: &str) -> ParseError {
        match self.peek() {
            None => self.error(format!("unexpected end of input, expected {what}")),
            Some(_) => {
                let found = self.unexpected().message;
                self.error(format!("{found}, expected {what}"))
            }
        }
    }

    /// A key and its ':' (whitespace before the key already skipped).
    fn parse_key(&mut self) -> Result<(String, usize), ParseError> {
        if self.peek() != Some(b'"') {
            return Err(self.expected("a string key"));
        }
        let at = self.pos;
        let key = self.parse_string()?;
        self.skip_whitespace();
        if self.peek() != Some(b':') {
            return Err(self.expected("':' after an object key"));
        }
        self.pos += 1;
        Ok((key, at))
    }

    fn parse_scalar(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some(b'"') => Ok(Value::String(self.parse_string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'N') => self.non_finite(b"NaN", f64::NAN),
            Some(b'I') => self.non_finite(b"Infinity", f64::INFINITY),
            Some(b'-') if self.bytes.get(self.pos + 1) == Some(&b'I') => {
                self.non_finite(b"-Infinity", f64::NEG_INFINITY)
            }
            Some(b'-' | b'0'..=b'9') => self.parse_number(),
            _ => Err(self.unexpected()),
        }
    }

    pub(crate) fn literal(&mut self, word: &[u8], value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error(format!(
                "invalid literal, expected '{}'",
                String::from_utf8_lossy(word)
            )))
        }
    }

    pub(crate) fn non_finite(&mut self, word: &[u8], f: f64) -> Result<Value, ParseError> {
        if !self.bytes[self.pos..].starts_with(word) {
            return Err(self.unexpected());
        }
        if !self.options.allow_nan {
            return Err(self.error(format!(
                "{} is not JSON (allowed only with allow_nan)",
                String::from_utf8_lossy(word)
            )));
        }
        self.pos += word.len();
        Ok(Value::Number(Number::Float(f)))
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        self.pos = digits_end(self.bytes, start);
        self.pos - start
    }

    fn parse_number(&mut self) -> Result<Value, ParseError> {
        Ok(Value::Number(match self.number_token()? {
            Num::Int(i) => Number::Int(i),
            Num::Big(digits) => Number::BigInt(digits.into()),
            Num::Float(f) => Number::Float(f),
        }))
    }

    /// Where the parts of a number token are (the first byte is `-` or a digit), checking
    /// its grammar.
    pub(crate) fn number_shape(&mut self) -> Result<NumberShape, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return Err(self.error_at(int_start, "leading zero in a number"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("expected a digit in a number")),
        }
        let int_end = self.pos;
        let mut fraction_end = int_end;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("expected a digit after the decimal point"));
            }
            fraction_end = self.pos;
        }
        let mut exponent = false;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
            exponent = true;
        }
        Ok(NumberShape {
            start,
            int_start,
            int_end,
            fraction_end,
            exponent,
            end: self.pos,
        })
    }

    /// A number token (the first byte is `-` or a digit). Big integers borrow their digits
    /// from the input: they are already canonical (no leading zero; `-0` fits `i64`).
    pub(crate) fn number_token(&mut self) -> Result<Num<'a>, ParseError> {
        let shape = self.number_shape()?;
        self.number_value(&shape)
    }

    /// The value of a number token whose grammar [`Parser::number_shape`] checked.
    pub(crate) fn number_value(&self, shape: &NumberShape) -> Result<Num<'a>, ParseError> {
        let start = shape.start;
        let is_float = shape.fraction_end > shape.int_end || shape.exponent;
        // SAFETY: `number_shape` found only ASCII digits, signs, `.` and `e` in the span, and
        // ASCII is valid UTF-8 (checking it again cost a tenth of a float's time).
        let text = unsafe { std::str::from_utf8_unchecked(&self.bytes[start..shape.end]) };
        if is_float {
            // Rust's float parsing is correctly rounded (Eisel-Lemire with a bignum fallback).
            let f: f64 = text
                .parse()
                .map_err(|_| self.error_at(start, "invalid number"))?;
            if f.is_infinite() && !self.options.allow_nan {
                return Err(self.error_at(start, "number out of range of a double"));
            }
            Ok(Num::Float(f))
        } else {
            Ok(match text.parse::<i64>() {
                Ok(i) => Num::Int(i),
                Err(_) => Num::Big(text),
            })
        }
    }

    fn parse_string(&mut self) -> Result<String, ParseError> {
        let mut out = String::new();
        match self.string_token(&mut out)? {
            StringToken::Raw { text, .. } => Ok(text.to_owned()),
            StringToken::Decoded => Ok(out),
        }
    }

    /// The run of bytes from `pos` up to the first `"`, `\\` or control character, and
    /// whether every byte of it is printable ASCII (below 0x7F). Eight bytes at a time: the
    /// first flagged lane of a word is where the run ends, found without going back byte by
    /// byte.
    #[inline]
    pub(crate) fn plain_run(&mut self) -> (&'a [u8], bool) {
        let bytes = self.bytes;
        let start = self.pos;
        let mut i = start;
        let mut wide = 0u64;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        while let Some(chunk) = bytes.get(i..i + 16) {
            let (ends, high) = sse2_run_lanes(chunk);
            if ends != 0 {
                let lanes = ends.trailing_zeros();
                wide |= u64::from(high & ((1u32 << lanes) - 1));
                i += lanes as usize;
                self.pos = i;
                return (&bytes[start..i], wide == 0);
            }
            wide |= u64::from(high);
            i += 16;
        }
        while let Some(chunk) = bytes.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let w = u64::from_le_bytes(word);
            let end = crate::escape::string_run_ends(w);
            let not_printable = crate::escape::not_printable_ascii(w);
            if end != 0 {
                // Bit 7 of the first lane that ends the run; the lanes below it are the run's.
                let lanes_bits = end.trailing_zeros() - 7;
                wide |= not_printable & ((1u64 << lanes_bits) - 1);
                i += (lanes_bits / 8) as usize;
                self.pos = i;
                return (&bytes[start..i], wide == 0);
            }
            wide |= not_printable;
            i += 8;
        }
        let mut high = u8::from(wide != 0);
        while let Some(&b) = bytes.get(i) {
            if b == b'"' || b == b'\\' || b < 0x20 {
                break;
            }
            high |= u8::from(b >= 0x7f);
            i += 1;
        }
        self.pos = i;
        (&bytes[start..i], high == 0)
    }

    /// A string token (`pos` at its opening quote). A string without escapes is the input's
    /// own (validated) bytes; otherwise it is decoded into `out` (cleared first).
    #[inline]
    pub(crate) fn string_token(&mut self, out: &mut String) -> Result<StringToken<'a>, ParseError> {
        match self.printable_string() {
            Some(text) => Ok(StringToken::Raw {
                text,
                printable: true,
            }),
            None => self.string_token_slow(out),
        }
    }

    /// The string token at `pos` (its opening quote) if it is one run of printable ASCII
    /// (most are): nothing to check or decode, and neither profile escapes anything in it.
    /// Otherwise `None`, and `pos` has not moved. Returns in registers, where the full
    /// token's `Result` goes through memory.
    #[inline(always)]
    pub(crate) fn printable_string(&mut self) -> Option<&'a str> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        let start = self.pos + 1;
        let end = printable_string_end(self.bytes, start)?;
        self.pos = end + 1;
        // SAFETY: every byte of `start..end` is below 0x7F, and ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(&self.bytes[start..end]) })
    }

    /// [`Parser::string_token`] for the strings that are not one printable run: non-ASCII
    /// bytes to validate, escapes to decode, errors.
    #[inline(never)]
    pub(crate) fn string_token_slow(
        &mut self,
        out: &mut String,
    ) -> Result<StringToken<'a>, ParseError> {
        self.pos += 1;
        out.clear();
        let mut first = true;
        loop {
            let run_start = self.pos;
            let (run, printable) = self.plain_run();
            let checked = if printable {
                // SAFETY: every byte of `run` is below 0x7F, and ASCII is valid UTF-8.
                Ok(unsafe { std::str::from_utf8_unchecked(run) })
            } else {
                std::str::from_utf8(run)
            };
            let text = match checked {
                Ok(s) => s,
                Err(e) => {
                    return Err(
                        self.error_at(run_start + e.valid_up_to(), "invalid UTF-8 in a string")
                    )
                }
            };
            if first && self.peek() == Some(b'"') {
                self.pos += 1;
                return Ok(StringToken::Raw { text, printable });
            }
            first = false;
            out.push_str(text);
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(StringToken::Decoded);
                }
                Some(b'\\') => self.parse_escape(out)?,
                Some(b) => {
                    return Err(self.error(format!(
                        "control character 0x{b:02x} must be escaped in a string"
                    )))
                }
            }
        }
    }

    fn parse_escape(&mut self, out: &mut String) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 1;
                let unit = self.hex4()?;
                let c = match unit {
                    0xd800..=0xdbff => {
                        if self.bytes[self.pos..].starts_with(b"\\u") {
                            let low_at = self.pos;
                            self.pos += 2;
                            let low = self.hex4()?;
                            if !(0xdc00..=0xdfff).contains(&low) {
                                return Err(self.error_at(
                                    low_at,
                                    format!(
                                        "high surrogate \\u{unit:04x} not followed by a low surrogate"
                                    ),
                                ));
                            }
                            let code = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                            char::from_u32(code).unwrap_or('\u{fffd}')
                        } else {
                            return Err(self.error_at(
                                at,
                                format!("lone surrogate \\u{unit:04x} in a string"),
                            ));
                        }
                    }
                    0xdc00..=0xdfff => {
                        return Err(
                            self.error_at(at, format!("lone surrogate \\u{unit:04x} in a string"))
                        )
                    }
                    _ => char::from_u32(unit).unwrap_or('\u{fffd}'),
                };
                out.push(c);
                return Ok(());
            }
            None => return Err(self.error("unterminated string")),
            Some(_) => return Err(self.error_at(at, "invalid escape in a string")),
        };
        self.pos += 1;
        out.push(c);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.error("expected four hex digits after \\u")),
            };
            v = v * 16 + u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use crate::{parse, parse_with, Number, ParseOptions, Value};

    fn err(text: &[u8]) -> (usize, usize, String) {
        let e = parse(text).unwrap_err();
        (e.line, e.column, e.message)
    }

    #[test]
    fn parses_every_kind_of_value() {
        let v = parse(br#" {"a":[1,-0,1.0,-2.5e3,12345678901234567890,null,true,false,"x\u00e9\ud83d\ude00\n"]} "#)
            .unwrap();
        let Value::Object(m) = v else { panic!() };
        let Value::Array(items) = &m["a"] else {
            panic!()
        };
        assert_eq!(items[0], Value::Number(Number::Int(1)));
        assert_eq!(items[1], Value::Number(Number::Int(0)));
        assert_eq!(items[2], Value::Number(Number::Float(1.0)));
        assert_eq!(items[3], Value::Number(Number::Float(-2500.0)));
        assert_eq!(
            items[4],
            Value::Number(Number::BigInt("12345678901234567890".into()))
        );
        assert_eq!(items[8], Value::String("xé😀\n".into()));
        assert_eq!(
            parse(b"-9223372036854775808").unwrap(),
            Value::Number(Number::Int(i64::MIN))
        );
        assert_eq!(
            parse(b"-9223372036854775809").unwrap(),
            Value::Number(Number::BigInt("-9223372036854775809".into()))
        );
    }

    #[test]
    fn error_kinds_with_positions() {
        assert_eq!(err(b""), (1, 1, "unexpected end of input".into()));
        assert_eq!(
            err(b"{\"a\":1,\n \"a\":2}"),
            (2, 2, "duplicate key \"a\"".into())
        );
        assert_eq!(
            err(b"[\"\\ud800\"]"),
            (1, 3, "lone surrogate \\ud800 in a string".into())
        );
        assert_eq!(
            err(b"\"\\udc00\""),
            (1, 2, "lone surrogate \\udc00 in a string".into())
        );
        assert_eq!(
            err(b"\"\\ud800\\u0041\""),
            (
                1,
                8,
                "high surrogate \\ud800 not followed by a low surrogate".into()
            )
        );
        assert_eq!(
            err(b"[\"ab\xff\"]"),
            (1, 5, "invalid UTF-8 in a string".into())
        );
        assert_eq!(
            err(b"\"\xc3\xa9\xe2\x82\""),
            (1, 3, "invalid UTF-8 in a string".into())
        );
        assert_eq!(
            err(b"[1]\n x"),
            (2, 2, "trailing characters after the JSON value".into())
        );
        assert_eq!(err(b"[01]"), (1, 2, "leading zero in a number".into()));
        assert_eq!(err(b"-01"), (1, 2, "leading zero in a number".into()));
        assert_eq!(
            err(b"1."),
            (1, 3, "expected a digit after the decimal point".into())
        );
        assert_eq!(
            err(b"1e+"),
            (1, 4, "expected a digit in the exponent".into())
        );
        assert_eq!(err(b"-"), (1, 2, "expected a digit in a number".into()));
        assert_eq!(err(b"+1"), (1, 1, "unexpected character '+'".into()));
        assert_eq!(err(b"[1,]"), (1, 4, "unexpected character ']'".into()));
        assert_eq!(
            err(b"{\"a\" 1}"),
            (
                1,
                6,
                "unexpected character '1', expected ':' after an object key".into()
            )
        );
        assert_eq!(
            err(b"{\"a\":1,}"),
            (
                1,
                8,
                "unexpected character '}', expected a string key".into()
            )
        );
        assert_eq!(
            err(b"[1 2]"),
            (
                1,
                4,
                "unexpected character '2', expected ',' or ']' in an array".into()
            )
        );
        assert_eq!(
            err(b"{\"a\":1"),
            (
                1,
                7,
                "unexpected end of input, expected ',' or '}' in an object".into()
            )
        );
        assert_eq!(err(b"\"abc"), (1, 5, "unterminated string".into()));
        assert_eq!(
            err(b"\"a\tb\""),
            (
                1,
                3,
                "control character 0x09 must be escaped in a string".into()
            )
        );
        assert_eq!(err(b"\"\\x\""), (1, 2, "invalid escape in a string".into()));
        assert_eq!(
            err(b"\"\\u12g4\""),
            (1, 6, "expected four hex digits after \\u".into())
        );
        assert_eq!(
            err(b"tru"),
            (1, 1, "invalid literal, expected 'true'".into())
        );
        assert_eq!(
            err(b"[NaN]"),
            (1, 2, "NaN is not JSON (allowed only with allow_nan)".into())
        );
        assert_eq!(
            err(b"-Infinity"),
            (
                1,
                1,
                "-Infinity is not JSON (allowed only with allow_nan)".into()
            )
        );
        assert_eq!(
            err(b"1e400"),
            (1, 1, "number out of range of a double".into())
        );
        assert_eq!(
            err(b"\xef\xbb\xbf1"),
            (1, 1, "byte order mark is not allowed".into())
        );
        assert_eq!(err(b"\xff"), (1, 1, "unexpected byte 0xff".into()));
        // Columns count characters, not bytes.
        assert_eq!(
            err("{\"é€😀\":1 x}".as_bytes()),
            (
                1,
                10,
                "unexpected character 'x', expected ',' or '}' in an object".into()
            )
        );
    }

    #[test]
    fn depth_limit() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(deep(256).as_bytes()).is_ok());
        let e = parse(deep(257).as_bytes()).unwrap_err();
        assert_eq!(
            (e.line, e.column, e.message.as_str()),
            (1, 257, "nesting deeper than 256 levels")
        );
        let opts = ParseOptions {
            max_depth: 3,
            ..ParseOptions::default()
        };
        assert!(parse_with(b"[{\"a\":[]}]", &opts).is_ok());
        assert!(parse_with(b"[{\"a\":[[]]}]", &opts).is_err());
        // A million open brackets is an error, not a stack overflow.
        assert!(parse("[".repeat(1_000_000).as_bytes()).is_err());
    }

    #[test]
    fn nan_only_when_allowed() {
        let opts = ParseOptions {
            allow_nan: true,
            ..ParseOptions::default()
        };
        let v = parse_with(b"[NaN,Infinity,-Infinity,1e400]", &opts).unwrap();
        let Value::Array(items) = v else { panic!() };
        assert!(matches!(items[0], Value::Number(Number::Float(f)) if f.is_nan()));
        assert_eq!(items[1], Value::Number(Number::Float(f64::INFINITY)));
        assert_eq!(items[2], Value::Number(Number::Float(f64::NEG_INFINITY)));
        assert_eq!(items[3], Value::Number(Number::Float(f64::INFINITY)));
    }
}
