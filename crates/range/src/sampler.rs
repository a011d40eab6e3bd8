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

    /// A joint action of every agent, in agent order, each sampled from its mask in `state`
    /// (`mask`: scratch of `params.mask_len()` entries): what a random policy stepping the
    /// core directly plays.
    pub fn joint(&mut self, state: &State, params: &Params, mask: &mut [i8]) -> sim::JointAction {
        let mut joint = sim::JointAction::default();
        for (a, act) in joint.0.iter_mut().enumerate() {
            sim::write_mask(state, params, a, mask);
            *act = self.sample(a, mask);
        }
        joint
    }
}

/// A uniformly chosen index among the set entries, without allocating: the `k`-th non-zero
/// entry for `k` drawn below their count. Every sub-env of a batch draws four times a step
/// over masks of 130-odd entries, so the entries are counted eight at a time
/// ([`nonzero_bytes`]); a test compares with counting and filtering them one by one.
fn pick(rng: &mut Rng, bits: &[i8]) -> Option<usize> {
    let words = bits.chunks_exact(8);
    let tail = words.remainder();
    let mut n = tail.iter().filter(|b| **b != 0).count();
    for w in words.clone() {
        n += set_bytes(nonzero_bytes(w));
    }
    let mut k = rng.index(n)?;
    for (c, w) in words.enumerate() {
        let mut m = nonzero_bytes(w);
        let here = set_bytes(m);
        if k >= here {
            k -= here;
            continue;
        }
        for _ in 0..k {
            m &= m - 1;
        }
        return Some(c * 8 + m.trailing_zeros() as usize / 8);
    }
    let base = bits.len() - tail.len();
    tail.iter()
        .enumerate()
        .filter(|(_, b)| **b != 0)
        .nth(k)
        .map(|(i, _)| base + i)
}

/// How many bytes of a [`nonzero_bytes`] result are set (its popcount: only the top bit of a
/// byte can be set), by one multiply that sums the bytes' 0 / 1 into the top byte, where the
/// 64-bit `count_ones` of the baseline target is a dozen instructions.
fn set_bytes(m: u64) -> usize {
    (((m >> 7).wrapping_mul(0x0101_0101_0101_0101)) >> 56) as usize
}

/// The top bit of each byte of `w` (8 entries) set where the entry is non-zero, the rest clear
/// (the carry-free zero-byte test: no byte's result depends on another's).
fn nonzero_bytes(w: &[i8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = u64::from_le_bytes(std::array::from_fn(|i| w[i] as u8));
    let zero = !(((x & LOW7) + LOW7) | x | LOW7);
    !zero & !LOW7
}

/// The set's `(k mod popcount)`-th member alone (so a policy rotates through its targets).
fn nth_bit(set: u128, k: u64) -> u128 {
    let n = u64::from(set.count_ones());
    if n == 0 {
        return 0;
    }
    let mut s = set;
    for _ in 0..k % n {
        s &= s - 1;
    }
    s & s.wrapping_neg()
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
        // Rest until an exploit is affordable rather than bleed energy on cheap actions.
        if state.agents[RED].energy < 6.0 && state.agents[RED].in_flight == 0 {
            return AgentAction::default();
        }
        let unscanned = state
            .hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| !h.scanned)
            .fold(0u128, |m, (i, _)| m | 1 << i);
        let no_creds = state
            .hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| h.subnet < 5 && state.red.creds & (1 << h.subnet) == 0)
            .fold(0u128, |m, (i, _)| m | 1 << i);
        let k = state.steps;
        let exploits = [R_ETERNAL_BLUE, R_HTTP_RFI, R_REMOTE_SERVICE, R_BLUE_KEEP];
        let mut order: Vec<(usize, u128)> =
            vec![(R_KINETIC, sets[R_KINETIC]), (R_PRIV_ESC, sets[R_PRIV_ESC])];
        match params.scenario {
            Scenario::Ransomware => order.push((R_RANSOMWARE, sets[R_RANSOMWARE])),
            Scenario::AptEspionage => order.push((R_PERSISTENCE, sets[R_PERSISTENCE])),
            _ => {}
        }
        if k.is_multiple_of(3) {
            order.push((R_DISCOVERY, sets[R_DISCOVERY]));
        }
        order.push((R_SCAN, sets[R_SCAN] & unscanned));
        order.push((R_DUMP_LSASS, sets[R_DUMP_LSASS] & no_creds));
        order.push((R_LATERAL_SMB, sets[R_LATERAL_SMB]));
        order.push((R_PASS_THE_TICKET, sets[R_PASS_THE_TICKET]));
        for i in 0..4 {
            let e = exploits[(i + k as usize) % 4];
            order.push((e, sets[e]));
        }
        order.push((R_DISCOVERY, sets[R_DISCOVERY]));
        order.push((R_EXFILTRATE, sets[R_EXFILTRATE]));
        order.push((R_PHISHING, sets[R_PHISHING]));
        for (kind, set) in order {
            if let Some(a) = choose(kind, nth_bit(set, k)) {
                return a;
            }
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
    if let Some(a) = choose(
        B_RESTORE_BACKUP,
        sets[B_RESTORE_BACKUP] & confirmed & mine(&|h| h.isolated),
    ) {
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
    if let Some(a) = choose(B_MONITOR, nth_bit(sets[B_MONITOR], state.steps)) {
        return a;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// [`pick`] as first written: count, then filter entry by entry.
    fn pick_reference(rng: &mut Rng, bits: &[i8]) -> Option<usize> {
        let n = bits.iter().filter(|b| **b != 0).count();
        let k = rng.index(n)?;
        bits.iter()
            .enumerate()
            .filter(|(_, b)| **b != 0)
            .nth(k)
            .map(|(i, _)| i)
    }

    /// The same index and the same stream position as the reference, over masks of every
    /// length up to 140 (a tail of 0..7 entries), empty, sparse, dense and full, with any
    /// byte value (a mask holds 0 and 1; -128, 127 and the like test the byte arithmetic).
    #[test]
    fn pick_equals_the_one_by_one_count() {
        let mut draw = Rng::new(4, "pick-test");
        let values: [i8; 8] = [1, -1, 127, -128, 64, 2, -127, 0x40];
        let mut picked = 0;
        for case in 0..20_000u64 {
            let len = (case % 141) as usize;
            let density = [0, 3, 30, 70, 100][(case / 141 % 5) as usize];
            let bits: Vec<i8> = (0..len)
                .map(|_| {
                    if draw.range(0, 99) < density {
                        values[draw.range(0, 7) as usize]
                    } else {
                        0
                    }
                })
                .collect();
            let (mut a, mut b) = (Rng::new(case, "a"), Rng::new(case, "a"));
            let got = pick(&mut a, &bits);
            assert_eq!(got, pick_reference(&mut b, &bits), "{bits:?}");
            assert_eq!(a, b);
            picked += usize::from(got.is_some());
        }
        assert!(picked > 10_000, "{picked}");
    }
}
