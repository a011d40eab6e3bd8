//! Every fixture through every check: the correct one passes all five, each faulty one is
//! caught by the checks that should catch it and localised to the right step, agent and key.

use std::sync::Mutex;

use super::*;
use crate::fixtures::{self, Fault};
use crate::trace::{rollout, RolloutOptions};

/// Fixtures with process-global state (global-rng, late-divergence) perturb each other when
/// tests run on several threads: those tests take this lock.
static GLOBAL_STATE: Mutex<()> = Mutex::new(());

/// The other-process check in unit tests: a fresh instance on a fresh thread. (The real one,
/// which re-runs the `lockstep` binary, is tested end to end in crates/cli/tests.)
struct ThreadRunner;

impl ProcessRunner for ThreadRunner {
    /// Its "fresh processes" are threads of this one: never started ahead of the checks.
    fn runs_elsewhere(&self) -> bool {
        false
    }

    fn run(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String> {
        let env = env.to_string();
        std::thread::spawn(move || {
            let f = fixtures::factory(&env).ok_or("unknown fixture")?;
            let mut e = f.make().map_err(|e| e.to_string())?;
            let opts = RolloutOptions {
                capture,
                ..RolloutOptions::default()
            };
            rollout(e.as_mut(), seed, steps, &opts).map_err(|e| e.to_string())
        })
        .join()
        .map_err(|_| "runner thread panicked".to_string())?
    }
}

fn run_all(fault: Fault) -> Vec<CheckOutcome> {
    let f = fixtures::factory(fault.env_name()).unwrap();
    let cfg = CheckConfig::new(42, 100);
    run_checks(&CheckKind::ALL, &f, &cfg, Some(&ThreadRunner)).unwrap()
}

fn outcome(all: &[CheckOutcome], kind: CheckKind) -> &CheckOutcome {
    all.iter().find(|o| o.check == kind).unwrap()
}

fn failed(all: &[CheckOutcome]) -> Vec<CheckKind> {
    all.iter()
        .filter(|o| o.applicable && !o.passed)
        .map(|o| o.check)
        .collect()
}

/// Asserts the first divergence of `kind` is at `step`, `agent`, `key`.
fn assert_site(all: &[CheckOutcome], kind: CheckKind, step: u64, agent: Option<&str>, key: &str) {
    let o = outcome(all, kind);
    assert!(!o.passed, "{kind} should fail");
    let d = o
        .divergence
        .as_ref()
        .expect("a failure carries its divergence");
    assert_eq!(
        (d.step, d.agent(), d.key()),
        (step, agent, key),
        "{kind}: {}",
        o.summary
    );
}

use CheckKind::*;

#[test]
fn correct_fixture_passes_all() {
    let all = run_all(Fault::None);
    for o in &all {
        assert!(o.passed || !o.applicable, "{}: {}", o.check, o.summary);
    }
    // The test runner shares no home between processes, and the fixture is no vector env.
    let not_applicable: Vec<CheckKind> = all
        .iter()
        .filter(|o| !o.applicable)
        .map(|o| o.check)
        .collect();
    assert_eq!(not_applicable, [Leftover, Vector]);
    assert_eq!(all.len(), CheckKind::ALL.len());
    let d = outcome(&all, OtherSeed).divergence.as_ref().unwrap();
    assert_eq!(d.step, 0, "other seeds differ from the reset on");
}

#[test]
fn global_rng_is_caught_by_interleaved_and_parallel() {
    let _g = GLOBAL_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let all = run_all(Fault::GlobalRng);
    assert_eq!(failed(&all), [Interleaved, ParallelWorkers]);
    assert_site(&all, Interleaved, 1, Some("blue"), "noise");
    let d = outcome(&all, Interleaved).divergence.clone().unwrap();
    match d.detail {
        Some(Detail::Element {
            index,
            ref dtype,
            ref left,
            ref right,
            ..
        }) => {
            assert_eq!((index, dtype.as_str()), (0, "float32"));
            assert_ne!(left, right);
        }
        other => panic!("no element detail: {other:?}"),
    }
    assert_eq!(d.note, None, "interleaving in one thread is deterministic");
    // Threads race for the shared generator from their resets on: step 0 or 1.
    let p = outcome(&all, ParallelWorkers).divergence.as_ref().unwrap();
    assert!(p.step <= 1 && p.key() == "noise", "{p:?}");
}

#[test]
fn wall_clock_is_caught_in_a_log_line() {
    let all = run_all(Fault::WallClock);
    assert_eq!(
        failed(&all),
        [
            SameSeed,
            Interleaved,
            OtherProcess,
            ParallelWorkers,
            Continuation
        ]
    );
    for kind in [SameSeed, OtherProcess] {
        assert_site(&all, kind, 5, None, "logs");
        let d = outcome(&all, kind).divergence.as_ref().unwrap();
        let Some(Detail::Log {
            line,
            char_index,
            left: Some(l),
            right: Some(r),
        }) = &d.detail
        else {
            panic!("no log detail: {d:?}")
        };
        assert_eq!(*line, 2);
        assert!(l.starts_with("heartbeat wall_ns=") && r.starts_with("heartbeat wall_ns="));
        assert!(*char_index >= "heartbeat wall_ns=".len() as u64);
    }
}

#[test]
fn hash_order_is_caught_at_the_reset() {
    let all = run_all(Fault::HashOrder);
    assert_eq!(
        failed(&all),
        [
            SameSeed,
            Interleaved,
            OtherProcess,
            ParallelWorkers,
            Continuation
        ]
    );
    assert_site(&all, SameSeed, 0, Some("blue"), "hosts");
    assert_site(&all, OtherProcess, 0, Some("blue"), "hosts");
    let d = outcome(&all, SameSeed).divergence.as_ref().unwrap();
    assert!(
        matches!(&d.detail, Some(Detail::Element { dtype, .. }) if dtype == "uint8"),
        "{d:?}"
    );
}

#[test]
fn sticky_cache_is_caught_by_rollouts_on_one_instance() {
    let all = run_all(Fault::StickyCache);
    assert_eq!(failed(&all), [SameSeed]);
    assert_site(&all, SameSeed, 0, Some("blue"), "seen");
    let o = outcome(&all, SameSeed);
    assert_eq!(o.right, "rollout 2 (same instance)");
    let d = o.divergence.as_ref().unwrap();
    let Some(Detail::Element {
        dtype, left, right, ..
    }) = &d.detail
    else {
        panic!("{d:?}")
    };
    assert_eq!(
        (dtype.as_str(), left.as_str(), right.as_str()),
        ("bool", "false", "true")
    );
}

#[test]
fn stale_info_is_caught_with_its_json_pointer() {
    let all = run_all(Fault::StaleInfo);
    assert_eq!(failed(&all), [SameSeed]);
    assert_site(&all, SameSeed, 1, Some("blue"), "info");
    let d = outcome(&all, SameSeed).divergence.as_ref().unwrap();
    let Some(Detail::Info { changes }) = &d.detail else {
        panic!("{d:?}")
    };
    assert_eq!(changes[0].pointer, "/episode_return");
    assert_eq!(changes[0].kind, "changed");
}

#[test]
fn late_divergence_is_found_at_step_51() {
    let _g = GLOBAL_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let all = run_all(Fault::LateDivergence);
    assert!(failed(&all).contains(&SameSeed));
    assert!(failed(&all).contains(&Interleaved));
    assert!(failed(&all).contains(&ParallelWorkers));
    for kind in [SameSeed, Interleaved, ParallelWorkers] {
        assert_site(&all, kind, 51, Some("blue"), "tick");
    }
    let d = outcome(&all, SameSeed).divergence.as_ref().unwrap();
    assert!(
        matches!(&d.detail, Some(Detail::Element { dtype, index: 0, .. }) if dtype == "int64"),
        "{d:?}"
    );
}

#[test]
fn seedless_fails_other_seed_only() {
    let all = run_all(Fault::Seedless);
    assert_eq!(failed(&all), [OtherSeed]);
    let o = outcome(&all, OtherSeed);
    // What was seen, not a supposed cause.
    assert!(
        o.summary
            .starts_with("seeds 42 and 43..=50 gave identical episodes"),
        "{}",
        o.summary
    );
    assert!(o.applicable);
}

/// Issue 9: one pair of seeds proves nothing. An honest env with 3-step episodes and 8
/// possible episodes passes on 20 reference seeds, saying when the evidence is weak.
#[test]
fn issue9_other_seed_does_not_cry_wolf_on_a_small_world() {
    let f = fixtures::factory("fixture:coin-flips").unwrap();
    let mut weak = 0;
    for seed in 0..20 {
        let o = run_check(OtherSeed, &f, &CheckConfig::new(seed, 100), None).unwrap();
        assert!(o.passed && o.applicable, "seed {seed}: {}", o.summary);
        assert_eq!(o.transitions, 4);
        if o.summary.contains("weak evidence") {
            weak += 1;
        } else {
            assert!(o.summary.starts_with("all 8 other seeds"), "{}", o.summary);
        }
    }
    // With 8 episodes, most reference seeds share their episode with one of 8 others.
    assert!(weak >= 5, "{weak} of 20 reference seeds had a twin");
}

/// Issue 9: an env that declares itself seedless gets "not applicable", never "passed"; an
/// undeclared one (fixture:seedless) still fails, and so does a declared one whose seeds differ.
#[test]
fn issue9_declared_seedless_is_not_applicable_never_passed() {
    let f = fixtures::factory("fixture:constant").unwrap();
    let o = run_check(OtherSeed, &f, &CheckConfig::new(3, 10), None).unwrap();
    assert!(!o.applicable && !o.passed, "{o:?}");
    assert!(o.summary.starts_with("not applicable"), "{}", o.summary);
    let seedless = fixtures::factory("fixture:seedless").unwrap();
    let mut cfg = CheckConfig::new(3, 10);
    let o = run_check(OtherSeed, &seedless, &cfg, None).unwrap();
    assert!(o.applicable && !o.passed, "{}", o.summary);
    cfg.seedless = true;
    let o = run_check(OtherSeed, &seedless, &cfg, None).unwrap();
    assert!(
        !o.applicable && !o.passed,
        "declared by the user: {}",
        o.summary
    );
    let honest = fixtures::factory("fixture:coin-flips").unwrap();
    let o = run_check(OtherSeed, &honest, &cfg, None).unwrap();
    assert!(
        o.applicable && !o.passed,
        "a wrong declaration fails: {}",
        o.summary
    );
    assert!(
        o.summary.contains("declared seedless, but"),
        "{}",
        o.summary
    );
}

/// Issue 9: a module counter that changes the episode every 4 resets passed the 3 rollouts
/// of the same-seed check; the default rollouts span at least two of its boundaries.
#[test]
fn issue9_fault_at_the_fifth_reset_is_caught_with_default_rollouts() {
    let _g = GLOBAL_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let f = fixtures::factory("fixture:level-up").unwrap();
    let cfg = CheckConfig::new(4, 20);
    assert_eq!(cfg.rollouts, DEFAULT_ROLLOUTS);
    let o = run_check(SameSeed, &f, &cfg, None).unwrap();
    assert!(!o.passed, "{}", o.summary);
    let d = o.divergence.as_ref().unwrap();
    assert_eq!((d.step, d.agent(), d.key()), (0, Some("blue"), "energy"));
}

#[test]
fn default_rollouts_shrink_for_long_episodes() {
    assert_eq!(default_rollouts(200), 10);
    assert_eq!(default_rollouts(1000), 10);
    assert_eq!(default_rollouts(2000), 5);
    assert_eq!(default_rollouts(100_000), 3);
}

#[test]
fn short_rollouts_miss_the_late_divergence() {
    let _g = GLOBAL_STATE.lock().unwrap_or_else(|e| e.into_inner());
    let f = fixtures::factory("fixture:late-divergence").unwrap();
    let o = run_check(SameSeed, &f, &CheckConfig::new(1, 50), None).unwrap();
    assert!(o.passed, "{}", o.summary);
}

#[test]
fn bad_parameters_are_errors() {
    let f = fixtures::factory("fixture").unwrap();
    let mut cfg = CheckConfig::new(1, 5);
    cfg.workers = 1;
    assert!(matches!(
        run_check(ParallelWorkers, &f, &cfg, None),
        Err(CheckError::TooFew { .. })
    ));
    assert!(matches!(
        run_check(OtherProcess, &f, &cfg, None),
        Err(CheckError::NoRunner)
    ));
    assert_eq!("process".parse::<CheckKind>(), Ok(OtherProcess));
    assert_eq!("same_seed".parse::<CheckKind>(), Ok(SameSeed));
    assert!("nope".parse::<CheckKind>().is_err());
}

#[test]
fn outcomes_convert_to_values() {
    let all = run_all(Fault::StaleInfo);
    let v = outcome(&all, SameSeed).to_value();
    let Value::Object(m) = &v else { panic!() };
    assert_eq!(m["check"], Value::String("same_seed".into()));
    assert_eq!(m["passed"], Value::Bool(false));
    let Value::Object(d) = &m["divergence"] else {
        panic!()
    };
    assert_eq!(d["step"], Value::from(1i64));
    let json = serde_json::to_string(&all).unwrap();
    let back: Vec<CheckOutcome> = serde_json::from_str(&json).unwrap();
    // The same-seed check's per-rollout lengths and returns feed the report's plots, and the
    // step times its timing hint; they are not part of the check's JSON, so they do not come
    // back.
    let same = outcome(&all, SameSeed);
    assert_eq!(same.episodes.len(), CheckConfig::new(42, 100).rollouts);
    assert!(same.episodes.iter().all(|e| e.steps > 0));
    let without: Vec<CheckOutcome> = all
        .iter()
        .map(|o| CheckOutcome {
            episodes: Vec::new(),
            step_times: None,
            ..o.clone()
        })
        .collect();
    assert_eq!(back, without);
}

#[test]
fn a_check_that_does_not_apply_is_never_passed() {
    let o = CheckOutcome::not_applicable(CheckKind::OtherSeed, "the env cannot fork".into());
    assert!(!o.applicable && !o.passed);
    assert_eq!(o.summary, "the env cannot fork");
    // An outcome written before the field existed reads back as applicable.
    let mut v = serde_json::to_value(&o).unwrap();
    v.as_object_mut().unwrap().remove("applicable");
    let back: CheckOutcome = serde_json::from_value(v).unwrap();
    assert!(back.applicable);
}

/// An env that glitches once: the second episode its factory's instances play has
/// `{"glitch": true}` in the info at step `at`, and no other episode has. A re-run never
/// reproduces the glitch, as with an unseeded draw that happened to differ once.
struct GlitchOnce {
    spec: crate::env::EnvSpec,
    resets: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    at: u64,
    glitching: bool,
    step: u64,
    t: crate::env::Transition,
}

impl GlitchOnce {
    const STEPS: u64 = 60;

    fn factory(
        at: u64,
    ) -> (
        impl EnvFactory,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let resets = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let shared = resets.clone();
        let make = move || -> Result<Box<dyn Env>, EnvError> {
            let obs = crate::env::Space::Box {
                dtype: "uint8".into(),
                shape: vec![2],
                low: vec![0.0],
                high: vec![9.0],
            };
            Ok(Box::new(GlitchOnce {
                spec: crate::env::EnvSpec {
                    id: "glitch-once".into(),
                    config: Value::Null,
                    agents: vec![crate::env::AgentSpec {
                        name: "agent".into(),
                        action_space: crate::env::Space::Discrete { n: 2, start: 0 },
                        observation_space: std::collections::BTreeMap::from([(
                            "pos".to_string(),
                            obs,
                        )]),
                    }],
                },
                resets: shared.clone(),
                at,
                glitching: false,
                step: 0,
                t: crate::env::Transition::default(),
            }))
        };
        (("glitch-once".to_string(), make), resets)
    }

    fn show(&mut self) -> &crate::env::Transition {
        let mut info = lockstep_canon::Map::new();
        if self.glitching && self.step == self.at {
            info.insert("glitch".into(), Value::Bool(true));
        }
        let pos = crate::env::Array::new(
            &[2],
            crate::env::ArrayData::U8(vec![(self.step % 7) as u8, 1]),
        )
        .expect("two elements");
        self.t = crate::env::Transition {
            agents: std::collections::BTreeMap::from([(
                "agent".to_string(),
                crate::env::AgentStep {
                    obs: std::collections::BTreeMap::from([("pos".to_string(), pos)]),
                    reward: 0.0,
                    terminated: false,
                    truncated: self.step >= Self::STEPS,
                    info: Value::Object(info),
                },
            )]),
            logs: Vec::new(),
        };
        &self.t
    }
}

impl Env for GlitchOnce {
    fn spec(&self) -> &crate::env::EnvSpec {
        &self.spec
    }
    fn reset(&mut self, _seed: u64, _options: &Value) -> Result<&crate::env::Transition, EnvError> {
        let n = self
            .resets
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.glitching = n == 1;
        self.step = 0;
        Ok(self.show())
    }
    fn step(&mut self, _: &crate::env::Actions) -> Result<&crate::env::Transition, EnvError> {
        self.step += 1;
        Ok(self.show())
    }
    fn state(&mut self) -> Result<Value, EnvError> {
        Ok(Value::Null)
    }
}

fn same_seed_of_glitch_at(at: u64) -> (CheckOutcome, usize) {
    let (f, resets) = GlitchOnce::factory(at);
    let cfg = CheckConfig {
        rollouts: 2,
        ..CheckConfig::new(0, GlitchOnce::STEPS)
    };
    let mut all = run_checks(&[SameSeed], &f, &cfg, None).unwrap();
    (
        all.remove(0),
        resets.load(std::sync::atomic::Ordering::SeqCst),
    )
}

#[test]
fn a_difference_in_the_kept_steps_is_explained_from_the_runs_that_differed() {
    let (o, resets) = same_seed_of_glitch_at(3);
    let d = o.divergence.expect("the glitch is a difference");
    assert_eq!((d.step, d.agent(), d.key()), (3, Some("agent"), "info"));
    match d.detail {
        Some(Detail::Info { ref changes }) => {
            assert_eq!(changes.len(), 1, "{changes:?}");
            assert_eq!(
                (changes[0].pointer.as_str(), changes[0].kind.as_str()),
                ("/glitch", "added")
            );
        }
        ref other => panic!("no info detail: {other:?}"),
    }
    assert_eq!(d.note, None, "the values are the first runs' own");
    assert_eq!(resets, 2, "no re-run was needed");
}

#[test]
fn a_difference_past_the_kept_steps_is_re_run_and_says_when_it_did_not_reproduce() {
    let at = crate::trace::KeepFirst::CHECKS.steps as u64 + 8;
    let (o, resets) = same_seed_of_glitch_at(at);
    let d = o.divergence.expect("the glitch is a difference");
    assert_eq!((d.step, d.key()), (at, "info"));
    assert_eq!(d.detail, None);
    assert_eq!(
        d.note.as_deref(),
        Some(
            format!("{RERUNS} re-runs to step {at} did not reproduce the difference: the env is not deterministic")
                .as_str()
        )
    );
    assert_eq!(
        resets,
        2 + 2 * RERUNS,
        "each re-run plays both rollouts again"
    );
}

/// A built-in env's unseeded reset continues the chain of its first seed: the continuation
/// check applies and passes, and the continued episodes are new ones.
#[test]
fn a_built_in_env_continues_its_seed_chain() {
    let f = fixtures::factory("fixture").unwrap();
    let o = run_check(CheckKind::Continuation, &f, &CheckConfig::new(3, 20), None).unwrap();
    assert!(o.applicable && o.passed, "{}", o.summary);
    let mut env = f.make().unwrap();
    let first = rollout(env.as_mut(), 3, 20, &RolloutOptions::default()).unwrap();
    let unseeded = RolloutOptions {
        unseeded: true,
        ..RolloutOptions::default()
    };
    let next = rollout(env.as_mut(), 3, 20, &unseeded).unwrap();
    assert_ne!(first.trace.episode, next.trace.episode);
    assert_eq!(
        "continuation".parse::<CheckKind>(),
        Ok(CheckKind::Continuation)
    );
}

/// The command line's default list is [`CheckKind::ALL`].
#[test]
fn the_default_checks_are_all() {
    let names: Vec<&str> = CheckKind::ALL.iter().map(|k| k.short()).collect();
    assert_eq!(names.join(","), crate::check::DEFAULT_CHECKS);
}

/// A rollout that differs from the check's reference only in one of its rollouts (the glitch
/// comes at the instance's second reset, never again, so no re-run reproduces it) is found by
/// check digests, and the failure carries the v1 timeline of the two runs that differed: the
/// digests a v1 recording of each gives (by_digest.rs).
#[test]
fn a_difference_found_by_check_digests_has_the_v1_timeline_of_the_runs_that_differed() {
    let at = crate::trace::KeepFirst::CHECKS.steps as u64 + 8;
    let (o, _) = same_seed_of_glitch_at(at);
    let (f, _) = GlitchOnce::factory(at);
    let mut env = f.make().unwrap();
    let opts = CheckConfig::new(0, GlitchOnce::STEPS).opts(None);
    let first = rollout(env.as_mut(), 0, GlitchOnce::STEPS, &opts).unwrap();
    let second = rollout(env.as_mut(), 0, GlitchOnce::STEPS, &opts).unwrap();
    let digests = |r: &Recorded| r.trace.step_digests.iter().map(|s| s.digest).collect();
    assert_eq!(o.timeline, Some((digests(&first), digests(&second))));
    assert_eq!(o.episode, first.trace.episode);
    let d = o.divergence.expect("the glitch is a difference");
    let want = first_divergence(&first.trace.step_digests, &second.trace.step_digests).unwrap();
    assert_eq!(
        (d.step, &d.site, &d.also),
        (want.step, &want.site, &want.also)
    );
}

/// The other-seed check names where the first other seed differs from the v1 traces of the
/// two seeds, though it records the other seeds by check digests.
#[test]
fn other_seed_names_the_site_a_v1_comparison_names() {
    let f = fixtures::factory("fixture").unwrap();
    let cfg = CheckConfig::new(3, 20);
    let o = run_check(OtherSeed, &f, &cfg, None).unwrap();
    let opts = cfg.opts_actions_of(3);
    let trace = |seed| {
        let mut env = f.make().unwrap();
        rollout(env.as_mut(), seed, 20, &opts).unwrap().trace
    };
    let (a, b) = (trace(3), trace(4));
    assert_eq!(
        o.divergence,
        first_divergence(&a.step_digests, &b.step_digests)
    );
    assert_eq!(o.episode, a.episode);
    assert!(o.passed, "{}", o.summary);
}

#[test]
fn a_same_seed_rollout_label_gives_back_its_number() {
    for r in 0..12 {
        assert_eq!(rollouts_through(&rollout_label(r)), Some(r + 1));
    }
    assert_eq!(rollouts_through("seed 7 alone in a fresh process"), None);
}
