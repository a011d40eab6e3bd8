//! The one data model every lockstep format is built on.
//!
//! Why not `serde_json::Value`: canonical JSON must keep Python's distinction between `1` and
//! `1.0`, hold integers of any size exactly, and never depend on a serde_json feature flag that
//! another crate in the build could switch on. Objects are `BTreeMap`s, so iteration order is
//! byte order of the keys (= code-point order, the `python` profile's order) in every process.

use std::collections::BTreeMap;

/// A JSON object: keys in UTF-8 byte order.
pub type Map = BTreeMap<String, Value>;

/// A JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Map),
}

/// A JSON number, keeping integers and floats apart as Python does.
#[derive(Debug, Clone, PartialEq)]
pub enum Number {
    /// An integer that fits in 64 signed bits.
    Int(i64),
    /// An integer that does not fit in `i64`: canonical decimal digits, optional leading `-`,
    /// no leading zeros.
    BigInt(Box<str>),
    /// A binary64 float, written in the profile's float format (NaN and infinities allowed in
    /// the value; the writer decides whether the profile accepts them).
    Float(f64),
}

impl Value {
    /// The member `key` of an object; `None` for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(map) => map.get(key),
            _ => None,
        }
    }

    /// The value at an RFC 6901 JSON Pointer (`""` is the whole value, `/a/0/b~1c` a path).
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(self, |cur, raw| {
            let segment = raw.replace("~1", "/").replace("~0", "~");
            match cur {
                Value::Object(map) => map.get(&segment),
                Value::Array(items) => {
                    // RFC 6901: no leading zeros, no signs.
                    if segment.is_empty()
                        || (segment.len() > 1 && segment.starts_with('0'))
                        || !segment.bytes().all(|b| b.is_ascii_digit())
                    {
                        return None;
                    }
                    items.get(segment.parse::<usize>().ok()?)
                }
                _ => None,
            }
        })
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// An integer that fits `i64` (never a float, even a whole one).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i),
            _ => None,
        }
    }

    /// Any number as a double (integers rounded to nearest, BigInt included).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::Int(i)) => Some(*i as f64),
            Value::Number(Number::BigInt(d)) => d.parse().ok(),
            Value::Number(Number::Float(f)) => Some(*f),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

macro_rules! from_small_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(i: $t) -> Self {
                Value::Number(Number::Int(i64::from(i)))
            }
        }
    )*};
}
from_small_int!(i8, i16, i32, i64, u8, u16, u32);

macro_rules! from_wide_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            /// Exact: values beyond `i64` become [`Number::BigInt`].
            fn from(i: $t) -> Self {
                Value::Number(match i64::try_from(i) {
                    Ok(small) => Number::Int(small),
                    Err(_) => Number::BigInt(i.to_string().into()),
                })
            }
        }
    )*};
}
from_wide_int!(u64, i128, u128, usize, isize);

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Number(Number::Float(f))
    }
}

impl From<f32> for Value {
    /// Widened exactly to the double holding the same value (as Python would receive it).
    fn from(f: f32) -> Self {
        Value::Number(Number::Float(f64::from(f)))
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Object(m)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Self {
        Value::Array(items.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}

impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for Value {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Value::Object(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_and_get() {
        let v: Value = [("a/b", Value::from(vec![1, 2])), ("m~n", Value::from("x"))]
            .into_iter()
            .collect();
        assert_eq!(v.pointer(""), Some(&v));
        assert_eq!(v.pointer("/a~1b/1"), Some(&Value::from(2)));
        assert_eq!(v.pointer("/m~0n"), Some(&Value::from("x")));
        assert_eq!(v.pointer("/a~1b/01"), None);
        assert_eq!(v.pointer("/a~1b/2"), None);
        assert_eq!(v.pointer("a"), None);
        assert_eq!(v.get("m~n").and_then(Value::as_str), Some("x"));
        assert_eq!(
            Value::from(u64::MAX),
            Value::Number(Number::BigInt("18446744073709551615".into()))
        );
        assert_eq!(Value::from(Some(3u8)), Value::Number(Number::Int(3)));
        assert_eq!(Value::from(None::<u8>), Value::Null);
    }
}
