//! Raw UTF-8 in a string token escaped 16 chars at a time with AVX-512, for state files
//! written without `ensure_ascii` (profile python writes every non-ASCII char as `\uxxxx`).
//!
//! Why: in text of mixed scripts an ASCII char and a non-ASCII one alternate every two chars
//! or so, and the byte-at-a-time reading spent a third of `lockstep fingerprint`'s CPU on
//! the `utf8` shape of scripts/bench-fingerprint escaping them one by one, a branch on each
//! char's kind each time (docs/canonical-json.md, seventeenth round). Its strings are short
//! (four chars at the median) and hold escapes (`\n`, `\"`, `\u001f`): a block that stopped
//! at every escape took two or three chars and cost what it saved, so a block takes the
//! escapes that are their own canonical text along, byte by byte, as ASCII chars.
//!
//! How, for one block (the 64 bytes from where a char starts):
//! 1. Chars start at every byte that is not a continuation byte (`10xxxxxx`). The block
//!    takes the chars that start in its first 60 bytes, at most 16, up to the first byte it
//!    does not take: the token's closing quote, a raw control, or the backslash of an
//!    escape other than the ones a state written without `ensure_ascii` holds, which are
//!    their own canonical text: `\"` `\\` `\n` `\r` `\t` `\b` `\f`, and a lowercase `\u00xx`
//!    of a control without a short escape (`\/`, `\u0041`, `\u000a`, `\u00e9`, uppercase
//!    hex and errors are the scalar reading's). The ones taken are found with simdjson's
//!    carry trick for the bytes an odd run of backslashes escapes, and are never cut in two
//!    at the block's end. A key, whose decoded chars are wanted too, stops at every escape.
//! 2. Each char's four bytes from its start go to a 32-bit lane (a byte permute indexed by
//!    the starts, compressed), and are decoded there as the scalar reading decodes a word:
//!    the length from the first byte, the payload bits masked and closed up. A char is valid
//!    where the next char starts right after its length (so its continuation bytes are
//!    exactly the ones between), and its code point is not overlong, not a surrogate, not
//!    beyond U+10FFFF. The block ends before the first char that is not.
//! 3. Each char is written into a 16-byte slot: `\uXXXX` (and a second `\uXXXX` for an
//!    astral char's low surrogate; 0x7F as `\u007f`) from its hex digits, or the ASCII char
//!    itself; the slots' bytes that count are compressed together (`vpcompressb`) and
//!    stored.
//!
//! Whatever a block does not take (and the last 64 bytes of the text) is left to the scalar
//! reading, which writes and refuses exactly as before: a block's bytes are the scalar
//! reading's bytes for the same chars (tested against the general reading on generated
//! tokens, at every offset a block can start at).

/// Whether blocks can be escaped here: the CPU has AVX-512 F, BW, VBMI and VBMI2 (checked
/// once; the standard library keeps the answer).
#[inline(always)]
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
        && std::arch::is_x86_feature_detected!("avx512vbmi2");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Escapes the chars of `bytes` from `at` (where a char starts, inside a string token) into
/// `out`, block after block, while they are plain ASCII or valid non-ASCII UTF-8; with
/// `DECODE`, their UTF-8 is appended to `decoded` as well. Returns where it stopped: `at`
/// itself where no block could be taken (no AVX-512 here, fewer than 64 bytes left, or the
/// char at `at` is not one a block takes).
#[inline(always)]
pub(super) fn escape_chars<const DECODE: bool>(
    bytes: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    decoded: &mut Vec<u8>,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if available() {
        let mut i = at;
        while i + 64 <= bytes.len() {
            // SAFETY: the CPU has the features (checked just above); 64 bytes are there.
            let (taken, go_on) = unsafe { block::escape::<DECODE>(&bytes[i..i + 64], out) };
            if DECODE {
                decoded.extend_from_slice(&bytes[i..i + taken]);
            }
            i += taken;
            if !go_on {
                break;
            }
        }
        return i;
    }
    let _ = (bytes, out, decoded);
    at
}

/// The bytes a backslash escapes (bit `k` for byte `k`), in a block that starts outside
/// an escape: in each run of backslashes, every second one from the first is an escape's,
/// and escapes the byte after it (simdjson's carry trick: the runs that start on an odd
/// bit are the ones whose parity flips).
#[inline(always)]
fn escaped_bytes(backslash: u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let follows = backslash << 1;
    let odd_starts = backslash & !EVEN & !follows;
    let (even_run_ends, _) = odd_starts.overflowing_add(backslash);
    (EVEN ^ even_run_ends << 1) & follows
}

#[cfg(target_arch = "x86_64")]
mod block {
    use std::arch::x86_64::*;

    use super::escaped_bytes;

    /// The byte indexes 0 to 63, compressed by the start mask into the chars' starts.
    static IOTA: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut k = 0;
        while k < 64 {
            t[k] = k as u8;
            k += 1;
        }
        t
    };

    /// By a char's length (1 to 4; 0 for a first byte from 0xF8): the right shift that
    /// brings its byte-swapped word's bytes down to bit 0, the payload bits of each byte, and
    /// the smallest code point the length may encode (anything below is overlong).
    const SHIFT: [u32; 16] = [0, 24, 16, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    const PAYLOAD: [u32; 16] = [
        0,
        0x7f,
        0x1f3f,
        0x0f_3f3f,
        0x073f_3f3f,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    const MIN: [u32; 16] = [
        u32::MAX,
        0,
        0x80,
        0x800,
        0x1_0000,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];

    /// Within each 16-byte lane, the bytes of each 32-bit word reversed.
    static BSWAP32: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut k = 0;
        while k < 64 {
            t[k] = ((k & 0xc) + 3 - (k & 3)) as u8;
            k += 1;
        }
        t
    };

    /// For each 64-bit lane (a char's two UTF-16 units, the first in bits 16-31): the bit
    /// offsets of its eight hex digits, first digit first.
    const NIBBLE_SHIFTS: i64 = i64::from_le_bytes([28, 24, 20, 16, 12, 8, 4, 0]);

    /// The hex digits, in each 16-byte lane (indexed by a nibble).
    static HEX_LANES: [u8; 64] = {
        let hex = b"0123456789abcdef";
        let mut t = [0u8; 64];
        let mut k = 0;
        while k < 64 {
            t[k] = hex[k & 15];
            k += 1;
        }
        t
    };

    /// The fixed bytes of each char's 16-byte slot: `\u` before each unit's four digits.
    static SLOT_FIXED: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut s = 0;
        while s < 4 {
            t[16 * s] = b'\\';
            t[16 * s + 1] = b'u';
            t[16 * s + 6] = b'\\';
            t[16 * s + 7] = b'u';
            s += 1;
        }
        t
    };
    /// Bits 0, 1, 6 and 7 of each slot: where [`SLOT_FIXED`] goes.
    const SLOT_FIXED_MASK: u64 = 0x00c3_00c3_00c3_00c3;

    /// For the four slots of output vector `j` (chars `4j` to `4j + 3`), the byte each slot
    /// byte comes from in a two-source permute: the first source holds the hex digits of
    /// eight chars (chars 0-7 for `j` 0 and 1, 8-15 for 2 and 3), eight bytes a char; the
    /// second (from index 64) the chars' code points, four bytes a char, whose first byte is
    /// an ASCII char's. Slot bytes: 2-5 the first unit's digits, 8-11 the second's, 12 the
    /// ASCII char; the rest are overwritten or never stored.
    static SLOT_SOURCES: [[u8; 64]; 4] = {
        let mut t = [[0u8; 64]; 4];
        let mut j = 0;
        while j < 4 {
            let mut s = 0;
            while s < 4 {
                let digits = (8 * (4 * (j % 2) + s)) as u8;
                let mut d = 0;
                while d < 4 {
                    t[j][16 * s + 2 + d] = digits + d as u8;
                    t[j][16 * s + 8 + d] = digits + 4 + d as u8;
                    d += 1;
                }
                t[j][16 * s + 12] = 64 + (4 * (4 * j + s)) as u8;
                s += 1;
            }
            j += 1;
        }
        t
    };

    /// A block takes the chars that start before this byte: the last one's four bytes (and
    /// the byte after it, where the next char starts) are then in the block.
    const LIMIT: u32 = 60;

    /// Which bytes of a slot are stored, by the char's kind.
    const ASCII_SLOT: i32 = 1 << 12;
    const BMP_SLOT: i32 = 0x003f;
    const ASTRAL_SLOT: i32 = 0x0fff;

    #[inline(always)]
    unsafe fn load(table: &[u8; 64]) -> __m512i {
        // SAFETY: 64 bytes, unaligned load.
        unsafe { _mm512_loadu_si512(table.as_ptr().cast()) }
    }

    #[inline(always)]
    unsafe fn load_u32(table: &[u32; 16]) -> __m512i {
        // SAFETY: 64 bytes, unaligned load.
        unsafe { _mm512_loadu_si512(table.as_ptr().cast()) }
    }

    /// One block (see the module's text): the chars it takes from the start of `chunk` (64
    /// bytes, a char starting at its first) escaped into `out`. Returns the bytes taken, and
    /// whether the next block may take more (this one stopped only at its size, not at a
    /// byte or char it does not take).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW, VBMI and VBMI2.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2")]
    pub(super) unsafe fn escape<const DECODE: bool>(
        chunk: &[u8],
        out: &mut Vec<u8>,
    ) -> (usize, bool) {
        assert!(chunk.len() >= 64);
        // SAFETY: 64 bytes of `chunk` (checked above), unaligned.
        let v = unsafe { _mm512_loadu_si512(chunk.as_ptr().cast()) };
        let splat8 = |b: u8| _mm512_set1_epi8(b as i8);
        let splat32 = |w: u32| _mm512_set1_epi32(w as i32);

        // 1. The chars to take: raw ones, and (writing values, not decoding keys) escapes
        // that are their own canonical text, each byte of them as an ASCII char.
        let eq = |b: u8| _mm512_cmpeq_epi8_mask(v, splat8(b));
        let backslash = eq(b'\\');
        let quote = eq(b'"');
        let controls = _mm512_cmplt_epu8_mask(v, splat8(0x20));
        let mut not_plain = controls;
        let mut inside_escape = 0u64;
        let mut escapers = 0u64;
        if DECODE {
            not_plain |= quote | backslash;
        } else {
            let escaped = escaped_bytes(backslash);
            escapers = backslash & !escaped;
            // `\"` `\\` `\n` `\r` `\t` `\b` `\f`: verbatim.
            let short = quote | backslash | eq(b'n') | eq(b'r') | eq(b't') | eq(b'b') | eq(b'f');
            // `\u00xx` for a control with no short escape, in lowercase hex: verbatim.
            let zero = eq(b'0');
            let hex = _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, splat8(b'0')), splat8(9))
                | _mm512_cmple_epu8_mask(_mm512_sub_epi8(v, splat8(b'a')), splat8(5));
            let has_short = eq(b'8') | eq(b'9') | eq(b'a') | eq(b'c') | eq(b'd');
            let u = escaped & eq(b'u');
            let control_u = u
                & zero >> 1
                & zero >> 2
                & (zero | eq(b'1')) >> 3
                & hex >> 4
                & !(zero >> 3 & has_short >> 4);
            // Escapes of any other kind (`\/`, `\u` of anything else, errors) are the
            // scalar reading's: the block stops at their backslash.
            not_plain |= quote & !escaped | (escaped & !short & !control_u) >> 1;
            inside_escape =
                escaped | control_u << 1 | control_u << 2 | control_u << 3 | control_u << 4;
        }
        let starts = !_mm512_cmpeq_epi8_mask(_mm512_and_si512(v, splat8(0xc0)), splat8(0x80));
        // A stray continuation byte where a char should start: the scalar reading refuses it.
        if starts & 1 == 0 {
            return (0, false);
        }
        let limit = not_plain.trailing_zeros().min(LIMIT);
        let below_limit = (1u64 << limit) - 1;
        let wanted = (starts & below_limit).count_ones().min(16);
        if wanted == 0 {
            return (0, false);
        }
        let lanes_wanted: __mmask16 = ((1u32 << wanted) - 1) as __mmask16;

        // 2. Each char's four bytes in a lane, decoded.
        // SAFETY (the loads here and below): 64-byte tables, unaligned loads.
        let positions = _mm512_maskz_compress_epi8(starts, unsafe { load(&IOTA) });
        let first16 = _mm512_castsi512_si128(positions);
        let next16 = _mm_alignr_epi8::<1>(_mm512_extracti32x4_epi32::<1>(positions), first16);
        let start = _mm512_cvtepu8_epi32(first16);
        let next_start = _mm512_cvtepu8_epi32(next16);
        let index = _mm512_add_epi32(
            _mm512_mullo_epi32(start, splat32(0x0101_0101)),
            splat32(0x0302_0100),
        );
        let word = _mm512_permutexvar_epi8(index, v);
        let lead = _mm512_and_si512(word, splat32(0xff));
        let one = splat32(1);
        let mut len = one;
        len = _mm512_mask_add_epi32(len, _mm512_cmpge_epu32_mask(lead, splat32(0xc0)), len, one);
        len = _mm512_mask_add_epi32(len, _mm512_cmpge_epu32_mask(lead, splat32(0xe0)), len, one);
        len = _mm512_mask_add_epi32(len, _mm512_cmpge_epu32_mask(lead, splat32(0xf0)), len, one);
        // A first byte from 0xF8 starts nothing.
        len = _mm512_mask_mov_epi32(
            len,
            _mm512_cmpge_epu32_mask(lead, splat32(0xf8)),
            _mm512_setzero_si512(),
        );
        let swapped = _mm512_shuffle_epi8(word, unsafe { load(&BSWAP32) });
        let payload = _mm512_and_si512(
            _mm512_srlv_epi32(
                swapped,
                _mm512_permutexvar_epi32(len, unsafe { load_u32(&SHIFT) }),
            ),
            _mm512_permutexvar_epi32(len, unsafe { load_u32(&PAYLOAD) }),
        );
        let pairs = _mm512_or_si512(
            _mm512_and_si512(payload, splat32(0x003f_003f)),
            _mm512_srli_epi32::<2>(_mm512_and_si512(payload, splat32(0x3f00_3f00))),
        );
        let closed = _mm512_or_si512(
            _mm512_and_si512(pairs, splat32(0xfff)),
            _mm512_and_si512(_mm512_srli_epi32::<4>(pairs), splat32(0xff_f000)),
        );
        let code =
            _mm512_mask_mov_epi32(closed, _mm512_cmplt_epu32_mask(lead, splat32(0x80)), lead);
        // Written as itself; 0x7F is escaped as the chars from 0x80 are.
        let ascii = _mm512_cmplt_epu32_mask(lead, splat32(0x7f));
        let valid = _mm512_cmpeq_epi32_mask(_mm512_sub_epi32(next_start, start), len)
            & _mm512_cmpge_epu32_mask(
                code,
                _mm512_permutexvar_epi32(len, unsafe { load_u32(&MIN) }),
            )
            & _mm512_cmpge_epu32_mask(_mm512_sub_epi32(code, splat32(0xd800)), splat32(0x800))
            & _mm512_cmple_epu32_mask(code, splat32(0x10_ffff));
        let invalid = !valid & lanes_wanted;
        let mut taken = if invalid == 0 {
            wanted
        } else {
            invalid.trailing_zeros()
        };
        if taken == 0 {
            return (0, false);
        }
        let mut lanes: __mmask16 = ((1u32 << taken) - 1) as __mmask16;
        let mut taken_bytes = _mm512_mask_reduce_add_epi32(lanes, len) as usize;
        // Never an escape cut in two: the block ends before its backslash instead.
        if inside_escape >> taken_bytes & 1 == 1 {
            // The escape's backslash: the last one before (there is one: the block starts
            // outside an escape).
            let before = escapers & ((1u64 << taken_bytes) - 1);
            let Some(backslash) = 63u32.checked_sub(before.leading_zeros()) else {
                return (0, false);
            };
            taken_bytes = backslash as usize;
            taken = (starts & ((1u64 << taken_bytes) - 1)).count_ones();
            if taken == 0 {
                return (0, false);
            }
            lanes = ((1u32 << taken) - 1) as __mmask16;
        }

        // 3. The escapes: each char's UTF-16 units (the second only for an astral char) and
        // their hex digits, in 16-byte slots, compressed.
        let astral = _mm512_cmpge_epu32_mask(code, splat32(0x1_0000));
        let above = _mm512_sub_epi32(code, splat32(0x1_0000));
        let high = _mm512_mask_or_epi32(
            code,
            astral,
            _mm512_srli_epi32::<10>(above),
            splat32(0xd800),
        );
        let low = _mm512_or_si512(_mm512_and_si512(above, splat32(0x3ff)), splat32(0xdc00));
        let units = _mm512_or_si512(_mm512_slli_epi32::<16>(high), low);
        let digits_of = |half: __m256i| {
            let nibbles = _mm512_and_si512(
                _mm512_multishift_epi64_epi8(
                    _mm512_set1_epi64(NIBBLE_SHIFTS),
                    _mm512_cvtepu32_epi64(half),
                ),
                splat8(0x0f),
            );
            _mm512_shuffle_epi8(unsafe { load(&HEX_LANES) }, nibbles)
        };
        let digits = [
            digits_of(_mm512_castsi512_si256(units)),
            digits_of(_mm512_extracti64x4_epi64::<1>(units)),
        ];
        let slot_bits = _mm512_maskz_mov_epi32(
            lanes,
            _mm512_mask_mov_epi32(
                _mm512_mask_mov_epi32(
                    splat32(BMP_SLOT as u32),
                    astral,
                    splat32(ASTRAL_SLOT as u32),
                ),
                ascii,
                splat32(ASCII_SLOT as u32),
            ),
        );
        let mut masks = [0u64; 4];
        // SAFETY: 32 bytes into `masks`, unaligned.
        unsafe { _mm256_storeu_si256(masks.as_mut_ptr().cast(), _mm512_cvtepi32_epi16(slot_bits)) };
        let fixed = unsafe { load(&SLOT_FIXED) };
        out.reserve(4 * 64);
        let mut len_out = out.len();
        for (j, &mask) in masks.iter().enumerate() {
            if mask == 0 {
                break;
            }
            let slots = _mm512_mask_blend_epi8(
                SLOT_FIXED_MASK,
                _mm512_permutex2var_epi8(digits[j / 2], unsafe { load(&SLOT_SOURCES[j]) }, code),
                fixed,
            );
            // SAFETY: `out` has room for 4 x 64 bytes from its length (reserved above), and
            // each store advances by at most 48 of them.
            unsafe {
                _mm512_storeu_si512(
                    out.as_mut_ptr().add(len_out).cast(),
                    _mm512_maskz_compress_epi8(mask, slots),
                );
            }
            len_out += mask.count_ones() as usize;
        }
        // SAFETY: the bytes up to `len_out` were written just above.
        unsafe { out.set_len(len_out) };
        let go_on = taken == wanted && (wanted == 16 || limit == LIMIT);
        (taken_bytes, go_on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::escape::tests::{agrees_with_the_general_reading, STRING_PIECES};

    /// The escaped bytes by reading the backslashes one by one, from a byte outside an
    /// escape.
    fn escaped_one_by_one(backslash: u64) -> u64 {
        let (mut escaped, mut k) = (0, 0);
        while k < 63 {
            if backslash >> k & 1 == 1 {
                escaped |= 1 << (k + 1);
                k += 2;
            } else {
                k += 1;
            }
        }
        escaped
    }

    #[test]
    fn escaped_bytes_follow_an_odd_count_of_backslashes() {
        let mut state = 7u64;
        for round in 0..200_000u32 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Sparse, even and dense backslashes, in runs of every length.
            let density =
                [state >> 7 & state >> 31, state, state | state >> 13][round as usize % 3];
            let backslash = density & !(1 << 63);
            assert_eq!(
                escaped_bytes(backslash) & !(1 << 63),
                escaped_one_by_one(backslash) & !(1 << 63),
                "{backslash:064b}"
            );
        }
        for run in 1..63 {
            let backslash = (1u64 << run) - 1;
            assert_eq!(
                escaped_bytes(backslash),
                escaped_one_by_one(backslash),
                "{run}"
            );
        }
    }

    /// Long tokens (so that blocks are read) of every piece the scalar reading is tested
    /// with, and the escapes a block takes as its own text: `python_string_of_token` and
    /// `python_key_of_token` write, decode and refuse what the general reading does, at
    /// every offset a block can start at. On a CPU without the features, the same runs
    /// check the scalar reading, and the test says the blocks were not read.
    #[test]
    fn blocks_write_what_the_general_reading_writes() {
        let extra: &[&[u8]] = &[
            b"\\u000a",
            b"\\u000d",
            b"\\u0009",
            b"\\u000c",
            b"\\u000b",
            b"\\u0010",
            b"\\u001a",
            b"\\u0019",
            b"\\u001b",
            b"\\u001F",
            b"\\u0000",
            b"\\u01",
            b"\\u00",
            b"\\\\\\\\",
            b"\\\\\\",
            b"\xce\xa9",
            b"\xe6\x97\xa5",
            b"\xf0\x9f\x8e\xb2",
            b"\xf0\x90\x8d\x88",
            b"\xea\xb5\xad",
            b"\xc3\xb1h",
            b"\x7f",
        ];
        // The extra pieces eight times over: a token of 24 pieces drawn from the scalar
        // test's alone is almost always refused.
        let pieces: Vec<&[u8]> = STRING_PIECES
            .iter()
            .chain(extra.iter().cycle().take(8 * extra.len()))
            .copied()
            .collect();
        let after: &[u8] =
            b",\"k\":\"\xc3\xa9\\n\",1]}, \"more text for the block to load past the token end\"";
        let mut tokens = crate::test_tokens::Tokens::new(97, &pieces, 24, after);
        let (mut taken, mut refused, mut blocks) = (0, 0, 0);
        for _ in 0..200_000 {
            let token = tokens.next_token();
            if agrees_with_the_general_reading(&token) {
                taken += 1;
            } else {
                refused += 1;
            }
            let mut scratch = Vec::new();
            blocks +=
                usize::from(escape_chars::<false>(&token, 1, &mut scratch, &mut Vec::new()) > 1);
        }
        assert!(taken > 40_000 && refused > 40_000, "{taken} {refused}");
        if available() {
            assert!(blocks > 50_000, "{blocks} tokens began with a block");
        } else {
            eprintln!("no AVX-512 VBMI2 on this CPU: blocks are not read here, the scalar reading was tested");
        }
    }
}
