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
