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
        // --batch prints digests only with --trace; --steps only with --batch.
        &[
            "range",
            "run",
            "--scenario",
            "iot_grid",
            "--seed",
            "1",
            "--batch",
            "2",
        ][..],
        &[
            "range",
            "run",
            "--scenario",
            "iot_grid",
            "--seed",
            "1",
            "--steps",
            "2",
        ][..],
        &[
            "range",
            "run",
            "--scenario",
            "iot_grid",
            "--seed",
            "1",
            "--batch",
            "0",
            "--trace",
        ][..],
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

/// `range bench --trace` measures the untraced env and one traced env per format in one run
/// and ends with each format's ratio, v4's last, each the traced rate over the untraced one
/// printed above it.
#[test]
fn bench_trace_prints_every_rate_and_the_ratios_last() {
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
    let plain = rate("untraced:");
    assert!(plain > 0.0, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let last_four = &lines[lines.len() - 4..];
    for (format, line) in ["v1", "v2", "v3", "v4"].iter().zip(last_four) {
        let traced = rate(&format!("traced {format}:"));
        assert!(traced > 0.0, "{text}");
        let ratio: f64 = line
            .strip_prefix(&format!("traced {format}/untraced env-steps/s ratio: "))
            .unwrap_or_else(|| panic!("{format}'s ratio in its place: {text}"))
            .parse()
            .unwrap();
        assert!((ratio - traced / plain).abs() < 0.01, "{text}");
    }
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

#[test]
fn actions_json_lists_the_originals_ids() {
    let o = lockstep(&["range", "actions", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut got = std::collections::BTreeMap::new();
    for line in stdout(&o).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect(line);
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["duration", "id", "mitre", "name", "team"], "{line}");
        assert!(v["duration"].as_f64().unwrap() >= 1.0, "{line}");
        let key = (
            v["team"].as_str().unwrap().to_string(),
            v["id"].as_u64().unwrap(),
        );
        let name = v["name"].as_str().unwrap().to_string();
        assert!(got.insert(key, name).is_none(), "duplicate id: {line}");
    }
    // NetForge_RL's ids and names for every action the two share (issue 15).
    let shared = [
        ("red", 0, "ExploitRemoteService"),
        ("red", 1, "PrivilegeEscalate"),
        ("red", 2, "DiscoverNetworkServices"),
        ("red", 3, "ExploitBlueKeep"),
        ("red", 4, "ExploitEternalBlue"),
        ("red", 5, "ExploitHTTP_RFI"),
        ("red", 6, "JuicyPotato"),
        ("red", 7, "DumpLSASS"),
        ("red", 8, "PassTheTicket"),
        ("red", 9, "PassTheHash"),
        ("red", 10, "V4L2KernelExploit"),
        ("red", 11, "Impact"),
        ("red", 12, "KillProcess"),
        ("red", 13, "ExfiltrateData"),
        ("red", 15, "DiscoverRemoteSystems"),
        ("red", 20, "OverloadPLC"),
        ("red", 21, "SpearPhishing"),
        ("blue", 0, "IsolateHost"),
        ("blue", 1, "RestoreHost"),
        ("blue", 2, "Monitor"),
        ("blue", 3, "Analyze"),
        ("blue", 4, "Remove"),
        ("blue", 5, "RestoreFromBackup"),
        ("blue", 6, "ConfigureACL"),
        ("blue", 7, "SecurityAwarenessTraining"),
        ("blue", 8, "DeployEDR"),
        ("blue", 9, "DeployDecoy"),
        ("blue", 10, "DecoyApache"),
        ("blue", 11, "DecoySSHD"),
        ("blue", 12, "DecoyTomcat"),
        ("blue", 13, "Misinform"),
        ("blue", 14, "DeployHoneytoken"),
        ("blue", 15, "RotateKerberos"),
    ];
    for (team, id, name) in shared {
        assert_eq!(
            got.get(&(team.to_string(), id)).map(String::as_str),
            Some(name),
            "{team} {id}"
        );
    }
    // The no-op is on an id the original leaves unused for both teams.
    assert_eq!(got[&("red".to_string(), 31)], "Sleep");
    assert_eq!(got[&("blue".to_string(), 31)], "Sleep");
    // The plain listing has the same entries.
    let plain = lockstep(&["range", "actions"]);
    assert!(plain.status.success());
    assert_eq!(stdout(&plain).lines().count(), got.len());
}

#[test]
fn batch_trace_digests_equal_lockstep_trace_per_seed_for_any_thread_count() {
    // max_ticks 12: some sub-episodes end before --steps, and the batch auto-resets them.
    let run = |threads: &str| {
        let o = lockstep(&[
            "range",
            "run",
            "--scenario",
            "apt_espionage",
            "--preset",
            "medium",
            "--max-ticks",
            "12",
            "--seed",
            "20",
            "--batch",
            "5",
            "--steps",
            "30",
            "--trace",
            "--threads",
            threads,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };
    let one = run("1");
    assert_eq!(one, run("2"), "thread count changed a digest");
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(lines.len(), 5, "{one}");
    for (k, line) in lines.iter().enumerate() {
        let (seed, digest) = line.split_once(' ').expect(line);
        assert_eq!(seed, (20 + k).to_string());
        let t = lockstep(&[
            "trace",
            "--env",
            "range:apt_espionage:medium?max_ticks=12",
            "--seed",
            seed,
            "--steps",
            "30",
        ]);
        assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
        assert_eq!(stdout(&t).trim(), digest, "seed {seed}");
    }
}

#[test]
fn bench_batch_prints_steps_per_second_last() {
    let o = lockstep(&[
        "range",
        "bench",
        "--batch",
        "4",
        "--threads",
        "2",
        "--seconds",
        "0.2",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let last = text.lines().last().unwrap();
    let rate: f64 = last
        .strip_prefix("env-steps/s: ")
        .expect(last)
        .parse()
        .unwrap();
    assert!(rate > 0.0, "{text}");
    assert!(text.contains("batch 4 threads 2"), "{text}");
}
