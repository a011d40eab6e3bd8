//! A string token read 32 to 48 bytes at a time for [`python_verbatim_end`]: how far it is
//! already its own canonical text, or where it ends, decided from byte masks of a 64-byte
//! window instead of a branch per escape.
//!
//! Why: a state file written by `json.dump` has every non-ASCII char as a `\u` escape, so in
//! non-Latin text there is an escape every few bytes, and the byte-by-byte reading takes a
//! branch on the kind of each (random in such text: mispredicted about every other time).
//! That reading was the largest single cost of a fingerprint of such a file: 30% of the
//! instructions and half the mispredicted branches of the one pass on the `escapes` shape of
//! scripts/bench-fingerprint (cachegrind).
//!
//! How a window decides, with one bit per byte for each class of byte:
//! - escaped chars: the char after an odd run of backslashes (the window starts where a
//!   token element starts, so no run comes in from before it);
//! - where it may stop: the token's end (the first quote not escaped), else the first place
//!   from byte 32 on where an element starts (a char neither escaped nor a `\u` digit, or the
//!   first backslash of a run), but never between the two escapes of a surrogate pair;
//! - before that stop, every byte printable ASCII, every escaped char one of `"\nrtbf` or a
//!   `u` with four lowercase hex digits of a unit `json.dumps` writes so: 0x7F and up but not
//!   a surrogate, a control without a short escape, or a high surrogate right before a low
//!   one. Anything else there means the token is not verbatim (or not JSON), which the
//!   byte-by-byte reading also says (`None`), there or earlier.
//!
//! The masks take one AVX-512BW compare a class; on a CPU without it no window is read (with
//! SSE2 the masks cost what the windows saved: docs/canonical-json.md, twelfth round).
//!
//! A window that finds no place to stop (a run of 17 or more backslashes across byte 48) or
//! does not fit in the text leaves its first 16 bytes to the byte-by-byte reading.
//!
//! [`python_verbatim_end`]: super::tokens::python_verbatim_end

/// What one window says about the token from its first byte.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Window {
    /// The token ends at this many bytes (after its closing quote), verbatim.
    End(usize),
    /// This many bytes (32 to 48) are verbatim, and the token goes on after them.
    Verbatim(usize),
    /// The token is not its own canonical text.
    NotVerbatim,
    /// The byte-by-byte reading has to take the next 16 bytes.
    Unsure,
}

/// Whether windows can be decided here: the CPU has AVX-512BW (checked once; the answer is
/// kept by the standard library).
#[inline(always)]
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512bw");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// The window of `bytes` from `at`, where a token element starts.
#[inline(always)]
pub(super) fn window(bytes: &[u8], at: usize) -> Window {
    let Some(chunk) = bytes.get(at..at + 64) else {
        return Window::Unsure;
    };
    #[cfg(target_arch = "x86_64")]
    if available() {
        // SAFETY: the CPU has AVX-512BW (checked just above).
        return decide(&unsafe { Masks::of_avx512(chunk) });
    }
    let _ = chunk;
    Window::Unsure
}

/// One bit per byte of a 64-byte window (bit `k` for byte `k`), for each class of byte the
/// decision reads.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Masks {
    quote: u64,
    backslash: u64,
    u: u64,
    /// Below 0x20 or from 0x7F: never in a verbatim token.
    bad: u64,
    /// Lowercase hex digits; and among them `0`, `1`, `7`, `d`, `f`, `0`-`7`, `c`-`f`.
    hex: u64,
    zero: u64,
    one: u64,
    seven: u64,
    dee: u64,
    eff: u64,
    below_eight: u64,
    c_to_f: u64,
    /// The chars a short escape may have: `"` `\` `n` `r` `t` `b` `f`.
    short: u64,
    /// The last digit of `\u000X` where X has a short escape: `8` `9` `a` `c` `d`.
    short_control: u64,
}

impl Masks {
    /// The masks of a window from AVX-512BW compares: one (two for a range) a class for all
    /// 64 bytes. With SSE2 (16 bytes a compare, and the four quarters put together) the masks
    /// cost as much as the windows saved: measured, and left out.
    ///
    /// # Safety
    /// The CPU must have AVX-512BW.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    unsafe fn of_avx512(chunk: &[u8]) -> Masks {
        use std::arch::x86_64::{
            __m512i, _mm512_cmpeq_epi8_mask, _mm512_cmple_epu8_mask, _mm512_cmplt_epi8_mask,
            _mm512_loadu_si512, _mm512_set1_epi8, _mm512_sub_epi8,
        };
        assert!(chunk.len() >= 64);
        // SAFETY: the load reads 64 bytes within `chunk` (checked above), unaligned.
        let v: __m512i = unsafe { _mm512_loadu_si512(chunk.as_ptr().cast()) };
        let eq = |b: u8| _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b as i8));
        // Unsigned `lo <= x <= hi` as `x - lo <= hi - lo`.
        let within = |lo: u8, hi: u8| {
            _mm512_cmple_epu8_mask(
                _mm512_sub_epi8(v, _mm512_set1_epi8(lo as i8)),
                _mm512_set1_epi8((hi - lo) as i8),
            )
        };
        let (quote, backslash, eff) = (eq(b'"'), eq(b'\\'), eq(b'f'));
        Masks {
            quote,
            backslash,
            u: eq(b'u'),
            // Signed: from 0x80 a byte is negative, so below 0x20.
            bad: _mm512_cmplt_epi8_mask(v, _mm512_set1_epi8(0x20)) | eq(0x7f),
            hex: within(b'0', b'9') | within(b'a', b'f'),
            zero: eq(b'0'),
            one: eq(b'1'),
            seven: eq(b'7'),
            dee: eq(b'd'),
            eff,
            below_eight: within(b'0', b'7'),
            c_to_f: within(b'c', b'f'),
            short: quote | backslash | eff | eq(b'n') | eq(b'r') | eq(b't') | eq(b'b'),
            short_control: within(b'8', b'9') | eq(b'a') | within(b'c', b'd'),
        }
    }

    /// The masks of up to 64 bytes, byte by byte: the reference the AVX-512 masks are tested
    /// against, and what windows are decided from in the tests.
    #[cfg(test)]
    fn of_bytes(chunk: &[u8]) -> Masks {
        let mut m = Masks::default();
        for (k, &b) in chunk.iter().enumerate().take(64) {
            let bit = 1u64 << k;
            let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
            set(&mut m.quote, b == b'"');
            set(&mut m.backslash, b == b'\\');
            set(&mut m.u, b == b'u');
            set(&mut m.bad, !(0x20..0x7f).contains(&b));
            set(&mut m.hex, b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            set(&mut m.zero, b == b'0');
            set(&mut m.one, b == b'1');
            set(&mut m.seven, b == b'7');
            set(&mut m.dee, b == b'd');
            set(&mut m.eff, b == b'f');
            set(&mut m.below_eight, (b'0'..=b'7').contains(&b));
            set(&mut m.c_to_f, (b'c'..=b'f').contains(&b));
            set(&mut m.short, b"\"\\nrtbf".contains(&b));
            set(&mut m.short_control, b"89acd".contains(&b));
        }
        m
    }
}

/// Bytes 32 to 48 of a window: where a decided stretch may stop.
const STOPS: u64 = 0x0001_ffff_0000_0000;

/// The decision of one window from its masks (see the module's text).
#[inline(always)]
fn decide(m: &Masks) -> Window {
    // The char after an odd run of backslashes: a run's first backslash plus the run carries
    // into the byte after it; runs starting at even and odd bytes apart, so that the parity
    // of where the carry lands says the run's length (as simdjson finds escaped chars).
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let bs = m.backslash;
    let run_starts = bs & !(bs << 1);
    let from_even = bs.wrapping_add(run_starts & EVEN) & !bs;
    let from_odd = bs.wrapping_add(run_starts & !EVEN) & !bs;
    let escaped = (from_even & !EVEN) | (from_odd & EVEN);

    let u_escapes = escaped & m.u;
    let digits = u_escapes << 1 | u_escapes << 2 | u_escapes << 3 | u_escapes << 4;
    // Each `\u`'s unit, from its digits (masks shifted back onto the `u`).
    let at = |mask: u64, k: u32| mask >> k;
    let big = m.hex & !m.zero & !m.dee;
    let nonzero = m.hex & !m.zero;
    let from_eight = m.hex & !m.below_eight;
    let zero_zero = at(m.zero, 1) & at(m.zero, 2);
    let one_char = at(big, 1)
        | at(m.dee, 1) & at(m.below_eight, 2)
        | at(m.zero, 1) & at(nonzero, 2)
        | zero_zero
            & (at(from_eight, 3)
                | at(m.seven, 3) & at(m.eff, 4)
                | at(m.one, 3)
                | at(m.zero, 3) & !at(m.short_control, 4));
    let high = u_escapes & at(m.dee, 1) & at(from_eight & !m.c_to_f, 2);
    let low = u_escapes & at(m.dee, 1) & at(m.c_to_f, 2);
    let paired = high & low >> 6 | low & high << 6;

    // Where the decided stretch stops: the token's end, or where an element starts from
    // byte 32 (not at the second escape of a pair, which the first one's reading takes).
    let end = (m.quote & !escaped).trailing_zeros();
    let element_starts = (!bs & !escaped & !digits) | run_starts;
    let cut = (element_starts & !(high << 5) & STOPS).trailing_zeros();
    let (stop, ends) = if end < cut && end <= 48 {
        (end, true)
    } else if cut < 64 {
        (cut, false)
    } else {
        return Window::Unsure;
    };
    let before = (1u64 << stop) - 1;

    let u_before = u_escapes & before;
    let not_verbatim = m.bad & before != 0
        || escaped & !m.u & !m.short & before != 0
        || (u_before << 1 | u_before << 2 | u_before << 3 | u_before << 4) & !m.hex != 0
        || u_before & !(one_char | paired) != 0;
    if not_verbatim {
        Window::NotVerbatim
    } else if ends {
        Window::End(stop as usize + 1)
    } else {
        Window::Verbatim(stop as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tokens::{python_verbatim_end, python_verbatim_end_bytewise};
    use super::*;

    /// Pieces of string tokens: every kind of escape, verbatim or not, and raw bytes.
    const PIECES: &[&str] = &[
        "a",
        "Z",
        " ",
        "~",
        "0",
        "u",
        "d",
        "\\u00e9",
        "\\u00c9",
        "\\u0416",
        "\\u4e2d",
        "\\ud7ff",
        "\\ue000",
        "\\uffff",
        "\\u0100",
        "\\u1000",
        "\\ud83d\\ude00",
        "\\udbff\\udfff",
        "\\n",
        "\\\"",
        "\\\\",
        "\\t",
        "\\b",
        "\\f",
        "\\r",
        "\\u007f",
        "\\u0080",
        "\\u0000",
        "\\u001f",
        "\\u0010",
        "\\u000b",
        "\\u000e",
        "\\\\\\\\",
        "\\\\\\\"", // verbatim up to here
        "\\ud83d",
        "\\ude00",
        "\\ude00\\ud83d",
        "\\ud83d\\u0041",
        "\\u0008",
        "\\u0009",
        "\\u000a",
        "\\u000c",
        "\\u000d",
        "\\u0041",
        "\\u0020",
        "\\u007e",
        "\\u00E9",
        "\\u4E2D",
        "\\u00g9",
        "\\/",
        "\\x",
        "\\u12",
        "\\",
        "\x01",
        "\x1f",
        "\x7f",
        "é",
        "\"",
    ];
    const VERBATIM: usize = 34;

    fn token(rng: &mut u64, pieces: usize) -> Vec<u8> {
        let mut next = || {
            *rng = rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut t = b"\"".to_vec();
        for _ in 0..pieces {
            let k = next() as usize;
            // Mostly verbatim pieces, so that windows get past their first stretch.
            let piece = if k % 8 == 0 {
                PIECES[k / 8 % PIECES.len()]
            } else {
                PIECES[k / 8 % VERBATIM]
            };
            t.extend_from_slice(piece.as_bytes());
        }
        t.extend_from_slice(b"\",\"a tail long enough for the last window of the token to fit\"");
        t
    }

    /// With windows, every token's end (or `None`) is the byte-by-byte reading's, on tokens
    /// of every escape, verbatim or not, at every length.
    #[test]
    fn windows_end_tokens_where_the_bytewise_reading_does() {
        let mut rng = 31;
        let mut decided = [0usize; 4];
        for round in 0..300_000 {
            let t = token(&mut rng, round % 40);
            let expected = python_verbatim_end_bytewise(&t, 0);
            assert_eq!(
                python_verbatim_end(&t, 0),
                expected,
                "{}",
                String::from_utf8_lossy(&t)
            );
            decided[match decide(&Masks::of_bytes(&t[1..])) {
                Window::End(_) => 0,
                Window::Verbatim(_) => 1,
                Window::NotVerbatim => 2,
                Window::Unsure => 3,
            }] += 1;
        }
        // Every decision was taken many times (not a test that passes by never deciding).
        assert!(decided[..3].iter().all(|&n| n > 20_000), "{decided:?}");
    }

    /// A decision from the byte-by-byte masks agrees with the byte-by-byte reading wherever
    /// it decides (the decision itself, apart from the AVX-512 masks), including at every
    /// start inside a token where an element starts.
    #[test]
    fn decisions_agree_with_the_bytewise_reading() {
        let mut rng = 7;
        for round in 0..100_000 {
            let t = token(&mut rng, round % 30);
            let expected = python_verbatim_end_bytewise(&t, 0);
            match decide(&Masks::of_bytes(&t[1..])) {
                Window::End(n) => assert_eq!(Some(1 + n), expected),
                Window::Verbatim(n) => assert!(expected.is_none_or(|e| 1 + n < e)),
                Window::NotVerbatim => {
                    assert_eq!(expected, None, "{}", String::from_utf8_lossy(&t))
                }
                Window::Unsure => {}
            }
        }
    }

    /// The AVX-512 masks are the byte-by-byte ones, for every byte value in every lane; on a
    /// CPU without AVX-512BW (where no window is read) it says so.
    #[test]
    fn avx512_masks_are_the_bytewise_masks() {
        if !available() {
            eprintln!("no AVX-512BW on this CPU: windows are not read here, masks not tested");
            return;
        }
        let text =
            b"ab\\u00e9\"0d7ux1z 0123456789abcdef\\n\\\\fc89 rtb~\x01\x7f\xe9 uuuu dddd 77 padding";
        let base: [u8; 64] = text[..64].try_into().unwrap();
        for b in 0..=255u8 {
            for lane in 0..64 {
                let mut chunk = base;
                chunk[lane] = b;
                // SAFETY: the CPU has AVX-512BW (checked above).
                let wide = unsafe { Masks::of_avx512(&chunk) };
                assert_eq!(wide, Masks::of_bytes(&chunk), "{b:#x} at {lane}");
            }
        }
    }
}
