//! End to end (issue 30 item 5): a failure that comes from timing says so, with the figures,
//! and one that comes from state does not. The timeout clicker's actions time out when a step
//! stalls, as a browser's do under load; the sticky cache keeps state across resets.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{python, repo};

fn lockstep(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(repo())
        .args(["check", "--out"])
        .arg(out)
        .args(args)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap()
}

fn report(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

#[test]
fn a_failure_from_timing_is_named_as_timing_with_its_figures() {
    let out = tempfile::tempdir().unwrap();
    let py = python();
    let o = lockstep(
        &[
            "--seeds",
            "0..1",
            "--steps",
            "8",
            "--checks",
            "same",
            "--timings",
            "--cmd",
            "--",
            &py,
            "-m",
            "lockstep_adapter",
            "factory",
            "lockstep_adapter.testing:timeout_clicker",
            "--policy",
            "lockstep_adapter.testing:click_policy",
        ],
        out.path(),
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{text}");
    // Either sign names timing: the divergence moves from rollout to rollout, or the divergent
    // step stalled on one side (150 ms against a step of well under a millisecond).
    assert!(
        text.contains("timing: the env's behaviour depends on timing"),
        "{text}"
    );
    let r = report(out.path());
    assert_eq!(r["params"]["timings"], true);
    let same = &r["trials"][0]["checks"][0];
    assert_eq!(same["check"], "same");
    let hint = &same["timing"];
    let moving = hint["divergent_steps"].as_array().map_or(0, Vec::len);
    assert!(
        moving == 9 || hint["slow_step"]["ms"].as_f64().unwrap_or(0.0) >= 100.0,
        "{hint}"
    );
    // The reset and every step of both runs compared, in milliseconds.
    let step = same["divergence"]["step"].as_u64().unwrap() as usize;
    for side in ["left", "right"] {
        let times = same["step_ms"][side].as_array().unwrap();
        assert!(times.len() > step, "{side}: {times:?}");
        assert!(times.iter().all(|t| t.as_f64().unwrap() >= 0.0));
    }
}

#[test]
fn a_failure_from_state_is_not_named_timing_and_its_report_keeps_its_bytes() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let args = [
        "fixture:sticky-cache",
        "--seeds",
        "0..2",
        "--checks",
        "same",
    ];
    let runs: Vec<Output> = dirs[..2]
        .iter()
        .map(|d| lockstep(&args, d.path()))
        .collect();
    let text = String::from_utf8_lossy(&runs[0].stdout).into_owned();
    assert_eq!(runs[0].status.code(), Some(1), "{text}");
    assert!(!text.contains("timing:"), "{text}");
    let r = report(dirs[0].path());
    assert!(r["params"].get("timings").is_none());
    for c in r["trials"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["checks"].as_array().unwrap().iter())
    {
        assert_eq!(c["passed"], false);
        assert!(
            c.get("timing").is_none() && c.get("step_ms").is_none(),
            "{c}"
        );
    }
    let bytes = |d: &tempfile::TempDir| std::fs::read(d.path().join("report.json")).unwrap();
    assert_eq!(
        bytes(&dirs[0]),
        bytes(&dirs[1]),
        "no wall time in a default report"
    );

    let mut timed = args.to_vec();
    timed.push("--timings");
    let o = lockstep(&timed, dirs[2].path());
    assert_eq!(o.status.code(), Some(1));
    let r = report(dirs[2].path());
    assert_eq!(r["params"]["timings"], true);
    let step_ms = &r["trials"][0]["checks"][0]["step_ms"];
    assert!(!step_ms["left"].as_array().unwrap().is_empty(), "{step_ms}");
}
