//! `lockstep range bench --trace`: what tracing costs, measured as env-steps per second of
//! the range stepped alone and stepped and traced, in the same run.
//!
//! Three envs take the same seeds and actions: one untraced, one traced in format v1 and one
//! in format v2 (`Tracer::record` of every transition, resets included, as `lockstep trace`
//! does). They run in alternating blocks of [`BLOCK_STEPS`] steps, so that a change in the
//! machine's load falls on all alike; each block is timed by the thread's CPU time where
//! Linux gives it (else wall time). The last line is format v2's ratio, the line above it
//! v1's.

use std::time::{Duration, Instant};

use lockstep::env::ArrayData;
use lockstep::trace::{CacheMode, Format, Tracer};
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
    episodes: u64,
}

impl Stepper {
    fn new(params: &Params, seed: u64, traced: Option<Format>) -> anyhow::Result<Stepper> {
        let mut env = RangeEnv::new(params.clone())?;
        env.reset_with(seed, params.clone())?;
        let mut tracer = traced.map(|f| Tracer::with_format(f, CacheMode::On));
        if let Some(t) = tracer.as_mut() {
            t.record(env.transition())?;
        }
        Ok(Stepper {
            env,
            params: params.clone(),
            sampler: ActionSampler::new(seed),
            masks: vec![Vec::new(); N_AGENTS],
            seed,
            tracer,
            episodes: 0,
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
            self.env
                .step_joint(&joint)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Some(t) = self.tracer.as_mut() {
                t.record(self.env.transition())?;
            }
            if self.env.core().done() {
                self.seed += 1;
                self.episodes += 1;
                self.env.reset_with(self.seed, self.params.clone())?;
                if let Some(t) = self.tracer.as_mut() {
                    // One episode's digests at a time: memory stays bounded.
                    t.clear();
                    t.record(self.env.transition())?;
                }
            }
        }
        Ok(())
    }
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

/// Runs the three envs for about `seconds` of wall time in all and prints their rates, the
/// ratios (traced / untraced env-steps per second) on the last two lines, v2's last.
#[allow(clippy::disallowed_methods)]
pub fn traced_vs_untraced(params: &Params, seed: u64, seconds: f64) -> anyhow::Result<()> {
    let mut plain = Stepper::new(params, seed, None)?;
    let mut v1 = Stepper::new(params, seed, Some(Format::V1))?;
    let mut v2 = Stepper::new(params, seed, Some(Format::V2))?;
    // Warm up all three (caches, allocations) before measuring.
    for s in [&mut plain, &mut v1, &mut v2] {
        s.block(BLOCK_STEPS)?;
    }
    let (mut plain_s, mut v1_s, mut v2_s, mut blocks) = (0.0, 0.0, 0.0, 0u64);
    let mut cpu = true;
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    while start.elapsed() < budget || blocks == 0 {
        let (p, pc) = timed(|| plain.block(BLOCK_STEPS))?;
        let (t1, c1) = timed(|| v1.block(BLOCK_STEPS))?;
        let (t2, c2) = timed(|| v2.block(BLOCK_STEPS))?;
        plain_s += p;
        v1_s += t1;
        v2_s += t2;
        cpu &= pc && c1 && c2;
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
    let traced = |label: &str, s: f64| {
        format!(
            "{label} {:.1} us/step, env-steps/s: {:.0} (tracing {:.1} us/step, {:.0}% of a step)",
            per_step(s),
            steps as f64 / s,
            per_step(s - plain_s),
            100.0 * (s - plain_s) / plain_s
        )
    };
    outln!("{}", traced("traced v1:", v1_s));
    outln!("{}", traced("traced:   ", v2_s));
    outln!("(traced: format v2, lockstep trace --format v2; traced v1: the default format)");
    outln!(
        "traced v1/untraced env-steps/s ratio: {:.2}",
        plain_s / v1_s
    );
    outln!("traced/untraced env-steps/s ratio: {:.2}", plain_s / v2_s);
    Ok(())
}
