//! End-to-end tests of `lockstep canon` and `lockstep fingerprint`, driving the real binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn lockstep(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lockstep");
    // The child may exit before reading (a bad argument, a missing file): a broken pipe here
    // is expected then, and the exit status and stderr below are what the tests check.
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let _ = pipe.write_all(stdin);
    drop(pipe);
    child.wait_with_output().expect("lockstep runs")
}

fn file(dir: &tempfile::TempDir, name: &str, body: &[u8]) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, body).unwrap();
    path.to_str().unwrap().to_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The seed-000 fresh(0) state, written with another key order and whitespace.
const FRESH0: &[u8] =
    b"{ \"visits\": 0, \"seed\": 0, \"target\": 0,\n  \"cookies\": {}, \"cache\": null }\n";
/// CPython: hashlib.sha256(json.dumps(fresh(0), sort_keys=True, separators=(',', ':')).encode())
const FRESH0_SHA256: &str = "883a3d08bbd807946dd5a3669440dec971af35a281fd0f3e15fb58c15eb08ac6";

#[test]
fn canon_prints_exactly_the_canonical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "state.json", FRESH0);
    let out = lockstep(&["canon", &path], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        out.stdout,
        br#"{"cache":null,"cookies":{},"seed":0,"target":0,"visits":0}"#
    );

    let out = lockstep(
        &["canon", "-"],
        "{\"b\":[1,1.0,1e16],\"a\":\"é😀\"}".as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        out.stdout,
        br#"{"a":"\u00e9\ud83d\ude00","b":[1,1.0,1e+16]}"#
    );

    let out = lockstep(
        &["canon", "--profile", "jcs"],
        "{\"b\":[1,1.0,1e16],\"a\":\"é😀\"}".as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"a\":\"é😀\",\"b\":[1,1,10000000000000000]}"
    );
}

#[test]
fn fingerprint_matches_python_hashlib() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "state.json", FRESH0);
    let out = lockstep(&["fingerprint", &path], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{FRESH0_SHA256}\n")
    );

    let out = lockstep(&["fingerprint", "--profile", "python-strict"], FRESH0);
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{FRESH0_SHA256}\n")
    );
}

#[test]
fn malformed_input_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "bad.json", b"{\n  \"a\": [1, 2,]\n}\n");
    for cmd in ["canon", "fingerprint"] {
        let out = lockstep(&[cmd, &path], b"");
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        assert!(out.stdout.is_empty(), "{cmd} printed nothing on stdout");
        assert_eq!(
            stderr(&out),
            format!("error: {path}:2:14: invalid JSON: unexpected character ']'\n")
        );
    }
}

#[test]
fn duplicate_key_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "dup.json", b"{\"a\": 1,\n \"a\": 2}");
    let out = lockstep(&["fingerprint", &path], b"");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!("error: {path}:2:2: invalid JSON: duplicate key \"a\"\n")
    );
}

#[test]
fn nan_is_refused_by_jcs_and_python_strict_but_kept_by_python() {
    let input = b"{\"x\": [0.5, NaN]}";
    let out = lockstep(&["canon", "--profile", "jcs"], input);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        stderr(&out),
        "error: <stdin>: no canonical form in profile jcs: NaN has no canonical form in profile \
         jcs at JSON Pointer \"/x/1\"\n"
    );
    let out = lockstep(&["fingerprint", "--profile", "python-strict"], input);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("at JSON Pointer \"/x/1\""),
        "{}",
        stderr(&out)
    );

    let out = lockstep(&["canon"], input);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, br#"{"x":[0.5,NaN]}"#);
}

#[test]
fn missing_file_and_unknown_profile_are_errors() {
    let out = lockstep(&["canon", "/nonexistent/state.json"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: cannot read /nonexistent/state.json"),
        "{}",
        stderr(&out)
    );
    let out = lockstep(&["fingerprint", "--profile", "yaml"], b"{}");
    assert_eq!(out.status.code(), Some(2));
}

/// A document of `n` small members in reverse key order, and its canonical bytes.
fn big_document(n: usize) -> (Vec<u8>, Vec<u8>) {
    let member = |i: usize| format!("\"k{i:07}\":[{i},\"v\",{i}.5]");
    let body: Vec<String> = (0..n).rev().map(member).collect();
    let canonical: Vec<String> = (0..n).map(member).collect();
    (
        format!("{{{}}}", body.join(", ")).into_bytes(),
        format!("{{{}}}", canonical.join(",")).into_bytes(),
    )
}

/// Files of 1 MiB and more are mapped rather than read (docs/canonical-json.md): the digest
/// is the one of the same bytes on standard input, the limit and the error positions hold.
#[test]
fn a_large_file_is_fingerprinted_as_its_bytes_on_stdin() {
    let (text, canonical) = big_document(40_000);
    assert!(text.len() > 1 << 20, "{} bytes", text.len());
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "big.json", &text);
    let mapped = lockstep(&["fingerprint", &path], b"");
    assert_eq!(mapped.status.code(), Some(0), "{}", stderr(&mapped));
    let piped = lockstep(&["fingerprint"], &text);
    assert_eq!(mapped.stdout, piped.stdout);
    let canon = lockstep(&["canon", &path], b"");
    assert_eq!(canon.stdout, canonical);
    let canon_digest = lockstep(&["fingerprint", "-"], &canonical);
    assert_eq!(mapped.stdout, canon_digest.stdout);

    let limited = lockstep(&["--max-input-bytes", "1048576", "fingerprint", &path], b"");
    assert_eq!(limited.status.code(), Some(2));
    assert_eq!(
        stderr(&limited),
        format!("error: {path}: input is larger than the limit of 1048576 bytes (raise it with --max-input-bytes)\n")
    );

    let mut broken = text.clone();
    let at = broken.len() - 1;
    broken[at] = b',';
    let path = file(&dir, "broken.json", &broken);
    let out = lockstep(&["fingerprint", &path], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with(&format!(
            "error: {path}:1:{}: invalid JSON: ",
            broken.len() + 1
        )),
        "{}",
        stderr(&out)
    );
}

/// A state file of hosts (large, keys out of order in every record, the largest member last
/// and first in key order) is hashed on a second thread while it is read
/// (docs/canonical-json.md, "Sixth round"), and read on two from 1 MiB ("Eighth round"):
/// the digest is still the SHA-256 of exactly what `lockstep canon` prints, and an error
/// found after bytes were hashed is still reported.
#[test]
fn a_large_state_hashed_while_it_is_read_has_the_digest_of_its_canonical_bytes() {
    use sha2::Digest as _;
    let hosts: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                "\"host-{i:05}\": {{\"os\": \"linux\", \"ip\": \"10.0.{}.{}\", \"load\": [{i}.25, 0.5], \
                 \"owner\": \"\\u00e9quipe-{}\", \"compromised\": false}}",
                i / 256,
                i % 256,
                i % 50
            )
        })
        .collect();
    let text = format!(
        "{{\"step\": 3, \"seed\": 7, \"hosts\": {{{}}}}}",
        hosts.join(", ")
    );
    assert!(text.len() > 2 << 20, "{} bytes", text.len());
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "state.json", text.as_bytes());
    for profile in ["python", "jcs"] {
        let canon = lockstep(&["canon", "--profile", profile, &path], b"");
        assert_eq!(canon.status.code(), Some(0), "{}", stderr(&canon));
        assert!(canon
            .stdout
            .starts_with(b"{\"hosts\":{\"host-00000\":{\"compromised\""));
        let digest = lockstep(&["fingerprint", "--profile", profile, &path], b"");
        assert_eq!(digest.status.code(), Some(0), "{}", stderr(&digest));
        let want = hex::encode(sha2::Sha256::digest(&canon.stdout));
        assert_eq!(String::from_utf8_lossy(&digest.stdout), format!("{want}\n"));
    }
    // A value without a canonical form, and a duplicate key, after the hosts went out.
    let nan = format!("{}, \"zzz\": NaN}}", &text[..text.len() - 1]);
    let path = file(&dir, "nan.json", nan.as_bytes());
    let out = lockstep(&["fingerprint", "--profile", "python-strict", &path], b"");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {path}: no canonical form in profile python-strict: NaN has no canonical \
             form in profile python-strict at JSON Pointer \"/zzz\"\n"
        )
    );
    let twice = format!("{}, \"hosts\": 0}}", &text[..text.len() - 1]);
    let path = file(&dir, "twice.json", twice.as_bytes());
    let out = lockstep(&["fingerprint", &path], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("duplicate key"), "{}", stderr(&out));
}
