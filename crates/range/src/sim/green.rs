//! The green agent: benign users by day and night, their false positives, and background log
//! noise.

use crate::params::Params;
use crate::siem;
use crate::topology::slots;

use super::logging::emit;
use super::state::State;

/// Green agent and background noise for one tick.
pub(super) fn green(state: &mut State, params: &Params) {
    let now = state.tick;
    let day = now % params.green_cycle < params.green_day;
    let (p_noise, p_fp) = if day {
        (params.green_noise_day, params.green_fp_day)
    } else {
        (params.green_noise_night, params.green_fp_night)
    };
    let n_active = state.hosts.active().count_ones() as usize;
    if n_active == 0 {
        return;
    }
    if state.rng.green.bernoulli(p_noise) {
        let n = state.rng.green.below(n_active as u64) as usize;
        let host = nth_active(state, n);
        let image = siem::benign_image(&mut state.rng.green);
        let peer = peer_of(state, host);
        emit(
            state,
            params,
            host,
            0,
            peer,
            &siem::BENIGN,
            Some(image),
            true,
        );
    }
    if state.rng.green.bernoulli(p_fp) {
        let n = state.rng.green.below(n_active as u64) as usize;
        let host = nth_active(state, n);
        let peer = peer_of(state, host);
        state.hosts[host].alert = true;
        emit(
            state,
            params,
            host,
            0,
            peer,
            &siem::FALSE_POSITIVE,
            None,
            false,
        );
    }
    if state.rng.siem.bernoulli(params.log_p_background) {
        let n = state.rng.siem.below(n_active as u64) as usize;
        let host = nth_active(state, n);
        let image = siem::benign_image(&mut state.rng.siem);
        let peer = peer_of(state, host);
        emit(
            state,
            params,
            host,
            0,
            peer,
            &siem::BENIGN,
            Some(image),
            true,
        );
    }
}

pub(super) fn nth_active(state: &State, n: usize) -> usize {
    slots(state.hosts.active()).nth(n).unwrap_or(0)
}

/// A deterministic peer for a benign line: the first DC, else the host itself.
pub(super) fn peer_of(state: &State, host: usize) -> u32 {
    let dc = slots(state.hosts.active()).find(|&i| state.hosts[i].dc);
    state.hosts[dc.unwrap_or(host)].addr
}
