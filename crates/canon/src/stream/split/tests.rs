//! The split against the two-step path (`parse_with`, then `to_vec`), on documents built so
//! that the cut lands where a guess can go wrong, and whether the second half was taken.

use crate::stream::{canonicalize_split_from, canonicalize_tail_first, TailFirst};
use crate::{parse_with, to_vec, ParseOptions, Profile};

const PROFILES: [Profile; 3] = [Profile::Python, Profile::PythonStrict, Profile::Jcs];

fn two_step(text: &[u8], profile: Profile) -> Result<Vec<u8>, String> {
    let options = ParseOptions {
        allow_nan: true,
        ..ParseOptions::default()
    };
    let value = parse_with(text, &options).map_err(|e| format!("parse: {e}"))?;
    to_vec(&value, profile).map_err(|e| format!("value: {e}"))
}

/// How the split is run.
#[derive(Clone, Copy, Debug)]
enum Run {
    /// The second part read first and handed over as `how` says (the same split every
    /// time).
    TailFirst { how: TailFirst },
    /// A real second thread, from `min_len` bytes on.
    Threads { min_len: usize },
}

/// The split's outcome and whether it took the second part.
fn split(text: &[u8], profile: Profile, run: Run) -> (Result<Vec<u8>, String>, bool) {
    let options = ParseOptions {
        allow_nan: true,
        ..ParseOptions::default()
    };
    let mut out = Vec::new();
    let result = match run {
        Run::TailFirst { how } => canonicalize_tail_first(text, &options, profile, &mut out, how),
        Run::Threads { min_len } => {
            canonicalize_split_from(text, &options, profile, &mut out, min_len)
        }
    };
    match result {
        Ok(taken) => (Ok(out), taken),
        Err(crate::CanonError::Parse(e)) => (Err(format!("parse: {e}")), false),
        Err(crate::CanonError::Value(e)) => (Err(format!("value: {e}")), false),
        Err(e) => (Err(format!("io: {e}")), false),
    }
}

/// Same outcome as the two-step path in every profile, with the second part handed over
/// whole, early and late; returns whether it was taken whole (the same in every profile
/// that succeeds, or the test says which differed), and asserts that a part taken whole is
/// also taken late.
fn same_as_two_step(text: &str) -> bool {
    let mut taken = None;
    for profile in PROFILES {
        let want = two_step(text.as_bytes(), profile);
        let run = |how| split(text.as_bytes(), profile, Run::TailFirst { how });
        let (early, _) = run(TailFirst::Early);
        assert_eq!(early, want, "{profile}, early, on {text:?}");
        let (late, took_late) = run(TailFirst::Late);
        assert_eq!(late, want, "{profile}, late, on {text:?}");
        let (got, took) = run(TailFirst::Whole);
        assert_eq!(got, want, "{profile} on {text:?}");
        if got.is_ok() {
            assert_eq!(*taken.get_or_insert(took), took, "{profile} on {text:?}");
            assert!(
                took_late || !took,
                "{profile}: taken whole, not late, on {text:?}"
            );
        }
    }
    taken.unwrap_or(false)
}

fn record(i: usize) -> String {
    format!(
        r#"{{"ip":"10.0.{}.{}","os":"linux, \"quoted\"","ports":[22,{i}],"risk":0.{i},"tags":["a,\"b\":","c"]}}"#,
        i / 256,
        i % 256
    )
}

fn records(n: usize, key: impl Fn(usize) -> String) -> String {
    let members: Vec<String> = (0..n)
        .map(|i| format!("\"{}\":{}", key(i), record(i)))
        .collect();
    members.join(",")
}

#[test]
fn a_large_object_of_sorted_records_is_taken() {
    let body = records(400, |i| format!("host-{i:05}"));
    assert!(same_as_two_step(&format!(
        r#"{{"step":0,"seed":7,"hosts":{{{body}}}}}"#
    )));
    assert!(same_as_two_step(&format!("{{{body}}}")));
}

#[test]
fn a_top_level_array_of_records_is_taken() {
    let items: Vec<String> = (0..400).map(record).collect();
    assert!(same_as_two_step(&format!("[{}]", items.join(","))));
    assert!(same_as_two_step(&format!(
        r#"{{"rows":[{}],"a":1}}"#,
        items.join(", \n")
    )));
}

#[test]
fn keys_out_of_order_across_the_cut_are_read_by_one_thread() {
    // Sorted on each side, not at the cut: the tail is dropped, the bytes are the same.
    let first = records(200, |i| format!("b{i:05}"));
    let second = records(200, |i| format!("a{i:05}"));
    assert!(!same_as_two_step(&format!("{{{first},{second}}}")));
    // Unsorted within the tail.
    let second = records(200, |i| format!("c{:05}", 1000 - i));
    assert!(!same_as_two_step(&format!("{{{first},{second}}}")));
    // A key of the first half again in the second: the duplicate is reported as without
    // a split.
    let second = records(200, |i| format!("b{:05}", i.min(3)));
    let text = format!("{{{first},{second}}}");
    assert!(two_step(text.as_bytes(), Profile::Python).is_err());
    same_as_two_step(&text);
}

#[test]
fn decoded_keys_on_both_sides_of_the_cut_keep_their_bytes() {
    // Every key has an escape, so the tail's decoded keys follow the first half's in the
    // key buffer. The first half's keys are long runs of `a`, the tail ends with short keys:
    // a tail key read at its offset in the tail's own buffer would land in those runs, and
    // the last two keys would compare equal (a duplicate).
    let long = "a".repeat(200);
    let body = records(400, |i| {
        if i < 250 {
            format!("h\\u00e9-{long}-{i:05}")
        } else {
            format!("h\\u00e9-b{i:05}")
        }
    });
    assert!(same_as_two_step(&format!(
        r#"{{"\u007a\u007a\u007a\u007a\u007a\u007a\u007a\u007a":{{{body}}}}}"#
    )));
}

#[test]
fn errors_after_the_cut_are_found_and_worded_as_without_a_split() {
    let body = records(300, |i| format!("host-{i:05}"));
    // A value without a canonical form in jcs and python-strict (profile python writes it,
    // and takes the second half).
    same_as_two_step(&format!(r#"{{"hosts":{{{body},"zz":NaN}}}}"#));
    for bad in [
        // A parse error near the end, then one in the second half's middle.
        format!(r#"{{"hosts":{{{body},"zz":[1,]}}}}"#),
        format!(
            r#"{{"hosts":{{{}}}}}"#,
            body.replacen(r#""host-00250":"#, r#""host-00250"::"#, 1)
        ),
        // The document ends inside the second half.
        format!(r#"{{"hosts":{{{body}"#),
    ] {
        assert!(!same_as_two_step(&bad));
    }
}

#[test]
fn a_container_too_deep_for_the_split_is_read_by_one_thread() {
    let items: Vec<String> = (0..300).map(record).collect();
    let text = format!("[[[[[{}]]]]]", items.join(","));
    assert!(!same_as_two_step(&text));
    let text = format!("[[[[{}]]]]", items.join(","));
    assert!(same_as_two_step(&text));
}

#[test]
fn commas_in_strings_and_small_containers_around_the_middle() {
    // Every cut lands in a string full of `,"k":` or inside a small record; the second
    // half climbs out of those and is taken at the container around them.
    let tricky = r#""x,\"k\":1,\"l\":[2,{\"m\":3}],": "v,{,[,\",\"""#;
    let items: Vec<String> = (0..300)
        .map(|i| format!(r#"{{"id":{i},"t":{{{tricky},"n":[{i},{{"o":"p,q"}}]}}}}"#))
        .collect();
    assert!(same_as_two_step(&format!("[{}]", items.join(","))));
    // With a lone string as the whole document there is nothing to split.
    assert!(!same_as_two_step(&format!(
        "\"{}\"",
        "a,\\\"b\\\":1".repeat(100)
    )));
}

#[test]
fn two_threads_give_the_bytes_of_one() {
    // Above the split's threshold with a real second thread: whether the tail is taken
    // depends on timing, the bytes never do.
    let body = records(12_000, |i| format!("host-{i:05}"));
    let items: Vec<String> = (0..12_000).map(record).collect();
    for text in [
        format!(r#"{{"step":0,"seed":7,"hosts":{{{body}}}}}"#),
        format!("[{}]", items.join(",")),
        format!(r#"{{"hosts":{{{body},"zz":NaN}}}}"#),
        format!(r#"{{"hosts":{{{body}"#),
    ] {
        assert!(text.len() > super::SPLIT_MIN);
        for profile in PROFILES {
            let want = two_step(text.as_bytes(), profile);
            let threads = Run::Threads {
                min_len: super::SPLIT_MIN,
            };
            assert_eq!(split(text.as_bytes(), profile, threads).0, want);
        }
    }
}
