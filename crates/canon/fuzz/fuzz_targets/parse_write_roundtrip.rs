//! Arbitrary bytes into the strict parser; whatever parses must write in every profile that
//! accepts it, and the python profile's bytes must parse back to the same value (NaN equal to
//! NaN) and be a fixed point of parse-then-write.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockstep_canon::{parse_with, to_vec, Number, ParseOptions, Profile, Value};

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(Number::Float(x)), Value::Number(Number::Float(y))) => {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| a.0 == b.0 && same(a.1, b.1))
        }
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let options = ParseOptions {
        max_depth: 128,
        allow_nan: data.first().is_some_and(|b| b & 1 == 1),
    };
    let Ok(value) = parse_with(data, &options) else {
        return;
    };
    let python = to_vec(&value, Profile::Python).expect("python profile writes every value");
    let reparse_options = ParseOptions {
        max_depth: 128,
        allow_nan: true,
    };
    let back = parse_with(&python, &reparse_options).expect("python output parses");
    assert!(
        same(&back, &value),
        "python output does not parse back to the value"
    );
    let again = to_vec(&back, Profile::Python).expect("rewrite");
    assert_eq!(again, python, "python output is not a fixed point");
    // The strict profiles may refuse (NaN, inexact integers) but must never panic, and what
    // they write must be JSON our strict parser accepts.
    if let Ok(strict) = to_vec(&value, Profile::PythonStrict) {
        assert_eq!(strict, python);
    }
    if let Ok(jcs) = to_vec(&value, Profile::Jcs) {
        let parsed = parse_with(
            &jcs,
            &ParseOptions {
                max_depth: 128,
                allow_nan: false,
            },
        )
        .expect("jcs output parses");
        // An integer-looking JCS number may be one a double only approximates (2^60 is
        // written 1152921504606847000), which JCS then refuses as an integer; when the
        // rewrite succeeds it must give the same bytes.
        if let Ok(rewritten) = to_vec(&parsed, Profile::Jcs) {
            assert_eq!(rewritten, jcs, "jcs output is not a fixed point");
        }
    }
});
