//! Rendering observations and infos from a [`State`]. Every function writes a whole array from
//! the state alone, so a fresh rendering and the wrapper's incrementally maintained arrays can
//! be compared byte for byte.

use lockstep_canon::{Map, Number, Value};

use crate::actions::{BLUE, RED as RED_KINDS};
use crate::params::Params;
use crate::siem::{self, EMBED_DIM};
use crate::sim::{self, State, BLUE_SUBNETS, PCAP_FEATURES, PCAP_PACKETS};
use crate::topology;
use crate::{N_AGENTS, RED};

/// Length of `obs`.
pub const OBS_LEN: usize = 256;
/// Telemetry scalars + objective vector before the host pairs.
const HEADER: usize = 8;

/// Observation keys of an agent, sorted.
pub fn keys(params: &Params, agent: usize) -> Vec<&'static str> {
    let mut k = vec![
        "action_mask",
        "adj_matrix",
        "delta_t",
        "obs",
        "siem_embedding",
    ];
    if agent != RED {
        k.push("blue_comm");
    }
    if params.pcap {
        k.push("pcap");
    }
    if params.node_features {
        k.push("node_features");
    }
    k.sort_unstable();
    k
}

/// Shape of observation `key`.
pub fn shape(params: &Params, key: &str) -> Vec<usize> {
    match key {
        "obs" => vec![OBS_LEN],
        "action_mask" => vec![params.mask_len()],
        "siem_embedding" => vec![EMBED_DIM],
        "adj_matrix" => vec![params.max_hosts * params.max_hosts],
        "delta_t" => vec![1],
        "blue_comm" => vec![params.max_hosts],
        "pcap" => vec![PCAP_PACKETS, PCAP_FEATURES],
        "node_features" => vec![params.max_hosts, NODE_FEATURES],
        _ => vec![0],
    }
}

/// Blue's view of a host, as bits scaled to [0, 1].
fn blue_code(h: &topology::Host) -> f32 {
    let bits = u32::from(h.alert)
        | u32::from(h.confirmed == 2) << 1
        | u32::from(h.confirmed == 1) << 2
        | u32::from(h.isolated) << 3
        | u32::from(h.edr) << 4
        | u32::from(h.blocked) << 5
        | u32::from(h.restoring || !h.online) << 6
        | u32::from(h.decoy) << 7;
    bits as f32 / 255.0
}

/// Red's view of a host it discovered.
fn red_code(h: &topology::Host) -> f32 {
    let bits = u32::from(h.scanned)
        | u32::from(h.privilege == 1) << 1
        | u32::from(h.privilege == 2) << 2
        | u32::from(h.persistent) << 3
        | u32::from(h.encrypted) << 4
        | u32::from(!h.up()) << 5
        | u32::from(h.scanned && h.plc) << 6
        | u32::from(h.scanned && h.dc) << 7;
    bits as f32 / 255.0
}

fn visible_to(agent: usize, h: &topology::Host) -> bool {
    h.active
        && if agent == RED {
            h.discovered
        } else {
            BLUE_SUBNETS[agent] & (1 << h.subnet) != 0
        }
}

/// `obs`: tick fraction, energy fraction, in-flight fraction, the scenario one-hot (5), then
/// `[address code, state code]` per visible host in slot order (address code = (slot+1) /
/// max_hosts), zero padded.
pub fn write_obs(state: &State, params: &Params, agent: usize, out: &mut [f32]) {
    out.fill(0.0);
    let a = &state.agents[agent];
    let max_in_flight = if agent == RED {
        params.red_max_in_flight
    } else {
        params.blue_max_in_flight
    };
    out[0] = (state.tick as f64 / params.max_ticks as f64) as f32;
    out[1] = (a.energy / params.energy_start) as f32;
    out[2] = a.in_flight as f32 / max_in_flight as f32;
    out[3 + params.scenario.index()] = 1.0;
    let mut k = HEADER;
    // Only active slots are visible.
    for i in topology::slots(state.hosts.active()) {
        let h = &state.hosts[i];
        if k + 2 > OBS_LEN {
            break;
        }
        if !visible_to(agent, h) {
            continue;
        }
        out[k] = (i + 1) as f32 / params.max_hosts as f32;
        out[k + 1] = if agent == RED {
            red_code(h)
        } else {
            blue_code(h)
        };
        k += 2;
    }
}

/// [`write_obs`] into `out` holding an earlier `write_obs` whose entries from `written` on are
/// zero, given the slots `agent` sees ([`sim::HostSets::visible`]); returns the new `written`.
/// Only the visible hosts are read, in slot order, instead of every slot (at 100 slots and
/// about 20 hosts, most are padding), and only the header, the host pairs and the pairs the
/// last write had beyond them are written, not the whole zero tail: at thousands of sub-envs
/// a buffer row is cold, and each cache line written costs a miss. A test compares with
/// [`write_obs`] step after step.
pub fn write_obs_over(
    state: &State,
    params: &Params,
    agent: usize,
    visible: u128,
    out: &mut [f32],
    written: usize,
) -> usize {
    let a = &state.agents[agent];
    let max_in_flight = if agent == RED {
        params.red_max_in_flight
    } else {
        params.blue_max_in_flight
    };
    out[..HEADER].fill(0.0);
    out[0] = (state.tick as f64 / params.max_ticks as f64) as f32;
    out[1] = (a.energy / params.energy_start) as f32;
    out[2] = a.in_flight as f32 / max_in_flight as f32;
    out[3 + params.scenario.index()] = 1.0;
    let mut k = HEADER;
    let mut bits = visible;
    while bits != 0 && k + 2 <= OBS_LEN {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let h = &state.hosts[i];
        out[k] = (i + 1) as f32 / params.max_hosts as f32;
        out[k + 1] = if agent == RED {
            red_code(h)
        } else {
            blue_code(h)
        };
        k += 2;
    }
    if written > k {
        out[k..written].fill(0.0);
    }
    k
}

pub fn write_mask(state: &State, params: &Params, agent: usize, out: &mut [i8]) {
    sim::write_mask(state, params, agent, out);
}

/// `siem_embedding`: the last `embedding_lines` visible lines about the agent's subnets,
/// feature-hashed and L2-normalised. Red's is zeros.
/// The subnets (bit per subnet) whose SIEM lines changed this step: the lines that became
/// visible are the newest of the buffer, plus the subnets that lost a line to eviction. An
/// embedding needs rewriting only when its subnets are among them.
pub fn subnets_with_changed_lines(state: &State) -> u8 {
    let fresh = state.last.new_logs.len().min(state.siem.buffer.len());
    state
        .siem
        .buffer
        .iter()
        .rev()
        .take(fresh)
        .fold(state.last.evicted_subnets, |m, l| m | 1 << l.subnet)
}

pub fn write_embedding(state: &State, params: &Params, agent: usize, out: &mut [f32]) {
    let mut acc = [0.0f32; EMBED_DIM];
    if agent != RED {
        let mut n = 0;
        for line in state.siem.buffer.iter().rev() {
            if n == params.embedding_lines {
                break;
            }
            if BLUE_SUBNETS[agent] & (1 << line.subnet) != 0 {
                siem::accumulate(&mut acc, &line.features);
                n += 1;
            }
        }
        siem::normalise(&mut acc);
    }
    out.copy_from_slice(&acc);
}

/// Rewrites the entries of `adj_matrix` that differ between `prev` (what `out` holds) and
/// `rows`; every row when `prev` is `None`. Only the flipped entries are written: a changed
/// row usually gains or loses a host or two, and a large batch cannot afford to bring whole
/// rows (400 bytes each) into cache for that.
pub fn write_adj_changed(params: &Params, out: &mut [f32], rows: &[u128], prev: Option<&[u128]>) {
    let n = params.max_hosts;
    for (i, &r) in rows.iter().enumerate().take(n) {
        let row = &mut out[i * n..(i + 1) * n];
        if let Some(p) = prev {
            let mut flipped = p[i] ^ r;
            while flipped != 0 {
                let j = flipped.trailing_zeros() as usize;
                row[j] = if (r >> j) & 1 == 1 { 1.0 } else { 0.0 };
                flipped &= flipped - 1;
            }
            continue;
        }
        row.fill(0.0);
        let mut bits = r;
        while bits != 0 {
            row[bits.trailing_zeros() as usize] = 1.0;
            bits &= bits - 1;
        }
    }
}

/// [`write_adj_changed`] with a `prev`, visiting only the rows in `candidates`: the caller
/// knows every other row is zero in both `rows` and `prev` (an adjacency row is non-zero only
/// for a slot the agent sees), so those rows have nothing to flip. A test compares the two.
pub fn write_adj_flips(
    params: &Params,
    out: &mut [f32],
    rows: &[u128],
    prev: &[u128],
    candidates: u128,
) {
    let n = params.max_hosts;
    let mut cand = candidates;
    while cand != 0 {
        let i = cand.trailing_zeros() as usize;
        cand &= cand - 1;
        if i >= n {
            break;
        }
        let r = rows[i];
        let mut flipped = prev[i] ^ r;
        let row = &mut out[i * n..(i + 1) * n];
        while flipped != 0 {
            let j = flipped.trailing_zeros() as usize;
            row[j] = if (r >> j) & 1 == 1 { 1.0 } else { 0.0 };
            flipped &= flipped - 1;
        }
    }
}

/// `adj_matrix`: `[i * max_hosts + j] = 1` when slot i reaches slot j; red sees only pairs it
/// discovered.
pub fn write_adj(state: &State, params: &Params, agent: usize, out: &mut [f32]) {
    let mut rows = [0u128; 128];
    sim::adjacency_rows(&sim::host_sets(state), agent, &mut rows[..params.max_hosts]);
    write_adj_changed(params, out, &rows[..params.max_hosts], None);
}

pub fn write_delta(state: &State, out: &mut [f32]) {
    out[0] = (state.last.delta_ticks as f64 / 50.0) as f32;
}

pub fn write_comm(state: &State, out: &mut [f32]) {
    out.copy_from_slice(&state.comm);
}

pub fn write_pcap(state: &State, out: &mut [f32]) {
    out.copy_from_slice(&state.pcap);
}

/// Columns of `node_features`.
pub const NODE_FEATURES: usize = 8;

/// The original's subnet encoding (DMZ 0.2, Corporate 0.4, Secure 0.6, OT 0.8), with Guest,
/// which the original leaves at 0, as 1.0; padding 0.
fn subnet_code(subnet: u8) -> f32 {
    match subnet {
        topology::DMZ => 0.2,
        topology::CORPORATE => 0.4,
        topology::SECURE => 0.6,
        topology::OT => 0.8,
        topology::GUEST => 1.0,
        _ => 0.0,
    }
}

/// `node_features`: one row per slot, `[privilege, online, compromised, decoy, domain
/// controller, subnet, CVSS/10, EDR]` in the original's column order, but each agent sees only
/// what it can know (the original gives every agent the ground truth). Rows of hosts the agent
/// cannot see (blue: outside its subnets; red: undiscovered) and of inactive slots are zero.
///
/// - red: privilege and compromised from its own sessions (0.5 user, 1.0 root); decoy always 0
///   (a honeypot's point is that red cannot tell); domain controller and CVSS (highest
///   unpatched service) only once scanned, and a misinformed host shows the decoy profile's
///   CVSS 0; EDR only on hosts where it holds root.
/// - blue: privilege and compromised are 1.0 only when Analyze confirmed a compromise (never
///   red's actual level); decoy, domain controller, CVSS and EDR as they are on its hosts.
pub fn write_node_features(state: &State, params: &Params, agent: usize, out: &mut [f32]) {
    out.fill(0.0);
    for (i, h) in state.hosts.iter().enumerate().take(params.max_hosts) {
        if !visible_to(agent, h) {
            continue;
        }
        let cvss = h
            .services
            .iter()
            .filter(|s| !s.patched)
            .map(|s| s.cvss / 10.0)
            .fold(0.0f32, f32::max)
            .min(1.0);
        let row = &mut out[i * NODE_FEATURES..(i + 1) * NODE_FEATURES];
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        row[1] = flag(h.up());
        row[5] = subnet_code(h.subnet);
        if agent == RED {
            row[0] = f32::from(h.privilege) / 2.0;
            row[2] = flag(h.privilege > 0);
            row[4] = flag(h.scanned && h.dc);
            row[6] = if h.scanned && !h.misinformed {
                cvss
            } else {
                0.0
            };
            row[7] = flag(h.privilege == 2 && h.edr);
        } else {
            let confirmed = h.confirmed == 2;
            row[0] = flag(confirmed);
            row[2] = flag(confirmed);
            row[3] = flag(h.decoy);
            row[4] = flag(h.dc);
            row[6] = cvss;
            row[7] = flag(h.edr);
        }
    }
}

/// One info entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InfoValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// Bit per red action type; rendered as sorted, unique MITRE ATT&CK ids.
    Techniques(u32),
}

impl InfoValue {
    pub fn to_value(self) -> Value {
        match self {
            InfoValue::Int(i) => Value::Number(Number::Int(i)),
            InfoValue::Float(f) => Value::Number(Number::Float(f)),
            InfoValue::Bool(b) => Value::Bool(b),
            InfoValue::Techniques(mask) => {
                let mut ids: Vec<&str> = (0..32)
                    .filter(|k| mask & (1 << k) != 0 && *k < RED_KINDS.len())
                    .map(|k| RED_KINDS[k].technique)
                    .filter(|t| !t.is_empty())
                    .collect();
                ids.sort_unstable();
                ids.dedup();
                Value::Array(
                    ids.into_iter()
                        .map(|s| Value::String(s.to_string()))
                        .collect(),
                )
            }
        }
    }
}

/// Calls `f` for every info entry of `agent`. Counters that belong to one blue agent
/// (false_positives, hosts_isolated, services_restored) are its own; red sees blue's totals.
pub fn info_items(
    state: &State,
    params: &Params,
    agent: usize,
    mut f: impl FnMut(&'static str, InfoValue),
) {
    use InfoValue::*;
    let m = &state.metrics;
    let own = |v: &[u32; N_AGENTS]| -> i64 {
        if agent == RED {
            v.iter().map(|x| i64::from(*x)).sum()
        } else {
            i64::from(v[agent])
        }
    };
    let (mut active, mut compromised, mut isolated) = (0i64, 0i64, 0i64);
    for i in topology::slots(state.hosts.active()) {
        let h = &state.hosts[i];
        active += 1;
        compromised += i64::from(h.privilege > 0);
        isolated += i64::from(h.isolated);
    }
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let reward = state.last.rewards[agent];
    let blue_score: f64 = m.score[..RED].iter().sum();
    let dt = state.last.delta_ticks;
    let techniques = if agent == RED {
        m.red_techniques
    } else {
        m.seen_techniques[agent]
    };
    let sla = if m.uptime_ticks == 0 {
        100.0
    } else {
        100.0 * m.uptime_sum / m.uptime_ticks as f64
    };
    // Emitted in key byte order (a test checks), so the wrapper updates a map in one pass.
    f(
        "MTTC",
        Float(ratio(m.containment_ticks as f64, f64::from(m.contained))),
    );
    f("SLA_Uptime_Percentage", Float(sla));
    f("Total_Exfiltrated_Data", Float(state.red.exfiltrated_mb));
    f("active_hosts", Int(active));
    f("agent_energy", Float(state.agents[agent].energy));
    f(
        "attack_coverage",
        Float(f64::from(m.red_techniques.count_ones()) / crate::actions::RED_ACTIONS as f64),
    );
    f("attack_techniques", Techniques(techniques));
    f("blue_score", Float(blue_score));
    f("compromised_hosts", Int(compromised));
    f("containment_time", Int(m.containment_ticks as i64));
    f(
        "deception_efficacy",
        Float(ratio(
            f64::from(m.deception_hits),
            f64::from(m.red_completed),
        )),
    );
    f("deception_hits", Int(i64::from(m.deception_hits)));
    f("delta_t", Int(dt as i64));
    f("delta_t_norm", Float(dt as f64 / 50.0));
    f(
        "detection_rate",
        Float(ratio(
            f64::from(m.compromises_detected),
            f64::from(m.compromises),
        )),
    );
    f("false_positives", Int(own(&m.false_positives)));
    f("hosts_isolated", Int(own(&m.hosts_isolated)));
    f("invalid_action", Bool(state.last.invalid[agent]));
    f("isolated_hosts", Int(isolated));
    f(
        "normalized_reward",
        Float(libm::tanh(reward / params.scenario.reward_scale())),
    );
    f("red_score", Float(m.score[RED]));
    f("services_restored", Int(own(&m.services_restored)));
    f("successful_exploits", Int(i64::from(m.successful_exploits)));
    f("target_ip_index", Int(state.last.target[agent]));
    f("tick", Int(state.tick as i64));
}

/// The info of `agent` as a fresh JSON object.
pub fn info_value(state: &State, params: &Params, agent: usize) -> Value {
    let mut map = Map::new();
    info_items(state, params, agent, |k, v| {
        map.insert(k.to_string(), v.to_value());
    });
    Value::Object(map)
}

/// Action names, for people.
pub fn action_name(agent: usize, kind: usize) -> &'static str {
    if agent == RED {
        RED_KINDS.get(kind).map_or("Unused", |k| k.name)
    } else {
        BLUE.get(kind).map_or("Unused", |k| k.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{PRESETS, SCENARIOS};
    use crate::sampler::ActionSampler;

    /// Flipping only the candidate rows (those non-zero before or after) writes what
    /// `write_adj_changed` writes, over random rows, in a matrix kept across cases.
    #[test]
    fn adj_flips_over_candidates_equal_adj_changed() {
        let mut draw = crate::rng::Rng::new(2, "adj-flips-test");
        let params = Params::new(crate::params::Scenario::Ransomware);
        let n = params.max_hosts;
        let mut set =
            |d: u32| (0..n).fold(0u128, |m, i| m | u128::from(draw.range(0, 99) < d) << i);
        let (mut got, mut want) = (vec![0f32; n * n], vec![0f32; n * n]);
        let (mut prev, mut prev_support) = (vec![0u128; n], 0u128);
        for case in 0..300 {
            let support = set([5, 20, 60][case % 3]);
            let rows: Vec<u128> = (0..n)
                .map(|i| if support >> i & 1 == 1 { set(30) } else { 0 })
                .collect();
            write_adj_changed(&params, &mut want, &rows, Some(&prev));
            write_adj_flips(&params, &mut got, &rows, &prev, support | prev_support);
            assert_eq!(got, want, "case {case}");
            (prev, prev_support) = (rows, support);
        }
    }

    /// `write_obs_over` with the host sets' visible slots, into a row kept across steps and
    /// episodes, holds the bits of a fresh `write_obs` after every step, for every agent,
    /// scenario and preset.
    #[test]
    fn obs_over_visible_slots_equals_obs() {
        let (mut hosts_seen, mut shrunk) = (0, 0);
        let mut last = [0usize; N_AGENTS];
        for scenario in SCENARIOS {
            for preset in PRESETS {
                let params = Params::new(scenario).with_preset(preset).unwrap();
                for seed in 0..3 {
                    let mut state = sim::reset(seed, &params);
                    let mut sampler = ActionSampler::new(seed);
                    let mut mask = vec![0i8; params.mask_len()];
                    // One buffer row per agent kept across steps, as the batch keeps it.
                    let mut rows = vec![vec![0f32; OBS_LEN]; N_AGENTS];
                    let mut written = [0usize; N_AGENTS];
                    let mut want = vec![0f32; OBS_LEN];
                    for _ in 0..200 {
                        let hs = sim::host_sets(&state);
                        for a in 0..N_AGENTS {
                            written[a] = write_obs_over(
                                &state,
                                &params,
                                a,
                                hs.visible(a),
                                &mut rows[a],
                                written[a],
                            );
                            write_obs(&state, &params, a, &mut want);
                            let bits =
                                |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                            assert_eq!(
                                bits(&rows[a]),
                                bits(&want),
                                "{scenario:?} {preset} {seed} {a}"
                            );
                            shrunk += usize::from(written[a] < last[a]);
                            last[a] = written[a];
                            hosts_seen += hs.visible(a).count_ones();
                        }
                        if state.done() {
                            break;
                        }
                        let joint = sampler.joint(&state, &params, &mut mask);
                        sim::step(&mut state, &joint, &params);
                    }
                }
            }
        }
        assert!(hosts_seen > 10_000, "{hosts_seen}");
        // Rows that lost hosts (their old tail must be cleared) were seen.
        assert!(shrunk > 100, "{shrunk}");
    }
}
