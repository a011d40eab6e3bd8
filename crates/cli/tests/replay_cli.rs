//! End to end: `lockstep replay` and `lockstep trace` on the real binary.

use std::process::{Command, Output};

fn lockstep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .output()
        .expect("the lockstep binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The names of the checks reported as failed.
fn failed_checks(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix("FAIL "))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn correct_fixture_passes_every_check() {
    let o = lockstep(&["replay", "--env", "fixture", "--seed", "7", "--steps", "60"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("lockstep {} replay", env!("CARGO_PKG_VERSION")))
            && first.contains("--seed 7"),
        "seed and version come first: {first}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        7,
        "{out}"
    );
    // The fixture is no vector env.
    assert!(
        out.contains("all 7 checks that apply passed (1 not applicable)"),
        "{out}"
    );
}

#[test]
fn each_faulty_fixture_fails_the_right_checks() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "fixture:global-rng",
            &["interleaved", "parallel_workers"],
            "step 1, agent \"blue\", obs key \"noise\"",
        ),
        (
            "fixture:wall-clock",
            &[
                "same_seed",
                "interleaved",
                "other_process",
                "parallel_workers",
                "continuation",
                "leftover",
            ],
            "step 5, logs: line 2",
        ),
        (
            "fixture:hash-order",
            &[
                "same_seed",
                "interleaved",
                "other_process",
                "parallel_workers",
                "continuation",
                "leftover",
            ],
            "step 0, agent \"blue\", obs key \"hosts\"",
        ),
        (
            "fixture:sticky-cache",
            &["same_seed"],
            "step 0, agent \"blue\", obs key \"seen\"",
        ),
        (
            "fixture:stale-info",
            &["same_seed"],
            "step 1, agent \"blue\", info: /episode_return changed",
        ),
        (
            "fixture:late-divergence",
            &[
                "same_seed",
                "interleaved",
                "other_process",
                "parallel_workers",
                "continuation",
            ],
            "step 51, agent \"blue\", obs key \"tick\"",
        ),
        (
            "fixture:seedless",
            &["other_seed"],
            "gave identical episodes",
        ),
    ];
    for (env, want, site) in cases {
        let o = lockstep(&["replay", "--env", env, "--seed", "3", "--steps", "80"]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{env}: {out}");
        assert_eq!(failed_checks(&out), *want, "{env}: {out}");
        assert!(out.contains(site), "{env}: expected {site:?} in {out}");
        let last = out.lines().last().unwrap();
        assert!(
            last.starts_with("replay the failures with: lockstep replay --env")
                && last.contains(env),
            "{env}: {last}"
        );
    }
}

#[test]
fn the_other_process_check_spawns_the_binary() {
    // hash-order differs per process: only a real child process can show it here.
    let o = lockstep(&[
        "replay",
        "--env",
        "fixture:hash-order",
        "--checks",
        "process",
        "--steps",
        "5",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_eq!(failed_checks(&out), ["other_process"]);
    assert!(
        out.contains("this process") && out.contains("a fresh process"),
        "{out}"
    );
    assert!(
        out.contains("element"),
        "the child's step was captured: {out}"
    );
}

#[test]
fn json_report_holds_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replay.json");
    let o = lockstep(&[
        "replay",
        "--env",
        "fixture:stale-info",
        "--checks",
        "same,other",
        "--steps",
        "10",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(v["format"], "lockstep/replay/v1");
    assert_eq!(v["passed"], false);
    assert_eq!(v["checks"][0]["check"], "same_seed");
    assert_eq!(v["checks"][0]["divergence"]["step"], 1);
    assert_eq!(v["checks"][0]["divergence"]["site"]["kind"], "info");
    assert_eq!(
        v["checks"][0]["divergence"]["detail"]["changes"][0]["pointer"],
        "/episode_return"
    );
    assert_eq!(v["checks"][1]["passed"], true);
    assert!(v["replay"].as_str().unwrap().contains("--checks same"));
}

#[test]
fn bad_arguments_exit_2() {
    let o = lockstep(&["replay", "--env", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unknown env") && err.contains("fixture:wall-clock"),
        "{err}"
    );
    let o = lockstep(&["replay", "--env", "fixture", "--checks", "same,bogus"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown check \"bogus\""));
}

#[test]
fn trace_is_the_same_line_in_separate_processes() {
    let args = ["trace", "--env", "fixture", "--seed", "11", "--steps", "70"];
    let a = lockstep(&args);
    let b = lockstep(&args);
    assert_eq!(a.status.code(), Some(0));
    let line = stdout(&a);
    assert_eq!(line.trim().len(), 64, "one hex digest: {line}");
    assert_eq!(line, stdout(&b));
    let no_cache = lockstep(&[&args[..], &["--no-cache"]].concat());
    assert_eq!(
        line,
        stdout(&no_cache),
        "the revision cache changes no digest"
    );
    let other = lockstep(&["trace", "--env", "fixture", "--seed", "12", "--steps", "70"]);
    assert_ne!(line, stdout(&other));
}

#[test]
fn trace_json_carries_every_step() {
    let o = lockstep(&[
        "trace",
        "--env",
        "fixture",
        "--seed",
        "1",
        "--steps",
        "4",
        "--json",
        "--capture",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "lockstep/trace/v1");
    assert_eq!(v["step_digests"].as_array().unwrap().len(), 5);
    assert_eq!(v["end"], "steps_exhausted");
    assert!(v["step_digests"][0]["agents"]["blue"]["obs"]["noise"].is_string());
    assert_eq!(
        v["captured"]["agents"]["red"]["obs"]["pos"]["dtype"],
        "int32"
    );
    let plain = lockstep(&["trace", "--env", "fixture", "--seed", "1", "--steps", "4"]);
    assert_eq!(stdout(&plain).trim(), v["episode"].as_str().unwrap());
}
