//! The green agent: benign users by day and night, their false positives, and background log
//! noise.

use crate::params::Params;
use crate::siem;

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
    let n_active = state.hosts.iter().filter(|h| h.active).count();
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
    state
        .hosts
        .iter()
        .enumerate()
        .filter(|(_, h)| h.active)
        .nth(n)
        .map(|(i, _)| i)
        .unwrap_or(0)
}

/// A deterministic peer for a benign line: the first DC, else the host itself.
pub(super) fn peer_of(state: &State, host: usize) -> u32 {
    state
        .hosts
        .iter()
        .find(|h| h.active && h.dc)
        .unwrap_or(&state.hosts[host])
        .addr
}
