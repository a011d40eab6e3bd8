//! Churn: DHCP re-leases, hosts going on and offline, migration and arrivals.

use crate::params::Params;
use crate::topology::{self, CORPORATE, DMZ, GUEST};

use super::state::State;

/// DHCP, churn, migration and arrivals for one tick. The slot of a host that arrived (new
/// services), if one did.
pub(super) fn churn(state: &mut State, params: &Params) -> Option<usize> {
    let mut arrived = None;
    let now = state.tick;
    if params.dhcp_interval > 0 && now.is_multiple_of(params.dhcp_interval) {
        // Readdressing keeps a Guest host in Guest, so the set taken first is the loop's.
        for i in topology::slots(state.hosts.active() & state.hosts.subnet(GUEST)) {
            readdress(state, i, GUEST);
        }
    }
    if params.churn > 0.0 {
        for i in topology::slots(state.hosts.active()) {
            let h = &state.hosts[i];
            if h.dc || h.decoy {
                continue;
            }
            let flip = if h.online { params.churn } else { 0.1 };
            if state.rng.churn.bernoulli(flip) {
                state.hosts[i].online = !state.hosts[i].online;
            }
        }
    }
    if params.migration > 0.0 && state.rng.churn.bernoulli(params.migration) {
        let movable: Vec<usize> = (0..state.hosts.len())
            .filter(|&i| {
                let h = &state.hosts[i];
                h.active && !h.dc && !h.decoy && (h.subnet == CORPORATE || h.subnet == GUEST)
            })
            .collect();
        if let Some(&i) = state.rng.churn.choose_index(&movable) {
            let to = if state.hosts[i].subnet == GUEST {
                CORPORATE
            } else {
                GUEST
            };
            readdress(state, i, to);
        }
    }
    if params.arrival > 0.0 && state.rng.churn.bernoulli(params.arrival) {
        let active = state.hosts.active().count_ones() as usize;
        let free: Vec<usize> = (0..state.hosts.len())
            .filter(|&i| state.hosts.active() & (1 << i) == 0)
            .collect();
        if active < params.max_active_hosts {
            if let Some(&slot) = state.rng.churn.choose_index(&free) {
                let subnet = [DMZ, CORPORATE, GUEST][state.rng.churn.below(3) as usize];
                if let Some(h) = topology::make_host(
                    &state.hosts,
                    state.hosts.active(),
                    subnet,
                    params,
                    &mut state.rng.churn,
                ) {
                    state.hosts.put(slot, h);
                    arrived = Some(slot);
                }
            }
        }
    }
    arrived
}

/// New address (and maybe subnet) for slot `i`; red loses track of it.
pub(super) fn readdress(state: &mut State, i: usize, subnet: u8) {
    let active = state.hosts.active();
    if let Some(addr) = topology::free_address(&state.hosts, active, subnet, &mut state.rng.churn) {
        state.hosts.set_subnet(i, subnet);
        let h = &mut state.hosts[i];
        h.addr = addr;
        h.discovered = subnet == DMZ || subnet == GUEST;
        h.scanned = false;
    }
}
