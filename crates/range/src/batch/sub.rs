//! One sub-env of a batch: the core state and the little a rendering needs to be incremental,
//! with observations written straight into the sub-env's slots of the batch buffers.
//!
//! A single [`crate::RangeEnv`] keeps a [`lockstep::env::Transition`] (four `adj_matrix`
//! arrays of max_hosts² floats, info maps of JSON values) and the batch used to copy it into
//! its buffers: two copies of every observation and a map per agent rewritten each step, for
//! thousands of sub-envs that do not fit in cache. Here the buffer slot is the only copy, infos
//! and logs are rendered only when asked for ([`crate::render_transition`]), and the
//! per-sub-env footprint is the `State` plus 4 KB of bitsets and counts.
//!
//! Parity: every array is written from the same state by the same `obs` / `sim` function the
//! single env uses, or by a variant that writes less and that a unit test proves equal
//! (`obs::write_obs_over`, `obs::write_adj_flips`, the kept embedding windows), with the same
//! skips (an embedding only when lines about its subnets came or went, an `adj_matrix` entry
//! only when it flipped); a skipped array therefore holds what a fresh rendering would write,
//! as the single env's does (tests/batch.rs compares every slot with a single env;
//! tests/determinism.rs the single env with fresh renderings).

use crate::obs;
use crate::params::Params;
use crate::sim::{self, JointAction, State, BLUE_SUBNETS};
use crate::{N_AGENTS, N_TYPES, RED};

use super::embed::EmbedWindow;
use super::BufferSpec;

/// A thread's share of one buffer (its sub-envs' slots, in order).
pub(super) enum Dst<'a> {
    F32(&'a mut [f32]),
    I8(&'a mut [i8]),
}

/// Working memory a thread reuses for every sub-env it renders.
pub(super) struct Scratch {
    /// Per adjacency (`[0]` blue, `[1]` red): the rows now and the rows the slots hold.
    adj_rows: [[[u128; 128]; 2]; 2],
}

impl Scratch {
    pub(super) fn new() -> Box<Scratch> {
        Box::new(Scratch {
            adj_rows: [[[0; 128]; 2]; 2],
        })
    }
}

pub(super) struct SubEnv {
    pub(super) state: State,
    /// Target sets of the current state (its masks); the next step validates against them.
    sets: [[u128; N_TYPES]; N_AGENTS],
    /// The inputs of the `adj_matrix` rows the buffer slots hold (default, all zero rows, for
    /// a zeroed slot): `[0]` for the three blue agents (always written together from the same
    /// rows), `[1]` for red. Rows are a function of their inputs alone, so unchanged inputs
    /// mean unchanged rows, and the rows the slots hold are recomputed from the kept inputs
    /// when they did change (128 bytes kept and compared per agent instead of 1.6 KB of rows
    /// kept, compared and copied every step).
    adj: [sim::AdjacencyInputs; 2],
    /// The service-derived sets of `state`, brought up to date by the step for the hosts whose
    /// services changed only (at 4096 sub-envs, reading every host's services each step costs
    /// a cache miss per host).
    services: sim::ServiceSets,
    /// The blue agents' `siem_embedding` windows, and the lines pushed into the SIEM buffer
    /// this episode as of the last step or reset (how a window names its lines).
    embed: [EmbedWindow; 3],
    pushed: u64,
    /// Per agent: the `obs` slot is zero from this entry on (0 for a zeroed slot).
    obs_written: [usize; N_AGENTS],
    /// What the observations the slots do not show yet need, taken from the host sets when
    /// the masks were written (so rendering them later reads no host record): the adjacency
    /// inputs of the current state and each agent's visible slots.
    adj_now: [sim::AdjacencyInputs; 2],
    visible: [u128; N_AGENTS],
    /// Steps since the slots last showed this sub-env (its observations other than the masks),
    /// a reset among them (`full`: every array is rewritten), and the subnets whose SIEM lines
    /// came or went in those steps.
    unshown: Unshown,
}

/// What happened to a sub-env since its observations were last written.
#[derive(Debug, Clone, Copy, Default)]
struct Unshown {
    steps: u32,
    full: bool,
    line_subnets: u8,
}

impl Unshown {
    fn any(&self) -> bool {
        self.full || self.steps > 0
    }
}

impl SubEnv {
    /// Reset to `seed`, nothing rendered yet (the buffer slots are zero, as `adj` says).
    pub(super) fn new(seed: u64, params: &Params) -> SubEnv {
        let state = sim::reset(seed, params);
        SubEnv {
            services: sim::service_sets(&state),
            pushed: state.siem.buffer.len() as u64,
            state,
            sets: [[0; N_TYPES]; N_AGENTS],
            adj: [sim::AdjacencyInputs::default(); 2],
            embed: [EmbedWindow::new(), EmbedWindow::new(), EmbedWindow::new()],
            obs_written: [0; N_AGENTS],
            adj_now: [sim::AdjacencyInputs::default(); 2],
            visible: [0; N_AGENTS],
            unshown: Unshown {
                full: true,
                ..Unshown::default()
            },
        }
    }

    pub(super) fn reset(&mut self, seed: u64, params: &Params) {
        self.state = sim::reset(seed, params);
        self.services = sim::service_sets(&self.state);
        self.pushed = self.state.siem.buffer.len() as u64;
        self.unshown = Unshown {
            full: true,
            ..Unshown::default()
        };
    }

    /// The caller never steps a finished episode (the batch resets it instead).
    pub(super) fn step(&mut self, joint: &JointAction, params: &Params) {
        sim::step_keeping_sets(
            &mut self.state,
            joint,
            params,
            &self.sets,
            &mut self.services,
        );
        self.pushed += self.state.last.new_logs.len() as u64;
        self.unshown.steps += 1;
        self.unshown.line_subnets |= obs::subnets_with_changed_lines(&self.state);
    }

    /// Writes the masks of the current state into slot `j` of `out` (the next step validates
    /// and samples against them, so they are always shown) and keeps what the other
    /// observations need from the host sets.
    pub(super) fn write_masks(
        &mut self,
        params: &Params,
        specs: &[BufferSpec],
        out: &mut [Dst<'_>],
        j: usize,
    ) {
        let state = &self.state;
        let hs = sim::host_sets_with(state, &self.services);
        self.sets = sim::all_target_sets_with(state, params, &hs);
        self.visible = std::array::from_fn(|a| hs.visible(a));
        // Adjacency depends on the agent only through red's discovery: one set of inputs for
        // the three blue agents.
        self.adj_now = [
            sim::adjacency_inputs(&hs, 0),
            sim::adjacency_inputs(&hs, RED),
        ];
        for (spec, dst) in specs.iter().zip(out.iter_mut()) {
            if let ("action_mask", Dst::I8(v)) = (spec.key, dst) {
                let len = spec.len();
                let a = spec.agent;
                sim::write_mask_with(
                    state,
                    params,
                    a,
                    &self.sets[a],
                    &mut v[j * len..(j + 1) * len],
                );
            }
        }
    }

    /// Writes every observation other than the masks of the current state into slot `j` of
    /// `out` (one share per spec), if the slots do not show it yet. After a reset, arrays
    /// skipped when unchanged are written too; after more than one step, the embedding windows
    /// are rebuilt (their incremental update follows one step's lines).
    pub(super) fn show(
        &mut self,
        params: &Params,
        specs: &[BufferSpec],
        out: &mut [Dst<'_>],
        j: usize,
        scratch: &mut Scratch,
    ) {
        let unshown = self.unshown;
        if !unshown.any() {
            return;
        }
        let full = unshown.full;
        let rebuild = full || unshown.steps > 1;
        let state = &self.state;
        let mh = params.max_hosts;
        let adj_now = self.adj_now;
        let adj_moved = [self.adj[0] != adj_now[0], self.adj[1] != adj_now[1]];
        // When they moved: the rows now, and the rows the slots hold (from the kept inputs), in
        // the thread's scratch (not zeroed per sub-env: each is written before it is read).
        let adj_rows = &mut scratch.adj_rows;
        for k in 0..2 {
            if adj_moved[k] {
                sim::adjacency_rows_from(&adj_now[k], &mut adj_rows[k][0][..mh]);
                sim::adjacency_rows_from(&self.adj[k], &mut adj_rows[k][1][..mh]);
            }
        }
        for (spec, dst) in specs.iter().zip(out.iter_mut()) {
            let a = spec.agent;
            let len = spec.len();
            let at = j * len..(j + 1) * len;
            let dst = match dst {
                Dst::F32(v) => Dst::F32(&mut v[at]),
                Dst::I8(v) => Dst::I8(&mut v[at]),
            };
            match (spec.key, dst) {
                ("action_mask", Dst::I8(_)) => {}
                ("obs", Dst::F32(d)) => {
                    self.obs_written[a] = obs::write_obs_over(
                        state,
                        params,
                        a,
                        self.visible[a],
                        d,
                        self.obs_written[a],
                    );
                }
                ("siem_embedding", Dst::F32(d)) => {
                    if a == RED {
                        if full {
                            obs::write_embedding(state, params, a, d);
                        }
                    } else if full || unshown.line_subnets & BLUE_SUBNETS[a] != 0 {
                        self.embed[a].update(state, params, a, self.pushed, rebuild);
                        self.embed[a].write(d);
                    }
                }
                ("blue_comm", Dst::F32(d)) => obs::write_comm(state, d),
                ("delta_t", Dst::F32(d)) => obs::write_delta(state, d),
                ("pcap", Dst::F32(d)) => obs::write_pcap(state, d),
                ("node_features", Dst::F32(d)) => obs::write_node_features(state, params, a, d),
                ("adj_matrix", Dst::F32(d)) => {
                    let k = usize::from(a == RED);
                    if adj_moved[k] {
                        let [rows, prev] = &adj_rows[k];
                        let candidates = adj_now[k].seen() | self.adj[k].seen();
                        obs::write_adj_flips(params, d, &rows[..mh], &prev[..mh], candidates);
                    }
                }
                (key, _) => unreachable!("no rendering for {key} of this dtype"),
            }
        }
        // Every agent has an `adj_matrix`: the slots now hold the rows of these inputs.
        self.adj = adj_now;
        self.unshown = Unshown::default();
    }
}
