//! `lockstep range`: play and benchmark the built-in network-defence environment.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use lockstep::actions::ActionSampler as LockstepSampler;
use lockstep::env::Env;
use lockstep::trace::{CacheMode, Tracer};
use lockstep_range::{
    sim, ActionSampler, JointAction, Params, RangeEnv, Scenario, AGENTS, N_AGENTS,
};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Play episodes and print a summary per episode.
    Run(RunArgs),
    /// Step with seeded random valid actions and print env-steps per second (last line).
    Bench(BenchArgs),
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// Uniform over the action mask, from the seed's `actions/<agent>` streams.
    Random,
    /// The deterministic heuristic of lockstep_range::scripted_action.
    Scripted,
}

#[derive(clap::Args)]
struct RunArgs {
    /// One of: ransomware, apt_espionage, cloud_hybrid, iot_grid, ot_stuxnet.
    #[arg(long)]
    scenario: String,
    /// Seed of the first episode; episode k uses seed + k.
    #[arg(long)]
    seed: u64,
    /// easy, medium or hard.
    #[arg(long)]
    preset: Option<String>,
    /// Overrides the truncation tick.
    #[arg(long)]
    max_ticks: Option<u64>,
    #[arg(long, value_enum, default_value_t = Policy::Random)]
    policy: Policy,
    #[arg(long, default_value_t = 1)]
    episodes: u64,
    /// Also print each episode's trace digest (lockstep's framed digest of every
    /// observation, reward, flag, info and log line; see docs/trace.md).
    #[arg(long)]
    trace: bool,
}

#[derive(clap::Args)]
struct BenchArgs {
    #[arg(long, default_value = "ransomware")]
    scenario: String,
    /// Seconds of stepping.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    #[arg(long)]
    preset: Option<String>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also step a second env traced, in alternating blocks, and print both env-steps/s and
    /// their ratio (traced / untraced, last line).
    #[arg(long)]
    trace: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Run(a) => run_episodes(a),
        Command::Bench(a) => bench(a),
    }
}

fn params_for(scenario: &str, preset: Option<&str>) -> anyhow::Result<Params> {
    let mut p = Params::new(Scenario::from_name(scenario)?);
    if let Some(pr) = preset {
        p = p.with_preset(pr)?;
    }
    Ok(p)
}

fn run_episodes(a: RunArgs) -> anyhow::Result<ExitCode> {
    let mut params = params_for(&a.scenario, a.preset.as_deref())?;
    if let Some(t) = a.max_ticks {
        params.max_ticks = t;
    }
    params.validate()?;
    println!(
        "lockstep {} range run: scenario {} preset {} seed {} policy {}",
        env!("CARGO_PKG_VERSION"),
        a.scenario,
        a.preset.as_deref().unwrap_or("-"),
        a.seed,
        match a.policy {
            Policy::Random => "random",
            Policy::Scripted => "scripted",
        }
    );
    let mut env = RangeEnv::new(params.clone()).context("building the range")?;
    for k in 0..a.episodes {
        let seed = a
            .seed
            .checked_add(k)
            .context("seed + episode overflows u64")?;
        let start = env.reset_with(seed, params.clone())?;
        let mut tracer = Tracer::new(CacheMode::On);
        if a.trace {
            tracer.record(start)?;
        }
        // The random policy is lockstep's own action sampler through the Env trait, so
        // `--trace` prints the digest `lockstep trace` and golden files compute for the same
        // scenario, parameters and seed.
        let mut sampler = LockstepSampler::new(seed, env.spec());
        let mut totals = [0.0f64; N_AGENTS];
        let mut steps = 0u64;
        let mut invalid = 0u64;
        loop {
            match a.policy {
                Policy::Random => {
                    let actions = sampler.sample(env.transition());
                    env.step(&actions).map_err(|e| anyhow::anyhow!("{e}"))?;
                }
                Policy::Scripted => {
                    let mut joint = JointAction::default();
                    for ag in 0..N_AGENTS {
                        joint.0[ag] = lockstep_range::scripted_action(env.core(), env.params(), ag);
                    }
                    env.step_joint(&joint).map_err(|e| anyhow::anyhow!("{e}"))?;
                }
            }
            if a.trace {
                tracer.record(env.transition())?;
            }
            steps += 1;
            let core = env.core();
            for (ag, t) in totals.iter_mut().enumerate() {
                *t += core.last.rewards[ag];
                invalid += u64::from(core.last.invalid[ag]);
            }
            if core.done() {
                break;
            }
        }
        let core = env.core();
        let outcome = if core.terminated {
            "terminated"
        } else {
            "truncated"
        };
        let compromised = core.hosts.iter().filter(|h| h.compromised()).count();
        let active = core.hosts.iter().filter(|h| h.active).count();
        let rewards: Vec<String> = AGENTS
            .iter()
            .zip(totals)
            .map(|(n, r)| format!("{n}={r}"))
            .collect();
        println!(
            "episode {k} seed {seed}: {outcome} at tick {} after {steps} steps; hosts {compromised}/{active} compromised; invalid actions {invalid}; rewards {}",
            core.tick,
            rewards.join(" ")
        );
        if a.trace {
            println!("episode {k} trace {}", tracer.episode().to_hex());
        }
    }
    Ok(ExitCode::SUCCESS)
}

// A benchmark measures wall time on purpose; nothing it times reaches an episode or a digest.
#[allow(clippy::disallowed_methods)]
fn bench(a: BenchArgs) -> anyhow::Result<ExitCode> {
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= 86_400.0) {
        anyhow::bail!(
            "--seconds {} must be a number of seconds in (0, 86400]",
            a.seconds
        );
    }
    let params = params_for(&a.scenario, a.preset.as_deref())?;
    params.validate()?;
    if a.trace {
        super::range_bench::traced_vs_untraced(&params, a.seed, a.seconds)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Reset time of the pure core and of the env (which also renders every observation).
    let n = 2000u64;
    let t0 = Instant::now();
    for s in 0..n {
        std::hint::black_box(sim::reset(s, &params));
    }
    let core_reset = t0.elapsed().as_secs_f64() / n as f64;
    let mut env = RangeEnv::new(params.clone())?;
    let t0 = Instant::now();
    for s in 0..n {
        env.reset_with(s, params.clone())?;
    }
    let env_reset = t0.elapsed().as_secs_f64() / n as f64;
    println!(
        "reset: core {:.1} us, env (with observations) {:.1} us",
        core_reset * 1e6,
        env_reset * 1e6
    );

    let mut seed = a.seed;
    env.reset_with(seed, params.clone())?;
    let mut sampler = ActionSampler::new(seed);
    let mut masks = vec![Vec::new(); N_AGENTS];
    let budget = Duration::from_secs_f64(a.seconds);
    let cpu0 = thread_cpu_ns();
    let start = Instant::now();
    let (mut steps, mut episodes) = (0u64, 0u64);
    while start.elapsed() < budget {
        for _ in 0..256 {
            let mut joint = JointAction::default();
            for (ag, m) in masks.iter_mut().enumerate() {
                if let lockstep::env::ArrayData::I8(v) =
                    env.transition().agents[AGENTS[ag]].obs["action_mask"].data()
                {
                    m.clone_from(v);
                }
                joint.0[ag] = sampler.sample(ag, m);
            }
            env.step_joint(&joint).map_err(|e| anyhow::anyhow!("{e}"))?;
            steps += 1;
            if env.core().done() {
                seed += 1;
                episodes += 1;
                env.reset_with(seed, params.clone())?;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "scenario {} steps {steps} episodes {episodes} seconds {secs:.2}",
        a.scenario
    );
    if let (Some(c0), Some(c1)) = (cpu0, thread_cpu_ns()) {
        let cpu = (c1.saturating_sub(c0)) as f64 / 1e9;
        if cpu > 0.0 {
            println!(
                "cpu seconds {cpu:.2} ({:.0}% of wall); env-steps per cpu-second: {:.0}",
                100.0 * cpu / secs,
                steps as f64 / cpu
            );
        }
    }
    println!("env-steps/s: {:.0}", steps as f64 / secs);
    Ok(ExitCode::SUCCESS)
}

/// Nanoseconds this thread has run on a CPU (Linux `/proc/thread-self/schedstat`), so that a
/// benchmark on a shared machine can say how much of the wall time it actually had.
pub(super) fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}
