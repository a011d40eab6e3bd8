//! The range: a deterministic multi-agent network-defence environment.
//!
//! A red operator attacks a generated enterprise network (DMZ, Corporate, Secure, Guest and
//! sometimes an OT plant); three blue agents defend their subnets. Everything that happens is
//! simulated from one seed: topology, exploit outcomes (a simulated hypervisor), SIEM logs
//! with Windows Security and Sysmon templates, green background users, OT physics, a keyword
//! correlator and a packet synthesiser, each from its own named stream of
//! [`lockstep::seed::SeedTree`].
//!
//! The core is pure:
//!
//! - [`Params`]: the scenario configuration, every knob, serde.
//! - [`State`]: plain data, everything an episode depends on (random stream positions too).
//! - [`reset`]`(seed, &Params) -> State` and [`step`]`(&mut State, &JointAction, &Params)`.
//!
//! [`RangeEnv`] is a thin wrapper implementing [`lockstep::env::Env`]: it renders the
//! observations of the state into a [`lockstep::env::Transition`] it owns and reuses, touching
//! only arrays whose contents change.
//!
//! ```
//! use lockstep::env::Env;
//! let f = lockstep_range::factory("ransomware", Some("easy")).unwrap();
//! let mut env = lockstep::env::EnvFactory::make(&f).unwrap();
//! let t = env.reset(7, &lockstep_canon::Value::Null).unwrap();
//! assert_eq!(t.agents.len(), 4);
//! ```

pub mod actions;
mod batch;
mod env;
mod error;
pub mod name;
pub mod obs;
pub mod params;
pub mod physics;
mod rng;
pub mod sampler;
pub mod siem;
pub mod sim;
pub mod topology;
pub mod value;

pub use batch::{Batch, BufferData, BufferSpec};
pub use env::{
    factory, joint_from_actions, params_from_options, render_transition, RangeEnv, RangeFactory,
};
pub use error::RangeError;
pub use name::factory_from_name;
pub use params::{scenarios, ExploitRates, Params, Scenario, PRESETS, SCENARIOS};
pub use rng::Rng;
pub use sampler::{scripted_action, ActionSampler};
pub use sim::{reset, step, AgentAction, JointAction, State};

/// The version of the range's dynamics. For a given version, `(scenario, params, seed,
/// actions)` determines every output to the bit; a value-breaking change to the dynamics,
/// catalogue or observations bumps it (docs/stability.md). Every range env's spec config
/// carries it as `range_version`.
///
/// - 1: the first range (2026-11-30).
/// - 2: NetForge_RL's action ids and names, the actions it lacked, the action-cost term,
///   decoys on their own stream, `node_features` (issue 15).
pub const RANGE_VERSION: u32 = 2;

/// Agents, sorted by name (the order of every per-agent array in the core).
pub const AGENTS: [&str; N_AGENTS] = [
    "blue_dmz",
    "blue_internal",
    "blue_restricted",
    "red_operator",
];
pub const N_AGENTS: usize = 4;
/// Index of `red_operator` in [`AGENTS`].
pub const RED: usize = 3;
/// Action type ids per agent (red uses 20, blue 16; the rest are no-ops).
pub const N_TYPES: usize = 32;
/// Evaluation seeds, disjoint from any training range starting at 0 below 9001.
pub const EVAL_SEEDS: std::ops::RangeInclusive<u64> = 9001..=9020;
