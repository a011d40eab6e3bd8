//! What the end-to-end tests of adapter-served envs share: where the repository is, which
//! Python serves the adapter, and one `lockstep check` run of such an env. Each test file
//! keeps its own small wrapper that names the env and flags it is about.
#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The Python that serves the adapter: scripts/test sets LOCKSTEP_PYTHON to its venv's.
pub fn python() -> String {
    std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// One finished `lockstep check`.
pub struct Checked {
    pub code: Option<i32>,
    /// stdout then stderr, for assertions and for failure messages.
    pub text: String,
    /// report.json, when the run wrote one.
    pub report: Option<serde_json::Value>,
}

impl Checked {
    /// report.json, or a failure that shows what the run printed.
    pub fn report(&self) -> serde_json::Value {
        self.report
            .clone()
            .unwrap_or_else(|| panic!("no report.json:\n{}", self.text))
    }
}

/// `lockstep check --out OUT FLAGS... --cmd -- PYTHON -m lockstep_adapter ADAPTER...`, run from
/// the repository (so sites read `python/...`) with the adapter on PYTHONPATH.
pub fn check_adapter(flags: &[&str], adapter: &[&str], out: &Path) -> Checked {
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(repo())
        .args(["check", "--out"])
        .arg(out)
        .args(flags)
        .args(["--cmd", "--", python().as_str(), "-m", "lockstep_adapter"])
        .args(adapter)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let report = std::fs::read_to_string(out.join("report.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap_or_else(|e| panic!("report.json: {e}\n{text}")));
    Checked {
        code: o.status.code(),
        text,
        report,
    }
}

/// Validates a report against docs/report.schema.json with Python's `jsonschema` (installed
/// into the test venv by ./scripts/test).
pub fn assert_valid_report(report: &Path) {
    let schema = repo().join("docs/report.schema.json");
    let script = "import json, sys, jsonschema\n\
                  schema = json.load(open(sys.argv[1]))\n\
                  jsonschema.Draft202012Validator.check_schema(schema)\n\
                  jsonschema.validate(json.load(open(sys.argv[2])), schema)\n";
    let out = Command::new(python())
        .args(["-c", script])
        .arg(&schema)
        .arg(report)
        .output()
        .expect("python runs (set LOCKSTEP_PYTHON, or run ./scripts/test)");
    assert!(
        out.status.success(),
        "{} does not validate against the schema: {}",
        report.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
