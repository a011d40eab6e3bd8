//! Tests of formats v2, v3 (v2's layout with XXH3-128) and v4 (v3 with infos as their value
//! layout): the committed vectors (computed by scripts/trace-vectors.py, which shares no code
//! with the tracer), caches against from-scratch hashing, sensitivity. Every test but the
//! vectors runs for every format.

use super::*;
use crate::env::ArrayData;
use lockstep_canon::{Map, Number};

#[derive(serde::Deserialize)]
struct Vectors {
    format: String,
    transitions: Vec<TransitionRecord>,
    step_digests: Vec<Digest>,
    episode: Digest,
}

/// The formats the whole-step hasher computes.
const WHOLE_STEP: [Format; 3] = [Format::V2, Format::V3, Format::V4];

fn vectors_reproduce(json: &str, format: Format) {
    let v: Vectors = serde_json::from_str(json).unwrap();
    assert_eq!(v.format, format.as_str());
    assert_eq!(v.transitions.len(), v.step_digests.len());
    for mode in [CacheMode::On, CacheMode::Off] {
        let mut tracer = Tracer::with_format(format, mode);
        for (i, (rec, want)) in v.transitions.iter().zip(&v.step_digests).enumerate() {
            let t = rec.to_transition().unwrap();
            assert_eq!(
                tracer.record(&t).unwrap().digest,
                *want,
                "{mode:?} step {i}"
            );
        }
        assert_eq!(tracer.episode(), v.episode, "{mode:?}");
    }
}

#[test]
fn vectors_v2_reproduce() {
    vectors_reproduce(include_str!("vectors_v2.json"), Format::V2);
}

#[test]
fn vectors_v3_reproduce() {
    vectors_reproduce(include_str!("vectors_v3.json"), Format::V3);
}

#[test]
fn vectors_v4_reproduce() {
    vectors_reproduce(include_str!("vectors_v4.json"), Format::V4);
}

/// The same transitions give other digests in v2, v3 and v4 (none is another under a new
/// name).
#[test]
fn v2_v3_and_v4_digests_differ() {
    let t = base();
    let v2 = Tracer::with_format(Format::V2, CacheMode::On)
        .record(&t)
        .unwrap()
        .digest;
    let v3 = Tracer::with_format(Format::V3, CacheMode::On)
        .record(&t)
        .unwrap()
        .digest;
    assert_ne!(v2, v3);
    let v4 = Tracer::with_format(Format::V4, CacheMode::On)
        .record(&t)
        .unwrap()
        .digest;
    assert_ne!(v3, v4);
}

fn array(n: usize, seed: f32) -> Array {
    Array::new(
        &[n],
        ArrayData::F32((0..n).map(|i| i as f32 * 0.25 + seed).collect()),
    )
    .unwrap()
}

fn agent(obs: &[(&str, Array)], info: Value) -> AgentStep {
    AgentStep {
        obs: obs
            .iter()
            .map(|(k, a)| (k.to_string(), a.clone()))
            .collect(),
        reward: 0.5,
        terminated: false,
        truncated: false,
        info,
    }
}

fn info(tick: i64, x: f64) -> Value {
    let mut m = Map::new();
    m.insert("tick".into(), Value::Number(Number::Int(tick)));
    m.insert("x".into(), Value::Number(Number::Float(x)));
    m.insert("name".into(), Value::String("n\u{e9}".into()));
    Value::Object(m)
}

fn base() -> Transition {
    let mut t = Transition::default();
    t.agents.insert(
        "a".into(),
        agent(
            &[("big", array(5000, 0.0)), ("small", array(8, 1.0))],
            info(0, 0.0),
        ),
    );
    t.agents.insert(
        "b".into(),
        agent(
            &[("big", array(5000, 0.0)), ("small", array(8, 2.0))],
            info(0, 1.5),
        ),
    );
    t.logs = vec!["one".into()];
    t
}

/// Cached and from-scratch v2 tracing agree while large arrays change, change back, keep
/// their revision, are shared by agents or differ from the other agent's only by the sign of
/// a zero, and while infos change member by member.
#[test]
fn v2_cache_and_no_cache_agree() {
    for format in WHOLE_STEP {
        cache_and_no_cache_agree(format);
    }
}

fn cache_and_no_cache_agree(format: Format) {
    let mut t = base();
    let mut on = Tracer::with_format(format, CacheMode::On);
    let mut off = Tracer::with_format(format, CacheMode::Off);
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..30usize {
        {
            let a = t.agents.get_mut("a").unwrap();
            let big = a.obs.get_mut("big").unwrap();
            match i % 5 {
                0 => {
                    if let ArrayData::F32(v) = big.data_mut() {
                        v[4000] += 1.0;
                    }
                }
                1 => {
                    big.data_mut();
                }
                2 => {
                    if let ArrayData::F32(v) = big.data_mut() {
                        v[0] = if i % 2 == 0 { 0.0 } else { -0.0 };
                    }
                }
                _ => {}
            }
            a.info = info(i as i64 / 2, if i % 3 == 0 { -0.0 } else { 0.0 });
        }
        // Agent b: agent a's array under a fresh revision, or its own.
        let shared = t.agents["a"].obs["big"].clone();
        let b = t.agents.get_mut("b").unwrap();
        if i % 2 == 0 {
            let mut copy = shared;
            copy.data_mut();
            b.obs.insert("big".into(), copy);
        } else if let ArrayData::F32(v) = b.obs.get_mut("big").unwrap().data_mut() {
            v[i] = -v[i];
        }
        let got = on.record(&t).unwrap().digest;
        assert_eq!(got, off.record(&t).unwrap().digest, "{format:?} step {i}");
        // A fresh tracer at the same step index gives the same digest: no state leaks in.
        let mut fresh = Tracer::with_format(format, CacheMode::Off);
        fresh.steps = on.steps()[..i].to_vec();
        assert_eq!(fresh.record(&t).unwrap().digest, got, "{format:?} step {i}");
        seen.insert(got);
    }
    assert_eq!(on.episode(), off.episode());
    assert_eq!(seen.len(), 30, "every step index gives its own digest");
}

fn a(t: &mut Transition) -> &mut AgentStep {
    t.agents.get_mut("a").unwrap()
}

/// Every part of a step moves its v2 digest, including a change hidden behind a large
/// array's element hash and a value that only differs in the sign of zero.
#[test]
fn v2_any_change_moves_the_step_digest() {
    for format in WHOLE_STEP {
        for mode in [CacheMode::On, CacheMode::Off] {
            any_change_moves_the_step_digest(format, mode);
        }
    }
}

fn any_change_moves_the_step_digest(format: Format, mode: CacheMode) {
    let d = |t: &Transition| Tracer::with_format(format, mode).record(t).unwrap().digest;
    let b = base();
    let mut variants = Vec::new();
    let mut edit = |f: &dyn Fn(&mut Transition)| {
        let mut t = base();
        f(&mut t);
        variants.push(t);
    };
    edit(&|t| {
        if let ArrayData::F32(v) = a(t).obs.get_mut("big").unwrap().data_mut() {
            v[4999] = -v[4999];
        }
    });
    edit(&|t| {
        if let ArrayData::F32(v) = a(t).obs.get_mut("small").unwrap().data_mut() {
            v[0] = -v[0];
        }
    });
    edit(&|t| {
        let bytes = a(t).obs["small"].to_le_bytes();
        let other = Array::from_le_bytes(DType::F32, &[2, 4], &bytes).unwrap();
        a(t).obs.insert("small".into(), other);
    });
    edit(&|t| {
        let bytes = a(t).obs["small"].to_le_bytes();
        let other = Array::from_le_bytes(DType::I32, &[8], &bytes).unwrap();
        a(t).obs.insert("small".into(), other);
    });
    edit(&|t| {
        let small = a(t).obs.remove("small").unwrap();
        a(t).obs.insert("smalm".into(), small);
    });
    edit(&|t| a(t).reward = f64::from_bits(0.5f64.to_bits() + 1));
    edit(&|t| a(t).terminated = true);
    edit(&|t| a(t).truncated = true);
    edit(&|t| a(t).info = info(0, -0.0));
    edit(&|t| a(t).info = Value::Null);
    edit(&|t| t.logs = vec!["one".into(), String::new()]);
    edit(&|t| t.logs = vec!["on".into(), "e".into()]);
    edit(&|t| {
        let x = t.agents.remove("b").unwrap();
        t.agents.insert("c".into(), x);
    });
    let mut all = std::collections::BTreeSet::new();
    all.insert(d(&b));
    for (i, v) in variants.iter().enumerate() {
        assert!(
            all.insert(d(v)),
            "{format:?} {mode:?}: variant {i} collides"
        );
    }
}

/// An info without a canonical form is an error naming the step and agent in v2 as in v1.
#[test]
fn v2_info_errors_name_the_agent() {
    let mut deep = Value::Array(vec![]);
    for _ in 0..lockstep_canon::MAX_WRITE_DEPTH + 2 {
        deep = Value::Array(vec![deep]);
    }
    let mut m = Map::new();
    m.insert("k".into(), deep);
    let mut t = base();
    t.agents.get_mut("b").unwrap().info = Value::Object(m);
    for (format, mode) in WHOLE_STEP
        .into_iter()
        .flat_map(|f| [(f, CacheMode::On), (f, CacheMode::Off)])
    {
        let err = Tracer::with_format(format, mode).record(&t).unwrap_err();
        assert!(
            matches!(&err, TraceError::Info { step: 0, agent, .. } if agent == "b"),
            "{err}"
        );
    }
}

/// A v2 rollout records its format, and its episode is the chain of its step digests; v1
/// stays the default of `Tracer::new` and of rollouts.
#[test]
fn v2_rollouts_chain_their_steps() {
    for (format, name) in [(Format::V2, FORMAT_V2), (Format::V3, FORMAT_V3)] {
        rollouts_chain_their_steps(format, name);
    }
}

fn rollouts_chain_their_steps(format: Format, name: &str) {
    use crate::env::EnvFactory as _;
    let f = crate::fixtures::factory("fixture").unwrap();
    let opts = RolloutOptions {
        format,
        ..RolloutOptions::default()
    };
    let r = rollout(f.make().unwrap().as_mut(), 5, 40, &opts).unwrap();
    assert_eq!(r.trace.format, name);
    let mut episode = Digest::ZERO;
    for s in &r.trace.step_digests {
        assert!(s.agents.is_empty());
        episode = chain(&episode, &s.digest);
    }
    assert_eq!(episode, r.trace.episode);
    let again = rollout(f.make().unwrap().as_mut(), 5, 40, &opts).unwrap();
    assert_eq!(again.trace, r.trace);
    let v1 = rollout(
        f.make().unwrap().as_mut(),
        5,
        40,
        &RolloutOptions::default(),
    )
    .unwrap();
    assert_eq!(v1.trace.format, FORMAT);
    assert_eq!(Tracer::new(CacheMode::On).format(), Format::V1);
    assert_ne!(v1.trace.episode, r.trace.episode);
}
