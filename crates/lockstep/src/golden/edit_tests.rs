//! Issue 9: of 314 one-field edits of a recorded golden, 287 passed verification (a reward
//! changed from 1.0 to 0.98, a `terminated` flag flipped, an agent removed, the changelog
//! emptied). Every one-field edit of a golden file is now detected, and says that the file,
//! not the env, is at fault; reformatting without changing the content still verifies.

use std::path::Path;

use lockstep_canon::{Number, Value};

use super::*;
use crate::fixtures;

fn recorded() -> (Golden, Vec<u8>) {
    let f = fixtures::factory("fixture").unwrap();
    let mut g = record(&f, 7, 12, "2026-11-30").unwrap();
    // A second changelog entry, so that the chain of entries is edited too.
    g = update(&f, &g, "re-recorded", "2026-12-01").unwrap();
    let bytes = g.to_bytes();
    (g, bytes)
}

/// Every one-field edit of `v`: each leaf changed, each member and element removed.
fn edits(v: &Value, out: &mut Vec<(String, Value)>, pointer: &str, root: &Value) {
    let mut put = |what: String, replacement: Option<Value>| {
        let mut copy = root.clone();
        if set(&mut copy, pointer, replacement) {
            out.push((format!("{pointer}: {what}"), copy));
        }
    };
    match v {
        Value::Null => put("null -> 0".into(), Some(Value::Number(Number::Int(0)))),
        Value::Bool(b) => put(format!("{b} flipped"), Some(Value::Bool(!b))),
        Value::Number(Number::Int(i)) => put("+1".into(), Some(Value::Number(Number::Int(i + 1)))),
        Value::Number(Number::Float(x)) => {
            put("+0.5".into(), Some(Value::Number(Number::Float(x + 0.5))))
        }
        Value::Number(Number::BigInt(_)) => {}
        Value::String(s) => {
            let changed = if let Ok(x) = s.parse::<f64>() {
                format!("{:?}", x - 0.02)
            } else if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
                let first = if s.starts_with('0') { "1" } else { "0" };
                format!("{first}{}", &s[1..])
            } else {
                format!("{s}x")
            };
            put(
                format!("{s:?} -> {changed:?}"),
                Some(Value::String(changed)),
            );
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let p = format!("{pointer}/{i}");
                edits(item, out, &p, root);
                let mut copy = root.clone();
                if set(&mut copy, &p, None) {
                    out.push((format!("{p}: removed"), copy));
                }
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                edits(item, out, &p, root);
                let mut copy = root.clone();
                if set(&mut copy, &p, None) {
                    out.push((format!("{p}: removed"), copy));
                }
            }
        }
    }
}

/// Sets (or, with `None`, removes) the value at `pointer`.
fn set(root: &mut Value, pointer: &str, replacement: Option<Value>) -> bool {
    if pointer.is_empty() {
        return false;
    }
    let tokens: Vec<String> = pointer[1..]
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let (last, parents) = tokens.split_last().unwrap();
    let mut at = root;
    for t in parents {
        at = match at {
            Value::Object(m) => m.get_mut(t).unwrap(),
            Value::Array(a) => &mut a[t.parse::<usize>().unwrap()],
            _ => return false,
        };
    }
    match (at, replacement) {
        (Value::Object(m), Some(v)) => {
            m.insert(last.clone(), v);
        }
        (Value::Object(m), None) => {
            m.remove(last);
        }
        (Value::Array(a), Some(v)) => a[last.parse::<usize>().unwrap()] = v,
        (Value::Array(a), None) => {
            a.remove(last.parse::<usize>().unwrap());
        }
        _ => return false,
    }
    true
}

/// Loads and verifies `bytes`: `Ok` when the golden verifies, else what caught it.
fn judge(bytes: &[u8]) -> Result<(), String> {
    let g = Golden::from_slice(bytes, Path::new("g.json")).map_err(|e| e.to_string())?;
    let f = fixtures::factory(&g.env).ok_or("unknown env")?;
    let v = verify(&f, &g).map_err(|e| e.to_string())?;
    if v.passed {
        Ok(())
    } else {
        Err(format!("{:?} {:?}", v.divergence, v.notes))
    }
}

#[test]
fn issue9_every_one_field_edit_of_a_golden_is_detected() {
    let (_, bytes) = recorded();
    assert_eq!(judge(&bytes), Ok(()), "the untouched file verifies");
    let root = lockstep_canon::parse(&bytes).unwrap();
    let mut all = Vec::new();
    edits(&root, &mut all, "", &root);
    assert!(all.len() > 300, "{} edits", all.len());
    let mut passed = Vec::new();
    for (what, edited) in &all {
        let text = lockstep_canon::to_vec(edited, lockstep_canon::Profile::Python).unwrap();
        if judge(&text).is_ok() {
            passed.push(what.clone());
        }
    }
    assert!(
        passed.is_empty(),
        "{} of {} edits pass verification: {passed:#?}",
        passed.len(),
        all.len()
    );
}

#[test]
fn issue9_edits_blame_the_file_at_the_step_and_field() {
    let (g, bytes) = recorded();
    let text = String::from_utf8(bytes.clone()).unwrap();
    // A reward changed by hand: located by the digests, on a sealed file as on a v1 file.
    let mut sealed = g.clone();
    sealed.step_digests[3]
        .agents
        .get_mut("blue")
        .unwrap()
        .reward -= 0.02;
    let mut bytes = sealed.to_bytes();
    let text_edit = String::from_utf8(bytes.clone()).unwrap();
    let original_seal = text.lines().find(|l| l.contains("\"seal\"")).unwrap();
    let new_seal = text_edit.lines().find(|l| l.contains("\"seal\"")).unwrap();
    bytes = text_edit.replace(new_seal, original_seal).into_bytes();
    let err = Golden::from_slice(&bytes, Path::new("g.json")).unwrap_err();
    assert!(
        err.to_string().contains("at step 3, agent \"blue\""),
        "the edit is located, not only the seal broken: {err}"
    );
    let mut v1 = g.clone();
    v1.format = FORMAT_V1.into();
    assert!(!String::from_utf8(v1.to_bytes())
        .unwrap()
        .contains("\"seal\""));
    assert!(Golden::from_slice(&v1.to_bytes(), Path::new("g.json")).is_ok());
    v1.step_digests[3].agents.get_mut("blue").unwrap().reward -= 0.02;
    let err = Golden::from_slice(&v1.to_bytes(), Path::new("g.json")).unwrap_err();
    assert!(matches!(err, GoldenError::Inconsistent { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(
            "the file is inconsistent at step 3, agent \"blue\" (/step_digests/3/agents/blue)"
        ),
        "{message}"
    );
    assert!(message.contains("edited or corrupted"), "{message}");

    // Step 4 deleted: named as the missing step, not as the env diverging at step 5.
    let mut cut = g.clone();
    cut.step_digests.remove(4);
    let err = Golden::from_slice(&cut.to_bytes(), Path::new("g.json")).unwrap_err();
    assert!(err.to_string().contains("step 4 is missing"), "{err}");

    // An edit no digest covers breaks the seal of a sealed (v2) file.
    let edited = text.replacen("\"reason\": \"recorded\"", "\"reason\": \"recorde\"", 1);
    let err = Golden::from_slice(edited.as_bytes(), Path::new("g.json")).unwrap_err();
    assert!(err.to_string().contains("seal"), "{err}");
}

#[test]
fn issue9_reformatting_keeps_a_golden_valid() {
    let (_, bytes) = recorded();
    let value = lockstep_canon::parse(&bytes).unwrap();
    let compact = lockstep_canon::to_vec(&value, lockstep_canon::Profile::Python).unwrap();
    assert_eq!(judge(&compact), Ok(()));
    let crlf = String::from_utf8(bytes.clone())
        .unwrap()
        .replace('\n', "\r\n");
    assert_eq!(judge(crlf.as_bytes()), Ok(()));
}

#[test]
fn issue9_goldens_load_with_the_strict_parser() {
    let (_, bytes) = recorded();
    let text = String::from_utf8(bytes).unwrap();
    let big = text.replacen("\"seed\": 7", "\"seed\": 18446744073709551616", 1);
    let err = Golden::from_slice(big.as_bytes(), Path::new("g.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/seed"), "{err}");
    assert!(!err.contains("floating point"), "{err}");
    let dup = text.replacen("\"seed\": 7", "\"seed\": 7, \"seed\": 7", 1);
    let err = Golden::from_slice(dup.as_bytes(), Path::new("g.json"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("g.json: not a golden file: 9:14: duplicate key \"seed\""),
        "line and column: {err}"
    );
    let unknown = text.replacen("\"seed\": 7", "\"seed\": 7, \"sead\": 7", 1);
    let err = Golden::from_slice(unknown.as_bytes(), Path::new("g.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field \"sead\""), "{err}");
}
