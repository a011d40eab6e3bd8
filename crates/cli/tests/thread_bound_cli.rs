//! End to end (issue 30 item 3): an env bound to the thread that started its process-global
//! client (BrowserGym's sync Playwright, in miniature: `lockstep_adapter.testing`'s
//! `thread_bound_clicker`). Every check but the parallel one drives its instances on the
//! child's main thread and passes; the parallel check says in words that the env is not
//! thread-safe, whether it raises there or crashes its process.

mod support;

use std::path::Path;

/// `lockstep check` of the thread-bound clicker: exit code, text, report.json.
fn check_bound(on_other_thread: &str, out: &Path) -> (Option<i32>, String, serde_json::Value) {
    let kwargs = format!(r#"{{"on_other_thread":"{on_other_thread}"}}"#);
    let run = support::check_adapter(
        &["--seeds", "0..2", "--steps", "4"],
        &[
            "factory",
            "lockstep_adapter.testing:thread_bound_clicker",
            "--kwargs",
            kwargs.as_str(),
            "--policy",
            "lockstep_adapter.testing:click_policy",
        ],
        out,
    );
    let report = run.report();
    (run.code, run.text, report)
}

/// Every trial ran without an error, every check but `parallel` passed or did not apply, and
/// each trial's parallel verdict is a failure whose summary is returned.
fn parallel_summaries(report: &serde_json::Value, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for trial in report["trials"].as_array().unwrap() {
        assert!(trial["error"].is_null(), "{}\n{text}", trial["error"]);
        for check in trial["checks"].as_array().unwrap() {
            let name = check["check"].as_str().unwrap();
            if name == "parallel" {
                assert_eq!(check["passed"], false, "{check}");
                assert_eq!(check["applicable"], true, "{check}");
                out.push(check["summary"].as_str().unwrap().to_string());
            } else {
                let ok = check["passed"] == true || check["applicable"] == false;
                assert!(ok, "{name} failed on one thread: {check}\n{text}");
            }
        }
    }
    assert_eq!(out.len(), 2, "{text}");
    out
}

#[test]
fn a_thread_bound_env_fails_only_the_parallel_check_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text, report) = check_bound("raise", dir.path());
    assert_eq!(code, Some(1), "{text}");
    for summary in parallel_summaries(&report, &text) {
        assert!(
            summary.starts_with(
                "the env is not thread-safe: RuntimeError: no running event loop: the client is bound to the thread that started it (worker 0 of 4, seed "
            ),
            "{summary}"
        );
        assert!(
            summary.ends_with("failed at its reset on a thread of its own; each seed alone ran)"),
            "{summary}"
        );
    }
}

#[test]
fn an_env_that_crashes_its_process_on_threads_gets_a_verdict_and_the_other_checks_run() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text, report) = check_bound("crash", dir.path());
    assert_eq!(code, Some(1), "{text}");
    for summary in parallel_summaries(&report, &text) {
        assert!(
            summary
                .starts_with("the env is not thread-safe: the process ended (signal: 11 (SIGSEGV)"),
            "{summary}"
        );
    }
    // The checks after the parallel one ran in a fresh child of the trial.
    let last = report["trials"][0]["checks"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_ne!(last["check"], "parallel", "{last}");
}
