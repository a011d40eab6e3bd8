//! Seeded actions from declared spaces, so a check needs no policy code.
//!
//! Each agent draws from its own stream `actions/<agent>` of the seed tree, so the actions of
//! one agent do not shift when another agent dies early, and the same seed gives the same
//! actions in every process. An observation named `action_mask` (one entry per discrete
//! choice; multi-discrete masks concatenated; nonzero = allowed) restricts the choices.
//!
//! Algorithms (value-stable, pinned by tests):
//! - discrete: uniform index among the allowed choices (`Stream::below(count)`), all choices
//!   when the mask is absent, malformed or allows none;
//! - multi-discrete: the same per component, in order;
//! - box: per element `uniform(low, high)`; an infinite bound is replaced by a standard normal
//!   draw clamped to the finite bound, if any.

use std::collections::BTreeMap;

use crate::env::{Action, Actions, AgentSpec, Array, EnvSpec, Space, Transition};
use crate::seed::{SeedTree, Stream};

/// Stream label prefix of the action sampler.
pub const LABEL_PREFIX: &str = "actions/";

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
                let mask = step.obs.get("action_mask");
                actions.insert(name.clone(), sample_space(&spec.action_space, mask, stream));
            }
        }
        actions
    }
}

fn sample_space(space: &Space, mask: Option<&Array>, stream: &mut Stream) -> Action {
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
    }
}

/// Allowed flags for choices `offset .. offset + n` of a mask, or `None` without a usable mask.
fn mask_slice(mask: Option<&Array>, offset: u64, n: u64) -> Option<Vec<bool>> {
    let mask = mask?;
    if offset + n > mask.len() as u64 {
        return None;
    }
    let flags: Vec<bool> = (offset..offset + n)
        .map(|i| mask.element_f64(i as usize).is_some_and(|x| x != 0.0))
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
    use lockstep_canon::Value;

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
