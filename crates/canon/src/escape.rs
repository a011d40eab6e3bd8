//! String escaping for both profiles: runs of plain bytes are copied whole, 8 bytes are
//! checked at a time.

use crate::sink::Out;

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

fn u_escape(unit: u16) -> [u8; 6] {
    [
        b'\\',
        b'u',
        HEX[(unit >> 12) as usize & 0xf],
        HEX[(unit >> 8) as usize & 0xf],
        HEX[(unit >> 4) as usize & 0xf],
        HEX[unit as usize & 0xf],
    ]
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
mod tests {
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
