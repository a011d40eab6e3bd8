//! The replay checks: does a fixed seed replay an episode to the bit?
//!
//! Five checks, each on any [`EnvFactory`], each needing only a seed and a step count (actions
//! come from [`crate::actions::ActionSampler`] seeded with the same seed; see
//! [`crate::trace`] for what a rollout is):
//!
//! - [`CheckKind::SameSeed`]: `rollouts` rollouts of the seed **on one instance**, one after
//!   another, are identical (catches state that survives a reset as well as wall clocks and
//!   hash orders);
//! - [`CheckKind::OtherSeed`]: the next seed gives a different episode, reported with the step
//!   where they first differ; an env whose seeds do not diverge fails. Both rollouts take the
//!   actions of the first seed, so that a seed-blind env is not rescued by seeded actions;
//! - [`CheckKind::Interleaved`]: `interleaved` envs with consecutive seeds, stepped alternately
//!   in one thread, each match their solo rollout (catches shared, module-global state);
//! - [`CheckKind::OtherProcess`]: the rollout in a fresh process (through an injected
//!   [`ProcessRunner`]) matches this process's (catches per-process randomness: hash seeds,
//!   addresses, the clock);
//! - [`CheckKind::ParallelWorkers`]: `workers` rollouts with consecutive seeds on as many
//!   threads at once (released together after their resets) each match their solo rollout.
//!
//! - [`CheckKind::Continuation`] (`continuation.rs`): the seed at the first reset only, then
//!   unseeded resets, as training loops drive an env.
//!
//! One more runs by name: [`CheckKind::ForkedWorkers`] (`fork.rs`).
//!
//! A failure carries the first [`Divergence`]: step, agent and key from the digests, then the
//! element with both values from the two transitions of that step. Every rollout of a check
//! keeps its first transitions in full ([`KeepFirst::CHECKS`]), so a difference in those steps
//! is explained from the runs that differed. A later one is explained by re-running the same
//! scenario up to the divergent step: a deterministic rollout gives the same transitions
//! again; for one that is not, the re-run may not reproduce the difference, so it is tried up
//! to [`RERUNS`] times, and the report says when none did.
//!
//! The same-seed and other-seed checks record their reference in v1 and every other rollout
//! against it by check digests, in v1 only from the first step that differs (`by_digest.rs`):
//! the digests above are the same, several times cheaper.

mod by_digest;
mod continuation;
mod divergence;
mod fork;
mod frames;
mod fresh_runs;
mod isolation;
mod leftover;
mod text_diff;
mod timing;
mod vector;

pub use continuation::CONTINUATION_EPISODES;
pub use fork::{Forker, WARM_UP_OFFSETS};
pub use fresh_runs::{reference_seeds, FreshRuns};
pub use isolation::ThreadIsolation;

pub use divergence::{
    element_text, explain, first_divergence, step_site, step_sites, Detail, Divergence, InfoChange,
    OtherSite, Site, ALSO_MAX,
};
pub use text_diff::{line_diff, LineDiff};
pub use timing::{SlowStep, TimingHint, SLOW_FACTOR, SLOW_MIN};

use std::fmt;
use std::str::FromStr;
use std::sync::Barrier;

use lockstep_canon::Value;

use crate::env::{Env, EnvError, EnvFactory};
use crate::trace::{
    Digest, KeepFirst, Recorded, Rollout, RolloutOptions, StepDigest, TraceError, CHECK_FORMAT,
};

/// One of the five replay checks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    SameSeed,
    OtherSeed,
    Interleaved,
    OtherProcess,
    ParallelWorkers,
    ForkedWorkers,
    Continuation,
    Leftover,
    Vector,
}

impl CheckKind {
    /// The checks run by default, in the order a trial runs them.
    pub const ALL: [CheckKind; 8] = [
        CheckKind::SameSeed,
        CheckKind::OtherSeed,
        CheckKind::Interleaved,
        CheckKind::OtherProcess,
        CheckKind::ParallelWorkers,
        CheckKind::Continuation,
        CheckKind::Leftover,
        CheckKind::Vector,
    ];

    /// Every check, the forked-workers check included (it applies to external envs whose
    /// child can fork: run it by name, `--checks ...,fork`).
    pub const EVERY: [CheckKind; 9] = [
        CheckKind::SameSeed,
        CheckKind::OtherSeed,
        CheckKind::Interleaved,
        CheckKind::OtherProcess,
        CheckKind::ParallelWorkers,
        CheckKind::ForkedWorkers,
        CheckKind::Continuation,
        CheckKind::Leftover,
        CheckKind::Vector,
    ];

    /// The short name used on the command line: `same`, `other`, `interleaved`, `process`,
    /// `parallel`.
    pub fn short(self) -> &'static str {
        match self {
            CheckKind::SameSeed => "same",
            CheckKind::OtherSeed => "other",
            CheckKind::Interleaved => "interleaved",
            CheckKind::OtherProcess => "process",
            CheckKind::ParallelWorkers => "parallel",
            CheckKind::ForkedWorkers => "fork",
            CheckKind::Continuation => "continuation",
            CheckKind::Leftover => "leftover",
            CheckKind::Vector => "vector",
        }
    }

    /// The report name: `same_seed`, `other_seed`, `interleaved`, `other_process`,
    /// `parallel_workers`.
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::SameSeed => "same_seed",
            CheckKind::OtherSeed => "other_seed",
            CheckKind::Interleaved => "interleaved",
            CheckKind::OtherProcess => "other_process",
            CheckKind::ParallelWorkers => "parallel_workers",
            CheckKind::ForkedWorkers => "forked_workers",
            CheckKind::Continuation => "continuation",
            CheckKind::Leftover => "leftover",
            CheckKind::Vector => "vector",
        }
    }
}

impl fmt::Display for CheckKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CheckKind {
    type Err = String;
    fn from_str(s: &str) -> Result<CheckKind, String> {
        CheckKind::EVERY
            .into_iter()
            .find(|k| k.short() == s || k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown check {s:?}; known: {}",
                    CheckKind::EVERY.map(CheckKind::short).join(", ")
                )
            })
    }
}

/// [`CheckKind::ALL`] as the command line's `--checks` default (a test keeps them equal).
pub const DEFAULT_CHECKS: &str =
    "same,other,interleaved,process,parallel,continuation,leftover,vector";

/// Rollouts of the same-seed check unless asked otherwise: a fault that shows at the k-th
/// reset of one instance (a counter raising a level every few resets, a cache that fills up) is
/// caught when k <= this number.
pub const DEFAULT_ROLLOUTS: usize = 10;

/// Steps per same-seed check above which the default number of rollouts shrinks, so that long
/// episodes do not multiply the check's cost: `max(3, ROLLOUT_STEP_BUDGET / steps)`.
pub const ROLLOUT_STEP_BUDGET: u64 = 10_000;

/// Other seeds the other-seed check compares the reference seed with. One pair of seeds proves
/// nothing (two slippery walks can fall into the same hole): the check fails only when none of
/// these diverges.
pub const DEFAULT_OTHER_SEEDS: usize = 8;

/// The default number of same-seed rollouts for episodes of up to `steps` steps (see
/// [`DEFAULT_ROLLOUTS`] and [`ROLLOUT_STEP_BUDGET`]).
pub fn default_rollouts(steps: u64) -> usize {
    if steps.saturating_mul(DEFAULT_ROLLOUTS as u64) <= ROLLOUT_STEP_BUDGET {
        DEFAULT_ROLLOUTS
    } else {
        (ROLLOUT_STEP_BUDGET / steps.max(1)).max(3) as usize
    }
}

/// Parameters of the checks.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    pub seed: u64,
    /// Steps per rollout (the reset not counted).
    pub steps: u64,
    /// Rollouts of the same-seed check (at least 2).
    pub rollouts: usize,
    /// Seeds after `seed` that the other-seed check compares with it (at least 1).
    pub other_seeds: usize,
    /// The user declares that the env ignores its seed (it has no randomness), as an env can
    /// itself through [`Env::seedless`]: the other-seed check is then not applicable, unless
    /// the seeds do diverge (then the declaration is wrong, and the check fails).
    pub seedless: bool,
    /// Envs of the interleaved check (at least 2).
    pub interleaved: usize,
    /// Threads of the parallel-workers check (at least 2).
    pub workers: usize,
    /// `options` passed to every reset.
    pub reset_options: Value,
    /// Fields left out of every comparison ([`crate::ignore`]).
    pub ignore: crate::ignore::Ignore,
}

impl CheckConfig {
    pub fn new(seed: u64, steps: u64) -> CheckConfig {
        CheckConfig {
            seed,
            steps,
            rollouts: default_rollouts(steps),
            other_seeds: DEFAULT_OTHER_SEEDS,
            seedless: false,
            interleaved: 3,
            workers: 4,
            reset_options: Value::Null,
            ignore: crate::ignore::Ignore::default(),
        }
    }

    fn seed_at(&self, i: usize) -> u64 {
        self.seed.wrapping_add(i as u64)
    }

    fn opts(&self, capture: Option<u64>) -> RolloutOptions {
        RolloutOptions {
            capture,
            keep_first: KeepFirst::CHECKS,
            reset_options: self.reset_options.clone(),
            ignore: self.ignore.clone(),
            ..RolloutOptions::default()
        }
    }

    /// Rollout options with the actions of `seed`'s sampler whatever the episode seed.
    fn opts_actions_of(&self, seed: u64) -> RolloutOptions {
        RolloutOptions {
            action_seed: Some(seed),
            ..self.opts(None)
        }
    }

    /// `opts` of a reference: recorded in v1 and by check digests (`by_digest.rs`).
    fn reference(opts: RolloutOptions) -> RolloutOptions {
        RolloutOptions {
            check_digests: true,
            ..opts
        }
    }

    /// `opts` of a rollout compared with `reference` by check digests alone.
    fn compared(opts: RolloutOptions) -> RolloutOptions {
        RolloutOptions {
            format: CHECK_FORMAT,
            check_digests: true,
            ..opts
        }
    }

    /// `opts` of a rollout recorded against `reference` (v1 from its first difference on), or
    /// in v1 with check digests when the reference was not recorded so.
    fn against(opts: RolloutOptions, reference: &Recorded) -> RolloutOptions {
        match crate::trace::Against::of(reference) {
            Some(a) => RolloutOptions {
                against: Some(std::sync::Arc::new(a)),
                ..opts
            },
            None => CheckConfig::reference(opts),
        }
    }
}

/// Runs one rollout in a fresh process: the library knows no command line, so the caller
/// injects this (the CLI re-runs its own executable, `lockstep trace ... --json`).
pub trait ProcessRunner: Sync {
    /// The trace of `env` (an [`EnvFactory::id`]) for `seed` and `steps` computed in a fresh
    /// process, with the transition at step `capture` when asked and reached.
    fn run(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Recorded, String>;

    /// Whether its runs may overlap this process's own checks: true for a runner that starts
    /// processes (the default). A runner that plays "fresh processes" in this one (a test's
    /// thread) says false, and its runs are not started ahead of the checks.
    fn runs_elsewhere(&self) -> bool {
        true
    }

    /// Whether each fresh process of [`Self::run`] gets a string-hash salt of its own
    /// (`PYTHONHASHSEED`), while [`Self::run_reference`] keeps this process's: then a fresh
    /// reference that replays where [`Self::run`] does not names the hash order as the cause.
    fn varies_hash_seed(&self) -> bool {
        false
    }

    /// `seed` alone in a fresh process that differs from the one hosting the check's instances
    /// only in being fresh (the same string-hash salt): the reference of the multi-instance
    /// checks, so that a cache the first reset of a process fills (a class-level dict, a module
    /// global) cannot hide in the reference too. `Ok(None)` when this runner cannot start the
    /// env by name (an env object of a Python interpreter): the check then compares with a
    /// fresh instance of this process, and says so.
    fn run_reference(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        self.run(env, seed, steps, capture).map(Some)
    }

    /// `seed` in a fresh process started after another fresh process played `earlier` and
    /// ended, both with the same private home, temp and working directories (the leftover
    /// check: what one run leaves on disk for the next). `Ok(None)` when this runner cannot.
    fn run_after(
        &self,
        env: &str,
        earlier: u64,
        seed: u64,
        steps: u64,
        capture: Option<u64>,
    ) -> Result<Option<Recorded>, String> {
        let _ = (env, earlier, seed, steps, capture);
        Ok(None)
    }

    /// In one fresh process, on one instance, one rollout of `seed` per entry of `episodes`,
    /// each started as its options say (the continuation check: a seeded reset, then unseeded
    /// ones). `Ok(None)` when this runner cannot (the default) or the env has no unseeded
    /// reset: the check then compares instances of this process only.
    fn run_continued(
        &self,
        env: &str,
        seed: u64,
        steps: u64,
        episodes: &[RolloutOptions],
    ) -> Result<Option<Vec<Recorded>>, String> {
        let _ = (env, seed, steps, episodes);
        Ok(None)
    }
}

/// A check could not run (as opposed to: it ran and found a difference).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    #[error("{check}: {run}: {source}")]
    Rollout {
        check: CheckKind,
        run: String,
        source: TraceError,
    },
    #[error("{check}: could not make an env instance: {source}")]
    Make { check: CheckKind, source: EnvError },
    #[error("a fresh process failed: {0}")]
    Runner(String),
    #[error("other_process needs a process runner")]
    NoRunner,
    #[error("{check}: a worker thread panicked")]
    Panicked { check: CheckKind },
    /// A parallel worker's instance failed on its thread (made, reset or stepped): the
    /// parallel check's verdict, not an error of the trial, as each seed alone ran.
    #[error("parallel: worker {worker} (seed {seed}) {at}: {error}")]
    OnThreads {
        worker: usize,
        seed: u64,
        /// `could not be made`, `failed at its reset`, `failed at step 3`.
        at: String,
        error: String,
    },
    /// The forked child running the parallel check's threads died ([`ThreadIsolation`]).
    #[error("parallel: the process running the threads was {status}")]
    ThreadsCrashed { status: String },
    #[error("{check}: needs at least {min} {what}, got {got}")]
    TooFew {
        check: CheckKind,
        what: &'static str,
        min: usize,
        got: usize,
    },
}

/// The result of one check.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CheckOutcome {
    pub check: CheckKind,
    /// False for a check that does not apply to this env (the other-seed check of an env that
    /// declares it ignores its seed); `passed` is then false too: not applicable is never
    /// counted as passed.
    #[serde(default = "applies")]
    pub applicable: bool,
    pub passed: bool,
    /// One sentence for people.
    pub summary: String,
    /// The reference run (e.g. `rollout 1`, `seed 7 solo`).
    pub left: String,
    /// The run compared with it.
    pub right: String,
    /// Episode digest of the reference run.
    pub episode: Digest,
    /// Transitions in the reference run (reset included).
    pub transitions: u64,
    /// The first divergence: a failure's explanation; for `other_seed` where the seeds first
    /// differ (present when it passes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
    /// On a failure, the per-step digests of the two runs compared (`left`, `right`): the
    /// report draws them as a timeline with the first divergent step marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<(Vec<Digest>, Vec<Digest>)>,
    /// The same-seed check's rollouts, in order: how long each was and what it returned, for
    /// the report's per-seed plots (empty for the other checks). Not part of the check's JSON.
    #[serde(skip)]
    pub episodes: Vec<EpisodeStat>,
    /// Why the failure looks like timing rather than state, when it does (`timing.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<TimingHint>,
    /// The wall time of the reset and each step of the two runs compared (`left`, `right`):
    /// in a report only when asked for, as it differs from run to run.
    #[serde(skip)]
    pub step_times: Option<(Vec<std::time::Duration>, Vec<std::time::Duration>)>,
}

impl CheckOutcome {
    /// This failure also hinted at timing by the same-seed check of its seed (`timing.rs`).
    pub fn carry_timing(&mut self, same_seed: &CheckOutcome) {
        if self.passed || !self.applicable || self.timing.is_some() {
            return;
        }
        self.timing = same_seed.timing.as_ref().and_then(timing::carried);
    }
}

/// The same-seed check's name of its rollout `r` (0-based): `rollout 1`, `rollout 2 (same
/// instance)`, as the report and the terminal show it.
fn rollout_label(r: usize) -> String {
    if r == 0 {
        "rollout 1".to_string()
    } else {
        format!("rollout {} (same instance)", r + 1)
    }
}

/// How many rollouts of the same-seed check it takes to reach the one `label` names (its
/// number): a failure's cause is looked for in that many, not in all of them.
pub(crate) fn rollouts_through(label: &str) -> Option<usize> {
    let number = label.strip_prefix("rollout ")?;
    let number = number.strip_suffix(" (same instance)").unwrap_or(number);
    number.parse().ok()
}

/// How long one rollout was and what each agent got in it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EpisodeStat {
    /// Steps taken (the reset not counted).
    pub steps: u64,
    /// Every agent terminated or truncated before the step budget ran out.
    pub finished: bool,
    /// Sum of each agent's rewards over the steps.
    pub returns: std::collections::BTreeMap<String, f64>,
}

impl EpisodeStat {
    pub fn of(trace: &crate::trace::Trace) -> EpisodeStat {
        let mut returns = std::collections::BTreeMap::new();
        for step in trace.step_digests.iter().skip(1) {
            for (agent, a) in &step.agents {
                *returns.entry(agent.clone()).or_insert(0.0) += a.reward;
            }
        }
        EpisodeStat {
            steps: trace.step_digests.len().saturating_sub(1) as u64,
            finished: trace.end == crate::trace::End::Done,
            returns,
        }
    }
}

fn applies() -> bool {
    true
}

impl CheckOutcome {
    /// A check that does not apply, with the reason in `summary`.
    pub fn not_applicable(check: CheckKind, reason: String) -> CheckOutcome {
        CheckOutcome {
            check,
            applicable: false,
            passed: false,
            summary: reason,
            left: String::new(),
            right: String::new(),
            episode: Digest::ZERO,
            transitions: 0,
            divergence: None,
            timeline: None,
            episodes: Vec::new(),
            timing: None,
            step_times: None,
        }
    }

    /// The value model of the `check` report (see docs/replay.md).
    pub fn to_value(&self) -> Value {
        to_value(self)
    }
}

/// Converts a report type into the canonical [`Value`] model (integers stay integers, floats
/// stay floats; report types hold no NaN, their values are text).
pub fn to_value<T: serde::Serialize>(x: &T) -> Value {
    lockstep_canon::to_value(x).unwrap_or_else(|e| Value::String(format!("<{e}>")))
}

/// Runs the checks in `kinds`, in that order.
pub fn run_checks(
    kinds: &[CheckKind],
    factory: &dyn EnvFactory,
    cfg: &CheckConfig,
    runner: Option<&dyn ProcessRunner>,
) -> Result<Vec<CheckOutcome>, CheckError> {
    let Some(runner) = runner else {
        return kinds
            .iter()
            .map(|&k| run_check(k, factory, cfg, None))
            .collect();
    };
    let shared = FreshRuns::new(runner);
    std::thread::scope(|scope| {
        shared.prefetch(scope, &factory.id(), kinds, cfg);
        kinds
            .iter()
            .map(|&k| run_check(k, factory, cfg, Some(&shared)))
            .collect()
    })
}

/// Runs one check.
pub fn run_check(
    kind: CheckKind,
    factory: &dyn EnvFactory,
    cfg: &CheckConfig,
    runner: Option<&dyn ProcessRunner>,
) -> Result<CheckOutcome, CheckError> {
    let ctx = Ctx { kind, factory, cfg };
    match kind {
        CheckKind::SameSeed => ctx.same_seed(),
        CheckKind::OtherSeed => ctx.other_seed(),
        CheckKind::Interleaved => ctx.interleaved(runner),
        CheckKind::OtherProcess => ctx.other_process(runner.ok_or(CheckError::NoRunner)?),
        CheckKind::ParallelWorkers => ctx.parallel(runner),
        CheckKind::ForkedWorkers => ctx.forked(),
        CheckKind::Continuation => ctx.continuation(runner),
        CheckKind::Leftover => ctx.leftover(runner),
        CheckKind::Vector => ctx.vector(),
    }
}

struct Ctx<'a> {
    kind: CheckKind,
    factory: &'a dyn EnvFactory,
    cfg: &'a CheckConfig,
}

/// The reference runs of a multi-instance check, and whether each ran alone in a fresh process.
struct References {
    runs: Vec<Recorded>,
    fresh: bool,
}

/// The comparison of two runs of one scenario: which runs, and where they first differ.
struct Compared {
    left: usize,
    right: usize,
    divergence: Divergence,
}

impl Ctx<'_> {
    fn make(&self) -> Result<Box<dyn Env>, CheckError> {
        self.factory.make().map_err(|source| CheckError::Make {
            check: self.kind,
            source,
        })
    }

    fn rollout_err(&self, run: String) -> impl Fn(TraceError) -> CheckError + '_ {
        move |source| CheckError::Rollout {
            check: self.kind,
            run: run.clone(),
            source,
        }
    }

    fn at_least(&self, what: &'static str, got: usize) -> Result<(), CheckError> {
        if got < 2 {
            return Err(CheckError::TooFew {
                check: self.kind,
                what,
                min: 2,
                got,
            });
        }
        Ok(())
    }

    /// A rollout of `seed` on a fresh instance.
    fn solo(&self, seed: u64, capture: Option<u64>) -> Result<Recorded, CheckError> {
        let mut env = self.make()?;
        crate::trace::rollout(env.as_mut(), seed, self.cfg.steps, &self.cfg.opts(capture))
            .map_err(self.rollout_err(format!("seed {seed} solo")))
    }

    fn outcome(
        &self,
        reference: &Recorded,
        left: String,
        right: String,
        divergence: Option<Divergence>,
        passed: bool,
        summary: String,
    ) -> CheckOutcome {
        CheckOutcome {
            check: self.kind,
            applicable: true,
            passed,
            summary,
            left,
            right,
            episode: reference.trace.episode,
            transitions: reference.trace.step_digests.len() as u64,
            divergence,
            timeline: None,
            episodes: Vec::new(),
            timing: None,
            // A pass compared runs like the reference: its times stand for theirs.
            step_times: Some((reference.step_times.clone(), Vec::new())),
        }
    }

    /// A failed outcome, with the timeline of the two runs compared.
    fn failed(
        &self,
        (left_run, right_run): (&Recorded, &Recorded),
        left: String,
        right: String,
        divergence: Divergence,
        summary: String,
    ) -> CheckOutcome {
        let digests = |r: &Recorded| r.trace.step_digests.iter().map(|s| s.digest).collect();
        let slow = timing::slow_step((left_run, right_run), (&left, &right), divergence.step);
        CheckOutcome {
            timeline: Some((digests(left_run), digests(right_run))),
            timing: timing::hint(&[], slow),
            step_times: Some((left_run.step_times.clone(), right_run.step_times.clone())),
            ..self.outcome(left_run, left, right, Some(divergence), false, summary)
        }
    }

    fn fail_summary(&self, d: &Divergence, left: &str, right: &str) -> String {
        format!("{right} differs from {left}: {}", d.describe(left, right))
    }

    fn same_seed_runs(&self, capture: Option<u64>, n: usize) -> Result<Vec<Recorded>, CheckError> {
        let mut env = self.make()?;
        (0..n)
            .map(|r| {
                crate::trace::rollout(
                    env.as_mut(),
                    self.cfg.seed,
                    self.cfg.steps,
                    &self.cfg.opts(capture),
                )
                .map_err(self.rollout_err(format!("rollout {}", r + 1)))
            })
            .collect()
    }

    fn same_seed(&self) -> Result<CheckOutcome, CheckError> {
        let n = self.cfg.rollouts;
        self.at_least("rollouts", n)?;
        // The first rollout in v1 (the report's episode) and by check digests, the others
        // against it (by_digest.rs): a rollout that differs comes back with its v1 trace.
        let mut env = self.make()?;
        let first = crate::trace::rollout(
            env.as_mut(),
            self.cfg.seed,
            self.cfg.steps,
            &CheckConfig::reference(self.cfg.opts(None)),
        )
        .map_err(self.rollout_err("rollout 1".to_string()))?;
        let against = CheckConfig::against(self.cfg.opts(None), &first);
        let mut runs = vec![first];
        for r in 1..n {
            let run = crate::trace::rollout(env.as_mut(), self.cfg.seed, self.cfg.steps, &against)
                .map_err(self.rollout_err(format!("rollout {}", r + 1)))?;
            runs.push(run);
        }
        drop(env);
        let seed = self.cfg.seed;
        let episodes: Vec<EpisodeStat> = runs.iter().map(EpisodeStat::of_recorded).collect();
        let found = (1..n).find_map(|r| {
            by_digest::first_step(&runs[0], &runs[r])?;
            first_divergence(&runs[0].trace.step_digests, &runs[r].trace.step_digests).map(
                |divergence| Compared {
                    left: 0,
                    right: r,
                    divergence,
                },
            )
        });
        let label = rollout_label;
        let outcome = match found {
            None => self.outcome(
                &runs[0],
                label(0),
                label(n - 1),
                None,
                true,
                format!(
                    "{n} rollouts of seed {seed} on one instance are identical (episode {}, {} transitions)",
                    runs[0].trace.episode.short(),
                    runs[0].trace.step_digests.len()
                ),
            ),
            Some(c) => {
                let d = self.localised(
                    (&runs[c.left], &runs[c.right]),
                    c.divergence.clone(),
                    |k| {
                        let mut again = self.same_seed_runs(Some(k), c.right + 1)?;
                        let right = again.swap_remove(c.right);
                        Ok((again.swap_remove(c.left), right))
                    },
                )?;
                let (l, r) = (label(c.left), label(c.right));
                let summary = self.fail_summary(&d, &l, &r);
                let mut failed = self.failed((&runs[c.left], &runs[c.right]), l, r, d, summary);
                // Where each rollout first differs from the first: a fault of state repeats
                // at one step, a race moves (timing.rs).
                let steps: Vec<Option<u64>> = runs[1..]
                    .iter()
                    .map(|run| by_digest::first_step(&runs[0], run))
                    .collect();
                let slow = failed.timing.take().and_then(|t| t.slow_step);
                failed.timing = timing::hint(&steps, slow);
                failed
            }
        };
        Ok(CheckOutcome {
            episodes,
            ..outcome
        })
    }

    fn other_seed(&self) -> Result<CheckOutcome, CheckError> {
        let n = self.cfg.other_seeds;
        if n == 0 {
            return Err(CheckError::TooFew {
                check: self.kind,
                what: "other seeds",
                min: 1,
                got: 0,
            });
        }
        let s0 = self.cfg.seed;
        // The actions are those of the first seed in every rollout: only the env's own use of
        // the seed may tell the episodes apart.
        // The reference in v1 and by check digests; the other seeds against it until one
        // differs (its v1 trace names where), then by check digests alone (by_digest.rs).
        let opts = self.cfg.opts_actions_of(s0);
        let mut env = self.make()?;
        let declared = self.cfg.seedless || env.seedless();
        let reference = crate::trace::rollout(
            env.as_mut(),
            s0,
            self.cfg.steps,
            &CheckConfig::reference(opts.clone()),
        )
        .map_err(self.rollout_err(format!("seed {s0}")))?;
        drop(env);
        let against = CheckConfig::against(opts.clone(), &reference);
        let compared = CheckConfig::compared(opts);
        // The first seed that differs, where, and how many differ.
        let mut differ: Option<(u64, Divergence)> = None;
        let mut differing = 0usize;
        let mut same: Vec<u64> = Vec::new();
        for i in 1..=n {
            let seed = self.cfg.seed_at(i);
            let mut env = self.make()?;
            let opts = if differ.is_none() {
                &against
            } else {
                &compared
            };
            let r = crate::trace::rollout(env.as_mut(), seed, self.cfg.steps, opts)
                .map_err(self.rollout_err(format!("seed {seed}")))?;
            if by_digest::first_step(&reference, &r).is_none() {
                same.push(seed);
                continue;
            }
            differing += 1;
            if differ.is_none() {
                differ = first_divergence(&reference.trace.step_digests, &r.trace.step_digests)
                    .map(|d| (seed, d));
            }
        }
        let others = seed_list(&(1..=n).map(|i| self.cfg.seed_at(i)).collect::<Vec<_>>());
        let transitions = reference.trace.step_digests.len();
        let l = format!("seed {s0}");
        let identical = format!(
            "seeds {s0} and {others} gave identical episodes: the same observations, rewards, flags, infos and logs at every one of their {transitions} transitions"
        );
        let Some((first_seed, first)) = differ else {
            let r = format!("seed {}", self.cfg.seed_at(1));
            return Ok(if declared {
                CheckOutcome {
                    episode: reference.trace.episode,
                    transitions: transitions as u64,
                    left: l,
                    right: r,
                    ..CheckOutcome::not_applicable(
                        self.kind,
                        format!("not applicable: the env is declared seedless (no randomness), and {identical}"),
                    )
                }
            } else {
                self.outcome(
                    &reference,
                    l,
                    r,
                    None,
                    false,
                    format!("{identical} (an env without randomness can declare itself seedless: docs/replay.md)"),
                )
            });
        };
        let r = format!("seed {first_seed}");
        let site = match first.site {
            Site::Length { .. } => format!("step {}", first.step),
            _ => format!("step {}, {}", first.step, first.site.describe(&l, &r)),
        };
        let summary = if declared {
            format!(
                "the env is declared seedless, but seed {first_seed} differs from seed {s0} at {site}"
            )
        } else if same.is_empty() {
            format!(
                "all {n} other seeds ({others}) differ from seed {s0}; seed {first_seed} first at {site}"
            )
        } else {
            format!(
                "{} of {n} other seeds differ from seed {s0} (seed {first_seed} first at {site}); seeds {} gave the same episode ({transitions} transitions): weak evidence, episodes are short or the world is small",
                differing,
                seed_list(&same)
            )
        };
        Ok(self.outcome(&reference, l, r, Some(first), !declared, summary))
    }

    /// The interleaved scenario: `k` instances, all created before any reset (as a vector env
    /// creates its sub-envs) when `together`, else each created after the last one's reset;
    /// then stepped alternately in one thread.
    fn interleaved_runs(
        &self,
        together: bool,
        capture: Option<u64>,
    ) -> Result<Vec<Recorded>, CheckError> {
        let k = self.cfg.interleaved;
        let mut slots: Vec<Option<Box<dyn Env>>> = (0..k).map(|_| None).collect();
        if together {
            for slot in slots.iter_mut() {
                *slot = Some(self.make()?);
            }
        }
        let opts = self.cfg.opts(capture);
        let mut rolls = Vec::with_capacity(k);
        for (i, slot) in slots.iter_mut().enumerate() {
            let seed = self.cfg.seed_at(i);
            let env = match slot {
                Some(env) => env,
                None => slot.insert(self.make()?),
            };
            let r = Rollout::start(env.as_mut(), seed, self.cfg.steps, &opts)
                .map_err(self.rollout_err(format!("env {i} (seed {seed}) interleaved")))?;
            rolls.push(r);
        }
        loop {
            let mut any = false;
            for (i, r) in rolls.iter_mut().enumerate() {
                let seed = self.cfg.seed_at(i);
                any |= r
                    .advance()
                    .map_err(self.rollout_err(format!("env {i} (seed {seed}) interleaved")))?;
            }
            if !any {
                break;
            }
        }
        Ok(rolls.into_iter().map(Rollout::finish).collect())
    }

    /// Compares each run of a multi-env scenario with its solo run; the earliest divergence.
    fn against_solos(&self, solos: &[Recorded], runs: &[Recorded]) -> Option<Compared> {
        solos
            .iter()
            .zip(runs)
            .enumerate()
            .filter_map(|(i, (s, r))| {
                first_divergence(&s.trace.step_digests, &r.trace.step_digests).map(|divergence| {
                    Compared {
                        left: i,
                        right: i,
                        divergence,
                    }
                })
            })
            .min_by_key(|c| (c.divergence.step, c.left))
    }

    /// The reference runs of a multi-instance check: each seed alone in a fresh process, or,
    /// when the runner cannot start one, on a fresh instance here (`fresh` false).
    fn references(
        &self,
        n: usize,
        runner: Option<&dyn ProcessRunner>,
    ) -> Result<References, CheckError> {
        if let Some(runner) = runner {
            let id = self.factory.id();
            let mut runs = Vec::with_capacity(n);
            for i in 0..n {
                let seed = self.cfg.seed_at(i);
                match runner
                    .run_reference(&id, seed, self.cfg.steps, None)
                    .map_err(CheckError::Runner)?
                {
                    Some(r) => runs.push(r),
                    None => break,
                }
            }
            if runs.len() == n {
                return Ok(References { runs, fresh: true });
            }
        }
        let runs = (0..n)
            .map(|i| self.solo(self.cfg.seed_at(i), None))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(References { runs, fresh: false })
    }

    /// Reference `i` again, with the transition at step `k` captured.
    fn reference_again(
        &self,
        i: usize,
        fresh: bool,
        runner: Option<&dyn ProcessRunner>,
        k: u64,
    ) -> Result<Recorded, CheckError> {
        let seed = self.cfg.seed_at(i);
        if let (true, Some(runner)) = (fresh, runner) {
            let again = runner
                .run_reference(&self.factory.id(), seed, self.cfg.steps, Some(k))
                .map_err(CheckError::Runner)?;
            if let Some(r) = again {
                return Ok(r);
            }
        }
        self.solo(seed, Some(k))
    }

    /// Compares every layout of a multi-instance scenario (`scenario(layout, capture)`) with
    /// the references; the first layout with a difference fails the check.
    fn multi_env(
        &self,
        n: usize,
        layouts: &[&str],
        runner: Option<&dyn ProcessRunner>,
        scenario: impl Fn(usize, Option<u64>) -> Result<Vec<Recorded>, CheckError>,
    ) -> Result<CheckOutcome, CheckError> {
        let refs = self.references(n, runner)?;
        let reference = if refs.fresh {
            "alone in a fresh process"
        } else {
            "solo"
        };
        // Said in every summary of a check whose references could not run in a fresh process.
        let weaker = if refs.fresh {
            ""
        } else {
            " (solo in this process: the env cannot be started by name in a fresh one, so a cache filled by the first reset of a process can hide in the reference too)"
        };
        let seeds = format!("{}..={}", self.cfg.seed, self.cfg.seed_at(n - 1));
        for (layout, what) in layouts.iter().enumerate() {
            let runs = scenario(layout, None)?;
            let Some(c) = self.against_solos(&refs.runs, &runs) else {
                continue;
            };
            let i = c.left;
            let d = self.localised((&refs.runs[i], &runs[i]), c.divergence, |k| {
                let solo_again = self.reference_again(i, refs.fresh, runner, k)?;
                let run_again = scenario(layout, Some(k))?.swap_remove(i);
                Ok((solo_again, run_again))
            })?;
            let seed = self.cfg.seed_at(i);
            let (l, r) = (
                format!("seed {seed} {reference}"),
                format!("seed {seed} {what}"),
            );
            let summary = format!(
                "env {i} of {n} (seeds {seeds}): {}{weaker}",
                self.fail_summary(&d, &l, &r)
            );
            return Ok(self.failed((&refs.runs[i], &runs[i]), l, r, d, summary));
        }
        let what = layouts.join(" and ");
        Ok(self.outcome(
            &refs.runs[0],
            if refs.fresh {
                "a fresh process".into()
            } else {
                "solo".into()
            },
            layouts[0].to_string(),
            None,
            true,
            format!("{n} envs (seeds {seeds}) {what} each match the seed {reference}{weaker}"),
        ))
    }

    fn interleaved(&self, runner: Option<&dyn ProcessRunner>) -> Result<CheckOutcome, CheckError> {
        let n = self.cfg.interleaved;
        self.at_least("interleaved envs", n)?;
        let layouts = [
            "interleaved (created together)",
            "interleaved (each created after the last one's reset)",
        ];
        self.multi_env(n, &layouts, runner, |layout, c| {
            self.interleaved_runs(layout == 0, c)
        })
    }

    /// The parallel scenario: `workers` instances, each made, reset and stepped on a thread of
    /// its own, every instance made before any reset and every reset done before any step. A worker whose instance fails is
    /// [`CheckError::OnThreads`].
    fn parallel_runs(&self, capture: Option<u64>) -> Result<Vec<Recorded>, CheckError> {
        match self.factory.thread_isolation() {
            Some(isolation) => isolation::in_fork(isolation, &|| self.parallel_threads(capture)),
            None => self.parallel_threads(capture),
        }
    }

    /// [`Self::parallel_runs`] in this process.
    fn parallel_threads(&self, capture: Option<u64>) -> Result<Vec<Recorded>, CheckError> {
        let w = self.cfg.workers;
        let barrier = Barrier::new(w);
        let opts = self.cfg.opts(capture);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..w)
                .map(|i| {
                    let (barrier, opts) = (&barrier, &opts);
                    s.spawn(move || -> Result<Recorded, CheckError> {
                        let seed = self.cfg.seed_at(i);
                        let on_threads = |at: String, error: String| CheckError::OnThreads {
                            worker: i,
                            seed,
                            at,
                            error,
                        };
                        let failed = |e: TraceError| match e {
                            TraceError::Env { step: 0, source } => {
                                on_threads("failed at its reset".into(), source.message)
                            }
                            TraceError::Env { step, source } => {
                                on_threads(format!("failed at step {step}"), source.message)
                            }
                            other => self.rollout_err(format!("worker {i} (seed {seed})"))(other),
                        };
                        // Every worker's instance exists before any resets: a crash at one
                        // reset cannot meet another instance being made.
                        let made = self.factory.make_threaded();
                        barrier.wait();
                        let mut env = match made {
                            Ok(e) => e,
                            Err(e) => {
                                barrier.wait();
                                return Err(on_threads("could not be made".into(), e.message));
                            }
                        };
                        let started = Rollout::start(env.as_mut(), seed, self.cfg.steps, opts);
                        // Every worker resets before any steps: the steps overlap.
                        barrier.wait();
                        let mut r = started.map_err(failed)?;
                        while r.advance().map_err(failed)? {}
                        Ok(r.finish())
                    })
                })
                .collect();
            let results: Vec<_> = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .map_err(|_| CheckError::Panicked { check: self.kind })?
                })
                .collect();
            // The first worker's failure, in worker order (not the order they happened in).
            results.into_iter().collect()
        })
    }

    fn parallel(&self, runner: Option<&dyn ProcessRunner>) -> Result<CheckOutcome, CheckError> {
        let n = self.cfg.workers;
        self.at_least("workers", n)?;
        let checked = self.multi_env(n, &["on parallel threads"], runner, |_, c| {
            self.parallel_runs(c)
        });
        match checked {
            Err(CheckError::OnThreads {
                worker,
                seed,
                at,
                error,
            }) => Ok(self.not_thread_safe(n, worker, seed, &at, &error)),
            Err(CheckError::ThreadsCrashed { status }) => Ok(self.crashed_on_threads(n, &status)),
            other => other,
        }
    }

    /// The parallel verdict of an env whose instances fail on threads of their own while each
    /// seed alone ran: said in words, with the env's error (the check's other instances and
    /// every other check are unaffected).
    fn not_thread_safe(
        &self,
        n: usize,
        worker: usize,
        seed: u64,
        at: &str,
        error: &str,
    ) -> CheckOutcome {
        let said = env_words(error.lines().next().unwrap_or_default());
        let summary = format!(
            "the env is not thread-safe: {said} (worker {worker} of {n}, seed {seed}, {at} on a thread of its own; each seed alone ran)"
        );
        self.failed_on_threads(
            format!("seed {seed} alone"),
            format!("seed {seed} on parallel threads"),
            summary,
        )
    }

    /// The parallel verdict of an env that crashed the (forked) process its threads ran in.
    fn crashed_on_threads(&self, n: usize, status: &str) -> CheckOutcome {
        let seeds = format!("{}..={}", self.cfg.seed, self.cfg.seed_at(n - 1));
        self.failed_on_threads(
            "each seed alone".into(),
            "on parallel threads".into(),
            format!(
                "the env is not thread-safe: it crashed the process its {n} threads (seeds {seeds}) ran in, {status}; they ran in a process forked from this one, which lives on, and each seed alone ran"
            ),
        )
    }

    fn failed_on_threads(&self, left: String, right: String, summary: String) -> CheckOutcome {
        CheckOutcome {
            check: self.kind,
            applicable: true,
            passed: false,
            summary,
            left,
            right,
            episode: Digest::ZERO,
            transitions: 0,
            divergence: None,
            timeline: None,
            episodes: Vec::new(),
            timing: None,
            step_times: None,
        }
    }
    fn other_process(&self, runner: &dyn ProcessRunner) -> Result<CheckOutcome, CheckError> {
        let (seed, steps) = (self.cfg.seed, self.cfg.steps);
        let id = self.factory.id();
        let here = self.solo(seed, None)?;
        let child = runner
            .run(&id, seed, steps, None)
            .map_err(CheckError::Runner)?;
        let (l, r) = ("this process".to_string(), "a fresh process".to_string());
        match first_divergence(&here.trace.step_digests, &child.trace.step_digests) {
            None => {
                let summary = format!(
                    "seed {seed} gives the same episode in a fresh process (episode {}, {} transitions)",
                    here.trace.episode.short(),
                    here.trace.step_digests.len()
                );
                Ok(self.outcome(&here, l, r, None, true, summary))
            }
            Some(d) => {
                let d = self.localised((&here, &child), d, |k| {
                    let here_again = self.solo(seed, Some(k))?;
                    let child_again = runner
                        .run(&id, seed, steps, Some(k))
                        .map_err(CheckError::Runner)?;
                    Ok((here_again, child_again))
                })?;
                let summary = self.fail_summary(&d, &l, &r);
                Ok(self.failed((&here, &child), l, r, d, summary))
            }
        }
    }
}

/// The env's own words in the first line of an instance's error: what follows `the env
/// failed: ` (an exception the env answered), or the fault from `the process ` on (it ended
/// with a signal, closed its stdout); else the whole line.
fn env_words(line: &str) -> &str {
    if let Some((_, said)) = line.rsplit_once(": the env failed: ") {
        return said;
    }
    match line.find(": the process ") {
        Some(i) => &line[i + 2..],
        None => line,
    }
}

/// `3..=10` for consecutive seeds, else `3, 5, 9`.
fn seed_list(seeds: &[u64]) -> String {
    let consecutive = seeds.windows(2).all(|w| w[1] == w[0].wrapping_add(1));
    match seeds {
        [] => String::new(),
        [one] => one.to_string(),
        [first, .., last] if consecutive => format!("{first}..={last}"),
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn step_of(r: &Recorded, k: u64) -> Option<&StepDigest> {
    r.trace.step_digests.get(k as usize)
}

/// How many times a check re-runs a scenario to explain a difference its kept transitions do
/// not reach, while the re-runs do not reproduce it.
pub const RERUNS: usize = 3;

impl Ctx<'_> {
    /// Adds the element-level detail to `d`, the first divergence of the runs `first`: from
    /// their kept transitions when both reach its step, else from `rerun(step)`, which plays
    /// the same two runs again and captures that step (see the module doc).
    pub(super) fn localised(
        &self,
        first: (&Recorded, &Recorded),
        mut d: Divergence,
        mut rerun: impl FnMut(u64) -> Result<(Recorded, Recorded), CheckError>,
    ) -> Result<Divergence, CheckError> {
        let k = d.step;
        if let (Some(a), Some(b)) = (first.0.kept_at(k), first.1.kept_at(k)) {
            d.explain_from(a, b);
            d.note = None;
            return Ok(d);
        }
        // The other sites carry both values already: nothing to re-run for.
        let wants_detail = |site: &Site| {
            matches!(
                site,
                Site::Obs { .. } | Site::Info { .. } | Site::Logs { .. }
            )
        };
        if !wants_detail(&d.site) && !d.also.iter().any(|o| wants_detail(&o.site)) {
            return Ok(d);
        }
        for attempt in 1..=RERUNS {
            let (left, right) = rerun(k)?;
            let reproduced = |first: &Recorded, again: &Recorded| {
                step_of(first, k).map(|s| s.digest) == step_of(again, k).map(|s| s.digest)
            };
            let both_reproduced = reproduced(first.0, &left) && reproduced(first.1, &right);
            let explained = match (&left.captured, &right.captured) {
                (Some(a), Some(b)) => {
                    // A site that needs no detail (a reward) counts as explained by the others'.
                    d.explain_from(a, b)
                        || (!wants_detail(&d.site) && d.also.iter().any(|o| o.detail.is_some()))
                }
                _ => {
                    d.detail = None;
                    false
                }
            };
            d.note = match (explained, both_reproduced) {
                (_, true) => None,
                (true, false) => Some(format!(
                    "values from a re-run to step {k}: the env does not reproduce its own runs, so they may differ from the first run's"
                )),
                (false, false) => Some(format!(
                    "{} to step {k} did not reproduce the difference: the env is not deterministic",
                    if attempt == 1 { "a re-run".to_string() } else { format!("{attempt} re-runs") }
                )),
            };
            if explained || both_reproduced {
                break;
            }
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests;
