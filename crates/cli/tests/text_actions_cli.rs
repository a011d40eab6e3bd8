//! End to end (issue 30 item 2): an env with a text action space, which lockstep's sampler
//! cannot act in, driven through the adapter by `--policy MODULE:FUNCTION` or `--actions FILE`.

mod support;

use std::path::Path;

/// `lockstep check` of the adapter's `clicker` with `driver` flags: exit code, text, report.
fn check_clicker(driver: &[&str], out: &Path) -> (Option<i32>, String, Option<serde_json::Value>) {
    let adapter: Vec<&str> = ["factory", "lockstep_adapter.testing:clicker"]
        .into_iter()
        .chain(driver.iter().copied())
        .collect();
    let run = support::check_adapter(
        &[
            "--seeds",
            "2",
            "--steps",
            "6",
            "--checks",
            "same,other,interleaved,parallel",
        ],
        &adapter,
        out,
    );
    (run.code, run.text, run.report)
}

#[test]
fn a_policy_of_its_arguments_drives_a_text_env_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let policy = ["--policy", "lockstep_adapter.testing:click_policy"];
    let (code, text, report) = check_clicker(&policy, dir.path());
    assert_eq!(code, Some(0), "{text}");
    let driver = &report.unwrap()["envs"][0]["about"]["driver"]["policy"];
    assert_eq!(driver["name"], "lockstep_adapter.testing:click_policy");
    assert_eq!(driver["sha256"].as_str().unwrap().len(), 64, "{driver}");
}

#[test]
fn a_policy_that_reads_anything_else_is_a_finding_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let policy = ["--policy", "lockstep_adapter.testing:impure_policy"];
    let (code, text, _) = check_clicker(&policy, dir.path());
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("gave two actions for the same observation and generator at step 1"),
        "{text}"
    );
}

#[test]
fn a_script_of_actions_drives_it_and_a_text_space_without_a_driver_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("actions.jsonl");
    let lines: Vec<String> = (0..6).map(|i| format!("\"click('b{}')\"", i % 5)).collect();
    std::fs::write(&script, lines.join("\n")).unwrap();
    let actions = ["--actions", script.to_str().unwrap()];
    let (code, text, report) = check_clicker(&actions, &dir.path().join("script"));
    assert_eq!(code, Some(0), "{text}");
    let driver = &report.unwrap()["envs"][0]["about"]["driver"]["actions"];
    assert_eq!(driver["steps"], 6, "{driver}");

    let (code, text, _) = check_clicker(&[], &dir.path().join("none"));
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("a text action space needs --policy MODULE:FUNCTION or --actions FILE"),
        "{text}"
    );
}
