//! `lockstep check` as a library: the trials of a run (the reset-contract audit and the replay
//! checks of each env and seed) spread over worker threads, and golden verification, turned
//! into [`crate::report`] records.
//!
//! An error stops only the part it hit (the audit, or one check): the other parts still run,
//! and what was gathered stays in the report. Results come back in run order whatever the
//! number of workers, and the report is assembled from them, so it does not depend on
//! scheduling.

use std::path::Path;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use lockstep_canon::Value;

use crate::audit::{audit_trial, inferred_contract, TrialRecord};
use crate::check::{
    run_check, CheckConfig, CheckKind, CheckOutcome as ReplayOutcome, ProcessRunner,
};
use crate::env::EnvFactory;
use crate::golden::Golden;
use crate::report::{AuditRecord, CheckOutcome, GoldenOutcome, Shard, Timeline, Trial};

/// Makes the factory of an env name (the caller knows which names exist), or says why not.
pub type Resolver<'a> = dyn Fn(&str) -> Result<Box<dyn EnvFactory>, String> + 'a;

/// One environment of a run: its name, how to make instances, and how to run it in a fresh
/// process (the other-process check).
pub struct SuiteEnv<'a> {
    pub id: String,
    pub factory: &'a dyn EnvFactory,
    pub runner: &'a dyn ProcessRunner,
}

/// What every trial of a run shares.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// Steps per rollout.
    pub steps: u64,
    /// Replay checks by short name (`same`, `other`, `interleaved`, `process`, `parallel`).
    pub checks: Vec<String>,
    /// Worker threads (at least 1).
    pub jobs: usize,
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

/// Runs `work` over `options.jobs` threads; `done` is called after each trial (progress).
/// Trials come back in the order of `work`.
pub fn run_trials(
    envs: &[SuiteEnv<'_>],
    work: &[(usize, u64)],
    options: &SuiteOptions,
    done: &(dyn Fn() + Sync),
) -> Vec<Trial> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<Trial>>> = Mutex::new(vec![None; work.len()]);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, work.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(e, seed)) = work.get(i) else { break };
                let trial = run_trial(&envs[e], seed, options);
                slots.lock().expect("no panics while holding the lock")[i] = Some(trial);
                done();
            });
        }
    });
    slots
        .into_inner()
        .expect("workers finished")
        .into_iter()
        .map(|t| t.expect("every trial ran"))
        .collect()
}

/// Runs the audit and the chosen replay checks of one env for `seed`.
pub fn run_trial(env: &SuiteEnv<'_>, seed: u64, options: &SuiteOptions) -> Trial {
    // This trial's own instances (one child for an external env), shared with no other trial.
    let session = env.factory.session();
    let factory = session.as_deref().unwrap_or(env.factory);
    let mut trial = Trial {
        env: env.id.clone(),
        seed,
        audit: None,
        checks: Vec::new(),
        error: None,
    };
    let mut errors = Vec::new();
    match audit(factory, seed, options.steps) {
        Ok(record) => trial.audit = Some(record),
        Err(e) => errors.push(format!("reset-contract audit: {e}")),
    }
    let cfg = CheckConfig::new(seed, options.steps);
    for name in &options.checks {
        let outcome = name
            .parse::<CheckKind>()
            .map_err(|e| e.to_string())
            .and_then(|kind| {
                run_check(kind, factory, &cfg, Some(env.runner)).map_err(|e| e.to_string())
            });
        match outcome {
            Ok(outcome) => trial.checks.push(check_record(name, &outcome)),
            Err(e) => errors.push(format!("{name} check: {e}")),
        }
    }
    if !errors.is_empty() {
        trial.error = Some(errors.join("; "));
    }
    trial
}

fn audit(factory: &dyn EnvFactory, seed: u64, steps: u64) -> Result<AuditRecord, String> {
    let mut env = factory.make().map_err(|e| e.to_string())?;
    let contract = match env.contract() {
        Some(c) => c,
        None => inferred_contract(factory, seed).map_err(|e| e.to_string())?,
    };
    let record = audit_trial(env.as_mut(), &contract, seed, steps, &mut |_| Ok(()));
    let closed = env.close();
    let record = record.map_err(|e| e.to_string())?;
    closed.map_err(|e| e.to_string())?;
    Ok(audit_record(&record))
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
        success: Some(r.success),
        detail: json(&r.to_value()),
    }
}

fn check_record(name: &str, o: &ReplayOutcome) -> CheckOutcome {
    CheckOutcome {
        check: name.to_string(),
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

/// The report carries plain JSON; NaN (never in our own records) would become null.
fn json(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}
