//! lockstep's replay checks (same seed, other seed, interleaved, other process, parallel
//! workers) on envs served by the Python adapter: real envs pass all five; each broken fixture
//! is caught by the check that should catch it, at the right step, agent and key.

mod protocol_common;

use lockstep::check::{run_check, run_checks, CheckConfig, CheckKind, CheckOutcome};
use lockstep_protocol::ProcessEnvFactory;
use protocol_common::{adapter_argv, factory, honest, options, require};

fn all_pass(f: &ProcessEnvFactory, steps: u64) -> Vec<CheckOutcome> {
    let cfg = CheckConfig::new(7, steps);
    let outcomes = run_checks(&CheckKind::ALL, f, &cfg, Some(f)).unwrap();
    for o in &outcomes {
        assert!(honest(o), "{:?}: {}", o.check, o.summary);
    }
    outcomes
}

#[test]
fn cartpole_passes_every_check() {
    require(&["gymnasium"]);
    let outcomes = all_pass(&factory(&["gymnasium", "CartPole-v1"]), 200);
    // The other-seed check says where seeds 7 and 8 part: at the reset.
    let other = outcomes
        .iter()
        .find(|o| o.check == CheckKind::OtherSeed)
        .unwrap();
    assert_eq!(other.divergence.as_ref().unwrap().step, 0);
}

/// Honest envs pass every check with a trial's instances in one child (issue 10, "Done when").
#[test]
fn acrobot_frozenlake_blackjack_pass_every_check_in_one_child() {
    require(&["gymnasium"]);
    for env in ["Acrobot-v1", "FrozenLake-v1", "Blackjack-v1"] {
        let f = factory(&["gymnasium", env]);
        let session = f.session();
        let outcomes = run_checks(
            &CheckKind::ALL,
            &session,
            &CheckConfig::new(7, 100),
            Some(&f),
        )
        .unwrap();
        for o in &outcomes {
            assert!(honest(o), "{env}: {:?}: {}", o.check, o.summary);
        }
    }
}

/// Issue 10 item 5: PettingZoo AEC (turn-based) envs failed with an AttributeError about
/// `parallel_env`. tictactoe_v3 is served one acting agent per step, its action mask
/// honoured, and passes every check that applies (it has no randomness: the other-seed check
/// does not apply to it).
#[test]
fn pettingzoo_aec_tictactoe_passes_every_check_that_applies() {
    use lockstep::env::EnvFactory;
    require(&["pettingzoo"]);
    let f = factory(&["pettingzoo", "pettingzoo.classic.tictactoe_v3"]);
    let session = f.session();
    let kinds = [
        CheckKind::SameSeed,
        CheckKind::Interleaved,
        CheckKind::OtherProcess,
        CheckKind::ParallelWorkers,
    ];
    let outcomes = run_checks(&kinds, &session, &CheckConfig::new(3, 100), Some(&f)).unwrap();
    for o in &outcomes {
        assert!(honest(o), "{:?}: {}", o.check, o.summary);
    }
    // One agent acts at a time; the game ends with every agent done.
    let mut env = session.make().unwrap();
    let first = env.reset(3, &lockstep_canon::Value::Null).unwrap().clone();
    assert_eq!(first.agents.keys().collect::<Vec<_>>(), ["player_1"]);
    assert!(first.agents["player_1"].obs.contains_key("action_mask"));
    let mut sampler = lockstep::actions::ActionSampler::new(3, env.spec());
    let mut t = first;
    let mut steps = 0;
    while !t.is_done() {
        assert_eq!(t.agents.len(), 1, "one acting agent at step {steps}");
        let actions = sampler.sample(&t);
        t = env.step(&actions).unwrap().clone();
        steps += 1;
        assert!(steps <= 9, "a game of tic-tac-toe has at most 9 moves");
    }
    assert_eq!(t.agents.len(), 2, "the last transition holds both players");
}

#[test]
fn pendulum_passes_every_check() {
    require(&["gymnasium"]);
    all_pass(&factory(&["gymnasium", "Pendulum-v1"]), 200);
}

#[test]
fn pettingzoo_simple_spread_passes_every_check() {
    require(&["pettingzoo", "mpe2"]);
    all_pass(&factory(&["pettingzoo", "mpe2.simple_spread_v3"]), 50);
}

fn walker(bug: Option<&str>) -> ProcessEnvFactory {
    let kwargs = bug.map_or("{}".to_string(), |b| format!("{{\"bug\": \"{b}\"}}"));
    ProcessEnvFactory::new(
        adapter_argv(&[
            "factory",
            "lockstep_adapter.testing:walker",
            "--kwargs",
            &kwargs,
        ]),
        options(),
    )
}

/// Runs `kind` on the walker with `bug` and returns (step, agent, key) of the divergence.
fn caught(bug: &str, kind: CheckKind) -> (u64, String, String) {
    let f = walker(Some(bug));
    let o = run_check(kind, &f, &CheckConfig::new(5, 60), Some(&f)).unwrap();
    assert!(!o.passed, "{bug}: {kind:?} passed: {}", o.summary);
    let d = o.divergence.expect("a failure carries its divergence");
    (
        d.step,
        d.agent().unwrap_or("").to_string(),
        d.key().to_string(),
    )
}

fn at(step: u64, key: &str) -> (u64, String, String) {
    (step, "agent".to_string(), key.to_string())
}

#[test]
fn correct_walker_passes_every_check() {
    require(&["gymnasium"]);
    all_pass(&walker(None), 60);
}

#[test]
fn global_numpy_rng_fails_same_seed_at_step_1() {
    require(&["gymnasium"]);
    assert_eq!(caught("global_rng", CheckKind::SameSeed), at(1, "pos"));
}

#[test]
fn state_kept_across_reset_fails_same_seed_at_the_reset() {
    require(&["gymnasium"]);
    assert_eq!(caught("leaky_reset", CheckKind::SameSeed), at(0, "tick"));
}

#[test]
fn wall_clock_in_info_fails_same_seed_at_step_1() {
    require(&["gymnasium"]);
    assert_eq!(caught("wall_clock", CheckKind::SameSeed), at(1, "info"));
}

#[test]
fn hash_order_passes_in_one_process_and_fails_other_process_at_step_5() {
    require(&["gymnasium"]);
    let f = walker(Some("hash_seed"));
    let same = run_check(CheckKind::SameSeed, &f, &CheckConfig::new(5, 60), Some(&f)).unwrap();
    assert!(same.passed, "{}", same.summary);
    assert_eq!(caught("hash_seed", CheckKind::OtherProcess), at(5, "info"));
}

/// Issue 10 item 10: every child got its own PYTHONHASHSEED, so a set-order bug failed
/// "interleaved" and "parallel" although the env shares nothing between instances. Only the
/// other-process check varies the hash seed.
#[test]
fn hash_order_fails_only_the_process_check() {
    require(&["gymnasium"]);
    let f = walker(Some("hash_seed"));
    let cfg = CheckConfig::new(5, 60);
    for kind in [
        CheckKind::SameSeed,
        CheckKind::Interleaved,
        CheckKind::ParallelWorkers,
    ] {
        let o = run_check(kind, &f, &cfg, Some(&f)).unwrap();
        assert!(o.passed, "{kind:?}: {}", o.summary);
    }
    let o = run_check(CheckKind::OtherProcess, &f, &cfg, Some(&f)).unwrap();
    assert!(!o.passed, "{}", o.summary);
    // Step 5 is among the transitions both rollouts keep (the child's is recorded here): the
    // values come from the runs that differed, with no re-run and so no caveat.
    let d = o.divergence.expect("a failure carries its divergence");
    assert!(
        matches!(d.detail, Some(lockstep::check::Detail::Info { .. })),
        "{d:?}"
    );
    assert_eq!(d.note, None, "{d:?}");
}

#[test]
fn late_divergence_fails_same_seed_at_step_40() {
    require(&["gymnasium"]);
    assert_eq!(caught("late", CheckKind::SameSeed), at(40, "pos"));
}

/// A child that dies mid-check is a check error naming the step and the child's stderr.
#[test]
fn a_crash_is_a_check_error_not_a_verdict() {
    require(&["gymnasium"]);
    let f = walker(Some("crash"));
    let err = run_check(CheckKind::SameSeed, &f, &CheckConfig::new(5, 60), Some(&f))
        .unwrap_err()
        .to_string();
    assert!(err.contains("step 5"), "{err}");
    assert!(err.contains("walker: aborting at step 5"), "{err}");
}

/// Issue 10: state shared by instances in one process (a process-global `random` seeded at
/// reset; a class-level cache) passed every check while each instance was its own process.
/// Under lockstep/2 the interleaved check hosts its instances in one child and catches both,
/// at the step, agent and key; the same-seed check still passes them (each rollout reseeds or
/// refills what it uses).
#[test]
fn process_global_random_and_class_cache_fail_the_interleaved_check() {
    require(&["gymnasium"]);
    for bug in ["process_random", "class_cache"] {
        let f = walker(Some(bug));
        let session = f.session();
        let cfg = CheckConfig::new(5, 60);
        let same = run_check(CheckKind::SameSeed, &session, &cfg, Some(&f)).unwrap();
        assert!(same.passed, "{bug}: {}", same.summary);
        let o = run_check(CheckKind::Interleaved, &session, &cfg, Some(&f)).unwrap();
        assert!(!o.passed, "{bug}: {}", o.summary);
        let d = o.divergence.expect("a failure carries its divergence");
        assert_eq!(
            (d.step, d.agent().unwrap_or(""), d.key()),
            (1, "agent", "pos"),
            "{bug}: {}",
            o.summary
        );
        let p = run_check(CheckKind::ParallelWorkers, &session, &cfg, Some(&f)).unwrap();
        assert!(!p.passed, "{bug}: parallel: {}", p.summary);
        drop(session);
        // One child for the session's instances; each seed alone in a fresh one, for each
        // check (run one by one here, they share no references).
        assert_eq!(f.children_started(), 1 + 3 + 4, "{bug}");
    }
}

/// The honest walker passes every check with every instance in one child.
#[test]
fn correct_walker_passes_every_check_in_one_child() {
    require(&["gymnasium"]);
    let f = walker(None);
    let session = f.session();
    let outcomes = run_checks(
        &CheckKind::ALL,
        &session,
        &CheckConfig::new(7, 60),
        Some(&f),
    )
    .unwrap();
    for o in &outcomes {
        assert!(honest(o), "{:?}: {}", o.check, o.summary);
    }
    drop(session);
    // The session's child; seeds 7..=10 alone, each once, shared by the interleaved,
    // parallel and leftover checks; the continuation check's fresh child, whose first episode
    // the other-process check reads; the leftover check's second child, in the directories
    // seed 8's reference left (the vector check makes an instance in the session's child).
    assert_eq!(f.children_started(), 1 + 4 + 1 + 1);
}

/// Issue 10 item 2: the forked-workers check. An env whose new instances read a module RNG
/// that earlier episodes advanced replays a seed differently in a worker forked from a warm
/// process; the check catches it at the reset, on `pos`. Honest envs pass; a child that
/// cannot fork (lockstep/1 only) is reported as not applicable, never as passed.
#[test]
fn a_module_rng_advanced_by_earlier_episodes_fails_the_fork_check() {
    require(&["gymnasium"]);
    let cfg = CheckConfig::new(5, 60);
    let f = walker(Some("module_rng"));
    let session = f.session();
    let same = run_check(CheckKind::SameSeed, &session, &cfg, Some(&f)).unwrap();
    assert!(same.passed, "{}", same.summary);
    let o = run_check(CheckKind::ForkedWorkers, &session, &cfg, Some(&f)).unwrap();
    assert!(o.applicable && !o.passed, "{}", o.summary);
    let d = o.divergence.expect("a failure carries its divergence");
    assert_eq!(
        (d.step, d.agent().unwrap_or(""), d.key()),
        (0, "agent", "pos"),
        "{}",
        o.summary
    );

    for good in [walker(None), factory(&["gymnasium", "CartPole-v1"])] {
        let session = good.session();
        let o = run_check(CheckKind::ForkedWorkers, &session, &cfg, Some(&good)).unwrap();
        assert!(o.applicable && o.passed, "{}", o.summary);
    }

    let v1 = ProcessEnvFactory::new(
        protocol_common::module_argv("lockstep_adapter.faults", &["ok", "3"]),
        options(),
    );
    let session = v1.session();
    let o = run_check(CheckKind::ForkedWorkers, &session, &cfg, Some(&v1)).unwrap();
    assert!(!o.applicable && !o.passed, "{}", o.summary);
}

/// Issue 10 item 8: Text observations (MiniGrid's `mission`, a `MissionSpace`) were refused at
/// the handshake. They travel as their UTF-8 bytes (a uint8 array), so a changed mission shows
/// in the trace; a walker with a Text observation passes every check.
#[test]
fn text_observations_are_served_as_utf8_bytes() {
    use lockstep::env::EnvFactory;
    require(&["gymnasium"]);
    let f = ProcessEnvFactory::new(
        adapter_argv(&["factory", "lockstep_adapter.testing:mission_walker"]),
        options(),
    );
    let session = f.session();
    let mut env = session.make().unwrap();
    let t = env.reset(4, &lockstep_canon::Value::Null).unwrap();
    let mission = &t.agents["agent"].obs["mission"];
    let bytes = mission.to_le_bytes();
    let text = String::from_utf8(bytes).expect("UTF-8");
    assert_eq!(text.split(' ').count(), 3, "{text:?}");
    env.close().unwrap();
    let outcomes = run_checks(
        &CheckKind::ALL,
        &session,
        &CheckConfig::new(4, 30),
        Some(&f),
    )
    .unwrap();
    for o in &outcomes {
        assert!(honest(o), "{:?}: {}", o.check, o.summary);
    }
}

/// Issue 26 item 3 (the pattern "nothing seeded that the env does not seed"): the adapter
/// seeded the env's action spaces at every reset, so an env whose step plays a scripted
/// opponent with `self.action_space.sample()` (Gymnasium issue 185's trap) replayed under
/// lockstep and not in a training loop, which seeds no space. The adapter no longer seeds them:
/// the same-seed check fails at the opponent's first push; `--seed-spaces` opts back in, and
/// the handshake's config says so.
#[test]
fn an_unseeded_space_sampled_by_the_env_fails_same_seed() {
    use lockstep::env::EnvFactory;
    require(&["gymnasium"]);
    assert_eq!(caught("space_sample", CheckKind::SameSeed), at(1, "pos"));

    let seeded = ProcessEnvFactory::new(
        adapter_argv(&[
            "factory",
            "lockstep_adapter.testing:walker",
            "--kwargs",
            r#"{"bug": "space_sample"}"#,
            "--seed-spaces",
        ]),
        options(),
    );
    let o = run_check(
        CheckKind::SameSeed,
        &seeded,
        &CheckConfig::new(5, 60),
        Some(&seeded),
    )
    .unwrap();
    assert!(o.passed, "with --seed-spaces: {}", o.summary);
    let env = seeded.make().unwrap();
    let config = &env.spec().config;
    assert_eq!(
        config.get("seed_spaces"),
        Some(&lockstep_canon::Value::Bool(true)),
        "{config:?}"
    );
}

/// Issue 26 item 1 (the pattern "seed once, then `reset()`"): training loops seed the first
/// reset only. An env whose unseeded reset draws from numpy's global RNG, or seeds itself from
/// the clock, replays its first episode and never the second: every check that reseeds each
/// rollout passed both. The continuation check fails them at the second episode's reset; the
/// honest walker (its unseeded reset continues from its own seeded RNG) passes.
#[test]
fn seed_once_then_reset_fails_the_continuation_check() {
    require(&["gymnasium"]);
    let cfg = CheckConfig::new(5, 20);
    for bug in ["unseeded_global_rng", "clock_seeded"] {
        let f = walker(Some(bug));
        let same = run_check(CheckKind::SameSeed, &f, &cfg, Some(&f)).unwrap();
        assert!(same.passed, "{bug}: same: {}", same.summary);
        let o = run_check(CheckKind::Continuation, &f, &cfg, Some(&f)).unwrap();
        assert!(o.applicable && !o.passed, "{bug}: {}", o.summary);
        let d = o
            .divergence
            .as_ref()
            .expect("a failure carries its divergence");
        assert_eq!(
            (d.step, d.agent().unwrap_or(""), d.key()),
            (0, "agent", "pos"),
            "{bug}: {}",
            o.summary
        );
        assert!(
            o.summary.contains("episode 2 (reset() without a seed)"),
            "{bug}: {}",
            o.summary
        );
    }
    // Seeded from the pid: two instances of one process agree; only the fresh process, which
    // plays the same episodes, shows it.
    // The trial's instances share one child, as `lockstep check` hosts them.
    let f = walker(Some("pid_seeded"));
    let session = f.session();
    let o = run_check(CheckKind::Continuation, &session, &cfg, Some(&f)).unwrap();
    assert!(o.applicable && !o.passed, "pid_seeded: {}", o.summary);
    assert_eq!(o.right, "a fresh process", "{}", o.summary);
    assert!(
        o.summary.contains("episode 2 (reset() without a seed)"),
        "{}",
        o.summary
    );
    let without_runner = run_check(CheckKind::Continuation, &session, &cfg, None).unwrap();
    assert!(without_runner.passed, "{}", without_runner.summary);

    let good = walker(None);
    let o = run_check(CheckKind::Continuation, &good, &cfg, Some(&good)).unwrap();
    assert!(o.applicable && o.passed, "{}", o.summary);
    assert!(
        o.summary.contains("and in a fresh process"),
        "{}",
        o.summary
    );
    let cartpole = factory(&["gymnasium", "CartPole-v1"]);
    let o = run_check(CheckKind::Continuation, &cartpole, &cfg, Some(&cartpole)).unwrap();
    assert!(o.applicable && o.passed, "CartPole-v1: {}", o.summary);
}

/// Issue 26 item 2 (the pattern "many instances in one process"): a vector env creates its
/// sub-envs together and seeds them S..S+N-1; an env with a class-level cache filled by the
/// first reset in the process (`_levels.setdefault(...)`) gives them all the first seed's
/// layout. The interleaved check missed it while its solo references ran in the same child,
/// after the cache was filled. Each reference is now the seed alone in a fresh process.
#[test]
fn a_cache_filled_by_the_first_reset_fails_interleaved_and_parallel() {
    require(&["gymnasium"]);
    let f = walker(Some("first_seed_wins"));
    // The trial's instances share one child, as `lockstep check` hosts them.
    let session = f.session();
    let cfg = CheckConfig::new(5, 20);
    for kind in [CheckKind::Interleaved, CheckKind::ParallelWorkers] {
        let o = run_check(kind, &session, &cfg, Some(&f)).unwrap();
        assert!(o.applicable && !o.passed, "{kind}: {}", o.summary);
        let d = o.divergence.as_ref().unwrap();
        assert_eq!((d.step, d.key()), (0, "pos"), "{kind}: {}", o.summary);
        assert!(o.left.ends_with("alone in a fresh process"), "{}", o.left);
        if kind == CheckKind::Interleaved {
            assert!(o.summary.contains("env 1 of 3"), "{}", o.summary);
        }
    }
    for kind in [CheckKind::SameSeed, CheckKind::OtherProcess] {
        let o = run_check(kind, &session, &cfg, Some(&f)).unwrap();
        assert!(o.passed, "{kind}: {}", o.summary);
    }
    // The honest walker passes, each layout of instances named in the summary.
    let good = walker(None);
    let session = good.session();
    let o = run_check(CheckKind::Interleaved, &session, &cfg, Some(&good)).unwrap();
    assert!(o.passed, "{}", o.summary);
    assert!(
        o.summary.contains("created together")
            && o.summary
                .contains("each created after the last one's reset")
            && o.summary.contains("alone in a fresh process"),
        "{}",
        o.summary
    );
}

/// Issue 26 item 4 (the pattern "nothing left by an earlier run"): an env that caches its
/// first layout under `~/.cache/` gave every later process that layout, so a check's verdict
/// depended on what the last run left. Every child now has fresh private directories, and the
/// leftover check shows what a shared home would do.
#[test]
fn a_layout_cached_in_the_home_fails_the_leftover_check_every_time() {
    require(&["gymnasium"]);
    let cfg = CheckConfig::new(5, 20);
    let f = walker(Some("home_cache"));
    for run in 1..=2 {
        let session = f.session();
        let o = run_check(CheckKind::Leftover, &session, &cfg, Some(&f)).unwrap();
        assert!(o.applicable && !o.passed, "run {run}: {}", o.summary);
        let d = o.divergence.as_ref().unwrap();
        assert_eq!((d.step, d.key()), (0, "pos"), "{}", o.summary);
        assert!(
            o.summary.contains("after seed 6 ran with the same home"),
            "{}",
            o.summary
        );
        // Private directories: no process of the check sees another's cache.
        for kind in [
            CheckKind::SameSeed,
            CheckKind::OtherSeed,
            CheckKind::OtherProcess,
        ] {
            let o = run_check(kind, &session, &cfg, Some(&f)).unwrap();
            assert!(o.passed, "run {run}: {kind}: {}", o.summary);
        }
    }
    let good = walker(None);
    let o = run_check(CheckKind::Leftover, &good, &cfg, Some(&good)).unwrap();
    assert!(o.applicable && o.passed, "{}", o.summary);
    // Opted out: the children share the caller's directories, and the check does not apply.
    let shared = ProcessEnvFactory::new(
        good.argv.clone(),
        lockstep_protocol::ProcessOptions {
            private_dirs: false,
            ..options()
        },
    );
    let o = run_check(CheckKind::Leftover, &shared, &cfg, Some(&shared)).unwrap();
    assert!(!o.applicable && !o.passed, "{}", o.summary);
}

/// Issue 26 item 5 (the pattern "vector envs given directly"): `gymnasium.make_vec` and
/// `SyncVectorEnv` are how people run envs. Each sub-env of a vector env served by the adapter
/// must replay a single env of seed S+i through auto-resets: Gymnasium's sync and async vector
/// envs do; a vector of walkers whose unseeded reset reads numpy's global RNG does not from the
/// second episode of a sub-env on, and CartPole's own vectorised implementation
/// (`vectorization_mode="vector_entry_point"`) does not from the reset.
#[test]
fn vector_sub_envs_replay_single_envs_through_auto_resets() {
    require(&["gymnasium"]);
    let cfg = CheckConfig::new(3, 300);
    for mode in ["sync", "async"] {
        let f = factory(&[
            "gymnasium-vector",
            "CartPole-v1",
            "--num-envs",
            "3",
            "--vectorization-mode",
            mode,
        ]);
        let o = run_check(CheckKind::Vector, &f, &cfg, Some(&f)).unwrap();
        assert!(o.applicable && o.passed, "{mode}: {}", o.summary);
        assert!(o.summary.contains("auto-resets"), "{}", o.summary);
    }
    let own = factory(&[
        "gymnasium-vector",
        "CartPole-v1",
        "--num-envs",
        "3",
        "--vectorization-mode",
        "vector_entry_point",
    ]);
    let o = run_check(CheckKind::Vector, &own, &cfg, Some(&own)).unwrap();
    assert!(!o.passed, "{}", o.summary);
    assert!(
        o.summary
            .starts_with("sub-env 0 (seed 3), episode 1, step 0"),
        "{}",
        o.summary
    );

    let walkers = ProcessEnvFactory::new(
        adapter_argv(&[
            "factory",
            "lockstep_adapter.testing:walker_vector",
            "--kwargs",
            r#"{"bug": "unseeded_global_rng", "num_envs": 2, "horizon": 10}"#,
        ]),
        options(),
    );
    let o = run_check(
        CheckKind::Vector,
        &walkers,
        &CheckConfig::new(3, 40),
        Some(&walkers),
    )
    .unwrap();
    assert!(!o.passed, "{}", o.summary);
    let d = o.divergence.as_ref().unwrap();
    assert_eq!((d.step, d.key()), (11, "pos"), "{}", o.summary);
    assert!(o.summary.contains("episode 2, step 11"), "{}", o.summary);
    // A single env is not a vector env: the check does not apply, and says so.
    let single = walker(None);
    let o = run_check(CheckKind::Vector, &single, &cfg, Some(&single)).unwrap();
    assert!(!o.applicable && !o.passed, "{}", o.summary);
}
