//! `lockstep range bench --trace`: what tracing costs, measured as env-steps per second of
//! the range stepped alone and stepped and traced, in the same run.
//!
//! Seven envs take the same seeds and actions: one untraced, one traced in each format
//! (`Tracer::record` of every transition, resets included, as `lockstep trace` does), and two
//! recorded as the same-seed and other-seed checks record a rollout (a
//! [`Recorder`] per episode with the checks' options, and the step's wall time read as
//! `Rollout` reads it): a compared rollout, by check digests alone, and the check's reference,
//! in v1 and by check digests. They run in alternating blocks of [`BLOCK_STEPS`] steps, so
//! that a change in the machine's load falls on all alike, each round starting one env further
//! on (so that no env always follows the same one); each block is timed by the
//! thread's CPU time where Linux gives it (else wall time). The last four lines are v1's,
//! v2's, v3's and v4's ratios; the checks' ratios come just before them.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockstep::env::ArrayData;
use lockstep::trace::{Against, CacheMode, Format, KeepFirst, Recorder, RolloutOptions, Tracer};

/// The references of episodes the check's reference stepper finished, oldest first, for the
/// stepper that records the same episodes against them.
type References = Rc<RefCell<VecDeque<Arc<Against>>>>;
use lockstep_range::{ActionSampler, JointAction, Params, RangeEnv, AGENTS, N_AGENTS};

/// Steps per timed block.
const BLOCK_STEPS: u64 = 250;

/// One env driven by seeded valid actions, a new seed after each episode, traced or not.
struct Stepper {
    env: RangeEnv,
    params: Params,
    sampler: ActionSampler,
    masks: Vec<Vec<i8>>,
    seed: u64,
    tracer: Option<Tracer>,
    /// A check's options and the recorder of this episode's rollout, with its step times.
    check: Option<(RolloutOptions, Recorder, Vec<Duration>)>,
    /// Where a check's reference stepper leaves each episode's reference, and where the
    /// compared stepper takes the one of the episode it starts.
    references: Option<References>,
    episodes: u64,
    /// Steps taken, and steps taken when the last episode ended.
    taken: u64,
    ended_at: u64,
    /// References of the episodes a compared stepper finished, dropped between timed blocks.
    spent: Vec<Arc<Against>>,
}

/// How a [`Stepper`] records its env.
#[derive(Clone, Copy)]
enum Mode {
    Untraced,
    Traced(Format),
    /// As the checks record a rollout against their reference (`Against`): by check digests,
    /// and in v1 only from a step that differs (none here: the same seeds and actions).
    CheckCompared,
    /// As the checks record their reference: v1 and check digests.
    CheckReference,
}

impl Mode {
    fn check_options(self) -> Option<RolloutOptions> {
        match self {
            Mode::CheckCompared | Mode::CheckReference => {}
            Mode::Untraced | Mode::Traced(_) => return None,
        }
        Some(RolloutOptions {
            format: Format::V1,
            check_digests: true,
            keep_first: KeepFirst::CHECKS,
            ..RolloutOptions::default()
        })
    }
}

impl Stepper {
    /// A stepper in `mode`; a check's steppers share `references` (the reference's stepper
    /// must have finished the first episode before the compared one is made).
    fn new(
        params: &Params,
        seed: u64,
        mode: Mode,
        references: Option<References>,
    ) -> anyhow::Result<Stepper> {
        let mut env = RangeEnv::new(params.clone())?;
        let reset = stopwatch();
        env.reset_with(seed, params.clone())?;
        let reset = reset.elapsed();
        let mut tracer = match mode {
            Mode::Traced(f) => Some(Tracer::with_format(f, CacheMode::On)),
            _ => None,
        };
        if let Some(t) = tracer.as_mut() {
            t.record(env.transition())?;
        }
        let check = match mode.check_options() {
            Some(mut opts) => {
                if let (Mode::CheckCompared, Some(refs)) = (mode, &references) {
                    opts.against = refs.borrow_mut().pop_front();
                    anyhow::ensure!(opts.against.is_some(), "no reference for the first episode");
                }
                let mut rec = Recorder::new(&opts);
                rec.record(env.transition())?;
                Some((opts, rec, vec![reset]))
            }
            None => None,
        };
        Ok(Stepper {
            env,
            params: params.clone(),
            sampler: ActionSampler::new(seed),
            masks: vec![Vec::new(); N_AGENTS],
            seed,
            tracer,
            check,
            references,
            episodes: 0,
            taken: 0,
            ended_at: 0,
            spent: Vec::new(),
        })
    }

    fn block(&mut self, steps: u64) -> anyhow::Result<()> {
        for _ in 0..steps {
            let mut joint = JointAction::default();
            for (ag, m) in self.masks.iter_mut().enumerate() {
                if let ArrayData::I8(v) =
                    self.env.transition().agents[AGENTS[ag]].obs["action_mask"].data()
                {
                    m.clone_from(v);
                }
                joint.0[ag] = self.sampler.sample(ag, m);
            }
            let started = self.check.is_some().then(stopwatch);
            self.env
                .step_joint(&joint)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Some(t) = self.tracer.as_mut() {
                t.record(self.env.transition())?;
            }
            if let (Some((_, rec, times)), Some(started)) = (self.check.as_mut(), started) {
                times.push(started.elapsed());
                rec.record(self.env.transition())?;
            }
            self.taken += 1;
            if self.env.core().done() {
                self.ended_at = self.taken;
                if let (Some((opts, rec, _)), Some(refs)) = (&self.check, &self.references) {
                    if opts.against.is_none() {
                        let reference = rec.against().expect("a reference records v1 and checks");
                        refs.borrow_mut().push_back(Arc::new(reference));
                    }
                }
                self.seed += 1;
                self.episodes += 1;
                let started = stopwatch();
                self.env.reset_with(self.seed, self.params.clone())?;
                if let Some(t) = self.tracer.as_mut() {
                    // One episode's digests at a time: memory stays bounded.
                    t.clear();
                    t.record(self.env.transition())?;
                }
                if let Some((opts, rec, times)) = self.check.as_mut() {
                    // A check records each rollout from scratch, a compared one against the
                    // reference of the same seed.
                    if let (Some(done), Some(refs)) = (&opts.against, &self.references) {
                        // A check drops its reference once, after all the rollouts compared
                        // with it: freeing its v1 digests is not a compared rollout's cost.
                        self.spent.push(done.clone());
                        opts.against = refs.borrow_mut().pop_front();
                        anyhow::ensure!(opts.against.is_some(), "no reference for an episode");
                    }
                    *rec = Recorder::new(opts);
                    times.clear();
                    times.push(started.elapsed());
                    rec.record(self.env.transition())?;
                }
            }
        }
        Ok(())
    }
}

/// The wall clock, read around each step as `Rollout` reads it for its step times.
#[allow(clippy::disallowed_methods)]
fn stopwatch() -> Instant {
    Instant::now()
}

/// Seconds a block took: the thread's CPU time, or wall time where that is not available.
// A benchmark measures time on purpose; nothing it times reaches an episode or a digest.
#[allow(clippy::disallowed_methods)]
fn timed(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<(f64, bool)> {
    let cpu0 = super::range::thread_cpu_ns();
    let wall = Instant::now();
    f()?;
    let wall = wall.elapsed().as_secs_f64();
    match (cpu0, super::range::thread_cpu_ns()) {
        (Some(c0), Some(c1)) => Ok((c1.saturating_sub(c0) as f64 / 1e9, true)),
        _ => Ok((wall, false)),
    }
}

/// Runs the untraced env and one traced env per format for about `seconds` of wall time in
/// all and prints their rates, then each format's ratio (traced / untraced env-steps per
/// second), v4's (the cheapest, what checks compare) on the last line.
#[allow(clippy::disallowed_methods)]
pub fn traced_vs_untraced(params: &Params, seed: u64, seconds: f64) -> anyhow::Result<()> {
    let mut plain = Stepper::new(params, seed, Mode::Untraced, None)?;
    let mut traced: Vec<(Mode, Stepper, f64)> = Vec::new();
    for mode in [
        Mode::Traced(Format::V1),
        Mode::Traced(Format::V2),
        Mode::Traced(Format::V3),
        Mode::Traced(Format::V4),
    ] {
        traced.push((mode, Stepper::new(params, seed, mode, None)?, 0.0));
    }
    traced.push((
        Mode::CheckReference,
        Stepper::new(params, seed, Mode::CheckReference, None)?,
        0.0,
    ));
    // The compared stepper records each episode against the reference of the same seed,
    // which `producer` (stepped between timed blocks) records ahead of it.
    let references: References = Rc::default();
    let mut producer = Stepper::new(params, seed, Mode::CheckReference, Some(references.clone()))?;
    let mut ahead = |compared_taken: u64| -> anyhow::Result<()> {
        // Every episode the next block starts has ended in the producer.
        while producer.ended_at <= compared_taken + BLOCK_STEPS {
            producer.block(1)?;
        }
        Ok(())
    };
    ahead(0)?;
    traced.push((
        Mode::CheckCompared,
        Stepper::new(params, seed, Mode::CheckCompared, Some(references))?,
        0.0,
    ));
    // Warm up every env (caches, allocations) before measuring.
    plain.block(BLOCK_STEPS)?;
    for (mode, s, _) in &mut traced {
        if let Mode::CheckCompared = mode {
            ahead(s.taken)?;
        }
        s.block(BLOCK_STEPS)?;
    }
    let (mut plain_s, mut blocks) = (0.0, 0u64);
    let mut cpu = true;
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    while start.elapsed() < budget || blocks == 0 {
        // The producer's catch-up first, away from the compared stepper's block, and the
        // references it finished with dropped, untimed.
        for (mode, s, _) in &mut traced {
            if let Mode::CheckCompared = mode {
                ahead(s.taken)?;
                s.spent.clear();
            }
        }
        // Each round starts one env further on: a block pays for the caches the block before
        // it filled (the check's reference, in v1, fills the most), and over the rounds every
        // env follows every other alike.
        let envs = traced.len() + 1;
        for k in 0..envs {
            match (k + blocks as usize) % envs {
                0 => {
                    let (p, pc) = timed(|| plain.block(BLOCK_STEPS))?;
                    plain_s += p;
                    cpu &= pc;
                }
                i => {
                    let (_, s, total) = &mut traced[i - 1];
                    let (t, c) = timed(|| s.block(BLOCK_STEPS))?;
                    *total += t;
                    cpu &= c;
                }
            }
        }
        blocks += 1;
    }
    let steps = blocks * BLOCK_STEPS;
    let per_step = |s: f64| s / steps as f64 * 1e6;
    outln!(
        "{steps} steps each, alternating blocks of {BLOCK_STEPS}, timed by {}",
        if cpu { "thread CPU time" } else { "wall time" }
    );
    outln!(
        "untraced:  {:.1} us/step, env-steps/s: {:.0}",
        per_step(plain_s),
        steps as f64 / plain_s
    );
    for (mode, _, s) in &traced {
        outln!(
            "traced {}: {:.1} us/step, env-steps/s: {:.0} (tracing {:.1} us/step, {:.0}% of a step)",
            mode_label(*mode),
            per_step(*s),
            steps as f64 / s,
            per_step(s - plain_s),
            100.0 * (s - plain_s) / plain_s
        );
    }
    outln!("(v1: the default format, what golden files use; v2: one BLAKE3 hash per step; v3: v2 with XXH3-128; v4: v3 with infos as their value layout; lockstep trace --format v1|v2|v3|v4)");
    outln!("(check: a rollout as the same-seed and other-seed checks record the rollouts they compare with their reference: check digests (v4), the first transitions kept, step times; check-ref: their reference, also in v1)");
    let time = |m: fn(&Mode) -> bool| {
        traced
            .iter()
            .find(|(mode, _, _)| m(mode))
            .map_or(0.0, |(_, _, s)| *s)
    };
    let compared = time(|m| matches!(m, Mode::CheckCompared));
    let reference = time(|m| matches!(m, Mode::CheckReference));
    // The same-seed check's default rollouts: one reference, the rest compared with it.
    let n = lockstep::check::DEFAULT_ROLLOUTS as f64;
    let same_seed = (reference + (n - 1.0) * compared) / n;
    outln!(
        "same-seed check ({n} rollouts: 1 check-ref, {} check)/untraced env-steps/s ratio: {:.2}",
        n - 1.0,
        plain_s / same_seed
    );
    outln!(
        "check-ref/untraced env-steps/s ratio: {:.2}",
        plain_s / reference
    );
    outln!(
        "check/untraced env-steps/s ratio: {:.2}",
        plain_s / compared
    );
    for (mode, _, s) in &traced {
        if let Mode::Traced(_) = mode {
            outln!(
                "traced {}/untraced env-steps/s ratio: {:.2}",
                mode_label(*mode),
                plain_s / s
            );
        }
    }
    Ok(())
}

fn mode_label(mode: Mode) -> &'static str {
    match mode {
        Mode::Untraced => "none",
        Mode::Traced(Format::V1) => "v1",
        Mode::Traced(Format::V2) => "v2",
        Mode::Traced(Format::V3) => "v3",
        Mode::Traced(Format::V4) => "v4",
        Mode::CheckCompared => "check",
        Mode::CheckReference => "check-ref",
    }
}
