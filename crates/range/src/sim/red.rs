//! Red's effects: what a completed red action does to the network when it succeeds, and the
//! deception it may trip.

use crate::actions::*;
use crate::params::Params;
use crate::topology::{self, SECURE};
use crate::{N_TYPES, RED};

use super::events::Events;
use super::host_sets::host_sets_with;
use super::hypervisor::red_success_probability;
use super::logging::emit;
use super::state::State;
use super::validity::{target_sets, target_sets_with};

pub(super) fn gain(state: &mut State, target: usize, level: u8, ev: &mut Events) {
    let now = state.tick;
    let h = &mut state.hosts[target];
    if h.privilege >= level {
        return;
    }
    if h.privilege == 0 {
        h.compromised_at = Some(now);
        h.detected = false;
        ev.compromised_new += 1;
        ev.user_gained += 1;
        if h.subnet == SECURE {
            ev.secure_breach += 1;
        }
        if h.dc {
            ev.dc_breach += 1;
        }
        state.metrics.compromises += 1;
        state.metrics.ever_infected = true;
    }
    if level == 2 {
        ev.root_gained += 1;
    }
    h.privilege = level;
}

pub(super) fn deception_hit(state: &mut State, target: usize) {
    state.metrics.deception_hits += 1;
    state.hosts[target].alert = true;
}

pub(super) fn complete_red(
    state: &mut State,
    params: &Params,
    kind: usize,
    target: usize,
    ev: &mut Events,
) {
    state.metrics.red_completed += 1;
    let mut sets = [0u128; N_TYPES];
    match ev.kept_services.as_mut() {
        Some(services) => {
            // Up to date for the hosts whose services changed so far this step.
            if ev.services_slots != 0 {
                services.update_slots(state, ev.services_slots);
            }
            state.hosts.sync();
            state.comm.sync();
            let hs = host_sets_with(state, services);
            target_sets_with(state, params, &hs, RED, &mut sets);
        }
        None => target_sets(state, params, RED, &mut sets),
    }
    // Unit tests step with kept service sets (sim::step's): check them against fresh ones at
    // every red completion.
    #[cfg(test)]
    {
        let mut fresh = [0u128; N_TYPES];
        target_sets(state, params, RED, &mut fresh);
        assert_eq!(sets, fresh, "kept service sets are stale mid-step");
    }
    let still_valid = (sets[kind] >> target) & 1 == 1;
    let mut p = red_success_probability(params, kind, &state.hosts[target]);
    if kind == R_PHISHING {
        // Each security awareness training on the subnet cuts phishing success by 20%.
        for _ in 0..state.awareness[state.hosts[target].subnet as usize] {
            p *= 0.8;
        }
    }
    // Always one draw, so that outcomes never shift with validity.
    let roll = state.rng.hypervisor.f64();
    let lure = state.hosts[target].decoy
        && matches!(
            kind,
            R_SCAN
                | R_ETERNAL_BLUE
                | R_BLUE_KEEP
                | R_HTTP_RFI
                | R_REMOTE_SERVICE
                | R_PASS_THE_TICKET
                | R_PASS_THE_HASH
                | R_LATERAL_SMB
                | R_IP_FRAGMENTATION
                | R_PHISHING
        );
    let mut success = still_valid && roll < p && !(lure && kind != R_SCAN);
    if still_valid && lure {
        deception_hit(state, target);
    }
    if success && kind == R_PASS_THE_TICKET && state.red.honey_creds {
        // The ticket was forged from a honeytoken: the wire trips and the ticket burns.
        deception_hit(state, target);
        state.red.honey_creds = false;
        success = false;
    }
    let src = red_source(state, target);
    let subnet = state.hosts[target].subnet;
    if matches!(kind, R_ETERNAL_BLUE | R_LATERAL_SMB)
        && state.acl_smb & (1 << subnet) != 0
        // From the internet (no session reaches the target) or from another subnet.
        && (src as usize == target || state.hosts[src as usize].subnet != subnet)
    {
        // ConfigureACL dropped SMB into the subnet: the exploit never lands. Red's mask does
        // not show blue's firewall; red learns it by failing.
        success = false;
    }
    ev.packets
        .push((src, target as u16, crate::siem::RED_FLAVOR[kind].port));
    if success {
        state.metrics.red_techniques |= 1 << kind;
        if exploit_of(kind).is_some() {
            state.metrics.successful_exploits += 1;
        }
        apply_red(state, kind, target, ev);
    }
    // The SIEM line: success 0.9, failure 0.5, a third of that after ClearEventLogs.
    let mut p_log = if success {
        params.log_p_success
    } else {
        params.log_p_failure
    };
    if state.hosts[target].quiet_until > state.tick {
        p_log *= 0.3;
    }
    if lure && still_valid {
        p_log = 1.0;
    }
    if state.rng.siem.bernoulli(p_log) {
        let peer = state.hosts[src as usize].addr;
        emit(
            state,
            params,
            target,
            kind as u8 + 1,
            peer,
            &crate::siem::RED_FLAVOR[kind],
            None,
            success,
        );
    }
}

/// The slot red acts from against `target`: a host where it has a session that reaches the
/// target, else the target itself (traffic from the internet).
pub(super) fn red_source(state: &State, target: usize) -> u16 {
    let t = &state.hosts[target];
    // `up` implies active: only the active slots can be a source.
    topology::slots(state.hosts.active())
        .find(|&i| {
            let h = &state.hosts[i];
            h.privilege > 0 && h.up() && topology::reaches(h, t)
        })
        .unwrap_or(target) as u16
}

pub(super) fn apply_red(state: &mut State, kind: usize, target: usize, ev: &mut Events) {
    let now = state.tick;
    match kind {
        R_DISCOVERY => {
            let from = state.hosts[target].clone();
            // Only an up, hence active, host is reached.
            for i in topology::slots(state.hosts.active()) {
                let h = &mut state.hosts[i];
                if topology::reaches(&from, h) {
                    h.discovered = true;
                }
            }
        }
        R_SCAN => {
            state.hosts[target].scanned = true;
        }
        R_NETWORK_SCAN => {
            // The target's whole subnet, as far as red knows it.
            let subnet = state.hosts[target].subnet;
            for i in topology::slots(state.hosts.active() & state.hosts.subnet(subnet)) {
                let h = &mut state.hosts[i];
                if h.discovered {
                    h.scanned = true;
                }
            }
        }
        R_ETERNAL_BLUE | R_BLUE_KEEP | R_LATERAL_SMB | R_PASS_THE_HASH => {
            gain(state, target, 2, ev)
        }
        R_HTTP_RFI | R_REMOTE_SERVICE | R_PHISHING | R_IP_FRAGMENTATION => {
            gain(state, target, 1, ev)
        }
        R_PRIV_ESC | R_JUICY_POTATO | R_V4L2 => gain(state, target, 2, ev),
        R_PASS_THE_TICKET => {
            let level = if state.red.domain_creds { 2 } else { 1 };
            gain(state, target, level, ev);
        }
        R_DUMP_LSASS => {
            let h = &state.hosts[target];
            if h.honeytoken {
                state.red.honey_creds = true;
            } else {
                state.red.creds |= 1 << h.subnet;
                if h.dc {
                    state.red.domain_creds = true;
                }
            }
        }
        R_PERSISTENCE => state.hosts[target].persistent = true,
        R_CLEAR_LOGS => state.hosts[target].quiet_until = now + 20,
        R_EXFILTRATE => {
            let factor = if state.hosts[target].subnet == SECURE {
                3.0
            } else {
                1.0
            };
            state.red.exfiltrated_mb += state.rng.hypervisor.uniform(5.0, 50.0) * factor;
        }
        R_RANSOMWARE => state.hosts[target].encrypted = true,
        R_KINETIC => {
            if let Some(ph) = state.physics.as_mut() {
                ph.attack();
            }
        }
        R_KERBEROAST => state.red.domain_creds = true,
        R_KILL_PROCESS => state.hosts[target].edr = false,
        R_PROCESS_INJECTION => state.hosts[target].stealth_until = now + 20,
        _ => {}
    }
}
