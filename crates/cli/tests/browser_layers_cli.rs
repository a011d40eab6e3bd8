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
    // Each reset launched a browser in a fresh profile, and the env drove it over DevTools:
    // all of it the named layer's, listed with it and never a warning. Ports and profile
    // paths are written as placeholders, so the launches are one effect, counted.
    assert!(!text.contains("warning:"), "{text}");
    support::assert_valid_report(&out.path().join("report.json"));
    for t in r["trials"].as_array().unwrap() {
        let audit = &t["audit"];
        assert!(audit.get("warnings").is_none(), "{audit}");
        let effects = audit["effects"].as_array().unwrap();
        let of_layer = |kind: &str| {
            effects
                .iter()
                .find(|e| e["kind"] == kind && e["layer"] == "browser")
                .unwrap_or_else(|| panic!("no {kind} of the browser layer: {audit}"))
        };
        let launch = of_layer("subprocess")["target"].as_str().unwrap();
        assert!(
            launch.contains("--remote-debugging-port=<port>")
                && launch.contains("--user-data-dir=<profile>"),
            "{launch}"
        );
        assert!(
            of_layer("subprocess")["count"].as_u64().unwrap() >= 2,
            "{audit}"
        );
        assert_eq!(of_layer("directory_create")["target"], "<profile>");
        assert_eq!(of_layer("http")["target"], "http://127.0.0.1:<port>");
    }
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

/// `contract infer` proposes no layer for what belongs to the browser the env names (the
/// launches, their profile directories, the DevTools requests): the browser is a layer
/// already, and a proposed `files` layer of a profile that changes at every launch, or an
/// HTTP layer of DevTools' endpoint, would be wrong. Nor is `/dev/null` (the launch's
/// plumbing) proposed. The env has no other state outside itself, so nothing is proposed.
#[test]
fn the_inferred_contract_proposes_nothing_for_the_env_s_own_browser() {
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("contract.toml");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(support::repo())
        .args(["contract", "infer", "--seeds", "1", "--steps", "3", "--out"])
        .arg(&contract)
        .args(["--cmd", "--", support::python().as_str(), "-m"])
        .args(["lockstep_adapter", "factory"])
        .args(["lockstep_adapter.testing_browser:browser_task"])
        .args(["--exclude", "_browser"])
        .env("PYTHONPATH", support::repo().join("python"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("effects seen"), "{err}");
    let text = std::fs::read_to_string(&contract).unwrap();
    assert!(!text.contains("# seen:"), "{text}");
    assert_eq!(text.matches("[[layers]]").count(), 1, "{text}");
}
