//! `lockstep range bench --trace`: what tracing costs, measured as env-steps per second of
//! the range stepped alone and stepped and traced, in the same run.
//!
//! Two envs take the same seeds and actions, one of them traced (`Tracer::record` of every
//! transition, resets included, as `lockstep trace` does). They run in alternating blocks of
//! [`BLOCK_STEPS`] steps, so that a change in the machine's load falls on both alike; each
//! block is timed by the thread's CPU time where Linux gives it (else wall time).

use std::time::{Duration, Instant};

use lockstep::env::ArrayData;
use lockstep::trace::{CacheMode, Tracer};
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
    fn new(params: &Params, seed: u64, traced: bool) -> anyhow::Result<Stepper> {
        let mut env = RangeEnv::new(params.clone())?;
        env.reset_with(seed, params.clone())?;
        let mut tracer = traced.then(|| Tracer::new(CacheMode::On));
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

/// Runs both envs for about `seconds` of wall time in all and prints their rates, the ratio
/// (traced / untraced env-steps per second) on the last line.
#[allow(clippy::disallowed_methods)]
pub fn traced_vs_untraced(params: &Params, seed: u64, seconds: f64) -> anyhow::Result<()> {
    let mut plain = Stepper::new(params, seed, false)?;
    let mut traced = Stepper::new(params, seed, true)?;
    // Warm up both (caches, allocations) before measuring.
    plain.block(BLOCK_STEPS)?;
    traced.block(BLOCK_STEPS)?;
    let (mut plain_s, mut traced_s, mut blocks) = (0.0, 0.0, 0u64);
    let mut cpu = true;
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    while start.elapsed() < budget || blocks == 0 {
        let (p, pc) = timed(|| plain.block(BLOCK_STEPS))?;
        let (t, tc) = timed(|| traced.block(BLOCK_STEPS))?;
        plain_s += p;
        traced_s += t;
        cpu &= pc && tc;
        blocks += 1;
    }
    let steps = blocks * BLOCK_STEPS;
    let (plain_rate, traced_rate) = (steps as f64 / plain_s, steps as f64 / traced_s);
    outln!(
        "{steps} steps each, alternating blocks of {BLOCK_STEPS}, timed by {}",
        if cpu { "thread CPU time" } else { "wall time" }
    );
    outln!(
        "untraced: {:.1} us/step, env-steps/s: {plain_rate:.0}",
        plain_s / steps as f64 * 1e6
    );
    outln!(
        "traced:   {:.1} us/step, env-steps/s: {traced_rate:.0} (tracing {:.1} us/step, {:.0}% of a step)",
        traced_s / steps as f64 * 1e6,
        (traced_s - plain_s) / steps as f64 * 1e6,
        100.0 * (traced_s - plain_s) / plain_s
    );
    outln!(
        "traced/untraced env-steps/s ratio: {:.2}",
        traced_rate / plain_rate
    );
    Ok(())
}
