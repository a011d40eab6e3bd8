//! The bytes of an info in format v4: a JSON value laid out by type, with no text to render.
//!
//! Formats v1 to v3 hash an info's canonical JSON text, and writing that text (floats above
//! all) is most of what tracing a step of the range costs, though it is only needed to tell
//! two infos apart. v4 hashes a layout that tells apart exactly the values whose canonical
//! texts differ, and costs a copy of each key and a few bytes per scalar:
//!
//! ```text
//! value(null)     = 'z'
//! value(false)    = 'f'          value(true) = 't'
//! value(integer)  = 'i' || name(its digits as the canonical writer writes them)
//! value(float)    = 'd' || its f64 bits (little-endian), every NaN as 0x7ff8000000000000
//! value(string)   = 's' || name(the string)
//! value(array)    = 'a' || u64(length) || value(each item)
//! value(object)   = 'o' || u64(member count)
//!                       || for each member in key byte order: name(key) || value(value)
//! ```
//!
//! (`u64` little-endian, `name` = `u64(UTF-8 length)` || the bytes, as in v1.) Two values have
//! the same layout exactly when their canonical texts (profile python) are the same: an
//! integer's text is its digits, whether it is held as an `i64` or as digits; a finite float's
//! text is its shortest round-trip repr, which no two doubles share (`0.0` and `-0.0`
//! differ), and every NaN is written `NaN`, so floats are their bits with one NaN; a float's
//! text always has a `.`, an `e`, `NaN` or `Infinity`, so no float and integer share a text,
//! nor a layout (their tags differ); escaping a string is one-to-one; containers are their
//! items in order, and objects are sorted by key bytes, as Python's `sort_keys` sorts them
//! (code point order). The check digests (`CHECK_FORMAT`) rely on this: two rollouts' v4
//! steps are equal exactly when their v1 steps are. The one value the writer refuses, one
//! nested deeper than [`lockstep_canon::MAX_WRITE_DEPTH`], is refused here with the
//! writer's own error.

use std::io;

use lockstep_canon::{Map, Number, Value};

/// The one NaN of the layout: every NaN has the same canonical text.
const NAN_BITS: u64 = 0x7ff8_0000_0000_0000;

/// Appends `value(info)` to `out`.
pub(super) fn append_value_bytes(info: &Value, out: &mut Vec<u8>) -> io::Result<()> {
    if let Value::Object(map) = info {
        // Room for a typical member (a key and a number) each, so that growing is rare.
        out.reserve(map.len() * 48);
    }
    match info {
        Value::Object(map) => object(map, out, 0, info),
        other => value(other, out, 0, info),
    }
}

fn value(v: &Value, out: &mut Vec<u8>, depth: usize, whole: &Value) -> io::Result<()> {
    match v {
        Value::Null => out.push(b'z'),
        Value::Bool(false) => out.push(b'f'),
        Value::Bool(true) => out.push(b't'),
        Value::Number(Number::Int(i)) => {
            out.push(b'i');
            name(itoa::Buffer::new().format(*i).as_bytes(), out);
        }
        Value::Number(Number::Float(f)) => {
            let bits = if f.is_nan() { NAN_BITS } else { f.to_bits() };
            let mut field = [b'd'; 9];
            field[1..].copy_from_slice(&bits.to_le_bytes());
            out.extend_from_slice(&field);
        }
        Value::Number(Number::BigInt(digits)) => {
            out.push(b'i');
            name(digits.as_bytes(), out);
        }
        Value::String(s) => {
            out.push(b's');
            name(s.as_bytes(), out);
        }
        Value::Array(items) => {
            deep_enough_to_ask(depth, whole)?;
            out.push(b'a');
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                value(item, out, depth + 1, whole)?;
            }
        }
        Value::Object(map) => {
            deep_enough_to_ask(depth, whole)?;
            object(map, out, depth, whole)?;
        }
    }
    Ok(())
}

/// Appends `value(v)` for a member of an info, which the caller has found nested less deep
/// than the writer's limit allows a member written alone ([`super::info_cache`]).
pub(super) fn append_member_value(v: &Value, out: &mut Vec<u8>) -> io::Result<()> {
    value(v, out, 1, v)
}

/// `'o' || u64(member count)`: what an object's layout starts with.
pub(super) fn object_head(members: usize, out: &mut Vec<u8>) {
    let mut head = [b'o'; 9];
    head[1..].copy_from_slice(&(members as u64).to_le_bytes());
    out.extend_from_slice(&head);
}

fn object(map: &Map, out: &mut Vec<u8>, depth: usize, whole: &Value) -> io::Result<()> {
    object_head(map.len(), out);
    for (key, v) in map {
        name(key.as_bytes(), out);
        value(v, out, depth + 1, whole)?;
    }
    Ok(())
}

/// `u64(length) || bytes`. The names of an info are short (keys, ids, digits) and of every
/// length: up to 32 bytes they are moved by fixed-size words, overlapping where the length
/// is not a multiple (a `memcpy` call per name costs more, and mispredicts on the length).
pub(super) fn name(bytes: &[u8], out: &mut Vec<u8>) {
    let n = bytes.len();
    if n > 32 {
        out.extend_from_slice(&(n as u64).to_le_bytes());
        out.extend_from_slice(bytes);
        return;
    }
    let at = out.len();
    out.extend_from_slice(&[0u8; 40]);
    let field = &mut out[at..at + 40];
    field[..8].copy_from_slice(&(n as u64).to_le_bytes());
    let to = &mut field[8..];
    match n {
        0 => {}
        1..=3 => {
            to[0] = bytes[0];
            to[n / 2] = bytes[n / 2];
            to[n - 1] = bytes[n - 1];
        }
        4..=7 => {
            to[..4].copy_from_slice(&bytes[..4]);
            to[n - 4..n].copy_from_slice(&bytes[n - 4..]);
        }
        8..=16 => {
            to[..8].copy_from_slice(&bytes[..8]);
            to[n - 8..n].copy_from_slice(&bytes[n - 8..]);
        }
        _ => {
            to[..16].copy_from_slice(&bytes[..16]);
            to[n - 16..n].copy_from_slice(&bytes[n - 16..]);
        }
    }
    out.truncate(at + 8 + n);
}

/// Near the writer's depth limit, the writer itself says whether the whole info has a
/// canonical text (and words the error when it has none): the layout refuses what the text
/// refuses, and nothing else. Checking from a little below the limit keeps this exact
/// whatever way the writer counts its levels.
fn deep_enough_to_ask(depth: usize, whole: &Value) -> io::Result<()> {
    if depth + 8 < lockstep_canon::MAX_WRITE_DEPTH {
        return Ok(());
    }
    super::append(whole, &mut Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &Value) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        super::super::append(v, &mut out).ok().map(|()| out)
    }

    fn bytes(v: &Value) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        append_value_bytes(v, &mut out).ok().map(|()| out)
    }

    fn parse(t: &str) -> Value {
        lockstep_canon::parse_with(
            t.as_bytes(),
            &lockstep_canon::ParseOptions {
                allow_nan: true,
                ..lockstep_canon::ParseOptions::default()
            },
        )
        .unwrap()
    }

    /// A name of every length up to past the word moves is its length and its bytes, after
    /// whatever the buffer held.
    #[test]
    fn names_of_every_length() {
        let source: Vec<u8> = (0..80u8).map(|b| b'a' + b % 26).collect();
        for before in [0, 1, 7, 13] {
            for n in 0..=48 {
                let mut out = vec![b'-'; before];
                name(&source[5..5 + n], &mut out);
                out.push(b'|');
                let mut want = vec![b'-'; before];
                want.extend_from_slice(&(n as u64).to_le_bytes());
                want.extend_from_slice(&source[5..5 + n]);
                want.push(b'|');
                assert_eq!(out, want, "{before} before, {n} bytes");
            }
        }
    }

    /// Values whose canonical texts are equal in some pairs and differ in others by one
    /// thing: a zero's sign, NaN payloads, an integer held as digits, a float against an
    /// integer, a string's escapes, nesting, key order and member counts.
    fn values() -> Vec<Value> {
        let mut v: Vec<Value> = [
            "null",
            "true",
            "false",
            "0",
            "-0",
            "1",
            "1.0",
            "-1",
            "0.0",
            "-0.0",
            "NaN",
            "Infinity",
            "-Infinity",
            "1e300",
            "1e-300",
            "0.1",
            "0.30000000000000004",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "123456789012345678901234567890",
            "\"\"",
            "\"a\"",
            "\"\\u00e9\"",
            "\"\\\"\"",
            "\"\\u0001\"",
            "\"\\ud83d\\ude00\"",
            "[]",
            "[1]",
            "[1,2]",
            "[[1],2]",
            "[1,[2]]",
            "{}",
            "{\"a\":1}",
            "{\"a\":1.0}",
            "{\"b\":1}",
            "{\"a\":1,\"b\":2}",
            "{\"a\":[]}",
            "{\"a\":{}}",
            "{\"\\u00e9\":1,\"z\":1}",
            "[\"1\"]",
            "[1.5,\"x\",null,true]",
        ]
        .iter()
        .map(|t| parse(t))
        .collect();
        v.push(Value::Number(Number::Float(f64::from_bits(
            0x7ff8_0000_0000_0001,
        ))));
        v.push(Value::Number(Number::Float(-f64::NAN)));
        v.push(Value::Number(Number::BigInt("5".into())));
        v.push(Value::Number(Number::Int(5)));
        v.push(Value::Number(Number::BigInt("-0".into())));
        v.push(Value::Number(Number::Int(0)));
        v
    }

    /// Equal layouts exactly where the canonical texts are equal, over every pair.
    #[test]
    fn layouts_are_equal_exactly_where_texts_are() {
        let vs = values();
        let mut equal_pairs = 0;
        for (i, a) in vs.iter().enumerate() {
            for (j, b) in vs.iter().enumerate() {
                let same_text = text(a).unwrap() == text(b).unwrap();
                let same_bytes = bytes(a).unwrap() == bytes(b).unwrap();
                assert_eq!(same_text, same_bytes, "{i} {a:?} / {j} {b:?}");
                equal_pairs += usize::from(same_text && i != j);
            }
        }
        // NaN payloads and signs, 5 as digits and as an integer.
        assert!(equal_pairs >= 8, "{equal_pairs}");
    }

    /// The layout refuses exactly the values the writer refuses (nesting at its limit), with
    /// the writer's words.
    #[test]
    fn too_deep_is_refused_as_the_writer_refuses_it() {
        let mut refused = 0;
        for n in lockstep_canon::MAX_WRITE_DEPTH - 10..lockstep_canon::MAX_WRITE_DEPTH + 3 {
            for object in [false, true] {
                let mut v = Value::Array(vec![]);
                for _ in 1..n {
                    v = if object {
                        let mut m = Map::new();
                        m.insert("k".into(), v);
                        Value::Object(m)
                    } else {
                        Value::Array(vec![v])
                    };
                }
                let mut written = Vec::new();
                let want = super::super::append(&v, &mut written);
                let got = append_value_bytes(&v, &mut Vec::new());
                assert_eq!(
                    got.as_ref().map_err(ToString::to_string),
                    want.as_ref().map_err(ToString::to_string),
                    "{n} levels"
                );
                refused += usize::from(got.is_err());
            }
        }
        assert!(refused > 0);
    }
}
