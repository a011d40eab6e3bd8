//! Parity of the batched backend: sub-env i of a batch is bit-identical to a single env with
//! the same seeds and actions, for every scenario, batch size and thread count, across
//! auto-resets.

mod common;

use common::same_info;
use lockstep_range::{
    ActionSampler, Batch, BufferData, JointAction, Params, RangeEnv, AGENTS, N_AGENTS, N_TYPES,
    SCENARIOS,
};

/// Scenario x preset cases, some with short episodes (auto-reset) and the optional
/// observations.
fn cases() -> Vec<Params> {
    let mut out = Vec::new();
    for (k, s) in SCENARIOS.into_iter().enumerate() {
        let preset = ["easy", "medium", "hard"][k % 3];
        let mut p = Params::new(s).with_preset(preset).unwrap();
        p.max_ticks = [25, 40, 200][k % 3];
        if k == 4 {
            p.pcap = true;
            p.node_features = true;
        }
        out.push(p);
    }
    out
}

fn thread_counts() -> Vec<usize> {
    let machine = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut t = vec![1, 2, machine, 5];
    t.sort_unstable();
    t.dedup();
    t
}

/// Sub-env `i`'s slice of buffer `b`, as raw little-endian bytes.
fn slice_bytes(batch: &Batch, b: usize, i: usize) -> Vec<u8> {
    let len: usize = batch.buffers()[b].shape.iter().product();
    match batch.buffer(b) {
        BufferData::F32(v) => v[i * len..(i + 1) * len]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect(),
        BufferData::I8(v) => v[i * len..(i + 1) * len].iter().map(|x| *x as u8).collect(),
    }
}

/// Every observation buffer of every sub-env of `got` equals `want`'s, byte for byte.
fn assert_same_buffers(got: &Batch, want: &Batch, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for b in 0..got.buffers().len() {
        for i in 0..got.len() {
            assert_eq!(
                slice_bytes(got, b, i),
                slice_bytes(want, b, i),
                "{what} buffer {b} sub-env {i}"
            );
        }
    }
}

/// Each sub-env's joint action drawn by its sampler from `batch`'s current masks, as the
/// batch's own `step_sampled` draws it.
fn sampled_joint(samplers: &mut [ActionSampler], batch: &Batch) -> Vec<JointAction> {
    samplers
        .iter_mut()
        .enumerate()
        .map(|(i, sampler)| {
            let mut j = JointAction::default();
            for a in 0..N_AGENTS {
                j.0[a] = sampler.sample(a, &mask_of(batch, i, a));
            }
            j
        })
        .collect()
}

fn mask_of(batch: &Batch, i: usize, agent: usize) -> Vec<i8> {
    let b = batch.find(agent, "action_mask").unwrap();
    let len: usize = batch.buffers()[b].shape.iter().product();
    match batch.buffer(b) {
        BufferData::I8(v) => v[i * len..(i + 1) * len].to_vec(),
        _ => panic!("action_mask is int8"),
    }
}

/// Checks that sub-env `i` shows exactly what the single env shows.
fn assert_same(batch: &Batch, i: usize, single: &RangeEnv, what: &str) {
    let t = single.transition();
    for (b, spec) in batch.buffers().iter().enumerate() {
        let arr = &t.agents[AGENTS[spec.agent]].obs[spec.key];
        assert_eq!(
            slice_bytes(batch, b, i),
            arr.to_le_bytes(),
            "{what}: sub-env {i} {}/{}",
            AGENTS[spec.agent],
            spec.key
        );
    }
    for (a, name) in AGENTS.iter().enumerate() {
        let s = &t.agents[*name];
        assert_eq!(
            batch.rewards()[i * N_AGENTS + a].to_bits(),
            s.reward.to_bits(),
            "{what}: reward"
        );
        assert_eq!(batch.terminated()[i], s.terminated, "{what}");
        assert_eq!(batch.truncated()[i], s.truncated, "{what}");
        assert!(
            same_info(&batch.transition(i).agents[*name].info, &s.info),
            "{what}: info"
        );
    }
    assert_eq!(batch.transition(i).logs, t.logs, "{what}: logs");
}

#[test]
// Sub-env i, its single env, its seed and its sampler are all indexed by i.
#[allow(clippy::needless_range_loop)]
fn sub_envs_equal_single_envs_for_every_size_and_thread_count() {
    let mut resets = 0;
    for p in cases() {
        for n in [1usize, 3, 7] {
            for threads in thread_counts() {
                let what = format!("{} n={n} threads={threads}", p.scenario.name());
                let seed0 = 40;
                let mut batch = Batch::new(p.clone(), n, seed0, threads).unwrap();
                let mut singles: Vec<RangeEnv> = (0..n)
                    .map(|i| {
                        let mut e = RangeEnv::new(p.clone()).unwrap();
                        e.reset_with(seed0 + i as u64, p.clone()).unwrap();
                        e
                    })
                    .collect();
                let mut seeds: Vec<u64> = (0..n).map(|i| seed0 + i as u64).collect();
                let mut samplers: Vec<ActionSampler> = (0..n)
                    .map(|i| ActionSampler::new(seed0 + i as u64))
                    .collect();
                for i in 0..n {
                    assert_same(&batch, i, &singles[i], &what);
                }
                for _ in 0..60 {
                    let mut joint = vec![JointAction::default(); n];
                    for (i, j) in joint.iter_mut().enumerate() {
                        for a in 0..N_AGENTS {
                            let m = mask_of(&batch, i, a);
                            assert_eq!(m.len(), N_TYPES + p.max_hosts);
                            j.0[a] = samplers[i].sample(a, &m);
                        }
                    }
                    batch.step(&joint).unwrap();
                    batch.observe().unwrap();
                    for i in 0..n {
                        if singles[i].transition().is_done() {
                            // The documented rule: episode k of sub-env i has seed
                            // seed0 + i + k * n.
                            seeds[i] += n as u64;
                            singles[i].reset_with(seeds[i], p.clone()).unwrap();
                            resets += 1;
                        } else {
                            singles[i].step_joint(&joint[i]).unwrap();
                        }
                        assert_eq!(batch.seed(i), seeds[i], "{what}");
                        assert_same(&batch, i, &singles[i], &what);
                    }
                }
            }
        }
    }
    assert!(resets > 0, "no case exercised an auto-reset");
}

#[test]
fn bad_batches_are_errors() {
    let p = Params::new(lockstep_range::Scenario::Ransomware);
    assert!(Batch::new(p.clone(), 0, 0, 1).is_err());
    assert!(Batch::new(p.clone(), 2, u64::MAX, 1).is_err());
    let mut b = Batch::new(p, 2, 0, 2).unwrap();
    assert!(b.step(&[JointAction::default()]).is_err());
    // Buffers are [N, ...]: the mask buffer holds both sub-envs.
    let m = b.find(0, "action_mask").unwrap();
    match b.buffer(m) {
        BufferData::I8(v) => assert_eq!(v.len(), 2 * (N_TYPES + 100)),
        _ => panic!(),
    }
}

#[test]
fn sampled_steps_equal_sampling_then_stepping_for_every_thread_count() {
    // step_sampled draws each sub-env's actions from its masks on the stepping threads; the
    // same samplers driven from outside with step must give the same buffers and flags.
    for p in cases() {
        for threads in thread_counts() {
            let n = 5;
            let seed0 = 7;
            let mut inside = Batch::new(p.clone(), n, seed0, threads).unwrap();
            let mut outside = Batch::new(p.clone(), n, seed0, 1).unwrap();
            let mut s_in: Vec<ActionSampler> =
                (0..n).map(|i| ActionSampler::new(100 + i as u64)).collect();
            let mut s_out = s_in.clone();
            for step in 0..50 {
                inside.step_sampled(&mut s_in).unwrap();
                let joint = sampled_joint(&mut s_out, &outside);
                outside.step_observed(&joint).unwrap();
                inside.observe().unwrap();
                let what = format!("{} threads={threads} step {step}", p.scenario.name());
                assert_same_buffers(&inside, &outside, &what);
                assert_eq!(inside.rewards(), outside.rewards(), "{what}");
                assert_eq!(inside.terminated(), outside.terminated(), "{what}");
                assert_eq!(inside.truncated(), outside.truncated(), "{what}");
                assert_eq!(
                    (0..n).map(|i| inside.seed(i)).collect::<Vec<_>>(),
                    (0..n).map(|i| outside.seed(i)).collect::<Vec<_>>()
                );
            }
        }
    }
    let p = Params::new(lockstep_range::Scenario::Ransomware);
    let mut b = Batch::new(p, 2, 0, 1).unwrap();
    assert!(b.step_sampled(&mut [ActionSampler::new(0)]).is_err());
}

/// Observations written only when read: a batch observed every k-th step holds, whenever it
/// is observed, the bytes of a batch observed after every step, for every thread count; its
/// masks, rewards and flags are current at every step without observing. Covers several steps
/// and auto-resets left unshown (the embedding windows rebuilt, the `adj_matrix` and `obs`
/// rows written against what their slots hold).
#[test]
fn observing_late_equals_observing_every_step() {
    let mut resets_unshown = 0;
    for p in cases() {
        for threads in thread_counts() {
            for every in [2usize, 3, 7] {
                let n = 4;
                let seed0 = 11;
                let mut eager = Batch::new(p.clone(), n, seed0, 1).unwrap();
                let mut lazy = Batch::new(p.clone(), n, seed0, threads).unwrap();
                let mut samplers: Vec<ActionSampler> =
                    (0..n).map(|i| ActionSampler::new(300 + i as u64)).collect();
                let what = format!("{} threads={threads} every {every}", p.scenario.name());
                let mut reset_since_shown = false;
                for step in 1..=70 {
                    let joint = sampled_joint(&mut samplers, &eager);
                    let resets = (0..n).any(|i| eager.terminated()[i] || eager.truncated()[i]);
                    eager.step_observed(&joint).unwrap();
                    lazy.step(&joint).unwrap();
                    reset_since_shown |= resets;
                    for i in 0..n {
                        for a in 0..N_AGENTS {
                            assert_eq!(mask_of(&lazy, i, a), mask_of(&eager, i, a), "{what}");
                        }
                    }
                    assert_eq!(lazy.rewards(), eager.rewards(), "{what}");
                    assert_eq!(lazy.terminated(), eager.terminated(), "{what}");
                    assert_eq!(lazy.truncated(), eager.truncated(), "{what}");
                    if step % every != 0 {
                        assert!(!lazy.is_observed());
                        continue;
                    }
                    resets_unshown += usize::from(reset_since_shown);
                    reset_since_shown = false;
                    lazy.observe().unwrap();
                    assert_same_buffers(&lazy, &eager, &format!("{what} step {step}"));
                }
            }
        }
    }
    assert!(resets_unshown > 0, "no auto-reset was left unshown");
}

/// A stepped batch does not hand out an observation it has not written.
#[test]
#[should_panic(expected = "call Batch::observe")]
fn stale_buffers_are_not_handed_out() {
    let p = Params::new(lockstep_range::Scenario::Ransomware);
    let mut b = Batch::new(p, 2, 0, 1).unwrap();
    let obs = b.find(0, "obs").unwrap();
    b.step(&[JointAction::default(); 2]).unwrap();
    let _ = b.buffer(obs);
}
