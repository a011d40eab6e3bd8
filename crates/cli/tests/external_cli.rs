//! End to end: external environments (`--cmd -- ARGV...`) on the real binary, with children
//! that misbehave in the ways issue 9 and issue 10 list. Children here are small shell and
//! Python scripts, so each test names the defect it guards against.

use std::process::{Command, Output};

fn lockstep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .output()
        .expect("the lockstep binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Issue 9: a child that hangs before its handshake waited a fixed 60 s whatever `--timeout`
/// said. The startup limit is `--timeout` unless `--startup-timeout` gives its own.
#[test]
fn startup_timeout_follows_the_flags() {
    let hang = ["sh", "-c", "sleep 120"];
    let mut args = vec![
        "replay",
        "--checks",
        "same",
        "--timeout",
        "1",
        "--cmd",
        "--",
    ];
    args.extend(hang);
    let o = lockstep(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("handshake: no answer within 1 s"),
        "{}",
        stderr(&o)
    );

    let mut args = vec![
        "replay",
        "--checks",
        "same",
        "--timeout",
        "30",
        "--startup-timeout",
        "1.5",
        "--cmd",
        "--",
    ];
    args.extend(hang);
    let o = lockstep(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("handshake: no answer within 1.500 s"),
        "{}",
        stderr(&o)
    );

    let o = lockstep(&["replay", "--startup-timeout", "0", "--cmd", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--startup-timeout 0 must be a number of seconds"),
        "{}",
        stderr(&o)
    );
}

/// The test interpreter (scripts/test sets LOCKSTEP_PYTHON to ./.venv/bin/python).
fn python() -> String {
    std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn python_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python")
}

/// Runs lockstep with `PYTHONPATH` at python/ (the adapter with no build step).
fn lockstep_py(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .env("PYTHONPATH", python_dir())
        .output()
        .expect("the lockstep binary runs")
}

/// `sh -c` that counts its starts in `count` (one line each), then execs the adapter: the
/// number of Python processes a run starts.
fn counted_adapter(count: &std::path::Path, adapter_args: &[&str]) -> Vec<String> {
    let mut argv = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!(
            "echo start >> '{}'; exec \"$0\" -m lockstep_adapter \"$@\"",
            count.display()
        ),
        python(),
    ];
    argv.extend(adapter_args.iter().map(|s| s.to_string()));
    argv
}

fn starts(count: &std::path::Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |s| s.lines().count())
}

/// Issue 10 item 6: an env that could not start was started again for every seed and check,
/// and its error printed each time (Taxi-v3: the same traceback 21 times; `/no/such/prog`:
/// "cannot start" 30 times). Now: one start, one error with the traceback as lines, exit 2.
#[test]
fn an_env_that_cannot_start_is_one_error_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let count = dir.path().join("starts");
    let argv = counted_adapter(&count, &["gymnasium", "NoSuchEnv-v0"]);
    // Beside a built-in env that runs: the report keeps the broken env's trials as errors.
    let mut args = vec![
        "check",
        "fixture",
        "--checks",
        "same",
        "--seeds",
        "3",
        "--steps",
        "5",
        "--out",
        out.to_str().unwrap(),
        "--cmd",
        "--",
    ];
    args.extend(argv.iter().map(String::as_str));
    let o = lockstep_py(&args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(starts(&count), 1, "started once: {err}");
    assert_eq!(
        err.matches("Traceback (most recent call last)").count(),
        1,
        "{err}"
    );
    assert!(err.contains("NoSuchEnv"), "{err}");
    // Laid out as lines, not one escaped string.
    assert!(
        err.lines().any(|l| l.trim_start().starts_with("File \"")),
        "{err}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 6, "every trial is in the report");
    let broken: Vec<_> = trials.iter().filter(|t| t["env"] != "fixture").collect();
    assert_eq!(broken.len(), 3);
    for t in broken {
        let e = t["error"].as_str().unwrap();
        assert!(e.starts_with("not run: the env cannot start:"), "{e}");
        assert!(!e.contains('\n'), "one line per trial: {e}");
    }

    // Alone, a failed start leaves nothing behind: no report, no directory it made.
    let alone = dir.path().join("alone");
    let mut args = vec![
        "check",
        "--seeds",
        "3",
        "--out",
        alone.to_str().unwrap(),
        "--cmd",
        "--",
    ];
    args.extend(argv.iter().map(String::as_str));
    let o = lockstep_py(&args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no env started: no report written"), "{err}");
    assert!(!alone.exists(), "{err}");

    // A program that does not exist: said once, by check and by replay.
    let o = lockstep(&[
        "check",
        "--seeds",
        "3",
        "--steps",
        "5",
        "--out",
        out.to_str().unwrap(),
        "--cmd",
        "--",
        "/no/such/prog",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).matches("cannot start: No such file").count(),
        1,
        "{}",
        stderr(&o)
    );
    let o = lockstep(&["replay", "--cmd", "--", "/no/such/prog"]);
    assert_eq!(o.status.code(), Some(2));
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert_eq!(all.matches("cannot start").count(), 1, "{all}");
}

/// Issue 10 item 3: each (env, seed) started about 20 Python processes (101 for a default
/// CartPole-v1 check). Now a trial hosts all its instances in one lockstep/2 child, plus the
/// other-process check's fresh child, plus one start before the run to fail fast. Issue 26
/// added fresh processes: each seed alone (the multi-instance references), shared by the
/// trials of the run, so seeds 0..=8 once each; per trial the continuation check's fresh
/// child (which the other-process check reads too) and the leftover check's second child,
/// and its first one unless the worker ran the reference of seed S+1 itself. No child is
/// shared between two trials, so no verdict depends on --jobs (docs/protocol.md, "Process
/// starts").
#[test]
fn a_default_cartpole_check_starts_a_bounded_number_of_python_processes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let count = dir.path().join("starts");
    let argv = counted_adapter(&count, &["gymnasium", "CartPole-v1"]);
    let mut args = vec!["check", "--out", out.to_str().unwrap(), "--cmd", "--"];
    args.extend(argv.iter().map(String::as_str));
    let o = lockstep_py(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );
    let n = starts(&count);
    assert!((1 + 9 + 5 * 3..=1 + 9 + 5 * 4).contains(&n), "{n} starts");
}

/// Issue 26 item 4: an env that caches its first layout under `~/.cache/` was reported
/// conformity 2/3 on a clean machine and 3/3 when run again. Every child now runs in fresh
/// private directories, so the same command gives the same verdict twice, the leftover check
/// failing it both times, whatever the real home holds.
#[test]
fn the_same_command_run_twice_gives_the_same_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |n: usize| -> (Option<i32>, serde_json::Value) {
        let out = dir.path().join(format!("report-{n}"));
        let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
            .args(["check", "--seeds", "3", "--steps", "20", "--out"])
            .arg(&out)
            .args([
                "--cmd",
                "--",
                &python(),
                "-m",
                "lockstep_adapter",
                "factory",
            ])
            .args([
                "lockstep_adapter.testing:walker",
                "--kwargs",
                r#"{"bug": "home_cache"}"#,
            ])
            .env("PYTHONPATH", python_dir())
            // A home of its own for the test, which the checked env must never reach.
            .env("HOME", &home)
            .env_remove("XDG_CACHE_HOME")
            .output()
            .unwrap();
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        (o.status.code(), report["summary"].clone())
    };
    let first = run(1);
    let second = run(2);
    assert_eq!(first, second);
    assert_eq!(first.0, Some(1), "{}", first.1);
    let summary = &first.1[0];
    assert_eq!(summary["conformity"]["passed"], 3, "{summary}");
    assert_eq!(summary["checks"]["leftover"]["passed"], 0, "{summary}");
    assert_eq!(summary["checks"]["same"]["passed"], 3, "{summary}");
    assert!(
        !home.join(".cache/lockstep-walker").exists(),
        "the env wrote into the caller's home"
    );
}

/// Issue 10 item 9: with `--fields`, an attribute that is a plain object was sent as its
/// `repr()`, the same address every time, so a timer kept across reset conformed. Objects are
/// now serialised by their attributes and the audit sees the timer.
#[test]
fn fields_that_are_objects_are_audited_by_their_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |bug: &str| -> serde_json::Value {
        let out = dir.path().join(bug);
        let kwargs = format!("{{\"bug\": \"{bug}\"}}");
        let py = python();
        let o = lockstep_py(&[
            "check",
            "--seeds",
            "1",
            "--steps",
            "10",
            "--checks",
            "same",
            "--out",
            out.to_str().unwrap(),
            "--cmd",
            "--",
            &py,
            "-m",
            "lockstep_adapter",
            "factory",
            "lockstep_adapter.testing:walker",
            "--kwargs",
            &kwargs,
            "--fields",
            "spawner",
        ]);
        assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        report["trials"][0]["audit"].clone()
    };
    let kept = run("kept_timer");
    assert_eq!(kept["conforms"], false, "{kept}");
    let fields = kept["different_fields"].to_string();
    assert!(fields.contains("spawner"), "{kept}");
    // The control: the same env resetting its spawner conforms.
    assert_eq!(run("chatty")["conforms"], true);
}

/// `replay --checks fork`: a fault caught in a forked worker exits 1 and names it; on an env
/// that cannot fork (a built-in one) the check is "n/a", neither passed nor failed.
#[test]
fn replay_runs_the_fork_check_and_says_when_it_does_not_apply() {
    let py = python();
    let o = lockstep_py(&[
        "replay",
        "--checks",
        "fork",
        "--cmd",
        "--",
        &py,
        "-m",
        "lockstep_adapter",
        "factory",
        "lockstep_adapter.testing:walker",
        "--kwargs",
        r#"{"bug": "module_rng"}"#,
    ]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{text}{}", stderr(&o));
    assert!(text.contains("FAIL forked_workers"), "{text}");
    let o = lockstep(&["replay", "--checks", "fork,same", "--env", "fixture"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("n/a  forked_workers"), "{text}");
    assert!(text.contains("(1 not applicable)"), "{text}");
}

/// docs/findings.md: knights_archers_zombies_v11 keeps its zombie-spawn timer (an `Interval`
/// object) across reset. With `--fields zombie_spawn_interval` the audit sees it.
#[test]
fn knights_archers_zombies_keeps_its_spawn_timer() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kaz");
    let py = python();
    let o = lockstep_py(&[
        "check",
        "--seeds",
        "1",
        "--steps",
        "12",
        "--checks",
        "same",
        "--out",
        out.to_str().unwrap(),
        "--cmd",
        "--",
        &py,
        "-m",
        "lockstep_adapter",
        "pettingzoo",
        "pettingzoo.butterfly.knights_archers_zombies_v11",
        "--fields",
        "zombie_spawn_interval",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let audit = &report["trials"][0]["audit"];
    assert_eq!(audit["conforms"], false, "{audit}");
    assert!(
        audit["changes"]
            .to_string()
            .contains("/zombie_spawn_interval/_current_step"),
        "{audit}"
    );
}

/// Issue 10 item 5: a space the protocol cannot carry (Graph, OneOf) fails at the handshake
/// with one line naming the agent and the space, no traceback.
#[test]
fn an_unsupported_space_is_one_line_naming_agent_and_space() {
    let py = python();
    let o = lockstep_py(&[
        "replay",
        "--cmd",
        "--",
        &py,
        "-m",
        "lockstep_adapter",
        "factory",
        "lockstep_adapter.testing:graph_walker",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("failed to start"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("agent 'agent': observation: space Graph("),
        "{line}"
    );
    assert!(!err.contains("Traceback"), "{err}");
}

/// Issue 10 item 4: goldens for external envs. `golden record|verify|update --cmd -- ARGV`
/// works like `--env`; the file keeps the argv (verify runs it again), the handshake's env_id
/// and config; another env_id or config is a failure, not a silent pass; `check --golden`
/// verifies such a golden.
#[test]
fn goldens_record_verify_and_catch_drift_for_a_cmd_env() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cartpole.golden.json");
    let file_s = file.to_str().unwrap();
    let py = python();
    let cartpole = [
        py.as_str(),
        "-m",
        "lockstep_adapter",
        "gymnasium",
        "CartPole-v1",
    ];
    let with = |head: &[&str], argv: &[&str]| {
        let mut args: Vec<&str> = head.to_vec();
        args.push("--cmd");
        args.push("--");
        args.extend_from_slice(argv);
        lockstep_py(&args)
    };
    let o = with(&["golden", "record", "--steps", "30", file_s], &cartpole);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let g: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(g["env"], "gymnasium:CartPole-v1");
    assert_eq!(g["argv"][3], "gymnasium");
    assert_eq!(g["config"]["target"], "CartPole-v1");

    // Verify runs the recorded command line again.
    let o = lockstep_py(&["golden", "verify", file_s]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );

    // Another config of the same env: a failure naming it.
    let mut other_config: Vec<&str> = cartpole.to_vec();
    other_config.extend(["--kwargs", r#"{"sutton_barto_reward": true}"#]);
    let o = with(&["golden", "verify", file_s], &other_config);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("config differs at /kwargs"), "{out}");

    // Another env id: a failure naming both.
    let acrobot = [
        py.as_str(),
        "-m",
        "lockstep_adapter",
        "gymnasium",
        "Acrobot-v1",
    ];
    let o = with(&["golden", "verify", file_s], &acrobot);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("recorded with env \"gymnasium:CartPole-v1\", the env now reports \"gymnasium:Acrobot-v1\""),
        "{out}"
    );

    // check --golden verifies it beside a built-in env.
    let report = dir.path().join("report");
    let o = lockstep_py(&[
        "check",
        "fixture",
        "--seeds",
        "1",
        "--steps",
        "5",
        "--golden",
        file_s,
        "--out",
        report.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        stderr(&o)
    );

    // update keeps the command line.
    let o = lockstep_py(&["golden", "update", file_s, "--reason", "re-recorded"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let g: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(g["argv"][4], "CartPole-v1");
}

/// Issue 29 item 2: an env of the user's own that raised on reset gave 262 lines and 18
/// tracebacks, each ending in the adapter, and the pid in each message kept them from being
/// grouped. Now it is one group: the error, the user's file:line with the line's text first,
/// and the parts of the trial that hit it, in at most 15 lines.
#[test]
fn an_env_raising_on_reset_is_one_group_in_the_users_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.py"),
        "import gymnasium\nimport numpy as np\nfrom gymnasium import spaces\n\n\
class Mine(gymnasium.Env):\n    def __init__(self):\n        \
self.observation_space = spaces.Box(-1, 1, (2,), np.float64)\n        \
self.action_space = spaces.Discrete(2)\n\n    def reset(self, seed=None, options=None):\n        \
super().reset(seed=seed)\n        return self.load_level(), {}\n\n    def load_level(self):\n        \
raise KeyError('level-3')\n\n\ndef make():\n    return Mine()\n",
    )
    .unwrap();
    let out = dir.path().join("report");
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(dir.path())
        .args(["check", "--out"])
        .arg(&out)
        .args([
            "--cmd",
            "--",
            &python(),
            "-m",
            "lockstep_adapter",
            "factory",
            "mine:make",
        ])
        .env("PYTHONPATH", python_dir())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{text}{}", stderr(&o));
    assert_eq!(text.matches("\nERROR ").count(), 1, "{text}");
    assert!(
        text.lines().count() <= 15,
        "{} lines:\n{text}",
        text.lines().count()
    );
    let file = dir.path().join("mine.py");
    let raised = format!(
        "{}:15 in load_level: raise KeyError('level-3')",
        file.display()
    );
    assert!(
        text.contains("error: KeyError: 'level-3' in reset, raised in your code:"),
        "{text}"
    );
    assert!(text.contains(&raised), "{text}");
    assert!(!text.contains("lockstep_adapter/server.py"), "{text}");
    assert!(text.contains("seeds 1-4: the same"), "{text}");
}

/// The user's env of issue 29 item 1: forty lines whose `reset` forgets `self.visited` (and a
/// `set` of cells). Its attributes are its starting state by default, so the leftover fails
/// conformity with no `--fields`, named by pointer, the set by its members; the same env with
/// an honest reset conforms.
const FORGETFUL_ENV: &str = r#"import gymnasium
import numpy as np
from gymnasium import spaces


class Walk(gymnasium.Env):
    def __init__(self, forget):
        self.observation_space = spaces.Box(0, 9, (2,), np.int64)
        self.action_space = spaces.Discrete(4)
        self.forget = forget
        self.visited = []
        self.cells = set()

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.integers(0, 9, 2)
        if not self.forget:
            self.visited = []
            self.cells = set()
        return self.pos.copy(), {}

    def step(self, action):
        move = [(0, 1), (1, 0), (0, -1), (-1, 0)][int(action)]
        self.pos = np.clip(self.pos + move, 0, 9)
        self.visited.append([int(self.pos[0]), int(self.pos[1])])
        self.cells.add(tuple(self.visited[-1]))
        return self.pos.copy(), 0.0, False, False, {}


def forgetful():
    return Walk(forget=True)


def honest():
    return Walk(forget=False)
"#;

fn check_own_env(dir: &std::path::Path, target: &str) -> (Option<i32>, String, serde_json::Value) {
    let out = dir.join(format!("report-{target}"));
    let o = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .current_dir(dir)
        .args([
            "check", "--seeds", "2", "--steps", "12", "--checks", "same", "--out",
        ])
        .arg(&out)
        .args([
            "--cmd",
            "--",
            &python(),
            "-m",
            "lockstep_adapter",
            "factory",
        ])
        .arg(format!("walk:{target}"))
        .env("PYTHONPATH", python_dir())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    let report =
        std::fs::read_to_string(out.join("report.json")).unwrap_or_else(|e| panic!("{e}: {text}"));
    (
        o.status.code(),
        text,
        serde_json::from_str(&report).unwrap(),
    )
}

#[test]
fn a_forgotten_attribute_fails_conformity_with_default_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("walk.py"), FORGETFUL_ENV).unwrap();

    let (code, text, report) = check_own_env(dir.path(), "forgetful");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("different fields: cells, visited"), "{text}");
    assert!(text.contains("changed /visited: [] -> [["), "{text}");
    assert!(text.contains("added member /cells: ["), "{text}");
    let contract = &report["envs"][0]["about"]["contract"];
    assert_eq!(contract["declared"], false, "{contract}");
    let fields = contract["layers"][0]["fields"].as_array().unwrap();
    for f in ["visited", "cells", "pos", "_np_random", "forget"] {
        assert!(
            fields.iter().any(|x| x == f),
            "{f} not inferred: {contract}"
        );
    }

    let (code, text, _) = check_own_env(dir.path(), "honest");
    assert_eq!(code, Some(0), "{text}");
}
