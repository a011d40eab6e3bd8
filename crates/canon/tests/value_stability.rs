//! Value stability: literal canonical bytes that must never change within a profile.
//!
//! A failure here is a value-breaking change (see docs/stability.md): the fix is to restore
//! the old bytes, or to add a new profile version, never to edit these literals.

use lockstep_canon::{parse, to_vec, Map, Number, Profile, Value};

/// Python's own output for this object (computed with CPython 3.11 `json.dumps(obj,
/// sort_keys=True, separators=(',', ':'))`), kept as a literal.
const PYTHON_BYTES: &str = r#"{"cache":null,"cookies":{},"f":[1.0,-0.0,0.1,1e-05,0.0001,1e+16,1000000000000000.0,5e-324,1.7976931348623157e+308,0.30000000000000004,123456789012345678901234567890,-9223372036854775809],"s":"\"\\/\b\f\n\r\t\u0000\u007f\u00e9\u2028\ufeff\ud83d\ude00","seed":0,"target":0,"visits":0,"\ue000":1,"\ud83d\ude00":2}"#;

fn value() -> Value {
    parse(PYTHON_BYTES.as_bytes()).expect("literal parses")
}

#[test]
fn python_profile_bytes_are_pinned() {
    let bytes = to_vec(&value(), Profile::Python).unwrap();
    assert_eq!(String::from_utf8(bytes).unwrap(), PYTHON_BYTES);
    let strict = to_vec(&value(), Profile::PythonStrict).unwrap();
    assert_eq!(String::from_utf8(strict).unwrap(), PYTHON_BYTES);
}

#[test]
fn jcs_profile_bytes_are_pinned() {
    let mut v = value();
    // Drop the integers a double cannot hold; JCS refuses them (tested in rfc8785.rs).
    if let Value::Object(m) = &mut v {
        if let Some(Value::Array(f)) = m.get_mut("f") {
            f.truncate(10);
        }
    }
    let bytes = to_vec(&v, Profile::Jcs).unwrap();
    let want = "{\"cache\":null,\"cookies\":{},\"f\":[1,0,0.1,0.00001,0.0001,10000000000000000,\
1000000000000000,5e-324,1.7976931348623157e+308,0.30000000000000004],\
\"s\":\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0000\u{7f}\u{e9}\u{2028}\u{feff}\u{1f600}\",\
\"seed\":0,\"target\":0,\"visits\":0,\"\u{1f600}\":2,\"\u{e000}\":1}";
    assert_eq!(String::from_utf8(bytes).unwrap(), want);
}

/// The seed-000 fresh(0) state, as the specification's Python fingerprints it.
#[test]
fn seed_000_fresh_state_bytes() {
    let mut m = Map::new();
    m.insert("seed".into(), Value::from(0));
    m.insert("target".into(), Value::from(0));
    m.insert("cookies".into(), Value::Object(Map::new()));
    m.insert("visits".into(), Value::from(0));
    m.insert("cache".into(), Value::Null);
    let v = Value::Object(m);
    assert_eq!(
        to_vec(&v, Profile::Python).unwrap(),
        br#"{"cache":null,"cookies":{},"seed":0,"target":0,"visits":0}"#
    );
    assert_eq!(
        to_vec(&v, Profile::Jcs).unwrap(),
        br#"{"cache":null,"cookies":{},"seed":0,"target":0,"visits":0}"#
    );
    // Integers and floats stay apart: 1 and 1.0 are different bytes in the python profile.
    let one = Value::Number(Number::Int(1));
    let one_f = Value::Number(Number::Float(1.0));
    assert_eq!(to_vec(&one, Profile::Python).unwrap(), b"1");
    assert_eq!(to_vec(&one_f, Profile::Python).unwrap(), b"1.0");
    assert_eq!(to_vec(&one_f, Profile::Jcs).unwrap(), b"1");
}
