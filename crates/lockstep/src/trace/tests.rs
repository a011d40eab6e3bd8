//! Tests of the v1 tracer: value stability, caches against from-scratch hashing, rollouts.

use super::kept::kept_size;
use super::*;
use crate::env::{AgentSpec, ArrayData, EnvSpec, Space};
use lockstep_canon::{Map, Number};

fn step(values: &[f32], info: Value, logs: &[&str]) -> Transition {
    let mut t = Transition::default();
    let mut obs = BTreeMap::new();
    obs.insert(
        "x".to_string(),
        Array::new(&[values.len()], ArrayData::F32(values.to_vec())).unwrap(),
    );
    t.agents.insert(
        "a".into(),
        AgentStep {
            obs,
            reward: 0.5,
            terminated: false,
            truncated: false,
            info,
        },
    );
    t.logs = logs.iter().map(|s| s.to_string()).collect();
    t
}

fn obj(k: &str, v: i64) -> Value {
    let mut m = Map::new();
    m.insert(k.into(), Value::Number(Number::Int(v)));
    Value::Object(m)
}

#[test]
fn any_change_moves_the_step_digest() {
    let base = step(&[1.0, 2.0], obj("k", 1), &["hello"]);
    let d = |t: &Transition| Tracer::new(CacheMode::Off).record(t).unwrap().digest;
    let d0 = d(&base);
    assert_eq!(d0, d(&base.clone()));
    let mut variants = vec![
        step(&[1.0, 2.5], obj("k", 1), &["hello"]),
        step(&[1.0, 2.0], obj("k", 2), &["hello"]),
        step(&[1.0, 2.0], obj("k", 1), &["hello!"]),
        step(&[1.0, 2.0], obj("k", 1), &["hel", "lo"]),
        step(&[1.0, 2.0], obj("k", 1), &[]),
        step(&[1.0, 2.0, 0.0], obj("k", 1), &["hello"]),
    ];
    let mut v = base.clone();
    v.agents.get_mut("a").unwrap().reward = -0.5;
    variants.push(v);
    let mut v = base.clone();
    v.agents.get_mut("a").unwrap().truncated = true;
    variants.push(v);
    // Same bytes, other dtype or shape: must differ.
    let mut v = base.clone();
    let bytes = v.agents["a"].obs["x"].to_le_bytes();
    v.agents.get_mut("a").unwrap().obs.insert(
        "x".into(),
        Array::from_le_bytes(DType::I32, &[2], &bytes).unwrap(),
    );
    variants.push(v);
    let mut v = base.clone();
    v.agents.get_mut("a").unwrap().obs.insert(
        "x".into(),
        Array::from_le_bytes(DType::F32, &[1, 2], &bytes).unwrap(),
    );
    variants.push(v);
    let mut seen = vec![d0];
    for (i, t) in variants.iter().enumerate() {
        let di = d(t);
        assert!(!seen.contains(&di), "variant {i} collides");
        seen.push(di);
    }
}

/// Pins trace format v1 (values computed independently in Python with the `blake3` package and `struct`).
/// A change here is a new format version.
#[test]
fn format_value_stability() {
    let a = Array::new(&[2], ArrayData::I32(vec![1, -1])).unwrap();
    assert_eq!(
        array_digest(&a).to_hex(),
        "b134fb69a61948f2b7865ae2167d0bebf80164c6819f7a04c0d2678a1ce10eeb"
    );
    assert_eq!(
        logs_digest(&["x".to_string()]).to_hex(),
        "d066df2b74c5862472555aeca0e021ad95e9131e8604ed4903f77358651a39d2"
    );
}

#[test]
fn cache_and_no_cache_agree() {
    let mut t = step(&[1.0, 2.0], obj("k", 1), &[]);
    let mut on = Tracer::new(CacheMode::On);
    let mut off = Tracer::new(CacheMode::Off);
    for i in 0..20 {
        if i % 3 == 0 {
            let arr = t.agents.get_mut("a").unwrap().obs.get_mut("x").unwrap();
            if let ArrayData::F32(v) = arr.data_mut() {
                v[0] += 1.0;
            }
        }
        if i % 7 == 0 {
            // Replaced by a clone of an older array: same revision, same contents.
            let arr = t.agents["a"].obs["x"].clone();
            t.agents.get_mut("a").unwrap().obs.insert("y".into(), arr);
        }
        // A second agent shows large arrays: equal to the first agent's (found by
        // comparing bytes), or equal but for the sign of one zero (must not be).
        let big: Vec<f32> = (0..512).map(|j| (j + i / 4) as f32).collect();
        let mut other = t.agents["a"].clone();
        let mut shared = Array::new(&[512], ArrayData::F32(big.clone())).unwrap();
        let mut first = t.agents["a"].clone();
        first.obs.insert("big".into(), shared.clone());
        if i % 2 == 0 {
            // Same contents under a fresh revision.
            shared = Array::new(&[512], ArrayData::F32(big.clone())).unwrap();
        }
        other.obs.insert("big".into(), shared);
        let mut zero = big;
        zero[0] = 0.0;
        let mut neg = zero.clone();
        neg[0] = -0.0;
        first.obs.insert(
            "neg".into(),
            Array::new(&[512], ArrayData::F32(zero)).unwrap(),
        );
        other.obs.insert(
            "neg".into(),
            Array::new(&[512], ArrayData::F32(neg)).unwrap(),
        );
        t.agents.insert("a".into(), first);
        t.agents.insert("b".into(), other);
        let step = on.record(&t).unwrap().clone();
        assert_eq!(&step, off.record(&t).unwrap());
        assert_eq!(step.agents["a"].obs["big"], step.agents["b"].obs["big"]);
        assert_ne!(step.agents["a"].obs["neg"], step.agents["b"].obs["neg"]);
    }
    assert_eq!(on.episode(), off.episode());
    assert_ne!(on.episode(), Digest::ZERO);
}

/// The member cache hashes exactly the canonical JSON the writer makes, whatever changes
/// between steps: a value's type or sign of zero, NaN, keys that need escaping, members
/// added or removed, nested values, a non-object info, nesting at the writer's limit.
#[test]
fn info_cache_matches_the_writer() {
    let parse = |text: &str| {
        lockstep_canon::parse_with(
            text.as_bytes(),
            &lockstep_canon::ParseOptions {
                allow_nan: true,
                ..lockstep_canon::ParseOptions::default()
            },
        )
        .unwrap()
    };
    let mut infos: Vec<Value> = [
        r#"{"k":1}"#,
        r#"{"k":1.0}"#,
        r#"{"k":0.0}"#,
        r#"{"k":-0.0}"#,
        r#"{"k":NaN}"#,
        r#"{"k":NaN}"#,
        r#"{"k":"x","\u00e9\u0001\"":[1,2]}"#,
        r#"{"k":"x","\u00e9\u0001\"":[1,3]}"#,
        r#"{"k":"x","\u00e9\u0001\"":[1,3]}"#,
        r#"{}"#,
        r#"{"a":null,"k":true,"z":{"n":{"m":1}}}"#,
        r#"{"a":null,"k":true,"z":{"n":{"m":2}}}"#,
        r#"{"a":null,"k":true,"z":{"n":{"m":2}},"zz":123456789012345678901234567890}"#,
        r#"{"k":true}"#,
        r#"null"#,
        r#"{"k":false}"#,
        r#"{"j":false}"#,
        r#"{"j":"\ud83d\ude00","k":1e300,"l":-1.5e-7}"#,
        // Keys of 8 to 16 bytes (compared a word at a time) that differ in one byte only,
        // first, in the middle, last; then a key one byte longer.
        r#"{"abcdefgh":1,"member_key_16byt":2,"twelve_bytes":3}"#,
        r#"{"Abcdefgh":1,"member_key_16byt":2,"twelve_bytes":3}"#,
        r#"{"Abcdefgh":1,"member_kEy_16byt":2,"twelve_bytes":3}"#,
        r#"{"Abcdefgh":1,"member_kEy_16byT":2,"twelve_bytEs":3}"#,
        r#"{"Abcdefghi":1,"member_kEy_16byT":2,"twelve_bytEs":3}"#,
    ]
    .iter()
    .map(|t| parse(t))
    .collect();
    // A member nested around the writer's depth limit (counted from the info).
    for n in lockstep_canon::MAX_WRITE_DEPTH - 3..lockstep_canon::MAX_WRITE_DEPTH + 2 {
        let mut v = Value::Array(vec![]);
        for _ in 1..n {
            v = Value::Array(vec![v]);
        }
        let mut m = Map::new();
        m.insert("k".into(), v);
        infos.push(Value::Object(m));
        infos.push(obj("k", 1));
    }
    let mut on = Tracer::new(CacheMode::On);
    let mut off = Tracer::new(CacheMode::Off);
    let mut errors = 0;
    for (i, info) in infos.iter().enumerate() {
        let want = info_digest(info);
        for agent in ["a", "b"] {
            let got = on.info(agent, info);
            assert_eq!(got.is_ok(), want.is_ok(), "info {i}");
            if let (Ok(got), Ok(want)) = (&got, &want) {
                assert_eq!(got, want, "info {i}");
            } else {
                let (got, want) = (got.unwrap_err(), want.as_ref().unwrap_err());
                assert_eq!(got.to_string(), want.to_string(), "info {i}");
                errors += 1;
            }
            assert_eq!(
                off.info(agent, info).ok(),
                want.as_ref().ok().copied(),
                "info {i}"
            );
        }
    }
    // The limit was crossed: some of the nested infos have no canonical form.
    assert!(errors > 0);
}

/// The block cache gives exactly `blake3::hash`, for lengths around block and tree
/// boundaries and for changes in one block, several, all, back to an earlier state.
#[test]
fn blocks_hash_like_blake3() {
    let lens = [
        BLOCK_BYTES + 1,
        2 * BLOCK_BYTES,
        2 * BLOCK_BYTES + 7,
        3 * BLOCK_BYTES,
        40_000,
        8 * BLOCK_BYTES,
        8 * BLOCK_BYTES + 1,
        17 * BLOCK_BYTES + 100,
    ];
    for len in lens {
        let mut bytes: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        let mut b = Blocks::default();
        assert_eq!(b.hash(&bytes), blake3::hash(&bytes), "len {len}");
        let original = bytes.clone();
        let mut x = len as u64;
        for round in 0..12 {
            // Change one byte, or a run spanning a block boundary, or a byte back.
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let at = (x >> 33) as usize % len;
            match round % 4 {
                0 => bytes[at] ^= 1,
                1 => {
                    let from = at.saturating_sub(3);
                    let to = (at + BLOCK_BYTES + 3).min(len);
                    bytes[from..to]
                        .iter_mut()
                        .for_each(|v| *v = v.wrapping_add(1));
                }
                2 => bytes.copy_from_slice(&original),
                _ => {}
            }
            assert_eq!(
                b.hash(&bytes),
                blake3::hash(&bytes),
                "len {len} round {round}"
            );
        }
        // A length change starts over.
        let shorter = &bytes[..len - 1];
        assert_eq!(b.hash(shorter), blake3::hash(shorter), "len {len} - 1");
    }
}

/// Cached (block cache included) and uncached tracing agree on large arrays that change in
/// one block only, change back, change everywhere, change shape, or are shared by agents.
#[test]
fn block_cache_and_no_cache_agree() {
    let mut t = step(&[1.0], obj("k", 1), &[]);
    let big = |n: usize, seed: f32| {
        Array::new(
            &[n],
            ArrayData::F32((0..n).map(|i| i as f32 + seed).collect()),
        )
        .unwrap()
    };
    t.agents
        .get_mut("a")
        .unwrap()
        .obs
        .insert("adj".into(), big(10_000, 0.0));
    let mut on = Tracer::new(CacheMode::On);
    let mut off = Tracer::new(CacheMode::Off);
    for i in 0..24 {
        let a = t.agents.get_mut("a").unwrap();
        let arr = a.obs.get_mut("adj").unwrap();
        match i % 6 {
            0 => {
                // One element in one block, and back two steps later.
                if let ArrayData::F32(v) = arr.data_mut() {
                    v[3000] += 1.0;
                }
            }
            1 => {
                // A fresh revision, same contents.
                arr.data_mut();
            }
            2 => {
                if let ArrayData::F32(v) = arr.data_mut() {
                    v[3000] -= 1.0;
                }
            }
            3 => {
                // Every element.
                if let ArrayData::F32(v) = arr.data_mut() {
                    v.iter_mut().for_each(|x| *x = -*x);
                }
            }
            4 => {
                // Same bytes, another shape; then another length.
                let bytes = arr.to_le_bytes();
                *arr = Array::from_le_bytes(DType::F32, &[1, arr.len()], &bytes).unwrap();
            }
            _ => *arr = big(9_000 + i, i as f32),
        }
        // A second agent: the same contents under a fresh revision every other step (found
        // equal by comparing bytes), else its own array changed in one block.
        let mut b = t.agents["a"].clone();
        let shared = b.obs.get_mut("adj").unwrap();
        if i % 2 == 1 {
            if let ArrayData::F32(v) = shared.data_mut() {
                v[i * 100] = 0.5;
            }
        } else {
            shared.data_mut();
        }
        t.agents.insert("b".into(), b);
        let got = on.record(&t).unwrap().clone();
        assert_eq!(&got, off.record(&t).unwrap(), "step {i}");
        for (agent, s) in &t.agents {
            assert_eq!(
                got.agents[agent].obs["adj"],
                array_digest(&s.obs["adj"]),
                "step {i} agent {agent}"
            );
        }
    }
    assert_eq!(on.episode(), off.episode());
}

#[test]
fn recorded_parts_recompute_every_digest() {
    use crate::env::EnvFactory as _;
    let f = crate::fixtures::factory("fixture").unwrap();
    let mut env = f.make().unwrap();
    let r = rollout(env.as_mut(), 5, 40, &RolloutOptions::default()).unwrap();
    let mut episode = Digest::ZERO;
    for s in &r.trace.step_digests {
        for (name, a) in &s.agents {
            assert_eq!(agent_digest_of(name, a), a.digest);
        }
        assert_eq!(step_digest_of(s), s.digest);
        episode = chain(&episode, &s.digest);
    }
    assert_eq!(episode, r.trace.episode);
}

#[test]
fn digest_hex_round_trips() {
    let d = logs_digest(&[]);
    assert_eq!(Digest::from_hex(&d.to_hex()), Some(d));
    assert_eq!(Digest::from_hex("zz"), None);
    let json = serde_json::to_string(&d).unwrap();
    assert_eq!(serde_json::from_str::<Digest>(&json).unwrap(), d);
}

/// A counter env: one agent, ends after `len` steps.
struct Counter {
    spec: EnvSpec,
    t: Transition,
    len: u64,
    n: u64,
}

impl Env for Counter {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }
    fn reset(&mut self, seed: u64, _: &Value) -> Result<&Transition, EnvError> {
        self.n = 0;
        self.t = step(&[seed as f32], Value::Null, &["reset"]);
        Ok(&self.t)
    }
    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        self.n += 1;
        let a = match actions.get("a") {
            Some(crate::env::Action::Discrete(x)) => *x as f32,
            _ => return Err(EnvError::new("no action")),
        };
        let s = self.t.agents.get_mut("a").unwrap();
        if let ArrayData::F32(v) = s.obs.get_mut("x").unwrap().data_mut() {
            v[0] += a;
        }
        s.truncated = self.n >= self.len;
        self.t.logs.clear();
        Ok(&self.t)
    }
    fn state(&mut self) -> Result<Value, EnvError> {
        Ok(Value::Null)
    }
}

fn counter(len: u64) -> Counter {
    Counter {
        spec: EnvSpec {
            id: "counter".into(),
            config: Value::Null,
            agents: vec![AgentSpec {
                name: "a".into(),
                action_space: Space::Discrete { n: 3, start: 0 },
                observation_space: BTreeMap::new(),
            }],
        },
        t: Transition::default(),
        len,
        n: 0,
    }
}

#[test]
fn rollout_ends_when_done_or_out_of_steps() {
    let opts = RolloutOptions::default();
    let r = rollout(&mut counter(5), 1, 100, &opts).unwrap();
    assert_eq!(r.trace.end, End::Done);
    assert_eq!(r.trace.step_digests.len(), 6);
    let r = rollout(&mut counter(5), 1, 3, &opts).unwrap();
    assert_eq!(r.trace.end, End::StepsExhausted);
    assert_eq!(r.trace.step_digests.len(), 4);
    let again = rollout(&mut counter(5), 1, 3, &opts).unwrap();
    assert_eq!(r.trace, again.trace);
    let other = rollout(&mut counter(5), 2, 3, &opts).unwrap();
    assert_ne!(r.trace.episode, other.trace.episode);
}

#[test]
fn capture_keeps_the_asked_step() {
    let opts = RolloutOptions {
        capture: Some(2),
        ..RolloutOptions::default()
    };
    let r = rollout(&mut counter(5), 1, 4, &opts).unwrap();
    let t = r.captured.expect("step 2 was reached");
    let mut again = Tracer::new(CacheMode::Off);
    // The captured transition digests like step 2 once the index is the same.
    again.steps = r.trace.step_digests[..2].to_vec();
    assert_eq!(
        again.record(&t).unwrap().digest,
        r.trace.step_digests[2].digest
    );
}

#[test]
fn keep_first_keeps_an_unbroken_prefix_within_both_budgets() {
    let r0 = rollout(&mut counter(50), 1, 10, &RolloutOptions::default()).unwrap();
    assert!(r0.kept.is_empty(), "nothing is kept unless asked");
    let by_steps = RolloutOptions {
        keep_first: KeepFirst {
            steps: 3,
            bytes: usize::MAX,
        },
        ..RolloutOptions::default()
    };
    let r = rollout(&mut counter(50), 1, 10, &by_steps).unwrap();
    assert_eq!(r.kept.len(), 3);
    // kept[k] is step k: it digests like the trace's step k.
    for k in 0..3 {
        let mut again = Tracer::new(CacheMode::Off);
        again.steps = r.trace.step_digests[..k].to_vec();
        let t = r.kept_at(k as u64).unwrap();
        assert_eq!(
            again.record(t).unwrap().digest,
            r.trace.step_digests[k].digest
        );
    }
    assert!(r.kept_at(3).is_none());
    let all = RolloutOptions {
        keep_first: KeepFirst {
            steps: 100,
            bytes: usize::MAX,
        },
        ..RolloutOptions::default()
    };
    let sizes: Vec<usize> = rollout(&mut counter(50), 1, 10, &all)
        .unwrap()
        .kept
        .iter()
        .map(kept_size)
        .collect();
    assert_eq!(sizes.len(), 11, "the reset and ten steps");
    assert!(sizes.iter().all(|&n| n > 0));
    let budget = sizes[0] + sizes[1] + sizes[2] - 1;
    let by_bytes = RolloutOptions {
        keep_first: KeepFirst {
            steps: 100,
            bytes: budget,
        },
        ..RolloutOptions::default()
    };
    let r = rollout(&mut counter(50), 1, 10, &by_bytes).unwrap();
    assert_eq!(
        r.kept.len(),
        2,
        "step 2 does not fit in {budget} bytes ({sizes:?}), nor does any later step"
    );
}

#[test]
fn transition_record_round_trips() {
    let t = step(&[1.5, f32::NAN], obj("k", 3), &["a \u{e9}"]);
    let rec = TransitionRecord::from_transition(&t).unwrap();
    let json = serde_json::to_string(&rec).unwrap();
    let back: TransitionRecord = serde_json::from_str(&json).unwrap();
    let t2 = back.to_transition().unwrap();
    assert_eq!(
        Tracer::new(CacheMode::Off).record(&t).unwrap().digest,
        Tracer::new(CacheMode::Off).record(&t2).unwrap().digest
    );
}
