//! End to end: the defects docs/findings.md reports on third-party environments, reproduced
//! through the real binary and the Python adapter (`PYTHONPATH=python`, the interpreter from
//! `LOCKSTEP_PYTHON`, which scripts/test fills from python/requirements-test.txt). Each test
//! is the finding's command, cut to the steps that show it.

use std::process::{Command, Output};

fn python() -> String {
    std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// `lockstep replay --cmd -- python -m lockstep_adapter ARGS...` with the adapter on the path.
fn replay(lockstep_args: &[&str], adapter_args: &[&str]) -> (Option<i32>, String) {
    let python_dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python");
    let py = python();
    let mut args = vec!["replay"];
    args.extend(lockstep_args);
    args.extend(["--cmd", "--", &py, "-m", "lockstep_adapter"]);
    args.extend(adapter_args);
    let o: Output = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(&args)
        .env("PYTHONPATH", python_dir)
        .output()
        .expect("the lockstep binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), text)
}

/// BipedalWalker-v3 keeps one Box2D world for the life of the instance and only destroys and
/// re-creates its bodies at reset, so the third episode of a seed on one instance is not the
/// first: the world's history changes the solver's contact order. Fresh instances agree.
#[test]
fn bipedal_walker_reuses_its_box2d_world_across_resets() {
    let (code, text) = replay(
        &["--seed", "0", "--steps", "10", "--checks", "same"],
        &["gymnasium", "BipedalWalker-v3"],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("rollout 3 (same instance) differs from rollout 1: step 1, agent \"agent\", obs key \"obs\""),
        "{text}"
    );
}

/// highway-env's reset builds a new action space and puts a sample of it, unseeded, into the
/// reset info (`info["action"]`), so `reset(seed=0)` gives a different info each time, and the
/// replay names that line. Its dynamics are deterministic: without that key every check
/// passes (docs/findings.md).
#[test]
fn highway_env_reset_info_holds_an_unseeded_action() {
    let (code, text) = replay(
        &["--seed", "0", "--steps", "1", "--checks", "same"],
        &["gymnasium", "highway_env:highway-v0"],
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("step 0, agent \"agent\", info: /action changed"),
        "{text}"
    );
    // And the line that drew it: highway-env's reset samples an action space nobody seeded.
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("cause: ")
            && l.contains("highway_env/envs/common/abstract.py:")
            && l.contains("in reset: Discrete.seed(None)")),
        "{text}"
    );
}
