//! lockstep: prove or disprove "fixed seed, same episode", and explain the failure.
//!
//! - [`contract`], [`fingerprint`], [`diff`], [`audit`]: reset contracts. A starting state is
//!   fingerprinted (SHA-256 of canonical JSON) and a mismatch is explained field by field;
//!   [`probe`]: layers read from real systems (the probes themselves live in lockstep-layers).
//! - [`seed`], [`trace`], [`check`], [`golden`]: bit-exact replay. A seed tree feeds every
//!   stochastic source, a trace digests everything an episode shows, the checks compare traces
//!   and locate the first divergence, golden files catch silent drift.
//! - [`env`]: the environment trait all of the above drive; [`actions`] samples seeded actions
//!   from its declared spaces. The `lockstep-protocol` crate serves an env from a child process
//!   in any language; this crate knows no transport.
//! - [`experiment`]: the seed-000 three-layer fixture; [`fixtures`]: faulty envs a check must
//!   catch, and a correct one.
//! - [`suite`]: `lockstep check` as a library (trials over worker threads, shards, goldens);
//!   [`report`]: its versioned JSON report.

pub mod actions;
pub mod atomic_file;
pub mod audit;
pub mod background_hash;
pub mod budget;
pub mod cause;
pub mod check;
pub mod clock;
pub mod contract;
pub mod contracted;
pub mod diff;
pub mod env;
pub mod experiment;
pub mod fingerprint;
pub mod fixtures;
pub mod golden;
pub mod ignore;
pub mod private_dirs;
pub mod probe;
pub mod proposal;
pub mod report;
pub mod seed;
pub mod suite;
pub mod trace;
pub mod words;
