//! One test per defect, named after the issue that reported it (ripgrep's habit), each
//! driving the real binary.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lockstep"));
    c.env_remove("CI");
    c
}

fn lockstep(args: &[&str]) -> Output {
    bin().args(args).output().expect("the lockstep binary runs")
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("regression")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every built-in env name, from the binary itself (the list an unknown name is answered with).
fn builtin_envs() -> Vec<String> {
    let o = lockstep(&["trace", "--env", "no-such-env"]);
    let err = text(&o.stderr);
    let list = err
        .split("known envs: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no env list in {err}"));
    list.trim().split(", ").map(str::to_string).collect()
}

/// Each trial's verdicts: conformity, success, every check's (applicable, passed), error.
fn verdicts(report: &serde_json::Value) -> Vec<String> {
    report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let checks: Vec<String> = t["checks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{}={}/{}", c["check"], c["applicable"], c["passed"]))
                .collect();
            format!(
                "{} {} conforms={} success={} {} error={}",
                t["env"],
                t["seed"],
                t["audit"]["conforms"],
                t["audit"]["success"],
                checks.join(" "),
                !t["error"].is_null()
            )
        })
        .collect()
}

/// Issue 9: `fixture:global-rng`'s same/process verdicts changed from run to run under the
/// default `--jobs`, because trials on threads of one process shared its global RNG. Trials now
/// run in processes of their own: every built-in env, faulty fixtures included, gets the same
/// verdicts for `--jobs 1` and `4` (any count above one ran trials side by side; 4 runs more
/// of them at once than the test machine's two cores). Two seeds: enough for the other-seed
/// check to apply.
///
/// The two real-browser envs (`webtask`, `webtask:partial-reset`) run only under `--jobs 4`,
/// side by side with the rest, and are held to the specification's table instead of to a
/// `--jobs 1` run: each of their trials starts browsers and a server (about 12 s a trial, 50 s
/// a run, most of this test's time), and what keeps a trial apart is the same code for every
/// env. This is also where every check of both runs on real layers (webtask_cli runs the
/// audit's table).
#[test]
fn issue9_verdicts_do_not_depend_on_jobs() {
    let envs = builtin_envs();
    assert!(envs.len() >= 15, "{envs:?}");
    let browser: Vec<&String> = envs.iter().filter(|e| e.starts_with("webtask")).collect();
    assert_eq!(browser.len(), 2, "{envs:?}");
    let run = |jobs: &str, envs: &[&String]| {
        let out = tmp(&format!("jobs-{jobs}"));
        let mut args = vec!["check"];
        args.extend(envs.iter().map(|e| e.as_str()));
        args.extend([
            "--seeds",
            "0..2",
            "--steps",
            "40",
            "--jobs",
            jobs,
            "--out",
            out.to_str().unwrap(),
        ]);
        let o = lockstep(&args);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        let v = verdicts(&report);
        assert_eq!(v.len(), envs.len() * 2);
        for l in v.iter().filter(|l| l.starts_with("\"fixture:global-rng\"")) {
            assert!(
                l.contains("\"same\"=true/true") && l.contains("\"process\"=true/true"),
                "--jobs {jobs}: {l}"
            );
        }
        v
    };
    let all: Vec<&String> = envs.iter().collect();
    let side_by_side = run("4", &all);
    let others: Vec<&String> = envs.iter().filter(|e| !e.starts_with("webtask")).collect();
    let one_at_a_time = run("1", &others);
    let (webtask, rest): (Vec<String>, Vec<String>) = side_by_side
        .into_iter()
        .partition(|l| l.starts_with("\"webtask"));
    assert_eq!(rest, one_at_a_time, "--jobs 4 differs from --jobs 1");
    // The specification's table: a complete reset conforms and passes every check; the
    // partial one fails conformity (the cached choice) and the same-seed check, and succeeds
    // on even seeds. Continuation and vector do not apply to either.
    let table = |env: &str, seed: u64| {
        let partial = env.ends_with(":partial-reset");
        let checks: Vec<String> = lockstep::report::CHECK_NAMES
            .iter()
            .map(|&c| {
                let (applies, passes) = match c {
                    "continuation" | "vector" => (false, false),
                    "same" => (true, !partial),
                    _ => (true, true),
                };
                format!("\"{c}\"={applies}/{passes}")
            })
            .collect();
        format!(
            "\"{env}\" {seed} conforms={} success={} {} error=false",
            !partial,
            !partial || seed.is_multiple_of(2),
            checks.join(" ")
        )
    };
    let expected: Vec<String> = ["webtask", "webtask:partial-reset"]
        .iter()
        .flat_map(|e| [table(e, 0), table(e, 1)])
        .collect();
    assert_eq!(webtask, expected, "webtask under --jobs 4");
}

/// Issue 9: `check --out F` with F unwritable ran everything, then lost every result.
#[test]
fn issue9_unwritable_out_fails_before_the_run() {
    let dir = tmp("out");
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for out in [file.join("sub"), file.clone()] {
        let o = lockstep(&["check", "fixture", "--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(o.stdout.is_empty(), "nothing ran: {}", text(&o.stdout));
        assert!(text(&o.stderr).contains("--out"), "{}", text(&o.stderr));
    }
}

/// Issue 9: a bad `--golden` was found only after the whole run.
#[test]
fn issue9_bad_golden_fails_before_the_run() {
    let dir = tmp("golden-arg");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, b"{\"format\": \"lockstep/golden/v2\",\n  \"env\": 1}").unwrap();
    for g in [bad, dir.join("missing.json")] {
        let o = lockstep(&[
            "check",
            "fixture",
            "--golden",
            g.to_str().unwrap(),
            "--out",
            dir.join("r").to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2));
        assert!(o.stdout.is_empty());
        assert!(text(&o.stderr).contains("--golden"), "{}", text(&o.stderr));
    }
}

/// Issue 9: every command but `canon` panicked (exit 101) on a full disk or a closed pipe.
#[test]
fn issue9_full_stdout_is_an_error_not_a_panic() {
    let dir = tmp("full");
    let input = dir.join("x.json");
    std::fs::write(&input, b"{\"a\": [1, 2.5]}").unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = bin()
        .args(["fingerprint", input.to_str().unwrap()])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("cannot write to standard output"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn issue9_closed_pipe_ends_quietly() {
    for args in [
        &[
            "trace",
            "--env",
            "range:ransomware",
            "--steps",
            "50",
            "--json",
        ][..],
        &["replay", "--env", "fixture", "--steps", "20"][..],
    ] {
        let mut child = bin()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 10];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is dropped here: the rest of the output meets a closed pipe.
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_ne!(status.code(), Some(101), "{args:?} panicked: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?} ends quietly: {stderr}");
    }
}

/// Issue 9: a fault at the 5th reset (a module counter) passed the same-seed check's three
/// rollouts; the default rollouts catch it, and `--rollouts` chooses.
#[test]
fn issue9_fifth_reset_fault_is_caught_with_default_rollouts() {
    let replay = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            "--env",
            "fixture:level-up",
            "--steps",
            "10",
            "--checks",
            "same",
        ];
        args.extend_from_slice(extra);
        lockstep(&args)
    };
    let o = replay(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(
        text(&o.stdout).contains("rollout 5 (same instance) differs from rollout 1"),
        "{}",
        text(&o.stdout)
    );
    let o = replay(&["--rollouts", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

/// Issue 9: the other-seed check failed FrozenLake-like envs on one unlucky pair of seeds. An
/// honest env with 3-step episodes passes on 20 reference seeds; `fixture:seedless` still
/// fails; a declared seedless env is not applicable, never passed.
#[test]
fn issue9_other_seed_judges_on_several_seeds() {
    let dir = tmp("other-seed");
    let o = lockstep(&[
        "check",
        "fixture:coin-flips",
        "fixture:seedless",
        "fixture:constant",
        "--seeds",
        "0..20",
        "--steps",
        "10",
        "--checks",
        "other",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let row = |env: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{env} ")))
            .unwrap_or_else(|| panic!("no row {env}: {out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(row("fixture:coin-flips")[4], "20/20", "{out}");
    assert_eq!(row("fixture:seedless")[4], "0/20", "{out}");
    assert_eq!(row("fixture:constant")[4], "n/a", "{out}");
    // The user can declare an env seedless too.
    let o = lockstep(&[
        "replay",
        "--env",
        "fixture:seedless",
        "--checks",
        "other",
        "--seedless",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("n/a "), "{}", text(&o.stdout));
}

/// Issue 9: an env without randomness (CliffWalking-v1) ignores its seed legitimately; it can
/// declare so in its handshake (the adapter's `--seedless`), and the other-seed check is then
/// not applicable, while undeclared it still fails.
#[test]
fn issue9_an_external_env_declares_itself_seedless_in_its_handshake() {
    let python = std::env::var("LOCKSTEP_PYTHON")
        .expect("LOCKSTEP_PYTHON names the test venv's python (./scripts/test sets it)");
    let adapter = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            "--checks",
            "other",
            "--steps",
            "20",
            "--cmd",
            "--",
            python.as_str(),
            "-m",
            "lockstep_adapter",
            "gymnasium",
            "CliffWalking-v1",
        ];
        args.extend_from_slice(extra);
        bin()
            .args(&args)
            .env("PYTHONPATH", &adapter)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("gave identical episodes"));
    let o = run(&["--seedless"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).contains("n/a  other_seed"),
        "{}",
        text(&o.stdout)
    );
}
