//! String escaping for both profiles: runs of plain bytes are copied whole, 8 bytes are
//! checked at a time.

use crate::sink::Out;

mod utf8_wide;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes Python's `ensure_ascii` writes as themselves: printable ASCII except `"` and `\`.
const fn python_plain_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0x20;
    while b <= 0x7e {
        t[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    t
}

/// Bytes RFC 8785 writes as themselves: everything but controls, `"` and `\`.
const fn jcs_plain_table() -> [bool; 256] {
    let mut t = [true; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = false;
        b += 1;
    }
    t[b'"' as usize] = false;
    t[b'\\' as usize] = false;
    t
}

static PYTHON_PLAIN: [bool; 256] = python_plain_table();
static JCS_PLAIN: [bool; 256] = jcs_plain_table();

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `w` is zero (exact as an "any" test).
#[inline]
fn has_zero_byte(w: u64) -> bool {
    w.wrapping_sub(ONES) & !w & HIGHS != 0
}

/// Whether any of the 8 bytes in `w` is not plain for Python: below 0x20, 0x7F or above,
/// `"` or `\`. Exact as an "any" test (a carry can only start at a byte that is itself
/// flagged).
#[inline]
fn python_word_needs_escape(w: u64) -> bool {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    let del_or_high = (w.wrapping_add(ONES) | w) & HIGHS;
    below_space | del_or_high != 0
        || has_zero_byte(w ^ (ONES * 0x22))
        || has_zero_byte(w ^ (ONES * 0x5c))
}

/// As [`python_word_needs_escape`] for JCS: below 0x20, `"` or `\`.
#[inline]
fn jcs_word_needs_escape(w: u64) -> bool {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    below_space != 0 || has_zero_byte(w ^ (ONES * 0x22)) || has_zero_byte(w ^ (ONES * 0x5c))
}

/// Bit 7 of each of the 8 byte lanes of `w` (little-endian) that ends a parser's run of
/// plain string bytes: `"`, `\\` or a control character below 0x20. Exact up to and
/// including the first flagged lane (a borrow only flags lanes above a flagged one), which is
/// all the parser reads: `trailing_zeros` finds where the run ends.
#[inline]
pub(crate) fn string_run_ends(w: u64) -> u64 {
    let quote = w ^ (ONES * 0x22);
    let backslash = w ^ (ONES * 0x5c);
    let below_space = w.wrapping_sub(ONES * 0x20) & !w;
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (below_space | quote | backslash) & HIGHS
}

/// Bit 7 of each lane of `w` that is 0x7F or above (not printable ASCII); exact up to the
/// first flagged lane, as [`string_run_ends`] (a carry only flags lanes above a flagged one).
#[inline]
pub(crate) fn not_printable_ascii(w: u64) -> u64 {
    (w.wrapping_add(ONES) | w) & HIGHS
}

/// The first index at or after `i` worth looking at byte by byte: skips whole 8-byte words
/// that need no escape.
#[inline(always)]
fn skip_plain_words(bytes: &[u8], mut i: usize, needs_escape: impl Fn(u64) -> bool) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if needs_escape(u64::from_le_bytes(word)) {
            break;
        }
        i += 8;
    }
    i
}

/// The longest string [`short_plain`] checks without a loop.
const SHORT: usize = 16;

/// The 8 bytes at `at` as a little-endian word.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Whether a string of at most [`SHORT`] bytes needs no escaping, from at most two word
/// tests: the words are built from the string's own bytes only (overlapping or repeated
/// ones), and `needs_escape` is an "any byte" test, so repeating a byte cannot change it.
#[inline(always)]
fn short_plain(bytes: &[u8], needs_escape: impl Fn(u64) -> bool) -> bool {
    let n = bytes.len();
    debug_assert!(n <= SHORT);
    let word = if n >= 8 {
        if needs_escape(word_at(bytes, n - 8)) {
            return false;
        }
        word_at(bytes, 0)
    } else if n >= 4 {
        let mut lo = [0u8; 4];
        let mut hi = [0u8; 4];
        lo.copy_from_slice(&bytes[..4]);
        hi.copy_from_slice(&bytes[n - 4..]);
        u64::from(u32::from_le_bytes(lo)) | u64::from(u32::from_le_bytes(hi)) << 32
    } else if n > 0 {
        // Bytes 0, n/2 and n-1 are every byte of a string of 1 to 3 bytes.
        let (a, b, c) = (bytes[0], bytes[n / 2], bytes[n - 1]);
        u64::from_le_bytes([a, b, c, a, a, a, a, a])
    } else {
        return true;
    };
    !needs_escape(word)
}

fn short_escape(b: u8) -> Option<&'static [u8]> {
    Some(match b {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\n' => b"\\n",
        b'\r' => b"\\r",
        b'\t' => b"\\t",
        0x08 => b"\\b",
        0x0c => b"\\f",
        _ => return None,
    })
}

/// The two lowercase hex digits of each byte value.
static HEX_PAIRS: [[u8; 2]; 256] = {
    let mut t = [[0; 2]; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = [HEX[b >> 4], HEX[b & 0xf]];
        b += 1;
    }
    t
};

#[inline]
fn u_escape(unit: u16) -> [u8; 6] {
    let [hi, lo] = unit.to_be_bytes();
    let ([a, b], [c, d]) = (HEX_PAIRS[hi as usize], HEX_PAIRS[lo as usize]);
    [b'\\', b'u', a, b, c, d]
}

/// `"..."` as Python's `json.dumps(ensure_ascii=True)` writes it: everything outside printable
/// ASCII as lowercase `\uxxxx` (astral chars as a surrogate pair), 0x7F included.
#[inline]
pub(crate) fn python_string<O: Out>(s: &str, out: &mut O) {
    plain_or(s, out, python_word_needs_escape, python_string_escaped);
}

/// A short string that needs no escaping between its quotes, anything else by `escaped`.
#[inline(always)]
fn plain_or<O: Out>(
    s: &str,
    out: &mut O,
    needs_escape: impl Fn(u64) -> bool,
    escaped: impl Fn(&str, &mut O),
) {
    let bytes = s.as_bytes();
    if bytes.len() <= SHORT && short_plain(bytes, needs_escape) {
        out.quoted(bytes);
    } else {
        escaped(s, out);
    }
}

/// [`python_string`] of a long string or one with something to escape.
#[inline(never)]
fn python_string_escaped<O: Out>(s: &str, out: &mut O) {
    let bytes = s.as_bytes();
    out.byte(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        i = skip_plain_words(bytes, i, python_word_needs_escape);
        while i < bytes.len() && PYTHON_PLAIN[bytes[i] as usize] {
            i += 1;
        }
        let Some(&b) = bytes.get(i) else { break };
        if start < i {
            out.put(&bytes[start..i]);
        }
        if let Some(esc) = short_escape(b) {
            out.put(esc);
            i += 1;
        } else if b < 0x80 {
            out.put(&u_escape(u16::from(b)));
            i += 1;
        } else {
            // `s` is valid UTF-8, so this char decodes; escape it as UTF-16 units.
            let c = s[i..].chars().next().unwrap_or('\u{fffd}');
            let mut units = [0u16; 2];
            let mut escaped = [0u8; 12];
            let encoded = c.encode_utf16(&mut units);
            for (k, &unit) in encoded.iter().enumerate() {
                escaped[k * 6..k * 6 + 6].copy_from_slice(&u_escape(unit));
            }
            out.put(&escaped[..encoded.len() * 6]);
            i += c.len_utf8();
        }
        start = i;
    }
    if start < bytes.len() {
        out.put(&bytes[start..]);
    }
    out.byte(b'"');
}

/// Profile python: the canonical text of the string token at `open` (its opening quote),
/// written to `out` in the scan that reads the token, without decoding it into a `String`
/// first; where the text goes on after it. For a state file written without `ensure_ascii`
/// (raw UTF-8), where every non-ASCII char has to be escaped here. Takes raw UTF-8 (checked
/// as `str::from_utf8` checks it), 0x7F, and every escape JSON allows; a high surrogate
/// escape only with a low one after it. `None` for anything else, errors included (a raw
/// control, a byte that is not UTF-8, a bad or lone escape, no closing quote), with `out`
/// as it was: the general reading takes those, with its error.
pub(crate) fn python_string_of_token(
    bytes: &[u8],
    open: usize,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let mark = out.len();
    let end = python_token_into::<false>(bytes, open, out, &mut Vec::new());
    if end.is_none() {
        out.truncate(mark);
    }
    end
}

/// As [`python_string_of_token`] for an object's key, which is also wanted decoded (its
/// order is its chars'): the key's UTF-8 appended to `decoded` in the same scan. `None`,
/// with `out` and `decoded` as they were, where [`python_string_of_token`] says `None`.
pub(crate) fn python_key_of_token(
    bytes: &[u8],
    open: usize,
    out: &mut Vec<u8>,
    decoded: &mut Vec<u8>,
) -> Option<usize> {
    let (mark, decoded_mark) = (out.len(), decoded.len());
    let end = python_token_into::<true>(bytes, open, out, decoded);
    if end.is_none() {
        out.truncate(mark);
        decoded.truncate(decoded_mark);
    }
    end
}

/// The scan of [`python_string_of_token`]; with `DECODE`, the string's UTF-8 goes to
/// `decoded` as well (compiled out without it, so values pay nothing for keys).
fn python_token_into<const DECODE: bool>(
    bytes: &[u8],
    open: usize,
    out: &mut Vec<u8>,
    decoded: &mut Vec<u8>,
) -> Option<usize> {
    out.push(b'"');
    // Up to 16 chars at a time where the CPU can, from the first.
    let mut i = utf8_wide::escape_chars::<DECODE>(bytes, open + 1, out, decoded);
    loop {
        let b = *bytes.get(i)?;
        if PYTHON_PLAIN[b as usize] {
            // A run is scanned only where one starts (in non-Latin text most chars come
            // one after another, each to escape).
            let start = i;
            i = skip_plain_words(bytes, i + 1, python_word_needs_escape);
            while i < bytes.len() && PYTHON_PLAIN[bytes[i] as usize] {
                i += 1;
            }
            // Most runs between escaped chars are a few bytes: one fixed-size move (the
            // bytes beyond the run cut off again) instead of a call to copy them.
            match bytes.get(start..start + 16) {
                Some(chunk) if i - start <= 16 => {
                    let len = out.len();
                    let mut word = [0u8; 16];
                    word.copy_from_slice(chunk);
                    out.extend_from_slice(&word);
                    out.truncate(len + i - start);
                }
                _ => out.extend_from_slice(&bytes[start..i]),
            }
            if DECODE {
                decoded.extend_from_slice(&bytes[start..i]);
            }
            continue;
        }
        // Room for the longest thing one step writes (a surrogate pair's two escapes).
        out.reserve(12);
        match b {
            b'"' => {
                out.push(b'"');
                return Some(i + 1);
            }
            b'\\' => {
                let e = *bytes.get(i + 1)?;
                let unit = match e {
                    b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => {
                        out.extend_from_slice(&bytes[i..i + 2]);
                        if DECODE {
                            decoded.push(match e {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 0x08,
                                b'f' => 0x0c,
                                quote_or_backslash => quote_or_backslash,
                            });
                        }
                        i += 2;
                        continue;
                    }
                    b'/' => {
                        out.push(b'/');
                        if DECODE {
                            decoded.push(b'/');
                        }
                        i += 2;
                        continue;
                    }
                    b'u' => crate::scan::hex4(bytes.get(i + 2..i + 6)?)?,
                    _ => return None,
                };
                i += 6;
                match unit {
                    0xd800..=0xdbff => {
                        let low = match bytes.get(i..i + 6)? {
                            [b'\\', b'u', digits @ ..] => crate::scan::hex4(digits)?,
                            _ => return None,
                        };
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return None;
                        }
                        out.extend_from_slice(&u_escape(unit as u16));
                        out.extend_from_slice(&u_escape(low as u16));
                        if DECODE {
                            let c = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                            push_char(decoded, c);
                        }
                        i += 6;
                    }
                    0xdc00..=0xdfff => return None,
                    _ => {
                        // A char below 0x80 as the writer writes it: short, itself, or `\u`.
                        if DECODE {
                            push_char(decoded, unit);
                        }
                        let unit = unit as u16;
                        match u8::try_from(unit).map(|c| (c, short_escape(c))) {
                            Ok((_, Some(short))) => out.extend_from_slice(short),
                            Ok((c, None)) if PYTHON_PLAIN[c as usize] => out.push(c),
                            _ => out.extend_from_slice(&u_escape(unit)),
                        }
                    }
                }
            }
            0x7f => {
                out.extend_from_slice(b"\\u007f");
                if DECODE {
                    decoded.push(0x7f);
                }
                i += 1;
            }
            0x80.. => {
                // Up to 16 chars at a time where the CPU can.
                let after = utf8_wide::escape_chars::<DECODE>(bytes, i, out, decoded);
                if after > i {
                    i = after;
                    continue;
                }
                // In text of mixed scripts a char's length and whether it is astral are
                // random: both are taken without a branch where four bytes are left.
                let word = bytes.get(i..i + 4).map(|w| [w[0], w[1], w[2], w[3]]);
                let (c, len) = match word {
                    Some(word) => utf8_char_of_word(u32::from_le_bytes(word))?,
                    None => utf8_char(&bytes[i..])?,
                };
                if DECODE {
                    match word {
                        Some(word) => {
                            let at = decoded.len();
                            decoded.extend_from_slice(&word);
                            decoded.truncate(at + len);
                        }
                        None => decoded.extend_from_slice(&bytes[i..i + len]),
                    }
                }
                // The char's escape, or a surrogate pair's two: both written, the second
                // cut off again for a char of the basic plane.
                let astral = c >= 0x1_0000;
                let above = c.wrapping_sub(0x1_0000);
                let first = if astral { 0xd800 | above >> 10 } else { c };
                out.extend_from_slice(&u_escape(first as u16));
                out.extend_from_slice(&u_escape((0xdc00 | (above & 0x3ff)) as u16));
                out.truncate(out.len() - 6 * usize::from(!astral));
                i += len;
            }
            // A raw control: not JSON.
            _ => return None,
        }
    }
}

/// Appends the UTF-8 of `c`, a char (not a surrogate: the caller checked).
#[inline]
fn push_char(decoded: &mut Vec<u8>, c: u32) {
    let c = char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER);
    decoded.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
}

/// The length of the UTF-8 form a byte starts, for the first bytes of two- to four-byte
/// forms that can be valid (0xC2 to 0xF4); 0 for every other byte.
static UTF8_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0xc2;
    while b <= 0xf4 {
        t[b] = if b <= 0xdf {
            2
        } else if b <= 0xef {
            3
        } else {
            4
        };
        b += 1;
    }
    t
};

/// By the form's length: the shift that brings its bytes (first byte highest) down to bit 0,
/// the bits of each byte that carry the code point, the continuation bytes' marks (one
/// `10xxxxxx` a byte, in the little-endian word from bit 8), and the smallest code point the
/// length may encode (anything below is an overlong form).
const UTF8_SHIFT: [u32; 5] = [0, 24, 16, 8, 0];
const UTF8_PAYLOAD: [u32; 5] = [0, 0x7f, 0x1f3f, 0x0f_3f3f, 0x073f_3f3f];
const UTF8_CONT_MASK: [u32; 5] = [0, 0, 0xc0, 0xc0c0, 0xc0_c0c0];
const UTF8_CONT_MARK: [u32; 5] = [0, 0, 0x80, 0x8080, 0x80_8080];
const UTF8_MIN: [u32; 5] = [u32::MAX, u32::MAX, 0x80, 0x800, 0x1_0000];

/// As [`utf8_char`], from the four bytes at the char as a little-endian word (what lies past
/// the char is ignored), with no branch on the length: the payload bits of each byte are
/// masked, their 6-bit fields closed up (pairs of bytes, then the two 12-bit halves), and
/// the form checked as `str::from_utf8` checks it.
#[inline(always)]
fn utf8_char_of_word(w: u32) -> Option<(u32, usize)> {
    let len = UTF8_LEN[(w & 0xff) as usize] as usize;
    let v = (w.swap_bytes() >> UTF8_SHIFT[len]) & UTF8_PAYLOAD[len];
    let pairs = (v & 0x003f_003f) | (v & 0x3f00_3f00) >> 2;
    let c = (pairs & 0xfff) | (pairs >> 4) & 0xff_f000;
    let valid = ((w >> 8) & UTF8_CONT_MASK[len] == UTF8_CONT_MARK[len])
        & (c >= UTF8_MIN[len])
        & (c.wrapping_sub(0xd800) >= 0x800)
        & (c <= 0x10_ffff);
    valid.then_some((c, len))
}

/// The char a UTF-8 sequence at the start of `bytes` (first byte 0x80 or above) encodes,
/// and its length; `None` where `str::from_utf8` would refuse it: a stray continuation
/// byte, an overlong form, a surrogate, beyond U+10FFFF, a sequence cut short.
#[inline(always)]
fn utf8_char(bytes: &[u8]) -> Option<(u32, usize)> {
    let cont = |k: usize| match bytes.get(k) {
        Some(&c) if c & 0xc0 == 0x80 => Some(u32::from(c & 0x3f)),
        _ => None,
    };
    let b0 = bytes[0];
    match b0 {
        0xc2..=0xdf => Some((u32::from(b0 & 0x1f) << 6 | cont(1)?, 2)),
        0xe0..=0xef => {
            let c = u32::from(b0 & 0x0f) << 12 | cont(1)? << 6 | cont(2)?;
            // Overlong below U+0800; UTF-16 surrogates are not chars.
            (c >= 0x800 && !(0xd800..=0xdfff).contains(&c)).then_some((c, 3))
        }
        0xf0..=0xf4 => {
            let c = u32::from(b0 & 0x07) << 18 | cont(1)? << 12 | cont(2)? << 6 | cont(3)?;
            (0x10000..=0x10ffff).contains(&c).then_some((c, 4))
        }
        _ => None,
    }
}

/// `"..."` as RFC 8785 section 3.2.2.2 writes it: only `"`, `\` and controls escaped
/// (`\b \t \n \f \r` short, the rest as lowercase `\u00xx`), everything else as raw UTF-8.
#[inline]
pub(crate) fn jcs_string<O: Out>(s: &str, out: &mut O) {
    plain_or(s, out, jcs_word_needs_escape, jcs_string_escaped);
}

/// [`jcs_string`] of a long string or one with something to escape.
#[inline(never)]
fn jcs_string_escaped<O: Out>(s: &str, out: &mut O) {
    let bytes = s.as_bytes();
    out.byte(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        i = skip_plain_words(bytes, i, jcs_word_needs_escape);
        while i < bytes.len() && JCS_PLAIN[bytes[i] as usize] {
            i += 1;
        }
        let Some(&b) = bytes.get(i) else { break };
        if start < i {
            out.put(&bytes[start..i]);
        }
        match short_escape(b) {
            Some(esc) => out.put(esc),
            None => out.put(&u_escape(u16::from(b))),
        }
        i += 1;
        start = i;
    }
    if start < bytes.len() {
        out.put(&bytes[start..]);
    }
    out.byte(b'"');
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::sink::Sink;

    fn py(s: &str) -> String {
        let mut v = Vec::new();
        let mut sink = Sink::new(&mut v);
        python_string(s, &mut sink);
        sink.finish().unwrap();
        String::from_utf8(v).unwrap()
    }

    fn js(s: &str) -> String {
        let mut v = Vec::new();
        let mut sink = Sink::new(&mut v);
        jcs_string(s, &mut sink);
        sink.finish().unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn word_tests_agree_with_byte_tables() {
        // Every byte value in every lane, among plain filler.
        for lane in 0..8 {
            for b in 0..=255u8 {
                let mut word = [b'a'; 8];
                word[lane] = b;
                let w = u64::from_le_bytes(word);
                assert_eq!(
                    python_word_needs_escape(w),
                    !PYTHON_PLAIN[b as usize],
                    "{b:#x}@{lane}"
                );
                assert_eq!(
                    jcs_word_needs_escape(w),
                    !JCS_PLAIN[b as usize],
                    "{b:#x}@{lane}"
                );
            }
        }
        // Long strings go through the word loop: escapes at every offset.
        for at in 0..20 {
            let mut s: String = "abcdefghijklmnopqrst".into();
            s.insert(at, '"');
            s.insert(at + 1, 'é');
            let py_want = format!("\"{}\\\"\\u00e9{}\"", &s[..at], &s[at + 3..]);
            assert_eq!(py(&s), py_want);
            let js_want = format!("\"{}\\\"é{}\"", &s[..at], &s[at + 3..]);
            assert_eq!(js(&s), js_want);
        }
    }

    /// The parser's word masks: the first flagged lane is the first byte that ends a run
    /// (`"`, `\\`, below 0x20) or is not printable ASCII (0x7F and up), for every byte value
    /// in every lane, after lanes of every other byte value.
    #[test]
    fn run_masks_flag_the_first_byte_exactly() {
        let ends = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
        let first = |mask: u64| (mask != 0).then(|| mask.trailing_zeros() / 8);
        for lane in 0..8usize {
            for b in 0..=255u8 {
                for filler in 0..=255u8 {
                    if ends(filler) {
                        continue;
                    }
                    let mut word = [filler; 8];
                    word[lane] = b;
                    let w = u64::from_le_bytes(word);
                    let want_end = word.iter().position(|&x| ends(x)).map(|i| i as u32);
                    assert_eq!(first(string_run_ends(w)), want_end, "{word:x?}");
                    let want_wide = word.iter().position(|&x| x >= 0x7f).map(|i| i as u32);
                    assert_eq!(first(not_printable_ascii(w)), want_wide, "{word:x?}");
                }
            }
        }
        // Words of several special bytes at once (borrows and carries between lanes).
        let edges = [
            0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0xfe,
            0xff,
        ];
        let mut state = 16u64;
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut word = [0u8; 8];
            for (k, byte) in word.iter_mut().enumerate() {
                *byte = edges[((state >> (k * 4 + 3)) % edges.len() as u64) as usize];
            }
            let w = u64::from_le_bytes(word);
            let want_end = word.iter().position(|&x| ends(x)).map(|i| i as u32);
            assert_eq!(first(string_run_ends(w)), want_end, "{word:x?}");
            let want_wide = word.iter().position(|&x| x >= 0x7f).map(|i| i as u32);
            assert_eq!(first(not_printable_ascii(w)), want_wide, "{word:x?}");
        }
    }

    #[test]
    fn python_escapes() {
        assert_eq!(py("plain"), r#""plain""#);
        assert_eq!(py("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(py("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(py("\u{0}\u{1f}\u{7f}"), r#""\u0000\u001f\u007f""#);
        assert_eq!(py("é€\u{2028}\u{feff}"), r#""\u00e9\u20ac\u2028\ufeff""#);
        assert_eq!(py("😀"), r#""\ud83d\ude00""#);
        assert_eq!(py("/"), r#""/""#);
    }

    /// The general reading of a string token (the parser's, then `python_string`), or
    /// `None` where it refuses the token.
    fn general_python_token(token: &[u8]) -> Option<(Vec<u8>, usize)> {
        general_python_key(token).map(|(out, _, end)| (out, end))
    }

    /// As [`general_python_token`], with the string decoded (a key's UTF-8).
    pub(super) fn general_python_key(token: &[u8]) -> Option<(Vec<u8>, String, usize)> {
        let mut p = crate::parser::Parser::new(token, crate::ParseOptions::default());
        let mut scratch = String::new();
        let mut out = Vec::new();
        let decoded = match p.string_token(&mut scratch).ok()? {
            crate::parser::StringToken::Raw { text, .. } => {
                python_string(text, &mut out);
                text.to_owned()
            }
            crate::parser::StringToken::Decoded => {
                python_string(&scratch, &mut out);
                scratch
            }
        };
        Some((out, decoded, p.pos))
    }

    /// The word reading of a UTF-8 form against the byte reading: every char after 0x7F,
    /// with what follows it of every kind, and every first byte from 0x80 with each of the
    /// bytes at the edges of the continuation range (and outside it) after it.
    #[test]
    fn utf8_words_read_as_the_bytes_do() {
        for c in ('\u{80}'..=char::MAX).map(u32::from) {
            let c = char::from_u32(c).unwrap();
            for after in [0x00, 0x22, 0x80, 0xbf, 0xe9, 0xff] {
                let mut word = [after; 4];
                c.encode_utf8(&mut word);
                let got = utf8_char_of_word(u32::from_le_bytes(word));
                assert_eq!(got, Some((u32::from(c), c.len_utf8())), "{c:?} {after:#x}");
            }
        }
        let edges = [
            0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xf4, 0xff,
        ];
        for b0 in 0x80..=0xffu8 {
            for &b1 in &edges {
                for &b2 in &edges {
                    for &b3 in &edges {
                        let word = [b0, b1, b2, b3];
                        let got = utf8_char_of_word(u32::from_le_bytes(word));
                        assert_eq!(got, utf8_char(&word), "{word:x?}");
                    }
                }
            }
        }
    }

    /// `python_string_of_token` and `python_key_of_token` on `token` against the general
    /// reading: `true` where all three take it (same bytes, same end, the key's chars
    /// decoded), `false` where all three refuse it (and the two left their outputs as they
    /// were); a panic naming the token for anything else.
    pub(super) fn agrees_with_the_general_reading(token: &[u8]) -> bool {
        let mut ours = b"prefix".to_vec();
        let got = python_string_of_token(token, 0, &mut ours);
        let (mut key, mut decoded) = (b"prefix".to_vec(), b"key".to_vec());
        let got_key = python_key_of_token(token, 0, &mut key, &mut decoded);
        match (got, got_key, general_python_key(token)) {
            (Some(end), Some(key_end), Some((bytes, string, pos))) => {
                assert_eq!((&ours[6..], end), (&bytes[..], pos), "{token:?}");
                assert_eq!((&key[6..], key_end), (&bytes[..], pos), "{token:?}");
                assert_eq!(&decoded[3..], string.as_bytes(), "{token:?}");
                true
            }
            (None, None, None) => {
                assert_eq!(ours, b"prefix", "{token:?}");
                assert_eq!((&key[..], &decoded[..]), (&b"prefix"[..], &b"key"[..]));
                false
            }
            (got, got_key, want) => panic!("{token:?}: {got:?} {got_key:?} against {want:?}"),
        }
    }

    /// Every piece a string token can hold (see the test below), to draw tokens from.
    pub(super) const STRING_PIECES: &[&[u8]] = &[
        b"a",
        b"plain text",
        b"0123456789abcdefghij",
        b" ",
        b"~",
        b"/",
        b"\x7f",
        b"\\\"",
        b"\\\\",
        b"\\/",
        b"\\b",
        b"\\f",
        b"\\n",
        b"\\r",
        b"\\t",
        b"\\x",
        b"\\",
        b"\\u0000",
        b"\\u001f",
        b"\\u0020",
        b"\\u0022",
        b"\\u005c",
        b"\\u002F",
        b"\\u0041",
        b"\\u007e",
        b"\\u007f",
        b"\\u0080",
        b"\\u00e9",
        b"\\u00E9",
        b"\\u0008",
        b"\\u000A",
        b"\\u20ac",
        b"\\uffff",
        b"\\uFEFF",
        b"\\ud83d\\ude00",
        b"\\uD83D\\uDE00",
        b"\\udbff\\udfff",
        b"\\ud800\\udc00",
        b"\\ud800",
        b"\\udc00",
        b"\\ud83d\\u0041",
        b"\\u12",
        b"\\u12g4",
        b"\xc2\x80",
        b"\xdf\xbf",
        b"\xc3\xa9",
        b"\xe0\xa0\x80",
        b"\xef\xbf\xbf",
        b"\xe2\x82\xac",
        b"\xe2\x80\xa8",
        b"\xef\xbb\xbf",
        b"\xed\x9f\xbf",
        b"\xee\x80\x80",
        b"\xf0\x90\x80\x80",
        b"\xf0\x9f\x98\x80",
        b"\xf4\x8f\xbf\xbf",
        b"\xc0\xaf",
        b"\xc1\xbf",
        b"\xe0\x9f\xbf",
        b"\xed\xa0\x80",
        b"\xed\xbf\xbf",
        b"\xf0\x8f\xbf\xbf",
        b"\xf4\x90\x80\x80",
        b"\xf5\x80\x80\x80",
        b"\xff",
        b"\x80",
        b"\xbf",
        b"\xc3",
        b"\xe2\x82",
        b"\xf0\x9f\x98",
        b"\xc3\x28",
        b"\x00",
        b"\x1f",
        b"\n",
        b"\t",
    ];

    /// `python_string_of_token` against the general reading on generated tokens of every
    /// piece a string can hold: plain runs, every escape in both hex cases, surrogate pairs
    /// and lone halves, raw UTF-8 of every length and its bounds, bytes that are not UTF-8
    /// (overlong forms, surrogates, beyond U+10FFFF, stray and missing continuation bytes),
    /// raw controls, 0x7F, and tokens cut short. Same bytes and end, or both refuse.
    #[test]
    fn string_of_token_matches_the_general_reading() {
        let pieces = STRING_PIECES;
        // What follows: from none to more than the 8 bytes the raw-char reading loads.
        let mut tokens = crate::test_tokens::Tokens::new(31, pieces, 12, b",1] ...........,");
        let (mut taken, mut refused) = (0, 0);
        for _ in 0..300_000 {
            if agrees_with_the_general_reading(&tokens.next_token()) {
                taken += 1;
            } else {
                refused += 1;
            }
        }
        assert!(taken > 30_000 && refused > 30_000, "{taken} {refused}");
        // Every char there is, raw, in a token.
        for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
            let token = format!("\"{c}\"");
            let mut ours = Vec::new();
            let got = python_string_of_token(token.as_bytes(), 0, &mut ours);
            let want = general_python_token(token.as_bytes());
            assert_eq!(got.map(|end| (ours, end)), want, "{c:?}");
        }
    }

    #[test]
    fn jcs_escapes() {
        assert_eq!(js("a\"b\\c/"), r#""a\"b\\c/""#);
        assert_eq!(js("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(js("\u{0}\u{f}\u{1f}"), r#""\u0000\u000f\u001f""#);
        assert_eq!(js("\u{7f}é€😀\u{2028}"), "\"\u{7f}é€😀\u{2028}\"");
    }

    /// The two-character escapes both specifications share.
    fn reference_short(c: char) -> Option<&'static str> {
        Some(match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            _ => return None,
        })
    }

    /// Char-by-char escapers, straight from the two specifications, for the sweep below.
    fn py_reference(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match (reference_short(c), c) {
                (Some(esc), _) => out.push_str(esc),
                (None, ' '..='~') => out.push(c),
                (None, _) => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
            }
        }
        out.push('"');
        out
    }

    fn js_reference(s: &str) -> String {
        let mut out = String::from("\"");
        for c in s.chars() {
            match (reference_short(c), c) {
                (Some(esc), _) => out.push_str(esc),
                (None, '\u{0}'..='\u{1f}') => out.push_str(&format!("\\u{:04x}", c as u32)),
                (None, _) => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// The short-string path (two word tests, one copy) and the general loop, at every
    /// length around the cut, with one char of every kind at every position, written both
    /// into a `Vec` and through the sink (each has its own `quoted`).
    #[test]
    fn every_length_and_position_matches_the_reference() {
        let specials = [
            '"', '\\', '\n', '\u{1}', '\u{1f}', '\u{7f}', 'é', '€', '😀', '~', ' ',
        ];
        for len in 0..=(SHORT + 9) {
            let plain: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let mut cases = vec![plain.clone()];
            for at in 0..len {
                for &c in &specials {
                    let mut s: String = plain.chars().take(at).collect();
                    s.push(c);
                    s.extend(plain.chars().skip(at + 1));
                    cases.push(s);
                }
            }
            for s in cases {
                assert_eq!(py(&s), py_reference(&s), "{s:?}");
                assert_eq!(js(&s), js_reference(&s), "{s:?}");
                let (mut pv, mut jv) = (b"x".to_vec(), b"x".to_vec());
                python_string(&s, &mut pv);
                jcs_string(&s, &mut jv);
                assert_eq!(pv[1..], *py_reference(&s).as_bytes(), "{s:?}");
                assert_eq!(jv[1..], *js_reference(&s).as_bytes(), "{s:?}");
            }
        }
    }
}
