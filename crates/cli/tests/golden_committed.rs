//! The committed golden trajectory of the range (ransomware, seed 42, 25 ticks, log_latency
//! 2) must reproduce: the range's dynamics never drift silently. A deliberate change is an
//! update with a reason, which this file's changelog then records.

use std::path::PathBuf;
use std::process::Command;

fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../goldens/range-ransomware-42.json")
}

#[test]
fn committed_range_golden_reproduces() {
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["golden", "verify"])
        .arg(golden())
        .env("CI", "true") // never leave a pending file in the source tree
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the committed range golden drifted:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn committed_range_golden_names_its_config_and_history() {
    let g: serde_json::Value = serde_json::from_slice(&std::fs::read(golden()).unwrap()).unwrap();
    assert_eq!(g["env"], "range:ransomware?log_latency=2&max_ticks=25");
    assert_eq!(g["seed"], 42);
    assert_eq!(g["config"]["log_latency"], 2);
    assert_eq!(g["config"]["max_ticks"], 25);
    let changelog = g["changelog"].as_array().unwrap();
    assert!(!changelog.is_empty(), "a golden carries its changelog");
    assert!(changelog
        .iter()
        .all(|e| !e["reason"].as_str().unwrap().trim().is_empty()));
}
