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

/// Runs the untraced env and one traced env per format for about `seconds` of wall time in
/// all and prints their rates, then each format's ratio (traced / untraced env-steps per
/// second), v3's (the cheapest) on the last line.
#[allow(clippy::disallowed_methods)]
pub fn traced_vs_untraced(params: &Params, seed: u64, seconds: f64) -> anyhow::Result<()> {
    let mut plain = Stepper::new(params, seed, None)?;
    let mut traced: Vec<(Format, Stepper, f64)> = Vec::new();
    for format in [Format::V1, Format::V2, Format::V3] {
        traced.push((format, Stepper::new(params, seed, Some(format))?, 0.0));
    }
    // Warm up every env (caches, allocations) before measuring.
    plain.block(BLOCK_STEPS)?;
    for (_, s, _) in &mut traced {
        s.block(BLOCK_STEPS)?;
    }
    let (mut plain_s, mut blocks) = (0.0, 0u64);
    let mut cpu = true;
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    while start.elapsed() < budget || blocks == 0 {
        let (p, pc) = timed(|| plain.block(BLOCK_STEPS))?;
        plain_s += p;
        cpu &= pc;
        for (_, s, total) in &mut traced {
            let (t, c) = timed(|| s.block(BLOCK_STEPS))?;
            *total += t;
            cpu &= c;
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
    for (format, _, s) in &traced {
        outln!(
            "traced {}: {:.1} us/step, env-steps/s: {:.0} (tracing {:.1} us/step, {:.0}% of a step)",
            format_label(*format),
            per_step(*s),
            steps as f64 / s,
            per_step(s - plain_s),
            100.0 * (s - plain_s) / plain_s
        );
    }
    outln!("(v1: the default format, what checks and golden files use; v2: one BLAKE3 hash per step; v3: v2 with XXH3-128; lockstep trace --format v1|v2|v3)");
    for (format, _, s) in &traced {
        outln!(
            "traced {}/untraced env-steps/s ratio: {:.2}",
            format_label(*format),
            plain_s / s
        );
    }
    Ok(())
}

fn format_label(format: Format) -> &'static str {
    match format {
        Format::V1 => "v1",
        Format::V2 => "v2",
        Format::V3 => "v3",
    }
}
