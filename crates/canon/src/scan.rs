//! Byte scans shared by the parser, the one pass (`stream`) and the `Document` builder: where
//! a string's plain run ends, where a run of digits ends, and a string of ASCII and escapes
//! read in one go.
//!
//! Why apart from the parser: these are the loops every key, string and number of a state
//! goes through, written to answer in registers and a word (8 or 16 bytes) at a time; the
//! parser's own token functions keep the general reading and every error.

use crate::parser::Parser;
use crate::ParseOptions;

/// The first index at or after `i` that is not an ASCII digit; eight bytes at a time.
#[inline(always)]
pub(crate) fn digits_end(text: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = text.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // A byte is a digit when its high nibble is 3 and its low one at most 9 (adding 6
        // to it then stays below 16): a non-digit byte is non-zero here, with no carries.
        let high = (w & 0xf0f0_f0f0_f0f0_f0f0) ^ 0x3030_3030_3030_3030;
        let low = ((w & 0x0f0f_0f0f_0f0f_0f0f) + 0x0606_0606_0606_0606) & 0xf0f0_f0f0_f0f0_f0f0;
        let not_digit = high | low;
        if not_digit != 0 {
            return i + (not_digit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while matches!(text.get(i), Some(b'0'..=b'9')) {
        i += 1;
    }
    i
}

/// A string token at `open` made of printable ASCII and escapes, with at least one escape
/// (how `json.dump` writes a state: `ensure_ascii` turns every non-ASCII char into `\u`):
/// decoded into `out` (cleared first) in one scan, with where the text goes on after it and
/// whether the token is already its canonical text in profile python (every escape one
/// `json.dumps` writes itself: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, and a lowercase
/// `\u` of a control without a short form or of 0x7F and up, or a lowercase surrogate pair;
/// the rule of `stream::python_verbatim_end`). `None` for anything else, errors included: a raw
/// non-ASCII byte or control, an invalid escape, a lone surrogate, no escape at all; the
/// general reading ([`Parser::string_token_slow`]) takes those, with the same result.
pub(crate) fn ascii_escaped_string(
    bytes: &[u8],
    open: usize,
    options: ParseOptions,
    out: &mut String,
) -> Option<(usize, bool)> {
    out.clear();
    let mut p = Parser::new(bytes, options);
    p.pos = open + 1;
    let mut verbatim = true;
    let mut escaped = false;
    loop {
        let (run, printable) = p.plain_run();
        if !printable {
            return None;
        }
        let i = p.pos;
        // SAFETY: `plain_run` said every byte of `run` is below 0x7F: ASCII, valid UTF-8.
        unsafe { push_ascii(out, bytes, i - run.len(), run.len()) };
        match bytes.get(i)? {
            b'"' => return escaped.then_some((i + 1, verbatim)),
            b'\\' => escaped = true,
            _ => return None,
        }
        let kind = *bytes.get(i + 1)?;
        if kind == b'u' {
            // The common escape, first and without a branch on what it holds: a surrogate
            // pair (an astral char) or one unit, decided by arithmetic on both readings.
            let (unit, upper) = hex4_cased(bytes.get(i + 2..i + 6)?)?;
            let high = unit.wrapping_sub(0xd800) < 0x400;
            // What follows read as a second escape whatever it is (`&`, not `&&`: no branch).
            let next = bytes.get(i + 6..i + 12).unwrap_or(b"      ");
            let (low, low_flags) = hex4_flags([next[2], next[3], next[4], next[5]]);
            let low_upper = low_flags & 0x10 != 0;
            let paired = high
                & (next[0] == b'\\')
                & (next[1] == b'u')
                & (low_flags & 0xe0 == 0)
                & (low.wrapping_sub(0xdc00) < 0x400);
            // A high half with no low one after it, or a low one alone.
            if high != paired || unit.wrapping_sub(0xdc00) < 0x400 {
                return None;
            }
            // Meaningless (and wrapping) unless `paired`.
            let astral = (unit.wrapping_sub(0xd800) << 10)
                .wrapping_add(low.wrapping_sub(0xdc00))
                .wrapping_add(0x10000);
            let c = char::from_u32(if paired { astral } else { unit })?;
            push_char(out, c);
            // Python writes a pair as it is, lowercase, and one unit as it is when it is a
            // control without a short escape or 0x7F and up.
            let own = matches!(unit, 0x00..=0x07 | 0x0b | 0x0e..=0x1f | 0x7f..);
            verbatim &= !upper & !(paired & low_upper) & (paired | own);
            p.pos = i + 6 + 6 * usize::from(paired);
            continue;
        }
        let (c, short) = match kind {
            b'"' => ('"', true),
            b'\\' => ('\\', true),
            b'/' => ('/', false),
            b'b' => ('\u{8}', true),
            b'f' => ('\u{c}', true),
            b'n' => ('\n', true),
            b'r' => ('\r', true),
            b't' => ('\t', true),
            _ => return None,
        };
        out.push(c);
        verbatim &= short;
        p.pos = i + 2;
    }
}

/// Appends the UTF-8 of `c` with no branch on its length (random in non-Latin text): its four
/// possible encodings are computed, the right one picked by index, four bytes stored, and the
/// string cut back to the char's own.
#[inline(always)]
fn push_char(out: &mut String, c: char) {
    let c = u32::from(c);
    let len = 1 + usize::from(c >= 0x80) + usize::from(c >= 0x800) + usize::from(c >= 0x1_0000);
    let cont = |shift: u32| 0x80 | (c >> shift) & 0x3f;
    let encodings = [
        c,
        (0xc0 | c >> 6) | cont(0) << 8,
        (0xe0 | c >> 12) | cont(6) << 8 | cont(0) << 16,
        (0xf0 | c >> 18) | cont(12) << 8 | cont(6) << 16 | cont(0) << 24,
    ];
    let before = out.len();
    // SAFETY: the bytes past `before + len` are cut off again right below, and the first
    // `len` of the four are the UTF-8 of a char (`c` came from one): the string is valid
    // UTF-8 again before anything else can see it.
    let bytes = unsafe { out.as_mut_vec() };
    bytes.extend_from_slice(&encodings[len - 1].to_le_bytes());
    bytes.truncate(before + len);
}

/// Appends the `len` bytes of `bytes` at `at`: the runs between a key's escapes are a few
/// bytes of random length, so 8 bytes are stored when the text has them and the string cut
/// back, instead of a copy that branches on the length.
///
/// # Safety
/// The `len` bytes at `at` must be ASCII.
#[inline(always)]
unsafe fn push_ascii(out: &mut String, bytes: &[u8], at: usize, len: usize) {
    let before = out.len();
    // SAFETY: the caller's `len` bytes at `at` are ASCII (valid UTF-8), and whatever is
    // stored past them is cut off again right below, before anything else can see it.
    let out = unsafe { out.as_mut_vec() };
    match bytes.get(at..at + 8) {
        Some(word) if len <= 8 => {
            out.extend_from_slice(word);
            out.truncate(before + len);
        }
        _ => out.extend_from_slice(&bytes[at..at + len]),
    }
}

/// Each byte's value as a hex digit of either case, with 0x10 added for an uppercase one
/// (`A` to `F`); 0xFF for a byte that is not a hex digit.
static HEX_DIGITS: [u8; 256] = {
    let mut t = [0xff; 256];
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = d as u8;
        d += 1;
    }
    let mut d = 0;
    while d < 6 {
        t[b'a' as usize + d] = 10 + d as u8;
        t[b'A' as usize + d] = 0x10 | (10 + d as u8);
        d += 1;
    }
    t
};

/// Four hex digits, either case (a `\u` escape's, shared with the escaping of raw strings).
#[inline(always)]
pub(crate) fn hex4(digits: &[u8]) -> Option<u32> {
    hex4_cased(digits).map(|(unit, _)| unit)
}

/// [`hex4`], and whether any of the digits is an uppercase letter (Python writes lowercase).
/// From a table, with no branch on a digit: the digits of non-Latin text are random, and a
/// branch on each one's kind was a fifth of the mispredicted branches of the `escapes`
/// shape's glossary (cachegrind; docs/canonical-json.md, fourteenth round).
#[inline(always)]
pub(crate) fn hex4_cased(digits: &[u8]) -> Option<(u32, bool)> {
    let (unit, flags) = hex4_flags(<[u8; 4]>::try_from(digits).ok()?);
    (flags & 0xe0 == 0).then_some((unit, flags & 0x10 != 0))
}

/// The value of four bytes read as hex digits, and their table entries or'ed: 0x10 set where
/// one is an uppercase letter, bits 0xE0 where one is not a digit at all (the value is then
/// meaningless).
#[inline(always)]
fn hex4_flags(digits: [u8; 4]) -> (u32, u8) {
    let [a, b, c, d] = digits.map(|x| HEX_DIGITS[x as usize]);
    let unit = u32::from(a & 0xf) << 12
        | u32::from(b & 0xf) << 8
        | u32::from(c & 0xf) << 4
        | u32::from(d & 0xf);
    (unit, a | b | c | d)
}

/// Where the string whose text starts at `start` (after its opening quote) closes, if its
/// text is one run of printable ASCII (0x20 to 0x7E, neither `"` nor `\\`): the index of its
/// closing quote. `None` for anything else: an escape, a byte to validate or escape, a
/// control character, no closing quote. Most keys and short strings of a state close within
/// their first sixteen bytes.
#[inline(always)]
pub(crate) fn printable_string_end(bytes: &[u8], start: usize) -> Option<usize> {
    printable_run_end(bytes, start).filter(|&end| bytes[end] == b'"')
}

/// Where the run of plain string bytes from `start` ends (at a `"`, a `\\` or a control
/// character), if every byte of it is printable ASCII; `None` if a byte of 0x7F or above
/// comes first, or the text ends. Sixteen bytes at a time (eight without SSE2).
///
/// [`Parser::plain_run`]'s scan, but stopping at the first wide byte and answering in
/// registers: one generic scan for both measured 3.5% more instructions for the `Document`
/// parse of the bench state, whose every key and most strings come here.
#[inline(always)]
pub(crate) fn printable_run_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    while let Some(chunk) = bytes.get(i..i + 16) {
        let (ends, high) = sse2_run_lanes(chunk);
        if ends != 0 {
            let lanes = ends.trailing_zeros();
            let clean = high & ((1u32 << lanes) - 1) == 0;
            return clean.then_some(i + lanes as usize);
        }
        if high != 0 {
            return None;
        }
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
            let clean = not_printable & ((1u64 << lanes_bits) - 1) == 0;
            return clean.then_some(i + (lanes_bits / 8) as usize);
        }
        if not_printable != 0 {
            return None;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' | b'\\' | 0..=0x1f => return Some(i),
            0x7f.. => return None,
            _ => i += 1,
        }
    }
    None
}

/// For 16 bytes: one bit per byte that ends a run of plain string bytes (`"`, `\\` or a
/// control character below 0x20), and one per byte that is not printable ASCII (0x7F and
/// up). SSE2 is part of every x86-64 CPU, so this needs no run-time check; it does in one
/// step what [`crate::escape::string_run_ends`] does for 8 bytes in several, and most keys
/// and short strings of a state end within their first 16 bytes.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(crate) fn sse2_run_lanes(chunk: &[u8]) -> (u32, u32) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    assert!(chunk.len() >= 16);
    // SAFETY: the load reads 16 bytes, which `chunk` holds (checked above), with no
    // alignment requirement; the other intrinsics only need SSE2, which this code is only
    // compiled with (`cfg(target_feature = "sse2")`, part of every x86-64 target).
    let (ends, high) = unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x22));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x5c));
        // Unsigned `v <= 0x1f`: the smaller of the two is `v` itself.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        let ends = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control));
        // The sign bit is set from 0x80 up; 0x7F is the one byte below it to flag.
        let del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f));
        (ends, _mm_movemask_epi8(v) | _mm_movemask_epi8(del))
    };
    (ends as u32, high as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ascii_escaped_string` against the general reading on generated tokens: plain ASCII,
    /// every escape in both hex cases, surrogate pairs and lone or reversed halves, cut-off
    /// escapes, raw non-ASCII and controls, tokens not closed. Where it answers, the general
    /// reading gives the same chars and end, and the token is verbatim exactly when it is
    /// Python's own text of them; where it does not, the token has a raw byte outside
    /// printable ASCII, no escape, or no reading at all.
    #[test]
    fn escaped_ascii_strings_match_the_general_reading() {
        let pieces: &[&[u8]] = &[
            b"a",
            b"key-01",
            b" ",
            b"/",
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\b",
            b"\\f",
            b"\\n",
            b"\\r",
            b"\\t",
            b"\\x",
            b"\\u0000",
            b"\\u0007",
            b"\\u0008",
            b"\\u000b",
            b"\\u001f",
            b"\\u0041",
            b"\\u007f",
            b"\\u00e9",
            b"\\u00E9",
            b"\\u07ff",
            b"\\u0800",
            b"\\u4e2d",
            b"\\uffff",
            b"\\uFFFF",
            b"\\ud83d\\ude00",
            b"\\ud83d\\uDE00",
            b"\\uD83D\\ude00",
            b"\\udbff\\udfff",
            b"\\ud800\\udc00",
            b"\\ud800",
            b"\\udc00",
            b"\\ude00\\ud83d",
            b"\\ud83d\\u0041",
            b"\\ud83d\\n",
            b"\\u12",
            b"\\u12g4",
            b"\\u",
            b"\\",
            b"\xc3\xa9",
            b"\x7f",
            b"\x1f",
        ];
        let mut tokens = crate::test_tokens::Tokens::new(7, pieces, 8, b",1] ......");
        let (mut answered, mut verbatim_seen) = (0, 0);
        for _ in 0..200_000 {
            let token = tokens.next_token();
            let mut ours = String::from("left over");
            let got = ascii_escaped_string(&token, 0, ParseOptions::default(), &mut ours);
            let mut p = Parser::new(&token, ParseOptions::default());
            let mut scratch = String::new();
            let general = match p.string_token(&mut scratch) {
                Ok(crate::parser::StringToken::Raw { text, .. }) => Some(text.to_owned()),
                Ok(crate::parser::StringToken::Decoded) => Some(scratch),
                Err(_) => None,
            };
            match got {
                Some((end, verbatim)) => {
                    let general = general.expect("the general reading takes it too");
                    assert_eq!((ours.as_str(), end), (general.as_str(), p.pos), "{token:?}");
                    let mut python = Vec::new();
                    crate::escape::python_string(&general, &mut python);
                    assert_eq!(verbatim, python == token[..end], "{token:?}");
                    answered += 1;
                    verbatim_seen += usize::from(verbatim);
                }
                None => {
                    let body = &token[1..p.pos.max(1)];
                    let raw_outside = token.iter().any(|b| !(0x20..0x7f).contains(b));
                    assert!(
                        general.is_none() || raw_outside || !body.contains(&b'\\'),
                        "{token:?} was left to the general reading"
                    );
                }
            }
        }
        assert!(
            answered > 30_000 && verbatim_seen > 5_000,
            "{answered} {verbatim_seen}"
        );
    }

    /// Every byte at every place of four digits, against the standard library's reading.
    #[test]
    fn hex4_reads_every_digit_of_either_case_and_refuses_the_rest() {
        let reference = |digits: &[u8; 4]| -> Option<(u32, bool)> {
            let text = std::str::from_utf8(digits).ok()?;
            if !digits.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let unit = u32::from_str_radix(text, 16).ok()?;
            Some((unit, digits.iter().any(u8::is_ascii_uppercase)))
        };
        for base in [*b"0000", *b"ffff", *b"FFFF", *b"a9F0", *b"d83D"] {
            for place in 0..4 {
                for byte in 0..=255u8 {
                    let mut digits = base;
                    digits[place] = byte;
                    assert_eq!(hex4_cased(&digits), reference(&digits), "{digits:?}");
                    assert_eq!(hex4(&digits), reference(&digits).map(|(u, _)| u));
                }
            }
        }
        for unit in 0..=0xffffu32 {
            let lower = format!("{unit:04x}");
            let upper = format!("{unit:04X}");
            assert_eq!(hex4_cased(lower.as_bytes()), Some((unit, false)));
            let has_letter = upper.bytes().any(|b| b.is_ascii_uppercase());
            assert_eq!(hex4_cased(upper.as_bytes()), Some((unit, has_letter)));
        }
        assert_eq!(hex4(b"123"), None);
        assert_eq!(hex4(b"12345"), None);
    }
}
