//! The pure core: `State`, `reset` and `step`.
//!
//! `State` is plain data: everything an episode depends on, random stream positions included,
//! serialisable with serde (the reset contract fingerprints it whole). `reset` builds it from a
//! seed and `Params`; `step` advances it by one event-driven step. Nothing here reads a clock,
//! a global, or hash order.

use serde::{Deserialize, Serialize};

use crate::actions::*;
use crate::params::{Params, Scenario};
use crate::physics::Physics;
use crate::rng::Rng;
use crate::siem::{self, LineCtx, LogLine, Siem};
use crate::topology::{self, Host, CORPORATE, DMZ, GUEST, NONE, OT, SECURE};
use crate::{N_AGENTS, N_TYPES, RED};

/// Subnets each blue agent defends (bit per subnet): blue_dmz DMZ + Guest, blue_internal
/// Corporate, blue_restricted Secure + OT.
pub const BLUE_SUBNETS: [u8; 3] = [
    (1 << DMZ) | (1 << GUEST),
    1 << CORPORATE,
    (1 << SECURE) | (1 << OT),
];
/// The subnet where a blue agent deploys decoys.
const DECOY_SUBNET: [u8; 3] = [DMZ, CORPORATE, SECURE];
const MAX_DECOYS: u8 = 3;
/// Packets and features of the `pcap` observation.
pub const PCAP_PACKETS: usize = 32;
pub const PCAP_FEATURES: usize = 20;

/// One agent's action: `[type, target slot]`, raw, so that out-of-range values are
/// representable (and become flagged no-ops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentAction {
    pub kind: i64,
    pub target: i64,
}

/// The joint action, in agent order (`blue_dmz`, `blue_internal`, `blue_restricted`,
/// `red_operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct JointAction(pub [AgentAction; N_AGENTS]);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    pub energy: f64,
    pub in_flight: u32,
}

/// An action that has started and completes at `done_at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    pub seq: u64,
    pub agent: u8,
    pub kind: u8,
    pub target: u16,
    pub started: u64,
    pub done_at: u64,
}

/// What red has gathered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RedState {
    /// Subnets whose credentials red holds (bit per subnet).
    pub creds: u8,
    pub domain_creds: bool,
    /// Red dumped a honeytoken; using it trips the wire.
    pub honey_creds: bool,
    pub exfiltrated_mb: f64,
}

/// Running counters behind the info metrics.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Metrics {
    pub false_positives: [u32; N_AGENTS],
    pub hosts_isolated: [u32; N_AGENTS],
    pub services_restored: [u32; N_AGENTS],
    pub successful_exploits: u32,
    pub red_completed: u32,
    pub deception_hits: u32,
    pub compromises: u32,
    pub compromises_detected: u32,
    pub contained: u32,
    pub containment_ticks: u64,
    pub uptime_sum: f64,
    pub uptime_ticks: u64,
    /// Cumulative rewards per agent.
    pub score: [f64; N_AGENTS],
    /// Red action types that succeeded at least once (bit per type).
    pub red_techniques: u32,
    /// Red action types whose lines each blue agent has seen (bit per type).
    pub seen_techniques: [u32; 3],
    pub ever_infected: bool,
}

/// The named random streams of an episode, one per stochastic source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Streams {
    pub topology: Rng,
    /// Exploit and red-action outcomes and latencies.
    pub hypervisor: Rng,
    /// Blue-action outcomes.
    pub defence: Rng,
    pub siem: Rng,
    pub green: Rng,
    pub physics: Rng,
    pub churn: Rng,
    pub pcap: Rng,
}

/// What the last step showed (the outputs of `step`, kept in the state so the core stays a
/// pure function of it).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepOut {
    pub rewards: [f64; N_AGENTS],
    pub invalid: [bool; N_AGENTS],
    /// Target slot of each agent's action, -1 for Sleep.
    pub target: [i64; N_AGENTS],
    pub delta_ticks: u64,
    /// SIEM lines that became visible during the step (including `[INCIDENT]` lines).
    pub new_logs: Vec<String>,
    /// Subnets (bit per subnet) whose lines were pushed out of the rolling buffer this step.
    pub evicted_subnets: u8,
}

/// Everything an episode depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub seed: u64,
    pub tick: u64,
    pub steps: u64,
    pub has_ot: bool,
    pub hosts: Vec<Host>,
    pub agents: Vec<AgentState>,
    pub in_flight: Vec<InFlight>,
    pub next_seq: u64,
    pub red: RedState,
    pub siem: Siem,
    pub physics: Option<Physics>,
    /// The blue agents' shared channel, one entry per slot.
    pub comm: Vec<f32>,
    /// The synthesised packets of the last step (empty unless `Params::pcap`).
    pub pcap: Vec<f32>,
    pub decoys_deployed: [u8; 3],
    pub metrics: Metrics,
    pub rng: Streams,
    pub last: StepOut,
    pub terminated: bool,
    pub truncated: bool,
}

impl State {
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// Starts an episode. `params` must be valid (see [`Params::validate`]).
pub fn reset(seed: u64, params: &Params) -> State {
    let mut topo = Rng::new(seed, "topology");
    let (hosts, has_ot) = topology::generate(params, &mut topo);
    let mut siem_rng = Rng::new(seed, "siem");
    let siem = Siem::new(&mut siem_rng, params.log_buffer);
    let agent = AgentState {
        energy: params.energy_start,
        in_flight: 0,
    };
    State {
        seed,
        tick: 0,
        steps: 0,
        has_ot,
        hosts,
        agents: vec![agent; N_AGENTS],
        in_flight: Vec::with_capacity(8),
        next_seq: 0,
        red: RedState::default(),
        siem,
        physics: has_ot.then(Physics::new),
        comm: vec![0.0; params.max_hosts],
        pcap: if params.pcap {
            vec![0.0; PCAP_PACKETS * PCAP_FEATURES]
        } else {
            Vec::new()
        },
        decoys_deployed: [0; 3],
        metrics: Metrics::default(),
        rng: Streams {
            topology: topo,
            hypervisor: Rng::new(seed, "hypervisor"),
            defence: Rng::new(seed, "defence"),
            siem: siem_rng,
            green: Rng::new(seed, "green"),
            physics: Rng::new(seed, "physics"),
            churn: Rng::new(seed, "churn"),
            pcap: Rng::new(seed, "pcap"),
        },
        last: StepOut {
            target: [-1; N_AGENTS],
            ..StepOut::default()
        },
        terminated: false,
        truncated: false,
    }
}

// ---------------------------------------------------------------------------------------------
// Validity: bitsets over host slots (max_hosts <= 124 < 128).

/// Host-slot sets describing the state, computed in one pass.
pub struct HostSets {
    active: u128,
    up: u128,
    blocked: u128,
    subnet: [u128; 6],
    discovered: u128,
    scanned: u128,
    user: u128,
    root: u128,
    windows: u128,
    exploit_svc: [u128; 4],
    smb: u128,
    plc: u128,
    edr: u128,
    persistent: u128,
    encrypted: u128,
    isolated: u128,
    restoring: u128,
    honeytoken: u128,
    decoy: u128,
    unpatched: u128,
    comm: u128,
}

pub fn host_sets(state: &State) -> HostSets {
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
        s.plc |= m(h.plc);
        s.edr |= m(h.edr);
        s.persistent |= m(h.persistent);
        s.encrypted |= m(h.encrypted);
        s.isolated |= m(h.isolated);
        s.restoring |= m(h.restoring);
        s.honeytoken |= m(h.honeytoken);
        s.decoy |= m(h.decoy);
        s.comm |= m(state.comm.get(i).is_some_and(|c| *c != 0.0));
        for svc in &h.services {
            let ex = topology::SERVICES[svc.kind as usize].exploit;
            if ex < 4 {
                s.exploit_svc[ex] |= b;
            }
            s.smb |= m(svc.kind == 0);
            s.unpatched |= m(!svc.patched);
        }
    }
    s
}

/// Hosts red can send to: from the internet, and from every host where it has a session.
fn red_reachable(s: &HostSets) -> u128 {
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

/// Reachability rows as slot bitsets (`rows[i]` bit j: slot i reaches slot j), restricted to
/// the slots `agent` sees (red: what it discovered). Same rule as [`topology::reaches`].
pub fn adjacency_rows(s: &HostSets, agent: usize, rows: &mut [u128]) {
    rows.fill(0);
    let seen = if agent == RED {
        s.active & s.discovered
    } else {
        s.active
    };
    let open = s.up & !s.blocked;
    let mut cross = [0u128; 5];
    for (from, c) in cross.iter_mut().enumerate() {
        for to in 0..5u8 {
            if to as usize != from && topology::subnet_reaches(from, to) {
                *c |= open & s.subnet[to as usize];
            }
        }
    }
    for (from, c) in cross.iter().enumerate() {
        let members = s.subnet[from] & s.up & seen;
        let same = s.up & s.subnet[from] & seen;
        let far = c & seen;
        let mut bits = members;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let mut r = same;
            if s.blocked & (1 << i) == 0 {
                r |= far;
            }
            rows[i] = r & !(1u128 << i);
        }
    }
}

/// Like [`step`], with the target sets of the current state already computed (the wrapper
/// has them from rendering the masks; nothing changes the state in between).
pub fn step_with_sets(
    state: &mut State,
    actions: &JointAction,
    params: &Params,
    sets: &[[u128; N_TYPES]; N_AGENTS],
) {
    step_inner(state, actions, params, Some(sets));
}

fn target_sets_with(
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
        out[R_ETERNAL_BLUE] = target & s.scanned & s.exploit_svc[topology::EX_ETERNAL_BLUE];
        out[R_BLUE_KEEP] = target & s.scanned & s.exploit_svc[topology::EX_BLUE_KEEP];
        out[R_HTTP_RFI] = target & s.scanned & s.exploit_svc[topology::EX_HTTP_RFI];
        out[R_REMOTE_SERVICE] = target & s.scanned & s.exploit_svc[topology::EX_REMOTE_SERVICE];
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
        out[R_DISABLE_EDR] = root & s.edr;
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
        out[B_RESTORE] = reachable;
        out[B_DEPLOY_EDR] = reachable & !s.edr & !s.decoy;
        if state.decoys_deployed[agent] < MAX_DECOYS {
            out[B_DEPLOY_DECOY] = s.subnet[NONE as usize] & !s.active & all;
        }
        out[B_HONEYTOKEN] = reachable & s.windows & !s.honeytoken & !s.decoy;
        out[B_ROTATE_CREDS] = reachable;
        out[B_BLOCK] = reachable & !s.blocked & !s.isolated;
        out[B_RECONNECT] = reachable & (s.isolated | s.blocked);
        out[B_PATCH] = reachable & s.unpatched;
        out[B_HUNT] = reachable;
        out[B_KILL_PROCESS] = reachable & s.up;
        out[B_STABILISE] = reachable & s.plc;
        out[B_SHARE_INTEL] = reachable & !s.comm;
    }
    for set in out.iter_mut() {
        *set &= all;
    }
}

/// Number of type ids an agent uses.
pub fn types_of(agent: usize) -> usize {
    if agent == RED {
        RED_TYPES
    } else {
        BLUE_TYPES
    }
}

pub fn kind_of(agent: usize, kind: usize) -> &'static ActionKind {
    if agent == RED {
        &crate::actions::RED[kind]
    } else {
        &BLUE[kind]
    }
}

fn max_in_flight(params: &Params, agent: usize) -> u32 {
    if agent == RED {
        params.red_max_in_flight as u32
    } else {
        params.blue_max_in_flight as u32
    }
}

/// Whether `agent` may start an action of type `kind` now (energy and in-flight limit).
pub fn can_start(state: &State, params: &Params, agent: usize, kind: usize) -> bool {
    kind < types_of(agent)
        && state.agents[agent].in_flight < max_in_flight(params, agent)
        && state.agents[agent].energy >= kind_of(agent, kind).energy
}

/// Writes the action mask: 32 type bits, then one bit per slot. A type bit is set when the
/// type has a valid target and the agent can afford it; a slot bit when some set type is valid
/// on it. Sleep (type 0) is always set. An action outside the mask is a flagged no-op.
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
    mask.fill(0);
    mask[0] = 1;
    let mut hosts = 0u128;
    if !state.done() {
        for (k, set) in sets.iter().enumerate().skip(1) {
            if *set != 0 && can_start(state, params, agent, k) {
                mask[k] = 1;
                hosts |= set;
            }
        }
    }
    for i in 0..params.max_hosts {
        mask[N_TYPES + i] = ((hosts >> i) & 1) as i8;
    }
}

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
    if act.kind == 0 {
        return true;
    }
    if act.kind < 0 || act.kind as usize >= types_of(agent) {
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

// ---------------------------------------------------------------------------------------------
// The simulated hypervisor.

/// OS penalty per exploit kind (rows) and OS profile (columns).
const OS_PENALTY: [[f64; 4]; 7] = [
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

fn red_success_probability(params: &Params, kind: usize, host: &Host) -> f64 {
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
fn duration(state: &mut State, agent: usize, kind: usize) -> u64 {
    let mean = kind_of(agent, kind).duration;
    if agent == RED && exploit_of(kind).is_some() {
        let d = state.rng.hypervisor.normal(mean, mean / 4.0);
        libm::round(d).max(1.0) as u64
    } else {
        mean as u64
    }
}

// ---------------------------------------------------------------------------------------------
// Events of one step, turned into rewards by the scenario.

#[derive(Default)]
struct Events {
    user_gained: u32,
    root_gained: u32,
    compromised_new: u32,
    secure_breach: u32,
    dc_breach: u32,
    kinetic: bool,
    correct_isolation: [u32; 3],
    false_positive: [u32; 3],
    infected_isolated: u32,
    persistence_ticks: u32,
    packets: Vec<(u16, u16, u16, u8)>,
}

// ---------------------------------------------------------------------------------------------
// The step.

/// Advances the episode by one event-driven step: actions are validated against the state at
/// the start of the step (so the masks shown are exactly what is accepted), started, and the
/// clock runs to the next completion (at least one tick). Does nothing once the episode is over.
pub fn step(state: &mut State, actions: &JointAction, params: &Params) {
    step_inner(state, actions, params, None);
}

fn step_inner(
    state: &mut State,
    actions: &JointAction,
    params: &Params,
    sets: Option<&[[u128; N_TYPES]; N_AGENTS]>,
) {
    if state.done() {
        return;
    }
    state.last.new_logs.clear();
    state.last.evicted_subnets = 0;
    state.last.rewards = [0.0; N_AGENTS];
    state.last.invalid = [false; N_AGENTS];
    let mut ev = Events::default();

    let mut valid = [false; N_AGENTS];
    let fresh;
    let sets = match sets {
        Some(s) => s,
        None => {
            fresh = all_target_sets(state, params);
            &fresh
        }
    };
    for (a, act) in actions.0.iter().enumerate() {
        state.last.target[a] = if act.kind == 0 { -1 } else { act.target };
        valid[a] = is_valid_with(state, params, a, &sets[a], *act);
        state.last.invalid[a] = !valid[a];
    }
    for (a, act) in actions.0.iter().enumerate() {
        if valid[a] && act.kind != 0 {
            start(state, a, act.kind as usize, act.target as usize);
        }
    }

    let next = state.in_flight.iter().map(|f| f.done_at).min();
    let until = next
        .unwrap_or(state.tick + 1)
        .max(state.tick + 1)
        .min(params.max_ticks);
    let from = state.tick;
    while state.tick < until && !state.terminated {
        state.tick += 1;
        tick(state, params, &mut ev);
    }
    state.last.delta_ticks = state.tick - from;
    state.steps += 1;

    if params.pcap {
        synth_pcap(state, params, &ev);
    }
    rewards(state, params, &ev);
    if terminal(state, params, &ev) {
        state.terminated = true;
    }
    if state.tick >= params.max_ticks {
        state.truncated = true;
    }
}

fn start(state: &mut State, agent: usize, kind: usize, target: usize) {
    let cost = kind_of(agent, kind).energy;
    state.agents[agent].energy -= cost;
    state.agents[agent].in_flight += 1;
    let d = duration(state, agent, kind);
    if agent != RED && kind == B_RESTORE {
        state.hosts[target].restoring = true;
    }
    state.in_flight.push(InFlight {
        seq: state.next_seq,
        agent: agent as u8,
        kind: kind as u8,
        target: target as u16,
        started: state.tick,
        done_at: state.tick + d,
    });
    state.next_seq += 1;
}

fn tick(state: &mut State, params: &Params, ev: &mut Events) {
    let now = state.tick;
    for a in state.agents.iter_mut() {
        a.energy = (a.energy + params.energy_regen).min(params.energy_start);
    }
    // Completions, in start order.
    while let Some(pos) = state.in_flight.iter().position(|f| f.done_at <= now) {
        let f = state.in_flight.remove(pos);
        state.agents[f.agent as usize].in_flight -= 1;
        if f.agent as usize == RED {
            complete_red(state, params, f.kind as usize, f.target as usize, ev);
        } else {
            complete_blue(
                state,
                params,
                f.agent as usize,
                f.kind as usize,
                f.target as usize,
                ev,
            );
        }
    }
    green(state, params);
    churn(state, params);
    if let Some(ph) = state.physics.as_mut() {
        if ph.tick(params, &mut state.rng.physics) {
            ev.kinetic = true;
        }
    }
    // Persistence, uptime.
    let mut up = 0u32;
    let mut total = 0u32;
    for h in &state.hosts {
        if !h.active || h.decoy {
            continue;
        }
        total += 1;
        if h.up() && !h.encrypted {
            up += 1;
        }
        if h.privilege > 0 && h.persistent && h.up() {
            ev.persistence_ticks += 1;
        }
    }
    if total > 0 {
        state.metrics.uptime_sum += f64::from(up) / f64::from(total);
    }
    state.metrics.uptime_ticks += 1;
    release_logs(state, params);
}

fn gain(state: &mut State, target: usize, level: u8, ev: &mut Events) {
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

fn deception_hit(state: &mut State, target: usize) {
    state.metrics.deception_hits += 1;
    state.hosts[target].alert = true;
}

fn complete_red(state: &mut State, params: &Params, kind: usize, target: usize, ev: &mut Events) {
    state.metrics.red_completed += 1;
    let mut sets = [0u128; N_TYPES];
    target_sets(state, params, RED, &mut sets);
    let still_valid = (sets[kind] >> target) & 1 == 1;
    let p = red_success_probability(params, kind, &state.hosts[target]);
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
                | R_LATERAL_SMB
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
    ev.packets.push((
        src,
        target as u16,
        crate::siem::RED_FLAVOR[kind].port,
        kind as u8,
    ));
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
            kind as u8,
            peer,
            &crate::siem::RED_FLAVOR[kind],
            None,
            success,
        );
    }
}

/// The slot red acts from against `target`: a host where it has a session that reaches the
/// target, else the target itself (traffic from the internet).
fn red_source(state: &State, target: usize) -> u16 {
    let t = &state.hosts[target];
    state
        .hosts
        .iter()
        .position(|h| h.privilege > 0 && h.up() && topology::reaches(h, t))
        .unwrap_or(target) as u16
}

fn apply_red(state: &mut State, kind: usize, target: usize, ev: &mut Events) {
    let now = state.tick;
    match kind {
        R_DISCOVERY => {
            let from = state.hosts[target].clone();
            for h in state.hosts.iter_mut() {
                if topology::reaches(&from, h) {
                    h.discovered = true;
                }
            }
        }
        R_SCAN => {
            state.hosts[target].scanned = true;
        }
        R_ETERNAL_BLUE | R_BLUE_KEEP | R_LATERAL_SMB => gain(state, target, 2, ev),
        R_HTTP_RFI | R_REMOTE_SERVICE | R_PHISHING => gain(state, target, 1, ev),
        R_PRIV_ESC => gain(state, target, 2, ev),
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
        R_DISABLE_EDR => state.hosts[target].edr = false,
        R_PROCESS_INJECTION => state.hosts[target].stealth_until = now + 20,
        _ => {}
    }
}

fn detect(state: &mut State, target: usize) {
    let h = &mut state.hosts[target];
    h.alert = true;
    if h.privilege > 0 && !h.detected {
        h.detected = true;
        state.metrics.compromises_detected += 1;
    }
}

fn contain(state: &mut State, target: usize) {
    if let Some(at) = state.hosts[target].compromised_at {
        state.metrics.contained += 1;
        state.metrics.containment_ticks += state.tick - at;
    }
}

fn complete_blue(
    state: &mut State,
    params: &Params,
    agent: usize,
    kind: usize,
    target: usize,
    ev: &mut Events,
) {
    let now = state.tick;
    if kind == B_RESTORE {
        // The rebuild ends whatever happened meanwhile (the host may have migrated away).
        state.hosts[target].restoring = false;
    }
    let own = BLUE_SUBNETS[agent] & (1 << state.hosts[target].subnet) != 0;
    if kind == B_DEPLOY_DECOY {
        if !state.hosts[target].active {
            deploy_decoy(state, params, agent, target);
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
        B_RESTORE => {
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
        B_RECONNECT => {
            let h = &mut state.hosts[target];
            h.isolated = false;
            h.blocked = false;
        }
        B_PATCH => {
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
            for i in 0..state.hosts.len() {
                let h = &state.hosts[i];
                let mine = h.active && BLUE_SUBNETS[agent] & (1 << h.subnet) != 0;
                if !mine || h.privilege == 0 || h.stealth_until > now {
                    continue;
                }
                let p = if h.persistent { 0.7 } else { 0.4 };
                if state.rng.defence.bernoulli(p) {
                    detect(state, i);
                }
            }
        }
        B_KILL_PROCESS => {
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

fn deploy_decoy(state: &mut State, params: &Params, agent: usize, slot: usize) {
    let subnet = DECOY_SUBNET[agent];
    if let Some(mut h) = topology::make_host(&state.hosts, subnet, params, &mut state.rng.churn) {
        // A honeypot looks like the juiciest target on the subnet: a legacy Windows server
        // with critical SMB and RDP.
        h.decoy = true;
        h.plc = false;
        h.os = topology::OS_LEGACY;
        h.services = [0u8, 1]
            .into_iter()
            .map(|kind| topology::Service {
                kind,
                cvss: 9.8,
                patched: false,
            })
            .collect();
        h.services
            .sort_by_key(|s| topology::SERVICES[s.kind as usize].port);
        state.hosts[slot] = h;
        state.decoys_deployed[agent] += 1;
    }
}

/// Green agent and background noise for one tick.
fn green(state: &mut State, params: &Params) {
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

fn nth_active(state: &State, n: usize) -> usize {
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
fn peer_of(state: &State, host: usize) -> u32 {
    state
        .hosts
        .iter()
        .find(|h| h.active && h.dc)
        .unwrap_or(&state.hosts[host])
        .addr
}

/// DHCP, churn, migration and arrivals for one tick.
fn churn(state: &mut State, params: &Params) {
    let now = state.tick;
    if params.dhcp_interval > 0 && now.is_multiple_of(params.dhcp_interval) {
        for i in 0..state.hosts.len() {
            if state.hosts[i].active && state.hosts[i].subnet == GUEST {
                readdress(state, i, GUEST);
            }
        }
    }
    if params.churn > 0.0 {
        for i in 0..state.hosts.len() {
            let h = &state.hosts[i];
            if !h.active || h.dc || h.decoy {
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
        let active = state.hosts.iter().filter(|h| h.active).count();
        let free: Vec<usize> = (0..state.hosts.len())
            .filter(|&i| !state.hosts[i].active)
            .collect();
        if active < params.max_active_hosts {
            if let Some(&slot) = state.rng.churn.choose_index(&free) {
                let subnet = [DMZ, CORPORATE, GUEST][state.rng.churn.below(3) as usize];
                if let Some(h) =
                    topology::make_host(&state.hosts, subnet, params, &mut state.rng.churn)
                {
                    state.hosts[slot] = h;
                }
            }
        }
    }
}

/// New address (and maybe subnet) for slot `i`; red loses track of it.
fn readdress(state: &mut State, i: usize, subnet: u8) {
    if let Some(addr) = topology::free_address(&state.hosts, subnet, &mut state.rng.churn) {
        let h = &mut state.hosts[i];
        h.addr = addr;
        h.subnet = subnet;
        h.discovered = subnet == DMZ || subnet == GUEST;
        h.scanned = false;
    }
}

/// Writes a SIEM line (visible after the log latency).
#[allow(clippy::too_many_arguments)]
fn emit(
    state: &mut State,
    params: &Params,
    host: usize,
    source: u8,
    peer: u32,
    flavor: &siem::Flavor,
    benign_image: Option<&'static str>,
    success: bool,
) {
    let ctx = LineCtx {
        unix: state.siem.start_unix + (state.tick * params.tick_seconds) as i64,
        record: state.siem.next_record,
        computer: state.hosts[host].addr,
        peer,
        flavor,
        benign_image,
        success,
    };
    state.siem.next_record += 1;
    let text = siem::render(&ctx, &mut state.rng.siem);
    let features = siem::features(&text);
    state.siem.pending.push_back(LogLine {
        visible_at: state.tick + params.log_latency,
        host: host as u16,
        subnet: state.hosts[host].subnet,
        source,
        text,
        features,
    });
}

/// Moves lines whose time has come into the buffer, runs the correlator on them, and records
/// them as new logs of the step.
fn release_logs(state: &mut State, params: &Params) {
    while state
        .siem
        .pending
        .front()
        .is_some_and(|l| l.visible_at <= state.tick)
    {
        let line = state.siem.pending.pop_front().expect("front exists");
        if line.source != 0 {
            for (b, subs) in BLUE_SUBNETS.iter().enumerate() {
                if subs & (1 << line.subnet) != 0 {
                    state.metrics.seen_techniques[b] |= 1 << line.source;
                }
            }
        }
        let host = line.host as usize;
        let incident = siem::stage_match(state.hosts[host].corr_stage, &line.text);
        state.last.new_logs.push(line.text.clone());
        push_buffer(state, params, line);
        if let Some(keyword) = incident {
            let h = &mut state.hosts[host];
            h.corr_stage += 1;
            let text = siem::incident_text(
                state.siem.start_unix + (state.tick * params.tick_seconds) as i64,
                h.corr_stage,
                h.addr,
                keyword,
            );
            let features = siem::features(&text);
            let subnet = h.subnet;
            detect(state, host);
            state.last.new_logs.push(text.clone());
            push_buffer(
                state,
                params,
                LogLine {
                    visible_at: state.tick,
                    host: host as u16,
                    subnet,
                    source: 0,
                    text,
                    features,
                },
            );
        }
    }
}

fn push_buffer(state: &mut State, params: &Params, line: LogLine) {
    if state.siem.buffer.len() >= params.log_buffer {
        if let Some(old) = state.siem.buffer.pop_front() {
            state.last.evicted_subnets |= 1 << old.subnet;
        }
    }
    state.siem.buffer.push_back(line);
}

/// The packet synthesiser: this step's red traffic first, then benign packets, from the
/// `pcap` stream.
fn synth_pcap(state: &mut State, params: &Params, ev: &Events) {
    let active: Vec<usize> = (0..state.hosts.len())
        .filter(|&i| state.hosts[i].active)
        .collect();
    let max = params.max_hosts as f32;
    let rng = &mut state.rng.pcap;
    for p in 0..PCAP_PACKETS {
        let row = &mut state.pcap[p * PCAP_FEATURES..(p + 1) * PCAP_FEATURES];
        row.fill(0.0);
        let (src, dst, port, kind) = match ev.packets.get(p) {
            Some(&(s, d, port, k)) => (s as usize, d as usize, port, k),
            None => {
                let s = active.get(rng.below(active.len() as u64) as usize).copied();
                let d = active.get(rng.below(active.len() as u64) as usize).copied();
                let port = [443u16, 80, 53, 445, 88][rng.below(5) as usize];
                (s.unwrap_or(0), d.unwrap_or(0), port, 0)
            }
        };
        row[0] = src as f32 / max;
        row[1] = dst as f32 / max;
        let ss = state.hosts[src].subnet.min(4) as usize;
        let ds = state.hosts[dst].subnet.min(4) as usize;
        row[2 + ss] = 1.0;
        row[7 + ds] = 1.0;
        row[12] = f32::from(port) / 65535.0;
        row[13] = if port == 53 { 0.0 } else { 1.0 };
        row[14] = rng.range(60, 1500) as f32 / 1500.0;
        let flags = rng.below(32) as u8;
        row[15] = f32::from(flags & 1);
        row[16] = f32::from((flags >> 1) & 1);
        row[17] = f32::from((flags >> 2) & 1);
        row[18] = rng.f64() as f32;
        row[19] = if kind != 0 { 1.0 } else { 0.0 };
    }
}

fn rewards(state: &mut State, params: &Params, ev: &Events) {
    let mut r = [0.0f64; N_AGENTS];
    match params.scenario {
        Scenario::Ransomware => {
            r[RED] = 3.0 * f64::from(ev.user_gained)
                + 5.0 * f64::from(ev.root_gained)
                + 10.0 * f64::from(ev.compromised_new)
                + if ev.kinetic { 10_000.0 } else { 0.0 };
            let (mut total, mut clean, mut isolated) = (0u32, 0u32, 0u32);
            for h in state.hosts.iter().filter(|h| h.active && !h.decoy) {
                total += 1;
                clean += u32::from(h.privilege == 0 && !h.encrypted);
                isolated += u32::from(h.isolated);
            }
            let total = f64::from(total.max(1));
            let health = f64::from(clean) / total;
            let downtime = 5.0 * f64::from(isolated) / total;
            for (b, rb) in r.iter_mut().take(3).enumerate() {
                *rb = 5.0 * f64::from(ev.correct_isolation[b])
                    - 2.0 * f64::from(ev.false_positive[b])
                    + health
                    - downtime;
            }
        }
        Scenario::AptEspionage => {
            r[RED] = 5.0 * f64::from(ev.persistence_ticks) - 20.0 * f64::from(ev.infected_isolated);
            for (b, rb) in r.iter_mut().take(3).enumerate() {
                *rb = 20.0 * f64::from(ev.correct_isolation[b]);
            }
        }
        Scenario::CloudHybrid => {
            r[RED] = 25.0 * f64::from(ev.secure_breach);
            for rb in r.iter_mut().take(3) {
                *rb = -30.0 * f64::from(ev.secure_breach);
            }
        }
        Scenario::IotGrid => {
            r[RED] = 40.0 * f64::from(ev.dc_breach);
            for rb in r.iter_mut().take(3) {
                *rb = -250.0 * f64::from(ev.dc_breach);
            }
        }
        Scenario::OtStuxnet => {
            let k = if ev.kinetic { 10_000.0 } else { 0.0 };
            r[RED] = k;
            for rb in r.iter_mut().take(3) {
                *rb = -k;
            }
        }
    }
    for (a, v) in r.iter().enumerate() {
        state.metrics.score[a] += v;
    }
    state.last.rewards = r;
}

fn terminal(state: &State, params: &Params, ev: &Events) -> bool {
    let kinetic = state.physics.as_ref().is_some_and(|p| p.kinetic) || ev.kinetic;
    let all = |pred: &dyn Fn(&Host) -> bool| {
        let mut n = 0;
        for h in state
            .hosts
            .iter()
            .filter(|h| h.active && !h.decoy && pred(h))
        {
            if h.privilege == 0 {
                return false;
            }
            n += 1;
        }
        n > 0
    };
    match params.scenario {
        Scenario::Ransomware => kinetic || all(&|h| h.subnet == CORPORATE || h.subnet == SECURE),
        Scenario::AptEspionage => {
            state.metrics.ever_infected
                && state
                    .hosts
                    .iter()
                    .filter(|h| h.compromised())
                    .all(|h| h.isolated)
        }
        Scenario::CloudHybrid => all(&|h| h.subnet == SECURE),
        Scenario::IotGrid => all(&|h| h.dc),
        Scenario::OtStuxnet => kinetic,
    }
}
