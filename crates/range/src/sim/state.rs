//! The state of an episode: plain data, serde, everything `step` reads or writes (random
//! stream positions included), so the reset contract can fingerprint it whole.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize};

use crate::physics::Physics;
use crate::rng::Rng;
use crate::siem::{LogLine, Siem};
use crate::topology::{Hosts, CORPORATE, DMZ, GUEST, OT, SECURE};
use crate::N_AGENTS;

/// Subnets each blue agent defends (bit per subnet): blue_dmz DMZ + Guest, blue_internal
/// Corporate, blue_restricted Secure + OT.
pub const BLUE_SUBNETS: [u8; 3] = [
    (1 << DMZ) | (1 << GUEST),
    1 << CORPORATE,
    (1 << SECURE) | (1 << OT),
];
/// The subnet where a blue agent deploys decoys.
pub(super) const DECOY_SUBNET: [u8; 3] = [DMZ, CORPORATE, SECURE];
pub(super) const MAX_DECOYS: u8 = 3;
/// Security awareness trainings that still help, per subnet.
pub(super) const MAX_TRAININGS: u8 = 5;
/// Packets and features of the `pcap` observation.
pub const PCAP_PACKETS: usize = 32;
pub const PCAP_FEATURES: usize = 20;

/// One agent's action: `[type, target slot]`, raw, so that out-of-range values are
/// representable (and become flagged no-ops).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentAction {
    pub kind: i64,
    pub target: i64,
}

/// Sleep: the explicit no-op (what an agent absent from a step does).
impl Default for AgentAction {
    fn default() -> AgentAction {
        AgentAction {
            kind: crate::actions::SLEEP as i64,
            target: 0,
        }
    }
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
    /// Decoy deployment (its own stream, so deploying a decoy never shifts churn).
    pub decoy: Rng,
    pub pcap: Rng,
}

/// What the last step showed (the outputs of `step`, kept in the state so the core stays a
/// pure function of it).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct StepOut {
    pub rewards: [f64; N_AGENTS],
    pub invalid: [bool; N_AGENTS],
    /// Target slot of each agent's action, -1 for Sleep.
    pub target: [i64; N_AGENTS],
    pub delta_ticks: u64,
    /// SIEM lines that became visible during the step (including `[INCIDENT]` lines): the
    /// newest lines of the SIEM buffer, referred to, not copied ([`State::new_logs`] reads
    /// them); serialised (with the state) as strings.
    pub new_logs: NewLogs,
    /// Subnets (bit per subnet) whose lines were pushed out of the rolling buffer this step.
    pub evicted_subnets: u8,
}

/// The SIEM lines that became visible during a step, in order: the newest `in_buffer` lines of
/// the SIEM buffer, after the `spilled` ones, which the same step pushed out of the buffer (or,
/// in a deserialised state, every line). Referring to the buffer's lines instead of holding
/// their text means no reference count is touched when a line is released or when the next
/// step starts (at thousands of sub-envs, each such touch was a cache miss).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewLogs {
    spilled: Vec<Arc<str>>,
    in_buffer: usize,
}

impl NewLogs {
    /// How many lines.
    pub fn len(&self) -> usize {
        self.spilled.len() + self.in_buffer
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lines' text, oldest first; `buffer` is the state's SIEM buffer.
    pub fn iter<'a>(&'a self, buffer: &'a VecDeque<LogLine>) -> impl Iterator<Item = &'a str> {
        let tail = buffer.len().saturating_sub(self.in_buffer);
        self.spilled
            .iter()
            .map(|s| &**s)
            .chain(buffer.range(tail..).map(|l| &*l.text))
    }

    pub(crate) fn clear(&mut self) {
        self.spilled.clear();
        self.in_buffer = 0;
    }

    /// A line of the step was pushed onto the buffer.
    pub(crate) fn pushed(&mut self) {
        self.in_buffer += 1;
    }

    /// `line` left the front of the buffer, which now holds `left` lines: if it was one of
    /// the step's, its text is kept.
    pub(crate) fn evicted(&mut self, line: LogLine, left: usize) {
        if self.in_buffer > left {
            self.in_buffer -= 1;
            self.spilled.push(line.text);
        }
    }
}

impl<'de> Deserialize<'de> for NewLogs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NewLogs, D::Error> {
        Ok(NewLogs {
            spilled: Vec::<String>::deserialize(d)?
                .into_iter()
                .map(Arc::from)
                .collect(),
            in_buffer: 0,
        })
    }
}

/// Everything an episode depends on.
///
/// Serialises (field by field, in this order) and compares as if `last.new_logs` were the
/// list of its lines' text.
#[derive(Debug, Clone, Deserialize)]
pub struct State {
    pub seed: u64,
    pub tick: u64,
    pub steps: u64,
    pub has_ot: bool,
    pub hosts: Hosts,
    pub agents: Vec<AgentState>,
    pub in_flight: Vec<InFlight>,
    pub next_seq: u64,
    pub red: RedState,
    pub siem: Siem,
    pub physics: Option<Physics>,
    /// The blue agents' shared channel, one entry per slot.
    pub comm: Comm,
    /// The synthesised packets of the last step (empty unless `Params::pcap`).
    pub pcap: Vec<f32>,
    pub decoys_deployed: [u8; 3],
    /// Subnets (bit per subnet) whose inbound SMB (445) blue dropped with ConfigureACL.
    pub acl_smb: u8,
    /// Security awareness trainings per subnet (each cuts phishing success by 20%).
    pub awareness: [u8; 6],
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

    /// The text of the SIEM lines that became visible during the last step, oldest first.
    pub fn new_logs(&self) -> impl Iterator<Item = &str> {
        self.last.new_logs.iter(&self.siem.buffer)
    }
}

/// The serialised form of a [`State`]: the same fields, in the same order, under the same
/// names, with `last.new_logs` written as the list of the lines' text.
#[derive(Serialize)]
#[serde(rename = "State")]
struct StateRepr<'a> {
    seed: &'a u64,
    tick: &'a u64,
    steps: &'a u64,
    has_ot: &'a bool,
    hosts: &'a Hosts,
    agents: &'a Vec<AgentState>,
    in_flight: &'a Vec<InFlight>,
    next_seq: &'a u64,
    red: &'a RedState,
    siem: &'a Siem,
    physics: &'a Option<Physics>,
    comm: &'a Comm,
    pcap: &'a Vec<f32>,
    decoys_deployed: &'a [u8; 3],
    acl_smb: &'a u8,
    awareness: &'a [u8; 6],
    metrics: &'a Metrics,
    rng: &'a Streams,
    last: StepOutRepr<'a>,
    terminated: &'a bool,
    truncated: &'a bool,
}

#[derive(Serialize)]
#[serde(rename = "StepOut")]
struct StepOutRepr<'a> {
    rewards: &'a [f64; N_AGENTS],
    invalid: &'a [bool; N_AGENTS],
    target: &'a [i64; N_AGENTS],
    delta_ticks: &'a u64,
    new_logs: LinesRepr<'a>,
    evicted_subnets: &'a u8,
}

struct LinesRepr<'a>(&'a State);

impl Serialize for LinesRepr<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut seq = ser.serialize_seq(Some(self.0.last.new_logs.len()))?;
        for text in self.0.new_logs() {
            seq.serialize_element(text)?;
        }
        seq.end()
    }
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let State {
            seed,
            tick,
            steps,
            has_ot,
            hosts,
            agents,
            in_flight,
            next_seq,
            red,
            siem,
            physics,
            comm,
            pcap,
            decoys_deployed,
            acl_smb,
            awareness,
            metrics,
            rng,
            last,
            terminated,
            truncated,
        } = self;
        let StepOut {
            rewards,
            invalid,
            target,
            delta_ticks,
            new_logs: _,
            evicted_subnets,
        } = last;
        StateRepr {
            seed,
            tick,
            steps,
            has_ot,
            hosts,
            agents,
            in_flight,
            next_seq,
            red,
            siem,
            physics,
            comm,
            pcap,
            decoys_deployed,
            acl_smb,
            awareness,
            metrics,
            rng,
            last: StepOutRepr {
                rewards,
                invalid,
                target,
                delta_ticks,
                new_logs: LinesRepr(self),
                evicted_subnets,
            },
            terminated,
            truncated,
        }
        .serialize(ser)
    }
}

impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        let State {
            seed,
            tick,
            steps,
            has_ot,
            hosts,
            agents,
            in_flight,
            next_seq,
            red,
            siem,
            physics,
            comm,
            pcap,
            decoys_deployed,
            acl_smb,
            awareness,
            metrics,
            rng,
            last,
            terminated,
            truncated,
        } = self;
        let StepOut {
            rewards,
            invalid,
            target,
            delta_ticks,
            new_logs,
            evicted_subnets,
        } = last;
        let o = &other.last;
        *seed == other.seed
            && *tick == other.tick
            && *steps == other.steps
            && *has_ot == other.has_ot
            && *hosts == other.hosts
            && *agents == other.agents
            && *in_flight == other.in_flight
            && *next_seq == other.next_seq
            && *red == other.red
            && *siem == other.siem
            && *physics == other.physics
            && *comm == other.comm
            && *pcap == other.pcap
            && *decoys_deployed == other.decoys_deployed
            && *acl_smb == other.acl_smb
            && *awareness == other.awareness
            && *metrics == other.metrics
            && *rng == other.rng
            && *rewards == o.rewards
            && *invalid == o.invalid
            && *target == o.target
            && *delta_ticks == o.delta_ticks
            && new_logs.len() == o.new_logs.len()
            && self.new_logs().eq(other.new_logs())
            && *evicted_subnets == o.evicted_subnets
            && *terminated == other.terminated
            && *truncated == other.truncated
    }
}

/// The blue agents' shared channel: one `f32` per slot, with the set of slots whose entry is
/// not zero kept beside it (what [`super::host_sets_with`] reads, a few bytes where the
/// entries are 400 bytes of cold memory at thousands of sub-envs). Serialises, compares and
/// prints as the `Vec<f32>` it derefs to; an entry is written through `comm[i]` (which marks
/// the slot for [`Comm::sync`]); [`Comm::nonzero`] is exact after a sync (`is_synced`).
#[derive(Clone, Default)]
pub struct Comm {
    values: Vec<f32>,
    nonzero: u128,
    dirty: u128,
}

impl Comm {
    pub fn new(values: Vec<f32>) -> Comm {
        let mut comm = Comm {
            values,
            nonzero: 0,
            dirty: 0,
        };
        for i in 0..comm.values.len().min(128) {
            comm.dirty |= 1 << i;
        }
        comm.sync();
        comm
    }

    /// Re-derives the marked slots' bits from their entries.
    pub fn sync(&mut self) {
        for i in crate::topology::slots(self.dirty) {
            let b = 1u128 << i;
            let on = self.values.get(i).is_some_and(|c| *c != 0.0);
            self.nonzero = (self.nonzero & !b) | (b & (on as u128).wrapping_neg());
        }
        self.dirty = 0;
    }

    pub fn is_synced(&self) -> bool {
        self.dirty == 0
    }

    /// The slots whose entry is not zero, as of the last [`Comm::sync`].
    pub fn nonzero(&self) -> u128 {
        self.nonzero
    }
}

impl std::ops::Deref for Comm {
    type Target = Vec<f32>;
    fn deref(&self) -> &Vec<f32> {
        &self.values
    }
}

impl<I: std::slice::SliceIndex<[f32]>> std::ops::Index<I> for Comm {
    type Output = I::Output;
    fn index(&self, i: I) -> &I::Output {
        &self.values[i]
    }
}

impl std::ops::IndexMut<usize> for Comm {
    fn index_mut(&mut self, i: usize) -> &mut f32 {
        let v = &mut self.values[i];
        self.dirty |= 1 << i;
        v
    }
}

impl PartialEq for Comm {
    fn eq(&self, other: &Comm) -> bool {
        self.values == other.values
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.values.fmt(f)
    }
}

impl Serialize for Comm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.values.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Comm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Comm, D::Error> {
        Vec::<f32>::deserialize(d).map(Comm::new)
    }
}
