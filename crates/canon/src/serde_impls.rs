//! serde support: [`Value`] is `Serialize` and `Deserialize`, and [`to_value`] / [`from_value`]
//! bridge any serde type to the data model (through `serde_json::Value`, which never reorders
//! anything that reaches our bytes: the canonical writer sorts keys itself).

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Map, Number, Value};

/// Why a Rust value and a [`Value`] could not be converted.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConvertError(String);

/// Converts any serialisable Rust value into the data model.
///
/// Integers stay exact (`u64` above `i64::MAX` becomes [`Number::BigInt`]); floats stay floats,
/// even whole ones. Caveat of the serde_json bridge: a NaN or infinite float field becomes
/// `null`, as `serde_json::to_value` does; build such values with `Value::from(f64)` instead.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, ConvertError> {
    let json = serde_json::to_value(value).map_err(|e| ConvertError(e.to_string()))?;
    Value::deserialize(json).map_err(|e| ConvertError(e.to_string()))
}

/// Converts a [`Value`] into any deserialisable Rust type.
///
/// Fails on NaN or infinities and on integers beyond 128 bits, which serde's data model (as
/// bridged through serde_json) cannot carry.
pub fn from_value<T: de::DeserializeOwned>(value: &Value) -> Result<T, ConvertError> {
    if let Some(pointer) = first_non_finite(value, &mut String::new()) {
        return Err(ConvertError(format!(
            "non-finite float at {pointer:?} cannot be converted"
        )));
    }
    let json = serde_json::to_value(value).map_err(|e| ConvertError(e.to_string()))?;
    T::deserialize(json).map_err(|e| ConvertError(e.to_string()))
}

fn first_non_finite(value: &Value, path: &mut String) -> Option<String> {
    match value {
        Value::Number(Number::Float(f)) if !f.is_finite() => Some(path.clone()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let len = path.len();
            path.push_str(&format!("/{i}"));
            let found = first_non_finite(item, path);
            path.truncate(len);
            found
        }),
        Value::Object(map) => map.iter().find_map(|(k, item)| {
            let len = path.len();
            path.push('/');
            path.push_str(&k.replace('~', "~0").replace('/', "~1"));
            let found = first_non_finite(item, path);
            path.truncate(len);
            found
        }),
        _ => None,
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Number(n) => n.serialize(serializer),
            Value::String(s) => serializer.serialize_str(s),
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = serializer.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Number::Int(i) => serializer.serialize_i64(*i),
            Number::Float(f) => serializer.serialize_f64(*f),
            Number::BigInt(digits) => {
                if let Ok(u) = digits.parse::<u64>() {
                    serializer.serialize_u64(u)
                } else if let Ok(i) = digits.parse::<i128>() {
                    serializer.serialize_i128(i)
                } else if let Ok(u) = digits.parse::<u128>() {
                    serializer.serialize_u128(u)
                } else {
                    Err(serde::ser::Error::custom(format!(
                        "integer {digits} is too large for serde"
                    )))
                }
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::from(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(Value::from(u))
    }

    fn visit_i128<E>(self, i: i128) -> Result<Value, E> {
        Ok(Value::from(i))
    }

    fn visit_u128<E>(self, u: u128) -> Result<Value, E> {
        Ok(Value::from(u))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::from(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::from(s))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let value = access.next_value()?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct State {
        seed: u64,
        target: u64,
        cookies: std::collections::BTreeMap<String, bool>,
        visits: u32,
        cache: Option<u64>,
        big: u64,
        ratio: f64,
    }

    #[test]
    fn round_trip_through_serde() {
        let s = State {
            seed: 0,
            target: 0,
            cookies: Default::default(),
            visits: 0,
            cache: None,
            big: u64::MAX,
            ratio: 2.0,
        };
        let v = to_value(&s).unwrap();
        assert_eq!(
            crate::to_vec(&v, crate::Profile::Python).unwrap(),
            br#"{"big":18446744073709551615,"cache":null,"cookies":{},"ratio":2.0,"seed":0,"target":0,"visits":0}"#
        );
        let back: State = from_value(&v).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn from_value_refuses_nan() {
        let v = Value::from(vec![Value::from(1.0), Value::from(f64::NAN)]);
        let err = from_value::<Vec<f64>>(&v).unwrap_err();
        assert_eq!(
            err.to_string(),
            "non-finite float at \"/1\" cannot be converted"
        );
    }
}
