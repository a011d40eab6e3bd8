//! End to end: `lockstep trace --format v2` on the real binary (format v1's tests are in
//! replay_cli.rs).

use std::process::{Command, Output};

fn lockstep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .output()
        .expect("the lockstep binary runs")
}

fn line(args: &[&str]) -> String {
    let o = lockstep(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(text.trim().len(), 64, "one hex digest: {text}");
    text
}

/// A v2, v3 or v4 episode digest is one line, the same in two processes and with the caches
/// off, its own for another seed, and neither v1's nor another format's; v1 stays the
/// default.
#[test]
fn v2_v3_and_v4_traces_are_reproducible_and_not_v1() {
    for env in ["fixture", "range:ransomware"] {
        let mut digests = Vec::new();
        for format in ["v2", "v3", "v4"] {
            let args = [
                "trace", "--env", env, "--seed", "4", "--steps", "300", "--format", format,
            ];
            let first = line(&args);
            assert_eq!(first, line(&args), "{env} {format}");
            assert_eq!(
                first,
                line(&[&args[..], &["--no-cache"]].concat()),
                "{env} {format}: the caches change no digest"
            );
            let mut other = args;
            other[4] = "5";
            assert_ne!(first, line(&other), "{env} {format}");
            digests.push(first);
        }
        let v1 = line(&["trace", "--env", env, "--seed", "4", "--steps", "300"]);
        assert_eq!(
            v1,
            line(&["trace", "--env", env, "--seed", "4", "--steps", "300", "--format", "v1"]),
            "{env}"
        );
        digests.push(v1);
        digests.sort();
        digests.dedup();
        assert_eq!(digests.len(), 4, "{env}: v1, v2, v3 and v4 all differ");
    }
}

/// `--json --format v2|v3|v4` names its format and carries one digest per step (no agent
/// digests) whose chain is the plain episode digest.
#[test]
fn v2_v3_and_v4_trace_json_name_their_format() {
    for format in ["v2", "v3", "v4"] {
        let args = [
            "trace", "--env", "fixture", "--seed", "1", "--steps", "4", "--format", format,
        ];
        let o = lockstep(&[&args[..], &["--json"]].concat());
        assert_eq!(o.status.code(), Some(0));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["format"], format!("lockstep/trace/{format}"));
        let steps = v["step_digests"].as_array().unwrap();
        assert_eq!(steps.len(), 5);
        assert!(steps
            .iter()
            .all(|s| s["agents"].as_object().unwrap().is_empty()));
        assert_eq!(line(&args).trim(), v["episode"].as_str().unwrap());
    }
}

/// An unknown format is refused with a usage error.
#[test]
fn unknown_trace_format_is_refused() {
    let o = lockstep(&["trace", "--env", "fixture", "--format", "v5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("v5"));
}
