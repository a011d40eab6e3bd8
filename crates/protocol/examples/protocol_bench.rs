//! Steps per second of CartPole-v1 served through the Python adapter and driven by lockstep,
//! against the same env stepped in plain Python, in the same run.
//!
//! `cargo run --release -p lockstep --example protocol_bench -- [STEPS [ROUNDS]]` with `LOCKSTEP_PYTHON`
//! naming the interpreter and `PYTHONPATH` holding python/ (scripts/bench-protocol sets both).
//! The last line is the ratio. With `LOCKSTEP_BENCH_SESSION=1` the served env is an instance
//! of a trial's session (`lockstep/2`, where the adapter runs each instance on its own
//! thread) instead of a `lockstep/1` child of its own.

use std::process::Command;
use std::time::Instant;

use lockstep::actions::ActionSampler;
use lockstep::env::EnvFactory;
use lockstep_canon::Value;
use lockstep_protocol::{ProcessEnvFactory, ProcessOptions};

const PLAIN: &str = r#"
import sys, time, gymnasium
n = int(sys.argv[1])
env = gymnasium.make("CartPole-v1")
env.reset(seed=0)
env.action_space.seed(0)
sample, step, reset = env.action_space.sample, env.step, env.reset
start = time.perf_counter()
for _ in range(n):
    obs, r, term, trunc, info = step(sample())
    if term or trunc:
        reset()
print(n / (time.perf_counter() - start))
"#;

fn main() {
    if let Err(e) = run() {
        eprintln!("protocol_bench: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let steps: u64 = match std::env::args().nth(1) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("STEPS must be a number, got {s:?}"))?,
        None => 20_000,
    };
    let rounds: usize = match std::env::args().nth(2) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("ROUNDS must be a number, got {s:?}"))?,
        None => 5,
    };
    let python = std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut argv = vec![python.clone()];
    argv.extend(
        ["-m", "lockstep_adapter", "gymnasium", "CartPole-v1"]
            .iter()
            .map(|s| s.to_string()),
    );
    let factory = ProcessEnvFactory::new(argv, ProcessOptions::default());

    // Rounds alternate served and plain, so both see the same machine load. The best round of
    // each is the figure (contention only ever slows a round down); the median of the per-round
    // ratios is printed too.
    let (mut served_best, mut plain_best) = (0f64, 0f64);
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let served = served_rate(&factory, steps)?;
        let plain = plain_rate(&python, steps)?;
        println!(
            "round {round}: served {served:.0} steps/s, plain {plain:.0} steps/s, ratio {:.2}",
            served / plain
        );
        served_best = served_best.max(served);
        plain_best = plain_best.max(plain);
        ratios.push(served / plain);
    }
    ratios.sort_by(f64::total_cmp);
    println!("steps per round: {steps}, rounds: {rounds}");
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        // Ping-pong over pipes suffers from a busy machine far more than a plain loop does.
        println!(
            "load average (1 5 15 min): {}",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    println!("median per-round ratio: {:.2}", ratios[ratios.len() / 2]);
    println!("served (best round):                    {served_best:.0} steps/s");
    println!("plain Python (best round):              {plain_best:.0} steps/s");
    println!("ratio served/plain: {:.2}", served_best / plain_best);
    Ok(())
}

/// Steps/s of `steps` CartPole steps driven through the protocol (resets not counted as steps).
// A benchmark measures wall time by definition; nothing here reaches a trace.
#[allow(clippy::disallowed_methods)]
fn served_rate(factory: &ProcessEnvFactory, steps: u64) -> Result<f64, String> {
    let session = factory.session();
    let mut env = if std::env::var_os("LOCKSTEP_BENCH_SESSION").is_some_and(|v| v == "1") {
        session.make()
    } else {
        factory.make()
    }
    .map_err(|e| e.to_string())?;
    let mut sampler = ActionSampler::new(0, env.spec());
    let mut episodes = 1u64;
    let mut actions = sampler.sample(env.reset(0, &Value::Null).map_err(|e| e.to_string())?);
    let start = Instant::now();
    for _ in 0..steps {
        let t = env.step(&actions).map_err(|e| e.to_string())?;
        actions = if t.is_done() {
            episodes += 1;
            let t = env
                .reset(episodes, &Value::Null)
                .map_err(|e| e.to_string())?;
            sampler.sample(t)
        } else {
            sampler.sample(t)
        };
    }
    let rate = steps as f64 / start.elapsed().as_secs_f64();
    env.close().map_err(|e| e.to_string())?;
    Ok(rate)
}

/// Steps/s of the same env stepped by a plain Python loop (timed inside Python).
fn plain_rate(python: &str, steps: u64) -> Result<f64, String> {
    let out = Command::new(python)
        .args(["-c", PLAIN, &steps.to_string()])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "plain Python loop failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("plain Python loop printed no rate: {e}"))
}
