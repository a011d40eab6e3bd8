//! Float and integer layout for both profiles.
//!
//! Why our own: Rust's `{}` float printing breaks exact ties differently from Python on a small
//! share of doubles, and serde_json changed its float output in a patch release. We take only
//! the shortest round-trip *digits* from `zmij` (which agree with `ryu`, Python's `repr` and
//! ECMAScript's Number::toString) and lay them out ourselves, once per profile. Whatever
//! layout zmij picks, [`Decimal::of`] reads back just digits and exponent, so a change in its
//! layout cannot reach our bytes: the fast reading takes only texts of the shape zmij writes
//! today (at most 24 bytes, digits and one point, at most 17 significant digits, a short
//! exponent) and hands anything else to the general byte-by-byte reading. One shortcut: where
//! Python writes fixed notation (1e-4 <= |x| < 1e16) and zmij's text has the shape of the one
//! fixed layout of its digits (no leading or trailing zero, a point, a digit on each side),
//! the text is Python's already and is copied; any other shape is read back as above.

/// The shortest round-trip decimal digits of a finite, non-zero double's magnitude:
/// `value = 0.d1 d2 ... dn × 10^point`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decimal {
    digits: [u8; 17],
    len: usize,
    /// Decimal exponent: the position of the decimal point relative to the first digit.
    point: i32,
}

impl Decimal {
    /// Digits of `|f|`. `f` must be finite and non-zero.
    pub(crate) fn of(f: f64) -> Decimal {
        debug_assert!(f.is_finite() && f != 0.0);
        let mut buffer = zmij::Buffer::new();
        Decimal::read(buffer.format_finite(f.abs()).as_bytes())
    }

    /// Digits and decimal exponent of any layout of digits, point and exponent:
    /// 1234.0 / 12.34 / 0.001234 / 1e+30 / 1.234e+33 / 1.234e-07. The digits before and
    /// after the point are put side by side; the significant ones run from the first
    /// non-zero digit to the last; the point sits after the integer part's digits. A text
    /// not of the shape zmij writes goes to [`Decimal::read_general`].
    fn read(text: &[u8]) -> Decimal {
        if text.is_empty() || text.len() > 24 {
            return Decimal::read_general(text);
        }
        // An exponent is at most `e-324`: only the last five bytes can hold its `e`.
        let tail = text.len().saturating_sub(5);
        let (mantissa, exponent) = match text[tail..].iter().rposition(|&b| b == b'e') {
            Some(e) => {
                let body = &text[tail + e + 1..];
                let digits = body.strip_prefix(b"-").or(body.strip_prefix(b"+"));
                if !digits.unwrap_or(body).iter().all(u8::is_ascii_digit) || body.is_empty() {
                    return Decimal::read_general(text);
                }
                (&text[..tail + e], parse_exponent(body))
            }
            None => (text, 0),
        };
        let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
            Some(dot) => (&mantissa[..dot], &mantissa[dot + 1..]),
            None => (mantissa, &mantissa[..0]),
        };
        // At most 24 bytes of text with its point, so the two parts fit; the rest stays '0'.
        let mut all = [b'0'; 24];
        let n = int.len() + frac.len();
        all[..int.len()].copy_from_slice(int);
        all[int.len()..n].copy_from_slice(frac);
        let first = all[..n].iter().position(|&b| b != b'0').unwrap_or(0);
        let last = all[..n].iter().rposition(|&b| b != b'0').unwrap_or(first);
        // Another point, an `e` further in, a sign: not a layout of zmij's. Shortest
        // round-trip digits are at most 17.
        if !all_digits(&all) || last + 1 - first > 17 {
            return Decimal::read_general(text);
        }
        let len = last + 1 - first;
        let mut digits = [0u8; 17];
        digits[..len].copy_from_slice(&all[first..first + len]);
        Decimal {
            digits,
            len,
            point: int.len() as i32 - first as i32 + exponent,
        }
    }

    /// The reading of any text, byte by byte: digits up to the first 17 significant ones
    /// (trailing zeros dropped), the point where the `.` is, plus the exponent after the last
    /// `e`. Only texts [`Decimal::read`] does not take come here, which zmij does not write.
    #[cold]
    fn read_general(text: &[u8]) -> Decimal {
        let (mantissa, exponent) = match text.iter().rposition(|&b| b == b'e') {
            Some(e) => (&text[..e], parse_exponent(&text[e + 1..])),
            None => (text, 0),
        };
        let mut digits = [0u8; 17];
        let mut len = 0;
        let mut point = mantissa.len() as i32;
        let mut leading_zeros = 0i32;
        for (i, &b) in mantissa.iter().enumerate() {
            if b == b'.' {
                point = i as i32;
            } else if len == 0 && b == b'0' {
                leading_zeros += 1;
            } else if len < 17 {
                digits[len] = b;
                len += 1;
            }
        }
        while len > 1 && digits[len - 1] == b'0' {
            len -= 1;
        }
        Decimal {
            digits,
            len,
            point: point - leading_zeros + exponent,
        }
    }

    fn digits(&self) -> &[u8] {
        &self.digits[..self.len]
    }
}

/// Every byte of `all` an ASCII digit (the text's digits, then `'0'`s), three words at
/// once: in each lane, adding 0x46 sets bit 7 from `:` up and subtracting 0x30 sets it below
/// `0` (a carry or borrow into the next lane only follows a lane already flagged).
#[inline]
fn all_digits(all: &[u8; 24]) -> bool {
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&all[at..at + 8]);
        let w = u64::from_le_bytes(w);
        w | w.wrapping_add(0x4646_4646_4646_4646) | w.wrapping_sub(0x3030_3030_3030_3030)
    };
    (word(0) | word(8) | word(16)) & 0x8080_8080_8080_8080 == 0
}

fn parse_exponent(text: &[u8]) -> i32 {
    let (negative, body) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = body
        .iter()
        .fold(0i32, |acc, &b| acc * 10 + i32::from(b - b'0'));
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// A stack buffer large enough for any float in either profile (`-` + 17 digits + `0.` + 5
/// zeros, or the longest fixed forms: 17 digits padded to 21 places plus `.0`).
pub(crate) struct NumberBuffer {
    bytes: [u8; 40],
    len: usize,
}

impl NumberBuffer {
    pub(crate) fn new() -> Self {
        NumberBuffer {
            bytes: [0; 40],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        self.bytes[self.len] = b;
        self.len += 1;
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn zeros(&mut self, count: usize) {
        for _ in 0..count {
            self.push(b'0');
        }
    }

    fn exponent(&mut self, exponent: i32, min_digits: usize) {
        let magnitude = exponent.unsigned_abs();
        self.push(if exponent < 0 { b'-' } else { b'+' });
        let mut tmp = itoa::Buffer::new();
        let text = tmp.format(magnitude).as_bytes();
        self.zeros(min_digits.saturating_sub(text.len()));
        self.extend(text);
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Python's `float.__repr__` for a finite double: shortest digits; exponent form when the
/// value is below 1e-4 or at least 1e16 (`1e-05`, `1.5e+16`); otherwise fixed notation with
/// `.0` on whole numbers; `-0.0` keeps its sign.
pub(crate) fn python_float(f: f64, out: &mut NumberBuffer) {
    debug_assert!(f.is_finite());
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if f == 0.0 {
        out.extend(b"0.0");
        return;
    }
    // Where Python writes fixed notation, zmij writes it too: its text is taken as it is
    // once its shape shows it is that layout (reading the digits back costs more than
    // formatting them).
    let magnitude = f.abs();
    if (1e-4..1e16).contains(&magnitude) {
        let mut buffer = zmij::Buffer::new();
        let text = buffer.format_finite(magnitude).as_bytes();
        if is_python_fixed_layout(text) {
            out.extend(text);
            return;
        }
    }
    python_float_from_digits(f, out);
}

/// Whether `text` is a number's only fixed-notation layout with at least one digit after the
/// point: digits, a point, digits; no zero leading the integer part or trailing the
/// fraction, except a lone `0`; not zero. Of the shortest digits, that is the layout Python
/// gives a value of at least 1e-4 and below 1e16 (`0.0001`, `123.0`, `1000000000000000.0`).
fn is_python_fixed_layout(text: &[u8]) -> bool {
    let Some(dot) = text.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (int, frac) = (&text[..dot], &text[dot + 1..]);
    let (Some(&first), Some(&last)) = (int.first(), frac.last()) else {
        return false;
    };
    int.iter().chain(frac).all(u8::is_ascii_digit)
        && (first != b'0' || int.len() == 1)
        && (last != b'0' || frac.len() == 1)
        && !(first == b'0' && int.len() == 1 && frac == b"0")
}

/// [`python_float`] of a value that is finite and not zero, its sign written, laid out from
/// the digits and exponent read back from zmij's text (every value, whatever zmij's layout).
fn python_float_from_digits(f: f64, out: &mut NumberBuffer) {
    let d = Decimal::of(f);
    let digits = d.digits();
    let n = digits.len() as i32;
    let point = d.point;
    if point <= -4 || point > 16 {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend(&digits[1..]);
        }
        out.push(b'e');
        out.exponent(point - 1, 2);
    } else if point <= 0 {
        out.extend(b"0.");
        out.zeros((-point) as usize);
        out.extend(digits);
    } else if point < n {
        out.extend(&digits[..point as usize]);
        out.push(b'.');
        out.extend(&digits[point as usize..]);
    } else {
        out.extend(digits);
        out.zeros((point - n) as usize);
        out.extend(b".0");
    }
}

/// ECMAScript Number::toString (RFC 8785 section 3.2.2.3) for a finite double: fixed notation
/// for 1e-7 < |x| < 1e21, exponent form (`1e+21`, `1.5e-7`) otherwise, `0` for both zeros.
pub(crate) fn jcs_float(f: f64, out: &mut NumberBuffer) {
    debug_assert!(f.is_finite());
    if f == 0.0 {
        out.push(b'0');
        return;
    }
    if f < 0.0 {
        out.push(b'-');
    }
    let d = Decimal::of(f);
    let digits = d.digits();
    let k = digits.len() as i32;
    let n = d.point;
    if k <= n && n <= 21 {
        out.extend(digits);
        out.zeros((n - k) as usize);
    } else if 0 < n && n <= 21 {
        out.extend(&digits[..n as usize]);
        out.push(b'.');
        out.extend(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.extend(b"0.");
        out.zeros((-n) as usize);
        out.extend(digits);
    } else {
        out.push(digits[0]);
        if k > 1 {
            out.push(b'.');
            out.extend(&digits[1..]);
        }
        out.push(b'e');
        out.exponent(n - 1, 1);
    }
}

/// The double an `i64` becomes, if it becomes it exactly.
pub(crate) fn exact_f64_of_i64(i: i64) -> Option<f64> {
    let f = i as f64;
    // `f` may be 2^63, which does not fit i64: compare in i128.
    if f as i128 == i128::from(i) {
        Some(f)
    } else {
        None
    }
}

/// The double a decimal integer (optional `-`, digits) becomes, if it becomes it exactly.
pub(crate) fn exact_f64_of_decimal(text: &str) -> Option<f64> {
    let f: f64 = text.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if negative != (f < 0.0) && f != 0.0 {
        return None;
    }
    if f == 0.0 {
        return digits.bytes().all(|b| b == b'0').then_some(f);
    }
    // f = m × 2^e with m odd; the integer is exact iff it equals that product.
    let bits = f.abs().to_bits();
    let exponent_bits = ((bits >> 52) & 0x7ff) as i32;
    let mut mantissa = bits & ((1u64 << 52) - 1);
    if exponent_bits != 0 {
        mantissa |= 1u64 << 52;
    }
    let mut exponent = exponent_bits.max(1) - 1075;
    while mantissa & 1 == 0 {
        mantissa >>= 1;
        exponent += 1;
    }
    if exponent < 0 {
        // Not an integer: cannot equal a decimal integer.
        return None;
    }
    let big = BigUint::from_decimal(digits)?;
    let expected = BigUint::from_u64(mantissa).shl(exponent as u32);
    (big == expected).then_some(f)
}

/// Just enough unsigned bignum (little-endian base-2^32 limbs) to test integer exactness.
#[derive(Debug, PartialEq, Eq)]
struct BigUint(Vec<u32>);

impl BigUint {
    fn from_u64(v: u64) -> Self {
        let mut limbs = vec![v as u32, (v >> 32) as u32];
        trim(&mut limbs);
        BigUint(limbs)
    }

    fn from_decimal(digits: &str) -> Option<Self> {
        let mut limbs: Vec<u32> = Vec::new();
        for b in digits.bytes() {
            if !b.is_ascii_digit() {
                return None;
            }
            let mut carry = u64::from(b - b'0');
            for limb in limbs.iter_mut() {
                let v = u64::from(*limb) * 10 + carry;
                *limb = v as u32;
                carry = v >> 32;
            }
            if carry != 0 {
                limbs.push(carry as u32);
            }
        }
        trim(&mut limbs);
        Some(BigUint(limbs))
    }

    fn shl(self, bits: u32) -> Self {
        let words = (bits / 32) as usize;
        let shift = bits % 32;
        let mut limbs = vec![0u32; words];
        let mut carry = 0u32;
        for limb in self.0 {
            if shift == 0 {
                limbs.push(limb);
            } else {
                limbs.push((limb << shift) | carry);
                carry = limb >> (32 - shift);
            }
        }
        if carry != 0 {
            limbs.push(carry);
        }
        trim(&mut limbs);
        BigUint(limbs)
    }
}

fn trim(limbs: &mut Vec<u32>) {
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
}

#[cfg(test)]
mod tests {
    /// The first reading of zmij's text, byte by byte (kept to pin [`super::Decimal::read`]).
    fn read_byte_by_byte(text: &[u8]) -> (Vec<u8>, i32) {
        let (mantissa, exponent) = match text.iter().rposition(|&b| b == b'e') {
            Some(e) => (&text[..e], super::parse_exponent(&text[e + 1..])),
            None => (text, 0),
        };
        let mut digits = Vec::new();
        let mut point = mantissa.len() as i32;
        let mut leading_zeros = 0i32;
        for (i, &b) in mantissa.iter().enumerate() {
            if b == b'.' {
                point = i as i32;
            } else if digits.is_empty() && b == b'0' {
                leading_zeros += 1;
            } else if digits.len() < 17 {
                digits.push(b);
            }
        }
        while digits.len() > 1 && digits[digits.len() - 1] == b'0' {
            digits.pop();
        }
        (digits, point - leading_zeros + exponent)
    }

    /// The fixed layout taken from zmij's text is the one laid out from its digits, for
    /// random doubles of every magnitude and the powers of ten around both ends of the fixed
    /// range with their neighbours; and the shape test refuses every other layout.
    #[test]
    fn python_fixed_layout_matches_the_layout_from_digits() {
        let python = |f: f64| {
            let mut b = super::NumberBuffer::new();
            super::python_float(f, &mut b);
            b.as_bytes().to_vec()
        };
        let from_digits = |f: f64| {
            let mut b = super::NumberBuffer::new();
            if f.is_sign_negative() {
                b.push(b'-');
            }
            super::python_float_from_digits(f, &mut b);
            b.as_bytes().to_vec()
        };
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut fixed = 0;
        let mut check = |f: f64| {
            if !f.is_finite() || f == 0.0 {
                return;
            }
            fixed += usize::from((1e-4..1e16).contains(&f.abs()));
            assert_eq!(
                String::from_utf8(python(f)).unwrap(),
                String::from_utf8(from_digits(f)).unwrap(),
                "{f:e}"
            );
        };
        for i in 0..400_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            check(match i % 4 {
                0 => f64::from_bits(state),
                1 => {
                    f64::from_bits(state >> 12 | 0x3ff0_0000_0000_0000)
                        * 10f64.powi((i % 24) as i32 - 6)
                }
                2 => (state % 100_000_000) as f64 / [1.0, 10.0, 1000.0, 1e7][(i / 4 % 4) as usize],
                _ => -((state % (1 << 53)) as f64),
            });
        }
        for p in -6..=18 {
            let x = 10f64.powi(p);
            for f in [
                x,
                x.next_up(),
                x.next_down(),
                5.0 * x,
                9.999999999999999 * x,
            ] {
                check(f);
                check(-f);
            }
        }
        assert!(fixed > 200_000, "{fixed} values in the fixed range");
        for text in ["0.0001", "123.0", "1000000000000000.0", "0.5", "10.25"] {
            assert!(super::is_python_fixed_layout(text.as_bytes()), "{text}");
        }
        for text in [
            "1e-05", "1e+16", "123", "123.", ".5", "0123.5", "12.50", "0.0", "00.5", "1.5e3",
            "1,5", "-1.5", "", ".", "1.2.3", "1..5", "12.", "0.",
        ] {
            assert!(!super::is_python_fixed_layout(text.as_bytes()), "{text}");
        }
    }

    /// Every layout zmij writes, and the layouts it might write (`1234`, `1.5E+3` aside, as
    /// zmij never writes a capital), read the same as the byte-by-byte reading: random
    /// doubles of every magnitude, powers of ten and their neighbours, hand-made texts.
    #[test]
    fn decimal_reading_matches_the_byte_by_byte_reading() {
        let check = |text: &[u8]| {
            let d = super::Decimal::read(text);
            assert_eq!(
                (d.digits().to_vec(), d.point),
                read_byte_by_byte(text),
                "{}",
                String::from_utf8_lossy(text)
            );
        };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..400_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let f = match i % 4 {
                0 => f64::from_bits(state),
                1 => {
                    f64::from_bits(state >> 12 | 0x3ff0_0000_0000_0000)
                        * 10f64.powi((i % 700) as i32 - 350)
                }
                2 => (state % 1_000_000) as f64 / 1000.0,
                _ => {
                    10f64.powi((i % 640) as i32 - 320)
                        * if i % 8 == 3 { 1.0 } else { 1.0 + f64::EPSILON }
                }
            };
            if !f.is_finite() || f == 0.0 {
                continue;
            }
            let mut buffer = zmij::Buffer::new();
            check(buffer.format_finite(f.abs()).as_bytes());
        }
        for text in [
            "1234.0",
            "12.34",
            "0.001234",
            "1e+30",
            "1.234e+33",
            "1.234e-07",
            "1234",
            "0.5",
            "100.0",
            "1e-300",
            "5e-324",
            "1.7976931348623157e+308",
            "123456789012345680000.0",
            "0.000001",
            "9.999999999999999e+22",
            "1e0",
            "1.0e5",
            // Not zmij's shapes, which go to the general reading: more than 17 significant
            // digits, more than 24 bytes, an exponent too long for the last five bytes,
            // two points, an `e` with nothing after it, no text at all.
            "1.0000000000000000001",
            "12345678901234567890123",
            "0.00000000000000000000001234",
            "1e-0007",
            "1.5e+00300",
            "1.2.3",
            "1.5e",
            "1.5e-",
            "",
        ] {
            check(text.as_bytes());
        }
        check(&[b'1'; 70]);
        check(format!("{}.5e+3", "9".repeat(40)).as_bytes());
    }

    use super::*;

    fn py(f: f64) -> String {
        let mut b = NumberBuffer::new();
        python_float(f, &mut b);
        String::from_utf8(b.as_bytes().to_vec()).unwrap()
    }

    fn js(f: f64) -> String {
        let mut b = NumberBuffer::new();
        jcs_float(f, &mut b);
        String::from_utf8(b.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn python_layout_matches_repr() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (-1.5, "-1.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e16, "1.2345e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (123456.789, "123456.789"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (1e100, "1e+100"),
            (0.001234, "0.001234"),
        ];
        for &(f, want) in cases {
            assert_eq!(py(f), want, "{f:e}");
        }
    }

    #[test]
    fn jcs_layout_matches_ecmascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-6, "0.000001"),
            (4.5, "4.5"),
            (-4.5, "-4.5"),
            (1e30, "1e+30"),
            (0.002, "0.002"),
        ];
        for &(f, want) in cases {
            assert_eq!(js(f), want, "{f:e}");
        }
    }

    #[test]
    fn integer_exactness() {
        assert_eq!(exact_f64_of_i64(1 << 53), Some(9007199254740992.0));
        assert_eq!(exact_f64_of_i64((1 << 53) + 1), None);
        assert_eq!(exact_f64_of_i64(i64::MIN), Some(-9223372036854775808.0));
        assert_eq!(exact_f64_of_i64(i64::MAX), None);
        assert_eq!(
            exact_f64_of_decimal("9223372036854775808"),
            Some(9223372036854775808.0)
        );
        assert_eq!(exact_f64_of_decimal("9223372036854775809"), None);
        assert_eq!(
            exact_f64_of_decimal("-295147905179352825856"),
            Some(-295147905179352825856.0)
        );
        assert_eq!(exact_f64_of_decimal("295147905179352825857"), None);
        assert_eq!(exact_f64_of_decimal("1".repeat(400).as_str()), None);
    }
}
