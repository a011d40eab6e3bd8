//! End to end (issue 30 item 4): what differs at the first divergent step, shown as it reads.
//! The page clicker with `bug="shared_cache"` keeps a visit counter for the whole process, shown
//! in its text accessibility tree and in a band of its screenshot: the interleaved check
//! diverges at the reset in both keys. The terminal shows the tree's line diff and lists the
//! screenshot as another differing part; report.json keeps the diff lines and the pixel count;
//! report.html draws the line diff and both frames with the mask of differing pixels.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

#[test]
fn a_divergence_shows_every_part_a_line_diff_and_the_frames() {
    let out = tempfile::tempdir().unwrap();
    let py = std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".into());
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(repo())
        .args(["check", "--seeds", "0..1", "--steps", "3", "--checks"])
        .args(["interleaved", "--out"])
        .arg(out.path())
        .args(["--cmd", "--", py.as_str(), "-m", "lockstep_adapter"])
        .args(["factory", "lockstep_adapter.testing:page_clicker"])
        .args(["--kwargs", r#"{"bug":"shared_cache"}"#])
        .args(["--policy", "lockstep_adapter.testing:click_policy"])
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{text}");
    for needle in [
        r#"obs key "axtree_txt": text, line 7:"#,
        "line diff, - seed 0 alone in a fresh process, + seed 0 interleaved",
        "-  status 'visits 1'",
        "1 more part(s) differ at step 0:",
        r#"obs key "screenshot": image [16, 24, 3]: "#,
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    let check = &report["trials"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "interleaved")
        .unwrap()
        .clone();
    let d = &check["divergence"];
    assert_eq!(d["detail"]["kind"], "text", "{d}");
    assert_eq!(d["detail"]["left"], "  status 'visits 1'");
    let diff: Vec<&str> = d["detail"]["diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(diff.contains(&"-  status 'visits 1'"), "{diff:?}");
    let also = &d["also"][0];
    assert_eq!(also["site"]["key"], "screenshot", "{d}");
    assert_eq!(also["detail"]["kind"], "image");
    assert_eq!(also["detail"]["shape"], serde_json::json!([16, 24, 3]));
    let differing = also["detail"]["differing_pixels"].as_u64().unwrap();
    assert!(differing > 0 && differing < 384, "{differing}");
    assert!(also["detail"]["mask_png"]
        .as_str()
        .unwrap()
        .starts_with("iVBOR"));

    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(html.contains("<pre class=\"line-diff\">"), "no line diff");
    assert!(
        html.contains("<span class=\"del\">-  status &#x27;visits 1&#x27;</span>")
            || html.contains("<span class=\"del\">-  status &#39;visits 1&#39;</span>")
            || html.contains("<span class=\"del\">-  status 'visits 1'</span>")
    );
    assert_eq!(
        html.matches("src=\"data:image/png;base64,").count(),
        3,
        "both frames and the mask"
    );
    assert!(html.contains("differing pixels (white)"));
}
