//! Fitting a check's plan into a time budget (`lockstep check --budget 2m`).
//!
//! A default check of a slow env (pistonball_v6: 26 minutes on 2 cores) is a check nobody
//! waits for. With a budget, the CLI measures the env on one short rollout (the time to start
//! an instance, the time of a step), estimates the plan with [`estimate`], and cuts it with
//! [`fit`], in a fixed order, until the estimate fits:
//!
//! 1. seeds down to 2 (the first ones are kept);
//! 2. same-seed rollouts down to 3;
//! 3. seeds down to 1;
//! 4. steps halved, down to [`MIN_STEPS`].
//!
//! Every check still runs: a plan is cut in samples, never in kinds of fault, because each
//! check is the only one that sees its fault. What was cut is said in the header and kept in
//! the report (`params.budget`).
//!
//! The model counts, per trial, the episodes of `steps` steps and the process starts each
//! check makes ([`CheckCost`]); references shared between checks (the solo fresh-process run
//! of a seed, memoized by `FreshRuns`) are counted once. It is an estimate: the report keeps it
//! beside the measured rates, so a wrong model shows.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::check::{CheckConfig, CheckKind};
use crate::env::EnvFactory;
use crate::trace::{rollout, RolloutOptions};

/// Steps the measuring rollout plays at most: enough to average a step, short next to a check.
pub const PROBE_STEPS: u64 = 50;

/// The fewest steps a cut plan keeps: below that most faults cannot show.
pub const MIN_STEPS: u64 = 10;

/// What one short rollout of the env measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Making an instance and resetting it (a process and its handshake, for an external env).
    pub start: Duration,
    /// One step.
    pub step: Duration,
}

/// The samples of a check run: what a budget cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub seeds: usize,
    pub rollouts: usize,
    pub steps: u64,
}

/// The start (making an instance) and step time of `factory`, from one rollout of at most
/// [`PROBE_STEPS`] steps of `seed`; the reset counts as a step, as it is played as often as
/// episodes are. The wall clock is the point here; it reaches only the plan and the report's
/// `params.budget`, never a trace.
#[allow(clippy::disallowed_methods)]
pub fn measure(factory: &dyn EnvFactory, seed: u64, steps: u64) -> Result<Measured, String> {
    let t0 = Instant::now();
    let mut env = factory.make().map_err(|e| e.to_string())?;
    let start = t0.elapsed();
    let t1 = Instant::now();
    let played = rollout(
        env.as_mut(),
        seed,
        steps.min(PROBE_STEPS),
        &RolloutOptions::default(),
    );
    let elapsed = t1.elapsed();
    let _ = env.close();
    let recorded = played.map_err(|e| e.to_string())?;
    let transitions = u32::try_from(recorded.trace.step_digests.len().max(1)).unwrap_or(u32::MAX);
    Ok(Measured {
        start,
        step: elapsed / transitions,
    })
}

/// Episodes and process starts of one check for one seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CheckCost {
    pub episodes: u64,
    pub starts: u64,
}

/// What `kind` plays for one seed with `rollouts` same-seed rollouts (as `check/mod.rs` and
/// its modules run it, with [`CheckConfig::new`]'s defaults). The solo reference of a seed in
/// a fresh process is counted with the first check that needs it, not again.
pub fn check_cost(kind: CheckKind, rollouts: usize) -> CheckCost {
    let cfg = CheckConfig::new(0, 1);
    let (i, w, o) = (
        cfg.interleaved as u64,
        cfg.workers as u64,
        cfg.other_seeds as u64,
    );
    let (episodes, starts) = match kind {
        CheckKind::SameSeed => (rollouts as u64, 0),
        CheckKind::OtherSeed => (1 + o, 0),
        // Two layouts of `i` instances in one child each, and each seed alone in a fresh one.
        CheckKind::Interleaved => (3 * i, 2 + i),
        CheckKind::OtherProcess => (1, 1),
        // References shared with the interleaved check's, but for the extra workers.
        CheckKind::ParallelWorkers => (w + w.saturating_sub(i), 1 + w.saturating_sub(i)),
        // Two instances and a fresh process, each a seeded episode and 3 after reset().
        CheckKind::Continuation => (12, 2),
        CheckKind::Leftover => (2, 2),
        CheckKind::Vector => (2, 2),
        CheckKind::ForkedWorkers => (2, 1),
    };
    CheckCost { episodes, starts }
}

/// Estimated wall time of `plan` over `checks` with `parallel` trials at once: per trial, the
/// audit (two episodes, two instances), the worker's own start and every check's cost.
pub fn estimate(plan: Plan, checks: &[CheckKind], m: Measured, parallel: usize) -> Duration {
    let mut episodes = 2u64;
    let mut starts = 3u64;
    for &k in checks {
        let c = check_cost(k, plan.rollouts);
        episodes += c.episodes;
        starts += c.starts;
    }
    let per_trial = m.step.as_secs_f64() * (episodes * plan.steps) as f64
        + m.start.as_secs_f64() * starts as f64;
    let rounds = plan.seeds.div_ceil(parallel.max(1));
    Duration::from_secs_f64(per_trial * rounds as f64)
}

/// A plan fitted into a budget: what runs, its estimate, and each cut in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub plan: Plan,
    pub estimate: Duration,
    pub dropped: Vec<String>,
    /// False when even the smallest plan is estimated over the budget (it runs anyway).
    pub fits: bool,
}

/// `requested` cut in the module's order until its estimate is within `budget`.
pub fn fit(
    requested: Plan,
    checks: &[CheckKind],
    m: Measured,
    parallel: usize,
    budget: Duration,
) -> Fitted {
    let within = |p: Plan| estimate(p, checks, m, parallel) <= budget;
    let mut plan = requested;
    let steps_floor = MIN_STEPS.min(requested.steps);
    while !within(plan) {
        if plan.seeds > 2 {
            plan.seeds = 2;
        } else if plan.rollouts > 3 {
            plan.rollouts = 3;
        } else if plan.seeds > 1 {
            plan.seeds = 1;
        } else if plan.steps > steps_floor {
            plan.steps = (plan.steps / 2).max(steps_floor);
        } else {
            break;
        }
    }
    let mut dropped = Vec::new();
    if plan.seeds < requested.seeds {
        dropped.push(format!("seeds {} -> {}", requested.seeds, plan.seeds));
    }
    if plan.rollouts < requested.rollouts {
        dropped.push(format!(
            "same-seed rollouts {} -> {}",
            requested.rollouts, plan.rollouts
        ));
    }
    if plan.steps < requested.steps {
        dropped.push(format!("steps {} -> {}", requested.steps, plan.steps));
    }
    Fitted {
        plan,
        estimate: estimate(plan, checks, m, parallel),
        dropped,
        fits: within(plan),
    }
}

/// The budget part of a report's parameters: what was asked, measured, estimated and cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetRecord {
    /// `--budget` in seconds.
    pub budget_s: f64,
    /// The measured start of an instance and time of a step, in seconds.
    pub start_s: f64,
    pub step_s: f64,
    /// The fitted plan's estimated wall time, in seconds.
    pub estimate_s: f64,
    /// Each cut, in words (`seeds 5 -> 2`); empty when the plan fitted as asked.
    pub dropped: Vec<String>,
    /// False when even the smallest plan was estimated over the budget.
    pub fits: bool,
}

impl BudgetRecord {
    pub fn of(budget: Duration, m: Measured, f: &Fitted) -> BudgetRecord {
        BudgetRecord {
            budget_s: budget.as_secs_f64(),
            start_s: m.start.as_secs_f64(),
            step_s: m.step.as_secs_f64(),
            estimate_s: f.estimate.as_secs_f64(),
            dropped: f.dropped.clone(),
            fits: f.fits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CheckKind; 8] = CheckKind::ALL;

    fn plan(seeds: usize, rollouts: usize, steps: u64) -> Plan {
        Plan {
            seeds,
            rollouts,
            steps,
        }
    }

    fn rate(start_ms: u64, step_us: u64) -> Measured {
        Measured {
            start: Duration::from_millis(start_ms),
            step: Duration::from_micros(step_us),
        }
    }

    #[test]
    fn a_plan_that_fits_is_not_cut() {
        let f = fit(
            plan(5, 10, 200),
            &ALL,
            rate(10, 10),
            2,
            Duration::from_secs(60),
        );
        assert_eq!(f.plan, plan(5, 10, 200));
        assert!(f.dropped.is_empty() && f.fits);
    }

    #[test]
    fn cuts_come_in_the_documented_order() {
        let m = rate(1000, 20_000);
        let checks = &ALL;
        let asked = plan(5, 10, 200);
        // Each budget just above the estimate of one stage of cuts lands on that stage.
        let stages = [
            plan(2, 10, 200),
            plan(2, 3, 200),
            plan(1, 3, 200),
            plan(1, 3, 100),
            plan(1, 3, 50),
        ];
        for want in stages {
            let budget = estimate(want, checks, m, 1) + Duration::from_millis(1);
            let f = fit(asked, checks, m, 1, budget);
            assert_eq!(f.plan, want, "{budget:?}");
            assert!(f.fits);
        }
        let f = fit(asked, checks, m, 1, Duration::from_secs(1));
        assert_eq!(f.plan, plan(1, 3, MIN_STEPS));
        assert!(!f.fits, "the smallest plan is run, and said to be over");
        assert_eq!(
            f.dropped,
            [
                "seeds 5 -> 1",
                "same-seed rollouts 10 -> 3",
                "steps 200 -> 10"
            ]
        );
    }

    #[test]
    fn the_estimate_grows_with_every_sample_and_shrinks_with_parallel_trials() {
        let m = rate(500, 5000);
        let base = estimate(plan(4, 10, 100), &ALL, m, 1);
        assert!(estimate(plan(4, 10, 200), &ALL, m, 1) > base);
        assert!(estimate(plan(4, 12, 100), &ALL, m, 1) > base);
        assert!(estimate(plan(5, 10, 100), &ALL, m, 1) > base);
        let halved = estimate(plan(4, 10, 100), &ALL, m, 2).as_secs_f64();
        assert!((halved * 2.0 - base.as_secs_f64()).abs() < 1e-6);
        assert!(estimate(plan(4, 10, 100), &ALL[..1], m, 1) < base);
    }
}
