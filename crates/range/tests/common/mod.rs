//! Helpers shared by the range's integration tests.
#![allow(dead_code)]

use lockstep::env::{ArrayData, Transition};
use lockstep_range::{ActionSampler, JointAction, Params, RangeEnv, Scenario, AGENTS, N_AGENTS};
use sha2::{Digest, Sha256};

/// Feeds everything a transition shows into the hasher: per agent (sorted) every observation
/// (sorted keys) as little-endian bytes, reward bits, flags, the info's debug form; then logs.
pub fn absorb(h: &mut Sha256, t: &Transition) {
    for (name, a) in &t.agents {
        h.update(name.as_bytes());
        for (k, arr) in &a.obs {
            h.update(k.as_bytes());
            arr.with_le_bytes(|b| h.update(b));
        }
        h.update(a.reward.to_bits().to_le_bytes());
        h.update([u8::from(a.terminated), u8::from(a.truncated)]);
        absorb_value(h, &a.info);
    }
    for l in &t.logs {
        h.update(l.as_bytes());
        h.update([0]);
    }
}

/// Feeds a JSON value as tagged raw data (float bits, not text), so the digest cannot move
/// with a float formatter.
pub fn absorb_value(h: &mut Sha256, v: &lockstep_canon::Value) {
    use lockstep_canon::{Number, Value};
    match v {
        Value::Null => h.update([0]),
        Value::Bool(b) => h.update([1, u8::from(*b)]),
        Value::Number(Number::Int(i)) => {
            h.update([2]);
            h.update(i.to_le_bytes());
        }
        Value::Number(Number::BigInt(s)) => {
            h.update([3]);
            h.update(s.as_bytes());
        }
        Value::Number(Number::Float(f)) => {
            h.update([4]);
            h.update(f.to_bits().to_le_bytes());
        }
        Value::String(s) => {
            h.update([5]);
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        }
        Value::Array(a) => {
            h.update([6]);
            h.update((a.len() as u64).to_le_bytes());
            for x in a {
                absorb_value(h, x);
            }
        }
        Value::Object(m) => {
            h.update([7]);
            h.update((m.len() as u64).to_le_bytes());
            for (k, x) in m {
                h.update((k.len() as u64).to_le_bytes());
                h.update(k.as_bytes());
                absorb_value(h, x);
            }
        }
    }
}

pub fn mask(t: &Transition, agent: usize) -> Vec<i8> {
    match t.agents[AGENTS[agent]].obs["action_mask"].data() {
        ArrayData::I8(v) => v.clone(),
        _ => panic!("mask is int8"),
    }
}

/// Plays up to `steps` steps with the seeded random sampler; returns the hex digest.
pub fn digest(params: &Params, seed: u64, steps: usize) -> String {
    let mut env = RangeEnv::new(params.clone()).unwrap();
    let mut h = Sha256::new();
    absorb(&mut h, env.reset_with(seed, params.clone()).unwrap());
    let mut sampler = ActionSampler::new(seed);
    for _ in 0..steps {
        let joint = sample_joint(&mut sampler, env.transition());
        absorb(&mut h, env.step_joint(&joint).unwrap());
        if env.core().done() {
            break;
        }
    }
    hex(&h.finalize())
}

pub fn sample_joint(sampler: &mut ActionSampler, t: &Transition) -> JointAction {
    let mut j = JointAction::default();
    for a in 0..N_AGENTS {
        j.0[a] = sampler.sample(a, &mask(t, a));
    }
    j
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parameter sets covering every scenario, each preset, and the optional pcap and
/// node_features observations.
pub fn matrix() -> Vec<Params> {
    let mut out = Vec::new();
    for s in lockstep_range::SCENARIOS {
        out.push(Params::new(s));
        for p in lockstep_range::PRESETS {
            out.push(Params::new(s).with_preset(p).unwrap());
        }
    }
    let mut p = Params::new(Scenario::OtStuxnet)
        .with_preset("hard")
        .unwrap();
    p.pcap = true;
    p.node_features = true;
    out.push(p);
    out
}

/// Info equality that tells -0.0 from 0.0 (the Debug form does), as canonical JSON does.
pub fn same_info(a: &lockstep_canon::Value, b: &lockstep_canon::Value) -> bool {
    format!("{a:?}") == format!("{b:?}")
}
