//! End to end (issue 30 item 6): an external env names its browser as a layer, and `check
//! --cmd` reads it over DevTools after every reset, as `check` does for webtask: cookies,
//! storage, IndexedDB and the open pages. The browser task launches a fresh Chromium at each
//! reset; with `bug="kept_browser"` the episode's localStorage survives the reset. Needs
//! Chromium (scripts/test installs Debian's).

mod support;

use std::path::Path;

fn check(kwargs: &str, out: &Path) -> (Option<i32>, String, serde_json::Value) {
    let run = support::check_adapter(
        &[
            "--seeds",
            "0..3",
            "--steps",
            "3",
            "--checks",
            "same",
            "--rollouts",
            "2",
        ],
        &["factory", "lockstep_adapter.testing_browser:browser_task"]
            .into_iter()
            .chain(["--kwargs", kwargs, "--exclude", "_browser"])
            .collect::<Vec<_>>(),
        out,
    );
    let report = run.report();
    (run.code, run.text, report)
}

#[test]
fn a_browser_named_by_the_env_is_audited_and_its_version_recorded() {
    let out = tempfile::tempdir().unwrap();
    let (code, text, r) = check("{}", out.path());
    assert_eq!(code, Some(0), "{text}");
    let about = &r["envs"][0]["about"];
    let fields = about["contract"]["layers"][0]["fields"].as_array().unwrap();
    assert!(fields.iter().any(|f| f == "browser"), "{about}");
    let version = about["provenance"]["browsers"]["browser"].as_str().unwrap();
    assert!(version.starts_with("Chrome/"), "{version}");
}

#[test]
fn storage_a_kept_browser_carries_across_the_reset_is_found_in_the_layer() {
    let out = tempfile::tempdir().unwrap();
    let (code, text, r) = check(r#"{"bug":"kept_browser"}"#, out.path());
    assert_eq!(code, Some(1), "{text}");
    // Seeds whose episode submitted the task (the seeded actions of seeds 1 and 2 do) start
    // the next episode with the task marked done in localStorage.
    let failing: Vec<&serde_json::Value> = r["trials"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["audit"]["conforms"] == false)
        .collect();
    assert!(!failing.is_empty(), "{text}");
    for t in failing {
        let audit = &t["audit"];
        assert!(
            audit["different_fields"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "browser"),
            "{audit}"
        );
        let pointers: Vec<&str> = audit["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["pointer"].as_str())
            .collect();
        assert!(
            pointers
                .iter()
                .any(|p| p.starts_with("/browser/local_storage/http:~1~1127.0.0.1:")),
            "{pointers:?}"
        );
    }
    assert!(text.contains("added /browser/local_storage/"), "{text}");
}
