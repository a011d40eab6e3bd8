//! The reset-contract audit: the seed-000 method applied to any [`Env`].
//!
//! For each seed, on a fresh instance:
//! 1. `reset(seed)`, read `state()`, check it against the contract (missing and unexpected
//!    fields), then fingerprint it: the *initial* fingerprint;
//! 2. play one episode with lockstep's seeded [`ActionSampler`]: this is the contamination (a
//!    caller-supplied hook may add more, as the seed's fixture does);
//! 3. read the contaminated state, `reset(seed)` on the *same* instance, check and fingerprint
//!    again: the *repeat* fingerprint; on a mismatch, diff the two states field by field;
//! 4. play the episode again from the repeated reset with the same seeded actions.
//!
//! Conformity and behaviour are reported apart, never merged (seed 000: a contaminated run
//! can still succeed, and a differing fingerprint does not by itself explain a failure):
//! - `conforms`: both states conform to the contract and the fingerprints are identical;
//! - `success`: the repeat episode's task outcome. An env declares it with a boolean
//!   `success` key in an agent's info; the episode succeeds when any agent reports
//!   `success: true` at any step. An env that never reports `success` has no notion of it:
//!   `declared_success` is false and so is `success`, and reports show "-" rather than guess
//!   one (a positive total reward is not success: an 11-step CartPole episode has one);
//! - `reproduced`: the repeat episode ended like the first (same steps, same per-agent returns
//!   bit for bit, same success). With a correct reset and a deterministic env it is always
//!   true, because both episodes use the same seeded actions.

use std::collections::BTreeMap;

use lockstep_canon::Value;

use crate::actions::ActionSampler;
use crate::contract::{strings, uint, Conformance, Contract};
use crate::diff::diff;
use crate::env::{Env, EnvError, EnvFactory, Transition};
use crate::probe::{probe_state, ProbeSet};

/// How an audit runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditOptions {
    /// One trial per seed, in this order.
    pub seeds: Vec<u64>,
    /// Each episode stops after this many steps even if it has not ended (`finished: false`).
    pub max_steps: u64,
}

impl Default for AuditOptions {
    /// Seeds 0..10 (as in seed 000), at most 10 000 steps an episode.
    fn default() -> AuditOptions {
        AuditOptions {
            seeds: (0..10).collect(),
            max_steps: 10_000,
        }
    }
}

/// An audit could not run: the env failed or a state has no canonical form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("seed {seed}: {stage}: {message}")]
pub struct AuditError {
    pub seed: u64,
    /// What the audit was doing: `make`, `reset`, `state`, `probe`, `step`, `contaminate`,
    /// `fingerprint`, `close`.
    pub stage: &'static str,
    pub message: String,
}

/// One differing path of a state diff.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChangeRecord {
    /// JSON Pointer (RFC 6901).
    pub pointer: String,
    /// `added`, `removed` or `changed`.
    pub kind: String,
    /// Absent when the path was added.
    pub before: Option<Value>,
    /// Absent when the path was removed.
    pub after: Option<Value>,
}

impl ChangeRecord {
    /// `{"pointer", "kind", "before"?, "after"?}`: an absent side is left out (not `null`,
    /// which is a value a state can hold).
    pub fn to_value(&self) -> Value {
        let mut m = lockstep_canon::Map::new();
        m.insert("pointer".into(), Value::String(self.pointer.clone()));
        m.insert("kind".into(), Value::String(self.kind.clone()));
        if let Some(b) = &self.before {
            m.insert("before".into(), b.clone());
        }
        if let Some(a) = &self.after {
            m.insert("after".into(), a.clone());
        }
        Value::Object(m)
    }
}

/// A field-level explanation of a fingerprint mismatch.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct DiffRecord {
    /// Top-level fields that differ, in contract declaration order (undeclared ones after).
    pub different_fields: Vec<String>,
    /// Every differing path, depth first, keys in byte order.
    pub changes: Vec<ChangeRecord>,
}

impl DiffRecord {
    /// Diffs `before` against `after`, ordering fields by `contract` when given.
    pub fn between(before: &Value, after: &Value, contract: Option<&Contract>) -> DiffRecord {
        let d = diff(before, after);
        DiffRecord {
            different_fields: match contract {
                Some(c) => c.order_fields(&d.different_fields),
                None => d.different_fields,
            },
            changes: d
                .changes
                .into_iter()
                .map(|c| ChangeRecord {
                    pointer: c.pointer,
                    kind: c.kind.as_str().to_string(),
                    before: c.before,
                    after: c.after,
                })
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// `{"different_fields": [...], "changes": [...]}`.
    pub fn to_value(&self) -> Value {
        [
            ("different_fields", strings(&self.different_fields)),
            (
                "changes",
                Value::Array(self.changes.iter().map(ChangeRecord::to_value).collect()),
            ),
        ]
        .into_iter()
        .collect()
    }
}

/// How one episode of a trial went.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EpisodeOutcome {
    pub steps: u64,
    /// Every agent terminated or truncated (false: stopped at `max_steps`).
    pub finished: bool,
    /// Sum of rewards per agent.
    pub returns: BTreeMap<String, f64>,
    /// Whether some agent's info carried a boolean `success` key.
    pub declared_success: bool,
    /// See the module doc.
    pub success: bool,
}

impl EpisodeOutcome {
    /// Same length, same success, same returns bit for bit.
    pub fn same_as(&self, other: &EpisodeOutcome) -> bool {
        self.steps == other.steps
            && self.finished == other.finished
            && self.success == other.success
            && self.returns.len() == other.returns.len()
            && self
                .returns
                .iter()
                .zip(&other.returns)
                .all(|((a, x), (b, y))| a == b && x.to_bits() == y.to_bits())
    }

    pub fn to_value(&self) -> Value {
        [
            ("steps", uint(self.steps)),
            ("finished", Value::Bool(self.finished)),
            (
                "returns",
                self.returns
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from(*v)))
                    .collect(),
            ),
            ("declared_success", Value::Bool(self.declared_success)),
            ("success", Value::Bool(self.success)),
        ]
        .into_iter()
        .collect()
    }
}

/// One seed's trial.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TrialRecord {
    pub seed: u64,
    /// Fingerprint (lowercase hex SHA-256) of the state after the first reset.
    pub initial_fingerprint: String,
    /// Fingerprint of the state after the reset that follows the contaminating episode.
    pub repeat_fingerprint: String,
    pub identical: bool,
    pub initial_conformance: Conformance,
    pub repeat_conformance: Conformance,
    /// Conformity: both states conform and the fingerprints are identical.
    pub conforms: bool,
    /// The explanation of a mismatch; `None` when the states are identical.
    pub diff: Option<DiffRecord>,
    /// The contaminating episode.
    pub first: EpisodeOutcome,
    /// The episode from the repeated reset.
    pub repeat: EpisodeOutcome,
    /// Behaviour: the repeat episode's task success.
    pub success: bool,
    /// The repeat episode ended exactly like the first.
    pub reproduced: bool,
    /// The state after the contaminating episode (and hook), before the reset.
    pub contaminated: Value,
    /// The state right after the repeated reset.
    pub after_reset: Value,
}

impl TrialRecord {
    pub fn to_value(&self) -> Value {
        [
            ("seed", uint(self.seed)),
            (
                "initial_fingerprint",
                Value::String(self.initial_fingerprint.clone()),
            ),
            (
                "repeat_fingerprint",
                Value::String(self.repeat_fingerprint.clone()),
            ),
            ("identical", Value::Bool(self.identical)),
            ("initial_conformance", self.initial_conformance.to_value()),
            ("repeat_conformance", self.repeat_conformance.to_value()),
            ("conforms", Value::Bool(self.conforms)),
            (
                "diff",
                self.diff.as_ref().map_or(Value::Null, DiffRecord::to_value),
            ),
            ("first", self.first.to_value()),
            ("repeat", self.repeat.to_value()),
            ("success", Value::Bool(self.success)),
            ("reproduced", Value::Bool(self.reproduced)),
            ("contaminated", self.contaminated.clone()),
            ("after_reset", self.after_reset.clone()),
        ]
        .into_iter()
        .collect()
    }
}

/// Counts over an audit's trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct AuditSummary {
    pub trials: usize,
    pub conforming: usize,
    pub identical: usize,
    pub successes: usize,
    pub reproduced: usize,
}

/// An audit of one env against one contract.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditReport {
    /// The env's spec id.
    pub env: String,
    pub contract: String,
    pub contract_version: u32,
    /// `python` or `jcs`.
    pub profile: String,
    pub max_steps: u64,
    pub trials: Vec<TrialRecord>,
    pub summary: AuditSummary,
}

impl AuditReport {
    /// Every trial conforms (the reset honours the contract). Success is not part of it.
    pub fn passed(&self) -> bool {
        self.trials.iter().all(|t| t.conforms)
    }

    pub fn to_value(&self) -> Value {
        let s = &self.summary;
        let summary: Value = [
            ("trials", Value::from(s.trials)),
            ("conforming", Value::from(s.conforming)),
            ("identical", Value::from(s.identical)),
            ("successes", Value::from(s.successes)),
            ("reproduced", Value::from(s.reproduced)),
        ]
        .into_iter()
        .collect();
        [
            ("env", Value::String(self.env.clone())),
            ("contract", Value::String(self.contract.clone())),
            ("contract_version", uint(u64::from(self.contract_version))),
            ("profile", Value::String(self.profile.clone())),
            ("max_steps", uint(self.max_steps)),
            ("passed", Value::Bool(self.passed())),
            (
                "trials",
                Value::Array(self.trials.iter().map(TrialRecord::to_value).collect()),
            ),
            ("summary", summary),
        ]
        .into_iter()
        .collect()
    }
}

/// Audits fresh instances from `factory`, one per seed, against `contract`.
pub fn audit(
    factory: &dyn EnvFactory,
    contract: &Contract,
    options: &AuditOptions,
) -> Result<AuditReport, AuditError> {
    audit_with(factory, contract, options, &mut |_| Ok(()))
}

/// As [`audit`], calling `contaminate` on the instance between the first episode and the
/// repeated reset (extra leftovers, as the seed's fixture adds a cookie and visits).
pub fn audit_with(
    factory: &dyn EnvFactory,
    contract: &Contract,
    options: &AuditOptions,
    contaminate: &mut dyn FnMut(&mut dyn Env) -> Result<(), EnvError>,
) -> Result<AuditReport, AuditError> {
    let mut trials = Vec::with_capacity(options.seeds.len());
    let mut env_id = factory.id();
    for &seed in &options.seeds {
        let mut env = factory.make().map_err(err(seed, "make"))?;
        env_id = env.spec().id.clone();
        let trial = audit_trial(
            env.as_mut(),
            contract,
            seed,
            options.max_steps,
            &mut |e: &mut (dyn Env + 'static)| contaminate(e),
        );
        let closed = env.close().map_err(err(seed, "close"));
        let trial = trial?;
        closed?;
        trials.push(trial);
    }
    let summary = AuditSummary {
        trials: trials.len(),
        conforming: trials.iter().filter(|t| t.conforms).count(),
        identical: trials.iter().filter(|t| t.identical).count(),
        successes: trials.iter().filter(|t| t.success).count(),
        reproduced: trials.iter().filter(|t| t.reproduced).count(),
    };
    Ok(AuditReport {
        env: env_id,
        contract: contract.name.clone(),
        contract_version: contract.version,
        profile: contract.profile.as_str().into(),
        max_steps: options.max_steps,
        trials,
        summary,
    })
}

/// A contract for an env that ships none: the top-level keys of its state after
/// `reset(seed)` ([`Contract::inferred`]), named after the env, and that state.
pub fn inferred_contract(
    factory: &dyn EnvFactory,
    seed: u64,
) -> Result<(Contract, Value), AuditError> {
    let mut env = factory.make().map_err(err(seed, "make"))?;
    env.reset(seed, &Value::Null).map_err(err(seed, "reset"))?;
    let state = env.state().map_err(err(seed, "state"))?;
    env.close().map_err(err(seed, "close"))?;
    Ok((Contract::inferred(env.spec().id.clone(), &state), state))
}

/// One trial on `env`, which should be a fresh instance. `contaminate` runs between the first
/// episode and the repeated reset.
pub fn audit_trial<E: Env + ?Sized>(
    env: &mut E,
    contract: &Contract,
    seed: u64,
    max_steps: u64,
    contaminate: &mut dyn FnMut(&mut E) -> Result<(), EnvError>,
) -> Result<TrialRecord, AuditError> {
    let options = Value::Null;
    let start = env
        .reset(seed, &options)
        .map_err(err(seed, "reset"))?
        .clone();
    let initial = starting_state(env, contract, seed)?;
    // Conformance first: a hash over the wrong fields proves nothing.
    let initial_conformance = contract.check(&initial);
    let initial_fingerprint = fingerprint(contract, &initial, seed)?;
    let first = play(env, &start, seed, max_steps)?;

    contaminate(env).map_err(err(seed, "contaminate"))?;
    let contaminated = starting_state(env, contract, seed)?;

    let start = env
        .reset(seed, &options)
        .map_err(err(seed, "reset"))?
        .clone();
    let after_reset = starting_state(env, contract, seed)?;
    let repeat_conformance = contract.check(&after_reset);
    let repeat_fingerprint = fingerprint(contract, &after_reset, seed)?;
    let identical = initial_fingerprint == repeat_fingerprint;
    let diff = (!identical).then(|| DiffRecord::between(&initial, &after_reset, Some(contract)));
    let repeat = play(env, &start, seed, max_steps)?;

    Ok(TrialRecord {
        seed,
        conforms: identical && initial_conformance.conforms() && repeat_conformance.conforms(),
        identical,
        initial_fingerprint,
        repeat_fingerprint,
        initial_conformance,
        repeat_conformance,
        diff,
        success: repeat.success,
        reproduced: repeat.same_as(&first),
        first,
        repeat,
        contaminated,
        after_reset,
    })
}

/// The env's `state()` with the snapshots of the contract's probed layers placed in it
/// ([`crate::probe::probe_state`]), read by the probes the env wires in, less what the
/// contract's `/state` ignore patterns name ([`crate::ignore`]).
fn starting_state<E: Env + ?Sized>(
    env: &mut E,
    contract: &Contract,
    seed: u64,
) -> Result<Value, AuditError> {
    let mut state = env.state().map_err(err(seed, "state"))?;
    if !contract.compare.ignore.is_empty() {
        let ignore =
            crate::ignore::Ignore::parse(&contract.compare.ignore).map_err(|e| AuditError {
                seed,
                stage: "ignore",
                message: e.to_string(),
            })?;
        ignore.apply_state(&mut state);
    }
    let none = ProbeSet::new();
    let probes = env.probes().unwrap_or(&none);
    probe_state(contract, probes, state).map_err(|e| AuditError {
        seed,
        stage: "probe",
        message: e.to_string(),
    })
}

fn fingerprint(contract: &Contract, state: &Value, seed: u64) -> Result<String, AuditError> {
    contract
        .fingerprint(state)
        .map(|r| r.digest)
        .map_err(|e| AuditError {
            seed,
            stage: "fingerprint",
            message: e.to_string(),
        })
}

fn err(seed: u64, stage: &'static str) -> impl Fn(EnvError) -> AuditError {
    move |e| AuditError {
        seed,
        stage,
        message: e.message,
    }
}

/// Plays from `start` (the reset's transition) with seeded actions until every agent is done
/// or `max_steps` steps have run.
fn play<E: Env + ?Sized>(
    env: &mut E,
    start: &Transition,
    seed: u64,
    max_steps: u64,
) -> Result<EpisodeOutcome, AuditError> {
    let mut sampler = ActionSampler::new(seed, env.spec());
    let mut out = EpisodeOutcome {
        steps: 0,
        finished: start.is_done(),
        returns: env
            .spec()
            .agents
            .iter()
            .map(|a| (a.name.clone(), 0.0))
            .collect(),
        declared_success: false,
        success: false,
    };
    let mut declared_true = false;
    let mut actions = sampler.sample(start);
    while !out.finished && out.steps < max_steps {
        let t = env.step(&actions).map_err(err(seed, "step"))?;
        out.steps += 1;
        for (name, step) in &t.agents {
            *out.returns.entry(name.clone()).or_insert(0.0) += step.reward;
            if let Some(flag) = step.info.get("success").and_then(Value::as_bool) {
                out.declared_success = true;
                declared_true |= flag;
            }
        }
        out.finished = t.is_done();
        if !out.finished {
            actions = sampler.sample(t);
        }
    }
    // Success only as the env reports it: a reward rule would pass off any episode with a
    // positive return as a task done.
    out.success = out.declared_success && declared_true;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{ResetFixtureEnv, ResetMode};

    fn factory(mode: ResetMode) -> impl EnvFactory {
        ("fixture".to_string(), move || {
            Ok(Box::new(ResetFixtureEnv::new(mode)) as Box<dyn Env>)
        })
    }

    fn run(mode: ResetMode) -> AuditReport {
        let contract = ResetFixtureEnv::new(mode).contract();
        audit(&factory(mode), &contract, &AuditOptions::default()).unwrap()
    }

    #[test]
    fn complete_reset_conforms_on_every_seed() {
        let r = run(ResetMode::Complete);
        assert!(r.passed());
        assert_eq!(r.env, "experiment");
        let s = r.summary;
        assert_eq!(
            (
                s.trials,
                s.conforming,
                s.identical,
                s.successes,
                s.reproduced
            ),
            (10, 10, 10, 10, 10)
        );
        for t in &r.trials {
            assert!(t.diff.is_none() && t.first.success && t.first.declared_success);
            assert_eq!(t.first.steps, 1);
        }
    }

    #[test]
    fn partial_reset_is_isolated_to_the_cache() {
        let r = run(ResetMode::Partial);
        assert!(!r.passed());
        assert_eq!(r.summary.identical, 0);
        assert_eq!(r.summary.successes, 5);
        for t in &r.trials {
            // Conformity and behaviour are separate: every trial fails the contract's
            // fingerprint, yet even seeds succeed.
            assert!(!t.conforms && t.initial_conformance.conforms());
            assert!(t.repeat_conformance.conforms());
            assert_eq!(t.success, t.seed % 2 == 0, "seed {}", t.seed);
            assert_eq!(t.reproduced, t.seed % 2 == 0);
            let d = t.diff.as_ref().unwrap();
            assert_eq!(d.different_fields, ["cache"]);
            let pointers: Vec<&str> = d.changes.iter().map(|c| c.pointer.as_str()).collect();
            assert_eq!(pointers, ["/cache"]);
            assert_eq!(d.changes[0].before, Some(Value::Null));
            // Even seeds keep their correct choice (target 0); odd seeds were flipped from
            // target 1 to 0: the same cached value, opposite outcomes.
            assert_eq!(d.changes[0].after, Some(Value::from(0)));
        }
    }

    #[test]
    fn hook_runs_between_episode_and_reset() {
        let contract = ResetFixtureEnv::new(ResetMode::Partial).contract();
        let mut env = ResetFixtureEnv::new(ResetMode::Partial).without_contamination();
        // Without leftovers the partial reset still keeps the (correct) cache: a mismatch
        // that does not break the task.
        let t = audit_trial(&mut env, &contract, 3, 10, &mut |_| Ok(())).unwrap();
        assert!(!t.identical && t.success);
        let mut env = ResetFixtureEnv::new(ResetMode::Partial).without_contamination();
        let t = audit_trial(
            &mut env,
            &contract,
            3,
            10,
            &mut |e: &mut ResetFixtureEnv| {
                e.contaminate();
                Ok(())
            },
        )
        .unwrap();
        assert!(!t.identical && !t.success);
        assert_eq!(t.contaminated.get("visits"), Some(&Value::from(8)));
    }

    #[test]
    fn undeclared_fields_break_conformance_even_with_equal_hashes() {
        let mut contract = ResetFixtureEnv::new(ResetMode::Complete).contract();
        contract.layers.pop(); // forget `cache`
        let r = audit(
            &factory(ResetMode::Complete),
            &contract,
            &AuditOptions {
                seeds: vec![1],
                max_steps: 5,
            },
        )
        .unwrap();
        let t = &r.trials[0];
        assert!(t.identical && !t.conforms);
        assert_eq!(t.initial_conformance.unexpected, ["/cache"]);
    }

    #[test]
    fn report_value_has_the_documented_shape() {
        let v = run(ResetMode::Partial).to_value();
        assert_eq!(v.get("passed"), Some(&Value::Bool(false)));
        let t = &v.get("trials").unwrap().as_array().unwrap()[1];
        assert_eq!(
            t.pointer("/diff/changes/0/pointer"),
            Some(&Value::from("/cache"))
        );
        assert_eq!(t.pointer("/repeat/returns/agent"), Some(&Value::from(0.0)));
        assert!(lockstep_canon::to_vec(&v, lockstep_canon::Profile::Jcs).is_ok());
    }
}
