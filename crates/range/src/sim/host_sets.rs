//! Host-slot sets: the state's hosts as bitsets over slots (max_hosts <= 124 < 128), computed
//! in one pass, from which validity, the masks and the adjacency are derived.

use crate::topology::{self, Host};

use super::state::{State, BLUE_SUBNETS, MAX_TRAININGS};
use crate::RED;

/// Host-slot sets describing the state, computed in one pass.
#[derive(Debug, PartialEq, Default)]
pub struct HostSets {
    pub(super) active: u128,
    pub(super) up: u128,
    pub(super) blocked: u128,
    pub(super) subnet: [u128; 6],
    pub(super) discovered: u128,
    pub(super) scanned: u128,
    pub(super) user: u128,
    pub(super) root: u128,
    pub(super) windows: u128,
    pub(super) linux: u128,
    pub(super) dc: u128,
    pub(super) misinformed: u128,
    pub(super) exploit_svc: [u128; 4],
    pub(super) smb: u128,
    pub(super) plc: u128,
    pub(super) edr: u128,
    pub(super) persistent: u128,
    pub(super) encrypted: u128,
    pub(super) isolated: u128,
    pub(super) restoring: u128,
    pub(super) honeytoken: u128,
    pub(super) decoy: u128,
    pub(super) unpatched: u128,
    pub(super) comm: u128,
    /// Slots in subnets whose SMB is still open (no ConfigureACL yet).
    pub(super) acl_open: u128,
    /// Slots in subnets where awareness training still helps.
    pub(super) trainable: u128,
}

impl HostSets {
    /// The slots `agent`'s observations show: active hosts red discovered, or active hosts in
    /// a blue agent's subnets (`obs::visible_to` as a set).
    pub fn visible(&self, agent: usize) -> u128 {
        if agent == RED {
            return self.active & self.discovered;
        }
        let mut subnets = 0u128;
        for (k, set) in self.subnet.iter().enumerate() {
            if BLUE_SUBNETS[agent] & (1 << k) != 0 {
                subnets |= set;
            }
        }
        self.active & subnets
    }
}

/// The sets that depend on the hosts' services, over the active slots: they change
/// only when a service does (a patch, a decoy, an arriving host), so a caller that knows when
/// that happens ([`super::step_with_sets`] says) keeps them and skips a pointer chase per host
/// per step ([`host_sets_with`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceSets {
    exploit_svc: [u128; 4],
    smb: u128,
    unpatched: u128,
}

pub fn service_sets(state: &State) -> ServiceSets {
    // Only active slots: every use of the sets takes them with the active set (an inactive
    // slot's services would not count), and inactive padding has none.
    let mut s = ServiceSets::default();
    s.update_slots(state, state.hosts.active());
    s
}

impl ServiceSets {
    /// Recomputes the bits of `slots` from their hosts (the others are left as they are):
    /// equal to [`service_sets`] when only these slots' services (or activity) changed.
    pub fn update_slots(&mut self, state: &State, slots: u128) {
        let keep = !slots;
        for set in self.exploit_svc.iter_mut() {
            *set &= keep;
        }
        self.smb &= keep;
        self.unpatched &= keep;
        for i in topology::slots(slots & state.hosts.active()) {
            let b = 1u128 << i;
            for svc in &state.hosts[i].services {
                let ex = topology::SERVICES[svc.kind as usize].exploit;
                if ex < 4 {
                    self.exploit_svc[ex] |= b;
                }
                if svc.kind == 0 {
                    self.smb |= b;
                }
                if !svc.patched {
                    self.unpatched |= b;
                }
            }
        }
    }
}

pub fn host_sets(state: &State) -> HostSets {
    host_sets_with(state, &service_sets(state))
}

/// [`host_sets`] from the state's [`service_sets`]. Every sub-env of a batch computes this
/// each step, so the slots are taken 64 at a time with 64-bit sets (a 128-bit set costs two
/// operations per update and its shift a branch); a test compares with the 128-bit loop.
///
/// The subnet and active sets come from [`topology::Hosts`]' kept sets, and only the active
/// slots' records are read (inactive padding sets no other flag).
pub fn host_sets_with(state: &State, services: &ServiceSets) -> HostSets {
    if state.hosts.is_synced() && state.comm.is_synced() {
        return host_sets_kept(state, services);
    }
    let mut s = HostSets {
        active: state.hosts.active(),
        subnet: *state.hosts.subnets(),
        ..HostSets::default()
    };
    for half in 0..2 {
        let at = 64 * half;
        let active = (s.active >> at) as u64;
        if active == 0 {
            continue;
        }
        let h = half_sets(
            &state.hosts[at..],
            active,
            state.comm.get(at..).unwrap_or(&[]),
        );
        let put = |set: &mut u128, v: u64| *set |= u128::from(v) << at;
        put(&mut s.up, h.up);
        put(&mut s.blocked, h.blocked);
        put(&mut s.discovered, h.discovered);
        put(&mut s.scanned, h.scanned);
        put(&mut s.user, h.user);
        put(&mut s.root, h.root);
        put(&mut s.windows, h.windows);
        put(&mut s.linux, h.linux);
        put(&mut s.dc, h.dc);
        put(&mut s.misinformed, h.misinformed);
        put(&mut s.plc, h.plc);
        put(&mut s.edr, h.edr);
        put(&mut s.persistent, h.persistent);
        put(&mut s.encrypted, h.encrypted);
        put(&mut s.isolated, h.isolated);
        put(&mut s.restoring, h.restoring);
        put(&mut s.honeytoken, h.honeytoken);
        put(&mut s.decoy, h.decoy);
        put(&mut s.comm, h.comm);
    }
    // Only active hosts' services count.
    for (set, svc) in s.exploit_svc.iter_mut().zip(services.exploit_svc) {
        *set = svc & s.active;
    }
    s.smb = services.smb & s.active;
    s.unpatched = services.unpatched & s.active;
    for sub in 0..5 {
        if state.acl_smb & (1 << sub) == 0 {
            s.acl_open |= s.subnet[sub];
        }
        if state.awareness[sub] < MAX_TRAININGS {
            s.trainable |= s.subnet[sub];
        }
    }
    s
}

/// [`host_sets_with`] from the host slots' kept flag sets ([`topology::Hosts::flags`]) and the
/// blue channel's ([`super::Comm::nonzero`]), exact when synced: no host record is read. A unit test compares it with the per-record loop.
fn host_sets_kept(state: &State, services: &ServiceSets) -> HostSets {
    let a = state.hosts.active();
    let f = state.hosts.flags();
    let comm = state.comm.nonzero() & a;
    let mut s = HostSets {
        active: a,
        up: a & f.online & !f.isolated & !f.restoring,
        blocked: a & f.blocked,
        subnet: *state.hosts.subnets(),
        discovered: a & f.discovered,
        scanned: a & f.scanned,
        user: a & f.user,
        root: a & f.root,
        windows: a & f.windows,
        linux: a & f.linux,
        dc: a & f.dc,
        misinformed: a & f.misinformed,
        exploit_svc: services.exploit_svc.map(|set| set & a),
        smb: services.smb & a,
        plc: a & f.plc,
        edr: a & f.edr,
        persistent: a & f.persistent,
        encrypted: a & f.encrypted,
        isolated: a & f.isolated,
        restoring: a & f.restoring,
        honeytoken: a & f.honeytoken,
        decoy: a & f.decoy,
        unpatched: services.unpatched & a,
        comm,
        acl_open: 0,
        trainable: 0,
    };
    for sub in 0..5 {
        if state.acl_smb & (1 << sub) == 0 {
            s.acl_open |= s.subnet[sub];
        }
        if state.awareness[sub] < MAX_TRAININGS {
            s.trainable |= s.subnet[sub];
        }
    }
    s
}

/// The per-host sets of up to 64 slots (`comm`: the blue channel from the first of them on).
#[derive(Default)]
struct Half {
    up: u64,
    blocked: u64,
    discovered: u64,
    scanned: u64,
    user: u64,
    root: u64,
    windows: u64,
    linux: u64,
    dc: u64,
    misinformed: u64,
    plc: u64,
    edr: u64,
    persistent: u64,
    encrypted: u64,
    isolated: u64,
    restoring: u64,
    honeytoken: u64,
    decoy: u64,
    comm: u64,
}

/// `active`: the active slots among `hosts[..64]`, the only records read.
fn half_sets(hosts: &[Host], mut active: u64, comm: &[f32]) -> Half {
    let mut s = Half::default();
    while active != 0 {
        let i = active.trailing_zeros() as usize;
        active &= active - 1;
        let h = &hosts[i];
        let b = 1u64 << i;
        // Branch-free accumulation: each flag contributes `b` or 0.
        let m = |c: bool| b & (c as u64).wrapping_neg();
        s.up |= m(h.online && !h.isolated && !h.restoring);
        s.blocked |= m(h.blocked);
        s.discovered |= m(h.discovered);
        s.scanned |= m(h.scanned);
        s.user |= m(h.privilege == 1);
        s.root |= m(h.privilege == 2);
        s.windows |= m(topology::is_windows(h.os));
        s.linux |= m(h.os == topology::OS_LINUX);
        s.dc |= m(h.dc);
        s.misinformed |= m(h.misinformed);
        s.plc |= m(h.plc);
        s.edr |= m(h.edr);
        s.persistent |= m(h.persistent);
        s.encrypted |= m(h.encrypted);
        s.isolated |= m(h.isolated);
        s.restoring |= m(h.restoring);
        s.honeytoken |= m(h.honeytoken);
        s.decoy |= m(h.decoy);
        s.comm |= m(comm.get(i).is_some_and(|c| *c != 0.0));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{Params, PRESETS, SCENARIOS};
    use crate::sampler::ActionSampler;
    use crate::sim;

    /// [`host_sets_with`] as first written: a 128-bit set update per flag and slot.
    fn host_sets_reference(state: &State, services: &ServiceSets) -> HostSets {
        let mut s = HostSets {
            active: 0,
            up: 0,
            blocked: 0,
            subnet: [0; 6],
            discovered: 0,
            scanned: 0,
            user: 0,
            root: 0,
            windows: 0,
            linux: 0,
            dc: 0,
            misinformed: 0,
            exploit_svc: [0; 4],
            smb: 0,
            plc: 0,
            edr: 0,
            persistent: 0,
            encrypted: 0,
            isolated: 0,
            restoring: 0,
            honeytoken: 0,
            decoy: 0,
            unpatched: 0,
            comm: 0,
            acl_open: 0,
            trainable: 0,
        };
        for (i, h) in state.hosts.iter().enumerate() {
            let b = 1u128 << i;
            s.subnet[h.subnet as usize] |= b;
            if !h.active {
                continue;
            }
            // Branch-free accumulation: each flag contributes `b` or 0.
            let m = |c: bool| b & (c as u128).wrapping_neg();
            s.active |= b;
            s.up |= m(h.online && !h.isolated && !h.restoring);
            s.blocked |= m(h.blocked);
            s.discovered |= m(h.discovered);
            s.scanned |= m(h.scanned);
            s.user |= m(h.privilege == 1);
            s.root |= m(h.privilege == 2);
            s.windows |= m(topology::is_windows(h.os));
            s.linux |= m(h.os == topology::OS_LINUX);
            s.dc |= m(h.dc);
            s.misinformed |= m(h.misinformed);
            s.plc |= m(h.plc);
            s.edr |= m(h.edr);
            s.persistent |= m(h.persistent);
            s.encrypted |= m(h.encrypted);
            s.isolated |= m(h.isolated);
            s.restoring |= m(h.restoring);
            s.honeytoken |= m(h.honeytoken);
            s.decoy |= m(h.decoy);
            s.comm |= m(state.comm.get(i).is_some_and(|c| *c != 0.0));
        }
        // Only active hosts' services count.
        for (set, svc) in s.exploit_svc.iter_mut().zip(services.exploit_svc) {
            *set = svc & s.active;
        }
        s.smb = services.smb & s.active;
        s.unpatched = services.unpatched & s.active;
        for sub in 0..5 {
            if state.acl_smb & (1 << sub) == 0 {
                s.acl_open |= s.subnet[sub];
            }
            if state.awareness[sub] < MAX_TRAININGS {
                s.trainable |= s.subnet[sub];
            }
        }
        s
    }

    /// Every set equals the 128-bit loop's, after every step of episodes in every scenario and
    /// preset (and with a state of more than 64 slots).
    #[test]
    fn host_sets_equal_the_128_bit_loop() {
        let mut wide = 0;
        for scenario in SCENARIOS {
            for preset in PRESETS {
                let mut params = Params::new(scenario).with_preset(preset).unwrap();
                for seed in 0..3 {
                    params.max_hosts = [params.max_hosts, 124, 40][seed as usize];
                    let mut state = sim::reset(seed, &params);
                    let mut sampler = ActionSampler::new(seed);
                    let mut mask = vec![0i8; params.mask_len()];
                    for _ in 0..150 {
                        let services = service_sets(&state);
                        let got = host_sets_with(&state, &services);
                        let want = host_sets_reference(&state, &services);
                        assert_eq!(got, want, "{scenario:?} {preset} {seed}");
                        // Both paths: from the kept flag sets (a stepped state is synced) and
                        // from the records (a slot written since).
                        assert!(state.hosts.is_synced() && state.comm.is_synced());
                        assert_eq!(host_sets_kept(&state, &services), want);
                        let mut written = state.clone();
                        let _ = &mut written.hosts[0];
                        assert!(!written.hosts.is_synced());
                        assert_eq!(host_sets_with(&written, &services), want);
                        let mut written = state.clone();
                        let _ = &mut written.comm[0];
                        assert_eq!(host_sets_with(&written, &services), want);
                        wide += usize::from(got.active >> 64 != 0);
                        if state.done() {
                            break;
                        }
                        let joint = sampler.joint(&state, &params, &mut mask);
                        sim::step(&mut state, &joint, &params);
                    }
                }
            }
        }
        assert!(wide > 100, "states with active slots past 64: {wide}");
    }
}
