//! lockstep-protocol: environments in any language, served by a child process over JSON Lines
//! (`lockstep/1`). The core crate `lockstep` holds the checks; this crate the transport.
//!
//! The child speaks first: one handshake line declaring the protocol version, env id, agents
//! with their action and observation spaces, and the reset contract. Then each request lockstep
//! writes to its stdin (`reset`, `step`, `state`, `close`) is answered by exactly one line on its
//! stdout. Arrays travel as `{dtype, shape, data}` with `data` the base64 of the raw
//! little-endian bytes, so no float is ever re-formatted. The full specification, with the
//! Python adapter that serves Gymnasium and PettingZoo envs, is docs/protocol.md.
//!
//! - [`message`]: the messages, as pure functions (parsing replies, writing requests).
//! - [`ProcessEnv`]: the [`lockstep::env::Env`] over a child; [`ProcessEnvFactory`] starts a fresh
//!   child per `make()`. A child that exits, crashes, hangs, floods or breaks the protocol is an
//!   [`lockstep::env::EnvError`] naming the request, the step and its last stderr lines, never a
//!   hang or a panic.
//!
//! ```no_run
//! use lockstep::env::{Env, EnvFactory};
//! use lockstep_protocol::{ProcessEnvFactory, ProcessOptions};
//!
//! let argv = ["python3", "-m", "lockstep_adapter", "gymnasium", "CartPole-v1"];
//! let factory = ProcessEnvFactory::new(argv.map(String::from).to_vec(), ProcessOptions::default());
//! let mut env = factory.make()?;
//! let first = env.reset(7, &lockstep_canon::Value::Null)?;
//! println!("{} agents", first.agents.len());
//! env.close()?;
//! # Ok::<(), lockstep::env::EnvError>(())
//! ```

mod child;
mod conn;
pub mod message;
mod process_env;

pub use message::PROTOCOL_V2;
pub use message::{Handshake, WireContract, PROTOCOL_VERSION};
pub use process_env::{
    display_argv, LayerProbes, ProcessEnv, ProcessEnvFactory, ProcessOptions, ProcessSession,
    EFFECTS_VAR,
};
