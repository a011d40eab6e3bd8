//! Env-steps per second with seeded random valid actions, every default observation written
//! into the reusable buffers, and the reset time (core and env).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lockstep::env::ArrayData;
use lockstep_range::{sim, ActionSampler, JointAction, Params, RangeEnv, Scenario, AGENTS};

fn bench_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("range");
    g.throughput(Throughput::Elements(1));
    for scenario in [Scenario::Ransomware, Scenario::OtStuxnet] {
        let params = Params::new(scenario);
        let mut env = RangeEnv::new(params.clone()).unwrap();
        let mut seed = 0u64;
        env.reset_with(seed, params.clone()).unwrap();
        let mut sampler = ActionSampler::new(seed);
        let mut masks = vec![Vec::new(); AGENTS.len()];
        g.bench_function(format!("step/{}", scenario.name()), |b| {
            b.iter(|| {
                let mut joint = JointAction::default();
                for (a, m) in masks.iter_mut().enumerate() {
                    if let ArrayData::I8(v) =
                        env.transition().agents[AGENTS[a]].obs["action_mask"].data()
                    {
                        m.clone_from(v);
                    }
                    joint.0[a] = sampler.sample(a, m);
                }
                env.step_joint(&joint).unwrap();
                if env.core().done() {
                    seed += 1;
                    env.reset_with(seed, params.clone()).unwrap();
                }
            })
        });
    }
    let params = Params::new(Scenario::Ransomware);
    let mut seed = 0u64;
    g.bench_function("reset/core", |b| {
        b.iter(|| {
            seed += 1;
            sim::reset(seed, &params)
        })
    });
    let mut env = RangeEnv::new(params.clone()).unwrap();
    g.bench_function("reset/env", |b| {
        b.iter(|| {
            seed += 1;
            env.reset_with(seed, params.clone()).unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench_step);
criterion_main!(benches);
