//! End-to-end tests of `lockstep diff`, `lockstep contract check` and
//! `lockstep experiment reset-contract` on the real binary, and of the generic audit on the
//! seed-000 fixture env.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lockstep::audit::{audit, AuditOptions};
use lockstep::env::{Env, EnvFactory};
use lockstep::experiment::{ResetFixtureEnv, ResetMode};
use lockstep_canon::Value;

fn lockstep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .output()
        .expect("the lockstep binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

// --- experiment ---------------------------------------------------------------------------

#[test]
fn experiment_prints_the_seed_lines_exactly() {
    let o = lockstep(&["experiment", "reset-contract"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "partial identical_initial_states 0 repeat_successes 5\n\
         complete identical_initial_states 10 repeat_successes 10\n\
         All partial-reset mismatches isolated to: cache\n"
    );
}

/// The RESULTS object equals, value for value (hashes included), what the seed's own Python
/// program computes. Python is `$LOCKSTEP_PYTHON` or `python3`.
#[test]
fn experiment_json_equals_the_python_programs_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sub/results.json");
    let o = lockstep(&["experiment", "reset-contract", "--json", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ours = lockstep_canon::parse(&std::fs::read(&out).unwrap()).unwrap();

    let python = std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed000.py");
    let py = Command::new(&python)
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} (set LOCKSTEP_PYTHON): {e}"));
    assert!(py.status.success(), "{}", stderr(&py));
    let py_out = stdout(&py);
    let lines: Vec<&str> = py_out.lines().collect();
    assert_eq!(lines.len(), 4);
    // The program's own printed lines agree with ours, too.
    assert_eq!(lines[..3].join("\n") + "\n", stdout(&o));
    let theirs = lockstep_canon::parse(lines[3].as_bytes()).unwrap();
    assert_eq!(ours, theirs);
    // Not vacuous: twenty records with 64-hex-digit hashes.
    let repeats = ours.get("repeats").unwrap().as_array().unwrap();
    assert_eq!(repeats.len(), 20);
    let h = repeats[0].get("initial_hash").unwrap().as_str().unwrap();
    assert_eq!(h.len(), 64);
}

// --- diff -----------------------------------------------------------------------------------

#[test]
fn diff_exit_codes_and_lines() {
    let ex = examples();
    let fresh = ex.join("state-fresh.json");
    let o = lockstep(&["diff", s(&fresh), s(&fresh)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "no differences\n");

    let o = lockstep(&["diff", s(&fresh), s(&ex.join("state-partial-reset.json"))]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "different fields: cache\nchanged /cache: null -> 0\n"
    );

    let o = lockstep(&[
        "diff",
        s(&fresh),
        s(&ex.join("state-contaminated.json")),
        "--contract",
        s(&ex.join("contract.toml")),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "different fields: cookies, visits, cache\n\
         changed /cache: null -> 0\n\
         added /cookies/previous_run: true\n\
         changed /visits: 0 -> 8\n"
    );
}

#[test]
fn diff_json_output() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", r#"{"x": [1, 2], "y": {"k": "v"}}"#);
    let b = write(
        dir.path(),
        "b.json",
        r#"{"x": [1], "y": {"k": "w"}, "z": null}"#,
    );
    let o = lockstep(&["diff", s(&a), s(&b), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        concat!(
            r#"{"changes":[{"before":2,"kind":"removed","pointer":"/x/1"},"#,
            r#"{"after":"w","before":"v","kind":"changed","pointer":"/y/k"},"#,
            r#"{"after":null,"kind":"added","pointer":"/z"}],"#,
            r#""different_fields":["x","y","z"],"equal":false}"#,
            "\n"
        )
    );
    let o = lockstep(&["diff", s(&a), s(&a), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "{\"changes\":[],\"different_fields\":[],\"equal\":true}\n"
    );
}

#[test]
fn diff_errors_name_file_line_column() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.json", "{}");
    let bad = write(dir.path(), "bad.json", "{\n  \"a\": 1,\n  \"a\": 2\n}");
    let o = lockstep(&["diff", s(&good), s(&bad)]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains(&format!("{}:3:", bad.display())), "{err}");

    let missing = dir.path().join("nope.json");
    let o = lockstep(&["diff", s(&good), s(&missing)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.json"));
}

// --- contract check -----------------------------------------------------------------------

#[test]
fn contract_check_conforming_prints_the_fingerprint() {
    let ex = examples();
    for contract in ["contract.toml", "contract.json"] {
        let o = lockstep(&[
            "contract",
            "check",
            s(&ex.join(contract)),
            s(&ex.join("state-fresh.json")),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.starts_with("conforms: "), "{out}");
        // python3 -c 'import json,hashlib; print(hashlib.sha256(json.dumps(dict(seed=3,
        //   target=1, cookies={}, visits=0, cache=None), sort_keys=True,
        //   separators=(",",":")).encode()).hexdigest())'
        assert!(
            out.contains(
                "fingerprint: sha256:fbe7ca723790cf269771d6c0aad29328f265ee03f646e01c7a4407084ceced02 \
                 (contract seed-000-fixture, version 1, profile python)"
            ),
            "{out}"
        );
    }
    let o = lockstep(&[
        "contract",
        "check",
        s(&ex.join("contract.toml")),
        s(&ex.join("state-fresh.json")),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        concat!(
            r#"{"conforms":true,"contract":{"name":"seed-000-fixture","profile":"python","version":1},"#,
            r#""fingerprint":{"algorithm":"sha256","contract":"seed-000-fixture","contract_version":1,"#,
            r#""digest":"fbe7ca723790cf269771d6c0aad29328f265ee03f646e01c7a4407084ceced02","#,
            r#""profile":"python"},"missing":[],"unexpected":[]}"#,
            "\n"
        )
    );
}

#[test]
fn contract_check_reports_missing_and_unexpected() {
    let ex = examples();
    let o = lockstep(&[
        "contract",
        "check",
        s(&ex.join("contract.toml")),
        s(&ex.join("state-nonconforming.json")),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.starts_with("does not conform: "), "{out}");
    assert!(out.contains("missing /visits (layer server)\n"), "{out}");
    assert!(out.contains("unexpected /session\n"), "{out}");
    assert!(!out.contains("fingerprint"), "{out}");

    let o = lockstep(&[
        "contract",
        "check",
        s(&ex.join("contract.toml")),
        s(&ex.join("state-nonconforming.json")),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = lockstep_canon::parse(&o.stdout).unwrap();
    assert_eq!(v.get("missing"), Some(&Value::from(vec!["/visits"])));
    assert_eq!(v.get("unexpected"), Some(&Value::from(vec!["/session"])));
    assert_eq!(v.get("fingerprint"), Some(&Value::Null));
}

#[test]
fn contract_check_rejects_malformed_contracts_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let state = examples().join("state-fresh.json");
    let cases = [
        (
            "v0.toml",
            "name = \"x\"\nversion = 0\nprofile = \"python\"\n[[layers]]\nname = \"a\"\nfields = [\"seed\"]\n",
            ":2:11: ",
            "version must be 1 or more",
        ),
        (
            "prof.toml",
            "name = \"x\"\nversion = 1\nprofile = \"md5\"\n[[layers]]\nname = \"a\"\nfields = [\"seed\"]\n",
            ":3:11: ",
            "unknown variant `md5`",
        ),
        (
            "noname.json",
            "{\"version\": 1, \"profile\": \"python\", \"layers\": [{\"name\": \"a\", \"fields\": [\"seed\"]}]}",
            ":1:",
            "missing field `name`",
        ),
        (
            "syntax.json",
            "{\n  \"name\": \"x\",\n  \"version\": 1,,\n}",
            ":3:",
            "",
        ),
        (
            "dup.toml",
            "name = \"x\"\nversion = 1\nprofile = \"python\"\n[[layers]]\nname = \"a\"\nfields = [\"seed\"]\n[[layers]]\nname = \"b\"\nfields = [\"seed\"]\n",
            ":",
            "field `seed` is already declared in layer `a`",
        ),
    ];
    for (name, text, position, message) in cases {
        let c = write(dir.path(), name, text);
        let o = lockstep(&["contract", "check", s(&c), s(&state)]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("{}{position}", c.display())),
            "{name}: {err}"
        );
        assert!(err.contains(message), "{name}: {err}");
    }
    let c = write(dir.path(), "contract.yaml", "name: x\n");
    let o = lockstep(&["contract", "check", s(&c), s(&state)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown contract format"));
}

#[test]
fn contract_check_rejects_a_malformed_state() {
    let dir = tempfile::tempdir().unwrap();
    let state = write(dir.path(), "state.json", "{\"seed\": 1,\n \"cache\": nul}");
    let o = lockstep(&[
        "contract",
        "check",
        s(&examples().join("contract.toml")),
        s(&state),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains(&format!("{}:2:", state.display())), "{err}");
}

// --- the generic audit on the fixture env -------------------------------------------------

fn fixture(mode: ResetMode) -> impl EnvFactory {
    (format!("fixture-{}", mode.as_str()), move || {
        Ok(Box::new(ResetFixtureEnv::new(mode)) as Box<dyn Env>)
    })
}

#[test]
fn audit_passes_the_complete_reset_and_flags_the_partial_one() {
    let contract = ResetFixtureEnv::new(ResetMode::Complete).contract();
    let complete = audit(
        &fixture(ResetMode::Complete),
        &contract,
        &AuditOptions::default(),
    )
    .unwrap();
    assert!(complete.passed());
    assert!(complete
        .trials
        .iter()
        .all(|t| t.identical && t.conforms && t.success && t.diff.is_none()));

    let partial = audit(
        &fixture(ResetMode::Partial),
        &contract,
        &AuditOptions::default(),
    )
    .unwrap();
    assert!(!partial.passed());
    assert_eq!(partial.trials.len(), 10);
    for t in &partial.trials {
        let d = t.diff.as_ref().expect("a mismatch is explained");
        assert_eq!(d.different_fields, ["cache"], "seed {}", t.seed);
        assert!(d.changes.iter().all(|c| c.pointer == "/cache"));
        assert!(!t.identical && !t.conforms);
        assert_eq!(t.success, t.seed % 2 == 0, "seed {}", t.seed);
    }
    // The names the CLI resolves build the same two envs.
    assert_eq!(
        ResetFixtureEnv::from_name("experiment:partial-reset")
            .unwrap()
            .mode(),
        ResetMode::Partial
    );
}
