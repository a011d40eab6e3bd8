//! Validity: which actions are possible now, as bitsets over host slots (max_hosts <= 124 <
//! 128), and the action masks and adjacency rows the observations show. The masks and the
//! step read the same sets, so a masked action is exactly an accepted one.

use crate::actions::*;
use crate::params::Params;
use crate::topology::{self, CORPORATE, GUEST, NONE, SECURE};
use crate::{N_AGENTS, N_TYPES, RED};

use super::host_sets::{host_sets, HostSets};
use super::state::{AgentAction, State, BLUE_SUBNETS, MAX_DECOYS};

/// Hosts red can send to: from the internet, and from every host where it has a session.
pub(super) fn red_reachable(s: &HostSets) -> u128 {
    let open = s.up & !s.blocked;
    let mut r = 0u128;
    for sub in 0..5u8 {
        if topology::subnet_reaches(topology::INTERNET, sub) {
            r |= open & s.subnet[sub as usize];
        }
    }
    let session = (s.user | s.root) & s.up;
    for from in 0..5u8 {
        let in_sub = session & s.subnet[from as usize];
        if in_sub == 0 {
            continue;
        }
        r |= s.up & s.subnet[from as usize];
        if in_sub & !s.blocked != 0 {
            for to in 0..5u8 {
                if to != from && topology::subnet_reaches(from as usize, to) {
                    r |= open & s.subnet[to as usize];
                }
            }
        }
    }
    r
}

/// For each action type of `agent`, the slots where it is valid ignoring energy and
/// in-flight limits (the "situation" part of validity).
pub fn target_sets(state: &State, params: &Params, agent: usize, out: &mut [u128; N_TYPES]) {
    let s = host_sets(state);
    target_sets_with(state, params, &s, agent, out);
}

/// [`target_sets`] for every agent, sharing one pass over the hosts.
pub fn all_target_sets(state: &State, params: &Params) -> [[u128; N_TYPES]; N_AGENTS] {
    all_target_sets_with(state, params, &host_sets(state))
}

/// [`all_target_sets`] from precomputed [`host_sets`].
pub fn all_target_sets_with(
    state: &State,
    params: &Params,
    s: &HostSets,
) -> [[u128; N_TYPES]; N_AGENTS] {
    let mut out = [[0u128; N_TYPES]; N_AGENTS];
    for (a, sets) in out.iter_mut().enumerate() {
        target_sets_with(state, params, s, a, sets);
    }
    out
}

/// Everything [`adjacency_rows`] reads of the host sets for one agent: equal inputs give
/// equal rows, so a caller that keeps the inputs of the rows it last wrote (128 bytes) knows
/// when the rows may have moved without keeping or comparing the rows (1.6 KB per agent at
/// 100 slots).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdjacencyInputs {
    /// The slots the agent sees (red: what it discovered).
    seen: u128,
    up: u128,
    blocked: u128,
    subnet: [u128; 5],
}

impl AdjacencyInputs {
    /// The slots whose rows may be non-zero (every other row of these inputs is zero).
    pub fn seen(&self) -> u128 {
        self.seen
    }
}

/// The inputs of `agent`'s adjacency rows, restricted to the slots it sees: every term of
/// [`adjacency_rows_from`] is masked by `seen` (a row's slot is a member, so seen; its bits
/// are `up`, `open` and subnet sets and-ed with `seen`), so the rows are the same, and a
/// change to a slot the agent does not see does not move the inputs.
pub fn adjacency_inputs(s: &HostSets, agent: usize) -> AdjacencyInputs {
    let seen = if agent == RED {
        s.active & s.discovered
    } else {
        s.active
    };
    AdjacencyInputs {
        seen,
        up: s.up & seen,
        blocked: s.blocked & seen,
        subnet: std::array::from_fn(|k| s.subnet[k] & seen),
    }
}

/// Reachability rows as slot bitsets (`rows[i]` bit j: slot i reaches slot j), restricted to
/// the slots `agent` sees (red: what it discovered). Same rule as [`topology::reaches`].
pub fn adjacency_rows(s: &HostSets, agent: usize, rows: &mut [u128]) {
    adjacency_rows_from(&adjacency_inputs(s, agent), rows);
}

/// [`adjacency_rows`] from its inputs alone (all zero inputs: all zero rows).
pub fn adjacency_rows_from(x: &AdjacencyInputs, rows: &mut [u128]) {
    rows.fill(0);
    let seen = x.seen;
    let open = x.up & !x.blocked;
    let mut cross = [0u128; 5];
    for (from, c) in cross.iter_mut().enumerate() {
        for to in 0..5u8 {
            if to as usize != from && topology::subnet_reaches(from, to) {
                *c |= open & x.subnet[to as usize];
            }
        }
    }
    for (from, c) in cross.iter().enumerate() {
        let members = x.subnet[from] & x.up & seen;
        let same = x.up & x.subnet[from] & seen;
        let far = c & seen;
        let mut bits = members;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let mut r = same;
            if x.blocked & (1 << i) == 0 {
                r |= far;
            }
            rows[i] = r & !(1u128 << i);
        }
    }
}

pub(super) fn target_sets_with(
    state: &State,
    params: &Params,
    s: &HostSets,
    agent: usize,
    out: &mut [u128; N_TYPES],
) {
    *out = [0; N_TYPES];
    let all = if params.max_hosts >= 128 {
        u128::MAX
    } else {
        (1u128 << params.max_hosts) - 1
    };
    if agent == RED {
        let reach = red_reachable(s);
        let known = s.discovered & s.active;
        let session = (s.user | s.root) & s.up;
        let root = s.root & s.up;
        let nopriv = s.active & !(s.user | s.root);
        let target = known & reach & nopriv;
        let mut cred_sub = 0u128;
        for sub in 0..5 {
            if state.red.creds & (1 << sub) != 0 || state.red.domain_creds || state.red.honey_creds
            {
                cred_sub |= s.subnet[sub];
            }
        }
        let corp_guest = s.subnet[CORPORATE as usize] | s.subnet[GUEST as usize];
        let corp_secure = s.subnet[CORPORATE as usize] | s.subnet[SECURE as usize];
        out[R_DISCOVERY] = session;
        out[R_SCAN] = known & reach;
        // What red's scan showed: a misinformed host shows a Linux box with HTTP and SSH.
        let shown = |ex: usize| {
            let fake = ex == topology::EX_HTTP_RFI || ex == topology::EX_REMOTE_SERVICE;
            let fake = s.misinformed & (fake as u128).wrapping_neg();
            (s.exploit_svc[ex] & !s.misinformed) | fake
        };
        out[R_ETERNAL_BLUE] = target & s.scanned & shown(topology::EX_ETERNAL_BLUE);
        out[R_BLUE_KEEP] = target & s.scanned & shown(topology::EX_BLUE_KEEP);
        out[R_HTTP_RFI] = target & s.scanned & shown(topology::EX_HTTP_RFI);
        out[R_REMOTE_SERVICE] = target & s.scanned & shown(topology::EX_REMOTE_SERVICE);
        out[R_JUICY_POTATO] = s.user & s.up & s.windows;
        out[R_V4L2] = s.user & s.up & s.linux;
        // NTLM hashes of the domain: red holds root on a domain controller.
        if root & s.dc != 0 {
            out[R_PASS_THE_HASH] = target & s.windows;
        }
        out[R_NETWORK_SCAN] = known & reach;
        out[R_IP_FRAGMENTATION] = target & s.scanned;
        out[R_PRIV_ESC] = s.user & s.up;
        out[R_DUMP_LSASS] = root & s.windows;
        out[R_PASS_THE_TICKET] = target & cred_sub & s.windows;
        out[R_LATERAL_SMB] = target & cred_sub & s.smb & s.scanned;
        out[R_PHISHING] = known & nopriv & corp_guest & s.up;
        out[R_PERSISTENCE] = session & !s.persistent;
        out[R_CLEAR_LOGS] = root;
        out[R_EXFILTRATE] = session;
        out[R_RANSOMWARE] = root & !s.encrypted & !s.plc;
        out[R_KINETIC] = root & s.plc;
        out[R_KERBEROAST] = session & s.windows & corp_secure;
        out[R_KILL_PROCESS] = root & s.edr;
        out[R_PROCESS_INJECTION] = session & s.windows;
    } else {
        let mut own = 0u128;
        for sub in 0..5 {
            if BLUE_SUBNETS[agent] & (1 << sub) != 0 {
                own |= s.subnet[sub];
            }
        }
        own &= s.active;
        let reachable = own & s.active & !s.restoring;
        out[B_MONITOR] = reachable & s.up;
        out[B_ANALYSE] = reachable & s.up;
        out[B_ISOLATE] = reachable & !s.isolated;
        out[B_RESTORE_BACKUP] = reachable;
        out[B_RESTORE_HOST] = reachable & (s.isolated | s.blocked);
        out[B_REMOVE] = reachable & s.up;
        out[B_CONFIGURE_ACL] = reachable & s.acl_open;
        out[B_AWARENESS] = reachable & s.trainable;
        out[B_MISINFORM] = reachable & !s.misinformed & !s.decoy;
        out[B_DEPLOY_EDR] = reachable & !s.edr & !s.decoy;
        if state.decoys_deployed[agent] < MAX_DECOYS {
            let free = s.subnet[NONE as usize] & !s.active & all;
            for kind in [B_DEPLOY_DECOY, B_DECOY_APACHE, B_DECOY_SSHD, B_DECOY_TOMCAT] {
                out[kind] = free;
            }
        }
        out[B_HONEYTOKEN] = reachable & s.windows & !s.honeytoken & !s.decoy;
        out[B_ROTATE_CREDS] = reachable;
        out[B_BLOCK] = reachable & !s.blocked & !s.isolated;
        out[B_PATCH] = reachable & s.unpatched;
        out[B_HUNT] = reachable;
        out[B_STABILISE] = reachable & s.plc;
        out[B_SHARE_INTEL] = reachable & !s.comm;
    }
    for set in out.iter_mut() {
        *set &= all;
    }
}

/// Number of type ids an agent uses (Sleep included).
pub fn types_of(agent: usize) -> usize {
    catalogue(agent == RED).iter().filter(|k| k.used()).count()
}

pub fn kind_of(agent: usize, kind: usize) -> &'static ActionKind {
    &catalogue(agent == RED)[kind]
}

pub(super) fn max_in_flight(params: &Params, agent: usize) -> u32 {
    if agent == RED {
        params.red_max_in_flight as u32
    } else {
        params.blue_max_in_flight as u32
    }
}

/// Whether `agent` may start an action of type `kind` now (energy and in-flight limit).
pub fn can_start(state: &State, params: &Params, agent: usize, kind: usize) -> bool {
    kind < N_TYPES
        && kind_of(agent, kind).used()
        && state.agents[agent].in_flight < max_in_flight(params, agent)
        && state.agents[agent].energy >= kind_of(agent, kind).energy
}

/// Writes the action mask: 32 type bits, then one bit per slot. A type bit is set when the
/// type has a valid target and the agent can afford it; a slot bit when some set type is valid
/// on it. Sleep ([`SLEEP`]) is always set. An action outside the mask is a flagged no-op.
pub fn write_mask(state: &State, params: &Params, agent: usize, mask: &mut [i8]) {
    let mut sets = [0u128; N_TYPES];
    target_sets(state, params, agent, &mut sets);
    write_mask_with(state, params, agent, &sets, mask);
}

/// [`write_mask`] from precomputed [`target_sets`].
pub fn write_mask_with(
    state: &State,
    params: &Params,
    agent: usize,
    sets: &[u128; N_TYPES],
    mask: &mut [i8],
) {
    let (types, slots) = mask.split_at_mut(N_TYPES);
    let mut hosts = 0u128;
    // `can_start` for every type at once: the in-flight limit and the energy are the agent's.
    let room = state.agents[agent].in_flight < max_in_flight(params, agent);
    let energy = state.agents[agent].energy;
    let kinds = catalogue(agent == RED);
    for (k, (bit, set)) in types.iter_mut().zip(sets).enumerate() {
        let on = k == SLEEP
            || (room && !state.done() && *set != 0 && kinds[k].used() && energy >= kinds[k].energy);
        *bit = i8::from(on);
        if on && k != SLEEP {
            hosts |= set;
        }
    }
    let n = slots.len().min(params.max_hosts);
    let (shown, rest) = slots.split_at_mut(n);
    // Eight slots per table look-up rather than a 128-bit shift per slot (four masks of up to
    // 124 slots per step).
    let mut chunks = shown.chunks_exact_mut(8);
    for (k, chunk) in (&mut chunks).enumerate() {
        let bytes = BIT_BYTES[((hosts >> (8 * k)) & 0xff) as usize].to_le_bytes();
        chunk.copy_from_slice(&bytes.map(|b| b as i8));
    }
    // The last, shorter chunk (`k % 16`: no shift past the set when there is none).
    let k = n / 8;
    let bytes = BIT_BYTES[((hosts >> (8 * (k % 16))) & 0xff) as usize].to_le_bytes();
    for (bit, b) in chunks.into_remainder().iter_mut().zip(bytes) {
        *bit = b as i8;
    }
    rest.fill(0);
}

/// `BIT_BYTES[b]` holds bit j of `b` in its byte j (little endian): a mask byte per bit.
const BIT_BYTES: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 0;
        while j < 8 {
            t[b] |= (((b >> j) & 1) as u64) << (8 * j);
            j += 1;
        }
        b += 1;
    }
    t
};

/// Whether `(kind, target)` is a valid action of `agent` now.
pub fn is_valid(state: &State, params: &Params, agent: usize, act: AgentAction) -> bool {
    let mut sets = [0u128; N_TYPES];
    target_sets(state, params, agent, &mut sets);
    is_valid_with(state, params, agent, &sets, act)
}

/// [`is_valid`] from precomputed [`target_sets`].
pub fn is_valid_with(
    state: &State,
    params: &Params,
    agent: usize,
    sets: &[u128; N_TYPES],
    act: AgentAction,
) -> bool {
    if act.kind == SLEEP as i64 {
        return true;
    }
    if act.kind < 0 || act.kind as usize >= N_TYPES {
        return false;
    }
    if act.target < 0 || act.target as usize >= params.max_hosts {
        return false;
    }
    let kind = act.kind as usize;
    if state.done() || !can_start(state, params, agent, kind) {
        return false;
    }
    (sets[kind] >> act.target) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Scenario;
    use crate::rng::Rng;

    /// Masking the adjacency inputs by the slots seen (what [`adjacency_inputs`] keeps) gives
    /// the rows of the unmasked sets, over random sets with few and many slots seen.
    #[test]
    fn masked_adjacency_inputs_give_the_same_rows() {
        let mut rng = Rng::new(9, "adjacency-test");
        let mut set = |density: u32| {
            let mut v = 0u128;
            for i in 0..124 {
                if rng.range(0, 99) < density {
                    v |= 1 << i;
                }
            }
            v
        };
        for k in 0..2000 {
            let hs = HostSets {
                active: set([30, 60, 95][k % 3]),
                discovered: set([10, 50, 90][k / 3 % 3]),
                up: set(80),
                blocked: set(20),
                subnet: std::array::from_fn(|_| set(30)),
                ..HostSets::default()
            };
            for agent in [0, RED] {
                let seen = if agent == RED {
                    hs.active & hs.discovered
                } else {
                    hs.active
                };
                let raw = AdjacencyInputs {
                    seen,
                    up: hs.up,
                    blocked: hs.blocked,
                    subnet: std::array::from_fn(|k| hs.subnet[k]),
                };
                let (mut a, mut b) = ([0u128; 124], [0u128; 124]);
                adjacency_rows_from(&raw, &mut a);
                adjacency_rows_from(&adjacency_inputs(&hs, agent), &mut b);
                assert_eq!(a, b, "case {k} agent {agent}");
            }
        }
    }

    /// The slot bits as first written: one shift per slot.
    fn slots_reference(hosts: u128, max_hosts: usize, slots: &mut [i8]) {
        for (i, bit) in slots.iter_mut().take(max_hosts).enumerate() {
            *bit = ((hosts >> i) & 1) as i8;
        }
        let n = slots.len().min(max_hosts);
        slots[n..].fill(0);
    }

    #[test]
    fn mask_slots_equal_one_shift_per_slot() {
        let mut params = Params::new(Scenario::Ransomware);
        let state = super::super::reset(1, &params);
        let mut rng = Rng::new(5, "mask-test");
        for max_hosts in [1, 7, 8, 9, 63, 64, 65, 100, 123, 124] {
            params.max_hosts = max_hosts;
            for _ in 0..50 {
                let mut sets = [0u128; N_TYPES];
                for set in sets.iter_mut() {
                    if rng.range(0, 3) == 0 {
                        *set = u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64());
                        *set &= u128::from(rng.next_u64()) | u128::from(rng.next_u64()) << 64;
                    }
                }
                for agent in 0..N_AGENTS {
                    for extra in [0, 3, 128 - max_hosts] {
                        let len = N_TYPES + max_hosts + extra;
                        let mut got = vec![7i8; len];
                        write_mask_with(&state, &params, agent, &sets, &mut got);
                        let mut want = got.clone();
                        let hosts = (0..N_TYPES)
                            .filter(|&k| k != SLEEP && got[k] == 1)
                            .fold(0u128, |h, k| h | sets[k]);
                        slots_reference(hosts, max_hosts, &mut want[N_TYPES..]);
                        assert_eq!(got, want, "max_hosts {max_hosts} agent {agent}");
                    }
                }
            }
        }
    }
}
