//! The simulated hypervisor: exploit success probabilities and latencies. Latency is drawn in
//! simulated ticks from the `hypervisor` stream, never from a clock.

use crate::actions::*;
use crate::params::Params;
use crate::topology::{self, Host};
use crate::RED;

use super::state::State;
use super::validity::kind_of;

/// OS penalty per exploit kind (rows) and OS profile (columns).
pub(super) const OS_PENALTY: [[f64; 4]; 7] = [
    [0.0, 0.45, 0.70, 0.60],
    [0.0, 0.40, 0.70, 0.60],
    [0.05, 0.10, 0.0, 0.20],
    [0.0, 0.10, 0.05, 0.0],
    [0.0, 0.15, 0.10, 0.30],
    [0.0, 0.10, 0.60, 0.60],
    [0.0, 0.05, 0.40, 0.50],
];

/// Success probability of exploit kind `ex` against `host`: base rate minus OS penalty, CVSS
/// bonus (+0.02 per point above 6.65), EDR -0.15, clamped to [0.02, 0.98]. A fully patched
/// service leaves only the floor.
pub fn exploit_probability(params: &Params, ex: usize, host: &Host) -> f64 {
    let base = params.exploit.as_array()[ex];
    let mut p = base - OS_PENALTY[ex][host.os as usize];
    if ex < 4 {
        let best = host
            .services
            .iter()
            .filter(|s| topology::SERVICES[s.kind as usize].exploit == ex && !s.patched)
            .map(|s| f64::from(s.cvss))
            .fold(None, |m: Option<f64>, c| Some(m.map_or(c, |m| m.max(c))));
        match best {
            Some(c) => p += (c - 6.65) * 0.02,
            None => return 0.02,
        }
    }
    if host.edr {
        p -= 0.15;
    }
    p.clamp(0.02, 0.98)
}

pub(super) fn red_success_probability(params: &Params, kind: usize, host: &Host) -> f64 {
    match exploit_of(kind) {
        Some(ex) => exploit_probability(params, ex, host),
        None => {
            let mut p = red_base_success(kind);
            if host.edr && kind != R_SCAN {
                p -= 0.15;
            }
            p.clamp(0.02, 0.98)
        }
    }
}

/// Duration of a started action: exploits draw a latency ~ normal(mean, mean/4) from the
/// hypervisor, rounded, at least 1 tick; everything else takes its mean.
pub(super) fn duration(state: &mut State, agent: usize, kind: usize) -> u64 {
    let mean = kind_of(agent, kind).duration;
    if agent == RED && exploit_of(kind).is_some() {
        let d = state.rng.hypervisor.normal(mean, mean / 4.0);
        libm::round(d).max(1.0) as u64
    } else {
        mean as u64
    }
}
