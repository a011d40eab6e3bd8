//! The streaming canonical writer: one walk over a [`Value`] per profile, tokens written
//! straight into the caller's `io::Write`, no intermediate `String`.
//!
//! The JSON Pointer of a value without a canonical form is only built when there is an error:
//! each level prepends its own segment while the error unwinds, so the happy path pays nothing.

use std::io;

use crate::escape::{jcs_string, python_string};
use crate::number_format::{
    exact_f64_of_decimal, exact_f64_of_i64, jcs_float, python_float, NumberBuffer,
};
use crate::sink::{Out, Sink};
use crate::{Error, Map, Number, Profile, Value, WriteError};

/// Deepest nesting the writer accepts. Recursion stays far from the stack limit, even on a
/// 2 MiB test thread; Python's own `json.dumps` stops near 1000 levels too.
pub const MAX_WRITE_DEPTH: usize = 1024;

/// Writes the canonical bytes of `value` in `profile` to `out`.
///
/// On an error `out` has received a prefix of the document; discard it.
pub fn write_value<W: io::Write>(
    value: &Value,
    profile: Profile,
    out: &mut W,
) -> Result<(), Error> {
    let mut sink = Sink::new(out);
    walk(value, profile, &mut sink).map_err(|e| Error::Value(*e))?;
    sink.finish()?;
    Ok(())
}

/// Appends the canonical bytes of `value` in `profile` to `out`, the same bytes as
/// [`write_value`] but straight into the `Vec`: no staging buffer to set up, which is most
/// of the cost of writing a small value (a member of an info, say).
///
/// On an error `out` has received a prefix of the document after its old contents.
pub fn append_value(value: &Value, profile: Profile, out: &mut Vec<u8>) -> Result<(), WriteError> {
    walk(value, profile, out).map_err(|e| *e)
}

fn walk<O: Out>(value: &Value, profile: Profile, out: &mut O) -> Walked {
    let mut walk = Walk {
        out,
        allow_nan: profile == Profile::Python,
    };
    match profile {
        Profile::Python | Profile::PythonStrict => walk.python(value, 0),
        Profile::Jcs => walk.jcs(value, 0),
    }
}

struct Walk<'o, O: Out> {
    out: &'o mut O,
    allow_nan: bool,
}

/// What one step of the walk returns. The error is boxed so the happy path returns a single
/// register through every level of recursion.
pub(crate) type Walked = Result<(), Box<WriteError>>;

#[cold]
pub(crate) fn refuse(message: impl Into<String>) -> Box<WriteError> {
    Box::new(WriteError {
        pointer: String::new(),
        message: message.into(),
    })
}

/// Prepends one JSON Pointer segment (RFC 6901 escaping) to a value error.
#[cold]
pub(crate) fn under(segment: impl FnOnce() -> String, mut err: Box<WriteError>) -> Box<WriteError> {
    let seg = segment().replace('~', "~0").replace('/', "~1");
    err.pointer = format!("/{seg}{}", err.pointer);
    err
}

pub(crate) fn too_deep() -> Box<WriteError> {
    refuse(format!("value nested deeper than {MAX_WRITE_DEPTH} levels"))
}

impl<O: Out> Walk<'_, O> {
    fn python(&mut self, value: &Value, depth: usize) -> Walked {
        match value {
            Value::Null => self.out.put(b"null"),
            Value::Bool(true) => self.out.put(b"true"),
            Value::Bool(false) => self.out.put(b"false"),
            Value::Number(n) => python_number(n.as_num(), self.allow_nan, self.out)?,
            Value::String(s) => python_string(s, self.out),
            Value::Array(items) => {
                if depth >= MAX_WRITE_DEPTH {
                    return Err(too_deep());
                }
                prefetch_items(items);
                self.out.byte(b'[');
                for (i, item) in items.iter().enumerate() {
                    if let Some(v) = items.get(i + PREFETCH_MEMBERS) {
                        prefetch_value(v);
                    }
                    if i > 0 {
                        self.out.byte(b',');
                    }
                    self.python(item, depth + 1)
                        .map_err(|e| under(|| i.to_string(), e))?;
                }
                self.out.byte(b']');
            }
            Value::Object(map) => {
                if depth >= MAX_WRITE_DEPTH {
                    return Err(too_deep());
                }
                // A BTreeMap<String, _> iterates in UTF-8 byte order = code-point order,
                // which is the order of Python's `sort_keys`.
                prefetch_members(map);
                let mut ahead = members_ahead(map);
                self.out.byte(b'{');
                for (i, (key, item)) in map.iter().enumerate() {
                    if let Some((k, v)) = ahead.as_mut().and_then(Iterator::next) {
                        prefetch(k.as_ptr());
                        prefetch_value(v);
                    }
                    if i > 0 {
                        self.out.byte(b',');
                    }
                    python_string(key, self.out);
                    self.out.byte(b':');
                    self.python(item, depth + 1)
                        .map_err(|e| under(|| key.clone(), e))?;
                }
                self.out.byte(b'}');
            }
        }
        Ok(())
    }

    fn jcs(&mut self, value: &Value, depth: usize) -> Walked {
        match value {
            Value::Null => self.out.put(b"null"),
            Value::Bool(true) => self.out.put(b"true"),
            Value::Bool(false) => self.out.put(b"false"),
            Value::Number(n) => jcs_number(n.as_num(), self.out)?,
            Value::String(s) => jcs_string(s, self.out),
            Value::Array(items) => {
                if depth >= MAX_WRITE_DEPTH {
                    return Err(too_deep());
                }
                prefetch_items(items);
                self.out.byte(b'[');
                for (i, item) in items.iter().enumerate() {
                    if let Some(v) = items.get(i + PREFETCH_MEMBERS) {
                        prefetch_value(v);
                    }
                    if i > 0 {
                        self.out.byte(b',');
                    }
                    self.jcs(item, depth + 1)
                        .map_err(|e| under(|| i.to_string(), e))?;
                }
                self.out.byte(b']');
            }
            Value::Object(map) => {
                if depth >= MAX_WRITE_DEPTH {
                    return Err(too_deep());
                }
                prefetch_members(map);
                self.out.byte(b'{');
                if utf8_order_is_utf16_order(map) {
                    let mut ahead = members_ahead(map);
                    for (i, (key, item)) in map.iter().enumerate() {
                        if let Some((k, v)) = ahead.as_mut().and_then(Iterator::next) {
                            prefetch(k.as_ptr());
                            prefetch_value(v);
                        }
                        self.jcs_member(i, key, item, depth)?;
                    }
                } else {
                    let mut members: Vec<(&String, &Value)> = map.iter().collect();
                    members.sort_by(|a, b| cmp_utf16(a.0, b.0));
                    for (i, (key, item)) in members.into_iter().enumerate() {
                        self.jcs_member(i, key, item, depth)?;
                    }
                }
                self.out.byte(b'}');
            }
        }
        Ok(())
    }

    fn jcs_member(&mut self, i: usize, key: &str, item: &Value, depth: usize) -> Walked {
        if i > 0 {
            self.out.byte(b',');
        }
        jcs_string(key, self.out);
        self.out.byte(b':');
        self.jcs(item, depth + 1)
            .map_err(|e| under(|| key.to_owned(), e))
    }
}

/// A number as the writers see it: [`Number`] or a number token of the streaming
/// canonicaliser, whose big integers borrow the input's digits.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Num<'a> {
    Int(i64),
    /// Canonical decimal digits of an integer beyond `i64`.
    Big(&'a str),
    Float(f64),
}

impl Number {
    pub(crate) fn as_num(&self) -> Num<'_> {
        match self {
            Number::Int(i) => Num::Int(*i),
            Number::BigInt(d) => Num::Big(d),
            Number::Float(f) => Num::Float(*f),
        }
    }
}

/// A number in the python profiles; `allow_nan` is false for `python-strict`.
pub(crate) fn python_number<O: Out>(n: Num<'_>, allow_nan: bool, out: &mut O) -> Walked {
    match n {
        Num::Int(i) => {
            let mut buf = itoa::Buffer::new();
            out.put(buf.format(i).as_bytes());
        }
        Num::Big(digits) => out.put(digits.as_bytes()),
        Num::Float(f) if f.is_finite() => {
            let mut buf = NumberBuffer::new();
            python_float(f, &mut buf);
            out.put(buf.as_bytes());
        }
        Num::Float(f) => {
            let word: &[u8] = if f.is_nan() {
                b"NaN"
            } else if f > 0.0 {
                b"Infinity"
            } else {
                b"-Infinity"
            };
            if !allow_nan {
                return Err(refuse(format!(
                    "{} has no canonical form in profile python-strict",
                    String::from_utf8_lossy(word)
                )));
            }
            out.put(word);
        }
    }
    Ok(())
}

/// A number in the jcs profile: every number is the double it denotes.
pub(crate) fn jcs_number<O: Out>(n: Num<'_>, out: &mut O) -> Walked {
    let f = match n {
        Num::Int(i) => {
            if i.unsigned_abs() <= 1 << 53 {
                // Exact as a double and printed by ECMAScript as the plain integer.
                let mut buf = itoa::Buffer::new();
                out.put(buf.format(i).as_bytes());
                return Ok(());
            }
            exact_f64_of_i64(i).ok_or_else(|| {
                refuse(format!(
                    "integer {i} is not exactly representable as a double (profile jcs)"
                ))
            })?
        }
        Num::Big(digits) => exact_f64_of_decimal(digits).ok_or_else(|| {
            refuse(format!(
                "integer {} is not exactly representable as a double (profile jcs)",
                elided(digits)
            ))
        })?,
        Num::Float(f) => f,
    };
    if f.is_nan() {
        return Err(refuse("NaN has no canonical form in profile jcs"));
    }
    if f.is_infinite() {
        let word = if f > 0.0 { "Infinity" } else { "-Infinity" };
        return Err(refuse(format!(
            "{word} has no canonical form in profile jcs"
        )));
    }
    let mut buf = NumberBuffer::new();
    jcs_float(f, &mut buf);
    out.put(buf.as_bytes());
    Ok(())
}

/// How many members of a container have their allocations prefetched when the walk enters
/// it. The walk is bound by memory latency (every key, string and array is its own
/// allocation, scattered on the heap); asking for them together lets the misses overlap
/// instead of stalling one after another. Measured on the 10,000-host benchmark state:
/// 10-20% faster; a hint only, it never changes a byte.
const PREFETCH_MEMBERS: usize = 32;

/// Asks for the cache line at `p` ahead of its use (also the one pass's splices,
/// `stream/splice.rs`).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address, and has no effect
    // on program state.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[inline(always)]
fn prefetch_value(v: &Value) {
    match v {
        Value::String(s) => prefetch(s.as_ptr()),
        Value::Array(items) => prefetch(items.as_ptr().cast()),
        _ => {}
    }
}

#[inline]
fn prefetch_members(map: &Map) {
    for (k, v) in map.iter().take(PREFETCH_MEMBERS) {
        prefetch(k.as_ptr());
        prefetch_value(v);
    }
}

/// The members [`PREFETCH_MEMBERS`] ahead of the walk, for a map longer than what
/// [`prefetch_members`] already asked for; `None` for the small objects of a state (each
/// host record), whose second iterator would only walk the map once more.
#[inline]
fn members_ahead(
    map: &Map,
) -> Option<std::iter::Skip<std::collections::btree_map::Iter<'_, String, Value>>> {
    (map.len() > PREFETCH_MEMBERS).then(|| map.iter().skip(PREFETCH_MEMBERS))
}

#[inline]
fn prefetch_items(items: &[Value]) {
    for v in items.iter().take(PREFETCH_MEMBERS) {
        prefetch_value(v);
    }
}

/// UTF-8 byte order and UTF-16 code-unit order only disagree between an astral char (4-byte
/// UTF-8, a surrogate pair in UTF-16) and one in U+E000..=U+FFFF. Without astral chars in the
/// keys, the map's own order is already the JCS order and no sort is needed.
fn utf8_order_is_utf16_order(map: &Map) -> bool {
    map.keys().all(|k| k.bytes().all(|b| b < 0xf0))
}

/// Compares two strings by their UTF-16 code units, without transcoding either.
pub(crate) fn cmp_utf16(a: &str, b: &str) -> std::cmp::Ordering {
    let mut ac = a.chars();
    let mut bc = b.chars();
    loop {
        match (ac.next(), bc.next()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(x), Some(y)) if x == y => continue,
            (Some(x), Some(y)) => {
                let (xu, yu) = (first_unit(x), first_unit(y));
                // Equal first units means two astral chars with the same high surrogate:
                // the low surrogates order as the code points do.
                return xu.cmp(&yu).then((x as u32).cmp(&(y as u32)));
            }
        }
    }
}

fn first_unit(c: char) -> u32 {
    let c = c as u32;
    if c >= 0x10000 {
        0xd800 + ((c - 0x10000) >> 10)
    } else {
        c
    }
}

/// A long integer's digits cut to their ends, so that an error about a 100,000-digit number
/// stays one readable line.
fn elided(digits: &str) -> String {
    const KEEP: usize = 20;
    if digits.len() <= 2 * KEEP + 10 {
        return digits.to_string();
    }
    format!(
        "{}...{} ({} digits)",
        &digits[..KEEP],
        &digits[digits.len() - KEEP..],
        digits.trim_start_matches('-').len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9: a refused 100,000-digit integer was echoed in full in the jcs error.
    #[test]
    fn issue9_a_refused_huge_integer_is_cut_in_the_error() {
        let digits = "7".repeat(100_000);
        let v = Value::Number(Number::BigInt(digits.into()));
        let err = crate::to_vec(&v, crate::Profile::Jcs).unwrap_err();
        assert!(err.message.len() < 200, "{}", err.message);
        assert!(err.message.contains("(100000 digits)"), "{}", err.message);
    }
    use std::cmp::Ordering;

    #[test]
    fn utf16_order_matches_transcoded_comparison() {
        let keys = [
            "",
            "a",
            "ab",
            "\u{7f}",
            "\u{80}",
            "\u{e000}",
            "\u{ffff}",
            "\u{10000}",
            "\u{1f600}",
            "\u{1f600}a",
            "\u{1f601}",
            "\u{10ffff}",
            "\u{fb33}",
            "\u{20ac}",
        ];
        for a in keys {
            for b in keys {
                let want = a.encode_utf16().cmp(b.encode_utf16());
                assert_eq!(cmp_utf16(a, b), want, "{a:?} vs {b:?}");
            }
        }
        assert_eq!(cmp_utf16("\u{1f600}", "\u{e000}"), Ordering::Less);
    }

    #[test]
    fn error_pointer_names_the_path() {
        let mut inner = Map::new();
        inner.insert(
            "a/b~c".into(),
            Value::Array(vec![Value::Null, f64::NAN.into()]),
        );
        let v = Value::Object(inner);
        let err = crate::to_vec(&v, Profile::Jcs).unwrap_err();
        assert_eq!(err.pointer, "/a~1b~0c/1");
        assert_eq!(err.message, "NaN has no canonical form in profile jcs");
        let err = crate::to_vec(&v, Profile::PythonStrict).unwrap_err();
        assert_eq!(err.pointer, "/a~1b~0c/1");
        assert!(crate::to_vec(&v, Profile::Python).is_ok());
    }

    #[test]
    fn depth_limit_is_an_error_not_a_crash() {
        let mut v = Value::Null;
        for _ in 0..MAX_WRITE_DEPTH + 1 {
            v = Value::Array(vec![v]);
        }
        let err = crate::to_vec(&v, Profile::Python).unwrap_err();
        assert!(err.message.contains("nested deeper"), "{err}");
        // Unwrap iteratively so dropping the value does not recurse either.
        let mut cur = v;
        while let Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Value::Null);
        }
    }
}
