//! Conversions between `serde_json::Value` and lockstep's canonical [`Value`].
//!
//! lockstep-canon has no serde bridge of its own (yet), so `Params` and `State` become canon
//! values through `serde_json::to_value` and these two small functions. Integers stay integers
//! (u64 beyond i64 become exact big integers), floats stay floats.

use lockstep_canon::{Map, Number, Value};

/// serde_json -> canon.
pub fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Number(if let Some(i) = n.as_i64() {
            Number::Int(i)
        } else if let Some(u) = n.as_u64() {
            Number::BigInt(u.to_string().into_boxed_str())
        } else {
            Number::Float(n.as_f64().unwrap_or(f64::NAN))
        }),
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), from_json(v)))
                .collect::<Map>(),
        ),
    }
}

/// canon -> serde_json. Big integers beyond u64/i64 and non-finite floats have no serde_json
/// form and become `None`.
pub fn to_json(v: &Value) -> Option<serde_json::Value> {
    Some(match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(Number::Int(i)) => serde_json::Value::from(*i),
        Value::Number(Number::BigInt(s)) => serde_json::Value::from(s.parse::<u64>().ok()?),
        Value::Number(Number::Float(f)) => {
            serde_json::Value::Number(serde_json::Number::from_f64(*f)?)
        }
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Array(a) => serde_json::Value::Array(a.iter().map(to_json).collect::<Option<_>>()?),
        Value::Object(o) => {
            let mut m = serde_json::Map::new();
            for (k, v) in o {
                m.insert(k.clone(), to_json(v)?);
            }
            serde_json::Value::Object(m)
        }
    })
}

/// Any serialisable value as a canon value.
pub fn to_canon<T: serde::Serialize>(v: &T) -> Result<Value, serde_json::Error> {
    Ok(from_json(&serde_json::to_value(v)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_ints_and_floats_apart() {
        let j = serde_json::json!({"a": 1, "b": 1.0, "c": [true, null, "x"], "d": u64::MAX});
        let c = from_json(&j);
        let Value::Object(m) = &c else { panic!() };
        assert_eq!(m["a"], Value::Number(Number::Int(1)));
        assert_eq!(m["b"], Value::Number(Number::Float(1.0)));
        assert_eq!(
            m["d"],
            Value::Number(Number::BigInt("18446744073709551615".into()))
        );
        assert_eq!(to_json(&c).unwrap(), j);
    }
}
