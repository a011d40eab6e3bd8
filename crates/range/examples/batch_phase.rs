//! Where a batch loses against one env: the same seeds and steps (K steps of seeds
//! S0..S0+N), stepped either as one batch of N (`batch`) or one sub-env at a time (`serial`),
//! so the episode phases are equal and only the memory layout differs; `observed` is `batch`
//! with every buffer written after every step (`Batch::step_observed`, what the Python vector
//! env runs), `batch` writes only the masks (what `range bench --batch` reads). For cachegrind:
//! `valgrind --tool=cachegrind target/release/examples/batch_phase batch 1024 20`.

use std::time::Instant;

use lockstep_range::{ActionSampler, Batch, BufferData, JointAction, Params, Scenario, N_AGENTS};

fn run(n: usize, seed0: u64, steps: usize, threads: usize, observed: bool) -> u64 {
    let params = Params::new(Scenario::Ransomware);
    let mut batch = Batch::new(params, n, seed0, threads).expect("batch");
    let mut samplers: Vec<ActionSampler> = (0..n)
        .map(|i| ActionSampler::new(seed0 + i as u64))
        .collect();
    let masks: Vec<usize> = (0..N_AGENTS)
        .map(|a| batch.find(a, "action_mask").expect("mask"))
        .collect();
    let len = batch.params().mask_len();
    let mut joint = vec![JointAction::default(); n];
    for _ in 0..steps {
        for (i, j) in joint.iter_mut().enumerate() {
            for (a, b) in masks.iter().enumerate() {
                if let BufferData::I8(v) = batch.buffer(*b) {
                    j.0[a] = samplers[i].sample(a, &v[i * len..(i + 1) * len]);
                }
            }
        }
        if observed {
            batch.step_observed(&joint).expect("step");
        } else {
            batch.step(&joint).expect("step");
        }
    }
    (n * steps) as u64
}

#[allow(clippy::disallowed_methods)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: batch_phase batch|observed|serial N STEPS [THREADS]";
    let mode = args.get(1).expect(usage).as_str();
    let n: usize = args.get(2).expect(usage).parse().expect("N");
    let steps: usize = args.get(3).expect(usage).parse().expect("STEPS");
    let threads: usize = args.get(4).map_or(1, |t| t.parse().expect("THREADS"));
    let t0 = Instant::now();
    let total = match mode {
        "batch" => run(n, 0, steps, threads, false),
        "observed" => run(n, 0, steps, threads, true),
        "serial" => (0..n).map(|i| run(1, i as u64, steps, 1, true)).sum(),
        _ => panic!("{usage}"),
    };
    let s = t0.elapsed().as_secs_f64();
    println!("{mode} n {n} steps {steps}: {total} env-steps in {s:.2} s, {:.0} env-steps/s (resets included)", total as f64 / s);
}
