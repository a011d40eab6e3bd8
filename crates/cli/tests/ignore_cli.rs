//! End to end (issue 30 item 4): fields meant to vary. The clicker with `bug="clock"` stamps
//! `time.time()` into each chat message, in its observation and in its state, as BrowserGym
//! does: without `--ignore` every check fails on the stamp; ignoring the stamps (flags, or a
//! contract's `[compare] ignore`) leaves everything else compared, and the checks pass. A
//! pattern that is not one is exit 2 with the pattern named.

mod support;

use std::path::Path;

const STAMPS: [&str; 2] = ["/obs/chat_messages/*/timestamp", "/state/chat/*/timestamp"];

/// `lockstep check` of the clocked clicker with `flags` before `--cmd`: exit code, text and
/// report.json (`Null` when none was written).
fn check_clicker(flags: &[&str], out: &Path) -> (Option<i32>, String, serde_json::Value) {
    let flags: Vec<&str> = ["--seeds", "0..2", "--steps", "4"]
        .into_iter()
        .chain(flags.iter().copied())
        .collect();
    let run = support::check_adapter(
        &flags,
        &[
            "factory",
            "lockstep_adapter.testing:clicker",
            "--kwargs",
            r#"{"bug":"clock"}"#,
            "--policy",
            "lockstep_adapter.testing:click_policy",
        ],
        out,
    );
    (
        run.code,
        run.text,
        run.report.unwrap_or(serde_json::Value::Null),
    )
}

/// Each check's verdicts over the trials, as `check: passed` pairs (and `conformity`).
fn verdicts(report: &serde_json::Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for trial in report["trials"].as_array().unwrap() {
        assert!(trial["error"].is_null(), "{}", trial["error"]);
        out.push((
            "conformity".to_string(),
            trial["audit"]["conforms"].as_bool().unwrap(),
        ));
        for c in trial["checks"].as_array().unwrap() {
            if c["applicable"] == true {
                let name = c["check"].as_str().unwrap().to_string();
                out.push((name, c["passed"].as_bool().unwrap()));
            }
        }
    }
    out
}

#[test]
fn a_clock_fails_every_check_until_its_stamps_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text, report) = check_clicker(&[], &dir.path().join("plain"));
    assert_eq!(code, Some(1), "{text}");
    let failed: Vec<_> = verdicts(&report)
        .into_iter()
        .filter(|(_, passed)| !passed)
        .map(|(name, _)| name)
        .collect();
    for name in ["conformity", "same", "process", "interleaved"] {
        assert!(failed.iter().any(|f| f == name), "{name} passed:\n{text}");
    }
    assert!(text.contains("timestamp"), "{text}");
    assert!(
        report["params"].get("ignore").is_none(),
        "{}",
        report["params"]
    );

    let mut flags = Vec::new();
    for p in STAMPS {
        flags.extend(["--ignore", p]);
    }
    let (code, text, report) = check_clicker(&flags, &dir.path().join("ignored"));
    assert_eq!(code, Some(0), "{text}");
    assert!(
        verdicts(&report).iter().all(|(_, passed)| *passed),
        "{text}"
    );
    assert_eq!(report["params"]["ignore"], serde_json::json!(STAMPS));
    let header = text.lines().find(|l| l.starts_with("lockstep ")).unwrap();
    assert!(
        header.ends_with(&format!(" ignore {}", STAMPS.join(","))),
        "{header}"
    );
}

#[test]
fn ignoring_one_stamp_still_catches_the_other_and_the_replay_keeps_the_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text, report) = check_clicker(&["--ignore", STAMPS[0]], dir.path());
    assert_eq!(code, Some(1), "{text}");
    let v = verdicts(&report);
    assert!(v.iter().any(|(n, p)| n == "conformity" && !p), "{text}");
    assert!(v.iter().all(|(n, p)| n == "conformity" || *p), "{text}");
    assert!(text.contains("changed /chat/0/timestamp"), "{text}");
    assert!(
        text.contains(&format!("--ignore '{}'", STAMPS[0])),
        "the replay command drops the pattern:\n{text}"
    );
}

#[test]
fn a_contract_names_what_it_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("clicker.toml");
    std::fs::write(
        &contract,
        format!(
            "name = \"clicker\"\nversion = 1\nprofile = \"python\"\n\n[[layers]]\nname = \"task\"\nfields = [\"target\", \"t\", \"chat\"]\n\n[[layers]]\nname = \"gymnasium\"\nfields = [\"_np_random\", \"_np_random_seed\", \"action_space\", \"action_space_rng\", \"bug\", \"horizon\", \"lockstep_skipped\", \"observation_space\"]\n\n[compare]\nignore = [\"{}\", \"{}\"]\n",
            STAMPS[0], STAMPS[1]
        ),
    )
    .unwrap();
    let contract = contract.to_str().unwrap().to_string();
    let (code, text, report) = check_clicker(&["--contract", &contract], &dir.path().join("out"));
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(report["params"]["ignore"], serde_json::json!(STAMPS));

    std::fs::write(
        dir.path().join("bad.toml"),
        "name = \"c\"\nversion = 1\n\n[[layers]]\nname = \"task\"\nfields = [\"t\"]\n\n[compare]\nignore = [\"/reward\"]\n",
    )
    .unwrap();
    let bad = dir.path().join("bad.toml");
    let (code, text, _) = check_clicker(
        &["--contract", bad.to_str().unwrap()],
        &dir.path().join("bad"),
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("bad.toml"), "{text}");
    assert!(text.contains("ignore pattern \"/reward\""), "{text}");
}

#[test]
fn a_pattern_that_is_not_one_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text, report) = check_clicker(&["--ignore", "obs/x"], dir.path());
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--ignore: ignore pattern \"obs/x\": a JSON Pointer starts with `/`"),
        "{text}"
    );
    assert!(report.is_null());
}
