//! Policies for driving the range without a learner: a seeded random sampler of masked
//! actions, and a deterministic scripted policy.

use crate::actions::*;
use crate::params::{Params, Scenario};
use crate::rng::Rng;
use crate::sim::{self, AgentAction, State, BLUE_SUBNETS};
use crate::{AGENTS, N_AGENTS, N_TYPES, RED};

/// Uniform choices among the bits an `action_mask` sets: a type among the set type bits, a
/// target among the set slot bits (slot 0 when none is set). One stream per agent,
/// `actions/<agent>` of the sampler's seed, so agents never share randomness.
#[derive(Debug, Clone)]
pub struct ActionSampler {
    streams: Vec<Rng>,
}

impl ActionSampler {
    pub fn new(seed: u64) -> ActionSampler {
        ActionSampler {
            streams: AGENTS
                .iter()
                .map(|a| Rng::new(seed, &format!("actions/{a}")))
                .collect(),
        }
    }

    /// Samples from `mask` (32 type bits, then one bit per slot) for agent index `agent`.
    pub fn sample(&mut self, agent: usize, mask: &[i8]) -> AgentAction {
        let rng = &mut self.streams[agent];
        let (types, hosts) = mask.split_at(N_TYPES.min(mask.len()));
        let kind = pick(rng, types).unwrap_or(0);
        let target = pick(rng, hosts).unwrap_or(0);
        AgentAction {
            kind: kind as i64,
            target: target as i64,
        }
    }
}

/// A uniformly chosen index among the set entries, without allocating.
fn pick(rng: &mut Rng, bits: &[i8]) -> Option<usize> {
    let n = bits.iter().filter(|b| **b != 0).count();
    let k = rng.index(n)?;
    bits.iter()
        .enumerate()
        .filter(|(_, b)| **b != 0)
        .nth(k)
        .map(|(i, _)| i)
}

fn first(set: u128) -> Option<i64> {
    (set != 0).then(|| i64::from(set.trailing_zeros()))
}

/// A deterministic heuristic for `agent`, from what that agent may know: red pushes toward its
/// scenario's objective; blue analyses alerts, isolates confirmed compromises, restores them,
/// stabilises the plant and otherwise monitors its hosts in turn.
pub fn scripted_action(state: &State, params: &Params, agent: usize) -> AgentAction {
    let mut sets = [0u128; N_TYPES];
    sim::target_sets(state, params, agent, &mut sets);
    let choose = |kind: usize, set: u128| -> Option<AgentAction> {
        if !sim::can_start(state, params, agent, kind) {
            return None;
        }
        first(set).map(|t| AgentAction {
            kind: kind as i64,
            target: t,
        })
    };
    if agent == RED {
        let unscanned = state
            .hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| !h.scanned)
            .fold(0u128, |m, (i, _)| m | 1 << i);
        let mut order = vec![R_KINETIC, R_PRIV_ESC];
        match params.scenario {
            Scenario::Ransomware => order.push(R_RANSOMWARE),
            Scenario::AptEspionage => order.extend([R_PERSISTENCE, R_EXFILTRATE]),
            _ => {}
        }
        let rotate = (state.steps % 4) as usize;
        let exploits = [R_ETERNAL_BLUE, R_HTTP_RFI, R_REMOTE_SERVICE, R_BLUE_KEEP];
        order.extend([R_DUMP_LSASS, R_LATERAL_SMB, R_PASS_THE_TICKET]);
        order.extend((0..4).map(|i| exploits[(i + rotate) % 4]));
        for kind in order {
            if let Some(a) = choose(kind, sets[kind]) {
                return a;
            }
        }
        if let Some(a) = choose(R_SCAN, sets[R_SCAN] & unscanned) {
            return a;
        }
        let sessions = sets[R_DISCOVERY];
        if sessions != 0 && state.steps % 3 == 0 {
            let n = sessions.count_ones() as u64;
            let k = (state.steps / 3) % n;
            let mut s = sessions;
            for _ in 0..k {
                s &= s - 1;
            }
            if let Some(a) = choose(R_DISCOVERY, s & s.wrapping_neg()) {
                return a;
            }
        }
        if let Some(a) = choose(R_PHISHING, sets[R_PHISHING]) {
            return a;
        }
        return AgentAction::default();
    }
    let mine = |pred: &dyn Fn(&crate::topology::Host) -> bool| -> u128 {
        state
            .hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| h.active && BLUE_SUBNETS[agent] & (1 << h.subnet) != 0 && pred(h))
            .fold(0u128, |m, (i, _)| m | 1 << i)
    };
    let confirmed = mine(&|h| h.confirmed == 2);
    let alerted = mine(&|h| h.alert && h.confirmed != 2);
    if let Some(a) = choose(B_ISOLATE, sets[B_ISOLATE] & confirmed) {
        return a;
    }
    if let Some(a) = choose(B_RESTORE, sets[B_RESTORE] & confirmed & mine(&|h| h.isolated)) {
        return a;
    }
    if let Some(a) = choose(B_ANALYSE, sets[B_ANALYSE] & alerted) {
        return a;
    }
    let drifting = state
        .physics
        .as_ref()
        .is_some_and(|p| p.setpoint != crate::physics::NOMINAL);
    if drifting {
        if let Some(a) = choose(B_STABILISE, sets[B_STABILISE]) {
            return a;
        }
    }
    let hosts = sets[B_MONITOR];
    if hosts != 0 {
        let n = u64::from(hosts.count_ones());
        let k = state.steps % n;
        let mut s = hosts;
        for _ in 0..k {
            s &= s - 1;
        }
        if let Some(a) = choose(B_MONITOR, s & s.wrapping_neg()) {
            return a;
        }
    }
    AgentAction::default()
}

/// Scripted actions for every agent.
pub fn scripted_joint(state: &State, params: &Params) -> sim::JointAction {
    let mut j = sim::JointAction::default();
    for a in 0..N_AGENTS {
        j.0[a] = scripted_action(state, params, a);
    }
    j
}
