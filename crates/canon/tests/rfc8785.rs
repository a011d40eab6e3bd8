//! RFC 8785 (JSON Canonicalization Scheme) test vectors, from the RFC itself.

use lockstep_canon::{parse, to_vec, Number, Profile, Value};

fn jcs(text: &str) -> String {
    let v = parse(text.as_bytes()).expect("test input parses");
    String::from_utf8(to_vec(&v, Profile::Jcs).expect("has a JCS form")).unwrap()
}

/// Section 3.2.2: the sample object and its canonical form (section 3.2.3).
#[test]
fn sample_object_of_section_3_2_2() {
    let input = r#"{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"#;
    let want = "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}";
    assert_eq!(jcs(input), want);
}

/// Section 3.2.3: property sorting by UTF-16 code units.
#[test]
fn sorting_example_of_section_3_2_3() {
    let input = r#"{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}"#;
    let want = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
    assert_eq!(jcs(input), want);
    // The same object in the python profile sorts by code point: U+FB33 before U+1F600.
    let v = parse(input.as_bytes()).unwrap();
    let py = String::from_utf8(to_vec(&v, Profile::Python).unwrap()).unwrap();
    let fb33 = py.find("\\ufb33").unwrap();
    let emoji = py.find("\\ud83d\\ude00").unwrap();
    assert!(fb33 < emoji, "{py}");
}

/// Appendix B: IEEE 754 bit patterns and their canonical number text.
#[test]
fn number_examples_of_appendix_b() {
    let cases: &[(u64, Option<&str>)] = &[
        (0x0000000000000000, Some("0")),
        (0x8000000000000000, Some("0")),
        (0x0000000000000001, Some("5e-324")),
        (0x8000000000000001, Some("-5e-324")),
        (0x7fefffffffffffff, Some("1.7976931348623157e+308")),
        (0xffefffffffffffff, Some("-1.7976931348623157e+308")),
        (0x4340000000000000, Some("9007199254740992")),
        (0xc340000000000000, Some("-9007199254740992")),
        (0x4430000000000000, Some("295147905179352830000")),
        (0x7fffffffffffffff, None),
        (0x7ff0000000000000, None),
        (0x44b52d02c7e14af5, Some("9.999999999999997e+22")),
        (0x44b52d02c7e14af6, Some("1e+23")),
        (0x44b52d02c7e14af7, Some("1.0000000000000001e+23")),
        (0x444b1ae4d6e2ef4e, Some("999999999999999700000")),
        (0x444b1ae4d6e2ef4f, Some("999999999999999900000")),
        (0x444b1ae4d6e2ef50, Some("1e+21")),
        (0x3eb0c6f7a0b5ed8c, Some("9.999999999999997e-7")),
        (0x3eb0c6f7a0b5ed8d, Some("0.000001")),
        (0x41b3de4355555553, Some("333333333.3333332")),
        (0x41b3de4355555554, Some("333333333.33333325")),
        (0x41b3de4355555555, Some("333333333.3333333")),
        (0x41b3de4355555556, Some("333333333.3333334")),
        (0x41b3de4355555557, Some("333333333.33333343")),
        (0xbecbf647612f3696, Some("-0.0000033333333333333333")),
        (0x43143ff3c1cb0959, Some("1424953923781206.2")),
    ];
    for &(bits, want) in cases {
        let v = Value::Number(Number::Float(f64::from_bits(bits)));
        let got = to_vec(&v, Profile::Jcs).map(|b| String::from_utf8(b).unwrap());
        match want {
            Some(text) => assert_eq!(got.as_deref(), Ok(text), "bits {bits:016x}"),
            None => assert!(got.is_err(), "bits {bits:016x} must be refused"),
        }
    }
}

/// Integers are written as the double they denote; those a double cannot hold are errors.
#[test]
fn integers_in_jcs() {
    let int = |i: i64| Value::Number(Number::Int(i));
    let big = |s: &str| Value::Number(Number::BigInt(s.into()));
    let text = |v: &Value| to_vec(v, Profile::Jcs).map(|b| String::from_utf8(b).unwrap());
    assert_eq!(text(&int(-0)).unwrap(), "0");
    assert_eq!(text(&int(1 << 53)).unwrap(), "9007199254740992");
    assert_eq!(text(&int(1 << 60)).unwrap(), "1152921504606847000");
    assert_eq!(text(&int(i64::MIN)).unwrap(), "-9223372036854776000");
    assert_eq!(
        text(&big("295147905179352825856")).unwrap(),
        "295147905179352830000"
    );
    assert_eq!(text(&big("1000000000000000000000")).unwrap(), "1e+21");
    let err = text(&Value::Array(vec![int(0), int((1 << 53) + 1)])).unwrap_err();
    assert_eq!(err.pointer, "/1");
    assert_eq!(
        err.message,
        "integer 9007199254740993 is not exactly representable as a double (profile jcs)"
    );
    let err = text(&big("18446744073709551617")).unwrap_err();
    assert_eq!(err.pointer, "");
}
