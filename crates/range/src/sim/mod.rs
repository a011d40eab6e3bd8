//! The pure core: `State`, `reset` and `step`.
//!
//! `State` is plain data: everything an episode depends on, random stream positions included,
//! serialisable with serde (the reset contract fingerprints it whole). `reset` builds it from a
//! seed and `Params`; `step` advances it by one event-driven step. Nothing here reads a clock,
//! a global, or hash order.

mod blue;
mod churn;
mod events;
mod green;
mod host_sets;
mod hypervisor;
mod logging;
mod pcap;
mod red;
mod scenario;
mod state;
mod step;
mod validity;

pub use host_sets::{host_sets, host_sets_with, service_sets, HostSets, ServiceSets};
pub use hypervisor::exploit_probability;
pub use state::*;
pub use step::{step, step_keeping_sets, step_with_sets};
pub use validity::{
    adjacency_inputs, adjacency_rows, adjacency_rows_from, all_target_sets, all_target_sets_with,
    can_start, is_valid, is_valid_with, kind_of, target_sets, types_of, write_mask,
    write_mask_with, AdjacencyInputs,
};

use crate::params::Params;
use crate::physics::Physics;
use crate::rng::Rng;
use crate::siem::Siem;
use crate::topology;
use crate::N_AGENTS;

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
        hosts: topology::Hosts::new(hosts),
        agents: vec![agent; N_AGENTS],
        in_flight: Vec::with_capacity(8),
        next_seq: 0,
        red: RedState::default(),
        siem,
        physics: has_ot.then(Physics::new),
        comm: Comm::new(vec![0.0; params.max_hosts]),
        pcap: if params.pcap {
            vec![0.0; PCAP_PACKETS * PCAP_FEATURES]
        } else {
            Vec::new()
        },
        decoys_deployed: [0; 3],
        acl_smb: 0,
        awareness: [0; 6],
        metrics: Metrics::default(),
        rng: Streams {
            topology: topo,
            hypervisor: Rng::new(seed, "hypervisor"),
            defence: Rng::new(seed, "defence"),
            siem: siem_rng,
            green: Rng::new(seed, "green"),
            physics: Rng::new(seed, "physics"),
            churn: Rng::new(seed, "churn"),
            decoy: Rng::new(seed, "decoy"),
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
