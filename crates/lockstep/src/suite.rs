//! `lockstep check` as a library: the trials of a run (the reset-contract audit and the replay
//! checks of one env and seed) and golden verification, turned into [`crate::report`] records.
//!
//! **Isolation.** A trial must never share a process with another trial unless a check does so
//! on purpose (interleaved, parallel workers): otherwise module-global state of one trial leaks
//! into the next, and a verdict depends on `--jobs`, `--shard` or the order of the seeds.
//! So there are two ways to run trials, and no third:
//!
//! - [`run_isolated`]: each trial (and each golden) through an [`Isolated`] runner whose
//!   contract is "a fresh process per call" (the CLI re-runs its own executable as
//!   `lockstep worker`); many run at once, on `jobs` threads that only wait for processes;
//! - [`run_here`]: one after another in this process, for callers that mean it (one trial, or
//!   an env that only exists in this process). It takes no `jobs`: parallel trials in one
//!   process are exactly what must not happen.
//!
//! Inside a trial the parts run in a fixed order (the audit, then the checks in
//! [`CheckKind::ALL`] order, whatever order they were asked in), each on fresh instances.
//!
//! An error stops only the part it hit (the audit, or one check): the other parts still run,
//! and what was gathered stays in the report. Results come back in run order whatever the
//! number of workers, and the report is assembled from them, so it does not depend on
//! scheduling.

use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use lockstep_canon::Value;

use crate::audit::{audit_trial, inferred_contract, TrialRecord};
use crate::check::{
    default_rollouts, run_check, CheckConfig, CheckKind, CheckOutcome as ReplayOutcome, FreshRuns,
    ProcessRunner,
};
use crate::env::EnvFactory;
use crate::golden::Golden;
use crate::report::{
    AuditRecord, CheckOutcome, ContractInfo, EnvAbout, EpisodeGroup, GoldenOutcome, Shard,
    StepTimes, Timeline, Trial,
};

/// Makes the factory of an env name (the caller knows which names exist), or says why not.
pub type Resolver<'a> = dyn Fn(&str) -> Result<Box<dyn EnvFactory>, String> + 'a;

/// One environment of a run: its name, how to make instances, and how to run it in a fresh
/// process (the other-process check).
pub struct SuiteEnv<'a> {
    pub id: String,
    pub factory: &'a dyn EnvFactory,
    pub runner: &'a dyn ProcessRunner,
    /// The user declares the env seedless (see [`CheckConfig::seedless`]).
    pub seedless: bool,
}

/// What every trial of a run shares.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Steps per rollout.
    pub steps: u64,
    /// Replay checks, in [`CheckKind::ALL`] order, each once (see [`parse_checks`]).
    pub checks: Vec<CheckKind>,
    /// Rollouts of the same-seed check; `None` for [`default_rollouts`] of `steps`.
    pub rollouts: Option<usize>,
    /// A directory where the trials of one run share their fresh-process references
    /// ([`FreshRuns::with_store`]); `None` keeps them to each trial.
    pub fresh_runs: Option<PathBuf>,
    /// Fields left out of every comparison ([`crate::ignore`]); the fresh-process runner must
    /// leave out the same.
    pub ignore: crate::ignore::Ignore,
    /// Record each check's step times in the report ([`crate::report::StepTimes`]).
    pub timings: bool,
}

impl SuiteOptions {
    /// The check parameters of one trial.
    pub fn check_config(&self, seed: u64, seedless: bool) -> CheckConfig {
        let mut cfg = CheckConfig::new(seed, self.steps);
        cfg.rollouts = self
            .rollouts
            .unwrap_or_else(|| default_rollouts(self.steps));
        cfg.seedless = seedless;
        cfg.ignore = self.ignore.clone();
        cfg
    }
}

/// Parses check names (short or report names), refusing unknown and repeated ones, and puts
/// them in [`CheckKind::ALL`] order: the order of a trial's parts never depends on how they
/// were asked for.
pub fn parse_checks(names: &[String]) -> Result<Vec<CheckKind>, String> {
    let mut kinds = Vec::with_capacity(names.len());
    for name in names {
        let kind = name.trim().parse::<CheckKind>()?;
        if kinds.contains(&kind) {
            return Err(format!("check {:?} is named twice", kind.short()));
        }
        kinds.push(kind);
    }
    if kinds.is_empty() {
        return Err("no check named".into());
    }
    kinds.sort();
    Ok(kinds)
}

/// The (env index, seed) pairs a shard owns, in run order: seeds by position, `p % N == I-1`.
pub fn shard_work(envs: usize, seeds: &[u64], shard: Option<Shard>) -> Vec<(usize, u64)> {
    let mut work = Vec::new();
    for e in 0..envs {
        for (pos, &seed) in seeds.iter().enumerate() {
            if shard.is_none_or(|s| s.owns(pos)) {
                work.push((e, seed));
            }
        }
    }
    work
}

/// Runs trials and goldens each in a fresh process. Implementations must not run two calls
/// in one process: that is the whole point (see the module doc).
pub trait Isolated: Sync {
    /// The trial of env `env` (an index into the run's envs) for `seed`.
    fn trial(&self, env: usize, seed: u64) -> Trial;
    /// The verification of one golden file; the flag as in [`verify_golden`].
    fn golden(&self, file: &Path) -> (GoldenOutcome, bool);
}

/// Runs `work` and then `goldens` through `runner`, `jobs` at a time (at least 1); `done` is
/// called after each (progress). Results come back in the order of `work` and `goldens`.
pub fn run_isolated(
    runner: &dyn Isolated,
    work: &[(usize, u64)],
    goldens: &[PathBuf],
    jobs: usize,
    done: &(dyn Fn() + Sync),
) -> (Vec<Trial>, Vec<(GoldenOutcome, bool)>) {
    let trials = parallel_map(work, jobs, |&(e, seed)| runner.trial(e, seed), done);
    let verified = parallel_map(goldens, jobs, |g| runner.golden(g), done);
    (trials, verified)
}

/// Runs `work` one trial after another in this process; `done` is called after each.
pub fn run_here(
    envs: &[SuiteEnv<'_>],
    work: &[(usize, u64)],
    options: &SuiteOptions,
    done: &dyn Fn(),
) -> Vec<Trial> {
    work.iter()
        .map(|&(e, seed)| {
            let t = run_trial(&envs[e], seed, options);
            done();
            t
        })
        .collect()
}

/// `f` over `items` on up to `jobs` threads, results in the order of `items`.
fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> R + Sync,
    done: &(dyn Fn() + Sync),
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                done();
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// Runs the audit and the chosen replay checks of one env for `seed`, in this process.
pub fn run_trial(env: &SuiteEnv<'_>, seed: u64, options: &SuiteOptions) -> Trial {
    // This trial's own instances (one child for an external env), shared with no other trial.
    let session = env.factory.session();
    let factory = session.as_deref().unwrap_or(env.factory);
    let mut trial = Trial {
        error: None,
        ..Trial::errored(&env.id, seed, String::new())
    };
    let mut errors = Vec::new();
    match audit(factory, seed, options.steps, &options.ignore) {
        Ok((record, about)) => {
            trial.audit = Some(record);
            trial.about = Some(about);
        }
        Err(e) => errors.push(format!("reset-contract audit: {e}")),
    }
    let cfg = options.check_config(seed, env.seedless);
    let mut kinds = options.checks.clone();
    kinds.sort();
    kinds.dedup();
    // The fresh-process references start now, on threads of their own, while the in-process
    // checks run: each seed's once, shared by the checks that compare with it.
    let fresh = FreshRuns::with_store(env.runner, options.fresh_runs.clone());
    // Its timing hint is carried to the later checks of the seed (check::CheckOutcome).
    let mut same_seed: Option<ReplayOutcome> = None;
    std::thread::scope(|scope| {
        fresh.prefetch(scope, &factory.id(), &kinds, &cfg);
        for &kind in &kinds {
            match run_check(kind, factory, &cfg, Some(&fresh)) {
                Ok(mut outcome) => {
                    if kind == CheckKind::SameSeed {
                        trial.episodes = EpisodeGroup::group(&outcome.episodes);
                        same_seed = Some(outcome.clone());
                    } else if let Some(same) = &same_seed {
                        outcome.carry_timing(same);
                    }
                    let mut record = check_record(kind.short(), &outcome);
                    if options.timings {
                        record.step_ms = outcome.step_times.as_ref().map(StepTimes::of);
                    }
                    record.cause =
                        crate::cause::of_failure(kind, env.factory, &fresh, &cfg, &outcome);
                    trial.checks.push(record);
                }
                Err(e) => errors.push(format!("{} check: {e}", kind.short())),
            }
        }
    });
    if !errors.is_empty() {
        trial.error = Some(errors.join("\n"));
    }
    trial
}

/// The audit of one seed, and what the env says about itself (its id, the contract the audit
/// held it to). The run's `/state` ignore patterns join the contract's own.
fn audit(
    factory: &dyn EnvFactory,
    seed: u64,
    steps: u64,
    ignore: &crate::ignore::Ignore,
) -> Result<(AuditRecord, EnvAbout), String> {
    let mut env = factory.make().map_err(|e| e.to_string())?;
    let (mut contract, info) = match env.contract() {
        Some(c) => {
            let info = ContractInfo::of(&c, true);
            (c, info)
        }
        None => {
            let (c, mut state) = inferred_contract(factory, seed).map_err(|e| e.to_string())?;
            // A field ignored whole is not one the starting state must have.
            ignore.apply_state(&mut state);
            let c = crate::contract::Contract::inferred(c.name, &state);
            let info = ContractInfo::inferred(&c, &state);
            (c, info)
        }
    };
    if ignore.has_state() {
        let own = crate::ignore::Ignore::parse(&contract.compare.ignore)
            .map_err(|e| format!("the contract's [compare] ignore: {e}"))?;
        contract.compare.ignore = own.union(ignore).texts().to_vec();
    }
    let config = &env.spec().config;
    let driver = ["policy", "actions"]
        .iter()
        .find_map(|k| config.get(k).map(|v| (k, v)))
        .map(|(k, v)| serde_json::json!({ *k: json(v) }));
    let mut about = EnvAbout {
        env_id: env.spec().id.clone(),
        contract: info,
        driver,
        provenance: None,
    };
    let record = audit_trial(env.as_mut(), &contract, seed, steps, &mut |_| Ok(()));
    // What the process touched while it was made and audited, and what runs it: asked
    // before it closes. An env that cannot say what runs it loses nothing else.
    let effects = env.effects();
    let provenance = env.provenance();
    if let Ok(Some(p)) = &provenance {
        about.provenance = Some(json(p));
    }
    let closed = env.close();
    let record = record.map_err(|e| e.to_string())?;
    closed.map_err(|e| e.to_string())?;
    let mut record = audit_record(&record);
    match effects {
        Ok(found) => {
            let mut effects = Vec::new();
            for v in found.unwrap_or_default() {
                match lockstep_canon::from_value::<crate::cause::Effect>(&v) {
                    Ok(e) => effects.push(e),
                    Err(e) => record
                        .warnings
                        .push(format!("an effect the env reported cannot be read: {e}")),
                }
            }
            // Warned about with their paths (a contract's layer may cover one), kept without.
            record
                .warnings
                .extend(crate::cause::effect_warnings(&effects, Some(&contract)));
            let cwd = std::env::current_dir().ok();
            record.effects = effects
                .into_iter()
                .map(|e| e.for_report(cwd.as_deref()))
                .collect();
        }
        // Not being able to list what the env touched must not cost the audit's verdict.
        Err(e) => record.warnings.push(format!(
            "what the env touched outside itself could not be read: {e}"
        )),
    }
    if let Err(e) = provenance {
        record
            .warnings
            .push(format!("what runs the env could not be read: {e}"));
    }
    Ok((record, about))
}

fn audit_record(r: &TrialRecord) -> AuditRecord {
    let (different_fields, changes) = match &r.diff {
        Some(d) => (
            d.different_fields.clone(),
            d.changes.iter().map(|c| json(&c.to_value())).collect(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    let mut missing = r.initial_conformance.missing.clone();
    let mut unexpected = r.initial_conformance.unexpected.clone();
    for p in &r.repeat_conformance.missing {
        if !missing.contains(p) {
            missing.push(p.clone());
        }
    }
    for p in &r.repeat_conformance.unexpected {
        if !unexpected.contains(p) {
            unexpected.push(p.clone());
        }
    }
    AuditRecord {
        conforms: r.conforms,
        initial_fingerprint: Some(r.initial_fingerprint.clone()),
        repeat_fingerprint: Some(r.repeat_fingerprint.clone()),
        different_fields,
        changes,
        missing,
        unexpected,
        // Only an env that reports success has a task outcome to show.
        success: r.repeat.declared_success.then_some(r.success),
        detail: audit_detail(r),
        effects: Vec::new(),
        warnings: Vec::new(),
    }
}

/// The audit record for the report: whole when the trial does not conform, where the two
/// states explain the failure; without the states (`contaminated`, `after_reset`) when it
/// conforms, where its fingerprints say everything (a range state is ~140 KB: with them, a
/// passing default run wrote a 4.5 MB report).
fn audit_detail(r: &TrialRecord) -> serde_json::Value {
    let mut detail = json(&r.to_value());
    if r.conforms {
        if let Some(map) = detail.as_object_mut() {
            map.remove("contaminated");
            map.remove("after_reset");
        }
    }
    detail
}

fn check_record(name: &str, o: &ReplayOutcome) -> CheckOutcome {
    CheckOutcome {
        check: name.to_string(),
        applicable: o.applicable,
        passed: o.passed,
        summary: o.summary.clone(),
        divergence: o.divergence.as_ref().map(|d| json(&d.to_value())),
        timeline: o.timeline.as_ref().map(|(left, right)| Timeline {
            left_label: o.left.clone(),
            right_label: o.right.clone(),
            left: left.iter().map(|d| d.to_hex()).collect(),
            right: right.iter().map(|d| d.to_hex()).collect(),
            first_divergent_step: o.divergence.as_ref().map(|d| d.step),
        }),
        cause: None,
        timing: o.timing.clone(),
        step_ms: None,
    }
}

/// Verifies one golden file against the env it names, made by `resolve`. The flag is true when
/// the file could not be verified at all (unreadable, unknown env, env error), as opposed to
/// verified and drifted.
pub fn verify_golden(path: &Path, resolve: &Resolver<'_>) -> (GoldenOutcome, bool) {
    let file = path.display().to_string();
    let mut outcome = GoldenOutcome {
        file: file.clone(),
        env: None,
        seed: None,
        passed: false,
        summary: String::new(),
        divergence: None,
    };
    let golden = match Golden::load(path) {
        Ok(g) => g,
        Err(e) => {
            outcome.summary = e.to_string();
            return (outcome, true);
        }
    };
    outcome.env = Some(golden.env.clone());
    outcome.seed = Some(golden.seed);
    let factory = match resolve(&golden.env_name()) {
        Ok(f) => f,
        Err(e) => {
            outcome.summary = e;
            return (outcome, true);
        }
    };
    let v = match crate::golden::verify(factory.as_ref(), &golden) {
        Ok(v) => v,
        Err(e) => {
            outcome.summary = e.to_string();
            return (outcome, true);
        }
    };
    outcome.passed = v.passed;
    outcome.divergence = v.divergence.as_ref().map(|d| json(&d.to_value()));
    let next = format!("to accept the current run: lockstep golden update {file} --reason \"...\"");
    outcome.summary = match (&v.divergence, v.passed) {
        (_, true) => format!("episode {} reproduced", golden.episode.short()),
        (Some(d), false) => format!("drifted at step {}; {next}", d.step),
        (None, false) => format!("not reproduced ({}); {next}", v.notes.join("; ")),
    };
    (outcome, false)
}

/// The report carries plain JSON (serde_json's model). What that model cannot hold is kept as
/// text rather than dropping the whole value: an integer beyond 64 bits (a numpy RNG state in
/// an env's state) as its decimal digits, a NaN or infinity as `NaN`, `Infinity`, `-Infinity`.
/// (Before, one such number turned a whole audit detail into `null`.)
fn json(v: &Value) -> serde_json::Value {
    use lockstep_canon::Number;
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Number(Number::Int(i)) => J::from(*i),
        Value::Number(Number::BigInt(digits)) => digits
            .parse::<u64>()
            .map(J::from)
            .unwrap_or_else(|_| J::String(digits.to_string())),
        Value::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .unwrap_or_else(|| {
                J::String(
                    if f.is_nan() {
                        "NaN"
                    } else if *f > 0.0 {
                        "Infinity"
                    } else {
                        "-Infinity"
                    }
                    .into(),
                )
            }),
        Value::String(s) => J::String(s.clone()),
        Value::Array(items) => J::Array(items.iter().map(json).collect()),
        Value::Object(m) => J::Object(m.iter().map(|(k, v)| (k.clone(), json(v))).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found while building the Python package: a state holding a 128-bit integer made the
    /// whole audit detail `null` in report.json.
    #[test]
    fn big_integers_and_non_finite_floats_survive_into_the_report() {
        let v = lockstep_canon::parse_with(
            b"{\"state\": [340282366920938463463374607431768211455, 7, NaN, 1.5]}",
            &lockstep_canon::ParseOptions {
                allow_nan: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            json(&v),
            serde_json::json!({"state": ["340282366920938463463374607431768211455", 7, "NaN", 1.5]})
        );
    }
}
