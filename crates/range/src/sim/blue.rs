//! Blue's effects: what a completed blue action does on its target.

use crate::actions::*;
use crate::params::Params;
use crate::topology;

use super::events::Events;
use super::state::{State, BLUE_SUBNETS, DECOY_SUBNET, MAX_TRAININGS};

pub(super) fn detect(state: &mut State, target: usize) {
    let h = &mut state.hosts[target];
    h.alert = true;
    if h.privilege > 0 && !h.detected {
        h.detected = true;
        state.metrics.compromises_detected += 1;
    }
}

pub(super) fn contain(state: &mut State, target: usize) {
    if let Some(at) = state.hosts[target].compromised_at {
        state.metrics.contained += 1;
        state.metrics.containment_ticks += state.tick - at;
    }
}

pub(super) fn complete_blue(
    state: &mut State,
    params: &Params,
    agent: usize,
    kind: usize,
    target: usize,
    ev: &mut Events,
) {
    let now = state.tick;
    if kind == B_RESTORE_BACKUP {
        // The rebuild ends whatever happened meanwhile (the host may have migrated away).
        state.hosts[target].restoring = false;
    }
    let own = BLUE_SUBNETS[agent] & (1 << state.hosts[target].subnet) != 0;
    if is_decoy_deploy(kind) {
        if !state.hosts[target].active {
            ev.services_changed = true;
            ev.services_slots |= 1 << target;
            deploy_decoy(state, params, agent, kind, target);
        }
        return;
    }
    if !state.hosts[target].active || !own {
        return;
    }
    match kind {
        B_MONITOR => {
            let h = &state.hosts[target];
            let visible = h.privilege > 0 && h.stealth_until <= now;
            let p = if h.edr { 0.9 } else { 0.6 };
            if state.rng.defence.bernoulli(p) && visible {
                detect(state, target);
            }
        }
        B_ANALYSE => {
            if state.hosts[target].privilege > 0 {
                state.hosts[target].confirmed = 2;
                detect(state, target);
            } else {
                let h = &mut state.hosts[target];
                h.confirmed = 1;
                h.alert = false;
            }
        }
        B_ISOLATE if !state.hosts[target].isolated => {
            state.hosts[target].isolated = true;
            state.metrics.hosts_isolated[agent] += 1;
            if state.hosts[target].privilege > 0 {
                ev.correct_isolation[agent] += 1;
                ev.infected_isolated += 1;
                contain(state, target);
            } else {
                ev.false_positive[agent] += 1;
                state.metrics.false_positives[agent] += 1;
            }
        }
        B_RESTORE_BACKUP => {
            if state.hosts[target].privilege > 0 {
                contain(state, target);
            }
            let h = &mut state.hosts[target];
            h.restoring = false;
            h.privilege = 0;
            h.persistent = false;
            h.encrypted = false;
            h.isolated = false;
            h.blocked = false;
            h.alert = false;
            h.confirmed = 1;
            h.corr_stage = 0;
            h.compromised_at = None;
            h.detected = false;
            h.honeytoken = false;
            h.stealth_until = 0;
            h.quiet_until = 0;
            h.misinformed = false;
            state.metrics.services_restored[agent] += 1;
        }
        B_DEPLOY_EDR => state.hosts[target].edr = true,
        B_HONEYTOKEN => state.hosts[target].honeytoken = true,
        B_ROTATE_CREDS => {
            state.red.creds &= !(1 << state.hosts[target].subnet);
            if state.hosts[target].dc {
                state.red.domain_creds = false;
            }
        }
        B_BLOCK => state.hosts[target].blocked = true,
        B_RESTORE_HOST => {
            // Back on the network, red's session dropped (the original's RestoreHost clears
            // the privilege too); persistence and encryption stay until RestoreFromBackup.
            if state.hosts[target].privilege > 0 {
                contain(state, target);
            }
            let h = &mut state.hosts[target];
            h.isolated = false;
            h.blocked = false;
            h.privilege = 0;
            h.compromised_at = None;
            h.detected = false;
        }
        B_CONFIGURE_ACL => state.acl_smb |= 1 << state.hosts[target].subnet,
        B_AWARENESS => {
            let n = &mut state.awareness[state.hosts[target].subnet as usize];
            *n = (*n + 1).min(MAX_TRAININGS);
        }
        B_MISINFORM => state.hosts[target].misinformed = true,
        B_PATCH => {
            ev.services_changed = true;
            ev.services_slots |= 1 << target;
            let h = &mut state.hosts[target];
            if let Some(s) = h
                .services
                .iter_mut()
                .filter(|s| !s.patched)
                .max_by(|a, b| a.cvss.total_cmp(&b.cvss))
            {
                s.patched = true;
            }
        }
        B_HUNT => {
            for i in topology::slots(state.hosts.active()) {
                let h = &state.hosts[i];
                let mine = BLUE_SUBNETS[agent] & (1 << h.subnet) != 0;
                if !mine || h.privilege == 0 || h.stealth_until > now {
                    continue;
                }
                let p = if h.persistent { 0.7 } else { 0.4 };
                if state.rng.defence.bernoulli(p) {
                    detect(state, i);
                }
            }
        }
        B_REMOVE => {
            let h = &state.hosts[target];
            if h.privilege == 1 {
                let p = if h.persistent { 0.2 } else { 0.9 };
                if state.rng.defence.bernoulli(p) {
                    contain(state, target);
                    let h = &mut state.hosts[target];
                    h.privilege = 0;
                    h.compromised_at = None;
                    h.detected = false;
                }
            }
        }
        B_STABILISE => {
            if let Some(ph) = state.physics.as_mut() {
                ph.stabilise();
            }
        }
        B_SHARE_INTEL => state.comm[target] = 1.0,
        _ => {}
    }
}

/// Activates free slot `slot` as a honeypot on the agent's decoy subnet, from the `decoy`
/// stream. The generic decoy looks like the juiciest target there, a legacy Windows server
/// with critical SMB and RDP; the typed ones are an Apache web server (Linux, HTTP), an SSH
/// daemon (Linux, SSH) and a Tomcat server (Windows, HTTP and HTTPS).
pub(super) fn deploy_decoy(
    state: &mut State,
    params: &Params,
    agent: usize,
    kind: usize,
    slot: usize,
) {
    let subnet = DECOY_SUBNET[agent];
    let active = state.hosts.active();
    if let Some(mut h) =
        topology::make_host(&state.hosts, active, subnet, params, &mut state.rng.decoy)
    {
        let (os, services): (u8, &[u8]) = match kind {
            B_DECOY_APACHE => (topology::OS_LINUX, &[2]),
            B_DECOY_SSHD => (topology::OS_LINUX, &[4]),
            B_DECOY_TOMCAT => (topology::OS_WIN10, &[2, 3]),
            _ => (topology::OS_LEGACY, &[0, 1]),
        };
        h.decoy = true;
        h.plc = false;
        h.dc = false;
        h.os = os;
        h.services = services
            .iter()
            .copied()
            .map(|kind| topology::Service {
                kind,
                cvss: 9.8,
                patched: false,
            })
            .collect();
        h.services
            .sort_by_key(|s| topology::SERVICES[s.kind as usize].port);
        state.hosts.put(slot, h);
        state.decoys_deployed[agent] += 1;
    }
}
