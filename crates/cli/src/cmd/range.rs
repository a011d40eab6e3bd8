//! `lockstep range`: play and benchmark the built-in network-defence environment.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use lockstep::actions::ActionSampler as LockstepSampler;
use lockstep::env::Env;
use lockstep::trace::{CacheMode, Tracer};
use lockstep_range::{
    sim, ActionSampler, Batch, JointAction, Params, RangeEnv, Scenario, AGENTS, N_AGENTS,
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
    /// Print the action catalogue: every id each team uses, with its name, technique and
    /// mean duration in ticks.
    Actions(ActionsArgs),
}

#[derive(clap::Args)]
struct ActionsArgs {
    /// One JSON object per line: {"team","id","name","mitre","duration"}.
    #[arg(long)]
    json: bool,
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
    /// RNG seed of the first episode; episode k uses seed + k.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Difficulty preset: easy, medium or hard (default: the scenario's own parameters).
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
    /// Step N sub-envs together (seeds SEED..SEED+N-1) and print `SEED DIGEST` per sub-env:
    /// each digest equals `lockstep trace` for that seed. Needs --trace and the random policy.
    #[arg(long)]
    batch: Option<usize>,
    /// With --batch: steps after the reset (fewer when a sub-env's episode ends first).
    #[arg(long)]
    steps: Option<u64>,
    /// With --batch: threads stepping the batch.
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// One of: ransomware, apt_espionage, cloud_hybrid, iot_grid, ot_stuxnet.
    #[arg(long, default_value = "ransomware")]
    scenario: String,
    /// Seconds of stepping.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Difficulty preset: easy, medium or hard (default: the scenario's own parameters).
    #[arg(long)]
    preset: Option<String>,
    /// RNG seed of the first episode's reset.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Step a batch of N sub-envs (lockstep_range::Batch) instead of one env.
    #[arg(long)]
    batch: Option<usize>,
    /// With --batch: threads stepping the batch.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// With --batch: bring every observation buffer up to date after each step
    /// (`Batch::observe`, what a learner reading all of them pays); without it only the masks
    /// the actions are drawn from are written.
    #[arg(long, requires = "batch")]
    observe: bool,
    /// Also step a second env traced, in alternating blocks, and print both env-steps/s and
    /// their ratio (traced / untraced, last line).
    #[arg(long, conflicts_with = "batch")]
    trace: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Run(a) => run_episodes(a),
        Command::Bench(a) => bench(a),
        Command::Actions(a) => actions(a),
    }
}

/// One catalogue entry as `range actions --json` prints it.
#[derive(serde::Serialize)]
struct CatalogueEntry {
    team: &'static str,
    id: usize,
    name: &'static str,
    mitre: &'static str,
    duration: f64,
}

fn actions(a: ActionsArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for (team, kinds) in [
        ("red", &lockstep_range::actions::RED),
        ("blue", &lockstep_range::actions::BLUE),
    ] {
        for (id, k) in kinds.iter().enumerate().filter(|(_, k)| k.used()) {
            let e = CatalogueEntry {
                team,
                id,
                name: k.name,
                mitre: k.technique,
                duration: k.duration,
            };
            if a.json {
                writeln!(out, "{}", serde_json::to_string(&e)?)?;
            } else {
                writeln!(
                    out,
                    "{:<4} {:>2}  {:<26} {:<10} {}",
                    e.team, e.id, e.name, e.mitre, e.duration
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
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
    if let Some(n) = a.batch {
        return run_batch(&a, params, n);
    }
    if a.steps.is_some() || a.threads.is_some() {
        anyhow::bail!("--steps and --threads apply only with --batch");
    }
    outln!(
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
        outln!(
            "episode {k} seed {seed}: {outcome} at tick {} after {steps} steps; hosts {compromised}/{active} compromised; invalid actions {invalid}; rewards {}",
            core.tick,
            rewards.join(" ")
        );
        if a.trace {
            outln!("episode {k} trace {}", tracer.episode().to_hex());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `range run --batch N --trace`: one `SEED DIGEST` line per sub-env, each sub-env driven by
/// lockstep's action sampler for its seed (as `lockstep trace` drives a single env).
fn run_batch(a: &RunArgs, params: Params, n: usize) -> anyhow::Result<ExitCode> {
    if !a.trace {
        anyhow::bail!("--batch prints one trace digest per sub-env: add --trace");
    }
    if a.policy != Policy::Random {
        anyhow::bail!("--batch drives sub-envs with the random policy only");
    }
    if a.episodes != 1 {
        anyhow::bail!("--episodes does not apply with --batch (each sub-env plays one episode)");
    }
    let steps = a.steps.unwrap_or(100);
    let mut batch = Batch::new(params, n, a.seed, a.threads.unwrap_or(1))?;
    let mut samplers = Vec::with_capacity(n);
    let mut tracers = Vec::with_capacity(n);
    // Each sub-env's transition, rendered once per step: recorded, then sampled from.
    let mut shown = Vec::with_capacity(n);
    for i in 0..n {
        samplers.push(LockstepSampler::new(batch.seed(i), batch.spec()));
        let mut t = Tracer::new(CacheMode::On);
        let tr = batch.transition(i);
        t.record(&tr)?;
        tracers.push(t);
        shown.push(tr);
    }
    let mut live = vec![true; n];
    let mut joint = vec![JointAction::default(); n];
    for _ in 0..steps {
        if !live.iter().any(|l| *l) {
            break;
        }
        for i in (0..n).filter(|&i| live[i]) {
            let actions = samplers[i].sample(&shown[i]);
            joint[i] = lockstep_range::joint_from_actions(&actions)?;
        }
        batch.step(&joint)?;
        for (i, (l, t)) in live.iter_mut().zip(tracers.iter_mut()).enumerate() {
            if *l {
                shown[i] = batch.transition(i);
                t.record(&shown[i])?;
                *l = !shown[i].is_done();
            }
        }
    }
    let mut out = std::io::stdout().lock();
    for (i, t) in tracers.iter().enumerate() {
        use std::io::Write;
        writeln!(out, "{} {}", a.seed + i as u64, t.episode().to_hex())?;
    }
    Ok(ExitCode::SUCCESS)
}

// A benchmark measures wall time on purpose; nothing it times reaches an episode or a digest.
#[allow(clippy::disallowed_methods)]
fn bench_batch(a: &BenchArgs, params: Params, n: usize) -> anyhow::Result<ExitCode> {
    let mut batch = Batch::new(params, n, a.seed, a.threads)?;
    let mut samplers: Vec<ActionSampler> = (0..n)
        .map(|i| ActionSampler::new(a.seed + i as u64))
        .collect();
    let budget = Duration::from_secs_f64(a.seconds);
    let cpu0 = process_cpu_s();
    let start = Instant::now();
    let mut steps = 0u64;
    while start.elapsed() < budget {
        // Each sub-env's actions are drawn from its masks on the thread that steps it.
        batch.step_sampled(&mut samplers)?;
        if a.observe {
            batch.observe()?;
        }
        steps += n as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    outln!(
        "scenario {} batch {n} threads {} steps {steps} seconds {secs:.2}{}",
        a.scenario,
        a.threads,
        if a.observe { " observed" } else { "" }
    );
    if let (Some(c0), Some(c1)) = (cpu0, process_cpu_s()) {
        let cpu = c1 - c0;
        if cpu > 0.0 {
            outln!(
                "cpu seconds {cpu:.2} (process, {:.0}% of wall); env-steps per cpu-second: {:.0}",
                100.0 * cpu / secs,
                steps as f64 / cpu
            );
        }
    }
    outln!("env-steps/s: {:.0}", steps as f64 / secs);
    Ok(ExitCode::SUCCESS)
}

/// CPU seconds of the whole process (user + system, `/proc/self/stat`, clock ticks of 1/100 s).
fn process_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
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
    if let Some(n) = a.batch {
        return bench_batch(&a, params, n);
    }
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
    outln!(
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
    outln!(
        "scenario {} steps {steps} episodes {episodes} seconds {secs:.2}",
        a.scenario
    );
    if let (Some(c0), Some(c1)) = (cpu0, thread_cpu_ns()) {
        let cpu = (c1.saturating_sub(c0)) as f64 / 1e9;
        if cpu > 0.0 {
            outln!(
                "cpu seconds {cpu:.2} ({:.0}% of wall); env-steps per cpu-second: {:.0}",
                100.0 * cpu / secs,
                steps as f64 / cpu
            );
        }
    }
    outln!("env-steps/s: {:.0}", steps as f64 / secs);
    Ok(ExitCode::SUCCESS)
}

/// Nanoseconds this thread has run on a CPU (Linux `/proc/thread-self/schedstat`), so that a
/// benchmark on a shared machine can say how much of the wall time it actually had.
pub(super) fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}
