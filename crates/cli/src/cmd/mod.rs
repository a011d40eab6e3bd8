//! One module per subcommand: each defines its clap `Args` and `run`.

pub mod canon;
pub mod check;
pub mod contract;
pub mod diff;
pub mod experiment;
pub mod fingerprint;
pub mod golden;
pub mod layers;
pub mod range;
pub mod range_bench;
pub mod replay;
pub mod report;
pub mod trace;
pub mod webtask_server;
pub mod worker;
