//! Seeded actions from declared spaces, so a check needs no policy code.
//!
//! Each agent draws from its own stream `actions/<agent>` of the seed tree, so the actions of
//! one agent do not shift when another agent dies early, and the same seed gives the same
//! actions in every process. An observation named `action_mask` (one entry per discrete
//! choice; multi-discrete masks concatenated; nonzero = allowed) restricts the choices; without
//! one, an `action_mask` list in the agent's info does (Gymnasium envs that keep the mask out of
//! the observation space put it there). A mask found nowhere restricts nothing, so envs
//! without one draw exactly what they drew before.
//!
//! Algorithms (value-stable, pinned by tests):
//! - discrete: uniform index among the allowed choices (`Stream::below(count)`), all choices
//!   when the mask is absent, malformed or allows none;
//! - multi-discrete: the same per component, in order;
//! - box: per element `uniform(low, high)`; an infinite bound is replaced by a standard normal
//!   draw clamped to the finite bound, if any;
//! - tuple: each part in order, from the same stream; dict: each part in key order (byte
//!   order, as `BTreeMap` holds them); an `action_mask` restricts only a top-level discrete or
//!   multi-discrete space, so parts are drawn unmasked;
//! - sequence: a length `below(SEQUENCE_LEN_MAX + 1)`, then that many elements in order.
//!
//! A composite space draws nothing that a flat space does not, and the flat spaces' draws are
//! unchanged by it: traces and goldens of envs with flat spaces keep their bytes.

use std::collections::BTreeMap;

use lockstep_canon::{Number, Value};

use crate::env::{Action, Actions, AgentSpec, Array, EnvSpec, Space, Transition};
use crate::seed::{SeedTree, Stream};

/// Stream label prefix of the action sampler.
pub const LABEL_PREFIX: &str = "actions/";

/// Longest sequence action the sampler draws (lengths `0 ..= SEQUENCE_LEN_MAX`, uniform).
pub const SEQUENCE_LEN_MAX: u64 = 4;

/// Draws actions for the live agents of an environment.
#[derive(Debug, Clone)]
pub struct ActionSampler {
    agents: BTreeMap<String, (AgentSpec, Stream)>,
}

impl ActionSampler {
    /// A sampler for `spec`'s agents, seeded from `seed`'s tree.
    pub fn new(seed: u64, spec: &EnvSpec) -> ActionSampler {
        let tree = SeedTree::new(seed);
        let agents = spec
            .agents
            .iter()
            .map(|a| {
                let stream = tree.stream(&format!("{LABEL_PREFIX}{}", a.name));
                (a.name.clone(), (a.clone(), stream))
            })
            .collect();
        ActionSampler { agents }
    }

    /// Actions for every live agent of `last`, in name order. Agents absent from the spec get
    /// no action (the env decides what that means).
    pub fn sample(&mut self, last: &Transition) -> Actions {
        let mut actions = Actions::new();
        for (name, step) in &last.agents {
            if step.terminated || step.truncated {
                continue;
            }
            if let Some((spec, stream)) = self.agents.get_mut(name) {
                let mask = match step.obs.get(MASK_KEY) {
                    Some(a) => Some(Mask::Obs(a)),
                    None => match step.info.get(MASK_KEY) {
                        Some(Value::Array(items)) => Some(Mask::Info(items)),
                        _ => None,
                    },
                };
                actions.insert(
                    name.clone(),
                    sample_space(&spec.action_space, mask.as_ref(), stream),
                );
            }
        }
        actions
    }
}

/// The observation key, or info key, of an action mask.
pub const MASK_KEY: &str = "action_mask";

/// An action mask where it was found: an observation array, or an info list (numbers or
/// booleans; anything else allows nothing).
#[derive(Debug, Clone, Copy)]
enum Mask<'a> {
    Obs(&'a Array),
    Info(&'a [Value]),
}

impl Mask<'_> {
    fn len(&self) -> usize {
        match self {
            Mask::Obs(a) => a.len(),
            Mask::Info(items) => items.len(),
        }
    }

    fn allows(&self, i: usize) -> bool {
        match self {
            Mask::Obs(a) => a.element_f64(i).is_some_and(|x| x != 0.0),
            Mask::Info(items) => match items.get(i) {
                Some(Value::Bool(b)) => *b,
                Some(Value::Number(Number::Int(k))) => *k != 0,
                Some(Value::Number(Number::Float(x))) => *x != 0.0,
                Some(Value::Number(Number::BigInt(_))) => true,
                _ => false,
            },
        }
    }
}

fn sample_space(space: &Space, mask: Option<&Mask<'_>>, stream: &mut Stream) -> Action {
    match space {
        Space::Discrete { n, start } => {
            let allowed = mask_slice(mask, 0, *n);
            Action::Discrete(start + pick(*n, allowed.as_deref(), stream) as i64)
        }
        Space::MultiDiscrete { nvec } => {
            let total: u64 = nvec.iter().sum();
            let whole = mask.filter(|m| m.len() as u64 == total);
            let mut offset = 0;
            let mut out = Vec::with_capacity(nvec.len());
            for &n in nvec {
                let allowed = mask_slice(whole, offset, n);
                out.push(pick(n, allowed.as_deref(), stream) as i64);
                offset += n;
            }
            Action::MultiDiscrete(out)
        }
        Space::Box { low, high, .. } => Action::Continuous(
            low.iter()
                .zip(high)
                .map(|(&lo, &hi)| sample_bounded(lo, hi, stream))
                .collect(),
        ),
        Space::Tuple { spaces } => Action::Tuple(
            spaces
                .iter()
                .map(|part| sample_space(part, None, stream))
                .collect(),
        ),
        Space::Dict { spaces } => Action::Dict(
            spaces
                .iter()
                .map(|(key, part)| (key.clone(), sample_space(part, None, stream)))
                .collect(),
        ),
        Space::Sequence { space } => {
            let len = stream.below(SEQUENCE_LEN_MAX + 1);
            Action::Tuple(
                (0..len)
                    .map(|_| sample_space(space, None, stream))
                    .collect(),
            )
        }
    }
}

/// Allowed flags for choices `offset .. offset + n` of a mask, or `None` without a usable mask.
fn mask_slice(mask: Option<&Mask<'_>>, offset: u64, n: u64) -> Option<Vec<bool>> {
    let mask = mask?;
    if offset + n > mask.len() as u64 {
        return None;
    }
    let flags: Vec<bool> = (offset..offset + n)
        .map(|i| mask.allows(i as usize))
        .collect();
    flags.iter().any(|&f| f).then_some(flags)
}

fn pick(n: u64, allowed: Option<&[bool]>, stream: &mut Stream) -> u64 {
    match allowed {
        None => stream.below(n),
        Some(flags) => {
            let count = flags.iter().filter(|&&f| f).count() as u64;
            let k = stream.below(count);
            flags
                .iter()
                .enumerate()
                .filter(|(_, &f)| f)
                .nth(k as usize)
                .map(|(i, _)| i as u64)
                .expect("k is below the number of allowed choices")
        }
    }
}

fn sample_bounded(lo: f64, hi: f64, stream: &mut Stream) -> f64 {
    if lo.is_finite() && hi.is_finite() {
        return stream.uniform(lo, hi);
    }
    let z = stream.normal(0.0, 1.0);
    match (lo.is_finite(), hi.is_finite()) {
        (true, false) => z.max(lo),
        (false, true) => z.min(hi),
        _ => z,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{AgentStep, ArrayData};
    use lockstep_canon::{Number, Value};

    fn spec(space: Space) -> EnvSpec {
        EnvSpec {
            id: "t".into(),
            config: Value::Null,
            agents: vec![AgentSpec {
                name: "a".into(),
                action_space: space,
                observation_space: BTreeMap::new(),
            }],
        }
    }

    fn transition(mask: Option<Vec<i8>>) -> Transition {
        let mut obs = BTreeMap::new();
        if let Some(m) = mask {
            let n = m.len();
            obs.insert(
                "action_mask".into(),
                Array::new(&[n], ArrayData::I8(m)).unwrap(),
            );
        }
        let mut t = Transition::default();
        t.agents.insert(
            "a".into(),
            AgentStep {
                obs,
                reward: 0.0,
                terminated: false,
                truncated: false,
                info: Value::Null,
            },
        );
        t
    }

    #[test]
    fn an_info_mask_restricts_when_the_observation_has_none() {
        let spec = spec(Space::Discrete { n: 9, start: 0 });
        let mut t = transition(None);
        let allowed = [4usize, 7];
        let mask: Vec<Value> = (0..9)
            .map(|i| Value::Number(Number::Int(i64::from(allowed.contains(&i)))))
            .collect();
        let mut info = lockstep_canon::Map::new();
        info.insert(MASK_KEY.into(), Value::Array(mask));
        t.agents.get_mut("a").unwrap().info = Value::Object(info);
        let mut sampler = ActionSampler::new(3, &spec);
        for _ in 0..50 {
            let Action::Discrete(k) = sampler.sample(&t)["a"].clone() else {
                panic!("a discrete action")
            };
            assert!(allowed.contains(&(k as usize)), "{k}");
        }
        // An observation mask wins over the info's.
        let mut t = transition(Some(vec![0, 0, 1, 0, 0, 0, 0, 0, 0]));
        t.agents.get_mut("a").unwrap().info = Value::Object({
            let mut m = lockstep_canon::Map::new();
            m.insert(MASK_KEY.into(), Value::Array(vec![Value::Bool(true); 9]));
            m
        });
        assert_eq!(
            ActionSampler::new(3, &spec).sample(&t)["a"],
            Action::Discrete(2)
        );
    }

    #[test]
    fn mask_restricts_multi_discrete_choices() {
        let spec = spec(Space::MultiDiscrete { nvec: vec![3, 4] });
        let mut sampler = ActionSampler::new(5, &spec);
        let t = transition(Some(vec![0, 1, 0, 1, 0, 0, 1]));
        for _ in 0..100 {
            match &sampler.sample(&t)["a"] {
                Action::MultiDiscrete(v) => {
                    assert_eq!(v[0], 1);
                    assert!(v[1] == 0 || v[1] == 3);
                }
                other => panic!("wrong action kind {other:?}"),
            }
        }
    }

    #[test]
    fn done_agents_get_no_action() {
        let spec = spec(Space::Discrete { n: 2, start: 0 });
        let mut t = transition(None);
        t.agents.get_mut("a").unwrap().terminated = true;
        assert!(ActionSampler::new(1, &spec).sample(&t).is_empty());
    }

    #[test]
    fn box_stays_within_finite_bounds() {
        let spec = spec(Space::Box {
            dtype: "float32".into(),
            shape: vec![3],
            low: vec![-1.0, 0.0, f64::NEG_INFINITY],
            high: vec![1.0, f64::INFINITY, 2.0],
        });
        let mut sampler = ActionSampler::new(2, &spec);
        let t = transition(None);
        for _ in 0..200 {
            let Action::Continuous(v) = &sampler.sample(&t)["a"] else {
                panic!()
            };
            assert!((-1.0..1.0).contains(&v[0]) && v[1] >= 0.0 && v[2] <= 2.0);
        }
    }

    fn dict_space() -> Space {
        Space::Dict {
            spaces: BTreeMap::from([
                ("move".to_string(), Space::Discrete { n: 4, start: 1 }),
                (
                    "force".to_string(),
                    Space::Box {
                        dtype: "float32".into(),
                        shape: vec![2],
                        low: vec![-1.0, 0.0],
                        high: vec![1.0, 5.0],
                    },
                ),
                (
                    "pair".to_string(),
                    Space::Tuple {
                        spaces: vec![
                            Space::MultiDiscrete { nvec: vec![2, 3] },
                            Space::Sequence {
                                space: std::boxed::Box::new(Space::Discrete { n: 2, start: 0 }),
                            },
                        ],
                    },
                ),
            ]),
        }
    }

    /// Every part of a Dict or Tuple action is drawn from its own space, in key order.
    #[test]
    fn composite_actions_sample_each_part_from_its_space() {
        let spec = spec(dict_space());
        let mut sampler = ActionSampler::new(9, &spec);
        let t = transition(None);
        let mut lengths = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let Action::Dict(parts) = &sampler.sample(&t)["a"] else {
                panic!("a dict space gives a dict action")
            };
            assert_eq!(
                parts.keys().collect::<Vec<_>>(),
                ["force", "move", "pair"],
                "one part per key, in key order"
            );
            let Action::Continuous(f) = &parts["force"] else {
                panic!()
            };
            assert!(
                (-1.0..1.0).contains(&f[0]) && (0.0..5.0).contains(&f[1]),
                "{f:?}"
            );
            let Action::Discrete(m) = parts["move"] else {
                panic!()
            };
            assert!((1..=4).contains(&m));
            let Action::Tuple(pair) = &parts["pair"] else {
                panic!()
            };
            let [Action::MultiDiscrete(md), Action::Tuple(seq)] = pair.as_slice() else {
                panic!("{pair:?}")
            };
            assert!(md[0] < 2 && md[1] < 3);
            assert!(seq.len() as u64 <= SEQUENCE_LEN_MAX);
            assert!(seq
                .iter()
                .all(|e| matches!(e, Action::Discrete(0) | Action::Discrete(1))));
            lengths.insert(seq.len());
        }
        assert_eq!(
            lengths.len() as u64,
            SEQUENCE_LEN_MAX + 1,
            "every length drawn"
        );
    }

    /// A mask restricts a top-level discrete space only; a composite's parts are unmasked.
    #[test]
    fn a_mask_does_not_restrict_the_parts_of_a_tuple() {
        let spec = spec(Space::Tuple {
            spaces: vec![Space::Discrete { n: 2, start: 0 }],
        });
        let mut sampler = ActionSampler::new(3, &spec);
        let t = transition(Some(vec![1, 0]));
        let drawn: std::collections::BTreeSet<i64> = (0..100)
            .map(|_| match &sampler.sample(&t)["a"] {
                Action::Tuple(p) => match p[0] {
                    Action::Discrete(x) => x,
                    _ => panic!(),
                },
                _ => panic!(),
            })
            .collect();
        assert_eq!(drawn, [0, 1].into());
    }

    /// Value stability of composite actions: the first draws for a fixed seed. The parts are
    /// the flat spaces' own draws in order, so a Tuple of one Discrete draws what the
    /// Discrete alone draws.
    #[test]
    fn composite_value_stability() {
        let mut sampler = ActionSampler::new(42, &spec(dict_space()));
        let t = transition(None);
        let got = sampler.sample(&t)["a"].clone();
        let want = Action::Dict(BTreeMap::from([
            (
                "force".to_string(),
                Action::Continuous(vec![-0.43463960755890896, 4.586193323549454]),
            ),
            ("move".to_string(), Action::Discrete(1)),
            (
                "pair".to_string(),
                Action::Tuple(vec![
                    Action::MultiDiscrete(vec![1, 1]),
                    Action::Tuple(vec![]),
                ]),
            ),
        ]));
        assert_eq!(got, want);
        let second = sampler.sample(&t)["a"].clone();
        let Action::Dict(parts) = &second else {
            panic!()
        };
        let Action::Tuple(pair) = &parts["pair"] else {
            panic!()
        };
        assert_eq!(
            pair[1],
            Action::Tuple(vec![Action::Discrete(0), Action::Discrete(0)]),
            "{second:?}"
        );
        let flat = |space: Space| {
            let mut s = ActionSampler::new(42, &spec(space));
            s.sample(&t)["a"].clone()
        };
        let alone = flat(Space::Discrete { n: 7, start: 0 });
        let wrapped = flat(Space::Tuple {
            spaces: vec![Space::Discrete { n: 7, start: 0 }],
        });
        assert_eq!(wrapped, Action::Tuple(vec![alone]));
    }

    /// Value stability: the first actions for a fixed seed. A change here moves every check's
    /// actions, and so every golden file.
    #[test]
    fn value_stability() {
        let spec = spec(Space::MultiDiscrete {
            nvec: vec![32, 100],
        });
        let mut sampler = ActionSampler::new(42, &spec);
        let t = transition(None);
        let got: Vec<Action> = (0..3).map(|_| sampler.sample(&t)["a"].clone()).collect();
        let want = vec![
            Action::MultiDiscrete(vec![9, 91]),
            Action::MultiDiscrete(vec![2, 95]),
            Action::MultiDiscrete(vec![15, 3]),
        ];
        assert_eq!(got, want);
    }
}
