//! End to end (issue 27): a failed check of a Python env names the line of the env's code that
//! read a nondeterministic source, and what the env touched outside itself is a warning; the
//! real binary against the adapter's walker fixtures, each with one source, and webtask's
//! Python twin for `contract infer` and `check --contract`.

use std::path::Path;
use std::process::Command;

mod support;

use support::{python, repo};

/// The line of `snippet` in the walker fixtures' file, as the report shows it.
fn site_of(snippet: &str) -> String {
    let text = std::fs::read_to_string(repo().join("python/lockstep_adapter/testing.py")).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains(snippet))
        .unwrap_or_else(|| panic!("{snippet:?} is not in testing.py"))
        + 1;
    format!("python/lockstep_adapter/testing.py:{line}")
}

/// `lockstep check` of the walker with `bug`, run from the repository (so sites read
/// `python/...`): its exit code, terminal text and report.
fn check_walker(
    bug: Option<&str>,
    checks: &str,
    out: &Path,
) -> (Option<i32>, String, serde_json::Value) {
    let kwargs = match bug {
        Some(b) => format!("{{\"bug\": \"{b}\"}}"),
        None => "{}".into(),
    };
    let run = support::check_adapter(
        &["--seeds", "1", "--steps", "8", "--checks", checks],
        &[
            "factory",
            "lockstep_adapter.testing:walker",
            "--kwargs",
            kwargs.as_str(),
        ],
        out,
    );
    let report = run.report();
    (run.code, run.text, report)
}

fn cause_of<'a>(report: &'a serde_json::Value, check: &str) -> &'a serde_json::Value {
    let checks = report["trials"][0]["checks"].as_array().unwrap();
    let c = checks
        .iter()
        .find(|c| c["check"] == check)
        .unwrap_or_else(|| panic!("no {check} check: {report}"));
    assert_eq!(c["passed"], false, "{c}");
    &c["cause"]
}

/// One fixture per kind of source: the failing check's cause names the kind and the line.
#[test]
fn each_source_is_named_by_its_kind_and_line() {
    let cases: [(&str, &str, &str, Option<&str>); 10] = [
        (
            "global_rng",
            "interleaved",
            "shared_rng",
            Some("noise = np.random.normal(scale=0.01, size=2)"),
        ),
        (
            "process_random",
            "interleaved",
            "shared_rng",
            Some("noise = np.array([random.random(), random.random()]) * 0.01"),
        ),
        (
            "wall_clock",
            "same",
            "clock",
            Some("info[\"time\"] = time.time()"),
        ),
        (
            "pid_seeded",
            "continuation",
            "process_identity",
            Some("seed = os.getpid()"),
        ),
        (
            "uuid_tag",
            "process",
            "entropy",
            Some("info[\"tag\"] = str(uuid.uuid4())"),
        ),
        (
            "fresh_rng",
            "same",
            "unseeded_rng",
            Some("noise = np.random.default_rng().normal("),
        ),
        (
            "space_sample",
            "same",
            "unseeded_space",
            Some("push = sum(int(self.action_space.sample())"),
        ),
        (
            "first_seed_wins",
            "interleaved",
            "shared_state",
            Some("class Walker(gymnasium.Env):"),
        ),
        (
            "home_cache",
            "leftover",
            "outside_world",
            Some("with open(path) as f:"),
        ),
        ("hash_seed", "process", "hash_order", None),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (bug, check, kind, snippet) in cases {
        let (code, text, report) = check_walker(Some(bug), check, &dir.path().join(bug));
        assert_eq!(code, Some(1), "{bug}: {text}");
        let cause = cause_of(&report, check);
        let first = &cause["sources"][0];
        assert_eq!(first["kind"], kind, "{bug}: {cause}");
        match snippet {
            Some(s) => {
                let site = site_of(s);
                assert_eq!(first["site"], site.as_str(), "{bug}: {cause}");
                assert!(text.contains(&format!("cause: {site}")), "{bug}: {text}");
            }
            None => assert!(first.get("site").is_none(), "{bug}: {cause}"),
        }
        assert!(
            cause["headline"].as_str().unwrap().starts_with("cause: "),
            "{bug}: {cause}"
        );
    }
}

#[test]
fn a_shared_state_change_is_shown_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let (_, text, report) = check_walker(Some("first_seed_wins"), "interleaved", dir.path());
    let first = &cause_of(&report, "interleaved")["sources"][0];
    assert_eq!(first["source"], "Walker._levels", "{first}");
    assert!(
        first["change"]
            .as_str()
            .unwrap()
            .starts_with("{} -> {\"layout\": "),
        "{first}"
    );
    assert!(
        text.contains("Walker._levels: {} -> {\"layout\": "),
        "{text}"
    );
}

/// An honest env: every check passes, no cause, no warning; a passing check of an env that
/// writes to the home directory still warns, naming the file and the line.
#[test]
fn an_honest_env_names_nothing_and_a_home_cache_is_a_warning_even_when_checks_pass() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text, report) = check_walker(None, "same,interleaved,process", dir.path());
    assert_eq!(code, Some(0), "{text}");
    assert!(
        !text.contains("cause") && !text.contains("warning"),
        "{text}"
    );
    let trial = &report["trials"][0];
    assert!(trial["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c.get("cause").is_none()));
    assert!(trial["audit"].get("effects").is_none(), "{trial}");

    let (code, text, report) = check_walker(Some("home_cache"), "same", &dir.path().join("h"));
    assert_eq!(code, Some(0), "the same-seed check passes: {text}");
    let site = site_of("with open(path, \"w\") as f:");
    let warning = format!(
        "the env wrote ~/.cache/lockstep-walker/layout.txt during reset ({site} in _home_cached_layout): state outside the process that the reset contract does not name"
    );
    assert!(text.contains(&warning), "{text}");
    let audit = &report["trials"][0]["audit"];
    assert!(
        audit["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == warning.as_str()),
        "{audit}"
    );
    assert!(
        audit["effects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "file_write" && e["phase"] == "reset"),
        "{audit}"
    );
}

fn twin_argv(data: &Path, reset: &str) -> Vec<String> {
    vec![
        python(),
        "-m".into(),
        "lockstep_adapter".into(),
        "factory".into(),
        "lockstep_adapter.webtwin:make".into(),
        "--kwargs".into(),
        format!(
            "{{\"reset\": \"{reset}\", \"data\": {}}}",
            serde_json::Value::String(data.display().to_string())
        ),
    ]
}

/// `contract infer` of webtask's Python twin names its three layers (the cache directory and
/// the SQLite file as probed layers, the HTTP server as a layer to complete), and `check
/// --contract` of the result isolates the cache file the partial reset keeps.
#[test]
fn the_inferred_contract_of_the_twin_names_its_layers_and_isolates_its_cache() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let contract = dir.path().join("contract.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(repo())
        .args(["contract", "infer", "--out"])
        .arg(&contract)
        .args(["--cmd", "--"])
        .args(twin_argv(&data, "partial"))
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    let text = std::fs::read_to_string(&contract).unwrap();
    let cache = data.join("cache").display().to_string();
    let db = data.join("app.db").display().to_string();
    assert!(
        text.contains(&format!("probe = \"files\"\npath = \"{cache}\"")),
        "{text}"
    );
    assert!(
        text.contains(&format!("probe = \"sqlite\"\npath = \"{db}\"")),
        "{text}"
    );
    assert!(
        text.contains("# probe = \"http\"\n# url = \"http://127.0.0.1:"),
        "{text}"
    );
    assert!(
        text.contains("python/lockstep_adapter/webtwin.py:"),
        "each layer says where it was seen: {text}"
    );

    // What the inference run left in the data directory is not the check's starting state.
    std::fs::remove_dir_all(&data).unwrap();
    let out = dir.path().join("report");
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(repo())
        .args(["check", "--seeds", "1", "--steps", "6", "--checks", "same"])
        .arg("--contract")
        .arg(&contract)
        .arg("--out")
        .arg(&out)
        .args(["--cmd", "--"])
        .args(twin_argv(&data, "partial"))
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let audit = &report["trials"][0]["audit"];
    assert_eq!(audit["conforms"], false, "{audit}");
    assert!(
        audit["different_fields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "dir_cache"),
        "{audit}"
    );
    assert!(
        stdout.contains("added /dir_cache/choice.json"),
        "the diff names the cache file: {stdout}"
    );
    assert!(
        !audit["different_fields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "db_app"),
        "the database is reset: {audit}"
    );
    assert!(
        stdout.contains("--contract"),
        "the replay command keeps the contract: {stdout}"
    );
}

/// `lockstep replay`, the command a failed check says to run, names the cause as `check`
/// does: under the failing check's line in the terminal, and as `checks[].cause` in its
/// `--json` file. A check that passes has none.
#[test]
fn replay_names_the_cause_of_each_failed_check() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("replay.json");
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(repo())
        .args(["replay", "--seed", "0", "--steps", "6"])
        .args(["--checks", "other,interleaved", "--json"])
        .arg(&json)
        .args(["--cmd", "--", python().as_str(), "-m", "lockstep_adapter"])
        .args(["factory", "lockstep_adapter.testing:walker"])
        .args(["--kwargs", r#"{"bug": "global_rng"}"#])
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{text}");
    let site = site_of("noise = np.random.normal(scale=0.01, size=2)");
    let lines: Vec<&str> = text.lines().collect();
    let failed = lines
        .iter()
        .position(|l| l.starts_with("FAIL interleaved"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        lines[failed + 1]
            .trim_start()
            .starts_with(&format!("cause: {site} in step: np.random")),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("ok   other_seed")),
        "{text}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for c in report["checks"].as_array().unwrap() {
        if c["passed"] == true {
            assert!(c.get("cause").is_none(), "{c}");
        } else {
            assert_eq!(c["cause"]["sources"][0]["site"], site.as_str(), "{c}");
            assert_eq!(c["cause"]["sources"][0]["kind"], "shared_rng", "{c}");
        }
    }
}
