//! Runs the Python adapter's own tests (python/tests) with the test interpreter, so
//! `cargo test` covers them too.

mod protocol_common;

use std::process::Command;

use protocol_common::{python, python_dir, require};

#[test]
fn adapter_pytest_suite_passes() {
    require(&["pytest", "numpy", "gymnasium", "mpe2"]);
    let out = Command::new(python())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(python_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("pytest runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pytest failed:\n{text}");
    assert!(text.contains(" passed"), "pytest ran no test:\n{text}");
}
