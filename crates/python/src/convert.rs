//! Python objects <-> lockstep's JSON data model ([`Value`]), with `json.dumps`'s rules.
//!
//! A value converts exactly when `json.dumps(obj, sort_keys=True)` would accept it and give
//! the same bytes: dicts with `str` keys, lists, tuples, `str`, `int` of any size, `float`
//! (NaN and infinities included), `bool`, `None`, and subclasses of these (so `numpy.float64`,
//! a `float` subclass, converts like a float). Everything else is a `CanonicalError` naming the
//! JSON Pointer of the value: other numpy scalars and arrays (`json.dumps` refuses them too;
//! call `.tolist()` or `.item()` first), non-`str` keys (`json.dumps` sorts those by their
//! Python order, not as strings, so no canonical form agrees with it), strings holding lone
//! surrogates (not Unicode text), and nesting deeper than the canonical writer accepts.

use lockstep::diff::push_token;
use lockstep_canon::{Map, Number, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::{error, Kind};

/// Nesting limit of a converted value (the canonical writer's own).
const MAX_DEPTH: usize = lockstep_canon::MAX_WRITE_DEPTH;

/// `obj` as a [`Value`] (see the module doc).
pub fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut pointer = String::new();
    convert(obj, &mut pointer, 0)
}

fn refuse(pointer: &str, why: String) -> PyErr {
    let at = if pointer.is_empty() {
        "the top level".to_string()
    } else {
        format!("{pointer:?}")
    };
    error(Kind::Canonical, format!("{why} at {at}"))
}

fn convert(obj: &Bound<'_, PyAny>, pointer: &mut String, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(refuse(
            pointer,
            format!("nesting deeper than {MAX_DEPTH} levels"),
        ));
    }
    // The order of json's encoder: str, None, bool, int, float, list/tuple, dict.
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_str() {
            Ok(text) => Ok(Value::String(text.to_owned())),
            Err(_) => Err(refuse(
                pointer,
                "a str holding a lone surrogate (not Unicode text) has no canonical form".into(),
            )),
        };
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.cast::<PyInt>() {
        if let Ok(small) = i.extract::<i64>() {
            return Ok(Value::Number(Number::Int(small)));
        }
        // Beyond 64 bits: Python's own decimal digits (what json.dumps writes).
        let digits = i.call_method0("__index__")?.str()?.to_str()?.to_owned();
        return Ok(Value::Number(Number::BigInt(digits.into_boxed_str())));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Number(Number::Float(f.value())));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return sequence(list.iter(), pointer, depth);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return sequence(tuple.iter(), pointer, depth);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in dict.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(refuse(
                    pointer,
                    format!(
                        "dict key {} of type {} is not a str (json.dumps would sort such keys by \
                         Python order, not as text; convert the keys to str)",
                        k.repr()?,
                        k.get_type().name()?
                    ),
                ));
            };
            let Ok(key) = key.to_str() else {
                return Err(refuse(
                    pointer,
                    "a dict key holding a lone surrogate has no canonical form".into(),
                ));
            };
            let len = pointer.len();
            push_token(pointer, key);
            let value = convert(&v, pointer, depth + 1)?;
            pointer.truncate(len);
            map.insert(key.to_owned(), value);
        }
        return Ok(Value::Object(map));
    }
    let type_name = obj.get_type().fully_qualified_name()?.to_string();
    let hint = if type_name.starts_with("numpy.") {
        " (json.dumps refuses it too: convert with .item() or .tolist() first)"
    } else {
        ""
    };
    Err(refuse(
        pointer,
        format!("an object of type {type_name} is not JSON-serializable{hint}"),
    ))
}

fn sequence<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    pointer: &mut String,
    depth: usize,
) -> PyResult<Value> {
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let len = pointer.len();
        push_token(pointer, itoa_usize(i).as_str());
        out.push(convert(&item, pointer, depth + 1)?);
        pointer.truncate(len);
    }
    Ok(Value::Array(out))
}

fn itoa_usize(i: usize) -> String {
    i.to_string()
}

/// `value` as plain Python objects: dicts, lists, str, int, float, bool, None.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(Number::Int(i)) => i.into_pyobject(py)?.into_any(),
        Value::Number(Number::BigInt(digits)) => {
            py.get_type::<PyInt>().call1((digits.as_ref(),))?.into_any()
        }
        Value::Number(Number::Float(f)) => PyFloat::new(py, *f).into_any(),
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}

/// A `serde` value (a report record) as plain Python objects.
pub fn serde_to_py<'py, T: serde::Serialize>(
    py: Python<'py>,
    x: &T,
) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &lockstep::check::to_value(x))
}
