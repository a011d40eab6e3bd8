//! The HTML report, opened in a real headless Chromium: the rendered page must show the
//! summary table and a field-level diff, and a screenshot is kept for people to look at.
//!
//! Needs Debian's `chromium` (./scripts/test installs it when absent).

use std::path::{Path, PathBuf};
use std::process::Command;

fn lockstep() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
}

fn chromium() -> PathBuf {
    for candidate in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("which").arg(candidate).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            }
        }
    }
    panic!("headless Chromium is required: install Debian's `chromium` (./scripts/test does)");
}

fn headless(profile: &Path) -> Command {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

#[test]
fn rendered_report_shows_summary_and_diff() {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_browser");
    let _ = std::fs::remove_dir_all(&out_dir);
    let report_dir = out_dir.join("report");
    let status = lockstep()
        .args([
            "check",
            "experiment:partial-reset",
            "--seeds",
            "0..4",
            "--steps",
            "5",
            "--out",
        ])
        .arg(&report_dir)
        .status()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "the partial-reset fixture fails its reset contract"
    );
    let page = report_dir.join("report.html");
    let url = format!("file://{}", page.canonicalize().unwrap().display());

    let profile = tempfile::tempdir().unwrap();
    let dom = headless(profile.path())
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8(dom.stdout).unwrap();
    assert!(
        dom.contains("<table id=\"summary\""),
        "summary table rendered"
    );
    assert!(dom.contains("experiment:partial-reset"));
    assert!(
        dom.contains("class=\"diff\""),
        "a field-level diff rendered"
    );
    assert!(
        dom.contains("<code>/cache</code>"),
        "the diff names the cache field"
    );
    // Issue 12: failures first and grouped, the first divergence a table (never JSON text), a
    // copyable replay command, SVG timelines with a step axis, passing trials collapsed.
    assert!(
        dom.find("id=\"failures\"") < dom.find("id=\"passing\""),
        "failures before passing trials"
    );
    assert_eq!(
        dom.matches("<code>experiment:partial-reset</code>: reset contract")
            .count(),
        1,
        "one group for the four seeds"
    );
    assert!(dom.contains("seeds 0-3"));
    assert!(
        dom.contains("<table class=\"divergence\">"),
        "first divergence as a table"
    );
    assert!(
        !dom.contains("{&quot;") && !dom.contains("{\""),
        "no JSON text in the page"
    );
    assert!(dom.contains(
        "<pre class=\"replay\"><code>lockstep replay --env experiment:partial-reset --seed 0 --steps 5 --checks same</code></pre>"
    ));
    assert!(dom.contains("<g class=\"axis\">"), "a step axis");
    assert!(dom.contains("first divergent step 0</text>"));
    assert!(dom.contains("id=\"legend\""));
    // Issue 12: a panel per env with its id and contract (name, version, layers, fields), the
    // per-seed plots of its rollouts drawn as SVG, and the full detail of a failure behind a
    // toggle, as tables: the states before and after the reset side by side.
    assert!(dom.contains("<h2 id=\"envs\">Environments</h2>"));
    assert!(dom.contains("<th>env id</th><td><code>experiment:partial-reset</code>"));
    assert!(dom.contains("<code>seed-000-fixture</code> version 1, profile <code>python</code>"));
    assert!(dom.contains("<td><code>client</code></td><td><code>cache</code></td>"));
    assert_eq!(
        dom.matches("<svg class=\"plot\"").count(),
        2,
        "length and return"
    );
    assert_eq!(
        dom.matches("<circle class=\"agrees\"").count(),
        2 * 4,
        "one mark per seed and plot: the rollouts agree"
    );
    assert!(dom.contains("<details class=\"detail\"><summary>full detail of seed 0"));
    assert!(dom.contains("<table class=\"states\">"));
    assert!(dom.contains("<tr class=\"differs\"><th>cache</th>"));

    let shot = out_dir.join("report.png");
    let status = headless(profile.path())
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,1400")
        .arg(&url)
        .status()
        .unwrap();
    assert!(status.success());
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG"),
        "a PNG screenshot at {}",
        shot.display()
    );
    assert!(png.len() > 10_000, "the screenshot has content");
}
