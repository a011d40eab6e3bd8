//! Differential test: the `python` profile against CPython's own `json.dumps`.
//!
//! The corpus travels to Python in a wrapper that does not depend on anything we are testing:
//! floats as their 16 hex digits of IEEE bits (rebuilt with `struct`), integers as decimal
//! text, strings and keys as hex of their UTF-8 bytes. Python rebuilds each value exactly and
//! prints `json.dumps(obj, sort_keys=True, separators=(',', ':'))`; we compare those bytes with
//! ours, value by value. Python never sees our output, so agreement is byte equality of two
//! independent implementations, not a round-trip fixed point.
//!
//! `LOCKSTEP_PYTHON` names the interpreter (default `python3`). Python runs once for the whole
//! corpus. The test fails (does not skip) when Python cannot be started: it is the only
//! independent check of the profile.

use std::fmt::Write as _;
use std::process::Command;

use lockstep_canon::{parse, to_vec, Map, Number, Profile, Value};

const CORPUS_SIZE: usize = 100_000;
const SEED: u64 = 0x5eed_0000_c0de_0001;

/// SplitMix64: a tiny, fixed generator so the corpus is the same on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by rejection (no modulo bias; `n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next();
            if x < zone {
                return x % n;
            }
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const EDGE_FLOATS: &[f64] = &[
    0.0,
    -0.0,
    1e-05,
    1e-4,
    0.00009999999999999999,
    1e16,
    9999999999999998.0,
    1e15,
    1e17,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    2.225073858507201e-308,
    0.30000000000000004,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1.0,
    -1.0,
    0.1,
    0.5,
    123456789012345680.0,
    1e21,
    1e22,
    1e23,
    9007199254740993.0,
    4.35,
    2.675,
    1e-7,
    1.5e-7,
];

fn gen_float(rng: &mut Rng) -> f64 {
    match rng.below(10) {
        0..=3 => f64::from_bits(rng.next()),
        4 => *rng.pick(EDGE_FLOATS),
        5 => {
            // Near the notation thresholds, a few ulps either side.
            let base: f64 = *rng.pick(&[1e-4, 1e-5, 1e16, 1e15, 1e21, 1e-6, 1e-7]);
            let bits = base.to_bits() as i64 + rng.below(9) as i64 - 4;
            f64::from_bits(bits as u64)
        }
        6 => (rng.below(2_000_001) as f64 - 1_000_000.0) / 1000.0,
        7 => rng.next() as i64 as f64,
        8 => (rng.below(1 << 53) as f64) * 10f64.powi(rng.below(40) as i32 - 20),
        _ => {
            // Subnormals and tiny values.
            f64::from_bits(rng.below(1 << 52)) * if rng.below(2) == 0 { 1.0 } else { -1.0 }
        }
    }
}

fn gen_int(rng: &mut Rng) -> Number {
    match rng.below(6) {
        0 => Number::Int(rng.below(201) as i64 - 100),
        1 => Number::Int(rng.next() as i64),
        2 => Number::Int(*rng.pick(&[i64::MIN, i64::MAX, 0, 1 << 53, -(1 << 53)])),
        3 => Number::Int(rng.below(1_000_000) as i64),
        _ => {
            // Beyond 2^64 (20..=60 digits), both signs.
            let len = 20 + rng.below(41) as usize;
            let mut s = String::new();
            if rng.below(2) == 0 {
                s.push('-');
            }
            s.push(char::from(b'1' + rng.below(9) as u8));
            for _ in 1..len {
                s.push(char::from(b'0' + rng.below(10) as u8));
            }
            Number::BigInt(s.into())
        }
    }
}

fn gen_char(rng: &mut Rng) -> char {
    let code = match rng.below(14) {
        0..=4 => 0x20 + rng.below(0x5f) as u32,
        5 => rng.below(0x20) as u32,
        6 => *rng.pick(&[0x7f, 0x22, 0x5c, 0x2f, 0x2028, 0x2029, 0xfeff, 0x85, 0xa0]),
        7 => 0x80 + rng.below(0x780) as u32,
        8 => 0x800 + rng.below(0xd800 - 0x800) as u32,
        9 => 0xe000 + rng.below(0x2000) as u32,
        10 => 0x10000 + rng.below(0x100000) as u32,
        11 => *rng.pick(&[0x1f600, 0x10000, 0x10ffff, 0xffff, 0xfffd, 0xe000]),
        _ => u32::from(*rng.pick(b"abcxyz019 _-")),
    };
    char::from_u32(code).unwrap_or('?')
}

fn gen_string(rng: &mut Rng, max_len: u64) -> String {
    let len = rng.below(max_len + 1);
    (0..len).map(|_| gen_char(rng)).collect()
}

fn gen_key(rng: &mut Rng) -> String {
    match rng.below(4) {
        // Keys that order differently by code point and by UTF-16 unit.
        0 => rng
            .pick(&[
                "\u{e000}",
                "\u{1f600}",
                "\u{ffff}",
                "\u{10000}",
                "a\u{fb33}",
                "a\u{1d11e}",
            ])
            .to_string(),
        1 => rng
            .pick(&[
                "seed", "target", "cookies", "visits", "cache", "", "a", "A", "é",
            ])
            .to_string(),
        _ => gen_string(rng, 6),
    }
}

fn gen_value(rng: &mut Rng, depth: u32) -> Value {
    let containers = if depth < 5 { 3 } else { 0 };
    match rng.below(12 + containers) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2..=5 => Value::Number(Number::Float(gen_float(rng))),
        6..=7 => Value::Number(gen_int(rng)),
        8..=11 => Value::String(gen_string(rng, 12)),
        12 => Value::Array(
            (0..rng.below(5))
                .map(|_| gen_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.below(6) {
                map.insert(gen_key(rng), gen_value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

/// The wrapper form Python rebuilds without trusting our writer.
fn wrap(v: &Value, out: &mut String) {
    fn hex(bytes: &[u8], out: &mut String) {
        for b in bytes {
            let _ = write!(out, "{b:02x}");
        }
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(Number::Int(i)) => {
            let _ = write!(out, "{{\"i\":\"{i}\"}}");
        }
        Value::Number(Number::BigInt(d)) => {
            let _ = write!(out, "{{\"i\":\"{d}\"}}");
        }
        Value::Number(Number::Float(f)) => {
            let _ = write!(out, "{{\"f\":\"{:016x}\"}}", f.to_bits());
        }
        Value::String(s) => {
            out.push_str("{\"s\":\"");
            hex(s.as_bytes(), out);
            out.push_str("\"}");
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                wrap(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("{\"o\":[");
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("[\"");
                hex(k.as_bytes(), out);
                out.push_str("\",");
                wrap(item, out);
                out.push(']');
            }
            out.push_str("]}");
        }
    }
}

const PYTHON_SIDE: &str = r#"
import json, struct, sys
unpack = struct.Struct('>d').unpack
fromhex = bytes.fromhex
def hook(d):
    (k, v), = d.items()
    if k == 'i':
        return int(v)
    if k == 'f':
        return unpack(fromhex(v))[0]
    if k == 's':
        return fromhex(v).decode('utf-8')
    return {fromhex(a).decode('utf-8'): b for a, b in v}
dumps = json.JSONEncoder(sort_keys=True, separators=(',', ':')).encode
loads = json.JSONDecoder(object_hook=hook).decode
with open(sys.argv[1], 'r') as f:
    lines = f.read().splitlines()
sys.stdout.write(''.join([dumps(loads(line)) + '\n' for line in lines]))
"#;

fn contains_non_finite(v: &Value) -> bool {
    match v {
        Value::Number(Number::Float(f)) => !f.is_finite(),
        Value::Array(items) => items.iter().any(contains_non_finite),
        Value::Object(map) => map.values().any(contains_non_finite),
        _ => false,
    }
}

/// Equality that treats every NaN as equal (the parser cannot keep a NaN payload).
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

#[test]
fn python_profile_matches_cpython_json_dumps_byte_for_byte() {
    let mut rng = Rng(SEED);
    let corpus: Vec<Value> = (0..CORPUS_SIZE).map(|_| gen_value(&mut rng, 0)).collect();

    let mut wrapped = String::new();
    for v in &corpus {
        wrap(v, &mut wrapped);
        wrapped.push('\n');
    }
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("python_differential_{}.jsonl", std::process::id()));
    std::fs::write(&path, &wrapped).expect("write corpus");

    let python = std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .arg("-c")
        .arg(PYTHON_SIDE)
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} (set LOCKSTEP_PYTHON): {e}"));
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "{python} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected: Vec<&[u8]> = output.stdout.split(|&b| b == b'\n').collect();
    assert_eq!(
        expected.len(),
        CORPUS_SIZE + 1,
        "python printed a line per value"
    );

    let wrapped_lines: Vec<&str> = wrapped.lines().collect();
    let mut floats_checked = 0usize;
    for (i, v) in corpus.iter().enumerate() {
        let ours = to_vec(v, Profile::Python).expect("python profile writes every value");
        assert!(
            ours == expected[i],
            "value #{i} differs from CPython\n  wrapper: {}\n  python:  {}\n  ours:    {}",
            wrapped_lines[i],
            String::from_utf8_lossy(expected[i]),
            String::from_utf8_lossy(&ours)
        );
        // The python bytes parse back to the same value (NaN literals allowed).
        let opts = lockstep_canon::ParseOptions {
            allow_nan: true,
            max_depth: 64,
        };
        let back = lockstep_canon::parse_with(&ours, &opts).expect("our output parses");
        assert!(same(&back, v), "value #{i} does not parse back to itself");

        let strict = to_vec(v, Profile::PythonStrict);
        assert_eq!(
            strict.is_err(),
            contains_non_finite(v),
            "python-strict on #{i}"
        );
        if let Ok(bytes) = strict {
            assert_eq!(bytes, ours, "python-strict bytes on #{i}");
        }
        // JCS output is valid JSON that our strict parser accepts, and floats round-trip.
        if let Ok(jcs) = to_vec(v, Profile::Jcs) {
            parse(&jcs).unwrap_or_else(|e| {
                panic!(
                    "jcs output of #{i} is not JSON: {e}: {}",
                    String::from_utf8_lossy(&jcs)
                )
            });
            if let Value::Number(Number::Float(f)) = v {
                let text = std::str::from_utf8(&jcs).unwrap();
                assert_eq!(
                    text.parse::<f64>().unwrap(),
                    *f + 0.0,
                    "jcs float #{i}: {text}"
                );
                floats_checked += 1;
            }
        }
    }
    assert!(
        floats_checked > 20_000,
        "corpus holds enough floats: {floats_checked}"
    );
}
