//! End-to-end tests of `lockstep range`, driving the real binary.

use std::process::{Command, Output};

fn lockstep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .output()
        .expect("run lockstep")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn run_prints_one_summary_per_episode_and_replays_across_processes() {
    let args = [
        "range",
        "run",
        "--scenario",
        "ransomware",
        "--seed",
        "3",
        "--preset",
        "easy",
        "--episodes",
        "2",
    ];
    let a = lockstep(&args);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let text = stdout(&a);
    assert!(text.starts_with("lockstep "), "{text}");
    assert!(text.contains("seed 3"));
    let episodes: Vec<&str> = text.lines().filter(|l| l.starts_with("episode ")).collect();
    assert_eq!(episodes.len(), 2, "{text}");
    assert!(episodes[0].contains("red_operator="), "{text}");
    // A second process prints the same bytes: nothing depends on the process.
    let b = lockstep(&args);
    assert_eq!(text, stdout(&b));
    // Episode k runs seed + k: a run starting at seed 4 replays episode 1.
    let c = lockstep(&[
        "range",
        "run",
        "--scenario",
        "ransomware",
        "--seed",
        "4",
        "--preset",
        "easy",
    ]);
    let first_c = stdout(&c).lines().nth(1).unwrap().to_string();
    assert_eq!(
        episodes[1],
        first_c.replace("episode 0 seed 4", "episode 1 seed 4")
    );
    assert_ne!(episodes[0].split(':').nth(1), episodes[1].split(':').nth(1));
}

#[test]
fn scripted_policy_and_max_ticks() {
    let o = lockstep(&[
        "range",
        "run",
        "--scenario",
        "ot_stuxnet",
        "--seed",
        "0",
        "--policy",
        "scripted",
        "--max-ticks",
        "50",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.contains("truncated at tick 50"), "{text}");
    assert!(text.contains("invalid actions 0"), "{text}");
}

#[test]
fn bad_input_is_an_error_with_exit_2() {
    for args in [
        &["range", "run", "--scenario", "nope", "--seed", "1"][..],
        &[
            "range",
            "run",
            "--scenario",
            "iot_grid",
            "--seed",
            "1",
            "--preset",
            "insane",
        ][..],
        &[
            "range",
            "run",
            "--scenario",
            "iot_grid",
            "--seed",
            "1",
            "--max-ticks",
            "0",
        ][..],
        &["range", "bench", "--scenario", "nope"][..],
    ] {
        let o = lockstep(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error: "), "{err}");
    }
}

#[test]
fn bench_prints_steps_per_second_last() {
    let o = lockstep(&[
        "range",
        "bench",
        "--scenario",
        "apt_espionage",
        "--seconds",
        "0.2",
        "--preset",
        "easy",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.contains("reset: core"), "{text}");
    let last = text.lines().last().unwrap();
    let rate: f64 = last
        .strip_prefix("env-steps/s: ")
        .expect("last line is the rate")
        .parse()
        .unwrap();
    assert!(rate > 0.0);
}

/// `range bench --trace` measures both envs in one run and ends with their ratio, which is
/// the traced rate over the untraced one printed above it.
#[test]
fn bench_trace_prints_both_rates_and_the_ratio_last() {
    let o = lockstep(&["range", "bench", "--trace", "--seconds", "0.2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let rate = |prefix: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in {text}"));
        let (_, r) = line.split_once("env-steps/s: ").expect("a rate");
        r.split_whitespace().next().unwrap().parse().unwrap()
    };
    let (plain, traced) = (rate("untraced:"), rate("traced:"));
    assert!(plain > 0.0 && traced > 0.0, "{text}");
    let last = text.lines().last().unwrap();
    let ratio: f64 = last
        .strip_prefix("traced/untraced env-steps/s ratio: ")
        .expect("last line is the ratio")
        .parse()
        .unwrap();
    assert!((ratio - traced / plain).abs() < 0.01, "{text}");
}

/// `range run --trace` drives the range with lockstep's own action sampler, so its digest is
/// the one `lockstep trace` (and so every golden file) computes for the same name and seed.
#[test]
fn range_run_trace_equals_lockstep_trace() {
    let exe = env!("CARGO_BIN_EXE_lockstep");
    let run = std::process::Command::new(exe)
        .args([
            "range",
            "run",
            "--scenario",
            "ransomware",
            "--seed",
            "1",
            "--max-ticks",
            "30",
            "--trace",
        ])
        .output()
        .unwrap();
    assert!(run.status.success());
    let text = String::from_utf8(run.stdout).unwrap();
    let from_run = text
        .lines()
        .find_map(|l| l.strip_prefix("episode 0 trace "))
        .expect("a trace line")
        .to_string();
    let trace = std::process::Command::new(exe)
        .args([
            "trace",
            "--env",
            "range:ransomware?max_ticks=30",
            "--seed",
            "1",
            "--steps",
            "1000",
        ])
        .output()
        .unwrap();
    assert!(trace.status.success());
    assert_eq!(String::from_utf8(trace.stdout).unwrap().trim(), from_run);
}
